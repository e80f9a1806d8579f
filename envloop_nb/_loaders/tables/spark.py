"""The per-task reduction on Spark: attempts of record and per-task counts computed on a
cluster (or Spark's local mode), only the per-task table brought into the workspace.

Given a Spark DataFrame of attempts (any number of jobs), :func:`reduce_spark` runs two
Spark SQL queries, native functions only (no Python UDF):

1. **checks and scales**, one aggregation per job over the attempts of record: the
   attempt of record of a (job, task, attempt) slot is the trial with the latest
   ``finished_at``, then the latest ``started_at``, then the highest ``order`` (the rule
   of the EnvLoop loader; a tie left is refused, never picked at random); a missing
   task, an attempt outside ``1..k``, an infinite reward or an unknown status is refused
   with the first offending slot; the largest ``|reward|`` and ``reward²`` give the
   scales of the exact sums.
2. **per-task counts**, one aggregation per (job, task): ``dispatched, scored, invalid,
   passes`` (one column per threshold), ``nonbinary``, the fixed-point reward sums and
   ``min``/``max`` — the definitions of :mod:`envloop_nb._metrics.counts`, term for term:
   a NaN reward is no reward, a pass is ``reward = 1`` or ``reward >= t``, and each sum
   is ``sum(rint(reward · 2^s))`` as a 64-bit integer over ``2^s`` (``rint`` rounds half
   to even, as DuckDB's cast does), so the numbers equal the DuckDB path's bit for bit.

The result becomes one :class:`~envloop_nb._loaders.tables.summary.Summarised` job per job id.
``pyspark`` is imported only by the caller's DataFrame; this module names its types for
the type checker alone.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..._errors import LoadError
from ..._store.sql import fixed_point_scale
from ..._store.sql import spark_ident as _q
from ..._store.sql import spark_literal as _s
from ..._types import ENDED
from .summary import COUNT_COLUMNS, Summarised
from .view import DEFAULT_TAGS, STATUSES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SPARK_FIELDS", "reduce_spark"]

#: Our field → the DataFrame's column, by default (``None``: not in the frame).
SPARK_FIELDS: dict[str, str | None] = {
    "job_id": "job_id",
    "task": "task",
    "attempt": "attempt",
    "reward": "reward",
    "status": "status",
    "started_at": "started_at",
    "finished_at": "finished_at",
    "order": "order",
    "model": "model",
}
_REQUIRED = ("task", "attempt", "reward")
_counter = itertools.count()


def _resolve(
    df: DataFrame, mapping: Mapping[str, Any] | None, job_id: str | None, label: str
) -> tuple[dict[str, str], dict[str, str]]:
    """Our field → the frame's column, and tag key → column (see :func:`reduce_spark`)."""
    columns = list(df.columns)
    given = dict(mapping or {})
    tags_given = given.pop("tags", None)
    unknown = sorted(set(given) - set(SPARK_FIELDS))
    if unknown:
        raise LoadError(label, "mapping", f"unknown fields {unknown}; known: {list(SPARK_FIELDS)}")
    fields: dict[str, str] = {}
    for name, default in SPARK_FIELDS.items():
        column = given.get(name, default)
        if column is None:
            continue
        if column in columns:
            fields[name] = column
        elif name in given or name in _REQUIRED:
            raise LoadError(
                label, "mapping", f"column {column!r} ({name}) is not in the frame {columns}"
            )
    if "job_id" not in fields and not job_id:
        raise LoadError(label, "mapping", "pass job_id=... or map a job_id column")
    if isinstance(tags_given, Mapping):
        tags = {str(k): str(v) for k, v in tags_given.items()}
    elif tags_given is not None:
        tags = {str(c): str(c) for c in tags_given}
    else:
        tags = {c: c for c in DEFAULT_TAGS if c in columns}  # the table loader's order
        tags.update({c[4:]: c for c in columns if c.startswith("tag_") and len(c) > 4})
    for key, column in tags.items():
        if column not in columns:
            raise LoadError(label, "mapping", f"tag column {column!r} ({key}) is not in the frame")
    return fields, tags


