"""Comparison HTML: the guard banner and the comparison table (pure renderers).

Frames and findings in, HTML out; the comparison functions (``_compare``) feed them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .display import format_pct

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Finding", "best_jobs", "guard_html", "signed_points", "table_html"]


class Finding(Protocol):
    """What the banner shows of a comparability finding."""

    @property
    def detail(self) -> str: ...

    @property
    def blocking(self) -> bool: ...


def signed_points(value: float | None, percent: bool) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    return f"{value * 100:+.1f} pts" if percent else f"{value:+.3g}"


def best_jobs(part: pd.DataFrame) -> str | None:
    part = part[part["value"].notna()]
    if part.empty or len(part) < 2:
        return None if part.empty else str(part["job"].iloc[0])
    hib = bool(part["higher_is_better"].iloc[0])
    values = part["value"].astype(float)
    best = values.max() if hib else values.min()
    winners = part[values == best]["job"].tolist()
    return ", ".join(map(str, winners)) if len(winners) < len(part) else None


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

    Under each value: its coverage, and for the other jobs the gap to the baseline.
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
        best = best_jobs(part)
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
            text = format_pct(value) if r["percent"] else f"{value:.4g}"
            base = part[part["job"] == baseline]
            if jid != baseline and len(base) and not pd.isna(base["value"].iloc[0]):
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
        body.append(
            f'<tr><th style="text-align:left;padding:3px 8px">{html.escape(str(grp))}</th>{"".join(cells)}</tr>'
        )
    banner = f'<div style="color:#d62728;font-weight:600">{html.escape(mark)}</div>' if mark else ""
    name = "subset" if by == "subset" else "dimension"
    if not body:
        return f"{banner}<div><i>no {name}s to compare</i></div>"
    return (
        f'{banner}<table class="enb-compare-table" style="border-collapse:collapse;'
        f'font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
        f'<thead><tr><th style="text-align:left;padding:3px 8px">{name}</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        '<div style="font-size:11px;opacity:0.7">best per row highlighted · (gap to the '
        "baseline) · coverage under each value</div>"
    )
