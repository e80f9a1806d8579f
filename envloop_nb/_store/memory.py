"""Handing memory DuckDB freed back to the system after a big operation.

DuckDB allocates through its own jemalloc, which keeps what a query freed in its arenas
for later queries; Python's frames (pandas, Arrow) cannot use it, so after a 100M-attempt
load the freed ~0.6 GB stayed under every frame fetched next. The workspace runs the
allocator's background threads (``allocator_background_threads``, set by ``enb.open``),
which purge it within seconds; :func:`release_memory` purges it at once, at the end of a
load, before the first question is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["release_memory"]


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
    row = con.execute("SELECT current_setting('threads')").fetchone()
    threads = int(row[0]) if row else 1
    con.execute(f"SET threads = {threads + 1:d}")  # an int: no data in this SQL
    con.execute(f"SET threads = {threads:d}")
