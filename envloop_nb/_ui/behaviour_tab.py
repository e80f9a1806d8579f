"""The Behaviour tab: what the agent did, measured from its steps (jobs with steps only).

Every number comes from :mod:`envloop_nb._behaviour` under the panel's threshold (the
pass the other tabs use), every chart from :mod:`envloop_nb._present.behaviour_charts`
and every table from :mod:`envloop_nb._present.behaviour_html`. The search box runs
:func:`~envloop_nb._behaviour.find.find_steps_relation` (one DuckDB query).

Drive it from Python: ``tab.contains.value = "timeout"; tab.find_button.click()``, then
read ``tab.found`` (the matching attempts).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from .._behaviour.find import find_steps_relation
from .._behaviour.patterns import action_patterns
from .._behaviour.tools import tool_stats
from .._behaviour.turns import turn_stats
from .._present.behaviour_html import behaviour_html
from .._present.panel_html import PANEL_CSS, note_html, rows_table
from .state import Guard

if TYPE_CHECKING:
    import pandas as pd

    from .state import PanelState

__all__ = ["BehaviourTab"]

_FOUND_ROWS = 50


class BehaviourTab:
    """Turns, tools, action patterns and a step search of the panel's job."""

    def __init__(self, state: PanelState) -> None:
        import ipywidgets as w

        self.state = state
        self.error = w.HTML()
        self.guard = Guard(self.error)
        self.body = w.HTML()
        self.chart_box = w.Box(layout=w.Layout(display="flex", flex_flow="row wrap"))
        self.charts: dict[str, Any] = {}
        self.contains = w.Text(placeholder="steps contain…", continuous_update=False,
                               layout=w.Layout(width="260px"))  # fmt: skip
        self.only_errors = w.Checkbox(value=False, description="errors only", indent=False,
                                      layout=w.Layout(width="auto"))  # fmt: skip
        self.find_button = w.Button(description="find attempts", icon="search")
        self.found_box = w.HTML()
        self.found: pd.DataFrame | None = None
        self.find_button.on_click(lambda _: self.guard.run(self._find))
        self.contains.observe(lambda _: self.guard.run(self._find), names="value")  # on enter
        search = w.HBox([self.contains, self.only_errors, self.find_button],
                        layout=w.Layout(align_items="center", grid_gap="8px"))  # fmt: skip
        self.widget = w.VBox([self.error, self.chart_box, self.body, search, self.found_box])
        self.guard.run(self._recompute)
        state.on_metric(self._on_metric)

    def _on_metric(self, state: PanelState) -> None:
        self.guard.run(self._recompute)

    def _recompute(self) -> None:
        """Compute everything, then assign (a failure leaves the tab as it was)."""
        from .._present import behaviour_charts as bc
        from .._present.render import chart_widget

        con, job_id, threshold = self.state.con, self.state.job_id, self.state.threshold
        tools = tool_stats(con, job_id, threshold=threshold)
        turns = turn_stats(con, job_id, threshold=threshold)
        patterns = action_patterns(con, job_id, threshold=threshold)
        charts: dict[str, Any] = {"survival": bc.survival_chart(turns.survival)}
        if len(turns.steps):
            charts["steps"] = bc.pass_by_steps_chart(turns.steps)
        if len(tools.tools):
            charts["tools"] = bc.tool_pass_chart(tools.tools)
        body = behaviour_html(
            basis=str(turns.basis), summary=turns.summary(), steps=turns.steps,
            tools=tools.tools, ngrams=patterns.ngrams, loops=patterns.loops,
            after=patterns.after_success, method=tools.method,
        )  # fmt: skip
        self.tool_stats, self.turn_stats, self.patterns = tools, turns, patterns
        self.charts = charts
        self.chart_box.children = [chart_widget(c) for c in charts.values()]
        self.body.value = body

    def _find(self) -> None:
        text = self.contains.value or None
        error = True if self.only_errors.value else None
        if text is None and error is None:
            self.found, self.found_box.value = None, ""
            return
        found = find_steps_relation(
            self.state.con, self.state.job_id, contains=text, error=error
        ).df()
        self.found = found
        if not len(found):
            self.found_box.value = note_html("no attempt has such a step")
            return
        rows = [[str(r.task), str(r.attempt), str(r.first_step), f"{r.matches:,}"]
                for r in found.head(_FOUND_ROWS).itertuples()]  # fmt: skip
        more = (
            f'<div class="enb-dim">the first {_FOUND_ROWS} of {len(found):,} attempts</div>'
            if len(found) > _FOUND_ROWS
            else ""
        )
        head = f"<h4>{len(found):,} attempt(s) with such a step</h4>"
        table = rows_table(
            ["task", "attempt", "first matching step", "matching steps"], rows, {1, 2, 3}
        )
        self.found_box.value = f'{PANEL_CSS}<div class="enb-panel">{head}{table}{more}</div>'

    def __repr__(self) -> str:
        return f"<BehaviourTab {html.escape(self.state.job_id)}>"
