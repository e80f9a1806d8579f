"""Compact transcripts: ``transcript_html(compact=True)`` and the HTML report's hard cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._export import html_report
from envloop_nb._present.transcript_html import TRANSCRIPT_CSS, transcript_html
from tests.conftest import THREE_TASKS
from tests.steps_helpers import HOSTILE, job_with_steps, trajectory


def _rows(n: int, text: str = "ok") -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"step": 1, "turn": 1, "role": "user", "kind": "message", "content": HOSTILE[0]}
    ]
    for i in range(2, n + 1):
        rows.append({"step": i, "turn": i, "role": "assistant", "kind": "message", "content": text})
    return rows


def test_compact_shows_the_rows_given_and_marks_the_gaps() -> None:
    rows = _rows(120)
    shown = rows[:10] + rows[-6:]
    t = transcript_html(shown, {"task": "A", "attempt": 2, "reward": 0.0, "status": "failed"},
                        compact=True, total_steps=120)  # fmt: skip
    assert t.steps == 120 and t.pages == 1
    assert "task A · attempt 2 · reward 0 · failed · 120 steps, 16 shown" in t.html
    assert "… 104 steps not shown (#11–#114) …" in t.html
    assert t.html.count('class="enb-step enb-block') == 16
    assert "<script" not in t.html.replace("&lt;script", "") and "<template" not in t.html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in t.html
    tail = transcript_html(rows[:10], {"task": "A", "attempt": 2}, compact=True, total_steps=12)
    assert "… 2 steps not shown (#11–#12) …" in tail.html


def test_compact_cuts_long_text_with_a_note() -> None:
    rows = _rows(3, "y" * 5_000)
    t = transcript_html(rows, {"task": "A", "attempt": 1}, compact=True, max_chars=100)
    assert t.html.count("4,900 more characters not shown") == 2 and "y" * 101 not in t.html
    # a query cut the text already: the whole length comes in content_chars
    cut = [{**r, "content": "z" * 100, "content_chars": 9_000} for r in rows[1:]]
    t = transcript_html(cut, {"task": "A", "attempt": 1}, compact=True, max_chars=100)
    assert t.html.count("8,900 more characters not shown") == 2


def test_compact_call_whose_result_is_cut() -> None:
    rows = [
        {"step": 1, "turn": 1, "role": "assistant", "kind": "tool_call", "tool": "bash",
         "call_id": "c1", "arguments": '{"cmd": "ls"}'},
        {"step": 9, "turn": 5, "role": "tool", "kind": "tool_result", "tool": "bash",
         "call_id": "c7", "content": "x"},
    ]  # fmt: skip
    t = transcript_html(rows, {"task": "A", "attempt": 1}, compact=True, total_steps=9)
    assert "no result among the steps shown" in t.html
    assert "its call is not among the steps shown" in t.html


def test_transcript_cards_are_not_summary_cards() -> None:
    """The summary cards' ``.enb-card`` (max-width 240px) must not squeeze a tool card
    when both are on one page (the report, a notebook)."""
    rule = re.search(r"\.enb-tr \.enb-card\{[^}]*\}", TRANSCRIPT_CSS)
    assert rule is not None and "max-width:none" in rule.group(0)
    assert "padding:0" in rule.group(0)


def test_report_hard_cases_show_compact_transcripts(tmp_path: Path) -> None:
    job = job_with_steps(trajectory("A", 2, 120, seed=3), trajectory("B", 1, 30, seed=7))
    out = job.export_html(tmp_path / "r.html")
    text = out.path.read_text(encoding="utf-8")
    assert "Transcripts of 2 hard cases" in text
    assert text.count('<div class="enb-tr enb-tr-compact"') == 2
    assert "task A · attempt 2 · reward 0 · failed · 120 steps, 16 shown" in text
    assert "<script src" not in text and 'http-equiv="Content-Security-Policy"' in text
    hard = text[text.index("Transcripts of") :]
    assert "<script>alert" not in hard and "&lt;script&gt;alert" in hard
    assert "<template" not in hard


def test_report_transcripts_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "w" * 20_000
    rows = [
        {"task": t, "attempt": 1, "step": i, "turn": i, "role": "assistant", "kind": "message",
         "content": big}
        for t in ("A", "B", "C") for i in range(1, 301)
    ]  # fmt: skip
    job = job_with_steps(rows)
    monkeypatch.setattr(html_report, "HARD_TRANSCRIPTS", 2)
    html = html_report._hard_cases(job, "unknown", None, 50)
    assert html.count('<div class="enb-tr enb-tr-compact"') == 2
    assert html.count('class="enb-step enb-block') == 2 * (
        html_report.HEAD_STEPS + html_report.TAIL_STEPS
    )
    assert "w" * 601 not in html and len(html) < 150_000  # not 2 × 300 × 20,000 characters


def test_report_without_steps_has_no_transcripts(tmp_path: Path) -> None:
    job = enb.open().load(THREE_TASKS)
    html = html_report._hard_cases(job, "unknown", None, 50)
    assert "Hard" not in html or "Transcripts of" not in html
    assert "enb-tr-compact" not in html
