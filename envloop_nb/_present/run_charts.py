"""Charts of a training run (pure altair specs): the curve over training, the tasks × steps
matrix.

Frames in (``run.curve()``, ``run.noise_band()``, ``run.tests()``, ``run.matrix_blocks()``:
already small — at most one row per step, or per block of the matrix), an ``altair`` chart
out, styled like :mod:`.charts` (transparent, mid-grey text: light and dark themes).

The curve (:func:`run_curve_chart`): the metric per step on a line with points, its interval
as a shaded band, the *noise band* (where a step would land if nothing changed since the
step before) as a grey bar at each step, steps whose coverage dropped as hollow orange diamonds that the
line does not pass through (a coverage drop is never drawn as a drop in score), and the
adjacent changes that stay significant after adjustment as triangles above the step (up
green, down red). The matrix (:func:`matrix_chart`): one rectangle per block of tasks and
steps (one per cell when the run fits), coloured by the mean pass rate of its known cells,
blocks with no known cell grey — never a cell per attempt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .altair_import import altair
from .charts import _styled
from .theme import GREY, si_axis

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CURVE_HEIGHT", "CURVE_WIDTH", "matrix_chart", "run_curve_chart", "significant_changes"]

CURVE_WIDTH, CURVE_HEIGHT = 560, 220
_BLUE, _GREEN, _RED, _ORANGE = "#4a90c8", "#4c9f70", "#d0584f", "#e08a1e"
#: Most task blocks whose labels are written on the matrix's axis.
_MAX_TASK_LABELS = 60


def _values(frame: pd.DataFrame) -> dict[str, Any]:
    """A frame as inline chart data (JSON values: missing as null): no row limit applies —
    the frames are aggregated already (the matrix's blocks, up to 12,000, travel as
    columns: :func:`_columns`)."""
    import json

    return {"values": json.loads(frame.to_json(orient="records", date_format="iso"))}


def _columns(frame: pd.DataFrame) -> dict[str, Any]:
    """The matrix's blocks as inline chart data in one row of columns (the chart's
    ``flatten`` makes them rows again): ``task_block``, ``step_block``, ``mean`` (missing as
    null) and ``known``, each number as :func:`_values` writes it — a run's 12,000 blocks
    are ~0.2 MB of JSON instead of ~3 MB of records with their labels repeated."""
    import json

    columns: dict[str, list[Any]] = {
        c: [int(v) for v in frame[c]] for c in ("task_block", "step_block")
    }
    for c in ("mean", "known"):
        columns[c] = [v for (v,) in json.loads(frame[[c]].to_json(orient="values"))]
    return {"values": [columns]}


def _labels(frame: pd.DataFrame, key: str, label: str) -> Any:
    """The lookup of each block row's or column's label (one entry per distinct ``key``)."""
    alt = altair()
    rows = frame.drop_duplicates(key)[[key, label]]
    values = [{key: int(k), label: str(v)} for k, v in zip(rows[key], rows[label], strict=True)]
    return alt.LookupData(data=alt.Data(values=values), key=key, fields=[label])


def _is_rate(values: Any) -> bool:
    known = [float(v) for v in values if v is not None and v == v]
    return bool(known) and all(0.0 <= v <= 1.0 for v in known)


def significant_changes(tests: pd.DataFrame, *, alpha: float | None = None) -> pd.DataFrame:
    """The adjacent changes of ``run.tests()`` whose adjusted p-value is below ``alpha``
    (default: the frame's own ``attrs["alpha"]``, else 0.05): ``step_a``, ``step_b``,
    ``diff``, ``low``, ``high``, ``p_adjusted``, ``direction`` (``up`` / ``down``).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"kind": ["adjacent", "adjacent, baseline", "baseline"],
    ...     "step_a": [1, 2, 1], "step_b": [2, 3, 3], "diff": [0.2, -0.01, 0.3],
    ...     "low": [0.1, -0.1, 0.2], "high": [0.3, 0.1, 0.4], "p_adjusted": [0.001, 0.9, 0.001]})
    >>> significant_changes(t)[["step_b", "direction"]].to_dict("list")
    {'step_b': [2], 'direction': ['up']}
    """
    level = float(tests.attrs.get("alpha", 0.05) if alpha is None else alpha)
    if not len(tests):
        return tests.assign(direction=[])
    adjacent = tests["kind"].astype(str).str.contains("adjacent")
    p = tests["p_adjusted"].astype(float)
    out = tests[adjacent & p.notna() & (p < level)]
    keep = ["step_a", "step_b", "diff", "low", "high", "p_adjusted"]
    out = out[keep + (["group"] if "group" in out else [])].copy()
    out["direction"] = ["up" if float(d) > 0 else "down" for d in out["diff"]]
    verdicts = tests.loc[out.index, "verdict"].astype(str) if "verdict" in tests else None
    out["tone"] = (  # better / worse as the verdict says (a lower-is-better metric going down)
        ["better" if " is better " in v else "worse" if " is worse " in v else "changed"
         for v in verdicts]
        if verdicts is not None
        else ["better" if d == "up" else "worse" for d in out["direction"]]
    )  # fmt: skip
    return out.reset_index(drop=True)


def run_curve_chart(
    curve: pd.DataFrame,
    *,
    band: pd.DataFrame | None = None,
    tests: pd.DataFrame | None = None,
    title: str = "score over training",
    width: int = CURVE_WIDTH,
    height: int = CURVE_HEIGHT,
) -> Any:
    """The curve over training (see the module docstring) from ``run.curve()`` (one line per
    ``group`` when it has several: small multiples, each on its own scale), with ``run.noise_band()`` and the significant adjacent
    changes of ``run.tests()`` when given. A frame without the interval's columns (``low``,
    ``high``, ``interval``: the curve's points, ``envloop_nb._runs.curve.points``) draws the
    line, its points and the coverage drops only — no interval band, no noise band, no
    marks (they need the interval).

    Examples
    --------
    >>> import pandas as pd
    >>> c = pd.DataFrame({"step": [1, 2, 3], "group": [None] * 3, "metric": ["score"] * 3,
    ...     "estimate": [0.3, 0.5, 0.6], "low": [0.2, 0.4, 0.5], "high": [0.4, 0.6, 0.7],
    ...     "interval": ["task bootstrap"] * 3, "coverage": [1.0, 0.8, 1.0],
    ...     "coverage_drop": [False, True, False], "note": ["", "coverage dropped", ""]})
    >>> spec = run_curve_chart(c).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['area', 'line', 'point', 'point']
    """
    alt = altair()
    import pandas as pd

    frame = curve.copy()
    frame["group"] = frame["group"].fillna("all") if "group" in frame else "all"
    frame["drop"] = frame["coverage_drop"].fillna(False).astype(bool)
    frame["note"] = frame["note"].fillna("").astype(str) if "note" in frame else ""
    frame = frame[frame["estimate"].notna()].reset_index(drop=True)
    bands = "low" in frame
    if not bands and (band is not None or tests is not None):
        raise ValueError("the noise band and the tests' marks are drawn with the interval")
    rate = _is_rate(
        list(frame["estimate"]) + (list(frame["low"]) + list(frame["high"]) if bands else [])
    )
    fmt = ".1%" if rate else ",.4~g"
    groups = list(dict.fromkeys(frame["group"]))
    several = len(groups) > 1
    whole = all(float(v).is_integer() for v in frame["step"])
    x = alt.X(
        "step:Q",
        title="step",
        scale=alt.Scale(zero=False, nice=False, padding=14),
        axis=alt.Axis(format=",d" if whole else "~g", tickMinStep=1 if whole else alt.Undefined),
    )
    y_axis = alt.Axis(format=".0%") if rate else si_axis()  # a ppl of 300,000 reads 300k
    y = alt.Y("estimate:Q", title=None, axis=y_axis, scale=alt.Scale(zero=False))
    color: Any = alt.value(_BLUE)
    tip = [
        alt.Tooltip("step:Q", title="step"),
        *([alt.Tooltip("group:N")] if several else []),
        alt.Tooltip(
            "estimate:Q", title=str(frame["metric"].iloc[0]) if len(frame) else "", format=fmt
        ),
        *(
            [alt.Tooltip("low:Q", format=fmt), alt.Tooltip("high:Q", format=fmt),
             alt.Tooltip("interval:N")]
            if bands
            else []
        ),
        alt.Tooltip("coverage:Q", format=".1%"),
        alt.Tooltip("note:N"),
    ]  # fmt: skip
    interval = ["low", "high", "interval"] if bands else []
    data = frame[["step", "group", "estimate", *interval, "coverage", "drop", "note"]]
    if several:  # bands and marks per group ride on the facet's one data set
        data = _with_group_marks(data, band, tests)
    base = alt.Chart() if several else alt.Chart(_values(data))  # small multiples: on the facet
    layers: list[Any] = []
    if band is not None and not several and len(band):
        noise = band[band["band_low"].notna()][["step", "band_low", "band_high", "previous"]]
        thick = max(2.0, min(10.0, width / max(len(frame), 1) / 2))
        layers.append(
            alt.Chart(noise.reset_index(drop=True))
            .mark_rule(color=GREY, opacity=0.45, strokeWidth=thick)
            .encode(
                x="step:Q",
                y="band_low:Q",
                y2="band_high:Q",
                tooltip=[
                    alt.Tooltip("step:Q"),
                    alt.Tooltip("previous:Q", title="previous step", format=fmt),
                    alt.Tooltip("band_low:Q", title="noise band from", format=fmt),
                    alt.Tooltip("band_high:Q", title="noise band to", format=fmt),
                ],
            )
        )
    if bands:
        layers.append(
            base.mark_area(opacity=0.18).encode(
                x=x, y=alt.Y("low:Q", axis=y_axis, title=None), y2="high:Q", color=color
            )
        )
    kept = base.transform_filter("!datum.drop")
    layers.append(kept.mark_line().encode(x=x, y=y, color=color))
    layers.append(kept.mark_point(filled=True, size=36).encode(x=x, y=y, color=color, tooltip=tip))
    if bool(frame["drop"].any()):
        layers.append(
            base.transform_filter("datum.drop")
            .mark_point(shape="diamond", filled=False, size=90, strokeWidth=2, color=_ORANGE)
            .encode(x=x, y=y, tooltip=tip)
        )
    if tests is not None and not several:
        marks = significant_changes(tests)
        if len(marks):
            tops = frame.drop_duplicates("step").set_index("step")["high"]
            marks["at"] = [float(tops.get(s, float("nan"))) for s in marks["step_b"]]
            marks = marks[marks["at"].notna()]
            tip_sig = [alt.Tooltip("step_a:Q", title="from step"), alt.Tooltip("step_b:Q", title="to step"),
                       alt.Tooltip("diff:Q", title="change", format="+" + fmt),
                       alt.Tooltip("low:Q", format="+" + fmt), alt.Tooltip("high:Q", format="+" + fmt),
                       alt.Tooltip("p_adjusted:Q", title="adjusted p", format=".2g")]  # fmt: skip
            layers.append(
                alt.Chart(pd.DataFrame(marks).reset_index(drop=True))
                .mark_point(filled=True, size=110, yOffset=-9)
                .encode(
                    x=alt.X("step_b:Q"),
                    y=alt.Y("at:Q"),
                    shape=alt.Shape(
                        "direction:N",
                        scale=alt.Scale(
                            domain=["up", "down"], range=["triangle-up", "triangle-down"]
                        ),
                        legend=None,
                    ),
                    color=alt.Color(
                        "direction:N",
                        scale=alt.Scale(domain=["up", "down"], range=[_GREEN, _RED]),
                        legend=None,
                    ),
                    tooltip=tip_sig,
                )
            )
    if several and "band_low" in data:
        layers.insert(0, base.transform_filter("isValid(datum.band_low)").mark_rule(
            color=GREY, opacity=0.45, strokeWidth=4).encode(
                x=x, y="band_low:Q", y2="band_high:Q",
                tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("group:N"),
                         alt.Tooltip("band_low:Q", title="noise band from", format=fmt),
                         alt.Tooltip("band_high:Q", title="noise band to", format=fmt)]))  # fmt: skip
    if several and "sig" in data:
        layers.append(base.transform_filter("isValid(datum.sig)").mark_point(
            filled=True, size=80, yOffset=-8).encode(
                x=x, y="high:Q",
                shape=alt.Shape("sig:N", scale=alt.Scale(domain=["up", "down"],
                                range=["triangle-up", "triangle-down"]), legend=None),
                color=alt.Color("tone:N", scale=alt.Scale(domain=["better", "worse", "changed"],
                                range=[_GREEN, _RED, GREY]), legend=None),
                tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("group:N"),
                         alt.Tooltip("sig:N", title="significant change"),
                         alt.Tooltip("tone:N", title="for the metric")]))  # fmt: skip
    if several:  # one panel per group, each on its own scale (subsets differ in kind)
        chart = (
            alt.layer(*layers, data=_values(data))
            .properties(width=max(200, (width - 40) // 2), height=max(100, height * 2 // 3))
            .facet(facet=alt.Facet("group:N", title=None), columns=2, title=title)
            .resolve_scale(y="independent")
        )
        return _styled(chart)
    chart = alt.layer(*layers, title=title).properties(width=width, height=height)
    return _styled(chart)


def _with_group_marks(
    data: pd.DataFrame, band: pd.DataFrame | None, tests: pd.DataFrame | None
) -> pd.DataFrame:
    """The curve per group with its noise band (``run.noise_band(by=...)``: ``band_low``,
    ``band_high``) and its significant adjacent changes (``run.tests(by=...)``: ``sig``,
    up / down at the later step) joined on (step, group)."""
    out = data.copy()
    if band is not None and len(band) and "group" in band and band["group"].notna().any():
        bands = band[band["band_low"].notna()][["step", "group", "band_low", "band_high"]]
        out = out.merge(bands, on=["step", "group"], how="left")
    if tests is not None and len(tests) and "group" in tests and tests["group"].notna().any():
        marks = significant_changes(tests)
        if len(marks):
            sig = marks.rename(columns={"step_b": "step", "direction": "sig"})
            sig = sig[["step", "group", "sig", "tone"]]
            out = out.merge(
                sig.drop_duplicates(["step", "group"]), on=["step", "group"], how="left"
            )
    return out


def matrix_chart(
    blocks: pd.DataFrame,
    *,
    title: str = "tasks over training",
    width: int = CURVE_WIDTH,
    cell: int = 9,
    max_height: int = 540,
) -> Any:
    """The tasks × steps matrix from ``run.matrix_blocks()``: one rectangle per block
    (tasks in the matrix's order top-down, steps left to right), coloured by ``mean`` on a
    0–100% scale, blocks with no known cell grey; the tooltip names the block's tasks and
    steps, the mean and the share of cells known. Clicking a block selects it (the point
    selection ``cell`` on ``task_block`` / ``step_block``, read by the panel).

    Examples
    --------
    >>> import pandas as pd
    >>> b = pd.DataFrame({"task_block": [0, 0, 1, 1], "step_block": [0, 1, 0, 1],
    ...     "first_task": ["a", "a", "b", "b"], "last_task": ["a", "a", "b", "b"],
    ...     "tasks": [1] * 4, "first_step": [1, 2, 1, 2], "last_step": [1, 2, 1, 2],
    ...     "steps": [1] * 4, "mean": [1.0, 0.5, None, 0.0], "known": [1.0, 1.0, 0.0, 1.0]})
    >>> spec = matrix_chart(b).to_dict()
    >>> spec["mark"]["type"], spec["params"][0]["name"], spec["transform"][0]["flatten"]
    ('rect', 'cell', ['task_block', 'step_block', 'mean', 'known'])
    >>> spec["datasets"][spec["data"]["name"]][0]["mean"]  # the blocks as columns, one row
    [1.0, 0.5, None, 0.0]
    """
    alt = altair()

    frame = blocks.copy()
    n_rows = int(frame["task_block"].max()) + 1 if len(frame) else 0
    n_cols = int(frame["step_block"].max()) + 1 if len(frame) else 0
    one_per_task = bool((frame["tasks"] == 1).all()) if len(frame) else True
    one_per_step = bool((frame["steps"] == 1).all()) if len(frame) else True
    frame["task_label"] = [
        str(a) if one_per_task else f"{a} … {b} ({n:,})"
        for a, b, n in zip(frame["first_task"], frame["last_task"], frame["tasks"], strict=True)
    ]
    frame["step_label"] = [
        str(a) if one_per_step else f"{a} – {b}"
        for a, b in zip(frame["first_step"], frame["last_step"], strict=True)
    ]
    height = max(60, min(max_height, cell * n_rows))
    labels = n_rows <= _MAX_TASK_LABELS and one_per_task
    order = frame.drop_duplicates("task_block").sort_values("task_block")["task_label"].tolist()
    step_order = (
        frame.drop_duplicates("step_block").sort_values("step_block")["step_label"].tolist()
    )
    cell_pick = alt.selection_point(name="cell", fields=["task_block", "step_block"], on="click")
    chart = (
        alt.Chart(_columns(frame), title=title)
        .transform_flatten(["task_block", "step_block", "mean", "known"])
        .transform_lookup(lookup="task_block", from_=_labels(frame, "task_block", "task_label"))
        .transform_lookup(lookup="step_block", from_=_labels(frame, "step_block", "step_label"))
        .transform_calculate(state="isValid(datum.mean) ? 'known' : 'missing'")
        .mark_rect(stroke=None, invalid="show")
        .encode(
            x=alt.X(
                "step_label:O",
                sort=step_order,
                title="step",
                axis=alt.Axis(labelAngle=0, labelOverlap=True),
            ),
            y=alt.Y(
                "task_label:O",
                sort=order,
                title=f"tasks ({n_rows:,} rows)" if not labels else None,
                axis=alt.Axis(labels=labels, ticks=labels, labelFontSize=9, labelLimit=110),
            ),
            color=alt.condition(
                "datum.state === 'missing'",
                alt.value("#9e9e9e"),
                alt.Color(
                    "mean:Q",
                    title="pass rate",
                    scale=alt.Scale(domain=[0, 1], range=["#d0584f", "#f2e6a7", "#4c9f70"]),
                    legend=alt.Legend(format=".0%", orient="right", gradientLength=80),
                ),
            ),
            opacity=alt.condition(cell_pick, alt.value(1.0), alt.value(0.45)),
            tooltip=[
                alt.Tooltip("task_label:N", title="tasks"),
                alt.Tooltip("step_label:N", title="steps"),
                alt.Tooltip("mean:Q", title="pass rate", format=".0%"),
                alt.Tooltip("known:Q", title="cells known", format=".0%"),
            ],
        )
        .add_params(cell_pick)
        .properties(width=max(240, min(width, 36 * n_cols)), height=height)
    )
    return _styled(chart)
