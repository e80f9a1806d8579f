"""Shared fixtures: paths to ../shared, fresh workspaces, and a frame-kind parametrization."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import envloop_nb as enb

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
