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
