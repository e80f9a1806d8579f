"""export_dataset(format="openai_chat" | "atif"): attempts' whole trajectories, exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._datasets import trajectory_export
from envloop_nb._datasets.trajectories import atif_document, chat_messages
from envloop_nb._loaders.harbor.atif import read_atif
from envloop_nb._store.steps import StepWriter
from tests.conftest import FIXTURES
from tests.steps_helpers import HOSTILE, job_with_steps, trajectory

SCRIPT, DROP, LINK = HOSTILE
ATIF_ROOT = FIXTURES / "trajectories" / "harbor-atif"


def _rows() -> list[dict[str, Any]]:
    """Task A, attempt 1: calls with and without ids, errors, reasoning, copied context,
    a sub-agent, a final call never answered, hostile text."""
    rows: list[dict[str, Any]] = [
        {"turn": 1, "role": "system", "kind": "message", "content": "You are an agent."},
        {"turn": 2, "role": "user", "kind": "message", "copied": True, "content": "old context"},
        {"turn": 2, "role": "user", "kind": "message", "content": f"Fix it {SCRIPT}"},
        {"turn": 3, "role": "assistant", "kind": "reasoning", "content": "think",
         "tokens_in": 100, "tokens_out": 10, "model": "m"},
        {"turn": 3, "role": "assistant", "kind": "message", "content": "Looking.", "model": "m"},
        {"turn": 3, "role": "assistant", "kind": "tool_call", "tool": "bash", "call_id": "c1",
         "arguments": '{"cmd": "ls"}', "model": "m"},
        {"turn": 3, "role": "assistant", "kind": "tool_call", "tool": "sql", "call_id": "c2",
         "arguments": json.dumps({"query": DROP}), "model": "m"},
        {"turn": 3, "role": "tool", "kind": "tool_result", "tool": "bash", "call_id": "c1",
         "content": "a.txt", "duration_s": 0.5},
        {"turn": 3, "role": "tool", "kind": "tool_result", "tool": "sql", "call_id": "c2",
         "content": LINK, "is_error": True},
        {"turn": 4, "role": "assistant", "kind": "tool_call", "tool": "python",
         "arguments": '{"code": "print(1)"}', "tokens_in": 200},
        {"turn": 4, "role": "tool", "kind": "tool_result", "tool": "python", "content": "1"},
        {"turn": 4, "role": "assistant", "kind": "subagent", "tool": "researcher",
         "content": "Delegate: find tests"},
        {"turn": 1, "role": "assistant", "kind": "tool_call", "tool": "grep", "call_id": "s1",
         "arguments": '{"pattern": "def test_"}', "agent": "researcher", "parent_step": 12},
        {"turn": 1, "role": "tool", "kind": "tool_result", "tool": "grep", "call_id": "s1",
         "content": "t.py:3", "agent": "researcher", "parent_step": 12},
        {"turn": 4, "role": "environment", "kind": "error", "is_error": True,
         "content": "harness: parse error"},
        {"turn": 6, "role": "assistant", "kind": "tool_call", "tool": "finish", "call_id": "c9",
         "arguments": "{}"},
        {"turn": 7, "role": "assistant", "kind": "message", "content": "Done."},
    ]  # fmt: skip
    return [{"task": "A", "attempt": 1, "step": i, **r} for i, r in enumerate(rows, 1)]


CHAT = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": f"Fix it {SCRIPT}"},
    {"role": "assistant", "content": "Looking.", "reasoning_content": "think", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}},
        {"id": "c2", "type": "function",
         "function": {"name": "sql", "arguments": json.dumps({"query": DROP})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "tool", "tool_call_id": "c2", "content": LINK},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_10", "type": "function",
         "function": {"name": "python", "arguments": '{"code": "print(1)"}'}}]},
    {"role": "tool", "tool_call_id": "call_10", "content": "1"},
    {"role": "user", "content": "harness: parse error"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "finish", "arguments": "{}"}}]},
    {"role": "assistant", "content": "Done."},
]  # fmt: skip
CHAT_NOTES = {"dropped_copied": 1, "dropped_subagent": 3, "results_without_call": 0,
              "synthesized_call_ids": 1, "unanswered_calls": 1}  # fmt: skip

TID = "job_abc0001/A/1"
ATIF_STEPS = [
    {"step_id": 1, "source": "system", "message": "You are an agent."},
    {"step_id": 2, "source": "user", "message": "old context", "is_copied_context": True},
    {"step_id": 3, "source": "user", "message": f"Fix it {SCRIPT}"},
    {"step_id": 4, "source": "agent", "model_name": "m", "message": "Looking.",
     "reasoning_content": "think",
     "tool_calls": [
         {"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "ls"}},
         {"tool_call_id": "c2", "function_name": "sql", "arguments": {"query": DROP}}],
     "observation": {"results": [
         {"content": "a.txt", "source_call_id": "c1", "extra": {"duration_s": 0.5}},
         {"content": LINK, "source_call_id": "c2", "extra": {"is_error": True}}]},
     "metrics": {"prompt_tokens": 100, "completion_tokens": 10}},
    {"step_id": 5, "source": "agent", "message": "",
     "tool_calls": [{"tool_call_id": "call_10", "function_name": "python",
                     "arguments": {"code": "print(1)"}}],
     "observation": {"results": [{"content": "1"}, {"subagent_trajectory_ref": [
         {"extra": {"summary": "Delegate: find tests"}, "trajectory_id": f"{TID}/sub-12"}]},
         {"content": "harness: parse error", "extra": {"is_error": True}}]},
     "metrics": {"prompt_tokens": 200}},
    {"step_id": 6, "source": "agent", "message": "",
     "tool_calls": [{"tool_call_id": "c9", "function_name": "finish", "arguments": {}}]},
    {"step_id": 7, "source": "agent", "message": "Done."},
]  # fmt: skip
SUB = {
    "schema_version": "ATIF-v1.7",
    "trajectory_id": f"{TID}/sub-12",
    "agent": {"name": "researcher", "version": "unknown"},
    "steps": [{"step_id": 1, "source": "agent", "message": "",
               "tool_calls": [{"tool_call_id": "s1", "function_name": "grep",
                               "arguments": {"pattern": "def test_"}}],
               "observation": {"results": [{"content": "t.py:3", "source_call_id": "s1"}]}}],
}  # fmt: skip


def _lines(ds: enb.Dataset) -> list[dict[str, Any]]:
    text = (ds.path / "rows.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _export(job: enb.Job, tmp_path: Path, fmt: str, version: str = "1") -> enb.Dataset:
    with pytest.warns(UserWarning, match=r"1 of 6 attempts were skipped.*C#2"):
        return job.export_dataset(
            tmp_path,
            name="traj",
            version=version,
            format=fmt,
            allow_partial=True,  # type: ignore[arg-type]
        )


def test_chat_messages_exactly() -> None:
    conv = chat_messages(_rows())
    assert conv.messages == CHAT
    assert conv.notes() == CHAT_NOTES


def test_atif_document_exactly() -> None:
    doc = atif_document(_rows(), trajectory_id=TID, agent={"name": "a", "version": "1"})
    assert doc["steps"] == ATIF_STEPS
    assert doc["subagent_trajectories"] == [SUB]
    assert doc["final_metrics"] == {
        "total_prompt_tokens": 300, "total_completion_tokens": 10, "total_steps": 7,
    }  # fmt: skip
    assert doc["schema_version"] == "ATIF-v1.7" and doc["trajectory_id"] == TID


def _check_atif(doc: dict[str, Any], *, embedded: bool = False) -> None:
    """A valid ATIF-v1.7 document per ../shared/fixtures/trajectories/ATIF-notes.md."""
    assert doc["schema_version"] == "ATIF-v1.7"
    assert isinstance(doc["agent"]["name"], str) and isinstance(doc["agent"]["version"], str)
    if embedded:
        assert doc["trajectory_id"]
    ids = {t["trajectory_id"] for t in doc.get("subagent_trajectories", [])}
    assert doc["steps"], "min 1 step"
    for i, step in enumerate(doc["steps"], 1):
        assert step["step_id"] == i and step["source"] in ("system", "user", "agent")
        assert isinstance(step["message"], str)
        if step["source"] != "agent":
            assert not {"tool_calls", "metrics", "reasoning_content", "model_name"} & set(step)
        calls = {c["tool_call_id"] for c in step.get("tool_calls", [])}
        for c in step.get("tool_calls", []):
            assert isinstance(c["function_name"], str) and isinstance(c["arguments"], dict)
        for res in step.get("observation", {}).get("results", []):
            if "source_call_id" in res:
                assert res["source_call_id"] in calls
            for ref in res.get("subagent_trajectory_ref", []):
                assert ref.get("trajectory_id") in ids or ref.get("trajectory_path")
    for sub in doc.get("subagent_trajectories", []):
        _check_atif(sub, embedded=True)


def test_export_openai_chat(tmp_path: Path) -> None:
    job = job_with_steps(_rows())
    ds = _export(job, tmp_path, "openai_chat")
    assert ds.manifest["format"] == "openai_chat" and ds.manifest["file"] == "rows.jsonl"
    assert ds.manifest["trajectories"] == {
        "attempts": 6, "from_steps": 1, "from_chatml": 4, "skipped": 1, "skipped_attempts": ["C#2"],
    }  # fmt: skip
    lines = _lines(ds)
    assert [(x["task"], x["attempt"], x["from"]) for x in lines] == [
        ("A", 1, "steps"), ("A", 2, "chatml"), ("B", 1, "chatml"), ("B", 2, "chatml"),
        ("C", 1, "chatml"),
    ]  # fmt: skip
    first = lines[0]
    assert first["messages"] == CHAT and first["notes"] == CHAT_NOTES
    assert (first["job"], first["reward"], first["status"]) == ("job_abc0001", 1.0, "completed")
    assert first["input"] == "Compute 17*23."
    # an attempt without steps: its ChatML input and output (an empty answer is kept)
    assert lines[1]["messages"] == [
        {"role": "user", "content": "Compute 17*23."}, {"role": "assistant", "content": ""},
    ]  # fmt: skip
    assert lines[2]["messages"] == [
        {"role": "user", "content": "Fix the failing test in utils.py"},
        {"role": "assistant", "content": "Patched utils.py"},
    ]
    # registered like any dataset: the lines' input is the held-out key, no messages copied
    reg = job.con.execute(
        "SELECT task, input, extra FROM dataset_rows WHERE dataset_name = 'traj' ORDER BY row_index"
    ).fetchall()
    assert [r[0] for r in reg] == ["A", "A", "B", "B", "C"] and reg[0][1] == "Compute 17*23."
    assert "messages" not in json.loads(reg[0][2]) and json.loads(reg[0][2])["attempt"] == 1
    back = job.workspace.load_dataset(ds.path)
    assert back.content_hash == ds.content_hash and back.row_count == 5
    assert json.loads(ds.rows()["messages"][0]) == CHAT


def test_export_atif_round_trip(tmp_path: Path) -> None:
    job = job_with_steps(_rows())
    ds = _export(job, tmp_path, "atif")
    lines = _lines(ds)
    assert len(lines) == 5 and ds.manifest["format"] == "atif"
    for line in lines:
        _check_atif(line["trajectory"])
    doc = lines[0]["trajectory"]
    assert doc["steps"] == ATIF_STEPS and doc["subagent_trajectories"] == [SUB]
    assert doc["agent"] == {"name": "team/eval", "version": "1"}
    assert doc["extra"] == {"envloop_nb": {"job": "job_abc0001", "task": "A", "attempt": 1,
                                           "reward": 1.0, "status": "completed"}}  # fmt: skip
    # read back with the ATIF reader: the same steps, modulo the documented differences
    ws = enb.open()
    other = ws.load(
        Path(enb.__file__).parents[2] / "shared/formats/examples/three-tasks-two-attempts.json"
    )
    w = StepWriter(ws.con, other.id)
    read_atif(w, task="A", attempt=1, doc=doc, source="export")
    w.close()
    got = other.steps(task="A", attempt=1).to_dict("records")

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        def s(k: str) -> str | None:
            return r.get(k) if isinstance(r.get(k), str) else None

        return (r["role"], r["kind"], s("tool"), s("call_id"), s("content"),
                bool(r.get("is_error")), bool(r.get("copied")), s("agent"))  # fmt: skip

    def documented(r: dict[str, Any]) -> dict[str, Any]:
        r = dict(r)
        if r["kind"] == "error":  # an error row reads back as the harness's result
            r["kind"] = "tool_result"
        if r["kind"] == "subagent":  # a hand-off reads back as the system's, without tool
            r["role"], r["tool"] = "system", None
        if r["kind"] == "tool_call" and r.get("call_id") is None:
            r["call_id"] = f"call_{r['step']}"  # the made-up id stays
        return r

    want = sorted(key(documented(r)) for r in _rows())
    assert sorted(key(r) for r in got) == want
    # the results follow their calls; usage sums are kept
    assert [r["step"] for r in got if r["kind"] == "tool_result" and r["call_id"] == "c1"] == [7]
    assert sum(int(r["tokens_in"]) for r in got if r["tokens_in"] == r["tokens_in"]) == 300


def test_trajectory_export_streams_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps are asked a chunk of attempts at a time; the lines are the same."""
    rows = [trajectory(t, a, 40, seed=a) for t in ("A", "B", "C") for a in (1, 2)]
    job = job_with_steps(*rows)
    whole = job.export_dataset(
        tmp_path, name="w", version="1", format="openai_chat", allow_partial=True
    )
    asked: list[int] = []
    real = trajectory_export._steps_of

    def counting(con: Any, job_id: str, chunk: Any) -> Any:
        asked.append(len(chunk))
        return real(con, job_id, chunk)

    monkeypatch.setattr(trajectory_export, "STEP_BUDGET", 50)
    monkeypatch.setattr(trajectory_export, "_steps_of", counting)
    small = job.export_dataset(
        tmp_path, name="w", version="2", format="openai_chat", allow_partial=True
    )
    assert asked == [1] * 6 and whole.content_hash == small.content_hash


