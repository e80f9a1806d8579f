"""The multi-report comparison panel: 2-5 baseline reports on the union of benchmarks.

Thin wiring over :mod:`envloop_nb._compare.baseline_multi` (the numbers: combined table,
radar, strengths, comparability) and :mod:`envloop_nb._present.baseline_html` (the
HTML); the radar through :func:`envloop_nb._present.render.chart_widget`. The same
content is ``comparison.panel()`` and the **Comparison** tab of a report's panel
(``report.panel(compare_with=[...])``). Drive it from Python: ``p.frame`` (the combined
table), ``p.table_html.value`` (with its red marks), ``p.words``, ``p.checks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._compare import baseline_multi as _multi
from .._compare.state import PALETTE
from .._present.baseline_html import (
    combined_html,
    comparability_html,
    compare_heading_html,
    radar_note_html,
    words_html,
)
from .._present.render import chart_widget
from .state import widget_bundle

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BaselineComparePanel"]


class BaselineComparePanel:
    """Reports side by side: who is compared, the radar, the combined table (marks in
    red), strengths and weaknesses in words, and the comparability per benchmark.

    Attributes
    ----------
    frame
        The combined table (``comparison.table()``).
    words, strengths, checks
        ``comparison.words()``, ``.strengths()``, ``.comparability()``.
    chart, radar
        The radar (altair chart) and its widget.
    heading, radar_note, table_html, words_html, comparability_html
        The HTML widgets (``radar_note`` is empty from three benchmarks on).
    widget
        The whole panel (a ``VBox``).
    """

    def __init__(self, rs: _multi.ReportSet) -> None:
        import ipywidgets as w

        self.state = rs
        self.names = list(rs.names)
        self.colors = [PALETTE[i] for i in range(len(self.names))]
        self.frame: pd.DataFrame = _multi.combined_table(rs)
        self.checks: pd.DataFrame = _multi.comparability(rs)
        self.strengths: pd.DataFrame = _multi.strengths(rs)
        self.words: list[str] = _multi.words(rs)
        self.chart: Any = _multi.radar(rs)
        self.radar = chart_widget(self.chart)
        self.radar_note = w.HTML(radar_note_html(len(self.frame)))
        labels = [[b.label for b in rs.bench(i)] for i in range(len(self.names))]
        self.heading = w.HTML(compare_heading_html(self.names, self.colors, labels))
        self.table_html = w.HTML(combined_html(self.frame, self.names, self.colors, heading=True))
        self.words_html = w.HTML(words_html(self.words, list(self.strengths["sentence"])))
        self.comparability_html = w.HTML(comparability_html(self.checks))
        self.widget = w.VBox(
            [
                self.heading,
                self.radar,
                self.radar_note,
                self.table_html,
                self.words_html,
                self.comparability_html,
            ]
        )
        self.widget.add_class("enb-baseline-compare-panel")

    def __repr__(self) -> str:
        return f"<BaselineComparePanel {' vs '.join(self.names)}: {len(self.frame)} benchmarks>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), **kwargs)
