"""An attempt's steps as a transcript people can read (pure: step rows in, HTML out).

Roles are distinct blocks; a tool call is a card with its tool, its arguments
pretty-printed and the result that answered it (matched by ``call_id``, or without ids
by order within the model turn), errors in red, duration and tokens; reasoning is
folded; long text folds behind "show more"; sub-agent rows sit indented under the step
that delegated to them; copied context is greyed. Beside it: the attempt's reward,
status, judge summary, scorers and error.

A long transcript is cut into pages (``page_size`` steps each): the first page is in
the document, the others in inert ``<template>`` elements the browser parses but does
not lay out, so a 10,000-step attempt opens as quickly as a short one. A small inline
script (:data:`PAGED_JS`, no network) switches pages, searches every page (matches are
highlighted and stepped through), jumps to the first error and makes the timeline strip
clickable; without scripts the first page still reads. Every text is escaped.

``compact=True`` is the static variant a standalone report holds: no script, no pages,
no search; the given rows (say an attempt's first and last steps) as blocks with a
marker where steps were left out, each text cut at ``max_chars`` characters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cases_html import scorers_html
from .display import format_number
from .paged_view import (
    FOLD_CHARS,
    FOLD_LINES,
    MAX_MARKS,
    PAGED_CSS,
    as_records,
    fold_text,
    paged_html,
    timeline_html,
)
from .paged_view import esc as _esc
from .paged_view import missing_as_none as _v
from .step_parts import arguments_html, is_error_step, pretty_arguments, step_meta

__all__ = [
    "COMPACT_CHARS",
    "TRANSCRIPT_CSS",
    "Transcript",
    "arguments_html",
    "compact_step_html",
    "is_error_step",
    "pretty_arguments",
    "step_meta",
    "transcript_html",
]

TRANSCRIPT_CSS = """
<style>
.enb-step{margin:4px 0;padding:4px 8px;border-left:3px solid var(--enb-system);
  background:color-mix(in srgb,var(--jp-layout-color2,#8881) 70%,transparent);border-radius:0 5px 5px 0}
.enb-step-head{display:flex;flex-wrap:wrap;gap:2px 8px;align-items:baseline;font-size:11px;
  color:var(--jp-ui-font-color2,#888);margin-bottom:2px}
.enb-step-head .enb-role{font-weight:700;color:var(--jp-ui-font-color1,inherit);text-transform:uppercase;
  letter-spacing:.03em;font-size:10.5px}
.enb-step-head a.enb-num{color:inherit;text-decoration:none;font-variant-numeric:tabular-nums;min-width:34px}
.enb-step-head .enb-meta{margin-left:auto;font-variant-numeric:tabular-nums}
.enb-step.enb-r-user{border-left-color:var(--enb-user)}
.enb-step.enb-r-system{border-left-color:var(--enb-system)}
.enb-step.enb-r-assistant{border-left-color:var(--enb-assistant)}
.enb-step.enb-r-tool{border-left-color:var(--enb-tool)}
.enb-step.enb-r-environment{border-left-color:var(--enb-env)}
.enb-step.enb-k-reasoning{border-left-color:var(--enb-reason)}
.enb-step.enb-k-tool_call{border-left-color:var(--enb-tool)}
.enb-step.enb-e{border-left-color:var(--enb-err)}
.enb-step.enb-copied{opacity:.5}
.enb-step.enb-copied .enb-role::after{content:" · copied context";font-weight:400;text-transform:none}
.enb-step .enb-agent{color:var(--enb-env);font-weight:600}
.enb-tr .enb-card{border:1px solid var(--jp-border-color2,#8885);border-radius:5px;overflow:hidden;
  background:var(--jp-layout-color1,transparent);padding:0;max-width:none;flex:none;min-width:0}
.enb-card-head{padding:2px 8px;border-bottom:1px solid var(--jp-border-color2,#8884);display:flex;gap:8px;align-items:baseline}
.enb-compact-tool .enb-tool,.enb-card-head .enb-tool{font-family:var(--jp-code-font-family,ui-monospace,monospace);font-weight:700;font-size:12px}
.enb-card-grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr))}
.enb-card-grid>div{padding:4px 8px;min-width:0}
.enb-card-grid>div+div{border-left:1px solid var(--jp-border-color2,#8884)}
.enb-step .enb-label{font-size:10.5px;color:var(--jp-ui-font-color2,#888);margin:2px 0}
.enb-result.enb-e{background:color-mix(in srgb,var(--enb-err) 9%,transparent)}
.enb-result.enb-e .enb-label,.enb-step.enb-k-error .enb-role{color:var(--enb-err);font-weight:700}
.enb-result.enb-e pre,.enb-step.enb-k-error pre,.enb-step.enb-k-tool_result.enb-e pre{color:var(--enb-err)}
.enb-side-big{font-size:24px;font-weight:600;font-variant-numeric:tabular-nums;line-height:1.2}
.enb-side-kv{border-collapse:collapse;margin-top:4px}
.enb-side-kv th{text-align:left;font-weight:400;color:var(--jp-ui-font-color2,#888);padding:0 10px 0 0;white-space:nowrap;vertical-align:top}
.enb-side-kv td{font-variant-numeric:tabular-nums;padding:0}
.enb-side-error pre{color:var(--enb-err)}
.enb-st-failed,.enb-st-cancelled{color:var(--enb-err)}
.enb-st-completed{color:var(--enb-assistant)}
.enb-tr.enb-tr-compact{display:block;margin:10px 0 14px 0}
.enb-tr-compact h4{font-size:12.5px;margin:0 0 4px 0}
.enb-tr-compact .enb-gap{margin:4px 0 4px 8px;font-size:11px;color:var(--jp-ui-font-color2,#888);font-style:italic}
</style>
"""
#: Characters of a step's content or arguments a compact transcript shows.
COMPACT_CHARS = 600


def _results_of_calls(rows: Sequence[Mapping[str, Any]]) -> dict[int, list[int]]:
    """Call step → the steps of the results answering it: by ``call_id``, else (results
    without an id) the turn's calls not yet answered, in order."""
    by_id: dict[str, int] = {}
    answered: dict[int, list[int]] = {}
    open_in_turn: dict[Any, list[int]] = {}
    for r in rows:
        step, kind = int(r["step"]), r.get("kind")
        turn = _v(r.get("turn"))
        key = (turn, _v(r.get("agent")))
        if kind == "tool_call":
            cid = _v(r.get("call_id"))
            if cid is not None:
                by_id.setdefault(str(cid), step)
            if turn is not None:
                open_in_turn.setdefault(key, []).append(step)
        elif kind == "tool_result":
            cid = _v(r.get("call_id"))
            call = by_id.get(str(cid)) if cid is not None else None
            if call is None and cid is None and turn is not None and open_in_turn.get(key):
                call = open_in_turn[key][0]
            if call is not None:
                answered.setdefault(call, []).append(step)
                pending = open_in_turn.get(key, [])
                if call in pending:
                    pending.remove(call)
    return answered


def _depths(rows: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """How deep each step sits under sub-agents (0: the attempt's own agent)."""
    by_step = {int(r["step"]): r for r in rows}
    depth: dict[int, int] = {}
    for r in rows:
        n = int(r["step"])
        if _v(r.get("agent")) is None:
            depth[n] = 0
            continue
        parent = _v(r.get("parent_step"))
        up = depth.get(int(parent), 0) if parent is not None and int(parent) in by_step else 0
        depth[n] = min(up + 1, 6)
    return depth


_KIND_LABEL = {
    "message": "", "reasoning": "reasoning", "tool_call": "tool call", "tool_result": "tool result",
    "error": "error", "context_summary": "context summary", "subagent": "sub-agent",
}  # fmt: skip


def _head(row: Mapping[str, Any], uid: str | None, extra: str = "") -> str:
    """A step's head line; its number links to itself when ``uid`` names the view."""
    n = int(row["step"])
    role = _esc(row.get("role") or "?")
    kind = _KIND_LABEL.get(str(row.get("kind")), _esc(row.get("kind")))
    agent = _v(row.get("agent"))
    number = (
        f'<a class="enb-num" href="#{uid}-s{n}" data-go="{n}">#{n:,}</a>'
        if uid
        else f'<span class="enb-num">#{n:,}</span>'
    )
    parts = [number, f'<span class="enb-role">{role}</span>']
    if kind:
        parts.append(f"<span>{_esc(kind)}</span>")
    if agent is not None:
        parts.append(f'<span class="enb-agent">⤷ {_esc(agent)}</span>')
    model = _v(row.get("model"))
    if model is not None:
        parts.append(f'<span class="enb-dim">{_esc(model)}</span>')
    parts.append(extra)
    meta = step_meta(row)
    if meta:
        parts.append(f'<span class="enb-meta">{_esc(meta)}</span>')
    return f'<div class="enb-step-head">{"".join(parts)}</div>'


def _card(
    call: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    uid: str,
    cut: bool = False,
) -> str:
    cid = _v(call.get("call_id"))
    chars, lines = (300, 6) if cut else (FOLD_CHARS, FOLD_LINES)
    head = (
        f'<div class="enb-card-head"><span class="enb-tool">{_esc(call.get("tool") or "?")}</span>'
        + (f'<span class="enb-dim">{_esc(cid)}</span>' if cid is not None else "")
        + "</div>"
    )
    arg_html = arguments_html(call.get("arguments"), chars=chars, lines=lines)
    body = (
        ""
        if _v(call.get("content")) is None
        else fold_text(str(call["content"]), chars=chars, lines=lines)
    )
    cells = [f'<div class="enb-args">{arg_html}{body}</div>']
    if not results:
        missing = "no result among the steps shown" if cut else "no result recorded"
        cells.append(f'<div class="enb-result"><div class="enb-label">{missing}</div></div>')
    for res in results:
        n = int(res["step"])
        err = is_error_step(res)
        meta = step_meta(res)
        label = f"result · #{n:,}" + (" · error" if err else "") + (f" · {meta}" if meta else "")
        cells.append(
            f'<div class="enb-result{" enb-e" if err else ""}" id="{uid}-s{n}" data-step="{n}">'
            f'<div class="enb-label">{_esc(label)}</div>'
            f"{fold_text(None if _v(res.get('content')) is None else str(res['content']), chars=chars, lines=lines)}</div>"
        )
    return f'<div class="enb-card">{head}<div class="enb-card-grid">{"".join(cells)}</div></div>'


def _block(
    row: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    depth: int,
    uid: str,
    cut: bool = False,
) -> str:
    """One step's block; ``cut``: a compact transcript's (texts fold early, and a call or
    result whose partner is not shown says so)."""
    n, kind = int(row["step"]), str(row.get("kind"))
    err = is_error_step(row) or any(is_error_step(r) for r in results)
    cls = ["enb-step", "enb-block", f"enb-k-{_esc(kind)}", f"enb-r-{_esc(row.get('role'))}"]
    if err:
        cls.append("enb-e")
    if bool(_v(row.get("copied"))):
        cls.append("enb-copied")
    content = _v(row.get("content"))
    text = None if content is None else str(content)
    if kind == "tool_call":
        body = _card(row, results, uid, cut)
    elif kind in ("reasoning", "context_summary"):
        size = f" · {len(text):,} characters" if text is not None else ""
        what = "reasoning" if kind == "reasoning" else "context summary"
        body = (
            f'<details class="enb-fold"><summary>▸ {what}{size}</summary>'
            f"{fold_text(text, chars=4 * FOLD_CHARS, lines=4 * FOLD_LINES)}</details>"
        )
    elif kind == "tool_result":  # a result no call of the attempt answers to
        tool = _v(row.get("tool"))
        orphan = "its call is not among the steps shown" if cut else "no matching call"
        body = (f'<div class="enb-dim">{_esc(tool)} · {orphan}</div>' if tool else "") + (
            fold_text(text, chars=300 if cut else FOLD_CHARS, lines=6 if cut else FOLD_LINES)
        )
    else:
        fold = (300, 6) if cut else (FOLD_CHARS, FOLD_LINES)
        body = (
            fold_text(text, chars=fold[0], lines=fold[1])
            if text is not None or kind != "subagent"
            else ""
        )
        if kind == "subagent" and _v(row.get("tool")) is not None:
            body = f'<div class="enb-dim">{_esc(row["tool"])}</div>' + body
    style = f' style="margin-left:{18 * depth}px"' if depth else ""
    return (
        f'<div class="{" ".join(cls)}" id="{uid}-s{n}" data-step="{n}"{style}>'
        f"{_head(row, uid)}{body}</div>"
    )


def compact_step_html(row: Mapping[str, Any]) -> str:
    """One step in a few lines (the side-by-side view's cell): its head, then a tool
    call's tool and arguments or the step's text, folded early. Escaped.

    Examples
    --------
    >>> out = compact_step_html({"step": 4, "role": "assistant", "kind": "tool_call",
    ...                          "tool": "sql", "arguments": {"q": "<b>x</b>"}})
    >>> "#4" in out and "&lt;b&gt;x&lt;/b&gt;" in out
    True
    """
    kind = str(row.get("kind"))
    cls = ["enb-step", f"enb-k-{_esc(kind)}", f"enb-r-{_esc(row.get('role'))}"]
    if is_error_step(row):
        cls.append("enb-e")
    if bool(_v(row.get("copied"))):
        cls.append("enb-copied")
    content = _v(row.get("content"))
    text = None if content is None else str(content)
    if kind == "tool_call":
        tool = _esc(row.get("tool") or "?")
        body = f'<div class="enb-compact-tool"><span class="enb-tool">{tool}</span></div>'
        body += arguments_html(row.get("arguments"), chars=300, lines=6)
    elif kind == "reasoning":
        body = (
            f'<details class="enb-fold"><summary>▸ reasoning · {len(text or ""):,} characters'
            f"</summary>{fold_text(text, chars=300, lines=6)}</details>"
        )
    else:
        body = fold_text(text, chars=300, lines=6)
    return f'<div class="{" ".join(cls)}">{_head(row, None)}{body}</div>'


def _timeline(rows: Sequence[Mapping[str, Any]], uid: str) -> str:
    per = max(1, -(-len(rows) // MAX_MARKS))
    marks = []
    for i in range(0, len(rows), per):
        run = rows[i : i + per]
        errs = [r for r in run if is_error_step(r)]
        lead = errs[0] if errs else next((r for r in run if r.get("kind") == "tool_call"), run[0])
        first, last = int(run[0]["step"]), int(run[-1]["step"])
        what = _KIND_LABEL.get(str(lead.get("kind"))) or f"{lead.get('role')} message"
        tool = _v(lead.get("tool"))
        title = (f"#{first:,}" if first == last else f"#{first:,}–{last:,}") + f" {what}"
        title += f" {tool}" if tool else ""
        title += f" · {len(errs)} error{'s' if len(errs) > 1 else ''}" if errs else ""
        cls = f"enb-k-{_esc(lead.get('kind'))} enb-r-{_esc(lead.get('role'))}"
        marks.append((first, last, cls + (" enb-e" if errs else ""), title))
    return timeline_html(marks, uid)


def _side(attempt: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    g = attempt.get
    reward = _v(g("reward"))
    status = str(g("status") or "-")
    calls = sum(1 for r in rows if r.get("kind") == "tool_call")
    errors = sum(1 for r in rows if is_error_step(r))
    tokens = [
        sum(int(r[k]) for r in rows if _v(r.get(k)) is not None)
        for k in ("tokens_in", "tokens_out")
    ]
    has_tokens = any(_v(r.get("tokens_in")) is not None for r in rows)
    kv = [
        ("status", f'<span class="enb-st-{_esc(status)}">{_esc(status)}</span>'),
        ("steps", f"{len(rows):,}"),
        ("tool calls", f"{calls:,}"),
        ("errors", f"{errors:,}"),
    ]
    if has_tokens:
        kv.append(("tokens in / out", f"{tokens[0]:,} / {tokens[1]:,}"))
    for key, label in (("turns", "turns"), ("duration_s", "duration (s)"), ("model", "model")):
        if _v(g(key)) is not None:
            value = g(key)
            kv.append((label, _esc(format_number(value) if isinstance(value, float) else value)))
    table = "".join(f"<tr><th>{_esc(k)}</th><td>{v}</td></tr>" for k, v in kv)
    big = format_number(reward)
    parts = [  # an experiment's case has no reward (its evaluators' scores are beside it)
        f'<div class="enb-dim">reward</div><div class="enb-side-big">{_esc(big)}</div>'
        if "reward" in attempt or "label" not in attempt
        else "",
        f'<table class="enb-side-kv">{table}</table>',
    ]
    extra = g("extra") if isinstance(g("extra"), dict) else {}
    judge = _v(g("judge_summary"))
    if judge is not None:
        parts.append(f"<h5>judge summary</h5>{fold_text(str(judge), lines=30, chars=2000)}")
    scores = scorers_html(extra.get("scores") if isinstance(extra, dict) else None)
    if scores:
        parts.append(scores)
    err = _v(g("error"))
    if err is not None:
        parts.append(f'<div class="enb-side-error"><h5>error</h5>{fold_text(str(err))}</div>')
    return "".join(parts)


def _uid(*parts: Any) -> str:
    return "enb-" + hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Transcript:
    """An attempt's transcript, ready to show: a notebook renders it (``_repr_html_``).

    ``html`` is the whole self-contained fragment (styles, steps, the inline script);
    ``pages`` how many pages it holds, ``first_error`` the first step that is an error
    or an erroring result (``None``: none).
    """

    task: str
    attempt: int
    steps: int
    pages: int
    first_error: int | None
    html: str

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        err = f" · first error at step {self.first_error}" if self.first_error else ""
        return (
            f"<Transcript task {self.task!r} · attempt {self.attempt} · {self.steps:,} steps"
            f" · {self.pages} page{'s' if self.pages != 1 else ''}{err}>"
        )


def _cut(row: Mapping[str, Any], chars: int) -> dict[str, Any]:
    """A row with its content and arguments cut at ``chars`` characters and a note of
    what was left out (``content_chars`` / ``arguments_chars``, when given, are the
    texts' whole lengths: a query may have cut them already)."""
    out = dict(row)
    for key in ("content", "arguments"):
        value = _v(out.get(key))
        if value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        whole = _v(out.get(f"{key}_chars"))
        length = max(len(text), int(whole) if whole is not None else 0)
        if length > chars:
            out[key] = f"{text[:chars]}\n… {length - chars:,} more characters not shown"
    return out


def _compact(
    records: Sequence[Mapping[str, Any]],
    info: Mapping[str, Any],
    task: str,
    number: int,
    total: int,
    chars: int,
    styles: bool,
) -> Transcript:
    """The static compact transcript (see :func:`transcript_html`)."""
    records = [_cut(r, chars) for r in records]
    uid = _uid("compact", task, number, total)
    answered = _results_of_calls(records)
    attached = {s for steps in answered.values() for s in steps}
    by_step = {int(r["step"]): r for r in records}
    depth = _depths(records)
    cut = len(records) < total
    parts: list[str] = []
    seen = 0

    def gap(first: int, last: int) -> str:
        n = last - first + 1
        span = f"#{first:,}" if n == 1 else f"#{first:,}–#{last:,}"
        return (
            f'<div class="enb-gap">… {n:,} step{"s" if n != 1 else ""} not shown ({span}) …</div>'
        )

    for r in records:
        n = int(r["step"])
        if n > seen + 1:
            parts.append(gap(seen + 1, n - 1))
        seen = max(seen, n)
        if n in attached:
            continue
        results = [by_step[s] for s in answered.get(n, [])]
        seen = max([seen, *(int(x["step"]) for x in results)])
        parts.append(_block(r, results, depth.get(n, 0), uid, cut))
    if total > seen:
        parts.append(gap(seen + 1, total))
    reward = _v(info.get("reward"))
    status = _v(info.get("status"))
    first_error = next((int(r["step"]) for r in records if is_error_step(r)), None)
    facts = [
        f"reward {format_number(reward)}",
        *([str(status)] if status is not None else []),
        f"{total:,} step{'s' if total != 1 else ''}" + (f", {len(records):,} shown" if cut else ""),
        *([f"first error shown at #{first_error:,}"] if first_error is not None else []),
    ]
    head = f"<h4>task {_esc(task)} · attempt {number} · {_esc(' · '.join(facts))}</h4>"
    body = "".join(parts) or '<div class="enb-dim">This attempt has no steps.</div>'
    css = PAGED_CSS + TRANSCRIPT_CSS if styles else ""
    out = f'{css}<div class="enb-tr enb-tr-compact" id="{uid}">{head}{body}</div>'
    return Transcript(task, number, total, 1 if records else 0, first_error, out)


def transcript_html(
    rows: Any,
    attempt: Mapping[str, Any] | None = None,
    *,
    page_size: int = 200,
    uid: str | None = None,
    compact: bool = False,
    total_steps: int | None = None,
    max_chars: int = COMPACT_CHARS,
    styles: bool = True,
) -> Transcript:
    """An attempt's steps as a readable transcript (see the module docstring).

    ``rows`` are the attempt's step rows in order (a pandas or polars frame of
    ``job.steps(task, attempt)``, or mappings with its columns); ``attempt`` is the
    attempt's row (``task``, ``attempt``, ``status``, ``reward``, ``judge_summary``,
    ``error``, ``extra`` with its ``scores`` …) shown beside the steps; its ``label``, when
    given, heads the transcript instead of "task … · attempt …" (an experiment's case).

    ``compact=True``: a static, bounded fragment for a standalone report (no script,
    pages or search). ``rows`` may be some of the attempt's steps (its first and last,
    say) and ``total_steps`` how many it has: where steps are left out a marker says
    which; each content and arguments text is cut at ``max_chars`` characters (columns
    ``content_chars`` / ``arguments_chars`` give the whole lengths when the rows hold
    cut text already). ``styles=False`` leaves out the CSS (a page that holds several
    transcripts includes :data:`PAGED_CSS` and :data:`TRANSCRIPT_CSS` once).

    Examples
    --------
    >>> rows = [
    ...     {"step": 1, "turn": 1, "role": "user", "kind": "message", "content": "<script>x</script>"},
    ...     {"step": 2, "turn": 2, "role": "assistant", "kind": "tool_call", "tool": "bash",
    ...      "call_id": "c1", "arguments": '{"cmd": "ls"}'},
    ...     {"step": 3, "turn": 2, "role": "tool", "kind": "tool_result", "tool": "bash",
    ...      "call_id": "c1", "content": "boom", "is_error": True},
    ... ]
    >>> t = transcript_html(rows, {"task": "A", "attempt": 1, "reward": 0.0})
    >>> t
    <Transcript task 'A' · attempt 1 · 3 steps · 1 page · first error at step 3>
    >>> "&lt;script&gt;x" in t.html and "<script>x" not in t.html
    True
    """
    records = sorted(as_records(rows), key=lambda r: int(r["step"]))
    info = dict(attempt or {})
    task = str(info.get("task", records[0].get("task") if records else "?"))
    number = int(info.get("attempt") or (records[0].get("attempt") if records else 0) or 0)
    if compact:
        total = max(total_steps or 0, max((int(r["step"]) for r in records), default=0))
        return _compact(records, info, task, number, total, max_chars, styles)
    uid = uid or _uid(task, number, len(records))
    answered = _results_of_calls(records)
    attached = {s for steps in answered.values() for s in steps}
    by_step = {int(r["step"]): r for r in records}
    depth = _depths(records)
    blocks = []
    for r in records:
        n = int(r["step"])
        if n in attached:
            continue
        results = [by_step[s] for s in answered.get(n, [])]
        blocks.append(((n, *answered.get(n, [])), _block(r, results, depth.get(n, 0), uid)))
    first_error = next((int(r["step"]) for r in records if is_error_step(r)), None)
    jump = (
        f'<a class="enb-go" href="#{uid}-s{first_error}" data-go="{first_error}">'
        f"⚠ jump to first error (#{first_error:,})</a>"
        if first_error is not None
        else '<span class="enb-dim">no errors</span>'
    )
    subject = info.get("label") or f"task {task} · attempt {number}"
    head = f"<h4>{_esc(subject)} · {len(records):,} step{'s' if len(records) != 1 else ''}</h4>"
    if not records:
        body = '<div class="enb-dim">This attempt has no steps: its source recorded none.</div>'
        out = (
            f'{PAGED_CSS}{TRANSCRIPT_CSS}<div class="enb-tr"><div class="enb-tr-main">{head}{body}'
            f'</div><aside class="enb-tr-side">{_side(info, records)}</aside></div>'
        )
        return Transcript(task, number, 0, 0, None, out)
    out = paged_html(
        blocks,
        uid=uid,
        title=head,
        toolbar_extra=jump,
        above=_timeline(records, uid),
        side=_side(info, records),
        page_size=page_size,
    )
    pages = out.count('<template class="enb-tr-page">')
    return Transcript(
        task, number, len(records), pages, first_error, PAGED_CSS + TRANSCRIPT_CSS + out
    )
