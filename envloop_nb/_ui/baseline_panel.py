"""The baseline report panel: Overview (facts, radar, table), Score details and, when
the report is compared with others, Comparison.

Thin wiring over :mod:`envloop_nb._compare.baseline` (the numbers) and
:mod:`envloop_nb._present.baseline_html` (the HTML); charts through
:func:`envloop_nb._present.render.chart_widget`. **Score details**: choose a benchmark and
a drill-down (the benchmark's own choices: subset, each tag, dimension); a bar chart and
a table follow, each row with a **view** button that opens that benchmark's job panel
below, on its Cases tab, filtered to that subset (its subset dropdown) or tag value (its
query's tag filter, which no dropdown shows), or unfiltered for a dimension; a line
above the job panel says which. A split benchmark (one subset of a job) opens its job
panel filtered to that subset, whatever the row (the Cases tab filters on one tag).

Opening a job panel is the facade's (``open_job``: job id -> a ``JobPanel``); this
module never names ``Job``. Drive it from Python: ``p.benchmark.value = label``,
``p.by.value = "dimension"``, ``p.frame``, ``p.view_buttons["math"].click()``,
``p.job_panel``.

**Comparison** (only with ``compare``, a :class:`~envloop_nb._compare.baseline_multi.ReportSet`
whose first report is this one: ``report.panel(compare_with=[...])``) is a
:class:`~envloop_nb._ui.baseline_compare_panel.BaselineComparePanel` (``p.comparison``).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._compare import baseline as _baseline
from .._compare import baseline_multi as _multi
from .._present.baseline_html import drilldown_chart, overview_html, radar, report_table_html
from .._present.display import format_metric
from .._present.panel_html import PANEL_CSS
from .._present.render import chart_widget
from .._types import Policy
from .baseline_compare_panel import BaselineComparePanel
from .panel import CASES_TAB
from .state import Guard, widget_bundle

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from .panel import JobPanel

__all__ = ["COMPARE_TITLE", "TAB_TITLES", "BaselinePanel", "view_plan"]

TAB_TITLES = ("Overview", "Score details")
#: The third tab's title, present when the report is compared with others.
COMPARE_TITLE = "Comparison"
_COLUMNS = ("Value", "Score", "Complete / total", "Coverage", "Bad cases", "")
_WIDTHS = "minmax(120px, max-content) 70px 110px minmax(150px, max-content) 75px 70px"


def view_plan(by: str, value: str, *, split: str | None = None) -> tuple[str, str, str]:
    """How a drill-down row opens in the job's Cases tab: ``(filter, value, note)``;
    filter ``"subset"`` (the tab's subset filter), ``"tag:<key>"`` (the tab's tag filter
    on another key, set on its query) or ``""`` (no filter: a dimension, or tasks
    without the tag). ``split``: the subset of a split benchmark, the filter of every row.

    Examples
    --------
    >>> view_plan("subset", "math")[:2], view_plan("tag:level", "hard")[:2]
    (('subset', 'math'), ('tag:level', 'hard'))
    >>> view_plan("dimension", "style")[0]
    ''
    >>> view_plan("tag:group", "g", split="alpha")[:2]
    ('subset', 'alpha')
    """
    key = "subset" if by == "subset" else by.removeprefix("tag:")
    if split is not None:
        if split == "(no subset)":
            return "", "", "tasks without a subset cannot be filtered on: every case is listed"
        return (
            "subset",
            split,
            f"Cases filtered to subset {split} (the benchmark); {key} = {value} is not "
            "applied: the Cases tab filters on one tag",
        )
    if by == "dimension":
        return "", "", "the Cases tab has no filter by dimension: every case is listed"
    if value == f"(no {key})":
        return "", "", f"tasks without a {key} cannot be filtered on: every case is listed"
    if by == "subset":
        return "subset", value, f"Cases filtered to subset {value}"
    return (
        by,
        value,
        f"Cases filtered to tag {key} = {value} (changing a filter there clears it)",
    )


def _subset_again(cases: Any, change: Any) -> None:
    """After the tag filter a **view** set, the subset dropdown filters by subset again
    (the tab keeps the query's tag key; its own handler has just run)."""
    if cases.query.tag_key != "subset":
        value = None if change["new"] == cases.ALL else change["new"]
        cases.query = cases.query.replace(tag_key="subset", tag_value=value)
        cases.refresh()


class BaselinePanel:
    """One model on several benchmarks, in two tabs (see the module docstring).

    Attributes
    ----------
    benchmark, by
        The Score details dropdowns (benchmark label; drill-down choice).
    benches
        Label -> its :class:`~envloop_nb._compare.baseline.Benchmark`.
    frame
        The drill-down shown (``report.drilldown``'s frame).
    view_buttons
        Value -> its row's **view** button.
    job_panel
        The job panel the last **view** opened (None before), shown in ``opened``.
    comparison
        The Comparison tab's panel (None without ``compare``).
    titles
        The tabs' titles.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        benchmarks: Sequence[str | _baseline.Benchmark],
        *,
        name: str,
        series: str,
        open_job: Callable[[str], JobPanel],
        policy: Policy = "unknown",
        threshold: float | None = None,
        bad_below: float = 0.5,
        compare: _multi.ReportSet | None = None,
    ) -> None:
        import ipywidgets as w

        items = _baseline.benchmarks_of(con, benchmarks, split_by=None)
        self.benches = {b.label: b for b in items}
        self.con, self.name = con, name
        self.job_ids = list(dict.fromkeys(b.job_id for b in items))
        self.open_job = open_job
        self.options: dict[str, Any] = {
            "policy": policy, "threshold": threshold, "bad_below": bad_below
        }  # fmt: skip
        self.table = _baseline.report_table(con, items, **self.options)
        self.info = _baseline.overview(con, items, name=name, **self.options)
        self.radar = chart_widget(radar(self.table, series))
        overview = w.VBox(
            [w.HTML(overview_html(self.info)), self.radar, w.HTML(report_table_html(self.table))]
        )
        self.benchmark = w.Dropdown(
            options=list(self.benches),
            value=items[0].label,
            description="benchmark",
            layout=w.Layout(width="340px"),
        )
        self.by = w.Dropdown(description="by", layout=w.Layout(width="240px"))
        self.error = w.HTML()
        self.guard = Guard(self.error)
        self.heading = w.HTML()
        self.chart_box = w.Box()
        self.rows = w.GridBox(layout=w.Layout(grid_template_columns=_WIDTHS, grid_gap="2px 8px"))
        self.opened = w.VBox()
        self.note = w.HTML()
        self.frame: pd.DataFrame | None = None
        self.chart: Any = None
        self.view_buttons: dict[str, Any] = {}
        self.job_panel: JobPanel | None = None
        self._quiet = False
        self._set_choices()
        self.refresh()
        self.benchmark.observe(lambda _: self._on_benchmark(), names="value")
        self.by.observe(lambda _: self._on_by(), names="value")
        details = w.VBox(
            [
                w.HBox([self.benchmark, self.by]),
                self.error,
                self.heading,
                self.chart_box,
                self.rows,
                self.note,
                self.opened,
            ]
        )
        tabs: list[Any] = [overview, details]
        self.titles: list[str] = list(TAB_TITLES)
        self.comparison: BaselineComparePanel | None = None
        if compare is not None:
            self.comparison = BaselineComparePanel(compare)
            tabs.append(self.comparison.widget)
            self.titles.append(COMPARE_TITLE)
        self.widget = w.Tab(children=tabs, titles=self.titles)
        self.widget.add_class("enb-baseline-panel")

    # -- events ----------------------------------------------------------------------
    def _set_choices(self) -> None:
        choices = _baseline.dimension_choices(self.con, self.benches[self.benchmark.value])
        old, self._quiet = self._quiet, True
        try:
            self.by.options = [(c.removeprefix("tag:"), c) for c in choices]
            self.by.value = choices[0] if choices else None
            self.by.disabled = not choices
        finally:
            self._quiet = old

    def _on_benchmark(self) -> None:
        def change() -> None:
            self._set_choices()
            self._draw()

        if not self._quiet:
            self.guard.run(change)

    def _on_by(self) -> None:
        if not self._quiet:
            self.guard.run(self._draw)

    def refresh(self) -> None:
        """Redraw the Score details for the chosen benchmark and drill-down."""
        self.guard.run(self._draw)

    def _draw(self) -> None:
        import ipywidgets as w

        b, by = self.benches[self.benchmark.value], self.by.value
        bench = b.label
        if by is None:
            self.frame, self.chart = None, None
            self.heading.value = (
                f'{PANEL_CSS}<div class="enb-panel"><i>{html.escape(bench)} has no drill-down: '
                + (
                    "no other task tag in its subset"
                    if b.split
                    else "no task tag and no score dimension"
                )
                + "</i></div>"
            )
            self.chart_box.children, self.rows.children, self.view_buttons = [], [], {}
            return
        frame = _baseline.drilldown(self.con, b, by, **self.options)
        self.frame = frame
        self.chart = drilldown_chart(frame, benchmark=bench, by=by)
        self.chart_box.children = [chart_widget(self.chart)]
        self.heading.value = (
            f'{PANEL_CSS}<div class="enb-panel"><h4>{html.escape(bench)} by '
            f"{html.escape(by.removeprefix('tag:'))}</h4></div>"
        )

        def cell(text: str, bold: bool = False, right: bool = False) -> Any:
            style = "font-weight:600;" if bold else ""
            style += "text-align:right;" if right else ""
            return w.HTML(f'<div class="enb-panel" style="{style}">{html.escape(text)}</div>')

        what = by.removeprefix("tag:")
        header = (what[:1].upper() + what[1:], *_COLUMNS[1:])
        children: list[Any] = [cell(c, bold=True) for c in header]
        self.view_buttons = {}
        for r in frame.to_dict("records"):
            value = str(r["value"])
            button = w.Button(
                description="view",
                tooltip=f"open {bench}'s cases for {value}",
                layout=w.Layout(width="64px", height="24px"),
            )
            button.on_click(lambda _, v=value: self.guard.run(lambda: self.view(v)))
            self.view_buttons[value] = button
            score = r["score"]
            children += [
                cell(value),
                cell("-" if score is None or score != score else format_metric(float(score)),
                     right=True),
                cell(str(r["samples"]), right=True),
                cell(str(r["coverage"])),
                cell(f"{int(r['bad_cases']):,}", right=True),
                button,
            ]  # fmt: skip
        self.rows.children = children
        bad = self.options["bad_below"]
        self.note.value = (
            f'<div class="enb-panel enb-dim" style="font-size:11px">complete / total: tasks with '
            f"all k attempts scored · bad case: a task scoring below {bad:g} · "
            "view opens the benchmark's job panel below</div>"
        )

    def view(self, value: str) -> JobPanel:
        """Open the chosen benchmark's job panel on its Cases tab for ``value``."""
        import ipywidgets as w

        b, by = self.benches[self.benchmark.value], str(self.by.value)
        jid = b.job_id
        if self.job_panel is not None:
            self.job_panel.close()
        panel = self.open_job(jid)
        control, text, note = view_plan(by, value, split=b.value if b.split else None)
        cases = panel.cases
        if control == "subset":
            cases.subset.value = text
        elif control.startswith("tag:"):  # the query's tag filter: no dropdown shows it
            cases.query = cases.query.replace(tag_key=control.removeprefix("tag:"), tag_value=text)
            cases.refresh()
            cases.subset.observe(lambda change: _subset_again(cases, change), names="value")
        panel.widget.selected_index = CASES_TAB
        self.job_panel = panel
        head = (
            f'{PANEL_CSS}<div class="enb-panel"><h4>{html.escape(b.label)} · '
            f"{html.escape(value)} <span class='enb-dim' style='font-weight:400'>(job "
            f"{html.escape(jid)})</span></h4><div class='enb-dim'>{html.escape(note)}</div></div>"
        )
        self.opened.children = [w.HTML(head), getattr(panel, "frame", panel.widget)]
        return panel

    def __repr__(self) -> str:
        return f"<BaselinePanel {self.name}: {len(self.benches)} benchmarks · {' · '.join(self.titles)}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), **kwargs)
