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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import LoadError
from ._read import decode_utf8, parse_json, read_bytes

__all__ = [
    "InspectLog",
    "Member",
    "central_directory",
    "is_inspect_json_head",
    "mapped",
    "member_bytes",
    "open_inspect_log",
]

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
    _members: list[Member] | None = None

    def samples(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(place, sample)`` for each sample in the log, in the log's order."""
        if self.form == "json":
            if self._samples is None:
                self._samples = list(_python_doc(self.path).get("samples") or [])
            for i, sample in enumerate(self._samples):
                yield f"samples[{i}]", sample
            return
        assert self._members is not None
        with mapped(self.path) as data:
            for info in self._members:
                yield info.filename, _member_json(self.path, data, info)

    @property
    def members(self) -> list[Member]:
        """The ``samples/*.json`` members of an ``.eval`` archive (empty for ``.json``)."""
        return list(self._members or [])

    @property
    def sample_count(self) -> int:
        if self.form == "json":
            return sum(1 for _ in self.samples())
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
    """The header of a ``.json`` log, read by DuckDB (its JSON parser is C++ and does not
    build Python objects for the samples); any problem is explained by Python's parser."""
    import duckdb

    keys = _HEADER_KEYS
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


@dataclass(frozen=True)
class Member:
    """One entry of a zip archive's central directory (the fields of ``zipfile.ZipInfo``
    this module reads)."""

    filename: str
    compress_type: int
    CRC: int
    compress_size: int
    file_size: int
    header_offset: int


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
_EOCD64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_ENTRY = struct.Struct("<4s6H3L5H2L")  # central directory file header, 46 bytes


def central_directory(path: Path) -> list[Member]:
    """The archive's entries, read straight from its central directory (zip64 too).

    ``zipfile.ZipFile`` builds a ``ZipInfo`` object per entry in Python; a log of
    500,000 samples has 500,000 entries, so this reads the fixed-size records with
    ``struct`` instead. Anything unusual (a comment hiding the end record, encrypted
    entries) falls back to ``zipfile``.

    Examples
    --------
    >>> from pathlib import Path
    >>> log = sorted(Path("../shared/fixtures/inspect/eval").glob("*.eval"))[0]
    >>> [m.filename for m in central_directory(log)][:2]
    ['_journal/start.json', 'samples/c00_epoch_1.json']
    """
    try:
        with mapped(path) as data:
            return _read_directory(data)
    except (ValueError, struct.error, OSError):
        pass
    try:
        with zipfile.ZipFile(path) as archive:
            return [
                Member(
                    i.filename,
                    i.compress_type,
                    i.CRC,
                    i.compress_size,
                    i.file_size,
                    i.header_offset,
                )
                for i in archive.infolist()
            ]
    except (zipfile.BadZipFile, OSError) as err:
        raise LoadError(path, None, f"not a readable .eval archive ({err})") from None


@contextmanager
def mapped(path: Path) -> Iterator[Any]:
    """The file's bytes, memory-mapped read-only (slicing reads only what it touches)."""
    import mmap

    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        yield data


def _read_directory(data: Any) -> list[Member]:
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0:
        raise ValueError("no end of central directory")
    _sig, _disk, _cd_disk, _n_here, count, cd_size, cd_offset, _comment = _EOCD.unpack_from(
        data, end
    )
    locator = end - _EOCD64_LOCATOR.size
    if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        _sig, _disk, eocd64, _disks = _EOCD64_LOCATOR.unpack_from(data, locator)
        fields = _EOCD64.unpack_from(data, eocd64)
        if fields[0] != b"PK\x06\x06":
            raise ValueError("bad zip64 end record")
        count, cd_size, cd_offset = fields[7], fields[8], fields[9]
    out: list[Member] = []
    at = cd_offset
    stop = cd_offset + cd_size
    for _ in range(count):
        e = _ENTRY.unpack_from(data, at)
        if e[0] != b"PK\x01\x02" or at >= stop:
            raise ValueError("bad central directory entry")
        flags, method, crc, csize, usize = e[3], e[4], e[7], e[8], e[9]
        name_len, extra_len, comment_len, offset = e[10], e[11], e[12], e[16]
        if flags & 0x1:
            raise ValueError("encrypted entry")
        name_at = at + _ENTRY.size
        name = bytes(data[name_at : name_at + name_len]).decode(
            "utf-8" if flags & 0x800 else "cp437"
        )
        if 0xFFFFFFFF in (csize, usize, offset):  # zip64 extra field holds the real values
            csize, usize, offset = _zip64_sizes(
                bytes(data[name_at + name_len : name_at + name_len + extra_len]),
                csize,
                usize,
                offset,
            )
        out.append(Member(name, method, crc, csize, usize, offset))
        at = name_at + name_len + extra_len + comment_len
    return out


def _zip64_sizes(extra: bytes, csize: int, usize: int, offset: int) -> tuple[int, int, int]:
    i = 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        if tag == 1:
            values = iter(struct.unpack_from(f"<{size // 8}Q", extra, i + 4))
            if usize == 0xFFFFFFFF:
                usize = next(values)
            if csize == 0xFFFFFFFF:
                csize = next(values)
            if offset == 0xFFFFFFFF:
                offset = next(values)
            return csize, usize, offset
        i += 4 + size
    raise ValueError("zip64 sizes missing")


def _open_eval(path: Path) -> InspectLog:
    infos = central_directory(path)
    by_name = {i.filename: i for i in infos}
    samples = [
        i for i in infos if i.filename.startswith("samples/") and i.filename.endswith(".json")
    ]
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
    return InspectLog(path, header, "eval", _members=samples)


def member_bytes(path: Path, data: Any, info: Member | zipfile.ZipInfo, zstd: Any = None) -> bytes:
    """The member's uncompressed bytes, CRC-checked; ``data`` is the archive's bytes (an
    ``mmap``), ``zstd`` a ``zstandard.ZstdDecompressor`` to reuse (one per thread)."""
    place = info.filename
    at = info.header_offset
    local = data[at : at + _LOCAL_HEADER.size]
    if len(local) < _LOCAL_HEADER.size or local[:4] != _LOCAL_SIGNATURE:
        raise LoadError(path, place, "corrupt .eval archive: bad local header")
    name_len, extra_len = struct.unpack_from("<HH", local, 26)
    begin = at + _LOCAL_HEADER.size + name_len + extra_len
    raw = data[begin : begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise LoadError(path, place, "corrupt .eval archive: member cut short")
    if info.compress_type == _ZSTD:
        import zstandard

        try:
            out = (zstd or zstandard.ZstdDecompressor()).decompress(
                raw, max_output_size=info.file_size
            )
        except zstandard.ZstdError as err:
            raise LoadError(path, place, f"corrupt zstd data ({err})") from None
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        try:
            out = zlib.decompress(raw, -15)
        except zlib.error as err:
            raise LoadError(path, place, f"corrupt deflate data ({err})") from None
    elif info.compress_type == zipfile.ZIP_STORED:
        out = bytes(raw)
    else:
        raise LoadError(path, place, f"unsupported zip compression method {info.compress_type}")
    if zlib.crc32(out) != info.CRC:
        raise LoadError(path, place, "corrupt member: CRC-32 mismatch")
    return out


def _member_json(path: Path, data: Any, info: Member | zipfile.ZipInfo) -> Any:
    blob = member_bytes(path, data, info)
    try:
        return json.loads(blob)
    except (json.JSONDecodeError, UnicodeDecodeError):
        label = f"{path} member {info.filename}"
        return parse_json(label, decode_utf8(label, blob), what="a JSON member")
