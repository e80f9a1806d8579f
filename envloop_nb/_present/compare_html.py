"""Comparison HTML: the guard banner and the comparison table (pure renderers).

Frames and findings in, HTML out; the comparison functions (``_compare``) feed them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .display import (
    format_int,
    format_metric,
    format_number,
    format_pct,
    format_points,
    format_signed,
    header,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Finding",
    "best_jobs",
    "guard_html",
    "leaderboard_html",
    "paired_html",
    "scale_words",
    "signed_points",
    "strengths_html",
    "table_html",
]


class Finding(Protocol):
    """What the banner shows of a comparability finding."""

    @property
    def detail(self) -> str: ...

    @property
    def blocking(self) -> bool: ...


def signed_points(value: float | None, percent: bool) -> str:
    """A gap in points (``+2.1 pts``, real minus), or on its own scale when not ``percent``."""
    return format_points(value, percent=percent)


def best_jobs(part: pd.DataFrame) -> str | None:
    part = part[part["value"].notna()]
    if part.empty or len(part) < 2:
        return None if part.empty else str(part["job"].iloc[0])
    hib = bool(part["higher_is_better"].iloc[0])
    values = part["value"].astype(float)
    best = values.max() if hib else values.min()
    winners = part[values == best]["job"].tolist()
    return ", ".join(map(str, winners)) if len(winners) < len(part) else None


def scale_words(part: pd.DataFrame) -> str:
    """A dimension's scale once (its rows of a comparison's ``groups(by="dimension")``);
    each job's when they differ.

    Examples
    --------
    >>> import pandas as pd
    >>> scale_words(pd.DataFrame({"job": ["a", "b"], "scale": ["0–1 ratio"] * 2}))
    '0–1 ratio'
    >>> scale_words(pd.DataFrame({"job": ["a", "b"], "scale": ["0–1 ratio", "0–100 pct"]}))
    'a: 0–1 ratio | b: 0–100 pct'
    """
    texts = list(dict.fromkeys(str(t) for t in part["scale"]))
    if len(texts) == 1:
        return texts[0]
    return " | ".join(f"{j}: {t}" for j, t in zip(part["job"], part["scale"], strict=True))


def guard_html(differences: Sequence[Finding], n_jobs: int) -> str:
    """The guard's findings as a banner: red when incomparable, amber for cautions."""
    comparable = not any(d.blocking for d in differences)
    if not differences:
        return (
            '<div class="enb-guard enb-ok" style="padding:6px 10px;border-left:4px solid #54a24b;'
            'margin:4px 0;font-family:var(--jp-ui-font-family,sans-serif)">'
            f"✓ comparable: {n_jobs} jobs ran the same frozen work (dataset revision, runner, "
            "tasks and digests, attempts per task)</div>"
        )
    color = "#d62728" if not comparable else "#c98a00"
    head = (
        "⚠ NOT comparable — paired statistics use shared tasks only and claim no significance"
        if not comparable
        else "comparable, with cautions"
    )
    items = "".join(
        f"<li>{'<b>' if d.blocking else ''}{html.escape(d.detail)}{'</b>' if d.blocking else ''}"
        f"{'' if d.blocking else ' <i>(does not break comparability)</i>'}</li>"
        for d in differences
    )
    return (
        f'<div class="enb-guard{" enb-incomparable" if not comparable else ""}" '
        f'style="padding:6px 10px;border-left:4px solid {color};margin:4px 0;'
        f'font-family:var(--jp-ui-font-family,sans-serif)">'
        f'<div style="font-weight:600;color:{color}">{html.escape(head)}</div>'
        f'<ul style="margin:4px 0 0 0">{items}</ul></div>'
    )


