"""HTML of a baseline report (one model on several benchmarks): pure renderers.

Plain dicts and small frames in (``report.overview()``, ``report.table()``,
``report.drilldown()``, a comparison's combined table and words), escaped HTML out;
the panel and the standalone report show the same HTML.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .display import format_metric
from .panel_html import PANEL_CSS, rows_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "combined_html",
    "comparability_html",
    "compare_heading_html",
    "drilldown_chart",
    "drilldown_html",
    "overview_html",
    "radar",
    "radar_groups",
    "radar_note",
    "radar_note_html",
    "report_table_html",
    "words_html",
]

_MARK = "color:var(--jp-error-color1,#c62828);font-weight:600"
#: A long cell (a job id) wraps instead of widening the table.
_WRAP = "white-space:normal;word-break:break-all;max-width:230px;font-size:11px"
_LEFT = "text-align:left;white-space:normal"
#: Text cells left, numbers right (JupyterLab right-aligns every output table cell).
_CSS = (
    PANEL_CSS + "<style>.enb-panel.enb-bl td,.enb-panel.enb-bl th{text-align:left}"
    ".enb-panel.enb-bl td.num,.enb-panel.enb-bl th.num{text-align:right}</style>"
)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or str(v) == "<NA>"


def _num(v: Any) -> str:
    return "-" if _missing(v) else f"{int(v):,}"


def _metric(v: Any) -> str:
    return "-" if _missing(v) else format_metric(float(v))


def overview_html(info: Mapping[str, Any], *, heading: bool = True) -> str:
    """The report's facts: model, method, created / updated, progress, benchmarks and
    their generation parameters (escaped).

    Examples
    --------
    >>> out = overview_html({"name": "m <1>", "model": "m", "method": "lm-eval",
    ...     "created": "2026-01-01 00:00:00", "updated": "-", "progress": "5/6 attempts scored",
    ...     "status": "completed", "benchmarks": ["a", "b"], "inference": {"a": {"t": "0"}}})
    >>> "m &lt;1&gt;" in out and "a, b" in out and "t=0" in out
    True
    """
    params = info.get("inference") or {}
    shown = {b: ", ".join(f"{k}={v}" for k, v in list(p.items())[:6]) for b, p in params.items()}
    distinct = set(shown.values())
    if not any(shown.values()):
        inference = "not recorded by the sources"
    elif len(distinct) == 1:
        inference = next(iter(distinct)) + " (every benchmark)"
    else:
        inference = " · ".join(f"{b}: {t or '-'}" for b, t in shown.items())
    rows = [
        ("report", info.get("name")),
        ("model", info.get("model") or "-"),
        ("method", info.get("method")),
        ("inference config", inference),
        ("created", info.get("created")),
        ("updated", info.get("updated")),
        ("status", info.get("status")),
        ("progress", info.get("progress")),
        ("benchmarks", f"{len(info.get('benchmarks') or [])}: "
                       + ", ".join(info.get("benchmarks") or [])),
    ]  # fmt: skip
    body = "".join(
        f'<tr><td style="{_LEFT}">{html.escape(k)}</td>'
        f'<td style="{_LEFT}">{html.escape(str(v))}</td></tr>'
        for k, v in rows
    )
    return (
        f'{_CSS}<div class="enb-panel enb-bl">{"<h4>Overview</h4>" if heading else ""}'
        f'<table class="enb-facts">{body}</table></div>'
    )


def report_table_html(frame: Any, *, heading: bool = True) -> str:
    """The per-benchmark table: samples completed / total, score, pass@k, coverage, bad
    cases (escaped); a split benchmark's job cell names its subset.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame([{"benchmark": "b", "job_id": "j", "status": "completed", "k": 2,
    ...     "samples": "2/3", "score": 0.6, "pass@k": 1.0, "pass^k": 0.5,
    ...     "coverage": "5/6 scored, 1 missing", "bad_cases": 0, "bad_below": 0.5}])
    >>> out = report_table_html(t)
    >>> "60.0%" in out and "2/3" in out and "below 0.5" in out
    True
    """
    header = ["Benchmark", "Job", "Status", "k", "Complete / total", "Score", "pass@k",
              "pass^k", "Coverage", "Bad cases"]  # fmt: skip
    numeric = {3, 4, 5, 6, 7, 9}
    head = "".join(
        f'<th class="{"num" if i in numeric else ""}">{html.escape(h)}</th>'
        for i, h in enumerate(header)
    )
    body = []
    for r in frame.to_dict("records"):
        sub = r.get("subset")
        job = str(r["job_id"]) + ("" if _missing(sub) else f" · subset {sub}")
        cells = [str(r["benchmark"]), job, str(r["status"]), str(r["k"]),
                 str(r["samples"]), _metric(r["score"]), _metric(r["pass@k"]),
                 _metric(r["pass^k"]), str(r["coverage"]), _num(r["bad_cases"])]  # fmt: skip
        tds = [
            f'<td class="{"num" if i in numeric else ""}"'
            + (f' style="{_WRAP}"' if i == 1 else "")
            + f">{html.escape(c)}</td>"
            for i, c in enumerate(cells)
        ]
        body.append(f"<tr>{''.join(tds)}</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    bad = frame["bad_below"].iloc[0] if len(frame) else None
    note = "" if _missing(bad) else f"bad case: a task scoring below {bad:g}; "
    note += "complete: tasks with all k attempts scored; pass@k at each benchmark's own k"
    return (
        f'{_CSS}<div class="enb-panel enb-bl">{"<h4>Score per benchmark</h4>" if heading else ""}'
        f'<div style="overflow-x:auto">{table}</div><div class="enb-dim">{html.escape(note)}</div></div>'
    )


def drilldown_html(frame: Any, *, benchmark: str, by: str, heading: bool = True) -> str:
    """One benchmark's drill-down table: value, score, samples, coverage, bad cases.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame([{"value": "math", "score": 0.5, "samples": "1/1",
    ...     "coverage": "2/2 scored", "pass@k": 1.0, "bad_cases": 0}])
    >>> "math" in drilldown_html(f, benchmark="b", by="subset")
    True
    """
    what = by.removeprefix("tag:")
    rows = [
        [str(r["value"]), _metric(r["score"]), str(r["samples"]), str(r["coverage"]),
         _metric(r["pass@k"]), _num(r["bad_cases"])]
        for r in frame.to_dict("records")
    ]  # fmt: skip
    header = [what[:1].upper() + what[1:], "Score", "Complete / total", "Coverage", "pass@k",
              "Bad cases"]  # fmt: skip
    return (
        f'{_CSS}<div class="enb-panel enb-bl">'
        + (f"<h4>{html.escape(benchmark)} by {html.escape(what)}</h4>" if heading else "")
        + f"{rows_table(header, rows, {1, 2, 4, 5})}</div>"
    )


def combined_html(
    frame: Any, names: Sequence[str], colors: Sequence[str], *, heading: bool = False
) -> str:
    """Benchmark x report scores, best per row in bold, coverage under each value, and
    red marks: a report that did not run a benchmark (``not run`` in its cell) and the
    row's mark (not run by some report, not the same frozen work).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame([{"benchmark": "x", "A": 0.5, "A coverage": "2/2 scored",
    ...     "B": None, "B coverage": "not run", "best": None, "mark": "not run by B"}])
    >>> out = combined_html(f, ["A", "B"], ["#111", "#222"])
    >>> "not run by B" in out and "50.0%" in out and out.count("enb-mark") == 2
    True
    """
    head = "".join(
        f'<th class="num"><span style="color:{c}">■</span> {html.escape(n)}</th>'
        for n, c in zip(names, colors, strict=False)
    )
    body = []
    for r in frame.to_dict("records"):
        best = set(str(r.get("best") or "").split(", "))
        cells = []
        for n in names:
            weight = "font-weight:700" if n in best else ""
            cover = str(r[f"{n} coverage"])
            under = (
                f'<small class="enb-mark" style="{_MARK}">not run</small>'
                if cover == "not run"
                else f'<small class="enb-dim">{html.escape(cover)}</small>'
            )
            cells.append(
                f'<td class="num"><span style="{weight}">{_metric(r[n])}</span><br>{under}</td>'
            )
        mark = str(r.get("mark") or "")
        shown = f'<span class="enb-mark">⚠ {html.escape(mark)}</span>' if mark else ""
        body.append(
            f"<tr><td>{html.escape(str(r['benchmark']))}</td>{''.join(cells)}"
            f'<td style="{_MARK};white-space:normal;max-width:360px">{shown}</td></tr>'
        )
    title = "<h4>Scores by benchmark and report</h4>" if heading else ""
    return (
        f'{_CSS}<div class="enb-panel enb-bl">{title}<div style="overflow-x:auto"><table>'
        f"<thead><tr><th>benchmark</th>{head}<th>mark</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
        '<div class="enb-dim">best per row in bold · coverage under each value · red: not run'
        " by a report, or not the same frozen work (dataset revision, runner, tasks, k)</div></div>"
    )


def compare_heading_html(
    names: Sequence[str],
    colors: Sequence[str],
    benchmarks: Sequence[Sequence[str]],
    *,
    heading: bool = True,
) -> str:
    """One line per compared report: its colour, name and benchmarks (escaped).

    Examples
    --------
    >>> out = compare_heading_html(["A", "<B>"], ["#111", "#222"], [["x", "y"], ["x"]])
    >>> "&lt;B&gt;" in out and "2 benchmarks: x, y" in out
    True
    """
    rows = "".join(
        f'<li><span style="color:{c}">■</span> <b>{html.escape(n)}</b> '
        f'<span class="enb-dim">{len(b)} benchmark{"" if len(b) == 1 else "s"}: '
        f"{html.escape(', '.join(b))}</span></li>"
        for n, c, b in zip(names, colors, benchmarks, strict=False)
    )
    return (
        f'{_CSS}<div class="enb-panel enb-bl" style="white-space:normal">'
        + (f"<h4>Comparing {len(names)} reports</h4>" if heading else "")
        + f'<ul style="margin:2px 0;padding-left:18px;list-style:none">{rows}</ul></div>'
    )


def radar_note(benchmarks: int) -> str:
    """What a radar over fewer than three benchmarks is (a segment or one axis), else "".

    Examples
    --------
    >>> radar_note(1)
    'one benchmark: the radar is one axis (the table has the numbers)'
    >>> radar_note(3)
    ''
    """
    if benchmarks >= 3:
        return ""
    what = (
        "one benchmark: the radar is one axis"
        if benchmarks == 1
        else (f"{benchmarks} benchmarks: the radar is a segment")
    )
    return f"{what} (the table has the numbers)"


def radar_note_html(benchmarks: int) -> str:
    """:func:`radar_note` as a dim line ("" from three benchmarks on)."""
    note = radar_note(benchmarks)
    out = f'{_CSS}<div class="enb-panel"><div class="enb-dim">{html.escape(note)}</div></div>'
    return out if note else ""


def words_html(lines: Sequence[str], sentences: Sequence[str] = (), *, heading: bool = True) -> str:
    """Strengths and weaknesses in words: one paragraph per report, then each gap's
    sentence with its interval (escaped).

    Examples
    --------
    >>> "&lt;b&gt;" in words_html(["<b>: best on x"])
    True
    """
    paras = "".join(f"<p style='margin:3px 0'>{html.escape(t)}</p>" for t in lines)
    detail = "".join(f"<li>{html.escape(t)}</li>" for t in sentences)
    more = f'<ul class="enb-dim" style="margin:4px 0">{detail}</ul>' if detail else ""
    title = "<h4>Strengths and weaknesses</h4>" if heading else ""
    return (
        f'{_CSS}<div class="enb-panel enb-bl" style="white-space:normal">{title}{paras}{more}</div>'
    )


def comparability_html(frame: Any, *, heading: bool = True) -> str:
    """Per benchmark (``comparison.comparability()``): the reports that ran it, those
    that did not (red), whether their jobs ran the same frozen work (``no`` in red) and
    the guard's sentences (escaped).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame([{"benchmark": "x", "reports": ["A", "B"], "missing_from": [],
    ...     "comparable": False, "differences": ["dataset revision differs"]},
    ...     {"benchmark": "y", "reports": ["A"], "missing_from": ["B"], "comparable": None,
    ...     "differences": []}])
    >>> out = comparability_html(f)
    >>> "dataset revision differs" in out and "only A ran it" in out and "not run by B" in out
    True
    """
    rows = []
    for r in frame.to_dict("records"):
        ran, missing = list(r["reports"]), list(r["missing_from"])
        ok = r["comparable"]
        if ok is None or _missing(ok):
            verdict = f'<span class="enb-dim">only {html.escape(", ".join(ran))} ran it</span>'
        elif bool(ok):
            verdict = "yes"
        else:
            verdict = f'<span class="enb-mark" style="{_MARK}">no</span>'
        absent = (
            f'<span class="enb-mark" style="{_MARK}">not run by {html.escape(", ".join(missing))}'
            "</span>"
            if missing
            else ""
        )
        said = "".join(
            f'<li class="{"enb-dim" if d.endswith("comparability)") else ""}">'
            f"{html.escape(str(d))}</li>"
            for d in r["differences"]
        )
        notes = f'<ul style="margin:0;padding-left:16px">{said}</ul>' if said else ""
        rows.append(
            f"<tr><td>{html.escape(str(r['benchmark']))}</td>"
            f'<td style="{_LEFT}">{html.escape(", ".join(ran))}</td>'
            f'<td style="{_LEFT}">{absent}</td><td>{verdict}</td>'
            f'<td style="{_LEFT};max-width:480px">{notes}</td></tr>'
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("benchmark", "run by", "not run by", "same frozen work", "the guard says")
    )
    title = "<h4>Comparability</h4>" if heading else ""
    return (
        f'{_CSS}<div class="enb-panel enb-bl">{title}<div style="overflow-x:auto"><table>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        '<div class="enb-dim">same frozen work: the dataset revision, runner, task set and '
        "task contents, and k agree (the comparison guard); a gap on a benchmark that is not"
        " is not assessed</div></div>"
    )


# -- charts (altair specs) ------------------------------------------------------------
def radar_groups(table: pd.DataFrame, series: str) -> pd.DataFrame:
    """The radar's long frame from a report table: ``job`` (the series), ``group`` (the
    benchmark), ``value`` (its score), ``percent``, ``coverage``."""
    import pandas as pd

    values = [None if v is pd.NA else float(v) for v in table["score"]]
    return pd.DataFrame(
        {
            "job": series,
            "group": table["benchmark"].astype(str),
            "value": pd.array(values, dtype="Float64"),
            "percent": [v is None or 0 <= v <= 1 for v in values],
            "coverage": table["coverage"].astype(str),
        }
    )


def radar(table: pd.DataFrame, series: str, *, title: str = "score by benchmark") -> Any:
    """Radar chart of one report's score per benchmark (an altair chart); with fewer than
    three benchmarks a radar is a segment, so those get bars instead."""
    from .compare_charts import radar_chart

    if len(table) < 3:
        from .charts import bar_chart

        scored = table[table["score"].notna()]
        scores = scored["score"].astype(float)
        if len(scored):
            frame = scored[["benchmark", "score"]].assign(
                benchmark=scored["benchmark"].astype(str), score=scores
            )
            return bar_chart(
                frame, category="benchmark", value="score", title=title,
                percent=bool(((scores >= 0) & (scores <= 1)).all()),
            )  # fmt: skip
    return radar_chart(
        radar_groups(table, series),
        [series],
        title=title,
        empty="no benchmark has a scored attempt",
    )


def drilldown_chart(frame: pd.DataFrame, *, benchmark: str, by: str) -> Any:
    """Bars of a drill-down's score per value (``_present.charts.bar_chart``)."""
    import pandas as pd

    from .charts import bar_chart
    from .compare_charts import empty_chart

    what = by.removeprefix("tag:")
    title = f"{benchmark}: score by {what}"
    data = frame[frame["score"].notna()]
    if data.empty:
        return empty_chart(title, message=f"no scored attempt by {what}")
    scores = data["score"].astype(float)
    percent = bool(((scores >= 0) & (scores <= 1)).all())
    plot = pd.DataFrame(
        {
            what: data["value"].astype(str),
            "score": scores,
            "samples": data["samples"],
            "bad cases": data["bad_cases"].astype(str),
        }
    )
    return bar_chart(
        plot,
        category=what,
        value="score",
        title=title,
        percent=percent,
        extra_tooltip=("samples", "bad cases"),
    )
