"""HTML for metric cards: pure functions from results to markup."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._metrics import JobSummary

__all__ = ["CARD_CSS", "summary_card_html"]

CARD_CSS = """
<style>
.enb-cards{display:flex;flex-wrap:wrap;gap:8px;font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.enb-card{border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:6px 12px;min-width:92px;
  background:var(--jp-layout-color1,#fff);color:var(--jp-ui-font-color1,#222)}
.enb-card .enb-label{font-size:11px;color:var(--jp-ui-font-color2,#666);text-transform:none}
.enb-card .enb-value{font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
.enb-coverage{font-size:12px;color:var(--jp-ui-font-color2,#555);margin-top:4px;
  font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.enb-coverage.enb-warn{color:var(--jp-warn-color0,#b45309);font-weight:600}
</style>
"""


def summary_card_html(summary: JobSummary) -> str:
    """Metric cards with the real k and the coverage line beneath them.

    Examples
    --------
    >>> from envloop_nb._metrics import JobSummary
    >>> s = JobSummary("j", 2, 6, 5, 1, 0, 3, 2, 0.6, 0.6, 1.0, 0.5, True, "unknown", None)
    >>> "pass^2" in summary_card_html(s) and "5/6 attempts scored" in summary_card_html(s)
    True
    """
    cards = "".join(
        f'<div class="enb-card"><div class="enb-label">{html.escape(label)}</div>'
        f'<div class="enb-value">{html.escape(value)}</div></div>'
        for label, value in summary.metric_items()
    )
    warn = " enb-warn" if summary.missing else ""
    policy = f"policy: {summary.policy}"
    if summary.threshold is not None:
        policy += f" · pass = reward ≥ {summary.threshold:g}"
    return (
        f'{CARD_CSS}<div class="enb-summary" data-job="{html.escape(summary.job_id)}">'
        f'<div class="enb-cards">{cards}</div>'
        f'<div class="enb-coverage{warn}">{html.escape(summary.coverage_text)}'
        f" · {summary.missing:,} missing ({summary.invalid:,} invalid) · {html.escape(policy)}</div></div>"
    )
