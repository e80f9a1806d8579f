"""Staging tables: a loader writes a job into ``_stage_*`` temp tables; the workspace
validates them and swaps them in with one transaction, so a failed load changes nothing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb
import pyarrow as pa

from .._errors import LoadError
from .._schema import JOB_TABLES

__all__ = ["insert_rows", "stage_name", "staging", "validate_stage"]


def stage_name(table: str) -> str:
    return f"_stage_{table}"


@contextmanager
def staging(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Create empty staging copies of every job table; drop them afterwards."""
    for table in JOB_TABLES:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {stage_name(table)} AS SELECT * FROM {table} LIMIT 0"
        )
    try:
        yield
    finally:
        for table in JOB_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {stage_name(table)}")


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Append Python rows (dicts keyed by column name) to a staging table, via Arrow.

    Used by loaders of small formats (Harbor, τ-bench); large formats insert with SQL.
    """
    if not rows:
        return
    columns = sorted({key for row in rows for key in row})
    data = pa.table({c: pa.array([row.get(c) for row in rows], from_pandas=True) for c in columns})
    con.register("_rows_to_stage", data)
    try:
        con.execute(f"INSERT INTO {stage_name(table)} BY NAME SELECT * FROM _rows_to_stage")
    finally:
        con.unregister("_rows_to_stage")


def _first(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...] | None:
    return con.execute(sql).fetchone()


def validate_stage(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """Check the invariants every loader must meet; return the staged job id.

    Raises
    ------
    LoadError
        Naming the source and the offending place (trial, line, task).
    """
    jobs = con.execute(f"SELECT job_id, attempts FROM {stage_name('jobs')}").fetchall()
    if len(jobs) != 1:
        raise LoadError(source, None, f"expected exactly one job, found {len(jobs)}")
    job_id, k = jobs[0]
    if k is None or k < 1:
        raise LoadError(source, "job", f"attempts per task must be an integer >= 1, got {k!r}")
    bad = _first(
        con,
        f"""SELECT coalesce(source_place, 'trial ' || trial_id), attempt FROM {stage_name("attempts")}
            WHERE attempt < 1 OR attempt > {int(k)} LIMIT 1""",
    )
    if bad:
        raise LoadError(
            source, bad[0], f"attempt {bad[1]} is out of range: the job requested 1..{k} per task"
        )
    bad = _first(
        con,
        f"""SELECT coalesce(a.source_place, 'trial ' || a.trial_id), a.task
            FROM {stage_name("attempts")} a ANTI JOIN {stage_name("tasks")} t USING (task) LIMIT 1""",
    )
    if bad:
        raise LoadError(source, bad[0], f"task {bad[1]!r} is not among the job's requested tasks")
    bad = _first(
        con,
        f"""SELECT task, attempt, count(*) FROM {stage_name("attempts")}
            GROUP BY ALL HAVING count(*) > 1 LIMIT 1""",
    )
    if bad:  # loaders resolve retries to the attempt of record before staging
        raise LoadError(source, f"task {bad[0]!r}", f"attempt {bad[1]} appears {bad[2]} times")
    bad = _first(
        con,
        f"SELECT task, count(*) FROM {stage_name('tasks')} GROUP BY ALL HAVING count(*) > 1 LIMIT 1",
    )
    if bad:
        raise LoadError(source, f"task {bad[0]!r}", f"task is listed {bad[1]} times in the job")
    return str(job_id)
