"""The comparison panel, driven from Python: baseline selector, clicks, export, errors."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pytest

import envloop_nb as enb
from envloop_nb._buckets.rules import Bucket, BucketRules
from envloop_nb._ui.compare_panel import ComparisonPanel
from tests.compare_helpers import envloop_job, fixing_pair, write_job


@pytest.fixture
def panel(ws: enb.Workspace, tmp_path: Path) -> ComparisonPanel:
    base, new = fixing_pair()
    names = [t["name"] for t in base["job"]["tasks"]]
    mid = {
        t: [1.0, 0.0] if i < 20 else ([0.0, 0.0] if i < 40 else [1.0, 1.0])
        for i, t in enumerate(names)
    }
    third = envloop_job("job_mid", mid, tags={t["name"]: t["tags"] for t in base["job"]["tasks"]})
    jobs = [ws.load(write_job(tmp_path, d)) for d in (base, new, third)]
    rules = BucketRules(
        [Bucket("hard", 0, 0.25), Bucket("medium", 0.25, 0.75), Bucket("easy", 0.75, 1.01)]
    )
    p = ws.compare(jobs, baseline="job_base").panel(
        rules=rules, export_path=str(tmp_path / "c.xlsx")
    )
    assert isinstance(p, ComparisonPanel)
    return p


def test_panel_shows_everything(panel: ComparisonPanel) -> None:
    assert panel.message.value == ""
    assert "comparable" in panel.guard.value
    assert "job_new" in panel.leaderboard.value and "120/120 scored" in panel.leaderboard.value
    assert len(panel.charts.children) == 3  # bars, radar, curves
    assert all(isinstance(c, alt.JupyterChart) for c in panel.charts.children)
    assert "enb-best" in panel.table.value
    assert "above the others" in panel.strengths.value
    assert "beyond noise" in panel.paired.value
    assert ("job_new", "fixed") in panel.transition_buttons
    assert panel.transition_buttons[("job_new", "fixed")].description == "fixed: 30"
    assert panel.bucket_buttons[("hard", "easy")].description == "30"
    assert repr(panel) == "<ComparisonPanel job_base, job_new, job_mid · baseline job_base>"


def test_baseline_selector_recomputes(panel: ComparisonPanel) -> None:
    before_table, before_paired = panel.table.value, panel.paired.value
    panel.baseline.value = "job_new"
    assert panel.message.value == ""
    assert panel.state.baseline == "job_new"
    assert panel.table.value != before_table and panel.paired.value != before_paired
    assert "(baseline)" in panel.table.value
    assert panel.transition_buttons[("job_base", "broken")].description == "broken: 30"
    assert ("job_new", "fixed") not in panel.transition_buttons
    assert panel.bucket_other.options == ("job_base", "job_mid")
    assert panel.bucket_buttons[("easy", "hard")].description == "30"


def test_clicking_a_transition_shows_attempts_in_every_job(panel: ComparisonPanel) -> None:
    panel.transition_buttons[("job_new", "fixed")].click()
    assert "job_new: fixed" in panel.detail_title.value and "30 task(s)" in panel.detail_title.value
    detail = panel.detail.value
    for job in ("job_base", "job_new", "job_mid"):
        assert job in detail
    assert "answer of job_new to t000 attempt 1" in detail
    panel.bucket_buttons[("hard", "easy")].click()
    assert "hard → easy" in panel.detail_title.value


def test_by_dimension_and_bucket_other(panel: ComparisonPanel) -> None:
    panel.by.value = "dimension"
    assert panel.message.value == ""
    assert "no dimensions to compare" in panel.table.value
    assert "no score dimensions" in panel.charts.children[0].value
    panel.bucket_other.value = "job_mid"
    assert panel.message.value == ""
    assert panel.bucket_buttons[("hard", "medium")].description == "20"


def test_export_button_writes_xlsx(panel: ComparisonPanel, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    panel.export_button.click()
    assert panel.message.value == ""
    assert "wrote" in panel.export_status.value
    wb = load_workbook(tmp_path / "c.xlsx")
    assert "Transitions" in wb.sheetnames and "Buckets job_new" in wb.sheetnames


def test_errors_show_as_a_message_not_a_traceback(
    panel: ComparisonPanel, ws: enb.Workspace, tmp_path: Path
) -> None:
    (tmp_path / "blocker").write_text("a file, not a folder")
    panel.export_path.value = str(tmp_path / "blocker" / "c.xlsx")
    panel.export_button.click()
    assert "⚠" in panel.message.value
    assert "Traceback" not in panel.message.value
    ws.remove("job_mid")  # the job disappears under the panel
    panel.baseline.value = "job_mid"
    assert "⚠" in panel.message.value and "job_mid" in panel.message.value


def test_a_drill_down_is_paged(panel: ComparisonPanel) -> None:
    """Issue 37: the transitions drill-down was one flat list of every attempt of up to 40
    tasks (~126 rows and more). Now DETAIL_PAGE tasks a page, with previous / next."""
    from envloop_nb._ui.compare_panel import DETAIL_PAGE

    panel.transition_buttons[("job_new", "fixed")].click()  # 30 tasks
    assert "30 task(s)" in panel.detail_title.value
    assert panel.detail_pager.layout.display is None and panel.detail_prev.disabled
    rows = panel.detail.value.count("<tr>") - 1  # the header row
    assert rows == DETAIL_PAGE * 3 * 2  # the page's tasks × 3 jobs × k = 2
    assert "tasks 1–5 of 30" in panel.detail_page_label.value
    first = panel.detail.value
    panel.detail_next.click()
    assert "tasks 6–10 of 30" in panel.detail_page_label.value and panel.detail.value != first
    for _ in range(10):
        panel.detail_next.click()
    assert "tasks 26–30 of 30" in panel.detail_page_label.value and panel.detail_next.disabled
    # people's headers, not column names
    assert "<th" in panel.detail.value and ">Reward<" in panel.detail.value


def test_panel_numbers_have_one_format(panel: ComparisonPanel) -> None:
    """Issue 37: percentages three ways (``61%``, ``52.3%``), differences with an ASCII
    minus, raw column names as headers — in the leaderboard, tables and paired tab."""
    import re

    text = "\n".join(
        str(w.value) for w in (panel.leaderboard, panel.table, panel.strengths, panel.paired)
    )
    cells = [re.sub(r"<[^>]+>", " ", c) for c in re.findall(r"<td\b[^>]*>(.*?)</td>", text, re.S)]
    pcts = [p for c in cells for p in re.findall(r"(?<![\d.])\d+(?:\.\d+)?%", c)]
    assert pcts and all(re.fullmatch(r"\d+\.\d%", p) for p in pcts)
    assert not [c for c in cells if re.search(r"(^|[\s\[(])-\d", c)]  # a real minus
    heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th\b[^>]*>(.*?)</th>", text, re.S)]
    assert not [h for h in heads if re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", h.strip())]


def test_bucket_matrix_is_coloured_by_direction(panel: ComparisonPanel) -> None:
    """Improvement and regression looked alike ("info" both, issue 37): green / red / plain."""
    better, worse = panel.bucket_buttons[("hard", "easy")], panel.bucket_buttons[("easy", "hard")]
    assert better.button_style == "success" and "better" in better.tooltip
    panel.baseline.value = "job_new"
    worse = panel.bucket_buttons[("easy", "hard")]
    assert worse.button_style == "danger" and "worse" in worse.tooltip
    same = [b for (r, c), b in panel.bucket_buttons.items() if r == c and not b.disabled]
    assert same and all(b.button_style == "" for b in same)


def test_bucket_direction_follows_a_lower_is_better_dimension(tmp_path: Path) -> None:
    """On an error rate (lower is better) a task moving to the low bucket got better."""
    data = Path(__file__).parent / "data" / "dimension_scale"
    ws = enb.open()
    a, b = ws.load(data / "two-scales.json"), ws.load(data / "two-scales-b.json")
    rules = BucketRules([Bucket("low", 0, 0.35), Bucket("high", 0.35, 1.01)], metric="error_rate")
    panel = ws.compare([a, b]).panel(rules=rules, export_path=str(tmp_path / "c.xlsx"))
    moved = panel.bucket_buttons[("high", "low")]  # task B: error 0.6 -> 0.1
    assert moved.description == "1" and moved.button_style == "success"
