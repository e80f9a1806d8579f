"""τ-bench (real data) and τ²-bench (a fixture from the documented fields)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format, job_sources
from tests.conftest import ROOT, TAU_BENCH
from tests.test_loaders_envloop import assert_frames_agree, load_job

TAU2 = ROOT / "tests" / "data" / "tau2" / "results.json"


def test_tau_bench_is_50_tasks_by_4_attempts(ws: enb.Workspace) -> None:
    assert detect_format(TAU_BENCH) == "tau-bench"
    job = load_job(ws, TAU_BENCH)
    assert job.id == "tau-bench:gpt-4o-airline"
    assert job.k == 4
    assert len(job.tasks()) == 50
    a = job.attempts()
    assert len(a) == 200
    assert a.groupby("task")["attempt"].apply(sorted).map(tuple).unique().tolist() == [(1, 2, 3, 4)]
    assert job.tasks()["task"].tolist()[:3] == ["0", "1", "2"]
    info = job.info
    assert info["source_format"] == "tau-bench"
    assert info["model"] is None  # not in the file


def test_tau_bench_published_pass_hat_k(ws: enb.Workspace) -> None:
    """τ-bench's README for this run: pass^1..4 = 0.420, 0.273, 0.220, 0.200."""
    job = load_job(ws, TAU_BENCH)
    exact = [0.42, 41 / 150, 0.22, 0.2]  # the correctly rounded exact means, as floats
    for policy in ("failure", "unknown"):  # every trial is scored: the policies agree
        curve = job.curve(policy=policy)
        assert curve["pass^k"].tolist() == exact
        assert curve["pass@k"].tolist()[0] == curve["pass^k"].tolist()[0]
        summary = job.summary(policy=policy)
        assert summary.pass_ == curve["pass^k"].tolist()[0] == 0.42
        assert summary.pass_hat_k == curve["pass^k"].tolist()[-1] == 0.2
    samples = job.samples(ks=[1, 2, 3, 4], policy="failure")
    means = [round(float(samples[f"pass^{k}"].mean()), 3) for k in (1, 2, 3, 4)]
    assert means == [0.420, 0.273, 0.220, 0.200]


def test_tau_bench_attempt_fields(ws: enb.Workspace) -> None:
    job = load_job(ws, TAU_BENCH)
    rows = json.loads(TAU_BENCH.read_text())
    first = job.attempts().iloc[0]
    assert (first["task"], first["attempt"]) == ("0", 1)
    assert first["input_is_chat"]
    traj = json.loads(first["input"])
    assert traj == rows[0]["traj"]
    last_assistant = [m for m in rows[0]["traj"] if m["role"] == "assistant" and m.get("content")]
    assert first["output"] == last_assistant[-1]["content"]
    extra = json.loads(first["extra"])
    assert extra["task"]["instruction"] == rows[0]["info"]["task"]["instruction"]
    assert first["status"] == "completed"
    assert first["source_place"] == "[0] (task_id 0, trial 0)"


def test_tau_bench_near_one_is_a_pass_and_errors_kept(ws: enb.Workspace, tmp_path: Path) -> None:
    rows = json.loads(TAU_BENCH.read_text())[:8]  # tasks 0-7, trial 0
    rows[0]["reward"] = 1 - 5e-7
    rows[1]["reward"] = 1 - 5e-6  # not within 1e-6: kept as is, not a pass
    rows[2]["reward"] = 0.0
    rows[2]["info"]["error"] = "litellm.RateLimitError"
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(rows))
    job = load_job(ws, path)
    a = job.attempts().set_index("task")
    assert a.loc["0", "reward"] == 1.0
    assert json.loads(a.loc["0", "extra"])["raw_reward"] == pytest.approx(1 - 5e-7)
    assert a.loc["1", "reward"] == pytest.approx(1 - 5e-6)
    assert a.loc["2", "status"] == "failed" and a.loc["2", "reward"] == 0.0
    assert a.loc["2", "error"] == "litellm.RateLimitError"
    assert job.k == 1
    assert job.summary(threshold=None).binary is False  # 1 - 5e-6 is not binary


