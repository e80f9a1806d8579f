"""Panels driven from Python: controls in, results out, errors shown in the panel."""

from __future__ import annotations

from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._present.panel_html import agreement_html, findings_html, groups_html

from .conftest import SAMPLE_DATA, THREE_TASKS


@pytest.fixture
def panel(ws: enb.Workspace) -> enb.JobPanel:
    return enb.panel(ws.load(SAMPLE_DATA / "base.json"))


@pytest.fixture
def small(ws: enb.Workspace) -> enb.JobPanel:
    return ws.load(THREE_TASKS).panel()


def test_panel_shape_and_repr(small: enb.JobPanel) -> None:
    import ipywidgets as w

    assert isinstance(small.widget, w.Tab)
    assert list(small.widget.titles) == ["Overview", "Cases", "Buckets & export"]
    assert repr(small) == "<JobPanel job_abc0001: Overview · Cases · Buckets & export>"
    bundle = small._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["text/plain"] == repr(small)
    assert "application/vnd.jupyter.widget-view+json" in data
    assert isinstance(small, enb.JobPanel) and enb.panel is not None


def test_overview_cards_facts_and_agreement(small: enb.JobPanel) -> None:
    ov = small.overview
    assert "pass@2" in ov.cards.value and "pass^2" in ov.cards.value
    assert "5/6 attempts scored" in ov.cards.value and "60.0%" in ov.cards.value
    for text in ("my-endpoint/sft", "tiny-agent@1", "harbor@0.22.0", "running"):
        assert text in ov.facts.value
    assert ov.status_counts["running"] == 1 and ov.status_counts["completed"] == 4
    assert "numbers agree" in ov.agreement.value and "numbers disagree" not in ov.agreement.value
    assert {"reward", "turns", "tokens", "duration", "curve", "subset"} <= set(ov.chart_widgets)
    assert "math" in ov.groups.value and "Bad cases" in ov.groups.value
    # people's headers (issue 37: the groups table read "tasks", "bad cases")
    for head in ("Subset", "Tasks", "Score", "Coverage", "Complete"):
        assert f">{head}</th>" in ov.groups.value, head
    assert "tests_passed" in ov.dimensions.value  # named dimensions get their own table


def test_no_dimension_table_without_dimensions(panel: enb.JobPanel) -> None:
    assert not panel.overview.has_dimensions and panel.overview.dimensions.value == ""


def test_policy_and_threshold_recompute(small: enb.JobPanel) -> None:
    small.build()  # as when shown: every tab is there before the policy changes
    ov = small.overview
    assert ov.summary is not None and ov.summary.score == pytest.approx(0.6)
    ov.policy.value = "failure"
    assert ov.summary.policy == "failure" and ov.summary.score == pytest.approx(0.5)
    assert "policy=&#x27;failure&#x27;" in ov.cards.value
    assert small.cases.query.policy == "failure"  # the Cases tab follows...
    assert small.cases._stale  # ...lazily: it is hidden, so it re-queries when shown
    small.widget.selected_index = 1
    assert not small.cases._stale and small.cases.page.query.policy == "failure"
    small.widget.selected_index = 0
    ov.threshold.value = 0.5
    ov.use_threshold.value = True
    assert ov.summary.threshold == 0.5 and "reward ≥ 0.5" in ov.cards.value
    curve = ov.chart_widgets["curve"].chart.to_dict()
    assert curve["datasets"]  # the chart was rebuilt, not emptied


def test_invalid_threshold_shows_error_and_keeps_state(small: enb.JobPanel) -> None:
    ov = small.overview
    before = ov.cards.value
    ov.threshold.value = float("nan")
    ov.use_threshold.value = True
    assert "enb-error-box" in ov.error.value and "finite" in ov.error.value
    assert ov.cards.value == before  # not half-updated
    ov.use_threshold.value = False
    assert ov.error.value == "" and ov.summary.threshold is None


