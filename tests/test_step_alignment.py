"""Two attempts' steps aligned by their actions, and the first divergence."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from envloop_nb._metrics.step_alignment import (
    action_key,
    align_actions,
    align_steps,
    canonical_arguments,
)


def _call(tool: str, args: str = "{}") -> dict[str, str]:
    return {"kind": "tool_call", "role": "assistant", "tool": tool, "arguments": args}


def _msg(role: str = "assistant", text: str = "") -> dict[str, str]:
    return {"kind": "message", "role": role, "content": text}


def test_first_divergence_is_the_first_differing_call() -> None:
    a = [_msg("user"), _call("ls"), _call("cat", '{"path": "a.py"}'), _msg()]
    b = [_msg("user"), _call("ls"), _call("cat", '{"path": "b.py"}'), _msg()]
    al = align_actions(a, b)
    assert al.first_divergence == 2
    assert al.divergence_steps() == (2, 2)
    assert al.same == (True, True, False, True)


def test_same_arguments_in_another_key_order_or_spacing_are_the_same_call() -> None:
    a = [_call("sql", '{"q": "x", "limit": 5}')]
    b = [_call("sql", '{"limit":5,"q":"x"}')]
    assert align_actions(a, b).first_divergence is None


def test_text_alone_does_not_diverge_but_a_missing_step_does() -> None:
    assert align_actions([_msg(text="hi")], [_msg(text="hello")]).first_divergence is None
    al = align_actions([_msg("user"), _call("ls")], [_msg("user")])
    assert al.first_divergence == 1 and al.pairs == ((0, 0), (1, None))


def test_a_detour_leaves_gaps_and_the_common_steps_line_up_again() -> None:
    a = [_msg("user"), _call("ls"), _call("pytest"), _msg()]
    b = [_msg("user"), _call("cat"), _call("grep"), _call("ls"), _call("pytest"), _msg()]
    al = align_actions(a, b)
    assert al.first_divergence == 1
    assert al.pairs == ((0, 0), (None, 1), (None, 2), (1, 3), (2, 4), (3, 5))
    assert al.same == (True, False, False, True, True, True)


def test_action_keys_and_canonical_arguments() -> None:
    assert (
        action_key("tool_call", "assistant", "bash", {"b": 1, "a": 2}) == 'call bash {"a":2,"b":1}'
    )
    assert action_key("tool_result", "tool", "bash") == "result bash"
    assert action_key("reasoning", "assistant") == "reasoning assistant"
    assert canonical_arguments("not json") == "not json"
    assert canonical_arguments(float("nan")) == ""


_keys = st.lists(st.sampled_from(["message user", "call ls {}", "call cat {}", "result ls", "m"]),
                 max_size=40)  # fmt: skip


@settings(deadline=None, max_examples=200)
@given(_keys)
def test_a_sequence_aligned_with_itself_never_diverges(keys: list[str]) -> None:
    al = align_steps(keys, keys)
    assert al.first_divergence is None and not al.diverged
    assert al.pairs == tuple((i, i) for i in range(len(keys)))


@settings(deadline=None, max_examples=300)
@given(_keys, _keys)
def test_every_step_of_both_sides_appears_once_in_order(a: list[str], b: list[str]) -> None:
    al = align_steps(a, b)
    assert [p[0] for p in al.pairs if p[0] is not None] == list(range(len(a)))
    assert [p[1] for p in al.pairs if p[1] is not None] == list(range(len(b)))
    for (i, j), same in zip(al.pairs, al.same, strict=True):
        assert same == (i is not None and j is not None and a[i] == b[j])
    prefix = next(
        (n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    if a == b:
        assert al.first_divergence is None
    else:
        assert al.first_divergence == prefix and not al.same[prefix]
        assert all(al.same[:prefix])
