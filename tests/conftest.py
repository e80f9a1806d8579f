"""Shared fixtures: paths to ../shared, fresh workspaces, and a frame-kind parametrization."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import envloop_nb as enb

# Property tests never lean on the clock or on luck: no deadline (the work is not about time
# and a loaded machine must not fail it), no "too slow" health check, and a fixed sequence of
# examples (derandomize) so every run on every machine tries the same cases; nothing is kept
# between runs. ENB_HYPOTHESIS_PROFILE=explore searches with fresh random examples instead.
_QUIET = [HealthCheck.too_slow]
settings.register_profile(
    "fixed", deadline=None, derandomize=True, database=None, suppress_health_check=_QUIET
)
settings.register_profile(
    "explore", deadline=None, database=None, max_examples=1000, suppress_health_check=_QUIET
)
settings.load_profile(os.environ.get("ENB_HYPOTHESIS_PROFILE", "fixed"))

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
EXAMPLES = SHARED / "formats" / "examples"
SAMPLE_DATA = ROOT / "sample_data"
THREE_TASKS = EXAMPLES / "three-tasks-two-attempts.json"
TAU_BENCH = FIXTURES / "tau-bench" / "gpt-4o-airline.json"
HARBOR = FIXTURES / "harbor"


@pytest.fixture
def ws() -> enb.Workspace:
    """A fresh in-memory workspace."""
    workspace = enb.open()
    yield workspace
    workspace.close()


@pytest.fixture(params=["pandas", "polars"])
def frame_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def default_renderer() -> Iterator[None]:
    """altair's default (CDN) renderer, as in a kernel that never opened a panel."""
    import altair as alt

    before = alt.renderers.active
    options = dict(alt.renderers.options)
    alt.renderers.enable("default")
    try:
        yield
    finally:
        alt.renderers.enable(before, **options)


#: The fixtures' generating scripts (run by hand with the real harnesses) are not tests.
collect_ignore_glob = ["data/*"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium (Debian's, through playwright), one per test module; the browser
    tests' other pieces are in ``tests/browser_lab.py``."""
    from playwright.sync_api import sync_playwright

    from benchmarks.lab import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
