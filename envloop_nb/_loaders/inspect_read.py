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
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .._errors import LoadError
from ._read import decode_utf8, parse_json, read_bytes

if TYPE_CHECKING:
    import pyarrow as pa

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
    _directory: Directory | None = None

    def samples(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(place, sample)`` for each sample in the log, in the log's order."""
        if self.form == "json":
            if self._samples is None:
                self._samples = list(_python_doc(self.path).get("samples") or [])
            for i, sample in enumerate(self._samples):
                yield f"samples[{i}]", sample
            return
        with mapped(self.path) as data:
            for info in self.members:
                yield info.filename, _member_json(self.path, data, info)

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
    """The header of a ``.json`` log.

    Laid out as Inspect writes it (indent 2), the file is parsed in Python with the
    samples array's content skipped (:func:`_json_header`): a log of 500,000 samples is
    not read whole. Otherwise DuckDB reads it (its JSON parser is C++ and does not build
    Python objects for the samples); any problem is explained by Python's parser.
    """
    keys = _HEADER_KEYS
    doc = _json_header(path)  # indent-2 layout: the samples are not read at all
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
_JSON_SAMPLES_OPEN = b'\n  "samples": [\n'
_JSON_SAMPLE_END = b"\n    }"
_JSON_SAMPLE_NEXT = b",\n    {"  # after a sample's end: another sample follows
_JSON_SAMPLES_CLOSE = b"\n  ]"  # after a sample's end: the array closes
_JSON_BLOCK = 1 << 24  # bytes read at a time (os.pread: the file is never mapped)
_JSON_OVERLAP = 16  # > the longest pattern checked around a "}"


def _find(fd: int, needle: bytes, start: int, stop: int) -> int:
    """The first offset in ``[start, stop)`` of the file where ``needle`` starts (and
    ends by ``stop``), or -1; read block by block, so memory stays at one block."""
    pos = start
    while pos < stop:
        block = os.pread(fd, min(_JSON_BLOCK, stop - pos), pos)
        if not block:
            return -1
        at = block.find(needle)
        if at >= 0:
            return pos + at
        if pos + len(block) >= stop:
            return -1
        pos += len(block) - len(needle) + 1  # a match may straddle the block's end
    return -1


def _matches(a: Any, at: Any, offset: int, pattern: bytes) -> Any:
    """Where ``a[at + offset :]`` starts with ``pattern`` (a mask over ``at``)."""
    ok = a[at + offset] == pattern[0]
    for i in range(1, len(pattern)):
        ok &= a[at + offset + i] == pattern[i]
    return ok


def _json_layout(fd: int, size: int) -> tuple[int, int, Any] | None:
    """Where the samples are in an indent-2 log, or None when it is not laid out so.

    Returns ``(begin, end, cuts)``: the array's content is the file's bytes
    ``[begin, end)`` (``begin`` just after its ``[``, ``end`` at the newline before its
    ``]``), and sample ``k`` is bytes ``[cuts[k], cuts[k + 1])``: ``cuts`` (``int64``)
    holds each sample's opening ``{``, then ``end``, so a sample's bytes end with the
    comma and indentation before the next one (``},\n    ``, the comma 6 bytes before
    the next cut) or, for the last, with its ``}``. One pass over the
    samples, in blocks, with numpy: every ``}`` is a candidate, kept when its line is
    ``    }`` and classified by the bytes after it.
    """
    import numpy as np

    if os.pread(fd, 5, 0) != b'{\n  "':  # an indent-2 object, its first key at depth 1
        return None
    opening = _find(fd, _JSON_SAMPLES_OPEN, 0, size)
    if opening < 0:
        return None
    begin = opening + len(_JSON_SAMPLES_OPEN) - 1
    start = os.pread(fd, 6, begin)
    if start[:4] == _JSON_SAMPLES_CLOSE:  # an empty array written over two lines
        end, cuts = begin, np.array([begin], dtype=np.int64)  # no samples: no cuts
    elif start != b"\n    {":
        return None
    else:
        end = -1
        parts = [np.array([begin + 5], dtype=np.int64)]  # the first sample's "{"
        pos = begin
        while end < 0:
            block = os.pread(fd, _JSON_BLOCK, pos)
            last = len(block) < _JSON_BLOCK
            if last:  # zeros after the end: the checks after a "}" may look past it
                block += bytes(_JSON_OVERLAP)
            a = np.frombuffer(block, dtype=np.uint8)
            # "}" with 5 bytes before it and 7 after, in the part of the block that the
            # next block (starting _JSON_OVERLAP bytes before this one's end) does not
            # start with: each "}" is looked at once.
            at = np.flatnonzero(a[5 : len(a) - _JSON_OVERLAP + 5] == 0x7D) + 5
            at = at[a[at - 5] == 0x0A]  # most "}" are deeper: one test drops them
            at = at[_matches(a, at, -5, _JSON_SAMPLE_END)]
            after = _matches(a, at, 1, _JSON_SAMPLE_NEXT)
            stop = np.flatnonzero(~after)
            if stop.size:  # the first "    }" not followed by another sample
                k = int(stop[0])
                close = at[k : k + 1]
                if not (
                    _matches(a, close, 1, _JSON_SAMPLES_CLOSE + b"\n")
                    | _matches(a, close, 1, _JSON_SAMPLES_CLOSE + b",\n")
                ).all():
                    return None
                at = at[:k]
                end = pos + int(close[0]) + 1
            parts.append(at + (pos + 7))  # the "{" of each sample but the first
            if end < 0:
                if last:
                    return None  # end of file without the closing line: cut short
                pos += len(block) - _JSON_OVERLAP
        parts.append(np.array([end], dtype=np.int64))
        cuts = np.concatenate(parts)
    after_close = os.pread(fd, 2, end + len(_JSON_SAMPLES_CLOSE))
    if after_close[:1] != b"\n" and after_close != b",\n":  # exactly "  ]" or "  ],"
        return None
    return begin, end, cuts


# The last layout found, keyed by the file's identity: open_inspect_log reads the header
# and the loader then asks for the samples, and the scan need not run twice. A file
# rewritten in place with the same size and mtime would be caught by _json_batch's
# check that every comma between samples is still where the scan saw it.
_LAYOUT_CACHE: dict[tuple[str, int, int, int, int], tuple[int, int, Any] | None] = {}


def _cached_layout(path: Path, fd: int) -> tuple[int, int, Any] | None:
    """:func:`_json_layout` of the open file ``fd``, scanned once per file version."""
    st = os.fstat(fd)
    key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _LAYOUT_CACHE:
        layout = _json_layout(fd, st.st_size)
        _LAYOUT_CACHE.clear()  # one entry: a log's cuts are 8 bytes per sample
        _LAYOUT_CACHE[key] = layout
    return _LAYOUT_CACHE[key]


def json_sample_chunks(path: Path, chunk: int) -> Iterator[tuple[list[str], pa.Array]] | None:
    """The samples of an indent-2 ``.json`` log as JSON text, ``chunk`` at a time, without
    parsing them or holding the file in memory; None when the file is not laid out the
    way Inspect writes it (compact, cut short, ...): read it whole then.

    Parameters
    ----------
    path
        The ``.json`` log.
    chunk
        Samples per yielded batch (the last may hold fewer).

    Returns
    -------
    Iterator of ``(places, texts)`` or None
        ``places`` are ``"samples[i]"`` (``i`` counting over the whole log); ``texts`` is
        a ``pa.large_string()`` array whose ``k``-th value is exactly the JSON text of
        the sample at ``places[k]``: it starts with ``{`` and may end with whitespace. A sample that is not
        valid UTF-8 raises :class:`~envloop_nb.LoadError` naming it and its line; text
        that is not valid JSON is left for the caller's parser to report.

    Examples
    --------
    >>> from pathlib import Path
    >>> log = sorted(Path("../shared/fixtures/inspect/json").glob("*.json"))[0]
    >>> places, texts = next(json_sample_chunks(log, 8))
    >>> places[:2], len(texts), texts[0].as_py()[:14], texts[0].as_py()[-8:]
    (['samples[0]', 'samples[1]'], 8, '{\\n      "id": ', ' } \\n    ')
    """
    if chunk < 1:
        raise ValueError("chunk must be at least 1")
    with path.open("rb") as f:
        layout = _cached_layout(path, f.fileno())
    if layout is None:
        return None
    return _json_chunks(path, chunk, layout[2])


def _json_chunks(path: Path, chunk: int, cuts: Any) -> Iterator[tuple[list[str], pa.Array]]:
    """The batches of :func:`json_sample_chunks`, given the samples' ``cuts``."""
    with path.open("rb") as f:
        for first in range(0, len(cuts) - 1, chunk):
            last = first + chunk >= len(cuts) - 1
            yield _json_batch(path, f.fileno(), first, cuts[first : first + chunk + 1], last)


def _json_batch(
    path: Path, fd: int, first: int, cuts: Any, last: bool
) -> tuple[list[str], pa.Array]:
    """Samples ``first ..`` whose texts lie between consecutive ``cuts`` (file offsets;
    ``last`` when the batch ends the array): the span is read once, and the commas that
    separate samples become spaces, so each value is one JSON object that starts with
    ``{`` and may end with whitespace."""
    import numpy as np
    import pyarrow as pa

    n = len(cuts) - 1
    span = bytearray(int(cuts[-1] - cuts[0]))
    if not _read_into(fd, span, int(cuts[0])):
        raise LoadError(path, f"samples[{first + n - 1}]", "the file changed while being read")
    offsets = cuts - cuts[0]
    commas = offsets[1:-1] - 6 if last else offsets[1:] - 6  # each "}" ends with "},"
    buf = np.frombuffer(span, dtype=np.uint8)
    if not (buf[commas] == 0x2C).all():  # the file changed since it was scanned
        raise LoadError(path, f"samples[{first}]", "the file changed while being read")
    buf[commas] = 0x20
    del buf  # no numpy view may outlive this: pyarrow takes the bytearray below
    try:
        # One check for the whole batch (the sample is found below); ASCII, the usual
        # case, is checked without building a str.
        span.isascii() or span.decode("utf-8")
    except UnicodeDecodeError as err:
        k = int(np.searchsorted(offsets, err.start, side="right")) - 1
        text = bytes(span[offsets[k] : offsets[k + 1]])
        line = 1 + _count_newlines(fd, int(cuts[k]))
        decode_utf8(f"{path} samples[{first + k}]", text, line=line)
        raise  # not reached: decode_utf8 raises for the same byte
    places = [f"samples[{i}]" for i in range(first, first + n)]
    texts = pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(span)]
    )
    return places, texts


