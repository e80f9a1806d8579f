"""ATIF trajectories as steps: every fixture of Harbor's own files, pinned against the files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders.harbor.atif import read_atif
from envloop_nb._store.steps import StepWriter, check_steps
from tests.conftest import SHARED, THREE_TASKS

ATIF = SHARED / "fixtures" / "trajectories" / "harbor-atif"
FILES = sorted(
    p for p in ATIF.rglob("*.json") if "summarization-1" not in p.name and "cont-" not in p.name
)


def _read(path: Path | None = None, doc: dict[str, Any] | None = None) -> tuple[enb.Job, Any]:
    ws = enb.open()
    job = ws.load(THREE_TASKS, steps=False)
    w = StepWriter(ws.con, job.id)
    got = read_atif(w, task="A", attempt=1, path=path, doc=doc, source="t.json" if doc else None)
    w.close()
    check_steps(ws.con, job.id, str(path))
    return job, got


def _segments(path: Path) -> list[dict[str, Any]]:
    docs = [json.loads(path.read_text())]
    while docs[-1].get("continued_trajectory_ref"):
        docs.append(json.loads((path.parent / docs[-1]["continued_trajectory_ref"]).read_text()))
    return docs


def _expected(path: Path) -> dict[str, int]:
    """Counted from the files themselves (sub-agent files found beside the parent)."""
    out = {"calls": 0, "results": 0, "reasoning": 0, "subagents": 0, "copied": 0, "tokens_in": 0}

    def walk(doc: dict[str, Any], here: Path) -> None:
        for step in doc["steps"]:
            out["calls"] += len(step.get("tool_calls") or [])
            out["reasoning"] += bool(step.get("reasoning_content"))
            out["tokens_in"] += (step.get("metrics") or {}).get("prompt_tokens") or 0
            for result in (step.get("observation") or {}).get("results") or []:
                refs = result.get("subagent_trajectory_ref") or []
                out["subagents"] += len(refs)
                out["results"] += not refs
                for ref in refs:
                    child = here.parent / ref["trajectory_path"]
                    if child.is_file():
                        walk(json.loads(child.read_text()), child)

    for doc in _segments(path):
        walk(doc, path)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ATIF)))
def test_every_fixture_reads_with_its_steps(path: Path) -> None:
    job, got = _read(path)
    steps = job.steps()
    want = _expected(path)
    kinds = steps["kind"].value_counts().to_dict()
    assert kinds.get("tool_call", 0) == want["calls"] == got.tool_calls
    assert kinds.get("tool_result", 0) == want["results"]
    assert kinds.get("reasoning", 0) == want["reasoning"]
    assert kinds.get("subagent", 0) == want["subagents"]
    assert steps["tokens_in"].sum() == want["tokens_in"]
    assert steps["step"].tolist() == list(range(1, len(steps) + 1))
    assert not steps["is_error"].any()  # no fixture flags an error (extra.is_error)
    assert got.schema_version == json.loads(path.read_text())["schema_version"]


def test_results_without_ids_pair_by_order_and_a_parser_error_has_no_call() -> None:
    job, _ = _read(ATIF / "terminus_2" / "hello-world-invalid-json.trajectory.json")
    s = job.steps()
    turn2 = s[s["turn"] == 2]
    assert turn2["kind"].tolist() == ["reasoning", "message", "tool_result"]
    assert turn2["role"].tolist()[-1] == "environment"
    assert turn2["content"].tolist()[-1].startswith("Previous response had parsing errors")
    turn3 = s[s["turn"] == 3]
    assert turn3["kind"].tolist() == ["reasoning", "message", "tool_call", "tool_result"]
    assert turn3["tool"].tolist()[2:] == ["bash_command", "bash_command"]
    assert json.loads(turn3["arguments"].iloc[2]) == {
        "duration": 0.1,
        "keystrokes": "printf 'Hello, world!\\n' > hello.txt\n",
    }
    # usage once per turn, on its first row
    assert turn3["tokens_in"].notna().tolist() == [True, False, False, False]


def test_openhands_results_name_their_calls_and_the_final_call_has_none() -> None:
    job, _ = _read(ATIF / "openhands" / "hello-world.trajectory.json")
    s = job.steps()
    calls = s[s["kind"] == "tool_call"]
    results = s[s["kind"] == "tool_result"]
    assert calls["tool"].tolist() == ["str_replace_editor", "finish"]
    assert results["call_id"].tolist() == [calls["call_id"].iloc[0]]
    assert s["kind"].iloc[-1] == "tool_call"  # finish: no result


def test_subagents_follow_their_hand_off_and_copied_context_is_marked() -> None:
    job, got = _read(ATIF / "terminus_2" / "context-summarization" / "trajectory.json")
    s = job.steps()
    hand_offs = s[s["kind"] == "subagent"]
    assert len(hand_offs) == 3 and not got.missing_subagents
    for _, row in hand_offs.iterrows():
        child = s[s["parent_step"] == row["step"]]
        assert len(child) > 0 and child["step"].min() == row["step"] + 1
        assert child["agent"].str.startswith("terminus-2-summarization").all()
    assert s["copied"].sum() > 0
    # Harbor's final_metrics are the whole run's: sub-agents and replayed context included
    assert s["tokens_in"].sum() == got.final_metrics["total_prompt_tokens"]
    assert s["tokens_out"].sum() == got.final_metrics["total_completion_tokens"]


def test_a_continuation_follows_and_missing_subagents_leave_the_parent_whole() -> None:
    path = ATIF / "terminus_2" / "linear-history" / "trajectory.json"
    job, got = _read(path)
    s = job.steps()
    first, cont = _segments(path)
    assert s["turn"].max() == len(first["steps"]) + len(cont["steps"])
    assert s["source_place"].str.startswith("trajectory.cont-1.json").sum() > 0
    assert len(got.missing_subagents) == 3
    missing = s[s["kind"] == "subagent"]
    assert missing["content"].str.contains("trajectory not found").all()
    assert all(json.loads(e)["missing"] for e in missing["extra"])
    assert s["copied"].sum() == sum(bool(x.get("is_copied_context")) for x in cont["steps"])


def _doc() -> dict[str, Any]:
    return copy.deepcopy(
        json.loads((ATIF / "openhands" / "hello-world.trajectory.json").read_text())
    )


def _bad_gap(d: dict[str, Any]) -> None:
    d["steps"][2]["step_id"] = 7


def _bad_source(d: dict[str, Any]) -> None:
    d["steps"][1]["source"] = "robot"


def _bad_call_id(d: dict[str, Any]) -> None:
    step = next(s for s in d["steps"] if (s.get("observation") or {}).get("results"))
    step["observation"]["results"][0]["source_call_id"] = "no-such-call"


def _bad_version(d: dict[str, Any]) -> None:
    d["schema_version"] = "v2"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_bad_gap, r"t\.json, steps\[2\]: step_id 7 out of sequence \(expected 3"),
        (_bad_source, r"t\.json, steps\[1\]: unknown source 'robot'"),
        (
            _bad_call_id,
            r"steps\[\d+\]\.observation\.results\[0\]: source_call_id 'no-such-call' names no tool call",
        ),
        (_bad_version, r"t\.json, schema_version: expected an ATIF trajectory"),
    ],
)
def test_bad_trajectories_are_named(mutate: Any, message: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(enb.LoadError, match=message):
        _read(doc=doc)


def test_a_missing_continuation_file_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    doc["continued_trajectory_ref"] = "trajectory.cont-9.json"
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        enb.LoadError,
        match=r"trajectory\.json, continued_trajectory_ref: the continuation file 'trajectory\.cont-9\.json' is missing",
    ):
        _read(path)


def test_hostile_content_is_data() -> None:
    doc = _doc()
    call = next(s for s in doc["steps"] if s.get("tool_calls"))["tool_calls"][0]
    call["arguments"] = {"cmd": "'); DROP TABLE steps; --", "f": '=HYPERLINK("x")'}
    doc["steps"][0]["message"] = "<script>alert(1)</script>"
    job, _ = _read(doc=doc)
    s = job.steps()
    assert s["content"].iloc[0] == "<script>alert(1)</script>"
    args = json.loads(s[s["kind"] == "tool_call"]["arguments"].iloc[0])
    assert args["cmd"] == "'); DROP TABLE steps; --"


def test_a_result_flagged_in_its_extra_is_an_error() -> None:
    doc = _doc()
    step = next(s for s in doc["steps"] if (s.get("observation") or {}).get("results"))
    step["observation"]["results"][0]["extra"] = {"is_error": True}
    other = _doc()
    step2 = next(s for s in other["steps"] if (s.get("observation") or {}).get("results"))
    step2["observation"]["results"][0]["extra"] = {"is_error": "yes"}  # not a flag
    assert _read(doc=doc)[0].steps()["is_error"].sum() == 1
    assert _read(doc=other)[0].steps()["is_error"].sum() == 0


def test_a_file_named_otherwise_still_finds_its_sub_agents_and_names_them_relative() -> None:
    """``source`` names the first document only (its sub-agent files are still found
    beside ``path``); ``relative_to`` names every file by its path under a folder."""
    path = ATIF / "terminus_2" / "context-summarization" / "trajectory.json"
    ws = enb.open()
    job = ws.load(THREE_TASKS)
    w = StepWriter(ws.con, job.id)
    got = read_atif(w, task="A", attempt=1, path=path, source="trial/agent/trajectory.json")
    w.close()
    assert not got.missing_subagents and got.rows == 49
    w = StepWriter(ws.con, job.id)
    read_atif(w, task="A", attempt=2, path=path, relative_to=ATIF)
    w.close()
    places = set(job.steps(task="A", attempt=2)["source_place"].str.split(", ").str[0])
    assert places == {
        f"terminus_2/context-summarization/trajectory{x}.json"
        for x in ("", ".summarization-1-summary", ".summarization-1-questions",
                  ".summarization-1-answers")
    }  # fmt: skip
