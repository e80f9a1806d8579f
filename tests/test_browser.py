"""Real-browser checks: JupyterLab + headless Chromium run the panel notebooks and we look.

A JupyterLab server is started on a free local port (token off, its own settings dir,
autosave off) over a scratch copy of ``notebooks/``, so running the notebook never
rewrites the committed one. Chromium (Debian's, driven by Playwright through
``executable_path``) runs every cell, then the tests check what a person sees: metric
cards' text, charts that drew, a filter that changes the rows, a bucket rule whose counts
appear, an export button that writes a file. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .browser_lab import (
    ARTIFACTS,
    Lab,
    marks,
    offline_page,
    open_and_run,
    require_browser,
    scratch_lab,
    shot,
    theme,
    visible_problems,
    wait_charts,
    wait_idle,
    wait_marks,
    wait_text,
    write_notebook,
)
from .conftest import ROOT

pytestmark = pytest.mark.browser
require_browser()


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    """A JupyterLab server over a scratch copy of notebooks/ (killed in ``finally``)."""

    def fill(nb_dir: Path) -> None:
        for nb in (ROOT / "notebooks").glob("*.ipynb"):
            shutil.copy(nb, nb_dir / nb.name)

    with scratch_lab("enb-browser-", fill) as running:
        yield running


def test_explore_job_notebook(browser: Any, lab: Lab) -> None:
    page = open_and_run(browser, lab, "explore_job.ipynb")
    page.wait_for_selector(".enb-job-panel", timeout=120_000)
    wait_idle(page)
    assert visible_problems(page) == []
    panel = page.locator(".enb-job-panel").first
    panel.scroll_into_view_if_needed()

    # Overview: cards with the real k, coverage, platform agreement, charts drawn
    wait_text(panel, "pass@4")
    text = panel.inner_text()
    for expected in ("pass^4", "767/800 attempts scored", "169/200 members complete",
                     "numbers agree", "By subset", "Diagnosis"):  # fmt: skip
        assert expected in text
    assert wait_marks(panel, 6, 30) >= 6, "the Overview's six charts did not all draw"
    # the policy control recomputes the cards in the browser too
    panel.locator(".widget-dropdown:has(label:text-is('missing:')) select").select_option(
        label="failure (missing = 0)"
    )
    wait_text(panel, "48.0%")
    shot(page, panel, "panel-1-overview")

    # Cases: a filter changes the rows; a row opens its detail
    panel.locator(".lm-TabBar-tab:has-text('Cases')").first.click()
    cases_table = panel.locator(".enb-cases table").first
    cases_table.wait_for(state="visible", timeout=20_000)
    wait_text(panel, "rows 1–20 of 797")
    before = cases_table.inner_text()
    panel.locator(".widget-dropdown:has(label:text-is('status')) select").select_option(
        label="failed"
    )
    wait_text(panel, "rows 1–18 of 18")
    after = cases_table.inner_text()
    assert after != before
    statuses = cases_table.locator("tbody td.enb-st-failed").count()
    assert statuses == 18
    # on a short screen the detail opens below the fold: the click brings it into view
    page.set_viewport_size({"width": 1400, "height": 700})
    cases_table.evaluate("el => el.scrollIntoView({block: 'start'})")
    cases_table.locator("tbody tr[data-row='0']").click()  # clicking a row opens its detail
    panel.locator(".enb-detail").first.wait_for(state="visible", timeout=20_000)
    # wholly in view, or (taller than the screen) its top at the top
    in_view = (
        "el => { const r = el.getBoundingClientRect();"
        " return r.top >= -2 && (r.bottom <= innerHeight + 2 || r.top < 60); }"
    )
    deadline = time.time() + 10
    while not panel.locator(".enb-detail").first.evaluate(in_view) and time.time() < deadline:
        time.sleep(0.2)
    assert panel.locator(".enb-detail").first.evaluate(in_view), (
        "the row's detail stayed below the fold"
    )
    page.set_viewport_size({"width": 1400, "height": 1600})
    assert cases_table.locator("tbody tr.enb-selected").count() == 1
    wait_text(panel, "AgentTimeoutError")
    shot(page, panel, "panel-2-cases")

    # Buckets & export: apply rules -> counts and a chart; export -> a file on disk
    panel.locator(".lm-TabBar-tab:has-text('Buckets & export')").first.click()
    panel.locator("button:has-text('Apply rules')").first.click()
    wait_text(panel, "Buckets of job_base on pass_rate")
    bucket_text = panel.inner_text()
    assert "hard" in bucket_text and "Other (matched no rule)" in bucket_text
    assert wait_marks(panel, 1, 20) >= 1, "the bucket chart did not draw"
    panel.locator("button:has-text('Export XLSX')").first.click()
    wait_text(panel, "wrote", timeout_s=60)
    assert (lab.exports / "job_base.xlsx").stat().st_size > 0
    assert "rows" in panel.inner_text()
    shot(page, panel, "panel-3-buckets")
    assert visible_problems(page) == []

    # dark theme: the panel stays readable (no hard-coded white backgrounds)
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.hover(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Dark')")
    time.sleep(2)
    panel.locator(".lm-TabBar-tab:has-text('Overview')").first.click()
    time.sleep(1)
    bg = page.evaluate(
        "getComputedStyle(document.querySelector('.enb-job-panel .enb-card')).backgroundColor"
    )
    assert bg not in ("rgb(255, 255, 255)", "#fff", "white")
    shot(page, panel, "panel-4-overview-dark")
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")  # back to light for the next test
    page.hover(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Light')")
    time.sleep(1)
    page.close()


def test_compare_checkpoints_notebook(browser: Any, lab: Lab) -> None:
    if not (lab.root / "compare_checkpoints.ipynb").exists():
        pytest.skip("notebooks/compare_checkpoints.ipynb does not exist yet")
    page = open_and_run(browser, lab, "compare_checkpoints.ipynb")
    wait_idle(page, 150)
    assert visible_problems(page) == []
    cell = page.locator(".jp-CodeCell:has(.jp-InputArea:has-text('cmp.panel(rules=rules)'))").first
    output = cell.locator(".jp-OutputArea").first
    output.wait_for(state="visible", timeout=30_000)
    assert wait_marks(output, 1, 30) >= 1, "no comparison chart drew in the comparison panel"
    text = output.inner_text()
    for expected in ("baseline", "job_base", "comparable"):
        assert expected in text
    shot(page, output, "compare-1-panel")
    before = output.inner_text()
    output.locator("button:has-text('by dimension')").first.click()
    deadline = time.time() + 20
    while output.inner_text() == before and time.time() < deadline:
        time.sleep(0.25)
    assert output.inner_text() != before, "switching to 'by dimension' changed nothing"
    shot(page, output, "compare-2-by-dimension")
    page.close()


def test_experiments_notebook(browser: Any, lab: Lab) -> None:
    page = open_and_run(browser, lab, "experiments.ipynb")
    page.wait_for_selector(".enb-exp-panel", timeout=120_000)
    wait_idle(page, 150)
    assert visible_problems(page) == []
    panel = page.locator(".enb-exp-panel").first
    panel.scroll_into_view_if_needed()
    # the notebook re-evaluated tr_009 after the panel was shown: the panel followed
    wait_text(panel, "21/24 rows counted")
    text = panel.inner_text()
    for expected in ("composite mean", "answer_accuracy", "10/12 counted", "11/12 counted",
                     "not counted as 0", "no number", "running"):  # fmt: skip
        assert expected in text, expected
    shot(page, panel, "experiment-1-panel")

    # filter: rows not evaluated yet -> only tr_012's running quality row
    table = panel.locator(".enb-cases table").first
    panel.locator(".widget-dropdown:has(label:text-is('status')) select").select_option(
        label="pending"
    )
    deadline = time.time() + 20
    while table.locator("tbody tr[data-row]").count() != 1 and time.time() < deadline:
        time.sleep(0.25)
    assert table.locator("tbody tr[data-row]").count() == 1
    assert "tr_012" in table.inner_text()
    panel.locator(".widget-dropdown:has(label:text-is('status')) select").select_option(
        label="any status"
    )
    wait_text(table, "tr_001")

    # open tr_005, correct its accuracy score with a reason, see it counted, then undo
    table.locator("tbody tr[data-trace='tr_005']").click()
    detail = panel.locator(".enb-detail").first
    detail.wait_for(state="visible", timeout=20_000)
    wait_text(detail, "Names a tool but not the one asked for.")
    assert "run 2" in detail.inner_text()
    form = panel.locator(".widget-dropdown:has(label:text-is('evaluator'))").nth(1)
    form.locator("select").select_option(label="answer_accuracy")
    score = panel.locator(".widget-text:has(label:text-is('score 0-100')) input")
    score.fill("60")
    score.press("Enter")
    panel.locator("button:has-text('Save correction')").click()
    wait_text(panel, "needs a reason")  # refused without one; nothing changed
    assert "21/24 rows counted" in panel.inner_text()
    panel.locator("input[placeholder='reason (required)']").fill(
        "ss is modern, netstat answers too"
    )
    panel.locator("button:has-text('Save correction')").click()
    wait_text(panel, "corrected tr_005 · answer_accuracy: 60")
    wait_text(detail, "corrected")
    panel.locator(
        ".lm-AccordionPanel-title:has-text('correction history'), .p-Accordion-title:has-text('correction history'), .jupyter-widget-Collapse-header:has-text('correction history')"
    ).first.click()
    wait_text(panel, "ss is modern, netstat answers too")
    shot(page, panel, "experiment-2-corrected")
    panel.locator("button:has-text('Undo correction')").click()
    wait_text(panel, "undid the correction of tr_005")
    wait_text(panel, "undone by")
    shot(page, detail, "experiment-3-detail")
    assert visible_problems(page) == []
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_html_reports_open_offline(browser: Any, tmp_path: Path, scheme: str) -> None:
    """The standalone reports in a plain browser: every request that would leave the page
    is blocked and counted (none may happen), every chart draws."""
    import envloop_nb as enb

    ws = enb.open()
    job = ws.load(ROOT / "sample_data" / "base.json")
    rules = enb.BucketRules(
        [
            enb.Bucket("hard", 0, 0.25),
            enb.Bucket("medium", 0.25, 0.75),
            enb.Bucket("easy", 0.75, 1.01),
        ]
    )
    exp = ws.load(ROOT / "sample_data" / "experiments" / "ops-helper.json")
    other = ws.load(ROOT / "sample_data" / "other-revision.json")
    reports = [
        job.export_html(tmp_path / "job.html", rules=rules),
        exp.export_html(tmp_path / "exp.html"),
        ws.compare([job, other]).export_html(tmp_path / "cmp.html"),
        ws.baseline_report([ws.load(ROOT / "tests" / "data" / "lm_eval" / "run")]).export_html(
            tmp_path / "baseline.html"
        ),
        ws.baseline_report([job], name="A")
        .compare(ws.baseline_report([other], name="B"))
        .export_html(tmp_path / "baseline-compare.html"),
    ]
    for report in reports:
        with offline_page(browser, scheme) as (page, outside, errors):
            page.goto(report.path.as_uri())
            state = wait_charts(page)
            assert state == {"drawn": report.charts, "failed": 0, "total": report.charts}
            assert page.locator("svg.marks").count() == report.charts
            assert outside == [] and errors == []
            assert page.locator("section h2").all_inner_texts() == list(report.sections)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(
                path=str(ARTIFACTS / f"report-{report.path.stem}-{scheme}.png"), full_page=True
            )


def test_workspace_panel_in_the_browser(browser: Any, lab: Lab) -> None:
    """ws.panel(): the list draws, a row's Open shows its job panel, two ticks compare."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import envloop_nb as enb\n"
            "ws = enb.open()\n"
            "ws.load_all('../sample_data/inspect')\n"
            "for name in ['base.json', 'sft-step500.json', 'running.json']:\n"
            "    ws.load(f'../sample_data/{name}')\n"
            "ws.panel()"
        )
    ]
    write_notebook(nb, lab.root / "workspace_panel_check.ipynb")
    page = open_and_run(browser, lab, "workspace_panel_check.ipynb")
    page.wait_for_selector(".enb-ws-panel", timeout=120_000)
    wait_idle(page)
    assert visible_problems(page) == []
    panel = page.locator(".enb-ws-panel").first
    wait_text(panel, "5 jobs")
    rows = panel.locator(".enb-ws-row")
    assert rows.count() == 5
    text = panel.inner_text()
    for expected in ("job_base", "running", "completed", "scored"):
        assert expected in text
    shot(page, panel, "workspace-1-list")

    base = panel.locator(".enb-ws-row:has-text('job_base')").first
    base.locator("button:has-text('Open')").click()
    page.wait_for_selector(".enb-ws-panel .enb-job-panel", timeout=60_000)
    wait_text(panel.locator(".enb-job-panel").first, "pass@4")
    shot(page, panel.locator(".enb-job-panel").first, "workspace-2-opened")

    base.locator("input[type=checkbox]").check()
    panel.locator(".enb-ws-row:has-text('job_sft500')").first.locator(
        "input[type=checkbox]"
    ).check()
    compare = panel.locator("button:has-text('Compare selected (2)')")
    compare.wait_for(state="visible", timeout=10_000)
    compare.click()
    wait_text(panel, "comparable", timeout_s=60)
    shot(page, panel, "workspace-3-compared")
    page.close()


