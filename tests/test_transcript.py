"""An attempt's transcript: the pure renderer, ``job.transcript`` and the Cases tab's detail."""

from __future__ import annotations

import re

import pytest

import envloop_nb as enb
from envloop_nb._present.paged_view import MAX_MARKS
from envloop_nb._present.transcript_html import Transcript, transcript_html
from tests.steps_helpers import HOSTILE, job_with_steps, trajectory


def _view(html: str) -> str:
    """The part of a transcript shown before any script runs (the first page)."""
    return html.split('<div class="enb-tr-view">', 1)[1].split("<template", 1)[0]


def _rows(*rows: dict) -> list[dict]:
    return [{"step": n, **r} for n, r in enumerate(rows, 1)]


def test_hostile_content_shows_as_text() -> None:
    rows = _rows(
        {"role": "user", "kind": "message", "content": HOSTILE[0]},
        {"role": "assistant", "kind": "tool_call", "tool": "sql<b>", "call_id": "c1",
         "arguments": '{"q": "\'); DROP TABLE jobs; --"}'},
        {"role": "tool", "kind": "tool_result", "tool": "sql", "call_id": "c1", "content": HOSTILE[2]},
    )  # fmt: skip
    out = transcript_html(
        rows, {"task": "<i>t</i>", "attempt": 1, "judge_summary": HOSTILE[0]}
    ).html
    assert "<script>alert" not in out and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in out
    assert "sql&lt;b&gt;" in out and "<i>t</i>" not in out
    assert "&#x27;); DROP TABLE jobs; --" in out
    assert "=HYPERLINK(&quot;http://evil.example&quot;,&quot;click&quot;)" in out
    # the only scripts are ours: the page data (JSON) and the wiring
    assert re.findall(r"<script[^>]*>", out) == [
        '<script type="application/json" class="enb-tr-data">',
        "<script>",
    ]


def test_a_result_sits_in_its_calls_card_by_id_or_by_order_in_the_turn() -> None:
    rows = _rows(
        {"role": "assistant", "kind": "tool_call", "turn": 1, "tool": "ls", "call_id": "a"},
        {"role": "assistant", "kind": "tool_call", "turn": 1, "tool": "cat", "call_id": "b"},
        {"role": "tool", "kind": "tool_result", "turn": 1, "tool": "cat", "call_id": "b", "content": "B-OUT"},
        {"role": "tool", "kind": "tool_result", "turn": 1, "tool": "ls", "call_id": "a", "content": "A-OUT",
         "is_error": True, "duration_s": 1.5},
        {"role": "assistant", "kind": "tool_call", "turn": 2, "tool": "grep"},
        {"role": "assistant", "kind": "tool_call", "turn": 2, "tool": "find"},
        {"role": "tool", "kind": "tool_result", "turn": 2, "content": "GREP-OUT"},
        {"role": "tool", "kind": "tool_result", "turn": 2, "content": "FIND-OUT"},
        {"role": "assistant", "kind": "tool_call", "turn": 3, "tool": "final"},
    )  # fmt: skip
    t = transcript_html(rows, {"task": "A", "attempt": 1})
    view = _view(t.html)
    cards = re.findall(
        r'<div class="enb-step enb-block[^"]*"[^>]*data-step="(\d+)".*?(?=<div class="enb-step enb-block|$)',
        view,
        re.S,
    )
    assert cards == ["1", "2", "5", "6", "9"]  # results are inside their call's card
    blocks = re.split(r'(?=<div class="enb-step enb-block)', view)[1:]
    assert "A-OUT" in blocks[0] and "enb-result enb-e" in blocks[0] and "1.5 s" in blocks[0]
    assert "B-OUT" in blocks[1] and "A-OUT" not in blocks[1]
    assert "GREP-OUT" in blocks[2] and "FIND-OUT" in blocks[3]
    assert "no result recorded" in blocks[4]
    assert t.first_error == 4 and 'data-go="4"' in t.html and "jump to first error" in t.html


