"""Inspect logs load with their steps, end to end through ``ws.load``: both log forms,
pinned against the files themselves (read here without the loader), a bad message
refused by place with the workspace unchanged, ``lenient=True`` counting it, and a
reload replacing the steps."""

from __future__ import annotations

import copy
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._loaders.inspect import sql as inspect_sql
from tests.conftest import FIXTURES, THREE_TASKS

TRAJ = FIXTURES / "trajectories" / "inspect"
BROWSER = TRAJ / "2025-05-12T20-27-36-04-00_browser.json"
DEDUP = TRAJ / "log_message_deduplication.eval"
CAPITALS_JSON = sorted((FIXTURES / "inspect" / "json").glob("*.json"))
CAPITALS_EVAL = sorted((FIXTURES / "inspect" / "eval").glob("*.eval"))
LOGS = [BROWSER, DEDUP, *CAPITALS_EVAL, *CAPITALS_JSON]
_HEAD = ("version", "status", "eval", "plan", "results", "stats", "error")


# --- the files, read without the loader -------------------------------------------------


def _member(z: zipfile.ZipFile, name: str) -> bytes:
    info = z.getinfo(name)
    if info.compress_type != 93:  # deflate / stored: zipfile reads it
        return z.read(name)
    import zstandard

    with open(z.filename or "", "rb") as f:  # zipfile refuses zstd: the raw member
        f.seek(info.header_offset + 26)
        skip = int.from_bytes(f.read(2), "little") + int.from_bytes(f.read(2), "little")
        f.seek(info.header_offset + 30 + skip)
        data = f.read(info.compress_size)
    return zstandard.ZstdDecompressor().decompress(data, max_output_size=info.file_size)


def _doc(path: Path) -> dict[str, Any]:
    """The log as one document (header fields and ``samples``), either form."""
    if path.suffix == ".json":
        doc: dict[str, Any] = json.loads(path.read_text())
        return doc
    with zipfile.ZipFile(path) as z:
        doc = json.loads(_member(z, "header.json"))
        names = [n for n in z.namelist() if n.startswith("samples/") and n.endswith(".json")]
        doc["samples"] = [json.loads(_member(z, n)) for n in names]
    return doc


def _write_json(doc: dict[str, Any], path: Path, *, indent: int | None = 2) -> Path:
    """The ``.json`` form, keys in Inspect's order (``JSONRecorder`` writes indent 2)."""
    ordered = {k: doc[k] for k in _HEAD if k in doc}
    ordered.update({k: v for k, v in doc.items() if k not in ordered})
    path.write_text(json.dumps(ordered, indent=indent))
    return path


