"""Generate the labelled training run in ``sample_data/training_run/`` (deterministic).

Usage (from the project root)::

    .venv/bin/python sample_data/training_run/generate.py            # writes beside this file
    .venv/bin/python sample_data/training_run/generate.py OUT_DIR    # writes into OUT_DIR

Ten EnvLoop job exports (``envloop.job-result/v1``, single document), one per round of
the RL run ``rl-0412`` of ``acme-7b``: ``round-01.json`` .. ``round-10.json``, labelled
as the platform page asks (``labels: {"agent_run": "rl-0412", "agent_round": "<n>"}``).
Every round ran the same frozen work: ``acme-agent-bench-mini`` 2026.12 (one revision
digest), runner ``harbor@0.22.0``, the same 48 tasks (3 subsets x 16, same digests),
k = 4 attempts per task.

Built by construction (:data:`PLAN`): each task has a *solved* state per round (1 or 0);
a solved task passes 3 or 4 of its 4 attempts, an unsolved one 0 or 1 (seeded draws), so
its pass rate is >= 0.5 exactly when it is solved and the score still moves from round
to round without anything changing (the noise). The plan:

- 13 tasks always solved, 13 never solved;
- the one real jump: 12 math tasks learned at round 6 (unsolved in rounds 1-5, solved
  from 6 on): about +25 points from round 5 to round 6;
- 4 tasks learned gradually, at rounds 3, 4, 8 and 9 (solved from then on);
- forgotten (solved for >= 2 consecutive rounds, then failed): 3 tasks solved in rounds
  2-4 and failed from round 5 on, one solved in rounds 7-8 and failed in 9-10 (forgotten
  at 9), one solved in rounds 1-3, failed in 4 and solved again from 5 on (forgotten at
  4, then relearned);
- 1 flaky task, solved in the even rounds only.

Round 8 lost coverage: 6 always-solved tasks have 2 of their 4 trials ``completed``
without a reward (the verifier crashed: invalid) and 2 never-solved tasks were not
dispatched at all (no trial): 172 of 192 attempts scored. Those 8 tasks are incomplete
in round 8 (their state there is unknown, not a failure).

The module is imported by the tests (``PLAN``, :func:`expected`), which pin the run's
learned, forgotten and flaky lists against it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = "envloop.job-result/v1"
SEED = 20261206
RUN = "rl-0412"
ROUNDS = 10
K = 4
SUBSETS = ("math", "code", "tool-use")
DATASET = {
    "name": "acme-agent-bench-mini",
    "version": "2026.12",
    "revision": "sha256:" + hashlib.sha256(b"acme-agent-bench-mini 2026.12").hexdigest(),
}
RUNNER = "harbor@0.22.0"
START = dt.datetime(2026, 12, 1, 8, 0, 0, tzinfo=dt.UTC)


def _states(solved_rounds: set[int]) -> tuple[int, ...]:
    return tuple(int(r in solved_rounds) for r in range(1, ROUNDS + 1))


ALL = set(range(1, ROUNDS + 1))


def _plan() -> dict[str, tuple[int, ...]]:
    """Task name -> solved state per round (1..10), in task order."""
    plan: dict[str, tuple[int, ...]] = {}
    # math: 12 learned at the jump (round 6), 2 always, 2 never
    for i in range(12):
        plan[f"math-{i + 1:02d}"] = _states(set(range(6, ROUNDS + 1)))
    for i in range(12, 14):
        plan[f"math-{i + 1:02d}"] = _states(ALL)
    for i in range(14, 16):
        plan[f"math-{i + 1:02d}"] = _states(set())
    # code: 6 always, 5 never, 4 gradual learners, 1 flaky
    for i in range(6):
        plan[f"code-{i + 1:02d}"] = _states(ALL)
    for i in range(6, 11):
        plan[f"code-{i + 1:02d}"] = _states(set())
    for i, first in zip(range(11, 15), (3, 4, 8, 9), strict=True):
        plan[f"code-{i + 1:02d}"] = _states(set(range(first, ROUNDS + 1)))
    plan["code-16"] = _states({2, 4, 6, 8, 10})
    # tool-use: 5 always, 6 never, 5 forgotten
    for i in range(5):
        plan[f"tool-use-{i + 1:02d}"] = _states(ALL)
    for i in range(5, 11):
        plan[f"tool-use-{i + 1:02d}"] = _states(set())
    for i in range(11, 14):
        plan[f"tool-use-{i + 1:02d}"] = _states({2, 3, 4})
    plan["tool-use-15"] = _states({7, 8})
    plan["tool-use-16"] = _states(ALL - {4})
    return plan


#: Task name -> solved state (1/0) in rounds 1..10.
PLAN = _plan()
#: Round 8's lost coverage: tasks with 2 invalid trials, tasks never dispatched.
INVALID_IN_8 = ("math-13", "math-14", "code-01", "code-02", "tool-use-01", "tool-use-02")
UNDISPATCHED_IN_8 = ("code-07", "tool-use-06")
COVERAGE_ROUND = 8


def expected() -> dict[str, Any]:
    """What the construction makes true: learned (task -> first round solved stably),
    forgotten (task -> round it was first failed after >= 2 solved rounds), flaky."""
    return {
        "learned": {
            **{f"math-{i:02d}": 6 for i in range(1, 13)},
            "code-12": 3,
            "code-13": 4,
            "code-14": 8,
            "code-15": 9,
            "tool-use-16": 5,
        },  # fmt: skip
        "forgotten": {
            "tool-use-12": 5,
            "tool-use-13": 5,
            "tool-use-14": 5,
            "tool-use-15": 9,
            "tool-use-16": 4,
        },  # fmt: skip
        "flaky": ["code-16"],
        "jump": (5, 6),
    }


def _subset(task: str) -> str:
    return task.rsplit("-", 1)[0]


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _job(round_: int, rng: np.random.Generator) -> dict[str, Any]:
    began = START + dt.timedelta(days=round_ - 1)
    tasks = [
        {
            "name": name,
            "digest": "sha256:"
            + hashlib.sha256(f"{DATASET['revision']}/{name}".encode()).hexdigest()[:16],
            "tags": {"subset": _subset(name)},
        }
        for name in PLAN
    ]
    trials: list[dict[str, Any]] = []
    clock = began + dt.timedelta(seconds=5)
    for name, states in PLAN.items():
        solved = states[round_ - 1]
        passes = int(rng.integers(3, 5)) if solved else int(rng.integers(0, 2))
        order = rng.permutation(K)
        rewards = [1 if int(order[a]) < passes else 0 for a in range(K)]
        if round_ == COVERAGE_ROUND and name in UNDISPATCHED_IN_8:
            continue
        for attempt in range(1, K + 1):
            took = int(rng.integers(40, 600))
            reward: int | None = rewards[attempt - 1]
            error = None
            if round_ == COVERAGE_ROUND and name in INVALID_IN_8 and attempt > 2:
                reward, error = None, "verifier crashed: no reward written"
            trials.append(
                {
                    "id": f"tr_r{round_:02d}_{name}_{attempt}",
                    "task": name,
                    "attempt": attempt,
                    "status": "completed",
                    "exit_code": 0,
                    "error": error,
                    "reward": reward,
                    "usage": {
                        "input_tokens": int(rng.integers(800, 6000)),
                        "output_tokens": int(rng.integers(100, 1500)),
                        "turns": int(rng.integers(2, 20)),
                    },  # fmt: skip
                    "started_at": _iso(clock),
                    "finished_at": _iso(clock + dt.timedelta(seconds=took)),
                    "input": f"[{name}] solve the task",
                    "output": "done" if reward == 1 else "attempted",
                    "reference": None,
                    "artifacts": [],
                }
            )
            clock += dt.timedelta(seconds=7)
    return {
        "schema_version": SCHEMA,
        "job": {
            "id": f"job_rl0412_r{round_:02d}",
            "status": "completed",
            "created_at": _iso(began),
            "finished_at": _iso(clock + dt.timedelta(minutes=10)),
            "dataset": DATASET,
            "runner": RUNNER,
            "profile": {
                "name": "team/eval",
                "version": "1",
                "params": {"AGENT_NAME": "acme-agent", "MODEL_NAME": f"acme-7b@rl-0412-r{round_}"},
            },  # fmt: skip
            "model": f"acme-7b@rl-0412-r{round_}",
            "request_id": f"req_rl0412_{round_:02d}",
            "attempts": K,
            "tasks": tasks,
            "labels": {"agent_run": RUN, "agent_round": str(round_)},
        },
        "trials": trials,
    }


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    for round_ in range(1, ROUNDS + 1):
        doc = _job(round_, rng)
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        (out / f"round-{round_:02d}.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
