"""Inspect AI samples as steps, in both log forms, pinned against the logs themselves."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._loaders.inspect.read import open_inspect_log
from envloop_nb._loaders.inspect.steps import read_inspect_steps
from envloop_nb._store.steps import StepWriter, check_steps
from tests.conftest import FIXTURES, THREE_TASKS

TRAJ = FIXTURES / "trajectories" / "inspect"
BROWSER = TRAJ / "2025-05-12T20-27-36-04-00_browser.json"
DEDUP = TRAJ / "log_message_deduplication.eval"
LOGS = [
    BROWSER,
    DEDUP,
    *sorted((FIXTURES / "inspect" / "eval").glob("*.eval")),
    *sorted((FIXTURES / "inspect" / "json").glob("*.json")),
]


def _sample(path: Path = BROWSER) -> tuple[str, dict[str, Any]]:
    place, sample = next(open_inspect_log(path).samples())
    return place, copy.deepcopy(sample)


def _read(sample: dict[str, Any], place: str = "samples[0]") -> tuple[enb.Job, Any]:
    ws = enb.open()
    job = ws.load(THREE_TASKS, steps=False)
    w = StepWriter(ws.con, job.id)
    got = read_inspect_steps(w, task="A", attempt=1, sample=sample, source="log.json", place=place)
    w.close()
    check_steps(ws.con, job.id, "log.json")
    return job, got


def _load_all(path: Path) -> tuple[enb.Workspace, enb.Job, list[tuple[str, dict[str, Any]]]]:
    """The log as a job, with every sample's steps written to its own attempt (by the
    reader alone: the loader's own steps are left out)."""
    ws = enb.open()
    job = ws.load(path, steps=False)
    samples = list(open_inspect_log(path).samples())
    w = StepWriter(ws.con, job.id)
    for place, sample in samples:
        read_inspect_steps(
            w, task=str(sample["id"]), attempt=sample["epoch"], sample=sample,
            source=path.name, place=place,
        )  # fmt: skip
    w.close()
    check_steps(ws.con, job.id, path.name)
    return ws, job, samples


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_log_reads_with_its_steps(path: Path) -> None:
    ws, job, samples = _load_all(path)
    s = job.steps()
    msgs = [m for _, x in samples for m in x["messages"]]
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    calls = [c for m in msgs for c in m.get("tool_calls") or []]
    kinds = s["kind"].value_counts().to_dict()
    assert kinds.get("tool_call", 0) == len(calls)
    assert kinds.get("tool_result", 0) == len(tool_msgs)
    assert s[s["kind"] == "tool_call"]["call_id"].tolist() == [c["id"] for c in calls]
    assert s[s["kind"] == "tool_result"]["call_id"].tolist() == [
        m["tool_call_id"] for m in tool_msgs
    ]
    assert s[s["kind"] == "tool_call"]["tool"].tolist() == [c["function"] for c in calls]
    # one turn per message; each sample's error once
    assert s.groupby(["task", "attempt"])["turn"].nunique().sum() == len(msgs)
    assert kinds.get("error", 0) == sum(bool(x.get("error")) for _, x in samples)
    assert s[s["kind"] != "error"]["is_error"].sum() == sum(bool(m.get("error")) for m in tool_msgs)
    # usage: the steps' tokens sum to each attempt's (the sample's model_usage)
    usage = ws.con.execute(
        "SELECT task, attempt, input_tokens, output_tokens, cache_tokens FROM attempts "
        "WHERE job_id = ?",
        [job.id],
    ).df()
    sums = s.groupby(["task", "attempt"])[["tokens_in", "tokens_out", "tokens_cached"]].sum(
        min_count=1
    )
    both = usage.set_index(["task", "attempt"]).join(sums)
    stated = both["input_tokens"].notna()
    assert (both.loc[stated, "input_tokens"] == both.loc[stated, "tokens_in"]).all()
    assert (both.loc[stated, "output_tokens"] == both.loc[stated, "tokens_out"]).all()
    assert both.loc[~stated, "tokens_in"].isna().all()  # no usage stated: none invented


