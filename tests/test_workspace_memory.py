"""Workspace memory options (memory_limit, temp_directory) and the load transaction:
a failed load leaves no trace, neither rows nor temporary objects nor an open transaction."""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import envloop_nb as enb
from tests.conftest import HARBOR, TAU_BENCH, THREE_TASKS

TABLES = ["jobs", "tasks", "task_tags", "attempts", "dimensions", "dimension_meta"]


def _setting(ws: enb.Workspace, name: str) -> str:
    row = ws.sql(f"SELECT current_setting('{name}')").fetchone()
    assert row is not None
    return str(row[0])


def _snapshot(ws: enb.Workspace) -> dict[str, list[tuple]]:
    return {t: ws.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}


def _temp_objects(ws: enb.Workspace) -> list[str]:
    tables = ws.con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    views = ws.con.execute(
        "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal"
    ).fetchall()
    return sorted(str(r[0]) for r in tables + views)


def _assert_no_open_transaction(ws: enb.Workspace) -> None:
    ws.con.execute("BEGIN TRANSACTION")  # raises if a load left one open
    ws.con.execute("ROLLBACK")


# -- memory_limit ---------------------------------------------------------------------


def test_default_memory_limit_is_one_gigabyte() -> None:
    with enb.open() as ws:
        assert _setting(ws, "memory_limit") == "953.6 MiB"  # DuckDB's rendering of 1GB


def test_memory_limit_option_and_none_for_duckdb_default(tmp_path: Path) -> None:
    with enb.open(memory_limit="2GB") as ws:
        assert _setting(ws, "memory_limit") == "1.8 GiB"
    with enb.open(tmp_path / "w.duckdb", memory_limit="500MB") as ws:
        assert _setting(ws, "memory_limit") == "476.8 MiB"
    with enb.open(memory_limit=None) as ws:
        assert _setting(ws, "memory_limit") not in ("953.6 MiB", "1.8 GiB")


