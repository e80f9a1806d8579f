"""The chart library travels once per page, not in every chart widget (issue 15).

altair's offline ``JupyterChart`` synced its ~900,000-character bundle in every chart;
``envloop_nb._present.chart_library`` sends it once per kernel in a hidden widget, and
each chart carries a few lines. That the charts still draw in a real JupyterLab is
checked by ``tests/test_browser.py`` (every panel notebook, and a page reload).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import pytest
from ipywidgets.widgets.widget import _instances

import envloop_nb as enb
from envloop_nb._present import chart_library as lib
from envloop_nb._present.js_cache import cached_bundle

from .conftest import SAMPLE_DATA
from .offline_helpers import CDN_URL

BIG = 100_000  # characters: a module this long carries the library


def _carriers() -> list[object]:
    return [w for w in _instances.values() if len(getattr(w, "_esm", "") or "") > BIG]


def _chart() -> alt.Chart:
    return alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_bar().encode(x="x")


def test_a_panel_of_charts_carries_the_library_once() -> None:
    panel = enb.open().load(SAMPLE_DATA / "base.json").panel()
    charts = list(panel.overview.chart_widgets.values())
    assert len(charts) >= 5
    assert all(isinstance(c, alt.JupyterChart) and len(c._esm) < 5_000 for c in charts)
    for _ in range(3):  # more charts (a bucket Apply, a comparison) add no library
        enb.chart_widget(_chart())
    assert _carriers() == [lib.chart_library()]


def test_the_library_is_altairs_front_end_bundled_offline() -> None:
    library = lib.chart_library()._esm
    assert CDN_URL.findall(library) == [] and CDN_URL.findall(lib.THIN_ESM) == []
    assert "__envloopChartLibrary" in library  # hands altair's render to the page (minified)
    assert "vega" not in lib.THIN_ESM.lower().replace("envloop_nb", "")
    assert "__envloopChartLibrary" in lib.THIN_ESM and "vega-embed" in library


def test_a_closed_library_is_made_again() -> None:
    first = lib.chart_library()
    first.close()
    enb.chart_widget(_chart())
    again = lib.chart_library()
    assert again is not first and again.comm is not None
    assert _carriers() == [again]


def test_a_bare_altair_chart_uses_the_library_too() -> None:
    """A composition of ours is a plain altair chart; enable_offline makes altair's
    renderer the library's, so it needs no bundle (and no CDN) of its own."""
    from envloop_nb._present.render import enable_offline

    enable_offline()
    bundle = (_chart() | _chart())._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    assert CDN_URL.findall(str(data)) == []
    assert _carriers() == [lib.chart_library()]


def test_a_cached_bundle_cut_short_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cached_bundle("b-1.js", lambda: "whole") == "whole"
    cached = tmp_path / "envloop_nb" / "b-1.js"
    cached.write_text(cached.read_text()[:3])  # a write that stopped half way
    assert cached_bundle("b-1.js", lambda: "rebuilt") == "rebuilt"
    assert cached_bundle("b-1.js", lambda: "not again") == "rebuilt"
