"""Chart specs: SQL-aggregated frames stay small; Vega-Lite specs carry the right marks/fields."""

from __future__ import annotations

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._present import charts as _charts

from .conftest import SAMPLE_DATA, THREE_TASKS
from .offline_helpers import assert_renders_offline


def _data(spec: dict) -> list[dict]:
    return spec["datasets"][spec["data"]["name"]]


@pytest.fixture
def job(ws: enb.Workspace) -> enb.Job:
    return ws.load(THREE_TASKS)


def test_reward_distribution_is_discrete_and_skips_missing(job: enb.Job) -> None:
    frame = _charts.distribution_frame(job.con, job.id, "reward")
    assert frame.to_dict("list") == {"low": [0.0, 1.0], "high": [0.0, 1.0], "count": [2, 3]}
    spec = _charts.distribution_chart(frame, title="reward", x_title="reward").to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x"]["field"] == "low" and spec["encoding"]["x"]["type"] == "ordinal"
    assert spec["encoding"]["y"]["field"] == "count"
    assert "5 attempts" in spec["title"]  # the running attempt has no reward: not a zero


def test_binned_distribution_counts_every_value(job: enb.Job) -> None:
    frame = _charts.distribution_frame(job.con, job.id, "duration", bins=3)
    assert int(frame["count"].sum()) == 5
    assert frame["low"].iloc[0] == 84.0 and frame["high"].iloc[-1] == pytest.approx(531.0)
    spec = _charts.distribution_chart(frame, title="d", x_title="s").to_dict()
    assert spec["encoding"]["x2"]["field"] == "high"
    assert len(_data(spec)) == 3


def test_tokens_sum_input_and_output(job: enb.Job) -> None:
    frame = _charts.distribution_frame(job.con, job.id, "tokens", bins=100)
    assert sorted(frame["low"]) == [1020.0, 1510.0, 3400.0, 5890.0, 6280.0]


def test_unknown_measure_and_bad_bins(job: enb.Job) -> None:
    with pytest.raises(ValueError, match="measure must be one of"):
        _charts.distribution_frame(job.con, job.id, "nope")
    with pytest.raises(ValueError, match="bins"):
        _charts.distribution_frame(job.con, job.id, "reward", bins=0)


def test_empty_distribution(job: enb.Job) -> None:
    frame = _charts.distribution_frame(job.con, job.id, "tokens")
    job.con.execute("UPDATE attempt_rows SET turns = NULL")
    empty = _charts.distribution_frame(job.con, job.id, "turns")
    assert len(frame) > 0 and len(empty) == 0
    spec = _charts.distribution_chart(empty, title="t", x_title="t").to_dict()
    assert "0 attempts" in spec["title"]


def test_status_frame_counts_requested_slots(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "running.json")
    frame = _charts.status_frame(job.con, job.id)
    total = job.summary().total
    assert int(frame["count"].sum()) == total
    assert list(frame["status"])[:6] == list(_charts.STATUS_ORDER)


def test_curve_chart_long_form_drops_nulls(job: enb.Job) -> None:
    spec = _charts.curve_chart(job.curve()).to_dict()
    rows = _data(spec)
    assert {r["metric"] for r in rows} == {"pass@k", "pass^k"}
    assert [r["value"] for r in rows if r["metric"] == "pass@k"] == [0.5, 1.0]
    nulls = pd.DataFrame({"k": [1], "pass@k": [None], "pass^k": [None], "tasks": [0]})
    assert _data(_charts.curve_chart(nulls).to_dict()) == []


def test_bar_and_bucket_charts() -> None:
    f = pd.DataFrame({"subset": ["a", "b"], "score": [0.25, 0.5]})
    spec = _charts.bar_chart(f, category="subset", value="score", title="s").to_dict()
    assert spec["encoding"]["x"]["scale"]["domain"] == [0, 1]
    raw = _charts.bar_chart(f, category="subset", value="score", title="s", percent=False)
    assert "scale" not in raw.to_dict()["encoding"]["x"]
    b = pd.DataFrame({"bucket": ["hard", "Other (matched no rule)"], "count": [3, 0]})
    spec = _charts.bucket_chart(b).to_dict()
    assert spec["encoding"]["y"]["sort"] == ["hard", "Other (matched no rule)"]


def test_bucket_chart_fits_and_reads() -> None:
    """Tens of thousands per bucket: a chart that fits a 900-px panel beside the counts,
    bars from zero on a linear scale, whole-number ticks (not "0k" everywhere)."""
    f = pd.DataFrame({"bucket": ["hard", "medium", "easy"], "count": [42_638, 85_112, 84_757]})
    spec = _charts.bucket_chart(f, title="tasks per bucket").to_dict()
    assert spec["width"] == _charts.BUCKET_WIDTH and 200 <= spec["width"] <= 400
    x = spec["encoding"]["x"]
    assert x["field"] == "count" and x["type"] == "quantitative"
    assert x["axis"]["format"] == ",d" and x["axis"]["format"] != "~s"
    assert x["scale"]["zero"] is True and "type" not in x["scale"]  # linear: proportional bars
    assert [r["count"] for r in _data(spec)] == [42_638, 85_112, 84_757]
    assert _charts.bucket_chart(f, width=500).to_dict()["width"] == 500


