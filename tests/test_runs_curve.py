"""The curve over training: each step's number is its job's own, bit for bit
(``envloop_nb._runs.curve``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import envloop_nb as enb

from .conftest import SAMPLE_DATA

RUN_DIR = SAMPLE_DATA / "training_run"
PYTHIA = Path(__file__).resolve().parent / "data" / "lm_eval" / "pythia_run"


@pytest.fixture(scope="module")
def run() -> enb.Run:
    ws = enb.open()
    ws.load_all(RUN_DIR)
    return ws.run("rl-0412")


def test_the_curve_is_each_jobs_summary_bit_for_bit(run: enb.Run) -> None:
    for metric, key in (("score", "score"), ("pass", "pass_"), ("pass@k", "pass_at_k"),
                        ("pass^k", "pass_hat_k")):  # fmt: skip
        line = run.curve(metric=metric)
        assert line["step"].tolist() == run.steps
        for job, value in zip(run.jobs, line["estimate"], strict=True):
            assert value == getattr(job.summary(), key), (metric, job.id)


def test_unbiased_points_are_each_jobs_curve(run: enb.Run) -> None:
    for j in (1, 2, 3):
        for sign, column in (("@", "pass@k"), ("^", "pass^k")):
            line = run.curve(metric=f"pass{sign}{j}")
            for job, value in zip(run.jobs, line["estimate"], strict=True):
                assert value == job.curve(ks=[j])[column].iloc[0]


def test_the_interval_is_the_jobs_task_bootstrap(run: enb.Run) -> None:
    """The run's draws are the package's task bootstrap with the same seed: for jobs of the
    same tasks in the same order the interval is job.intervals()'s exactly."""
    line = run.curve()
    assert set(line["interval"]) == {"task bootstrap"}
    for job, low, high in zip(run.jobs, line["low"], line["high"], strict=True):
        iv = job.intervals(resamples=1000, seed=0, frame=None)["score"]
        assert (low, high) == (iv.low, iv.high)


def test_by_subset_is_each_jobs_groups(run: enb.Run) -> None:
    line = run.curve(by="subset")
    assert sorted(set(line["group"])) == ["code", "math", "tool-use"]
    for job in run.jobs:
        groups = job.groups(by="subset").set_index("value")
        mine = line[line["job_id"] == job.id].set_index("group")
        for g in ("code", "math", "tool-use"):
            assert mine.loc[g, "estimate"] == groups.loc[g, "score"]
            assert mine.loc[g, "scored"] == groups.loc[g, "scored"]


def test_the_coverage_drop_is_marked_not_plotted_as_a_drop(run: enb.Run) -> None:
    line = run.curve()
    assert line.loc[line["coverage_drop"], "step"].tolist() == [8]
    row = line[line["step"] == 8].iloc[0]
    assert (row["scored"], row["total"], row["complete_members"]) == (172, 192, 40)
    assert row["note"].startswith("coverage dropped: 172 of 192 attempts scored (89.6%")
    assert "not a drop in score" in row["note"]


def test_the_noise_band_puts_only_the_real_jump_outside(run: enb.Run) -> None:
    band = run.noise_band()
    assert band.loc[band["outside"] == True, "step"].tolist() == [6]  # noqa: E712
    assert band["half_width"].iloc[0] is None or math.isnan(band["half_width"].iloc[0])
    jump = band[band["step"] == 6].iloc[0]
    assert jump["band_low"] == pytest.approx(jump["previous"] - jump["half_width"])
    assert 0 < band.attrs["noise"] < 0.15


def test_non_binary_rewards_have_a_score_and_no_pass_metrics(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    doc = json.loads((SAMPLE_DATA / "graded.json").read_text())
    jobs = []
    for i in range(3):
        doc["job"]["id"] = f"job_graded_ckpt{i}"
        path = tmp_path / f"graded{i}.json"
        path.write_text(json.dumps(doc))
        jobs.append(ws.load(path))
    run = ws.run(jobs, step="name")
    line = run.curve()
    for job, value in zip(jobs, line["estimate"], strict=True):
        assert value == job.summary().score
    assert run.curve(metric="pass")["estimate"].isna().all()
    tests = run.tests()
    assert tests["p"].isna().all() and (tests["diff"] == 0).all()


def test_results_only_checkpoints_keep_the_files_numbers(ws: enb.Workspace) -> None:
    paths = sorted(PYTHIA.glob("*.json"))
    run = ws.run([ws.load(p) for p in paths])
    line = run.curve(by="subset")
    assert set(line["interval"]) == {"source stderr"}
    for path in paths:
        doc = json.loads(path.read_text())
        step = int(path.stem.split("step")[1])
        mine = line[line["step"] == step].set_index("group")
        for task, entry in doc["results"].items():
            first = next(iter(k for k in entry if not k.endswith("_stderr")))
            assert mine.loc[task, "estimate"] == entry[first]
            half = 1.959963984540054 * entry[f"{first}_stderr"]
            assert mine.loc[task, "low"] == pytest.approx(entry[first] - half, rel=1e-12)
    # several top-level lm-eval tasks: no number for the whole run (as job.summary() says)
    assert run.curve()["estimate"].isna().all()


def test_a_bad_metric_or_by_is_refused(run: enb.Run) -> None:
    with pytest.raises(ValueError, match="metric must be one of"):
        run.curve(metric="accuracy")
    with pytest.raises(ValueError, match="by must be None, 'subset' or 'tag:<key>'"):
        run.curve(by="dimension")


def test_weights_are_the_package_bootstrap_draws() -> None:
    """The multiplicity matrix counts the same draws ``_resampled_sums`` makes."""
    from envloop_nb._runs.assemble import RunState
    from envloop_nb._runs.pertask import weights

    class _M:
        tasks = np.array(["a"] * 7)

    state = RunState(con=None, job_ids=("a", "b"), steps=(1, 2), step_from="given",  # type: ignore[arg-type]
                     resamples=300, seed=5)  # fmt: skip
    state.data["matrix"] = _M()
    w = weights(state)
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 7, size=(300, 7))
    expected = np.stack([np.bincount(r, minlength=7) for r in idx])
    assert np.array_equal(w, expected)


def test_a_tag_is_a_group_as_subset_is(run: enb.Run) -> None:
    by_subset, by_tag = run.curve(by="subset"), run.curve(by="tag:subset")
    assert by_tag["estimate"].tolist() == by_subset["estimate"].tolist()
    assert by_tag["group"].tolist() == by_subset["group"].tolist()


def test_inspect_logs_over_checkpoints(ws: enb.Workspace) -> None:
    jobs = ws.load_all(SAMPLE_DATA / "inspect")
    run = ws.run(jobs, step=[1000, 2000])
    line = run.curve()
    for job, value in zip(jobs, line["estimate"], strict=True):
        assert value == job.summary().score
    # ckpt-b scored a smaller share of its samples: marked, not read as a change in score
    assert line["coverage_drop"].tolist() == [False, True]
    assert run.tests()["verdict"].iloc[0] == "beyond noise: step 2000 is better than step 1000"
