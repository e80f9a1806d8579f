"""The panel's HTML (pure): job facts, platform agreement, group tables, diagnosis, buckets.

Frames, dicts and plain values in, HTML out; every text is escaped. The tabs of
:mod:`envloop_nb._ui` put these strings into their ``HTML`` widgets.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

from .display import format_metric, format_number, format_pct, format_timestamp
from .display import header as heading

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PANEL_CSS",
    "agreement_html",
    "bucket_counts_html",
    "facts_html",
    "findings_html",
    "groups_html",
    "note_html",
    "rows_table",
    "source_agreement_html",
    "summarised_note_html",
    "verdict_html",
]

PANEL_CSS = """
<style>
.enb-panel{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px;
  color:var(--jp-ui-font-color1,inherit);line-height:1.45}
.enb-panel h4{margin:6px 0 4px 0;font-size:13px;font-weight:600}
.enb-panel table{border-collapse:collapse}
.enb-panel th{text-align:left;font-weight:600;color:var(--jp-ui-font-color2,inherit);
  border-bottom:1px solid var(--jp-border-color1,#8888);padding:2px 8px;white-space:nowrap}
.enb-panel td{padding:2px 8px;border-bottom:1px solid var(--jp-border-color3,#8883);white-space:nowrap}
.enb-panel .num{text-align:right;font-variant-numeric:tabular-nums}
.enb-panel .enb-dim{color:var(--jp-ui-font-color3,#888)}
.enb-facts td:first-child{color:var(--jp-ui-font-color2,inherit)}
.enb-flag{margin:2px 0;padding:3px 8px;border-left:3px solid var(--jp-warn-color1,#c9a227);
  background:var(--jp-layout-color2,#8881)}
.enb-flag.enb-sev-error,.enb-flag.enb-sev-high{border-left-color:var(--jp-error-color1,#c62828)}
.enb-agree{color:var(--jp-success-color1,#2e7d32)}
.enb-disagree{color:var(--jp-error-color1,#c62828);font-weight:600}
</style>
"""


def rows_table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    """A small table of text cells; columns in ``numeric`` are right-aligned (escaped)."""
    head = "".join(
        f'<th class="{"num" if i in numeric else ""}">{html.escape(h)}</th>'
        for i, h in enumerate(header)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if i in numeric else ""}">{html.escape(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def facts_html(
    info: dict[str, Any],
    status_counts: dict[str, int],
    *,
    dimensions: list[str] | None = None,
    concurrency: int | None = None,
    titled: bool = True,
) -> str:
    """Job facts and attempt states as a compact table (pure; escaped).

    ``dimensions``: the job's score dimension names (the reward alone when empty);
    ``concurrency``: attempts run at once, where the source says; ``titled``: False
    under a heading that already says "Job" (a report's section).
    """

    def when(v: Any) -> str:
        return format_timestamp(v)

    dataset = f"{info.get('dataset_name') or '-'}@{info.get('dataset_version') or '-'}"
    profile = info.get("profile_name") or "-"
    if info.get("profile_version"):
        profile += f" v{info['profile_version']}"
    rows = [
        ("job", info.get("job_id")),
        ("model", info.get("model")),
        (
            "method",
            " · ".join(str(v) for v in (info.get("source_format"), info.get("runner")) if v),
        ),
        ("profile", profile),
        ("dataset", dataset),
        ("revision", info.get("dataset_revision")),
        ("attempts per task", info.get("attempts")),
        ("status", info.get("status")),
        ("created", when(info.get("created_at"))),
        ("finished", when(info.get("finished_at"))),
        ("loaded", when(info.get("loaded_at"))),
    ]
    extra = info.get("extra")
    if isinstance(extra, dict) and extra.get("in_place"):  # ws.load(..., copy=False)
        rows.append(("attempts", f"read in place from {info.get('source_path')}"))
    if dimensions is not None:
        shown = ", ".join(dimensions[:8]) + (
            f" (+{len(dimensions) - 8})" if len(dimensions) > 8 else ""
        )
        rows.insert(7, ("dimensions", shown or "reward only"))
    if concurrency is not None:
        rows.insert(7, ("concurrency", concurrency))
    facts = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape('-' if v is None else str(v))}</td></tr>"
        for k, v in rows
    )
    states = "".join(
        f'<tr><td>{html.escape(k)}</td><td class="num">{v:,}</td></tr>'
        for k, v in status_counts.items()
    )
    return (
        f'{PANEL_CSS}<div class="enb-panel" style="display:flex;gap:24px">'
        f'<div>{"<h4>Job</h4>" if titled else ""}<table class="enb-facts">{facts}</table></div>'
        f'<div><h4>Attempt slots</h4><table class="enb-facts">{states}</table></div></div>'
    )


def agreement_html(platform: dict[str, Any] | None, ours: dict[str, Any]) -> str:
    """Whether the source's own metrics block agrees with the recomputed one (pure).

    Examples
    --------
    >>> ours = {"score": 0.6, "pass": 0.6, "pass@k": 1.0, "pass^k": 0.5, "total": 6}
    >>> "numbers agree" in agreement_html({"score": 0.6, "score_counts": {"total": 6}}, ours)
    True
    >>> "numbers disagree" in agreement_html({"score": 0.7}, ours)
    True
    """
    if not platform:
        return (
            f'{PANEL_CSS}<div class="enb-panel enb-dim">The source carried no platform '
            "metrics to compare with.</div>"
        )
    flat: dict[str, Any] = {k: v for k, v in platform.items() if k != "score_counts"}
    flat.update(platform.get("score_counts") or {})
    diffs = []
    checked = 0
    for key, theirs in flat.items():
        if key not in ours or isinstance(theirs, dict | list):
            continue
        mine = ours[key]
        checked += 1
        same = (theirs is None and mine is None) or (
            isinstance(theirs, int | float)
            and isinstance(mine, int | float)
            and math.isclose(float(theirs), float(mine), rel_tol=1e-9, abs_tol=1e-9)
        )
        if not same:
            diffs.append(f"{key}: platform {theirs!r}, recomputed {mine!r}")
    if diffs:
        items = "".join(f"<li>{html.escape(d)}</li>" for d in diffs)
        return (
            f'{PANEL_CSS}<div class="enb-panel"><span class="enb-disagree">✗ The platform\'s '
            f"numbers disagree with the recomputed ones (policy unknown, no threshold):</span>"
            f"<ul>{items}</ul></div>"
        )
    return (
        f'{PANEL_CSS}<div class="enb-panel"><span class="enb-agree">✓ The platform\'s own '
        f"numbers agree with the recomputed ones</span> "
        f'<span class="enb-dim">({checked} values checked, policy unknown)</span></div>'
    )


def source_agreement_html(source: str, rows: list[dict[str, Any]]) -> str:
    """The source's own numbers beside the recomputed ones, as one line and a table (pure).

    ``rows`` are dicts with ``metric, source, recomputed, agrees, rule`` and ``note``
    (the rows of ``job.source_agreement()``); ``source`` names the tool (``"Inspect
    AI"``). A row whose ``agrees`` is None cannot be checked (its ``note`` says why):
    it is counted apart, never as agreeing or disagreeing.

    Examples
    --------
    >>> row = {"metric": "exact · mean · accuracy", "source": 0.35, "recomputed": 0.35,
    ...        "agrees": True, "rule": "Inspect drops NaN scores"}
    >>> "✓ Inspect AI's own 1 number agrees" in source_agreement_html("Inspect AI", [row])
    True
    >>> bad = dict(row, recomputed=0.4, agrees=False)
    >>> "1 of 2 numbers disagree" in source_agreement_html("Inspect AI", [row, bad])
    True
    >>> odd = dict(row, recomputed=None, agrees=None, note="cannot be checked: no samples")
    >>> "none of Inspect AI's 1 number can be checked" in source_agreement_html("Inspect AI", [odd])
    True
    """

    def num(value: Any) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return "—"
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    def note(r: dict[str, Any]) -> str:
        text = r.get("note")
        return text if isinstance(text, str) else ""

    bad = [r for r in rows if r.get("agrees") is False]
    unchecked = [r for r in rows if not isinstance(r.get("agrees"), bool)]
    n = len(rows)
    noun = "number agrees" if n == 1 else "numbers agree"
    name = html.escape(source)
    why = sorted({note(r).removeprefix("cannot be checked: ") for r in unchecked if note(r)})
    aside = f" ({html.escape('; '.join(why))})" if why else ""
    unchecked_text = f"; {len(unchecked)} cannot be checked{aside}" if unchecked else ""
    if bad:
        head = (
            f'<span class="enb-disagree">✗ {len(bad)} of {n} numbers disagree with '
            f"{name}'s own</span>{html.escape(unchecked_text)}"
        )
    elif len(unchecked) == n:
        number = "number" if n == 1 else "numbers"
        head = (
            f'<span class="enb-dim">? none of {name}\'s {n} {number} can be checked{aside}</span>'
        )
    elif unchecked:
        head = (
            f'<span class="enb-agree">✓ {n - len(unchecked)} of {n} numbers agree with '
            f'{name}\'s own</span><span class="enb-dim">{html.escape(unchecked_text)}</span>'
        )
    else:
        head = f'<span class="enb-agree">✓ {name}\'s own {n} {noun} with the recomputed ones</span>'
    rules = sorted({str(r.get("rule")) for r in rows if r.get("rule")})
    marks = {True: "✓", False: "✗"}
    cells = [
        [
            str(r["metric"]),
            num(r.get("source")),
            num(r.get("recomputed")),
            marks[r["agrees"]] if isinstance(r.get("agrees"), bool) else "?",
            *([note(r)] if unchecked else []),
        ]
        for r in rows
    ]
    columns = ["metric", source, "recomputed", "", *(["why unchecked"] if unchecked else [])]
    table = rows_table(columns, cells, numeric={1, 2})
    rule_text = "".join(f"<li>{html.escape(rule)}</li>" for rule in rules)
    return (
        f'{PANEL_CSS}<div class="enb-panel">{head}<details><summary class="enb-dim">'
        f"the {n} numbers and the rules they follow</summary>{table}"
        f"<ul class='enb-dim'>{rule_text}</ul></details></div>"
    )


def verdict_html(
    verdict: str, *, compared: bool, agrees: bool, checked: int, diffs: dict[str, tuple[Any, Any]]
) -> str:
    """Whether a source's own numbers agree with the recomputed ones, as one verdict (pure).

    ``compared`` is false when the source had no numbers; ``diffs`` maps a metric to
    ``(theirs, recomputed)``.

    Examples
    --------
    >>> "numbers agree" in verdict_html("Harbor's numbers agree", compared=True, agrees=True,
    ...                                  checked=3, diffs={})
    True
    """
    if not compared:
        return f'{PANEL_CSS}<div class="enb-panel enb-dim">{html.escape(verdict)}.</div>'
    if agrees:
        return (
            f'{PANEL_CSS}<div class="enb-panel"><span class="enb-agree">✓ '
            f"{html.escape(verdict)}</span> "
            f'<span class="enb-dim">({checked} values checked)</span></div>'
        )
    items = "".join(
        f"<li>{html.escape(f'{key}: Harbor {theirs!r}, recomputed {mine!r}')}</li>"
        for key, (theirs, mine) in diffs.items()
    )
    return (
        f'{PANEL_CSS}<div class="enb-panel"><span class="enb-disagree">✗ '
        f"{html.escape(verdict)}:</span><ul>{items}</ul></div>"
    )


def groups_html(frame: Any, label: str) -> str:
    """A per-group table: score, pass@k, coverage, bad cases (pure; from ``job.groups``)."""
    if frame is None or len(frame) == 0:
        return ""
    cols = list(frame.columns)
    k = int(frame["k"].iloc[0]) if "k" in cols and len(frame) else 0
    name_col = "value" if "value" in cols else "dimension"
    scaled = "range" in cols  # a dimension table: each row on its own scale
    rows = []
    for r in frame.to_dict("records"):
        score = r.get("score")
        if scaled and r.get("range") not in (None, "0–1") and r.get("range") == r.get("range"):
            is_rate = False  # e.g. a 0–100 dimension: its own units, never a % of one
        else:
            is_rate = score is None or score != score or 0 <= float(score) <= 1
        rows.append(
            [
                _scaled_name(r) if scaled else str(r.get(name_col)),
                f"{int(r['tasks']):,}",
                format_metric(score) if is_rate else format_number(score),
                format_metric(r.get("pass@k")),
                format_metric(r.get("pass^k")),
                f"{int(r['scored']):,}/{int(r['total']):,}",
                format_pct(r.get("coverage")),
                f"{int(r['complete_members']):,}/{int(r['tasks']):,}",
                f"{int(r['bad_cases']):,}" if r.get("bad_cases") == r.get("bad_cases") else "-",
            ]
        )
    # people's headers, from the one mapping (Subset, Tasks, Bad cases)
    header = [heading(c) for c in (label, "tasks", "score", f"pass@{k}", f"pass^{k}", "scored")]
    header += [heading(c) for c in ("coverage", "complete", "bad_cases")]
    bad = frame["bad_below"].iloc[0] if "bad_below" in cols else None
    note = "" if bad is None or bad != bad else f" (bad case: task score below {bad:g})"
    if scaled:
        note = " (bad case: a task's mean on the wrong side of its dimension's cut-off)"
    return (
        f'{PANEL_CSS}<div class="enb-panel"><h4>By {html.escape(label)}'
        f'<span class="enb-dim" style="font-weight:400">{html.escape(note)}</span></h4>'
        f"{rows_table(header, rows, set(range(1, 9)))}</div>"
    )


def _scaled_name(r: dict[str, Any]) -> str:
    """A dimension's name with its scale beside it (text, escaped by the table).

    Examples
    --------
    >>> _scaled_name({"dimension": "quality", "unit": "pct", "range": "0–100",
    ...               "higher_is_better": True, "bad_below": 50.0})
    'quality (0–100 pct · higher is better · bad below 50)'
    >>> _scaled_name({"dimension": "brevity", "unit": None, "range": "0–1",
    ...               "higher_is_better": None})
    'brevity (range not stated, values within 0–1 · direction not stated)'
    """
    unit, span = r.get("unit"), r.get("range")
    known = [str(p) for p in (span, unit) if p is not None and p == p]
    what = " ".join(known)
    if (unit is None or unit != unit) and r.get("dimension") not in ("reward", "composite"):
        # no unit from the source: its range is not stated (what the values span is said)
        what = "range not stated" + (f", values within {span}" if known else "")
    hib = r.get("higher_is_better") is not False
    parts = [what] if what else []
    stated = r.get("higher_is_better") is not None and r.get("higher_is_better") == r.get(
        "higher_is_better"
    )
    parts.append(
        ("higher is better" if hib else "lower is better") if stated else "direction not stated"
    )
    bad = r.get("bad_below")
    if bad is not None and bad == bad:
        parts.append(f"bad {'below' if hib else 'above'} {float(bad):g}")
    return f"{r.get('dimension')} ({' · '.join(parts)})"


def findings_html(findings: Any, *, titled: bool = True) -> str:
    """Diagnosis flags with their evidence (pure); ``titled``: False under a heading that
    already says "Diagnosis"."""
    items = list(findings or [])
    if not items:
        return f'{PANEL_CSS}<div class="enb-panel enb-dim">No diagnosis flags.</div>'
    out = []
    for f in items:
        sev = str(getattr(f, "severity", "warning"))
        title = str(getattr(f, "title", None) or getattr(f, "kind", None) or f)
        evidence = getattr(f, "evidence", None) or getattr(f, "message", None) or ""
        if isinstance(evidence, dict):
            evidence = ", ".join(f"{k}: {v}" for k, v in evidence.items())
        out.append(
            f'<div class="enb-flag enb-sev-{html.escape(sev)}"><b>{html.escape(title)}</b>'
            f"<div>{html.escape(str(evidence))}</div></div>"
        )
    title = "<h4>Diagnosis</h4>" if titled else ""
    return f'{PANEL_CSS}<div class="enb-panel">{title}{"".join(out)}</div>'


def bucket_counts_html(counts: pd.DataFrame, head: str, what: str) -> str:
    """A bucket result's counts table (``bucket``, ``range``, ``count``, ``share``, ``note``).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"bucket": ["hard"], "range": ["[0, 0.5)"], "count": [3],
    ...                   "share": [0.75], "note": [None]})
    >>> out = bucket_counts_html(f, "Buckets of j on pass_rate", "tasks")
    >>> ">3<" in out and ">75.0%<" in out
    True
    """
    rows = []
    for r in counts.to_dict("records"):
        share = r.get("share")
        rows.append(
            [str(r["bucket"]), str(r.get("range", "")), f"{int(r['count']):,}",
             "" if share is None or share != share else format_pct(share),
             str(r.get("note") or "")]
        )  # fmt: skip
    table = rows_table(["bucket", "range", what, "share", "note"], rows, {2, 3})
    return f'{PANEL_CSS}<div class="enb-panel"><h4>{html.escape(head)}</h4>{table}</div>'


def note_html(text: str) -> str:
    """A dim note in the panel's style (``text`` is HTML, written by the panel itself)."""
    return f'{PANEL_CSS}<div class="enb-panel enb-dim">{text}</div>'


def summarised_note_html(where: str) -> str:
    """The Cases tab of a summarised job: its attempts stayed ``where``.

    Examples
    --------
    >>> "stayed in Spark" in summarised_note_html("Spark")
    True
    """
    return (
        f'{PANEL_CSS}<div class="enb-panel"><div class="enb-flag">'
        f"<b>No cases here: this job is summarised.</b> Its attempts stayed in "
        f"{html.escape(where)}; only the per-task counts came into the workspace. The "
        "Overview and Buckets tabs work from them; to read cases, load the attempts "
        "themselves (<code>ws.load(...)</code>).</div></div>"
    )