def test_trajectory_format_refused_names(tmp_path: Path) -> None:
    job = job_with_steps(_rows())
    with pytest.raises(ValueError, match="'openai_chat' or 'atif'"):
        job.export_dataset(tmp_path, name="x", version="1", format="chatml", allow_partial=True)  # type: ignore[arg-type]


def test_atif_reader_reads_a_step_of_only_a_hand_off() -> None:
    """A step whose first row is a sub-agent hand-off keeps the step's extra and the ref."""
    rows = [r for r in _rows() if r["step"] <= 3]
    rows += [
        {"task": "A", "attempt": 1, "step": 4, "turn": 3, "role": "assistant", "kind": "subagent",
         "tool": "researcher", "content": "Delegate"},
        {"task": "A", "attempt": 1, "step": 5, "turn": 1, "role": "assistant", "kind": "message",
         "content": "found", "agent": "researcher", "parent_step": 4},
    ]  # fmt: skip
    doc = atif_document(rows, trajectory_id=TID, agent={"name": "a", "version": "1"})
    _check_atif(doc)
    job = job_with_steps()
    w = StepWriter(job.con, job.id)
    read_atif(w, task="A", attempt=1, doc=doc, source="export")
    assert w.close() == 5


ATIF_FIXTURES = sorted(
    p.relative_to(ATIF_ROOT).as_posix()
    for p in ATIF_ROOT.rglob("*.json")
    if "summarization-1" not in p.name and "cont-1" not in p.name
)