def reduce_spark(
    df: DataFrame,
    *,
    job_id: str | None = None,
    mapping: Mapping[str, Any] | None = None,
    k: int | None = None,
    thresholds: Sequence[float] = (),
    source: str | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    dataset_revision: str | None = None,
    runner: str | None = None,
) -> list[Summarised]:
    """Reduce a Spark DataFrame of attempts to one summarised job per job id.

    Parameters
    ----------
    df
        One row per trial: ``task``, ``attempt`` (1..k) and ``reward`` (null or NaN: no
        reward) at least; optional ``job_id``, ``status`` (default ``completed``),
        ``started_at`` / ``finished_at`` and ``order`` (which trial of a retried slot
        came last), ``model``; ``tag_*``, ``subset`` and ``difficulty`` columns become
        task tags.
    mapping
        Our field → the frame's column (as :data:`SPARK_FIELDS`); ``"tags"``: a list of
        columns, or ``{tag: column}``.
    job_id
        The job id when the frame holds one job (no ``job_id`` column).
    k
        Attempts requested per task; default each job's highest attempt.
    thresholds
        Pass thresholds to count besides ``reward = 1`` (a summarised job answers only
        the thresholds it was reduced with).
    source
        Where the attempts are (``s3://…/attempts/``), recorded as the jobs' source path.
    dataset, dataset_version, dataset_revision, runner
        The frozen work the jobs ran and the harness that ran it (what comparisons check).

    Raises
    ------
    LoadError
        A column is missing, or a slot breaks a rule (naming the job, task and attempt).
    """
    label = source or "Spark DataFrame"
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise LoadError(label, "k", f"must be an integer >= 1, got {k!r}")
    extra = [float(t) for t in thresholds]
    if any(not math.isfinite(t) for t in extra):
        raise LoadError(label, "thresholds", f"must be finite numbers, got {list(thresholds)}")
    extra = sorted(set(extra))
    fields, tags = _resolve(df, mapping, job_id, label)
    spark = df.sparkSession
    view = f"_enb_spark_{next(_counter)}"
    df.createOrReplaceTempView(view)
    resolved = None
    try:
        src = _source_sql(view, fields, tags, job_id)
        stats = _job_stats(spark, src, k, label)
        table = spark.sql(_per_task_sql(src, _scales_sql(stats), extra, fields)).toArrow()
        if _has_retries(table, stats):  # a slot with several trials: resolve, count again
            resolved = spark.sql(_resolved_sql(src)).persist()
            resolved.createOrReplaceTempView(f"{view}_rec")
            ties = spark.sql(f"SELECT job_id, task, attempt FROM {view}_rec WHERE _rn = 2 LIMIT 1")
            tie = ties.collect()
            if tie:
                jid, task, attempt = tie[0]
                raise LoadError(
                    label,
                    f"job {jid!r}, task {task}, attempt {attempt}",
                    "a retried slot whose trials tie on finished_at, started_at and order "
                    "(map an 'order' column to say which came last)",
                )
            src = f"SELECT * FROM {view}_rec WHERE _rn = 1"
            stats = _job_stats(spark, src, k, label)
            table = spark.sql(_per_task_sql(src, _scales_sql(stats), extra, fields)).toArrow()
        task_tags = spark.sql(_tags_sql(src, list(tags))).toArrow() if tags else None
    finally:  # also after a refused tie: nothing of the reduction stays in the session
        if resolved is not None:
            resolved.unpersist()
            spark.catalog.dropTempView(f"{view}_rec")
        spark.catalog.dropTempView(view)
    facts = {
        "source_path": source,
        "dataset_name": dataset,
        "dataset_version": dataset_version,
        "dataset_revision": dataset_revision,
        "runner": runner,
    }
    return [
        _job(jid, stats[jid], table, task_tags, extra, "order" in fields, facts)
        for jid in sorted(stats)
    ]


