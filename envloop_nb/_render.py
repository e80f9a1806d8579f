"""Offline chart rendering: every chart the toolkit shows works with no network.

altair's default renderers load vega from a CDN ("Error loading script" on an offline
cluster). We render through ``alt.JupyterChart`` (an anywidget) with its JavaScript
bundle inlined (``JupyterChart.enable_offline()``), so charts sit inside ipywidgets
panels and in plain output alike, with no internet access.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chart_widget", "enable_offline"]

_enabled = False


def enable_offline() -> None:
    """Make altair render offline in this kernel (idempotent).

    Sets ``JupyterChart`` to its inline bundle and the ``jupyter`` renderer with
    ``offline=True`` so a bare ``chart`` in a cell also renders without a CDN.
    """
    global _enabled
    if _enabled:
        return
    import altair as alt

    alt.JupyterChart.enable_offline()
    alt.renderers.enable("jupyter", offline=True)
    alt.data_transformers.disable_max_rows()  # we aggregate before charting
    _enabled = True


def chart_widget(chart: Any) -> Any:
    """An ipywidget that draws ``chart`` offline (an ``altair.JupyterChart``)."""
    import altair as alt

    enable_offline()
    return alt.JupyterChart(chart)
