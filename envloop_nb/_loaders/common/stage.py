"""The load transaction: a loader writes a job straight into the workspace tables inside
one DuckDB transaction that the workspace validates and commits, or rolls back on any
error, so a failed load changes nothing (temporary scratch objects included).

Contract for a loader (``LOADERS`` in ``envloop_nb._loaders``):

1. as soon as it knows the job id, call :func:`begin_job` (deletes the job's old rows,
   inside the transaction: a reload replaces, never duplicates);
2. write rows with ``INSERT INTO {stage_name(table)}`` or :func:`insert_rows`. Only the
   one ``jobs`` row is staged (in a small temp table, stamped with ``loaded_at`` on
   commit); every other name is the real table, so a loader that reads back what it
   wrote filters on ``job_id``;
3. never catch a DuckDB error and carry on: an error aborts the transaction; call
   :func:`restart` first (rolls back and begins again, job claimed anew).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import duckdb
import pyarrow as pa

from ..._annotations.manual import remirror
from ..._errors import LoadError
from ..._store.attempt_sources import in_place, rebuild
from ..._store.memory import release_memory
from ..._store.schema import JOB_TABLES
from ..._store.sql import number
from ..._store.steps import check_steps, has_steps
from ..._store.task_counts import (
    COUNT_NAMES,
    MAX_ABS_REWARD,
    NULLABLE,
    STATS_SQL,
    reward_out_of_range,
    scales,
    stage_counts_sql,
)
from .values import K_FLOOR, check_claimed_k

__all__ = [
    "REWARD_STATS",
    "batch",
    "begin_job",
    "commit_stage",
    "insert_rows",
    "insert_table",
    "keep_counts",
    "keep_counts_table",
    "restart",
    "stage_name",
    "staging",
    "validate_stage",
]

_JOBS_STAGE = "_stage_jobs"
#: An aggregate over a job's attempts: the ``extra.reward_stats`` a job records (a
#: loader that scans its attempts anyway may put it in its own query).
REWARD_STATS = "json_object('max_abs', max(abs(reward)), 'max_sq', max(reward * reward))"
_CLAIM = "_stage_claim"
#: The load's per-task pass over the job's attempts: its checks' numbers and the counts
#: it keeps (``task_counts_cache``).
_COUNTS = "_stage_counts"


_KEPT = "SELECT 1 FROM duckdb_tables() WHERE temporary AND table_name = $name"


def keep_counts(con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any]) -> None:
    """Keep the per-task pass a loader made in its own scan (the columns of
    :func:`~envloop_nb._store.task_counts.stage_counts_sql`), which the load's checks
    then read instead of scanning the job's attempts again."""
    con.execute(f"CREATE TEMP TABLE {_COUNTS} AS {sql}", params)


