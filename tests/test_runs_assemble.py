"""A run: which jobs, their steps, and the comparison guard over all of them
(``envloop_nb._runs.assemble``, ``ws.run``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._runs.assemble import parse_step

from .conftest import SAMPLE_DATA

RUN_DIR = SAMPLE_DATA / "training_run"
PYTHIA = Path(__file__).resolve().parent / "data" / "lm_eval" / "pythia_run"


@pytest.fixture
def run_ws(ws: enb.Workspace) -> enb.Workspace:
    ws.load_all(RUN_DIR)
    return ws


def _variant(tmp_path: Path, round_: int, **job: object) -> Path:
    """A copy of one round's export with some job fields replaced."""
    doc = json.loads((RUN_DIR / f"round-{round_:02d}.json").read_text())
    doc["job"].update(job)
    out = tmp_path / f"variant-{round_}-{len(list(tmp_path.iterdir()))}.json"
    out.write_text(json.dumps(doc))
    return out


def _snapshot(ws: enb.Workspace) -> list[tuple[object, ...]]:
    return ws.sql("SELECT job_id, labels, loaded_at FROM jobs ORDER BY job_id").fetchall()


def test_a_named_run_gathers_its_jobs_by_agent_round(run_ws: enb.Workspace) -> None:
    run = run_ws.run("rl-0412")
    assert run.steps == list(range(1, 11))
    assert run.job_ids == [f"job_rl0412_r{i:02d}" for i in range(1, 11)]
    assert run.name == "rl-0412" and run.mark == "" and run.differences == []
    assert repr(run) == "<envloop_nb.Run rl-0412 · 10 steps (1 – 10) by agent_round>"
    assert run.job(6).id == "job_rl0412_r06"


def test_jobs_with_a_step_from_a_label_the_name_or_a_list(run_ws: enb.Workspace) -> None:
    jobs = [run_ws.job(f"job_rl0412_r{i:02d}") for i in (3, 1, 2)]
    for step in ("agent_round", "label:agent_round", "tag:agent_round", "name", None):
        assert run_ws.run(jobs, step=step).steps == [1, 2, 3], step
    run = run_ws.run(jobs, step=[300, 100, 200])
    assert run.steps == [100, 200, 300]
    assert run.job_ids == ["job_rl0412_r01", "job_rl0412_r02", "job_rl0412_r03"]


def test_parse_step_reads_checkpoint_names() -> None:
    assert parse_step("lm-eval:EleutherAI/pythia-160m@160m_step143000") == 143000
    assert parse_step("ckpt-2500") == 2500
    assert parse_step("job_rl0412_r07") == 7
    assert parse_step("job_rl0412_r07@mlflow-2f97acd1") == 7  # not the hash's last digit
    assert parse_step("job_rl0412_r07@mlflow-55013646") == 7  # nor an all-digit run id
    assert parse_step("base") is None


def test_pythia_results_only_checkpoints_are_a_run_by_their_revision(ws: enb.Workspace) -> None:
    jobs = [ws.load(p) for p in sorted(PYTHIA.glob("*.json"))]
    run = ws.run(jobs)
    assert len(run.steps) == 27 and run.steps[0] == 0 and run.steps[-1] == 143000
    assert run.steps == sorted(run.steps)
    # metrics-only jobs: their task lists are unknown, marked as the comparison marks them
    # one finding for the 27, not 27 (the report showed them as 27 bold red lines)
    assert run.mark == (
        "⚠ not comparable: the task lists of 27 jobs are unknown"
        " (lm-eval:EleutherAI/pythia-160m@160m_step0, lm-eval:EleutherAI/pythia-160m@160m_step1,"
        " lm-eval:EleutherAI/pythia-160m@160m_step2 and 24 more): their runs hold only aggregate"
        " metrics"
    )
    assert ws.run(jobs, step="name").steps == run.steps


def test_two_jobs_on_one_step_are_refused_naming_them(run_ws: enb.Workspace) -> None:
    before = _snapshot(run_ws)
    jobs = ["job_rl0412_r01", "job_rl0412_r02", "job_rl0412_r03"]
    with pytest.raises(
        enb.EnvloopError, match="'job_rl0412_r01', 'job_rl0412_r03' all claim step 1"
    ):
        run_ws.run(jobs, step=[1, 2, 1])
    assert _snapshot(run_ws) == before


def test_a_step_that_is_not_a_number_is_refused_naming_the_job(
    run_ws: enb.Workspace, tmp_path: Path
) -> None:
    run_ws.load(_variant(tmp_path, 3, id="job_final", labels={"agent_run": "rl-0412",
                                                             "agent_round": "final"}))  # fmt: skip
    before = _snapshot(run_ws)
    with pytest.raises(
        enb.EnvloopError,
        match="job 'job_final' of run 'rl-0412': its agent_round label is 'final', not a number",
    ):
        run_ws.run("rl-0412")
    with pytest.raises(enb.EnvloopError, match="the step given for job 'job_rl0412_r02' is 'x'"):
        run_ws.run(["job_rl0412_r01", "job_rl0412_r02"], step=[1, "x"])
    with pytest.raises(enb.EnvloopError, match="job 'job_rl0412_r01' has no label 'nolabel'"):
        run_ws.run(["job_rl0412_r01", "job_final"], step="nolabel")
    assert _snapshot(run_ws) == before