def _read_into(fd: int, buf: bytearray, offset: int) -> bool:
    """Fill ``buf`` with the file's bytes from ``offset`` (False if the file ends first);
    one ``preadv`` normally, more when the kernel returns less (over 2 GB at a time)."""
    with memoryview(buf) as view:
        done = 0
        while done < len(buf):
            got = os.preadv(fd, [view[done:]], offset + done)
            if got <= 0:
                return False
            done += got
    return True


def _count_newlines(fd: int, stop: int) -> int:
    """Newlines in the file's first ``stop`` bytes (to name a line in an error)."""
    count = pos = 0
    while pos < stop:
        block = os.pread(fd, min(_JSON_BLOCK, stop - pos), pos)
        if not block:
            break
        count += block.count(b"\n")
        pos += len(block)
    return count


def _json_header(path: Path) -> dict[str, Any] | None:
    """The whole ``.json`` log but its samples (``"samples": []``), parsed in Python
    without reading the samples, or None when the file is not laid out the way Inspect
    writes it or this text does not parse (the caller's exact path then explains)."""
    with path.open("rb") as f:
        fd = f.fileno()
        layout = _cached_layout(path, fd)
        if layout is None:
            return None
        begin, end, _cuts = layout
        closing = end + len(_JSON_SAMPLES_CLOSE)  # just after the array's "]"
        size = os.fstat(fd).st_size
        text = os.pread(fd, begin, 0) + b"]" + os.pread(fd, size - closing, closing)
    try:
        doc = json.loads(text)  # bare NaN / Infinity are read, as Inspect writes them
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return doc if isinstance(doc, dict) else None


