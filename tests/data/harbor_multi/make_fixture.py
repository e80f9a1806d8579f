"""Write the several-agent Harbor job folder beside this script (deterministic).

Layout copied from ``shared/fixtures/harbor/2026-03-02__14-05-11`` (Harbor v0.22): one
job that ran 2 agents (each with its model) on 1 dataset, 3 tasks x 2 attempts each, so
12 trial folders. The job ``result.json`` keys ``stats.evals`` per
``<agent>__<model>__<dataset>`` with Harbor's mean and pass@k (a missing reward counts
as 0, as before Harbor 0.26; there is no ``lock.json``). One terminus-2 trial has no
reward (``RewardFileNotFoundError``).

Run: ``.venv/bin/python tests/data/harbor_multi/make_fixture.py``.
"""

from __future__ import annotations

import json
import random
import shutil
import string
import uuid
from datetime import UTC, datetime, timedelta
from math import comb
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOB_NAME = "2026-03-04__10-00-00"
DATASET = {"name": "terminal-bench", "version": "2.0"}
AGENTS = [
    {"name": "claude-code", "model_name": "anthropic/claude-sonnet-4-5", "version": "2.0.31"},
    {"name": "terminus-2", "model_name": "openai/gpt-5", "version": "0.1.0"},
]
TASKS = ["fix-git", "hello-world", "regex-log"]
K = 2
#: Rewards per agent and task, in attempt order; None: no reward file.
REWARDS: dict[str, dict[str, list[int | None]]] = {
    "claude-code": {"hello-world": [1, 1], "fix-git": [1, 0], "regex-log": [0, 0]},
    "terminus-2": {"hello-world": [1, None], "fix-git": [0, 0], "regex-log": [1, 0]},
}
START = datetime(2026, 3, 4, 10, 0, 0, tzinfo=UTC)


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def _write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4) + "\n")


def _pass_at_k(n: int, c: int, k: int) -> float:
    return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)


