"""The sample Harbor jobs of two checkpoints (``sample_data/agent_runs/``): byte for byte
what their generator writes, loadable, comparable, Harbor's own numbers reproduced, every
trajectory read as steps, and the behaviours the generator builds in are in the files."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._metrics.harbor import check
from envloop_nb._store.steps import check_steps
from tests.conftest import SAMPLE_DATA

RUNS = SAMPLE_DATA / "agent_runs"
JOBS = ("base", "sft-step2000")
LOOP_MIN = 3  # the same call with the same arguments this many times in a row


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_runs_generate", RUNS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _trials(job: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(trial result.json, trajectory) of every trial folder, by folder name."""
    out = []
    for sub in sorted(p for p in (RUNS / job).iterdir() if p.is_dir()):
        result = json.loads((sub / "result.json").read_text())
        traj = json.loads((sub / "agent" / "trajectory.json").read_text())
        out.append((result, traj))
    return out


def _by_attempt(job: str) -> dict[tuple[str, int], tuple[dict[str, Any], dict[str, Any]]]:
    """Trials keyed (task, attempt): a task's trials by start time, as Harbor has them."""
    by_task: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for result, traj in _trials(job):
        by_task.setdefault(result["task_name"], []).append((result, traj))
    return {
        (task, n): trial
        for task, group in by_task.items()
        for n, trial in enumerate(sorted(group, key=lambda t: t[0]["started_at"]), 1)
    }


def _calls(step: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (c["function_name"], json.dumps(c["arguments"], sort_keys=True))
        for c in step.get("tool_calls") or []
    ]


def _longest_repeat(traj: dict[str, Any]) -> int:
    """The longest run of consecutive agent steps making the same single bash call."""
    best = run = 0
    previous = None
    for step in traj["steps"]:
        calls = _calls(step)
        key = calls[0] if len(calls) == 1 and calls[0][0] == "bash" else None
        run = run + 1 if key is not None and key == previous else (1 if key else 0)
        previous = key
        best = max(best, run)
    return best


