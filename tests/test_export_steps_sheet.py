"""The job workbook's Steps sheet: the exported attempts' steps, capped, formula-safe."""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import load_workbook

import envloop_nb as enb
from envloop_nb._export import steps_sheet
from tests.conftest import THREE_TASKS
from tests.steps_helpers import HOSTILE, job_with_steps, trajectory

HEADER = (  # people's headers, as every sheet's (issue 37)
    "Task", "Attempt", "Step", "Turn", "Agent", "Role", "Kind", "Tool", "Call id", "Arguments",
    "Content", "Error", "Copied", "Tokens in", "Tokens out", "Tokens cached",
)  # fmt: skip


def _hostile_job() -> enb.Job:
    rows = [
        {"turn": 1, "role": "user", "kind": "message", "content": HOSTILE[2]},
        {"turn": 2, "role": "assistant", "kind": "tool_call", "tool": "sql", "call_id": "c1",
         "arguments": '{"query": "=1+1"}', "tokens_in": 12, "tokens_out": 3},
        {"turn": 2, "role": "tool", "kind": "tool_result", "tool": "sql", "call_id": "c1",
         "content": "+SUM(A1:A9)", "is_error": True},
        {"turn": 3, "role": "assistant", "kind": "message", "content": "x" * 5000},
    ]  # fmt: skip
    return job_with_steps(
        [{"task": "B", "attempt": 2, "step": i, **r} for i, r in enumerate(rows, 1)]
    )


def test_steps_sheet_rows_and_formula_text(tmp_path: Path) -> None:
    job = _hostile_job()
    out = job.export_xlsx(tmp_path / "r.xlsx")
    assert out.rows_per_sheet["Steps"] == 4
    ws = load_workbook(out.path)["Steps"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[0] == HEADER
    assert rows[1] == ("B", 2, 1, 1, None, "user", "message", None, None, None, HOSTILE[2],
                       False, False, None, None, None)  # fmt: skip
    assert rows[2] == ("B", 2, 2, 2, None, "assistant", "tool_call", "sql", "c1",
                       '{"query": "=1+1"}', None, False, False, 12, 3, None)  # fmt: skip
    assert rows[3][10:12] == ("+SUM(A1:A9)", True)
    cut = rows[4][10]
    assert cut == "x" * 2000 + "… [3,000 more characters: job.steps() has them]"
    # formula-looking text is a text cell (quote-prefixed), never a formula
    cell = ws["K2"]
    assert cell.value == HOSTILE[2] and cell.data_type == "s" and cell.quotePrefix
    assert ws["K4"].data_type == "s" and ws["K4"].quotePrefix


def test_steps_sheet_capped_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = job_with_steps(trajectory("A", 1, 30, seed=1), trajectory("B", 1, 20, seed=2))
    monkeypatch.setattr(steps_sheet, "MAX_STEP_ROWS", 40)
    out = job.export_xlsx(tmp_path / "r.xlsx")
    assert out.rows_per_sheet["Steps"] == 40
    rows = list(load_workbook(out.path)["Steps"].iter_rows(values_only=True))
    assert rows[0][0] == (
        "The first 40 of 50 steps (2 attempts): 10 steps from task 'B' attempt 1 step 11 on "
        "are not on this sheet; job.steps() has them all."
    )
    assert rows[1] == HEADER and len(rows) == 42
    assert rows[-1][:3] == ("B", 1, 10)


def test_steps_sheet_only_the_exported_attempts(tmp_path: Path) -> None:
    job = job_with_steps(trajectory("A", 1, 12, seed=1), trajectory("B", 1, 9, seed=2))
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.75), enb.Bucket("easy", 0.75, 1.01)])
    out = job.export_xlsx(tmp_path / "r.xlsx", rules=rules, buckets="hard", allow_partial=True)
    rows = list(load_workbook(out.path)["Steps"].iter_rows(values_only=True))
    assert {r[0] for r in rows[1:]} == {"A"} and len(rows) == 13  # B (pass rate 1) is easy


@pytest.mark.parametrize("steps", [False, True])
def test_no_steps_sheet_without_tool_calls(tmp_path: Path, steps: bool) -> None:
    """No steps, or only the prompts and answers (ChatML: already on the Attempts sheet)."""
    job = enb.open().load(THREE_TASKS, steps=steps)
    assert job.steps().empty is not steps
    out = job.export_xlsx(tmp_path / "r.xlsx")
    assert "Steps" not in out.rows_per_sheet
    assert "Steps" not in load_workbook(out.path).sheetnames
