"""Two attempts side by side: the pure renderer, ``job.compare_attempts``,
``comparison.side_by_side`` and the comparison panel's transitions opening it."""

from __future__ import annotations

import re

import pytest

import envloop_nb as enb
from envloop_nb._metrics.step_alignment import align_actions
from envloop_nb._present.side_by_side_html import SideBySide, side_by_side_html
from tests.steps_helpers import HOSTILE, job_with_steps, trajectory


def _rows_view(html: str) -> list[str]:
    view = html.split('<div class="enb-tr-view">', 1)[1].split("<template", 1)[0]
    return re.split(r'(?=<div class="enb-sbs-row)', view)[1:]


def test_the_first_divergence_is_marked_and_named() -> None:
    a = trajectory("A", 1, 60, seed=4)
    b = trajectory("A", 2, 60, seed=4, diverge_at=6)
    al = align_actions(a, b)
    assert al.first_divergence is not None
    v = side_by_side_html(a, b, pairs=al.pairs, same=al.same, first_divergence=al.first_divergence,
                          label_a="base", label_b="<new>")  # fmt: skip
    row = al.first_divergence + 1
    assert v.first_divergence == row
    ia, ib = al.pairs[al.first_divergence]
    assert (v.step_a, v.step_b) == (None if ia is None else ia + 1, None if ib is None else ib + 1)
    rows = _rows_view(v.html)
    assert "enb-first" in rows[al.first_divergence].split(">")[0]
    assert all("enb-diff" not in r.split(">")[0] for r in rows[: al.first_divergence])
    assert f"First divergence at row {row}" in v.html and f'data-go="{row}"' in v.html
    assert "&lt;new&gt;" in v.html and "<new>" not in v.html


def test_identical_actions_have_no_divergence_and_hostile_text_is_text() -> None:
    a = trajectory("A", 1, 30, seed=7)
    al = align_actions(a, a)
    v = side_by_side_html(a, a, pairs=al.pairs, same=al.same, first_divergence=al.first_divergence)
    assert v.first_divergence is None and "No divergence" in v.html
    assert "<script>alert" not in v.html and "&lt;script&gt;alert" in v.html
    assert HOSTILE[1].replace("'", "&#x27;") in v.html


def test_job_compare_attempts_shows_rewards_and_verdicts_on_top() -> None:
    job = job_with_steps(
        trajectory("A", 1, 80, seed=1), trajectory("A", 2, 90, seed=1, diverge_at=9)
    )
    v = job.compare_attempts("A", 1, 2)
    assert isinstance(v, SideBySide) and v._repr_html_() == v.html
    assert v.first_divergence is not None and v.step_a is not None
    top = v.html.split('<div class="enb-tr-view">', 1)[0]
    assert top.count('class="enb-sbs-head"') == 2 and "reward" in top
    assert "agent exited with code 1" in top  # attempt 2's error from the attempts row
    assert repr(v).startswith(f"<SideBySide {job.id} · A · attempt 1 | {job.id} · A · attempt 2")


def test_comparison_side_by_side_of_one_task_in_two_jobs() -> None:
    ws = enb.open()
    a = job_with_steps(trajectory("A", 1, 50, seed=1), ws=ws)
    b = job_with_steps(trajectory("A", 1, 50, seed=1, diverge_at=5), job_id="b", ws=ws)
    cmp = ws.compare([a, b], baseline=a)
    v = cmp.side_by_side("A", jobs=(a, "b"), attempts=(1, 1))
    assert v.label_a == f"{a.id} · A · attempt 1" and v.label_b == "b · A · attempt 1"
    assert v.first_divergence is not None
    assert cmp.side_by_side("A").label_b == v.label_b  # baseline and the first other job
    with pytest.raises(ValueError, match="not a job of this comparison: nope"):
        cmp.side_by_side("A", jobs=(a, "nope"))


def test_a_transition_opens_a_task_side_by_side_in_the_panel() -> None:
    ws = enb.open()
    a = job_with_steps(trajectory("A", 1, 50, seed=1), trajectory("A", 2, 20, seed=2), ws=ws)
    b = job_with_steps(trajectory("A", 1, 50, seed=1, diverge_at=5), job_id="b", ws=ws)
    panel = ws.compare([a, b], baseline=a).panel()
    opened = False
    for (job, _name), button in panel.transition_buttons.items():
        if job != "b":
            continue
        button.click()
        if "A" in panel.side_task_buttons:
            opened = True
            break
    assert opened, "no transition of job b lists task A"
    assert panel.side_by_side.value == ""
    panel.side_task_buttons["A"].click()
    assert panel.message.value == ""
    assert "First divergence at row" in panel.side_by_side.value
    assert f"{a.id} · A · attempt 1" in panel.side_by_side.value
    panel.side_attempts[0].value = 2  # the baseline's attempt 2 against b's attempt 1
    assert f"{a.id} · A · attempt 2" in panel.side_by_side.value
    panel.side_attempts[1].value = 2  # b has no steps there: still shown, one side empty
    assert panel.message.value == "" and "b · A · attempt 2" in panel.side_by_side.value
