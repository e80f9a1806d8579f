"""A run's groups (``by="subset"`` / ``"tag:<key>"``) as the tests, the best checkpoint and
the MDE per group read them: each group's curve lined up on the run's steps, its tasks, and
whether a higher number is better.

* :func:`group_lines` — ``curve(by=...)``'s rows of each group, one row per step of the
  run in step order (a step without the group: no estimate, interval ``"none"``);
* :func:`group_mask` — the group's rows of the run's task matrix (steps with per-task
  counts: their tasks of that subset or tag value);
* :func:`group_direction` — for steps with per-task counts the score (mean reward: higher
  is better); for steps holding only an lm-eval file's aggregates the group's metric and
  its direction as the file states it, else lm-eval's own for its registered metrics
  (:func:`envloop_nb._metrics.lm_eval_results.metric_direction`); None when unknown or
  when the steps disagree (then a verdict says *higher* / *lower*, never *better*).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._metrics.lm_eval_results import metric_direction, results_rows
from .assemble import RunState
from .curve import curve
from .curve import group_lines as lines_of
from .pertask import group_values, matrix

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = ["check_by", "group_direction", "group_lines", "group_mask"]


def check_by(by: str) -> str:
    """``by`` of the tests, the best checkpoint and the MDE: ``"subset"`` or ``"tag:<key>"``."""
    if by != "subset" and not by.startswith("tag:"):
        raise ValueError(
            f"by must be None, 'subset' or 'tag:<key>' (a test compares one number of each "
            f"step; per dimension see run.curve(by='dimension')), got {by!r}"
        )
    return by


def group_lines(state: RunState, by: str, *, metric: str = "score") -> dict[str, pd.DataFrame]:
    """Each group's curve (``curve(by=by)``), one row per step of the run, in step order
    (:func:`envloop_nb._runs.curve.group_lines`)."""
    return lines_of(state, curve(state, metric=metric, by=check_by(by)))


def group_mask(state: RunState, by: str, group: str) -> NDArray[np.bool_]:
    """The task matrix's rows in ``group`` (all False when no step has per-task counts)."""
    m = matrix(state)
    mask: NDArray[np.bool_] = np.array(group_values(m, by), dtype=object) == group
    return mask


def group_direction(state: RunState, by: str, group: str) -> tuple[bool | None, str | None]:
    """``(higher_is_better, the source's metric)`` of ``group`` (module docstring)."""
    m = matrix(state)
    seen: set[bool | None] = set()
    metrics: list[str] = []
    if group_mask(state, by, group).any() and m.per_task.any():
        seen.add(True)
    kind = "task" if by in ("subset", "tag:subset") else "group"
    for j, job_id in enumerate(state.job_ids):
        if m.per_task[j]:
            continue
        rows: list[dict[str, Any]] = results_rows(state.con, job_id) or []
        for r in rows:
            if r["task"] == group and r["kind"] == kind and r["primary"]:
                seen.add(metric_direction(str(r["metric"]), r["higher_is_better"]))
                metrics.append(str(r["metric"]))
    names = list(dict.fromkeys(metrics))
    metric = names[0] if len(names) == 1 else None
    return (seen.pop() if len(seen) == 1 else None), metric
