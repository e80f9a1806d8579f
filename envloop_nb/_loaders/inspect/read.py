"""Reading an Inspect AI log, both forms, without inspect_ai: the header and the samples.

* ``.eval`` — a zip archive (Inspect's ``EvalRecorder``): ``header.json`` (the log
  without its samples: ``eval``, ``plan``, ``results``, ``stats``, ``status``, ``error``),
  one ``samples/<id>_epoch_<n>.json`` per sample run, ``reductions.json``,
  ``summaries.json`` and ``_journal/``. A log still being written has no
  ``header.json`` yet; ``_journal/start.json`` then holds ``eval`` and ``plan``.
  Members are compressed with zstd (zip method 93), which Python's ``zipfile`` cannot
  read: the raw member is located with ``zipfile``'s directory and decompressed with
  ``zstandard``; its CRC-32 is checked against the directory's.
* ``.json`` — one JSON document (Inspect's ``JSONRecorder``) with the same header
  fields and ``samples``; it may hold bare ``NaN`` / ``Infinity`` (Python's ``json``
  reads them).

Errors are :class:`~envloop_nb.LoadError` naming the file and the member or line.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..common.read import decode_utf8, parse_json, read_bytes
from .decode import decode_sample
from .json import json_header, json_sample_chunks
from .zip import Directory, Member, central_directory, directory, mapped, member_bytes

__all__ = [
    "Directory",
    "InspectLog",
    "Member",
    "central_directory",
    "directory",
    "is_inspect_json_head",
    "json_sample_chunks",
    "mapped",
    "member_bytes",
    "open_inspect_log",
]

_HEADER_KEYS = ("eval", "plan", "results", "stats", "status", "error", "version", "tags")


#: An Inspect log's ``status`` (``EvalLog.status``, the same since 2024).
_STATUSES = (b'"started"', b'"success"', b'"cancelled"', b'"error"')
#: Inspect writes ``EvalLog``'s fields in order: ``version``, ``status``, then ``eval``.
_INSPECT_PREFIX = re.compile(
    rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*("[a-z]+")\s*,\s*"eval"\s*:\s*\{'
)
_HEAD_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}:]')


def _head_keys(head: bytes) -> tuple[set[bytes], set[bytes], bool]:
    """The keys seen in ``head`` (the start of a JSON text) at the top level and in the
    top-level ``eval`` object, and whether ``eval``'s value is an object."""
    top: set[bytes] = set()
    in_eval: set[bytes] = set()
    depth, eval_depth, eval_is_object = 0, -1, False
    tokens = _HEAD_TOKEN.findall(head)  # a string cut by the head's end is not one
    for i, tok in enumerate(tokens):
        if tok in (b"{", b"["):
            if tok == b"{" and depth == 1 and i >= 2 and tokens[i - 2 : i] == [b'"eval"', b":"]:
                eval_depth, eval_is_object = 2, True
            depth += 1
        elif tok in (b"}", b"]"):
            depth -= 1
            if depth < 2:
                eval_depth = -1
        elif tok.startswith(b'"') and i + 1 < len(tokens) and tokens[i + 1] == b":":
            if depth == 1:
                top.add(tok)
            elif depth == eval_depth:
                in_eval.add(tok)
    return top, in_eval, eval_is_object


def is_inspect_json_head(head: bytes) -> bool:
    """True when the first bytes of a JSON file are an Inspect log's (``EvalLog``).

    Inspect writes ``version``, ``status`` and ``eval`` first, in that order, so the
    first few bytes decide for any log Inspect wrote, 2024's too (``eval.eval_id`` only
    exists since 2025). Another key order is recognised when the head shows a top-level
    ``eval`` object holding ``task`` and ``model`` beside ``version`` or ``status``.

    Examples
    --------
    >>> is_inspect_json_head(b'{"version": 2, "status": "success", "eval": {"run_id": "x"')
    True
    >>> is_inspect_json_head(b'{"eval": {"task": "t", "model": "m"}, "status": "success"}')
    True
    >>> is_inspect_json_head(b'{"results": []}')
    False
    """
    text = head.lstrip()
    if not text.startswith(b"{") or b'"eval"' not in text:
        return False
    prefix = _INSPECT_PREFIX.match(text)
    if prefix is not None:
        return prefix.group(1) in _STATUSES
    top, in_eval, eval_is_object = _head_keys(text)
    return (
        eval_is_object
        and b'"eval"' in top
        and (b'"version"' in top or b'"status"' in top)
        and (b'"eval_id"' in in_eval or {b'"task"', b'"model"'} <= in_eval)
    )


