"""The experiment panel: progress and cards, the case list with filters, a case's
detail with its evaluator cards, the correction form (score, required reason) with undo,
re-evaluation, "+ new case", and the correction history. It refreshes itself while the
experiment listens (a light poll of the result rows in a thread of its own, on a DuckDB
cursor of its own).

Widgets only wire controls to library calls: the numbers come from
:mod:`envloop_nb._experiments.stats`, the HTML from :mod:`envloop_nb._present.experiment_html`,
changes go through the experiment's own methods (so the panel refuses what they refuse,
with the same words, in its message box).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._experiments import stats
from .._present.cases_html import error_box, ok_box
from .._present.experiment_html import (
    case_detail_html,
    case_list_html,
    history_html,
    summary_card_html,
)
from .html_view import HtmlView
from .state import Guard, describe_error, widget_bundle
from .steps_view import case_transcript_of

if TYPE_CHECKING:
    import duckdb

__all__ = ["ExperimentPanel"]

ALL = "__all__"


class ExperimentLike(Protocol):
    """What the panel needs of an experiment (the ``Experiment`` facade satisfies it)."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...

    @property
    def id(self) -> str: ...

    @property
    def listening(self) -> bool: ...

    def correct(
        self, trace_id: str, evaluator: str, score: float, reason: str, *, by: str | None = None
    ) -> None: ...

    def undo_correction(self, trace_id: str, evaluator: str, *, by: str | None = None) -> None: ...

    def reevaluate(
        self,
        *,
        failed: bool = False,
        evaluator: str | Sequence[str] | None = None,
        trace_id: str | Sequence[str] | None = None,
        concurrency: int = 8,
        timeout: float | None = None,
        progress: bool = True,
    ) -> dict[str, int]: ...

    def add_cases(
        self, traces: Any, *, run: bool = True, concurrency: int = 8, progress: bool = True
    ) -> list[str]: ...


def _rows(rel: duckdb.DuckDBPyRelation) -> list[dict[str, Any]]:
    names = rel.columns
    return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]


