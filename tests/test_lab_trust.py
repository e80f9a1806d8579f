"""``bash .ci/lab`` opens the notebooks trusted, so their stored outputs look as they were made.

The notebooks are committed with their outputs (nbval compares them). JupyterLab shows an
untrusted notebook's stored HTML sanitised, without its ``<style>``: ``job.summary()``'s
cards read as a list of words until Run All. ``.ci/lab`` signs them with ``jupyter trust``
before the lab starts; this test runs that very line of ``.ci/lab`` against a fresh Jupyter
data folder (its own signature database), then opens the quickstart, without running it,
in a real JupyterLab and headless Chromium, and looks at the stored cards.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.lab import CHROMIUM, CHROMIUM_ARGS, jupyterlab

from .conftest import ROOT

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip(f"Chromium not found at {CHROMIUM}", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def trust_line() -> str:
    """The line of ``.ci/lab`` that trusts the notebooks."""
    lines = [
        ln.strip()
        for ln in (ROOT / ".ci" / "lab").read_text().splitlines()
        if re.search(r"\bjupyter trust\b", ln) and not ln.lstrip().startswith("#")
    ]
    assert lines, ".ci/lab does not trust the notebooks (no `jupyter trust` line)"
    return lines[0]


@pytest.fixture
def scratch() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="enb-trust-"))
    try:
        (root / "notebooks").mkdir()
        shutil.copy(ROOT / "notebooks" / "quickstart.ipynb", root / "notebooks")
        (root / "sample_data").symlink_to(ROOT / "sample_data")
        (root / "data").mkdir()
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cards_display(url: str) -> str:
    """Open the quickstart (no cell run) and read the stored cards' CSS display."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/quickstart.ipynb?reset")
            page.wait_for_selector(".jp-Notebook .enb-cards", state="attached", timeout=90_000)
            return str(
                page.locator(".jp-Notebook .enb-cards").first.evaluate(
                    "e => getComputedStyle(e).display"
                )
            )
        finally:
            browser.close()


def test_the_lab_command_opens_the_quickstart_with_styled_cards(scratch: Path) -> None:
    line = trust_line()
    env = {"JUPYTER_DATA_DIR": str(scratch / "data")}  # a signature database of its own
    with jupyterlab(scratch / "notebooks", env=env) as url:
        assert _cards_display(url) != "flex"  # untrusted: sanitised, no <style>
        done = subprocess.run(
            ["bash", "-c", line], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
            text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert _cards_display(url) == "flex"  # the cards' own stylesheet applies


def test_the_lab_opens_without_the_news_question(tmp_path: Path) -> None:
    """JupyterLab's first open asked, over the quickstart, whether to fetch Jupyter's news
    (a toast seen in the screenshot of a fresh clone's lab). ``.ci/lab`` writes the lab's
    defaults (``overrides.json``) saying no: run its lines in a scratch folder and check
    them against JupyterLab's own settings schema, so a renamed setting cannot pass."""
    import json

    text = (ROOT / ".ci" / "lab").read_text()
    start = text.index("mkdir -p .venv/share/jupyter/lab/settings")
    end = text.index("overrides.json", start) + len("overrides.json")
    subprocess.run(["bash", "-euc", text[start:end]], cwd=tmp_path, check=True)
    overrides = json.loads(
        (tmp_path / ".venv/share/jupyter/lab/settings/overrides.json").read_text()
    )
    plugin = "@jupyterlab/apputils-extension:notification"
    assert overrides == {plugin: {"fetchNews": "false", "checkForUpdates": False}}
    schema_path = Path(
        sys.prefix, "share/jupyter/lab/schemas/@jupyterlab/apputils-extension/notification.json"
    )
    properties = json.loads(schema_path.read_text())["properties"]
    assert {"const": "false", "title": "Never"} in properties["fetchNews"]["oneOf"]
    assert properties["checkForUpdates"]["type"] == "boolean"
