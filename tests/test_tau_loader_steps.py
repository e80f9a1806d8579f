"""τ-bench and τ²-bench jobs load with their steps, end to end through ``ws.load``.

Every count is taken from the JSON files here, never from the reader under test.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._loaders.taubench.trial_steps import TrialSteps
from tests.conftest import FIXTURES, ROOT, TAU_BENCH, THREE_TASKS

EXCERPT = FIXTURES / "trajectories" / "tau-bench" / "gpt-4o-airline.excerpt-task13-trials.json"
TAU2_REAL = FIXTURES / "trajectories" / "tau2-bench" / "ironshell_ironforge_v3_deepseek.json"
TAU2 = ROOT / "tests" / "data" / "tau2" / "results.json"
SUBMISSION = ROOT / "tests" / "data" / "tau2_submission" / "gpt-4.1-mini_example-org_2026-03-05"
TAU2_DIR = SUBMISSION / "trajectories" / "gpt-4.1-mini_airline_gpt-4.1_2trials"

TAU_FILES = [*sorted((FIXTURES / "trajectories" / "tau-bench").glob("*.json")), TAU_BENCH]
TAU2_FILES = [*sorted((FIXTURES / "trajectories" / "tau2-bench").glob("*.json")), TAU2]


# -- what the files say, counted from the JSON --------------------------------------
def _flat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """τ²'s MultiToolMessage is its tool messages in order."""
    out: list[dict[str, Any]] = []
    for m in messages:
        out += m["tool_messages"] if isinstance(m.get("tool_messages"), list) else [m]
    return out


def _calls(m: dict[str, Any]) -> list[dict[str, Any]]:
    return list(m.get("tool_calls") or [])


def _want_tau(traj: list[dict[str, Any]]) -> dict[str, int]:
    tools = [m for m in traj if m["role"] == "tool"]
    return {
        "turns": len(traj),
        "assistant_turns": sum(m["role"] == "assistant" for m in traj),
        "tool_calls": sum(len(_calls(m)) for m in traj),
        "tool_results": len(tools),
        "errors": sum(m["content"].startswith(("Error:", "Unknown action ")) for m in tools),
    }


def _want_tau2(messages: list[dict[str, Any]]) -> dict[str, int]:
    tools = [m for m in _flat(messages) if m["role"] == "tool"]
    return {
        "turns": len(messages),
        "assistant_turns": sum(m["role"] == "assistant" for m in messages),
        "tool_calls": sum(len(_calls(m)) for m in messages),
        "tool_results": len(tools),
        "errors": sum(bool(m.get("error")) for m in tools),
    }


def _got(steps: pd.DataFrame) -> dict[str, int]:
    kinds = steps["kind"].value_counts()
    return {
        "turns": steps["turn"].nunique(),
        "assistant_turns": steps[steps["role"] == "assistant"]["turn"].nunique(),
        "tool_calls": int(kinds.get("tool_call", 0)),
        "tool_results": int(kinds.get("tool_result", 0)),
        "errors": int(steps["is_error"].sum()),
    }


def _by_attempt(job: enb.Job) -> dict[tuple[str, int], pd.DataFrame]:
    s = job.steps()
    return {(str(t), int(a)): g for (t, a), g in s.groupby(["task", "attempt"])}


def _tau2_sims(path: Path) -> list[dict[str, Any]]:
    if path.is_dir():
        return [json.loads(f.read_text()) for f in sorted((path / "simulations").glob("*.json"))]
    return list(json.loads(path.read_text())["simulations"])


# -- τ-bench -------------------------------------------------------------------------
@pytest.mark.parametrize("path", TAU_FILES, ids=lambda p: p.name)
def test_tau_bench_files_load_with_their_steps(path: Path) -> None:
    results = json.loads(path.read_text())
    ws = enb.open()
    job = ws.load(path)
    steps = _by_attempt(job)
    attempts = job.attempts().set_index(["task", "attempt"])
    assert len(steps) == len(results) == len(attempts)
    for r in results:
        key = (str(r["task_id"]), r["trial"] + 1)
        want = _want_tau(r["traj"])
        assert _got(steps[key]) == want, key
        # steps and attempts agree: the attempt's turns are the steps' assistant turns
        assert attempts.loc[key, "turns"] == want["assistant_turns"]
    assert job.info["extra"]["steps"] == {
        "source": "read_tau_steps",
        "attempts_with_steps": len(results),
        "attempts_without": 0,
        "skipped": 0,
        "turns_differ": 0,
    }


