"""The workspace panel (``ws.panel()``): every job of the workspace in one list.

One row per job (:func:`envloop_nb._metrics.job_list.job_rows`): display name, model,
method, status, score with its coverage, attempts per task, created. Search by name (or
id, or model), filter by status, sort by created time. Per row: **open** its job panel,
**rename** it (a display name kept in the workspace), download its standalone HTML
**report**, **delete** it (after a confirmation; one transaction). Tick two to five rows
to open their **comparison** panel, measured against the job chosen in **baseline** — by
default the oldest of the ticked jobs (by created time), so a newer checkpoint is
compared with an older one. A long name is shortened in its middle (two names with a
long common start stay apart by their ends); the whole name and id show on hover.

What happens on a click is the facade's: the panel is given callbacks (open, compare,
rename, remove, report) and never names ``Job`` or ``Comparison`` itself.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._metrics.job_list import STATUS_LABELS, JobRow, filter_jobs, job_rows
from .._present.display import format_count, format_metric, shorten_middle
from .._present.panel_html import PANEL_CSS
from .state import widget_bundle

if TYPE_CHECKING:
    import duckdb

__all__ = ["WorkspaceActions", "WorkspacePanel", "row_cells_html"]

#: (header, width) of the list's columns, after the tick box and before the buttons.
_COLUMNS = (("name", "190px"), ("model", "105px"), ("method", "80px"), ("status", "80px"),
            ("score · coverage", "195px"), ("k", "22px"), ("created", "82px"))  # fmt: skip
_MAX_COMPARE = 5
#: Characters of a name shown in the list (the middle of a longer one becomes "…").
_NAME_CHARS = 26


@dataclass(frozen=True)
class WorkspaceActions:
    """What the panel's buttons do, given by the facade."""

    open_job: Callable[[str], Any]  # job id -> a widget (the job panel)
    compare: Callable[[Sequence[str]], Any]  # 2-5 job ids -> a widget (the comparison)
    rename: Callable[[str, str], None]
    remove: Callable[[str], None]
    report: Callable[[str, Path], Path]  # job id, path -> the written report


def row_cells_html(row: JobRow) -> list[str]:
    """The HTML of one row's cells (escaped), in :data:`_COLUMNS` order.

    Examples
    --------
    >>> import datetime as dt
    >>> t = dt.datetime(2026, 3, 2, 14, 5, tzinfo=dt.UTC)
    >>> r = JobRow("j1", "base <v1>", None, "harbor", "cancelled", 0.5, 3, 4, 1, 2, 2, t, t)
    >>> cells = row_cells_html(r)
    >>> cells[0], cells[3], cells[4]
    ('<b>base &lt;v1&gt;</b>', '<span class="enb-st enb-st-cancelled">terminated</span>', '<b>50.0%</b> · 3/4 scored · 1/2 complete')
    >>> cells[6]
    '2026-03-02'
    """
    score = format_metric(row.score)
    coverage = (
        f"<b>{score}</b> · {format_count(row.scored, row.total)} scored · "
        f"{format_count(row.complete_members, row.total_members)} complete"
    )
    created = row.created_at or row.loaded_at
    return [
        f"<b>{html.escape(shorten_middle(row.name, _NAME_CHARS))}</b>",
        html.escape(row.model or "-"),
        html.escape(row.method),
        f'<span class="enb-st enb-st-{html.escape(row.status)}">'
        f"{html.escape(row.status_label)}</span>",
        coverage,
        str(row.k),
        created.strftime("%Y-%m-%d"),
    ]


def _titles(row: JobRow) -> list[str]:
    """Each cell's full text, shown on hover where a long value is cut short."""
    coverage = f"{row.scored}/{row.total} attempts scored, {row.complete_members}/{row.total_members} tasks complete"
    created = (row.created_at or row.loaded_at).strftime("%Y-%m-%d %H:%M:%S %Z")
    return [f"{row.name} ({row.job_id})", row.model or "", row.method, row.status_label,
            coverage, f"{row.k} attempts per task", created]  # fmt: skip


