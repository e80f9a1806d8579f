"""One workspace change as one DuckDB transaction: all of it lands, or none of it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["transaction"]


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """``BEGIN`` … ``COMMIT``; any exception rolls back and is raised again.

    Examples
    --------
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t (x INT)")
    >>> try:
    ...     with transaction(con):
    ...         _ = con.execute("INSERT INTO t VALUES (1)")
    ...         raise ValueError("refused")
    ... except ValueError:
    ...     pass
    >>> con.execute("SELECT count(*) FROM t").fetchone()
    (0,)
    """
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
