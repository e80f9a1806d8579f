"""Per value (``reward``, ``composite``, each named dimension) and task: the counts
``job.groups(by="dimension")`` aggregates (:mod:`envloop_nb._metrics.groups`), and a
training run bootstraps per dimension (:mod:`envloop_nb._runs.pertask`). The reward's rows
are the job's per-task counts (:func:`envloop_nb._metrics.counts.task_counts`); the other
values' are one DuckDB query per threshold set, memoized like them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .._store.memo import cached
from .counts import count_columns_sql, scored_sum, task_counts
from .scale import Scale, outside_unit, scale_of

if TYPE_CHECKING:
    import duckdb

__all__ = ["PerName", "dimension_per_task", "dimension_task_counts", "option_for"]


#: Per-name options: a threshold / bad_below for all names, or one per name.
PerName = float | Mapping[str, float] | None


def option_for(option: PerName, name: str, scale: Scale | None = None) -> float | None:
    """A mapping's value as given; one number is a fraction of ``scale``'s range."""
    if option is None or isinstance(option, int | float):
        return None if option is None else scale.cut(option) if scale else float(option)
    value = option.get(name)
    return None if value is None else float(value)


#: A pass of a value under its options: ``thr``, ``hib`` (higher is better) per name.
_PASSED = """CASE
               WHEN s.thr IS NULL THEN v.value = CASE WHEN s.hib IS FALSE THEN 0 ELSE 1 END
               WHEN s.hib IS FALSE THEN v.value <= s.thr
               ELSE v.value >= s.thr END"""


def _per_task_sql(values_sql: str) -> str:
    """One row per (name, task): counts and sums of ``values_sql`` (name, task, attempt, value).

    ``$names``/``$thr``/``$hib``/``$bad`` are parallel lists giving each name's options.
    Policy-free: :func:`_rated_sql` applies the policy.
    """
    return f"""
    WITH vals AS ({values_sql}),
    opts AS (SELECT unnest($names) AS name, unnest($thr) AS thr, unnest($hib) AS hib,
                    unnest($bad) AS bad),
    slots AS (
        SELECT o.name, o.thr, o.hib, o.bad, t.task, t.position, j.attempts AS k
        FROM tasks t JOIN jobs j ON j.job_id = t.job_id CROSS JOIN opts o
        WHERE t.job_id = $job_id)
    SELECT s.name, s.task, s.position, s.k, s.thr, s.hib, s.bad,
           {count_columns_sql("v.value", "a.status", _PASSED, attempt="a.attempt")},
           {scored_sum("v.value", "a.attempt")} AS vsum
    FROM slots s
    LEFT JOIN attempts a ON a.job_id = $job_id AND a.task = s.task
    LEFT JOIN vals v ON v.name = s.name AND v.task = a.task AND v.attempt = a.attempt
    GROUP BY ALL
    """


#: The per-(value, task) columns the group step reads (see :func:`_rated_sql`).
_PER_TASK = pa.schema(
    [
        ("name", pa.string()),
        ("task", pa.string()),
        ("k", pa.int64()),
        ("thr", pa.float64()),
        ("hib", pa.bool_()),
        ("bad", pa.float64()),
        ("scored", pa.int32()),
        ("invalid", pa.int32()),
        ("passes", pa.int32()),
        ("nonbinary", pa.int32()),
        ("vsum", pa.float64()),
    ]
)


def _reward_per_task(counts: pa.Table, thr: float | None, bad: float | None) -> pa.Table:
    """The reward's rows of the per-(value, task) table, from the job's per-task counts."""
    size = counts.num_rows
    return pa.table(
        {
            "name": pa.repeat(pa.scalar("reward", pa.string()), size),
            "task": counts.column("task"),
            "k": counts.column("k").cast(pa.int64()),
            "thr": pa.nulls(size, pa.float64()) if thr is None else pa.array(np.full(size, thr)),
            "hib": pa.array(np.ones(size, dtype=bool)),
            "bad": pa.nulls(size, pa.float64()) if bad is None else pa.array(np.full(size, bad)),
            "scored": counts.column("scored"),
            "invalid": counts.column("invalid"),
            "passes": counts.column("passes"),
            "nonbinary": counts.column("nonbinary"),
            "vsum": counts.column("reward_sum"),
        },
        schema=_PER_TASK,
    )


def dimension_per_task(
    con: duckdb.DuckDBPyConnection, job_id: str, threshold: PerName, bad_below: PerName
) -> tuple[list[tuple[str, str | None, bool | None]], dict[str, Scale], pa.Table]:
    """The value names (reward, composite, named dimensions), their scales, and the
    per-(value, task) table :func:`dimension_groups` aggregates."""
    cur = con.execute(
        """SELECT d.name, any_value(m.unit) AS unit, any_value(m.higher_is_better) AS hib
           FROM (SELECT DISTINCT name FROM dimensions WHERE job_id = $job_id
                 UNION SELECT name FROM manual_dimensions WHERE job_id = $job_id) d
           LEFT JOIN dimension_meta m ON m.name = d.name AND m.job_id = $job_id
           GROUP BY d.name ORDER BY d.name""",
        {"job_id": job_id},
    )
    meta = [dict(zip(("name", "unit", "hib"), r, strict=True)) for r in cur.fetchall()]
    has_composite = con.execute(
        "SELECT count(composite) > 0 FROM attempts WHERE job_id = ?", [job_id]
    ).fetchone()
    names: list[tuple[str, str | None, bool | None]] = [("reward", None, True)]
    if has_composite and has_composite[0]:
        names.append(("composite", None, True))
    names += [(m["name"], m["unit"], m["hib"]) for m in meta if m["name"] not in ("reward",)]
    # The values besides the reward (its rows come from the job's per-task counts);
    # composite only when some attempt has one, else its rows would all be null.
    values_sql = """SELECT name, task, attempt, value FROM dimensions
            WHERE job_id = $job_id AND name NOT IN ('reward', 'composite')"""
    if any(n == "composite" for n, _, _ in names):
        values_sql += """
        UNION ALL SELECT 'composite', task, attempt, composite FROM attempts
            WHERE job_id = $job_id"""
    for label, opt in (("threshold", threshold), ("bad_below", bad_below)):
        if isinstance(opt, Mapping):
            unknown = sorted(set(opt) - {n for n, _, _ in names})
            if unknown:
                raise ValueError(
                    f"{label} names unknown dimension(s) {', '.join(unknown)}; "
                    f"dimensions: {', '.join(n for n, _, _ in names)}"
                )
    # The reward's per-task counts are the job's (cached, shared with summary and curve);
    # only the other values (composite, named dimensions) are aggregated here.
    reward = _reward_per_task(
        task_counts(con, job_id, option_for(threshold, "reward")),
        option_for(threshold, "reward"),
        option_for(bad_below, "reward"),
    )
    others = names[1:]
    outside = outside_unit(con, job_id)  # names with values outside 0–1 (no unit: no range)
    scales = {
        n: scale_of(unit, higher_is_better=hib, within_unit=n not in outside)
        for n, unit, hib in names
    }
    params = {
        "job_id": job_id,
        "names": [n for n, _, _ in others],
        "thr": [option_for(threshold, n, scales[n]) for n, _, _ in others],
        "hib": [h for _, _, h in others],
        "bad": [option_for(bad_below, n, scales[n]) for n, _, _ in others],
    }
    parts = [reward]
    if others:
        key = tuple(tuple(v) for v in params.values() if isinstance(v, list))
        parts.append(
            cached(
                con,
                job_id,
                ("dimension_groups", *key),
                lambda: (
                    con.execute(_per_task_sql(values_sql), params)
                    .to_arrow_table()
                    .select(_PER_TASK.names)
                    .cast(_PER_TASK)
                ),
            )
        )
    return names, scales, pa.concat_tables(parts)


def dimension_task_counts(
    con: duckdb.DuckDBPyConnection, job_id: str, *, threshold: PerName = None
) -> pa.Table:
    """Per value (``reward``, ``composite``, each named dimension) and task: the counts
    :func:`dimension_groups` aggregates — ``name, task, k, scored, invalid, passes,
    nonbinary, vsum`` (the sum of the scored values), in the job's task order per value
    (memoized as ``dimension_groups``' own; a training run bootstraps them per dimension).
    """
    return dimension_per_task(con, job_id, threshold, 0.5)[2]
