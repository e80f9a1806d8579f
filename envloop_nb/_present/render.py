"""Offline chart rendering: every chart the toolkit returns works with no network.

altair's default renderers load vega from a CDN ("Error loading script" on an offline
cluster). We render through an ``alt.JupyterChart`` (an anywidget) whose JavaScript
arrives with the kernel's one hidden chart library widget
(:mod:`envloop_nb._present.chart_library`: altair's own front end bundled offline, sent
once per page instead of ~900,000 characters in every chart), so charts sit inside
ipywidgets panels and in plain output alike, with no internet access.

Every chart the library returns (``cmp.radar()``, ``cmp.bars()``, ``cmp.curves()``, the
panels' charts) goes through :func:`offline_chart`: it stays an altair chart of the same
kind (``to_dict()``, ``properties()``, ``+``, ``|`` all work), but displays as that
offline chart widget whatever renderer altair has enabled, and ``to_html()`` /
``save("x.html")`` inline the vega bundle instead of linking a CDN. A chart derived from
it (``chart.properties(width=500)``) keeps that behaviour; a composition (``a | b``) is
a plain altair chart again, which renders the same way once the kernel has shown one of
ours (displaying one calls :func:`enable_offline`, which makes this altair's renderer)
or through :func:`chart_widget`. :func:`chart_widget` (``enb.chart_widget``) gives a
chart as an ipywidget, to place in your own layouts.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .altair_import import altair

__all__ = ["chart_widget", "enable_offline", "offline_chart"]

_enabled = False
_PREFIX = "Offline"
_CLASSES: dict[Any, Any] = {}


def enable_offline() -> None:
    """Make altair render offline in this kernel (idempotent).

    Registers and enables the ``envloop_nb`` renderer: a bare altair ``chart`` in a cell
    is drawn by the page's one chart library, like ours, with no CDN.
    """
    global _enabled
    if _enabled:
        return
    alt = altair()

    alt.renderers.register("envloop_nb", _render)
    alt.renderers.enable("envloop_nb")
    alt.data_transformers.disable_max_rows()  # we aggregate before charting
    _enabled = True


def _render(spec: dict[str, Any], **metadata: Any) -> Any:
    """altair's renderer protocol: the mimebundle of a chart widget for ``spec``."""
    alt = altair()

    chart = alt.Chart.from_dict(spec)
    return _library_chart(chart, metadata.get("embed_options"))._repr_mimebundle_()


def _library_chart(chart: Any, embed_options: dict[str, Any] | None = None) -> Any:
    """The chart widget for ``chart``, after the page's one copy of the chart library."""
    from . import chart_library as lib

    lib.chart_library()
    return lib.Chart(chart, embed_options=embed_options)


def chart_widget(chart: Any) -> Any:
    """An ipywidget that draws ``chart`` offline (an ``altair.JupyterChart`` whose
    JavaScript comes once per page with the kernel's chart library widget).

    Use it to put a chart in an ipywidgets layout (``widgets.HBox([...])``); a chart on
    its own in a cell renders offline already.

    Examples
    --------
    >>> import altair as alt, pandas as pd, envloop_nb as enb
    >>> w = enb.chart_widget(alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x"))
    >>> isinstance(w, alt.JupyterChart), w.chart.to_dict()["mark"], len(w._esm) < 5_000
    (True, {'type': 'point'}, True)
    """
    enable_offline()
    return _library_chart(chart)


def _offline_class(base: Any) -> Any:
    """A subclass of altair's ``base`` chart class that renders offline (made once)."""
    made = _CLASSES.get(base)
    if made is not None:
        return made

    def _repr_mimebundle_(self: Any, *args: Any, **kwargs: Any) -> Any:
        # the offline JupyterChart widget, not altair's renderer (CDN by default)
        return chart_widget(self)._repr_mimebundle_(*args, **kwargs)

    def to_html(self: Any, *args: Any, inline: bool = True, **kwargs: Any) -> str:
        html: str = base.to_html(self, *args, inline=inline, **kwargs)
        return html

    def save(
        self: Any, fp: Any, format: Any = None, *args: Any, inline: Any = None, **kwargs: Any
    ) -> None:
        if inline is None:  # inline HTML; altair warns when told so for another format
            name = fp if isinstance(fp, str | os.PathLike) else getattr(fp, "name", "")
            inline = (format or os.path.splitext(str(name))[1].lstrip(".")).lower() == "html"
        base.save(self, fp, format, *args, inline=inline, **kwargs)

    name = _PREFIX + base.__name__
    cls = type(
        name,
        (base,),
        {
            "__module__": __name__,
            "__qualname__": name,
            "__doc__": f"An altair ``{base.__name__}`` that renders offline (see envloop_nb._present.render).",
            "_repr_mimebundle_": _repr_mimebundle_,
            "to_html": to_html,
            "save": save,
        },
    )
    setattr(sys.modules[__name__], name, cls)  # importable by name: charts pickle
    _CLASSES[base] = cls
    return cls


def __getattr__(name: str) -> Any:
    """``OfflineLayerChart`` and friends, made on first use (e.g. when unpickling)."""
    if name.startswith(_PREFIX):
        alt = altair()

        base: Any = getattr(alt, name[len(_PREFIX) :], None)
        if isinstance(base, type) and issubclass(base, alt.TopLevelMixin):
            return _offline_class(base)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def offline_chart(chart: Any) -> Any:
    """``chart`` (an altair top-level chart), made to render offline by default.

    The same chart, of a subclass of its altair class: displayed, it is the offline
    ``JupyterChart`` (no CDN, whatever ``alt.renderers`` says); ``to_html()`` and
    ``save("….html")`` inline the vega bundle unless given ``inline=False``.

    Examples
    --------
    >>> import altair as alt, pandas as pd
    >>> chart = offline_chart(alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x"))
    >>> isinstance(chart, alt.Chart), "cdn.jsdelivr.net" in chart.to_html()
    (True, False)
    >>> type(chart.properties(width=100)).__name__  # derived charts stay offline
    'OfflineChart'
    """
    base: Any = type(chart)
    if base.__module__ == __name__:
        return chart
    offline = _offline_class(base)
    copy = offline.__new__(offline)
    copy.__dict__.update(chart.__dict__)  # altair keeps a chart's spec in its __dict__
    return copy
