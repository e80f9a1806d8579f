"""Per-task rows of the compared jobs, derived from the one per-task count definition.

The attempt counts (dispatched, scored, passes, nonbinary, reward sums) are
:func:`envloop_nb._metrics.counts.count_rows` of each job — the counts of
:func:`~envloop_nb._metrics.counts.task_counts` without the tasks' tags, from the same
memoized counts its summary reads; this module only adds the task's digest and group (a
tag's value) and the comparison's per-task values: ``n`` (scored attempts, or requested
ones under ``policy="failure"``), ``complete``, ``binary`` (per job), ``task_score`` and
``pass_rate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._metrics.counts import count_rows, scored_mean
from .state import CompareState

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
else:
    from .state import pandas as pd

__all__ = ["dimension_labels", "dimension_tasks", "label_dimensions", "task_frame"]

_COUNTS = ("task", "position", "k", "dispatched", "scored", "passes", "nonbinary", "reward_sum")


def task_frame(state: CompareState, tag: str = "subset") -> pd.DataFrame:
    """Per job and task: counts, n, complete, task_score, pass_rate, grp (memoized).

    Rows are ordered by job id, then task position. ``grp`` is the task's ``tag`` value
    (``"(no <tag>)"`` without one), ``digest`` its digest (``""`` without one).
    """
    key = ("tasks", tag)
    if key not in state.data:
        state.data[key] = _task_frame(state, tag)
    frame: pd.DataFrame = state.data[key]
    return frame


def _task_frame(state: CompareState, tag: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.compute as pc

    jobs = sorted(set(state.job_ids))
    meta = state.con.execute(
        """SELECT t.job_id, t.task, coalesce(t.digest, '') AS digest,
              coalesce(tt.value, '(no ' || $tag || ')') AS grp
       FROM tasks t
       LEFT JOIN task_tags tt ON tt.job_id = t.job_id AND tt.task = t.task AND tt.key = $tag
       WHERE list_contains($jobs, t.job_id)
       ORDER BY t.job_id, t.position, t.task""",
        {"jobs": jobs, "tag": tag},
    ).to_arrow_table()
    # the counts without the tasks' tags (the summary fetches those): from the load's own
    # counts when it kept them, in task order
    parts = [
        count_rows(state.con, job_id, state.threshold).select(list(_COUNTS)) for job_id in jobs
    ]
    sizes = [part.num_rows for part in parts]
    job_col = pa.array(np.repeat(np.array(jobs, dtype=object), sizes), pa.string())
    counts = pa.concat_tables(parts, promote_options="permissive").add_column(0, "job_id", job_col)
    in_order = (
        meta.num_rows == counts.num_rows
        and meta.column("job_id").equals(counts.column("job_id"))
        and meta.column("task").equals(counts.column("task"))
        and all(pc.count_distinct(part.column("task")).as_py() == part.num_rows for part in parts)
        and all(_ascending(part.column("position")) for part in parts)
    )
    if in_order:  # the counts' tasks in task order, each once: the left merge, side by side,
        # and already sorted by job and position; each job's reward kind from its own part
        rows = counts.append_column("digest", meta.column("digest"))
        rows = rows.append_column("grp", meta.column("grp")).to_pandas()
        nonbinary = [pc.sum(part.column("nonbinary")).as_py() or 0 for part in parts]
        job_binary = np.repeat(np.array([n == 0 for n in nonbinary], dtype=bool), sizes)
    else:
        rows = counts.to_pandas().merge(meta.to_pandas(), on=["job_id", "task"], how="left")
        rows = rows.sort_values(["job_id", "position"], kind="stable").reset_index(drop=True)
        job_binary = (rows.groupby("job_id")["nonbinary"].transform("sum") == 0).to_numpy(bool)
    failure = state.policy == "failure"
    n = rows["k"] if failure else rows["scored"]
    complete = pd.Series(True, index=rows.index) if failure else rows["scored"] == rows["k"]
    binary = np.ones(len(rows), dtype=bool) if state.threshold is not None else job_binary
    has_n = (n > 0).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        score = rows["reward_sum"].to_numpy(float) / n.to_numpy(float)
        rate = rows["passes"].to_numpy(float) / n.to_numpy(float)
    out: pd.DataFrame = rows[
        ["job_id", "task", "position", "digest", "k", "grp", *_COUNTS[3:]]
    ].copy()
    out["n"] = n.to_numpy()
    out["complete"] = complete.to_numpy(bool)
    out["binary"] = binary
    out["task_score"] = np.where(has_n, score, np.nan)
    out["pass_rate"] = np.where(has_n & out["complete"] & out["binary"], rate, np.nan)
    return out


def _ascending(column: pa.ChunkedArray) -> bool:
    """Whether ``column`` (integers, no nulls) never decreases."""
    if column.null_count:
        return False
    values = column.to_numpy()
    return bool((values[1:] >= values[:-1]).all())


def label_dimensions(meta: pd.DataFrame) -> pd.DataFrame:
    """Give each (name, unit, direction) variant its own label when jobs disagree."""
    from .guard import direction_word

    meta = meta.copy()
    labels = []
    for _, row in meta.iterrows():
        same = meta[meta["name"] == row["name"]]
        units = set(same["unit"].fillna("no unit"))
        dirs = set(same["higher_is_better"].map(direction_word))
        parts = []
        if len(units) > 1:
            parts.append(row["unit"] if isinstance(row["unit"], str) else "no unit")
        if len(dirs) > 1:
            parts.append(direction_word(row["higher_is_better"]))
        labels.append(f"{row['name']} [{', '.join(parts)}]" if parts else row["name"])
    meta["label"] = labels
    return meta


def dimension_labels(state: CompareState) -> pd.DataFrame:
    """job_id, name, label, unit, higher_is_better for every dimension of the jobs."""
    if "dim_labels" not in state.data:
        meta = state.con.execute(
            """SELECT job_id, name, any_value(unit) AS unit,
                      any_value(higher_is_better) AS higher_is_better
               FROM dimension_meta WHERE list_contains($jobs, job_id)
               GROUP BY job_id, name ORDER BY name, job_id""",
            {"jobs": list(state.job_ids)},
        ).df()
        state.data["dim_labels"] = label_dimensions(meta)
    labels: pd.DataFrame = state.data["dim_labels"]
    return labels


def dimension_tasks(state: CompareState) -> pd.DataFrame:
    """Per job, task and dimension label: mean value over scored attempts (SQL)."""
    if "dim_tasks" not in state.data:
        frame = state.con.execute(
            f"""SELECT job_id, task, name,
                      {scored_mean("value", "attempt")} AS value, count(value) AS n
               FROM (SELECT job_id, task, attempt, name, value FROM dimensions
                     WHERE list_contains($jobs, job_id)
                     UNION ALL
                     SELECT job_id, task, attempt, 'composite', composite FROM attempts
                     WHERE list_contains($jobs, job_id) AND composite IS NOT NULL)
               GROUP BY job_id, task, name""",
            {"jobs": list(state.job_ids)},
        ).df()
        labels = dimension_labels(state)[["job_id", "name", "label"]]
        frame = frame.merge(labels, on=["job_id", "name"], how="left")
        frame["label"] = frame["label"].fillna(frame["name"])
        state.data["dim_tasks"] = frame
    result: pd.DataFrame = state.data["dim_tasks"]
    return result
