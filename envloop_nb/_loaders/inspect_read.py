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
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .._errors import LoadError
from ._read import decode_utf8, parse_json, read_bytes

__all__ = ["InspectLog", "is_inspect_json_head", "open_inspect_log"]

_ZSTD = 93
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zip local file header, 30 bytes
_LOCAL_SIGNATURE = b"PK\x03\x04"
_HEADER_KEYS = ("eval", "plan", "results", "stats", "status", "error", "version", "tags")


def is_inspect_json_head(head: bytes) -> bool:
    """True when the first bytes of a JSON file look like an Inspect log.

    Examples
    --------
    >>> is_inspect_json_head(b'{"version": 2, "status": "success", "eval": {"eval_id": "x"')
    True
    >>> is_inspect_json_head(b'{"results": []}')
    False
    """
    text = head.lstrip()
    return text.startswith(b"{") and b'"eval"' in text and b'"eval_id"' in text


@dataclass
class InspectLog:
    """One log: its header (everything but the samples) and a way to iterate samples."""

    path: Path
    header: dict[str, Any]
    form: str  # "eval" | "json"
    _samples: list[dict[str, Any]] | None = None
    _members: list[zipfile.ZipInfo] | None = None

    def samples(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(place, sample)`` for each sample in the log, in the log's order."""
        if self._samples is not None:
            for i, sample in enumerate(self._samples):
                yield f"samples[{i}]", sample
            return
        assert self._members is not None
        with self.path.open("rb") as f:
            for info in self._members:
                yield info.filename, _member_json(self.path, f, info)

    @property
    def sample_count(self) -> int:
        if self._samples is not None:
            return len(self._samples)
        return len(self._members or [])


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
    if zipfile.is_zipfile(path):
        return _open_eval(path)
    doc = parse_json(path, decode_utf8(path, read_bytes(path)), what="an Inspect AI log")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise LoadError(path, None, "not an Inspect AI log: no 'eval' object at the top")
    samples = doc.get("samples") or []
    if not isinstance(samples, list):
        raise LoadError(path, "samples", f"expected a list, got {type(samples).__name__}")
    header = {key: doc.get(key) for key in _HEADER_KEYS}
    header["reductions"] = doc.get("reductions")
    return InspectLog(path, header, "json", _samples=samples)


def _open_eval(path: Path) -> InspectLog:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise LoadError(path, None, f"not a readable .eval archive ({err})") from None
    with archive:
        infos = archive.infolist()
    by_name = {i.filename: i for i in infos}
    samples = [
        i for i in infos if i.filename.startswith("samples/") and i.filename.endswith(".json")
    ]
    with path.open("rb") as f:
        if "header.json" in by_name:
            header = _member_json(path, f, by_name["header.json"])
        elif "_journal/start.json" in by_name:  # still being written, or cut short
            start = _member_json(path, f, by_name["_journal/start.json"])
            header = {"eval": start.get("eval"), "plan": start.get("plan"), "status": "started"}
        else:
            raise LoadError(
                path, None, "an .eval archive without header.json or _journal/start.json"
            )
        if "reductions.json" in by_name:
            header["reductions"] = _member_json(path, f, by_name["reductions.json"])
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise LoadError(path, "header.json", "not an Inspect AI log header: no 'eval' object")
    return InspectLog(path, header, "eval", _members=samples)


def _member_bytes(path: Path, f: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    """The member's uncompressed bytes, CRC-checked."""
    place = info.filename
    f.seek(info.header_offset)
    local = f.read(_LOCAL_HEADER.size)
    if len(local) < _LOCAL_HEADER.size or local[:4] != _LOCAL_SIGNATURE:
        raise LoadError(path, place, "corrupt .eval archive: bad local header")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    f.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    raw = f.read(info.compress_size)
    if len(raw) != info.compress_size:
        raise LoadError(path, place, "corrupt .eval archive: member cut short")
    if info.compress_type == _ZSTD:
        import zstandard

        try:
            data = zstandard.ZstdDecompressor().decompress(raw, max_output_size=info.file_size)
        except zstandard.ZstdError as err:
            raise LoadError(path, place, f"corrupt zstd data ({err})") from None
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        try:
            data = zlib.decompress(raw, -15)
        except zlib.error as err:
            raise LoadError(path, place, f"corrupt deflate data ({err})") from None
    elif info.compress_type == zipfile.ZIP_STORED:
        data = raw
    else:
        raise LoadError(path, place, f"unsupported zip compression method {info.compress_type}")
    if zlib.crc32(data) != info.CRC:
        raise LoadError(path, place, "corrupt member: CRC-32 mismatch")
    return data


def _member_json(path: Path, f: BinaryIO, info: zipfile.ZipInfo) -> Any:
    data = _member_bytes(path, f, info)
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        label = f"{path} member {info.filename}"
        return parse_json(label, decode_utf8(label, data), what="a JSON member")
