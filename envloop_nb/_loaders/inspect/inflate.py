"""Inflating a zip member (an Inspect ``.eval``'s) without trusting it: a zip bomb is
refused by name before its bytes fill memory.

Two checks, as the ``.gz`` reader (:mod:`..common.read`) inflates a bounded step at a time:

* **stated sizes** (:func:`check_inflation`, :func:`check_chunk`), before a byte is
  produced: a member may state at most :data:`MEMBER_MAX_BYTES`, and once past
  :data:`MEMBER_RATIO_FLOOR` at most :data:`MEMBER_MAX_RATIO` times its compressed size
  (a chunk of members held together likewise);
* **the stated size enforced** (:func:`inflate`): the member is streamed, ``_STEP``
  bytes at a time (zstd's ``stream_reader``, zlib's ``max_length``), and refused as
  soon as it passes the size its directory entry states. (zstd's one-shot
  ``decompress`` allocates whatever the frame's own header states, whatever the
  directory says.)

A real sample member is kilobytes to a few hundred MB of JSON that zstd shrinks 5-30
times; the bomb of issue 34 (246 KB stating 3 GiB) is about 13,000 times.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..._errors import LoadError

__all__ = [
    "MEMBER_MAX_BYTES",
    "MEMBER_MAX_RATIO",
    "MEMBER_RATIO_FLOOR",
    "check_chunk",
    "check_inflation",
    "inflate",
]

#: At most this many bytes (2 GiB) per member.
MEMBER_MAX_BYTES = 2 << 30
#: Once a member (or a chunk of members together) states more than
#: ``MEMBER_RATIO_FLOOR`` bytes (32 MiB), at most ``MEMBER_MAX_RATIO`` times its
#: compressed size (100:1). Raise them here for a genuine log beyond them.
MEMBER_MAX_RATIO = 100
MEMBER_RATIO_FLOOR = 32 << 20
_STEP = 1 << 22  # most bytes inflated at a time (as the .gz reader's common.read._OUT)
_ZSTD = 93
_HERE = "envloop_nb._loaders.inspect.inflate"


def check_inflation(path: Path, place: str, compressed: int, inflated: int) -> None:
    """Refuse a member that states it inflates beyond :data:`MEMBER_MAX_BYTES`, or beyond
    :data:`MEMBER_MAX_RATIO` times its compressed size once past
    :data:`MEMBER_RATIO_FLOOR`.

    Examples
    --------
    >>> check_inflation(Path("x.eval"), "samples/a_epoch_1.json", 250_000, 1 << 30)
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: x.eval, samples/a_epoch_1.json: 250,000 compressed bytes state 1,073,741,824 inflated (4,295:1, over the limit of 100:1 above 33,554,432 bytes: MEMBER_MAX_RATIO in envloop_nb._loaders.inspect.inflate): refused as a possible zip bomb
    """
    if inflated > MEMBER_MAX_BYTES:
        raise LoadError(
            path,
            place,
            f"the member states it inflates to {inflated:,} bytes, over the limit of "
            f"{MEMBER_MAX_BYTES:,} (MEMBER_MAX_BYTES in {_HERE}): refused as a possible zip bomb",
        )
    if _over_ratio(compressed, inflated):
        raise LoadError(
            path, place, f"{_ratio(compressed, inflated)}: refused as a possible zip bomb"
        )


def check_chunk(path: Path, names: Any, csize: Any, usize: Any) -> None:
    """:func:`check_inflation` on each member of a chunk (``names``, an Arrow string
    array; ``csize`` and ``usize``, numpy arrays) and on the chunk as a whole, which is
    held in memory at once; the error names the member (the chunk's largest)."""
    import numpy as np

    over = (usize > MEMBER_MAX_BYTES) | (
        (usize > MEMBER_RATIO_FLOOR) & (usize > MEMBER_MAX_RATIO * np.maximum(csize, 1))
    )
    if over.any():
        i = int(np.flatnonzero(over)[0])
        check_inflation(path, names[i].as_py(), int(csize[i]), int(usize[i]))
    compressed, inflated = int(csize.sum()), int(usize.sum())
    if _over_ratio(compressed, inflated):
        largest = names[int(np.argmax(usize))].as_py()
        raise LoadError(
            path,
            largest,
            f"{len(names)} members (this the largest) together: {_ratio(compressed, inflated)}"
            ": refused as a possible zip bomb",
        )


def _over_ratio(compressed: int, inflated: int) -> bool:
    return inflated > MEMBER_RATIO_FLOOR and inflated > MEMBER_MAX_RATIO * max(compressed, 1)


def _ratio(compressed: int, inflated: int) -> str:
    return (
        f"{compressed:,} compressed bytes state {inflated:,} inflated "
        f"({inflated / max(compressed, 1):,.0f}:1, over the limit of {MEMBER_MAX_RATIO}:1 "
        f"above {MEMBER_RATIO_FLOOR:,} bytes: MEMBER_MAX_RATIO in {_HERE})"
    )


def inflate(
    path: Path, place: str, method: int, raw: bytes, stated: int, zstd: Any = None
) -> bytes:
    """The bytes of member ``place`` (compressed ``raw``, zip ``method``), streamed and
    refused as soon as they pass the ``stated`` size; ``zstd`` is a
    ``zstandard.ZstdDecompressor`` to reuse. Corrupt data is a :class:`LoadError`."""
    if method == _ZSTD:
        import zstandard

        try:
            reader = (zstd or zstandard.ZstdDecompressor()).stream_reader(
                raw, read_across_frames=False
            )
            return _bounded(path, place, iter(lambda: reader.read(_STEP), b""), stated)
        except zstandard.ZstdError as err:
            raise LoadError(path, place, f"corrupt zstd data ({err})") from None
    if method == zipfile.ZIP_DEFLATED:
        try:
            return _bounded(path, place, _deflated(raw), stated)
        except zlib.error as err:
            raise LoadError(path, place, f"corrupt deflate data ({err})") from None
    if method == zipfile.ZIP_STORED:
        return bytes(raw)
    raise LoadError(path, place, f"unsupported zip compression method {method}")


def _deflated(raw: bytes) -> Iterator[bytes]:
    """A raw deflate stream's bytes, at most ``_STEP`` at a time; a stream without its
    end raises ``zlib.error``."""
    d = zlib.decompressobj(-15)
    pending = raw
    while not d.eof:
        out = d.decompress(pending, _STEP)
        pending = d.unconsumed_tail
        if out:
            yield out
        elif not pending:
            if not d.eof:
                raise zlib.error("incomplete or truncated stream")
            return


def _bounded(path: Path, place: str, parts: Iterator[bytes], stated: int) -> bytes:
    """The bytes of ``parts`` joined, refused as soon as they pass ``stated`` bytes."""
    out = bytearray()
    for part in parts:
        out += part
        if len(out) > stated:
            raise LoadError(
                path,
                place,
                f"corrupt member: it inflates past the {stated:,} bytes the zip directory "
                "states (refused there, before inflating further: a possible zip bomb)",
            )
    return bytes(out)
