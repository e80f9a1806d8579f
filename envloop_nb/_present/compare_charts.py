"""Comparison charts: pure functions from a small aggregated frame to an altair chart.

* :func:`radar_chart` — altair has no radar mark, so the polar layout is computed here:
  one spoke per axis (subset or dimension) with its label, concentric grid rings with
  their labels, one closed polygon plus points per job.
* :func:`bars_chart` — grouped bars with interval whiskers.
* :func:`curves_chart` — pass@k (solid) and pass^k (dashed) against k, one colour per job.
* :func:`empty_chart` — what a radar or bars chart is when there is nothing to draw (jobs
  without any score dimension, by dimension): a chart with its title that says why.

Every chart colours jobs with :func:`job_scale`: the same fixed palette keyed by job
order, so a job has one colour across all charts of a comparison. At most five series.
Every chart renders offline (:func:`envloop_nb._present.render.offline_chart`): displayed, it is
altair's ``JupyterChart`` with its bundle inlined, and ``to_html()`` inlines vega too.
Input frames have one row per job and group (a few dozen rows); nothing per attempt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .altair_import import altair
from .display import format_number
from .theme import JOB_PALETTE, si_axis, themed

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["bars_chart", "curves_chart", "empty_chart", "job_scale", "radar_chart", "radar_frames"]

PALETTE = JOB_PALETTE
MAX_SERIES = 5
_GRID = "#9a9a9a"
_LABEL = "#7a7a7a"
#: Interval whiskers: a grey that reads on the bars and on light and dark pages.
_WHISKER = "#8c8c8c"
SIZE = 300
#: Below this many axes a radar is a segment or a line: :func:`radar_chart` draws bars.
MIN_RADAR_AXES = 3


def _check_jobs(jobs: Sequence[str]) -> list[str]:
    jobs = list(jobs)
    if not 1 <= len(jobs) <= MAX_SERIES:
        raise ValueError(f"a comparison chart draws 1 to {MAX_SERIES} jobs, got {len(jobs)}")
    return jobs


def job_scale(jobs: Sequence[str]) -> Any:
    """The colour scale shared by every comparison chart: job order -> fixed palette.

    Examples
    --------
    >>> job_scale(["a", "b"]).to_dict()
    {'domain': ['a', 'b'], 'range': ['#4c78a8', '#f58518']}
    """
    alt = altair()

    jobs = _check_jobs(jobs)
    return alt.Scale(domain=jobs, range=list(PALETTE[: len(jobs)]))


def _title(title: str, mark: str, note: str = "") -> Any:
    alt = altair()

    lines = [line for line in (mark, note) if line]
    if lines:
        return alt.TitleParams(
            title,
            subtitle=lines,
            subtitleColor="#d62728" if mark else "#777777",
            anchor="start",
        )
    return alt.TitleParams(title, anchor="start")


#: What an empty comparison chart says when the caller gives no reason.
NO_DATA = "nothing to draw: no job has a value on any axis"


def empty_chart(title: str = "", mark: str = "", message: str = NO_DATA) -> Any:
    """A chart with no data that says why, in place of a radar or bars with nothing to draw.

    Examples
    --------
    >>> spec = empty_chart("mean by dimension", message="no dimensions").to_dict()
    >>> spec["mark"]["type"], spec["title"]["text"], spec["datasets"][spec["data"]["name"]]
    ('text', 'mean by dimension', [{'text': 'no dimensions'}])
    """
    alt = altair()
    import pandas as pd

    return themed(
        alt.Chart(pd.DataFrame({"text": [message]}))
        .mark_text(fontSize=13, color=_LABEL, fontStyle="italic")
        .encode(text="text:N")
        .properties(width=SIZE, height=80, title=_title(title, mark))
    )


def _fmt(value: float, percent: bool) -> str:
    return f"{value * 100:.1f}%" if percent else format_number(value)


def _has_values(groups: pd.DataFrame, jobs: Sequence[str]) -> bool:
    """Whether some job of ``jobs`` has a value on some group."""
    if groups.empty or "value" not in groups:
        return False
    return bool(groups.loc[groups["job"].isin(list(jobs)), "value"].notna().any())


def radar_frames(groups: pd.DataFrame, jobs: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The polar layout as small frames: ``rings``, ``spokes``, ``labels``, ``ring_labels``,
    ``series`` (closed polygons, the first vertex repeated) and ``points``.

    Axes start at the top and go clockwise. On an axis whose values all lie in [0, 1]
    the radius is the value itself (rings at 25/50/75/100%); an axis with values outside
    [0, 1] (e.g. a dimension in pct or counts) is scaled to its largest absolute value,
    and its label is marked with ``*``.

    Examples
    --------
    >>> import pandas as pd
    >>> g = pd.DataFrame({"job": ["a", "a", "a"], "group": ["x", "y", "z"],
    ...                   "value": [1.0, 0.5, 0.0], "percent": True, "coverage": ""})
    >>> f = radar_frames(g, ["a"])
    >>> [round(v, 6) for v in f["points"][["x", "y"]].iloc[0]]
    [0.0, 1.0]
    >>> len(f["series"]), f["rings"]["ring"].nunique()
    (4, 4)
    """
    import pandas as pd

    jobs = _check_jobs(jobs)
    axes = list(dict.fromkeys(groups["group"].astype(str)))
    n = max(len(axes), 1)
    data = groups[groups["value"].notna()].copy()
    data["group"] = data["group"].astype(str)
    data["value"] = data["value"].astype(float)
    in_unit = data.groupby("group")["value"].apply(lambda s: bool(s.between(0, 1).all()))
    scaled = [a for a in axes if a in in_unit.index and not in_unit[a]]
    absolute = not scaled
    scale = data.groupby("group")["value"].apply(lambda s: s.abs().max() or 1.0)
    factor = data["group"].map(lambda g: scale[g] if g in scaled else 1.0)
    data["r"] = data["value"] / factor
    angle = {a: math.pi / 2 - 2 * math.pi * i / n for i, a in enumerate(axes)}
    data["x"] = [r * math.cos(angle[g]) for r, g in zip(data["r"], data["group"], strict=True)]
    data["y"] = [r * math.sin(angle[g]) for r, g in zip(data["r"], data["group"], strict=True)]
    percent = data["percent"] if "percent" in data else pd.Series(True, index=data.index)
    data["text"] = [_fmt(v, bool(p)) for v, p in zip(data["value"], percent, strict=True)]
    data["order"] = data["group"].map({a: i for i, a in enumerate(axes)})
    data = data[data["job"].isin(jobs)].sort_values(["job", "order"])
    closed = []
    for job in jobs:
        part = data[data["job"] == job]
        if len(part):
            first = part.iloc[[0]].copy()
            first["order"] = n
            closed.append(pd.concat([part, first]))
    series = pd.concat(closed, ignore_index=True) if closed else data.iloc[0:0]
    rings = pd.DataFrame(
        [
            {"ring": r, "order": i, "x": r * math.cos(angle[a]), "y": r * math.sin(angle[a])}
            for r in (0.25, 0.5, 0.75, 1.0)
            for i, a in enumerate([*axes, axes[0]] if axes else [])
        ]
    )
    spokes = pd.DataFrame(
        [
            {"axis": a, "x": 0.0, "y": 0.0, "x2": math.cos(angle[a]), "y2": math.sin(angle[a])}
            for a in axes
        ]
    )
    labels = pd.DataFrame(
        [
            {
                "axis": a + (" *" if a in scaled else ""),
                "x": 1.13 * math.cos(angle[a]),
                "y": 1.13 * math.sin(angle[a]),
                "align": "center"
                if abs(math.cos(angle[a])) < 0.2
                else ("left" if math.cos(angle[a]) > 0 else "right"),
            }
            for a in axes
        ]
    )
    # Ring labels run along the bisector between the first two axes (open space).
    mid = math.pi / 2 - math.pi / n if n > 1 else 0.0
    ring_labels = pd.DataFrame(
        [
            {
                "x": r * math.cos(mid),
                "y": r * math.sin(mid),
                "text": f"{r * 100:.0f}%",
            }
            for r in (0.25, 0.5, 0.75, 1.0)
        ]
    )
    points = data[["job", "group", "value", "text", "x", "y", "coverage"]].reset_index(drop=True)
    return {
        "rings": rings,
        "spokes": spokes,
        "labels": labels,
        "ring_labels": ring_labels,
        "series": series[["job", "group", "order", "x", "y"]].reset_index(drop=True),
        "points": points,
        "absolute": pd.DataFrame({"absolute": [absolute]}),
        "scaled": pd.DataFrame({"axis": scaled}, dtype=object),
    }


