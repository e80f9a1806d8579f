"""The zip archive under an Inspect ``.eval`` log: its central directory, read by
column (500,000 sample members are the norm at scale), and one member's bytes.

Members are compressed with zstd (zip method 93), which Python's ``zipfile`` cannot
read: the raw member is located from the directory and decompressed with
``zstandard``; its CRC-32 is checked against the directory's.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..._errors import LoadError
from ..common.read import decode_utf8
from .inflate import check_chunk, check_inflation, inflate
from .spans import chunk_spans

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Directory",
    "Member",
    "central_directory",
    "directory",
    "mapped",
    "member_bytes",
    "sample_chunks",
]

_ZSTD = 93
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zip local file header, 30 bytes
_LOCAL_SIGNATURE = b"PK\x03\x04"
_LOCAL_HEADER_MAX = 30 + 2 * 65_535  # a zip local header: 30 bytes, a name and an extra field


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


def member_bytes(path: Path, data: Any, info: Member | zipfile.ZipInfo, zstd: Any = None) -> bytes:
    """The member's uncompressed bytes, CRC-checked; ``data`` is the archive's bytes (an
    ``mmap``), ``zstd`` a ``zstandard.ZstdDecompressor`` to reuse (one per thread).

    The size the directory states is checked (:func:`check_inflation`) and then
    enforced while inflating, a step at a time: a member that inflates past it is
    refused before its bytes fill memory."""
    place = info.filename
    check_inflation(path, place, info.compress_size, info.file_size)
    at = info.header_offset
    local = data[at : at + _LOCAL_HEADER.size]
    if len(local) < _LOCAL_HEADER.size or local[:4] != _LOCAL_SIGNATURE:
        raise LoadError(path, place, "corrupt .eval archive: bad local header")
    name_len, extra_len = struct.unpack_from("<HH", local, 26)
    begin = at + _LOCAL_HEADER.size + name_len + extra_len
    raw = data[begin : begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise LoadError(path, place, "corrupt .eval archive: member cut short")
    out = inflate(path, place, info.compress_type, raw, info.file_size, zstd)
    if len(out) != info.file_size:
        raise LoadError(
            path,
            place,
            f"corrupt member: {len(out):,} bytes, the directory states {info.file_size:,}",
        )
    if zlib.crc32(out) != info.CRC:
        raise LoadError(path, place, "corrupt member: CRC-32 mismatch")
    return out


def sample_chunks(
    path: Path, entries: Directory, chunk: int, budget: int = 1 << 62
) -> Iterator[tuple[pa.Array, pa.Array]]:
    """The members of ``entries`` in chunks of at most ``chunk`` members and ``budget``
    uncompressed bytes (:func:`~.spans.chunk_spans`): ``(names, texts)``, each an Arrow
    string column.

    A chunk is decompressed by :func:`_inflate_chunk` on a worker thread one chunk ahead
    of the one DuckDB is mapping (zstd and DuckDB both release the GIL), so memory holds
    two chunks, never the log.
    """
    from concurrent.futures import ThreadPoolExecutor

    if len(entries) == 0:
        return
    spans = chunk_spans(entries.usize, chunk, budget)
    with path.open("rb") as f, ThreadPoolExecutor(max_workers=1) as pool:
        fd, size = f.fileno(), path.stat().st_size
        ahead = pool.submit(_inflate_chunk, path, fd, size, entries, *spans[0])
        for i, (start, stop) in enumerate(spans):
            joined, offsets = ahead.result()
            if i + 1 < len(spans):
                ahead = pool.submit(_inflate_chunk, path, fd, size, entries, *spans[i + 1])
            places = entries.names[start:stop]
            yield places, _arrow_texts(path, places, joined, offsets)


def _inflate_chunk(
    path: Path, fd: int, size: int, entries: Directory, start: int, stop: int
) -> tuple[bytes, Any]:
    """The uncompressed bytes of members ``start:stop`` joined, and the offsets of each
    in the join.

    The chunk's span of the archive is read once (``pread``: no mapped pages stay in
    memory) and its zstd frames are decompressed together in C on two threads
    (``multi_decompress_to_buffer``); each member's CRC-32 is checked. Anything the
    fast path does not expect (another compression method, a bad header, a corrupt
    frame, a CRC mismatch) sends the chunk through :func:`member_bytes`, member by
    member, which names the member at fault.
    """
    import numpy as np

    check_chunk(
        path, entries.names[start:stop], entries.csize[start:stop], entries.usize[start:stop]
    )
    fast = _inflate_zstd(fd, size, entries, start, stop)
    if fast is not None:
        return fast
    with mapped(path) as data:
        import zstandard

        zstd = zstandard.ZstdDecompressor()
        blobs = [member_bytes(path, data, m, zstd) for m in entries.members(start, stop)]
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    return b"".join(blobs), offsets


def _inflate_zstd(
    fd: int, size: int, entries: Directory, start: int, stop: int
) -> tuple[bytes, Any] | None:
    import os
    import zlib

    import numpy as np
    import zstandard

    n = stop - start
    if (entries.method[start:stop] != _ZSTD).any():
        return None
    at = entries.offset[start:stop]
    csize = entries.csize[start:stop]
    usize = entries.usize[start:stop]
    lo = int(at.min())
    hi = min(size, int((at + csize).max()) + _LOCAL_HEADER_MAX)
    span = os.pread(fd, hi - lo, lo)
    buf = np.frombuffer(span, np.uint8)
    rel = at - lo
    if (rel + 30 > len(span)).any():
        return None
    signed = (buf[rel] == 0x50) & (buf[rel + 1] == 0x4B) & (buf[rel + 2] == 3) & (buf[rel + 3] == 4)
    if not signed.all():
        return None
    begin = (
        rel + 30 + (buf[rel + 26] | buf[rel + 27].astype(np.int64) << 8)
        + (buf[rel + 28] | buf[rel + 29].astype(np.int64) << 8)
    )  # fmt: skip
    if (begin + csize > len(span)).any():
        return None
    segments = np.stack([begin, csize], axis=1).astype(np.uint64)
    try:
        out = zstandard.ZstdDecompressor().multi_decompress_to_buffer(
            zstandard.BufferWithSegments(span, segments.tobytes()),
            decompressed_sizes=usize.astype(np.uint64).tobytes(),
            threads=2,
        )
    except zstandard.ZstdError:
        return None
    parts: list[Any] = [out[i] for i in range(n)]  # BufferSegment: the buffer protocol
    for part, length, crc in zip(
        parts, usize.tolist(), entries.crc[start:stop].tolist(), strict=True
    ):
        if len(part) != length or zlib.crc32(part) != crc:
            return None
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(usize, out=offsets[1:])
    return b"".join(parts), offsets


def _arrow_texts(path: Path, places: pa.Array, joined: bytes, offsets: Any) -> pa.Array:
    """The members' texts as one Arrow string column (UTF-8 checked once per chunk; the
    member is named on failure)."""
    import pyarrow as pa

    try:
        joined.isascii() or joined.decode("utf-8")  # ASCII, the usual case: no str made
    except UnicodeDecodeError:
        for i, place in enumerate(places.to_pylist()):
            decode_utf8(f"{path} member {place}", joined[offsets[i] : offsets[i + 1]])
        raise
    return pa.Array.from_buffers(
        pa.large_string(), len(places), [None, pa.py_buffer(offsets), pa.py_buffer(joined)]
    )