def test_charts_draw_from_one_library_and_after_a_reload(browser: Any, lab: Lab) -> None:
    """Every chart draws from the page's one chart library (issue 15: the bundle sent
    once, not in every chart; ``tests/test_chart_library.py`` counts the copies): a chart
    widget, a bare altair composition and a panel's charts draw, and after a save and a
    reload on the same kernel they draw again."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import altair as alt, pandas as pd, envloop_nb as enb\n"
            "f = pd.DataFrame({'x': ['a', 'b', 'c'], 'y': [1, 3, 2]})\n"
            "enb.chart_widget(alt.Chart(f).mark_bar().encode(x='x', y='y'))"
        ),
        nbformat.v4.new_code_cell(
            "c = alt.Chart(f).mark_point().encode(x='x', y='y')\n(c | c.mark_line())"
        ),
        nbformat.v4.new_code_cell("enb.open().load('../sample_data/base.json').panel()"),
    ]
    write_notebook(nb, lab.root / "chart_library_check.ipynb")
    page = open_and_run(browser, lab, "chart_library_check.ipynb")
    page.wait_for_selector(".enb-job-panel", timeout=120_000)
    wait_idle(page)

    def drawn() -> list[int]:
        deadline = time.time() + 60
        while time.time() < deadline:
            outs = page.locator(".jp-Cell-outputArea")
            counts = [marks(outs.nth(i)) for i in range(outs.count())]
            if len(counts) == 3 and counts[0] >= 1 and counts[1] >= 1 and counts[2] >= 5:
                return counts
            time.sleep(0.5)
        raise AssertionError(f"charts did not draw: {counts}")

    drawn()
    assert visible_problems(page) == []
    shot(page, page.locator(".jp-Notebook"), "charts-1-one-library")
    page.keyboard.press("Control+s")
    time.sleep(2)
    page.reload()
    page.wait_for_selector(".jp-Notebook", timeout=90_000)
    for _ in range(3):  # kernel chooser or other dialogs
        if page.query_selector(".jp-Dialog"):
            page.click(".jp-Dialog-footer button.jp-mod-accept")
            time.sleep(1)
    drawn()
    assert visible_problems(page) == []
    shot(page, page.locator(".jp-Notebook"), "charts-2-after-reload")
    page.close()


def test_quick_annotation_by_keyboard(browser: Any, lab: Lab) -> None:
    """Quick annotation in Chromium: number keys label and move on, arrows move, ``r``
    types a reason, a key with no label is refused in the card; the workspace has them."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import envloop_nb as enb\n"
            "enb.options.reviewer = 'browser-test'\n"
            "ws = enb.open()\n"
            "job = ws.load('../sample_data/base.json')\n"
            "job.add_manual_dimension('correct', {'correct': 1, 'partly': 0.5, 'wrong': 0})\n"
            "p = job.panel()\n"
            "p.widget.selected_index = 1\n"
            "p.cases.mode.value = 'quick'\n"
            "p"
        ),
        nbformat.v4.new_code_cell(
            "print('ANNOTATIONS', ws.sql('SELECT task, attempt, label, reason, annotator "
            "FROM annotations WHERE replaced_at IS NULL ORDER BY annotated_at').fetchall())"
        ),
    ]
    write_notebook(nb, lab.root / "quick_annotation_check.ipynb")
    page = open_and_run(browser, lab, "quick_annotation_check.ipynb")
    page.wait_for_selector(".enb-quick", timeout=120_000)
    wait_idle(page)
    card = page.locator(".enb-quick").first
    wait_text(card, "0/797 annotated")
    wait_text(card, "case 1 of 797")
    card.click()  # focus the card (JupyterLab's own shortcuts are off while it has focus)
    page.keyboard.press("1")
    wait_text(card, "1/797 annotated")
    wait_text(card, "case 2 of 797")
    page.keyboard.press("r")
    page.keyboard.type("only half of it")
    page.keyboard.press("Enter")
    page.keyboard.press("2")
    wait_text(card, "2/797 annotated")
    page.keyboard.press("7")  # no seventh label: refused, said in the card
    wait_text(card, "no label on key 7")
    page.keyboard.press("ArrowLeft")
    wait_text(card, "case 2 of 797")
    assert "enb-on" in (card.locator(".enb-quick-choice").nth(1).get_attribute("class") or "")
    shot(page, card, "quick-annotation")
    # the workspace holds exactly what the keys did
    page.locator(".jp-Cell").nth(1).locator(".jp-InputArea").click()
    page.keyboard.press("Shift+Enter")
    out = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea")
    wait_text(out, "only half of it", timeout_s=60)
    text = out.inner_text()
    assert "('math-001', 1, 'correct', None, 'browser-test')" in text
    assert "('math-001', 2, 'partly', 'only half of it', 'browser-test')" in text
    page.close()


