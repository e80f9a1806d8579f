"""ws.load_mlflow_run on a real MLflow tracking store (a SQLite file MLflow creates itself,
artifacts in an explicit folder under tmp_path).

A run logged by ``job.log_mlflow`` comes back as a summarised job whose every number
equals the original job's; a SageMaker evaluation run (metrics only, logged here with
``MlflowClient.log_metric`` under SageMaker's names) comes back as a metrics-only job
that reports what the run states and refuses per-task views.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb import LoadError
from envloop_nb._loaders.mlflow.run import from_metrics, safe_uri

from .conftest import SAMPLE_DATA, THREE_TASKS

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

pytestmark = pytest.mark.slow  # MLflow's imports and its SQLite migrations take seconds

ROOT = Path(__file__).resolve().parent.parent
OTHER = SAMPLE_DATA / "sft-step500.json"  # the other side of the comparisons


@pytest.fixture
def store(tmp_path: Path) -> dict[str, str]:
    """A fresh SQLite tracking store and an artifact folder, both under tmp_path."""
    return {
        "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "artifact_location": (tmp_path / "artifacts").as_uri(),
    }


def _client(uri: str) -> Any:
    with warnings.catch_warnings():  # SQLAlchemy 2.1 deprecation inside MLflow's store
        warnings.simplefilter("ignore", DeprecationWarning)
        return mlflow.MlflowClient(tracking_uri=uri)


def _same_summary(a: enb.Job, b: enb.Job, **kw: Any) -> None:
    left, right = a.summary(**kw).to_dict(), b.summary(**kw).to_dict()
    assert left.pop("job_id") == a.id and right.pop("job_id") == b.id
    assert left == right


def _renamed(frame: pd.DataFrame, old: str, new: str) -> pd.DataFrame:
    return frame.replace({old: new})


CASES = [
    (SAMPLE_DATA / "base.json", None),
    (SAMPLE_DATA / "graded.json", 0.5),
    (SAMPLE_DATA / "running.json", 0.5),
    (THREE_TASKS, None),
]


@pytest.mark.parametrize(("path", "threshold"), CASES, ids=lambda c: getattr(c, "stem", c))
def test_a_logged_job_comes_back_with_every_number(
    store: dict[str, str], path: Path, threshold: float | None
) -> None:
    ws = enb.open()
    job = ws.load(path)
    other = ws.load(OTHER)
    run_id = job.log_mlflow(experiment="round-trip", threshold=threshold, **store)
    fresh = enb.open()
    fresh_other = fresh.load(OTHER)
    back = fresh.load_mlflow_run(run_id, tracking_uri=store["tracking_uri"])
    assert back.id == f"{job.id}@mlflow-{run_id[:8]}"
    assert back.info["source_format"] == "mlflow"
    where = back.info["extra"]["summarised"]["where"]
    assert where == f"MLflow run {run_id} ({store['tracking_uri']})"
    for name in ("status", "model", "dataset_name", "dataset_revision", "runner", "created_at",
                 "finished_at", "attempts"):  # fmt: skip
        assert back.info[name] == job.info[name], name
    assert back.info["extra"]["reward_stats"] == job.info["extra"]["reward_stats"]
    thresholds = [None] if threshold is None else [None, threshold]
    for policy in ("unknown", "failure"):
        for t in thresholds:
            kw: dict[str, Any] = {"policy": policy, "threshold": t}
            _same_summary(job, back, **kw)
            pd.testing.assert_frame_equal(job.samples(**kw), back.samples(**kw))
            pd.testing.assert_frame_equal(job.curve(**kw), back.curve(**kw))
            for by in ("subset", "tag:subset"):
                pd.testing.assert_frame_equal(job.groups(by=by, **kw), back.groups(by=by, **kw))
        pd.testing.assert_frame_equal(
            job.intervals(policy=policy, seed=3), back.intervals(policy=policy, seed=3)
        )
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.34), enb.Bucket("easy", 0.66, 1.01)])
    b1, b2 = job.buckets(rules, allow_partial=True), back.buckets(rules, allow_partial=True)
    pd.testing.assert_frame_equal(b1.counts, b2.counts)
    pd.testing.assert_frame_equal(b1.frame, b2.frame)
    for t in thresholds:
        before = ws.compare([job, other], threshold=t)
        after = fresh.compare([back, fresh_other], threshold=t)
        assert str(after).replace(back.id, job.id) == str(before)
        # Dimensions are attempt-level values: the counts carry the reward only, so the
        # leaderboard's per-dimension columns are those of the job with its attempts.
        left, right = _renamed(after.leaderboard(), back.id, job.id), before.leaderboard()
        dimensions = {"composite", *job.dimensions()["name"]}
        assert set(right.columns) - set(left.columns) <= dimensions
        pd.testing.assert_frame_equal(left, right[left.columns])
    with pytest.raises(ValueError, match="is summarised: its attempts stayed in MLflow run"):
        back.attempts()
    again = fresh.load_mlflow_run(run_id, tracking_uri=store["tracking_uri"])  # replaces
    assert again.id == back.id and len(fresh.jobs()) == 2


def test_a_run_object_and_an_explicit_job_id(store: dict[str, str]) -> None:
    job = enb.open().load(THREE_TASKS)
    run_id = job.log_mlflow(experiment="objects", **store)
    run = _client(store["tracking_uri"]).get_run(run_id)
    back = enb.open().load_mlflow_run(run, tracking_uri=store["tracking_uri"], job_id="mine")
    assert back.id == "mine"
    assert str(back.summary()) == str(job.summary())
    assert not list(ROOT.glob("mlruns")) and not (ROOT / "mlflow.db").exists()


SAGEMAKER = {
    "eval/reward/mean": 0.42,
    "eval/reward/min": 0.0,
    "eval/reward/max": 1.0,
    "eval/reward/num_prompts": 200.0,
    "eval/reward/rollouts_per_prompt": 4.0,
    "eval/reward/succeeded_rollouts": 300.0,
    "eval/reward/failed_rollouts": 480.0,
    "eval/reward/success_threshold": 1.0,
    "eval/reward/pass_at_1": 0.4,
    "eval/reward/pass_at_2": 0.55,
    "eval/reward/pass_at_4": 0.7,
    "eval/reward/pass_power_4": 0.2,
    "timing_s/eval": 1234.5,
}


def _sagemaker_run(store: dict[str, str], metrics: dict[str, float]) -> str:
    """A run as SageMaker's evaluation leaves it: metrics, no artifact, no envloop_nb tag."""
    client = _client(store["tracking_uri"])
    eid = client.create_experiment("sagemaker", artifact_location=store["artifact_location"])
    run = client.create_run(eid, run_name="agent-rft-eval")
    for name, value in metrics.items():
        client.log_metric(run.info.run_id, name, value)
    client.set_terminated(run.info.run_id, "FINISHED")
    return str(run.info.run_id)


