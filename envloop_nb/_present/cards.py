"""HTML for metric cards: pure functions from results to markup.

The CSS uses JupyterLab theme variables (with light fallbacks), so cards follow the
light and dark themes.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .display import format_count, format_pct

if TYPE_CHECKING:
    from .._metrics.counts import JobSummary

__all__ = ["CARD_CSS", "summary_card_html"]

CARD_CSS = """
<style>
.enb-summary{font-family:var(--jp-ui-font-family,system-ui,sans-serif);color:var(--jp-ui-font-color1,#222);
  max-width:980px;margin:2px 0}
.enb-summary .enb-head{font-size:12px;color:var(--jp-ui-font-color2,#555);margin-bottom:6px}
.enb-summary .enb-head b{color:var(--jp-ui-font-color1,#222);font-weight:600}
.enb-cards{display:flex;flex-wrap:wrap;gap:8px;font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.enb-card{border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:6px 12px;min-width:96px;
  background:var(--jp-layout-color1,#fff);color:var(--jp-ui-font-color1,#222)}
.enb-card.enb-main{border-color:var(--jp-brand-color1,#1976d2);border-width:1px 1px 1px 4px}
.enb-card .enb-label{font-size:11px;color:var(--jp-ui-font-color2,#666);text-transform:none}
.enb-card .enb-value{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums;line-height:1.25}
.enb-card .enb-sub{font-size:11px;color:var(--jp-ui-font-color2,#666);font-variant-numeric:tabular-nums}
.enb-bar{height:5px;border-radius:3px;background:var(--jp-layout-color3,#e0e0e0);margin:4px 0 2px;overflow:hidden;
  min-width:120px}
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


def summary_card_html(summary: JobSummary) -> str:
    """Metric cards with the real k, coverage beside the score, missing impossible to miss.

    Examples
    --------
    >>> from envloop_nb._metrics.counts import JobSummary
    >>> s = JobSummary("j", 2, 6, 5, 1, 0, 3, 2, 0.6, 0.6, 1.0, 0.5, True, "unknown", None)
    >>> out = summary_card_html(s)
    >>> "pass^2" in out and "5/6 attempts scored" in out and "1 of 6 attempts missing" in out
    True
    """
    s = summary
    items = dict(s.metric_items())
    k = s.k
    coverage = s.scored / s.total if s.total else 0.0
    members = format_count(s.complete_members, s.total_members)
    at_sub = (
        f"over {s.total_members:,} members"
        if s.policy == "failure"
        else f"over {members} complete members"
    )
    bar = f'<div class="enb-bar"><div style="width:{coverage * 100:.1f}%"></div></div>'
    cards = [
        _card(
            "score",
            items["score"],
            f"{format_count(s.scored, s.total)} attempts scored",
            cls=" enb-main",
        ),
        _card(
            "coverage",
            format_pct(coverage),
            f"{members} members complete",
            extra=bar,
        ),
        _card("pass", items["pass"]),
        _card(f"pass@{k}", items[f"pass@{k}"], at_sub),
        _card(f"pass^{k}", items[f"pass^{k}"], at_sub),
    ]
    if s.threshold is not None:
        rule = f"pass = reward ≥ {s.threshold:g}"
    else:
        rule = "pass = reward = 1" if s.binary else "graded rewards (no pass without a threshold)"
    policy = (
        "missing counted as failures (policy='failure')"
        if s.policy == "failure"
        else "missing stays unknown (policy='unknown')"
    )
    head = (
        f'<div class="enb-head"><b>{html.escape(s.job_id)}</b> · k = {k} attempts per task · '
        f"{html.escape(rule)} · {html.escape(policy)}</div>"
    )
    if s.missing:
        ended = f"{s.invalid:,} ended without a reward" if s.invalid else "none has ended yet"
        what = "each counted as reward 0" if s.policy == "failure" else "not counted as 0"
        coverage_line = (
            f'<div class="enb-coverage enb-warn">⚠ {s.missing:,} of {s.total:,} attempts '
            f"missing ({ended}; {what}) · {html.escape(s.coverage_text)}</div>"
        )
    else:
        coverage_line = (
            f'<div class="enb-coverage">{html.escape(s.coverage_text)} · nothing missing</div>'
        )
    note = ""
    if not s.binary and s.score is not None:
        note = (
            '<div class="enb-note">Rewards are graded (not all 0/1): pass metrics need a '
            "threshold, e.g. <code>job.summary(threshold=0.5)</code>.</div>"
        )
    if s.note:  # the source's own rule, e.g. which policy reproduces Harbor's result.json
        note += f'<div class="enb-note">{html.escape(s.note)}</div>'
    return (
        f'{CARD_CSS}<div class="enb-summary" data-job="{html.escape(s.job_id)}">{head}'
        f'<div class="enb-cards">{"".join(cards)}</div>{coverage_line}{note}</div>'
    )
