"""HTML of an experiment: progress, composite and evaluator cards, the case list, a case's
detail with its evaluator cards, and the correction history. Pure functions of plain
values (``ExperimentSummary.to_dict()``, frame rows as dicts); everything escaped.

Scores show on their own scale (0-100) rounded half up; ``-`` where nothing counted —
never 0. Every mean carries its ``counted/total`` beside it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .cards import CARD_CSS
from .cases_html import CASES_CSS, chat_html, chat_snippet, is_missing
from .display import format_score

__all__ = [
    "EXPERIMENT_CSS",
    "case_detail_html",
    "case_list_html",
    "evaluator_cards_html",
    "history_html",
    "progress_html",
    "summary_card_html",
]

EXPERIMENT_CSS = """
<style>
.enb-progress{display:flex;height:8px;border-radius:4px;overflow:hidden;min-width:260px;max-width:520px;
  background:var(--jp-layout-color3,#e0e0e0);margin:4px 0}
.enb-progress .ok{background:var(--jp-success-color1,#4c9f70)}
.enb-progress .fail{background:var(--jp-error-color1,#c62828)}
.enb-progress .wait{background:var(--jp-warn-color2,#f0c36d)}
.enb-legend{font-size:12px;color:var(--jp-ui-font-color2,#555);font-family:var(--jp-ui-font-family,system-ui,sans-serif)}
.enb-legend b{color:var(--jp-ui-font-color1,#222)}
.enb-legend .dot{display:inline-block;width:8px;height:8px;border-radius:50%;margin:0 3px 0 8px}
.enb-badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;line-height:16px;
  background:var(--jp-layout-color2,#eee);color:var(--jp-ui-font-color1,#222)}
.enb-badge.succeeded{background:#e3f1e8;color:#1e6b3a}
.enb-badge.failed{background:#fde8e8;color:#a61b1b}
.enb-badge.pending,.enb-badge.running{background:#fdf3dc;color:#8a5a00}
.enb-badge.missing{background:#eee;color:#666}
.enb-badge.corrected{background:#e6effb;color:#1d4f91}
.enb-evcard{border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:6px 10px;margin:6px 0;
  background:var(--jp-layout-color1,#fff)}
.enb-evcard .enb-evhead{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.enb-evcard .enb-evname{font-weight:600}
.enb-evcard .enb-evscore{font-size:18px;font-weight:600;font-variant-numeric:tabular-nums}
.enb-evcard .enb-machine{color:var(--jp-ui-font-color2,#666);text-decoration:line-through}
.enb-evcard .enb-why{margin:4px 0;white-space:pre-wrap}
.enb-evcard .enb-fail{color:var(--jp-error-color1,#c62828);margin:4px 0}
.enb-points{border-collapse:collapse;margin-top:3px}
.enb-points td,.enb-points th{padding:1px 8px 1px 0;text-align:left;vertical-align:top;font-size:11px}
</style>
"""


def _num(value: Any) -> float | None:
    """A score cell as a float, or None when missing."""
    return None if is_missing(value) else float(value)


def _digits(summary: Mapping[str, Any]) -> int:
    return 1 if float(summary.get("scale_max") or 100) > 1 else 3


def _when(value: Any) -> str:
    """A time as ``2026-11-20 10:00 UTC`` (text as it is)."""
    if hasattr(value, "strftime") and not is_missing(value):
        return str(value.strftime("%Y-%m-%d %H:%M UTC"))
    return "" if is_missing(value) else str(value)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _pct(part: int, whole: int) -> float:
    return 0.0 if whole == 0 else 100.0 * part / whole


def progress_html(progress: Mapping[str, int]) -> str:
    """A stacked bar of completed / failed / pending result rows with their counts.

    Examples
    --------
    >>> out = progress_html({"completed": 5, "failed": 0, "pending": 1, "missing": 0, "total": 6})
    >>> "<b>5</b> completed" in out and "<b>1</b> pending" in out
    True
    """
    total = int(progress.get("total", 0))
    done, failed = int(progress.get("completed", 0)), int(progress.get("failed", 0))
    pending, missing = int(progress.get("pending", 0)), int(progress.get("missing", 0))
    bar = (
        f'<div class="enb-progress" title="{done} completed, {failed} failed, {pending} pending">'
        f'<div class="ok" style="width:{_pct(done, total):.2f}%"></div>'
        f'<div class="fail" style="width:{_pct(failed, total):.2f}%"></div>'
        f'<div class="wait" style="width:{_pct(pending, total):.2f}%"></div></div>'
    )
    legend = (
        f'<div class="enb-legend">{total:,} result rows (case × evaluator):'
        f'<span class="dot" style="background:#4c9f70"></span><b>{done:,}</b> completed'
        f'<span class="dot" style="background:#c62828"></span><b>{failed:,}</b> failed'
        f'<span class="dot" style="background:#f0c36d"></span><b>{pending:,}</b> pending'
        + (f" · <b>{missing:,}</b> never judged" if missing else "")
        + "</div>"
    )
    return EXPERIMENT_CSS + bar + legend


def summary_card_html(
    summary: Mapping[str, Any], evaluators: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The experiment's headline: progress, the composite with ``counted/total``, one
    card per evaluator (``ExperimentSummary.to_dict()`` and evaluator rows).

    Examples
    --------
    >>> s = {"experiment_id": "e", "name": "n", "agent": "a", "composite": 76.25, "counted": 4,
    ...      "total": 6, "completed": 5, "failed": 0, "pending": 1, "missing": 0, "cases": 3,
    ...      "evaluators": ["x"], "live_corrections": 1}
    >>> out = summary_card_html(s, [{"evaluator": "x", "mean": None, "counted": 0, "total": 3}])
    >>> "76.3" in out and "4/6 rows counted" in out and ">-<" in out
    True
    """
    head = (
        f'<div class="enb-head"><b>{_e(summary.get("name"))}</b> · agent {_e(summary.get("agent") or "-")}'
        f" · {summary.get('cases', 0):,} cases × {len(summary.get('evaluators') or ())} evaluators"
        + (
            f" · {summary['live_corrections']} manual correction(s) in force"
            if summary.get("live_corrections")
            else ""
        )
        + "</div>"
    )
    prog = progress_html(summary)
    counted, total = int(summary.get("counted", 0)), int(summary.get("total", 0))
    cards = [
        f'<div class="enb-card enb-main"><div class="enb-label">composite mean</div>'
        f'<div class="enb-value">{_e(format_score(summary.get("composite"), _digits(summary)))}</div>'
        f'<div class="enb-sub">{counted:,}/{total:,} rows counted</div></div>'
    ]
    cards += [_evaluator_card(ev) for ev in evaluators]
    note = ""
    if summary.get("mixed_scales"):
        note += (
            '<div class="enb-coverage enb-warn">the evaluators score on different scales: the '
            "composite mixes them — read the evaluators one by one</div>"
        )
    if counted < total:
        note += (
            f'<div class="enb-coverage enb-warn">{total - counted:,} of {total:,} rows are not in the '
            "means (failed, pending, or succeeded without a number): they are not counted as 0</div>"
        )
    return (
        CARD_CSS
        + f'<div class="enb-summary">{head}{prog}<div class="enb-cards">{"".join(cards)}</div>'
        f"{note}</div>"
    )


def _evaluator_card(ev: Mapping[str, Any]) -> str:
    mean = _num(ev.get("mean"))
    sub = f"{int(ev.get('counted', 0)):,}/{int(ev.get('total', 0)):,} counted"
    extra = []
    for key, label in (
        ("failed", "failed"),
        ("pending", "pending"),
        ("succeeded_without_score", "no number"),
    ):
        n = ev.get(key)
        if n and not is_missing(n):
            extra.append(f"{int(n)} {label}")
    ref = " · needs reference" if ev.get("needs_reference") else ""
    tail = f'<div class="enb-sub">{_e(" · ".join(extra))}{_e(ref)}</div>' if extra or ref else ""
    return (
        f'<div class="enb-card"><div class="enb-label">{_e(ev.get("evaluator"))}</div>'
        f'<div class="enb-value">{_e(format_score(mean, _digits(ev)))}</div><div class="enb-sub">{_e(sub)}</div>{tail}</div>'
    )


def evaluator_cards_html(evaluators: Sequence[Mapping[str, Any]]) -> str:
    """One card per evaluator: mean with ``counted/total`` and what is not counted."""
    return (
        CARD_CSS + f'<div class="enb-cards">{"".join(_evaluator_card(e) for e in evaluators)}</div>'
    )


def _badge(status: Any, corrected: bool = False, scored: bool = True) -> str:
    st = "missing" if is_missing(status) else str(status)
    label = "no number" if st == "succeeded" and not scored else st
    out = f'<span class="enb-badge {_e(st)}" title="{_e(st)}">{_e(label)}</span>'
    if corrected:
        out += ' <span class="enb-badge corrected">corrected</span>'
    return out


def case_list_html(
    rows: Sequence[Mapping[str, Any]],
    evaluators: Sequence[str],
    *,
    selected: str | None = None,
    digits: int = 1,
) -> str:
    """The case list: trace, input (one line), composite with ``counted/total``, each
    evaluator's effective score and status. Rows carry ``data-row`` (their index) and
    ``data-trace``.

    Examples
    --------
    >>> out = case_list_html([{"trace_id": "t<1>", "input": "q", "composite": None, "counted": 0,
    ...     "total": 1, "x": None, "x status": "failed"}], ["x"])
    >>> "t&lt;1&gt;" in out and "failed" in out and ">-<" in out
    True
    """
    head = "".join(f'<th class="num">{_e(n)}</th>' for n in evaluators)
    body = []
    for i, r in enumerate(rows):
        tid = str(r.get("trace_id"))
        text = r.get("input")
        snippet = (
            ""
            if is_missing(text)
            else (
                chat_snippet(str(text)) if r.get("input_is_chat") else " ".join(str(text).split())
            )
        )
        cells = []
        for n in evaluators:
            score = r.get(n)
            corrected = bool(r.get(f"{n} corrected"))
            cells.append(
                f'<td class="num">{_e(format_score(_num(score), digits))} '
                f"{_badge(r.get(f'{n} status'), corrected, _num(score) is not None)}</td>"
            )
        comp = r.get("composite")
        sel = ' class="enb-selected"' if selected == tid else ""
        body.append(
            f'<tr data-row="{i}" data-trace="{_e(tid)}"{sel}><td>{_e(tid)}</td><td title="{_e(snippet)}">{_e(snippet[:80])}</td>'
            f'<td class="num">{_e(format_score(_num(comp), digits))}</td>'
            f'<td class="num">{int(r.get("counted") or 0)}/{int(r.get("total") or 0)}</td>'
            f"{''.join(cells)}<td>{_e(r.get('added_by') or '')}</td></tr>"
        )
    if not body:
        body.append(
            f'<tr><td colspan="{5 + len(evaluators)}" class="enb-dim">no case matches</td></tr>'
        )
    return (
        CASES_CSS
        + EXPERIMENT_CSS
        + '<div class="enb-cases"><table><thead><tr><th>trace</th><th>input</th>'
        f'<th class="num">composite</th><th class="num">counted</th>{head}<th>added by</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _points(points: Any) -> str:
    if isinstance(points, str):
        try:
            points = json.loads(points)
        except ValueError:
            return ""
    if not isinstance(points, list) or not points:
        return ""
    rows = "".join(
        f"<tr><td>{_e(p.get('name'))}</td><td class='num'>{_e(p.get('score'))}</td>"
        f"<td>{_e(p.get('evidence'))}</td></tr>"
        for p in points
        if isinstance(p, Mapping)
    )
    return f'<table class="enb-points"><tr><th>point</th><th>score</th><th>evidence</th></tr>{rows}</table>'


def _result_card(r: Mapping[str, Any], digits: int = 1) -> str:
    status = r.get("status")
    score = None if is_missing(r.get("score")) else float(r["score"])
    machine = None if is_missing(r.get("machine_score")) else float(r["machine_score"])
    corrected = not is_missing(r.get("corrected_score"))
    shown = f'<span class="enb-evscore">{_e(format_score(score, digits))}</span>'
    if corrected:
        shown += f' <span class="enb-machine" title="machine score">{_e(format_score(machine, digits))}</span>'
    run = "" if is_missing(r.get("run")) else f"run {int(r['run'])}"
    body = ""
    if status == "failed":
        body += f'<div class="enb-fail">evaluation failed: {_e(r.get("error") or "no reason given")} (not a 0)</div>'
    if not is_missing(r.get("reason")):
        body += f'<div class="enb-why">{_e(r.get("reason"))}</div>'
    if status == "succeeded" and score is None:
        body += '<div class="enb-dim">succeeded without a number: not counted</div>'
    body += _points(r.get("points"))
    return (
        f'<div class="enb-evcard"><div class="enb-evhead"><span class="enb-evname">{_e(r.get("evaluator"))}</span>'
        f"{shown}{_badge(status, corrected, score is not None)}<span class='enb-dim'>{_e(run)}</span></div>{body}</div>"
    )


def case_detail_html(
    case: Mapping[str, Any], results: Sequence[Mapping[str, Any]], *, digits: int = 1
) -> str:
    """A case in full: input as a conversation, reference, output, one card per evaluator
    (score — with the machine score struck through under a correction —, reason, points
    and evidence, or the failure reason).

    Examples
    --------
    >>> out = case_detail_html({"trace_id": "t", "input": "<q>", "output": "o", "reference": None},
    ...     [{"evaluator": "x", "status": "failed", "error": "judge down", "run": 1}])
    >>> "&lt;q&gt;" in out and "judge down" in out and "not a 0" in out
    True
    """
    ref = case.get("reference")
    ref_html = (
        '<span class="enb-dim">none</span>'
        if is_missing(ref)
        else f"<pre>{_e(ref)}</pre>"
        + (
            f'<div class="enb-dim">from {_e(case.get("reference_source"))}</div>'
            if case.get("reference_source") and not is_missing(case.get("reference_source"))
            else ""
        )
    )
    comp = case.get("composite")
    comp_text = format_score(_num(comp), digits)
    head = (
        f"<h4>{_e(case.get('trace_id'))} · composite {_e(comp_text)}"
        + (f" ({int(case['counted'])}/{int(case['total'])} counted)" if "counted" in case else "")
        + "</h4>"
    )
    out = case.get("output")
    return (
        CASES_CSS + EXPERIMENT_CSS + f'<div class="enb-detail">{head}<h5>input</h5>'
        f"{chat_html(None if is_missing(case.get('input')) else case.get('input'), bool(case.get('input_is_chat')))}"
        f"<h5>reference</h5>{ref_html}<h5>output</h5>"
        f"{chat_html(None if is_missing(out) else str(out))}<h5>evaluators</h5>"
        f"{''.join(_result_card(r, digits) for r in results)}</div>"
    )


def history_html(rows: Sequence[Mapping[str, Any]], *, digits: int = 1) -> str:
    """The correction history: who changed what when and why, and what became of it.

    Examples
    --------
    >>> out = history_html([{"trace_id": "t", "evaluator": "x", "run": 1, "machine_score": 40.0,
    ...     "score": 60.0, "reason": "fair", "by": "li", "at": "2026-11-20", "state": "live"}])
    >>> "40 → 60" in out and "live" in out
    True
    """
    if not rows:
        return CASES_CSS + '<div class="enb-cases enb-dim">no manual corrections</div>'
    body = []
    for r in rows:
        machine = _num(r.get("machine_score"))
        state = str(r.get("state"))
        what = {
            "undone": f"undone by {r.get('undone_by') or '?'} at {_when(r.get('undone_at'))}",
            "cleared": f"cleared by re-evaluation at {_when(r.get('cleared_at'))}",
            "replaced": "replaced by a later correction",
            "live": "in force",
        }.get(state, state)
        body.append(
            f"<tr><td>{_e(_when(r.get('at')))}</td><td>{_e(r.get('by'))}</td><td>{_e(r.get('trace_id'))}</td>"
            f"<td>{_e(r.get('evaluator'))}</td><td class='num'>{_e(r.get('run'))}</td>"
            f"<td class='num'>{_e(format_score(machine, digits))} → {_e(format_score(float(r['score']), digits))}</td>"
            f"<td title='{_e(r.get('reason'))}'>{_e(r.get('reason'))}</td><td>{_badge(state)} {_e(what)}</td></tr>"
        )
    return (
        CASES_CSS
        + EXPERIMENT_CSS
        + '<div class="enb-cases"><table><thead><tr><th>when</th><th>who</th>'
        '<th>trace</th><th>evaluator</th><th class="num">run</th><th class="num">score</th><th>reason</th>'
        f"<th>state</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
