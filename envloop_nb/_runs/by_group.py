"""The best checkpoint and the minimum detectable effect per group (``run.best(by=...)``,
``run.mde(by=...)``): :func:`envloop_nb._runs.tests.best`'s and ``mde``'s rules applied to
each group's score (:mod:`envloop_nb._runs.groups`) — paired on the group's tasks where
steps have per-task counts, unpaired from the sources' stderr where they hold only
aggregates (an lm-eval results file: one number per task and none for the whole run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import EnvloopError
from .assemble import mark
from .groups import group_direction, group_lines, group_mask
from .pertask import matrix
from .tests import _best_of, _mde_aggregates, _mde_paired, _z_power

if TYPE_CHECKING:
    import pandas as pd

    from .assemble import RunState

__all__ = ["BEST_COLUMNS", "MDE_COLUMNS", "best_by", "mde_by"]


#: The columns of ``best(by=...)``: one row per group.
BEST_COLUMNS = ("group", "metric", "higher_is_better", "step", "job_id", "estimate", "low",
                "high", "interval", "indistinguishable", "untested", "method", "note")  # fmt: skip


def best_by(
    state: RunState, *, by: str, alpha: float = 0.05, skip_coverage_drops: bool = True
) -> pd.DataFrame:
    """The best checkpoint of each group's score (one row per group, :data:`BEST_COLUMNS`):
    the highest — the lowest when the group's metric is lower-is-better (``ppl``) —, its
    interval and the steps indistinguishable from it by the same rule as :func:`best`
    (paired on the group's tasks, or unpaired from the source's stderr; Holm across each
    group's tests). A group whose direction is unknown, or without a number, has no best:
    ``note`` says why."""
    import pandas as pd

    rows = []
    for group, line in group_lines(state, by).items():
        higher, source = group_direction(state, by, group)
        base = {"group": group, "metric": source or "score", "higher_is_better": higher}
        empty = dict.fromkeys(BEST_COLUMNS[3:], None)
        if higher is None:
            rows.append({**base, **empty, "note": "no best: the source does not say whether a "
                         f"higher or a lower {source or 'number'} is better"})  # fmt: skip
            continue
        try:
            found = _best_of(state, line, metric="score", alpha=alpha, skip=skip_coverage_drops,
                             higher=higher, mask=group_mask(state, by, group), group=group)  # fmt: skip
        except EnvloopError as e:
            rows.append({**base, **empty, "note": f"no best: {e}"})
            continue
        methods = set(found.comparisons["method"].dropna()) - {""}
        rows.append({**base, "step": found.step, "job_id": found.job_id,
                     "estimate": found.estimate, "low": found.low, "high": found.high,
                     "interval": found.interval, "indistinguishable": found.indistinguishable,
                     "untested": found.untested, "method": "; ".join(sorted(methods)),
                     "note": "" if higher else f"lower is better ({source})"})  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(BEST_COLUMNS))
    frame["step"] = pd.Series([r["step"] for r in rows], dtype=object)  # ints stay ints
    frame.attrs["mark"] = mark(state)
    frame.attrs["alpha"] = alpha
    frame.attrs["by"] = by
    return frame


#: The columns of ``mde(by=...)``: one row per group.
MDE_COLUMNS = ("group", "metric", "effect", "n_tasks", "k", "sd_diff", "alpha", "power",
               "method", "note")  # fmt: skip


def mde_by(state: RunState, *, by: str, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """The minimum detectable effect of each group's score (one row per group,
    :data:`MDE_COLUMNS`, ``effect`` in the group's own units): the paired test's on the
    group's tasks where steps have per-task counts, else from the sources' stderr
    (``(z_{1−α/2} + z_power)·√2·median(se)`` over the group's steps: the change a two-sided
    unpaired z-test of two steps with the typical stderr detects with probability
    ``power``). A group without either has no MDE: ``note`` says why."""
    import pandas as pd

    z = _z_power(alpha, power)
    m = matrix(state)
    rows = []
    for group, line in group_lines(state, by).items():
        _, source = group_direction(state, by, group)
        mask = group_mask(state, by, group)
        base = {"group": group, "metric": source or "score"}
        try:
            if m.per_task.any() and (mask & m.requested[:, m.per_task].any(axis=1)).any():
                found = _mde_paired(state, z, alpha, power, None, None, mask)
            else:
                found = _mde_aggregates(state, z, alpha, power, None, line)
        except EnvloopError as e:
            rows.append({**base, **dict.fromkeys(MDE_COLUMNS[2:], None), "alpha": alpha,
                         "power": power, "note": f"no MDE: {e}"})  # fmt: skip
            continue
        rows.append({**base, "effect": found.effect, "n_tasks": found.n_tasks or None,
                     "k": found.k, "sd_diff": found.sd_diff, "alpha": alpha, "power": power,
                     "method": found.method, "note": ""})  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(MDE_COLUMNS))
    frame.attrs["by"] = by
    return frame