def _write_eval(doc: dict[str, Any], path: Path) -> Path:
    """The ``.eval`` form: ``header.json`` and one ``samples/<id>_epoch_<n>.json`` per
    sample, deflated (as Inspect wrote them before zstd; the dedup fixture is so)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for s in doc["samples"]:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        z.writestr("header.json", json.dumps({k: v for k, v in doc.items() if k != "samples"}))
    return path


def _steps_info(job: enb.Job) -> dict[str, Any]:
    info: dict[str, Any] = job.info["extra"]["steps"]
    return info


def _snapshot(ws: enb.Workspace) -> tuple[Any, ...]:
    jobs = ws.jobs()
    steps = ws.con.execute("SELECT * FROM steps ORDER BY ALL").fetchall()
    return tuple(jobs["job_id"]), len(jobs), steps


# --- every fixture, end to end -----------------------------------------------------------


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[-30:])
def test_a_log_loads_end_to_end_with_its_steps(path: Path) -> None:
    samples = _doc(path)["samples"]
    job = enb.open().load(path)
    s = job.steps()
    msgs = [m for x in samples for m in x["messages"]]
    calls = [c for m in msgs for c in m.get("tool_calls") or []]
    results = [m for m in msgs if m["role"] == "tool"]
    assert (s["kind"] == "tool_call").sum() == len(calls)
    assert s[s["kind"] == "tool_call"]["tool"].tolist() == [c["function"] for c in calls]
    assert s[s["kind"] == "tool_call"]["call_id"].tolist() == [c["id"] for c in calls]
    assert s[s["kind"] == "tool_result"]["call_id"].tolist() == [m["tool_call_id"] for m in results]
    assert s.groupby(["task", "attempt"])["turn"].nunique().sum() == len(msgs)
    assert (s["kind"] == "error").sum() == sum(bool(x.get("error")) for x in samples)
    # every attempt has its steps, and each step names its place in the file
    keys = {(str(x["id"]), x["epoch"]) for x in samples}
    assert set(s.groupby(["task", "attempt"]).groups) == keys
    assert s["source_place"].str.startswith(f"{path}, samples").all()
    info = _steps_info(job)
    assert info["source"] == "inspect messages and events"
    assert (info["attempts_with_steps"], info["attempts_without"], info["skipped"]) == (
        len(samples),
        0,
        0,
    )
    assert (info["rows"], info["messages"], info["tool_calls"]) == (len(s), len(msgs), len(calls))


def test_the_trajectory_fixtures_pinned() -> None:
    ws = enb.open()
    browser = ws.load(BROWSER).steps()
    calls = browser[browser["kind"] == "tool_call"]
    assert len(browser) == 10  # 10 messages; each call its assistant message's only row
    assert calls["tool"].tolist() == ["web_browser_go"] + ["web_browser_click"] * 3
    assert browser["tokens_in"].sum() == 15235  # the sample's model_usage
    dedup = ws.load(DEDUP).steps()
    calls = dedup[dedup["kind"] == "tool_call"]
    assert len(dedup) == 17 and (dedup["kind"] == "tool_result").sum() == 5
    assert calls["tool"].tolist() == ["bash"] * 5
    assert calls["call_id"].tolist() == [f"hardcoded_{i}" for i in range(5)]
    assert dedup["content"].iloc[-1] == "done"


@pytest.mark.parametrize("path", [BROWSER, DEDUP], ids=["json", "eval"])
def test_both_forms_of_a_log_give_the_same_steps(tmp_path: Path, path: Path) -> None:
    """The log in its other form (and a compact ``.json``, read whole): the same steps,
    but for the place names (``samples[0]`` against ``samples/<id>_epoch_1.json``)."""
    doc = _doc(path)
    other = (
        _write_eval(doc, tmp_path / f"{path.stem}.eval")
        if path.suffix == ".json"
        else _write_json(doc, tmp_path / f"{path.stem}.json")
    )
    compact = _write_json(doc, tmp_path / f"compact-{path.stem}.json", indent=None)
    ws = enb.open()
    frames = [ws.load(p, job_id=p.name).steps() for p in (path, other, compact)]
    tail = re.compile(r"^.*?, samples(?:\[\d+\]|/[^,]+), ")
    for f in frames:
        f["source_place"] = f["source_place"].str.replace(tail, "", regex=True)
    assert len(frames[0]) > 0
    pd.testing.assert_frame_equal(frames[0], frames[1])
    pd.testing.assert_frame_equal(frames[0], frames[2])


# --- bad steps: named, nothing changed; lenient counts them ------------------------------


def _bad_call(doc: dict[str, Any]) -> None:
    doc["samples"][0]["messages"][4]["tool_call_id"] = "call_nope"


@pytest.mark.parametrize("form", ["json", "eval"])
def test_a_tool_message_naming_no_call_fails_the_load_and_changes_nothing(
    tmp_path: Path, form: str
) -> None:
    doc = _doc(BROWSER)
    _bad_call(doc)
    write = _write_json if form == "json" else _write_eval
    bad = write(doc, tmp_path / f"bad.{form}")
    ws = enb.open()
    ws.load(THREE_TASKS)
    ws.load(BROWSER, job_id="browser")  # the job a failed reload must leave as it was
    before = _snapshot(ws)
    place = r"samples\[0\]" if form == "json" else r"samples/1_epoch_1\.json"
    message = (
        rf"{re.escape(str(bad))}, {place}, messages\[4\]: "
        r"tool call id 'call_nope' names no earlier tool call"
    )
    with pytest.raises(enb.LoadError, match=message):
        ws.load(bad, job_id="browser")
    with pytest.raises(enb.LoadError, match=message):
        ws.load(bad)
    assert _snapshot(ws) == before


def _two_epochs(tmp_path: Path, *, break_second: bool) -> Path:
    """The browser log run twice (epochs 1 and 2), the second's tool message broken."""
    doc = _doc(BROWSER)
    second = copy.deepcopy(doc["samples"][0])
    second["epoch"] = 2
    doc["samples"].append(second)
    doc["eval"]["config"]["epochs"] = 2
    if break_second:
        second["messages"][4]["tool_call_id"] = "call_nope"
    return _write_json(doc, tmp_path / ("bad.json" if break_second else "good.json"))


