"""Behaviour charts (pure altair specs): survival, pass rate by steps, tools with and without.

Small frames in (the results of :mod:`envloop_nb._behaviour`), an ``altair`` chart out,
styled like :mod:`.charts` (transparent, mid-grey text: light and dark themes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .altair_import import altair
from .charts import HEIGHT, WIDTH, _styled

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["pass_by_steps_chart", "survival_chart", "tool_pass_chart"]

_BLUE, _RED, _GREY = "#4a90c8", "#d0584f", "#8c8c8c"


def survival_chart(
    frame: pd.DataFrame,
    *,
    title: str = "attempts with no error up to step t",
    colors: Mapping[str, str] | None = None,
) -> Any:
    """Step lines of ``share`` over ``step`` (a ``job`` column: one line per job, coloured
    by ``colors``).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"step": [0, 1, 2], "no_error": [4, 3, 3], "share": [1, .75, .75]})
    >>> spec = survival_chart(f).to_dict()
    >>> spec["mark"]["type"], spec["mark"]["interpolate"]
    ('line', 'step-after')
    """
    alt = altair()

    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("share:Q", format=".1%"),
               alt.Tooltip("no_error:Q", title="attempts without error", format=",")]  # fmt: skip
    encoding: dict[str, Any] = {
        "x": alt.X("step:Q", title="step t", axis=alt.Axis(format="d", tickMinStep=1)),
        "y": alt.Y("share:Q", title=None, scale=alt.Scale(domain=[0, 1]),
                   axis=alt.Axis(format=".0%")),
    }  # fmt: skip
    mark: dict[str, Any] = {"interpolate": "step-after", "color": _BLUE}
    if "job" in frame.columns:
        order = list(colors) if colors else sorted(set(frame["job"]))
        scale = alt.Scale(domain=order, range=[colors[j] for j in order]) if colors else alt.Scale()
        encoding["color"] = alt.Color("job:N", scale=scale,
                                      legend=alt.Legend(orient="bottom", title=None))  # fmt: skip
        tooltip.insert(0, alt.Tooltip("job:N"))
        mark.pop("color")
    chart = (
        alt.Chart(frame, title=title, width=WIDTH, height=HEIGHT)
        .mark_line(**mark)
        .encode(**encoding, tooltip=tooltip)
    )
    return _styled(chart)


def pass_by_steps_chart(frame: pd.DataFrame, *, title: str = "pass rate by number of steps") -> Any:
    """Points of the pass rate per length bin with their interval as a rule.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"low": [2, 3], "high": [2, 3], "attempts": [2, 2], "scored": [2, 1],
    ...     "passed": [1, 1], "pass_rate": [.5, 1.], "pass_rate_low": [0., 1.],
    ...     "pass_rate_high": [1., 1.]})
    >>> [layer["mark"]["type"] for layer in pass_by_steps_chart(f).to_dict()["layer"]]
    ['rule', 'point']
    """
    alt = altair()

    data = frame.assign(
        bin=[str(lo) if lo == hi else f"{lo}–{hi}" for lo, hi in zip(frame["low"], frame["high"],
                                                                   strict=True)]
    )  # fmt: skip
    order = list(data["bin"])
    x = alt.X("bin:N", sort=order, title="steps per attempt",
              axis=alt.Axis(labelAngle=-45, labelOverlap=True))  # fmt: skip
    y = alt.Y(
        "pass_rate:Q", title=None, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format=".0%")
    )
    base = alt.Chart(data, title=title, width=WIDTH, height=HEIGHT)
    tooltip = [alt.Tooltip("bin:N", title="steps"), alt.Tooltip("pass_rate:Q", format=".1%"),
               alt.Tooltip("passed:Q"), alt.Tooltip("scored:Q"),
               alt.Tooltip("attempts:Q")]  # fmt: skip
    rules = base.mark_rule(color=_GREY).encode(x=x, y="pass_rate_low:Q", y2="pass_rate_high:Q")
    points = base.mark_point(filled=True, color=_BLUE, size=50).encode(x=x, y=y, tooltip=tooltip)
    return _styled(alt.layer(rules, points))


def tool_pass_chart(
    tools: pd.DataFrame, *, title: str = "pass rate with / without the tool", limit: int = 12
) -> Any:
    """Per tool (the ``limit`` most called), the pass rate of attempts that used it and
    of those that did not, each with its interval.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame([{"tool": "ls", "calls": 3, "pass_with": .5, "pass_with_low": .1,
    ...     "pass_with_high": .9, "pass_without": 1., "pass_without_low": 1.,
    ...     "pass_without_high": 1.}])
    >>> spec = tool_pass_chart(t).to_dict()
    >>> len(spec["datasets"][spec["layer"][0]["data"]["name"]] if "data" in spec["layer"][0]
    ...     else spec["datasets"][spec["data"]["name"]])
    2
    """
    alt = altair()
    import pandas as pd

    top = tools.head(limit)
    rows = []
    for r in top.to_dict("records"):
        for side, label in (("with", "used it"), ("without", "did not")):
            rows.append({"tool": str(r["tool"]), "attempts": label,
                         "rate": r[f"pass_{side}"], "low": r[f"pass_{side}_low"],
                         "high": r[f"pass_{side}_high"]})  # fmt: skip
    long = pd.DataFrame(rows, columns=["tool", "attempts", "rate", "low", "high"])
    order = [str(t) for t in top["tool"]]
    color = alt.Color("attempts:N", scale=alt.Scale(domain=["used it", "did not"],
                      range=[_BLUE, _RED]), legend=alt.Legend(orient="bottom", title=None))  # fmt: skip
    y = alt.Y("tool:N", sort=order, title=None, axis=alt.Axis(labelLimit=140))
    offset = alt.YOffset("attempts:N", sort=["used it", "did not"])
    base = alt.Chart(long, title=title, width=WIDTH, height=alt.Step(11))
    rules = base.mark_rule().encode(y=y, yOffset=offset, x=alt.X("low:Q"), x2="high:Q", color=color)
    points = base.mark_point(filled=True, size=40).encode(
        y=y, yOffset=offset, color=color,
        x=alt.X("rate:Q", title="pass rate", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format=".0%")),
        tooltip=["tool:N", "attempts:N", alt.Tooltip("rate:Q", format=".1%"),
                 alt.Tooltip("low:Q", format=".1%"), alt.Tooltip("high:Q", format=".1%")],
    )  # fmt: skip
    return _styled(alt.layer(rules, points))
