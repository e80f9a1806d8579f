"""job.log_mlflow on a real MLflow tracking store (a SQLite file MLflow creates itself).

Every logged metric is checked against the numbers the job already reports
(``rollout_stats``, ``summary``, ``curve``, ``samples``, the job row), read back from the
store with ``MlflowClient``; then params, tags and the two artifacts.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._export.mlflow_run import default_ks, job_run_content

from .conftest import SAMPLE_DATA, THREE_TASKS

# MLflow decides at import time whether to send usage telemetry; a test run never should.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

pytestmark = pytest.mark.slow  # MLflow's imports and its SQLite migrations take seconds

ROOT = Path(__file__).resolve().parent.parent


def _stat(stats: pd.DataFrame, quantity: str, level: str, name: str) -> float:
    row = stats[(stats["quantity"] == quantity) & (stats["level"] == level)]
    assert len(row) == 1
    return float(row.iloc[0][name])


def _mean_of_defined(values: pd.Series) -> float:
    ok = [float(v) for v in values.dropna()]
    return math.fsum(ok) / len(ok)


def _expected(job: enb.Job, policy: Any = "unknown", threshold: float | None = None) -> dict:
    """What the run should hold, built from the job's own public numbers."""
    st = job.rollout_stats()
    s = job.summary(policy=policy, threshold=threshold)
    tasks = job.samples(threshold=threshold)
    info = job.info
    ks = default_ks(job.k)
    cv = job.curve(ks=ks, policy=policy, threshold=threshold).set_index("k")
    out: dict[str, float | None] = {
        "eval/reward/mean": _stat(st, "reward", "rollout", "mean"),
        "eval/reward/min": _stat(st, "reward", "rollout", "min"),
        "eval/reward/max": _stat(st, "reward", "rollout", "max"),
        "eval/reward/std": _stat(st, "reward", "rollout", "std"),
        "eval/reward/zero_frac": _stat(st, "reward", "rollout", "zero_frac"),
    }
    for k in ks:
        out[f"eval/reward/pass_at_{k}"] = float(cv.loc[k, "pass@k"])
        out[f"eval/reward/pass_power_{k}"] = float(cv.loc[k, "pass^k"])
    if s.binary:
        succeeded = int(tasks["passes"].sum())
        out["eval/reward/succeeded_rollouts"] = float(succeeded)
        out["eval/reward/failed_rollouts"] = float(s.scored - succeeded)
        out["eval/reward/success_threshold"] = 1.0 if threshold is None else threshold
    else:
        out["eval/reward/succeeded_rollouts"] = None
        out["eval/reward/failed_rollouts"] = None
        out["eval/reward/success_threshold"] = None
    out["eval/reward/num_prompts"] = float(s.total_members)
    out["eval/reward/rollouts_per_prompt"] = float(s.k)
    out["eval/reward/mean_within_groups"] = _stat(st, "reward", "task mean", "mean")
    out["eval/reward/std_within_groups"] = _mean_of_defined(tasks["reward_std"])
    out["eval/reward/min_within_groups"] = _mean_of_defined(tasks["reward_min"])
    out["eval/reward/max_within_groups"] = _mean_of_defined(tasks["reward_max"])
    out["eval/tokens/prompt_mean"] = _stat(st, "input_tokens", "rollout", "mean")
    for name in ("mean", "min", "max", "std"):
        out[f"eval/tokens/response_{name}"] = _stat(st, "output_tokens", "rollout", name)
    for name in ("mean", "min", "max"):
        out[f"eval/turns/{name}"] = _stat(st, "turns", "rollout", name)
    out["eval/logprob/nz_mean"] = _stat(st, "logprob_mean", "rollout", "mean")
    out["eval/logprob/nz_min"] = _stat(st, "logprob_min", "rollout", "min")
    finished = info["status"] not in ("pending", "running") and info["finished_at"] is not None
    out["timing_s/eval"] = (
        (info["finished_at"] - info["created_at"]).total_seconds() if finished else None
    )
    for name in ("total", "scored", "missing", "invalid", "complete_members"):
        out[f"eval/coverage/{name}"] = float(getattr(s, name))
    return {k: (None if v is None or math.isnan(v) else v) for k, v in out.items()}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite store for the module (MLflow's schema migrations take seconds each)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def experiment(request: pytest.FixtureRequest) -> str:
    """An experiment name of this test's own in the shared store."""
    return f"evals-{request.node.name}"


def _client(uri: str) -> Any:
    return mlflow.MlflowClient(tracking_uri=uri)


@pytest.mark.parametrize(
    ("path", "policy", "threshold"),
    [
        (SAMPLE_DATA / "base.json", "unknown", None),
        (SAMPLE_DATA / "base.json", "failure", None),
        (SAMPLE_DATA / "graded.json", "unknown", None),  # non-binary: no pass@k
        (SAMPLE_DATA / "graded.json", "unknown", 0.7),
        (THREE_TASKS, "unknown", None),  # running, no logprobs
    ],
)
def test_every_metric_is_the_jobs_own_number(
    ws: enb.Workspace, store: str, experiment: str, path: Path, policy: Any, threshold: Any
) -> None:
    job = ws.load(path)
    run_id = job.log_mlflow(
        experiment=experiment,
        run_name=job.id,
        tracking_uri=store,
        policy=policy,
        threshold=threshold,
    )
    run = _client(store).get_run(run_id)
    expected = _expected(job, policy, threshold)
    logged = {k: v for k, v in expected.items() if v is not None}
    skipped = [k for k, v in expected.items() if v is None]
    assert run.data.metrics == logged  # exactly: same names, same floats bit for bit
    assert run.data.tags["envloop_nb.skipped_metrics"] == ",".join(skipped)
    assert run.info.run_name == job.id
    assert run.info.status == "FINISHED"
    # the summary's headline numbers are the same values under SageMaker's names
    s = job.summary(policy=policy, threshold=threshold).to_dict()
    if s["pass@k"] is not None:
        assert run.data.metrics[f"eval/reward/pass_at_{job.k}"] == s["pass@k"]
        assert run.data.metrics[f"eval/reward/pass_power_{job.k}"] == s["pass^k"]
    # artifacts land in mlruns beside the database, not in the working folder
    beside = Path(store.removeprefix("sqlite:///")).parent / "mlruns"
    assert Path(run.info.artifact_uri.removeprefix("file://")).is_relative_to(beside)


def test_undefined_values_are_skipped_never_zero(
    ws: enb.Workspace, store: str, experiment: str
) -> None:
    job = ws.load(THREE_TASKS)  # no logprobs recorded, job still running
    run = _client(store).get_run(job.log_mlflow(experiment=experiment, tracking_uri=store))
    skipped = run.data.tags["envloop_nb.skipped_metrics"].split(",")
    assert skipped == ["eval/logprob/nz_mean", "eval/logprob/nz_min", "timing_s/eval"]
    assert not set(skipped) & set(run.data.metrics)
    assert run.data.tags["envloop_nb.partial"] == "true"
    graded = ws.load(SAMPLE_DATA / "graded.json")  # non-binary rewards, no threshold
    run = _client(store).get_run(graded.log_mlflow(experiment=experiment, tracking_uri=store))
    assert "eval/reward/pass_at_1" not in run.data.metrics
    assert "eval/reward/succeeded_rollouts" not in run.data.metrics
    assert "eval/reward/success_threshold" in run.data.tags["envloop_nb.skipped_metrics"]
    assert run.data.metrics["timing_s/eval"] == 5444.0  # 09:00:00 → 10:30:44


def test_params_and_tags(ws: enb.Workspace, store: str, experiment: str) -> None:
    job = ws.load(SAMPLE_DATA / "base.json")
    run_id = job.log_mlflow(experiment=experiment, tracking_uri=store, threshold=0.5, ks=[1, 3])
    run = _client(store).get_run(run_id)
    info = job.info
    version = run.data.params["envloop_nb_version"]
    assert version and version == run.data.tags["envloop_nb.version"]
    assert run.data.params == {
        "policy": "unknown",
        "threshold": "0.5",
        "k": "4",
        "ks": "1,3",
        "job_id": "job_base",
        "model": "acme-7b@base",
        "dataset_name": "acme-agent-bench",
        "dataset_version": "2026.11",
        "dataset_revision": info["dataset_revision"],
        "source_format": "envloop",
        "envloop_nb_version": version,
    }
    tags = {k: v for k, v in run.data.tags.items() if k.startswith("envloop_nb.")}
    assert tags == {
        "envloop_nb.job_id": "job_base",
        "envloop_nb.kind": "job",
        "envloop_nb.version": version,
        "envloop_nb.job_status": "completed",
        "envloop_nb.partial": "false",
        "envloop_nb.skipped_metrics": "",
    }
    assert "eval/reward/pass_at_3" in run.data.metrics
    assert "eval/reward/pass_at_4" not in run.data.metrics  # not asked for
    assert run.data.metrics["eval/reward/success_threshold"] == 0.5


def test_artifacts_read_back(
    ws: enb.Workspace, store: str, experiment: str, tmp_path: Path
) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    job = ws.load(SAMPLE_DATA / "base.json")
    run_id = job.log_mlflow(experiment=experiment, tracking_uri=store, policy="failure")
    client = _client(store)
    assert sorted(a.path for a in client.list_artifacts(run_id)) == [
        "job_base.xlsx",
        "per_task.parquet",
        "task_counts.parquet",
    ]
    local = Path(client.download_artifacts(run_id, "", str(tmp_path / "down")))
    back = pd.read_parquet(local / "per_task.parquet")
    pd.testing.assert_frame_equal(back, job.samples(policy="failure"))
    wb = openpyxl.load_workbook(local / "job_base.xlsx", read_only=True)
    try:
        assert wb.sheetnames[:3] == ["Summary", "Tasks", "Attempts"]
    finally:
        wb.close()


def test_experiment_is_reused_and_runs_accumulate(
    ws: enb.Workspace, store: str, experiment: str
) -> None:
    job = ws.load(THREE_TASKS)
    first = job.log_mlflow(experiment=experiment, run_name="a", tracking_uri=store)
    second = job.log_mlflow(experiment=experiment, run_name="b", tracking_uri=store)
    client = _client(store)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id])
    assert {r.info.run_id for r in runs} == {first, second}
    assert {r.info.run_name for r in runs} == {"a", "b"}