def test_cases_filter_sort_page_and_detail(panel: enb.JobPanel) -> None:
    cases = panel.cases
    total = cases.page.total
    assert len(cases.frame) == 20 and "page 1 of" in cases.page_label.value
    first = list(cases.frame["task"])
    cases.next_page.click()
    assert cases.query.page == 1 and list(cases.frame["task"]) != first
    assert not cases.prev_page.disabled
    cases.prev_page.click()
    assert cases.query.page == 0 and cases.prev_page.disabled
    cases.status.value = "failed"
    assert cases.page.total < total and set(cases.frame["status"]) == {"failed"}
    cases.status.value = cases.ALL
    cases.subset.value = "math"
    assert set(cases.frame["subset"]) == {"math"}
    cases.search.value = "zzz-no-such-text"
    assert cases.page.total == 0 and "no rows match" in cases.table.value
    cases.search.value = ""
    cases.sort_by.value = "reward"
    cases.descending.value = True
    assert cases.frame["reward"].iloc[0] == cases.frame["reward"].max()
    cases.value_range.value = (0.5, 1.0)
    assert (cases.frame["reward"] >= 0.5).all()
    cases.go_to_page(10_000)  # clipped to the last page
    assert cases.query.page == cases.page.pages - 1
    cases.select_row(0)
    assert "enb-detail" in cases.detail.value and "enb-selected" in cases.table.value
    # A click in the browser sets the table widget's clicked row and bumps its count.
    cases.table.clicked = 1
    cases.table.clicks += 1
    assert cases.row.value == 1 and cases.selected == 1
    assert 'data-row="1" class="enb-selected"' in cases.table.value
    assert cases.row.options[1][0].startswith(f"{cases.page.first_row}. ")


def test_cases_task_view(panel: enb.JobPanel) -> None:
    cases = panel.cases
    cases.view.value = "task"
    assert cases.value_range.description == "pass rate"
    assert "pass@4" in cases.frame.columns and cases.page.total == 200
    cases.value_range.value = (0.0, 0.25)
    assert (cases.frame["pass_rate"] <= 0.25).all() and cases.page.total < 200
    cases.select_row(0)
    assert "attempts" in cases.detail.value and "pass@4" in cases.detail.value
    cases.view.value = "attempt"
    assert cases.value_range.description == "reward" and "attempt" in cases.frame.columns


def test_buckets_apply_counts_and_cases_filter(panel: enb.JobPanel) -> None:
    b = panel.buckets
    b.set_rules([("hard", 0, 0.25), ("easy", 0.25, 1.0)])  # 1.0 as upper bound: classic mistake
    b.apply_button.click()
    assert b.guard.last_error is None
    result = b.result
    assert result.count_of("hard") + result.count_of("easy") + result.count_of(
        "Other (matched no rule)"
    ) == 200 - result.excluded  # fmt: skip
    assert f">{result.count_of('hard'):,}<" in b.counts.value
    assert "warning" in b.warnings.value  # the 100% pass rate falls into Other
    assert len(b.chart_box.children) == 1
    spec = b.chart_box.children[0].chart.to_dict()
    assert [r["bucket"] for r in spec["datasets"][spec["data"]["name"]]][:2] == ["hard", "easy"]
    assert spec["width"] <= 400 and spec["encoding"]["x"]["axis"]["format"] == ",d"
    # counts and chart side by side when they fit, the chart below when not: never clipped
    row = next(c for c in b.widget.children if b.chart_box in getattr(c, "children", ()))
    assert b.counts in row.children and row.layout.flex_flow == "row wrap"
    cases = panel.cases
    assert not cases.bucket.disabled and "hard" in [v for _, v in cases.bucket.options]
    cases.view.value = "task"
    cases.bucket.value = "hard"
    assert cases.page.total == result.count_of("hard") and "bucket" in cases.frame.columns


def test_rule_editing(panel: enb.JobPanel) -> None:
    b = panel.buckets
    names = [r["name"] for r in b.rules_data]
    b.rows[0]["down"].click()
    assert [r["name"] for r in b.rules_data] == [names[1], names[0], *names[2:]]
    b.rows[1]["up"].click()
    assert [r["name"] for r in b.rules_data] == names
    b.add_button.click()
    assert len(b.rules_data) == len(names) + 1 and len(b.rows) == len(names) + 1
    b.rows[-1]["remove"].click()
    assert len(b.rules_data) == len(names)
    b.rows[0]["name"].value = "very hard"
    b.rows[0]["high"].value = 0.1
    rules = b.rules()
    assert rules.buckets[0].name == "very hard" and rules.buckets[0].high == 0.1


def test_invalid_rule_shows_error_no_exception(panel: enb.JobPanel) -> None:
    b = panel.buckets
    b.apply_button.click()
    good_counts = b.counts.value
    b.set_rules([("same", 0, 0.5), ("same", 0.5, 1.01)])
    b.apply_button.click()  # must not raise
    assert "enb-error-box" in b.error.value and "duplicate bucket name" in b.error.value
    assert b.counts.value == good_counts  # previous result kept whole
    b.set_rules([("ok", 0, 1.01)])
    b.apply_button.click()
    assert b.error.value == "" and b.result.count_of("ok") > 0