def test_charts_are_theme_neutral(job: enb.Job) -> None:
    frame = _charts.distribution_frame(job.con, job.id, "reward")
    spec = _charts.distribution_chart(frame, title="r", x_title="r").to_dict()
    assert spec["config"]["background"] == "transparent"


def test_big_job_charts_stay_small(ws: enb.Workspace) -> None:
    """Thousands of attempts still give a few dozen marks: aggregation happens in SQL."""
    import sys

    sys.path.insert(0, str(SAMPLE_DATA.parent / "benchmarks"))
    from bench_panel import generate_job

    job = generate_job(ws, 20_000)
    for measure in _charts.DISTRIBUTIONS:
        frame = _charts.distribution_frame(job.con, job.id, measure)
        assert len(frame) <= 30
        spec = _charts.distribution_chart(frame, title="x", x_title="x").to_dict()
        assert len(_data(spec)) <= 30
        assert int(frame["count"].sum()) <= 20_000
    assert len(_data(_charts.curve_chart(job.curve()).to_dict())) <= 8


@pytest.mark.usefixtures("default_renderer")
def test_every_job_chart_renders_offline(ws: enb.Workspace) -> None:
    """The panel's charts (``panel.overview.charts``) and every builder: no CDN."""
    job = ws.load(SAMPLE_DATA / "base.json")
    panel = job.panel()
    assert {"reward", "curve", "subset"} <= set(panel.overview.charts)
    for chart in panel.overview.charts.values():
        assert_renders_offline(chart)
    f = pd.DataFrame({"subset": ["a", "b"], "score": [0.25, 0.5]})
    assert_renders_offline(_charts.bar_chart(f, category="subset", value="score", title="s"))
    assert_renders_offline(_charts.bucket_chart(pd.DataFrame({"bucket": ["x"], "count": [1]})))
    assert_renders_offline(_charts.curve_chart(job.curve()))


def test_counts_are_binned_by_whole_values() -> None:
    """Turns 1..40 in 30 bins: not a comb of 1.3-wide bins (some holding two values, some
    none) but 20 bins of exactly two turns each."""
    import pyarrow as pa

    ws = enb.open()
    rows = pa.table({"task": [f"t{i}" for i in range(40)], "attempt": [1] * 40, "reward": [1.0] * 40,
                     "turns": list(range(1, 41))})  # fmt: skip
    job = ws.load(rows, job_id="turns")
    frame = _charts.distribution_frame(job.con, job.id, "turns", bins=30)
    assert len(frame) == 20 and set(frame["count"]) == {2}
    assert frame[["from", "to"]].iloc[0].tolist() == [1, 2] and frame["to"].iloc[-1] == 40
    assert (frame["high"] - frame["low"]).eq(2.0).all()  # edges halfway between integers
    spec = _charts.distribution_chart(frame, title="turns", x_title="turns").to_dict()
    assert spec["encoding"]["tooltip"][0]["field"] == "from"


def _first_label(axis: dict, value: float) -> str:
    """What an axis with ``labelExpr`` prints for ``value`` (vl-convert: d3-format)."""
    import vl_convert as vlc

    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": [{"v": value}]},
        "mark": "point",
        "encoding": {"x": {"field": "v", "type": "quantitative", "axis": axis}},
    }
    return str(vlc.vegalite_to_svg(spec))


def test_si_axes_read_40k_not_4e4() -> None:
    """Token axes read ``4e+4`` (issue 37): counts and measures use SI from 1,000 on."""
    frame = pd.DataFrame({"low": [0.0, 40_000.0], "high": [40_000.0, 80_000.0], "count": [3, 4]})
    spec = _charts.distribution_chart(frame, title="tokens", x_title="tokens").to_dict()
    x_axis, y_axis = spec["encoding"]["x"]["axis"], spec["encoding"]["y"]["axis"]
    assert "format" not in x_axis and "labelExpr" in x_axis and "labelExpr" in y_axis
    svg = _first_label(x_axis, 40_000.0)
    assert ">40k<" in svg and "e+4" not in svg
    small = _first_label(x_axis, 0.5)  # below 1,000: plain numbers, never "500m"
    assert ">0.5<" in small and "500m" not in small


def test_job_charts_use_the_theme(job: enb.Job) -> None:
    """Readable type (issue 37: 8–9 px) and a width that fills half a panel."""
    frame = _charts.distribution_frame(job.con, job.id, "turns")
    spec = _charts.distribution_chart(frame, title="turns", x_title="turns").to_dict()
    assert spec["config"]["axis"]["labelFontSize"] >= 12
    assert spec["config"]["axis"]["titleFontSize"] >= 12
    assert spec["config"]["title"]["fontSize"] >= 12
    assert spec["width"] >= 350  # two per row fill a ~950-px panel


def test_panel_leaves_out_the_slots_chart(ws: enb.Workspace) -> None:
    """ "attempts by state" repeated the attempt-slots table beside it (issue 37)."""
    panel = ws.load(SAMPLE_DATA / "base.json").panel()
    assert "status" not in panel.overview.charts
    assert {"reward", "turns", "tokens", "duration", "curve", "subset"} <= set(
        panel.overview.charts
    )
