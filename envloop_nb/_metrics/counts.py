"""The per-task counts: the one definition every job metric derives from.

Per task of a job: dispatched, scored, invalid, passes, nonbinary and the reward sums
(:func:`task_counts`, :func:`task_counts_sql`; the count columns themselves are
:func:`count_columns_sql`, which the dimension groups reuse for their values). The
summary (:mod:`.summary`), the per-task table and curve (:mod:`.passk_views`), the groups
and the diagnosis read these counts.

Per job, ``k`` attempts are requested for every requested task. A slot is *scored* when
its attempt of record has a numeric reward; an unscored slot whose attempt ended is
also *invalid*. ``policy="unknown"`` keeps missing slots unknown (the platform's rule);
``policy="failure"`` counts them as reward 0 (τ-bench's, Harbor's < 0.26). Counts never
depend on the policy; metrics do. ``threshold=t`` makes ``reward >= t`` a pass. Under
``failure`` a missing slot is a failed attempt: reward 0 in the score and never a pass,
even with a threshold <= 0.

Aggregation groups by task in SQL, so work on the Python side scales with tasks, not
attempts; the combinatorics run vectorized on the per-task counts (:mod:`.passk`), once
per distinct (n, c) pair: with k attempts per task there are at most (k+1)² of them.

One scan per (job, threshold): the per-task counts are memoized per connection (a small
LRU, weakly keyed by the connection: :mod:`envloop_nb._store.memo`) and keyed by
``jobs.loaded_at``, so a reload or a removal of the job is never answered from the cache.
The policy never changes the counts, so switching it never rescans the attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .._annotations.manual import AWAITING
from .._store.memo import CACHE_SIZE, cached, clear_cache, job_row
from .._store.memory import release_after
from .._store.ref import require_task_table, summarised
from .._store.sql import literal
from .._store.task_counts import (
    COUNT_NAMES,
    NULLABLE,
    STATS_SQL,
    attempts_by_task_sql,
    cached_counts,
    count_columns_sql,
    fixed_sum,
    pass_sql,
    passes_in_order_sql,
    passes_sql,
    scales,
)
from .._types import ENDED, Policy

if TYPE_CHECKING:
    from collections.abc import Collection

    import duckdb

__all__ = [
    "CACHE_SIZE",
    "ENDED",
    "cached",
    "check_options",
    "clear_cache",
    "count_columns_sql",
    "count_rows",
    "fixed_sum",
    "job_list_sql",
    "job_row",
    "pass_sql",
    "per_task_arrays",
    "reward_scales",
    "scored_mean",
    "scored_sum",
    "task_counts",
    "task_counts_sql",
]


def check_options(policy: str, threshold: float | None) -> None:
    """Refuse a policy other than ``"unknown"``/``"failure"`` and a non-finite threshold.

    Examples
    --------
    >>> check_options("maybe", None)
    Traceback (most recent call last):
    ...
    ValueError: policy must be 'unknown' or 'failure', got 'maybe'
    """
    if policy not in ("unknown", "failure"):
        raise ValueError(f"policy must be 'unknown' or 'failure', got {policy!r}")
    if threshold is not None and not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")


def job_list_sql(*, awaiting: Collection[str] = ()) -> str:
    """SQL giving one row per job of the workspace: its facts and its attempt counts
    (``tasks``, ``dispatched``, ``scored``; the counts of :func:`count_columns_sql`).
    A completed job among ``awaiting`` (``_annotations.manual.awaiting_jobs``) has the
    status ``"awaiting annotation"``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> _ = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> ws.con.sql(f"SELECT tasks, dispatched, scored FROM ({job_list_sql()})").fetchall()
    [(3, 6, 5)]
    """
    waiting = ", ".join(literal(j) for j in sorted(awaiting)) or "NULL"
    status = f"""CASE WHEN coalesce(j.status, 'completed') = 'completed'
                     AND j.job_id IN ({waiting}) THEN {literal(AWAITING)}
                     ELSE j.status END AS status"""
    return f"""
    WITH a AS (SELECT job_id, {count_columns_sql("reward", "status", "reward = 1")}
               FROM attempts GROUP BY job_id
               UNION ALL  -- a summarised job: its per-task counts (no attempt here)
               SELECT job_id, sum(dispatched), sum(scored), sum(invalid), sum(passes),
                      sum(nonbinary)
               FROM task_summaries WHERE threshold IS NULL GROUP BY job_id),
    t AS (SELECT job_id, count(*) AS tasks FROM tasks GROUP BY job_id)
    SELECT j.job_id, j.source_format, {status}, j.model,
           j.dataset_name, j.dataset_version, j.dataset_revision, j.runner,
           j.profile_name, j.attempts AS k,
           -- a metrics-only job (an MLflow run's aggregates): its counts are unknown
           CASE WHEN NOT m.only THEN coalesce(t.tasks, 0) END::BIGINT AS tasks,
           CASE WHEN NOT m.only THEN coalesce(a.dispatched, 0) END::BIGINT AS dispatched,
           CASE WHEN NOT m.only THEN coalesce(a.scored, 0) END::BIGINT AS scored,
           j.created_at, j.finished_at, j.source_path, j.loaded_at
    FROM jobs j LEFT JOIN a USING (job_id) LEFT JOIN t USING (job_id),
         LATERAL (SELECT coalesce(json_extract_string(j.extra, '$.summarised.metrics_only')
                                  = 'true', false) AS only) m
    ORDER BY j.loaded_at, j.job_id
    """


def scored_sum(value: str, order: str) -> str:
    """A group's sum of its scored values (null is not scored; 0 for none), summed in a
    fixed ``order`` so that every run and CPU gives the same bits.

    The one definition for values other than the reward (dimension values, composite);
    the reward's per-task sums are exact (:func:`fixed_sum` in :func:`task_counts_sql`).

    Examples
    --------
    >>> print(scored_sum("value", "attempt"))
    coalesce(fsum(value ORDER BY attempt), 0)::DOUBLE
    """
    return f"coalesce(fsum({value} ORDER BY {order}), 0)::DOUBLE"


def scored_mean(value: str, order: str) -> str:
    """A group's mean over its scored values (null when none is scored): the
    :func:`scored_sum` over ``count(value)`` — a missing value is never a 0.

    Examples
    --------
    >>> print(scored_mean("value", "attempt"))
    (fsum(value ORDER BY attempt) / count(value))::DOUBLE
    """
    return f"(fsum({value} ORDER BY {order}) / count({value}))::DOUBLE"


def reward_scales(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, float]:
    """The powers of two ``$rscale`` / ``$qscale`` of the per-task reward sums.

    Floating-point sums depend on the order of their terms, and DuckDB's parallel
    aggregation (and the attempts' physical order after a load) varies between runs, so
    rewards are summed as integers: ``reward · 2^s`` rounded, with ``s`` the largest
    exponent for which a task's sum (at most ``k`` attempts of ``|reward| <= max``) stays
    below 2^61. Rewards down to ``max · 2^-52 / k`` keep every bit; smaller parts are
    rounded at that absolute granularity (about 1e-17 for rewards in [0, 1] and k = 32)
    — in every run and on every CPU the same.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> reward_scales(ws.con, job.id) == {"rscale": 2.0**59, "qscale": 2.0**59}
    True
    """

    def compute() -> dict[str, float]:
        known = con.execute(
            f"""SELECT {STATS_SQL}, json_exists(extra, '$.reward_stats')
                FROM jobs WHERE job_id = ?""",
            [job_id],
        ).fetchone()
        if known is not None and known[3]:  # recorded at load (see _loaders.common.stage)
            k, top, top_sq = known[0], known[1], known[2]
        else:  # a workspace written before the load recorded them
            row = con.execute(
                """SELECT max(abs(reward)), max(reward * reward), max(j.attempts)
                   FROM attempts a JOIN jobs j USING (job_id) WHERE job_id = ?""",
                [job_id],
            ).fetchone()
            top, top_sq, k = row if row else (None, None, None)
        return scales(k, top, top_sq)

    value: dict[str, float] = cached(con, job_id, ("reward_scales",), compute)
    return value


_COUNT_COLUMNS = """
           coalesce(a.dispatched, 0)::INTEGER AS dispatched,
           coalesce(a.scored, 0)::INTEGER AS scored,
           coalesce(a.invalid, 0)::INTEGER AS invalid,
           coalesce(a.passes, 0)::INTEGER AS passes,
           coalesce(a.nonbinary, 0)::INTEGER AS nonbinary,
           coalesce(a.reward_sum, 0)::DOUBLE AS reward_sum,
           coalesce(a.reward_sumsq, 0)::DOUBLE AS reward_sumsq,
           a.reward_min, a.reward_max"""

#: The task columns of :func:`task_counts_sql` (no attempt involved), in its row order.
_TASK_ROWS_SQL = """
    SELECT t.task, t.position, t.tags, json_extract_string(t.tags, '$.subset') AS subset,
           j.attempts AS k
    FROM tasks t JOIN jobs j ON j.job_id = t.job_id
    WHERE t.job_id = $job_id
    ORDER BY t.position, t.task
    """


def task_counts_sql(job_id_param: str = "$job_id", threshold: float | None = None) -> str:
    """SQL giving one row per requested task with its attempt counts and reward sums.

    Columns: task, position, tags, subset (the ``subset`` tag or null), k, dispatched,
    scored, invalid, passes, nonbinary, reward_sum, reward_sumsq, reward_min, reward_max.
    Parameters: ``$job_id`` and the scales of :func:`reward_scales`.
    """
    # Aggregate the attempts by task first, then join the (few) task rows: grouping the
    # joined rows by (task, position, tags, k) was ~1.5-2x slower at 10M attempts
    # (benchmarks/RESULTS.md). Results are identical, types included.
    return f"""
    WITH a AS ({attempts_by_task_sql(job_id_param, threshold)})
    SELECT t.task, t.position, t.tags, json_extract_string(t.tags, '$.subset') AS subset,
           j.attempts AS k, {_COUNT_COLUMNS}
    FROM tasks t
    JOIN jobs j ON j.job_id = t.job_id
    LEFT JOIN a ON a.task = t.task
    WHERE t.job_id = {job_id_param}
    ORDER BY t.position, t.task
    """


def task_counts(
    con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None = None
) -> pa.Table:
    """Per-task counts of one job as an Arrow table (one row per requested task).

    The same table as :func:`task_counts_sql` gives, memoized per ``(connection, job_id,
    threshold, jobs.loaded_at)`` (see :func:`cached`); the table is shared, never modify it.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> counts = task_counts(ws.con, job.id)
    >>> counts.column("passes").to_pylist(), task_counts(ws.con, job.id) is counts
    ([1, 2, 0], True)
    """
    threshold = None if threshold is None else float(threshold)

    # The task columns (tags: JSON text) do not depend on the threshold: fetched once per
    # job; a new threshold only aggregates the attempts again.
    def task_rows() -> pa.Table:
        table = con.execute(_TASK_ROWS_SQL, {"job_id": job_id}).to_arrow_table()
        release_after(con, table.num_rows)
        return table

    rows: pa.Table = cached(con, job_id, ("task_rows",), task_rows)

    def compute() -> pa.Table:
        reduced = summarised(con, job_id)
        if reduced is not None:  # counted elsewhere (Spark, an MLflow run): read them
            # (a metrics-only job has no per-task counts at all)
            require_task_table(con, job_id, "a per-task view (samples, curve, groups, buckets...)")
            return _summarised_counts(con, job_id, rows, threshold, reduced)
        kept = _kept(con, job_id, threshold)  # counted by the job's load
        if kept is not None and kept.column("task").equals(rows.column("task")):
            # one row per task in the task rows' order: side by side, no lookup
            return _beside(rows, kept)
        kept = cached_counts(con, job_id)
        if kept is not None:  # kept by version 1: the tasks with attempts, by name
            kept = kept.drop_columns(["position"])
            return _aligned(rows, _with_passes(con, job_id, kept, threshold, in_order=False))
        # Aggregate the attempts by task, then line the rows up with the cached task rows
        # by a hash lookup (a SQL join + sort of the task rows cost as much again).
        sql = attempts_by_task_sql("$job_id", threshold)
        params = {"job_id": job_id, **reward_scales(con, job_id)}
        agg = con.execute(sql, params).to_arrow_table()
        release_after(con, agg.num_rows)
        return _aligned(rows, agg)

    return cached(con, job_id, ("task_counts", threshold), compute)


def _kept(con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None) -> pa.Table | None:
    """The load's kept counts with the passes of ``threshold``, when the load kept a row
    per requested task in task order (this version's cache; memoized); else None."""

    def compute() -> pa.Table | None:
        kept = cached_counts(con, job_id)
        if kept is None or kept.column("position").null_count:  # none, or version 1's
            return None
        return _with_passes(con, job_id, kept, threshold, in_order=True)

    result: pa.Table | None = cached(con, job_id, ("kept_counts", threshold), compute)
    return result


def count_rows(
    con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None = None
) -> pa.Table:
    """The per-task counts of :func:`task_counts` without the task rows' text (no
    ``tags``, ``subset``): ``task``, ``position``, ``k`` and :data:`COUNT_NAMES`, one row
    per requested task.

    What a curve and a comparison's per-task rows need. When the load kept the counts at
    each task's position this reads only them (and, for a threshold, the passes), not the
    tasks' tags; otherwise it is :func:`task_counts`. The rows are the same tasks as
    :func:`task_counts`' in the same order, with the same counts (tested).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> count_rows(ws.con, job.id).column("passes").to_pylist()
    [1, 2, 0]
    """
    threshold = None if threshold is None else float(threshold)
    kept = None if summarised(con, job_id) is not None else _kept(con, job_id, threshold)
    if kept is not None:
        row = con.execute("SELECT count(*) FROM tasks WHERE job_id = ?", [job_id]).fetchone()
        job = job_row(con, job_id)
        if row is not None and job is not None and int(row[0]) == kept.num_rows:
            k = pa.repeat(pa.scalar(job[1], pa.int32()), kept.num_rows)
            names = ["task", "position", "k", *COUNT_NAMES]
            return pa.Table.from_arrays(
                [kept.column("task"), kept.column("position"), k]
                + [kept.column(n) for n in COUNT_NAMES],
                names=names,
            )
    return task_counts(con, job_id, threshold).select(["task", "position", "k", *COUNT_NAMES])


def _with_passes(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    kept: pa.Table,
    threshold: float | None,
    *,
    in_order: bool,
) -> pa.Table:
    """The load's counts (passes of ``reward = 1``) with the passes of ``threshold``.

    Only the passes depend on a threshold. When every reward is 0 or 1 they follow from
    the counts: a pass is a scored 1 for ``0 < t <= 1``, any scored attempt for
    ``t <= 0``, none for ``t > 1``; otherwise they are counted again, alone.
    """
    import pyarrow.compute as pc

    if threshold is None:
        return kept
    where = kept.column_names.index("passes")
    if pc.max(kept.column("nonbinary")).as_py() == 0:
        if 0 < threshold <= 1:
            return kept
        passes = (
            kept.column("scored")
            if threshold <= 0
            else pa.repeat(pa.scalar(0, pa.int32()), kept.num_rows)
        )
        return kept.set_column(where, "passes", passes)
    if in_order:  # ``kept`` has every task in task order: so has the query
        passes = con.execute(passes_in_order_sql(threshold), {"job_id": job_id}).to_arrow_table()
        release_after(con, passes.num_rows)
        return kept.set_column(where, "passes", passes.column("passes"))
    counted = con.execute(passes_sql(threshold), {"job_id": job_id}).to_arrow_table()
    release_after(con, counted.num_rows)
    at = pc.index_in(kept.column("task"), value_set=counted.column("task").combine_chunks())
    passes = pc.take(counted.column("passes"), at).fill_null(0)
    return kept.set_column(where, "passes", passes)


def _beside(rows: pa.Table, kept: pa.Table) -> pa.Table:
    """The task rows and the kept counts of the same tasks in the same order."""
    columns = [kept.column(name) for name in COUNT_NAMES]
    return pa.Table.from_arrays([*rows.columns, *columns], names=[*rows.column_names, *COUNT_NAMES])


def _summarised_counts(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    rows: pa.Table,
    threshold: float | None,
    reduced: dict[str, object],
) -> pa.Table:
    """The per-task counts of a summarised job, read from ``task_summaries``: the same
    columns and row order as counted from attempts; a threshold that was not counted is
    refused, naming those that were."""
    counted = reduced.get("thresholds")
    known = [None if t is None else float(t) for t in counted] if isinstance(counted, list) else []
    if threshold not in known:
        shown = ", ".join("none (reward = 1)" if t is None else repr(t) for t in known)
        raise ValueError(
            f"job {job_id!r} is summarised: its counts exist only for the thresholds it was "
            f"reduced with ({shown}), not {threshold!r}; reduce it again with that threshold"
        )
    agg = con.execute(
        f"""SELECT task, {", ".join(COUNT_NAMES)} FROM task_summaries
            WHERE job_id = $job_id AND threshold IS NOT DISTINCT FROM $threshold""",
        {"job_id": job_id, "threshold": threshold},
    ).to_arrow_table()
    return _aligned(rows, agg)


def _aligned(rows: pa.Table, agg: pa.Table) -> pa.Table:
    """The counts of ``agg`` (one row per task that has any) lined up with the task rows
    by a hash lookup; a task without any: 0 (min/max: null)."""
    import pyarrow.compute as pc

    where = pc.index_in(rows.column("task"), value_set=agg.column("task").combine_chunks())
    columns = []
    for name in COUNT_NAMES:
        column = pc.take(agg.column(name), where)
        columns.append(column if name in NULLABLE else column.fill_null(0))
    return pa.Table.from_arrays([*rows.columns, *columns], names=[*rows.column_names, *COUNT_NAMES])


def per_task_arrays(counts: pa.Table, policy: Policy) -> dict[str, np.ndarray]:
    """Effective n / c / sums per task under the policy (numpy, vectorized)."""
    k = np.asarray(counts.column("k"), dtype=np.int64)
    scored = np.asarray(counts.column("scored"), dtype=np.int64)
    passes = np.asarray(counts.column("passes"), dtype=np.int64)
    n = k.copy() if policy == "failure" else scored
    return {"k": k, "scored": scored, "n": n, "c": passes}