def test_a_run_of_one_job_is_refused(run_ws: enb.Workspace, tmp_path: Path) -> None:
    with pytest.raises(enb.EnvloopError, match=r"at least two jobs .* got 1: 'job_rl0412_r01'"):
        run_ws.run(["job_rl0412_r01"])
    run_ws.load(
        _variant(tmp_path, 1, id="job_alone", labels={"agent_run": "solo", "agent_round": "1"})
    )
    with pytest.raises(enb.EnvloopError, match="got 1: 'job_alone'"):
        run_ws.run("solo")


def test_an_unknown_run_lists_the_runs_there_are(run_ws: enb.Workspace) -> None:
    with pytest.raises(
        enb.EnvloopError,
        match=r"no job is labelled agent_run='rl-9'; runs in this workspace: \['rl-0412'\]",
    ):
        run_ws.run("rl-9")


def test_a_checkpoint_on_another_dataset_revision_is_refused_naming_the_jobs(
    run_ws: enb.Workspace, tmp_path: Path
) -> None:
    dataset = {"name": "acme-agent-bench-mini", "version": "2026.12", "revision": "sha256:older"}
    run_ws.load(_variant(tmp_path, 10, id="job_r11_oldrev", dataset=dataset,
                         labels={"agent_run": "rl-0412", "agent_round": "11"}))  # fmt: skip
    before = _snapshot(run_ws)
    with pytest.raises(
        enb.EnvloopError,
        match=r"did not run the same frozen work.*dataset revision .*\(job_r11_oldrev\)",
    ):
        run_ws.run("rl-0412")
    assert _snapshot(run_ws) == before
    marked = run_ws.run("rl-0412", strict=False)  # marked instead, as a comparison marks it
    assert marked.mark.startswith("⚠ not comparable: dataset revision")
    assert marked.curve().attrs["mark"] == marked.mark


def test_different_task_lists_are_marked_and_that_pair_is_not_assessed(
    run_ws: enb.Workspace, tmp_path: Path
) -> None:
    doc = json.loads((RUN_DIR / "round-10.json").read_text())
    doc["job"].update(id="job_r11_fewer", labels={"agent_run": "rl-0412", "agent_round": "11"})
    doc["job"]["tasks"] = doc["job"]["tasks"][:40]
    kept = {t["name"] for t in doc["job"]["tasks"]}
    doc["trials"] = [t for t in doc["trials"] if t["task"] in kept]
    path = tmp_path / "fewer.json"
    path.write_text(json.dumps(doc))
    run_ws.load(path)
    run = run_ws.run("rl-0412")
    assert run.mark.startswith(
        "⚠ not comparable: 8 tasks of job_rl0412_r01 are missing from job_r11_fewer"
    )
    tests = run.tests()
    last = tests[(tests["step_a"] == 10) & (tests["step_b"] == 11)].iloc[0]
    assert last["verdict"].startswith(
        "not assessed: not comparable (not the same tasks: 8 only in step 10"
    )
    assert last["p"] is None or last["p"] != last["p"]


@pytest.mark.parametrize(
    ("script", "folder"),
    [(RUN_DIR / "generate.py", RUN_DIR), (PYTHIA / "generate.py", PYTHIA)],
    ids=["training_run", "pythia_run"],
)
def test_the_committed_files_are_what_their_script_writes(
    script: Path, folder: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in folder.glob("*.json"))
    for name in written:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), name


@pytest.mark.filterwarnings(  # MLflow's SQL store, reading a metric history
    "ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"
)
def test_an_mlflow_metric_history_is_a_run_by_its_step_axis(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    """One MLflow run that logged eval/reward/* during training (SageMaker's way): one
    metrics-only job per step of eval/reward/mean, labelled so ws.run(<run name>) follows
    them; the set-up metrics logged once carry forward, results never do."""
    import os

    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(tracking_uri=uri)
    run_id = client.create_run(client.create_experiment("sft"), run_name="sft-0412").info.run_id
    client.log_metric(run_id, "eval/reward/num_prompts", 200, step=0)
    client.log_metric(run_id, "eval/reward/rollouts_per_prompt", 4, step=0)
    means = [0.30, 0.31, 0.35, 0.34, 0.40, 0.42, 0.41, 0.45]
    for i, mean in enumerate(means):
        client.log_metric(run_id, "eval/reward/mean", mean, step=100 * i)
    client.log_metric(run_id, "eval/coverage/scored", 790, step=300)
    client.set_terminated(run_id)
    jobs = ws.load_mlflow_steps(run_id, tracking_uri=uri)
    assert [j.id for j in jobs][:2] == ["sft-0412@step0", "sft-0412@step100"]
    run = ws.run("sft-0412")
    assert run.steps == [100 * i for i in range(8)]
    line = run.curve()
    assert line["estimate"].tolist() == means
    assert line["total"].tolist() == [800] * 8  # 200 prompts x 4, carried forward
    assert line["scored"].iloc[3] == 790 and line["scored"].isna().sum() == 7  # only at 300
    assert set(line["interval"]) == {"none"}  # the run states no stderr
    assert run.tests()["verdict"].str.startswith("not assessed").all()


def test_step_metrics_carry_only_the_set_up_forward() -> None:
    from envloop_nb._loaders.mlflow.run import step_metrics

    steps = step_metrics({
        "eval/reward/mean": [(0, 1, 0.2), (10, 2, 0.25), (10, 3, 0.3)],
        "eval/reward/pass_at_4": [(0, 1, 0.5)],
        "eval/reward/rollouts_per_prompt": [(0, 1, 4.0)],
    })  # fmt: skip
    assert steps[10] == {"eval/reward/mean": 0.3, "eval/reward/rollouts_per_prompt": 4.0}
    assert steps[0]["eval/reward/pass_at_4"] == 0.5
