"""Bringing an older workspace file to this schema: :func:`migrate` when it is opened for
writing, :func:`read_only_shims` when it is opened read-only (the versions are
:data:`.schema.SCHEMA_VERSION`'s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .attempt_sources import numbered_rows, rebuild
from .sql import ident

if TYPE_CHECKING:
    import duckdb

__all__ = ["migrate", "read_only_shims"]


def _cache_lacks_position(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's ``task_counts_cache`` is version 1's (no ``position``)."""
    row = con.execute(
        """SELECT count(*) FILTER (WHERE column_name = 'position'), count(*)
           FROM duckdb_columns() WHERE database_name = current_database()
                AND schema_name = 'main' AND table_name = 'task_counts_cache'"""
    ).fetchone()
    return bool(row and row[1] and not row[0])


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Bring an older workspace opened for writing to this schema.

    Version 1: its ``attempts`` table becomes ``attempt_rows`` (``SCHEMA_SQL`` then makes
    the ``attempts`` view), its ``task_counts_cache`` gains ``position`` (null in the rows
    it has). Versions 1 and 2: ``attempt_rows`` gains ``source_row`` (null: the places
    written stay as they are) and a version-2 ``attempts`` view is made again over it.
    """
    row = con.execute(
        """SELECT count(*) FILTER (WHERE table_name = 'attempts'),
                  count(*) FILTER (WHERE table_name = 'attempt_sources')
           FROM duckdb_tables()
           WHERE database_name = current_database() AND schema_name = 'main'
                 AND NOT temporary"""
    ).fetchone()
    assert row is not None
    if row[0]:
        con.execute("ALTER TABLE attempts RENAME TO attempt_rows")
    if _cache_lacks_position(con):  # its rows stay valid, looked up by task name
        con.execute("ALTER TABLE task_counts_cache ADD COLUMN position INTEGER")
    if numbered_rows(con) is False:  # a version-1 or -2 attempt_rows
        con.execute("ALTER TABLE attempt_rows ADD COLUMN source_row BIGINT")
        if row[1]:  # version 2: its attempts view names attempt_rows' columns of then
            rebuild(con)


def read_only_shims(con: duckdb.DuckDBPyConnection) -> None:
    """A version-1 workspace opened read-only, seen through this schema for the session:
    its ``task_counts_cache`` with a null ``position`` (a temporary view over it)."""
    db = con.execute("SELECT current_database()").fetchone()
    if db and _cache_lacks_position(con):
        con.execute(
            "CREATE TEMP VIEW task_counts_cache AS SELECT *, NULL::INTEGER AS position "
            f"FROM {ident(str(db[0]))}.main.task_counts_cache"
        )