def radar_chart(
    groups: pd.DataFrame,
    jobs: Sequence[str],
    *,
    title: str = "",
    mark: str = "",
    empty: str = NO_DATA,
) -> Any:
    """Radar (spider) chart of up to five jobs over the groups of ``groups``.

    ``groups`` has one row per job and group: ``job, group, value`` (and ``percent``,
    ``coverage`` for labels and tooltips, ``low``, ``high`` for intervals), e.g.
    ``Comparison.groups("subset")``. When no job has a value on any group the result is
    :func:`empty_chart` saying ``empty``; with fewer than three groups (a radar would be a
    segment or a line) it is :func:`bars_chart`.

    Examples
    --------
    >>> import pandas as pd
    >>> g = pd.DataFrame({"job": ["a", "a", "a", "b", "b", "b"], "group": list("xyzxyz"),
    ...                   "value": [0.9, 0.5, 0.2, 0.6, 0.7, 0.4], "percent": True,
    ...                   "coverage": "10/10 scored"})
    >>> spec = radar_chart(g, ["a", "b"]).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'rule', 'text', 'text', 'text', 'text', 'line', 'point']
    """
    alt = altair()

    jobs = _check_jobs(jobs)
    if not _has_values(groups, jobs):
        return empty_chart(title, mark, empty)
    if groups["group"].astype(str).nunique() < MIN_RADAR_AXES:  # a segment or a line
        return bars_chart(groups, jobs, title=title, mark=mark, empty=empty)
    f = radar_frames(groups, jobs)
    absolute = bool(f["absolute"]["absolute"].iloc[0])
    # Equal units on both axes: labels need room left and right, little above and below.
    xdom, ydom = [-1.6, 1.6], [-1.2, 1.2]
    x = alt.X("x:Q", scale=alt.Scale(domain=xdom), axis=None)
    y = alt.Y("y:Q", scale=alt.Scale(domain=ydom), axis=None)
    x2 = alt.X("x:Q", scale=alt.Scale(domain=xdom), axis=None)
    rings = (
        alt.Chart(f["rings"])
        .mark_line(color=_GRID, strokeWidth=0.7, opacity=0.6)
        .encode(x=x, y=y, detail="ring:N", order="order:Q")
    )
    spokes = (
        alt.Chart(f["spokes"])
        .mark_rule(color=_GRID, strokeWidth=0.7, opacity=0.6)
        .encode(x=x, y=y, x2="x2:Q", y2="y2:Q")
    )
    label_layers = [
        alt.Chart(f["labels"])
        .transform_filter(alt.datum.align == align)
        .mark_text(align=align, baseline="middle", fontSize=12, fontWeight="bold", color=_LABEL)
        .encode(x=x2, y=y, text="axis:N")
        for align in ("left", "center", "right")
    ]
    ring_labels = (
        alt.Chart(f["ring_labels"])
        .mark_text(align="left", baseline="middle", fontSize=11, color=_LABEL, dx=4)
        .encode(x=x, y=y, text="text:N")
    )
    color = alt.Color(
        "job:N", scale=job_scale(jobs), legend=alt.Legend(title="job", orient="bottom", columns=2)
    )
    series = (
        alt.Chart(f["series"])
        .mark_line(strokeWidth=2.2, opacity=0.9)
        .encode(x=x, y=y, color=color, detail="job:N", order="order:Q")
    )
    points = (
        alt.Chart(f["points"])
        .mark_point(filled=True, size=45, opacity=1)
        .encode(
            x=x,
            y=y,
            color=alt.Color("job:N", scale=job_scale(jobs), legend=None),
            tooltip=[
                alt.Tooltip("job:N"),
                alt.Tooltip("group:N", title="axis"),
                alt.Tooltip("text:N", title="value"),
                alt.Tooltip("coverage:N"),
            ],
        )
    )
    scaled = list(f["scaled"]["axis"])
    note = "" if absolute else f" (* {', '.join(scaled)}: scaled to the best value)"
    return themed(
        alt.layer(rings, spokes, *label_layers, ring_labels, series, points).properties(
            width=round(SIZE * 1.6 / 1.2), height=SIZE, title=_title(title + note, mark)
        )
    )


