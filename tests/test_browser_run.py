"""run.panel() in a real JupyterLab (headless Chromium): it opens, the curve and the matrix
draw, clicking a block of the matrix shows that task's attempts at that step, and picking
two steps opens the comparison panel; then the same in the dark theme. Screenshots go to
``test-artifacts/run-*.png``. The run report (light and dark) is checked offline."""

from __future__ import annotations

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

PANEL_CODE = (
    "import envloop_nb as enb\n"
    "ws = enb.open()\n"
    "_ = ws.load_all('../sample_data/training_run')\n"
    "run = ws.run('rl-0412')\n"
    "panel = run.panel()\n"
    "panel"
)


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    """A JupyterLab server over a scratch folder with the run panel's notebook."""
    import nbformat

    def fill(nb_dir: Path) -> None:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(PANEL_CODE)]
        write_notebook(nb, nb_dir / "run_panel_check.ipynb")

    with scratch_lab("enb-browser-run-", fill) as running:
        yield running


def test_the_run_panel_in_the_browser(browser: Any, lab: Lab) -> None:
    page = open_and_run(browser, lab, "run_panel_check.ipynb")
    page.wait_for_selector(".enb-run-panel", timeout=180_000)
    wait_idle(page, 180)
    assert visible_problems(page) == []
    panel = page.locator(".enb-run-panel").first
    wait_text(panel, "best score: step 6")
    assert wait_marks(panel, 2) >= 2, "the curve and the matrix did not both draw"
    text = panel.inner_text()
    for expected in ("smallest detectable change", "5 → 6", "tool-use-12", "code-16"):
        assert expected in text
    shot(page, panel, "run-1-panel")

    # a click on a block of the matrix: that task's attempts at that step
    matrix = panel.locator(".vega-embed").nth(1)
    matrix.scroll_into_view_if_needed()
    box = matrix.locator("svg.marks, canvas.marks").first.bounding_box()
    assert box is not None
    # the plot starts right of the task labels; click well inside it, on the 6th step
    page.mouse.click(box["x"] + box["width"] * 0.42, box["y"] + box["height"] * 0.5)
    wait_text(panel, "(job job_rl0412_", timeout_s=30)
    shot(page, panel.locator(".vega-embed").nth(1), "run-2-matrix-click")

    # two steps -> the comparison panel
    panel.locator(".widget-dropdown:has(label:text-is('step A')) select").select_option(label="5")
    panel.locator(".widget-dropdown:has(label:text-is('step B')) select").select_option(label="6")
    before = marks(panel)
    panel.locator("button:has-text('Compare')").first.click()
    wait_text(panel, "(baseline) vs step", timeout_s=60)
    wait_text(panel, "job_rl0412_r06", timeout_s=60)
    assert wait_marks(panel, before + 1) > before, "no chart drew in the comparison panel"
    assert visible_problems(page) == []
    shot(page, panel.locator(".widget-vbox").last, "run-3-compare")

    theme(page, "Dark")
    shot(page, panel, "run-4-panel-dark")
    theme(page, "Light")
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_run_report_opens_offline(browser: Any, tmp_path: Path, scheme: str) -> None:
    import envloop_nb as enb

    ws = enb.open()
    ws.load_all(ROOT / "sample_data" / "training_run")
    report = ws.run("rl-0412").export_html(tmp_path / "run.html")
    with offline_page(browser, scheme) as (page, outside, errors):
        page.goto(report.path.as_uri())
        assert wait_charts(page) == {"drawn": 2, "failed": 0, "total": 2}
        assert outside == [] and errors == []
        assert page.locator("section h2").all_inner_texts() == list(report.sections)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"report-run-{scheme}.png"), full_page=True)
