"""Bringing an older workspace file to this schema: :func:`migrate` when it is opened for
writing, :func:`read_only_shims` when it is opened read-only (the versions are
:data:`.schema.SCHEMA_VERSION`'s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .attempt_sources import numbered_rows, rebuild
from .schema import table_sql
from .sql import ident
from .steps import SEARCH_SQL, insert_sql
from .transaction import transaction

if TYPE_CHECKING:
    import duckdb

__all__ = ["migrate", "read_only_shims"]


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    """The columns of the file's ``table`` (none: no such table)."""
    rows = con.execute(
        """SELECT column_name FROM duckdb_columns()
           WHERE database_name = current_database() AND schema_name = 'main'
                 AND table_name = ?""",
        [table],
    ).fetchall()
    return {str(r[0]) for r in rows}


def _cache_lacks_position(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's ``task_counts_cache`` is version 1's (no ``position``)."""
    have = _columns(con, "task_counts_cache")
    return bool(have) and "position" not in have


def _steps_lack_search(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's ``steps`` is version 4's (no searchable text)."""
    have = _columns(con, "steps")
    return bool(have) and "search_text" not in have


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Bring an older workspace opened for writing to this schema, in one transaction
    (cut short, the file is left as it was).

    Version 1: its ``attempts`` table becomes ``attempt_rows`` (``SCHEMA_SQL`` then makes
    the ``attempts`` view), its ``task_counts_cache`` gains ``position`` (null in the rows
    it has). Versions 1 and 2: ``attempt_rows`` gains ``source_row`` (null: the places
    written stay as they are) and a version-2 ``attempts`` view is made again over it.
    Versions 1–4: their ``steps`` are copied, in their order, into a ``steps`` table of
    this schema with their searchable text (``search_text``) made as a load makes it: one
    bulk insert, written out as it goes (20M steps: ~34 s, 0.8 GB; the old table's blocks
    stay in the file as free space). An ``UPDATE`` of every row holds the new text in
    memory until the commit: 1.7 GB at 20M steps, beyond the default ``memory_limit``.
    """
    with transaction(con):
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
        if _steps_lack_search(con):
            con.execute("ALTER TABLE steps RENAME TO _el_steps_v4")
            con.execute(table_sql("steps"))
            con.execute(insert_sql("SELECT * FROM _el_steps_v4"))
            con.execute("DROP TABLE _el_steps_v4")


def read_only_shims(con: duckdb.DuckDBPyConnection) -> None:
    """An older workspace opened read-only, seen through this schema for the session
    (temporary views over its tables): a version-1 ``task_counts_cache`` with a null
    ``position``; older ``steps`` with their searchable text made as they are read (a
    search then lowers every step's text, as before version 5: open the file once for
    writing to keep the text)."""
    db = con.execute("SELECT current_database()").fetchone()
    if not db:
        return
    if _cache_lacks_position(con):
        con.execute(
            "CREATE TEMP VIEW task_counts_cache AS SELECT *, NULL::INTEGER AS position "
            f"FROM {ident(str(db[0]))}.main.task_counts_cache"
        )
    if _steps_lack_search(con):
        con.execute(
            f"CREATE TEMP VIEW steps AS SELECT *, {SEARCH_SQL} AS search_text "
            f"FROM {ident(str(db[0]))}.main.steps"
        )