class Member(NamedTuple):
    """One entry of a zip archive's central directory (the fields of ``zipfile.ZipInfo``
    this module reads).

    A ``NamedTuple`` rather than a frozen dataclass: an archive of 500,000 samples has
    500,000 entries, and a tuple is built in C (``tuple.__new__``) where a frozen
    dataclass runs ``object.__setattr__`` per field (about 4x slower).
    """

    filename: str
    compress_type: int
    CRC: int
    compress_size: int
    file_size: int
    header_offset: int


@dataclass(frozen=True)
class Directory:
    """A central directory by column: the names as one Arrow string array, and each
    number field as a numpy ``int64`` array (``method``, ``crc``, ``csize``, ``usize``,
    ``offset``).

    500,000 :class:`Member` tuples hold ~200 MB; these columns ~35 MB, a chunk of
    members is a slice, and the names go to DuckDB as they are.
    """

    names: pa.Array
    method: Any
    crc: Any
    csize: Any
    usize: Any
    offset: Any

    def __len__(self) -> int:
        return len(self.names)

    def members(self, start: int = 0, stop: int | None = None) -> list[Member]:
        """The entries ``start:stop`` as :class:`Member` tuples."""
        stop = len(self) if stop is None else stop
        cols = (
            self.names[start:stop].to_pylist(),
            self.method[start:stop].tolist(),
            self.crc[start:stop].tolist(),
            self.csize[start:stop].tolist(),
            self.usize[start:stop].tolist(),
            self.offset[start:stop].tolist(),
        )
        return list(map(tuple.__new__, repeat(Member), zip(*cols, strict=True)))

    def take(self, keep: Any) -> Directory:
        """The entries where the boolean array ``keep`` is true."""
        import numpy as np
        import pyarrow as pa

        index = np.flatnonzero(keep)
        return Directory(
            self.names.take(pa.array(index)),
            self.method[index],
            self.crc[index],
            self.csize[index],
            self.usize[index],
            self.offset[index],
        )

    @staticmethod
    def of(members: list[Member]) -> Directory:
        import numpy as np
        import pyarrow as pa

        def col(i: int) -> Any:
            return np.fromiter((m[i] for m in members), np.int64, len(members))

        names = pa.array([m.filename for m in members], pa.string())
        return Directory(names, col(1), col(2), col(3), col(4), col(5))


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
_EOCD64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_ENTRY = struct.Struct("<4s6H3L5H2L")  # central directory file header, 46 bytes


