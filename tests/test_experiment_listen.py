"""Listen mode over a trace feed a background writer appends to (torn last lines,
sub-agent traces, traces from before listening, other agents, a running trace that
later succeeds), and ``ws.watch`` on exports that grow."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb

SHARED = Path(__file__).resolve().parents[2] / "shared/formats/examples"


def wait_for(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def trace(tid: str, **kw: Any) -> dict[str, Any]:
    base = {"trace_id": tid, "agent": "ops-helper", "parent_trace_id": None, "status": "success",
            "trace_started_at": "2026-11-20T10:00:00Z", "ingested_at": "2026-11-20T10:00:02Z",
            "input": f"question {tid}", "output": f"answer {tid}", "tags": {}}  # fmt: skip
    return base | kw


class Writer(threading.Thread):
    """Appends chunks (bytes) to a file with pauses, flushing each: a torn line is a chunk
    that ends mid-line."""

    def __init__(self, path: Path, chunks: list[bytes], pause: float = 0.15) -> None:
        super().__init__(daemon=True)
        self.path, self.chunks, self.pause = path, chunks, pause

    def run(self) -> None:
        for chunk in self.chunks:
            with self.path.open("ab") as f:
                f.write(chunk)
                f.flush()
            time.sleep(self.pause)


def line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def test_listen_adds_eligible_main_traces_and_evaluates_them(tmp_path: Path) -> None:
    ws = enb.open()
    seen: list[str] = []

    def judge(case: enb.EvalCase) -> float:
        seen.append(case.trace_id)
        return 70.0

    exp = ws.new_experiment(
        "watch", agent="ops-helper", evaluators=[enb.Evaluator("q", judge)], cases=[]
    )
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line(trace("old", trace_started_at="2026-11-19T00:00:00Z")))
    since = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
    exp.listen(feed, since=since, interval=0.05)
    torn = line(trace("t2"))
    chunks = [
        line(trace("t1")),
        line(trace("sub", parent_trace_id="t1")),  # a sub-agent trace: never a case
        line(trace("other", agent="someone-else")),
        line(trace("run", status="running")),  # not yet succeeded
        torn[:25],  # a half-written line: waited for
        torn[25:],
        line(trace("early", trace_started_at="2026-11-20T08:00:00Z")),  # started before listening
        line(trace("nostart", trace_started_at=None, ingested_at="2026-11-20T09:30:00Z")),
        line(trace("err", status="error")),
        line(trace("run", status="success")),  # the running trace succeeded: added now
    ]
    w = Writer(feed, chunks)
    w.start()
    w.join()
    wait_for(lambda: exp.progress()["completed"] == 4)
    exp.stop_listening()
    assert sorted(exp.cases()["trace_id"]) == ["nostart", "run", "t1", "t2"]
    assert set(exp.cases()["added_by"]) == {"listen"}
    assert sorted(seen) == ["nostart", "run", "t1", "t2"]
    assert exp.summary().composite == 70.0
    assert not exp.listening
    info = exp.info["listen"]
    assert info["enabled"] is False and info["stopped_at"] is not None
    # after stopping, new traces are not added
    feed.open("ab").write(line(trace("late")))
    time.sleep(0.3)
    assert "late" not in set(exp.cases()["trace_id"])


def test_a_bad_feed_line_stops_listening_with_its_place(tmp_path: Path) -> None:
    ws = enb.open()
    exp = ws.new_experiment(
        "w", agent="ops-helper", evaluators=[enb.Evaluator("q", lambda c: 1)], cases=[]
    )
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"")
    exp.listen(feed, since=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), interval=0.05)
    Writer(feed, [line(trace("t1")), b"{oops\n", line(trace("t3"))]).run()
    wait_for(lambda: exp.listen_status()["error"] is not None)
    assert "feed.jsonl, line 2: not valid JSON" in exp.listen_status()["error"]
    with pytest.raises(enb.LoadError, match="line 2"):
        exp.stop_listening()
    # the poll that met the bad line applied nothing of it
    assert "t3" not in set(exp.cases()["trace_id"])


def test_listen_refuses_reference_based_evaluators(tmp_path: Path) -> None:
    exp = enb.open().load(SHARED / "experiment-two-evaluators.json")
    with pytest.raises(
        enb.EnvloopError, match="cannot use reference-based evaluators \\(answer_accuracy\\)"
    ):
        exp.listen(tmp_path / "feed.jsonl")


def test_watch_an_experiment_export_that_grows(tmp_path: Path) -> None:
    doc = json.loads((SHARED / "experiment-two-evaluators.json").read_text())
    path = tmp_path / "exp.jsonl"
    path.write_bytes(
        line({"schema_version": doc["schema_version"], "experiment": doc["experiment"]})
    )
    ws = enb.open()
    for c in doc["cases"][:2]:
        path.open("ab").write(line({"kind": "case", **c}))
    watch = ws.watch(path, interval=0.05)
    exp = ws.experiment("exp_5c1e02")
    assert len(exp.cases()) == 2
    rows = [line({"kind": "case", **doc["cases"][2]})]
    rows += [line({"kind": "result", **r}) for r in doc["results"]]
    rows += [line({"kind": "correction", **c}) for c in doc["corrections"]]
    half = rows[3]
    Writer(path, [*rows[:3], half[:10], half[10:], *rows[4:]], pause=0.05).run()
    wait_for(lambda: len(exp.corrections()) == 2 and exp.progress()["total"] == 6)
    assert str(exp.summary()) == "composite 76.3 · 4/6 rows counted · 1 pending"
    assert watch.error is None
    ws.unwatch(path)


def test_watch_a_job_export_that_grows(tmp_path: Path) -> None:
    src = (SHARED / "three-tasks-two-attempts.json").read_text()
    d = json.loads(src)
    path = tmp_path / "job.jsonl"
    path.write_bytes(
        line({"schema_version": d["schema_version"], "job": d["job"]}) + line(d["trials"][0])
    )
    ws = enb.open()
    watch = ws.watch(path, interval=0.05)
    job = ws.job(d["job"]["id"])
    assert len(job.attempts().dropna(subset=["trial_id"])) == 1
    trials = [line(t) for t in d["trials"][1:]]
    Writer(path, [trials[0], trials[1][:7], trials[1][7:], *trials[2:]], pause=0.05).run()
    wait_for(lambda: len(job.attempts().dropna(subset=["trial_id"])) == len(d["trials"]))
    assert watch.error is None
    assert str(job.summary()).startswith("score 60.0%")
    ws.unwatch(path)


def test_a_watched_jobs_panel_follows_it(tmp_path: Path) -> None:
    d = json.loads((SHARED / "three-tasks-two-attempts.json").read_text())
    path = tmp_path / "job.jsonl"
    path.write_bytes(
        line({"schema_version": d["schema_version"], "job": d["job"]}) + line(d["trials"][0])
    )
    ws = enb.open()
    ws.watch(path, interval=0.05)
    panel = ws.job(d["job"]["id"]).panel()
    try:
        assert panel._follower is not None  # a watched job's panel follows it
        first = str(panel.overview.summary)
        # only the panel (on its follower thread) touches the workspace while we wait
        Writer(path, [line(t) for t in d["trials"][1:]], pause=0.05).run()
        wait_for(
            lambda: (
                str(panel.overview.summary) != first
                and "5/6 attempts scored" in str(panel.overview.summary)
            )
        )
        assert panel._follower.changes >= 1
    finally:
        panel.close()
        ws.unwatch(path)


def test_closing_the_workspace_stops_a_following_panel_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ws.close()`` stops a watched job panel's follower before the connection goes (it
    died on a closed connection with a traceback printed by the thread)."""
    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    d = json.loads((SHARED / "three-tasks-two-attempts.json").read_text())
    path = tmp_path / "job.jsonl"
    path.write_bytes(line({"schema_version": d["schema_version"], "job": d["job"]}))
    ws = enb.open()
    ws.watch(path, interval=0.05)
    panel = ws.job(d["job"]["id"]).panel()
    assert panel._follower is not None
    thread = panel._follower._thread
    ws.close()
    thread.join(timeout=60)  # a guard against a hang, not a measure
    assert not thread.is_alive()
    assert raised == []


