"""Intervals and noise bands per group: ``run.curve(by="dimension")``'s task-bootstrap
interval (the run's draws; the job's own where it reports one) and ``run.noise_band(by=...)``
(``envloop_nb._runs.curve``, ``_runs.pertask.dimension_matrices``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb._runs.pertask import weights

from .conftest import SAMPLE_DATA

RUN_DIR = SAMPLE_DATA / "training_run"
DATA = Path(__file__).resolve().parent / "data" / "lm_eval"
Z = NormalDist().inv_cdf(0.975)


@pytest.fixture(scope="module")
def run() -> enb.Run:
    ws = enb.open()
    ws.load_all(RUN_DIR)
    return ws.run("rl-0412")


def _quantiles(stats: np.ndarray) -> tuple[float, float]:
    low, high = np.quantile(stats[np.isfinite(stats)], [0.025, 0.975])
    return float(low), float(high)


# -- curve(by="dimension") ---------------------------------------------------------------


def test_the_rewards_dimension_interval_is_the_curves_and_the_jobs(run: enb.Run) -> None:
    dims = run.curve(by="dimension")
    reward = dims[dims["group"] == "reward"].reset_index(drop=True)
    line = run.curve()
    assert set(reward["interval"]) == {"task bootstrap"}
    assert reward["low"].tolist() == line["low"].tolist()  # bit for bit
    assert reward["high"].tolist() == line["high"].tolist()
    for job, low, high in zip(run.jobs, reward["low"], reward["high"], strict=True):
        iv = job.intervals(resamples=1000, seed=0, frame=None)["score"]
        assert (low, high) == (iv.low, iv.high)


@pytest.fixture(scope="module")
def graded() -> enb.Run:
    """Three checkpoints of the graded sample (named dimensions, one a percentage), each
    with a different share of its attempts kept, so the steps differ."""
    ws = enb.open()
    doc = json.loads((SAMPLE_DATA / "graded.json").read_text())
    trials = doc["trials"]
    jobs = []
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for i in range(3):
            doc["job"]["id"] = f"job_graded_ckpt{i}"
            doc["trials"] = [t for n, t in enumerate(trials) if n % 5 != i]
            path = Path(folder) / f"graded{i}.json"
            path.write_text(json.dumps(doc))
            jobs.append(ws.load(path))
    return ws.run(jobs, step="name", strict=False)


def test_a_named_dimensions_interval_is_the_task_bootstrap_of_its_values(graded: enb.Run) -> None:
    """By hand: each task's sum and count of the dimension's values (from job.dimensions(),
    not the run's counts), resampled with the run's draws, percentile interval."""
    dims = graded.curve(by="dimension")
    w = weights(graded.state)
    tasks = list(graded.state.data["matrix"].tasks)
    for name in ("accuracy", "format_pct", "composite"):
        rows = dims[dims["group"] == name].reset_index(drop=True)
        assert set(rows["interval"]) == {"task bootstrap"}
        for j, job in enumerate(graded.jobs):
            if name == "composite":
                values = job.attempts()[["task", "composite"]].rename(
                    columns={"composite": "value"}
                )
            else:
                d = job.dimensions()
                values = d[d["name"] == name][["task", "value"]]
            values = values.dropna()
            per = values.groupby("task")["value"].agg(["sum", "count"]).reindex(tasks).fillna(0)
            stats = (w @ per["sum"].to_numpy()) / (w @ per["count"].to_numpy())
            low, high = _quantiles(stats)
            assert rows.loc[j, "low"] == pytest.approx(low, rel=1e-12), (name, j)
            assert rows.loc[j, "high"] == pytest.approx(high, rel=1e-12), (name, j)
            theirs = job.groups(by="dimension").set_index("dimension").loc[name, "score"]
            assert rows.loc[j, "estimate"] == theirs  # the job's own number, bit for bit


def test_results_only_dimensions_are_the_files_other_metrics_with_their_stderr() -> None:
    ws = enb.open()
    paths = sorted((DATA / "pythia_run").glob("160m_step1*.json"))
    jobs = [ws.load(p) for p in paths]
    dims = ws.run(jobs).curve(by="dimension")
    for job in jobs:
        mine = dims[dims["job_id"] == job.id].set_index("group")
        theirs = job.groups(by="dimension")
        assert len(mine) == len(theirs) == 3  # piqa, arc_easy acc_norm; lambada acc
        for r in theirs.to_dict("records"):
            row = mine.loc[f"{r['subset']}/{r['dimension']}"]
            assert (row["estimate"], row["low"], row["high"]) == (
                r["score"], r["ci_low"], r["ci_high"],
            )  # fmt: skip
            assert row["interval"] == "source stderr"


values = st.sampled_from([1.0, 0.0, None, 0.5, 0.25])


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.lists(st.lists(values, min_size=2, max_size=2), min_size=3, max_size=3),
             min_size=2, max_size=3),
    st.sampled_from(["unknown", "failure"]),
)  # fmt: skip
def test_a_dimension_equal_to_the_reward_has_the_rewards_interval(
    grids: list[list[list[float | None]]], policy: str
) -> None:
    """Invariant: a named dimension holding exactly the reward's values gets the reward's
    estimate and interval, bit for bit, under either policy."""
    ws = enb.open()
    try:
        jobs = []
        for i, grid in enumerate(grids):
            rows = [{"task": f"t{t}", "attempt": a + 1, "reward": v, "dim_copy": v,
                     "status": "completed"} for t, row in enumerate(grid) for a, v in enumerate(row)]  # fmt: skip
            rows[0].update(reward=1.0, dim_copy=1.0)
            jobs.append(ws.load(pd.DataFrame(rows), format="table", k=2, job_id=f"c_step{i}",
                                dataset="d", dataset_version="1", dataset_revision="r",
                                runner="u"))  # fmt: skip
        run = ws.run(jobs, step="name", policy=policy)  # type: ignore[arg-type]
        for metric in ("score", "pass", "pass@k", "pass^k"):
            dims = run.curve(by="dimension", metric=metric)
            a = dims[dims["group"] == "reward"].reset_index(drop=True)
            b = dims[dims["group"] == "copy"].reset_index(drop=True)
            for column in ("estimate", "low", "high", "interval"):
                assert a[column].equals(b[column]), (metric, column)
    finally:
        ws.close()


# -- noise_band(by=...) ---------------------------------------------------------------------


def test_the_noise_band_per_subset_is_the_bootstrap_of_each_subsets_change(run: enb.Run) -> None:
    band = run.noise_band(by="subset")
    assert sorted(set(band["group"])) == ["code", "math", "tool-use"]
    assert set(band.attrs["noise"]) == {"code", "math", "tool-use"}
    m = run.task_matrix(value="score")
    subset = run.task_states().set_index("task")["subset"]
    w = weights(run.state)
    state = run.state
    mat = state.data["matrix"]
    line = run.curve(by="subset")
    for group in ("math", "tool-use"):
        rows = (subset.reindex(mat.tasks) == group).to_numpy()
        num, den = mat.reward_sum * rows[:, None], mat.n * rows[:, None]
        stats = (w @ num) / (w @ den)
        mine = band[band["group"] == group].reset_index(drop=True)
        est = line[line["group"] == group]["estimate"].to_numpy()
        for j in range(1, len(run.steps)):
            d = stats[:, j] - stats[:, j - 1]
            half = float(np.quantile(np.abs(d - (est[j] - est[j - 1])), 0.95))
            assert mine.loc[j, "half_width"] == pytest.approx(half, rel=1e-12)
            assert mine.loc[j, "outside"] == (abs(est[j] - est[j - 1]) > mine.loc[j, "half_width"])
    assert m.shape[1] == len(run.steps)
    assert run.noise_band()["group"].isna().all()  # the run's own band: no group


def test_the_noise_band_per_task_of_results_only_files_is_from_their_stderr() -> None:
    ws = enb.open()
    run = ws.run([ws.load(p) for p in sorted((DATA / "tiny_run").glob("*.json"))])
    band = run.noise_band(by="subset")
    a = band[band["group"] == "task_a"].set_index("step")
    assert a.loc[200, "half_width"] == pytest.approx(Z * math.hypot(0.03, 0.04), rel=1e-9)
    assert a.loc[200, "band_low"] == pytest.approx(0.4 - Z * 0.05, rel=1e-9)
    assert bool(a.loc[200, "outside"]) and not bool(a.loc[300, "outside"])
    assert a.loc[300, "method"] == "source stderr of both steps: z·√(se² + se_prev²)"
    assert run.noise_band()["half_width"].isna().all()  # no whole-run number: no band


@settings(max_examples=10, deadline=None)
@given(st.lists(st.lists(st.lists(st.sampled_from([1.0, 0.0, None]), min_size=2, max_size=2),
                         min_size=3, max_size=3), min_size=2, max_size=3))  # fmt: skip
def test_one_subset_has_the_runs_own_band(grids: list[list[list[float | None]]]) -> None:
    """Invariant: when every task is in one subset, that subset's band is the run's."""
    ws = enb.open()
    try:
        jobs = []
        for i, grid in enumerate(grids):
            rows = [{"task": f"t{t}", "attempt": a + 1, "reward": v, "status": "completed"}
                    for t, row in enumerate(grid) for a, v in enumerate(row)]  # fmt: skip
            rows[0]["reward"] = 1.0
            jobs.append(ws.load(pd.DataFrame(rows), format="table", k=2, job_id=f"o_step{i}",
                                dataset="d", dataset_version="1", dataset_revision="r",
                                runner="u"))  # fmt: skip
        run = ws.run(jobs, step="name")
        whole, by = run.noise_band(), run.noise_band(by="subset")
        assert set(by["group"]) == {"(no subset)"}
        for column in ("half_width", "band_low", "band_high"):
            assert by[column].astype(float).tolist() == pytest.approx(
                whole[column].astype(float).tolist(), rel=1e-12, nan_ok=True
            )
    finally:
        ws.close()
