"""HTML for metric cards: pure functions from plain values to markup.

The cards take a job summary as the plain mapping ``JobSummary.to_dict()`` gives (the
platform's keys: ``score``, ``pass``, ``pass@k``, ``pass^k``, ``k``, ``total``, ...);
this floor never imports the result classes.

The CSS uses JupyterLab theme variables (with light fallbacks), so cards follow the
light and dark themes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any, Protocol

from .display import format_count, format_metric, format_pct

__all__ = ["CARD_CSS", "card_value", "coverage_text", "metric_items", "summary_card_html"]


class _HasToDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


CARD_CSS = """
<style>
.enb-summary{font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:var(--jp-ui-font-color1,#222);
  max-width:980px;margin:2px 0}
.enb-summary .enb-head{font-size:12px;color:var(--jp-ui-font-color2,#555);margin-bottom:6px}
.enb-summary .enb-head b{color:var(--jp-ui-font-color1,#222);font-weight:600}
.enb-cards{display:flex;flex-wrap:wrap;gap:8px;font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.enb-card{border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:6px 12px;
  flex:1 1 120px;min-width:0;max-width:240px;box-sizing:border-box;
  background:var(--jp-layout-color1,#fff);color:var(--jp-ui-font-color1,#222)}
.enb-card.enb-main{border-color:var(--jp-brand-color1,#1976d2);border-width:1px 1px 1px 4px}
.enb-card .enb-label{font-size:11px;color:var(--jp-ui-font-color2,#666);text-transform:none}
.enb-card .enb-value{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums;line-height:1.25}
.enb-card .enb-sub{font-size:11px;color:var(--jp-ui-font-color2,#666);font-variant-numeric:tabular-nums}
.enb-bar{height:5px;border-radius:3px;background:var(--jp-layout-color3,#e0e0e0);margin:4px 0 2px;overflow:hidden}
.enb-bar>div{height:100%;background:var(--jp-brand-color1,#1976d2)}
.enb-coverage{font-size:12px;color:var(--jp-ui-font-color2,#555);margin-top:6px;
  font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.enb-coverage.enb-warn{color:var(--jp-warn-color0,#92400e);font-weight:600;
  background:var(--jp-warn-color3,#fef3c7);border-left:4px solid var(--jp-warn-color1,#d97706);
  padding:4px 8px;border-radius:3px}
.enb-note{font-size:11px;color:var(--jp-ui-font-color2,#666);margin-top:4px}
</style>
"""


def _card(label: str, value: str, sub: str = "", extra: str = "", cls: str = "") -> str:
    sub_html = f'<div class="enb-sub">{html.escape(sub)}</div>' if sub else ""
    return (
        f'<div class="enb-card{cls}"><div class="enb-label">{html.escape(label)}</div>'
        f'<div class="enb-value">{html.escape(value)}</div>{extra}{sub_html}</div>'
    )


def coverage_text(
    scored: int | None, total: int, complete_members: int | None, total_members: int
) -> str:
    """``"5/6 attempts scored · 2/3 members complete"``.

    Examples
    --------
    >>> coverage_text(5, 6, 2, 3)
    '5/6 attempts scored · 2/3 members complete'
    """
    return (
        f"{format_count(scored, total)} attempts scored · "
        f"{format_count(complete_members, total_members)} members complete"
    )


def card_value(value: float | None) -> str:
    """A card's big number: a rate always with one decimal (``"96.0%"``, never ``"96%"``
    beside ``"50.1%"``), other values on their own scale, ``"-"`` when undefined.

    Examples
    --------
    >>> card_value(0.9596), card_value(0.959), card_value(0.6), card_value(7.25), card_value(None)
    ('96.0%', '95.9%', '60.0%', '7.25', '-')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format_pct(value, trim=False) if 0.0 <= value <= 1.0 else format_metric(value)


def metric_items(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Label/value pairs as the cards show them, with the real k (``to_dict()`` keys)."""
    k = summary["k"]
    return [
        ("score", format_metric(summary["score"])),
        ("pass", format_metric(summary["pass"])),
        (f"pass@{k}", format_metric(summary["pass@k"])),
        (f"pass^{k}", format_metric(summary["pass^k"])),
    ]


def summary_card_html(summary: Mapping[str, Any] | _HasToDict) -> str:
    """Metric cards with the real k, coverage beside the score, missing impossible to miss.

    ``summary`` is the mapping of ``JobSummary.to_dict()`` (a summary itself is accepted
    and converted with its ``to_dict()``).

    Examples
    --------
    >>> s = {"job_id": "j", "k": 2, "total": 6, "scored": 5, "missing": 1, "invalid": 0,
    ...      "total_members": 3, "complete_members": 2, "score": 0.6, "pass": 0.6,
    ...      "pass@k": 1.0, "pass^k": 0.5, "binary": True, "policy": "unknown",
    ...      "threshold": None, "note": None}
    >>> out = summary_card_html(s)
    >>> "pass^2" in out and "5/6 attempts scored" in out and "1 of 6 attempts missing" in out
    True
    """
    d = summary if isinstance(summary, Mapping) else summary.to_dict()
    job_id, k, policy, threshold = d["job_id"], d["k"], d["policy"], d["threshold"]
    total, scored, missing, invalid = d["total"], d["scored"], d["missing"], d["invalid"]
    total_members, complete_members = d["total_members"], d["complete_members"]
    items = {label: card_value(d[key]) for label, key in
             (("score", "score"), ("pass", "pass"), (f"pass@{k}", "pass@k"), (f"pass^{k}", "pass^k"))}  # fmt: skip
    text = coverage_text(scored, total, complete_members, total_members)
    coverage = scored / total if total and scored is not None else 0.0
    members = format_count(complete_members, total_members)
    at_sub = (
        f"over {total_members:,} members"
        if policy == "failure"
        else f"over {members} complete members"
    )
    bar = f'<div class="enb-bar"><div style="width:{coverage * 100:.1f}%"></div></div>'
    cards = [
        _card(
            "score",
            items["score"],
            f"{format_count(scored, total)} attempts scored",
            cls=" enb-main",
        ),
        _card(
            "coverage",
            card_value(coverage),
            f"{members} members complete",
            extra=bar,
        ),
        _card("pass", items["pass"]),
        _card(f"pass@{k}", items[f"pass@{k}"], at_sub),
        _card(f"pass^{k}", items[f"pass^{k}"], at_sub),
    ]
    if threshold is not None:
        rule = f"pass = reward ≥ {threshold:g}"
    else:
        rule = (
            "pass = reward = 1" if d["binary"] else "graded rewards (no pass without a threshold)"
        )
    policy_text = (
        "missing counted as failures (policy='failure')"
        if policy == "failure"
        else "missing stays unknown (policy='unknown')"
    )
    head = (
        f'<div class="enb-head"><b>{html.escape(job_id)}</b> · k = {k} attempts per task · '
        f"{html.escape(rule)} · {html.escape(policy_text)}</div>"
    )
    if missing is None:  # a run's aggregate metrics that do not state their coverage
        coverage_line = f'<div class="enb-coverage">{html.escape(text)} · coverage unknown</div>'
    elif missing:
        ended = f"{invalid:,} ended without a reward" if invalid else "none has ended yet"
        what = "each counted as reward 0" if policy == "failure" else "not counted as 0"
        coverage_line = (
            f'<div class="enb-coverage enb-warn">⚠ {missing:,} of {total:,} attempts '
            f"missing ({ended}; {what}) · {html.escape(text)}</div>"
        )
    else:
        coverage_line = f'<div class="enb-coverage">{html.escape(text)} · nothing missing</div>'
    note = ""
    if not d["binary"] and d["score"] is not None:
        note = (
            '<div class="enb-note">Rewards are graded (not all 0/1): pass metrics need a '
            "threshold, e.g. <code>job.summary(threshold=0.5)</code>.</div>"
        )
    if d.get("note"):  # the source's own rule, e.g. which policy reproduces Harbor's result.json
        note += f'<div class="enb-note">{html.escape(d["note"])}</div>'
    return (
        f'{CARD_CSS}<div class="enb-summary" data-job="{html.escape(job_id)}">{head}'
        f'<div class="enb-cards">{"".join(cards)}</div>{coverage_line}{note}</div>'
    )
