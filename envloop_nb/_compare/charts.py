"""The comparison's charts: its groups and curves handed to the pure chart specs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._metrics.passk_views import curve
from .guard import mark
from .state import CompareState
from .tables import By, groups

if TYPE_CHECKING:
    import pandas as pd
else:
    from .state import pandas as pd

__all__ = ["bars", "curve_frame", "curves", "nothing_to_draw", "radar", "title"]


def title(by: By) -> str:
    """The title of a radar / bars chart."""
    return "score by subset" if by == "subset" else "mean by dimension"


def nothing_to_draw(by: By, tag: str | None) -> str:
    """What an empty radar / bars chart says."""
    if by == "dimension":
        return (
            "no score dimensions: none of the compared jobs reports a named dimension "
            "or a composite"
        )
    return f"no scores by {tag or 'subset'}: no compared job has a scored attempt"


def radar(state: CompareState, by: By = "subset", *, tag: str | None = None) -> Any:
    """Radar chart of the jobs over subsets (or dimensions): an altair chart."""
    from .._present.compare_charts import radar_chart

    return radar_chart(
        groups(state, by, tag=tag),
        list(state.job_ids),
        title=title(by),
        mark=mark(state),
        empty=nothing_to_draw(by, tag),
    )


def bars(state: CompareState, by: By = "subset", *, tag: str | None = None) -> Any:
    """Grouped bars per subset (or dimension) with bootstrap interval whiskers."""
    from .._present.compare_charts import bars_chart

    return bars_chart(
        groups(state, by, tag=tag),
        list(state.job_ids),
        title=title(by),
        mark=mark(state),
        empty=nothing_to_draw(by, tag),
    )


def curve_frame(state: CompareState) -> pd.DataFrame:
    """Long frame: job, k, metric (pass@k / pass^k), value, tasks, tasks_total."""
    parts = []
    for job_id in state.job_ids:
        c = curve(state.con, job_id, policy=state.policy, threshold=state.threshold)
        long = c.melt(
            id_vars=["k", "tasks", "tasks_total"],
            value_vars=["pass@k", "pass^k"],
            var_name="metric",
            value_name="value",
        )
        long.insert(0, "job", job_id)
        parts.append(long)
    frame: pd.DataFrame = pd.concat(parts, ignore_index=True)
    return frame


def curves(state: CompareState) -> Any:
    """pass@k (solid) and pass^k (dashed) curves of every job on one chart."""
    from .._present.compare_charts import curves_chart

    return curves_chart(curve_frame(state), list(state.job_ids), mark=mark(state))