def test_per_attempt_metric(panel: enb.JobPanel) -> None:
    b = panel.buckets
    b.metric.value = "attempt:reward"
    b.set_rules([("zero", 0, 0.5), ("one", 0.5, 1.5)])
    b.apply_button.click()
    assert b.guard.last_error is None and b.result.rules.level == "attempt"
    panel.cases.bucket.value = "zero"
    assert (panel.cases.frame["reward"] < 0.5).all()


def test_export_xlsx_writes_file(panel: enb.JobPanel, tmp_path: Path) -> None:
    import openpyxl

    b = panel.buckets
    b.xlsx_path.value = str(tmp_path / "all.xlsx")
    b.export_xlsx_button.click()
    assert b.export_guard.last_error is None
    assert (tmp_path / "all.xlsx").exists() and "all.xlsx" in b.export_message.value
    assert "rows" in b.export_message.value
    b.apply_button.click()
    b.export_buckets.value = ("hard",)
    b.xlsx_path.value = str(tmp_path / "hard.xlsx")
    b.export_xlsx_button.click()
    wb = openpyxl.load_workbook(tmp_path / "hard.xlsx", read_only=True)
    assert "Tasks" in wb.sheetnames
    assert b.last_export.rows_per_sheet["Tasks"] == b.result.count_of("hard")
    wb.close()


def test_failed_export_shows_error(panel: enb.JobPanel, tmp_path: Path) -> None:
    b = panel.buckets
    blocker = tmp_path / "file"
    blocker.write_text("x")
    b.xlsx_path.value = str(blocker / "sub" / "x.xlsx")  # parent is a file
    b.export_xlsx_button.click()
    assert "enb-error-box" in b.export_message.value and b.last_export is None
    b.export_buckets.value = ()
    b.export_dataset_button.click()  # no rules applied yet: a message, not an exception
    assert "enb-error-box" in b.export_message.value


def test_export_dataset(panel: enb.JobPanel, tmp_path: Path) -> None:
    pytest.importorskip("envloop_nb._datasets.export")
    b = panel.buckets
    b.apply_button.click()
    b.export_buckets.value = ("hard",)
    b.dataset_folder.value = str(tmp_path)
    b.dataset_name.value = "hard-cases"
    b.dataset_version.value = "1"
    b.export_dataset_button.click()
    assert b.export_guard.last_error is None, b.export_message.value
    assert "wrote" in b.export_message.value
    assert any(tmp_path.rglob("manifest.json"))


def test_running_job_needs_allow_partial(ws: enb.Workspace) -> None:
    p = ws.load(SAMPLE_DATA / "running.json").panel()
    b = p.buckets
    b.apply_button.click()
    assert "still running" in b.error.value and b.result is None
    b.allow_partial.value = True
    b.apply_button.click()
    assert b.result.partial and "PARTIAL" in b.counts.value


def test_pure_html_helpers() -> None:
    assert "no platform metrics" in agreement_html(None, {})
    assert "numbers disagree" in agreement_html({"score_counts": {"total": 7}}, {"total": 6})
    assert "total: platform 7, recomputed 6" in agreement_html(
        {"score_counts": {"total": 7}}, {"total": 6}
    )
    assert groups_html(None, "subset") == ""
    assert "No diagnosis flags" in findings_html([])

    class F:
        severity, title, evidence = "warning", "<b>loop</b>", "many turns"

    out = findings_html([F()])
    assert "&lt;b&gt;loop" in out and "many turns" in out


def test_close_drops_temp_tables(small: enb.JobPanel) -> None:
    con = small.job.con
    small.cases.view.value = "task"
    temp = "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '_enb_cases_%'"
    assert con.execute(temp).fetchone()[0] >= 2
    small.close()
    assert con.execute(temp).fetchone()[0] == 0


def test_hidden_cases_tab_catches_up_when_read(small: enb.JobPanel) -> None:
    small.cases.view.value = "task"
    small.overview.policy.value = "failure"
    assert small.cases._stale
    frame = small.cases.frame  # reading the page re-queries it
    assert not small.cases._stale
    assert frame.set_index("task").loc["C", "pass_rate"] == 0.0  # missing counted as 0