def test_reports_notebook(browser: Any, lab: Lab) -> None:
    """notebooks/reports.ipynb in Chromium: the workspace list, the baseline report's radar
    and table, its Score details with a view that opens the benchmark's cases, and the
    quick-annotation card."""
    page = open_and_run(browser, lab, "reports.ipynb")
    page.wait_for_selector(".enb-quick", timeout=180_000)
    wait_idle(page, timeout_s=180)
    assert visible_problems(page) == []
    ws_panel = page.locator(".enb-ws-panel").first
    wait_text(ws_panel, "8 jobs")
    assert ws_panel.locator(".enb-ws-row").count() == 8
    report = page.locator(".enb-baseline-panel").first
    wait_text(report, "envloop_alpha")
    assert wait_marks(report, 1, 60) >= 1  # the radar drew
    shot(page, report, "baseline-1-overview")
    report.locator(
        ".lm-TabBar-tab:has-text('Score details'), .p-TabBar-tab:has-text('Score details')"
    ).first.click()
    view = report.locator("button:has-text('view')").first
    view.wait_for(state="visible", timeout=30_000)
    view.click()
    page.wait_for_selector(".enb-baseline-panel .enb-job-panel", timeout=120_000)
    wait_text(report, "rows 1–", timeout_s=60)
    shot(page, report, "baseline-2-details")
    card = page.locator(".enb-quick").first
    wait_text(card, "3/180 annotated")
    shot(page, card, "reports-quick-annotation")
    page.close()


