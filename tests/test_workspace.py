"""Workspace: persistence, idempotent reload, atomic failed loads, frames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import envloop_nb as enb
from tests.conftest import THREE_TASKS


def _snapshot(ws: enb.Workspace) -> dict[str, list[tuple]]:
    tables = ["jobs", "tasks", "task_tags", "attempts", "dimensions", "dimension_meta"]
    return {
        t: ws.con.execute(f"SELECT * EXCLUDE (job_id) FROM {t} ORDER BY ALL").fetchall()
        for t in tables
    }


def test_persistent_workspace_reopens_with_jobs(tmp_path: Path) -> None:
    path = tmp_path / "evals.duckdb"
    with enb.open(path) as ws:
        ws.load(THREE_TASKS)
    with enb.open(path) as ws:
        assert ws.jobs()["job_id"].tolist() == ["job_abc0001"]
        assert ws.job("job_abc0001").summary().scored == 5


def test_reload_replaces_never_duplicates(ws: enb.Workspace) -> None:
    ws.load(THREE_TASKS)
    ws.load(THREE_TASKS)
    assert len(ws.jobs()) == 1
    assert len(ws.job("job_abc0001").attempts()) == 6


def test_failed_load_leaves_workspace_unchanged(ws: enb.Workspace, tmp_path: Path) -> None:
    ws.load(THREE_TASKS)
    before = _snapshot(ws)
    doc = json.loads(THREE_TASKS.read_text())
    doc["trials"][3]["reward"] = "high"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(
        enb.LoadError, match=r"bad.json, trials\[3\] \(id tr_4\): reward must be a number"
    ):
        ws.load(bad)
    assert _snapshot(ws) == before


def test_pandas_and_polars_agree(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    for method in ("attempts", "samples", "curve"):
        pdf = getattr(job, method)(frame="pandas")
        pldf = getattr(job, method)(frame="polars")
        assert list(pdf.columns) == pldf.columns
        assert pdf.shape == pldf.shape
        left = pdf.astype(object).where(pdf.notna(), None).values.tolist()
        right = [list(r) for r in pldf.rows()]
        assert _norm(left) == _norm(right), method


def _norm(rows: list[list]) -> list[list]:
    def one(v: object) -> object:
        if hasattr(v, "isoformat"):
            return v.isoformat()
        if isinstance(v, float):
            return round(v, 12)
        return v

    return [[one(v) for v in row] for row in rows]


def test_user_sql_on_the_connection(ws: enb.Workspace) -> None:
    ws.load(THREE_TASKS)
    assert ws.sql("SELECT count(*) FROM attempts WHERE reward = 1").fetchall() == [(3,)]


# -- the workspace file's own errors (issue 34) ------------------------------------------


def _tables(path: Path) -> list[str]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SHOW TABLES").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("read_only", [False, True])
def test_a_workspace_another_process_writes_is_refused_saying_what_to_do(
    tmp_path: Path, read_only: bool
) -> None:
    """A second process on one workspace file gets a ``WorkspaceError`` naming the file,
    the process that holds it and what to do (it was DuckDB's raw ``IOException``)."""
    import re
    import subprocess
    import sys

    path = tmp_path / "evals.duckdb"
    with enb.open(path) as ws:
        ws.load(THREE_TASKS)
    holder = (
        "import sys, envloop_nb as enb\n"
        "ws = enb.open(sys.argv[1])\n"
        "print('holding', flush=True)\n"
        "sys.stdin.read()\n"  # until the test closes our stdin
        "ws.close()\n"
    )
    root = Path(__file__).resolve().parent.parent
    other = subprocess.Popen(
        [sys.executable, "-c", holder, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root,
    )  # fmt: skip
    try:
        assert other.stdout is not None and other.stdout.readline() == "holding\n"
        with pytest.raises(enb.WorkspaceError) as info:
            enb.open(path, read_only=read_only)
        message = str(info.value)
        assert message.startswith(f"{path}: another process (PID {other.pid}) has this workspace ")
        assert "close it there (ws.close(), or shut down that notebook's kernel)" in message
        assert "read_only=True" in message
        assert re.search(r"\bDuckDB\b", message)
    finally:
        assert other.stdin is not None
        other.stdin.close()
        assert other.wait() == 0
    with enb.open(path) as ws:  # once the other process let go, it opens as before
        assert ws.jobs()["job_id"].tolist() == ["job_abc0001"]


@pytest.mark.parametrize("content", [b"", b"not a database\n" * 300])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_that_is_not_a_duckdb_database_is_refused(
    tmp_path: Path, content: bytes, read_only: bool
) -> None:
    path = tmp_path / "x.duckdb"
    path.write_bytes(content)
    with pytest.raises(enb.WorkspaceError) as info:
        enb.open(path, read_only=read_only)
    assert str(info.value).startswith(f"{path}: not a DuckDB database (DuckDB ")
    assert "give enb.open the path of a workspace file, or of a new file" in str(info.value)
    assert path.read_bytes() == content


@pytest.mark.parametrize("read_only", [False, True])
def test_a_duckdb_file_that_is_not_a_workspace_is_refused_and_left_alone(
    tmp_path: Path, read_only: bool
) -> None:
    """A DuckDB database of other tables was given the workspace's tables beside its own
    (and a table of its own named ``jobs`` broke every question later)."""
    import duckdb

    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE jobs (x INTEGER); CREATE TABLE results (a INTEGER)")
    con.close()
    with pytest.raises(enb.WorkspaceError) as info:
        enb.open(path, read_only=read_only)
    assert str(info.value) == (
        f"{path}: a DuckDB database but not an envloop_nb workspace (no "
        "meta.schema_version; tables jobs, results): give enb.open a new file for a "
        "workspace (read this one with duckdb.connect(path, read_only=True))"
    )
    assert _tables(path) == ["jobs", "results"]


def test_an_empty_duckdb_file_becomes_a_workspace(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "new.duckdb"
    duckdb.connect(str(path)).close()
    with enb.open(path) as ws:
        ws.load(THREE_TASKS)
    with enb.open(path, read_only=True) as ws:
        assert ws.jobs()["job_id"].tolist() == ["job_abc0001"]


@pytest.mark.parametrize("read_only", [False, True])
def test_a_workspace_from_a_newer_envloop_nb_is_a_workspace_error(
    tmp_path: Path, read_only: bool
) -> None:
    import duckdb

    from envloop_nb._store.schema import SCHEMA_VERSION

    path = tmp_path / "evals.duckdb"
    enb.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    with pytest.raises(enb.WorkspaceError, match=r"upgrade envloop_nb to open it") as info:
        enb.open(path, read_only=read_only)
    assert isinstance(info.value, enb.LoadError)  # what caught it before still does
    assert str(info.value).startswith(f"{path}, meta.schema_version: written by ")


def test_one_file_open_twice_in_one_process_with_other_settings(tmp_path: Path) -> None:
    path = tmp_path / "evals.duckdb"
    with enb.open(path), pytest.raises(enb.WorkspaceError) as info:
        enb.open(path, read_only=True)
    assert str(info.value) == (
        f"{path}: already open in this Python process with other settings (read_only, "
        "memory_limit or temp_directory): use that workspace, or ws.close() it first"
    )


def test_a_missing_file_opened_read_only(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.duckdb"
    with pytest.raises(enb.WorkspaceError) as info:
        enb.open(path, read_only=True)
    assert (
        str(info.value) == f"{path}: no such workspace file (read_only=True opens an existing one)"
    )
    assert not path.exists()
