"""The toolkit's chart theme, and altair imported at a third of its cost.

Every chart of the toolkit goes through :func:`themed`: readable type (axis labels
:data:`FONT_SIZE` px, titles :data:`TITLE_SIZE` px), mid-grey text and grid that read on
JupyterLab's light and dark themes, a transparent background, and the offline renderer
(:func:`envloop_nb._present.render.offline_chart`). Axes of counts, tokens and seconds
use :func:`si_axis`: ``40k``, ``1.2M`` — never ``4e+4`` — and plain numbers below 1,000
(``0.5``, ``250``; never ``500m``). Jobs of a comparison keep one colour each across
its charts (:data:`JOB_PALETTE`, keyed by job order: ``compare_charts.job_scale``).
"""

from __future__ import annotations

from typing import Any

from .altair_import import altair

__all__ = [
    "FONT_SIZE",
    "GREY",
    "JOB_PALETTE",
    "SI_LABEL",
    "TITLE_SIZE",
    "si_axis",
    "themed",
]

#: Axis labels, legend entries and tooltips (px).
FONT_SIZE = 12
#: Chart titles (px); axis titles are :data:`FONT_SIZE`.
TITLE_SIZE = 13
#: Text, grid and domain: a grey that reads on light and dark backgrounds.
GREY = "#8c8c8c"
#: One colour per job, by the job's place in a comparison (the baseline first).
JOB_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2")

#: A Vega expression for axis labels: SI from 1,000 on (``40k``), else up to four
#: significant digits with separators (``0.25``, ``250``).
SI_LABEL = "abs(datum.value) >= 1000 ? format(datum.value, '.3~s') : format(datum.value, ',.4~g')"


def si_axis(**kwargs: Any) -> Any:
    """An ``alt.Axis`` whose labels read ``40k`` / ``1.2M`` / ``250`` / ``0.5`` (:data:`SI_LABEL`).

    Examples
    --------
    >>> si_axis(title="tokens").to_dict()["labelExpr"] == SI_LABEL
    True
    """
    return altair().Axis(labelExpr=SI_LABEL, **kwargs)


def themed(chart: Any) -> Any:
    """``chart`` (a top-level altair chart) in the toolkit's theme, rendering offline.

    Examples
    --------
    >>> import pandas as pd
    >>> alt = altair()
    >>> spec = themed(alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x")).to_dict()
    >>> spec["config"]["axis"]["labelFontSize"], spec["config"]["title"]["fontSize"]
    (12, 13)
    """
    from .render import offline_chart

    alt = altair()
    # One configure call, not one per part: each call copies the chart, and a layered
    # chart's copy deep-copies every layer with its inline data. The config (and its keys'
    # order) is the one ``configure(...).configure_axis(...)…`` builds.
    config = alt.Config(
        background="transparent",
        font="sans-serif",
        axis=alt.AxisConfig(
            labelColor=GREY,
            titleColor=GREY,
            gridColor=GREY,
            gridOpacity=0.25,
            domainColor=GREY,
            tickColor=GREY,
            labelFontSize=FONT_SIZE,
            titleFontSize=FONT_SIZE,
            titleFontWeight="normal",
            labelLimit=180,
        ),
        header=alt.HeaderConfig(labelColor=GREY, labelFontSize=FONT_SIZE, titleColor=GREY),
        title=alt.TitleConfig(
            color=GREY, fontSize=TITLE_SIZE, subtitleFontSize=FONT_SIZE, anchor="start"
        ),
        legend=alt.LegendConfig(
            labelColor=GREY, titleColor=GREY, labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE
        ),
        text=alt.MarkConfig(fontSize=FONT_SIZE),
        view=alt.ViewConfig(stroke=None),
    )
    styled = chart.copy(deep=False)
    styled.config = config
    return offline_chart(styled)
