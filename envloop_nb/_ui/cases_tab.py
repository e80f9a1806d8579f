"""The Cases tab: per-attempt / per-task rows with filters, sort, paging and a detail view.

The rows come from :class:`~envloop_nb._ui.cases_query.CaseSource` (paged in DuckDB),
the detail from :mod:`envloop_nb._ui.cases_detail`, the HTML from
:mod:`envloop_nb._present.cases_html`. The tab follows the panel's
:class:`~envloop_nb._ui.state.PanelState`: a new policy/threshold or bucket result
re-queries the rows (lazily while the tab is hidden, see :meth:`CasesTab.policy_changed`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._annotations.manual import define, manual_dimensions
from .._metrics.facts import reward_range
from .._present.cases_html import error_box, ok_box, task_detail_html
from .._types import Policy
from .annotate import QuickAnnotation, parse_manual_spec
from .cases_detail import task_detail
from .cases_query import CasePage, CaseQuery, CaseSource, page_html
from .state import Guard
from .steps_view import attempt_view_html

if TYPE_CHECKING:
    from .state import PanelState

__all__ = ["CasesTab"]


class CasesTab:
    """Per-attempt / per-task rows with filters, sort, paging and a detail view."""

    ALL = "__all__"
    DEFAULT_SORT = ""

    def __init__(self, state: PanelState, page_size: int = 20) -> None:
        import ipywidgets as w

        self.state = state
        self.source = CaseSource(state.con, state.job_id)
        self.query = CaseQuery(page_size=page_size, policy=state.policy, threshold=state.threshold)
        lo, hi = reward_range(state.con, state.job_id)
        self.reward_bounds = (
            min(0.0, lo) if lo is not None else 0.0,
            max(1.0, hi) if hi is not None else 1.0,
        )
        small = w.Layout(width="auto")
        self.view = w.ToggleButtons(
            options=[("per attempt", "attempt"), ("per task", "task")], value="attempt"
        )
        self.view.style.button_width = "110px"
        # the input column switch (attempt view): which texts the rows show
        self.text = w.ToggleButtons(
            options=[("Prompt & Completion", "both"), ("Prompt", "prompt"),
                     ("Completion", "completion")],
            value="both",
            tooltips=["the input and the output", "the input only", "the output only"],
        )  # fmt: skip
        self.text.style.button_width = "165px"
        self.status = w.Dropdown(
            options=[("all states", self.ALL)]
            + [(s, s) for s in ("completed", "failed", "cancelled", "running", "pending")],
            value=self.ALL,
            description="status",
            layout=w.Layout(width="190px"),
        )
        subsets = self.source.tag_values("subset")
        self.subset = w.Dropdown(
            options=[("all subsets", self.ALL)] + [(s, s) for s in subsets],
            value=self.ALL,
            description="subset",
            layout=w.Layout(width="190px"),
        )
        self.bucket = w.Dropdown(
            options=[("all buckets", self.ALL)],
            value=self.ALL,
            description="bucket",
            layout=w.Layout(width="220px"),
            disabled=True,
        )
        self.value_range = w.FloatRangeSlider(
            value=self.reward_bounds,
            min=self.reward_bounds[0],
            max=self.reward_bounds[1],
            step=0.05,
            description="reward",
            continuous_update=False,
            readout_format=".2f",
            layout=w.Layout(width="330px"),
        )
        self.search = w.Text(
            placeholder="search input, output, error…",
            continuous_update=False,
            layout=w.Layout(width="240px"),
        )
        self.sort_by = w.Dropdown(description="sort", layout=w.Layout(width="200px"))
        self.descending = w.Checkbox(value=False, description="descending", indent=False,
                                     layout=small)  # fmt: skip
        self.page_size = w.Dropdown(
            options=[10, 20, 50, 100],
            value=page_size,
            description="rows",
            layout=w.Layout(width="150px"),
        )
        self.first_page = w.Button(description="« first", layout=w.Layout(width="70px"))
        self.prev_page = w.Button(description="‹ prev", layout=w.Layout(width="70px"))
        self.next_page = w.Button(description="next ›", layout=w.Layout(width="70px"))
        self.last_page = w.Button(description="last »", layout=w.Layout(width="70px"))
        self.page_number = w.BoundedIntText(
            value=1, min=1, max=1, description="page", layout=w.Layout(width="150px")
        )
        self.page_label = w.HTML()
        from .clicktable import ClickableTable

        self.table = ClickableTable()  # click a row to open its detail
        self.row = w.Dropdown(description="details", layout=w.Layout(width="420px"))
        from .html_view import HtmlView

        self.detail = HtmlView()  # an attempt with steps shows its transcript (paged, searchable)
        # a task's detail lists its attempts; choosing one opens that attempt below it
        self.task_attempt = w.ToggleButtons(
            options=[], description="open attempt", layout=w.Layout(display="none"),
            style={"description_width": "initial"},
        )  # fmt: skip
        self.task_attempt.style.button_width = "48px"
        self.attempt_detail = HtmlView()
        self.error = w.HTML()
        self.guard = Guard(self.error)
        self._page: CasePage | None = None
        self._stale = False
        self.selected: int | None = None
        self._quiet = False
        self._build_annotation_controls()
        self._set_sort_options()
        self.refresh()
        for control in (self.status, self.subset, self.bucket, self.value_range, self.search,
                        self.sort_by, self.descending, self.page_size, self.text):  # fmt: skip
            control.observe(lambda _: self._on_filter(), names="value")
        self.task_attempt.observe(lambda _: self._on_task_attempt(), names="value")
        self.view.observe(lambda _: self._on_view(), names="value")
        self.first_page.on_click(lambda _: self.go_to_page(0))
        self.prev_page.on_click(lambda _: self.go_to_page(self.query.page - 1))
        self.next_page.on_click(lambda _: self.go_to_page(self.query.page + 1))
        self.last_page.on_click(lambda _: self.go_to_page(self._pages() - 1))
        self.page_number.observe(lambda _: self._on_page_number(), names="value")
        self.row.observe(lambda _: self._on_row(), names="value")
        self.table.observe(lambda _: self.select_row(self.table.clicked), names="clicks")
        filters = w.HBox(
            [self.status, self.subset, self.bucket], layout=w.Layout(flex_flow="row wrap")
        )
        filters2 = w.HBox([self.value_range, self.search], layout=w.Layout(flex_flow="row wrap"))
        paging = w.HBox(
            [self.sort_by, self.descending, self.page_size, self.first_page, self.prev_page,
             self.page_number, self.next_page, self.last_page, self.page_label],
            layout=w.Layout(align_items="center", flex_flow="row wrap"),
        )  # fmt: skip
        self.normal_box = w.VBox(
            [paging, self.error, self.table, self.row, self.detail, self.task_attempt,
             self.attempt_detail]
        )  # fmt: skip
        self.widget = w.VBox(
            [w.HBox([self.view, self.text], layout=w.Layout(flex_flow="row wrap")),
             self.annotation_bar, self.manual_form, filters, filters2, self.normal_box,
             self.quick_box]
        )  # fmt: skip

    # -- human annotation ----------------------------------------------------------
    def _build_annotation_controls(self) -> None:
        """Mode switch (normal / quick annotation), the manual dimension to annotate, and
        a small form to add a manual dimension."""
        import ipywidgets as w

        self.mode = w.ToggleButtons(
            options=[("normal", "normal"), ("quick annotation", "quick")], value="normal",
            tooltips=["rows, filters and details", "one case at a time, keyboard only"],
        )  # fmt: skip
        self.mode.style.button_width = "130px"
        self.manual = w.Dropdown(description="dimension", layout=w.Layout(width="240px"))
        self.manual_toggle = w.ToggleButton(
            value=False, description="manual dimension", icon="plus",
            layout=w.Layout(width="160px"),
        )  # fmt: skip
        self.manual_name = w.Text(placeholder="name, e.g. correct", layout=w.Layout(width="180px"))
        self.manual_labels = w.Text(
            placeholder="labels: correct=1, partly=0.5, wrong=0  — or a scale: 1-5",
            layout=w.Layout(width="420px"),
        )
        self.manual_required = w.Checkbox(value=True, description="required", indent=False,
                                          layout=w.Layout(width="auto"))  # fmt: skip
        self.manual_add = w.Button(description="add", button_style="primary",
                                   layout=w.Layout(width="70px"))  # fmt: skip
        self.manual_message = w.HTML()
        self.manual_form = w.HBox(
            [self.manual_name, self.manual_labels, self.manual_required, self.manual_add,
             self.manual_message],
            layout=w.Layout(display="none", align_items="center", flex_flow="row wrap"),
        )  # fmt: skip
        self.annotation_bar = w.HBox(
            [self.mode, self.manual, self.manual_toggle],
            layout=w.Layout(align_items="center", flex_flow="row wrap"),
        )
        self.quick_box = w.VBox([], layout=w.Layout(display="none"))
        self.quick: QuickAnnotation | None = None
        self._set_manual_options()
        self.mode.observe(lambda _: self._on_mode(), names="value")
        self.manual.observe(lambda _: self._on_mode(), names="value")
        self.manual_toggle.observe(
            lambda _: setattr(self.manual_form.layout, "display",
                              None if self.manual_toggle.value else "none"),
            names="value",
        )  # fmt: skip
        self.manual_add.on_click(lambda _: self.add_manual_dimension())

    def _set_manual_options(self) -> None:
        names = [d.name for d in manual_dimensions(self.state.con, self.state.job_id)]
        with self._quietly():
            self.manual.options = names
            self.manual.value = names[0] if names else None
            self.manual.disabled = not names
            self.mode.disabled = not names
        self.mode.tooltips = (
            ["rows, filters and details", "one case at a time, keyboard only"]
            if names else ["", "add a manual dimension first (＋ manual dimension)"]
        )  # fmt: skip

    def add_manual_dimension(self) -> None:
        """Add the manual dimension the form describes (refused: says why, nothing added)."""
        name = self.manual_name.value.strip()
        text = self.manual_labels.value.strip()
        try:
            labels, scale = parse_manual_spec(text)
            define(
                self.state.con, self.state.job_id, name, labels=labels, scale=scale,
                required=bool(self.manual_required.value),
            )  # fmt: skip
        except (ValueError, TypeError) as e:
            self.manual_message.value = error_box(str(e))
            return
        self.manual_message.value = ok_box(f"added {name!r}")
        self.source.reload_dimensions()
        self._set_sort_options()
        self.refresh()
        self._set_manual_options()
        with self._quietly():
            self.manual.value = name

    def _on_mode(self) -> None:
        if self._quiet:
            return
        quick = self.mode.value == "quick"

        def switch() -> None:
            if quick:
                self.quick = QuickAnnotation(
                    self.state.con, self.state.job_id, self.source, self.query,
                    name=self.manual.value,
                )  # fmt: skip
                self.quick_box.children = (self.quick.widget,)
            else:
                self.quick = None
                self.quick_box.children = ()
                self.refresh()  # the rows show the new annotations
            self.quick_box.layout.display = None if quick else "none"
            self.normal_box.layout.display = "none" if quick else None

        self.guard.run(switch)

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        old, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = old

    @property
    def page(self) -> CasePage | None:
        """The current page (re-queried first if a policy change was deferred)."""
        if self._stale:
            self.refresh()
        return self._page

    @property
    def frame(self) -> Any:
        """The rows of the current page (a pandas frame)."""
        return None if self.page is None else self.page.frame

    def _set_sort_options(self) -> None:
        cols = self.source.sortable(self.view.value)
        current = self.sort_by.value if self.sort_by.value in cols else self.DEFAULT_SORT
        with self._quietly():
            self.sort_by.options = [("default order", self.DEFAULT_SORT)] + [(c, c) for c in cols]
            self.sort_by.value = current

    def _query_from_controls(self) -> CaseQuery:
        task_view = self.view.value == "task"
        bounds = (0.0, 1.0) if task_view else self.reward_bounds
        lo, hi = self.value_range.value
        full = math.isclose(lo, bounds[0]) and math.isclose(hi, bounds[1])
        return self.query.replace(
            view=self.view.value,
            status=() if self.status.value == self.ALL else (self.status.value,),
            tag_value=None if self.subset.value == self.ALL else self.subset.value,
            bucket=None if self.bucket.value == self.ALL else self.bucket.value,
            low=None if full else float(lo),
            high=None if full else float(hi),
            search=self.search.value,
            text=self.text.value,
            sort=self.sort_by.value or None,
            descending=bool(self.descending.value),
            page_size=int(self.page_size.value),
        )

    def _on_filter(self) -> None:
        if self._quiet:
            return
        self.guard.run(lambda: self._show(self._query_from_controls()))

    def _on_view(self) -> None:
        if self._quiet:
            return

        def change() -> None:
            task_view = self.view.value == "task"
            bounds = (0.0, 1.0) if task_view else self.reward_bounds
            with self._quietly():
                self._set_sort_options()
                self.text.disabled = task_view  # the task view shows no texts
                self.value_range.min, self.value_range.max = -1e9, 1e9
                self.value_range.value = bounds
                self.value_range.min, self.value_range.max = bounds
                self.value_range.description = "pass rate" if task_view else "reward"
            self._show(self._query_from_controls())

        self.guard.run(change)

    def _pages(self) -> int:
        return self.page.pages if self.page is not None else 1

    def _on_page_number(self) -> None:
        if not self._quiet and self.page_number.value - 1 != self.query.page:
            self.go_to_page(self.page_number.value - 1)

    def go_to_page(self, page: int) -> None:
        """Show page ``page`` (0-based; clipped to the pages there are)."""
        pages = self.page.pages if self.page is not None else 1
        page = max(0, min(int(page), pages - 1))
        self.guard.run(lambda: self._show(self.query.replace(page=page)))

    def refresh(self) -> None:
        """Re-run the current query (after policy, threshold or bucket changes)."""
        self.guard.run(lambda: self._show(self.query))

    def policy_changed(
        self, policy: Policy, threshold: float | None, *, defer: bool = False
    ) -> None:
        """Use a new missing-value policy / threshold for the per-task numbers.

        ``defer=True`` (the tab is hidden) only records it; the rows are re-queried when
        the tab is shown or the page is read.
        """
        query = self.query.replace(policy=policy, threshold=threshold, page=self.query.page)
        if defer:
            self.query, self._stale = query, True
            return
        self.guard.run(lambda: self._show(query))

    def buckets_changed(self, names: list[str] | None = None) -> None:
        """Bucket assignment changed: refresh the bucket filter and the rows."""
        names = self.source.bucket_names() if names is None else names
        with self._quietly():
            self.bucket.options = [("all buckets", self.ALL)] + [(n, n) for n in names]
            self.bucket.value = self.ALL
            self.bucket.disabled = not self.source.has_buckets
            self._set_sort_options()
        self.guard.run(lambda: self._show(self._query_from_controls()))

    def use_buckets(self, state: PanelState) -> None:
        """Filter and sort by the panel's current bucket result (a ``PanelState`` listener).

        Raises (leaving the rows as they were) when the assignment cannot be stored.
        """
        result = state.buckets
        self.source.set_buckets(None if result is None else result.frame)
        self.buckets_changed(None if result is None else list(result.rules.names))

    def _show(self, query: CaseQuery) -> None:
        page = self.source.fetch(query)  # raises before anything changes
        self.query, self._page, self.selected, self._stale = query, page, None, False
        self.table.value = page_html(page)
        self.page_label.value = (
            f'<span style="font-variant-numeric:tabular-nums">{html.escape(page.describe())}</span>'
        )
        self.prev_page.disabled = self.first_page.disabled = query.page <= 0
        self.next_page.disabled = self.last_page.disabled = query.page >= page.pages - 1
        with self._quietly():  # go-to-page box follows the page shown
            self.page_number.max = max(1, page.pages)
            self.page_number.value = query.page + 1
        options: list[tuple[str, int]] = [("— choose a row —", -1)]
        for i, r in enumerate(page.frame.itertuples(index=False)):
            label = f"{page.first_row + i}. {r.task}"
            if query.view == "attempt":
                label += f" · attempt {r.attempt} · {r.status}"
            options.append((label, i))
        with self._quietly():
            self.row.options = options
            self.row.value = -1
        self.detail.value = ""
        self._clear_task_attempts()

    def _clear_task_attempts(self) -> None:
        with self._quietly():
            self.task_attempt.options = []
            self.task_attempt.layout.display = "none"
        self.attempt_detail.value = ""

    def _on_task_attempt(self) -> None:
        """Open the chosen attempt of the task whose detail is shown."""
        if self._quiet or self.page is None or self.selected is None:
            return
        attempt = self.task_attempt.value
        if attempt is None:
            self.attempt_detail.value = ""
            return
        task = str(self.page.frame.iloc[self.selected]["task"])

        def show() -> None:
            con, job_id = self.state.con, self.state.job_id
            self.attempt_detail.value = attempt_view_html(con, job_id, task, int(attempt))

        self.guard.run(show)

    def open_task_attempt(self, attempt: int) -> None:
        """In the task view, with a task's detail shown, open its attempt ``attempt``."""
        self.task_attempt.value = int(attempt)

    def select_row(self, index: int) -> None:
        """Open the detail of row ``index`` of the current page (0-based)."""
        self.row.value = int(index)

    def _on_row(self) -> None:
        if self._quiet or self.page is None:
            return
        index = self.row.value
        if index is None or index < 0:
            self.selected = None
            self.detail.value = ""
            self._clear_task_attempts()
            self.table.value = page_html(self.page)
            return

        def show() -> None:
            assert self.page is not None
            record = self.page.frame.iloc[int(index)]
            con, job_id = self.state.con, self.state.job_id
            if self.query.view == "attempt":
                text = attempt_view_html(con, job_id, str(record["task"]), int(record["attempt"]))
            else:
                detail = task_detail(
                    con, job_id, str(record["task"]),
                    policy=self.query.policy, threshold=self.query.threshold,
                )  # fmt: skip
                text = task_detail_html(detail)
            self._clear_task_attempts()
            self.selected = int(index)
            self.detail.value = text
            if self.query.view == "task":
                with self._quietly():
                    self.task_attempt.options = [
                        (str(a), int(a)) for a in detail["attempts"]["attempt"]
                    ]
                    self.task_attempt.value = None
                    self.task_attempt.layout.display = None if len(detail["attempts"]) else "none"
            self.table.value = page_html(self.page, selected=int(index))

        self.guard.run(show)