_CSS = (
    PANEL_CSS
    + """<style>
.enb-ws-row{border-bottom:1px solid var(--jp-border-color3,#8883);align-items:center}
.enb-ws-cell{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.enb-ws-cells{display:flex;align-items:center}
.enb-ws-cells .enb-ws-cell{flex:0 0 auto;margin:0 var(--jp-widgets-margin,2px);box-sizing:border-box}
.enb-ws-head{font-weight:600;color:var(--jp-ui-font-color2,inherit);
  border-bottom:1px solid var(--jp-border-color1,#8888)}
.enb-st{padding:0 6px;border-radius:8px;background:var(--jp-layout-color2,#8882)}
.enb-st-completed{color:var(--jp-success-color1,#2e7d32)}
.enb-st-failed{color:var(--jp-error-color1,#c62828)}
.enb-st-cancelled{color:var(--jp-warn-color1,#a07800)}
.enb-st-running,.enb-st-pending{color:var(--jp-brand-color1,#1565c0)}
</style>"""
)


class WorkspacePanel:
    """The list of the workspace's jobs with its controls (see the module docstring).

    Attributes
    ----------
    search, status, order
        The filters (a ``Text``, a ``Dropdown`` of platform states, newest/oldest).
    rows
        The rows shown, after the filters (:class:`~envloop_nb._metrics.job_list.JobRow`).
    detail
        Where an opened job panel, a comparison, a rename box or a confirmation appears.
    widget
        The ``ipywidgets.VBox`` shown in the notebook.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        actions: WorkspaceActions,
        *,
        report_dir: str | os.PathLike[str] = "reports",
    ) -> None:
        import ipywidgets as w

        self.con = con
        self.actions = actions
        self.report_dir = Path(report_dir)
        self.search = w.Text(placeholder="search name, id or model", layout=w.Layout(width="240px"))
        self.status = w.Dropdown(
            options=[("all states", "")] + [(label, s) for s, label in STATUS_LABELS.items()],
            value="",
            layout=w.Layout(width="150px"),
        )
        self.order = w.ToggleButtons(
            options=[("newest first", "newest"), ("oldest first", "oldest")], value="newest"
        )
        self.order.style.button_width = "100px"
        self.count = w.HTML()
        self.compare_button = w.Button(
            description="Compare selected", icon="columns", disabled=True,
            tooltip="tick 2 to 5 jobs", layout=w.Layout(width="auto"),
        )  # fmt: skip
        self.baseline = w.Dropdown(
            description="baseline", options=[], layout=w.Layout(width="300px"),
            tooltip="the job the others are measured against (default: the oldest ticked)",
        )  # fmt: skip
        self._picked: str | None = None  # the baseline the user chose, if any
        self._updating = False
        self.baseline.observe(self._baseline_picked, names="value")
        self.message = w.HTML()
        self.list = w.VBox(layout=w.Layout(overflow="auto hidden"))  # a narrow window scrolls
        self.detail = w.VBox()
        self.ticks: dict[str, Any] = {}
        self.all_rows: list[JobRow] = []
        self.rows: list[JobRow] = []
        for control in (self.search, self.status, self.order):
            control.observe(lambda _: self._draw(), names="value")
        self.compare_button.on_click(lambda _: self._compare())
        self.widget = w.VBox(
            [
                w.HTML(_CSS),
                w.HBox([self.search, self.status, self.order, self.count]),
                self.list,
                w.HBox([self.compare_button, self.baseline, self.message]),
                self.detail,
            ]
        )
        self.widget.add_class("enb-ws-panel")
        self.refresh()

    def __repr__(self) -> str:
        return f"<envloop_nb workspace panel · {len(self.rows)} of {len(self.all_rows)} jobs>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), **kwargs)

    # -- data ----------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the job list from the workspace again and redraw it."""
        self.all_rows = job_rows(self.con)
        self._draw()

    def selected(self) -> list[str]:
        """The ticked job ids, in list order."""
        return [
            r.job_id for r in self.rows if self.ticks.get(r.job_id) and self.ticks[r.job_id].value
        ]

    # -- drawing -------------------------------------------------------------------
    def _draw(self) -> None:
        import ipywidgets as w

        order: Literal["newest", "oldest"] = "oldest" if self.order.value == "oldest" else "newest"
        self.rows = filter_jobs(
            self.all_rows, search=self.search.value, status=self.status.value or None, order=order
        )
        kept = {j: t for j, t in self.ticks.items() if t.value}
        self.ticks = {}
        header = w.HBox(
            [w.HTML("", layout=w.Layout(width="32px"))]
            + [
                w.HTML(f"<span>{h}</span>", layout=w.Layout(width=width, min_width=width))
                for h, width in _COLUMNS
            ]
            + [w.HTML("", layout=w.Layout(width="180px"))]
        )
        header.add_class("enb-ws-head")
        lines: list[Any] = [header]
        # one HTML widget for a row's cells, and layouts and styles shared by every row:
        # a list of 50 jobs is a few hundred widget models, not thousands
        tick_layout = w.Layout(width="32px", min_width="32px")
        cells_layout = w.Layout(flex="0 0 auto")
        open_layout = w.Layout(width="60px", flex="0 0 auto")
        icon_layout = w.Layout(width="38px", flex="0 0 auto")
        button_style = w.ButtonStyle()
        tick_style = w.Checkbox().style  # (ipywidgets does not export CheckboxStyle)
        for row in self.rows:
            tick = w.Checkbox(
                value=row.job_id in kept, indent=False, layout=tick_layout, style=tick_style
            )
            tick.observe(lambda _: self._selection_changed(), names="value")
            self.ticks[row.job_id] = tick
            cells = "".join(
                f'<div class="enb-panel enb-ws-cell" style="width:{width};min-width:{width};'
                f'max-width:{width}" title="{html.escape(title)}">{cell}</div>'
                for cell, title, (_h, width) in zip(
                    row_cells_html(row), _titles(row), _COLUMNS, strict=True
                )
            )
            row_cells = w.HTML(f'<div class="enb-ws-cells">{cells}</div>', layout=cells_layout)
            buttons = []
            for label, icon, tip, action in (
                ("Open", "", "open the job panel below", self._open),
                ("", "pencil", "rename: give the job a display name", self._rename),
                ("", "download", "report: write and download the standalone HTML report",
                 self._report),
                ("", "trash", "delete the job (asks first)", self._delete),
            ):  # fmt: skip
                b = w.Button(
                    description=label, icon=icon, tooltip=tip,
                    layout=open_layout if label else icon_layout, style=button_style,
                )  # fmt: skip
                b.on_click(lambda _, jid=row.job_id, act=action: act(jid))
                buttons.append(b)
            line = w.HBox([tick, row_cells, *buttons])
            line.add_class("enb-ws-row")
            lines.append(line)
        if not self.rows:
            empty = "no job matches" if self.all_rows else "no job yet: ws.load(...) one"
            lines.append(w.HTML(f'<div class="enb-panel enb-dim">{empty}</div>'))
        self.list.children = lines
        shown, total = len(self.rows), len(self.all_rows)
        self.count.value = (
            f'<span class="enb-panel enb-dim">{shown} of {total} jobs</span>'
            if shown != total
            else f'<span class="enb-panel enb-dim">{total} jobs</span>'
        )
        self._selection_changed()

    def _selection_changed(self) -> None:
        ticked = self.selected()
        n = len(ticked)
        rows = {r.job_id: r for r in self.all_rows}
        oldest = min(ticked, key=lambda j: rows[j].created_at or rows[j].loaded_at, default=None)
        keep = self._picked if self._picked in ticked else oldest
        self._updating = True  # not a pick of the user's
        try:
            self.baseline.options = [(self._name(j), j) for j in ticked]
            self.baseline.value = keep
        finally:
            self._updating = False
        self.baseline.layout.display = None if n >= 2 else "none"
        self.compare_button.disabled = not 2 <= n <= _MAX_COMPARE
        self.compare_button.description = f"Compare selected ({n})" if n else "Compare selected"
        if n > _MAX_COMPARE:
            self._say(f"{n} jobs ticked: a comparison takes 2 to {_MAX_COMPARE}")
        else:
            self._say("")

    def _baseline_picked(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self._picked = change["new"]

    def _say(self, text: str, *, error: bool = False) -> None:
        style = "color:var(--jp-error-color1,#c62828)" if error else ""
        self.message.value = f'<span class="enb-panel" style="{style}">{text}</span>'

    def _name(self, job_id: str) -> str:
        return next((r.name for r in self.all_rows if r.job_id == job_id), job_id)

    # -- actions -------------------------------------------------------------------
    def _open(self, job_id: str) -> None:
        self._say(f"opening {html.escape(self._name(job_id))}…")
        self.detail.children = [self.actions.open_job(job_id)]
        self._say("")

    def _compare(self) -> None:
        ids = self.selected()
        if self.baseline.value in ids:  # the comparison's baseline is its first job
            ids = [self.baseline.value] + [j for j in ids if j != self.baseline.value]
        try:
            self.detail.children = [self.actions.compare(ids)]
        except (ValueError, TypeError) as err:
            self._say(html.escape(str(err)), error=True)

    def _rename(self, job_id: str) -> None:
        import ipywidgets as w

        box = w.Text(value=self._name(job_id), layout=w.Layout(width="260px"))
        save = w.Button(description="Save", icon="check", button_style="primary")
        cancel = w.Button(description="Cancel")

        def done(_: Any) -> None:
            name = box.value.strip()
            if not name:
                self._say("a name cannot be empty", error=True)
                return
            try:
                self.actions.rename(job_id, name)
            except ValueError as err:  # a name in use: say so, change nothing
                self._say(html.escape(str(err)), error=True)
                return
            self.detail.children = []
            self.refresh()
            self._say(f"renamed to {html.escape(name)}")

        save.on_click(done)
        cancel.on_click(lambda _: setattr(self.detail, "children", []))
        label = w.HTML(f'<span class="enb-panel">Rename <code>{html.escape(job_id)}</code>:</span>')
        self.detail.children = [w.HBox([label, box, save, cancel])]

    def _delete(self, job_id: str) -> None:
        import ipywidgets as w

        sure = w.Button(description="Delete", icon="trash", button_style="danger")
        cancel = w.Button(description="Cancel")
        saved = self.con.execute(
            "SELECT count(*) FROM leaderboard WHERE job_id = ?", [job_id]
        ).fetchone()
        kept = (
            f" Its {saved[0]} saved leaderboard snapshot(s) are kept (they hold their own numbers)."
            if saved and saved[0]
            else ""
        )
        text = (
            f'<div class="enb-panel enb-flag enb-sev-error">Delete job '
            f"<b>{html.escape(self._name(job_id))}</b> (<code>{html.escape(job_id)}</code>) "
            f"with all its attempts, tasks and dimensions? This cannot be undone.{kept}</div>"
        )

        def go(_: Any) -> None:
            self.actions.remove(job_id)
            self.detail.children = []
            self.refresh()
            self._say(f"deleted {html.escape(job_id)}")

        sure.on_click(go)
        cancel.on_click(lambda _: setattr(self.detail, "children", []))
        self.detail.children = [w.VBox([w.HTML(text), w.HBox([sure, cancel])])]

    def _report(self, job_id: str) -> None:
        import ipywidgets as w

        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in job_id)
        self._say("writing the report…")
        path = self.actions.report(job_id, self.report_dir / f"{safe}.html")
        try:
            href = Path(os.path.relpath(path)).as_posix()
        except ValueError:  # another drive: an absolute link
            href = path.resolve().as_uri()
        self._say("")
        self.detail.children = [
            w.HTML(
                f'<div class="enb-panel">Report of <b>{html.escape(self._name(job_id))}</b>: '
                f'<a href="{html.escape(href)}" download="{html.escape(path.name)}" '
                f'target="_blank">download {html.escape(path.name)}</a> '
                f'<span class="enb-dim">({html.escape(str(path))})</span></div>'
            )
        ]
