"""Summaries by task tag (subset, difficulty, ...) and by score dimension.

Every row is a job summary restricted to one group, with the platform's semantics
(see :mod:`envloop_nb._metrics.counts`): coverage counts, score, pass, pass@k and pass^k at the
job's k, plus a *bad case* count: tasks whose per-task pass rate (binary) or mean value
(graded) is worse than ``bad_below``.

Attempts are grouped by (value name, task) first, then by group; the few group rows are
finished by a pure function (:func:`finish_rows`). The per-task step never depends on the
policy and is memoized like the job's per-task counts (:func:`envloop_nb._store.memo.cached`,
keyed by ``jobs.loaded_at``): by tag it *is* the job's per-task counts
(:func:`envloop_nb._metrics.counts.task_counts`, shared with the summary, samples and curve),
summed per tag value in numpy; by dimension the reward's rows are those counts too and
one DuckDB query per threshold set aggregates the other values (composite, named
dimensions), regrouped in DuckDB. A policy change never rescans the attempts.

Binary or not is decided per value name over the whole job (not per group), so every
row of one table uses the same metric definitions. A per-task rate exists as in
``job.samples()``: the pass rate only for a complete task (or any task under
``policy="failure"``), the mean value for any task with a value.

For dimensions, the direction comes from ``dimension_meta.higher_is_better``: with a
threshold, a lower-is-better value passes when ``value <= threshold``; a graded
lower-is-better task is bad when its mean is *above* ``bad_below``. Under
``policy="failure"`` a missing value counts as 0 for every dimension (beware: for a
lower-is-better dimension 0 is the best value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .._errors import EnvloopError
from .._store.frames import to_frame
from .._store.memo import cached
from .._store.ref import require_task_table
from .counts import check_options, task_counts
from .dimension_counts import PerName, dimension_per_task, option_for
from .tag_groups import tag_group_ids

if TYPE_CHECKING:
    import duckdb

    from .._types import FrameKind, Policy

__all__ = [
    "PerName",
    "dimension_groups",
    "finish_rows",
    "group_summaries",
    "tag_groups",
]


def _rated_sql(failure: bool) -> str:
    """CTEs over the per-task table ``per_task``: ``n`` and the task's rate under the policy."""
    return f"""
    per_task_n AS (
        SELECT *, ({"k" if failure else "scored"})::INTEGER AS n FROM per_task),
    bin_of AS (
        SELECT name, (sum(nonbinary) = 0 OR any_value(thr) IS NOT NULL) AS is_binary
        FROM per_task_n GROUP BY name),
    rated AS (
        SELECT p.*, b.is_binary,
               CASE WHEN b.is_binary THEN
                        CASE WHEN n > 0 AND ({"TRUE" if failure else "scored = k"})
                             THEN passes / n END
                    ELSE CASE WHEN n > 0 THEN vsum / n END END AS task_value
        FROM per_task_n p JOIN bin_of b USING (name))
    """


