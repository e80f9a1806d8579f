"""A *summarised* job: per-task counts reduced elsewhere (Spark, an MLflow run), written
into the workspace without any attempt.

The counts are those every job metric derives from (:mod:`envloop_nb._metrics.counts`):
per (task, threshold) ``dispatched, scored, invalid, passes, nonbinary``, the exact
fixed-point ``reward_sum`` / ``reward_sumsq`` and ``reward_min`` / ``reward_max``. With
them the summary, samples, curve, groups by tag, intervals, buckets by task and
comparisons of a summarised job are those of the same job loaded attempt by attempt;
attempt-level views refuse it (:func:`envloop_nb._store.ref.require_attempts`).

The rows are checked before they land (a count out of its range, a task counted but not
requested, a threshold missing for a task) and the load is one transaction, as for
every loader.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ..._errors import LoadError
from ..common.stage import begin_job, stage_name

__all__ = ["COUNT_COLUMNS", "Summarised", "load_summary"]

#: The per-task count columns of a summarised job, beside ``task`` and ``threshold``.
COUNT_COLUMNS = ("dispatched", "scored", "invalid", "passes", "nonbinary", "reward_sum",
                 "reward_sumsq", "reward_min", "reward_max")  # fmt: skip


@dataclass(frozen=True)
class Summarised:
    """One summarised job, ready to be written.

    Parameters
    ----------
    job_id, k
        The job and its attempts requested per task.
    tasks
        One row per requested task: ``task`` (string), ``position`` (int), ``tags`` (a
        JSON object of strings, as text, or null), optionally ``digest`` (string).
    counts
        One row per (task, threshold): ``task``, ``threshold`` (null: a pass is
        reward = 1) and :data:`COUNT_COLUMNS`.
    thresholds
        The thresholds counted (``None`` among them).
    reward_stats
        ``{"max_abs": ..., "max_sq": ...}`` over the attempts of record: the scales of the
        exact sums (:func:`envloop_nb._store.sql.fixed_point_scale`).
    engine, where
        What reduced the attempts (``"spark"``, ``"mlflow"``) and where they stayed.
    facts
        Columns of the ``jobs`` row (``source_format``, ``source_path``, ``model``,
        ``dataset_name``, ``status``, ...).
    metrics_only
        No per-task counts at all, only the source's aggregate metrics (kept in the
        ``platform_metrics`` fact): ``tasks`` and ``counts`` are empty, the job's task
        list is unknown (``extra.summarised.metrics_only``).
    """

    job_id: str
    k: int
    tasks: pa.Table
    counts: pa.Table
    thresholds: Sequence[float | None]
    reward_stats: dict[str, float | None]
    engine: str
    where: str
    facts: dict[str, Any] = field(default_factory=dict)
    metrics_only: bool = False


_CHECKS = (
    ("dispatched > $k", "dispatched {dispatched} attempts, more than the k = {k} requested"),
    ("scored > dispatched", "scored {scored} attempts of {dispatched} dispatched"),
    ("invalid > dispatched - scored", "{invalid} invalid attempts, more than the unscored"),
    ("passes > scored", "{passes} passes of {scored} scored attempts"),
    ("nonbinary > scored", "{nonbinary} non-binary rewards of {scored} scored"),
    ("least(dispatched, scored, invalid, passes, nonbinary) < 0", "a negative count"),
)


def load_summary(
    con: duckdb.DuckDBPyConnection,
    source: Summarised,
    *,
    job_id: str | None = None,
    lenient: bool = False,
) -> None:
    """Write one summarised job (see the module docstring) inside the load transaction.

    Examples
    --------
    >>> import envloop_nb as enb, pyarrow as pa
    >>> from envloop_nb._loaders import load_source
    >>> ws = enb.open()
    >>> tasks = pa.table({"task": ["a", "b"], "position": [0, 1], "tags": [None, None]})
    >>> counts = pa.table({"task": ["a", "b"], "threshold": pa.array([None, None], pa.float64()),
    ...     "dispatched": [2, 1], "scored": [2, 1], "invalid": [0, 0], "passes": [1, 1],
    ...     "nonbinary": [0, 0], "reward_sum": [1.0, 1.0], "reward_sumsq": [1.0, 1.0],
    ...     "reward_min": [0.0, 1.0], "reward_max": [1.0, 1.0]})
    >>> one = Summarised("s", 2, tasks, counts, [None], {"max_abs": 1.0, "max_sq": 1.0},
    ...                  "spark", "Spark")
    >>> job = ws.job(load_source(ws.con, one, format="summary"))
    >>> str(job.summary())
    'score 66.7% · 3/4 attempts scored · 1/2 members complete'
    """
    jid = job_id or source.job_id
    label = f"summarised job {jid!r} ({source.engine})"
    begin_job(con, jid)
    has_digest = "digest" in source.tasks.column_names  # the task's content digest
    tasks = source.tasks.select(["task", "position", "tags", *(["digest"] if has_digest else [])])
    counts = source.counts.select(["task", "threshold", *COUNT_COLUMNS])
    _el_sum_tasks = tasks  # read by DuckDB's replacement scan, by name
    _el_sum_counts = counts
    con.execute(
        f"""INSERT INTO {stage_name("tasks")} BY NAME
            SELECT $jid AS job_id, task::VARCHAR AS task, position::INTEGER AS position,
                   coalesce(tags::JSON, '{{}}'::JSON) AS tags
                   {", digest::VARCHAR AS digest" if has_digest else ""}
            FROM _el_sum_tasks""",
        {"jid": jid},
    )
    con.execute(
        f"""INSERT INTO {stage_name("task_tags")} BY NAME
            SELECT job_id, task, unnest(json_keys(tags)) AS key,
                   tags ->> unnest(json_keys(tags)) AS value
            FROM tasks WHERE job_id = $jid AND json_keys(tags) <> []""",
        {"jid": jid},
    )
    con.execute(
        f"""INSERT INTO {stage_name("task_summaries")} BY NAME
            SELECT $jid AS job_id, task::VARCHAR AS task, threshold::DOUBLE AS threshold,
                   {", ".join(f"{c}::{'DOUBLE' if c.startswith('reward') else 'INTEGER'} AS {c}" for c in COUNT_COLUMNS)}
            FROM _el_sum_counts""",
        {"jid": jid},
    )
    _check(con, jid, label, source)
    facts = dict(source.facts)
    extra = dict(facts.pop("extra", None) or {})
    extra["summarised"] = {
        "engine": source.engine,
        "where": source.where,
        "thresholds": list(source.thresholds),
    }
    if source.metrics_only:
        extra["summarised"]["metrics_only"] = True
    extra["reward_stats"] = source.reward_stats
    columns = {"source_format": source.engine, **facts}
    names = ", ".join(f"${c} AS {c}" for c in columns)
    con.execute(
        f"""INSERT INTO {stage_name("jobs")} BY NAME
            SELECT $job_id AS job_id, $k AS attempts, $extra::JSON AS extra,
                   now() AS loaded_at, {names}""",
        {"job_id": jid, "k": int(source.k), "extra": json.dumps(extra), **columns},
    )


def _check(con: duckdb.DuckDBPyConnection, jid: str, label: str, source: Summarised) -> None:
    """Refuse counts that no set of attempts could give, by task."""
    bad = con.execute(
        """SELECT task FROM task_summaries WHERE job_id = $jid
           AND task NOT IN (SELECT task FROM tasks WHERE job_id = $jid) LIMIT 1""",
        {"jid": jid},
    ).fetchone()
    if bad:
        raise LoadError(label, f"task {bad[0]!r}", "counted but not among the requested tasks")
    bad = con.execute(
        """SELECT task, count(*) FROM tasks WHERE job_id = $jid GROUP BY task
           HAVING count(*) > 1 LIMIT 1""",
        {"jid": jid},
    ).fetchone()
    if bad:
        raise LoadError(label, f"task {bad[0]!r}", f"task is listed {bad[1]} times")
    for threshold in source.thresholds:
        bad = con.execute(
            """SELECT t.task, count(s.task) FROM tasks t LEFT JOIN task_summaries s
                 ON s.job_id = t.job_id AND s.task = t.task
                AND s.threshold IS NOT DISTINCT FROM $thr
               WHERE t.job_id = $jid GROUP BY t.task HAVING count(s.task) <> 1 LIMIT 1""",
            {"jid": jid, "thr": threshold},
        ).fetchone()
        if bad:
            raise LoadError(
                label,
                f"task {bad[0]!r}",
                f"{bad[1]} rows of counts for threshold {threshold!r}; expected one",
            )
    for condition, problem in _CHECKS:
        bad = con.execute(
            f"""SELECT task, dispatched, scored, invalid, passes, nonbinary FROM task_summaries
                WHERE job_id = $jid AND ({condition}) LIMIT 1""",
            {"jid": jid, "k": int(source.k)} if "$k" in condition else {"jid": jid},
        ).fetchone()
        if bad:
            names = ("dispatched", "scored", "invalid", "passes", "nonbinary")
            values = dict(zip(names, bad[1:], strict=True))
            raise LoadError(label, f"task {bad[0]!r}", problem.format(k=source.k, **values))