def test_the_published_run_keeps_its_pass_hat_k_and_has_200_trials_of_steps() -> None:
    ws = enb.open()
    job = ws.load(TAU_BENCH)
    exact = [0.42, 41 / 150, 0.22, 0.2]  # τ-bench's README: 0.420, 0.273, 0.220, 0.200
    assert job.curve(policy="failure")["pass^k"].tolist() == exact
    s = job.steps()
    assert len(s.groupby(["task", "attempt"])) == 200
    results = json.loads(TAU_BENCH.read_text())
    assert (s["kind"] == "tool_call").sum() == sum(
        _want_tau(r["traj"])["tool_calls"] for r in results
    )
    assert (s["kind"] == "tool_call").sum() == 1164
    assert s["source_place"].iloc[0] == f"{TAU_BENCH}, [0].traj[0]"


def test_tau_bench_excerpt_spot_values() -> None:
    """SOURCES.md: trial 0 has 58 messages, 14 calls, 6 errors; trial 1: 28, 5, 1."""
    job = enb.open().load(EXCERPT)
    got = {key: _got(g) for key, g in _by_attempt(job).items()}
    assert {k: (v["turns"], v["tool_calls"], v["errors"]) for k, v in got.items()} == {
        ("13", 1): (58, 14, 6),
        ("13", 2): (28, 5, 1),
    }


# -- τ²-bench ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path", [*TAU2_FILES, TAU2_DIR], ids=lambda p: p.parent.name + "/" + p.name
)
def test_tau2_runs_load_with_their_steps(path: Path) -> None:
    sims = _tau2_sims(path)
    job = enb.open().load(path)
    steps = _by_attempt(job)
    attempts = job.attempts().set_index(["task", "attempt"])
    with_messages = [s for s in sims if s.get("messages")]
    assert len(steps) == len(with_messages)
    for sim in sims:
        key = (str(sim["task_id"]), sim["trial"] + 1)
        want = _want_tau2(sim.get("messages") or [])
        assert attempts.loc[key, "turns"] == want["assistant_turns"]
        if not sim.get("messages"):
            assert key not in steps
            continue
        assert _got(steps[key]) == want, key
        costs = [m["cost"] for m in sim["messages"] if m["role"] == "assistant" and "cost" in m]
        got_cost = steps[key]["cost_usd"]
        if costs:  # the agent's cost: the steps sum to the simulation's agent_cost
            assert got_cost.sum() == pytest.approx(sim["agent_cost"], rel=1e-12)
            assert got_cost.sum() == pytest.approx(sum(costs), rel=1e-12)
        else:  # the file states no cost per message: none is invented
            assert got_cost.isna().all()
    info = job.info["extra"]["steps"]
    priced = [s for s in with_messages if any("cost" in m for m in s["messages"])]
    assert info == {
        "source": "read_tau2_steps",
        "attempts_with_steps": len(with_messages),
        "attempts_without": len(sims) - len(with_messages),
        "skipped": 0,
        "turns_differ": 0,
        "agent_cost": {
            "agree": len(priced),
            "differ": 0,
            "steps_without_cost": len(with_messages) - len(priced),
        },
    }


def test_the_real_tau2_run_spot_values() -> None:
    job = enb.open().load(TAU2_REAL)
    s = job.steps(task="14", attempt=1)
    sim = json.loads(TAU2_REAL.read_text())["simulations"][0]
    assert sim["task_id"] == "14"
    assert (s["kind"] == "tool_call").sum() == 11
    assert s["source_place"].iloc[0] == f"{TAU2_REAL}, simulations[0].messages[0]"
    assert (s[s["role"] == "assistant"]["model"] == "deepseek/deepseek-chat").all()
    assert job.info["extra"]["steps"]["agent_cost"] == {
        "agree": 4,
        "differ": 0,
        "steps_without_cost": 0,
    }