def test_the_browser_timing_benchmark_runs(browser: Any) -> None:
    """``benchmarks/bench_browser.py`` drives its own JupyterLab: every measurement is
    taken on a small job and renders (its numbers are the runner's, not asserted)."""
    from benchmarks import bench_browser

    results = bench_browser.run(2_000, 1, browser=browser)
    assert [r["what"] for r in results] == [
        "fresh kernel: import, load the sample job, cards",
        "fresh kernel: first chart after the cards",
        "cards: sample job", "whole panel built: sample job",
        "cards: generated job (2,000 attempts)", "whole panel built: generated job (2,000 attempts)",
        "overview: policy change",
        "cases: open the tab (first time)", "cases: next page", "cases: status filter",
        "cases: sort", "cases: switch to the per-task view", "cards: sample job, in a new cell",
        "floor: an HTML output, in a new cell", "floor: one HTML widget in a VBox, in a new cell",
    ]  # fmt: skip
    assert all(r["median_ms"] > 0 for r in results)
    by = {r["what"]: r for r in results}  # the cards come up before the panel is done
    assert by["cards: sample job"]["median_ms"] <= by["whole panel built: sample job"]["median_ms"]
    assert "| cards: sample job |" in bench_browser.markdown(results)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_transcript_and_side_by_side_page_search_and_jump_offline(
    browser: Any, tmp_path: Path, scheme: str
) -> None:
    """A 10,000-step transcript and a side-by-side view, as a notebook shows them (their
    own inline script, no network): the first page only, pages, search across pages,
    a timeline mark and "jump to first error" / "first divergence" reaching their step."""
    from tests.steps_helpers import job_with_steps, trajectory

    job = job_with_steps(
        trajectory("A", 1, 10_000, seed=1), trajectory("A", 2, 120, seed=1, diverge_at=9)
    )
    views = {"transcript": job.transcript("A", 1), "side": job.compare_attempts("A", 1, 2)}
    for name, view in views.items():
        (tmp_path / f"{name}.html").write_text(
            f"<!DOCTYPE html><meta charset='utf-8'><body>{view.html}</body>", encoding="utf-8"
        )
    with offline_page(browser, scheme, width=1300, on="pageerror") as (page, outside, errors):
        _transcript_and_side_by_side(page, tmp_path, views, scheme)
        assert outside == [] and errors == []