def test_lenient_leaves_out_the_sample_s_steps_and_counts_them(tmp_path: Path) -> None:
    bad = _two_epochs(tmp_path, break_second=True)
    ws = enb.open()
    with pytest.raises(enb.LoadError, match=r"samples\[1\], messages\[4\]: tool call id"):
        ws.load(bad)
    assert ws.jobs().empty
    with pytest.warns(
        enb.LoadWarning,
        match=r"the steps of 1 sample\(s\) were not read .*samples\[1\], messages\[4\]",
    ):
        job = ws.load(bad, lenient=True)
    s = job.steps()
    assert len(job.attempts()) == 2  # the attempt stays; only its steps are left out
    assert s.groupby("attempt").size().to_dict() == {1: 10}  # none of epoch 2's rows
    info = _steps_info(job)
    assert (info["attempts_with_steps"], info["skipped"]) == (1, 1)
    assert "messages[4]" in info["first_skipped"]


def test_lenient_across_chunks_keeps_every_other_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_sql, "_CHUNK", 7)  # 60 samples: 9 chunks
    doc = _doc(CAPITALS_JSON[0])
    whole = enb.open().load(_write_json(doc, tmp_path / "good.json"), job_id="j").steps()
    doc["samples"][10]["messages"][1]["role"] = "critic"
    ws = enb.open()
    with pytest.raises(enb.LoadError, match=r"samples\[10\], messages\[1\]: unknown role"):
        ws.load(_write_json(doc, tmp_path / "bad.json"), job_id="j")
    with pytest.warns(enb.LoadWarning, match=r"steps of 1 sample"):
        job = ws.load(tmp_path / "bad.json", job_id="j", lenient=True)
    key = (str(doc["samples"][10]["id"]), doc["samples"][10]["epoch"])
    kept = whole.set_index(["task", "attempt"]).drop(index=key).reset_index()
    got = job.steps()
    for f in (kept, got):
        f["source_place"] = f["source_place"].str.replace(r"^.*?, ", "", regex=True)
    pd.testing.assert_frame_equal(got, kept)
    assert _steps_info(job)["attempts_with_steps"] == len(doc["samples"]) - 1


# --- reload, opting out, chunks --------------------------------------------------------


def test_a_reload_replaces_the_steps(tmp_path: Path) -> None:
    ws = enb.open()
    assert len(ws.load(BROWSER, job_id="b").steps()) == 10
    assert len(ws.load(BROWSER, job_id="b").steps()) == 10  # not 20
    doc = _doc(BROWSER)
    doc["samples"][0]["messages"].pop()  # the final answer
    job = ws.load(_write_json(doc, tmp_path / "shorter.json"), job_id="b")
    assert len(job.steps()) == 9
    assert ws.con.execute("SELECT count(*) FROM steps").fetchone() == (9,)


def test_steps_false_reads_none_and_says_so() -> None:
    job = enb.open().load(DEDUP, steps=False)
    assert job.steps().empty
    assert _steps_info(job) == {"source": None, "why": "not read (steps=False)"}