@dataclass
class InspectLog:
    """One log: its header (everything but the samples) and a way to iterate samples."""

    path: Path
    header: dict[str, Any]
    form: str  # "eval" | "json"
    _samples: list[dict[str, Any]] | None = None
    _directory: Directory | None = None

    def samples(self, *, steps: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(place, sample)`` for each sample in the log, in the log's order; with
        ``steps``, an ``.eval`` log's samples hold only what their steps read
        (:func:`~.decode.decode_sample`)."""
        if self.form == "json":
            if self._samples is None:
                self._samples = list(_python_doc(self.path).get("samples") or [])
            for i, sample in enumerate(self._samples):
                yield f"samples[{i}]", sample
            return
        with mapped(self.path) as data:
            for info in self.members:
                yield info.filename, _member_json(self.path, data, info, steps=steps)

    @property
    def directory(self) -> Directory | None:
        """The ``samples/*.json`` entries of an ``.eval`` archive, by column (None for
        ``.json``)."""
        return self._directory

    @property
    def members(self) -> list[Member]:
        """The ``samples/*.json`` members of an ``.eval`` archive (empty for ``.json``)."""
        return self._directory.members() if self._directory is not None else []

    @property
    def sample_count(self) -> int:
        if self.form == "json":
            return sum(1 for _ in self.samples())
        return len(self._directory) if self._directory is not None else 0


def open_inspect_log(path: Path) -> InspectLog:
    """Read the header of an Inspect log (``.eval`` or ``.json``); samples stay lazy
    for ``.eval``.

    Examples
    --------
    >>> from pathlib import Path
    >>> logs = sorted(Path("../shared/fixtures/inspect/eval").glob("*.eval"))
    >>> log = open_inspect_log(logs[0])
    >>> log.header["eval"]["task"], log.header["status"], log.sample_count
    ('capitals', 'success', 60)
    """
    with path.open("rb") as f:
        head = f.read(4)
    # a zip by its first bytes, not only by its end record: a truncated .eval has lost
    # the end record and must say so, not be parsed as JSON ("not valid UTF-8")
    if head == b"PK\x03\x04" or zipfile.is_zipfile(path):
        return _open_eval(path)
    return _open_json(path)


def _python_doc(path: Path) -> dict[str, Any]:
    """The whole ``.json`` log parsed in Python (errors name the line)."""
    doc = parse_json(path, decode_utf8(path, read_bytes(path)), what="an Inspect AI log")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise LoadError(path, None, "not an Inspect AI log: no 'eval' object at the top")
    samples = doc.get("samples") or []
    if not isinstance(samples, list):
        raise LoadError(path, "samples", f"expected a list, got {type(samples).__name__}")
    return doc


def _open_json(path: Path) -> InspectLog:
    """The header of a ``.json`` log.

    Laid out as Inspect writes it (indent 2), the file is parsed in Python with the
    samples array's content skipped (:func:`_json_header`): a log of 500,000 samples is
    not read whole. Otherwise DuckDB reads it (its JSON parser is C++ and does not build
    Python objects for the samples); any problem is explained by Python's parser.
    """
    keys = _HEADER_KEYS
    doc = json_header(path)  # indent-2 layout: the samples are not read at all
    if doc is not None and isinstance(doc.get("eval"), dict):
        return InspectLog(path, {key: doc.get(key) for key in keys}, "json")

    import duckdb

    paths = [f"$.{key}" for key in keys]
    try:  # each JSON function parses the document: two parses, not a cast and four
        with duckdb.connect() as con:
            row = con.execute(
                """SELECT json_type(content, '$.samples'), json_extract(content, ?::VARCHAR[])
                   FROM read_text(?)""",
                [paths, str(path)],
            ).fetchone()
    except duckdb.Error:
        _python_doc(path)  # raises, naming the line
        raise LoadError(path, None, "not readable as an Inspect AI log") from None
    assert row is not None
    if row[0] not in (None, "NULL", "ARRAY"):
        raise LoadError(path, "samples", f"expected a list, got {str(row[0]).lower()}")
    header = {
        key: None if v is None else json.loads(v) for key, v in zip(keys, row[1], strict=True)
    }
    if not isinstance(header.get("eval"), dict):
        raise LoadError(path, None, "not an Inspect AI log: no 'eval' object at the top")
    return InspectLog(path, header, "json")


# Inspect's JSONRecorder writes the log with ``indent=2``. JSON strings never hold a raw
# newline, so in such a file a line's indentation is its depth: the top-level samples
# array opens on the line ``  "samples": [``, each sample (depth 2) opens on a line
# ``    {`` and closes on a line ``    }`` (nothing inside a sample is indented by only
# four spaces), and after the last one comes the line ``  ]`` or ``  ],``. So, scanning
# from the opening line, every ``    }`` line is a sample's end, followed either by
# ``,`` and the next sample's ``    {`` line or by the array's closing line.
def _open_eval(path: Path) -> InspectLog:
    import pyarrow as pa
    import pyarrow.compute as pc

    entries = directory(path)
    names = entries.names
    samples = entries.take(
        pc.and_(pc.starts_with(names, "samples/"), pc.ends_with(names, ".json"))
        .fill_null(False)
        .to_numpy(zero_copy_only=False)
    )
    wanted = pc.is_in(names, value_set=pa.array(["header.json", "_journal/start.json"]))
    by_name = {  # the two members read here, not a dict of every sample's
        m.filename: m for m in entries.take(wanted.to_numpy(zero_copy_only=False)).members()
    }
    with mapped(path) as data:
        if "header.json" in by_name:
            header = _member_json(path, data, by_name["header.json"])
        elif "_journal/start.json" in by_name:  # still being written, or cut short
            start = _member_json(path, data, by_name["_journal/start.json"])
            header = {"eval": start.get("eval"), "plan": start.get("plan"), "status": "started"}
        else:
            raise LoadError(
                path, None, "an .eval archive without header.json or _journal/start.json"
            )
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise LoadError(path, "header.json", "not an Inspect AI log header: no 'eval' object")
    return InspectLog(path, header, "eval", _directory=samples)


def _member_json(
    path: Path, data: Any, info: Member | zipfile.ZipInfo, *, steps: bool = False
) -> Any:
    blob = member_bytes(path, data, info)
    try:
        return decode_sample(blob) if steps else json.loads(blob)
    except (json.JSONDecodeError, UnicodeDecodeError):
        label = f"{path} member {info.filename}"
        return parse_json(label, decode_utf8(label, blob), what="a JSON member")