@pytest.mark.parametrize("name", ATIF_FIXTURES)
def test_atif_fixtures_round_trip(name: str) -> None:
    """Harbor's own trajectories: read, exported, read back: the same rows in the same
    order (sub-agents, copied context, missing sub-agent files, parser errors), the same
    usage; the export is a valid ATIF-v1.7 document."""
    job = job_with_steps()
    w = StepWriter(job.con, job.id)
    read_atif(w, task="A", attempt=1, path=ATIF_ROOT / name)
    w.close()
    rows = job.steps(task="A", attempt=1).to_dict("records")
    doc = atif_document(rows, trajectory_id="j/A/1", agent={"name": "a", "version": "1"})
    _check_atif(doc)
    w = StepWriter(job.con, job.id)
    read_atif(w, task="A", attempt=2, doc=doc, source="export")
    w.close()
    back = job.steps(task="A", attempt=2).to_dict("records")

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        def s(k: str) -> Any:
            return None if r.get(k) is None or r.get(k) != r.get(k) else r[k]

        cid = s("call_id")
        if r["kind"] == "tool_call" and cid is None:
            cid = f"call_{r['step']}"  # the id ATIF requires, made up (documented)
        return (r["role"], r["kind"], s("tool"), cid, s("arguments"), s("content"),
                bool(r["is_error"]), bool(r["copied"]), s("agent"), s("parent_step"),
                s("tokens_in"), s("tokens_out"), s("tokens_cached"), s("cost_usd"), s("model"))  # fmt: skip

    assert [key(r) for r in back] == [key(r) for r in rows]


def test_experiment_rows_are_not_trajectories(tmp_path: Path) -> None:
    """An experiment's export has no attempts' steps: a trajectory format is refused,
    not written as task rows under a trajectory label."""
    exp = enb.open().load(
        Path(__file__).resolve().parent.parent / "sample_data/experiments/ops-helper.json"
    )
    with pytest.raises(ValueError, match="only a job's export_dataset"):
        exp.export_dataset(tmp_path, name="x", version="1", format="atif")  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())
