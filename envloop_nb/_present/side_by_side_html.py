"""Two attempts of one task side by side, aligned step by step (pure: rows in, HTML out).

On top, each attempt's reward, status, step counts and its scorers' verdicts (judge
summary, scores, error); then the **first divergence** — the first row where the two
attempts' actions differ — named and one click away; then the aligned rows, two cells
a row (a gap where one attempt has no step facing the other's), rows whose actions
differ tinted, the divergence row outlined in red. The alignment itself is computed
below this floor (``envloop_nb._metrics.step_alignment``) and comes in as pairs of
positions. Paged and searchable like the transcript (:mod:`.paged_view`). Escaped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cases_html import scorers_html
from .display import format_number
from .paged_view import MAX_MARKS, PAGED_CSS, as_records, fold_text, paged_html, timeline_html
from .paged_view import esc as _esc
from .paged_view import missing_as_none as _v
from .transcript_html import TRANSCRIPT_CSS, compact_step_html, is_error_step, pretty_arguments

__all__ = ["SIDE_CSS", "SideBySide", "side_by_side_html"]

SIDE_CSS = """
<style>
.enb-sbs-heads{display:grid;grid-template-columns:1fr 1fr;gap:10px;margin:0 0 8px 0}
.enb-sbs-head{border:1px solid var(--jp-border-color2,#8884);border-radius:6px;padding:6px 10px;min-width:0}
.enb-sbs-head .enb-sbs-label{font-weight:700;font-size:12.5px;overflow-wrap:anywhere}
.enb-sbs-head .enb-side-big{display:inline-block;margin-right:10px}
.enb-sbs-head details>summary{cursor:pointer;color:var(--jp-brand-color1,#1976d2);font-size:11px}
.enb-sbs-div{margin:0 0 6px 0;padding:5px 10px;border-radius:5px;border-left:4px solid var(--enb-err);
  background:color-mix(in srgb,var(--enb-err) 9%,transparent)}
.enb-sbs-div.enb-same{border-left-color:var(--enb-assistant);background:color-mix(in srgb,var(--enb-assistant) 9%,transparent)}
.enb-sbs-div code{font-family:var(--jp-code-font-family,ui-monospace,monospace);font-size:11px;overflow-wrap:anywhere}
.enb-sbs-row{display:grid;grid-template-columns:64px minmax(0,1fr) minmax(0,1fr);gap:6px;
  border-radius:4px;padding:0 2px}
.enb-sbs-row>.enb-sbs-n{font-size:10.5px;color:var(--jp-ui-font-color2,#888);padding-top:8px;text-align:right;
  font-variant-numeric:tabular-nums}
.enb-sbs-row.enb-diff{background:color-mix(in srgb,var(--enb-tool) 10%,transparent)}
.enb-sbs-row.enb-first{outline:2px solid var(--enb-err);outline-offset:-1px}
.enb-sbs-row.enb-first>.enb-sbs-n{color:var(--enb-err);font-weight:700;line-height:1.2}
.enb-sbs-gap{margin:4px 0;border:1px dashed var(--jp-border-color2,#8886);border-radius:5px;
  color:var(--jp-ui-font-color3,#888);font-size:11px;padding:4px 8px}
.enb-sbs-cols{display:grid;grid-template-columns:64px minmax(0,1fr) minmax(0,1fr);gap:6px;font-weight:700;
  font-size:11px;color:var(--jp-ui-font-color2,#888);margin-bottom:2px}
.enb-tl a.enb-same{background:var(--enb-system);opacity:.45}
.enb-tl a.enb-diff{background:var(--enb-tool)}
.enb-tl a.enb-first{background:var(--enb-err);opacity:1}
</style>
"""


def _action(row: Mapping[str, Any] | None, *, ended: bool = False) -> str:
    """A step's action in words for the divergence banner."""
    if row is None:
        return "(no more steps: this attempt had ended)" if ended else (
            "(no step facing the other's: the other attempt took steps this one did not)"
        )  # fmt: skip
    kind = str(row.get("kind"))
    if kind == "tool_call":
        args = " ".join(pretty_arguments(row.get("arguments")).split())
        args = args if len(args) <= 160 else args[:160] + "…"
        return f"#{int(row['step']):,} call {row.get('tool')} {args}"
    return f"#{int(row['step']):,} {row.get('role')} {kind.replace('_', ' ')}"


def _head(label: str, attempt: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    g = attempt.get
    reward = _v(g("reward"))
    status = str(g("status") or "-")
    calls = sum(1 for r in rows if r.get("kind") == "tool_call")
    errors = sum(1 for r in rows if is_error_step(r))
    parts = [
        f'<div class="enb-sbs-label">{_esc(label)}</div>',
        f'<span class="enb-side-big">{_esc(format_number(reward))}</span>',
        f'<span class="enb-dim">reward · </span><span class="enb-st-{_esc(status)}">{_esc(status)}</span>',
        f'<div class="enb-dim">{len(rows):,} steps · {calls:,} tool calls · {errors:,} errors</div>',
    ]
    extra = g("extra") if isinstance(g("extra"), dict) else {}
    judge = _v(g("judge_summary"))
    verdicts = ""
    if judge is not None:
        verdicts += f"<h5>judge summary</h5>{fold_text(str(judge), chars=400, lines=8)}"
    verdicts += scorers_html(extra.get("scores") if isinstance(extra, dict) else None)
    err = _v(g("error"))
    if err is not None:
        verdicts += f'<div class="enb-side-error"><h5>error</h5>{fold_text(str(err), chars=400, lines=8)}</div>'
    if verdicts:
        parts.append(f"<details open><summary>scorer verdict</summary>{verdicts}</details>")
    return f'<div class="enb-sbs-head">{"".join(parts)}</div>'


@dataclass(frozen=True)
class SideBySide:
    """Two attempts side by side, ready to show (``_repr_html_``).

    ``first_divergence`` is the 1-based row of the first differing action (``None``: the
    attempts took the same actions); ``step_a`` / ``step_b`` are the steps on that row
    (``None`` where that attempt has no step there).
    """

    label_a: str
    label_b: str
    rows: int
    first_divergence: int | None
    step_a: int | None
    step_b: int | None
    html: str

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        where = (
            f"first divergence at row {self.first_divergence} (steps {self.step_a} / {self.step_b})"
            if self.first_divergence is not None
            else "no divergence"
        )
        return f"<SideBySide {self.label_a} | {self.label_b} · {self.rows:,} rows · {where}>"


def side_by_side_html(
    rows_a: Any,
    rows_b: Any,
    *,
    pairs: Sequence[tuple[int | None, int | None]],
    same: Sequence[bool],
    first_divergence: int | None,
    attempt_a: Mapping[str, Any] | None = None,
    attempt_b: Mapping[str, Any] | None = None,
    label_a: str = "A",
    label_b: str = "B",
    page_size: int = 200,
) -> SideBySide:
    """Two attempts' steps side by side along an alignment.

    ``rows_a`` / ``rows_b`` are the attempts' step rows in order (frames or mappings);
    ``pairs`` the aligned positions (0-based, ``None`` for a gap), ``same`` whether each
    pair's actions agree and ``first_divergence`` the index of the first that does not
    (``envloop_nb._metrics.step_alignment.align_actions`` gives all three);
    ``attempt_a`` / ``attempt_b`` the attempts' rows (reward, status, judge summary …).

    Examples
    --------
    >>> a = [{"step": 1, "role": "user", "kind": "message", "content": "go"},
    ...      {"step": 2, "role": "assistant", "kind": "tool_call", "tool": "ls", "arguments": "{}"}]
    >>> b = [dict(a[0]), dict(a[1], tool="<rm>")]
    >>> v = side_by_side_html(a, b, pairs=[(0, 0), (1, 1)], same=[True, False], first_divergence=1)
    >>> v
    <SideBySide A | B · 2 rows · first divergence at row 2 (steps 2 / 2)>
    >>> "&lt;rm&gt;" in v.html and "<rm>" not in v.html
    True
    """
    a, b = as_records(rows_a), as_records(rows_b)
    uid = "enb-" + hashlib.sha1(f"{label_a}|{label_b}|{len(a)}|{len(b)}".encode()).hexdigest()[:10]
    blocks = []
    for i, ((ia, ib), agree) in enumerate(zip(pairs, same, strict=True)):
        n = i + 1
        cls = "enb-sbs-row enb-block" + ("" if agree else " enb-diff")
        mark = ""
        if first_divergence == i:
            cls += " enb-first"
            mark = "<br>first divergence"
        cells = "".join(
            compact_step_html(side[pos])
            if pos is not None
            else '<div class="enb-sbs-gap">— no step facing this one —</div>'
            for side, pos in ((a, ia), (b, ib))
        )
        blocks.append(
            (
                (n,),
                f'<div class="{cls}" id="{uid}-s{n}" data-step="{n}">'
                f'<div class="enb-sbs-n">{n:,}{mark}</div>{cells}</div>',
            )
        )
    step_a = step_b = None
    if first_divergence is not None:
        ia, ib = pairs[first_divergence]
        ra = a[ia] if ia is not None else None
        rb = b[ib] if ib is not None else None
        step_a = int(ra["step"]) if ra else None
        step_b = int(rb["step"]) if rb else None
        row = first_divergence + 1
        banner = (
            f'<div class="enb-sbs-div"><b>First divergence at row {row:,}</b> '
            f'<a class="enb-go" href="#{uid}-s{row}" data-go="{row}">⤓ go there</a>'
            f"<br>{_esc(label_a)}: <code>{_esc(_action(ra, ended=_ended(pairs, 0, first_divergence)))}</code>"
            f"<br>{_esc(label_b)}: <code>{_esc(_action(rb, ended=_ended(pairs, 1, first_divergence)))}</code></div>"
        )
        jump = f'<a class="enb-go" href="#{uid}-s{row}" data-go="{row}">⚠ first divergence (row {row:,})</a>'
    else:
        banner = (
            f'<div class="enb-sbs-div enb-same"><b>No divergence:</b> both attempts took the same '
            f"{len(pairs):,} actions in the same order (their text may differ).</div>"
        )
        jump = '<span class="enb-dim">no divergence</span>'
    heads = (
        f'<div class="enb-sbs-heads">{_head(label_a, attempt_a or {}, a)}'
        f"{_head(label_b, attempt_b or {}, b)}</div>"
    )
    cols = f'<div class="enb-sbs-cols"><span></span><span>{_esc(label_a)}</span><span>{_esc(label_b)}</span></div>'
    marks = _marks(same, first_divergence)
    out = paged_html(
        blocks,
        uid=uid,
        title=heads + banner,
        toolbar_extra=jump,
        above=timeline_html(marks, uid) + cols,
        page_size=page_size,
        noun="row",
    )
    html_out = PAGED_CSS + TRANSCRIPT_CSS + SIDE_CSS + out
    return SideBySide(label_a, label_b, len(pairs), None if first_divergence is None else first_divergence + 1,
                      step_a, step_b, html_out)  # fmt: skip


def _ended(pairs: Sequence[tuple[int | None, int | None]], side: int, start: int) -> bool:
    """Whether one side has no step from ``start`` on."""
    return all(p[side] is None for p in pairs[start:])


def _marks(same: Sequence[bool], first_divergence: int | None) -> list[tuple[int, int, str, str]]:
    per = max(1, -(-len(same) // MAX_MARKS))
    marks = []
    for i in range(0, len(same), per):
        run = same[i : i + per]
        first, last = i + 1, i + len(run)
        has_first = first_divergence is not None and i <= first_divergence < i + len(run)
        cls = "enb-first" if has_first else ("enb-same" if all(run) else "enb-diff")
        title = f"row {first:,}" if first == last else f"rows {first:,}–{last:,}"
        title += " · first divergence" if has_first else ("" if all(run) else " · actions differ")
        marks.append((first, last, cls, title))
    return marks
