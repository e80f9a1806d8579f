"""The curve over training: each step's number is its job's own, bit for bit
(``envloop_nb._runs.curve``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    dims = run.curve(by="dimension")
    for job in jobs:
        mine = dims[dims["job_id"] == job.id].set_index("group")["estimate"]
        theirs = job.groups(by="dimension").set_index("dimension")["score"]
        assert mine.sort_index().tolist() == theirs.sort_index().tolist()
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
    with pytest.raises(ValueError, match="by must be None, 'subset', 'tag:<key>' or 'dimension'"):
        run.curve(by="difficulty")


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


def test_mlflow_runs_one_per_checkpoint(ws: enb.Workspace, tmp_path: Path) -> None:
    """Jobs logged to MLflow and read back (one run per checkpoint: summarised, their
    exact per-task counts) are a run with the original jobs' numbers."""
    import os

    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    source = enb.open()
    originals = [source.load(p) for p in sorted(RUN_DIR.glob("round-0[4-6].json"))]
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    ids = [job.log_mlflow(experiment="rl-0412", tracking_uri=uri) for job in originals]
    back = [ws.load_mlflow_run(run_id, tracking_uri=uri) for run_id in ids]
    run = ws.run(back, step="name")
    assert run.steps == [4, 5, 6]
    line = run.curve()
    assert line["estimate"].tolist() == [job.summary().score for job in originals]
    assert set(line["interval"]) == {"task bootstrap"}
    jump = run.tests().iloc[1]
    assert (jump["fixed"], jump["broken"]) == (13, 0)


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


def test_every_way_to_the_counts_gives_the_jobs_numbers(ws: enb.Workspace, tmp_path: Path) -> None:
    """The counts read for all jobs at once, per job under a threshold, and a job whose
    tasks come in another order: each step's number is still its job's summary."""
    paths = sorted(RUN_DIR.glob("round-0[1-3].json"))
    doc = json.loads(paths[-1].read_text())
    doc["job"]["tasks"] = doc["job"]["tasks"][::-1]  # same tasks, another order
    doc["job"].update(id="job_reversed", labels={"agent_run": "rl-0412", "agent_round": "4"})
    (tmp_path / "reversed.json").write_text(json.dumps(doc))
    jobs = [ws.load(p) for p in [*paths, tmp_path / "reversed.json"]]
    for threshold in (None, 0.5):
        run = ws.run("rl-0412", threshold=threshold)
        line = run.curve()
        for job, value in zip(jobs, line["estimate"], strict=True):
            assert value == job.summary(threshold=threshold).score
        assert line["low"].notna().all()
    matrix = ws.run("rl-0412").task_matrix()
    assert matrix[4].equals(matrix[3])  # the reversed job is round 3's counts, by task


def test_the_points_are_the_curves_own_before_the_matrix(ws: enb.Workspace, tmp_path: Path) -> None:
    """Issue 36 (the panel's first screen): ``points`` gives the curve's values without its
    intervals — each step's number and coverage, bit for bit — from the counts the loads
    kept, without building the run's task matrix or drawing its bootstrap; a job whose tasks
    come in another order is its own summary; under a threshold (counts not kept for it)
    there are no points before the matrix."""
    from envloop_nb._runs.curve import POINT_COLUMNS, points

    doc = json.loads((RUN_DIR / "round-08.json").read_text())  # the coverage drop
    doc["job"]["tasks"] = doc["job"]["tasks"][::-1]
    doc["job"].update(id="job_reversed_08", labels={"agent_run": "rl-0412", "agent_round": "11"})
    (tmp_path / "reversed.json").write_text(json.dumps(doc))
    ws.load_all(RUN_DIR)
    ws.load(tmp_path / "reversed.json")
    for policy in ("unknown", "failure"):
        for metric in ("score", "pass", "pass@k", "pass^k", "pass@2"):
            run = ws.run("rl-0412", policy=policy)  # type: ignore[arg-type]
            first = points(run.state, metric=metric)
            assert first is not None and "matrix" not in run.state.data
            assert "weights" not in run.state.data
            whole = run.curve(metric=metric)
            assert first.equals(whole[list(POINT_COLUMNS)]), (policy, metric)
            assert first["coverage_drop"].tolist()[7] and first["coverage_drop"].tolist()[-1]
            after = points(run.state, metric=metric)  # once the curve is there: its columns
            assert after is not None and after.equals(first)
    assert points(ws.run("rl-0412", threshold=0.5).state) is None


cells = st.sampled_from([1.0, 0.0, None, "absent", 0.5])


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 4).flatmap(
        lambda steps: st.lists(
            st.lists(st.lists(cells, min_size=3, max_size=3), min_size=4, max_size=4),
            min_size=steps, max_size=steps,
        )
    ),
    st.sampled_from(["unknown", "failure"]),
)  # fmt: skip
def test_random_runs_keep_every_jobs_numbers(grids: list[list[list[object]]], policy: str) -> None:
    """Any rewards (binary or not, missing, never dispatched), either policy: each step's
    summary metrics are its job's (the points read before the matrix too), and the run's
    p-values keep raw <= BH <= Holm."""
    import pandas as pd

    from envloop_nb._runs.curve import POINT_COLUMNS, points

    ws = enb.open()
    try:
        jobs = []
        for i, grid in enumerate(grids):
            rows = [{"task": f"t{t}", "attempt": a + 1, "reward": v, "status": "completed"}
                    for t, row in enumerate(grid) for a, v in enumerate(row) if v != "absent"]  # fmt: skip
            rows.append({"task": "t0", "attempt": 1, "reward": 1.0, "status": "completed"})
            frame = pd.DataFrame(rows).drop_duplicates(["task", "attempt"], keep="first")
            jobs.append(ws.load(frame, format="table", k=3, job_id=f"ckpt_step{i}", dataset="d",
                                dataset_version="1", dataset_revision="r", runner="u"))  # fmt: skip
        run = ws.run(jobs, step="name", policy=policy, strict=False)  # type: ignore[arg-type]
        for metric, key in (("score", "score"), ("pass", "pass_"), ("pass@k", "pass_at_k"),
                            ("pass^k", "pass_hat_k")):  # fmt: skip
            fresh = ws.run(jobs, step="name", policy=policy, strict=False)  # type: ignore[arg-type]
            first = points(fresh.state, metric=metric)  # before the matrix: the same values
            line = run.curve(metric=metric)
            assert first is not None and first.equals(line[list(POINT_COLUMNS)])
            for job, value in zip(jobs, line["estimate"], strict=True):
                expected = getattr(job.summary(policy=policy), key)  # type: ignore[arg-type]
                assert (value is None or value != value) if expected is None else value == expected
        tests = run.tests()
        for raw, bh, holm in zip(tests["p"], tests["p_bh"], tests["p_holm"], strict=True):
            if raw is not None and raw == raw:
                assert raw <= bh + 1e-15 and bh <= holm + 1e-15 and holm <= 1
    finally:
        ws.close()