def test_tau2_dir_form_has_the_same_steps_as_one_file() -> None:
    one = enb.open().load(TAU2).steps()
    folder = enb.open().load(TAU2_DIR).steps()
    cols = [c for c in one.columns if c != "source_place"]
    pd.testing.assert_frame_equal(one[cols], folder[cols])
    assert (
        folder["source_place"].iloc[0]
        == f"{TAU2_DIR / 'simulations' / 's-0-0.json'}, $.messages[0]"
    )


def test_a_differing_agent_cost_is_recorded(tmp_path: Path) -> None:
    doc = json.loads(TAU2_REAL.read_text())
    doc["simulations"][2]["agent_cost"] += 0.5
    path = tmp_path / "run" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    job = enb.open().load(path)
    cost = job.info["extra"]["steps"]["agent_cost"]
    assert (cost["agree"], cost["differ"]) == (3, 1)
    assert (
        cost["first_differ"]["place"] == "simulations[2] (id " + doc["simulations"][2]["id"] + ")"
    )
    assert cost["first_differ"]["attempt"] == doc["simulations"][2]["agent_cost"]


# -- malformed messages, lenient, re-load --------------------------------------------
def _tau_bad(tmp_path: Path) -> tuple[Path, Path, str]:
    results = json.loads(EXCERPT.read_text())
    results[1]["traj"][20]["role"] = "customer"  # late in the trial: rows before it exist
    path = tmp_path / "bad-tau.json"
    path.write_text(json.dumps(results))
    return (
        EXCERPT,
        path,
        (r"bad-tau\.json, \[1\]\.traj\[20\] \(task_id 13, trial 1\): unknown role 'customer'"),
    )


def _tau2_bad(tmp_path: Path) -> tuple[Path, Path, str]:
    doc = json.loads(TAU2_REAL.read_text())
    doc["simulations"][1]["messages"][31]["id"] = "call_nope"
    path = tmp_path / "bad-tau2" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    return (
        TAU2_REAL,
        path,
        (
            r"results\.json, simulations\[1\]\.messages\[31\] \(task_id 23, trial 0\): "
            r"tool call id 'call_nope' names no earlier tool call"
        ),
    )


def _tau2_dir_bad(tmp_path: Path) -> tuple[Path, Path, str]:
    folder = tmp_path / "bad-dir"
    shutil.copytree(TAU2_DIR, folder)
    f = folder / "simulations" / "s-2-0.json"
    sim = json.loads(f.read_text())
    sim["messages"][2]["role"] = "human"
    f.write_text(json.dumps(sim))
    return (
        TAU2_DIR,
        folder,
        (r"s-2-0\.json, \$\.messages\[2\] \(task_id 2, trial 0\): unknown role 'human'"),
    )


BAD = [_tau_bad, _tau2_bad, _tau2_dir_bad]
#: The bad trial of each, as (task, attempt).
BAD_TRIAL = {"_tau_bad": ("13", 2), "_tau2_bad": ("23", 1), "_tau2_dir_bad": ("2", 1)}


@pytest.mark.parametrize("make", BAD, ids=lambda f: f.__name__)
def test_a_malformed_message_fails_the_load_and_changes_nothing(make: Any, tmp_path: Path) -> None:
    good, bad, message = make(tmp_path)
    ws = enb.open()
    ws.load(EXCERPT)
    job = ws.load(good, job_id="j")  # the bad load below would replace this job
    jobs, steps = ws.jobs(), job.steps()
    assert len(steps)
    with pytest.raises(enb.LoadError, match=message):
        ws.load(bad, job_id="j")
    pd.testing.assert_frame_equal(ws.jobs(), jobs)
    pd.testing.assert_frame_equal(ws.job("j").steps(), steps)


