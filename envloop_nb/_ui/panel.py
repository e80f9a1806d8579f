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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._present.panel_html import summarised_note_html
from .._store.ref import summarised
from .._types import Policy
from .buckets_tab import BucketsTab
from .cases_tab import CasesTab
from .overview import OverviewTab
from .state import PanelState, widget_bundle

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = ["JobPanel", "job_panel", "panel"]

TAB_TITLES = ("Overview", "Cases", "Buckets & export")
#: Position of the Cases tab: hidden, it re-queries only when shown.
CASES_TAB = 1


class JobPanel:
    """The panel of one job: an ipywidgets ``Tab`` with Overview, Cases, Buckets & export.

    Attributes
    ----------
    overview, cases, buckets
        The tabs; each exposes its controls and results as attributes.
    widget
        The ``ipywidgets.Tab`` shown in the notebook.
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
        self.state = PanelState(job, policy=policy, threshold=threshold)
        self.overview = OverviewTab(self.state)
        self.cases = CasesTab(self.state, page_size=page_size)
        self.buckets = BucketsTab(self.state)
        cases: Any = self.cases.widget
        reduced = summarised(job.con, job.id)
        if reduced is not None:  # no attempt here to list: say where they are
            cases = w.HTML(summarised_note_html(str(reduced.get("where") or reduced.get("engine"))))
        self.widget = w.Tab(
            children=[self.overview.widget, cases, self.buckets.widget],
            titles=list(TAB_TITLES),
        )
        self.widget.add_class("enb-job-panel")
        self.widget.observe(self._on_tab, names="selected_index")
        self.state.on_metric(self._policy_changed)
        self.state.on_buckets(self.cases.use_buckets)

        self._follower: Any = None

    def refresh(self) -> None:
        """Recompute every tab from the workspace (after the job was reloaded)."""
        self.overview.guard.run(self.overview._recompute)
        self.cases.refresh()

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
        self.cases.source.close()
        self.widget.close()

    def _policy_changed(self, state: PanelState) -> None:
        # a hidden Cases tab catches up when it is shown (see _on_tab)
        hidden = self.widget.selected_index != CASES_TAB
        self.cases.policy_changed(state.policy, state.threshold, defer=hidden)

    def _on_tab(self, change: Any) -> None:
        if change["new"] == CASES_TAB and self.cases._stale:
            self.cases.refresh()

    def __repr__(self) -> str:
        return f"<JobPanel {self.job.id}: {' · '.join(TAB_TITLES)}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), **kwargs)


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