def _rewrite(feed: Path, change: str, lines: list[bytes]) -> None:
    """Replace the feed's content the way a writer or log rotation does."""
    if change == "rotated":  # renamed away, a new file at the path (another inode)
        feed.rename(feed.with_name(feed.name + ".1"))
    feed.write_bytes(b"".join(lines))  # else truncated in place and written again


@pytest.mark.parametrize("change", ["truncated", "truncated, longer", "rotated"])
def test_a_tail_reads_a_truncated_or_rotated_feed_from_its_start(
    tmp_path: Path, change: str
) -> None:
    """A feed truncated or rotated under a tail is read again from the start of what is
    at the path now (it stayed at its old offset and never saw a new line: polling past
    the end, or mid-line in the new file)."""
    from envloop_nb._experiments.listen import Tail

    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line(trace("t1")) + line(trace("t2")))
    got: list[tuple[int, str]] = []
    tail = Tail(feed, lambda lines: got.extend((n, obj["trace_id"]) for n, obj in lines))
    assert tail.poll() == 2
    new = ["t3"] if change != "truncated, longer" else ["t3", "t4", "t5"]
    _rewrite(feed, change, [line(trace(t, output="x" * 40)) for t in new])
    assert tail.poll() == len(new)
    assert got[2:] == [(i + 1, t) for i, t in enumerate(new)]  # line numbers of the new file
    assert tail.restarts == 1
    with feed.open("ab") as f:  # and it follows the new file from there
        f.write(line(trace("t9")))
    assert tail.poll() == 1
    assert got[-1] == (len(new) + 1, "t9")
    assert tail.error is None and tail.restarts == 1