def _transcript_and_side_by_side(page: Any, tmp_path: Path, views: Any, scheme: str) -> None:
    page.goto((tmp_path / "transcript.html").as_uri())
    assert page.locator(".enb-tr").get_attribute("data-wired") == "1"
    assert page.locator(".enb-tr-view .enb-block").count() <= 200
    page.locator(".enb-tr-next").click()
    assert page.locator(".enb-tr-pageno").inner_text() == "2 / 50"
    page.locator(".enb-tl a").nth(250).click()  # a mark far on: its page opens
    assert page.locator(".enb-tr-pageno").inner_text() != "2 / 50"
    assert page.locator(".enb-tr-view .enb-flash").count() == 1
    page.locator(".enb-tr-search").fill("PermissionError")
    page.locator(".enb-tr-search").press("Enter")
    page.wait_for_function("document.querySelector('.enb-tr-count').textContent.includes(' of ')")
    assert page.locator(".enb-tr-view mark").count() >= 1
    assert page.locator(".enb-tl a.enb-hit").count() > 1
    page.locator("a.enb-go").first.click()  # jump to first error
    first_error = views["transcript"].first_error
    assert page.locator(".enb-flash").get_attribute("data-step") == str(first_error)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"transcript-{scheme}.png"))
    page.goto((tmp_path / "side.html").as_uri())
    page.locator(".enb-sbs-div a.enb-go").click()
    row = views["side"].first_divergence
    assert page.locator(".enb-flash").get_attribute("data-step") == str(row)
    assert "enb-first" in (page.locator(".enb-flash").get_attribute("class") or "")
    page.screenshot(path=str(ARTIFACTS / f"side-by-side-{scheme}.png"))


