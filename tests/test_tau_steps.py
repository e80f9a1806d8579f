"""τ-bench and τ²-bench trajectories as steps, pinned against the files themselves."""

from __future__ import annotations

import copy
import json
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._loaders.taubench.steps import is_tau_error, read_tau2_steps, read_tau_steps
from envloop_nb._store.steps import StepWriter, check_steps
from tests.conftest import FIXTURES, THREE_TASKS

EXCERPT = FIXTURES / "trajectories" / "tau-bench" / "gpt-4o-airline.excerpt-task13-trials.json"
TAU2 = FIXTURES / "trajectories" / "tau2-bench" / "ironshell_ironforge_v3_deepseek.json"


def _results(path: Any = EXCERPT) -> list[dict[str, Any]]:
    return copy.deepcopy(json.loads(path.read_text()))


def _sims() -> list[dict[str, Any]]:
    return copy.deepcopy(json.loads(TAU2.read_text())["simulations"])


def _read(reader: Any, **kw: Any) -> tuple[enb.Job, Any]:
    ws = enb.open()
    job = ws.load(THREE_TASKS, steps=False)
    w = StepWriter(ws.con, job.id)
    got = reader(w, task="A", attempt=1, source="t.json", **kw)
    w.close()
    check_steps(ws.con, job.id, "t.json")
    return job, got


def _expected_tau(traj: list[dict[str, Any]]) -> dict[str, int]:
    tools = [m for m in traj if m["role"] == "tool"]
    return {
        "messages": len(traj),
        "calls": sum(len(m.get("tool_calls") or []) for m in traj),
        "results": len(tools),
        "errors": sum(m["content"].startswith(("Error:", "Unknown action ")) for m in tools),
    }


@pytest.mark.parametrize("i", [0, 1])
def test_tau_bench_trials_read_with_their_steps(i: int) -> None:
    result = _results()[i]
    job, got = _read(read_tau_steps, traj=result["traj"], place=f"[{i}]", model="gpt-4o")
    s = job.steps()
    want = _expected_tau(result["traj"])
    kinds = s["kind"].value_counts().to_dict()
    assert kinds["tool_call"] == want["calls"] == got.tool_calls
    assert kinds["tool_result"] == want["results"] == got.tool_results
    assert s["is_error"].sum() == want["errors"] == got.tool_errors
    assert got.messages == want["messages"] and s["turn"].max() == want["messages"]
    ids = [c["id"] for m in result["traj"] for c in m.get("tool_calls") or []]
    assert s[s["kind"] == "tool_call"]["call_id"].tolist() == ids
    # every result names its call and sits after it
    res = s[s["kind"] == "tool_result"]
    assert set(res["call_id"]) <= set(ids)
    assert (s[s["role"] == "assistant"]["model"] == "gpt-4o").all()
    assert s[s["role"] != "assistant"]["model"].isna().all()
    assert s["tokens_in"].isna().all()  # τ-bench states no usage per message


def test_tau_bench_spot_values() -> None:
    trial0, trial1 = _results()
    assert (trial0["trial"], trial0["reward"], trial1["trial"], trial1["reward"]) == (
        0,
        0.0,
        1,
        1.0,
    )
    job, got = _read(read_tau_steps, traj=trial0["traj"], place="[0]")
    s = job.steps()
    assert (got.tool_calls, got.tool_errors) == (14, 6)  # SOURCES.md: 14 calls, 6 errors
    call = s[s["kind"] == "tool_call"].iloc[0]
    assert (call["tool"], call["call_id"], call["turn"]) == (
        "get_reservation_details", "call_ORFOG4jtgQK83YBzrDBgOTUy", 5,
    )  # fmt: skip
    assert json.loads(call["arguments"]) == {"reservation_id": "XEWRD9"}
    errors = s[s["is_error"]]
    assert errors["content"].iloc[0] == "Error: flight HAT030 not available on date 2024-05-13"
    assert s["source_place"].iloc[4] == "t.json, [0].traj[4]"
    _, got1 = _read(read_tau_steps, traj=trial1["traj"], place="[1]")
    assert (got1.messages, got1.tool_calls, got1.tool_errors) == (28, 5, 1)


def test_the_error_rule() -> None:
    assert is_tau_error("Error: flight HAT030 not available")
    assert is_tau_error("Unknown action cancel_everything")
    assert not is_tau_error('{"error": "x"}') and not is_tau_error(None)


@pytest.mark.parametrize("i", range(4))
def test_tau2_simulations_read_with_their_steps(i: int) -> None:
    sim = _sims()[i]
    msgs = sim["messages"]
    job, got = _read(
        read_tau2_steps, messages=msgs, place=f"simulations[{i}]", model="deepseek/deepseek-chat"
    )
    s = job.steps()
    calls = [c for m in msgs for c in m.get("tool_calls") or []]
    tools = [m for m in msgs if m["role"] == "tool"]
    kinds = s["kind"].value_counts().to_dict()
    assert kinds["tool_call"] == len(calls) == got.tool_calls
    assert kinds["tool_result"] == len(tools) == got.tool_results
    assert s["is_error"].sum() == sum(m["error"] for m in tools) == got.tool_errors == 0
    assert s[s["kind"] == "tool_call"]["call_id"].tolist() == [c["id"] for c in calls]
    assert s[s["kind"] == "tool_result"]["call_id"].tolist() == [m["id"] for m in tools]
    # the result's tool is its call's
    by_id = {c["id"]: c["name"] for c in calls}
    res = s[s["kind"] == "tool_result"]
    assert res["tool"].tolist() == [by_id[m["id"]] for m in tools]
    # usage: the agent's on its rows, summing to the simulation's agent cost
    assert s["cost_usd"].sum() == pytest.approx(sim["agent_cost"], rel=1e-12)
    assert s["tokens_in"].sum() == sum(
        m["usage"]["prompt_tokens"] for m in msgs if m["role"] == "assistant" and m["usage"]
    )
    assert s[s["role"] == "user"]["tokens_in"].isna().all()
    simulator = [json.loads(e)["simulator_cost"] for e in s[s["role"] == "user"]["extra"]]
    assert sum(simulator) == pytest.approx(sim["user_cost"], rel=1e-12)
    assert s["turn"].max() == len(msgs)
    assert s["started_at"].iloc[0] == pd.Timestamp(msgs[0]["timestamp"], tz="UTC")


