"""The run panel (``run.panel()``): thin ipywidgets wiring over a run's :class:`RunState`.

Every number comes from ``envloop_nb._runs`` and every picture from the pure renderers
(:mod:`envloop_nb._present.run_charts`, :mod:`envloop_nb._present.run_html`); this module
lays them out and routes events. Errors raised while reacting show as a readable line in
``panel.message``, never as a traceback.

From top to bottom: the headline (best checkpoint with the steps indistinguishable from
it, the minimum detectable effect, the guard's mark), the curve over training with its
bands and marks (``panel.metric`` switches the metric), the changes significant after
adjustment, the tasks learned / forgotten / flaky, the tasks × steps matrix (in blocks:
at most :data:`MATRIX_TASKS` × :data:`MATRIX_STEPS`, whatever the run's size) beside the
attempt viewer, and the comparison of two steps.

Drive it from Python (tests do): ``panel.task.value = "math-01"; panel.step.value = 6``
shows that task's attempts at step 6 in ``panel.attempts`` and the first one (its
transcript when it has steps) in ``panel.attempt_view``; ``panel.attempt.value = 2``
another. Clicking a block of the matrix picks its first task and step the same way.
``panel.step_a.value, panel.step_b.value = 5, 6; panel.compare_button.click()`` opens
the two steps in the comparison panel (``panel.comparison``) below.

In a kernel (``run.panel()`` in a notebook cell) the first screen is the curve's points —
each step's own number with its coverage drops (:func:`envloop_nb._runs.curve.points`: read
from the counts the jobs' loads kept, without the run's task matrix or its bootstrap) —
and every other part says it is "computing…". Right after the cell ends (IPython's
``post_run_cell``; ``panel.pending`` until then), in the kernel's own thread, the panel
fills itself in this order, each part sent as it is ready: the curve's interval and noise
band, the tasks × steps matrix, the headline (best checkpoint, minimum detectable effect),
the tests' marks on the curve and the changes beyond noise, the task lists. The end state is
the panel built in one go, byte for byte. A run whose points cannot be read so (a threshold,
summarised or results-only jobs) draws its whole curve first, as before. The attempt
viewer's and the comparison's controls come last (``panel.task`` and the others: made on
first use if asked for sooner, with the matrix), so the first screen is few widget models:
the title and the headings are written into the headline's and the task lists' HTML.
Outside a kernel everything is there when ``run.panel()`` returns.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from .._export.run_export import run_headline, shown_by, shown_curve
from .._present import run_html
from .._present.render import chart_widget
from .._present.run_charts import matrix_chart, run_curve_chart
from .._present.run_html import step_text, task_lists_html
from .._runs import curve as _curve
from .._runs import tasks as _tasks
from .._runs import tests as _tests
from .._runs.assemble import RunState, Step
from .steps_view import attempt_view_html

__all__ = ["MATRIX_STEPS", "MATRIX_TASKS", "MAX_CHANGES", "METRICS", "RunPanel", "after_cell"]

#: The matrix in the panel: at most this many blocks of tasks × of steps.
MATRIX_TASKS, MATRIX_STEPS = 120, 100
#: Rows of the changes beyond noise shown (adjacent changes first; the rest: run.tests()).
MAX_CHANGES = 12
#: The metrics the curve's switch offers.
METRICS = ("score", "pass", "pass@k", "pass^k")
_NARROW = {"description_width": "initial"}
_FONT = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"


def after_cell(action: Callable[[], None]) -> bool:
    """Run ``action`` once, right after the current cell of an IPython kernel (its
    ``post_run_cell`` event: the cell's output is already sent); False (nothing registered)
    outside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False

    def once(*_result: Any) -> None:
        shell.events.unregister("post_run_cell", once)
        action()

    shell.events.register("post_run_cell", once)
    return True


def _pending(what: str) -> str:
    return f'<div style="{_FONT};opacity:0.7">computing {html.escape(what)}…</div>'


def _head(text: str) -> str:
    return f'<div style="{_FONT};font-weight:600;font-size:13px;margin-top:6px">{html.escape(text)}</div>'


def _h(text: str) -> widgets.HTML:
    return widgets.HTML(_head(text))


#: The headings above the task lists and the matrix, written in the lists' one HTML widget.
_LISTS_HEAD, _MATRIX_HEAD = _head("Tasks learned, forgotten, flaky"), _head("Tasks × steps")
#: The controls made by ``RunPanel._build_controls`` (after the cell in a kernel).
_CONTROLS = frozenset({"task", "step", "attempt", "attempts", "attempt_view", "step_a", "step_b",
                       "compare_button", "compare_box"})  # fmt: skip


class RunPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no types
    """The run panel widget (see the module docstring for how to drive it).

    ``compare(step_a, step_b)`` gives the widget shown for two steps (the facade passes
    ``run.compare(a, b).panel()``). ``defer=True``: in a kernel, all but the curve's points
    after the current cell (the module docstring); :meth:`finish` fills them.
    """

    def __init__(
        self, state: RunState, *, compare: Callable[[Step, Step], Any], defer: bool = False
    ) -> None:
        self.state = state
        self._compare = compare
        self._filled = False
        self.pending = defer and after_cell(self.finish)
        self.comparison: Any = None
        self._controls_built = False
        self._points_only = False  # the curve shows its points only (its bands to come)
        self.message = widgets.HTML()
        name = f" {state.name}" if state.name else ""
        self._title = (
            f'<div style="{_FONT};font-size:15px;font-weight:600">Training run{html.escape(name)}'
            f' <span style="font-weight:400;color:var(--jp-ui-font-color2,#666)">· '
            f"{len(state.steps):,} steps by {html.escape(state.step_from)}</span></div>"
        )
        self.headline = widgets.HTML(
            self._title + _pending("the best checkpoint and the smallest detectable change")
        )
        self.metric = widgets.Dropdown(options=list(METRICS), value="score", description="metric",
                                       layout=widgets.Layout(width="200px"))  # fmt: skip
        self.curve_box = widgets.Box()
        self._note = widgets.HTML()  # the curve's legend, beside it
        self.changes = widgets.HTML()
        self.lists = widgets.HTML(
            _LISTS_HEAD + _pending("the tasks learned, forgotten and flaky") + _MATRIX_HEAD
        )
        #: the matrix's blocks (:func:`envloop_nb._runs.tasks.aggregate`; None until drawn)
        self.blocks: Any = None
        #: why there is no matrix (no step holds per-task results), else None
        self.no_tasks: str | None = None
        self.matrix: Any = widgets.HTML(_pending("the tasks × steps matrix"))
        self._viewer: Any = None  # the attempt viewer beside the matrix, once built
        self.matrix_row = widgets.HBox([self.matrix], layout=widgets.Layout(flex_flow="row wrap"))
        self.metric.observe(lambda _c: self._safely(self._refresh_curve), names="value")
        if self.pending:  # the curve's points now; its bands, its marks, the rest after the cell
            self._safely(self._first_curve)
        super().__init__(
            [
                self.headline,
                self.message,
                widgets.HBox(
                    [_h("Curve over training"), self.metric],
                    layout=widgets.Layout(align_items="center"),
                ),
                self.curve_box,
                self.changes,
                self.lists,
                self.matrix_row,
            ],
            layout=widgets.Layout(padding="4px"),
        )
        self.add_class("enb-run-panel")
        if not self.pending:
            self.finish()

    def __getattr__(self, name: str) -> Any:
        """The attempt viewer's and the comparison's controls, made on first use (a
        deferred panel makes them right after the cell, with the rest)."""
        if name in _CONTROLS and not self.__dict__.get("_controls_built", True):
            self._build_controls()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build_controls(self) -> None:
        """The attempt viewer beside the matrix and the two steps' comparison below it."""
        self._controls_built = True
        state = self.state
        self._fill_matrix()
        steps = [(step_text(s), s) for s in state.steps]
        tasks = list(_tasks.task_matrix(state).index)
        self.task = widgets.Dropdown(options=[(str(t), t) for t in tasks], value=None,
                                     description="task", style=_NARROW, layout=widgets.Layout(width="280px"))  # fmt: skip
        self.step = widgets.Dropdown(options=steps, value=None, description="step", style=_NARROW,
                                     layout=widgets.Layout(width="150px"))  # fmt: skip
        self.attempt = widgets.Dropdown(options=[], description="attempt", style=_NARROW,
                                        layout=widgets.Layout(width="150px"))  # fmt: skip
        self.attempts = widgets.HTML(
            f'<div style="{_FONT};opacity:0.7">pick a task and a step (or click the matrix)</div>'
        )
        self.attempt_view = widgets.HTML(layout=widgets.Layout(max_height="520px", overflow="auto"))
        for w in (self.task, self.step):
            w.observe(lambda _c: self._safely(self._show_attempts), names="value")
        self.attempt.observe(lambda _c: self._safely(self._show_attempt), names="value")
        self.step_a = widgets.Dropdown(options=steps, value=state.steps[0], description="step A",
                                       layout=widgets.Layout(width="200px"))  # fmt: skip
        self.step_b = widgets.Dropdown(options=steps, value=state.steps[-1], description="step B",
                                       layout=widgets.Layout(width="200px"))  # fmt: skip
        self.compare_button = widgets.Button(description="Compare", button_style="primary",
                                             tooltip="open the two steps in the comparison panel")  # fmt: skip
        self.compare_button.on_click(lambda _b: self._safely(self._open_compare))
        self.compare_box = widgets.VBox()
        self._viewer = widgets.VBox(
            [self.task, widgets.HBox([self.step, self.attempt]), self.attempts, self.attempt_view],
            layout=widgets.Layout(flex="1 1 420px", min_width="360px", margin="0 0 0 12px"),
        )
        self._show_matrix()
        shown: tuple[Any, ...] = self.children  # type: ignore[has-type]
        self.children = [
            *shown,
            _h("Two steps side by side"),
            widgets.HBox([self.step_a, self.step_b, self.compare_button]),
            self.compare_box,
        ]

    def finish(self) -> None:
        """Fill the curve's bands, the matrix, the headline, the tests (marks on the curve,
        the changes beyond noise) and the task lists, in that order, each shown as it is
        ready (a deferred panel's second part; nothing once filled)."""
        if self._filled:
            return
        self._filled = True
        self.pending = False
        self._safely(self._fill)
        if not self._controls_built:
            self._safely(self._build_controls)

    def _fill(self) -> None:
        state = self.state
        if self._points_only:  # the intervals and the noise band first
            self._refresh_curve(tests=False)
        self._fill_matrix()
        self.headline.value = self._title + run_headline(state)
        self._refresh_curve()
        lists = task_lists_html(_tasks.learned(state), _tasks.forgotten(state), _tasks.flaky(state))
        self.lists.value = (
            _LISTS_HEAD
            + '<div style="display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,400px),1fr));'
            'gap:14px">'
            + "".join(f'<div style="max-height:240px;overflow:auto">{x}</div>' for x in lists)
            + "</div>"
            + _MATRIX_HEAD
        )

    def __repr__(self) -> str:
        return f"<RunPanel {self.state.name or 'run'} · {len(self.state.steps)} steps>"

    def _safely(self, action: Callable[[], None]) -> None:
        self.message.value = ""
        try:
            action()
        except Exception as e:  # shown in the panel, not as a traceback
            self.message.value = (
                f'<div style="{_FONT};color:#c62828">{html.escape(type(e).__name__)}: '
                f"{html.escape(str(e))}</div>"
            )

    def _first_curve(self) -> None:
        """The curve's points (each step's own number, coverage drops) without the run's
        task matrix and bootstrap, with its bands and marks said to be coming; the whole
        curve now when the points cannot be had so (:func:`envloop_nb._runs.curve.points`)
        or the run is told per subset."""
        metric = self.metric.value
        points = _curve.points(self.state, metric=metric)
        if points is None or not points["estimate"].notna().any():
            self._refresh_curve()
            return
        self.curve = chart_widget(run_curve_chart(points, title=f"{metric} over training"))
        self._points_only = True
        self._note.value = _pending("the intervals and the noise band (task bootstrap)")
        self.curve_box.children = [self.curve, self._note]
        self.changes.value = _pending("the changes beyond noise (paired tests, adjusted)")

    def _fill_matrix(self) -> None:
        """The tasks × steps matrix in blocks (or why there is none), once."""
        if self.blocks is not None:
            return
        state = self.state
        blocks = _tasks.aggregate(state, max_tasks=MATRIX_TASKS, max_steps=MATRIX_STEPS)
        self.no_tasks = _tasks.no_tasks(state)
        if self.no_tasks:
            self.matrix = widgets.HTML(
                f'<div style="{_FONT}"><i>{html.escape(self.no_tasks)}</i></div>'
            )
        else:
            self.matrix = chart_widget(matrix_chart(blocks))
            self.matrix.selections.observe(self._on_cell, names=["cell"])
        self.blocks = blocks
        self._show_matrix()

    def _show_matrix(self) -> None:
        shown = [self.matrix]
        if self._viewer is not None and not self.no_tasks:
            shown.append(self._viewer)
        self.matrix_row.children = shown

    def _refresh_curve(self, *, tests: bool | None = None) -> None:
        """The whole curve: its points, interval, noise band and (``tests``; default: once
        the panel is no longer pending) the tests' marks and the changes beyond noise."""
        self._points_only = False
        metric = self.metric.value
        curve, what = shown_curve(self.state, metric=metric)
        by = shown_by(self.state, metric=metric)  # results-only files: per subset
        band = _curve.noise_band(self.state, metric=metric, by=by)
        with_tests = not self.pending if tests is None else tests
        tests_frame = _tests.tests(self.state, by=by) if with_tests else None
        # the tests are paired on the score: their marks only on the score's curve
        chart = run_curve_chart(curve, band=band, tests=tests_frame if metric == "score" else None,
                                title=f"{metric} over training")  # fmt: skip
        self.curve = chart_widget(chart)
        text = (f"{what}; " if what else "") + run_html.CURVE_LEGEND
        self._note.value = (
            f'<div style="{_FONT};opacity:0.75;max-width:760px">{html.escape(text)}</div>'
        )
        self.curve_box.children = [self.curve, self._note]
        if tests_frame is None:
            self.changes.value = _pending("the changes beyond noise (paired tests, adjusted)")
            return
        table = run_html.tests_table_html(tests_frame, only_significant=True, max_rows=MAX_CHANGES)
        self.changes.value = f'<div style="max-height:300px;overflow:auto">{table}</div>'

    def _on_cell(self, change: dict[str, Any]) -> None:
        picked = getattr(change.get("new"), "value", None) or []
        if not picked:
            return

        def apply() -> None:
            cell = picked[0]
            row = self.blocks[(self.blocks["task_block"] == cell.get("task_block"))
                              & (self.blocks["step_block"] == cell.get("step_block"))]  # fmt: skip
            if len(row):
                first = row.iloc[0]
                self.step.value = (
                    first["first_step"].item()
                    if hasattr(first["first_step"], "item")
                    else first["first_step"]
                )
                self.task.value = str(first["first_task"])

        self._safely(apply)

    def _job_id(self) -> str | None:
        if self.step.value is None:
            return None
        return self.state.job_ids[list(self.state.steps).index(self.step.value)]

    def _show_attempts(self) -> None:
        job_id, task = self._job_id(), self.task.value
        if job_id is None or task is None:
            return
        rows = self.state.con.execute(
            """SELECT attempt, status, reward, error FROM attempts
               WHERE job_id = ? AND task = ? ORDER BY attempt""",
            [job_id, task],
        ).fetchall()
        if not rows:
            self.attempts.value = (
                f'<div style="{_FONT}">task <b>{html.escape(str(task))}</b> has no attempt at step '
                f"{html.escape(step_text(self.step.value))} (job {html.escape(job_id)}: not requested "
                "there, or a summarised job whose attempts stayed in their source)</div>"
            )
            self.attempt.options = []
            self.attempt_view.value = ""
            return
        cells = "".join(
            f'<tr><td style="padding:1px 8px">{a}</td><td style="padding:1px 8px">{html.escape(str(s))}</td>'
            f'<td style="padding:1px 8px;text-align:right">{"-" if r is None else f"{r:g}"}</td>'
            f'<td style="padding:1px 8px;color:#c62828">{html.escape(str(e or ""))[:160]}</td></tr>'
            for a, s, r, e in rows
        )
        self.attempts.value = (
            f'<div style="{_FONT}">task <b>{html.escape(str(task))}</b> at step '
            f"<b>{html.escape(step_text(self.step.value))}</b> (job {html.escape(job_id)})"
            f'<table style="border-collapse:collapse"><thead><tr><th style="padding:1px 8px">attempt</th>'
            f'<th style="padding:1px 8px">status</th><th style="padding:1px 8px">reward</th>'
            f'<th style="padding:1px 8px">error</th></tr></thead><tbody>{cells}</tbody></table></div>'
        )
        options = [int(a) for a, *_ in rows]
        if list(self.attempt.options) == options:
            self._show_attempt()
        else:
            self.attempt.options = options  # selects the first: _show_attempt runs
        if self.attempt.value is None and options:
            self.attempt.value = options[0]

    def _show_attempt(self) -> None:
        job_id, task, attempt = self._job_id(), self.task.value, self.attempt.value
        if job_id is None or task is None or attempt is None:
            self.attempt_view.value = ""
            return
        self.attempt_view.value = attempt_view_html(self.state.con, job_id, str(task), int(attempt))

    def _open_compare(self) -> None:
        a, b = self.step_a.value, self.step_b.value
        self.comparison = self._compare(a, b)
        head = widgets.HTML(f'<div style="{_FONT};margin-top:4px">step <b>{html.escape(step_text(a))}</b> '
                            f"(baseline) vs step <b>{html.escape(step_text(b))}</b></div>")  # fmt: skip
        self.compare_box.children = [head, self.comparison]