def main() -> Path:
    rng = random.Random(20260304)
    job = HERE / JOB_NAME
    if job.exists():
        shutil.rmtree(job)
    job.mkdir(parents=True)
    job_id = str(uuid.UUID(int=rng.getrandbits(128)))
    _write(
        job / "config.json",
        {
            "job_name": JOB_NAME,
            "n_attempts": K,
            "n_concurrent_trials": 4,
            "agents": [{"name": a["name"], "model_name": a["model_name"]} for a in AGENTS],
            "datasets": [DATASET],
        },
    )
    checksums = {task: f"{rng.getrandbits(64):016x}" for task in TASKS}
    clock = START
    evals: dict[str, dict[str, object]] = {}
    n_errors = 0
    for agent in AGENTS:
        provider, model = agent["model_name"].split("/", 1)
        key = f"{agent['name']}__{model}__{DATASET['name']}"
        rewards: list[float] = []
        reward_stats: dict[str, list[str]] = {}
        exception_stats: dict[str, list[str]] = {}
        passes: list[float] = []
        for task in TASKS:
            values = REWARDS[agent["name"]][task]
            for reward in values:
                suffix = "".join(rng.choices(string.ascii_letters + string.digits, k=7))
                trial = f"{task}__{suffix}"
                started, clock = clock, clock + timedelta(seconds=90)
                steps = [started + timedelta(seconds=s) for s in (0, 15, 25, 70, 90)]
                config = {
                    "task": {"path": task, "source": DATASET["name"]},
                    "trial_name": trial,
                    "trials_dir": f"jobs/{JOB_NAME}",
                    "timeout_multiplier": 1.0,
                    "agent": {
                        "name": agent["name"],
                        "model_name": agent["model_name"],
                        "kwargs": {},
                    },
                    "environment": {"type": "docker", "delete": True},
                    "verifier": {"disable": False},
                    "job_id": job_id,
                }
                exception = None
                if reward is None:
                    message = f"No reward file found at jobs/{JOB_NAME}/{trial}/verifier/reward.txt"
                    exception = {
                        "exception_type": "RewardFileNotFoundError",
                        "exception_message": message,
                        "exception_traceback": "Traceback (most recent call last):\n  ...\n"
                        f"RewardFileNotFoundError: {message}\n",
                        "occurred_at": _ts(steps[4]),
                    }
                    exception_stats.setdefault("RewardFileNotFoundError", []).append(trial)
                else:
                    reward_stats.setdefault(f"{float(reward)}", []).append(trial)
                n_input = rng.randrange(20_000, 200_000)
                result = {
                    "id": str(uuid.UUID(int=rng.getrandbits(128))),
                    "task_name": task,
                    "trial_name": trial,
                    "trial_uri": f"file:///home/me/jobs/{JOB_NAME}/{trial}",
                    "task_id": {
                        "git_url": "https://github.com/laude-institute/terminal-bench-2.git",
                        "git_commit_id": "69671fba3c1e0f4d2b7b0c8e7d5f1a2b3c4d5e6f",
                        "path": task,
                    },
                    "source": DATASET["name"],
                    "task_checksum": checksums[task],
                    "config": config,
                    "agent_info": {
                        "name": agent["name"],
                        "version": agent["version"],
                        "model_info": {"name": model, "provider": provider},
                    },
                    "agent_result": {
                        "n_input_tokens": n_input,
                        "n_cache_tokens": n_input * 4 // 5,
                        "n_output_tokens": rng.randrange(1_000, 9_000),
                        "cost_usd": round(n_input / 250_000, 4),
                        "rollout_details": None,
                        "metadata": None,
                    },
                    "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
                    "verifier_environment_mode": None,
                    "exception_info": exception,
                    "started_at": _ts(steps[0]),
                    "finished_at": _ts(steps[4]),
                    "environment_setup": {
                        "started_at": _ts(steps[0]),
                        "finished_at": _ts(steps[1]),
                    },
                    "agent_setup": {"started_at": _ts(steps[1]), "finished_at": _ts(steps[2])},
                    "agent_execution": {"started_at": _ts(steps[2]), "finished_at": _ts(steps[3])},
                    "verifier": {"started_at": _ts(steps[3]), "finished_at": _ts(steps[4])},
                    "step_results": None,
                }
                _write(job / trial / "config.json", config)
                _write(job / trial / "result.json", result)
                verifier = job / trial / "verifier"
                verifier.mkdir()
                (verifier / "test-stdout.txt").write_text("PASSED\n" if reward else "FAILED\n")
                if reward is not None:
                    (verifier / "reward.txt").write_text(f"{reward}\n")
                rewards.append(float(reward or 0))  # before Harbor 0.26: missing counts as 0
            c = sum(1 for r in values if r)
            passes.append(_pass_at_k(len(values), c, K))
        errors = sum(len(v) for v in exception_stats.values())
        n_errors += errors
        evals[key] = {
            "n_trials": len(rewards) - errors,  # Harbor counts the rewarded trials
            "n_errors": errors,
            "metrics": [{"mean": sum(rewards) / len(rewards)}],
            "pass_at_k": {str(K): sum(passes) / len(passes)},
            "reward_stats": {"reward": reward_stats},
            "exception_stats": exception_stats,
        }
    n_trials = len(AGENTS) * len(TASKS) * K
    _write(
        job / "result.json",
        {
            "id": job_id,
            "started_at": _ts(START),
            "updated_at": _ts(clock),
            "finished_at": _ts(clock),
            "n_total_trials": n_trials,
            "stats": {
                "n_completed_trials": n_trials,
                "n_errored_trials": n_errors,
                "n_running_trials": 0,
                "n_pending_trials": 0,
                "n_cancelled_trials": 0,
                "n_retries": 0,
                "evals": evals,
            },
        },
    )
    return job


if __name__ == "__main__":
    print(main())