def _group_sums(
    counts: pa.Table,
    group: np.ndarray,
    size: int,
    policy: Policy,
    threshold: float | None,
    bad: float,
) -> list[dict[str, Any]]:
    """Per-group sums of the reward's per-task counts (the inputs of :func:`finish_rows`).

    The same sums as ``_GROUP_SELECT`` over ``_rated_sql`` for the one value ``reward``
    (higher is better), in numpy: averages are sums / counts as in DuckDB.
    """

    def col(name: str) -> np.ndarray:  # its own dtype: bincount sums int32 weights as float64
        return np.asarray(counts.column(name).to_numpy(zero_copy_only=False))

    k, scored, invalid, passes = col("k"), col("scored"), col("invalid"), col("passes")
    vsum = np.asarray(col("reward_sum"), dtype=np.float64)
    failure = policy == "failure"
    is_binary = bool(threshold is not None or int(col("nonbinary").sum()) == 0)
    n = k if failure else scored
    full = scored == k
    with np.errstate(invalid="ignore", divide="ignore"):
        if is_binary:
            has = (n > 0) & (True if failure else full)
            value = np.where(has, passes / np.maximum(n, 1), np.nan)
        else:
            has = n > 0
            value = np.where(has, vsum / np.maximum(n, 1), np.nan)
        bad_case = has & (value < bad)
    del value

    def total(weights: np.ndarray | None = None, where: np.ndarray | None = None) -> np.ndarray:
        g = group if where is None else group[where]
        w = None if weights is None else (weights if where is None else weights[where])
        return np.bincount(g, weights=w, minlength=size)

    # masks, not float copies: a count of the tasks where a mask holds
    any_pass, all_pass = passes > 0, passes == k
    tasks, complete = total(), total(where=full)
    sums = {
        "tasks": tasks,
        "total": total(k),
        "scored": total(scored),
        "invalid": total(invalid),
        "complete_members": complete,
        "passes": total(passes),
        "rated_tasks": total(where=has),
        "bad_cases": total(where=bad_case),
        "at_c": total(where=any_pass & full),
        "hat_c": total(where=all_pass & full),
        "at_a": total(where=any_pass),
        "hat_a": total(where=all_pass),
        "vsum": total(vsum),
    }
    first = np.zeros(size, dtype=np.int64)
    first[group[::-1]] = k[::-1]  # any_value(k): every task of a job has the same k
    rows = []
    for g in range(size):
        c, t = int(complete[g]), int(tasks[g])
        rows.append(
            {
                **{
                    name: int(sums[name][g])
                    for name in ("tasks", "total", "scored", "invalid", "complete_members")
                },
                "vsum": float(sums["vsum"][g]),
                "passes": int(sums["passes"][g]),
                "is_binary": is_binary,
                "k": int(first[g]),
                "at_complete": float(sums["at_c"][g]) / c if c else None,
                "hat_complete": float(sums["hat_c"][g]) / c if c else None,
                "at_all": float(sums["at_a"][g]) / t if t else None,
                "hat_all": float(sums["hat_a"][g]) / t if t else None,
                "rated_tasks": int(sums["rated_tasks"][g]),
                "bad_cases": int(sums["bad_cases"][g]),
                "bad_below": bad,
            }
        )
    return rows


_GROUP_SELECT = """
    count(*)::BIGINT AS tasks,
    sum(k)::BIGINT AS total,
    sum(scored)::BIGINT AS scored,
    sum(invalid)::BIGINT AS invalid,
    count(*) FILTER (WHERE scored = k)::BIGINT AS complete_members,
    fsum(vsum ORDER BY task)::DOUBLE AS vsum,  -- a fixed order: the same bits every run
    sum(passes)::BIGINT AS passes,
    bool_and(is_binary) AS is_binary,
    any_value(k) AS k,
    avg((passes > 0)::INTEGER) FILTER (WHERE scored = k) AS at_complete,
    avg((passes = k)::INTEGER) FILTER (WHERE scored = k) AS hat_complete,
    avg((passes > 0)::INTEGER) AS at_all,
    avg((passes = k)::INTEGER) AS hat_all,
    count(task_value)::BIGINT AS rated_tasks,
    count(*) FILTER (WHERE CASE
        WHEN is_binary OR hib IS NOT FALSE THEN task_value < bad
        ELSE task_value > bad END)::BIGINT AS bad_cases,
    any_value(bad) AS bad_below
"""


def finish_rows(rows: Sequence[Mapping[str, Any]], policy: Policy) -> list[dict[str, Any]]:
    """Turn per-group sums into the group's metrics (pure; same rules as the job summary).

    Examples
    --------
    >>> row = dict(tasks=3, total=6, scored=5, invalid=0, complete_members=2, vsum=3.0,
    ...            passes=3, is_binary=True, k=2, at_complete=1.0, hat_complete=0.5,
    ...            at_all=2 / 3, hat_all=1 / 3, rated_tasks=2, bad_cases=1, bad_below=0.5)
    >>> out = finish_rows([row], "unknown")[0]
    >>> out["score"], out["pass@k"], out["pass^k"], out["missing"], out["coverage"]
    (0.6, 1.0, 0.5, 1, 0.8333333333333334)
    """
    out = []
    for r in rows:
        total, scored = int(r["total"] or 0), int(r["scored"] or 0)
        score = pass_ = at = hat = None
        if scored > 0:
            den = total if policy == "failure" else scored
            score = float(r["vsum"]) / den
            if r["is_binary"]:
                pass_ = int(r["passes"]) / den
                at, hat = (
                    (r["at_all"], r["hat_all"])
                    if policy == "failure"
                    else (r["at_complete"], r["hat_complete"])
                )
        out.append(
            {
                "tasks": int(r["tasks"]),
                "total": total,
                "scored": scored,
                "missing": total - scored,
                "invalid": int(r["invalid"] or 0),
                "coverage": scored / total if total else None,
                "complete_members": int(r["complete_members"] or 0),
                "score": score,
                "pass": pass_,
                "pass@k": None if at is None else float(at),
                "pass^k": None if hat is None else float(hat),
                "k": int(r["k"]),
                "binary": bool(r["is_binary"]),
                "bad_cases": int(r["bad_cases"] or 0),
                "rated_tasks": int(r["rated_tasks"] or 0),
                "bad_below": r["bad_below"],
            }
        )
    return out


