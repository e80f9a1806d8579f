"""Handing memory DuckDB freed back to the system after a big operation.

DuckDB allocates through its own jemalloc, which keeps what a query freed in its arenas
for later queries; Python's frames (pandas, Arrow) cannot use it, so after a 100M-attempt
load the freed ~0.6 GB stayed under every frame fetched next. The workspace runs the
allocator's background threads (``allocator_background_threads``, set by ``enb.open``),
which purge it within seconds; :func:`release_memory` purges it at once, at the end of a
load, before the first question is asked, and :func:`release_after` after a per-task
query of a big job (the answers asked one after another in a cell stack otherwise: at
3.1M tasks the summary and the groups left ~0.4 GB in the arenas).

Python's own large buffers come from the C library's ``malloc``: glibc serves a block
under its mmap threshold from its heaps, and the threshold grows to the largest block
freed (up to 32 MB), so once a loader freed its first chunk of a log (tens of MB of
decompressed samples) every later chunk came from the heaps and what each freed stayed
there; :func:`release_heap` hands those pages back (a 20,000-sample Inspect load
peaked ~0.15 GB lower).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["RELEASE_ROWS", "fewer_threads", "release_after", "release_heap", "release_memory"]

#: A query that gave at least this many rows (one per task) purges DuckDB's arenas
#: after it: 20–150 ms, small beside such a query, and never paid by a small job.
RELEASE_ROWS = 500_000
#: One release at a time: two interleaved (loads at once on two connections of one
#: workspace) would leave the thread count moved.
_LOCK = threading.Lock()
#: Open :func:`fewer_threads` blocks: releases wait for the end of the last.
_HELD = 0


def release_memory(con: duckdb.DuckDBPyConnection) -> None:
    """Return the memory DuckDB's allocator holds but no longer uses to the system.

    DuckDB has no statement for it; a change of its thread count purges every arena of
    its allocator (``TaskScheduler::RelaunchThreads`` → ``Allocator::FlushAll``), so the
    count is moved by one and set back: the setting ends as it was (20–150 ms; nothing
    happens where DuckDB runs without jemalloc).

    Examples
    --------
    >>> import duckdb
    >>> con = duckdb.connect(config={"threads": 3})
    >>> release_memory(con)
    >>> con.execute("SELECT current_setting('threads')").fetchone()[0]
    3
    """
    with _LOCK:
        if _HELD:  # a fewer_threads block purges once at its end
            return
        threads = _threads(con)
        con.execute(f"SET threads = {threads + 1:d}")  # an int: no data in this SQL
        con.execute(f"SET threads = {threads:d}")


@contextmanager
def fewer_threads(con: duckdb.DuckDBPyConnection, fewer: int) -> Iterator[None]:
    """DuckDB's thread count lowered by ``fewer`` (one at least is left) for the body,
    every :func:`release_memory` inside held back, and the count set back at the end,
    whatever happened — which purges the allocator once, as a release does.

    For work that runs several queries at once on connections of one database: a query
    runs on its calling thread and the database's ``threads - 1`` workers, so each
    extra caller is one thread more than the count. Releases between them (one per
    load) each relaunched the threads while the other queries ran.

    Examples
    --------
    >>> import duckdb
    >>> con = duckdb.connect(config={"threads": 3})
    >>> with fewer_threads(con, 1):
    ...     con.execute("SELECT current_setting('threads')").fetchone()[0]
    2
    >>> con.execute("SELECT current_setting('threads')").fetchone()[0]
    3
    """
    global _HELD
    with _LOCK:
        threads = _threads(con)
        con.execute(f"SET threads = {max(1, threads - fewer):d}")  # ints: no data in this SQL
        _HELD += 1
    try:
        yield
    finally:
        with _LOCK:
            _HELD -= 1
            con.execute(f"SET threads = {threads:d}")


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    """DuckDB's thread count on ``con``'s database."""
    row = con.execute("SELECT current_setting('threads')").fetchone()
    return int(row[0]) if row else 1


def release_after(con: duckdb.DuckDBPyConnection, rows: int) -> None:
    """:func:`release_memory` when a query just gave ``rows`` >= :data:`RELEASE_ROWS`.

    Examples
    --------
    >>> import duckdb
    >>> release_after(duckdb.connect(), 10)  # a small result: nothing to do
    """
    if rows >= RELEASE_ROWS:
        release_memory(con)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols: the C library's among them
    except (OSError, TypeError):  # no such handle (Windows)
        return None
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None)  # glibc only
    return trim


def release_heap() -> None:
    """Return the pages the C library's ``malloc`` holds free to the system (glibc's
    ``malloc_trim``: a few ms; nothing where the C library has none).

    Examples
    --------
    >>> release_heap()
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
