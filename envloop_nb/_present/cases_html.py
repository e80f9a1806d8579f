"""The Cases view as HTML (pure): the rows table, an attempt's and a task's detail.

Frames and plain dicts in, HTML out; everything that came from a model, a user or a
file is escaped. The rows come from :mod:`envloop_nb._ui.cases_query` (which pages them
in DuckDB); the boxes a panel shows for an error or a done export are here too, since
their style lives in :data:`CASES_CSS`.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import TYPE_CHECKING, Any

from .display import (
    format_duration,
    format_metric,
    format_number,
    format_pct,
    format_timestamp,
    header,
    shorten,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CASES_CSS",
    "SNIPPET",
    "TEXT_COLUMNS",
    "attempt_detail_html",
    "chat_html",
    "chat_snippet",
    "chat_snippet_turn",
    "error_box",
    "is_missing",
    "marked",
    "messages_snippet",
    "ok_box",
    "scorers_html",
    "table_html",
    "task_detail_html",
]

#: Characters of input, output and error a table cell shows (the rest is in its title).
SNIPPET = 80

CASES_CSS = """
<style>
.enb-cases{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;
  color:var(--jp-ui-font-color1,inherit);line-height:1.45;overflow-x:auto}
.enb-cases table{border-collapse:collapse;width:100%;table-layout:auto}
.enb-cases th{text-align:left;font-weight:600;color:var(--jp-ui-font-color2,inherit);
  border-bottom:1px solid var(--jp-border-color1,#8888);padding:3px 6px;white-space:nowrap}
.enb-cases td{padding:2px 6px;border-bottom:1px solid var(--jp-border-color3,#8883);
  vertical-align:top;max-width:240px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.enb-cases td.num,.enb-cases th.num{text-align:right;font-variant-numeric:tabular-nums}
.enb-cases tr.enb-selected td{background:color-mix(in srgb,var(--jp-brand-color1,#1976d2) 16%,transparent)}
.enb-cases tr.enb-selected td:first-child{box-shadow:inset 3px 0 0 var(--jp-brand-color1,#1976d2)}
.enb-cases tbody tr[data-row]{cursor:pointer}
.enb-cases tbody tr[data-row]:hover td{background:var(--jp-layout-color2,#8881)}
.enb-cases .enb-dim{color:var(--jp-ui-font-color3,#888)}
.enb-cases mark,.enb-detail mark{background:color-mix(in srgb,#f5c518 55%,transparent);color:inherit;
  padding:0 1px;border-radius:2px}
.enb-cases td.enb-link{color:var(--jp-brand-color1,#1976d2);white-space:nowrap}
.enb-cases td.enb-match{max-width:320px}
.enb-cases td.enb-text{max-width:460px;min-width:160px;white-space:normal;overflow-wrap:anywhere}
.enb-cases .enb-st-failed,.enb-cases .enb-st-cancelled{color:var(--jp-error-color1,#c62828)}
.enb-cases .enb-st-running,.enb-cases .enb-st-pending{color:var(--jp-warn-color1,#b45309)}
.enb-detail{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;
  line-height:1.45;color:var(--jp-ui-font-color1,inherit);border:1px solid var(--jp-border-color2,#8884);
  border-radius:6px;padding:8px 10px;margin-top:6px}
.enb-detail h4{margin:2px 0 6px 0;font-size:13px}
.enb-detail h5{margin:8px 0 3px 0;font-size:12px;color:var(--jp-ui-font-color2,inherit)}
.enb-detail table.enb-kv{border-collapse:collapse}
.enb-detail table.enb-kv th{text-align:left;font-weight:400;color:var(--jp-ui-font-color2,inherit);
  padding:0 16px 0 0;white-space:nowrap;vertical-align:top}
.enb-detail table.enb-kv td{text-align:left;padding:0;font-variant-numeric:tabular-nums}
.enb-detail pre{white-space:pre-wrap;word-break:break-word;max-height:240px;overflow:auto;margin:0;
  padding:4px 6px;background:var(--jp-layout-color2,#8881);border-radius:4px;
  font-family:var(--jp-code-font-family,monospace);font-size:11px}
.enb-turn{margin:3px 0;padding:4px 6px;border-left:3px solid var(--jp-border-color1,#888);
  background:var(--jp-layout-color2,#8881);border-radius:0 4px 4px 0}
.enb-turn .enb-role{font-weight:600;font-size:11px;color:var(--jp-ui-font-color2,inherit)}
.enb-turn.enb-user{border-left-color:var(--jp-brand-color1,#4a90c8)}
.enb-turn.enb-assistant{border-left-color:var(--jp-success-color1,#4c9f70)}
.enb-turn.enb-tool{border-left-color:var(--jp-warn-color1,#c9a227)}
.enb-turn pre{background:none;padding:0;max-height:200px}
.enb-error-box{border:1px solid var(--jp-error-color1,#c62828);color:var(--jp-error-color1,#c62828);
  border-radius:4px;padding:4px 8px;font-family:var(--jp-ui-font-family,system-ui,sans-serif);
  font-size:12px;line-height:1.45;background:var(--jp-layout-color1,transparent)}
.enb-ok-box{border:1px solid var(--jp-success-color1,#4c9f70);border-radius:4px;padding:4px 8px;
  line-height:1.45;
  font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;
  color:var(--jp-ui-font-color1,inherit)}
</style>
"""

_RATE_COLUMNS = ("pass_rate", "reward_mean")


def is_missing(value: Any) -> bool:
    """Whether a cell holds no value (``None``, NaN, ``pd.NA``)."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NA
    except (TypeError, ValueError):
        return False


def _cell(column: str, value: Any) -> tuple[str, bool]:
    """Text of one cell and whether it is numeric (right-aligned)."""
    if is_missing(value):
        return "-", True
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, dt.datetime) or type(value).__name__ in ("Timestamp", "datetime64"):
        return format_timestamp(value if isinstance(value, dt.datetime) else str(value)), False
    if isinstance(value, int | float) or hasattr(value, "dtype"):
        v = float(value)
        if column.startswith(("pass@", "pass^")) or column in _RATE_COLUMNS:
            return format_metric(v), True
        if column in ("n", "scored", "passes", "attempt", "turns", "tokens", "exit_code"):
            return f"{int(v):,}", True
        if column == "duration_s":
            return format_duration(v), True
        return format_number(v), True
    text = str(value)
    limit = 2 * SNIPPET if column == "match" else SNIPPET
    if column in TEXT_COLUMNS:
        text = shorten(text, limit)  # at a word, with "…": the whole text is the title
    return text, False


def marked(text: str, needle: str | None) -> str:
    """``text`` escaped, with every case-insensitive occurrence of ``needle`` in ``<mark>``.

    Examples
    --------
    >>> marked("Timeout <after> TIMEOUT", "timeout")
    '<mark>Timeout</mark> &lt;after&gt; <mark>TIMEOUT</mark>'
    """
    if not needle:
        return html.escape(text)
    parts = re.split(f"({re.escape(needle)})", text, flags=re.IGNORECASE)
    return "".join(
        f"<mark>{html.escape(p)}</mark>" if i % 2 else html.escape(p) for i, p in enumerate(parts)
    )


#: Text columns of the Cases table (left-aligned, cut to a snippet, whole in the title).
TEXT_COLUMNS = ("input", "messages", "output", "error", "match")


def table_html(
    frame: pd.DataFrame,
    *,
    first_row: int = 1,
    selected: int | None = None,
    highlight: str | None = None,
    row_link: str | None = None,
    titles: dict[str, list[str]] | None = None,
) -> str:
    """Rows of a frame as the Cases table (escaped; numbers right-aligned, rates as %).

    ``first_row`` numbers the first row (the ``#`` column); ``selected`` marks a row;
    ``highlight`` marks a search term wherever it shows; ``row_link`` adds a last cell
    with that text (the row opens its detail); ``titles`` gives a column's hover texts.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"task": ["<b>x</b>"], "pass_rate": [0.5]})
    >>> "&lt;b&gt;x&lt;/b&gt;" in table_html(f) and ">50.0%<" in table_html(f)
    True
    >>> "<mark>x</mark>" in table_html(f, highlight="x", row_link="attempts ›")
    True
    """
    cols = list(frame.columns)
    titles = titles or {}
    numeric = {
        c for c in cols if c not in ("task", "subset", "status", "bucket", *TEXT_COLUMNS)
    }  # fmt: skip
    heads = ["#", *cols] + ([""] if row_link else [])
    head = "".join(
        f'<th class="{"num" if c in numeric else ""}">{html.escape(header(c))}</th>' for c in heads
    )
    body = []
    for i, row in enumerate(frame.itertuples(index=False)):
        cells = [f'<td class="num enb-dim">{first_row + i:,}</td>']
        for col, value in zip(cols, row, strict=True):
            text, is_num = _cell(col, value)
            cls = "num" if is_num and col in numeric else ""
            if col == "status":
                cls += f" enb-st-{html.escape(str(value))}"
            if col == "match":
                cls += " enb-match"
            elif col in TEXT_COLUMNS:
                cls += " enb-text"  # wraps: an output is read, not clipped at 240px
            hover = titles[col][i] if col in titles else str(value)
            title = "" if col not in TEXT_COLUMNS or is_missing(value) else (
                f' title="{html.escape(hover, quote=True)}"'
            )  # fmt: skip
            shown = marked(text, highlight) if col in ("task", *TEXT_COLUMNS) else html.escape(text)
            cells.append(f'<td class="{cls.strip()}"{title}>{shown}</td>')
        if row_link:
            cells.append(f'<td class="enb-link">{html.escape(row_link)}</td>')
        sel = ' class="enb-selected"' if selected == i else ""
        body.append(f'<tr data-row="{i}"{sel}>{"".join(cells)}</tr>')
    if not body:
        body.append(f'<tr><td colspan="{len(heads)}" class="enb-dim">no rows match</td></tr>')
    return (
        f'{CASES_CSS}<div class="enb-cases"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def chat_snippet(text: str) -> str:
    """One line for a ChatML input: its last user turn (else its last turn).

    Examples
    --------
    >>> chat_snippet('[{"role": "system", "content": "be brief"}, {"role": "user", "content": "Hi  there"}]')
    'Hi there'
    """
    try:
        turns = json.loads(text)
    except ValueError:
        return " ".join(text.split())[: SNIPPET + 1]
    if not isinstance(turns, list) or not turns:
        return " ".join(text.split())[: SNIPPET + 1]
    users = [t for t in turns if isinstance(t, dict) and t.get("role") == "user"]
    turn = users[-1] if users else turns[-1]
    body = _content_text(turn.get("content")) if isinstance(turn, dict) else str(turn)
    return " ".join(body.split())[: SNIPPET + 1]


def messages_snippet(text: str, *, limit: int = 4000) -> tuple[str, str]:
    """A ChatML conversation for one table cell: ``(cell, title)``.

    The cell names the turns and shows the last user turn; the title (on hover) holds the
    whole conversation, one ``role: text`` line per turn, up to ``limit`` characters.

    Examples
    --------
    >>> chat = ('[{"role": "system", "content": "be brief"}, {"role": "user", "content": "Hi"},'
    ...         ' {"role": "assistant", "content": "Hello"}]')
    >>> messages_snippet(chat)
    ('3 turns · user: Hi', 'system: be brief\\nuser: Hi\\nassistant: Hello')
    """
    try:
        turns = json.loads(text)
    except ValueError:
        turns = None
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        flat = " ".join(text.split())
        return flat[: SNIPPET + 1], text[:limit]
    lines = []
    for t in turns:
        body = _content_text(t.get("content"))
        if t.get("tool_calls"):
            body += (" " if body else "") + "[tool calls]"
        lines.append(f"{t.get('role', '?')}: {' '.join(body.split())}")
    title = "\n".join(lines)
    if len(title) > limit:
        title = title[:limit] + "…"
    n = len(turns)
    return f"{n} turn{'s' if n != 1 else ''} · {chat_snippet_turn(turns)}", title


def chat_snippet_turn(turns: list[dict[str, Any]]) -> str:
    """``role: text`` of the last user turn (else the last turn), on one line."""
    if not turns:
        return ""
    users = [t for t in turns if t.get("role") == "user"]
    turn = users[-1] if users else turns[-1]
    body = " ".join(_content_text(turn.get("content")).split())
    return f"{turn.get('role', '?')}: {body}"[: SNIPPET + 1]


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                if "text" in part:
                    parts.append(str(part["text"]))
                else:
                    parts.append(f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def chat_html(text: str | None, is_chat: bool | None = None) -> str:
    """An input as a conversation (ChatML list of turns) or as plain text, escaped.

    Examples
    --------
    >>> out = chat_html('[{"role": "user", "content": "<script>x</script>"}]', True)
    >>> "enb-turn enb-user" in out and "&lt;script&gt;" in out and "<script>" not in out
    True
    """
    if text is None:
        return '<span class="enb-dim">none</span>'
    turns = None
    if is_chat or (is_chat is None and text.lstrip().startswith("[")):
        try:
            parsed = json.loads(text)
            if isinstance(parsed, list) and all(isinstance(t, dict) for t in parsed):
                turns = parsed
        except ValueError:
            turns = None
    if turns is None:
        return f"<pre>{html.escape(text)}</pre>"
    out = []
    for turn in turns:
        role = str(turn.get("role", "?"))
        body = _content_text(turn.get("content"))
        calls = turn.get("tool_calls")
        if calls:
            body += ("\n" if body else "") + "tool calls: " + json.dumps(calls, ensure_ascii=False)
        role_cls = role if role in ("user", "assistant", "system", "tool") else "other"
        out.append(
            f'<div class="enb-turn enb-{role_cls}"><div class="enb-role">{html.escape(role)}</div>'
            f"<pre>{html.escape(body)}</pre></div>"
        )
    return "".join(out)


def _fmt(value: Any, unit: str = "") -> str:
    if is_missing(value):
        return "-"
    if isinstance(value, dt.datetime):
        return format_timestamp(value)  # to the second
    if isinstance(value, float):
        return f"{format_number(value)}{unit}"
    if isinstance(value, int):
        return f"{value:,}{unit}"
    return f"{value}{unit}"


def _dl(items: list[tuple[str, Any]]) -> str:
    rows = "".join(
        f'<tr><th>{html.escape(k)}</th><td class="num">'
        f"{html.escape(v if isinstance(v, str) else _fmt(v))}</td></tr>"
        for k, v in items
    )
    return f'<table class="enb-kv">{rows}</table>'


def attempt_detail_html(detail: dict[str, Any]) -> str:
    """One attempt in full: conversation, output, reference, judge, figures. Escaped.

    Examples
    --------
    >>> d = {"task": "T<1>", "attempt": 1, "status": "failed", "input": "hi", "output": "=cmd",
    ...      "error": "<boom>", "dimensions": {"style": 0.5}}
    >>> out = attempt_detail_html(d)
    >>> "T&lt;1&gt;" in out and "&lt;boom&gt;" in out and "style" in out
    True
    """
    g = detail.get
    head = (
        f"<h4>task {html.escape(str(g('task')))} · attempt {html.escape(_fmt(g('attempt')))} · "
        f'<span class="enb-st-{html.escape(str(g("status")))}">{html.escape(str(g("status")))}</span>'
        f" · reward {html.escape(_fmt(g('reward')))}</h4>"
    )
    tokens = [g("input_tokens"), g("output_tokens"), g("cache_tokens")]
    figures = _dl(
        [
            ("reward", _fmt(g("reward"))),
            ("composite", _fmt(g("composite"))),
            ("exit code", _fmt(g("exit_code"))),
            ("error type", _fmt(g("error_type"))),
            ("turns", _fmt(g("turns"))),
            ("tokens in / out / cache", " / ".join(_fmt(t) for t in tokens)),
            ("duration", format_duration(g("duration_s"))),
            ("started / finished", f"{_fmt(g('started_at'))} / {_fmt(g('finished_at'))}"),
            ("cost", _fmt(g("cost_usd"), " USD")),
            ("logprob mean", _fmt(g("logprob_mean"))),
            ("trials for this slot", _fmt(g("n_trials"))),
            ("trial id", _fmt(g("trial_id"))),
            ("source", _fmt(g("source_place"))),
        ]
    )
    parts = [head, '<div class="enb-cases-detail-grid">', figures, "</div>"]
    dims = g("dimensions") or {}
    if dims:
        parts.append("<h5>score dimensions</h5>" + _dl([(k, _fmt(v)) for k, v in dims.items()]))
    raw_extra = g("extra")
    extra: dict[str, Any] = raw_extra if isinstance(raw_extra, dict) else {}
    if not is_missing(g("judge_summary")):
        metrics = extra.get("metrics")
        verifier = metrics.get("verifier_version") if isinstance(metrics, dict) else None
        by = f" · {html.escape(str(verifier))}" if verifier else ""
        parts.append(f"<h5>judge summary{by}</h5><pre>{html.escape(str(g('judge_summary')))}</pre>")
    parts.append(scorers_html(extra.get("scores")))
    if not is_missing(g("error")):
        parts.append(f"<h5>error</h5><pre>{html.escape(str(g('error')))}</pre>")
    parts.append("<h5>input</h5>" + chat_html(g("input"), g("input_is_chat")))
    out_text = g("output")
    parts.append(
        "<h5>output</h5>"
        + ('<span class="enb-dim">none</span>' if is_missing(out_text)
           else f"<pre>{html.escape(str(out_text))}</pre>")
    )  # fmt: skip
    ref = g("reference")
    if not is_missing(ref):
        parts.append(f"<h5>reference</h5><pre>{html.escape(str(ref))}</pre>")
    artifacts = g("artifacts") or []
    if isinstance(artifacts, list) and artifacts:
        items = "".join(
            "<li>" + html.escape(
                f"{a.get('name', '?')} · {a.get('uri', '')}"
                + (f" · {a['bytes']:,} bytes" if isinstance(a.get("bytes"), int) else "")
                if isinstance(a, dict) else str(a)
            ) + "</li>"
            for a in artifacts
        )  # fmt: skip
        parts.append(f"<h5>artifacts</h5><ul>{items}</ul>")
    return CASES_CSS + f'<div class="enb-detail">{"".join(parts)}</div>'


def scorers_html(scores: Any) -> str:
    """How each scorer judged the attempt: value, answer, explanation, and its metadata (a
    grader's conversation, when a model-graded scorer kept one, shown as turns). Escaped;
    empty when there is nothing to show.

    Examples
    --------
    >>> out = scorers_html({"match": {"value": "C", "answer": "Paris",
    ...     "explanation": "<ok>", "metadata": {"grading": [{"role": "user", "content": "Grade"}]}}})
    >>> "match" in out and "&lt;ok&gt;" in out and "enb-turn enb-user" in out
    True
    """
    if not isinstance(scores, dict) or not scores:
        return ""
    parts = []
    for name, score in scores.items():
        if not isinstance(score, dict):
            score = {"value": score}
        items = [("value", _fmt(score.get("value")))]
        if not is_missing(score.get("answer")):
            items.append(("answer", str(score["answer"])))
        block = f"<h5>scorer {html.escape(str(name))}</h5>{_dl(items)}"
        if not is_missing(score.get("explanation")) and str(score["explanation"]):
            block += f"<pre>{html.escape(str(score['explanation']))}</pre>"
        meta = score.get("metadata")
        if isinstance(meta, dict):
            for key, value in meta.items():
                if (
                    isinstance(value, list)
                    and value
                    and all(isinstance(t, dict) and "role" in t for t in value)
                ):
                    block += f"<h5>{html.escape(str(key))}</h5>" + chat_html(
                        json.dumps(value), True
                    )
                else:
                    text = (
                        value
                        if isinstance(value, str)
                        else json.dumps(value, ensure_ascii=False, indent=1)
                    )
                    block += f"<h5>{html.escape(str(key))}</h5><pre>{html.escape(text)}</pre>"
        parts.append(block)
    return "".join(parts)


def task_detail_html(detail: dict[str, Any]) -> str:
    """One task: its tags, per-task numbers and a table of all its attempts. Escaped."""
    numbers = detail["numbers"]
    k = detail["k"]
    tags = ", ".join(f"{key}={value}" for key, value in detail["tags"].items()) or "-"
    items = [
        ("tags", tags),
        ("attempts scored", f"{int(numbers['scored']):,}/{int(numbers['n']):,}"),
        ("passes", _fmt(numbers.get("passes"))),
        ("pass rate", format_pct(numbers.get("pass_rate"))),
        (f"pass@{k}", format_metric(numbers.get(f"pass@{k}"))),
        (f"pass^{k}", format_metric(numbers.get(f"pass^{k}"))),
        ("reward mean", format_metric(numbers.get("reward_mean"))),
    ]
    table = table_html(detail["attempts"]).replace(CASES_CSS, "")
    return (
        CASES_CSS + '<div class="enb-detail">'
        f"<h4>task {html.escape(str(detail['task']))}</h4>{_dl(items)}"
        f"<h5>attempts</h5>{table}</div>"
    )


def error_box(message: str) -> str:
    """A message in the red error box (escaped).

    Examples
    --------
    >>> "⚠ a &lt;b&gt;" in error_box("a <b>")
    True
    """
    return f'{CASES_CSS}<div class="enb-error-box">⚠ {html.escape(message)}</div>'


def ok_box(message: str) -> str:
    """A message in the green done box (escaped)."""
    return f'{CASES_CSS}<div class="enb-ok-box">✓ {html.escape(message)}</div>'
