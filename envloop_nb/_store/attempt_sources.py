"""Jobs whose attempts are read in place, and the ``attempts`` view that holds them.

``attempts`` is a view: the rows loads copied (``attempt_rows``) and, for each job
registered in place (``ws.load(path, copy=False)``), the SELECT recorded in
``attempt_sources`` that reads its Parquet files where they are, in ``attempt_rows``'
columns and types. Every query of a job names ``attempts`` and filters on ``job_id``;
DuckDB folds that filter into each branch, so a query about one job reads no other
job's files.

A registered file that changed (size or modification time) or went away since it was
registered is left out of the view (the job is refused, naming the file, by
:func:`check`), so one missing file never breaks the other jobs' queries; the view is
rebuilt when a workspace is opened and the set of readable sources differs from the
one it was built with.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._errors import LoadError
from .schema import ROWS_SELECT
from .sql import literal

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "check",
    "file_facts",
    "in_place",
    "numbered_rows",
    "problem",
    "rebuild",
    "refresh",
    "register",
    "view_later",
    "view_sql",
]

#: ``meta`` key: the job ids whose sources the ``attempts`` view reads (JSON list).
_META_KEY = "attempts_view_jobs"
#: Connections whose registrations leave the ``attempts`` view to the caller (:func:`view_later`).
_LATER: set[int] = set()


@contextmanager
def view_later(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside, :func:`register` on ``con`` records the job's sources and makes the
    ``attempts`` view for ``con`` only (a temporary view, as a read-only workspace has: the
    load's checks and messages read it); the caller rebuilds the workspace's view
    (:func:`rebuild`) once the loads committed.

    For loads at once on several connections of one workspace (``con.cursor()``): each
    rebuilding the workspace's view in its own transaction is a write-write conflict on
    the view, and DuckDB refuses every load but the first to commit.
    """
    _LATER.add(id(con))
    try:
        yield
    finally:
        _LATER.discard(id(con))


def file_facts(files: list[str]) -> list[dict[str, Any]]:
    """Each file's path, size and modification time (nanoseconds), as recorded."""
    out = []
    for path in files:
        st = os.stat(path)
        out.append({"path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    return out


def problem(files: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The first recorded file that cannot be read as registered, and why; or None.

    Examples
    --------
    >>> problem([{"path": "/no/such.parquet", "size": 1, "mtime_ns": 0}])
    ('/no/such.parquet', 'no longer there')
    """
    for f in files:
        try:
            st = os.stat(f["path"])
        except OSError:
            return str(f["path"]), "no longer there"
        if st.st_size != f["size"] or st.st_mtime_ns != f["mtime_ns"]:
            return str(f["path"]), "changed since it was registered"
    return None


def numbered_rows(con: duckdb.DuckDBPyConnection) -> bool | None:
    """Whether the file's ``attempt_rows`` has ``source_row`` (None: no such table)."""
    row = con.execute(
        """SELECT count(*) FILTER (WHERE column_name = 'source_row'), count(*)
           FROM duckdb_columns() WHERE database_name = current_database()
                AND schema_name = 'main' AND table_name = 'attempt_rows'"""
    ).fetchone()
    return None if not row or not row[1] else bool(row[0])


def view_sql(selects: list[str], *, numbered: bool = True) -> str:
    """The ``attempts`` view over ``attempt_rows`` and the sources' ``selects``
    (``numbered``: ``attempt_rows`` has ``source_row``; a version-2 file read-only has not).

    Examples
    --------
    >>> view_sql([], numbered=False)
    'CREATE OR REPLACE VIEW attempts AS SELECT * FROM attempt_rows'
    >>> view_sql(["SELECT 1"]).endswith("FROM attempt_rows UNION ALL (SELECT 1)")
    True
    """
    rows = ROWS_SELECT if numbered else "SELECT * FROM attempt_rows"
    body = " UNION ALL ".join([rows, *(f"({s})" for s in selects)])
    return f"CREATE OR REPLACE VIEW attempts AS {body}"


def _readable(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(job id, SELECT) of the sources whose files are as registered, by job id."""
    rows = con.execute(
        "SELECT job_id, select_sql, files FROM attempt_sources ORDER BY job_id"
    ).fetchall()
    return [(str(j), str(s)) for j, s, f in rows if problem(json.loads(f)) is None]


def rebuild(
    con: duckdb.DuckDBPyConnection,
    *,
    temp: bool = False,
    readable: list[tuple[str, str]] | None = None,
) -> list[str]:
    """Make the ``attempts`` view over the sources still readable as registered
    (``readable``, when the caller has just looked); return their job ids. ``temp``: for
    this connection only (a read-only workspace)."""
    if readable is None:
        readable = _readable(con)
    sql = view_sql([s for _, s in readable], numbered=numbered_rows(con) is not False)
    if temp:
        con.execute(sql.replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))
    else:
        con.execute(sql)
        con.execute(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [_META_KEY, json.dumps([j for j, _ in readable])],
        )
    return [j for j, _ in readable]


def refresh(con: duckdb.DuckDBPyConnection, *, read_only: bool) -> None:
    """On opening a workspace: rebuild the view if the readable sources are not the ones
    it was built with (a file went away, came back or changed)."""
    readable = _readable(con)
    # a literal: a bound parameter makes DuckDB import pandas (~1 s of opening a workspace)
    row = con.execute(f"SELECT value FROM meta WHERE key = {literal(_META_KEY)}").fetchone()
    built = json.loads(row[0]) if row else []
    if [j for j, _ in readable] != built:
        rebuild(con, temp=read_only, readable=readable)


def register(
    con: duckdb.DuckDBPyConnection, job_id: str, select_sql: str, files: list[str]
) -> None:
    """Record ``job_id``'s attempts as ``select_sql`` over ``files`` and rebuild the view
    (inside the caller's transaction; inside :func:`view_later`, for ``con`` only)."""
    con.execute(
        "INSERT INTO attempt_sources VALUES (?, ?, ?)",
        [job_id, select_sql, json.dumps(file_facts(files))],
    )
    rebuild(con, temp=id(con) in _LATER)


def in_place(con: duckdb.DuckDBPyConnection, job_id: str) -> bool:
    """Whether ``job_id`` reads its attempts in place (its rows are not the workspace's)."""
    row = con.execute("SELECT count(*) FROM attempt_sources WHERE job_id = ?", [job_id]).fetchone()
    return bool(row and row[0])


def check(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Refuse a job registered in place whose files changed or went away.

    Raises
    ------
    LoadError
        Naming the file and what to do.
    """
    row = con.execute("SELECT files FROM attempt_sources WHERE job_id = ?", [job_id]).fetchone()
    if row is None:
        return
    why = problem(json.loads(row[0]))
    if why is not None:
        path, what = why
        raise LoadError(
            path,
            None,
            f"{what}: job {job_id!r} reads it in place (loaded with copy=False); "
            "load it again, with copy=True to keep its rows in the workspace",
        )