def _errors(traj: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(step id, tool, content) of each result flagged as an error."""
    out = []
    for step in traj["steps"]:
        tools = {c["tool_call_id"]: c["function_name"] for c in step.get("tool_calls") or []}
        for r in (step.get("observation") or {}).get("results") or []:
            if (r.get("extra") or {}).get("is_error"):
                out.append((step["step_id"], tools[r["source_call_id"]], r["content"]))
    return out


def _first_divergence(a: dict[str, Any], b: dict[str, Any]) -> int:
    """The first step id whose source, message or tool calls differ."""
    for x, y in zip(a["steps"], b["steps"], strict=False):
        if (x["source"], x.get("message"), _calls(x)) != (y["source"], y.get("message"), _calls(y)):
            return int(x["step_id"])
    return min(len(a["steps"]), len(b["steps"])) + 1


@pytest.fixture(scope="module")
def loaded() -> Any:
    ws = enb.open()
    jobs = {name: ws.load(RUNS / name) for name in JOBS}
    yield ws, jobs
    ws.close()


# -- the files are the generator's --------------------------------------------------------


def test_regenerating_gives_the_committed_bytes(tmp_path: Path) -> None:
    gen = _generator()
    gen.generate(tmp_path / "a")
    gen.generate(tmp_path / "b")
    for job in JOBS:
        first, second = _files(tmp_path / "a" / job), _files(tmp_path / "b" / job)
        assert first == second, job  # no clock, no unseeded randomness
        committed = _files(RUNS / job)
        assert sorted(first) == sorted(committed), job
        for name, data in first.items():
            assert data == committed[name], f"{job}/{name}"


def test_the_sample_stays_small() -> None:
    total = sum(len(b) for job in JOBS for b in _files(RUNS / job).values())
    assert total < 1_000_000, total


# -- Harbor's layout, loaded ------------------------------------------------------------------


def test_both_jobs_load_with_the_numbers_harbor_wrote(loaded: Any) -> None:
    _, jobs = loaded
    for name, scored_passes in (("base", 17), ("sft-step2000", 22)):
        job = jobs[name]
        assert job.k == 3
        attempts = job.attempts()
        assert len(attempts) == 36 and attempts["task"].nunique() == 12
        assert int(attempts["reward"].notna().sum()) == 35  # one verifier error each
        assert job.summary().score == scored_passes / 35
        harbor = job.info["extra"]["harbor"]
        assert (harbor["version"], harbor["policy"]) == ("0.27.1", "unknown")
        c = check(job)
        assert c is not None and c.checked == 2  # mean and pass@2
        assert c.matches == ("unknown",) and c.agrees, c.verdict()
        assert "platform-mismatch" not in job.diagnose().codes()
        rows = job.source_agreement()
        assert rows.empty or bool(rows["agrees"].all())


def test_the_checkpoints_are_comparable_and_the_transitions_are_the_built_in_ones(
    loaded: Any,
) -> None:
    ws, jobs = loaded
    cmp = ws.compare([jobs["base"], jobs["sft-step2000"]], baseline=jobs["base"])
    assert cmp.comparable and list(cmp.differences) == []
    t = cmp.transitions().set_index("transition")["tasks"]
    assert set(t["fixed"]) == {
        "parse-nginx-logs",
        "sqlite-index-migration",
        "python-package-build",
        "port-flask-to-fastapi",
    }
    assert set(t["broken"]) == {"cron-log-rotate", "csv-dedupe-report"}
    assert set(t["not compared"]) == {"json-schema-fix", "make-static-binary"}


def test_attempts_are_the_generators_in_order(loaded: Any) -> None:
    """The loader's attempt n of a task (trials by start time) is the plan's attempt n."""
    gen = _generator()
    tasks = {t.name: t for t in gen.TASKS}
    _, jobs = loaded
    for name in JOBS:
        trials = _by_attempt(name)
        loader = jobs[name].attempts().set_index("source_place")
        for (task, attempt), (result, _) in trials.items():
            row = loader.loc[result["trial_name"]]
            assert (row["task"], row["attempt"]) == (task, attempt)
        for (task, attempt), (result, traj) in trials.items():
            recipe, outcome = gen.PLANS[task][name][attempt - 1]
            steps = gen.agent_steps(tasks[task], recipe)
            assert [s.say for s in steps] == [s["message"] for s in traj["steps"][2:]]
            reward = (result["verifier_result"] or {}).get("rewards", {}).get("reward")
            assert reward == {1: 1, 0: 0, "T": 0, "N": None}[outcome], (name, task, attempt)


# -- trajectories ------------------------------------------------------------------------------


def test_every_trajectory_reads_as_steps_and_agrees_with_its_trial(loaded: Any) -> None:
    ws, jobs = loaded
    for name in JOBS:
        job = jobs[name]
        trials = _by_attempt(name)
        info = job.info["extra"]["steps"]  # the loader read every trial's trajectory
        assert (info["attempts_with_steps"], info["schema_versions"]) == (36, {"ATIF-v1.7": 36})
        check_steps(ws.con, job.id, name)
        steps = job.steps()
        for (task, attempt), (result, traj) in trials.items():
            mine = steps[(steps["task"] == task) & (steps["attempt"] == attempt)]
            kinds = mine["kind"].value_counts().to_dict()
            calls = sum(len(s.get("tool_calls") or []) for s in traj["steps"])
            results = sum(
                len((s.get("observation") or {}).get("results") or []) for s in traj["steps"]
            )
            assert kinds.get("tool_call", 0) == calls
            assert kinds.get("tool_result", 0) == results
            assert mine["turn"].max() == len(traj["steps"])
            # usage: the steps' sums are final_metrics and the trial's agent_result
            metrics = [s["metrics"] for s in traj["steps"] if "metrics" in s]
            fm, ar = traj["final_metrics"], result["agent_result"]
            for key, total, trial in (
                ("prompt_tokens", "total_prompt_tokens", "n_input_tokens"),
                ("completion_tokens", "total_completion_tokens", "n_output_tokens"),
                ("cached_tokens", "total_cached_tokens", "n_cache_tokens"),
            ):
                assert sum(m[key] for m in metrics) == fm[total] == ar[trial]
            assert fm["total_steps"] == len(traj["steps"])
            assert math.isclose(math.fsum(m["cost_usd"] for m in metrics), fm["total_cost_usd"])
            assert fm["total_cost_usd"] == ar["cost_usd"]
            assert int(mine["tokens_in"].sum()) == fm["total_prompt_tokens"]


def test_steps_per_attempt_vary_from_5_to_30() -> None:
    for name in JOBS:
        counts = [len(traj["steps"]) for _, traj in _trials(name)]
        assert min(counts) >= 5 and max(counts) <= 30
        assert len(set(counts)) >= 6, counts


def test_loops_are_in_the_files() -> None:
    loops = {
        name: sorted(
            (task, n)
            for (task, n), (_, traj) in _by_attempt(name).items()
            if _longest_repeat(traj) >= LOOP_MIN
        )
        for name in JOBS
    }
    assert loops["base"] == [
        ("make-static-binary", 1),
        ("openssl-selfsigned-cert", 1),
        ("openssl-selfsigned-cert", 2),
        ("openssl-selfsigned-cert", 3),
        ("parse-nginx-logs", 1),
        ("parse-nginx-logs", 2),
        ("port-flask-to-fastapi", 1),
        ("sqlite-index-migration", 1),
    ]
    assert loops["sft-step2000"] == [("openssl-selfsigned-cert", 1)]
    # the looping base attempt that ran out of time: 22 identical calls, then the timeout
    result, traj = _by_attempt("base")[("openssl-selfsigned-cert", 3)]
    assert _longest_repeat(traj) == 22
    assert result["exception_info"]["exception_type"] == "AgentTimeoutError"
    assert result["verifier_result"] == {"rewards": {"reward": 0}}


def test_tool_errors_and_stops_after_them_are_in_the_files() -> None:
    for name, n_errors, stops in (
        (
            "base",
            9,
            [
                ("python-package-build", 1),
                ("python-package-build", 2),
                ("sqlite-index-migration", 3),
            ],
        ),
        ("sft-step2000", 3, [("csv-dedupe-report", 1)]),
    ):
        trials = _by_attempt(name)
        errors = [e for _, traj in trials.values() for e in _errors(traj)]
        assert len(errors) == n_errors
        assert {tool for _, tool, _ in errors} == {"edit_file"}
        assert all(content.startswith("Error:") for _, _, content in errors)
        # nothing else looks like an error
        contents = [
            r["content"]
            for _, traj in trials.values()
            for s in traj["steps"]
            for r in (s.get("observation") or {}).get("results") or []
        ]
        assert sum(c.startswith("Error:") for c in contents) == n_errors
        stopped = sorted(
            key
            for key, (_, traj) in trials.items()
            if _errors(traj) and _errors(traj)[-1][0] == traj["steps"][-1]["step_id"]
        )
        assert stopped == stops


def test_trials_without_a_reward_are_harbors_verifier_errors() -> None:
    for name, task in (("base", "json-schema-fix"), ("sft-step2000", "make-static-binary")):
        missing = [(r, t) for (r, t) in _trials(name) if r["verifier_result"] is None]
        assert [r["task_name"] for r, _ in missing] == [task]
        result = missing[0][0]
        assert result["exception_info"]["exception_type"] == "RewardFileNotFoundError"
        folder = RUNS / name / result["trial_name"]
        assert not (folder / "verifier" / "reward.txt").exists()
        assert (folder / "exception.txt").is_file()


def test_the_broken_tasks_diverge_where_the_generator_says() -> None:
    base, sft = _by_attempt("base"), _by_attempt("sft-step2000")
    for key, step in (
        (("cron-log-rotate", 1), 5),
        (("cron-log-rotate", 2), 5),
        (("cron-log-rotate", 3), 5),
        (("csv-dedupe-report", 1), 6),
    ):
        a, b = base[key][1], sft[key][1]
        assert _first_divergence(a, b) == step, key
        # the shared steps are the same steps (metrics included), times apart
        for x, y in zip(a["steps"][: step - 1], b["steps"][: step - 1], strict=True):
            assert {k: v for k, v in x.items() if k != "timestamp"} == {
                k: v for k, v in y.items() if k != "timestamp"
            }
        assert _calls(a["steps"][step - 1]) != _calls(b["steps"][step - 1])
    # cron-log-rotate: base dry-runs logrotate, SFT edits straight away (and never tests)
    a, b = base[("cron-log-rotate", 1)][1], sft[("cron-log-rotate", 1)][1]
    assert _calls(a["steps"][4])[0][0] == "bash" and _calls(b["steps"][4])[0][0] == "edit_file"
    assert "run_tests" not in {c for s in b["steps"] for c, _ in _calls(s)}
