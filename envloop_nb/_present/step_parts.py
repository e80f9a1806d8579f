"""Parts of a step the transcript and the side-by-side view both show (pure): a tool
call's arguments (pretty JSON, multi-line values shown as they read), a step's usage
and duration in one line, whether a step is an error. Escaped HTML or plain text out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .paged_view import FOLD_CHARS, FOLD_LINES, fold_text
from .paged_view import esc as _esc
from .paged_view import missing_as_none as _v

__all__ = ["arguments_html", "is_error_step", "pretty_arguments", "step_meta"]


def pretty_arguments(arguments: Any) -> str:
    """A tool call's arguments as indented JSON (text that is not JSON as it is).

    Examples
    --------
    >>> print(pretty_arguments('{"cmd": "ls", "n": 2}'))
    {
      "cmd": "ls",
      "n": 2
    }
    """
    if _v(arguments) is None:
        return ""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def arguments_html(arguments: Any, *, chars: int = FOLD_CHARS, lines: int = FOLD_LINES) -> str:
    """A tool call's arguments: the JSON pretty-printed, and each text value that runs
    over several lines (a script, a file) shown as it reads, under its key. Escaped.

    Examples
    --------
    >>> out = arguments_html('{"code": "x = 1\\\\nprint(x)", "timeout": 30}')
    >>> "x = 1\\nprint(x)" in out and "timeout&quot;: 30" in out and "code" in out
    True
    >>> arguments_html(None)
    '<div class="enb-label">no arguments</div>'
    """
    text = pretty_arguments(arguments)
    if not text:
        return '<div class="enb-label">no arguments</div>'
    value: Any = None
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            value = None
    elif isinstance(arguments, dict):
        value = arguments
    if not isinstance(value, dict):
        return f'<div class="enb-label">arguments</div>{fold_text(text, chars=chars, lines=lines)}'
    long = {k: v for k, v in value.items() if isinstance(v, str) and "\n" in v}
    rest = {k: v for k, v in value.items() if k not in long}
    parts = []
    if rest or not long:
        parts.append(
            f'<div class="enb-label">arguments</div>'
            f"{fold_text(json.dumps(rest, indent=2, ensure_ascii=False), chars=chars, lines=lines)}"
        )
    for key, body in long.items():
        parts.append(
            f'<div class="enb-label">{_esc(key)}</div>{fold_text(body, chars=chars, lines=lines)}'
        )
    return "".join(parts)


def step_meta(row: Mapping[str, Any]) -> str:
    """Tokens, cost and duration of a step, as one short text (empty when none).

    Examples
    --------
    >>> step_meta({"tokens_in": 1200, "tokens_out": 35, "tokens_cached": 1000, "duration_s": 2.5})
    'in 1,200 · out 35 · cached 1,000 tok · 2.5 s'
    """
    parts = []
    tin, tout, tcached = (_v(row.get(k)) for k in ("tokens_in", "tokens_out", "tokens_cached"))
    if tin is not None:
        parts.append(f"in {int(tin):,}")
    if tout is not None:
        parts.append(f"out {int(tout):,}")
    if tcached is not None:
        parts.append(f"cached {int(tcached):,}")
    if parts:
        parts[-1] += " tok"
    cost = _v(row.get("cost_usd"))
    if cost is not None:
        parts.append(f"${float(cost):.4g}")
    dur = _v(row.get("duration_s"))
    if dur is not None:
        parts.append(f"{float(dur):,.3g} s" if float(dur) < 100 else f"{float(dur):,.0f} s")
    return " · ".join(parts)


def is_error_step(row: Mapping[str, Any]) -> bool:
    """Whether a step is an error: an ``error`` row or one marked ``is_error``."""
    return bool(_v(row.get("is_error"))) or row.get("kind") == "error"
