"""A job's inference configuration and its consumption table as HTML (pure, escaped).

Plain dicts and records in (``InferenceConfig.to_dict()``, ``consumption(...)`` rows),
HTML out; the Overview tab and the standalone report show the same strings.

Examples
--------
>>> rows = [{"model": "m", "role": "evaluated", "attempts": 4, "reported": 3,
...          "input_tokens": 1200, "output_tokens": 300, "cache_tokens": None,
...          "cost_usd": None, "where": "attempts"}]
>>> out = consumption_html(rows)
>>> "1,200" in out and "3 of 4 attempts" in out and "not reported" in out
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["consumption_html", "inference_html", "inference_summary"]


def _n(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return '<span class="enb-dim">not reported</span>'
    return f"{int(v):,}"


def _cost(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return '<span class="enb-dim">not reported</span>'
    return f"${float(v):,.4f}" if float(v) < 100 else f"${float(v):,.2f}"


def consumption_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The consumption table: model, role, input / output / cache tokens, cost, and which
    attempts reported them (missing usage is "not reported", never 0)."""
    body = []
    for r in rows:
        attempts, reported = r.get("attempts"), r.get("reported")
        if r.get("where") == "log":
            basis = "the log's own accounting"
        elif r.get("where") == "attempts" and attempts is not None and reported is not None:
            basis = f"{int(reported):,} of {int(attempts):,} attempts"
        else:
            basis = str(r.get("where") or "-")
        cells = [
            html.escape(str(r.get("model") or "-")),
            html.escape(str(r.get("role") or "-")),
            _n(r.get("input_tokens")),
            _n(r.get("output_tokens")),
            _n(r.get("cache_tokens")),
            _cost(r.get("cost_usd")),
            html.escape(basis),
        ]
        body.append(
            "<tr>"
            + "".join(
                f'<td class="{"num" if 2 <= i <= 5 else ""}">{c}</td>' for i, c in enumerate(cells)
            )
            + "</tr>"
        )
    head = "".join(
        f'<th class="{"num" if 2 <= i <= 5 else ""}">{h}</th>'
        for i, h in enumerate(
            ["model", "role", "input tokens", "output tokens", "cache tokens", "cost", "from"]
        )
    )
    return (
        '<div class="enb-consumption"><h4>Consumption</h4>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def inference_summary(config: Mapping[str, Any]) -> str:
    """One line for the facts table: how many parameters and whether a system prompt is
    known (pure).

    Examples
    --------
    >>> inference_summary({"params": {"t": "0.7"}, "system_prompt": "Be brief."})
    '1 parameter · system prompt (9 characters)'
    >>> inference_summary({"params": {}, "system_prompt": None})
    'not recorded by the source'
    """
    params = config.get("params") or {}
    parts = []
    if params:
        parts.append(f"{len(params)} parameter{'s' if len(params) != 1 else ''}")
    prompt = config.get("system_prompt")
    if isinstance(prompt, str):
        parts.append(f"system prompt ({len(prompt):,} characters)")
    return " · ".join(parts) or "not recorded by the source"


def inference_html(config: Mapping[str, Any]) -> str:
    """The system prompt (in full, preformatted) and the parameter table (pure).

    Examples
    --------
    >>> out = inference_html({"model": "m", "method": "r", "system_prompt": "<b>hi</b>",
    ...     "system_prompt_from": "configured", "system_prompts_seen": 0,
    ...     "params": {"temperature": "0.7"}, "concurrency": 8, "where": "profile"})
    >>> "&lt;b&gt;hi&lt;/b&gt;" in out and "temperature" in out and "8" in out
    True
    """
    prompt = config.get("system_prompt")
    seen = int(config.get("system_prompts_seen") or 0)
    if isinstance(prompt, str):
        configured = config.get("system_prompt_from") == "configured"
        if configured:
            note = "as configured"
            if seen:
                note += f" · the inputs open with {seen:,} system message{'s' if seen > 1 else ''}"
        elif seen > 1:
            note = (
                f"from the inputs: they open with {seen:,} different system messages; "
                "the most common is shown"
            )
        else:
            note = "from the inputs: the system message they open with"
        prompt_html = (
            f'<h4>System prompt <span class="enb-dim">{html.escape(note)}</span></h4>'
            f'<pre class="enb-prompt">{html.escape(prompt)}</pre>'
        )
    else:
        prompt_html = '<h4>System prompt</h4><div class="enb-dim">none recorded</div>'
    params = dict(config.get("params") or {})
    if config.get("concurrency") is not None:
        params = {"concurrency": str(config["concurrency"])} | params
    if params:
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
            for k, v in params.items()
        )
        where = config.get("where")
        src = f' <span class="enb-dim">from {html.escape(str(where))}</span>' if where else ""
        params_html = f'<h4>Parameters{src}</h4><table class="enb-facts">{rows}</table>'
    else:
        params_html = '<h4>Parameters</h4><div class="enb-dim">none recorded by the source</div>'
    style = (
        "<style>.enb-prompt{white-space:pre-wrap;max-height:240px;overflow:auto;margin:0;"
        "padding:6px 8px;background:var(--jp-layout-color2,#8881);font-size:12px}"
        ".enb-inference td{white-space:normal;word-break:break-word}</style>"
    )
    return f'{style}<div class="enb-inference">{prompt_html}{params_html}</div>'