def _source_sql(view: str, fields: dict[str, str], tags: dict[str, str], job_id: str | None) -> str:
    """The frame's columns under our names and types."""

    def col(name: str, cast: str, default: str = "NULL") -> str:
        if name not in fields:
            return f"CAST({default} AS {cast}) AS {name}"
        return f"CAST({_q(fields[name])} AS {cast}) AS {name}"

    job = col("job_id", "STRING") if "job_id" in fields else f"{_s(str(job_id))} AS job_id"
    status = (
        f"coalesce(nullif(lower(CAST({_q(fields['status'])} AS STRING)), ''), 'completed') AS status"
        if "status" in fields
        else "'completed' AS status"
    )
    reward = f"CAST({_q(fields['reward'])} AS DOUBLE)"
    tag_cols = "".join(
        f", CAST({_q(column)} AS STRING) AS _tag{i}" for i, column in enumerate(tags.values())
    )
    return f"""SELECT {job}, {col("task", "STRING")}, {col("attempt", "BIGINT")},
               CASE WHEN isnan({reward}) THEN NULL ELSE {reward} END AS reward, {status},
               {col("started_at", "TIMESTAMP")}, {col("finished_at", "TIMESTAMP")},
               {col("order", "DOUBLE")}, {col("model", "STRING")} {tag_cols}
        FROM {view}"""


def _resolved_sql(src: str) -> str:
    """The attempts of record (``_rn = 1``) and, for a slot whose two latest trials tie,
    its runner-up (``_rn = 2``): a window over each (job, task, attempt) slot."""
    return f"""
    SELECT * FROM (
        SELECT *, row_number() OVER w AS _rn, rank() OVER w AS _rk
        FROM ({src})
        WINDOW w AS (PARTITION BY job_id, task, attempt
                     ORDER BY finished_at DESC NULLS LAST, started_at DESC NULLS LAST,
                              `order` DESC NULLS LAST))
    WHERE _rn = 1 OR (_rn = 2 AND _rk = 1)"""


def _job_stats(spark: Any, src: str, k: int | None, label: str) -> dict[str, dict[str, Any]]:
    """Per job: k, the largest |reward| and reward² of the attempts of record, the model;
    refuses the first slot that breaks a rule.

    One aggregation grouped by job with fixed-width buffers only (Spark's hash aggregate,
    partial on each partition: no shuffle of the rows); the model is compared by hash,
    and an offending slot is looked up only when there is one.
    """
    statuses = ", ".join(_s(s) for s in STATUSES)
    k_sql = "max(attempt)" if k is None else str(int(k))
    bad_attempt = f"attempt IS NULL OR attempt < 1 OR attempt > {k_sql}"
    checks = {
        "no_task": ("task IS NULL", "rows without a task"),
        "bad_attempt": ("", "attempts outside 1..{k} (the k requested)"),
        "inf_reward": ("abs(reward) = double('Infinity')",
                       "infinite rewards (null or NaN is no reward)"),
        "bad_status": (f"status NOT IN ({statuses})", f"statuses other than {list(STATUSES)}"),
    }  # fmt: skip
    counted = ", ".join(
        f"count_if({bad_attempt if key == 'bad_attempt' else cond}) AS {key}"
        for key, (cond, _p) in checks.items()
    )
    sql = f"""
    SELECT job_id, {k_sql} AS k, max(abs(reward)) AS max_abs, max(reward * reward) AS max_sq,
           {counted}, count(model) AS with_model,
           min(xxhash64(model)) AS model_lo, max(xxhash64(model)) AS model_hi,
           min(started_at) AS created_at, max(finished_at) AS finished_at,
           count_if(status IN ('pending', 'running')) AS unfinished
    FROM ({src}) GROUP BY job_id"""
    out: dict[str, dict[str, Any]] = {}
    for row in spark.sql(sql).collect():
        r = row.asDict()
        jid = r["job_id"]
        if jid is None:
            raise LoadError(label, "job_id", "rows without a job id")
        for key, (cond, problem) in checks.items():
            if r[key]:
                cond = cond or f"attempt IS NULL OR attempt < 1 OR attempt > {int(r['k'])}"
                slot = spark.sql(
                    f"SELECT task, attempt FROM ({src}) WHERE job_id = {_s(str(jid))} "
                    f"AND ({cond}) LIMIT 1"
                ).collect()[0]
                place = f"job {jid!r}, task {slot[0] or '<null>'}, attempt {slot[1]}"
                raise LoadError(label, place, f"{r[key]} {problem.format(k=r['k'])}")
        r["model"] = None
        if r["with_model"]:
            models = spark.sql(
                f"SELECT DISTINCT model FROM ({src}) WHERE job_id = {_s(str(jid))} "
                "AND model IS NOT NULL LIMIT 2"
            ).collect()
            if r["model_lo"] != r["model_hi"] or len(models) > 1:  # never one job of several
                raise LoadError(  # models: k would add up
                    label,
                    f"job {jid!r}",
                    "several models in one job; map a job_id column per model",
                )
            r["model"] = models[0][0]
        if r["k"] is None:
            raise LoadError(label, f"job {jid!r}", "no attempts")
        out[str(jid)] = r
    if not out:
        raise LoadError(label, None, "the frame has no rows")
    return out