def test_tau2_a_multi_tool_message_and_user_tools() -> None:
    msgs = [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "name": "get_user", "arguments": {"id": 1}, "requestor": "assistant"},
            {"id": "b", "name": "get_order", "arguments": {"id": 2}, "requestor": "assistant"},
        ], "usage": {"prompt_tokens": 10, "completion_tokens": 3}, "cost": 0.01},
        {"role": "tool", "tool_messages": [
            {"role": "tool", "id": "a", "content": "{}", "error": False},
            {"role": "tool", "id": "b", "content": "no such order", "error": True},
        ]},
        {"role": "user", "content": "", "tool_calls": [
            {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"},
        ]},
        {"role": "tool", "id": "u1", "content": "ok", "requestor": "user", "error": False},
    ]  # fmt: skip
    job, got = _read(read_tau2_steps, messages=msgs, place="simulations[0]")
    s = job.steps()
    assert s["kind"].tolist() == [
        "tool_call", "tool_call", "tool_result", "tool_result", "tool_call", "tool_result",
    ]  # fmt: skip
    assert s["is_error"].tolist() == [False, False, False, True, False, False]
    assert s["role"].tolist()[4] == "user"
    assert s["source_place"].iloc[3] == "t.json, simulations[0].messages[1].tool_messages[1]"
    assert s["tokens_in"].iloc[0] == 10 and s["tokens_in"].isna().iloc[1]  # once per turn
    assert got.tool_errors == 1


def test_hostile_content_is_data() -> None:
    trial = _results()[0]
    trial["traj"][1]["content"] = "<script>alert(1)</script>"
    call = trial["traj"][4]["tool_calls"][0]["function"]
    call["arguments"] = json.dumps({"reservation_id": "'); DROP TABLE steps; --"})
    trial["traj"][5]["content"] = '=HYPERLINK("http://x")'
    job, _ = _read(read_tau_steps, traj=trial["traj"], place="[0]")
    s = job.steps()
    assert s["content"].iloc[1] == "<script>alert(1)</script>"
    assert json.loads(s[s["kind"] == "tool_call"]["arguments"].iloc[0]) == {
        "reservation_id": "'); DROP TABLE steps; --"
    }
    assert s[s["kind"] == "tool_result"]["content"].iloc[0] == '=HYPERLINK("http://x")'


def _tau_unknown_role(traj: list[dict[str, Any]]) -> None:
    traj[3]["role"] = "customer"


def _tau_unknown_call(traj: list[dict[str, Any]]) -> None:
    traj[5]["tool_call_id"] = "call_nope"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_tau_unknown_role, r"t\.json, \[0\]\.traj\[3\]: unknown role 'customer'"),
        (_tau_unknown_call, r"t\.json, \[0\]\.traj\[5\]: tool call id 'call_nope' names no"),
    ],
)
def test_bad_tau_messages_are_named(mutate: Any, message: str) -> None:
    traj = _results()[0]["traj"]
    mutate(traj)
    with pytest.raises(enb.LoadError, match=message):
        _read(read_tau_steps, traj=traj, place="[0]")


def _tau2_unknown_role(msgs: list[dict[str, Any]]) -> None:
    msgs[1]["role"] = "human"


def _tau2_unknown_call(msgs: list[dict[str, Any]]) -> None:
    msgs[5]["id"] = "call_nope"


def _tau2_bad_usage(msgs: list[dict[str, Any]]) -> None:
    msgs[2]["usage"]["prompt_tokens"] = "6322"


def _tau2_bad_cost(msgs: list[dict[str, Any]]) -> None:
    msgs[2]["cost"] = "cheap"


def _tau2_bad_time(msgs: list[dict[str, Any]]) -> None:
    msgs[2]["timestamp"] = "yesterday"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_tau2_unknown_role, r"simulations\[0\]\.messages\[1\]: unknown role 'human'"),
        (_tau2_unknown_call, r"simulations\[0\]\.messages\[5\]: tool call id 'call_nope' names"),
        (_tau2_bad_usage, r"messages\[2\]: usage\.prompt_tokens must be a whole number"),
        (_tau2_bad_cost, r"messages\[2\]: cost must be a number, got 'cheap'"),
        (_tau2_bad_time, r"messages\[2\]: timestamp is not an RFC 3339 time"),
    ],
)
def test_bad_tau2_messages_are_named(mutate: Any, message: str) -> None:
    msgs = _sims()[0]["messages"]
    mutate(msgs)
    with pytest.raises(enb.LoadError, match=message):
        _read(read_tau2_steps, messages=msgs, place="simulations[0]")
