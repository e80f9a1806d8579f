"""The interactive panel of one job: Overview, Cases, Buckets & export (ipywidgets).

Thin widgets: every number comes from a library call (``job.summary``, ``job.groups``,
``job.curve``, :mod:`envloop_nb._ui.cases`, ``job.buckets``, the exports) and every chart
from a pure spec builder in :mod:`envloop_nb._present.charts` shown offline through
:func:`envloop_nb._present.render.chart_widget`. A panel only wires controls to those calls.

Every control and every result is an attribute, so tests drive a panel from Python:
``panel.overview.policy.value = "failure"``, ``panel.cases.search.value = "timeout"``,
``panel.cases.next_page.click()``, ``panel.buckets.apply_button.click()``, then read
``panel.overview.summary``, ``panel.cases.page.frame``, ``panel.buckets.last_export``.
An error in a callback shows a readable box in the panel and leaves the rest as it was.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._present.display import format_metric, format_pct
from .cases import (
    CASES_CSS,
    CasePage,
    CaseQuery,
    CaseSource,
    attempt_detail,
    attempt_detail_html,
    page_html,
    task_detail,
    task_detail_html,
)

if TYPE_CHECKING:
    from .._job import Job
    from .._metrics.counts import JobSummary
    from .._metrics.harbor import HarborCheck

__all__ = ["BucketsTab", "CasesTab", "JobPanel", "OverviewTab", "job_panel", "panel"]

TAB_TITLES = ("Overview", "Cases", "Buckets & export")

PANEL_CSS = """
<style>
.enb-panel{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;
  color:var(--jp-ui-font-color1,inherit);line-height:1.45}