def test_a_tail_waits_for_a_rotated_feed_to_come_back(tmp_path: Path) -> None:
    from envloop_nb._experiments.listen import Tail

    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line(trace("t1")))
    got: list[str] = []
    tail = Tail(feed, lambda lines: got.extend(obj["trace_id"] for _, obj in lines))
    assert tail.poll() == 1
    feed.rename(tmp_path / "feed.jsonl.1")
    assert tail.poll() == 0  # not there yet: waited for
    feed.write_bytes(line(trace("t2"))[:20])  # the new file's first line half-written
    assert tail.poll() == 0
    with feed.open("ab") as f:
        f.write(line(trace("t2"))[20:])
    assert tail.poll() == 1
    assert got == ["t1", "t2"]


@pytest.mark.parametrize("change", ["truncated", "rotated"])
def test_listen_after_the_feed_is_truncated_or_rotated(tmp_path: Path, change: str) -> None:
    """The listener re-reads the new feed from its start; a trace it already added (the
    new file repeating it) is not added or evaluated twice: cases are keyed by trace id."""
    ws = enb.open()
    seen: list[str] = []

    def judge(case: enb.EvalCase) -> float:
        seen.append(case.trace_id)
        return 50.0

    exp = ws.new_experiment(
        "rotating", agent="ops-helper", evaluators=[enb.Evaluator("q", judge)], cases=[]
    )
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line(trace("t1")) + line(trace("t2")))
    exp.listen(feed, since=dt.datetime(2026, 11, 20, tzinfo=dt.UTC), interval=3600)
    tail = ws.session.listeners[exp.id]
    tail.stop()  # the test drives the polls itself
    tail.poll()
    assert sorted(exp.cases()["trace_id"]) == ["t1", "t2"]
    _rewrite(feed, change, [line(trace("t2")), line(trace("t3"))])
    assert tail.poll() == 2
    assert sorted(exp.cases()["trace_id"]) == ["t1", "t2", "t3"]
    assert sorted(seen) == ["t1", "t2", "t3"]
    status = exp.listen_status()
    assert status["error"] is None and status["added"] == ["t1", "t2", "t3"]
    assert status["restarts"] == 1
