"""Comparison charts as Vega-Lite specs: fields, marks, series, one colour per job everywhere."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._present.compare_charts import (
    PALETTE,
    bars_chart,
    curves_chart,
    job_scale,
    radar_chart,
    radar_frames,
)
from tests.compare_helpers import envloop_job, write_job
from tests.offline_helpers import assert_renders_offline, cdn_urls


def groups_frame(jobs: list[str], axes: list[str]) -> pd.DataFrame:
    rows = []
    for i, j in enumerate(jobs):
        for k, a in enumerate(axes):
            v = ((i + 1) * (k + 2)) % 10 / 10
            rows.append(
                {
                    "job": j,
                    "group": a,
                    "value": v,
                    "low": max(v - 0.1, 0),
                    "high": min(v + 0.1, 1),
                    "percent": True,
                    "coverage": "10/10 scored",
                    "higher_is_better": True,
                }
            )
    return pd.DataFrame(rows)


def layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return spec.get("layer", [spec])


def color_scales(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for layer in layers(spec.get("spec", spec)):
        enc = layer.get("encoding", {})
        if "color" in enc and "scale" in enc["color"]:
            out.append(enc["color"]["scale"])
    return out


def test_radar_geometry() -> None:
    g = groups_frame(["a", "b"], ["w", "x", "y", "z"])
    f = radar_frames(g, ["a", "b"])
    series = f["series"]
    for job in ("a", "b"):
        s = series[series["job"] == job]
        assert len(s) == 5  # closed: first vertex repeated
        assert s.iloc[0][["x", "y"]].tolist() == s.iloc[-1][["x", "y"]].tolist()
    pts = f["points"].merge(g, on=["job", "group", "value"])
    radius = (pts["x"] ** 2 + pts["y"] ** 2) ** 0.5
    assert radius.round(9).tolist() == pts["value"].round(9).tolist()
    first = f["points"][f["points"]["group"] == "w"]
    assert (first["x"].abs() < 1e-12).all() and (first["y"] >= 0).all()  # axis 1 points up
    assert sorted(f["rings"]["ring"].unique()) == [0.25, 0.5, 0.75, 1.0]
    assert len(f["spokes"]) == 4 and f["labels"]["axis"].tolist() == ["w", "x", "y", "z"]
    assert f["ring_labels"]["text"].tolist() == ["25%", "50%", "75%", "100%"]


def test_radar_relative_scale_when_values_leave_unit_range() -> None:
    g = pd.DataFrame(
        {
            "job": ["a", "a", "b", "b"],
            "group": ["x", "y", "x", "y"],
            "value": [10.0, 2.0, 5.0, 4.0],
            "percent": False,
            "coverage": "",
        }
    )
    f = radar_frames(g, ["a", "b"])
    r = (f["points"]["x"] ** 2 + f["points"]["y"] ** 2) ** 0.5
    assert r.round(9).tolist() == [1.0, 0.5, 0.5, 1.0]
    assert f["labels"]["axis"].tolist() == ["x *", "y *"]
    three = pd.concat([g, g.assign(group="z")], ignore_index=True)  # a radar needs 3 axes
    spec = radar_chart(three, ["a", "b"], title="t").to_dict()
    assert spec["title"]["text"] == "t (* x, y, z: scaled to the best value)"
    # an axis already in [0, 1] keeps its absolute radius next to a scaled one
    g.loc[g["group"] == "y", "value"] = [0.2, 0.4]
    f = radar_frames(g, ["a", "b"])
    r = (f["points"]["x"] ** 2 + f["points"]["y"] ** 2) ** 0.5
    assert r.round(9).tolist() == [1.0, 0.2, 0.5, 0.4]


def test_radar_spec_marks_fields_and_legend() -> None:
    jobs = ["a", "b", "c"]
    spec = radar_chart(groups_frame(jobs, ["p", "q", "r", "s", "t"]), jobs, title="x").to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks.count("line") == 2 and "rule" in marks and "point" in marks
    series = spec["layer"][marks.index("line", 1)]
    assert series["encoding"]["color"]["field"] == "job"
    assert series["encoding"]["order"]["field"] == "order"
    assert series["encoding"]["x"]["axis"] is None
    assert "legend" in series["encoding"]["color"]
    points = spec["layer"][-1]
    assert {t["field"] for t in points["encoding"]["tooltip"]} >= {"job", "group", "coverage"}


def test_at_most_five_series() -> None:
    jobs = [f"j{i}" for i in range(6)]
    g = groups_frame(jobs, ["x", "y", "z"])
    for make in (radar_chart, bars_chart):
        with pytest.raises(ValueError, match="1 to 5 jobs"):
            make(g, jobs)
    five = jobs[:5]
    spec = bars_chart(g, five).to_dict()
    datasets = spec["datasets"]
    (rows,) = datasets.values()
    assert len({r["job"] for r in rows}) <= 5
    assert job_scale(five).to_dict()["range"] == list(PALETTE)


def test_bars_spec() -> None:
    jobs = ["a", "b"]
    spec = bars_chart(groups_frame(jobs, ["x", "y"]), jobs, title="t").to_dict()
    bar, rule = spec["layer"]
    assert bar["mark"]["type"] == "bar" and rule["mark"]["type"] == "rule"
    assert bar["encoding"]["x"]["field"] == "group"
    assert bar["encoding"]["xOffset"]["field"] == "job"
    assert bar["encoding"]["y"]["field"] == "value"
    assert rule["encoding"]["y"]["field"] == "low" and rule["encoding"]["y2"]["field"] == "high"
    assert bar["encoding"]["y"]["axis"]["format"] == ".0%"
    assert "interval" in " ".join(spec["title"]["subtitle"])


def test_bars_mixed_scales_facet_per_group() -> None:
    g = pd.DataFrame(
        {
            "job": ["a", "b", "a", "b"],
            "group": ["acc", "acc", "latency", "latency"],
            "value": [0.5, 0.6, 3.0, 2.0],
            "low": [0.4, 0.5, 2.5, 1.5],
            "high": [0.6, 0.7, 3.5, 2.5],
            "percent": [True, True, False, False],
            "coverage": "",
        }
    )
    spec = bars_chart(g, ["a", "b"]).to_dict()
    assert spec["facet"]["column"]["field"] == "group"
    assert spec["resolve"]["scale"]["y"] == "independent"


def test_curves_spec() -> None:
    c = pd.DataFrame(
        {
            "job": ["a"] * 4 + ["b"] * 4,
            "k": [1, 2, 1, 2] * 2,
            "metric": ["pass@k", "pass@k", "pass^k", "pass^k"] * 2,
            "value": [0.5, 0.7, 0.5, 0.3, 0.4, 0.6, 0.4, 0.2],
            "tasks": 10,
            "tasks_total": 10,
        }
    )
    spec = curves_chart(c, ["a", "b"]).to_dict()
    enc = spec["encoding"]
    assert spec["mark"]["type"] == "line" and spec["mark"]["point"] is True
    assert enc["x"]["field"] == "k" and enc["y"]["field"] == "value"
    assert enc["color"]["field"] == "job" and enc["strokeDash"]["field"] == "metric"


def test_comparison_charts_share_one_colour_per_job(ws: enb.Workspace, tmp_path: Path) -> None:
    tags = {t: {"subset": s} for t, s in zip("abcdef", "xxyyzz", strict=True)}
    docs = [
        envloop_job(j, {t: [float(i % 2), 1.0] for i, t in enumerate("abcdef")}, tags=tags)
        for j in ("j1", "j2", "j3")
    ]
    jobs = [ws.load(write_job(tmp_path, d)) for d in docs]
    cmp = ws.compare(jobs, baseline="j2")
    expected = {"domain": ["j1", "j2", "j3"], "range": list(PALETTE[:3])}
    for chart in (cmp.radar(), cmp.bars(), cmp.curves()):
        scales = color_scales(chart.to_dict())
        assert scales and all(s == expected for s in scales)
    # the baseline does not move colours
    other = cmp.with_baseline("j3")
    assert color_scales(other.radar().to_dict())[0] == expected
    # each chart's data is small and aggregated
    (rows,) = cmp.bars().to_dict()["datasets"].values()
    assert len(rows) == 9  # 3 jobs x 3 subsets


def test_incomparable_charts_are_marked(ws: enb.Workspace, tmp_path: Path) -> None:
    a = ws.load(write_job(tmp_path, envloop_job("a", {"t": [1.0], "u": [0.0]})))
    b = ws.load(write_job(tmp_path, envloop_job("b", {"t": [1.0], "u": [0.0]}, revision="x")))
    cmp = ws.compare([a, b])
    for chart in (cmp.radar(), cmp.bars(), cmp.curves()):
        subtitle = chart.to_dict()["title"]["subtitle"]
        assert subtitle[0].startswith("⚠ not comparable")


def test_charts_render_to_svg() -> None:
    vlc = pytest.importorskip("vl_convert")
    jobs = ["a", "b", "c"]
    g = groups_frame(jobs, ["p", "q", "r", "s", "t"])
    for chart in (radar_chart(g, jobs), bars_chart(g, jobs)):
        svg = vlc.vegalite_to_svg(chart.to_dict())
        assert svg.startswith("<svg") and math.isfinite(len(svg))


def dimension_jobs(ws: enb.Workspace, tmp_path: Path) -> enb.Comparison:
    """Two jobs with a pct dimension (accuracy) and a lower-is-better count (latency)."""
    docs = []
    for i, jid in enumerate(["p", "q"]):
        rewards = {t: [float((j + i) % 2)] for j, t in enumerate(["t1", "t2", "t3", "t4"])}
        dims = {
            t: {"accuracy": 0.2 * (j + i), "latency": 3.0 + j + i} for j, t in enumerate(rewards)
        }
        tags = {t: {"subset": "a" if j % 2 else "b"} for j, t in enumerate(rewards)}
        docs.append(
            envloop_job(
                jid, rewards, dimensions=dims, tags=tags, higher_is_better={"latency": False}
            )
        )
    jobs = [ws.load(write_job(tmp_path, d)) for d in docs]
    cmp = ws.compare(jobs)
    assert isinstance(cmp, enb.Comparison)
    return cmp


@pytest.mark.usefixtures("default_renderer")
def test_every_comparison_chart_renders_offline(ws: enb.Workspace, tmp_path: Path) -> None:
    import altair as alt

    cmp = dimension_jobs(ws, tmp_path)
    charts = {
        "radar": cmp.radar(),
        "radar by dimension": cmp.radar("dimension"),
        "bars": cmp.bars(),
        "bars by dimension (own scales)": cmp.bars("dimension"),
        "curves": cmp.curves(),
    }
    assert "facet" in charts["bars by dimension (own scales)"].to_dict()  # both bars layouts
    for name, chart in charts.items():
        assert isinstance(chart, alt.TopLevelMixin), name
        assert_renders_offline(chart)
    # a chart derived from ours stays offline
    assert_renders_offline(charts["radar"].properties(title="retitled"))
    # the check itself sees the CDN in a plain altair chart under the default renderer
    plain = alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x")
    assert cdn_urls(plain)


@pytest.mark.usefixtures("default_renderer")
def test_radar_without_dimensions_is_an_empty_chart_that_says_so(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    """By dimension on jobs without dimensions: no TypeError, a chart with a message."""
    a = ws.load(write_job(tmp_path, envloop_job("a", {"t": [1.0], "u": [0.0]})))
    b = ws.load(write_job(tmp_path, envloop_job("b", {"t": [0.0], "u": [0.0]})))
    cmp = ws.compare([a, b])
    assert cmp.groups("dimension").empty
    for chart in (cmp.radar(by="dimension"), cmp.bars(by="dimension")):
        spec = chart.to_dict()
        assert spec["mark"]["type"] == "text"
        assert spec["title"]["text"] == "mean by dimension"
        (row,) = spec["datasets"][spec["data"]["name"]]
        assert row["text"].startswith("no score dimensions: none of the compared jobs")
        assert_renders_offline(chart)
    # the pure builders too, on an empty or all-missing frame
    empty = groups_frame(["a"], ["x"]).iloc[0:0]
    assert radar_chart(empty, ["a"]).to_dict()["mark"]["type"] == "text"
    missing = groups_frame(["a"], ["x", "y"]).assign(value=float("nan"))
    assert bars_chart(missing, ["a"], empty="nothing").to_dict()["datasets"] != {}
    assert radar_chart(missing, ["a"], empty="nothing").to_dict()["mark"]["type"] == "text"


@pytest.mark.usefixtures("default_renderer")
def test_saved_charts_are_offline_too(tmp_path: Path) -> None:
    """chart.save("x.html") inlines vega; other formats save without a warning."""
    g = groups_frame(["a", "b"], ["x", "y", "z"])
    chart = radar_chart(g, ["a", "b"])
    chart.save(tmp_path / "radar.html")
    assert "cdn.jsdelivr.net" not in (tmp_path / "radar.html").read_text(encoding="utf-8")
    for fmt in ("json", "svg", "png"):  # filterwarnings=error: no "inline ignored" warning
        chart.save(tmp_path / f"radar.{fmt}")
        assert (tmp_path / f"radar.{fmt}").stat().st_size > 0
    chart.save(str(tmp_path / "linked.html"), inline=False)  # asked for: the CDN link
    assert "cdn.jsdelivr.net" in (tmp_path / "linked.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("axes", [["only"], ["x", "y"]])
def test_radar_below_three_axes_is_bars(axes: list[str]) -> None:
    """One benchmark or subset made a radar a vertical line (issue 37): bars instead."""
    g = groups_frame(["a"], axes)
    spec = radar_chart(g, ["a"], title="score by subset").to_dict()
    marks = [layer["mark"]["type"] for layer in layers(spec)]
    assert marks == ["bar", "rule"]
    assert spec["title"]["text"] == "score by subset"


def test_bars_without_intervals_claim_none() -> None:
    g = groups_frame(["a"], ["x"]).drop(columns=["low", "high"])
    spec = bars_chart(g, ["a"], title="t").to_dict()
    assert "subtitle" not in spec["title"]


def test_comparison_charts_use_the_theme() -> None:
    """Readable type (12 px labels, 13 px titles) and SI numbers on a non-rate axis."""
    jobs = ["a", "b"]
    g = groups_frame(jobs, ["x", "y", "z"])
    for spec in (
        radar_chart(g, jobs, title="t").to_dict(),
        bars_chart(g, jobs, title="t").to_dict(),
    ):
        assert spec["config"]["axis"]["labelFontSize"] >= 12
        assert spec["config"]["title"]["fontSize"] >= 12
        assert spec["config"]["legend"]["labelFontSize"] >= 12
    counts = g.assign(value=g["value"] * 40_000, percent=False)
    spec = bars_chart(counts, jobs, title="t").to_dict()
    axis = spec["spec"]["layer"][0]["encoding"]["y"]["axis"]
    assert "'.3~s'" in axis["labelExpr"] and "format" not in axis