_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("tasks", pa.int64()),
    ("total", pa.int64()),
    ("scored", pa.int64()),
    ("missing", pa.int64()),
    ("invalid", pa.int64()),
    ("coverage", pa.float64()),
    ("complete_members", pa.int64()),
    ("score", pa.float64()),
    ("pass", pa.float64()),
    ("pass@k", pa.float64()),
    ("pass^k", pa.float64()),
    ("k", pa.int64()),
    ("binary", pa.bool_()),
    ("bad_cases", pa.int64()),
    ("rated_tasks", pa.int64()),
    ("bad_below", pa.float64()),
]


def _fetch(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]
) -> list[dict[str, Any]]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _query(con: duckdb.DuckDBPyConnection, per_task: pa.Table, sql: str) -> list[dict[str, Any]]:
    """Run ``sql`` with the Arrow table ``per_task`` as the relation ``per_task``."""
    rel = con.from_arrow(per_task).query("per_task", sql)
    names = list(rel.columns)
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


def _table(
    lead: list[tuple[str, pa.DataType]], rows: list[dict[str, Any]], policy: Policy
) -> pa.Table:
    schema = pa.schema([*lead, *_COLUMNS, ("policy", pa.string()), ("threshold", pa.float64())])
    return pa.Table.from_pylist([{**r, "policy": policy} for r in rows], schema=schema)


def tag_groups(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    key: str = "subset",
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
    frame: FrameKind = "pandas",
) -> Any:
    """One summary row per value of task tag ``key`` (tasks without the tag: value null).

    Columns: ``key, value, tasks, total, scored, missing, invalid, coverage,
    complete_members, score, pass, pass@k, pass^k, k, binary, bad_cases, rated_tasks,
    bad_below, policy, threshold``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> df = tag_groups(job.con, job.id)
    >>> df[["value", "tasks", "scored", "score", "pass@k", "bad_cases"]].values.tolist()
    [['code', 2, 3, 0.6666666666666666, 1.0, 0], ['math', 1, 2, 0.5, 1.0, 0]]
    """
    check_options(policy, threshold)
    keys: tuple[str, ...] = cached(
        con,
        job_id,
        ("tag_keys",),
        lambda: tuple(
            k
            for (k,) in con.execute(
                "SELECT DISTINCT key FROM task_tags WHERE job_id = ? ORDER BY key", [job_id]
            ).fetchall()
        ),
    )
    if key not in keys:
        require_task_table(con, job_id, "groups by tag")  # no task at all: say why
        raise ValueError(
            f"no task of job {job_id!r} has tag {key!r}; tags present: "
            + (", ".join(keys) if keys else "none")
        )
    counts = task_counts(con, job_id, threshold)  # memoized: shared with summary/curve
    labels, group = cached(  # the counts' tasks (and order) are the same for every threshold
        con,
        job_id,
        ("tag_group_ids", key),
        lambda: tag_group_ids(con, job_id, key),
    )
    if len(group) != counts.num_rows:  # the job changed between two calls
        labels, group = tag_group_ids(con, job_id, key)
        if len(group) != counts.num_rows:
            raise EnvloopError(
                f"job {job_id!r}: {len(group)} task rows for tag {key!r} against "
                f"{counts.num_rows} tasks (a task with the tag twice?)"
            )
    raw = [
        {"key": key, "value": label, **sums}
        for label, sums in zip(
            labels,
            _group_sums(counts, group, len(labels), policy, threshold, float(bad_below)),
            strict=True,
        )
    ]
    rows = [
        {"key": r["key"], "value": r["value"], **f, "threshold": threshold}
        for r, f in zip(raw, finish_rows(raw, policy), strict=True)
    ]
    table = _table([("key", pa.string()), ("value", pa.string())], rows, policy)
    return to_frame(con.from_arrow(table), frame)


