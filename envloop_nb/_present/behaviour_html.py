"""Behaviour as HTML (pure): per-tool table, turn summary, action patterns, side by side.

Frames and plain values in (the results of :mod:`envloop_nb._behaviour`), escaped HTML
out; the Behaviour tab, the comparison panel and the HTML report use the same strings.
A rate is shown with its interval (``62% [48–75%]``); a missing value as ``-``, never 0.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .display import format_pct
from .panel_html import PANEL_CSS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BEHAVIOUR_CSS",
    "NO_STEPS",
    "behaviour_html",
    "compare_behaviour_html",
    "no_steps_html",
    "patterns_html",
    "tool_table_html",
    "turn_summary_html",
]

#: What a job without steps shows instead of its behaviour.
NO_STEPS = "no steps recorded: this source keeps no trajectory, so there is no behaviour to measure"

BEHAVIOUR_CSS = """<style>
.enb-behaviour .enb-bad{color:var(--jp-error-color1,#c62828);font-weight:600}
.enb-behaviour .enb-ci{color:var(--jp-ui-font-color3,#888);font-size:11px}
.enb-behaviour .enb-pattern{font-family:var(--jp-code-font-family,monospace);white-space:normal;
  max-width:460px;word-break:break-word}
.enb-behaviour .enb-headline{display:flex;flex-wrap:wrap;gap:6px 18px;margin:4px 0 8px}
.enb-behaviour .enb-headline b{font-size:15px;font-variant-numeric:tabular-nums}
.enb-behaviour .enb-tool{font-family:var(--jp-code-font-family,monospace);white-space:nowrap}
.enb-behaviour h4{margin:12px 0 4px}
.enb-behaviour th{white-space:normal;vertical-align:bottom}
.enb-behaviour .enb-mark{color:var(--jp-error-color1,#c62828);font-weight:600;margin:4px 0}
</style>"""


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _num(v: Any, digits: int = 2) -> str:
    if _missing(v):
        return "-"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{float(v):,.{digits}f}"


def _rate(row: Mapping[Any, Any], name: str) -> str:
    """``62% [48–75%]`` (escaped HTML) of a rate and its interval columns."""
    value = row.get(name)
    if _missing(value):
        return "-"
    lo, hi = row.get(f"{name}_low"), row.get(f"{name}_high")
    ci = "" if _missing(lo) or _missing(hi) else f"{format_pct(lo, 0)}–{format_pct(hi, 0)}"
    tail = f' <span class="enb-ci">[{html.escape(ci)}]</span>' if ci else ""
    return html.escape(format_pct(value)) + tail


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    """A table of ready (escaped) HTML cells."""
    head = "".join(
        f'<th class="{"num" if i in numeric else ""}">{html.escape(h)}</th>'
        for i, h in enumerate(header)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if i in numeric else ""}">{c}</td>' for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _wrap(inner: str, note: str = "") -> str:
    """``inner`` in the panel's styles; ``note`` is escaped HTML shown dim above it."""
    top = f'<div class="enb-dim">{note}</div>' if note else ""
    return f'{PANEL_CSS}{BEHAVIOUR_CSS}<div class="enb-panel enb-behaviour">{top}{inner}</div>'


def no_steps_html() -> str:
    """The one line a job without steps shows.

    Examples
    --------
    >>> "no steps recorded" in no_steps_html()
    True
    """
    return _wrap(f'<div class="enb-dim">{html.escape(NO_STEPS)}</div>')


def _tool_rows(tools: pd.DataFrame, *, job: bool = False) -> str:
    header = ["tool", "calls", "attempts", "calls / attempt", "results", "error rate",
              "pass with (passed/scored)", "pass without (passed/scored)"]  # fmt: skip
    rows = []
    for r in tools.to_dict("records"):
        err = _rate(r, "error_rate")
        if not _missing(r.get("error_rate")) and r["error_rate"] >= 1:
            err = f'<span class="enb-bad">{err}</span>'
        with_ = f"{_rate(r, 'pass_with')} ({_num(r['passed_with'])}/{_num(r['scored_with'])})"
        without = (
            f"{_rate(r, 'pass_without')} ({_num(r['passed_without'])}/{_num(r['scored_without'])})"
        )
        cells = [f'<span class="enb-pattern">{html.escape(str(r["tool"]))}</span>',
                 _num(r["calls"]), _num(r["attempts"]), _num(r["calls_per_attempt"]),
                 _num(r["results"]), err, with_, without]  # fmt: skip
        if job:
            mark = "" if r.get("comparable", True) else ' <span class="enb-bad">⚠</span>'
            cells.insert(0, html.escape(str(r["job"])) + mark)
        rows.append(cells)
    if job:
        header.insert(0, "job")
    first = 2 if job else 1
    return _table(header, rows, set(range(first, first + 7)))


def tool_table_html(tools: pd.DataFrame, *, note: str = "", limit: int = 30) -> str:
    """The per-tool table (most called first, at most ``limit`` tools); ``note`` is
    escaped HTML. An error rate of 100% is red.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame([{"tool": "<b>", "calls": 2, "attempts": 1, "calls_per_attempt": 2.0,
    ...     "results": 2, "errors": 2, "error_rate": 1.0, "error_rate_low": 0.5,
    ...     "error_rate_high": 1.0, "passed_with": 0, "scored_with": 1, "pass_with": 0.0,
    ...     "passed_without": 1, "scored_without": 2, "pass_without": 0.5}])
    >>> out = tool_table_html(t)
    >>> "&lt;b&gt;" in out and "enb-bad" in out and "100.0% <span" in out
    True
    """
    if not len(tools):
        return _wrap('<div class="enb-dim">no tool calls</div>', note)
    cut = (
        f'<div class="enb-dim">the {limit} most called of {len(tools):,} tools</div>'
        if len(tools) > limit
        else ""
    )
    return _wrap(_tool_rows(tools.head(limit)) + cut, note)


def turn_summary_html(summary: Mapping[str, Any], steps: pd.DataFrame, *, note: str = "") -> str:
    """The headline numbers (attempts, median steps, attempts with an error, median first
    error) and the pass rate by number of steps.

    Examples
    --------
    >>> import pandas as pd
    >>> s = {"attempts": 4, "median_steps": 6.5, "with_error": 1, "error_share": 0.25,
    ...      "median_first_error": 3.0}
    >>> "6.5" in turn_summary_html(s, pd.DataFrame())
    True
    """
    items = [
        ("attempts with steps", _num(summary.get("attempts"))),
        ("median steps", _num(summary.get("median_steps"), 1)),
        ("attempts with an error",
         f"{_num(summary.get('with_error'))} ({format_pct(summary.get('error_share'))})"),
        ("median first error step", _num(summary.get("median_first_error"), 1)),
    ]  # fmt: skip
    head = "".join(f"<div>{html.escape(k)}<br><b>{html.escape(v)}</b></div>" for k, v in items)
    rows = []
    for r in steps.to_dict("records") if len(steps) else []:
        length = f"{r['low']:,}" if r["low"] == r["high"] else f"{r['low']:,}–{r['high']:,}"
        rows.append([html.escape(length), _num(r["attempts"]),
                     f"{_num(r['passed'])}/{_num(r['scored'])}", _rate(r, "pass_rate")])  # fmt: skip
    table = (
        "<h4>Pass rate by number of steps</h4>"
        + _table(["steps", "attempts", "passed/scored", "pass rate"], rows, {1, 2, 3})
        if rows
        else ""
    )
    return _wrap(f'<div class="enb-headline">{head}</div>{table}', note)


def patterns_html(
    ngrams: pd.DataFrame,
    loops: pd.DataFrame,
    after: pd.DataFrame,
    *,
    note: str = "",
    max_loops: int = 20,
) -> str:
    """N-grams in failed vs passed attempts, the loops (longest first, at most
    ``max_loops``) and the steps after the last successful tool call.

    Examples
    --------
    >>> import pandas as pd
    >>> g = pd.DataFrame([{"n": 2, "pattern": "ls → cat", "calls_failed": 3, "calls_passed": 1,
    ...     "attempts_failed": 2, "attempts_passed": 1, "share_failed": 1.0,
    ...     "share_passed": 0.5, "difference": 0.5}])
    >>> "ls → cat" in patterns_html(g, pd.DataFrame(), pd.DataFrame())
    True
    """
    parts = []
    if len(ngrams):
        rows = [
            [str(r["n"]), f'<span class="enb-pattern">{html.escape(str(r["pattern"]))}</span>',
             f"{_num(r['attempts_failed'])} ({format_pct(r['share_failed'])})",
             f"{_num(r['attempts_passed'])} ({format_pct(r['share_passed'])})",
             _points(r["difference"])]
            for r in ngrams.to_dict("records")
        ]  # fmt: skip
        parts.append("<h4>Tool-call n-grams: attempts containing them</h4>")
        parts.append(_table(["n", "calls", "failed attempts", "passed attempts",
                             "failed − passed"], rows, {0, 2, 3, 4}))  # fmt: skip
    else:
        parts.append('<div class="enb-dim">no tool calls in scored attempts</div>')
    if len(loops):
        rows = [
            [html.escape(f"{r['task']} #{r['attempt']}"),
             f'<span class="enb-tool">{html.escape(str(r["tool"]))}</span>',
             f'<span class="enb-pattern">{html.escape(_short(r["arguments"]))}</span>',
             f"{r['first_step']}–{r['last_step']}", f"×{r['repeats']}",
             html.escape(str(r["outcome"]))]
            for r in loops.head(max_loops).to_dict("records")
        ]  # fmt: skip
        more = (
            f'<div class="enb-dim">the {max_loops} longest of {len(loops):,} loops</div>'
            if len(loops) > max_loops
            else ""
        )
        parts.append(f"<h4>Loops: the same call repeated ({len(loops):,})</h4>")
        parts.append(_table(["attempt", "tool", "arguments", "steps", "repeats", "outcome"],
                            rows, {3, 4}) + more)  # fmt: skip
    else:
        parts.append('<h4>Loops</h4><div class="enb-dim">no loops</div>')
    if len(after):
        rows = [
            [html.escape(str(r["outcome"])), _num(r["attempts"]), _num(r["with_success"]),
             _num(r["mean_after"], 1), _num(r["median_after"], 1), _num(r["max_after"])]
            for r in after.to_dict("records")
        ]  # fmt: skip
        parts.append("<h4>Steps after the last successful tool call</h4>")
        parts.append(_table(["outcome", "attempts", "with a successful call", "mean", "median",
                             "max"], rows, {1, 2, 3, 4, 5}))  # fmt: skip
    return _wrap("".join(parts), note)


def _points(value: Any) -> str:
    """A difference of shares in percentage points: ``+12 pts``, ``0 pts`` (never ``-0``).

    Examples
    --------
    >>> _points(0.123), _points(-0.001), _points(None)
    ('+12 pts', '0 pts', '-')
    """
    if _missing(value):
        return "-"
    points = round(float(value) * 100)
    return f"{points:+d} pts" if points else "0 pts"


def _short(value: Any, limit: int = 80) -> str:
    text = "-" if _missing(value) else " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def behaviour_html(
    *,
    basis: str,
    summary: Mapping[str, Any],
    steps: pd.DataFrame,
    tools: pd.DataFrame,
    ngrams: pd.DataFrame,
    loops: pd.DataFrame,
    after: pd.DataFrame,
    method: str,
) -> str:
    """A job's behaviour in one block: basis, turns, tools, patterns, how intervals were
    made (every argument a plain value; ``basis`` and ``method`` are plain text)."""
    return (
        turn_summary_html(summary, steps, note=html.escape(basis))
        + f'{PANEL_CSS}<div class="enb-panel"><h4>Tools</h4></div>'
        + tool_table_html(tools)
        + patterns_html(ngrams, loops, after)
        + _wrap(f'<div class="enb-dim">intervals: {html.escape(method)}</div>')
    )


def compare_behaviour_html(turns: pd.DataFrame, tools: pd.DataFrame, *, mark: str = "") -> str:
    """The compared jobs side by side: one row per job (a job without steps says so),
    then the per-tool rows of every job; ``mark`` (plain text) is the guard's mark, and
    a job not comparable with the baseline carries ⚠.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame([{"job": "a", "comparable": True, "note": "no steps recorded"}])
    >>> "no steps recorded" in compare_behaviour_html(t, pd.DataFrame(), mark="⚠ x")
    True
    """
    top = f'<div class="enb-mark">{html.escape(mark)}</div>' if mark else ""
    rows = []
    for r in turns.to_dict("records"):
        flag = "" if r.get("comparable", True) else ' <span class="enb-bad">⚠ not comparable</span>'
        name = html.escape(str(r["job"])) + flag
        if r.get("note"):
            rows.append([name, f'<span class="enb-dim">{html.escape(str(r["note"]))}</span>',
                         *[""] * 6])  # fmt: skip
            continue
        rows.append([name, _num(r["attempts"]),
                     f"{_num(r['passed'])}/{_num(r['passed'] + r['failed'])}",
                     _num(r["unscored"]), _num(r["median_steps"], 1),
                     f"{_num(r['with_error'])} ({format_pct(r['error_share'])})",
                     _num(r["median_first_error"], 1), _num(r["loop_attempts"])])  # fmt: skip
    head = ["job", "attempts with steps", "passed/scored", "not scored", "median steps",
            "attempts with an error", "median first error", "attempts with a loop"]  # fmt: skip
    table = _table(head, rows, set(range(1, 8)))
    tool_part = "<h4>Tools</h4>" + _tool_rows(tools, job=True) if len(tools) else ""
    return _wrap(top + table + tool_part)