@pytest.mark.parametrize("make", BAD, ids=lambda f: f.__name__)
def test_lenient_skips_the_trials_steps_and_counts_them(make: Any, tmp_path: Path) -> None:
    good, bad, message = make(tmp_path)
    ws = enb.open()
    want = ws.load(good, job_id="good").steps()
    with pytest.warns(enb.LoadWarning, match="skipped the steps of 1 trial") as caught:
        job = ws.load(bad, lenient=True)
    assert any(w.filename == __file__ for w in caught)  # pointed at the user's ws.load
    assert re.search(message, str(caught[0].message))  # names the file, message, trial
    task, attempt = BAD_TRIAL[make.__name__]
    assert job.steps(task=task, attempt=attempt).empty  # none of its rows, not a part
    assert len(job.attempts()) == len(ws.job("good").attempts())  # the trial itself stays
    kept = want[(want["task"] != task) | (want["attempt"] != attempt)]
    cols = [c for c in want.columns if c != "source_place"]
    pd.testing.assert_frame_equal(
        job.steps()[cols].reset_index(drop=True), kept[cols].reset_index(drop=True)
    )
    info = job.info["extra"]["steps"]
    assert info["skipped"] == 1
    assert info["attempts_with_steps"] == len(kept.groupby(["task", "attempt"]))
    assert re.search(message, info["first_skipped"])


@pytest.mark.parametrize("path", [EXCERPT, TAU2_REAL, TAU2_DIR], ids=lambda p: p.name)
def test_reload_replaces_the_steps(path: Path, tmp_path: Path) -> None:
    ws = enb.open()
    first = ws.load(path).steps()
    again = ws.load(path)
    pd.testing.assert_frame_equal(again.steps(), first)
    # a shorter file under the same job id: its steps replace the old ones
    if path.is_dir():
        short = tmp_path / "short"
        shutil.copytree(path, short)
        f = short / "simulations" / "s-0-0.json"
        sim = json.loads(f.read_text())
        sim["messages"] = sim["messages"][:1]
        f.write_text(json.dumps(sim))
        key = ("0", 1)
    elif path == EXCERPT:
        results = json.loads(path.read_text())
        results[0]["traj"] = results[0]["traj"][:1]
        short = tmp_path / "short.json"
        short.write_text(json.dumps(results))
        key = ("13", 1)
    else:
        doc = json.loads(path.read_text())
        doc["simulations"][0]["messages"] = doc["simulations"][0]["messages"][:1]
        short = tmp_path / "short.json"
        short.write_text(json.dumps(doc))
        key = ("14", 1)
    job = ws.load(short, job_id=again.id)
    assert job.steps(task=key[0], attempt=key[1])["turn"].tolist() == [1]
    others = first[(first["task"] != key[0]) | (first["attempt"] != key[1])]
    assert len(job.steps()) == len(others) + 1
    assert ws.jobs()["job_id"].tolist().count(again.id) == 1


def test_a_turn_disagreement_is_recorded_with_its_attempt() -> None:
    """Real files cannot make one (each assistant message is at least one row), so the
    check is driven directly: attempt A/1 says 6 turns, its steps hold 2."""
    ws = enb.open()
    job = ws.load(THREE_TASKS)
    steps = TrialSteps(ws.con, job.id, Path("t.json"), "read_tau_steps", lenient=False)

    def two_turns(w: Any) -> None:
        for n in (1, 2):
            w.add({"task": "A", "attempt": 1, "step": n, "turn": n, "role": "assistant",
                   "kind": "message", "content": "x"})  # fmt: skip

    steps.add([{}, {}], two_turns, trial="task_id A, trial 0")
    info = steps.finish()
    assert (info["turns_differ"], info["attempts_with_steps"]) == (1, 1)
    assert info["first_turns_differ"] == {"place": "trials[0] (id tr_1)", "attempt": 6, "steps": 2}


def test_a_trial_without_messages_has_no_steps_and_is_counted(tmp_path: Path) -> None:
    results = json.loads(EXCERPT.read_text())
    results[0]["traj"] = None
    path = tmp_path / "no-traj.json"
    path.write_text(json.dumps(results))
    job = enb.open().load(path)
    assert job.steps(task="13", attempt=1).empty
    assert len(job.steps(task="13", attempt=2)) > 0
    info = job.info["extra"]["steps"]
    assert (info["attempts_with_steps"], info["attempts_without"]) == (1, 1)
