"""Baseline reports: one model evaluated on several benchmarks, and reports compared.

``ws.baseline_report(jobs)`` returns a :class:`BaselineReport`: all of one model, each
job one benchmark (its dataset name, or its job id when two jobs share one), except a
job that ran several tasks: ``split_by="auto"`` (the default) splits an lm-eval run whose
tasks have more than one ``subset`` value (the lm-eval task names) into one benchmark per
task, ``split_by="subset"`` splits any such job, ``split_by=None`` none (see
:func:`envloop_nb._compare.baseline.benchmarks_of`).
Its numbers come from :mod:`envloop_nb._compare.baseline` (every one an existing metric
function's: the job summary, ``job.groups``); ``report.compare(*others)`` puts up to five
reports side by side (:mod:`envloop_nb._compare.baseline_multi`), with the comparison
engine's guard and paired intervals per shared benchmark. This module only delegates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ._compare import baseline as _baseline
from ._compare import baseline_multi as _multi
from ._compare.baseline import Benchmark, SplitBy
from ._compare.state import MAX_JOBS, PALETTE
from ._errors import EnvloopError
from ._job import Job
from ._types import Policy

if TYPE_CHECKING:
    from pathlib import Path

    import altair as alt
    import pandas as pd

    from ._comparison import JobSource
    from ._export.html_report import HtmlReport
    from ._ui.baseline_compare_panel import BaselineComparePanel
    from ._ui.baseline_panel import BaselinePanel

__all__ = ["BaselineComparison", "BaselineReport", "baseline_report"]


class BaselineReport:
    """One model on several benchmarks: overview, radar, table, drill-downs.

    Create it with ``ws.baseline_report(jobs)``. A benchmark is a job, or one subset of
    a split job (an lm-eval run over several tasks: one benchmark per lm-eval task, its
    numbers its subset's row of ``job.groups(by="subset")``). Results are computed when
    asked.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> report = ws.baseline_report([job])
    >>> report
    <envloop_nb.BaselineReport my-endpoint/sft · 1 benchmarks: tiny-agent>
    >>> report.table()[["benchmark", "samples", "score", "bad_cases"]].values.tolist()
    [['tiny-agent', '2/3', 0.6, 0]]
    >>> report.dimensions("tiny-agent")
    ['subset', 'dimension']
    >>> report.drilldown("tiny-agent")[["value", "score", "bad_cases"]].values.tolist()
    [['code', 0.6666666666666666, 0], ['math', 0.5, 0]]
    """

    def __init__(
        self,
        workspace: JobSource,
        jobs: Sequence[Job],
        *,
        name: str | None = None,
        split_by: SplitBy = "auto",
        policy: Policy = "unknown",
        threshold: float | None = None,
        bad_below: float = 0.5,
    ) -> None:
        self.workspace = workspace
        self.jobs: tuple[Job, ...] = tuple(jobs)
        ids = [j.id for j in self.jobs]
        self.model: str | None = _baseline.check_one_model(workspace.con, ids)
        self.name: str = name or _baseline.model_label(self.model, ids)
        self.policy: Policy = policy
        self.threshold = threshold
        self.bad_below = float(bad_below)
        self.split_by: SplitBy = split_by
        #: The benchmarks, in order (a whole job, or one subset of a split job).
        self.items: list[Benchmark] = _baseline.benchmarks_of(workspace.con, ids, split_by=split_by)
        self.benchmarks: list[str] = [b.label for b in self.items]

    @property
    def job_ids(self) -> list[str]:
        """The jobs' ids, in the order given (a split job once)."""
        return [j.id for j in self.jobs]

    def benchmark(self, benchmark: str) -> Benchmark:
        """One benchmark by its label, or by its job id when that job is not split."""
        for b in self.items:
            if benchmark == b.label:
                return b
        hits = [b for b in self.items if b.job_id == benchmark]
        if len(hits) == 1:
            return hits[0]
        why = (
            f"job {benchmark!r} is split into {', '.join(b.label for b in hits)}; name one"
            if hits
            else f"no benchmark {benchmark!r} in this report"
        )
        raise EnvloopError(f"{why}; benchmarks: {', '.join(self.benchmarks)}")

    def job(self, benchmark: str) -> Job:
        """The job of one benchmark (by its label, or its job id)."""
        if benchmark in self.job_ids:
            return self.jobs[self.job_ids.index(benchmark)]
        jid = self.benchmark(benchmark).job_id
        return self.jobs[self.job_ids.index(jid)]

    def _opts(self) -> dict[str, Any]:
        return {"policy": self.policy, "threshold": self.threshold, "bad_below": self.bad_below}

    def __repr__(self) -> str:
        return (
            f"<envloop_nb.BaselineReport {self.name} · {len(self.items)} benchmarks: "
            f"{', '.join(self.benchmarks)}>"
        )

    # -- numbers ---------------------------------------------------------------------
    def table(self) -> pd.DataFrame:
        """One row per benchmark (see :func:`envloop_nb._compare.baseline.report_table`):
        ``benchmark, job_id, subset, status, k, completed, total, samples, score, pass@k,
        pass^k, scored, attempts, coverage, bad_cases, bad_below`` (``subset``: the subset
        of a split benchmark, else missing)."""
        return _baseline.report_table(self.workspace.con, self.items, **self._opts())

    def overview(self) -> dict[str, Any]:
        """Model, method, created / updated, progress, status, benchmarks, inference
        parameters (see :func:`envloop_nb._compare.baseline.overview`)."""
        return _baseline.overview(self.workspace.con, self.items, name=self.name, **self._opts())

    def radar(self) -> alt.LayerChart:
        """Radar chart of the score per benchmark (an altair chart, renders offline)."""
        from ._present.baseline_html import radar

        chart: alt.LayerChart = radar(self.table(), self.name)
        return chart

    def dimensions(self, benchmark: str) -> list[str]:
        """The drill-downs ``benchmark`` offers: ``subset``, ``tag:<key>``, ``dimension``;
        a split benchmark: the other tags of its subset's tasks."""
        return _baseline.dimension_choices(self.workspace.con, self.benchmark(benchmark))

    def _by(self, benchmark: str, by: str | None) -> str:
        if by is not None:
            return by
        return next(iter(self.dimensions(benchmark)), "subset")

    def drilldown(self, benchmark: str, by: str | None = None) -> pd.DataFrame:
        """One benchmark's ``value, score, completed, tasks, samples, scored, total,
        coverage, pass@k, bad_cases`` per subset / tag value / dimension (``job.groups``);
        a split benchmark's by another tag, over its subset's tasks. ``by`` defaults to
        the benchmark's first drill-down (``subset`` for a whole job that has one)."""
        b = self.benchmark(benchmark)
        return _baseline.drilldown(self.workspace.con, b, self._by(benchmark, by), **self._opts())

    def drilldown_chart(self, benchmark: str, by: str | None = None) -> alt.Chart:
        """Bars of :meth:`drilldown`'s score per value."""
        from ._present.baseline_html import drilldown_chart

        b, by = self.benchmark(benchmark), self._by(benchmark, by)
        chart: alt.Chart = drilldown_chart(self.drilldown(benchmark, by), benchmark=b.label, by=by)
        return chart

    # -- views, export, comparison -----------------------------------------------------
    def panel(
        self, *, page_size: int = 20, compare_with: Sequence[BaselineReport] | None = None
    ) -> BaselinePanel:
        """The interactive panel: Overview (facts, radar, table) and Score details
        (benchmark and drill-down → bars and a table; each row's **view** opens the
        benchmark's job panel on its Cases tab; a split benchmark's, filtered to its subset).

        ``compare_with`` (up to four other reports) adds a third tab, **Comparison**:
        ``self.compare(*compare_with).panel()``'s radar, combined table, strengths and
        weaknesses, and comparability."""
        from ._ui.baseline_panel import BaselinePanel

        if isinstance(compare_with, BaselineReport) or (
            compare_with is not None and not isinstance(compare_with, Sequence)
        ):
            raise TypeError(
                f"compare_with takes a list of baseline reports, got {compare_with!r}: "
                "report.panel(compare_with=[other])"
            )
        cmp = self.compare(*compare_with) if compare_with else None
        return BaselinePanel(
            self.workspace.con,
            self.items,
            name=self.name,
            series=self.name,
            open_job=lambda jid: self.workspace.job(jid).panel(
                policy=self.policy, threshold=self.threshold, page_size=page_size
            ),
            compare=None if cmp is None else cmp.state,
            **self._opts(),
        )

    def export_html(self, path: str | Path) -> HtmlReport:
        """Write a standalone HTML report (overview, radar, table, one drill-down per
        benchmark; no Jupyter or network needed to read it).

        Examples
        --------
        >>> import tempfile, envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> ws.baseline_report([job]).export_html(tempfile.mkdtemp() + "/b.html").sections[:2]
        ('Overview', 'Score by benchmark')
        """
        from ._export.baseline_html import export_baseline_html

        return export_baseline_html(
            self.workspace.con, self.items, path, name=self.name, series=self.name,
            **self._opts(),
        )  # fmt: skip

    def compare(
        self, *others: BaselineReport, resamples: int = 2000, seed: int = 0
    ) -> BaselineComparison:
        """This report beside ``others`` (up to five reports in total).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
        >>> cmp = ws.baseline_report([a], name="A").compare(ws.baseline_report([b], name="B"))
        >>> cmp.table()[["benchmark", "A", "B", "comparable", "mark"]].values.tolist()
        [['tiny-agent', 0.6, 0.6, True, '']]
        """
        return BaselineComparison((self, *others), resamples=resamples, seed=seed)

    def _repr_html_(self) -> str:
        from ._present.baseline_html import overview_html, report_table_html

        return overview_html(self.overview()) + report_table_html(self.table())


class BaselineComparison:
    """2-5 baseline reports over the union of their benchmarks (``report.compare``).

    ``table()`` (benchmark x report, with marks), ``radar()`` (one polygon per report),
    ``strengths()`` / ``words()`` (best / worst per benchmark, beyond the noise or not),
    ``comparability()`` (per shared benchmark: the guard's verdict and sentences).
    """

    def __init__(
        self, reports: Sequence[BaselineReport], *, resamples: int = 2000, seed: int = 0
    ) -> None:
        reports = tuple(reports)
        if len(reports) > MAX_JOBS:
            raise EnvloopError(
                f"compare takes at most {MAX_JOBS} baseline reports in total, got {len(reports)}: "
                f"{[r.name for r in reports]}"
            )
        if len(reports) < 2:
            raise EnvloopError("compare needs another baseline report: report.compare(other)")
        first = reports[0]
        for r in reports[1:]:
            if r.workspace is not first.workspace:
                raise EnvloopError(f"report {r.name!r} belongs to another workspace")
            if (r.policy, r.threshold, r.bad_below) != (
                first.policy,
                first.threshold,
                first.bad_below,
            ):
                raise EnvloopError(
                    f"reports {first.name!r} and {r.name!r} use different policy / threshold /"
                    " bad_below: build them with the same options"
                )
        self.reports = reports
        self.state = _multi.ReportSet(
            first.workspace.con,
            tuple(_multi.names_for([r.name for r in reports])),
            tuple(tuple(r.items) for r in reports),
            policy=first.policy,
            threshold=first.threshold,
            bad_below=first.bad_below,
            resamples=resamples,
            seed=seed,
        )

    @property
    def names(self) -> list[str]:
        """The reports' names (the series of the charts), in order."""
        return list(self.state.names)

    @property
    def colors(self) -> dict[str, str]:
        """Report name -> colour, fixed by order."""
        return {n: PALETTE[i] for i, n in enumerate(self.state.names)}

    def __repr__(self) -> str:
        return f"<envloop_nb.BaselineComparison {' vs '.join(self.names)}>"

    def table(self) -> pd.DataFrame:
        """Benchmark x report: score and coverage per report, ``best``,
        ``in_every_report``, ``comparable``, ``mark`` (see
        :func:`envloop_nb._compare.baseline_multi.combined_table`)."""
        return _multi.combined_table(self.state)

    def radar(self) -> alt.LayerChart:
        """One polygon per report over the union of benchmarks (marks in the subtitle)."""
        chart: alt.LayerChart = _multi.radar(self.state)
        return chart

    def comparability(self) -> pd.DataFrame:
        """Per benchmark: reports that ran it, those that did not, whether their jobs ran
        the same frozen work, and the guard's sentences."""
        return _multi.comparability(self.state)

    def strengths(self) -> pd.DataFrame:
        """Best / worst report per shared benchmark with the paired interval and its
        verdict: ``report, kind, benchmark, gap, low, high, noise, sentence``."""
        return _multi.strengths(self.state)

    def words(self) -> list[str]:
        """One paragraph per report: where it leads, trails, is within noise, did not run."""
        return _multi.words(self.state)

    def panel(self) -> BaselineComparePanel:
        """The interactive panel: the reports compared, the radar, the combined table
        (marks in red), strengths and weaknesses in words, and the comparability."""
        from ._ui.baseline_compare_panel import BaselineComparePanel

        return BaselineComparePanel(self.state)

    def export_html(self, path: str | Path) -> HtmlReport:
        """Write a standalone HTML report: the reports, the combined table, the radar,
        strengths and weaknesses, comparability (no Jupyter or network needed to read it).

        Examples
        --------
        >>> import tempfile, envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
        >>> cmp = ws.baseline_report([a], name="A").compare(ws.baseline_report([b], name="B"))
        >>> cmp.export_html(tempfile.mkdtemp() + "/c.html").charts
        1
        """
        from ._export.baseline_html import export_baseline_compare_html

        return export_baseline_compare_html(self.state, path)

    def _repr_html_(self) -> str:
        from ._present.baseline_html import combined_html, words_html

        return combined_html(self.table(), self.names, list(self.colors.values())) + words_html(
            self.words(), list(self.strengths()["sentence"])
        )


def baseline_report(
    ws: JobSource,
    jobs: Iterable[Job | str],
    *,
    name: str | None = None,
    split_by: SplitBy = "auto",
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
) -> BaselineReport:
    """A :class:`BaselineReport` of ``jobs`` (jobs or ids of one model; ``split_by`` as in
    :func:`envloop_nb._compare.baseline.benchmarks_of`).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> ws.baseline_report("job_abc0001")
    Traceback (most recent call last):
    ...
    TypeError: baseline_report takes a list of jobs, got 'job_abc0001'
    """
    if isinstance(jobs, str | bytes | Job) or not isinstance(jobs, Iterable):
        raise TypeError(f"baseline_report takes a list of jobs, got {jobs!r}")
    handles: list[Job] = []
    for item in jobs:
        handle = item if isinstance(item, Job) else ws.job(str(item))
        if handle.workspace is not ws:
            raise EnvloopError(f"job {handle.id!r} belongs to another workspace")
        handles.append(handle)
    return BaselineReport(
        ws, handles, name=name, split_by=split_by, policy=policy, threshold=threshold,
        bad_below=bad_below,
    )  # fmt: skip