def test_reasoning_folds_long_text_folds_sub_agents_indent_copied_greys() -> None:
    rows = _rows(
        {"role": "user", "kind": "message", "content": "old context", "copied": True},
        {"role": "assistant", "kind": "reasoning", "content": "think " * 50},
        {"role": "assistant", "kind": "message", "content": "\n".join(f"l{i}" for i in range(100))},
        {"role": "assistant", "kind": "subagent", "tool": "helper", "content": "go"},
        {"role": "assistant", "kind": "message", "content": "sub says", "agent": "helper", "parent_step": 4},
        {"role": "environment", "kind": "error", "content": "parse failed", "is_error": True},
    )  # fmt: skip
    view = _view(transcript_html(rows).html)
    blocks = re.split(r'(?=<div class="enb-step enb-block)', view)[1:]
    assert "enb-copied" in blocks[0].split(">")[0]
    assert '<details class="enb-fold"><summary>▸ reasoning · 300 characters' in blocks[1]
    assert "show more · 88 more lines" in blocks[2]
    assert 'style="margin-left:18px"' in blocks[4] and "⤷ helper" in blocks[4]
    assert "enb-e" in blocks[5].split(">")[0] and "enb-k-error" in blocks[5].split(">")[0]


def test_a_step_past_the_size_limit_is_cut_with_a_note() -> None:
    rows = _rows({"role": "tool", "kind": "message", "content": "x" * 50_000})
    assert "30,000 more characters not shown (job.steps() has them)" in transcript_html(rows).html


def test_ten_thousand_steps_come_in_pages_with_a_small_first_screen() -> None:
    rows = trajectory("A", 1, 10_000, seed=3)
    t = transcript_html(rows, {"task": "A", "attempt": 1}, page_size=200)
    assert t.steps == 10_000 and 45 <= t.pages <= 60
    first = _view(t.html)
    assert 100 <= first.count('class="enb-step enb-block') <= 200  # a page, not 10,000 steps
    assert t.html.count('<template class="enb-tr-page">') == t.pages
    assert t.html.count('<a class="enb-k-') <= MAX_MARKS  # the timeline stays small
    assert 'type="search"' in t.html and 'data-act="next"' in t.html
    # every step is somewhere, exactly once as a block or a result in a card
    shown = re.findall(r'<template class="enb-tr-page">.*?</template>', t.html, re.S)
    steps = [
        int(n)
        for page in shown
        for n in re.findall(r'(?:enb-block|enb-result)[^"]*"[^>]*data-step="(\d+)"', page)
    ]
    assert sorted(steps) == list(range(1, 10_001))


def test_an_attempt_without_steps_says_so() -> None:
    t = transcript_html([], {"task": "A", "attempt": 2, "reward": 1.0})
    assert t.steps == 0 and "its source recorded none" in t.html


def test_job_transcript_renders_in_a_notebook() -> None:
    job = job_with_steps(trajectory("A", 1, 300, seed=1))
    t = job.transcript("A", 1, page_size=100)
    assert isinstance(t, Transcript) and t._repr_html_() == t.html
    assert t.steps == 300 and t.pages >= 3
    assert repr(t).startswith("<Transcript task 'A' · attempt 1 · 300 steps")
    assert "reward" in t.html and "acme-7b" in t.html
    with pytest.raises(KeyError, match="no attempt 9"):
        job.transcript("A", 9)


def test_the_cases_tab_shows_the_transcript_of_an_attempt_with_steps() -> None:
    job = job_with_steps(trajectory("A", 1, 40, seed=2))
    cases = job.panel().cases
    tasks = [(str(r.task), int(r.attempt)) for r in cases.frame.itertuples()]
    cases.select_row(tasks.index(("A", 1)))
    assert "enb-tr" in cases.detail.value and "enb-tl" in cases.detail.value
    assert "figures, input, output and reference" in cases.detail.value
    cases.select_row(tasks.index(("A", 2)))  # no steps: the detail as it always was
    assert "enb-tr" not in cases.detail.value and "<h5>input</h5>" in cases.detail.value
    cases.view.value = "task"
    cases.select_row([str(t) for t in cases.frame["task"]].index("A"))
    cases.open_task_attempt(1)
    assert "enb-tr" in cases.attempt_detail.value


def test_a_job_without_steps_keeps_its_cases_detail() -> None:
    job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    cases = job.panel().cases
    cases.select_row(0)
    assert "enb-detail" in cases.detail.value and "enb-tr" not in cases.detail.value