def keep_counts_table(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Keep ``table``, made in this load's transaction, as the per-task pass itself:
    renamed, not copied. It has at least the columns of :func:`keep_counts`' query,
    with NULL allowed where :func:`commit_stage` writes 0 for NULL (extra columns are
    never read)."""
    con.execute(f"ALTER TABLE {table} RENAME TO {_COUNTS}")


def stage_name(table: str) -> str:
    """The table a loader writes ``table``'s rows into (see the module docstring)."""
    return {"jobs": _JOBS_STAGE, "attempts": "attempt_rows"}.get(table, table)


#: Connections inside :func:`batch`, with the job ids claimed so far in it.
_BATCHES: dict[int, set[str]] = {}


def _open(con: duckdb.DuckDBPyConnection) -> None:
    if id(con) not in _BATCHES:
        con.execute("BEGIN TRANSACTION")
    con.execute(f"CREATE TEMP TABLE {_JOBS_STAGE} AS SELECT * FROM jobs LIMIT 0")
    con.execute(f"CREATE TEMP TABLE {_CLAIM} (job_id VARCHAR)")


@contextmanager
def staging(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the body in one transaction; roll it back unless :func:`commit_stage` ran.

    The rollback also removes every temporary table and view created inside it. Inside
    :func:`batch` the batch's one transaction holds every load.
    """
    _open(con)
    if id(con) in _BATCHES:
        yield  # the batch commits or rolls back all its loads together
        return
    try:
        yield
    finally:
        _rollback(con)  # undoes a failed load; a no-op after commit_stage
        release_memory(con)  # what the load freed goes back before the first question


@contextmanager
def batch(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Several loads in one transaction: all of them land, or none (``ws.load_all``).

    Two loads of the batch that claim one job id are refused (the second would replace
    the first).
    """
    con.execute("BEGIN TRANSACTION")
    _BATCHES[id(con)] = set()
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        _rollback(con)
        raise
    finally:
        del _BATCHES[id(con)]
        release_memory(con)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    with suppress(duckdb.TransactionException):  # already committed: nothing to undo
        con.execute("ROLLBACK")


def begin_job(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Claim ``job_id`` for this load: delete its old rows (undone if the load fails)."""
    claimed = _BATCHES.get(id(con))
    if claimed is not None:
        if job_id in claimed:
            raise LoadError(
                job_id, None, "two sources of this batch are the same job id; pass job ids apart"
            )
        claimed.add(job_id)
    con.execute(f"DELETE FROM {_CLAIM}")
    con.execute(f"INSERT INTO {_CLAIM} VALUES (?)", [job_id])
    was_in_place = in_place(con, job_id)
    for table in JOB_TABLES:
        con.execute(f"DELETE FROM {table} WHERE job_id = ?", [job_id])
    if was_in_place:  # its files leave the attempts view
        rebuild(con)


def restart(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Discard everything written so far (even after a DuckDB error) and claim ``job_id`` again."""
    if id(con) in _BATCHES:  # a retry would discard the batch's other loads too
        raise LoadError(job_id, None, "cannot be retried inside a batch; load it with ws.load")
    _rollback(con)
    _open(con)
    begin_job(con, job_id)


def commit_stage(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Move the staged ``jobs`` row in, stamped with the load time, keep the per-task
    counts :func:`validate_stage` made (``task_counts_cache``), and commit."""
    loaded_at = dt.datetime.now(dt.UTC)
    con.execute(
        f"INSERT INTO jobs SELECT * REPLACE (?::TIMESTAMPTZ AS loaded_at) FROM {_JOBS_STAGE}",
        [loaded_at],
    )
    names = ", ".join(COUNT_NAMES)
    counts = ", ".join(f"c.{n}" if n in NULLABLE else f"coalesce(c.{n}, 0)" for n in COUNT_NAMES)
    con.execute(  # every requested task at its position: read back without a lookup
        f"""INSERT INTO task_counts_cache (job_id, loaded_at, task, position, {names})
            SELECT $jid, $loaded_at::TIMESTAMPTZ, t.task, t.position, {counts}
            FROM tasks t LEFT JOIN {_COUNTS} c USING (task)
            WHERE t.job_id = $jid AND EXISTS (SELECT 1 FROM {_COUNTS})
            ORDER BY t.position, t.task""",
        {"jid": job_id, "loaded_at": loaded_at},
    )
    for table in (_JOBS_STAGE, _CLAIM, _COUNTS):
        con.execute(f"DROP TABLE {table}")
    remirror(con, job_id)  # a reload keeps the job's human annotations
    if id(con) not in _BATCHES:
        con.execute("COMMIT")


def _record_reward_stats(
    con: duckdb.DuckDBPyConnection, source: str, job_id: str
) -> dict[str, float]:
    """Record ``extra.reward_stats`` in the staged ``jobs`` row (the largest ``|reward|``
    and ``reward²``) unless the loader did (one that scans its attempts anyway, or a
    summarised job, which has none); return the scales of the exact reward sums they give
    (:func:`envloop_nb._metrics.counts.reward_scales`, which reads them back instead of
    scanning the attempts on every first question). A reward beyond
    :data:`~envloop_nb._store.task_counts.MAX_ABS_REWARD` (one the sums cannot hold) is
    a :class:`LoadError` naming its attempt."""
    recorded = con.execute(
        f"SELECT json_exists(coalesce(extra, '{{}}'), '$.reward_stats') FROM {_JOBS_STAGE}"
    ).fetchone()
    if not (recorded and recorded[0]):  # else the UPDATE would scan the attempts anyway
        con.execute(
            f"""UPDATE {_JOBS_STAGE} SET extra = json_merge_patch(coalesce(extra, '{{}}'),
                    json_object('reward_stats', (
                        SELECT {REWARD_STATS} FROM attempts WHERE job_id = $job_id)))""",
            {"job_id": job_id},
        )
    row = con.execute(f"SELECT {STATS_SQL} FROM {_JOBS_STAGE}").fetchone()
    assert row is not None
    if row[1] is not None and row[1] > MAX_ABS_REWARD:  # else the sums overflow
        bad = _first(
            con,
            f"""SELECT coalesce(source_place, 'trial ' || trial_id,
                                'task ' || task || ' attempt ' || attempt), reward
                FROM attempts WHERE job_id = $jid AND abs(reward) > {number(MAX_ABS_REWARD)}
                      AND NOT isnan(reward)
                ORDER BY task, attempt LIMIT 1""",
            {"jid": job_id},
        )
        place, value = (bad[0], bad[1]) if bad else (None, row[1])
        raise LoadError(source, place, reward_out_of_range(value))
    return scales(row[0], row[1], row[2])


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Append Python rows (dicts keyed by column name) to ``stage_name(table)``, via Arrow.

    Used by loaders of small formats (Harbor, τ-bench); large formats insert with SQL.
    """
    if not rows:
        return
    columns = sorted({key for row in rows for key in row})
    data = pa.table({c: pa.array([row.get(c) for row in rows], from_pandas=True) for c in columns})
    insert_table(con, table, data)


def insert_table(con: duckdb.DuckDBPyConnection, table: str, data: pa.Table) -> None:
    """Append an Arrow table's rows to ``stage_name(table)``, its columns by name."""
    if not data.num_rows:
        return
    con.register("_rows_to_stage", data)
    try:
        con.execute(f"INSERT INTO {stage_name(table)} BY NAME SELECT * FROM _rows_to_stage")
    finally:
        con.unregister("_rows_to_stage")


def _first(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any]
) -> tuple[Any, ...] | None:
    return con.execute(sql, params).fetchone()


def validate_stage(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """Check the invariants every loader must meet; return the loaded job id.

    Runs inside the load transaction, over the rows of the claimed job only.

    Raises
    ------
    LoadError
        Naming the source and the offending place (trial, line, task).
    """
    jobs = con.execute(f"SELECT job_id, attempts FROM {_JOBS_STAGE}").fetchall()
    if len(jobs) != 1:
        raise LoadError(source, None, f"expected exactly one job, found {len(jobs)}")
    job_id, k = jobs[0]
    claimed = con.execute(f"SELECT job_id FROM {_CLAIM}").fetchall()
    if claimed != [(job_id,)]:  # a loader bug, not the user's: say so plainly
        raise LoadError(source, None, f"internal: loader wrote job {job_id!r}, claimed {claimed}")
    if k is None or k < 1:
        raise LoadError(source, "job", f"attempts per task must be an integer >= 1, got {k!r}")
    jid = {"jid": job_id}
    if k > K_FLOOR:  # every loader: a claimed k far beyond the attempts present is refused
        top = _first(con, "SELECT max(attempt) FROM attempts WHERE job_id = $jid", jid)
        check_claimed_k(source, "job", int(k), top[0] if top else None, name="k")
    scales = _record_reward_stats(con, source, str(job_id))
    if not _first(con, _KEPT, {"name": _COUNTS}):  # else the loader counted in its own pass
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {_COUNTS} AS {stage_counts_sql(_distinct_sql(int(k)))}",
            {**jid, **scales},
        )
    flags = _first(con, _checks_sql(int(k)), jid)
    assert flags is not None
    out_of_range, unknown, repeated = (bool(f) for f in flags)
    if out_of_range or unknown or repeated:
        _explain(con, source, int(k), jid)
    bad = _first(
        con,
        """SELECT task, count(*) FROM tasks WHERE job_id = $jid
            GROUP BY ALL HAVING count(*) > 1 LIMIT 1""",
        jid,
    )
    if bad:
        raise LoadError(source, f"task {bad[0]!r}", f"task is listed {bad[1]} times in the job")
    if has_steps(con, str(job_id)):
        check_steps(con, str(job_id), source)
    return str(job_id)


#: Above this many attempts per task, repeats are found by grouping (task, attempt)
#: rather than with a bit string of k bits per task.
_BITS_UP_TO = 4096


def _distinct_sql(k: int) -> str:
    """The number of distinct attempt numbers in 1..k of a task's rows: the set bits of a
    k-bit string (several times cheaper than grouping by (task, attempt))."""
    if k <= 63:  # the set bits of a sum of powers of two (see tables.inplace._distinct)
        return (
            f"bit_count(sum(1::BIGINT << (attempt - 1)) FILTER (WHERE attempt BETWEEN 1 AND {k}))"
        )
    if k <= _BITS_UP_TO:
        return f"bit_count(bitstring_agg(attempt, 1, {k}) FILTER (WHERE attempt BETWEEN 1 AND {k}))"
    return "count(DISTINCT attempt)"


def _checks_sql(k: int) -> str:
    """Over the per-task pass (:data:`_COUNTS`), the flags (out of range, unknown task,
    repeated attempt); :func:`_explain` names the first offender of a flag.

    A repeated attempt shows as fewer distinct attempt numbers than rows in a task.
    """
    return f"""
        SELECT coalesce(bool_or(lo < 1 OR hi > {k}), false),
               EXISTS (SELECT 1 FROM {_COUNTS} ANTI JOIN
                       (SELECT task FROM tasks WHERE job_id = $jid) USING (task)),
               coalesce(bool_or(lo >= 1 AND hi <= {k} AND n <> d), false)
        FROM {_COUNTS}"""


def _explain(con: duckdb.DuckDBPyConnection, source: str, k: int, jid: dict[str, Any]) -> None:
    """Raise for the first problem :func:`_checks_sql` flagged, naming its place."""
    bad = _first(
        con,
        f"""SELECT coalesce(source_place, 'trial ' || trial_id), attempt FROM attempts
            WHERE job_id = $jid AND (attempt < 1 OR attempt > {int(k)}) LIMIT 1""",
        jid,
    )
    if bad:
        raise LoadError(
            source, bad[0], f"attempt {bad[1]} is out of range: the job requested 1..{k} per task"
        )
    bad = _first(
        con,
        """SELECT coalesce(a.source_place, 'trial ' || a.trial_id), a.task
            FROM (SELECT * FROM attempts WHERE job_id = $jid) a
            ANTI JOIN (SELECT task FROM tasks WHERE job_id = $jid) t USING (task) LIMIT 1""",
        jid,
    )
    if bad:
        raise LoadError(source, bad[0], f"task {bad[1]!r} is not among the job's requested tasks")
    bad = _first(
        con,
        """SELECT task, attempt, count(*) FROM attempts WHERE job_id = $jid
            GROUP BY ALL HAVING count(*) > 1 LIMIT 1""",
        jid,
    )
    if bad:  # loaders resolve retries to the attempt of record before writing
        raise LoadError(source, f"task {bad[0]!r}", f"attempt {bad[1]} appears {bad[2]} times")
    raise LoadError(source, None, "internal: a check failed that no offender explains")
