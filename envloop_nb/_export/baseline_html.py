"""A baseline report as one standalone HTML file (``report.export_html``).

Sections: the overview (model, method, created / updated, progress, benchmarks), the
radar of the score per benchmark, the per-benchmark table, and one drill-down per
benchmark (by subset where its tasks have one, else its first drill-down choice; a split
benchmark by another tag of its subset's tasks, or a note when it has none) with its bar
chart. Built like the job's report (:mod:`envloop_nb._export.html_report`):
Jinja2, the vega bundle inlined, a CSP that forbids every request; written atomically.

A comparison of reports (``comparison.export_html``, :func:`export_baseline_compare_html`):
the reports compared, the combined table (marks in red), the radar, strengths and
weaknesses in words, and the comparability per benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._compare import baseline as _baseline
from .._compare import baseline_multi as _multi
from .._compare.state import PALETTE
from .._present.baseline_html import (
    combined_html,
    comparability_html,
    compare_heading_html,
    drilldown_chart,
    drilldown_html,
    overview_html,
    radar,
    radar_note,
    report_table_html,
    words_html,
)
from .._present.report_html import ReportSection, report_html
from .._store.schema import written_by
from .._types import Policy
from .html_report import HtmlReport, write_report

if TYPE_CHECKING:
    import duckdb

__all__ = ["export_baseline_compare_html", "export_baseline_html"]


def export_baseline_html(
    con: duckdb.DuckDBPyConnection,
    benchmarks: Sequence[str | _baseline.Benchmark],
    path: str | Path,
    *,
    name: str,
    series: str,
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
) -> HtmlReport:
    """Write the report of these benchmarks (one model; a job id is its whole job) to
    ``path``.

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> out = export_baseline_html(ws.con, [job.id], tempfile.mkdtemp() + "/b.html",
    ...                            name="sft", series="sft")
    >>> out.sections
    ('Overview', 'Score by benchmark', 'Score per benchmark', 'tiny-agent by subset')
    """
    opts: dict[str, Any] = {"policy": policy, "threshold": threshold, "bad_below": bad_below}
    benches = _baseline.benchmarks_of(con, benchmarks, split_by=None)
    table = _baseline.report_table(con, benches, **opts)
    info = _baseline.overview(con, benches, name=name, **opts)
    sections = [
        ReportSection("Overview", overview_html(info, heading=False)),
        ReportSection("Score by benchmark", charts=(radar(table, series).to_dict(),)),
        ReportSection("Score per benchmark", report_table_html(table, heading=False)),
    ]
    for b in benches:
        bench, jid = b.label, b.job_id
        choices = _baseline.dimension_choices(con, b)
        where = f"job {jid}" + (f", subset {b.value}" if b.split else "")
        if not choices:
            why = (
                "no drill-down: no other task tag in this subset (split benchmark)"
                if b.split
                else "no drill-down: no task tag and no score dimension"
            )
            sections.append(ReportSection(f"{bench}", note=f"{why}; {where}"))
            continue
        by = choices[0]
        frame = _baseline.drilldown(con, b, by, **opts)
        chart = drilldown_chart(frame, benchmark=str(bench), by=by)
        sections.append(
            ReportSection(
                f"{bench} by {by.removeprefix('tag:')}",
                drilldown_html(frame, benchmark=str(bench), by=by, heading=False),
                charts=(chart.to_dict(),),
                note=f"{where}; other drill-downs: {', '.join(choices[1:]) or 'none'}",
            )
        )
    meta = [f"model {info['model'] or '-'}", f"{len(benches)} benchmarks", info["progress"],
            f"policy {policy}"]  # fmt: skip
    text = report_html(f"Baseline report: {name}", sections, meta=meta, written_by=written_by())
    return write_report(path, text, sections)


def export_baseline_compare_html(rs: _multi.ReportSet, path: str | Path) -> HtmlReport:
    """Write the comparison of these reports to ``path`` (see the module docstring).

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
    >>> rs = _multi.ReportSet(ws.con, ("A", "B"), ((a.id,), ("b",)))
    >>> export_baseline_compare_html(rs, tempfile.mkdtemp() + "/c.html").sections
    ('Reports', 'Scores by benchmark and report', 'Radar', 'Strengths and weaknesses', 'Comparability')
    """
    names = list(rs.names)
    colors = [PALETTE[i] for i in range(len(names))]
    table = _multi.combined_table(rs)
    checks = _multi.comparability(rs)
    strengths = _multi.strengths(rs)
    labels = [[b.label for b in rs.bench(i)] for i in range(len(names))]
    marked = int((table["mark"] != "").sum())
    note = f"{marked} of {len(table)} benchmarks marked (red)" if marked else ""
    sections = [
        ReportSection("Reports", compare_heading_html(names, colors, labels, heading=False)),
        ReportSection(
            "Scores by benchmark and report", combined_html(table, names, colors), note=note
        ),
        ReportSection("Radar", charts=(_multi.radar(rs).to_dict(),), note=radar_note(len(table))),
        ReportSection(
            "Strengths and weaknesses",
            words_html(_multi.words(rs), list(strengths["sentence"]), heading=False),
            note="paired bootstrap over the tasks both jobs scored completely",
        ),
        ReportSection("Comparability", comparability_html(checks, heading=False)),
    ]
    meta = [f"{len(names)} reports", f"{len(table)} benchmarks", f"policy {rs.policy}"]
    title = "Baseline comparison: " + " vs ".join(names)
    text = report_html(title, sections, meta=meta, written_by=written_by())
    return write_report(path, text, sections)