def test_tau_bench_options(ws: enb.Workspace) -> None:
    job = load_job(ws, TAU_BENCH, job_id="t", model="gpt-4o", k=5, dataset_version="airline")
    assert (job.id, job.k, job.info["model"], job.info["dataset_version"]) == (
        "t",
        5,
        "gpt-4o",
        "airline",
    )
    assert job.summary().missing == 50


def test_tau2_bench_fixture(ws: enb.Workspace) -> None:
    assert detect_format(TAU2) == "tau2-bench"
    job = load_job(ws, TAU2)
    assert job.id == "tau2-bench:tau2"
    info = job.info
    assert info["model"] == "gpt-4.1-mini"
    assert info["dataset_name"] == "tau2-bench/airline"
    assert info["created_at"].isoformat() == "2026-03-05T10:00:00+00:00"
    assert job.k == 2
    assert job.tasks()["task"].tolist() == ["0", "1", "2", "3"]  # task 3 never ran
    a = job.attempts().set_index("trial_id")
    assert len(a) == 6
    infra = a.loc["s-1-1"]
    assert infra["reward"] != infra["reward"]  # NULL: left out, not a failure
    assert (infra["status"], infra["error_type"]) == ("failed", "infrastructure_error")
    assert a.loc["s-0-1", "reward"] == 1.0  # 0.9999999 is a success
    assert a.loc["s-1-0", "duration_s"] == 120.25
    assert a.loc["s-1-0", "cost_usd"] == pytest.approx(0.054)
    assert json.loads(a.loc["s-1-0", "extra"])["termination_reason"] == "max_steps"
    assert a.loc["s-2-0", "output"] == "One bag added to ZFA04Y."
    s = job.summary()
    # τ²'s own average leaves the infrastructure error out: 3 of 5 scored
    assert (s.scored, s.invalid, s.missing, s.total) == (5, 1, 3, 8)
    assert s.score == pytest.approx(3 / 5)
    assert job.summary(policy="failure").score == pytest.approx(3 / 8)
    dims = job.dimensions()
    assert set(dims["name"]) == {"DB", "COMMUNICATE"}
    assert len(dims) == 10  # the infrastructure error's empty breakdown adds nothing


def test_pandas_and_polars_attempts_agree(ws: enb.Workspace) -> None:
    assert_frames_agree(load_job(ws, TAU_BENCH))
    assert_frames_agree(load_job(ws, TAU2))


def test_k_counts_trials_not_the_highest_trial_number(tmp_path: Path) -> None:
    """A file whose ``trial`` holds a task index (0..99, one row each) used to give k = 100
    in silence; k is what tasks have, and a numbering beyond it is said out loud."""
    rows = [{"task_id": i, "trial": i, "reward": 1.0, "info": {}, "traj": []} for i in range(5)]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(rows))
    with pytest.warns(
        enb.LoadWarning, match=r"attempt numbers reach 5 but no task has more than 1"
    ):
        job = enb.open().load(path)
    assert job.k == 5  # as numbered, so no attempt is out of range; coverage shows the gaps
    assert enb.open().load(path, k=5).k == 5  # k= says it: no warning (warnings are errors)


# τ²'s dir form (``Results.save(format="dir")``: results.json with a simulation_index and
# one simulations/<id>.json each) of the same run as TAU2, in a leaderboard submission's
# trajectories/ beside its submission.json (tests/data/tau2_submission).
SUB = ROOT / "tests" / "data" / "tau2_submission" / "gpt-4.1-mini_example-org_2026-03-05"
RUN_DIR = SUB / "trajectories" / "gpt-4.1-mini_airline_gpt-4.1_2trials"


def _rows(job: enb.Job) -> list[dict[str, object]]:
    a = job.attempts().drop(columns=["source_place"])
    return a.sort_values(["task", "attempt"]).to_dict("records")  # type: ignore[no-any-return]


@pytest.mark.parametrize("source", [RUN_DIR, RUN_DIR / "results.json"])
def test_tau2_dir_form_is_the_same_job_as_one_file(ws: enb.Workspace, source: Path) -> None:
    assert detect_format(source) == "tau2-bench"
    assert job_sources(source) == [source]  # one job, not a folder of jobs
    job = load_job(ws, source)
    one = load_job(ws, TAU2)
    assert job.id == "tau2-bench:gpt-4.1-mini_airline_gpt-4.1_2trials"
    assert (job.k, job.info["model"], job.info["dataset_name"]) == (
        2,
        "gpt-4.1-mini",
        "tau2-bench/airline",
    )
    assert job.tasks()["task"].tolist() == one.tasks()["task"].tolist()
    assert str(job.summary()) == str(one.summary())
    left, right = _rows(job), _rows(one)
    assert json.dumps(left, default=str, sort_keys=True) == json.dumps(
        right, default=str, sort_keys=True
    )
    places = sorted(job.attempts()["source_place"])
    assert places[0] == "simulations/s-0-0.json (id s-0-0)"


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN_DIR, run)
    return run