class ExperimentPanel:
    """The interactive view of one experiment (``exp.panel()``)."""

    def __init__(self, exp: ExperimentLike, *, poll: float = 1.0) -> None:
        import ipywidgets as w

        from .clicktable import ClickableTable

        self.exp = exp
        self.con = exp.con
        self.header = w.HTML()
        self.message = w.HTML()
        self.guard = Guard(self.message)
        names = stats.evaluator_names(self.con, exp.id)
        self.evaluator = w.Dropdown(
            options=[("all evaluators", ALL)] + [(n, n) for n in names], value=ALL,
            description="evaluator", layout=w.Layout(width="260px"),
        )  # fmt: skip
        self.status = w.Dropdown(
            options=[("any status", ALL)]
            + [
                (s, s)
                for s in ("succeeded", "failed", "pending", "missing", "corrected", "not counted")
            ],
            value=ALL,
            description="status",
            layout=w.Layout(width="220px"),
        )
        self.score = w.FloatRangeSlider(
            value=(0.0, 100.0), min=0.0, max=100.0, step=1.0, description="score",
            continuous_update=False, readout_format=".0f", layout=w.Layout(width="360px"),
        )  # fmt: skip
        self.search = w.Text(
            placeholder="search trace, input, output", layout=w.Layout(width="240px")
        )
        self.table = ClickableTable()
        self.detail = w.HTML()
        # the case's trace as steps (an MLflow experiment's spans): paged, searchable
        self.transcript = HtmlView()
        self.selected: str | None = None
        self.digits = 1
        self.visible: list[str] = []
        # correction form
        self.form_evaluator = w.Dropdown(
            options=names, description="evaluator", layout=w.Layout(width="260px")
        )
        self.form_score = w.BoundedFloatText(value=0, min=0, max=100, step=1, description="score 0-100",
                                             layout=w.Layout(width="200px"))  # fmt: skip
        self.form_reason = w.Text(placeholder="reason (required)", layout=w.Layout(width="360px"))
        self.save = w.Button(description="Save correction", button_style="primary", icon="check")
        self.undo = w.Button(description="Undo correction", icon="undo")
        self.rerun = w.Button(description="Re-evaluate", icon="refresh",
                              tooltip="a new run of this case × evaluator (clears its correction)")  # fmt: skip
        self.rerun_failed = w.Button(description="Re-evaluate failed", icon="refresh",
                                     tooltip="every failed row of this case")  # fmt: skip
        # what the form's buttons did (or why not) shows beside them, not at the top
        self.form_message = w.HTML()
        self.form_guard = Guard(self.form_message)
        self.form = w.VBox(
            [
                w.HBox([self.form_evaluator, self.form_score, self.form_reason]),
                w.HBox([self.save, self.undo, self.rerun, self.rerun_failed]),
                self.form_message,
            ],
            layout=w.Layout(display="none"),
        )
        # + new case
        self.new_id = w.Text(placeholder="trace id", layout=w.Layout(width="160px"))
        self.new_input = w.Textarea(
            placeholder="input", layout=w.Layout(width="260px", height="52px")
        )
        self.new_output = w.Textarea(
            placeholder="actual output", layout=w.Layout(width="260px", height="52px")
        )
        self.new_reference = w.Textarea(
            placeholder="reference (optional)", layout=w.Layout(width="200px", height="52px")
        )
        self.add = w.Button(description="Add and evaluate", icon="plus")
        self.new_message = w.HTML()
        self.new_guard = Guard(self.new_message)
        self.new_case = w.Accordion(
            children=[
                w.VBox(
                    [
                        w.HBox(
                            [self.new_id, self.new_input, self.new_output, self.new_reference,
                             self.add]
                        ),
                        self.new_message,
                    ]
                )
            ]
        )  # fmt: skip
        self.new_case.set_title(0, "+ new case")
        self.new_case.selected_index = None
        self.history = w.HTML()
        self.history_box = w.Accordion(children=[self.history])
        self.history_box.set_title(0, "correction history")
        self.history_box.selected_index = None
        filters = w.HBox([self.evaluator, self.status, self.score, self.search])
        self.widget = w.VBox(
            [
                self.header,
                self.message,
                filters,
                self.table,
                self.detail,
                self.form,
                self.transcript,
                self.new_case,
                self.history_box,
            ]
        )
        self.widget.add_class("enb-exp-panel")
        for control in (self.evaluator, self.status, self.score, self.search):
            control.observe(lambda _: self.guard.run(self.refresh_cases), names="value")
        self.table.observe(
            lambda _: self.guard.run(lambda: self.select(self.table.clicked)), names="clicks"
        )
        self.form_evaluator.observe(lambda _: self._fill_form(), names="value")
        self.save.on_click(lambda _: self.form_guard.run(self._save))
        self.undo.on_click(lambda _: self.form_guard.run(self._undo))
        self.rerun.on_click(lambda _: self.form_guard.run(self._rerun))
        self.rerun_failed.on_click(lambda _: self.form_guard.run(self._rerun_failed))
        self.add.on_click(lambda _: self.new_guard.run(self._add))
        self.refresh()
        self._stop = threading.Event()
        self._mark = self._change_mark(self.con)
        self._poller = threading.Thread(
            target=self._poll, args=(poll,), daemon=True, name="envloop-panel"
        )
        self._poller.start()

    # -- drawing -----------------------------------------------------------------
    def refresh(self, con: duckdb.DuckDBPyConnection | None = None) -> None:
        """Redraw everything from the workspace."""
        c = con or self.con
        found = stats.experiment_summary(c, self.exp.id)
        self.digits = found.digits
        summary = found.to_dict()
        evaluators = _rows(stats.evaluator_table(c, self.exp.id))
        listening = " · listening for new traces" if self.exp.listening else ""
        self.header.value = summary_card_html(summary, evaluators) + (
            f'<div class="enb-note">{listening}</div>' if listening else ""
        )
        self.refresh_cases(c)
        self.history.value = history_html(
            _rows(stats.correction_history(c, self.exp.id)), digits=self.digits
        )

    def _matches(self, row: dict[str, Any], names: list[str]) -> bool:
        chosen = names if self.evaluator.value == ALL else [self.evaluator.value]
        status = self.status.value
        lo, hi = self.score.value
        full = (lo, hi) == (self.score.min, self.score.max)
        ok_status = status == ALL
        ok_score = full
        for n in chosen:
            st = row.get(f"{n} status")
            score = row.get(n)
            has = score is not None and not (isinstance(score, float) and math.isnan(score))
            if status == "corrected":
                ok_status |= bool(row.get(f"{n} corrected"))
            elif status == "not counted":
                ok_status |= not has
            elif status == "pending":  # pending or running: not evaluated yet
                ok_status |= st in ("pending", "running")
            elif status != ALL:
                ok_status |= st == status
            if not full and has and lo <= float(score or 0.0) <= hi:
                ok_score = True
        text = self.search.value.strip().lower()
        ok_text = not text or any(
            text in str(row.get(k) or "").lower()
            for k in ("trace_id", "input", "output", "reference")
        )
        return ok_status and ok_score and ok_text

    def refresh_cases(self, con: duckdb.DuckDBPyConnection | None = None) -> None:
        c = con or self.con
        names = stats.evaluator_names(c, self.exp.id)
        rows = [r for r in _rows(stats.case_table(c, self.exp.id)) if self._matches(r, names)]
        self.visible = [str(r["trace_id"]) for r in rows]
        self.table.value = case_list_html(rows, names, selected=self.selected, digits=self.digits)
        if self.selected is not None:
            self._draw_detail(c)

    def select(self, index: int) -> None:
        """Open the detail of the ``index``-th visible case."""
        if not 0 <= index < len(self.visible):
            return
        self.selected = self.visible[index]
        self.refresh_cases()
        self.form.layout.display = "flex"
        self._fill_form()

    def select_trace(self, trace_id: str) -> None:
        """Open the detail of a case by trace id (clears the filters if it is hidden)."""
        if trace_id not in self.visible:
            self.evaluator.value, self.status.value, self.search.value = ALL, ALL, ""
            self.score.value = (self.score.min, self.score.max)
        self.select(self.visible.index(trace_id))

    def _draw_detail(self, con: duckdb.DuckDBPyConnection) -> None:
        cases = {str(r["trace_id"]): r for r in _rows(stats.case_table(con, self.exp.id))}
        case = cases.get(str(self.selected))
        if case is None:
            self.detail.value = ""
            self.transcript.value = ""
            return
        results = [
            r for r in _rows(stats.result_table(con, self.exp.id)) if r["trace_id"] == self.selected
        ]
        self.detail.value = case_detail_html(case, results, digits=self.digits)
        has_steps = con.execute(
            "SELECT 1 FROM exp_steps WHERE experiment_id = ? AND task = ? LIMIT 1",
            [self.exp.id, str(self.selected)],
        ).fetchone()
        self.transcript.value = (
            case_transcript_of(con, self.exp.id, str(self.selected)).html if has_steps else ""
        )

    def _fill_form(self) -> None:
        if self.selected is None or self.form_evaluator.value is None:
            return
        rows = {
            r["evaluator"]: r
            for r in _rows(stats.result_table(self.con, self.exp.id))
            if r["trace_id"] == self.selected
        }
        row = rows.get(self.form_evaluator.value)
        score = None if row is None else row.get("score")
        if score is not None and not (isinstance(score, float) and math.isnan(score)):
            self.form_score.value = float(score)

    # -- actions -------------------------------------------------------------------
    def _need_case(self) -> str:
        if self.selected is None:
            raise ValueError("choose a case first (click a row)")
        return self.selected

    def _save(self) -> None:
        trace = self._need_case()
        self.exp.correct(
            trace, self.form_evaluator.value, self.form_score.value, self.form_reason.value
        )
        self.form_reason.value = ""
        self.refresh()
        self.form_message.value = ok_box(
            f"corrected {trace} · {self.form_evaluator.value}: {self.form_score.value:g}"
        )

    def _undo(self) -> None:
        trace = self._need_case()
        self.exp.undo_correction(trace, self.form_evaluator.value)
        self.refresh()
        self.form_message.value = ok_box(
            f"undid the correction of {trace} · {self.form_evaluator.value}"
        )

    def _rerun(self) -> None:
        trace = self._need_case()
        out = self.exp.reevaluate(
            trace_id=trace, evaluator=self.form_evaluator.value, progress=False
        )
        self.refresh()
        self.form_message.value = ok_box(
            f"re-evaluated {trace} · {self.form_evaluator.value}: {out}"
        )

    def _rerun_failed(self) -> None:
        trace = self._need_case()
        out = self.exp.reevaluate(trace_id=trace, failed=True, progress=False)
        self.refresh()
        self.form_message.value = ok_box(f"re-evaluated the failed rows of {trace}: {out}")

    def _add(self) -> None:
        tid = self.new_id.value.strip()
        if not tid:
            raise ValueError("a new case needs a trace id")
        case = {
            "trace_id": tid,
            "input": self.new_input.value,
            "output": self.new_output.value,
            "reference": self.new_reference.value or None,
            "reference_source": "manual" if self.new_reference.value else None,
        }
        self.exp.add_cases([case], progress=False)
        for box in (self.new_id, self.new_input, self.new_output, self.new_reference):
            box.value = ""
        self.refresh()
        self.new_message.value = ok_box(f"added {tid} and evaluated it")

    # -- live updates --------------------------------------------------------------
    @staticmethod
    def _change_mark(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
        row = con.execute(
            """SELECT (SELECT count(*) FROM exp_cases), (SELECT count(*) FROM exp_results),
                      (SELECT max(evaluated_at) FROM exp_results),
                      (SELECT count(*) FROM exp_results WHERE status = 'succeeded'),
                      (SELECT count(*) FROM exp_corrections)"""
        ).fetchone()
        return tuple(row or ())

    def _poll(self, every: float) -> None:
        import duckdb

        cur = self.con.cursor()
        try:
            while not self._stop.wait(every):
                try:
                    mark = self._change_mark(cur)
                except duckdb.ConnectionException:  # the workspace was closed: end quietly
                    return
                if mark != self._mark:
                    self._mark = mark
                    try:  # not through the Guard: that would clear an action's message
                        self.refresh(cur)
                    except Exception as exc:  # shown in the panel, the poll goes on
                        self.message.value = error_box(describe_error(exc))
        finally:
            cur.close()

    def stop_polling(self) -> None:
        """Stop the live updates and wait for a poll under way (``ws.close()`` calls it
        before the connection goes)."""
        self._stop.set()
        if self._poller is not threading.current_thread():
            self._poller.join()

    def close(self) -> None:
        """Stop the live updates and close the widgets."""
        self.stop_polling()
        self.widget.close()

    def __repr__(self) -> str:
        return f"<ExperimentPanel {self.exp.id}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), **kwargs)
