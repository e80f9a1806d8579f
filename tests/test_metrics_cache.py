"""The per-task counts are scanned once per (job, threshold) and never served stale."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._metrics import counts as _metrics
from envloop_nb._metrics import summary
from envloop_nb._store import memo

from .conftest import SAMPLE_DATA, THREE_TASKS


def _scans(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record every scan of the attempts by task after the load: all the counts, or
    only the passes of a threshold."""
    calls: list[Any] = []
    for name in ("attempts_by_task_sql", "passes_sql", "passes_in_order_sql"):
        real = getattr(_metrics, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> str:
            calls.append((_name, *args))
            return str(_real(*args, **kwargs))

        monkeypatch.setattr(_metrics, name, spy)
    return calls


def test_one_scan_per_threshold(ws: enb.Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scans(monkeypatch)
    job = ws.load(SAMPLE_DATA / "graded.json")
    for policy in ("unknown", "failure"):
        job.summary(policy=policy)
        job.samples(ks=[1, 2], policy=policy)
        job.curve(policy=policy)
        job.groups(by="subset", policy=policy)
    assert calls == []  # counted by the load; the policy never rescans
    job.summary(threshold=0.5)
    job.curve(threshold=0.5)
    assert calls == [("passes_in_order_sql", 0.5)]  # graded rewards: the passes, counted once
    memo.clear_cache()
    calls.clear()
    ws.con.execute("DELETE FROM task_counts_cache")  # as in a workspace written before it
    job.summary()
    job.curve(threshold=0.5)
    assert [c[0] for c in calls] == ["attempts_by_task_sql"] * 2


def test_binary_rewards_need_no_scan_for_any_threshold(
    ws: enb.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _scans(monkeypatch)
    job = ws.load(THREE_TASKS)
    for threshold in (-1.0, 0.0, 0.5, 1.0, 1.5):
        job.samples(threshold=threshold)
    assert calls == []


THRESHOLDS = (None, -1.0, 0.0, 1e-300, 0.25, 0.5, 0.7, 1.0, 1.0000001, 2.0)


def _with_undispatched(tmp_path: Path) -> Path:
    """THREE_TASKS with two requested tasks that were never dispatched (first and last)."""
    data = json.loads(THREE_TASKS.read_text())
    tasks = data["job"]["tasks"]
    data["job"]["tasks"] = [
        {"name": "Z0", "digest": None, "tags": {"subset": "math"}},
        *tasks,
        {"name": "Z9", "digest": None, "tags": {}},
    ]
    data.pop("metrics")
    out = tmp_path / "undispatched.json"
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("kept_by", ["this version", "version 1"])
@pytest.mark.parametrize("source", ["three", "graded", "undispatched"])
def test_counts_kept_by_the_load_equal_the_counts_of_the_attempts(
    ws: enb.Workspace, tmp_path: Path, source: str, kept_by: str
) -> None:
    path = {"three": THREE_TASKS, "graded": SAMPLE_DATA / "graded.json"}.get(source)
    job = ws.load(path or _with_undispatched(tmp_path))
    tasks = len(job.tasks())
    assert ws.con.execute("SELECT count(*) FROM task_counts_cache").fetchone() == (tasks,)
    if kept_by == "version 1":  # only the tasks with attempts, no position
        ws.con.execute("DELETE FROM task_counts_cache WHERE dispatched = 0")
        ws.con.execute("UPDATE task_counts_cache SET position = NULL")
        memo.clear_cache()
    kept = {t: _metrics.task_counts(ws.con, job.id, t) for t in THRESHOLDS}
    ws.con.execute("DELETE FROM task_counts_cache")
    memo.clear_cache()
    for t in THRESHOLDS:
        counted = _metrics.task_counts(ws.con, job.id, t)
        assert kept[t].equals(counted), t  # every column, type and bit
    assert kept[None].column("dispatched").to_pylist().count(0) == (
        2 if source == "undispatched" else 0
    )


@pytest.mark.parametrize("kept_by", ["this version", "version 1", "none"])
@pytest.mark.parametrize("source", ["three", "graded", "undispatched"])
def test_count_rows_are_the_task_counts_without_the_task_text(
    ws: enb.Workspace, tmp_path: Path, source: str, kept_by: str
) -> None:
    """What a curve reads: the same tasks, order and counts as ``task_counts`` (every
    column, type and bit), read from the kept counts alone when the load kept them at
    each task's position (no task rows with their tags fetched), else from task_counts."""
    path = {"three": THREE_TASKS, "graded": SAMPLE_DATA / "graded.json"}.get(source)
    job = ws.load(path or _with_undispatched(tmp_path))
    if kept_by == "version 1":
        ws.con.execute("DELETE FROM task_counts_cache WHERE dispatched = 0")
        ws.con.execute("UPDATE task_counts_cache SET position = NULL")
    elif kept_by == "none":
        ws.con.execute("DELETE FROM task_counts_cache")
    names = ["task", "position", "k", *_metrics.COUNT_NAMES]
    for t in THRESHOLDS:
        memo.clear_cache()
        light = _metrics.count_rows(ws.con, job.id, t)
        fetched_rows = any(key[1] == ("task_rows",) for key in memo.CACHE[ws.con])
        assert fetched_rows is (kept_by != "this version"), t
        assert light.equals(_metrics.task_counts(ws.con, job.id, t).select(names)), t


def test_a_reopened_workspace_answers_from_the_kept_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.duckdb"
    ws = enb.open(path)
    job_id = ws.load(SAMPLE_DATA / "graded.json").id
    ws.close()
    calls = _scans(monkeypatch)
    again = enb.open(path, read_only=True)
    again.job(job_id).curve()
    assert calls == []
    again.close()


def _with_reward(tmp_path: Path, reward: float) -> Path:
    data = json.loads(THREE_TASKS.read_text())
    trials = data["trials"] if isinstance(data, dict) and "trials" in data else None
    assert trials is not None, "fixture layout changed"
    for trial in trials:
        if trial.get("reward") is not None:
            trial["reward"] = reward
    out = tmp_path / "changed.json"
    out.write_text(json.dumps(data))
    return out


def test_reload_invalidates(ws: enb.Workspace, tmp_path: Path) -> None:
    job = ws.load(THREE_TASKS)
    before = job.summary()
    assert before.score == pytest.approx(0.6)
    job.curve()
    ws.load(_with_reward(tmp_path, 1.0), job_id=job.id)  # same id, new loaded_at
    after = ws.job(job.id)
    assert after.summary().score == 1.0
    assert after.samples()["passes"].tolist() == after.samples()["scored"].tolist()
    assert after.curve()["pass^k"].dropna().eq(1.0).all()


def test_remove_invalidates(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    job.summary()
    ws.remove(job)
    assert len(_metrics.task_counts(ws.con, job.id)) == 0
    with pytest.raises(ValueError, match="no job"):
        summary.job_summary(ws.con, job.id)
    again = ws.load(THREE_TASKS)
    assert again.summary().score == pytest.approx(0.6)


def test_cache_is_small_and_freed_with_the_connection() -> None:
    ws = enb.open()
    job = ws.load(THREE_TASKS)
    for i in range(memo.CACHE_SIZE + 5):
        job.summary(threshold=i / 10)
    assert len(memo.CACHE[ws.con]) == memo.CACHE_SIZE
    con_ref = weakref.ref(ws.con)
    ws.close()
    del ws, job
    gc.collect()
    # Only this workspace's entries: other tests' live workspaces keep theirs.
    assert con_ref() is None, "nothing else should keep the closed connection alive"


def test_cached_results_equal_fresh(ws: enb.Workspace) -> None:
    """Served from the cache, every result equals a cold computation."""
    job = ws.load(SAMPLE_DATA / "graded.json")
    for threshold in (None, 0.5):
        for policy in ("unknown", "failure"):
            memo.clear_cache()
            cold = (
                job.summary(policy=policy, threshold=threshold),
                job.samples(ks=[1, 2, 3], policy=policy, threshold=threshold),
                job.curve(policy=policy, threshold=threshold),
                job.groups(by="subset", policy=policy, threshold=threshold),
                job.groups(by="dimension", policy=policy, threshold=threshold),
            )
            warm = (
                job.summary(policy=policy, threshold=threshold),
                job.samples(ks=[1, 2, 3], policy=policy, threshold=threshold),
                job.curve(policy=policy, threshold=threshold),
                job.groups(by="subset", policy=policy, threshold=threshold),
                job.groups(by="dimension", policy=policy, threshold=threshold),
            )
            assert cold[0] == warm[0]
            for a, b in zip(cold[1:], warm[1:], strict=True):
                pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_dimension_groups_scan_once_per_options(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "graded.json")
    memo.clear_cache(ws.con)
    first = job.groups(by="dimension", policy="unknown")
    job.groups(by="dimension", policy="failure")
    keys = [key for key in memo.CACHE[ws.con] if key[1][0] == "dimension_groups"]
    assert len(keys) == 1  # the policy does not change the per-task table
    job.groups(by="dimension", threshold=0.5)
    keys = [key for key in memo.CACHE[ws.con] if key[1][0] == "dimension_groups"]
    assert len(keys) == 2
    ws.load(SAMPLE_DATA / "graded.json")  # reload: new loaded_at, recomputed
    pd.testing.assert_frame_equal(first, ws.job(job.id).groups(by="dimension"))


def test_reload_and_remove_drop_old_entries(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    job.summary()
    job.groups(by="subset")
    old = {key[2] for key in memo.CACHE[ws.con] if key[0] == job.id}
    assert len(old) == 1
    ws.load(THREE_TASKS)  # reload: a new loaded_at
    ws.job(job.id).summary()
    stamps = {key[2] for key in memo.CACHE[ws.con] if key[0] == job.id}
    assert len(stamps) == 1 and stamps != old
    ws.remove(job)
    _metrics.task_counts(ws.con, job.id)
    assert not [key for key in memo.CACHE[ws.con] if key[0] == job.id]


@pytest.mark.parametrize("threshold", [None, 0.5, 0.0])
def test_task_counts_equal_the_one_query(ws: enb.Workspace, threshold: float | None) -> None:
    """The cached table (task columns once, counts per threshold) is task_counts_sql's."""
    for path in (THREE_TASKS, SAMPLE_DATA / "graded.json", SAMPLE_DATA / "running.json"):
        job = ws.load(path)
        want = ws.con.execute(
            _metrics.task_counts_sql("$job_id", threshold),
            {"job_id": job.id, **_metrics.reward_scales(ws.con, job.id)},
        ).to_arrow_table()
        got = _metrics.task_counts(ws.con, job.id, threshold)
        assert got.schema == want.schema
        assert got.equals(want)