def test_tau2_dir_form_integrity(ws: enb.Workspace, tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    (run / "simulations" / "s-2-1.json").unlink()
    with pytest.raises(
        enb.LoadError, match=r"listed but no file in simulations/: \['s-2-1'\]"
    ) as err:
        ws.load(run)
    assert (err.value.source, err.value.place) == (str(run / "results.json"), "$.simulation_index")
    run = _copy_run(tmp_path / "b")
    (run / "simulations" / "s-9-9.json").write_text("{}")
    with pytest.raises(enb.LoadError, match=r"not listed: \['s-9-9'\]"):
        ws.load(run)
    run = _copy_run(tmp_path / "c")
    (run / "simulations" / "s-1-0.json").write_text('{"id": "s-1-0", "task_id": "1", "trial": "x"}')
    with pytest.raises(enb.LoadError, match="trial must be an integer") as err:
        ws.load(run)
    assert err.value.source == str(run / "simulations" / "s-1-0.json")
    run = _copy_run(tmp_path / "d")
    shutil.rmtree(run / "simulations")
    with pytest.raises(enb.LoadError, match="simulations/ folder is missing"):
        ws.load(run / "results.json")
    assert ws.jobs().empty


def test_tau2_submission_numbers_are_checked(ws: enb.Workspace) -> None:
    job = load_job(ws, RUN_DIR)
    rows = job.source_agreement()
    assert rows["metric"].tolist() == ["submission pass^1 (airline, %)"]  # pass^2..4 are null
    assert rows["source"].tolist() == [50.0] and rows["agrees"].tolist() == [True]
    kept = job.info["extra"]["submission"]
    assert (kept["model_name"], kept["submission_date"]) == ("gpt-4.1-mini", "2026-03-05")
    jobs = ws.load_all(SUB)  # the submission folder: its one run
    assert [j.id for j in jobs] == [job.id]


def test_tau2_submission_beside_a_one_file_run(ws: enb.Workspace, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    (sub / "trajectories").mkdir(parents=True)
    doc = json.loads((SUB / "submission.json").read_text())
    doc["trajectory_files"] = {"airline": "airline_results.json"}
    doc["results"]["airline"]["pass_1"] = 66.67  # wrong: the run gives 50
    (sub / "submission.json").write_text(json.dumps(doc))
    shutil.copy(TAU2, sub / "trajectories" / "airline_results.json")
    job = load_job(ws, sub / "trajectories" / "airline_results.json")
    row = job.source_agreement().iloc[0]
    assert (row["source"], row["recomputed"], row["agrees"]) == (66.67, 50.0, False)
    doc["trajectory_files"] = {"retail": "airline_results.json"}
    (sub / "submission.json").write_text(json.dumps(doc))
    with pytest.raises(enb.LoadError, match="domain 'airline'") as err:
        ws.load(sub / "trajectories" / "airline_results.json")
    assert err.value.place == "$.trajectory_files.retail"
    doc["trajectory_files"] = {}
    doc["results"]["airline"]["pass_1"] = "50"
    (sub / "submission.json").write_text(json.dumps(doc))
    with pytest.raises(enb.LoadError, match="expected a percentage") as err:
        ws.load(sub / "trajectories" / "airline_results.json")
    assert (err.value.source, err.value.place) == (
        str(sub / "submission.json"),
        "$.results.airline.pass_1",
    )


def test_tau2_submission_alone_says_what_is_needed(ws: enb.Workspace) -> None:
    for options in ({}, {"format": "tau2-bench"}):
        with pytest.raises(
            enb.LoadError, match="no job by itself: load the domain's τ²-bench results"
        ):
            ws.load(SUB / "submission.json", **options)
    assert ws.jobs().empty
