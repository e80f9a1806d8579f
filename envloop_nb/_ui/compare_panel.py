"""The comparison panel: thin ipywidgets wiring over a comparison's :class:`CompareState`.

Every number comes from the ``_compare`` functions of the state (``Comparison.panel()``
builds the panel from its state); this module only lays out their results and routes
events. Errors raised while reacting to a click show as a readable line in
the panel (``panel.message``), never as a traceback.

Drive it from Python (tests do): ``panel.baseline.value = "job_b"`` recomputes against
another baseline (``panel.state`` becomes the state with that baseline); ``panel.transition_buttons[("job_b", "fixed")].click()`` shows those
tasks' attempts in every job in ``panel.detail``, :data:`DETAIL_PAGE` tasks a page
(``panel.detail_next.click()`` / ``panel.detail_prev.click()`` turn the page), and one
button per task of the page in ``panel.side_task_buttons``: ``panel.side_task_buttons["t1"].click()`` shows that task's
attempts in the baseline and that job side by side, aligned step by step with the first
divergence marked (``panel.side_by_side``; ``panel.side_attempts`` picks the attempts);
``panel.export_button.click()`` writes the XLSX named in ``panel.export_path``.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._compare.charts import bars, curves, radar
from .._compare.guard import differences
from .._compare.leaderboard import leaderboard
from .._compare.paired import attempts_of, paired, transitions
from .._compare.state import CompareState, colors, others, with_baseline
from .._compare.tables import groups, strengths, table_html
from .._export.compare_xlsx import export_compare_xlsx
from .._metrics.scale import dimension_scales
from .._present.compare_html import guard_html, leaderboard_html, paired_html, strengths_html
from .._present.display import format_number, header
from .._present.render import chart_widget
from .._store.steps import has_tool_calls
from .html_view import HtmlView
from .steps_view import side_by_side_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DETAIL_PAGE", "ComparisonPanel", "compare_panel"]

_FONT = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"
#: Tasks per page of a drill-down (their attempts in every job: a few dozen rows).
DETAIL_PAGE = 5
#: A bucket transition's button, by its direction (``BucketRules.direction``).
_DIRECTION_STYLE = {"better": "success", "worse": "danger", "same": "", "unordered": "info"}
_DIRECTION_WORDS = {
    "better": "to a better bucket",
    "worse": "to a worse bucket",
    "same": "same bucket",
    "unordered": "buckets without an order",
}


def _frame_html(frame: pd.DataFrame, *, max_rows: int = 400) -> str:
    """A plain HTML table of a small frame (escaped text)."""
    head = "".join(
        f'<th style="text-align:left;padding:2px 8px">{html.escape(header(c))}</th>'
        for c in frame.columns
    )
    rows = []
    for row in frame.head(max_rows).itertuples(index=False):
        cells = "".join(
            f'<td style="padding:2px 8px;vertical-align:top;max-width:560px">{html.escape(_cell(v))}</td>'
            for v in row
        )
        rows.append(f"<tr>{cells}</tr>")
    more = (
        f'<div style="opacity:0.7">… {len(frame) - max_rows:,} more rows not shown</div>'
        if len(frame) > max_rows
        else ""
    )
    return (
        f'<table style="border-collapse:collapse;{_FONT}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{more}"
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)


class ComparisonPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no types
    """The comparison panel widget (see the module docstring for how to drive it)."""

    def __init__(
        self, state: CompareState, *, rules: Any = None, export_path: str = "comparison.xlsx"
    ) -> None:
        self.state = state
        self.rules = rules
        self.message = widgets.HTML()
        self.guard = widgets.HTML()
        self.baseline = widgets.Dropdown(
            options=list(state.job_ids),
            value=state.baseline,
            description="baseline",
            layout={"width": "320px"},
        )
        self.by = widgets.ToggleButtons(
            options=[("by subset", "subset"), ("by dimension", "dimension")], value="subset"
        )
        self.by.style.button_width = "110px"
        self.leaderboard = widgets.HTML()
        self.charts = widgets.HBox(layout={"flex_flow": "row wrap", "align_items": "flex-start"})
        self.table = widgets.HTML()
        self.strengths = widgets.HTML()
        self.paired = widgets.HTML()
        self.transitions = widgets.VBox()
        self.transition_buttons: dict[tuple[str, str], widgets.Button] = {}
        self.bucket_other = widgets.Dropdown(
            description="bucket matrix vs", layout={"width": "340px"}
        )
        self.bucket_other.style.description_width = "120px"
        self.bucket_matrix = widgets.VBox()
        self.bucket_buttons: dict[tuple[str, str], widgets.Button] = {}
        self.detail_title = widgets.HTML()
        self.detail = widgets.HTML()
        # a drill-down is paged by task: DETAIL_PAGE tasks' attempts at a time
        self.detail_prev = widgets.Button(description="◀ previous", layout={"width": "auto"})
        self.detail_next = widgets.Button(description="next ▶", layout={"width": "auto"})
        self.detail_page_label = widgets.HTML()
        self.detail_pager = widgets.HBox(
            [self.detail_prev, self.detail_page_label, self.detail_next],
            layout={"display": "none", "align_items": "center"},
        )
        self.detail_page = 0
        self._detail: tuple[str, list[str], str | None] | None = None  # title, tasks, job
        # a task of the detail opens its two attempts side by side (baseline | other job)
        self.side_task_buttons: dict[str, widgets.Button] = {}
        self.side_tasks = widgets.HBox(layout={"flex_flow": "row wrap"})
        self.side_attempts = (
            widgets.BoundedIntText(value=1, min=1, max=10_000, description="attempts",
                                   layout={"width": "150px"}),
            widgets.BoundedIntText(value=1, min=1, max=10_000, layout={"width": "70px"}),
        )  # fmt: skip
        self.side_by_side = HtmlView()
        self._side: tuple[str, str] | None = None  # (task, other job) shown side by side
        self.export_path = widgets.Text(
            value=export_path, description="XLSX path", layout={"width": "420px"}
        )
        self.export_button = widgets.Button(description="Export XLSX", icon="download")
        self.export_status = widgets.HTML()
        tabs = widgets.Tab(
            children=[
                widgets.VBox(
                    [self.table, widgets.HTML("<b>Strengths and weaknesses</b>"), self.strengths]
                ),
                self.paired,
                widgets.VBox(
                    [
                        self.transitions,
                        self.bucket_other,
                        self.bucket_matrix,
                        self.detail_title,
                        self.detail_pager,
                        self.detail,
                        self.side_tasks,
                        self.side_by_side,
                    ]
                ),
                widgets.VBox(
                    [widgets.HBox([self.export_path, self.export_button]), self.export_status]
                ),
            ]
        )
        titles = ["Table", "Paired vs baseline", "Transitions", "Export"]
        # the jobs' behaviour side by side, when any of them recorded steps
        self.behaviour: widgets.VBox | None = None
        if any(has_tool_calls(state.con, j) for j in state.job_ids):
            self.behaviour = widgets.VBox()
            tabs.children = [*tabs.children, self.behaviour]
            titles.append("Behaviour")
        for i, title in enumerate(titles):
            tabs.set_title(i, title)
        self.tabs = tabs
        super().__init__(
            [
                self.message,
                self.guard,
                widgets.HBox([self.baseline, self.by]),
                self.leaderboard,
                self.charts,
                tabs,
            ]
        )
        self.baseline.observe(self._on_baseline, names="value")
        self.by.observe(self._on_by, names="value")
        self.bucket_other.observe(self._on_bucket_other, names="value")
        self.export_button.on_click(self._on_export)
        self.detail_prev.on_click(lambda _: self._safely(self._turn, -1))
        self.detail_next.on_click(lambda _: self._safely(self._turn, 1))
        for box in self.side_attempts:
            box.observe(lambda _: self._safely(self._refresh_side), names="value")
        self._safely(self._refresh_all)

    def __repr__(self) -> str:
        return f"<ComparisonPanel {', '.join(self.state.job_ids)} · baseline {self.state.baseline}>"

    # -- plumbing ---------------------------------------------------------------------
    def _safely(self, action: Any, *args: Any) -> None:
        """Run ``action``; show any error as one readable line instead of a traceback."""
        try:
            action(*args)
            self.message.value = ""
        except Exception as err:  # a panel must never show a traceback
            from .._errors import EnvloopError

            known = isinstance(err, EnvloopError | ValueError | OSError)
            text = str(err) if known else f"{type(err).__name__}: {err}"
            self.message.value = (
                f'<div style="color:#d62728;font-weight:600;{_FONT}">⚠ {html.escape(text)}</div>'
            )

    def _refresh_all(self) -> None:
        self.guard.value = guard_html(differences(self.state), len(self.state.job_ids))
        self._refresh_charts()
        self._refresh_baseline_views()

    def _refresh_charts(self) -> None:
        by = self.by.value
        shown: list[Any] = []
        if len(groups(self.state, by)):
            shown = [chart_widget(bars(self.state, by)), chart_widget(radar(self.state, by))]
        else:
            what = "subsets" if by == "subset" else "score dimensions"
            shown = [widgets.HTML(f'<div style="{_FONT}"><i>the jobs have no {what}</i></div>')]
        if by == "subset":
            shown.append(chart_widget(curves(self.state)))
        self.charts.children = shown

    def _refresh_tables(self) -> None:
        by = self.by.value
        self.table.value = table_html(self.state, by)
        self.strengths.value = strengths_html(strengths(self.state, by))

    def _refresh_baseline_views(self) -> None:
        state = self.state
        self.leaderboard.value = leaderboard_html(leaderboard(state), colors(state), state.baseline)
        self._refresh_tables()
        self.paired.value = paired_html(paired(state))
        self._refresh_transitions()
        if self.behaviour is not None:
            self._refresh_behaviour()

    def _refresh_behaviour(self) -> None:
        """The jobs' turns and tools side by side, each marked against the baseline."""
        from .._compare.behaviour import survival_table, tool_table, turn_table
        from .._present.behaviour_charts import survival_chart
        from .._present.behaviour_html import compare_behaviour_html

        assert self.behaviour is not None
        turns = turn_table(self.state)
        survival = survival_table(self.state)
        shown = {j: c for j, c in colors(self.state).items() if j in set(survival["job"])}
        body = compare_behaviour_html(turns, tool_table(self.state), mark=turns.attrs["mark"])
        self.behaviour.children = [
            chart_widget(survival_chart(survival, colors=shown)),
            widgets.HTML(body),
        ]

    def _refresh_transitions(self) -> None:
        state = self.state
        frame = transitions(state)
        self.transition_buttons = {}
        rows: list[Any] = [
            widgets.HTML(
                f'<div style="{_FONT}">Per task, from baseline <b>{html.escape(state.baseline)}</b>: '
                f"{html.escape(str(frame['basis'].iloc[0]) if len(frame) else '')}. "
                "Click a count to see those tasks' attempts in every job.</div>"
            )
        ]
        for job in dict.fromkeys(frame["job"]):
            buttons = []
            for _, r in frame[frame["job"] == job].iterrows():
                b = widgets.Button(
                    description=f"{r['transition']}: {r['count']}",
                    tooltip=f"{job}: {r['count']} task(s) {r['transition']}",
                    layout={"width": "auto"},
                    button_style={"fixed": "success", "broken": "danger"}.get(
                        str(r["transition"]), ""
                    ),
                )
                tasks = list(r["tasks"])
                b.on_click(
                    lambda _b, t=tasks, j=job, n=r["transition"]: self._safely(
                        self._show, f"{j}: {n}", t, str(j)
                    )
                )
                self.transition_buttons[(str(job), str(r["transition"]))] = b
                buttons.append(b)
            rows.append(
                widgets.HBox(
                    [
                        widgets.HTML(f"<b>{html.escape(str(job))}</b>", layout={"width": "140px"}),
                        *buttons,
                    ]
                )
            )
        self.transitions.children = rows
        rest = others(state)
        if self.rules is None:
            self.bucket_other.layout.display = "none"
            self.bucket_matrix.children = []
            return
        self.bucket_other.layout.display = None
        keep = self.bucket_other.value if self.bucket_other.value in rest else rest[0]
        self.bucket_other.unobserve(self._on_bucket_other, names="value")
        self.bucket_other.options = rest
        self.bucket_other.value = keep
        self.bucket_other.observe(self._on_bucket_other, names="value")
        self._refresh_bucket_matrix()

    def _refresh_bucket_matrix(self) -> None:
        other = self.bucket_other.value
        matrix = transitions(self.state, other, self.rules)
        # a lower-is-better dimension: a bucket lower on it is the better one
        scale = dimension_scales(self.state.con, self.state.baseline).get(str(self.rules.metric))
        higher = scale is None or scale.higher_is_better
        cells: dict[tuple[str, str], list[str]] = matrix.attrs["tasks"]
        self.bucket_buttons = {}
        header = [
            widgets.HTML(
                f"<small>{html.escape(self.state.baseline)} ↓ · {html.escape(str(other))} →"
                "<br>green: a better bucket · red: a worse one · blue: to or from one without an order"
                "</small>"
            )
        ]
        header += [widgets.HTML(f"<b>{html.escape(str(c))}</b>") for c in matrix.columns]
        grid: list[Any] = list(header)
        for r in matrix.index:
            grid.append(widgets.HTML(f"<b>{html.escape(str(r))}</b>"))
            for c in matrix.columns:
                tasks = cells.get((str(r), str(c)), [])
                way = self.rules.direction(str(r), str(c), higher_is_better=higher)
                b = widgets.Button(
                    description=str(len(tasks)),
                    disabled=not tasks,
                    layout={"width": "auto"},
                    button_style=_DIRECTION_STYLE[way] if tasks else "",
                    tooltip=f"{r} → {c}: {len(tasks)} task(s) ({_DIRECTION_WORDS[way]})",
                )
                b.on_click(
                    lambda _b, t=tasks, rr=r, cc=c: self._safely(
                        self._show, f"{rr} → {cc}", t, str(other)
                    )
                )
                self.bucket_buttons[(str(r), str(c))] = b
                grid.append(b)
        self.bucket_matrix.children = [
            widgets.GridBox(
                grid,
                layout={
                    "grid_template_columns": f"160px repeat({len(matrix.columns)}, minmax(70px, auto))"
                },
            )
        ]

    def _show(self, title: str, tasks: list[str], other: str | None = None) -> None:
        self._detail = (title, list(tasks), other)
        self.detail_page = 0
        self._draw_detail()

    def _turn(self, step: int) -> None:
        """Show the drill-down's previous (``-1``) or next (``1``) page of tasks."""
        if self._detail is None:
            return
        pages = max(-(-len(self._detail[1]) // DETAIL_PAGE), 1)
        self.detail_page = min(max(self.detail_page + step, 0), pages - 1)
        self._draw_detail()

    def _draw_detail(self) -> None:
        assert self._detail is not None
        title, tasks, other = self._detail
        first = self.detail_page * DETAIL_PAGE
        shown = tasks[first : first + DETAIL_PAGE]
        frame = attempts_of(self.state, shown)
        self.detail_title.value = (
            f'<div style="{_FONT}"><b>{html.escape(title)}</b>: {len(tasks):,} task(s), '
            "their attempts in every job</div>"
        )
        paged = len(tasks) > DETAIL_PAGE
        self.detail_pager.layout.display = None if paged else "none"
        self.detail_page_label.value = (
            f'<span style="{_FONT};margin:0 8px">tasks {first + 1:,}–{first + len(shown):,} '
            f"of {len(tasks):,}</span>"
        )
        self.detail_prev.disabled = first == 0
        self.detail_next.disabled = first + len(shown) >= len(tasks)
        self.detail.value = _frame_html(frame) if len(frame) else "<i>no attempts</i>"
        self._side = None
        self.side_by_side.value = ""
        self.side_task_buttons = {}
        if other is None or other == self.state.baseline or not shown:
            self.side_tasks.children = []
            return
        for task in shown:
            b = widgets.Button(
                description=f"⇆ {task}",
                tooltip=f"{task}: {self.state.baseline} and {other} side by side, step by step",
                layout={"width": "auto"},
            )
            b.on_click(lambda _b, t=task, o=other: self._safely(self.show_side_by_side, t, o))
            self.side_task_buttons[task] = b
        label = widgets.HTML(
            f'<div style="{_FONT};margin-right:6px">side by side with the baseline:</div>'
        )
        self.side_tasks.children = [label, *self.side_task_buttons.values(), *self.side_attempts]

    def show_side_by_side(self, task: str, other: str) -> None:
        """Show ``task``'s attempts in the baseline and ``other`` side by side (the
        attempts chosen in ``side_attempts``) in ``side_by_side``."""
        self._side = (task, other)
        self._refresh_side()

    def _refresh_side(self) -> None:
        if self._side is None:
            return
        task, other = self._side
        a, b = (int(box.value) for box in self.side_attempts)
        view = side_by_side_of(self.state.con, (self.state.baseline, task, a), (other, task, b))
        self.side_by_side.value = view.html

    # -- events -------------------------------------------------------------------------
    def _on_baseline(self, change: dict[str, Any]) -> None:
        def apply() -> None:
            self.state = with_baseline(self.state, change["new"])
            self._refresh_baseline_views()

        self._safely(apply)

    def _on_by(self, change: dict[str, Any]) -> None:
        def apply() -> None:
            self._refresh_charts()
            self._refresh_tables()

        self._safely(apply)

    def _on_bucket_other(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._safely(self._refresh_bucket_matrix)

    def _on_export(self, _button: Any) -> None:
        def apply() -> None:
            out = export_compare_xlsx(self.state, self.export_path.value, rules=self.rules)
            self.export_status.value = f'<div style="{_FONT}">✓ wrote {html.escape(str(out))}</div>'

        self._safely(apply)


def compare_panel(
    state: CompareState, *, rules: Any = None, export_path: str = "comparison.xlsx"
) -> ComparisonPanel:
    """The interactive comparison panel of a comparison's state (``Comparison.panel()``).

    Parameters
    ----------
    rules
        A :class:`envloop_nb.BucketRules` to show a bucket transition matrix.
    export_path
        Default file name of the XLSX export.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
    >>> panel = ws.compare([a, b]).panel()
    >>> panel.baseline.value, sorted(panel.transition_buttons)[0]
    ('job_abc0001', ('b', 'broken'))
    """
    return ComparisonPanel(state, rules=rules, export_path=export_path)
