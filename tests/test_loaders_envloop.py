"""EnvLoop exports: single document, JSONL, JSONL.gz; retries; every field kept."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format
from tests.conftest import SAMPLE_DATA, THREE_TASKS


def load_job(ws: enb.Workspace, source: Any, **options: Any) -> enb.Job:
    """``ws.load`` typed as a job (it returns a Dataset only for dataset folders)."""
    job = ws.load(source, **options)
    assert isinstance(job, enb.Job)
    return job


def assert_frames_agree(job: enb.Job) -> None:
    """``job.attempts()`` as pandas and as polars hold the same content."""
    pdf = job.attempts(frame="pandas")
    pldf = job.attempts(frame="polars")
    assert list(pdf.columns) == pldf.columns
    assert pdf.shape == pldf.shape

    def norm(v: Any) -> Any:
        if v is None or v is pd.NaT or (isinstance(v, float) and v != v):
            return None
        if hasattr(v, "isoformat"):
            return v.isoformat()
        if isinstance(v, float):
            return round(v, 12)
        if hasattr(v, "item"):
            return v.item()
        return v

    left = [[norm(v) for v in row] for row in pdf.astype(object).values.tolist()]
    right = [[norm(v) for v in row] for row in pldf.rows()]
    assert left == right


def to_jsonl(doc: dict[str, Any], path: Path, *, metrics: bool = True) -> Path:
    lines = [json.dumps({"schema_version": doc["schema_version"], "job": doc["job"]})]
    lines += [json.dumps(t) for t in doc["trials"]]
    if metrics and doc.get("metrics"):
        lines.append(json.dumps({"metrics": doc["metrics"]}))
    text = "\n".join(lines) + "\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def _doc() -> dict[str, Any]:
    return json.loads(THREE_TASKS.read_text())


def _rows(job: enb.Job) -> list[tuple]:
    return job.con.execute(
        "SELECT * EXCLUDE (job_id, source_place) FROM attempts WHERE job_id = ? ORDER BY ALL",
        [job.id],
    ).fetchall()


def test_document_keeps_every_field(ws: enb.Workspace) -> None:
    job = load_job(ws, THREE_TASKS)
    info = job.info
    assert info["source_format"] == "envloop"
    assert info["dataset_revision"] == "sha256:3b1f0c"
    assert info["runner"] == "harbor@0.22.0"
    assert info["profile_name"] == "team/eval"
    assert info["profile_params"]["MODEL_NAME"] == "my-endpoint/sft"
    assert info["request_id"] == "req_0001"
    assert info["platform_metrics"]["score"] == 0.6
    a = job.attempts().set_index("trial_id")
    assert a.loc["tr_1", "input"] == "Compute 17*23." and not a.loc["tr_1", "input_is_chat"]
    assert a.loc["tr_3", "input_is_chat"]
    assert json.loads(a.loc["tr_3", "input"])[0]["role"] == "user"
    assert a.loc["tr_3", "composite"] == 0.9
    assert a.loc["tr_3", "judge_summary"] == "All tests pass."
    assert json.loads(a.loc["tr_3", "artifacts"])[0]["name"] == "diff.patch"
    assert a.loc["tr_1", "reference"] == "391"
    assert a.loc["tr_1", "turns"] == 6 and a.loc["tr_1", "input_tokens"] == 1200
    assert a.loc["tr_1", "duration_s"] == 180.0
    dims = job.dimensions()
    assert set(dims["name"]) == {"tests_passed", "style"}
    tags = ws.sql(f"SELECT task, key, value FROM task_tags WHERE job_id='{job.id}' ORDER BY task")
    assert tags.fetchall() == [
        ("A", "subset", "math"),
        ("B", "subset", "code"),
        ("C", "subset", "code"),
    ]


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz", "run.ndjson"])
def test_jsonl_forms_equal_the_document(ws: enb.Workspace, tmp_path: Path, name: str) -> None:
    doc_job = load_job(ws, THREE_TASKS)
    doc_rows = _rows(doc_job)
    doc_info = doc_job.info
    path = to_jsonl(_doc(), tmp_path / name)
    assert detect_format(path) == "envloop"
    job = load_job(ws, path)
    assert job.id == doc_job.id
    assert _rows(job) == doc_rows
    assert job.info["platform_metrics"] == doc_info["platform_metrics"]
    assert len(job.tasks()) == 3


def test_jsonl_without_metrics_line(ws: enb.Workspace, tmp_path: Path) -> None:
    job = load_job(ws, to_jsonl(_doc(), tmp_path / "x.jsonl", metrics=False))
    assert job.info["platform_metrics"] is None
    assert len(job.attempts()) == 6


def test_duplicate_slots_resolve_to_attempt_of_record(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc()
    retry = dict(doc["trials"][1], id="tr_2_retry", reward=1, status="completed")
    retry["finished_at"] = "2026-11-20T09:00:00Z"
    older = dict(doc["trials"][0], id="tr_1_old", reward=0)
    older["finished_at"] = "2026-11-20T08:01:00Z"
    doc["trials"] += [retry, older]
    for suffix in ("json", "jsonl"):
        path = tmp_path / f"retry.{suffix}"
        if suffix == "json":
            path.write_text(json.dumps(doc))
        else:
            to_jsonl(doc, path)
        a = load_job(ws, path).attempts().set_index(["task", "attempt"])
        assert a.loc[("A", 2), "trial_id"] == "tr_2_retry"
        assert a.loc[("A", 2), "n_trials"] == 2
        assert a.loc[("A", 1), "trial_id"] == "tr_1"  # later finished_at wins
        assert len(a) == 6


def test_undispatched_tasks_are_known(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc()
    doc["job"]["tasks"].append({"name": "D", "digest": "sha256:dd", "tags": {}})
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    job = load_job(ws, path)
    s = job.summary()
    assert s.total_members == 4 and s.total == 8 and s.missing == 3


def test_sample_data_loads(ws: enb.Workspace) -> None:
    paths = sorted(SAMPLE_DATA.glob("*.json")) + sorted(SAMPLE_DATA.glob("*.jsonl.gz"))
    if not paths:
        pytest.skip("sample data not generated yet")
    for path in paths:
        assert detect_format(path) == "envloop", path
        job = load_job(ws, path)
        assert len(job.attempts()) > 0
    assert len(ws.jobs()) == len(paths)


def test_pandas_and_polars_attempts_agree(ws: enb.Workspace) -> None:
    assert_frames_agree(load_job(ws, THREE_TASKS))


def test_error_type_is_the_leading_exception_name(tmp_path: Path) -> None:
    doc = json.loads(THREE_TASKS.read_text())
    doc["trials"][1]["error"] = "AgentTimeoutError: agent did not finish within 1800s"
    doc["trials"][4]["error"] = "verifier crashed"
    path = tmp_path / "errors.json"
    path.write_text(json.dumps(doc))
    ws = enb.open()
    attempts = ws.load(path).attempts()
    types = dict(zip(attempts["trial_id"], attempts["error_type"], strict=True))
    assert types["tr_2"] == "AgentTimeoutError"
    assert pd.isna(types["tr_5"])  # no leading exception name: no type, not a guess
