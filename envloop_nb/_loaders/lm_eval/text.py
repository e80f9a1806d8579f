"""What an lm-evaluation-harness sample line says the model was asked and answered.

The prompt of a doc's first request, and its filtered response with the reference —
for a multiple-choice doc, the choice with the highest loglikelihood (what lm-eval's
``acc`` picks) and the gold choice.

Examples
--------
>>> doc_prompt({"gen_args_0": {"arg_0": "Q: 2+2?\\nA:"}})
'Q: 2+2?\\nA:'
>>> doc_output({"filtered_resps": ["4"], "target": "4"})
('4', '4')
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["doc_output", "doc_prompt"]


def doc_prompt(arguments: Any) -> str | None:
    """The context of the doc's first request (``arguments.gen_args_0.arg_0``)."""
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            return str(first["arg_0"])
    if isinstance(arguments, list) and arguments and isinstance(arguments[0], list):
        return str(arguments[0][0]) if arguments[0] else None
    return None


def _choices(arguments: Any, n: int) -> list[str] | None:
    """A multiple-choice doc's continuations (``gen_args_<i>.arg_1``), one per request."""
    if not isinstance(arguments, dict) or len(arguments) != n or n < 2:
        return None
    out = [(arguments.get(f"gen_args_{i}") or {}).get("arg_1") for i in range(n)]
    texts = [c.strip() for c in out if isinstance(c, str)]
    return texts if len(texts) == n else None


def _loglikelihood(resp: Any) -> float | None:
    try:
        value = float(resp[0]) if isinstance(resp, list) and len(resp) == 2 else math.nan
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def doc_output(row: dict[str, Any]) -> tuple[str, str | None]:
    """The filtered response and the reference. For a multiple-choice doc (one
    ``[loglikelihood, is_greedy]`` per choice): the choice with the highest loglikelihood
    (what lm-eval's ``acc`` picks) and, when ``target`` is an index, the gold choice."""
    filtered, target = row["filtered_resps"], row.get("target")
    reference = None if target is None else str(target)
    if len(filtered) == 1 and isinstance(filtered[0], str):
        return filtered[0], reference
    choices = _choices(row.get("arguments"), len(filtered))
    lls = [_loglikelihood(r) for r in filtered]
    if choices is None or any(ll is None for ll in lls):
        return json.dumps(filtered, ensure_ascii=False), reference
    best = max(range(len(lls)), key=lambda i: lls[i] or 0.0)
    if reference is not None and reference.isdigit() and int(reference) < len(choices):
        reference = choices[int(reference)]
    return choices[best], reference