def _scales_sql(stats: dict[str, dict[str, Any]]) -> str:
    """Each job's scales as inline literals (a DataFrame made from Python rows would need
    Python workers: an RDD of pickled rows); ``repr`` of a float reads back exactly."""
    rows = ", ".join(
        f"({_s(j)}, {fixed_point_scale(s['max_abs'], s['k'])!r}D, "
        f"{fixed_point_scale(s['max_sq'], s['k'])!r}D)"
        for j, s in stats.items()
    )
    return f"SELECT * FROM VALUES {rows} AS s(job_id, rscale, qscale)"


def _per_task_sql(src: str, scales: str, thresholds: list[float], fields: dict[str, str]) -> str:
    """One row per (job, task): the counts of :mod:`envloop_nb._metrics.counts`, with
    fixed-width aggregation buffers only (Spark's hash aggregate). ``_rows`` and
    ``_slots`` (distinct attempts, a 63-bit mask) tell whether a slot has several trials.
    """
    ended = ", ".join(_s(s) for s in ENDED)
    passes = "".join(
        f", count_if(r.reward >= CAST({t!r} AS DOUBLE)) AS _passes{i}"
        for i, t in enumerate(thresholds, start=1)
    )
    first = "min(r.`order`)" if "order" in fields else "CAST(NULL AS DOUBLE)"
    return f"""
    SELECT r.job_id, r.task, {first} AS _first,
           CAST(count(*) AS INT) AS _rows,
           bit_count(bit_or(CASE WHEN r.attempt <= 63 THEN shiftleft(1L, CAST(r.attempt - 1 AS INT)) END))
               + count_if(r.attempt > 63) AS _slots,
           CAST(count(r.attempt) AS INT) AS dispatched,
           CAST(count(r.reward) AS INT) AS scored,
           CAST(count_if(r.reward IS NULL AND r.status IN ({ended})) AS INT) AS invalid,
           count_if(r.reward = 1) AS _passes0 {passes},
           CAST(count_if(r.reward <> 0 AND r.reward <> 1) AS INT) AS nonbinary,
           coalesce(CAST(sum(CAST(rint(r.reward * s.rscale) AS BIGINT)) AS DOUBLE)
                    / first(s.rscale), CAST(0 AS DOUBLE)) AS reward_sum,
           coalesce(CAST(sum(CAST(rint(r.reward * r.reward * s.qscale) AS BIGINT)) AS DOUBLE)
                    / first(s.qscale), CAST(0 AS DOUBLE)) AS reward_sumsq,
           min(r.reward) AS reward_min, max(r.reward) AS reward_max
    FROM ({src}) r JOIN ({scales}) s ON s.job_id = r.job_id
    GROUP BY r.job_id, r.task"""