.enb-panel h4{margin:6px 0 4px 0;font-size:13px;font-weight:600}
.enb-panel table{border-collapse:collapse}
.enb-panel th{text-align:left;font-weight:600;color:var(--jp-ui-font-color2,inherit);
  border-bottom:1px solid var(--jp-border-color1,#8888);padding:2px 8px;white-space:nowrap}
.enb-panel td{padding:2px 8px;border-bottom:1px solid var(--jp-border-color3,#8883);white-space:nowrap}
.enb-panel .num{text-align:right;font-variant-numeric:tabular-nums}
.enb-panel .enb-dim{color:var(--jp-ui-font-color3,#888)}
.enb-facts td:first-child{color:var(--jp-ui-font-color2,inherit)}
.enb-flag{margin:2px 0;padding:3px 8px;border-left:3px solid var(--jp-warn-color1,#c9a227);
  background:var(--jp-layout-color2,#8881)}
.enb-flag.enb-sev-error,.enb-flag.enb-sev-high{border-left-color:var(--jp-error-color1,#c62828)}
.enb-agree{color:var(--jp-success-color1,#2e7d32)}
.enb-disagree{color:var(--jp-error-color1,#c62828);font-weight:600}
</style>
"""


def _error_html(message: str) -> str:
    return f'{CASES_CSS}<div class="enb-error-box">⚠ {html.escape(message)}</div>'


def _ok_html(message: str) -> str:
    return f'{CASES_CSS}<div class="enb-ok-box">✓ {html.escape(message)}</div>'


def _describe_error(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, KeyError) and text.startswith(("'", '"')):
        text = text[1:-1]
    return f"{type(exc).__name__}: {text}"


class _Guard:
    """Runs a callback; an exception becomes a readable message in ``box``."""

    def __init__(self, box: Any) -> None:
        self.box = box
        self.last_error: str | None = None

    def run(self, fn: Callable[[], Any]) -> bool:
        self.box.value = ""
        try:
            fn()
        except Exception as exc:  # shown in the panel, never a traceback
            self.last_error = _describe_error(exc)
            self.box.value = _error_html(self.last_error)
            return False
        self.last_error = None
        return True


def _rows_table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    head = "".join(
        f'<th class="{"num" if i in numeric else ""}">{html.escape(h)}</th>'
        for i, h in enumerate(header)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if i in numeric else ""}">{html.escape(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def facts_html(info: dict[str, Any], status_counts: dict[str, int]) -> str:
    """Job facts and attempt states as a compact table (pure; escaped)."""

    def when(v: Any) -> str:
        return "-" if v is None else str(v)[:19].replace("T", " ")

    dataset = f"{info.get('dataset_name') or '-'}@{info.get('dataset_version') or '-'}"
    profile = info.get("profile_name") or "-"
    if info.get("profile_version"):
        profile += f" v{info['profile_version']}"
    rows = [
        ("job", info.get("job_id")),
        ("model", info.get("model")),
        ("profile", profile),
        ("dataset", dataset),
        ("revision", info.get("dataset_revision")),
        ("runner", info.get("runner")),
        ("attempts per task", info.get("attempts")),
        ("status", info.get("status")),
        ("created", when(info.get("created_at"))),
        ("finished", when(info.get("finished_at"))),
    ]
    facts = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape('-' if v is None else str(v))}</td></tr>"
        for k, v in rows
    )
    states = "".join(
        f'<tr><td>{html.escape(k)}</td><td class="num">{v:,}</td></tr>'
        for k, v in status_counts.items()
    )
    return (
        f'{PANEL_CSS}<div class="enb-panel" style="display:flex;gap:24px">'
        f'<div><h4>Job</h4><table class="enb-facts">{facts}</table></div>'
        f'<div><h4>Attempt slots</h4><table class="enb-facts">{states}</table></div></div>'
    )


def agreement_html(platform: dict[str, Any] | None, ours: dict[str, Any]) -> str:
    """Whether the source's own metrics block agrees with the recomputed one (pure).

    Examples
    --------
    >>> ours = {"score": 0.6, "pass": 0.6, "pass@k": 1.0, "pass^k": 0.5, "total": 6}
    >>> "numbers agree" in agreement_html({"score": 0.6, "score_counts": {"total": 6}}, ours)
    True
    >>> "numbers disagree" in agreement_html({"score": 0.7}, ours)
    True
    """
    if not platform:
        return (
            f'{PANEL_CSS}<div class="enb-panel enb-dim">The source carried no platform '
            "metrics to compare with.</div>"
        )
    flat: dict[str, Any] = {k: v for k, v in platform.items() if k != "score_counts"}
    flat.update(platform.get("score_counts") or {})
    diffs = []
    checked = 0
    for key, theirs in flat.items():
        if key not in ours or isinstance(theirs, dict | list):
            continue
        mine = ours[key]
        checked += 1
        same = (theirs is None and mine is None) or (
            isinstance(theirs, int | float)
            and isinstance(mine, int | float)
            and math.isclose(float(theirs), float(mine), rel_tol=1e-9, abs_tol=1e-9)
        )
        if not same:
            diffs.append(f"{key}: platform {theirs!r}, recomputed {mine!r}")
    if diffs:
        items = "".join(f"<li>{html.escape(d)}</li>" for d in diffs)
        return (
            f'{PANEL_CSS}<div class="enb-panel"><span class="enb-disagree">✗ The platform\'s '
            f"numbers disagree with the recomputed ones (policy unknown, no threshold):</span>"
            f"<ul>{items}</ul></div>"
        )
    return (
        f'{PANEL_CSS}<div class="enb-panel"><span class="enb-agree">✓ The platform\'s own '
        f"numbers agree with the recomputed ones</span> "
        f'<span class="enb-dim">({checked} values checked, policy unknown)</span></div>'
    )


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
    if not check.platform:
        return f'{PANEL_CSS}<div class="enb-panel enb-dim">{html.escape(check.verdict())}.</div>'
    policy = check.compared_policy
    if check.agrees:
        return (
            f'{PANEL_CSS}<div class="enb-panel"><span class="enb-agree">✓ '
            f"{html.escape(check.verdict())}</span> "
            f'<span class="enb-dim">({check.checked} values checked)</span></div>'
        )
    items = "".join(
        f"<li>{html.escape(f'{key}: Harbor {theirs!r}, recomputed {mine!r}')}</li>"
        for key, (theirs, mine) in check.diffs(policy).items()
    )
    return (
        f'{PANEL_CSS}<div class="enb-panel"><span class="enb-disagree">✗ '
        f"{html.escape(check.verdict())}:</span><ul>{items}</ul></div>"
    )


def groups_html(frame: Any, label: str) -> str:
    """A per-group table: score, pass@k, coverage, bad cases (pure; from ``job.groups``)."""
    if frame is None or len(frame) == 0:
        return ""
    cols = list(frame.columns)
    k = int(frame["k"].iloc[0]) if "k" in cols and len(frame) else 0
    name_col = "value" if "value" in cols else "dimension"
    rows = []
    for r in frame.to_dict("records"):
        score = r.get("score")
        is_rate = score is None or score != score or 0 <= float(score) <= 1
        rows.append(
            [
                str(r.get(name_col)),
                f"{int(r['tasks']):,}",
                format_metric(score) if is_rate else f"{float(score):.4g}",
                format_metric(r.get("pass@k")),
                format_metric(r.get("pass^k")),
                f"{int(r['scored']):,}/{int(r['total']):,}",
                format_pct(r.get("coverage")),
                f"{int(r['complete_members']):,}/{int(r['tasks']):,}",
                f"{int(r['bad_cases']):,}" if r.get("bad_cases") == r.get("bad_cases") else "-",
            ]
        )
    header = [label, "tasks", "score", f"pass@{k}", f"pass^{k}", "scored", "coverage"]
    header += ["complete", "bad cases"]
    bad = frame["bad_below"].iloc[0] if "bad_below" in cols else None
    note = "" if bad is None or bad != bad else f" (bad case: task score below {bad:g})"
    return (
        f'{PANEL_CSS}<div class="enb-panel"><h4>By {html.escape(label)}'
        f'<span class="enb-dim" style="font-weight:400">{html.escape(note)}</span></h4>'
        f"{_rows_table(header, rows, set(range(1, 9)))}</div>"
    )


def findings_html(findings: Any) -> str:
    """Diagnosis flags with their evidence (pure)."""
    items = list(findings or [])
    if not items:
        return f'{PANEL_CSS}<div class="enb-panel enb-dim">No diagnosis flags.</div>'
    out = []
    for f in items:
        sev = str(getattr(f, "severity", "warning"))
        title = str(getattr(f, "title", None) or getattr(f, "kind", None) or f)
        evidence = getattr(f, "evidence", None) or getattr(f, "message", None) or ""
        if isinstance(evidence, dict):
            evidence = ", ".join(f"{k}: {v}" for k, v in evidence.items())
        out.append(
            f'<div class="enb-flag enb-sev-{html.escape(sev)}"><b>{html.escape(title)}</b>'
            f"<div>{html.escape(str(evidence))}</div></div>"
        )
    return f'{PANEL_CSS}<div class="enb-panel"><h4>Diagnosis</h4>{"".join(out)}</div>'


# -- Overview --------------------------------------------------------------------------------


class OverviewTab:
    """Facts, metric cards with coverage, policy/threshold, groups, charts, diagnosis."""

    def __init__(self, owner: JobPanel) -> None:
        import ipywidgets as w

        from .._present import charts as _charts

        self.owner = owner
        job = owner.job
        self.facts = w.HTML()
        self.policy = w.Dropdown(
            options=[("unknown (platform)", "unknown"), ("failure (missing = 0)", "failure")],
            value=owner.initial_policy,
            description="missing:",
            layout=w.Layout(width="240px"),
        )
        self.use_threshold = w.Checkbox(
            value=owner.initial_threshold is not None,
            description="pass = reward ≥",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self.threshold = w.FloatText(
            value=0.5 if owner.initial_threshold is None else owner.initial_threshold,
            step=0.05,
            layout=w.Layout(width="80px"),
        )
        self.cards = w.HTML()
        self.agreement = w.HTML()
        self.groups = w.HTML()
        self.dimensions = w.HTML()
        self.diagnosis = w.HTML()
        self.error = w.HTML()
        self.guard = _Guard(self.error)
        self.summary: JobSummary | None = None
        dims_row = job.con.execute(
            """SELECT (SELECT count(*) FROM dimensions WHERE job_id = $j) > 0
                   OR (SELECT count(composite) FROM attempts WHERE job_id = $j) > 0""",
            {"j": job.id},
        ).fetchone()
        self.has_dimensions = bool(dims_row and dims_row[0])
        self._cache: dict[tuple[Any, ...], tuple[Any, str, str, Any, Any | None]] = {}
        con = job.con
        status = _charts.status_frame(con, job.id)
        self.status_counts = {str(s): int(c) for s, c in status.itertuples(index=False)}
        self.charts: dict[str, Any] = {}
        dist = [("reward", "reward"), ("turns", "turns"), ("tokens", "tokens"),
                ("duration", "duration")]  # fmt: skip
        for name, measure in dist:
            frame = _charts.distribution_frame(con, job.id, measure)
            if len(frame):
                title, x_title = (
                    _charts.DISTRIBUTIONS[measure][1],
                    _charts.DISTRIBUTIONS[measure][1],
                )
                self.charts[name] = _charts.distribution_chart(frame, title=title, x_title=x_title)
        self.charts["status"] = _charts.status_chart(status)
        self.chart_widgets: dict[str, Any] = {}
        info = job.info
        self.facts.value = facts_html(info, self.status_counts)
        # policy-independent: the platform comparison uses the platform's own rule
        self.platform_metrics = info.get("platform_metrics")
        if info.get("source_format") == "harbor":  # its rule depends on its version
            from .._metrics.harbor import check

            harbor = check(job)
            assert harbor is not None
            self.agreement.value = harbor_agreement_html(harbor)
        else:
            self.agreement.value = agreement_html(self.platform_metrics, job.summary().to_dict())
        self.diagnosis.value = self._diagnosis()
        self._recompute()
        from .._present.render import chart_widget

        for name, chart in self.charts.items():
            self.chart_widgets[name] = chart_widget(chart)
        self.policy.observe(lambda _: self._on_change(), names="value")
        self.use_threshold.observe(lambda _: self._on_change(), names="value")
        self.threshold.observe(lambda _: self._on_change(), names="value")
        controls = w.HBox(
            [self.policy, self.use_threshold, self.threshold],
            layout=w.Layout(align_items="center"),
        )
        chart_box = w.Box(
            list(self.chart_widgets.values()),
            layout=w.Layout(display="flex", flex_flow="row wrap"),
        )
        self.widget = w.VBox(
            [
                self.facts,
                controls,
                self.error,
                self.cards,
                self.agreement,
                self.groups,
                self.dimensions,
                chart_box,
                self.diagnosis,
            ]
        )

    @property
    def threshold_value(self) -> float | None:
        if not self.use_threshold.value:
            return None
        value = float(self.threshold.value)
        if not math.isfinite(value):
            raise ValueError("the pass threshold must be a finite number")
        return value

    def _on_change(self) -> None:
        if self.guard.run(self._recompute):
            self.owner._policy_changed(self.policy.value, self.threshold_value)

    def _compute(
        self, policy: Any, threshold: float | None
    ) -> tuple[Any, str, str, Any, Any | None]:
        """Summary, group tables and curve chart under one policy/threshold (cached).

        The cache is keyed by the job's ``loaded_at`` too, so a reloaded job is recomputed.
        """
        from .._present import charts as _charts

        job = self.owner.job
        row = job.con.execute("SELECT loaded_at FROM jobs WHERE job_id = ?", [job.id]).fetchone()
        key = (policy, threshold, row[0] if row else None)
        if key not in self._cache:
            summary = job.summary(policy=policy, threshold=threshold)
            groups = dims = ""
            subset_chart = None
            if hasattr(job, "groups"):
                by_subset = job.groups(by="subset", policy=policy, threshold=threshold)
                groups = groups_html(by_subset, "subset")
                if self.has_dimensions:  # else it would repeat the cards' reward row
                    dims = groups_html(
                        job.groups(by="dimension", policy=policy, threshold=threshold),
                        "dimension",
                    )
                if len(by_subset):
                    scores = by_subset[["value", "score"]].rename(columns={"value": "subset"})
                    rate = bool(scores["score"].dropna().between(0, 1).all())
                    subset_chart = _charts.bar_chart(
                        scores, category="subset", value="score", title="score by subset",
                        percent=rate,
                    )  # fmt: skip
            curve = job.curve(policy=policy, threshold=threshold)
            chart = _charts.curve_chart(curve, title=f"pass@k / pass^k, k = 1..{job.k}")
            self._cache[key] = (summary, groups, dims, chart, subset_chart)
        return self._cache[key]

    def _recompute(self) -> None:
        """Compute everything first, then assign: a failure leaves the tab as it was."""
        policy, threshold = self.policy.value, self.threshold_value
        summary, groups, dims, curve_chart, subset_chart = self._compute(policy, threshold)
        # assign
        self.summary = summary
        self.cards.value = f'{PANEL_CSS}<div class="enb-panel">{summary._repr_html_()}</div>'
        self.groups.value = groups
        self.dimensions.value = dims
        self.charts["curve"] = curve_chart
        if subset_chart is not None:
            self.charts["subset"] = subset_chart
        for name in ("curve", "subset"):
            if name in self.chart_widgets and name in self.charts:
                self.chart_widgets[name].chart = self.charts[name]

    def _diagnosis(self) -> str:
        job = self.owner.job
        try:
            findings = job.diagnose()
        except ImportError:
            return (
                f'{PANEL_CSS}<div class="enb-panel enb-dim">Diagnosis is not available in '
                "this version.</div>"
            )
        return findings_html(findings)


# -- Cases -----------------------------------------------------------------------------------


class CasesTab:
    """Per-attempt / per-task rows with filters, sort, paging and a detail view."""

    ALL = "__all__"
    DEFAULT_SORT = ""

    def __init__(self, owner: JobPanel, page_size: int = 20) -> None:
        import ipywidgets as w

        self.owner = owner
        job = owner.job
        self.source = CaseSource(job.con, job.id)
        self.query = CaseQuery(
            page_size=page_size, policy=owner.initial_policy, threshold=owner.initial_threshold
        )
        row = job.con.execute(
            "SELECT min(reward), max(reward) FROM attempts WHERE job_id = ?", [job.id]
        ).fetchone()
        lo, hi = (row or (None, None))[:2]
        self.reward_bounds = (
            min(0.0, float(lo)) if lo is not None else 0.0,
            max(1.0, float(hi)) if hi is not None else 1.0,
        )
        small = w.Layout(width="auto")
        self.view = w.ToggleButtons(
            options=[("per attempt", "attempt"), ("per task", "task")], value="attempt"
        )
        self.view.style.button_width = "110px"
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
            layout=w.Layout(width="130px"),
        )
        self.prev_page = w.Button(description="‹ prev", layout=w.Layout(width="70px"))
        self.next_page = w.Button(description="next ›", layout=w.Layout(width="70px"))
        self.page_label = w.HTML()
        from .clicktable import ClickableTable

        self.table = ClickableTable()  # click a row to open its detail
        self.row = w.Dropdown(description="details", layout=w.Layout(width="420px"))
        self.detail = w.HTML()
        self.error = w.HTML()
        self.guard = _Guard(self.error)
        self._page: CasePage | None = None
        self._stale = False
        self.selected: int | None = None
        self._quiet = False
        self._set_sort_options()
        self.refresh()
        for control in (self.status, self.subset, self.bucket, self.value_range, self.search,
                        self.sort_by, self.descending, self.page_size):  # fmt: skip
            control.observe(lambda _: self._on_filter(), names="value")
        self.view.observe(lambda _: self._on_view(), names="value")
        self.prev_page.on_click(lambda _: self.go_to_page(self.query.page - 1))
        self.next_page.on_click(lambda _: self.go_to_page(self.query.page + 1))
        self.row.observe(lambda _: self._on_row(), names="value")
        self.table.observe(lambda _: self.select_row(self.table.clicked), names="clicks")
        filters = w.HBox(
            [self.status, self.subset, self.bucket], layout=w.Layout(flex_flow="row wrap")
        )
        filters2 = w.HBox([self.value_range, self.search], layout=w.Layout(flex_flow="row wrap"))
        paging = w.HBox(
            [self.sort_by, self.descending, self.page_size, self.prev_page, self.next_page,
             self.page_label],
            layout=w.Layout(align_items="center", flex_flow="row wrap"),
        )  # fmt: skip
        self.widget = w.VBox(
            [self.view, filters, filters2, paging, self.error, self.table, self.row, self.detail]
        )

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
                self.value_range.min, self.value_range.max = -1e9, 1e9
                self.value_range.value = bounds
                self.value_range.min, self.value_range.max = bounds
                self.value_range.description = "pass rate" if task_view else "reward"
            self._show(self._query_from_controls())

        self.guard.run(change)

    def go_to_page(self, page: int) -> None:
        """Show page ``page`` (0-based; clipped to the pages there are)."""
        pages = self.page.pages if self.page is not None else 1
        page = max(0, min(int(page), pages - 1))
        self.guard.run(lambda: self._show(self.query.replace(page=page)))

    def refresh(self) -> None:
        """Re-run the current query (after policy, threshold or bucket changes)."""
        self.guard.run(lambda: self._show(self.query))

    def policy_changed(self, policy: Any, threshold: float | None, *, defer: bool = False) -> None:
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

    def _show(self, query: CaseQuery) -> None:
        page = self.source.fetch(query)  # raises before anything changes
        self.query, self._page, self.selected, self._stale = query, page, None, False
        self.table.value = page_html(page)
        self.page_label.value = (
            f'<span style="font-variant-numeric:tabular-nums">{html.escape(page.describe())}</span>'
        )
        self.prev_page.disabled = query.page <= 0
        self.next_page.disabled = query.page >= page.pages - 1
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
            self.table.value = page_html(self.page)
            return

        def show() -> None:
            assert self.page is not None
            record = self.page.frame.iloc[int(index)]
            job = self.owner.job
            if self.query.view == "attempt":
                detail = attempt_detail(
                    job.con, job.id, str(record["task"]), int(record["attempt"])
                )
                text = attempt_detail_html(detail)
            else:
                detail = task_detail(
                    job.con, job.id, str(record["task"]),
                    policy=self.query.policy, threshold=self.query.threshold,
                )  # fmt: skip
                text = task_detail_html(detail)
            self.selected = int(index)
            self.detail.value = text
            self.table.value = page_html(self.page, selected=int(index))

        self.guard.run(show)


# -- Buckets & export ------------------------------------------------------------------------

DEFAULT_RULES = (("hard", 0.0, 0.25), ("medium", 0.25, 0.75), ("easy", 0.75, 1.01))


class BucketsTab:
    """Edit a rule set, apply it, see counts and warnings, export XLSX or a dataset."""

    def __init__(self, owner: JobPanel) -> None:
        import ipywidgets as w

        self.owner = owner
        self.w = w
        job = owner.job
        self.available = True
        try:
            from .._buckets.rules import BucketRules  # noqa: F401
        except ImportError:
            self.available = False
        self.rules_data: list[dict[str, Any]] = [
            {"name": n, "low": lo, "high": hi} for n, lo, hi in DEFAULT_RULES
        ]
        dims = [
            r[0]
            for r in job.con.execute(
                "SELECT DISTINCT name FROM dimensions WHERE job_id = ? ORDER BY 1", [job.id]
            ).fetchall()
        ]
        k = job.k
        metrics = [("pass rate (per task)", "pass_rate"), (f"pass@{k} (per task)", f"pass@{k}"),
                   (f"pass^{k} (per task)", f"pass^{k}"), ("mean reward (per task)", "reward_mean")]  # fmt: skip
        metrics += [(f"{d} mean (per task)", d) for d in dims]
        metrics += [("reward (per attempt)", "attempt:reward")]
        metrics += [(f"{d} (per attempt)", f"attempt:{d}") for d in dims]
        self.metric = w.Dropdown(options=metrics, value="pass_rate", description="metric",
                                 layout=w.Layout(width="300px"))  # fmt: skip
        status = str(job.info.get("status") or "")
        self.allow_partial = w.Checkbox(
            value=False,
            description=f"allow partial (job is {status})",
            indent=False,
            layout=w.Layout(display="" if status in ("pending", "running") else "none"),
        )
        self.rules_box = w.VBox()
        self.add_button = w.Button(description="+ add bucket", layout=w.Layout(width="110px"))
        self.apply_button = w.Button(description="Apply rules", button_style="primary")
        self.rows: list[dict[str, Any]] = []
        self.counts = w.HTML()
        self.chart_box = w.Box()
        self.warnings = w.HTML()
        self.error = w.HTML()
        self.guard = _Guard(self.error)
        self.result: Any = None
        self.last_export: Any = None
        # export controls
        self.export_buckets = w.SelectMultiple(
            options=[], rows=4, description="buckets", layout=w.Layout(width="300px")
        )
        self.xlsx_path = w.Text(value=f"{job.id}.xlsx", description="xlsx file",
                                layout=w.Layout(width="340px"))  # fmt: skip
        self.sheet_per_bucket = w.Checkbox(
            value=False,
            description="one sheet per bucket",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self.export_xlsx_button = w.Button(description="Export XLSX", icon="download")
        self.dataset_folder = w.Text(value="datasets", description="folder",
                                     layout=w.Layout(width="240px"))  # fmt: skip
        self.dataset_name = w.Text(value=f"{job.id}-hard", description="name",
                                   layout=w.Layout(width="240px"))  # fmt: skip
        self.dataset_version = w.Text(value="1", description="version",
                                      layout=w.Layout(width="160px"))  # fmt: skip
        self.dataset_format = w.Dropdown(options=["jsonl", "parquet"], value="jsonl",
                                         description="format", layout=w.Layout(width="180px"))  # fmt: skip
        self.export_dataset_button = w.Button(description="Export dataset", icon="database")
        self.export_message = w.HTML()
        self.export_guard = _Guard(self.export_message)
        self.add_button.on_click(lambda _: self._edit(self._add))
        self.apply_button.on_click(lambda _: self.apply())
        self.export_xlsx_button.on_click(lambda _: self.export_xlsx())
        self.export_dataset_button.on_click(lambda _: self.export_dataset())
        self._render_rows()
        note = w.HTML()
        if not self.available:
            note.value = _error_html(
                "Bucketing is not available: envloop_nb._buckets.rules is missing."
            )
            self.apply_button.disabled = True
        hint = w.HTML(
            f'{PANEL_CSS}<div class="enb-panel enb-dim">Rules apply top to bottom, first match '
            "wins; a bucket holds low ≤ value &lt; high; values matching none go to "
            "“Other (matched no rule)”; tasks whose metric is undefined (“-”) are left out.</div>"
        )
        self.widget = w.VBox(
            [
                note,
                hint,
                w.HBox([self.metric, self.allow_partial]),
                self.rules_box,
                w.HBox([self.add_button, self.apply_button]),
                self.error,
                self.warnings,
                w.HBox([self.counts, self.chart_box]),
                w.HTML(f'{PANEL_CSS}<div class="enb-panel"><h4>Export</h4></div>'),
                w.HBox(
                    [
                        self.export_buckets,
                        w.HTML(
                            f'{PANEL_CSS}<div class="enb-panel enb-dim" style="max-width:260px">'
                            "Select buckets to export only their tasks (ctrl/shift-click); none "
                            "selected exports everything.</div>"
                        ),
                    ]
                ),
                w.HBox(
                    [self.xlsx_path, self.sheet_per_bucket, self.export_xlsx_button],
                    layout=w.Layout(align_items="center"),
                ),
                w.HBox(
                    [
                        self.dataset_folder,
                        self.dataset_name,
                        self.dataset_version,
                        self.dataset_format,
                        self.export_dataset_button,
                    ],
                    layout=w.Layout(align_items="center", flex_flow="row wrap"),
                ),
                self.export_message,
            ]
        )

    # -- rule editing ----------------------------------------------------------------
    def _render_rows(self) -> None:
        w = self.w
        self.rows = []
        children = []
        for i, rule in enumerate(self.rules_data):
            name = w.Text(value=rule["name"], layout=w.Layout(width="180px"))
            low = w.FloatText(value=rule["low"], step=0.05, layout=w.Layout(width="90px"))
            high = w.FloatText(value=rule["high"], step=0.05, layout=w.Layout(width="90px"))
            up = w.Button(description="↑", layout=w.Layout(width="32px"), disabled=i == 0,
                          tooltip="move up")  # fmt: skip
            down = w.Button(description="↓", layout=w.Layout(width="32px"),
                            disabled=i == len(self.rules_data) - 1, tooltip="move down")  # fmt: skip
            remove = w.Button(description="✕", layout=w.Layout(width="32px"), tooltip="remove",
                              disabled=len(self.rules_data) == 1)  # fmt: skip
            up.on_click(lambda _, i=i: self._edit(lambda: self.move(i, -1)))
            down.on_click(lambda _, i=i: self._edit(lambda: self.move(i, +1)))
            remove.on_click(lambda _, i=i: self._edit(lambda: self.remove(i)))
            for ctl, key in ((name, "name"), (low, "low"), (high, "high")):
                ctl.observe(lambda ch, i=i, key=key: self._set(i, key, ch["new"]), names="value")
            label = w.HTML(
                f'{PANEL_CSS}<div class="enb-panel num" style="width:18px">{i + 1}</div>'
            )
            between = w.HTML('<span style="opacity:.7">≤ value &lt;</span>')
            children.append(w.HBox([label, name, low, between, high, up, down, remove],
                                   layout=w.Layout(align_items="center")))  # fmt: skip
            self.rows.append({"name": name, "low": low, "high": high, "up": up, "down": down,
                              "remove": remove})  # fmt: skip
        header = w.HTML(
            f'{PANEL_CSS}<div class="enb-panel enb-dim" style="margin-left:26px">bucket name, '
            "then its bounds: low ≤ value &lt; high</div>"
        )
        self.rules_box.children = [header, *children]

    def _set(self, i: int, key: str, value: Any) -> None:
        if 0 <= i < len(self.rules_data):
            self.rules_data[i][key] = value

    def _edit(self, fn: Callable[[], None]) -> None:
        if self.guard.run(fn):
            self._render_rows()

    def _add(self) -> None:
        last = self.rules_data[-1]["high"] if self.rules_data else 0.0
        self.add(f"bucket {len(self.rules_data) + 1}", last, last)

    def add(self, name: str, low: float, high: float) -> None:
        """Append a bucket at the bottom of the rule set."""
        self.rules_data.append({"name": name, "low": float(low), "high": float(high)})
        self._render_rows()

    def remove(self, index: int) -> None:
        """Remove the bucket at ``index`` (0-based)."""
        if len(self.rules_data) <= 1:
            raise ValueError("a rule set needs at least one bucket")
        del self.rules_data[index]
        self._render_rows()

    def move(self, index: int, step: int) -> None:
        """Move the bucket at ``index`` up (``step=-1``) or down (``+1``)."""
        j = index + step
        if not (0 <= index < len(self.rules_data) and 0 <= j < len(self.rules_data)):
            return
        self.rules_data[index], self.rules_data[j] = self.rules_data[j], self.rules_data[index]
        self._render_rows()

    def set_rules(self, rules: list[tuple[str, float, float]]) -> None:
        """Replace the rule set being edited with ``(name, low, high)`` triples."""
        self.rules_data = [{"name": n, "low": float(lo), "high": float(hi)} for n, lo, hi in rules]
        self._render_rows()

    def rules(self) -> Any:
        """The :class:`envloop_nb.BucketRules` the editor describes (may raise)."""
        from .._buckets.rules import Bucket, BucketRules

        metric = self.metric.value
        level = "attempt" if metric.startswith("attempt:") else "task"
        metric = metric.removeprefix("attempt:")
        buckets = [Bucket(str(r["name"]).strip(), float(r["low"]), float(r["high"]))
                   for r in self.rules_data]  # fmt: skip
        return BucketRules(buckets, metric=metric, level=level)

    # -- apply -----------------------------------------------------------------------
    def apply(self) -> None:
        """Apply the rules to the job; show counts, chart and warnings (or an error)."""
        self.guard.run(self._apply)

    def _apply(self) -> None:
        from .._present import charts as _charts
        from .._present.render import chart_widget

        job = self.owner.job
        rules = self.rules()
        overview = self.owner.overview
        result = job.buckets(
            rules,
            policy=overview.policy.value,
            threshold=overview.threshold_value,
            allow_partial=bool(self.allow_partial.value),
        )
        counts = result.counts
        chart_frame = counts[counts["bucket"] != "(excluded)"][["bucket", "count"]]
        what = "attempts" if rules.level == "attempt" else "tasks"
        chart = _charts.bucket_chart(chart_frame.reset_index(drop=True), title=f"{what} per bucket")
        self.owner.cases.source.set_buckets(result.frame)
        # assign (everything above succeeded)
        self.result = result
        self.counts.value = self._counts_html(result, what)
        self.warnings.value = "".join(_error_html(f"warning: {w}") for w in result.warnings)
        self.chart_box.children = [chart_widget(chart)]
        self.export_buckets.options = list(rules.names)
        self.owner.cases.buckets_changed(list(rules.names))

    @staticmethod
    def _counts_html(result: Any, what: str) -> str:
        rows = []
        for r in result.counts.to_dict("records"):
            share = r.get("share")
            rows.append(
                [str(r["bucket"]), str(r.get("range", "")), f"{int(r['count']):,}",
                 "" if share is None or share != share else format_pct(share),
                 str(r.get("note") or "")]
            )  # fmt: skip
        head = f"Buckets of {result.job_id} on {result.metric}"
        if result.partial:
            head += f" · PARTIAL (job {result.status})"
        table = _rows_table(["bucket", "range", what, "share", "note"], rows, {2, 3})
        return f'{PANEL_CSS}<div class="enb-panel"><h4>{html.escape(head)}</h4>{table}</div>'

    # -- exports ---------------------------------------------------------------------
    def _chosen(self) -> list[str] | None:
        chosen = list(self.export_buckets.value)
        return chosen or None

    def export_xlsx(self) -> None:
        """Write the XLSX workbook (all, or the selected buckets); report where and rows."""

        def run() -> None:
            job = self.owner.job
            overview = self.owner.overview
            chosen = self._chosen()
            rules = self.result.rules if self.result is not None else None
            if chosen and rules is None:
                raise ValueError("apply bucket rules before exporting chosen buckets")
            result = job.export_xlsx(
                Path(self.xlsx_path.value).expanduser(),
                rules=rules,
                buckets=chosen,
                policy=overview.policy.value,
                threshold=overview.threshold_value,
                sheet_per_bucket=bool(self.sheet_per_bucket.value) and rules is not None,
                allow_partial=bool(self.allow_partial.value),
            )
            self.last_export = result
            rows = ", ".join(f"{k}: {v:,}" for k, v in result.rows_per_sheet.items())
            self.export_message.value = _ok_html(
                f"wrote {Path(result.path).resolve()} — rows {rows}"
            )

        self.export_guard.run(run)

    def export_dataset(self) -> None:
        """Write a new dataset from the selected buckets; report where and how many rows."""

        def run() -> None:
            try:
                from .._datasets.export import export_dataset  # noqa: F401
            except ImportError as exc:
                raise RuntimeError(
                    "dataset export is not available in this version (envloop_nb._datasets.export)"
                ) from exc
            job = self.owner.job
            overview = self.owner.overview
            if self.result is None:
                raise ValueError("apply bucket rules first: a dataset is made of chosen buckets")
            result = job.export_dataset(
                Path(self.dataset_folder.value).expanduser(),
                name=self.dataset_name.value.strip(),
                version=self.dataset_version.value.strip(),
                rules=self.result.rules,
                buckets=self._chosen(),
                format=self.dataset_format.value,
                policy=overview.policy.value,
                threshold=overview.threshold_value,
                allow_partial=bool(self.allow_partial.value),
            )
            self.last_export = result
            where = getattr(result, "path", None) or getattr(result, "folder", None)
            rows = getattr(result, "row_count", None) or getattr(result, "rows", None)
            self.export_message.value = _ok_html(f"wrote {where} — {rows:,} rows"
                                                 if isinstance(rows, int) else f"wrote {result}")  # fmt: skip

        self.export_guard.run(run)


# -- the panel ----------------------------------------------------------------------------


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
        job: Job,
        *,
        policy: Any = "unknown",
        threshold: float | None = None,
        page_size: int = 20,
    ) -> None:
        import ipywidgets as w

        self.job = job
        self.initial_policy = policy
        self.initial_threshold = threshold
        self.overview = OverviewTab(self)
        self.cases = CasesTab(self, page_size=page_size)
        self.buckets = BucketsTab(self)
        self.widget = w.Tab(
            children=[self.overview.widget, self.cases.widget, self.buckets.widget],
            titles=list(TAB_TITLES),
        )
        self.widget.add_class("enb-job-panel")
        self.widget.observe(self._on_tab, names="selected_index")

    def close(self) -> None:
        """Close the widgets and drop the panel's temp tables from the workspace."""
        self.cases.source.close()
        self.widget.close()

    def _policy_changed(self, policy: Any, threshold: float | None) -> None:
        # a hidden Cases tab catches up when it is shown (see _on_tab)
        self.cases.policy_changed(policy, threshold, defer=self.widget.selected_index != 1)

    def _on_tab(self, change: Any) -> None:
        if change["new"] == 1 and self.cases._stale:
            self.cases.refresh()

    def __repr__(self) -> str:
        return f"<JobPanel {self.job.id}: {' · '.join(TAB_TITLES)}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            data, meta = bundle
            data = {**data, "text/plain": repr(self)}
            return data, meta
        if isinstance(bundle, dict):
            bundle = {**bundle, "text/plain": repr(self)}
        return bundle


def job_panel(job: Job, **options: Any) -> JobPanel:
    """The interactive panel of ``job`` (see :class:`JobPanel`)."""
    return JobPanel(job, **options)


def panel(job: Job, **options: Any) -> JobPanel:
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
    return job_panel(job, **options)