def table_html(
    long: pd.DataFrame,
    job_ids: list[str],
    colors: dict[str, str],
    by: str,
    mark: str,
    baseline: str | None = None,
) -> str:
    """Pure renderer: one row per group, one column per job, best per row highlighted.

    Under each value: its coverage, and for the other jobs the gap to the baseline. A
    dimension (``long`` with ``scale``) shows its scale once, under its name; where the
    jobs' scales differ (a ``note``, which says how) no gap and no best are shown.
    """
    import pandas as pd

    head = "".join(
        f'<th style="text-align:right;padding:3px 8px"><span style="color:{colors[j]}">■</span> '
        f"{html.escape(j)}{'<br><small>(baseline)</small>' if j == baseline else ''}</th>"
        for j in job_ids
    )
    body = []
    for grp in dict.fromkeys(long["group"]):
        part = long[long["group"] == grp]
        # the jobs' scales differ (``note`` says how): no gap, no best
        apart = "note" in part and bool(str(part["note"].iloc[0]))
        best = None if apart else best_jobs(part)
        winners = set(best.split(", ")) if best else set()
        cells = []
        for jid in job_ids:
            hit = part[part["job"] == jid]
            if hit.empty or pd.isna(hit["value"].iloc[0]):
                cov = hit["coverage"].iloc[0] if len(hit) else "not measured"
                cells.append(
                    f'<td style="text-align:right;padding:3px 8px">-<br><small>{html.escape(cov)}</small></td>'
                )
                continue
            r = hit.iloc[0]
            value = float(r["value"])
            text = format_pct(value) if r["percent"] else format_number(value)
            base = part[part["job"] == baseline]
            if jid != baseline and len(base) and not pd.isna(base["value"].iloc[0]) and not apart:
                gap = value - float(base["value"].iloc[0])
                text += f' <small style="opacity:0.75">({signed_points(gap, bool(r["percent"]))})</small>'

            style = "text-align:right;padding:3px 8px;font-variant-numeric:tabular-nums"
            if jid in winners:
                style += ";font-weight:700;background:rgba(84,162,75,0.18)"
            missing = int(r["total"]) - int(r["scored"])
            cov_style = "color:#b45309;font-weight:600" if missing else "opacity:0.7"
            cells.append(
                f'<td style="{style}" class="{"enb-best" if jid in winners else ""}">{text}'
                f'<br><small style="{cov_style}">{html.escape(str(r["coverage"]))}</small></td>'
            )
        label = html.escape(str(grp))
        if "scale" in part:  # the dimension's scale once, and why it is not compared
            scales = scale_words(part)
            label += f'<br><small class="enb-scale" style="font-weight:400;opacity:0.75">{html.escape(scales)}</small>'
            note = str(part["note"].iloc[0]) if "note" in part else ""
            if note:
                label += f'<br><small class="enb-scale-note" style="font-weight:400;color:#b45309">⚠ {html.escape(note)}</small>'
        body.append(
            f'<tr><th style="text-align:left;padding:3px 8px;max-width:28em">{label}</th>{"".join(cells)}</tr>'
        )
    banner = f'<div style="color:#d62728;font-weight:600">{html.escape(mark)}</div>' if mark else ""
    name = "subset" if by == "subset" else "dimension"
    if not body:
        return f"{banner}<div><i>no {name}s to compare</i></div>"
    return (
        f'{banner}<table class="enb-compare-table" style="border-collapse:collapse;'
        f'font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
        f'<thead><tr><th style="text-align:left;padding:3px 8px">{header(name)}</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        '<div style="font-size:11px;opacity:0.7">best per row highlighted · (gap to the '
        "baseline) · coverage under each value</div>"
    )


_FONT = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"
_TD = "padding:3px 8px;vertical-align:top"
_NUM = _TD + ";text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums"


def _diff_cell(diff: object, low: object, high: object) -> str:
    """A difference in points over its interval, one column (``+2.1 pts`` / ``[−0.9, +5.0]``)."""
    bounds = f"[{format_signed(_num(low))}, {format_signed(_num(high))}]"
    return f"{format_points(_num(diff))}<br><small>{bounds}</small>"


def paired_html(frame: pd.DataFrame) -> str:
    """The paired statistics as HTML: differences with intervals, McNemar, verdict.

    Seven columns that fit a page: the verdict (which may wrap) is always in view.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame([{"baseline": "a", "job": "b", "shared_complete": 140, "tasks_union": 200,
    ...     "shared_share": 0.7, "score_diff": 0.1125, "score_low": -0.009804, "score_high": 0.157,
    ...     "pass_diff": 0.1, "pass_low": 0.05, "pass_high": 0.15, "fixed": 23, "broken": 4,
    ...     "mcnemar_p": 0.0003, "verdict": "beyond noise: b is better than a", "note": ""}])
    >>> out = paired_html(f)
    >>> "+11.2 pts" in out and "[−1.0, +15.7]" in out and "-0.0098" not in out
    True
    """
    if frame.empty:
        return "<i>no other job to pair with the baseline</i>"
    rows = []
    for _, r in frame.iterrows():
        verdict = str(r["verdict"])
        color = (
            "var(--jp-success-color1,#2e7d32)"
            if verdict.startswith("beyond noise")
            else "#b45309"
            if verdict.startswith(("borderline", "not assessed"))
            else "inherit"
        )
        p = _num(r["mcnemar_p"])
        p_text = "-" if p is None else (f"{p:.2g}" if p >= 1e-3 else "< 0.001")
        note = str(r["note"] or "")
        rows.append(
            "<tr>"
            f'<td style="{_TD}"><b>{html.escape(str(r["job"]))}</b></td>'
            f'<td style="{_NUM}">{_diff_cell(r["score_diff"], r["score_low"], r["score_high"])}</td>'
            f'<td style="{_NUM}">{_diff_cell(r["pass_diff"], r["pass_low"], r["pass_high"])}</td>'
            f'<td style="{_NUM}">{format_int(r["fixed"])} / {format_int(r["broken"])}</td>'
            f'<td style="{_NUM}">{p_text}</td>'
            f'<td style="{_NUM}">{format_int(r["shared_complete"])} of '
            f"{format_int(r['tasks_union'])}<br><small>{format_pct(_num(r['shared_share']))}</small></td>"
            f'<td style="{_TD};min-width:220px;color:{color}">{html.escape(verdict)}'
            + (f'<br><small style="opacity:0.8">{html.escape(note)}</small>' if note else "")
            + "</td></tr>"
        )
    base = html.escape(str(frame["baseline"].iloc[0]))
    th = "padding:3px 8px;text-align:right"
    return (
        f'<div style="{_FONT};margin-bottom:4px">Each job − baseline <b>{base}</b>, on tasks both '
        "scored completely; 95% paired bootstrap interval over tasks (seeded); exact McNemar "
        "test on tasks solved (pass rate ≥ solved_at) by one job only.</div>"
        f'<div class="enb-table-scroll" style="overflow-x:auto;max-width:100%">'
        f'<table style="border-collapse:collapse;{_FONT}"><thead><tr>'
        '<th style="text-align:left;padding:3px 8px">Job</th>'
        f'<th style="{th}">Δ score</th><th style="{th}">Δ pass rate</th>'
        f'<th style="{th}">Fixed / broken</th><th style="{th}">McNemar p</th>'
        f'<th style="{th}">Shared complete tasks</th>'
        '<th style="text-align:left;padding:3px 8px">Verdict</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def leaderboard_html(frame: pd.DataFrame, colors: dict[str, str], baseline: str) -> str:
    """The leaderboard as HTML with its coverage and warnings impossible to miss; a job
    not comparable with the baseline (ranked after the comparable ones) is dimmed and
    says so.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame([{"rank": 1, "job": "a", "model": "m", "score": 0.61, "pass": 0.61,
    ...     "pass@2": 0.7, "pass^2": 0.5, "missing": 0, "coverage": "8/8 scored", "warning": "",
    ...     "comparable": True}])
    >>> out = leaderboard_html(f, {}, "a")
    >>> ">61.0%<" in out and "Coverage" in out
    True
    """
    metric_cols = [c for c in frame.columns if c.startswith(("pass@", "pass^"))]
    head = ["#", "Job", "Model", "Score", "Pass rate", *metric_cols, "Coverage", "Warnings"]
    rows = []
    for _, r in frame.iterrows():
        jid = str(r["job"])
        mark = " <small>(baseline)</small>" if jid == baseline else ""
        apart = not bool(r.get("comparable", True))
        if apart:
            mark += ' <small style="color:#b45309">(not comparable)</small>'
        warn = str(r["warning"])
        cells = [
            str(int(r["rank"])),
            f'<span style="color:{colors.get(jid, "#888")}">■</span> <b>{html.escape(jid)}</b>{mark}',
            html.escape(str(r["model"])),
            format_metric(_num(r["score"])),
            format_metric(_num(r["pass"])),
            *[format_metric(_num(r[c])) for c in metric_cols],
            f'<span style="{"color:#b45309;font-weight:600" if r["missing"] else ""}">'
            f"{html.escape(str(r['coverage']))}</span>",
            f'<span style="color:#b45309;font-weight:600">{html.escape(warn)}</span>',
        ]
        numeric = {0, 3, 4, *range(5, 5 + len(metric_cols))}
        tds = "".join(
            f'<td style="{_NUM if i in numeric else _TD}">{c}</td>' for i, c in enumerate(cells)
        )
        dim = ' style="opacity:0.7"' if apart else ""
        rows.append(f"<tr{dim}>{tds}</tr>")
    header = "".join(
        f'<th style="text-align:left;padding:3px 8px">{html.escape(h)}</th>' for h in head
    )
    return (
        '<div class="enb-table-scroll" style="overflow-x:auto;max-width:100%">'
        f'<table style="border-collapse:collapse;{_FONT}"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def strengths_html(frame: pd.DataFrame) -> str:
    """Strengths and weaknesses as a bullet list of sentences."""
    if frame.empty:
        return "<i>no job is above or below all the others on any row</i>"
    items = "".join(
        f"<li>{'▲' if r['kind'] == 'strength' else '▼'} {html.escape(str(r['sentence']))}</li>"
        for _, r in frame.iterrows()
    )
    return f'<ul style="{_FONT};margin:2px 0">{items}</ul>'