def _has_retries(table: pa.Table, stats: dict[str, dict[str, Any]]) -> bool:
    """Whether some task has more rows than distinct attempts (a slot tried twice).

    The distinct attempts are a 63-bit mask: with k > 63 a retried slot above 63 would
    go unseen, so such jobs are always resolved.
    """
    import pyarrow.compute as pc

    if any(int(s["k"]) > 63 for s in stats.values()):
        return True
    if table.num_rows == 0:
        return False
    rows, slots = table.column("_rows"), table.column("_slots")
    return bool(pc.any(pc.not_equal(rows, slots)).as_py())


def _tags_sql(src: str, keys: list[str]) -> str:
    """One row per (job, task) with its tags as a JSON object (a tag's smallest value
    when a task's rows disagree): the distinct (job, task, tags) rows first — grouped by
    keys, a hash aggregate — then the few per-task rows."""
    columns = ", ".join(f"_tag{i}" for i in range(len(keys)))
    tag_json = (
        "to_json(map_filter(map("
        + ", ".join(f"{_s(key)}, min(_tag{i})" for i, key in enumerate(keys))
        + "), (k, v) -> v IS NOT NULL))"
    )
    return f"""
    SELECT job_id, task, {tag_json} AS tags
    FROM (SELECT DISTINCT job_id, task, {columns} FROM ({src}))
    GROUP BY job_id, task"""


def _job(
    jid: str,
    stats: dict[str, Any],
    table: pa.Table,
    task_tags: pa.Table | None,
    thresholds: list[float],
    ordered: bool,
    facts: dict[str, Any],
) -> Summarised:
    """One job's :class:`Summarised` from the reduced rows of every job."""
    import pyarrow.compute as pc

    mine = table.filter(pc.equal(table.column("job_id"), jid))
    keys = [("_first", "ascending"), ("task", "ascending")] if ordered else [("task", "ascending")]
    mine = mine.sort_by(keys)
    if task_tags is None:
        tags: Any = pa.nulls(mine.num_rows, pa.string())
    else:
        theirs = task_tags.filter(pc.equal(task_tags.column("job_id"), jid))
        where = pc.index_in(mine.column("task"), value_set=theirs.column("task").combine_chunks())
        tags = pc.take(theirs.column("tags"), where)
    tasks = pa.table(
        {
            "task": mine.column("task"),
            "position": pa.array(range(mine.num_rows), pa.int32()),
            "tags": tags,
        }
    )
    parts = []
    for i, threshold in enumerate([None, *thresholds]):
        columns = {
            "task": mine.column("task"),
            "threshold": pa.array([threshold] * mine.num_rows, pa.float64()),
        }
        for name in COUNT_COLUMNS:
            columns[name] = mine.column(f"_passes{i}" if name == "passes" else name)
        parts.append(pa.table(columns))
    counts = pa.concat_tables(parts, promote_options="permissive")
    status = "running" if stats["unfinished"] else "completed"
    return Summarised(
        job_id=jid,
        k=int(stats["k"]),
        tasks=tasks,
        counts=counts,
        thresholds=[None, *thresholds],
        reward_stats={"max_abs": stats["max_abs"], "max_sq": stats["max_sq"]},
        engine="spark",
        where="Spark",
        facts={
            **facts,
            "model": stats["model"],
            "status": status,
            "created_at": stats["created_at"],
            "finished_at": None if stats["unfinished"] else stats["finished_at"],
        },
    )
