"""A pretty-printed Inspect ``.json`` log split at its sample boundaries, so neither the
samples nor the whole document is ever held at once.

Inspect's ``JSONRecorder`` writes indent-2 JSON, and raw newlines never occur inside
JSON strings: inside the top-level ``samples`` array, ``\n    },\n    {`` is exactly a
boundary between two samples. Any other layout is left to the caller's whole-document
path (``json_sample_chunks`` returns None).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._errors import LoadError
from ..common.read import decode_utf8
from .spans import chunk_spans

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["json_header", "json_sample_chunks"]

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


def json_sample_chunks(
    path: Path, chunk: int, budget: int = 1 << 62
) -> Iterator[tuple[list[str], pa.Array]] | None:
    """The samples of an indent-2 ``.json`` log as JSON text, ``chunk`` at a time, without
    parsing them or holding the file in memory; None when the file is not laid out the
    way Inspect writes it (compact, cut short, ...): read it whole then.

    Parameters
    ----------
    path
        The ``.json`` log.
    chunk
        Samples per yielded batch (the last may hold fewer).
    budget
        Bytes per batch, at most (a sample larger than that is a batch of its own).

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
    import numpy as np

    if chunk < 1:
        raise ValueError("chunk must be at least 1")
    with path.open("rb") as f:
        layout = _cached_layout(path, f.fileno())
    if layout is None:
        return None
    return _json_chunks(path, chunk_spans(np.diff(layout[2]), chunk, budget), layout[2])


def _json_chunks(
    path: Path, spans: list[tuple[int, int]], cuts: Any
) -> Iterator[tuple[list[str], pa.Array]]:
    """The batches of :func:`json_sample_chunks`: samples ``start:stop`` of each span,
    given the samples' ``cuts``."""
    with path.open("rb") as f:
        for start, stop in spans:
            last = stop == len(cuts) - 1
            yield _json_batch(path, f.fileno(), start, cuts[start : stop + 1], last)


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


def json_header(path: Path) -> dict[str, Any] | None:
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