def test_a_sagemaker_run_is_a_metrics_only_job(store: dict[str, str]) -> None:
    run_id = _sagemaker_run(store, SAGEMAKER)
    ws = enb.open()
    base = ws.load(SAMPLE_DATA / "base.json")
    job = ws.load_mlflow_run(run_id, tracking_uri=store["tracking_uri"])
    assert job.id == f"agent-rft-eval@mlflow-{run_id[:8]}"
    assert job.info["platform_metrics"] == SAGEMAKER
    assert job.info["status"] == "completed" and job.k == 4
    assert job.info["extra"]["summarised"] == {
        "engine": "mlflow",
        "where": f"MLflow run {run_id} ({store['tracking_uri']})",
        "thresholds": [None, 1.0],
        "metrics_only": True,
    }
    s = job.summary()
    assert (s.k, s.total, s.total_members, s.score) == (4, 800, 200, 0.42)
    assert (s.pass_at_k, s.pass_hat_k) == (0.7, 0.2)
    assert (s.scored, s.missing, s.invalid, s.complete_members, s.pass_) == (None,) * 5
    assert s.note is not None and "aggregate metrics" in s.note
    assert str(s).startswith("score 42.0% · ?/800 attempts scored · ?/200 members complete")
    assert "coverage unknown" in s._repr_html_()
    assert job.summary(threshold=1.0).pass_at_k == 0.7
    with pytest.raises(ValueError, match=r"thresholds none, 1\.0, not 0\.5"):
        job.summary(threshold=0.5)
    refusal = "the run holds only aggregate metrics; no per-task table"
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.34)])
    for view in (job.samples, job.curve, job.intervals, lambda: job.groups(by="subset"),
                 lambda: job.buckets(rules), job.attempts, job.rollout_stats):  # fmt: skip
        with pytest.raises(ValueError, match=refusal):
            view()
    cmp = ws.compare([base, job])
    assert "NOT comparable" in str(cmp)
    found = [d for d in cmp.differences if d.field == "tasks"]
    assert [d.detail for d in found] == [
        f"the task list of {job.id} is unknown: its run holds only aggregate metrics"
    ]
    board = cmp.leaderboard().set_index("job")
    assert board.loc[job.id, "score"] == 0.42 and board.loc[job.id, "pass@4"] == 0.7
    assert board.loc[job.id, "coverage"] == "coverage unknown"
    assert "not comparable" in board.loc[job.id, "warning"]
    listed = ws.jobs().set_index("job_id").loc[job.id]
    assert listed[["tasks", "dispatched", "scored"]].isna().all()  # unknown, not 0
    saved = ws.save_to_leaderboard(job)
    assert saved.new and not ws.save_to_leaderboard(job).new


def test_a_run_without_pass_at_k_or_threshold_says_unknown(store: dict[str, str]) -> None:
    metrics = {"eval/reward/mean": 0.3, "eval/reward/num_prompts": 10.0,
               "eval/reward/rollouts_per_prompt": 2.0}  # fmt: skip
    job = enb.open().load_mlflow_run(
        _sagemaker_run(store, metrics), **{"tracking_uri": store["tracking_uri"]}
    )
    s = job.summary()
    assert (s.score, s.total, s.pass_at_k, s.pass_hat_k, s.binary) == (0.3, 20, None, None, False)


def test_a_run_that_is_no_evaluation_is_refused() -> None:
    with pytest.raises(LoadError, match="not an evaluation run"):
        from_metrics({"loss": 0.1}, {}, job_id="x", where="MLflow run r")
    assert safe_uri("https://me:tok@host/x?token=1") == "https://host/x"
