"""What the browser tests share (``tests/test_browser.py``, ``tests/test_browser_run.py``):
a JupyterLab over a scratch folder, the page helpers (run a notebook, wait, look, take a
screenshot, switch the theme) and a page that opens a standalone report with the network
blocked. The ``browser`` fixture (headless Chromium) is in ``tests/conftest.py``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lab import CHROMIUM, jupyterlab, open_notebook

from .conftest import ROOT

__all__ = [
    "ARTIFACTS",
    "BAD_TEXT",
    "Lab",
    "marks",
    "offline_page",
    "open_and_run",
    "require_browser",
    "scratch_lab",
    "shot",
    "theme",
    "visible_problems",
    "wait_charts",
    "wait_idle",
    "wait_marks",
    "wait_text",
    "write_notebook",
]

ARTIFACTS = ROOT / "test-artifacts"
BAD_TEXT = ("Error loading script", "Traceback", "Error displaying widget", "Failed to load model")


def require_browser() -> None:
    """Skip the calling test module without Chromium or playwright (CI installs both)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)",
            allow_module_level=True,
        )
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


class Lab:
    """A running JupyterLab: its ``url``, the folder exports go to, its notebooks' folder."""

    def __init__(self, url: str, exports: Path, root: Path) -> None:
        self.url, self.exports, self.root = url, exports, root


@contextmanager
def scratch_lab(prefix: str, fill: Callable[[Path], None]) -> Iterator[Lab]:
    """A JupyterLab over a scratch ``notebooks/`` folder that ``fill`` writes (beside it
    ``sample_data/``, linked; exports to ``exports/``, named in ``ENB_EXPORT_DIR``), so a
    run never rewrites a committed notebook; the folder is removed after."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        nb_dir = scratch / "notebooks"
        nb_dir.mkdir()
        (scratch / "sample_data").symlink_to(ROOT / "sample_data")
        exports = scratch / "exports"
        exports.mkdir()
        fill(nb_dir)
        env = {"ENB_EXPORT_DIR": str(exports), "PYTHONPATH": str(ROOT)}
        with jupyterlab(nb_dir, env=env) as url:
            yield Lab(url, exports, nb_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_notebook(nb: Any, path: Path) -> None:
    """Write a scratch notebook for the lab, on the default Python 3 kernel."""
    import nbformat

    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nbformat.write(nb, str(path))


def open_and_run(browser: Any, lab: Lab, notebook: str) -> Any:
    """Open ``notebook`` in the lab and run all its cells; returns the page."""
    page = open_notebook(browser, lab.url, notebook, height=1600)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')", timeout=10_000)
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')", timeout=10_000)
    return page


def wait_idle(page: Any, timeout_s: float = 120) -> None:
    """Wait until every code cell has run (no '[*]' prompt left)."""
    deadline = time.time() + timeout_s
    time.sleep(2)
    while time.time() < deadline:
        busy = page.evaluate(
            "[...document.querySelectorAll('.jp-InputPrompt')].some(e => e.textContent.includes('*'))"
        )
        if not busy:
            return
        time.sleep(0.5)
    raise AssertionError("the notebook did not finish running")


def visible_problems(page: Any) -> list[str]:
    """The error texts (:data:`BAD_TEXT`) a person would see in the notebook."""
    text = page.inner_text(".jp-Notebook")
    return [bad for bad in BAD_TEXT if bad in text]


def marks(locator: Any) -> int:
    """Charts drawn under ``locator``."""
    return int(locator.locator("svg.marks, canvas.marks").count())


def wait_marks(locator: Any, at_least: int, timeout_s: float = 60) -> int:
    """Charts drawn under ``locator``, waiting up to ``timeout_s`` for ``at_least``."""
    deadline = time.time() + timeout_s
    while marks(locator) < at_least and time.time() < deadline:
        time.sleep(0.5)
    return marks(locator)


def wait_text(locator: Any, text: str, timeout_s: float = 20) -> None:
    """Wait for ``text`` under ``locator`` (failing with what was there instead)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if text in locator.inner_text():
            return
        time.sleep(0.25)
    raise AssertionError(f"{text!r} did not appear; saw: {locator.inner_text()[:3000]!r}")


def shot(page: Any, target: Any, name: str) -> Path:
    """Screenshot the viewport with ``target``'s top at the top of the notebook area."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    target.evaluate("el => el.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    page.screenshot(path=str(path))
    return path


def theme(page: Any, name: str) -> None:
    """Switch JupyterLab's theme ("Light" or "Dark") from its Settings menu."""
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.hover(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(f".lm-Menu-itemLabel:text-is('JupyterLab {name}')")
    time.sleep(2)


@contextmanager
def offline_page(
    browser: Any, scheme: str, *, width: int = 1200, height: int = 1400, on: str = "console"
) -> Iterator[tuple[Any, list[str], list[str]]]:
    """A page in its own context with every request that would leave ``file://`` blocked:
    ``(page, outside, errors)`` — the blocked URLs and the page's errors (console errors,
    or uncaught ones with ``on="pageerror"``); the context is closed after."""
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
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
    if on == "console":
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    else:
        page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield page, outside, errors
    finally:
        context.close()


def wait_charts(page: Any, timeout_s: float = 30) -> dict[str, int]:
    """A standalone report's chart count once every chart drew or failed
    (``window.enbCharts``: drawn, failed, total)."""
    deadline = time.time() + timeout_s
    state: dict[str, int] = {}
    while time.time() < deadline:
        state = page.evaluate("window.enbCharts") or {}
        if state and state["drawn"] + state["failed"] >= state["total"]:
            break
        time.sleep(0.25)
    return state
