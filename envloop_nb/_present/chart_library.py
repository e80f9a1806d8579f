"""Charts that share one copy of the chart library per page.

altair's offline ``JupyterChart`` carries its whole JavaScript bundle (Vega, Vega-Lite,
vega-embed and its own front end: ~900,000 characters) in a synced trait of **every**
chart widget, so a panel of seven charts sent, stored and evaluated it seven times, and
every bucket Apply once more. Here the bundle travels once per kernel instead:

- :class:`ChartLibrary` is a hidden anywidget whose front-end module *is* the bundle
  (altair's own ``JupyterChart`` front end, bundled offline by vl-convert, exactly as
  ``JupyterChart.enable_offline()`` does) plus one line that hands its ``render`` to the
  page. One instance per kernel (:func:`chart_library`); its model loads the module
  when the page creates it, displayed or not.
- :class:`Chart` is altair's ``JupyterChart`` (same traits, same Python side:
  selections, params, ``chart=`` updates) whose front-end module is a few lines that
  wait for the library and call its ``render``.

The bundle is built once per machine (:func:`envloop_nb._present.js_cache.cached_bundle`).
"""

from __future__ import annotations

from typing import Any

from .altair_import import altair

#: ``Chart`` and ``ChartLibrary`` are made on first use (see ``__getattr__``).
__all__ = ["THIN_ESM", "chart_library", "library_esm"]

#: The page-wide handle: ``{ready: Promise<{render}>, resolve}``, made by whichever
#: module runs first.
_HANDLE = """const enbHandle = (() => {
  const g = globalThis;
  if (!g.__envloopChartLibrary) {
    let resolve;
    const ready = new Promise((r) => { resolve = r; });
    g.__envloopChartLibrary = { ready, resolve };
  }
  return g.__envloopChartLibrary;
})();
"""

#: The front end of every chart: wait for the library (once per page), then draw.
THIN_ESM = (
    "// envloop_nb chart: the chart library arrives once per page (envloop_nb ChartLibrary)\n"
    + _HANDLE
    + """async function render({ model, el }) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(
      "the chart library did not load in 60 s (envloop_nb ChartLibrary widget)")), 60000);
  });
  try {
    const lib = await Promise.race([enbHandle.ready, late]);
    return await lib.render({ model, el });
  } catch (error) {
    el.innerHTML = '<div style="color:red;"><p>JavaScript Error: ' + error.message + "</p></div>";
  } finally {
    clearTimeout(timer);
  }
}
export default { render };
"""
)

_PUBLISH = "\nenbHandle.resolve({ render });\n"


def library_esm() -> str:
    """altair's ``JupyterChart`` front end bundled offline, handing ``render`` to the page.

    Built by vl-convert as ``JupyterChart.enable_offline()`` builds it (the same source,
    the same bundler, the same Vega-Lite version), once per machine.
    """
    from importlib.metadata import version as installed

    altair()
    from altair.jupyter.jupyter_chart import load_js_src

    from .js_cache import cached_bundle, vl_version

    version = vl_version()

    def build() -> str:
        import vl_convert as vlc

        lines = load_js_src().split("\n")
        # as altair does: drop the leading blank, comment and import (CDN) lines
        while lines and (
            not lines[0].strip() or lines[0].startswith("import") or lines[0].startswith("//")
        ):
            lines.pop(0)
        source = _HANDLE + "\n".join(lines) + _PUBLISH
        bundle: str = vlc.javascript_bundle(source, vl_version=version)
        return bundle

    name = f"altair-chart-{installed('altair')}-{installed('vl-convert-python')}-{version}.js"
    return cached_bundle(name, build)


def _classes() -> tuple[Any, Any]:
    altair()  # first, through the quick import
    import altair as alt
    import anywidget

    class ChartLibrary(anywidget.AnyWidget):
        """The chart library, once per kernel (never displayed: its model loads the
        module when the page creates it; see the module docstring)."""

        _esm = library_esm()

    class Chart(alt.JupyterChart):
        """altair's ``JupyterChart`` drawn by the page's one :class:`ChartLibrary`."""

        _esm = THIN_ESM

    for cls in (ChartLibrary, Chart):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return ChartLibrary, Chart


_CLASSES: list[Any] = []
_LIBRARY: list[Any] = []


def __getattr__(name: str) -> Any:
    """``ChartLibrary`` and ``Chart``, made on first use (altair and anywidget imported then)."""
    if name in ("ChartLibrary", "Chart"):
        if not _CLASSES:
            _CLASSES.extend(_classes())
        return _CLASSES[0] if name == "ChartLibrary" else _CLASSES[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def chart_library() -> Any:
    """The kernel's one :class:`ChartLibrary` (made again if it was closed)."""
    if not _LIBRARY or getattr(_LIBRARY[0], "comm", None) is None:
        _LIBRARY[:] = [__getattr__("ChartLibrary")()]
    return _LIBRARY[0]
