"""Two attempts' steps aligned step by step, and where they first part ways (pure).

Each step is reduced to its *action*: a tool call is its tool name and its arguments as
canonical JSON (keys sorted, no spaces: ``{"b": 1, "a": 2}`` and ``{"a":2,"b":1}`` are
the same call); a tool result is ``result <tool>`` (what came back is the world's
answer, not the agent's action); any other step is its kind and role (``message
assistant``, ``reasoning assistant``). Text is not compared: two attempts that made the
same calls in the same order have not diverged, whatever they wrote around them.

The steps are paired one to one up to the first position where their actions differ;
after it they are aligned by the longest matching blocks
(:class:`difflib.SequenceMatcher`), so a detour in one attempt leaves gaps on the other
side and the steps both took again line up.

The **first divergence** (:func:`align_actions`) is where the agents' *decisions* first
differ: the first step whose tool call or message differs, or where one attempt stops
while the other goes on. Reasoning (thinking, not acting) and tool results (the world's
answer) are shown in the alignment but do not decide it: one attempt that thought aloud
before the same call has not diverged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

__all__ = ["Alignment", "action_key", "align_actions", "align_steps", "canonical_arguments"]

#: Beyond this many pairs of steps after the divergence, the tails are paired by
#: position instead of aligned (SequenceMatcher is quadratic in the worst case).
MAX_ALIGNED_CELLS = 4_000_000


def canonical_arguments(arguments: Any) -> str:
    """A tool call's arguments as canonical JSON text (keys sorted, compact).

    Text that is not JSON stays as it is; no arguments is ``""``.

    Examples
    --------
    >>> canonical_arguments('{"b": 1, "a": [2, {"d": 0, "c": 1}]}')
    '{"a":[2,{"c":1,"d":0}],"b":1}'
    >>> canonical_arguments({"x": "é"}), canonical_arguments("ls -l"), canonical_arguments(None)
    ('{"x":"é"}', 'ls -l', '')
    """
    if arguments is None or (isinstance(arguments, float) and arguments != arguments):
        return ""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def action_key(
    kind: str, role: str | None = None, tool: str | None = None, arguments: Any = None
) -> str:
    """The action a step stands for (what the alignment compares).

    Examples
    --------
    >>> action_key("tool_call", "assistant", "bash", '{"cmd": "ls"}')
    'call bash {"cmd":"ls"}'
    >>> action_key("tool_result", "tool", "bash"), action_key("message", "user")
    ('result bash', 'message user')
    """
    if kind == "tool_call":
        return f"call {tool} {canonical_arguments(arguments)}"
    if kind == "tool_result":
        return f"result {tool or ''}".rstrip()
    return f"{kind} {role or ''}".rstrip()


@dataclass(frozen=True)
class Alignment:
    """Two step sequences side by side.

    ``pairs`` holds ``(a, b)`` positions (0-based) into the two sequences, ``None`` where
    one side has no step facing the other's; ``first_divergence`` is the index into
    ``pairs`` of the first pair whose actions differ (``None``: the attempts took the
    same actions throughout); ``same`` marks the pairs whose actions are equal.
    """

    pairs: tuple[tuple[int | None, int | None], ...]
    same: tuple[bool, ...]
    first_divergence: int | None

    @property
    def diverged(self) -> bool:
        """Whether the two attempts' actions differ anywhere."""
        return self.first_divergence is not None

    def divergence_steps(self) -> tuple[int | None, int | None]:
        """Positions (0-based) in ``a`` and ``b`` of the first divergence (``None`` each
        when there is none, or when that side has no step there)."""
        if self.first_divergence is None:
            return None, None
        return self.pairs[self.first_divergence]


