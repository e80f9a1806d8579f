"""The interactive panel of one job: Overview, Cases, Buckets & export (ipywidgets).

Thin widgets: every number comes from a library call and every chart from a pure spec
builder in :mod:`envloop_nb._present.charts` shown offline through
:func:`envloop_nb._present.render.chart_widget`. This module only assembles the tabs,
one file each (:mod:`~envloop_nb._ui.overview`, :mod:`~envloop_nb._ui.cases_tab`,
:mod:`~envloop_nb._ui.buckets_tab`), around one shared
:class:`~envloop_nb._ui.state.PanelState` (the job, the policy and threshold in force,
the current buckets): a tab writes the state, the others follow through its callbacks.

Every control and every result is an attribute, so tests drive a panel from Python:
``panel.overview.policy.value = "failure"``, ``panel.cases.search.value = "timeout"``,
``panel.cases.next_page.click()``, ``panel.buckets.apply_button.click()``, then read
``panel.overview.summary``, ``panel.cases.page.frame``, ``panel.buckets.last_export``.
An error in a callback shows a readable box in the panel and leaves the rest as it was.

The tabs are built lazily and in order (the Overview's cards, its charts and diagnosis,
Cases, Buckets): shown in a notebook, the panel first displays its frame (title and a
progress line), then builds the tabs into it, so the browser sees the panel at once, the
cards before the charts, and the progress as it goes (widget updates reach the front end
while the cell runs); read from Python, a tab is built on first access (``panel.cases``
builds the Overview and the Cases tab).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from .._present.panel_html import PANEL_CSS, summarised_note_html
from .._store.ref import job_info, summarised
from .._store.steps import has_tool_calls
from .._types import Policy
from .behaviour_tab import BehaviourTab
from .buckets_tab import BucketsTab
from .cases_tab import CasesTab
from .overview import OverviewTab
from .state import PanelState, widget_bundle

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = ["BUILD_STEPS", "JobPanel", "job_panel", "panel"]

TAB_TITLES = ("Overview", "Cases", "Buckets & export")
#: Position of the Cases tab: hidden, it re-queries only when shown.
CASES_TAB = 1
#: What the progress line says while each step is computed, in build order.
BUILD_STEPS = (
    "computing the overview…",
    "drawing the charts…",
    "listing the cases…",
    "preparing buckets & export…",
)
#: The tab each step builds: the Overview is shown (cards first) before its charts.
STEP_TABS = (0, 0, 1, 2)
#: A job with steps has one tab more, built last.
BEHAVIOUR = ("Behaviour", "measuring behaviour…", 3)


class JobPanel:
    """The panel of one job: an ipywidgets ``Tab`` with Overview, Cases, Buckets & export.

    Nothing is computed when the panel is made. Shown in a notebook, it displays its
    ``frame`` at once (the job's title and a progress line) and then computes the tabs
    one after another, filling the frame as they are ready (the Overview's cards before
    its charts). From Python, a tab is built
    the first time it is read (``panel.cases`` builds the Overview and the Cases tab).

    Attributes
    ----------
    overview, cases, buckets
        The tabs; each exposes its controls and results as attributes (built on first read).
    widget
        The ``ipywidgets.Tab`` with the three tabs (reading it builds them all).
    frame
        What the notebook shows: the title, the progress line while the tabs are
        computed (``progress``, ``progress_label``), then the ``Tab``.
    """

    def __init__(
        self,
        job: JobRef,
        *,
        policy: Policy = "unknown",
        threshold: float | None = None,
        page_size: int = 20,
    ) -> None:
        import ipywidgets as w

        self.job = job
        self.initial_policy = policy
        self.initial_threshold = threshold
        self.page_size = page_size
        self.state = PanelState(job, policy=policy, threshold=threshold)
        self._overview: OverviewTab | None = None
        self._cases: CasesTab | None = None
        self._buckets: BucketsTab | None = None
        self._behaviour: BehaviourTab | None = None
        self._built = 0  # how many of the build steps are done
        # a job whose steps hold tool calls gets the Behaviour tab (others: no tab at all)
        stepped = has_tool_calls(job.con, job.id)
        self.titles = TAB_TITLES + ((BEHAVIOUR[0],) if stepped else ())
        self._steps = BUILD_STEPS + ((BEHAVIOUR[1],) if stepped else ())
        self._step_tabs = STEP_TABS + ((BEHAVIOUR[2],) if stepped else ())
        # a note per tab until it is built (then the tab's own widget takes its place)
        self._tab = w.Tab(
            children=[
                w.HTML(self._note(self._steps[self._step_tabs.index(tab)]))
                for tab in range(len(self.titles))
            ],
            titles=list(self.titles),
        )
        self._tab.add_class("enb-job-panel")
        self._tab.layout.display = "none"  # shown once the Overview is there
        self._tab.observe(self._on_tab, names="selected_index")
        info = job_info(job.con, job.id)  # one row: a missing job fails here, at once
        what = [str(info.get("model") or "")]
        if info.get("dataset_name"):
            what.append(f"{info['dataset_name']}@{info.get('dataset_version') or '-'}")
        what += [f"k = {info.get('attempts')}", str(info.get("status") or "")]
        self.title = w.HTML(
            f'{PANEL_CSS}<div class="enb-panel"><b>{html.escape(job.id)}</b> '
            f'<span class="enb-dim">· {html.escape(" · ".join(t for t in what if t))}</span></div>'
        )
        self.progress = w.IntProgress(
            value=0, min=0, max=len(self._steps), bar_style="info", layout=w.Layout(width="220px")
        )
        self.progress_label = w.HTML(self._note(BUILD_STEPS[0]))
        self.progress_box = w.HBox(
            [self.progress, self.progress_label], layout=w.Layout(align_items="center")
        )
        self.frame = w.VBox([self.title, self.progress_box, self._tab])
        self.frame.add_class("enb-job-frame")
        self.state.on_metric(self._policy_changed)
        self._follower: Any = None

    # -- building the tabs -----------------------------------------------------------
    @property
    def built(self) -> bool:
        """True once every tab is built."""
        return self._built == len(self._steps)

    def build(self, upto: int | None = None) -> JobPanel:
        """Do the first ``upto`` build steps not done yet (all by default), moving the
        progress line along; an error is shown in the frame and raised."""
        last = len(self._steps) if upto is None else min(upto, len(self._steps))
        while self._built < last:
            step = self._built
            self.progress.value, self.progress.bar_style = step, "info"
            self.progress_label.value = self._note(self._steps[step])
            try:
                self._build_step(step)
            except Exception as exc:
                from .state import describe_error

                self.progress.bar_style = "danger"
                self.progress_label.value = self._note(
                    f"could not build the {self.titles[self._step_tabs[step]]} tab: {describe_error(exc)}"
                )
                raise
            self._built = step + 1
            self.progress.value = self._built
            if step == 0:
                self._tab.layout.display = None
        if self.built:
            self.progress_box.layout.display = "none"
        else:
            self.progress_label.value = self._note(self._steps[self._built])
        return self

    @staticmethod
    def _note(text: str) -> str:
        return f'{PANEL_CSS}<div class="enb-panel enb-dim">{html.escape(text)}</div>'

    def _build_step(self, step: int) -> None:
        import ipywidgets as w

        if step == 0:
            self._overview = OverviewTab(self.state)
            self._put(0, self._overview.widget)
        elif step == 1:
            assert self._overview is not None
            self._overview.draw()
        elif step == 2:
            self._cases = CasesTab(self.state, page_size=self.page_size)
            self.state.on_buckets(self._cases.use_buckets)
            widget: Any = self._cases.widget
            job = self.job
            reduced = summarised(job.con, job.id)
            if reduced is not None:  # no attempt here to list: say where they are
                where = str(reduced.get("where") or reduced.get("engine"))
                widget = w.HTML(summarised_note_html(where))
            self._put(1, widget)
        elif step == 3:
            self._buckets = BucketsTab(self.state)
            self._put(2, self._buckets.widget)
        else:
            self._behaviour = BehaviourTab(self.state)
            self._put(BEHAVIOUR[2], self._behaviour.widget)

    def _put(self, index: int, widget: Any) -> None:
        """Show ``widget`` as tab ``index`` (same number of children: titles stay)."""
        children = list(self._tab.children)
        placeholder, children[index] = children[index], widget
        self._tab.children = children
        placeholder.close()

    @property
    def overview(self) -> OverviewTab:
        """The Overview tab, its charts drawn (built on first read)."""
        self.build(2)
        assert self._overview is not None
        return self._overview

    @property
    def cases(self) -> CasesTab:
        """The Cases tab (built on first read, after the Overview)."""
        self.build(3)
        assert self._cases is not None
        return self._cases

    @property
    def buckets(self) -> BucketsTab:
        """The Buckets & export tab (built on first read, after the other two)."""
        self.build(4)
        assert self._buckets is not None
        return self._buckets

    @property
    def behaviour(self) -> BehaviourTab | None:
        """The Behaviour tab (built on first read, after the others); None for a job
        without steps, which has no such tab."""
        self.build(5)
        return self._behaviour

    @property
    def widget(self) -> Any:
        """The ``ipywidgets.Tab`` of the panel, every tab built."""
        self.build()
        return self._tab

    # -- updates ---------------------------------------------------------------------
    def refresh(self) -> None:
        """Recompute every tab from the workspace (after the job was reloaded)."""
        if self._overview is not None:
            self._overview.guard.run(self._overview._recompute)
        if self._cases is not None:
            self._cases.refresh()
        if self._behaviour is not None:
            self._behaviour.guard.run(self._behaviour._recompute)

    def follow(self, *, interval: float = 1.0) -> JobPanel:
        """Redraw whenever the job is reloaded (``ws.watch`` on its export does that as
        trials arrive); ``unfollow()`` stops."""
        from .follow import Follower

        if self._follower is None:
            self._follower = Follower(
                self.job.con, "SELECT loaded_at FROM jobs WHERE job_id = ?", [self.job.id],
                self.refresh, interval=interval,
            )  # fmt: skip
        return self

    def unfollow(self) -> None:
        if self._follower is not None:
            self._follower.stop()
            self._follower = None

    def close(self) -> None:
        """Close the widgets and drop the panel's temp tables from the workspace."""
        self.unfollow()
        if self._cases is not None:
            self._cases.source.close()
        self._tab.close()
        self.frame.close()

    def _policy_changed(self, state: PanelState) -> None:
        if self._cases is None:  # not built yet: it starts from the state's policy
            return
        # a hidden Cases tab catches up when it is shown (see _on_tab)
        hidden = self._tab.selected_index != CASES_TAB
        self._cases.policy_changed(state.policy, state.threshold, defer=hidden)

    def _on_tab(self, change: Any) -> None:
        if change["new"] == CASES_TAB and self.cases._stale:
            self.cases.refresh()

    def __repr__(self) -> str:
        return f"<JobPanel {self.job.id}: {' · '.join(self.titles)}>"

    def _ipython_display_(self) -> None:
        """Show the frame first, then compute the tabs into it (the notebook sees the
        title and the progress line while the Overview is computed)."""
        from IPython.display import display

        display(widget_bundle(self.frame, repr(self)), raw=True)  # type: ignore[no-untyped-call]
        self.build()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        self.build()
        return widget_bundle(self.frame, repr(self), **kwargs)


def job_panel(
    job: JobRef,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    page_size: int = 20,
) -> JobPanel:
    """The interactive panel of ``job`` (see :class:`JobPanel`)."""
    return JobPanel(job, policy=policy, threshold=threshold, page_size=page_size)


def panel(
    job: JobRef,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    page_size: int = 20,
) -> JobPanel:
    """Show a job as an interactive panel: ``enb.panel(job)`` (same as ``job.panel()``).

    Parameters
    ----------
    job
        A loaded job.
    policy, threshold
        Initial missing-value policy and pass threshold (both can be changed in the panel).
    page_size
        Rows per page of the Cases tab.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> p = enb.panel(job)
    >>> p
    <JobPanel job_abc0001: Overview · Cases · Buckets & export>
    >>> p.overview.policy.value = "failure"
    >>> print(p.overview.summary)
    score 50.0% · 5/6 attempts scored · 2/3 members complete
    """
    return JobPanel(job, policy=policy, threshold=threshold, page_size=page_size)