def test_browser_log_spot_values() -> None:
    place, sample = _sample()
    job, got = _read(sample, place)
    s = job.steps()
    assert (got.messages, got.tool_calls, got.tool_results, got.model_events) == (10, 4, 4, 5)
    assert got.unmatched_events == 0
    calls = s[s["kind"] == "tool_call"]
    assert calls["tool"].tolist() == ["web_browser_go"] + ["web_browser_click"] * 3
    assert json.loads(calls["arguments"].iloc[0]) == {"url": "https://www.aisi.gov.uk/"}
    assert calls["call_id"].iloc[0] == "call_35FTpd6shR9efioDgeEBZ33s"
    first = calls.iloc[0]  # the turn's only row: the model call's usage and time on it
    assert (first["tokens_in"], first["tokens_out"], first["tokens_cached"]) == (1124, 23, 0)
    assert first["started_at"] == pd.Timestamp("2025-05-12T20:27:38.462180-04:00")
    assert first["duration_s"] == pytest.approx(39.697159 - 38.462180)
    assert first["model"] == "gpt-4o-mini-2024-07-18"
    result = s[s["kind"] == "tool_result"].iloc[0]
    assert result["started_at"] == pd.Timestamp("2025-05-12T20:27:39.762878-04:00")
    assert result["duration_s"] == pytest.approx(44.080452 - 39.762878)
    assert result["content"].startswith('[132] link "We are now the AI Security Institute"')
    assert s["source_place"].iloc[0] == "log.json, samples[0], messages[0]"
    usage = sample["model_usage"]["openai/gpt-4o-mini"]
    assert s["tokens_in"].sum() == usage["input_tokens"] == 15235
    assert s["tokens_cached"].sum() == usage["input_tokens_cache_read"] == 9088


def test_eval_messages_are_whole_though_model_inputs_use_the_pool() -> None:
    place, sample = _sample(DEDUP)
    assert place == "samples/0_epoch_1.json"
    last = [e for e in sample["events"] if e["event"] == "model"][-1]
    assert last["input"] == [] and last["input_refs"] == [[0, 11]]
    assert len(sample["message_pool"]) == 11
    # the last call saw messages 0..10 and wrote the 12th: `messages` holds them all
    assert len(sample["messages"]) == 12
    job, got = _read(sample, place)
    s = job.steps()
    assert got.tool_calls == 5 and got.model_events == 6 and got.unmatched_events == 0
    assert s[s["kind"] == "tool_call"]["call_id"].tolist() == [f"hardcoded_{i}" for i in range(5)]
    assert s["content"].iloc[-1] == "done"
    assert s["tokens_in"].isna().all()  # the hardcoded model states no usage
    # every model turn and tool result is timed; only the user's prompt has no time
    assert s["started_at"].isna().tolist() == [True] + [False] * (len(s) - 1)


def test_a_failed_model_call_is_one_error_row() -> None:
    path = sorted((FIXTURES / "inspect" / "eval").glob("*.eval"))[1]
    _, job, samples = _load_all(path)
    failed = [x for _, x in samples if x.get("error")]
    s = job.steps()
    errors = s[s["kind"] == "error"]
    assert len(errors) == len(failed) == 4
    assert errors["is_error"].all() and (errors["role"] == "environment").all()
    assert set(errors["content"]) == {"RuntimeError('simulated provider failure')"}
    assert errors["source_place"].str.contains(r"events\[\d+\]").all()  # from the model event


def test_attachments_are_resolved_and_a_missing_one_is_named() -> None:
    place, sample = _sample()
    key = "707c70d5b9111db606fd541158567d76"
    sample["messages"][9]["content"] = f"attachment://{key}"
    job, _ = _read(sample, place)
    assert job.steps()["content"].iloc[-1] == sample["attachments"][key]
    sample["messages"][9]["content"] = "attachment://0000"
    with pytest.raises(
        enb.LoadError,
        match=r"log\.json, samples\[0\], messages\[9\]: 'attachment://0000' is not in the",
    ):
        _read(sample, place)


def test_messages_are_walked_for_references_only_when_they_hold_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sample whose messages hold no ``attachment://`` text is not walked (the walk
    was a tenth of the reader's time); one held anywhere in a message, even nested in a
    tool call's arguments, is found and resolved, and a missing one still named."""
    import envloop_nb._loaders.inspect.steps as steps_module

    place, sample = _sample()
    walked: list[int] = []
    resolver = steps_module._resolver

    def counting(*args: Any, **kwargs: Any) -> Any:
        walked.append(1)
        return resolver(*args, **kwargs)

    monkeypatch.setattr(steps_module, "_resolver", counting)
    _read(copy.deepcopy(sample), place)
    assert walked == []
    key = "707c70d5b9111db606fd541158567d76"
    call = next(m for m in sample["messages"] if m.get("tool_calls"))["tool_calls"][0]
    call["arguments"] = {"nested": [{"url": f"attachment://{key}"}]}
    job, _ = _read(copy.deepcopy(sample), place)
    assert walked == [1]
    calls = job.steps().query("kind == 'tool_call'")
    assert json.loads(calls["arguments"].iloc[0]) == {
        "nested": [{"url": sample["attachments"][key]}]
    }
    call["arguments"] = {"nested": ["attachment://0000"]}
    with pytest.raises(enb.LoadError, match=r"'attachment://0000' is not in the"):
        _read(sample, place)


