"""The per-(job, key) memo: results computed from a job's rows, kept per connection.

One scan per (job, threshold): the per-task counts (and the tables derived from them) are
memoized per connection (a small LRU, weakly keyed by the connection) and keyed by
``jobs.loaded_at``, so a reload or a removal of the job is never answered from the cache.

Examples
--------
>>> import envloop_nb as enb
>>> ws = enb.open()
>>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> calls = []
>>> def compute():
...     calls.append(1)
...     return 42
>>> cached(ws.con, job.id, ("answer",), compute), cached(ws.con, job.id, ("answer",), compute)
(42, 42)
>>> len(calls)
1
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

__all__ = ["CACHE", "CACHE_SIZE", "cached", "clear_cache", "forget_job", "job_row"]

#: Cached results per connection, least recently used first (see :func:`cached`).
CACHE: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)
#: Entries kept per connection (each per-task table is ~100 bytes per task).
CACHE_SIZE = 8


def job_row(con: duckdb.DuckDBPyConnection, job_id: str) -> tuple[Any, int] | None:
    """``(loaded_at, attempts)`` of the job, or None when the workspace has no such job."""
    row = con.execute("SELECT loaded_at, attempts FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    return None if row is None else (row[0], int(row[1]))


def cached(
    con: duckdb.DuckDBPyConnection, job_id: str, key: Hashable, compute: Callable[[], Any]
) -> Any:
    """``compute()`` memoized per connection under ``(job_id, key, jobs.loaded_at)``.

    A reloaded job has a new ``loaded_at`` and a removed one has no row, so neither is
    answered from the cache (and a reload drops the job's older entries). Values are
    shared between callers: never modify them.
    """
    row = job_row(con, job_id)
    if row is None:  # a removed job: forget its entries
        forget_job(con, job_id)
        return compute()
    full = (job_id, key, row[0])
    try:
        entries = CACHE.setdefault(con, OrderedDict())
    except TypeError:  # a connection-like object that cannot be weakly referenced
        return compute()
    if full in entries:
        entries.move_to_end(full)
        return entries[full]
    value = compute()
    for stale in [e for e in entries if e[0] == job_id and e[2] != row[0]]:
        del entries[stale]  # the job was reloaded since
    entries[full] = value
    while len(entries) > CACHE_SIZE:
        entries.popitem(last=False)
    return value


def clear_cache(con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Forget the memoized per-task tables of one connection (or of all)."""
    if con is None:
        CACHE.clear()
    else:
        CACHE.pop(con, None)


def forget_job(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Forget one job's memoized results on ``con`` (its rows changed in place, e.g. an
    annotation, without a reload)."""
    try:
        known = CACHE.get(con)
    except TypeError:
        return
    if known:
        for stale in [e for e in known if e[0] == job_id]:
            del known[stale]
