"""run.panel() in a real JupyterLab (headless Chromium): it opens, the curve and the matrix
draw, clicking a block of the matrix shows that task's attempts at that step, and picking
two steps opens the comparison panel; then the same in the dark theme. Screenshots go to
``test-artifacts/run-*.png``. The run report (light and dark) is checked offline."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lab import jupyterlab

from .conftest import ROOT
from .test_browser import (
    ARTIFACTS,
    Lab,
    _marks,
    _open_and_run,
    _shot,
    _visible_problems,
    _wait_idle,
    _wait_text,
    _write_notebook,
)

pytestmark = pytest.mark.browser

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

    scratch = Path(tempfile.mkdtemp(prefix="enb-browser-run-"))
    try:
        nb_dir = scratch / "notebooks"
        nb_dir.mkdir()
        (scratch / "sample_data").symlink_to(ROOT / "sample_data")
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(PANEL_CODE)]
        _write_notebook(nb, nb_dir / "run_panel_check.ipynb")
        with jupyterlab(nb_dir, env={"PYTHONPATH": str(ROOT)}) as url:
            yield Lab(url, scratch, nb_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from benchmarks.lab import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _wait_marks(locator: Any, at_least: int, timeout_s: float = 60) -> int:
    deadline = time.time() + timeout_s
    while _marks(locator) < at_least and time.time() < deadline:
        time.sleep(0.5)
    return _marks(locator)


def test_the_run_panel_in_the_browser(browser: Any, lab: Lab) -> None:
    page = _open_and_run(browser, lab, "run_panel_check.ipynb")
    page.wait_for_selector(".enb-run-panel", timeout=180_000)
    _wait_idle(page, 180)
    assert _visible_problems(page) == []
    panel = page.locator(".enb-run-panel").first
    _wait_text(panel, "best score: step 6")
    assert _wait_marks(panel, 2) >= 2, "the curve and the matrix did not both draw"
    text = panel.inner_text()
    for expected in ("smallest detectable change", "5 → 6", "tool-use-12", "code-16"):
        assert expected in text
    _shot(page, panel, "run-1-panel")

    # a click on a block of the matrix: that task's attempts at that step
    matrix = panel.locator(".vega-embed").nth(1)
    matrix.scroll_into_view_if_needed()
    box = matrix.locator("svg.marks, canvas.marks").first.bounding_box()
    assert box is not None
    # the plot starts right of the task labels; click well inside it, on the 6th step
    page.mouse.click(box["x"] + box["width"] * 0.42, box["y"] + box["height"] * 0.5)
    _wait_text(panel, "(job job_rl0412_", timeout_s=30)
    _shot(page, panel.locator(".vega-embed").nth(1), "run-2-matrix-click")

    # two steps -> the comparison panel
    panel.locator(".widget-dropdown:has(label:text-is('step A')) select").select_option(label="5")
    panel.locator(".widget-dropdown:has(label:text-is('step B')) select").select_option(label="6")
    before = _marks(panel)
    panel.locator("button:has-text('Compare')").first.click()
    _wait_text(panel, "(baseline) vs step", timeout_s=60)
    _wait_text(panel, "job_rl0412_r06", timeout_s=60)
    assert _wait_marks(panel, before + 1) > before, "no chart drew in the comparison panel"
    assert _visible_problems(page) == []
    _shot(page, panel.locator(".widget-vbox").last, "run-3-compare")

    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.hover(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Dark')")
    time.sleep(2)
    _shot(page, panel, "run-4-panel-dark")
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.hover(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Light')")
    time.sleep(1)
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_run_report_opens_offline(browser: Any, tmp_path: Path, scheme: str) -> None:
    import envloop_nb as enb

    ws = enb.open()
    ws.load_all(ROOT / "sample_data" / "training_run")
    report = ws.run("rl-0412").export_html(tmp_path / "run.html")
    context = browser.new_context(viewport={"width": 1200, "height": 1400}, color_scheme=scheme)
    outside: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(report.path.as_uri())
    deadline = time.time() + 30
    state: dict[str, int] = {}
    while time.time() < deadline:
        state = page.evaluate("window.enbCharts") or {}
        if state and state["drawn"] + state["failed"] >= state["total"]:
            break
        time.sleep(0.25)
    assert state == {"drawn": 2, "failed": 0, "total": 2}
    assert outside == [] and errors == []
    assert page.locator("section h2").all_inner_texts() == list(report.sections)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"report-run-{scheme}.png"), full_page=True)
    context.close()