def test_content_parts_reasoning_and_server_side_tools() -> None:
    place, sample = _sample()
    sample["messages"][9]["content"] = [
        {"type": "reasoning", "reasoning": "Think first.", "signature": "sig"},
        {"type": "reasoning", "reasoning": "", "redacted": True, "summary": "hidden"},
        {"type": "text", "text": "Summary:"},
        {"type": "image", "image": "data:image/png;base64,AAAA"},
        {"type": "data", "data": {"opaque": 1}},
        {
            "type": "tool_use", "tool_type": "web_search", "id": "ws_1", "name": "web_search",
            "arguments": '{"query": "AISI"}', "result": "", "error": "rate limited",
        },
    ]  # fmt: skip
    job, _ = _read(sample, place)
    s = job.steps()
    turn = s[s["turn"] == 10]
    assert turn["kind"].tolist() == [
        "reasoning",
        "reasoning",
        "message",
        "tool_call",
        "tool_result",
    ]
    assert turn["content"].tolist()[:3] == ["Think first.", "hidden", "Summary:\n[image]"]
    assert json.loads(turn["arguments"].iloc[3]) == {"query": "AISI"}
    assert turn["is_error"].tolist()[-1] and turn["content"].iloc[-1] == "rate limited"
    assert turn["tokens_in"].notna().tolist() == [True, False, False, False, False]


def test_tool_errors() -> None:
    place, sample = _sample()
    sample["messages"][4]["error"] = {"type": "timeout", "message": "Command timed out"}
    sample["messages"][4]["content"] = ""
    job, got = _read(sample, place)
    s = job.steps()
    bad = s[s["is_error"]]
    assert len(bad) == got.tool_errors == 1
    assert bad["content"].iloc[0] == "Command timed out"
    assert json.loads(bad["extra"].iloc[0])["error"]["type"] == "timeout"


def test_scorer_model_calls_are_not_the_agents() -> None:
    place, sample = _sample()
    scorer = next(
        e for e in sample["events"] if e["event"] == "span_begin" and e.get("type") == "scorer"
    )
    grader = copy.deepcopy(next(e for e in sample["events"] if e["event"] == "model"))
    grader["span_id"] = scorer["id"]
    grader["output"]["choices"][0]["message"]["id"] = "grader"
    sample["events"].append(grader)
    job, got = _read(sample, place)
    assert got.model_events == 5 and got.unmatched_events == 0
    assert job.steps()["tokens_in"].sum() == 15235


def test_without_message_ids_calls_match_in_order() -> None:
    place, sample = _sample()
    for m in sample["messages"]:
        m.pop("id", None)
    for e in sample["events"]:
        if e["event"] == "model":
            e["output"]["choices"][0]["message"].pop("id", None)
    job, got = _read(sample, place)
    s = job.steps()
    assert got.unmatched_events == 0 and s["tokens_in"].sum() == 15235
    assert s[s["turn"] == 10]["tokens_out"].iloc[0] == 207


def test_hostile_content_is_data() -> None:
    place, sample = _sample()
    sample["messages"][0]["content"] = "<script>alert(1)</script>"
    sample["messages"][1]["tool_calls"][0]["arguments"] = {"url": "'); DROP TABLE steps; --"}
    sample["messages"][2]["content"] = '=HYPERLINK("http://x")'
    job, _ = _read(sample, place)
    s = job.steps()
    assert s["content"].iloc[0] == "<script>alert(1)</script>"
    assert json.loads(s["arguments"].iloc[1]) == {"url": "'); DROP TABLE steps; --"}
    assert s["content"].iloc[2] == '=HYPERLINK("http://x")'


def _unknown_role(x: dict[str, Any]) -> None:
    x["messages"][3]["role"] = "critic"


def _unknown_call(x: dict[str, Any]) -> None:
    x["messages"][4]["tool_call_id"] = "call_nope"


def _no_function(x: dict[str, Any]) -> None:
    del x["messages"][5]["tool_calls"][0]["function"]


def _bad_usage(x: dict[str, Any]) -> None:
    next(e for e in x["events"] if e["event"] == "model")["output"]["usage"]["input_tokens"] = 1.5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_unknown_role, r"log\.json, samples\[0\], messages\[3\]: unknown role 'critic'"),
        (_unknown_call, r"samples\[0\], messages\[4\]: tool call id 'call_nope' names no"),
        (_no_function, r"messages\[5\]\.tool_calls\[0\]: a tool call without a function"),
        (_bad_usage, r"samples\[0\], events\[7\]: usage\.input_tokens must be a whole number"),
    ],
)
def test_bad_samples_are_named(mutate: Any, message: str) -> None:
    place, sample = _sample()
    mutate(sample)
    with pytest.raises(enb.LoadError, match=message):
        _read(sample, place)
