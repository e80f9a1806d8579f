"""``ws.load_all``: one job per log, run or job folder — never one merged job — in one
transaction; ``ws.load`` on a folder of several jobs names ``load_all``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._loaders import job_sources

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
DATA = Path(__file__).parent / "data"


def test_a_folder_of_logs_gives_one_job_per_log() -> None:
    ws = enb.open()
    jobs = ws.load_all(SHARED / "inspect")
    assert len(jobs) == 4  # two checkpoints, each as .eval and .json
    models = sorted(j.info["model"] for j in jobs)
    assert models == ["mockllm/ckpt-a"] * 2 + ["mockllm/ckpt-b"] * 2
    assert all(j.k == 3 and j.summary().total == 60 for j in jobs)  # never k = 15 merged


def test_harbor_and_terminal_bench_folders() -> None:
    ws = enb.open()
    harbor = ws.load_all(SHARED / "harbor")
    assert [j.info["source_format"] for j in harbor] == ["harbor"] * 3
    tb = ws.load_all(DATA / "terminal_bench")
    assert [j.info["source_format"] for j in tb] == ["terminal-bench"]


@pytest.mark.parametrize(
    "folder",
    [
        SHARED / "harbor" / "2026-03-02__14-05-11",  # its trial folders hold config.json too
        DATA / "terminal_bench" / "2025-06-01__12-00-00_terminus_claude-sonnet-4",
        DATA / "lm_eval" / "run",
    ],
)
def test_one_job_folder_is_one_job(folder: Path) -> None:
    ws = enb.open()
    jobs = ws.load_all(folder)
    assert len(jobs) == 1
    assert jobs[0].summary().total == ws.load(folder, job_id="again").summary().total


def test_a_glob() -> None:
    pattern = str(SHARED / "inspect" / "*" / "*.json")
    assert len(job_sources(pattern)) == 2
    jobs = enb.open().load_all(pattern)
    assert [j.info["extra"]["inspect"]["log_format"] for j in jobs] == ["json", "json"]


@pytest.mark.parametrize("folder", [SHARED / "inspect" / "eval", SHARED / "harbor"])
def test_load_on_a_folder_of_jobs_names_load_all(folder: Path) -> None:
    with pytest.raises(enb.LoadError, match=r"holds \d jobs .*ws\.load_all\(path\)"):
        enb.open().load(folder)


def test_one_bad_log_loads_nothing(tmp_path: Path) -> None:
    for log in (SHARED / "inspect" / "eval").glob("*.eval"):
        shutil.copy(log, tmp_path / log.name)
    text = next((SHARED / "inspect" / "json").glob("*.json")).read_text()
    (tmp_path / "zz-cut.json").write_text(text[: len(text) // 3])
    ws = enb.open()
    kept = ws.load(DATA / "terminal_bench" / "2025-06-01__12-00-00_terminus_claude-sonnet-4")
    with pytest.raises(enb.LoadError, match=r"zz-cut\.json"):
        ws.load_all(tmp_path)
    assert ws.jobs()["job_id"].tolist() == [kept.id]  # the two good logs did not land either


def test_two_sources_with_one_job_id_are_refused(tmp_path: Path) -> None:
    log = next((SHARED / "inspect" / "eval").glob("*.eval"))
    shutil.copy(log, tmp_path / "a.eval")
    shutil.copy(log, tmp_path / "b.eval")
    ws = enb.open()
    with pytest.raises(enb.LoadError, match="same job id"):
        ws.load_all(tmp_path)
    assert ws.jobs().empty


def test_nothing_to_load(tmp_path: Path) -> None:
    with pytest.raises(enb.LoadError, match="no job found"):
        enb.open().load_all(tmp_path)


def test_a_harbor_job_of_two_agents_becomes_two_jobs() -> None:
    ws = enb.open()
    with pytest.raises(enb.LoadError, match="load_all"):
        ws.load(DATA / "harbor_multi" / "2026-03-04__10-00-00")
    jobs = ws.load_all(DATA / "harbor_multi")
    assert [j.info["model"] for j in jobs] == ["anthropic/claude-sonnet-4-5", "openai/gpt-5"]
    assert [j.summary(policy="failure").score for j in jobs] == [0.5, 1 / 3]


def test_a_leaderboard_submission_of_several_runs_is_one_job_each() -> None:
    """Renamed ``<run id>_results.json`` files of one folder are separate runs."""
    lb = DATA / "terminal_bench_leaderboard"
    ws = enb.open()
    jobs = ws.load_all(lb)
    assert [j.id for j in jobs] == [
        "terminal-bench:openhands-sonnet",
        "terminal-bench:20250829_goose_claude-4-opus@2025-08-27__22-13-13",
        "terminal-bench:20250829_goose_claude-4-opus@2025-08-29__07-37-19",
    ]
    assert [j.summary(policy="failure").score for j in jobs] == [0.5, 1 / 3, 2 / 3]