def test_chunks_are_bounded_by_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """8,192 agent samples of 80 kB made one chunk of 650 MB, past the memory limit: a
    chunk holds at most ``_CHUNK_BYTES`` of sample text (a bigger sample is one alone)."""
    from envloop_nb._loaders.inspect.read import json_sample_chunks, open_inspect_log
    from envloop_nb._loaders.inspect.zip import sample_chunks

    log = CAPITALS_JSON[0]
    budget = log.stat().st_size // 10
    chunks = [
        (len(p), sum(len(t.as_py().encode()) for t in texts))
        for p, texts in json_sample_chunks(log, 8192, budget) or []
    ]
    assert sum(n for n, _ in chunks) == 60 and len(chunks) >= 10
    assert all(size <= budget or n == 1 for n, size in chunks)
    evl = open_inspect_log(CAPITALS_EVAL[0])
    assert evl.directory is not None
    budget_e = int(evl.directory.usize.sum()) // 10
    chunks = [
        (len(p), sum(len(t.as_py().encode()) for t in texts))
        for p, texts in sample_chunks(evl.path, evl.directory, 8192, budget_e)
    ]
    assert sum(n for n, _ in chunks) == 60 and len(chunks) >= 10
    assert all(size <= budget_e or n == 1 for n, size in chunks)
    assert [len(p) for p, _ in sample_chunks(evl.path, evl.directory, 8192, 1)] == [1] * 60
    before = enb.open().load(log, job_id="j")
    monkeypatch.setattr(inspect_sql, "_CHUNK_BYTES", budget)
    after = enb.open().load(log, job_id="j")
    pd.testing.assert_frame_equal(after.steps(), before.steps())
    pd.testing.assert_frame_equal(after.attempts(), before.attempts())


def test_scan_batches_are_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB holds a record batch's parsed samples until the batch is done: batches of
    2,048 agent samples of 80 kB held ~250 MB per mapping thread. A chunk's record
    batches hold at most ``_SCAN_BYTES`` of sample text (a bigger sample alone), and the
    log loads the same whatever the bound."""
    import pyarrow as pa

    log = CAPITALS_EVAL[0]
    sizes = [len(json.dumps(s)) for s in _doc(log)["samples"]]
    texts = pa.array(["x" * n for n in sizes], pa.large_string())
    chunk = pa.table({"ord": range(len(sizes)), "place": ["p"] * len(sizes), "t": texts})
    bound = sum(sizes) // 10
    monkeypatch.setattr(inspect_sql, "_SCAN_BYTES", bound)
    batches = inspect_sql._scan_batches(chunk).to_batches()
    assert len(batches) >= 10 and sum(b.num_rows for b in batches) == len(sizes)
    text_bytes = [sum(len(t) for t in b.column("t").to_pylist()) for b in batches]
    assert all(n <= bound or b.num_rows == 1 for n, b in zip(text_bytes, batches, strict=True))
    assert pa.Table.from_batches(batches).equals(chunk)
    before = enb.open().load(log, job_id="j")
    monkeypatch.setattr(inspect_sql, "_SCAN_BYTES", 1)  # one sample per batch
    after = enb.open().load(log, job_id="j")
    pd.testing.assert_frame_equal(after.steps(), before.steps())
    pd.testing.assert_frame_equal(after.attempts(), before.attempts())


def test_each_chunk_hands_what_malloc_freed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """After each chunk's rows (and steps) are written the C heap is trimmed: the freed
    chunk buffers stayed in glibc's heaps otherwise (see ``release_heap``)."""
    calls: list[int] = []
    monkeypatch.setattr(inspect_sql, "_CHUNK", 7)  # 60 samples: 9 chunks
    monkeypatch.setattr(inspect_sql, "release_heap", lambda: calls.append(1))
    job = enb.open().load(CAPITALS_EVAL[0])
    assert len(calls) == 9
    assert len(job.steps()) == 120