def test_cases_first_last_and_go_to_page() -> None:
    """Paging by more than one step from the widget (there may be 50,000 pages)."""
    from .conftest import SAMPLE_DATA

    job = enb.open().load(SAMPLE_DATA / "base.json")
    p = job.panel()
    try:
        c = p.cases
        assert (c.page.pages, c.page_number.max, c.page_number.value) == (40, 40, 1)
        c.page_number.value = 10
        assert c.query.page == 9 and c.page.describe().startswith("rows 181–200")
        c.last_page.click()
        assert (c.query.page, c.page_number.value, c.next_page.disabled, c.last_page.disabled) == (
            39,
            40,
            True,
            True,
        )
        c.first_page.click()
        assert (c.query.page, c.page_number.value, c.first_page.disabled) == (0, 1, True)
        c.status.value = "failed"  # fewer pages: the box's bound follows
        assert c.page_number.max == c.page.pages == 1
    finally:
        p.close()


def test_frame_shows_progress_before_the_tabs_are_built(
    ws: enb.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shown in a notebook, the frame (title + progress line) goes out before any tab is
    computed; the tabs then fill it and the progress line goes away."""
    import IPython.display
    import ipywidgets as w

    p = ws.load(THREE_TASKS).panel()
    assert not p.built and p._overview is None  # making the panel computes nothing
    assert isinstance(p.frame, w.VBox) and p.frame.children[:2] == (p.title, p.progress_box)
    assert "job_abc0001" in p.title.value
    assert "computing the overview" in p.progress_label.value and p.progress.value == 0
    assert p._tab.layout.display == "none"  # no empty tabs while the Overview is computed
    labels: list[str] = []
    p.progress_label.observe(lambda ch: labels.append(ch["new"]), names="value")
    shown: list[tuple[object, bool]] = []

    def display(obj: object, **kwargs: object) -> None:
        shown.append((obj, p.built or p._overview is not None))

    monkeypatch.setattr(IPython.display, "display", display)
    p._ipython_display_()
    ((bundle, built_then),) = shown
    assert built_then is False  # displayed first...
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == p.frame.model_id
    assert bundle["text/plain"] == repr(p)
    assert p.built and p.progress.value == 4  # ...then filled
    assert any("drawing the charts" in t for t in labels)
    assert any("listing the cases" in t for t in labels)
    assert any("preparing buckets" in t for t in labels)
    assert p.progress_box.layout.display == "none" and p._tab.layout.display is None
    assert p.widget.children == (p.overview.widget, p.cases.widget, p.buckets.widget)
    assert list(p.widget.titles) == ["Overview", "Cases", "Buckets & export"]


def test_the_cards_are_shown_before_the_charts_are_drawn(ws: enb.Workspace) -> None:
    """The first step puts the Overview up with its cards; the charts and the diagnosis
    (the slower half) come in the next, and a policy change in between needs none."""
    p = ws.load(THREE_TASKS).panel()
    p.build(1)
    o = p._overview
    assert o is not None and not o.drawn and p._tab.layout.display is None
    assert "5/6 attempts scored" in o.cards.value and "not dispatched" in o.facts.value
    assert o.charts == {} and o.chart_box.children == () and o.diagnosis.value == ""
    assert "drawing the charts" in p.progress_label.value and p.progress.value == 1
    o.policy.value = "failure"  # before the charts: the cards follow, no chart is made
    assert "score 50.0%" in str(o.summary) and o.charts == {}
    p.build(2)
    assert o.drawn and {"reward", "curve", "subset"} <= set(o.charts)
    assert o.chart_box.children == tuple(o.chart_widgets.values()) and o.diagnosis.value
    # the charts drawn late follow the policy in force (failure: missing counts as 0)
    spec = o.charts["curve"].to_dict()
    assert spec == p.overview.charts["curve"].to_dict()
    o.policy.value = "unknown"
    assert o.charts["curve"].to_dict() != spec
    assert o.chart_widgets["curve"].chart is o.charts["curve"]


def test_the_cards_need_no_chart_library() -> None:
    """Putting the cards up imports no altair (its import, through jsonschema's format
    checkers, is the slowest part of a cold Overview): a fresh process shows."""
    import subprocess
    import sys

    code = (
        "import sys, envloop_nb as enb\n"
        f"job = enb.open().load({str(THREE_TASKS)!r})\n"
        "p = job.panel(); p.build(1)\n"
        "assert 'score' in p._overview.cards.value\n"
        "print('altair' in sys.modules)\n"
        "p.build(2); print('altair' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_tabs_build_on_first_read(ws: enb.Workspace) -> None:
    p = ws.load(THREE_TASKS).panel()
    assert p.cases.page.total == 6  # read from Python before any display
    assert p._overview is not None and p._buckets is None and not p.built
    assert p.progress.value == 3 and "preparing buckets" in p.progress_label.value
    p.buckets.allow_partial.value = True  # the job is still running
    p.buckets.apply_button.click()
    assert p.built and p.buckets.result is not None and not p.cases.bucket.disabled


def test_a_failing_tab_says_so_in_the_frame(
    ws: enb.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envloop_nb._ui import panel as panel_module

    def broken(state: object) -> None:
        raise ValueError("no overview today")

    p = ws.load(THREE_TASKS).panel()
    monkeypatch.setattr(panel_module, "OverviewTab", broken)
    with pytest.raises(ValueError, match="no overview today"):
        p.build()
    assert "could not build the Overview tab" in p.progress_label.value
    assert "no overview today" in p.progress_label.value and p.progress.bar_style == "danger"
    assert not p.built and p._tab.layout.display == "none"


def test_a_job_without_subset_tags_gets_its_overview(ws: enb.Workspace) -> None:
    """A Harbor job whose tasks carry no ``subset`` tag (only ``source``): the Overview
    builds without a subset table or chart (it raised "no task of job … has tag
    'subset'" and the panel showed a traceback)."""
    job = ws.load(SAMPLE_DATA / "agent_runs" / "base", job_id="coder-base")
    panel = job.panel().build()
    ov = panel.overview
    assert ov.summary is not None and "pass@3" in ov.cards.value
    assert ov.groups.value == "" and "subset" not in ov.chart_widgets
    assert {"reward", "curve"} <= set(ov.chart_widgets)


# -- issue 37: one number format and people's headers in what the panels show ---------------
def _html_of(widget: object) -> str:
    """Every HTML text a widget tree shows (its HTML widgets' values)."""
    import ipywidgets as w

    out = []
    stack = [widget]
    while stack:
        node = stack.pop()
        if isinstance(node, w.HTML | w.HTMLMath):
            out.append(str(node.value))
        stack.extend(getattr(node, "children", ()) or ())
    return "\n".join(out)


def _table_texts(text: str, tag: str) -> list[str]:
    import re

    cells = re.findall(rf"<{tag}\b[^>]*>(.*?)</{tag}>", text, flags=re.S)
    return [re.sub(r"<[^>]+>", " ", c).strip() for c in cells]


@pytest.mark.parametrize("name", ["base.json", "running.json"])
def test_panels_show_one_number_format(ws: enb.Workspace, name: str) -> None:
    """Percentages showed three ways (``61%``, ``52.3%``, ``44%``), headers as raw column
    names (``duration_s``), timestamps with microseconds."""
    import re

    job = ws.load(SAMPLE_DATA / name)
    panel = job.panel().build()
    text = _html_of(panel.widget)
    cells = _table_texts(text, "td")
    pcts = [p for c in cells for p in re.findall(r"(?<![\d.])\d+(?:\.\d+)?%", c)]
    assert pcts and not [p for p in pcts if not re.fullmatch(r"\d+\.\d%", p)]
    heads = _table_texts(text, "th")
    assert heads and not [h for h in heads if re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", h)]
    assert not re.search(r"\d{2}:\d{2}:\d{2}\.\d", text)  # no microseconds
    assert not [c for c in cells if re.search(r"(?<![\d.$])-?0\.\d{4,}", c)]


def test_cases_output_column_is_not_clipped(ws: enb.Workspace) -> None:
    """The Cases table clipped every text at 240px (``overflow:hidden``, one line); the
    output column now wraps and a long text is cut at a word with "…"."""
    import pandas as pd

    from envloop_nb._present.cases_html import CASES_CSS, table_html

    long = "Changed src/models.py but tests/test_models.py::test_case_06 still fails: AssertionError: expected 3, got 2."
    out = table_html(pd.DataFrame({"task": ["t"], "output": [long], "duration_s": [75.5]}))
    assert 'class="enb-text"' in out and ".enb-cases td.enb-text{" in CASES_CSS
    rule = CASES_CSS.split(".enb-cases td.enb-text{", 1)[1].split("}", 1)[0]
    assert "white-space:normal" in rule
    assert "test_case_06 still fails…<" in out
    assert ">Duration<" in out and ">1 min 16 s<" in out


def test_each_dimension_shows_its_scale(ws: enb.Workspace) -> None:
    """A 0–100 dimension showed ``83.72`` in a % column, judged at 0.5, with no unit or
    direction (issue 37): its scale and cut-off stand beside it, its score in its units."""
    job = ws.load(Path(__file__).parent / "data" / "dimension_scale" / "two-scales.json")
    html = job.panel().overview.dimensions.value
    assert "quality (0–100 pct · higher is better · bad below 50)" in html
    assert "error_rate (0–1 ratio · lower is better · bad above 0.5)" in html
    assert ">51.88<" in html and "5187" not in html  # 51.875 of 100, not a % of one
