"""Harbor job folders: the three fixtures reproduce Harbor's own job-level numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format
from tests.conftest import HARBOR
from tests.test_loaders_envloop import assert_frames_agree, load_job

CURRENT = HARBOR / "2026-03-02__14-05-11"
MULTIKEY = HARBOR / "2026-03-03__09-00-00-multikey"
LEGACY = HARBOR / "2025-10-01__10-00-00-legacy"
ALL = [CURRENT, MULTIKEY, LEGACY]


def _eval_block(folder: Path) -> dict:
    stats = json.loads((folder / "result.json").read_text())["stats"]
    (block,) = stats["evals"].values()
    return block


@pytest.mark.parametrize("folder", ALL, ids=lambda p: p.name)
def test_detected_and_loaded_with_job_facts(ws: enb.Workspace, folder: Path) -> None:
    assert detect_format(folder) == "harbor"
    job = load_job(ws, folder)
    config = json.loads((folder / "config.json").read_text())
    result = json.loads((folder / "result.json").read_text())
    info = job.info
    assert job.id == result["id"]
    assert job.k == config["n_attempts"]
    assert info["source_format"] == "harbor"
    assert info["runner"] == "harbor"
    assert info["model"] == config["agents"][0]["model_name"]
    assert info["dataset_name"] == "terminal-bench"
    assert info["dataset_version"] == "2.0"
    assert info["status"] == "completed"
    assert info["platform_metrics"] == result["stats"]
    assert info["extra"]["agent"]["name"] == config["agents"][0]["name"]
    assert info["extra"]["agent"]["version"] == "2.0.31"
    trial_dirs = [p for p in folder.iterdir() if p.is_dir()]
    attempts = job.attempts()
    assert len(attempts) == len(trial_dirs)
    assert sorted(attempts["source_place"]) == sorted(p.name for p in trial_dirs)
    tasks = {json.loads((p / "result.json").read_text())["task_name"] for p in trial_dirs}
    assert set(job.tasks()["task"]) == tasks


@pytest.mark.parametrize("folder", ALL, ids=lambda p: p.name)
def test_failure_policy_reproduces_harbor_mean_and_pass_at_k(
    ws: enb.Workspace, folder: Path
) -> None:
    job = load_job(ws, folder)
    block = _eval_block(folder)
    metrics = block["metrics"][0]
    summary = job.summary(policy="failure")
    if "mean" in metrics:
        assert summary.score == pytest.approx(metrics["mean"], abs=1e-12)
    else:  # multi-key: the "reward" key is the reward
        assert summary.score == pytest.approx(metrics["reward"], abs=1e-12)
    pass_at_k = block.get("pass_at_k") or {}
    if pass_at_k:
        ks = [int(k) for k in pass_at_k]
        curve = job.curve(ks=ks, policy="failure")
        got = dict(zip(curve["k"].tolist(), curve["pass@k"].tolist(), strict=True))
        assert got == pytest.approx({int(k): v for k, v in pass_at_k.items()}, abs=1e-12)


def test_current_layout_details(ws: enb.Workspace) -> None:
    job = load_job(ws, CURRENT)
    a = job.attempts().set_index("source_place")
    # RewardFileNotFoundError: an attempt without reward, failed, never a 0.
    no_reward = a.loc["fix-git__6ETtNED"]
    assert no_reward["reward"] != no_reward["reward"]  # NaN = NULL
    assert no_reward["status"] == "failed"
    assert no_reward["error_type"] == "RewardFileNotFoundError"
    assert no_reward["error"].startswith("No reward file found")
    # AgentTimeoutError that still got reward 0: completed, error kept.
    timeout = a.loc["fix-git__kF8qjxH"]
    assert timeout["reward"] == 0
    assert timeout["status"] == "completed"
    assert timeout["error_type"] == "AgentTimeoutError"
    assert timeout["input_tokens"] == 184973
    assert timeout["cache_tokens"] == 147978
    assert timeout["output_tokens"] == 11498
    assert timeout["cost_usd"] == pytest.approx(0.4878)
    assert timeout["duration_s"] == pytest.approx(450.0)
    extra = json.loads(timeout["extra"])
    assert extra["phases"]["agent_execution"]["duration_s"] == pytest.approx(380.0)
    assert extra["task_checksum"] == "cfbaa4dd12f034c1"
    # attempts are each task's trials ordered by started_at
    fix_git = job.attempts().query("task == 'fix-git'")
    assert fix_git["source_place"].tolist() == [
        "fix-git__5PzQM7p",
        "fix-git__kF8qjxH",
        "fix-git__6ETtNED",
        "fix-git__KeA6hzk",
        "fix-git__5dXdEUo",
    ]
    assert fix_git["attempt"].tolist() == [1, 2, 3, 4, 5]
    assert fix_git["started_at"].is_monotonic_increasing
    s = job.summary()
    assert (s.total, s.scored, s.missing, s.invalid) == (30, 27, 3, 3)
    tags = job.tasks()["tags"].map(json.loads).tolist()
    assert all(t == {"source": "terminal-bench"} for t in tags)


def test_no_reward_trials_stay_attempts_in_every_fixture(ws: enb.Workspace) -> None:
    for folder in ALL:
        job = load_job(ws, folder)
        n_null = sum(
            json.loads((p / "result.json").read_text())["verifier_result"] is None
            for p in folder.iterdir()
            if p.is_dir()
        )
        a = job.attempts()
        assert int(a["reward"].isna().sum()) == n_null


def test_multikey_dimensions_reproduce_harbor_metrics(ws: enb.Workspace) -> None:
    job = load_job(ws, MULTIKEY)
    metrics = _eval_block(MULTIKEY)["metrics"][0]
    dims = job.dimensions()
    assert set(dims["name"]) == {"reward", "style"}
    # Harbor's rule: a missing reward counts 0 over all k x tasks slots ("failure").
    means = dict(
        ws.con.execute(
            """SELECT m.name, sum(coalesce(d.value, 0)) / (j.attempts * count(DISTINCT t.task))
               FROM dimension_meta m JOIN jobs j USING (job_id)
               JOIN tasks t USING (job_id)
               LEFT JOIN dimensions d ON d.job_id = m.job_id AND d.name = m.name
                    AND d.task = t.task
               WHERE m.job_id = ? GROUP BY m.name, j.attempts""",
            [job.id],
        ).fetchall()
    )
    # The query above double counts nothing: one dimensions row per (task, attempt, name).
    assert means == pytest.approx(metrics, abs=1e-12)
    fix = job.attempts().set_index("source_place").loc["fix-git__di4Jtrg"]
    assert fix["reward"] == 0.5
    assert json.loads(fix["extra"])["rewards"] == {"reward": 0.5, "style": 0.25}
    assert job.summary(policy="failure").pass_at_k is None  # non-binary rewards


def test_legacy_reward_layout(ws: enb.Workspace) -> None:
    job = load_job(ws, LEGACY)
    a = job.attempts()
    assert sorted(a["reward"].tolist()) == [0, 0, 0, 0, 0, 0, 1, 1]
    assert (a["status"] == "completed").all()
    assert len(job.dimensions()) == 0  # one key: no dimensions


def test_reload_is_idempotent_and_job_id_override(ws: enb.Workspace) -> None:
    load_job(ws, CURRENT)
    load_job(ws, CURRENT)
    load_job(ws, CURRENT, job_id="mine")
    assert sorted(ws.jobs()["job_id"]) == sorted(["f768064f-9585-07ad-239e-ed24c2c063fe", "mine"])


def test_unfinished_trial_is_a_running_attempt(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(MULTIKEY, folder)
    (folder / "fix-git__HnJHMUw" / "result.json").unlink()
    result = json.loads((folder / "result.json").read_text())
    result["finished_at"] = None
    (folder / "result.json").write_text(json.dumps(result))
    job = load_job(ws, folder)
    row = job.attempts().set_index("source_place").loc["fix-git__HnJHMUw"]
    assert row["status"] == "running"
    assert job.info["status"] == "running"
    assert job.summary().invalid == 0


def test_no_job_result_uses_job_name(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(LEGACY, folder)
    (folder / "result.json").unlink()
    job = load_job(ws, folder, format="harbor")
    assert job.id == "2025-10-01__10-00-00-legacy"
    assert job.info["platform_metrics"] is None


def test_inconsistent_checksums_leave_digest_null(ws: enb.Workspace) -> None:
    # The fixture's trials of one task carry different task_checksum values.
    job = load_job(ws, CURRENT)
    assert job.tasks()["digest"].isna().all()


def test_pandas_and_polars_attempts_agree(ws: enb.Workspace) -> None:

    for folder in ALL:
        assert_frames_agree(load_job(ws, folder))


def test_a_load_holds_one_parsed_result_at_a_time(tmp_path: Path) -> None:
    """Issue 35's bounded memory: a trial is kept as a few columns, never as its parsed
    ``result.json``. Each of the 30 trials here records 2,000 agent events in
    ``agent_result.metadata`` (~0.4 MB of Python objects parsed); before, every parsed
    result lived until the load ended (15.8 MB of Python objects at the peak), now one
    at a time (0.65 MB)."""
    import tracemalloc

    folder = tmp_path / CURRENT.name
    shutil.copytree(CURRENT, folder)
    for sub in (p for p in folder.iterdir() if p.is_dir()):
        result = json.loads((sub / "result.json").read_text())
        events = [{"i": i, "kind": "tick"} for i in range(2000)]
        result["agent_result"]["metadata"] = {"events": events}
        (sub / "result.json").write_text(json.dumps(result))
    ws = enb.open()
    ws.load(CURRENT)  # the loader's modules imported
    tracemalloc.start()
    try:
        job = ws.load(folder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(job.attempts()) == 30
    assert peak < 4 * 2**20  # ~8 parsed results
