"""The docs site: ``mkdocs build --strict`` passes, and the site opens offline from file://.

The site is built once per module into a scratch folder (never over ``site/``), with
warnings as errors, the way ``.ci/test`` builds it. The pages must ask for nothing from the
network: no web fonts, no script or stylesheet from a CDN, search working from ``file://``
(mkdocs-material's ``offline`` plugin). The browser test opens the built site in headless
Chromium with every request that is not ``file://`` refused and recorded.
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

from .conftest import ROOT

#: every attribute that makes a browser fetch something by itself
_FETCHING = re.compile(
    r"""<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)=["']([^"']+)["']"""
)


@pytest.fixture(scope="module")
def site() -> Iterator[Path]:
    out = Path(tempfile.mkdtemp(prefix="enb-site-"))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
        assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
        yield out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_the_site_builds_strict_with_every_user_guide_page(site: Path) -> None:
    for page in (
        "index.html",
        "getting-started.html",
        "loading.html",
        "numbers.html",
        "panels.html",
        "comparing.html",
        "buckets-exports.html",
        "experiments.html",
        "reports-annotation.html",
        "scale-out.html",
        "trajectories.html",
        "training-runs.html",
        "benchmarks/RESULTS.html",
        "architecture.html",
        "reference/job.html",
    ):
        assert (site / page).is_file(), page


def test_the_api_reference_is_generated_from_the_docstrings(site: Path) -> None:
    job = (site / "reference" / "job.html").read_text(encoding="utf-8")
    # a method and a sentence of its docstring (Job.transcript)
    assert 'id="envloop_nb.Job.transcript"' in job
    assert "One attempt&#39;s steps as a transcript" in job or "One attempt's steps" in job
    # Sphinx roles left in docstrings (:class:`x`) do not show as raw text
    for html in (site / "reference").glob("*.html"):
        assert not re.search(r":(mod|func|class|meth|attr):<code>", html.read_text("utf-8")), html


def test_no_page_fetches_anything_from_the_network(site: Path) -> None:
    external = []
    for html in site.rglob("*.html"):
        for url in _FETCHING.findall(html.read_text(encoding="utf-8")):
            if re.match(r"(?i)(https?:)?//", url):
                external.append(f"{html.relative_to(site)}: {url}")
    assert not external, "\n".join(external[:20])


@pytest.mark.browser
def test_the_site_opens_offline_from_file_and_search_works(site: Path) -> None:
    from benchmarks.lab import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

    refused: list[str] = []

    def only_files(route: object) -> None:
        request = route.request  # type: ignore[attr-defined]
        if request.url.startswith("file://"):
            route.continue_()  # type: ignore[attr-defined]
        else:
            refused.append(request.url)
            route.abort()  # type: ignore[attr-defined]

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.route("**/*", only_files)
            failed: list[str] = []
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto((site / "index.html").as_uri())
            assert page.title().startswith("envloop_nb")
            assert page.locator("img[src$='panel.png']").evaluate("i => i.naturalWidth") > 0
            # search: the offline plugin's index answers from file://
            page.locator("input.md-search__input").fill("pass@k")
            page.wait_for_selector(".md-search-result__item", timeout=15_000)
            assert page.locator(".md-search-result__item").count() > 0
            # a link from the home page to a generated reference page opens
            page.goto((site / "reference" / "job.html").as_uri())
            page.wait_for_selector("[id='envloop_nb.Job.summary']")
        finally:
            browser.close()
    assert not refused, f"requests left the machine: {refused[:10]}"
    assert not failed, f"requests failed: {failed[:10]}"
