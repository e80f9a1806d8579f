"""Several lm-eval runs in one model folder (a rerun, or several checkpoints, into one
``--output_path``): ``results_<time>.json`` and ``samples_<task>_<time>.jsonl`` per run, the
run's files told apart by lm-eval's ``date_id`` alone (``tests/data/lm_eval/two_runs``,
made by ``make_two_runs.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._loaders import job_sources
from tests.conftest import ROOT
from tests.test_loaders_envloop import load_job

DATA = ROOT / "tests" / "data" / "lm_eval"
TWO = DATA / "two_runs"
FOLDER = TWO / "envloop-dummy"
FIRST, SECOND = sorted(FOLDER.glob("results_*.json"))
STAMPS = [p.stem.removeprefix("results_") for p in (FIRST, SECOND)]
IDS = [f"lm-eval:envloop-dummy@{s}" for s in STAMPS]
TASKS = ("envloop_alpha", "envloop_beta")


def _copy(tmp_path: Path, source: Path = FOLDER) -> Path:
    folder = tmp_path / "envloop-dummy"
    shutil.copytree(source, folder)
    return folder


def _own_samples(job: enb.Job, stamp: str) -> None:
    """The job was read from its own run's files only."""
    extra = job.info["extra"]
    assert extra["results_file"] == f"results_{stamp}.json"
    assert extra["samples_files"] == {t: f"samples_{t}_{stamp}.jsonl" for t in TASKS}
    places = job.attempts()["source_place"]
    assert places.str.contains(stamp, regex=False).all()


@pytest.mark.parametrize("source", [TWO, FOLDER])  # <output_path>, <output_path>/<model>
def test_load_all_gives_one_job_per_run(source: Path) -> None:
    assert job_sources(source) == [FIRST, SECOND]
    ws = enb.open()
    jobs = ws.load_all(source)
    assert [j.id for j in jobs] == IDS
    single = load_job(enb.open(), DATA / "run")
    assert jobs[0].id == single.id  # a run's id does not depend on its neighbours
    assert jobs[0].attempts().equals(single.attempts())
    for job, stamp in zip(jobs, STAMPS, strict=True):
        _own_samples(job, stamp)
        assert len(job.tasks()) == 12
        agreement = job.source_agreement()
        assert agreement["agrees"].all(), agreement[~agreement["agrees"]]
    assert [j.summary().score for j in jobs] == [0.5, 5 / 12]  # doc 0 of alpha answered "no"
    rewards = [j.attempts().set_index("task").loc["envloop_alpha/0", "reward"] for j in jobs]
    assert rewards == [1.0, 0.0]


def test_load_on_a_folder_of_runs_names_them_and_load_all(ws: enb.Workspace) -> None:
    for source in (TWO, FOLDER):
        with pytest.raises(enb.LoadError) as err:
            ws.load(source)
        message = str(err.value)
        assert FIRST.name in message and SECOND.name in message
        assert "2 lm-eval runs" in message
        assert "ws.load_all" in message and "results_*.json" in message
    assert ws.jobs().empty


def test_load_one_results_file_loads_that_run(ws: enb.Workspace) -> None:
    job = load_job(ws, SECOND)
    assert job.id == IDS[1]
    _own_samples(job, STAMPS[1])
    assert job.summary().score == 5 / 12
    assert ws.jobs()["job_id"].tolist() == [IDS[1]]


def test_a_run_without_samples_beside_runs_with_samples(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    only = next((DATA / "results_only" / "envloop-dummy").glob("results_*.json"))
    third = folder / "results_2026-12-02T09-00-00.000001.json"
    shutil.copy(only, third)  # lm-eval wrote it without --log_samples: no samples
    ws = enb.open()
    jobs = ws.load_all(tmp_path)
    assert [j.id for j in jobs] == [*IDS, "lm-eval:envloop-dummy@2026-12-02T09-00-00.000001"]
    assert [j.info["extra"].get("results_only", False) for j in jobs] == [False, False, True]
    for job, stamp in zip(jobs[:2], STAMPS, strict=True):
        _own_samples(job, stamp)
    alone = load_job(enb.open(), third)  # never another run's samples
    assert alone.info["extra"]["results_only"] is True


def _orphan(folder: Path, stamp: str = STAMPS[0]) -> Path:
    """A samples file of a run whose results file is not in the folder."""
    orphan = folder / "samples_envloop_alpha_2026-11-30T08-00-00.000001.jsonl"
    shutil.copy(folder / f"samples_envloop_alpha_{stamp}.jsonl", orphan)
    return orphan


ORPHAN = r"samples_envloop_alpha_2026-11-30T08-00-00\.000001\.jsonl: its time .* matches no "


@pytest.mark.parametrize("source", [DATA / "run" / "envloop-dummy", FOLDER])
def test_samples_of_no_run_in_the_folder_are_refused(
    ws: enb.Workspace, tmp_path: Path, source: Path
) -> None:
    folder = _copy(tmp_path, source)
    _orphan(folder)
    with pytest.raises(enb.LoadError, match=ORPHAN):
        ws.load_all(folder)
    first = folder / FIRST.name
    with pytest.raises(enb.LoadError, match=ORPHAN):
        ws.load(first)
    assert ws.jobs().empty
    with pytest.warns(enb.LoadWarning, match=r"1 samples file\(s\) of no run here not loaded"):
        job = load_job(ws, first, lenient=True)
    _own_samples(job, STAMPS[0])
    assert job.summary().score == 0.5
    with pytest.warns(enb.LoadWarning, match=r"of no run here"):
        jobs = ws.load_all(folder, lenient=True)
    assert len(jobs) == len(list(folder.glob("results_*.json")))


def test_samples_of_no_run_beside_a_results_only_file(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = _copy(tmp_path, DATA / "results_only" / "envloop-dummy")
    shutil.copy(
        next((DATA / "run" / "envloop-dummy").glob("samples_envloop_alpha_*.jsonl")),
        folder / "samples_envloop_alpha_2026-11-30T08-00-00.000001.jsonl",
    )  # not this run's samples: never read as its own
    with pytest.raises(enb.LoadError, match=ORPHAN):
        ws.load(folder)
    with pytest.warns(enb.LoadWarning, match=r"1 samples file\(s\) of no run here not loaded"):
        job = load_job(ws, folder, lenient=True)
    assert job.info["extra"]["results_only"] is True
    doc = json.loads(next(folder.glob("results_*.json")).read_text())
    assert job.summary().score == doc["results"]["envloop_group"]["exact_match,strict"]
