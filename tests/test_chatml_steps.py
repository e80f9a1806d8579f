"""An EnvLoop attempt's ChatML input / output as steps (read_chatml_steps, read_chat_messages)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders.envloop.steps import read_chatml_steps
from envloop_nb._store.steps import StepWriter, check_steps
from tests.conftest import THREE_TASKS

TRIAL = Path(__file__).parent / "data" / "steps" / "chatml-trial.json"


def _trial() -> dict[str, Any]:
    return copy.deepcopy(json.loads(TRIAL.read_text()))


def _read(input: Any, output: Any) -> tuple[enb.Job, Any]:
    ws = enb.open()
    job = ws.load(THREE_TASKS, steps=False)  # the test writes its own steps
    w = StepWriter(ws.con, job.id)
    got = read_chatml_steps(
        w, task="A", attempt=1, input=input, output=output, source="job.json", place="trials[0]"
    )
    w.close()
    check_steps(ws.con, job.id, "job.json")
    return job, got


def test_the_example_trial_is_two_steps() -> None:
    trial = json.loads(THREE_TASKS.read_text())["trials"][0]
    job, got = _read(trial["input"], trial["output"])
    s = job.steps()
    assert got.rows == len(s) == 2
    assert s["role"].tolist() == ["user", "assistant"]
    assert s["content"].tolist() == [trial["input"], trial["output"]]
    assert s["source_place"].tolist() == ["job.json, trials[0].input", "job.json, trials[0].output"]
    assert s["tokens_in"].isna().all()  # the trial's usage is the attempt's, not a turn's


def test_a_message_list_with_tool_calls_counted_from_the_file() -> None:
    trial = _trial()
    job, got = _read(trial["input"], trial["output"])
    s = job.steps()
    calls = [c for m in trial["input"] for c in m.get("tool_calls") or []]
    results = [m for m in trial["input"] if m["role"] == "tool"]
    kinds = s["kind"].value_counts().to_dict()
    assert kinds["tool_call"] == len(calls) == got.tool_calls == 3
    assert kinds["tool_result"] == len(results) == got.tool_results == 2
    assert kinds["reasoning"] == 1
    assert s[s["kind"] == "tool_call"]["call_id"].tolist() == [c["id"] for c in calls]
    assert s[s["kind"] == "tool_call"]["tool"].tolist() == ["bash", "bash", "submit"]
    # turns are the messages' numbers; the output is the turn after the input
    assert s["turn"].max() == len(trial["input"]) + 1
    assert s["kind"].tolist() == [
        "message", "message", "reasoning", "tool_call", "tool_call", "tool_result",
        "tool_result", "message", "tool_call", "message",
    ]  # fmt: skip
    first, second = s[s["kind"] == "tool_call"]["arguments"].tolist()[:2]
    assert json.loads(first) == {"cmd": "du -sh /tmp"}
    assert json.loads(second) == "ls -la /tmp"  # not JSON: kept as the text it was
    assert json.loads(s[s["kind"] == "tool_call"]["extra"].iloc[1]) == {"arguments_not_json": True}
    res = s[s["kind"] == "tool_result"]
    assert res["call_id"].iloc[0] == "call_1"
    assert res["call_id"].isna().iloc[1]  # no id: paired with the open call by order
    assert res["tool"].tolist() == ["bash", "bash"]
    assert res["content"].tolist() == ["4.0K\t/tmp", "total 0"]
    assert not s["is_error"].any()
    assert s["content"].iloc[1] == "How big is /tmp?\n[image: https://example.com/screen.png]"
    # the final call (submit) has no result: read as it is
    assert s["kind"].iloc[-2] == "tool_call"


def test_no_input_and_no_output_write_nothing() -> None:
    job, got = _read(None, None)
    assert got.rows == 0 and len(job.steps()) == 0


def test_hostile_content_is_data() -> None:
    trial = _trial()
    trial["input"][1]["content"] = "<script>alert(1)</script>"
    trial["input"][3]["content"] = '=HYPERLINK("http://x")'
    trial["input"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps(
        {"cmd": "'); DROP TABLE steps; --"}
    )
    job, _ = _read(trial["input"], "'); DROP TABLE steps; --")
    s = job.steps()
    assert s["content"].iloc[1] == "<script>alert(1)</script>"
    assert '=HYPERLINK("http://x")' in s["content"].tolist()
    assert json.loads(s[s["kind"] == "tool_call"]["arguments"].iloc[0]) == {
        "cmd": "'); DROP TABLE steps; --"
    }
    assert s["content"].iloc[-1] == "'); DROP TABLE steps; --"


def _unknown_role(t: dict[str, Any]) -> None:
    t["input"][1]["role"] = "robot"


def _unknown_call(t: dict[str, Any]) -> None:
    t["input"][3]["tool_call_id"] = "call_9"


def _result_before_its_call(t: dict[str, Any]) -> None:
    t["input"][3]["tool_call_id"] = "call_3"


def _nameless_call(t: dict[str, Any]) -> None:
    del t["input"][2]["tool_calls"][1]["function"]["name"]


def _not_a_message(t: dict[str, Any]) -> None:
    t["input"][4] = "total 0"


def _output_object(t: dict[str, Any]) -> None:
    t["output"] = {"role": "assistant", "content": "x"}


def _input_number(t: dict[str, Any]) -> None:
    t["input"] = 7


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_unknown_role, r"job\.json, trials\[0\]\.input\[1\]: unknown role 'robot'"),
        (_unknown_call, r"trials\[0\]\.input\[3\]: tool call id 'call_9' names no earlier tool"),
        (_result_before_its_call, r"trials\[0\]\.input\[3\]: tool call id 'call_3' names no"),
        (_nameless_call, r"trials\[0\]\.input\[2\]\.tool_calls\[1\]: a tool call without a"),
        (_not_a_message, r"trials\[0\]\.input\[4\]: expected a message object"),
        (_output_object, r"trials\[0\]\.output: expected a string, got dict"),
        (_input_number, r"trials\[0\]\.input: expected a string or a ChatML message list"),
    ],
)
def test_bad_messages_are_named(mutate: Any, message: str) -> None:
    trial = _trial()
    mutate(trial)
    with pytest.raises(enb.LoadError, match=message):
        _read(trial["input"], trial["output"])