def dimension_groups(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    policy: Policy = "unknown",
    threshold: PerName = None,
    bad_below: PerName = 0.5,
    frame: FrameKind = "pandas",
) -> Any:
    """One summary row per value: ``reward`` first, then ``composite`` (if any), then each
    named dimension, each treated as the attempt's value.

    ``threshold`` and ``bad_below`` are one number for all, or a mapping name → number
    (names not in the mapping: no threshold / no bad-case count). One number is a
    fraction of each dimension's range (:mod:`envloop_nb._metrics.scale`: 0.5 is 50 on a
    0–100 dimension; a dimension without a known range is not judged by it); a mapping's
    numbers are in each dimension's own units. Columns: ``dimension, unit, range,
    higher_is_better`` (None where the source did not state it) and the columns of :func:`tag_groups` after ``value``
    (``threshold`` and ``bad_below`` as applied to each dimension).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> df = dimension_groups(job.con, job.id)
    >>> df[["dimension", "scored", "score"]].values.tolist()
    [['reward', 5, 0.6], ['composite', 1, 0.9], ['style', 1, 0.8], ['tests_passed', 1, 1.0]]
    """
    check_options(policy, None)
    names, scales, per_task = dimension_per_task(con, job_id, threshold, bad_below)
    sql = f"""
    WITH {_rated_sql(policy == "failure")}
    SELECT name, {_GROUP_SELECT} FROM rated GROUP BY name
    """
    raw = {r["name"]: r for r in _query(con, per_task, sql)}
    ordered = [raw[n] for n, _, _ in names]
    rows = [
        {
            "dimension": n,
            "unit": unit,
            "range": scales[n].range_text,
            # None: the source did not say (worked with as higher is better, shown so)
            "higher_is_better": scales[n].higher_is_better if scales[n].direction_stated else None,
            **f,
            # the reward's threshold is the job's pass threshold, in reward units
            "threshold": option_for(threshold, n, None if n == "reward" else scales[n]),
        }
        for (n, unit, hib), f in zip(names, finish_rows(ordered, policy), strict=True)
    ]
    table = _table(
        [
            ("dimension", pa.string()),
            ("unit", pa.string()),
            ("range", pa.string()),
            ("higher_is_better", pa.bool_()),
        ],
        rows,
        policy,
    )
    return to_frame(con.from_arrow(table), frame)


def group_summaries(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    by: str = "subset",
    policy: Policy = "unknown",
    threshold: PerName = None,
    bad_below: PerName = 0.5,
    frame: FrameKind = "pandas",
) -> Any:
    """Dispatch ``by="subset"``, ``by="tag:<key>"`` or ``by="dimension"``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> group_summaries(job.con, job.id, by="tag:subset")["value"].tolist()
    ['code', 'math']
    """
    from .lm_eval_results import results_groups, results_rows

    rows = results_rows(con, job_id)
    if rows is not None:  # lm-eval results without samples: the file's own numbers
        return results_groups(
            con, job_id, rows, by=by, policy=policy, threshold=threshold,
            bad_below=bad_below, frame=frame,
        )  # fmt: skip
    if by == "dimension":
        return dimension_groups(
            con,
            job_id,
            policy=policy,
            threshold=threshold,
            bad_below=bad_below,
            frame=frame,
        )
    if by == "subset" or by.startswith("tag:"):
        key = "subset" if by == "subset" else by.removeprefix("tag:")
        if isinstance(threshold, Mapping) or isinstance(bad_below, Mapping) or bad_below is None:
            raise ValueError("per-name threshold/bad_below mappings apply to by='dimension' only")
        return tag_groups(
            con,
            job_id,
            key=key,
            policy=policy,
            threshold=threshold,
            bad_below=bad_below,
            frame=frame,
        )
    raise ValueError(f"by must be 'subset', 'tag:<key>' or 'dimension', got {by!r}")