def test_memory_limit_applies_to_a_reopened_file(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with enb.open(path) as ws:
        ws.load(THREE_TASKS)
    with enb.open(path, read_only=True, memory_limit="300MB") as ws:
        assert _setting(ws, "memory_limit") == "286.1 MiB"
        assert ws.jobs()["job_id"].tolist() == ["job_abc0001"]


def test_a_load_larger_than_the_memory_limit_spills_and_succeeds(tmp_path: Path) -> None:
    n_tasks, k = 50_000, 8
    n = n_tasks * k
    frame = pd.DataFrame(
        {
            "task": [f"task-{i:06d}" for i in range(n_tasks) for _ in range(k)],
            "reward": [float(i % 3 == 0) for i in range(n)],
            "output": [f"{i:08d}" + "x" * 300 for i in range(n)],  # ~120 MB of text
        }
    )
    spill = tmp_path / "spill"
    with enb.open(tmp_path / "w.duckdb", memory_limit="100MB", temp_directory=spill) as ws:
        job = ws.load(frame, job_id="big")
        assert job.k == k
        assert ws.con.execute("SELECT count(*) FROM attempts").fetchone() == (n,)
        assert job.summary().scored == n


# -- temp_directory -------------------------------------------------------------------


def test_in_memory_workspace_spills_under_the_system_temp_dir_and_cleans_up() -> None:
    ws1, ws2 = enb.open(), enb.open()
    dirs = [Path(_setting(w, "temp_directory")) for w in (ws1, ws2)]
    assert dirs[0] != dirs[1]  # one private folder per workspace
    for d in dirs:
        assert d.is_dir()
        assert d.parent == Path(tempfile.gettempdir())
        assert d.name.startswith("envloop_nb-")
    ws1.close()
    ws2.close()
    assert not any(d.exists() for d in dirs)
    ws1.close()  # closing twice is harmless


def test_explicit_temp_directory_is_used_and_kept(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    with enb.open(temp_directory=spill) as ws:
        assert Path(_setting(ws, "temp_directory")) == spill
    with enb.open(tmp_path / "w.duckdb", temp_directory=spill) as ws:
        assert Path(_setting(ws, "temp_directory")) == spill


def test_file_workspace_spills_beside_its_file(tmp_path: Path) -> None:
    with enb.open(tmp_path / "w.duckdb") as ws:
        assert _setting(ws, "temp_directory") == str(tmp_path / "w.duckdb.tmp")


# -- the load transaction: a failed load leaves no trace --------------------------------


def _bad_jsonl(tmp_path: Path) -> Path:
    """The three-task example as EnvLoop JSONL.gz with one unusable trial line."""
    doc = json.loads(THREE_TASKS.read_text())
    trials = doc.pop("trials")
    doc.pop("metrics", None)
    trials[4]["status"] = "exploded"
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(doc) + "\n")
        for t in trials:
            f.write(json.dumps(t) + "\n")
    return path


def _bad_json(tmp_path: Path) -> Path:
    doc = json.loads(THREE_TASKS.read_text())
    doc["trials"][3]["reward"] = "high"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


def _bad_csv(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("task,reward,status\na,1,completed\na,1,completed,extra\nb,0,completed\n")
    return path


def _bad_attempt_csv(tmp_path: Path) -> Path:
    path = tmp_path / "dup.csv"
    path.write_text("task,attempt,reward\na,1,1\na,1,0\n")
    return path


@pytest.mark.parametrize(
    ("make", "job_id", "message"),
    [
        (_bad_jsonl, "job_abc0001", r"bad\.jsonl\.gz, line 6: status must be"),
        (_bad_json, None, r"bad\.json, trials\[3\] \(id tr_4\): reward must be a number"),
        (_bad_csv, "job_abc0001", r"t\.csv, line 3: malformed CSV row"),
        (_bad_attempt_csv, "job_abc0001", r"dup\.csv.*attempt"),
    ],
    ids=["jsonl trial", "json trial", "ragged csv", "duplicate attempt"],
)
def test_failed_reload_of_the_same_job_restores_everything(
    tmp_path: Path, make: Callable[[Path], Path], job_id: str | None, message: str
) -> None:
    """Reloading job_abc0001 deletes its rows inside the transaction; the failure undoes it."""
    path = tmp_path / "w.duckdb"
    with enb.open(path) as ws:
        ws.load(THREE_TASKS)
        ws.load(HARBOR / "2026-03-02__14-05-11")
        before, temps = _snapshot(ws), _temp_objects(ws)
        with pytest.raises(enb.LoadError, match=message):
            ws.load(make(tmp_path), job_id=job_id)
        assert _snapshot(ws) == before
        assert _temp_objects(ws) == temps == []
        _assert_no_open_transaction(ws)
        ws.load(TAU_BENCH)  # the workspace still takes loads
    with enb.open(path) as ws:  # and nothing half-written reached the file
        assert sorted(ws.jobs()["job_id"]) == sorted(
            ["job_abc0001", ws.jobs()["job_id"].tolist()[1], "tau-bench:gpt-4o-airline"]
        )
        assert len(ws.job("job_abc0001").attempts()) == 6


def test_successful_loads_leave_no_temporary_objects(ws: enb.Workspace, tmp_path: Path) -> None:
    ws.load(THREE_TASKS)
    ws.load(HARBOR / "2026-03-02__14-05-11")
    ws.load(TAU_BENCH)
    good = tmp_path / "good.csv"
    good.write_text("task,reward\na,1\na,0\nb,1\n")
    ws.load(good)
    assert _temp_objects(ws) == []
    _assert_no_open_transaction(ws)


def test_lenient_load_commits_only_the_usable_rows(ws: enb.Workspace, tmp_path: Path) -> None:
    with pytest.warns(enb.LoadWarning, match="skipped 1 unusable trial"):
        job = ws.load(_bad_jsonl(tmp_path), lenient=True)
    assert len(job.attempts()) == 5
    assert _temp_objects(ws) == []
    _assert_no_open_transaction(ws)


def test_reload_replaces_rows_and_stamps_a_new_load_time(ws: enb.Workspace) -> None:
    ws.load(THREE_TASKS)
    first = ws.con.execute("SELECT loaded_at FROM jobs").fetchone()
    ws.load(THREE_TASKS)
    assert ws.con.execute("SELECT count(*) FROM jobs").fetchone() == (1,)
    assert ws.con.execute("SELECT count(*) FROM attempts").fetchone() == (6,)
    second = ws.con.execute("SELECT loaded_at FROM jobs").fetchone()
    assert first is not None and second is not None and second[0] >= first[0]


def test_duckdb_gives_freed_memory_back_in_the_background(tmp_path: Path) -> None:
    """Every workspace, in memory, on file and read-only, runs DuckDB's allocator
    background threads (what a big load freed goes back to the system)."""
    path = tmp_path / "w.duckdb"
    with enb.open() as ws, enb.open(path) as on_file:
        assert _setting(ws, "allocator_background_threads") == "True"
        assert _setting(on_file, "allocator_background_threads") == "True"
    with enb.open(path, read_only=True) as ro:
        assert _setting(ro, "allocator_background_threads") == "True"


@pytest.mark.skipif(sys.platform != "linux", reason="DuckDB uses jemalloc on Linux only")
def test_release_memory_hands_back_what_duckdb_freed() -> None:
    """After a wide aggregate DuckDB's allocator holds the freed memory; the release
    returns it to the system and leaves the thread count as it was."""
    from envloop_nb._store.memory import release_memory

    def rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    con = duckdb.connect(config={"memory_limit": "1GB", "threads": 2})
    con.execute(
        "SELECT i % 3000000 AS g, count(*), sum(i), max(i::VARCHAR) "
        "FROM range(30000000) t(i) GROUP BY g"
    ).fetchall()
    held = rss_mb()
    release_memory(con)
    assert rss_mb() < held - 50  # MB back to the system (~120 MB on the CI machine)
    row = con.execute("SELECT current_setting('threads')").fetchone()
    assert row is not None and int(row[0]) == 2
    con.close()


def test_a_load_leaves_the_thread_count_as_it_was() -> None:
    with enb.open() as ws:
        ws.sql("SET threads = 1")
        ws.load(THREE_TASKS)
        assert _setting(ws, "threads") == "1"


def test_per_task_answers_of_a_big_job_release_what_duckdb_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A per-task query that fetched RELEASE_ROWS rows or more (the task rows, the
    counts, a threshold's passes, a tag's groups) purges DuckDB's arenas after it; a
    smaller one does not."""
    from benchmarks.bench_panel import generate_job
    from envloop_nb._store import memory

    released: list[int] = []
    monkeypatch.setattr(memory, "release_memory", lambda con: released.append(1))
    with enb.open() as ws:
        job = generate_job(ws, 2_000)  # 500 tasks, no counts kept by a load
        job.summary(threshold=0.5)
        job.groups(by="subset", threshold=0.5)
        assert released == []  # under the default RELEASE_ROWS
    monkeypatch.setattr(memory, "RELEASE_ROWS", 500)
    with enb.open() as ws:
        job = generate_job(ws, 2_000)
        job.summary(threshold=0.5)  # the task rows and the counts at 0.5
        assert len(released) == 2
        job.groups(by="subset", threshold=0.5)  # the tag's values
        assert len(released) == 3
        job.summary(threshold=0.5)  # memoized: no query, nothing to release
        assert len(released) == 3