def bars_chart(
    groups: pd.DataFrame,
    jobs: Sequence[str],
    *,
    title: str = "",
    mark: str = "",
    empty: str = NO_DATA,
) -> Any:
    """Grouped bars (one bar per job within each group) with interval whiskers.

    ``groups`` needs ``job, group, value`` (``low``, ``high`` for the whiskers,
    ``percent``, ``coverage`` optional). When some groups are not in [0, 1] each group gets its own y scale.
    When no job has a value on any group the result is :func:`empty_chart`.

    Examples
    --------
    >>> import pandas as pd
    >>> g = pd.DataFrame({"job": ["a", "b"], "group": ["x", "x"], "value": [0.5, 0.7],
    ...                   "low": [0.4, 0.6], "high": [0.6, 0.8], "percent": True,
    ...                   "coverage": "10/10 scored"})
    >>> spec = bars_chart(g, ["a", "b"]).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]], spec["layer"][0]["encoding"]["xOffset"]["field"]
    (['bar', 'rule'], 'job')
    """
    alt = altair()

    jobs = _check_jobs(jobs)
    if not _has_values(groups, jobs):
        return empty_chart(title, mark, empty)
    data = groups[groups["job"].isin(jobs)].copy()
    data["group"] = data["group"].astype(str)
    intervals = {"low", "high"} <= set(data.columns) and bool(data["low"].notna().any())
    for c in ("low", "high"):
        if c not in data:
            data[c] = float("nan")
    for c in ("value", "low", "high"):
        data[c] = data[c].astype(float)
    percent = bool(data["percent"].all()) if "percent" in data and len(data) else True
    if "coverage" not in data:
        data["coverage"] = ""
    if "percent" not in data:
        data["percent"] = True
    data["text"] = [
        "-" if v != v else _fmt(v, bool(p))
        for v, p in zip(data["value"], data["percent"], strict=True)
    ]
    data = data[["job", "group", "value", "low", "high", "coverage", "text"]]
    order = list(dict.fromkeys(data["group"]))
    axis = (
        alt.Axis(format=".0%", title="score", grid=True)
        if percent
        else si_axis(title="value", grid=True)
    )
    color = alt.Color(
        "job:N", scale=job_scale(jobs), legend=alt.Legend(title="job", orient="bottom")
    )
    tooltip = [
        alt.Tooltip("job:N"),
        alt.Tooltip("group:N", title="group"),
        alt.Tooltip("text:N", title="value"),
        alt.Tooltip("low:Q", format=".3f", title="CI low"),
        alt.Tooltip("high:Q", format=".3f", title="CI high"),
        alt.Tooltip("coverage:N"),
    ]
    x = alt.X(
        "group:N", sort=order, title=None, axis=alt.Axis(labelAngle=0 if len(order) <= 6 else -30)
    )
    y = alt.Y(
        "value:Q", axis=axis, scale=alt.Scale(domain=[0, 1]) if percent else alt.Scale(zero=True)
    )
    base = alt.Chart(data)
    bars = base.mark_bar(opacity=0.9).encode(
        x=x, xOffset=alt.XOffset("job:N", sort=jobs), y=y, color=color, tooltip=tooltip
    )
    whiskers = base.mark_rule(color=_WHISKER, strokeWidth=1.6).encode(
        x=x, xOffset=alt.XOffset("job:N", sort=jobs), y="low:Q", y2="high:Q", tooltip=tooltip
    )
    step = max(14, min(28, 120 // len(jobs)))
    if percent:
        return themed(
            alt.layer(bars, whiskers).properties(
                width=alt.Step(step),
                height=240,
                title=_title(
                    title, mark, "whiskers: 95% interval, bootstrap over tasks" if intervals else ""
                ),
            )
        )
    facet_x = alt.X("job:N", sort=jobs, title=None, axis=alt.Axis(labels=False, ticks=False))
    bars_f = base.mark_bar(opacity=0.9).encode(x=facet_x, y=y, color=color, tooltip=tooltip)
    whiskers_f = base.mark_rule(color=_WHISKER, strokeWidth=1.6).encode(
        x=facet_x, y="low:Q", y2="high:Q", tooltip=tooltip
    )
    return themed(
        alt.layer(bars_f, whiskers_f, data=data)
        .properties(width=alt.Step(step), height=200)
        .facet(column=alt.Column("group:N", sort=order, title=None))
        .resolve_scale(y="independent")
        .properties(title=_title(title + " (own scale per dimension)", mark))
    )


def curves_chart(curves: pd.DataFrame, jobs: Sequence[str], *, mark: str = "") -> Any:
    """pass@k (solid) and pass^k (dashed) against k for each job, on one chart.

    ``curves`` has ``job, k, metric, value, tasks, tasks_total`` (long form).

    Examples
    --------
    >>> import pandas as pd
    >>> c = pd.DataFrame({"job": ["a"] * 4, "k": [1, 2, 1, 2],
    ...                   "metric": ["pass@k", "pass@k", "pass^k", "pass^k"],
    ...                   "value": [0.5, 0.7, 0.5, 0.3], "tasks": 10, "tasks_total": 10})
    >>> spec = curves_chart(c, ["a"]).to_dict()
    >>> spec["mark"]["type"], spec["encoding"]["strokeDash"]["field"]
    ('line', 'metric')
    """
    alt = altair()

    jobs = _check_jobs(jobs)
    data = curves[curves["job"].isin(jobs)][["job", "k", "metric", "value", "tasks", "tasks_total"]]
    kmax = int(data["k"].max()) if len(data) else 1
    ticks = sorted({int(k) for k in data["k"]}) or [1]  # the curves' ks: never 1..a claimed k
    return themed(
        alt.Chart(data)
        .mark_line(point=True, strokeWidth=2)
        .encode(
            x=alt.X(
                "k:Q",
                title="k",
                scale=alt.Scale(domain=[1, max(kmax, 2)]),
                axis=alt.Axis(tickMinStep=1, format="d", values=ticks),
            ),
            y=alt.Y(
                "value:Q", title=None, axis=alt.Axis(format=".0%"), scale=alt.Scale(domain=[0, 1])
            ),
            color=alt.Color(
                "job:N",
                scale=job_scale(jobs),
                legend=alt.Legend(title="job", orient="bottom", symbolType="stroke"),
            ),
            strokeDash=alt.StrokeDash(
                "metric:N",
                scale=alt.Scale(domain=["pass@k", "pass^k"], range=[[1, 0], [5, 3]]),
                legend=None,  # the title says it: solid pass@k, dashed pass^k
            ),
            detail="metric:N",
            tooltip=[
                alt.Tooltip("job:N"),
                alt.Tooltip("metric:N"),
                alt.Tooltip("k:Q"),
                alt.Tooltip("value:Q", format=".1%"),
                alt.Tooltip("tasks:Q", title="tasks at k"),
                alt.Tooltip("tasks_total:Q", title="tasks"),
            ],
        )
        .properties(width=300, height=220, title=_title("pass@k (solid) and pass^k (dashed)", mark))
    )