def _agent_runs_notebook(lab: Lab, name: str, last: str) -> None:
    """A scratch notebook loading the two checkpoints of ``sample_data/agent_runs`` (Harbor
    trial folders with ATIF trajectories), ending with the cell ``last``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import envloop_nb as enb\n"
            "ws = enb.open()\n"
            "base = ws.load('../sample_data/agent_runs/base', job_id='coder-base')\n"
            "sft = ws.load('../sample_data/agent_runs/sft-step2000', job_id='coder-sft-step2000')"
        ),
        nbformat.v4.new_code_cell(last),
    ]
    write_notebook(nb, lab.root / name)


def _flashed(view: Any) -> str | None:
    """The step the transcript last jumped to (its flashed block), waited for."""
    flash = view.locator(".enb-flash").first
    flash.wait_for(state="attached", timeout=10_000)
    return str(flash.get_attribute("data-step"))


_CLIPPED_PRE = """el => [...el.querySelectorAll('.enb-tr-view pre')].filter(
    p => p.offsetParent !== null && p.scrollHeight > p.clientHeight + 1).length"""


def test_cases_tab_transcript_of_a_harbor_attempt(browser: Any, lab: Lab) -> None:
    """The job panel's Cases tab on a Harbor job with ATIF trajectories, in JupyterLab: a
    case opens its transcript, "jump to first error", the transcript's own search, a
    timeline mark and "show more" all work, in the light and the dark theme."""
    _agent_runs_notebook(lab, "cases_transcript_check.ipynb", "base.panel()")
    page = open_and_run(browser, lab, "cases_transcript_check.ipynb")
    page.wait_for_selector(".enb-job-panel", state="attached", timeout=120_000)
    wait_idle(page)
    assert visible_problems(page) == []
    panel = page.locator(".enb-job-panel").first
    panel.locator(".lm-TabBar-tab:has-text('Cases')").first.click()
    table = panel.locator(".enb-cases table").first
    table.wait_for(state="visible", timeout=20_000)
    search = panel.locator("input[placeholder='search input, output, error…']").first
    search.fill("fix-git-merge-conflict")
    search.press("Enter")
    wait_text(panel, "rows 1–3 of 3")
    table.locator("tbody tr[data-row='1']").click()  # attempt 2: an edit_file error at step 12
    tr = panel.locator(".enb-tr").first
    tr.wait_for(state="visible", timeout=20_000)
    deadline = time.time() + 10
    while tr.get_attribute("data-wired") != "1" and time.time() < deadline:
        time.sleep(0.2)
    assert tr.get_attribute("data-wired") == "1", "the transcript's script did not run"
    assert "fix-git-merge-conflict · attempt 2" in tr.inner_text()
    assert "26 steps" in tr.inner_text()  # 19 blocks: each call's result in its card
    assert tr.locator(".enb-tr-view .enb-block").count() == 19
    view = tr.locator(".enb-tr-view")

    tr.locator("a.enb-go:has-text('first error')").first.click()
    assert _flashed(view) == "12"
    assert "no such file or directory" in view.locator(".enb-flash").first.inner_text()

    box = tr.locator(".enb-tr-search")
    box.fill("src/client.py")
    box.press("Enter")
    page.wait_for_function(
        "document.querySelector('.enb-job-panel .enb-tr-count').textContent.includes(' of ')"
    )
    assert view.locator("mark").count() >= 2
    assert tr.locator(".enb-tl a.enb-hit").count() >= 2
    box.fill("")
    box.press("Enter")

    tr.locator(".enb-tl a").nth(19).click()  # the timeline's 20th mark: step 20
    assert _flashed(view) == "20"

    more = view.locator("details.enb-more").first  # step 9: the conflicted file, 17 lines
    assert more.get_attribute("open") is None
    more.locator("summary").click()
    assert more.get_attribute("open") is not None
    assert ">>>>>>> feature/retry" in more.inner_text()
    more.scroll_into_view_if_needed()
    # the Cases detail's own "pre" rule (240px high, 11px) does not reach the transcript's
    # text: nothing cut, one code size (it was 11px in light and 13px in dark)
    assert tr.evaluate(_CLIPPED_PRE) == 0
    size = more.evaluate("el => getComputedStyle(el.querySelector('pre')).fontSize")
    shot(page, tr, "transcript-cases-light")
    assert visible_problems(page) == []

    theme(page, "Dark")
    try:
        colours = tr.evaluate(
            "el => [getComputedStyle(el.querySelector('.enb-block')).backgroundColor,"
            " getComputedStyle(el.querySelector('.enb-block pre')).color]"
        )
        assert "rgb(255, 255, 255)" not in colours[0], colours  # no white block in dark
        assert tr.evaluate(_CLIPPED_PRE) == 0
        assert more.evaluate("el => getComputedStyle(el.querySelector('pre')).fontSize") == size
        tr.locator("a.enb-go:has-text('first error')").first.click()
        assert _flashed(view) == "12"
        shot(page, tr, "transcript-cases-dark")
    finally:
        theme(page, "Light")
    page.close()


def test_transitions_open_two_attempts_side_by_side(browser: Any, lab: Lab) -> None:
    """The comparison panel's transitions drill-down in JupyterLab: "broken" lists the
    tasks the fine-tuned checkpoint broke, a task opens the two attempts side by side with
    the first divergence marked and one click away, in the light and the dark theme."""
    _agent_runs_notebook(
        lab, "side_by_side_check.ipynb", "ws.compare([base, sft], baseline=base).panel()"
    )
    page = open_and_run(browser, lab, "side_by_side_check.ipynb")
    page.wait_for_selector(".jp-Cell-outputArea .lm-TabBar-tab", timeout=120_000)
    wait_idle(page)
    assert visible_problems(page) == []
    out = page.locator(".jp-Cell-outputArea").nth(1)
    out.locator(".lm-TabBar-tab:has-text('Transitions')").first.click()
    out.locator("button:has-text('broken: 2')").first.click()
    wait_text(out, "coder-sft-step2000: broken")
    shot(page, out.locator(".lm-TabBar").first, "transitions-drilldown-light")
    out.locator("button:has-text('⇆ cron-log-rotate')").first.click()
    sbs = out.locator(".enb-tr").first
    sbs.wait_for(state="visible", timeout=20_000)
    deadline = time.time() + 10
    while sbs.get_attribute("data-wired") != "1" and time.time() < deadline:
        time.sleep(0.2)
    assert sbs.get_attribute("data-wired") == "1", "the side-by-side view's script did not run"
    text = sbs.inner_text()
    assert "coder-base · cron-log-rotate · attempt 1" in text
    assert "coder-sft-step2000 · cron-log-rotate · attempt 1" in text
    assert sbs.locator(".enb-first").count() >= 1  # the first divergence is marked
    sbs.locator(".enb-sbs-div a.enb-go").first.click()
    flash = sbs.locator(".enb-flash").first
    flash.wait_for(state="attached", timeout=10_000)
    assert "enb-first" in (flash.get_attribute("class") or "")
    shot(page, sbs, "side-by-side-transitions-light")
    assert visible_problems(page) == []
    theme(page, "Dark")
    try:
        shot(page, sbs, "side-by-side-transitions-dark")
    finally:
        theme(page, "Light")
    page.close()


def test_experiment_case_transcript_from_mlflow_traces(browser: Any, lab: Lab) -> None:
    """An experiment loaded from MLflow traces not judged yet (a real SQLite store, built by
    MLflow in the kernel; no feedback, so no evaluator): a case opened in the experiment panel shows its trace's spans as a transcript
    with the failing tool in red and "jump to first error" reaching it, light and dark."""
    pytest.importorskip("mlflow")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os, tempfile, warnings\n"
            "from pathlib import Path\n"
            "os.environ['MLFLOW_DISABLE_TELEMETRY'] = 'true'\n"
            "warnings.simplefilter('ignore')\n"
            "import mlflow\n"
            "from tests.test_mlflow_steps import _build\n"
            "import envloop_nb as enb\n"
            "root = Path(tempfile.mkdtemp())\n"
            "made = _build(root)\n"
            "ws = enb.open()\n"
            "exp = ws.load_mlflow(experiment='agents', tracking_uri=f'sqlite:///{root}/mlflow.db')\n"
            "print('CASES', len(exp.steps().groupby('task')))"
        ),
        nbformat.v4.new_code_cell("exp.panel()"),
    ]
    write_notebook(nb, lab.root / "experiment_steps_check.ipynb")
    page = open_and_run(browser, lab, "experiment_steps_check.ipynb")
    page.wait_for_selector(".enb-exp-panel", timeout=180_000)
    wait_idle(page, 180)
    assert visible_problems(page) == []
    panel = page.locator(".enb-exp-panel").first
    # the travel agent's trace: the one with the most steps, opened from the case list
    tid = page.evaluate(
        "[...document.querySelectorAll('.enb-exp-panel tr[data-trace]')].map(r => r.dataset.trace)"
    )
    assert len(tid) == 3
    for trace in tid:
        panel.locator(f"tr[data-trace='{trace}']").click()
        tr = panel.locator(".enb-tr").first
        tr.wait_for(state="visible", timeout=20_000)
        if "no seats on AF1" in tr.inner_text():
            break
    assert "11 steps" in tr.inner_text() and "case tr-" in tr.inner_text()
    deadline = time.time() + 10
    while tr.get_attribute("data-wired") != "1" and time.time() < deadline:
        time.sleep(0.2)
    tr.locator("a.enb-go:has-text('first error')").first.click()
    flash = tr.locator(".enb-flash").first
    flash.wait_for(state="attached", timeout=10_000)
    assert "no seats on AF1" in flash.inner_text()
    assert tr.evaluate(_CLIPPED_PRE) == 0
    shot(page, tr, "experiment-case-transcript-light")
    theme(page, "Dark")
    try:
        shot(page, tr, "experiment-case-transcript-dark")
    finally:
        theme(page, "Light")
    page.close()