def align_steps(a: Sequence[str], b: Sequence[str]) -> Alignment:
    """Align two sequences of action keys (see the module docstring).

    Examples
    --------
    >>> al = align_steps(["u", "call ls", "call cat", "m"], ["u", "call ls", "call rm", "m"])
    >>> al.first_divergence, al.divergence_steps()
    (2, (2, 2))
    >>> al.pairs, al.same
    (((0, 0), (1, 1), (2, 2), (3, 3)), (True, True, False, True))
    >>> detour = align_steps(["u", "call a", "m"], ["u", "call x", "call y", "call a", "m"])
    >>> detour.pairs, detour.first_divergence
    (((0, 0), (None, 1), (None, 2), (1, 3), (2, 4)), 1)
    >>> align_steps(["u", "m"], ["u", "m"]).first_divergence is None
    True
    >>> align_steps(["u"], ["u", "m"]).pairs[1:], align_steps(["u"], ["u", "m"]).first_divergence
    (((None, 1),), 1)
    """
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    pairs: list[tuple[int | None, int | None]] = [(i, i) for i in range(prefix)]
    same = [True] * prefix
    if prefix == len(a) == len(b):
        return Alignment(tuple(pairs), tuple(same), None)
    divergence = len(pairs)
    rest_a, rest_b = a[prefix:], b[prefix:]
    if len(rest_a) * len(rest_b) > MAX_ALIGNED_CELLS:
        blocks = [(0, 0, 0)]  # no matching blocks: pair the tails by position
    else:
        matcher = SequenceMatcher(None, list(rest_a), list(rest_b), autojunk=False)
        blocks = [(m.a, m.b, m.size) for m in matcher.get_matching_blocks()]
    i = j = 0
    for bi, bj, size in [*blocks, (len(rest_a), len(rest_b), 0)]:
        # the unmatched stretch before the block: steps facing each other share a row
        # (they differ), the longer side's surplus faces gaps
        while i < bi or j < bj:
            pa = prefix + i if i < bi else None
            pb = prefix + j if j < bj else None
            pairs.append((pa, pb))
            same.append(False)
            i += pa is not None
            j += pb is not None
        for _ in range(size):
            pairs.append((prefix + i, prefix + j))
            same.append(True)
            i += 1
            j += 1
    return Alignment(tuple(pairs), tuple(same), divergence)


#: Rows that are not the agent's decisions: they are aligned, but do not decide the
#: first divergence.
NOT_ACTIONS = ("reasoning", "tool_result")


def align_actions(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> Alignment:
    """Align two attempts' step rows (mappings with ``kind``, ``role``, ``tool``,
    ``arguments``, as ``job.steps()`` gives them); the first divergence is the first
    differing decision (see the module docstring).

    Examples
    --------
    >>> call = {"kind": "tool_call", "role": "assistant", "tool": "ls", "arguments": '{"p": "."}'}
    >>> other = dict(call, arguments='{"p": "/"}')
    >>> align_actions([call, call], [call, other]).first_divergence
    1
    >>> think = {"kind": "reasoning", "role": "assistant"}
    >>> al = align_actions([call, think, other], [call, other])  # thought first: same call
    >>> al.first_divergence is None, al.pairs
    (True, ((0, 0), (1, None), (2, 1)))
    """
    rows_a, rows_b = list(a), list(b)
    shown = align_steps([_key(r) for r in rows_a], [_key(r) for r in rows_b])
    acts_a = [(i, _key(r)) for i, r in enumerate(rows_a) if r.get("kind") not in NOT_ACTIONS]
    acts_b = [(i, _key(r)) for i, r in enumerate(rows_b) if r.get("kind") not in NOT_ACTIONS]
    n = 0
    while n < min(len(acts_a), len(acts_b)) and acts_a[n][1] == acts_b[n][1]:
        n += 1
    if n == len(acts_a) == len(acts_b):
        return Alignment(shown.pairs, shown.same, None)
    step_a = acts_a[n][0] if n < len(acts_a) else None
    step_b = acts_b[n][0] if n < len(acts_b) else None
    at = min(  # the first row showing either side's first differing decision
        k
        for k, (pa, pb) in enumerate(shown.pairs)
        if (step_a is not None and pa == step_a) or (step_b is not None and pb == step_b)
    )
    return Alignment(shown.pairs, shown.same, at)


def _key(row: Mapping[str, Any]) -> str:
    return action_key(
        str(row.get("kind")), _text(row.get("role")), _text(row.get("tool")), row.get("arguments")
    )


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value)
