"""Realistic synthetic steps for tests: an agent's turns written with ``StepWriter``.

A trajectory opens with a system prompt and a user task (holding hostile text), then
runs turns of reasoning, a short message, one or two tool calls and their results
(some with call ids, some without — matched by order in the turn), tool errors, a
harness error, a sub-agent hand-off with the sub-agent's own rows, and context copied
from an earlier run. Usage sits on each turn's first row, durations on results.
"""

from __future__ import annotations

import json
import random
from typing import Any

import envloop_nb as enb
from envloop_nb._store.steps import StepWriter, check_steps
from tests.conftest import THREE_TASKS

HOSTILE = (
    "<script>alert('x')</script>",
    "'); DROP TABLE steps; --",
    '=HYPERLINK("http://evil.example","click")',
)
TOOLS = ("bash", "python", "sql", "read_file")


def trajectory(
    task: str, attempt: int, n_steps: int, *, seed: int = 0, diverge_at: int | None = None
) -> list[dict[str, Any]]:
    """About ``n_steps`` rows (exactly, cut at the end) of one attempt; ``diverge_at``:
    from that turn on the agent calls other tools (for side-by-side tests)."""
    rng = random.Random(seed)
    place = f"{task}/{attempt}/trajectory.json"
    rows: list[dict[str, Any]] = [
        {"role": "system", "kind": "message", "turn": 1, "content": "You are a careful agent."},
        {"role": "user", "kind": "message", "turn": 2, "copied": True,
         "content": "Earlier context (copied): the repo is at /work/repo."},
        {"role": "user", "kind": "message", "turn": 2,
         "content": f"Fix the failing test. Inputs may hold {HOSTILE[0]} and {HOSTILE[1]} and {HOSTILE[2]}"},
    ]  # fmt: skip
    turn = 2
    while len(rows) < n_steps:
        turn += 1
        diverged = diverge_at is not None and turn >= diverge_at
        first = len(rows)
        if rng.random() < 0.5:
            rows.append({"role": "assistant", "kind": "reasoning", "turn": turn,
                         "content": "Let me think. " * rng.randint(3, 60)})  # fmt: skip
        if rng.random() < 0.3:
            rows.append({"role": "assistant", "kind": "message", "turn": turn,
                         "content": f"Turn {turn}: I will look at the files."})  # fmt: skip
        with_ids = rng.random() < 0.7
        calls = []
        for c in range(rng.choice((1, 1, 2))):
            tool = TOOLS[(turn + c + (2 if diverged else 0)) % len(TOOLS)]
            args: dict[str, Any] = {"cmd": f"ls -la /work/repo/{turn}", "timeout": 30}
            if tool == "sql":
                args = {"query": HOSTILE[1]}
            elif tool == "python":
                args = {"code": "print('hi')\n" * rng.randint(1, 30)}
            cid = f"call_{turn}_{c}" if with_ids else None
            rows.append({"role": "assistant", "kind": "tool_call", "turn": turn, "tool": tool,
                         "call_id": cid, "arguments": json.dumps(args)})  # fmt: skip
            calls.append((tool, cid))
        for tool, cid in calls:
            error = rng.random() < 0.1
            out = (f"Traceback: {tool} failed\nPermissionError: denied" if error
                   else "\n".join(f"line {i} {HOSTILE[i % 3]}" for i in range(rng.randint(1, 40))))  # fmt: skip
            rows.append({"role": "tool", "kind": "tool_result", "turn": turn, "tool": tool,
                         "call_id": cid, "content": out, "is_error": error,
                         "duration_s": round(rng.uniform(0.05, 9.0), 2)})  # fmt: skip
        if turn % 25 == 7:
            rows.append({"role": "environment", "kind": "error", "turn": turn, "is_error": True,
                         "content": "harness: the model's reply could not be parsed"})  # fmt: skip
        if turn % 40 == 11:
            parent = len(rows) + 1
            rows.append({"role": "assistant", "kind": "subagent", "turn": turn, "tool": "researcher",
                         "content": "Delegate: find where the test is defined."})  # fmt: skip
            rows.append({"role": "assistant", "kind": "tool_call", "turn": turn, "tool": "grep",
                         "call_id": f"sub_{turn}", "arguments": '{"pattern": "def test_"}',
                         "agent": "researcher", "parent_step": parent})  # fmt: skip
            rows.append({"role": "tool", "kind": "tool_result", "turn": turn, "tool": "grep",
                         "call_id": f"sub_{turn}", "content": "tests/test_x.py:3: def test_x",
                         "agent": "researcher", "parent_step": parent})  # fmt: skip
        rows[first].update(tokens_in=1000 + turn * 13, tokens_out=50 + turn % 17, tokens_cached=800,
                           model="acme-7b")  # fmt: skip
    rows = rows[:n_steps]
    called = {r["call_id"] for r in rows if r["kind"] == "tool_call"}
    out = []
    for n, r in enumerate(rows, 1):
        if r["kind"] == "tool_result" and r.get("call_id") not in called | {None}:
            continue  # its call fell past the cut
        out.append(
            {"task": task, "attempt": attempt, **r, "source_place": f"{place}, steps[{n - 1}]"}
        )
    for n, r in enumerate(out, 1):
        r["step"] = n
    return out


def job_with_steps(
    *attempts: list[dict[str, Any]], job_id: str | None = None, ws: Any = None
) -> enb.Job:
    """The three-task example job with these attempts' rows written and checked."""
    ws = ws if ws is not None else enb.open()
    job = (
        ws.load(THREE_TASKS, job_id=job_id, steps=False)
        if job_id
        else ws.load(THREE_TASKS, steps=False)
    )
    w = StepWriter(ws.con, job.id)
    for rows in attempts:
        for row in rows:
            w.add(row)
    w.close()
    check_steps(ws.con, job.id, "synthetic")
    return job
