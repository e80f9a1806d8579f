"""The Overview tab: facts, metric cards with coverage, policy/threshold, groups, charts.

Every number comes from a metric function called with the panel's ``(con, job_id)``
(:func:`~envloop_nb._metrics.facts.noted_summary`, ``group_summaries``, ``curve``,
``diagnose``, Harbor's ``check``) and every chart from a pure spec builder of
:mod:`envloop_nb._present.charts`. Its policy and threshold controls write the panel's
:class:`~envloop_nb._ui.state.PanelState`; the other tabs follow from there.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._metrics.consumption import consumption_rows
from .._metrics.facts import (
    dimension_names,
    has_dimensions,
    loaded_at,
    noted_summary,
    shown_info,
)
from .._metrics.inference import inference_config
from .._present.job_details import consumption_html, inference_html, inference_summary
from .._present.panel_html import (
    PANEL_CSS,
    agreement_html,
    facts_html,
    findings_html,
    groups_html,
    note_html,
    source_agreement_html,
    verdict_html,
)
from .._store.ref import job_k
from .state import Guard

if TYPE_CHECKING:
    from .._metrics.harbor import HarborCheck
    from .._metrics.summary import JobSummary
    from .state import PanelState

__all__ = ["OverviewTab", "harbor_agreement_html"]

#: The tool behind each source format, as the agreement line names it.
_TOOLS = {
    "inspect": "Inspect AI",
    "terminal-bench": "Terminal-Bench",
    "lm-eval": "lm-evaluation-harness",
    "envloop": "The platform",
    "harbor": "Harbor",
}

#: The distribution charts of the tab: chart name and measure.
DISTRIBUTIONS = (("reward", "reward"), ("turns", "turns"), ("tokens", "tokens"),
                 ("duration", "duration"))  # fmt: skip


def harbor_agreement_html(check: HarborCheck) -> str:
    """Whether Harbor's ``result.json`` numbers agree, under its version's policy (pure).

    Examples
    --------
    >>> from envloop_nb._metrics.harbor import HarborCheck
    >>> c = HarborCheck({"version": "0.22.0"}, "failure", {"mean": 0.5},
    ...                 {"failure": {"mean": 0.5}}, ("failure",))
    >>> out = harbor_agreement_html(c)
    >>> "numbers agree" in out and "policy=&#x27;failure&#x27;" in out
    True
    """
    compared = bool(check.platform)
    return verdict_html(
        check.verdict(),
        compared=compared,
        agrees=compared and check.agrees,
        checked=check.checked if compared else 0,
        diffs=check.diffs(check.compared_policy) if compared and not check.agrees else {},
    )


@dataclass(frozen=True)
class _Computed:
    """What the tab shows under one policy and threshold, before any chart is made."""

    summary: JobSummary
    groups: str
    dims: str
    points: Any  # the curve's frame
    scores: Any  # score by subset (None: no task has a subset tag)


class OverviewTab:
    """Facts, metric cards with coverage, policy/threshold, groups, charts, diagnosis."""

    def __init__(self, state: PanelState) -> None:
        import ipywidgets as w

        from .._present import charts as _charts

        self.state = state
        con, job_id = state.con, state.job_id
        self.facts = w.HTML()
        self.policy = w.Dropdown(
            options=[("unknown (platform)", "unknown"), ("failure (missing = 0)", "failure")],
            value=state.policy,
            description="missing:",
            layout=w.Layout(width="240px"),
        )
        self.use_threshold = w.Checkbox(
            value=state.threshold is not None,
            description="pass = reward ≥",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self.threshold = w.FloatText(
            value=0.5 if state.threshold is None else state.threshold,
            step=0.05,
            layout=w.Layout(width="80px"),
        )
        self.cards = w.HTML()
        self.agreement = w.HTML()
        self.groups = w.HTML()
        self.dimensions = w.HTML()
        self.diagnosis = w.HTML()
        self.error = w.HTML()
        self.guard = Guard(self.error)
        self.summary: JobSummary | None = None
        self.has_dimensions = has_dimensions(con, job_id)
        # a job whose tasks carry no subset tag (a Harbor job: only "source") has no table
        self.has_subsets = (
            con.execute(
                "SELECT 1 FROM task_tags WHERE job_id = ? AND key = 'subset' LIMIT 1", [job_id]
            ).fetchone()
            is not None
        )
        self._cache: dict[tuple[Any, ...], _Computed] = {}
        self._status = _charts.status_frame(con, job_id)
        self.status_counts = {str(s): int(c) for s, c in self._status.itertuples(index=False)}
        self.charts: dict[str, Any] = {}  # filled by draw()
        self.chart_widgets: dict[str, Any] = {}
        self.drawn = False
        info = shown_info(con, job_id)  # the status says when annotations are awaited
        config = inference_config(con, job_id, inputs=False)
        self.facts.value = facts_html(
            info,
            self.status_counts,
            dimensions=dimension_names(con, job_id),
            concurrency=config.concurrency,
        )
        # the inference configuration: a one-line summary, the whole of it behind "details"
        self.inference_line = w.HTML(
            f'{PANEL_CSS}<div class="enb-panel"><b>Inference configuration</b>: '
            f"{html.escape(inference_summary(config.to_dict()))}</div>"
        )
        self.inference_toggle = w.ToggleButton(
            value=False, description="details", icon="chevron-right",
            tooltip="system prompt and inference parameters", layout=w.Layout(width="96px"),
        )  # fmt: skip
        self.inference = w.HTML(layout=w.Layout(display="none"))
        self.inference_toggle.observe(lambda _: self._toggle_inference(), names="value")
        self.consumption = w.HTML(
            f'{PANEL_CSS}<div class="enb-panel">'
            f"{consumption_html(consumption_rows(con, job_id))}</div>"
        )
        # policy-independent: the platform comparison uses the platform's own rule
        self.platform_metrics = info.get("platform_metrics")
        numbers = (info.get("extra") or {}).get("source_numbers")
        if numbers:  # the source's own numbers, each recomputed under the source's rules
            from .._metrics.agreement import source_agreement

            rows = [
                {"metric": a.metric, "source": a.source, "recomputed": a.recomputed,
                 "agrees": a.agrees, "rule": a.number.rule, "note": a.note}
                for a in source_agreement(con, job_id)
            ]  # fmt: skip
            tool = _TOOLS.get(str(info.get("source_format")), str(info.get("source_format")))
            self.agreement.value = source_agreement_html(tool, rows)
        elif info.get("source_format") == "harbor":  # its rule depends on its version
            from .._metrics.harbor import check

            harbor = check(state.ref)
            assert harbor is not None
            self.agreement.value = harbor_agreement_html(harbor)
        else:
            ours = noted_summary(con, job_id).to_dict()
            self.agreement.value = agreement_html(self.platform_metrics, ours)
        self._recompute()
        self.policy.observe(lambda _: self._on_change(), names="value")
        self.use_threshold.observe(lambda _: self._on_change(), names="value")
        self.threshold.observe(lambda _: self._on_change(), names="value")
        controls = w.HBox(
            [self.policy, self.use_threshold, self.threshold],
            layout=w.Layout(align_items="center"),
        )
        self.chart_box = w.Box(layout=w.Layout(display="flex", flex_flow="row wrap"))
        self.widget = w.VBox(
            [
                self.facts,
                w.HBox(
                    [self.inference_line, self.inference_toggle],
                    layout=w.Layout(align_items="center", grid_gap="8px"),
                ),
                self.inference,
                self.consumption,
                controls,
                self.error,
                self.cards,
                self.agreement,
                self.groups,
                self.dimensions,
                self.chart_box,
                self.diagnosis,
            ]
        )

    def draw(self) -> None:
        """Draw the charts and the diagnosis (the slower half of the tab, which the cards
        do not wait for: a shown panel puts the cards up first). Each chart is shown as
        soon as it is made: the first one does not wait for the others."""
        if self.drawn:
            return
        from .._present import charts as _charts
        from .._present.render import chart_widget

        con, job_id = self.state.con, self.state.job_id

        def made() -> Iterator[tuple[str, Any]]:
            for name, measure in DISTRIBUTIONS:
                frame = _charts.distribution_frame(con, job_id, measure)
                if len(frame):
                    title = _charts.DISTRIBUTIONS[measure][1]
                    yield name, _charts.distribution_chart(frame, title=title, x_title=title)
            # under the policy and threshold in force (the controls may hold an unapplied value)
            yield from self._metric_charts(self.state.policy, self.state.threshold).items()

        for name, chart in made():
            widget = chart_widget(chart)
            self.charts[name], self.chart_widgets[name] = chart, widget
            self.chart_box.children = (*self.chart_box.children, widget)
        self.drawn = True
        self.diagnosis.value = self._diagnosis()

    def _toggle_inference(self) -> None:
        """Show (computing it the first time) or hide the inference configuration."""
        if self.inference_toggle.value:
            if not self.inference.value:
                config = inference_config(self.state.con, self.state.job_id)
                self.inference.value = (
                    f'{PANEL_CSS}<div class="enb-panel">{inference_html(config.to_dict())}</div>'
                )
            self.inference.layout.display = None
            self.inference_toggle.icon = "chevron-down"
        else:
            self.inference.layout.display = "none"
            self.inference_toggle.icon = "chevron-right"

    @property
    def threshold_value(self) -> float | None:
        """The threshold the controls ask for (``None`` when unticked; raises if not finite)."""
        if not self.use_threshold.value:
            return None
        value = float(self.threshold.value)
        if not math.isfinite(value):
            raise ValueError("the pass threshold must be a finite number")
        return value

    def _on_change(self) -> None:
        if self.guard.run(self._recompute):
            self.state.set_metric(self.policy.value, self.threshold_value)

    def _compute(self, policy: Any, threshold: float | None) -> _Computed:
        """Summary, group tables, the curve's points and the scores by subset under one
        policy/threshold (cached by the job's ``loaded_at`` too: a reloaded job is
        recomputed). No chart: the cards do not wait for one."""
        from .._metrics.groups import group_summaries
        from .._metrics.passk_views import curve

        con, job_id = self.state.con, self.state.job_id
        key = (policy, threshold, loaded_at(con, job_id))
        if key not in self._cache:
            summary = noted_summary(con, job_id, policy=policy, threshold=threshold)
            dims = ""
            groups, scores = "", None
            if self.has_subsets:
                by_subset = group_summaries(
                    con, job_id, by="subset", policy=policy, threshold=threshold
                )
                groups = groups_html(by_subset, "subset")
                scores = by_subset[["value", "score"]].rename(columns={"value": "subset"})
            if self.has_dimensions:  # else it would repeat the cards' reward row
                by_dimension = group_summaries(
                    con, job_id, by="dimension", policy=policy, threshold=threshold
                )
                dims = groups_html(by_dimension, "dimension")
            points = curve(con, job_id, policy=policy, threshold=threshold)
            self._cache[key] = _Computed(summary, groups, dims, points, scores)
        return self._cache[key]

    def _metric_charts(self, policy: Any, threshold: float | None) -> dict[str, Any]:
        """The charts that follow the policy and threshold: the curve, the subset scores."""
        from .._present import charts as _charts

        done = self._compute(policy, threshold)
        title = f"pass@k / pass^k, k = 1..{job_k(self.state.con, self.state.job_id)}"
        out = {"curve": _charts.curve_chart(done.points, title=title)}
        if done.scores is not None and len(done.scores):
            rate = bool(done.scores["score"].dropna().between(0, 1).all())
            out["subset"] = _charts.bar_chart(
                done.scores, category="subset", value="score", title="score by subset",
                percent=rate,
            )  # fmt: skip
        return out

    def _recompute(self) -> None:
        """Compute everything first, then assign: a failure leaves the tab as it was."""
        policy, threshold = self.policy.value, self.threshold_value
        done = self._compute(policy, threshold)
        charts = self._metric_charts(policy, threshold) if self.drawn else {}
        # assign
        self.summary = done.summary
        self.cards.value = f'{PANEL_CSS}<div class="enb-panel">{done.summary._repr_html_()}</div>'
        self.groups.value = done.groups
        self.dimensions.value = done.dims
        for name, chart in charts.items():
            self.charts[name] = chart
            if name in self.chart_widgets:
                self.chart_widgets[name].chart = chart

    def _diagnosis(self) -> str:
        try:  # the attempt checks, and the step checks of a job with steps
            from .._behaviour.findings import diagnose
        except ImportError:
            return note_html("Diagnosis is not available in this version.")
        return findings_html(diagnose(self.state.ref))