def test_artifact_location_and_refusals(
    ws: enb.Workspace, store: str, experiment: str, tmp_path: Path
) -> None:
    job = ws.load(THREE_TASKS)
    where = (tmp_path / "elsewhere").as_uri()
    run_id = job.log_mlflow(experiment=experiment, tracking_uri=store, artifact_location=where)
    assert _client(store).get_run(run_id).info.artifact_uri.startswith(where)
    with pytest.raises(ValueError, match="experiment must be a non-empty name"):
        job.log_mlflow(experiment=" ", tracking_uri=store)
    with pytest.raises(ValueError, match="policy must be"):
        job.log_mlflow(experiment=experiment, tracking_uri=store, policy="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ks must be positive integers"):
        job.log_mlflow(experiment=experiment, tracking_uri=store, ks=[0])
    client = _client(store)
    client.delete_experiment(client.get_experiment_by_name(experiment).experiment_id)
    with pytest.raises(ValueError, match="is deleted"):
        job.log_mlflow(experiment=experiment, tracking_uri=store)


def test_no_mlruns_folder_in_the_repo() -> None:
    """Every test names its store and artifact root: nothing lands in the working folder."""
    assert not (ROOT / "mlruns").exists()
    assert not (ROOT / "mlflow.db").exists()


def test_missing_mlflow_names_the_extra(
    ws: enb.Workspace, store: str, experiment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    job = ws.load(THREE_TASKS)
    with pytest.raises(ImportError, match=r"pip install 'envloop_nb\[mlflow\]'"):
        job.log_mlflow(experiment=experiment, tracking_uri=store)


def test_run_content_is_pure(ws: enb.Workspace) -> None:
    """The pure builder gives the same content twice and never touches MLflow."""
    job = ws.load(SAMPLE_DATA / "base.json")
    a, b = job_run_content(job), job_run_content(job)
    assert a == b
    assert a.skipped == ()
    assert list(a.metrics)[:5] == [
        "eval/reward/mean",
        "eval/reward/min",
        "eval/reward/max",
        "eval/reward/std",
        "eval/reward/zero_frac",
    ]