def central_directory(path: Path) -> list[Member]:
    """The archive's entries, read straight from its central directory (zip64 too).

    ``zipfile.ZipFile`` builds a ``ZipInfo`` object per entry in Python; a log of
    500,000 samples has 500,000 entries, so this reads the fixed-size records itself:
    all at once with numpy when the directory is plain (ASCII names, no zip64 extras, no
    encryption: Inspect's archives), else one by one with ``struct``. Anything unusual
    (a comment hiding the end record, encrypted entries) falls back to ``zipfile``.

    Examples
    --------
    >>> from pathlib import Path
    >>> log = sorted(Path("../shared/fixtures/inspect/eval").glob("*.eval"))[0]
    >>> [m.filename for m in central_directory(log)][:2]
    ['_journal/start.json', 'samples/c00_epoch_1.json']
    """
    return directory(path).members()


def directory(path: Path) -> Directory:
    """The archive's central directory, by column (see :func:`central_directory`)."""
    try:
        with mapped(path) as data:
            return _read_directory(data)
    except (ValueError, struct.error, OSError):
        pass
    try:
        with zipfile.ZipFile(path) as archive:
            return Directory.of(
                [
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
            )
    except (zipfile.BadZipFile, OSError) as err:
        raise LoadError(path, None, f"not a readable .eval archive ({err})") from None


@contextmanager
def mapped(path: Path) -> Iterator[Any]:
    """The file's bytes, memory-mapped read-only (slicing reads only what it touches)."""
    import mmap

    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        yield data


def _read_directory(data: Any) -> Directory:
    """The central directory's entries: :func:`_fast_directory` when it applies, else the
    exact entry-by-entry walk."""
    count, cd_size, cd_offset = _directory_extent(data)
    fast = _fast_directory(bytes(data[cd_offset : cd_offset + cd_size]), count)
    if fast is not None:
        return fast
    return Directory.of(_walk_directory(data, count, cd_size, cd_offset))


def _directory_extent(data: Any) -> tuple[int, int, int]:
    """``(entry count, size, offset)`` of the central directory, from the end record (or
    the zip64 end record when there is one)."""
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
    return count, cd_size, cd_offset


def _walk_directory(data: Any, count: int, cd_size: int, cd_offset: int) -> list[Member]:
    """The entries read one by one with ``struct`` (any name encoding, zip64 extras)."""
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


# The central directory file header (``_ENTRY``) as a numpy record: packed, little-endian.
_ENTRY_FIELDS = (
    ("signature", "<u4"),
    ("made_by", "<u2"),
    ("needed", "<u2"),
    ("flags", "<u2"),
    ("method", "<u2"),
    ("time", "<u2"),
    ("date", "<u2"),
    ("crc", "<u4"),
    ("csize", "<u4"),
    ("usize", "<u4"),
    ("name_len", "<u2"),
    ("extra_len", "<u2"),
    ("comment_len", "<u2"),
    ("disk", "<u2"),
    ("internal", "<u2"),
    ("external", "<u4"),
    ("offset", "<u4"),
)

_ENTRY_DTYPE: Any = None  # built on first use: numpy is imported lazily


def _fast_directory(cd: bytes, count: int) -> Directory | None:
    """The entries of central directory ``cd`` read with numpy, or None when the layout
    is not the plain one this handles (then the caller walks the entries one by one).

    Every ``PK\\x01\\x02`` in ``cd`` is taken as a candidate entry. The result is
    accepted only if the candidates are exactly the chain of entries the walk would
    follow: ``count`` of them, the first at 0, each one's end (46 + name + extra +
    comment bytes) the next one's start and the last one's end the directory's end. A
    name holding those four bytes adds a candidate and so fails the count; an entry
    needing zip64 extras (a field of ``0xFFFFFFFF``), an encrypted entry or a name that is
    not ASCII (the walk decodes it as UTF-8 or cp437 by a flag) also sends the caller to
    the walk, so the two always agree.
    """
    import numpy as np
    import pyarrow as pa

    global _ENTRY_DTYPE
    if _ENTRY_DTYPE is None:
        _ENTRY_DTYPE = np.dtype(list(_ENTRY_FIELDS))
        assert _ENTRY_DTYPE.itemsize == _ENTRY.size
    if count == 0 or len(cd) < 46:
        return None
    b = np.frombuffer(cd, dtype=np.uint8)
    # Every "P", then the three bytes after it: one pass over the directory, not four.
    cand = np.flatnonzero(b[:-3] == 0x50)
    cand = cand[(b[cand + 1] == 0x4B) & (b[cand + 2] == 0x01) & (b[cand + 3] == 0x02)]
    if len(cand) != count or cand[0] != 0 or int(cand[-1]) + 46 > len(cd):
        return None

    # The 46-byte fixed part of every entry, one row each (a C copy per row: no index
    # array per byte), read through a structured dtype that spells the record out.
    rows = np.lib.stride_tricks.sliding_window_view(b, 46)[cand].view(_ENTRY_DTYPE)[:, 0]
    name_len = rows["name_len"].astype(np.int64)
    nxt = cand + 46 + name_len + rows["extra_len"] + rows["comment_len"]
    if (
        nxt[-1] != len(cd)
        or not np.array_equal(nxt[:-1], cand[1:])
        or (rows["flags"] & 0x1).any()  # encrypted
    ):
        return None
    csize, usize, offset = rows["csize"], rows["usize"], rows["offset"]
    if (csize == 0xFFFFFFFF).any() or (usize == 0xFFFFFFFF).any() or (offset == 0xFFFFFFFF).any():
        return None
    # Every name's bytes gathered into one buffer (no Python string per name); when
    # every byte is ASCII that is also their UTF-8 and cp437 text.
    ends = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(name_len, out=ends[1:])
    name_bytes = np.empty(int(ends[-1]), dtype=np.uint8)
    step = 65_536  # entries per gather: the byte index is 8 bytes a name byte, so bounded
    for lo in range(0, count, step):
        hi = min(lo + step, count)
        first, last = int(ends[lo]), int(ends[hi])
        shift = np.repeat(cand[lo:hi] + 46 - ends[lo:hi], name_len[lo:hi])
        name_bytes[first:last] = b[shift + np.arange(first, last)]
    if (name_bytes >= 0x80).any():
        return None
    names = pa.Array.from_buffers(
        pa.large_string(), count, [None, pa.py_buffer(ends), pa.py_buffer(name_bytes.tobytes())]
    )
    i64 = np.int64
    return Directory(
        names,
        rows["method"].astype(i64),
        rows["crc"].astype(i64),
        csize.astype(i64),
        usize.astype(i64),
        offset.astype(i64),
    )


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
    import numpy as np

    entries = directory(path)
    import pyarrow as pa
    import pyarrow.compute as pc

    names = entries.names
    samples = entries.take(
        pc.and_(pc.starts_with(names, "samples/"), pc.ends_with(names, ".json"))
        .fill_null(False)
        .to_numpy(zero_copy_only=False)
    )
    wanted = pc.is_in(names, value_set=pa.array(["header.json", "_journal/start.json"]))
    by_name = {  # the two members read here, not a dict of every sample's
        m.filename: m
        for i in np.flatnonzero(wanted.to_numpy(zero_copy_only=False)).tolist()
        for m in entries.members(i, i + 1)
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
