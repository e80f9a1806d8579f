"""Tests, the best checkpoint and the MDE per group (``run.tests(by=...)``,
``run.best(by=...)``, ``run.mde(by=...)``: ``envloop_nb._runs.by_group``, ``_runs.groups``),
against hand computations on three tiny lm-eval 0.3 results-only files
(``tests/data/lm_eval/tiny_run``: task_a acc 40% ± 3, 60% ± 4, 55% ± 3 at steps 100, 200,
300; task_b ppl 20, 18, 18.5 ± 1; task_c a metric of unknown direction)."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

import envloop_nb as enb

from .conftest import SAMPLE_DATA

TINY = Path(__file__).resolve().parent / "data" / "lm_eval" / "tiny_run"
Z = NormalDist().inv_cdf(0.975)


@pytest.fixture(scope="module")
def tiny() -> enb.Run:
    ws = enb.open()
    return ws.run([ws.load(p) for p in sorted(TINY.glob("*.json"))])


def _p(d: float, se: float) -> float:
    """Two-sided normal p-value of d / se, by hand (erfc: no 1 − Φ cancellation)."""
    return math.erfc(abs(d) / se / math.sqrt(2))


def test_results_only_tasks_are_tested_unpaired_from_the_files_stderr(tiny: enb.Run) -> None:
    tests = tiny.tests(by="subset")
    assert tiny.steps == [100, 200, 300]
    # 2 adjacent + 1 more against the first step, for each of the 3 tasks: 9 tests
    assert len(tests) == 9 and set(tests["group"]) == {"task_a", "task_b", "task_c"}
    a = tests[tests["group"] == "task_a"].set_index(["step_a", "step_b"])
    jump = a.loc[(100, 200)]
    assert jump["diff"] == 0.6 - 0.4
    se = math.hypot(0.03, 0.04)  # 0.05
    assert jump["low"] == pytest.approx(0.2 - Z * se, rel=1e-12)
    assert jump["high"] == pytest.approx(0.2 + Z * se, rel=1e-12)
    assert jump["p"] == pytest.approx(_p(0.2, se), rel=1e-9)
    assert jump["method"].startswith("from the source's stderr, unpaired")
    assert a.loc[(200, 300), "p"] == pytest.approx(_p(0.05, 0.05), rel=1e-9)
    assert a.loc[(100, 300), "p"] == pytest.approx(_p(0.15, math.hypot(0.03, 0.03)), rel=1e-9)
    # Holm and BH across all 9 tests shown
    p = tests["p"].astype(float).tolist()
    assert tests["p_holm"].tolist() == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert tests["p_bh"].tolist() == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    assert jump["verdict"] == "beyond noise: step 200 is better than step 100"
    # ppl: lower is better (lm-eval's own direction); the unknown metric says higher / lower
    b = tests[tests["group"] == "task_b"].set_index(["step_a", "step_b"])
    assert b.loc[(100, 200), "diff"] == 18.0 - 20.0
    assert b.loc[(100, 200), "p"] == pytest.approx(_p(2.0, math.sqrt(2)), rel=1e-9)
    c = tests[tests["group"] == "task_c"].set_index(["step_a", "step_b"])
    assert c.loc[(100, 300), "verdict"] == "beyond noise: step 300 is lower than step 100"


def test_no_whole_run_number_is_a_reason_not_a_number(tiny: enb.Run) -> None:
    """Three lm-eval tasks and no number for the whole run: the whole-run tests, best and
    MDE say why (a whole-run number would need weights the files do not give)."""
    tests = tiny.tests()
    assert tests["p"].isna().all()
    assert tests["verdict"].iloc[0] == (
        "not assessed: step 100 has no number here (its source states one per task, none for "
        "the whole run: run.tests(by='subset'))"
    )
    with pytest.raises(enb.EnvloopError, match=r"weights, which the files do not give"):
        tiny.best()
    with pytest.raises(enb.EnvloopError, match=r"run.mde\(by='subset'\)"):
        tiny.mde()


def test_the_best_checkpoint_per_task_by_the_same_unpaired_rule(tiny: enb.Run) -> None:
    best = tiny.best(by="subset").set_index("group")
    a = best.loc["task_a"]
    assert (a["step"], a["estimate"], a["higher_is_better"]) == (200, 0.6, True)
    assert a["low"] == pytest.approx(0.6 - Z * 0.04, rel=1e-12)
    # vs 100: z = 4, vs 300: z = 1 (Holm across the two): 100 differs, 300 does not
    holm = list(multipletests([_p(0.2, 0.05), _p(0.05, 0.05)], method="holm")[1])
    assert holm[0] < 0.05 < holm[1]
    assert a["indistinguishable"] == (200, 300)
    # ppl: the lowest is best; 20 vs 18 is z = 1.41: all three indistinguishable
    b = best.loc["task_b"]
    assert (b["step"], b["estimate"], b["higher_is_better"]) == (200, 18.0, False)
    assert b["indistinguishable"] == (100, 200, 300)
    c = best.loc["task_c"]
    assert c["step"] is None and c["note"] == (
        "no best: the source does not say whether a higher or a lower mystery is better"
    )


def test_the_mde_per_task_from_the_files_stderr(tiny: enb.Run) -> None:
    mde = tiny.mde(by="subset").set_index("group")
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    assert mde.loc["task_a", "effect"] == pytest.approx(z * math.sqrt(2) * 0.03, rel=1e-9)
    assert mde.loc["task_b", "effect"] == pytest.approx(z * math.sqrt(2) * 1.0, rel=1e-9)
    assert mde.loc["task_a", "method"].startswith("from the sources' stderr, unpaired")
    with pytest.raises(ValueError, match="by must be None, 'subset' or 'tag:<key>'"):
        tiny.mde(by="dimension")


@pytest.fixture(scope="module")
def labelled() -> enb.Run:
    ws = enb.open()
    ws.load_all(SAMPLE_DATA / "training_run")
    return ws.run("rl-0412")


def test_per_subset_tests_of_per_task_steps_are_paired_on_the_subsets_tasks(
    labelled: enb.Run,
) -> None:
    """Steps with per-task counts: each subset's test is the paired test on its tasks —
    the same numbers as a run of those tasks alone."""
    tests = labelled.tests(by="subset")
    math_rows = tests[tests["group"] == "math"].reset_index(drop=True)
    m = labelled.task_matrix(value="score")
    subset = labelled.task_states().set_index("task")["subset"]
    tasks = [t for t in m.index if subset.get(t) == "math"]
    row = math_rows.iloc[4]  # 5 -> 6
    assert (row["step_a"], row["step_b"]) == (5, 6)
    assert row["method"].startswith("paired task bootstrap")
    both = m.loc[tasks, [5, 6]].dropna()
    assert row["shared_complete"] == len(both)
    assert row["diff"] == pytest.approx(float((both[6] - both[5]).mean()), rel=1e-12)
    best = labelled.best(by="subset").set_index("group")
    assert set(best.index) == {"code", "math", "tool-use"}
    assert best["higher_is_better"].tolist() == [True] * 3
    mde = labelled.mde(by="subset").set_index("group")
    assert (mde["k"] == 4).all() and mde.loc["math", "n_tasks"] == len(tasks)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.floats(0.05, 0.95), st.floats(0.001, 0.2)), min_size=2, max_size=2))
def test_the_unpaired_test_is_symmetric_and_its_interval_matches_its_p(
    values: list[tuple[float, float]],
) -> None:
    """Swapping the steps flips the difference and keeps p; the interval excludes zero
    exactly when the raw p < 1 − confidence (one normal statistic behind both)."""
    import json
    import tempfile

    ws = enb.open()
    try:
        with tempfile.TemporaryDirectory() as folder:
            jobs = []
            for step, (v, se) in zip((1, 2), values, strict=True):
                doc = {"results": {"x": {"acc": v, "acc_stderr": se},
                                   "y": {"acc": 0.5, "acc_stderr": 0.01}},
                       "versions": {"x": 0, "y": 0},
                       "config": {"model_args": f"pretrained=m,revision=step{step}"}}  # fmt: skip
                path = Path(folder) / f"m_step{step}.json"
                path.write_text(json.dumps(doc))
                jobs.append(ws.load(path))
            row = ws.run(jobs).tests(by="subset").iloc[0]
            back = ws.run(jobs, step=[2, 1]).tests(by="subset").iloc[0]
        assert back["diff"] == -row["diff"] and back["p"] == pytest.approx(row["p"], rel=1e-12)
        se = math.hypot(values[0][1], values[1][1])
        assert row["high"] - row["low"] == pytest.approx(2 * Z * se, rel=1e-9)
        if abs(row["p"] - 0.05) > 1e-9:
            assert (row["low"] > 0 or row["high"] < 0) == (row["p"] < 0.05)
        assert not np.isnan(row["p"])
    finally:
        ws.close()


def test_a_task_run_at_another_version_or_shot_count_is_not_assessed(tmp_path: Path) -> None:
    """The unpaired test assumes the same lm-eval task at both steps: a task whose version
    (or number of few-shot examples) changed is not tested across the change."""
    import json

    for path in sorted(TINY.glob("*.json")):
        doc = json.loads(path.read_text())
        if path.stem.endswith("300"):
            doc["versions"]["task_a"] = 1
            doc["config"]["num_fewshot"] = 5
        (tmp_path / path.name).write_text(json.dumps(doc))
    ws = enb.open()
    run = ws.run([ws.load(p) for p in sorted(tmp_path.glob("*.json"))])
    tests = run.tests(by="subset").set_index(["group", "step_a", "step_b"])
    assert tests.loc[("task_a", 200, 300), "verdict"] == (
        "not assessed: task_a is not the same lm-eval task at steps 200 and 300 (version 0 vs 1, "
        "0 vs 5 few-shot examples)"
    )
    assert tests.loc[("task_b", 100, 300), "verdict"].startswith(
        "not assessed: task_b is not the same lm-eval task at steps 100 and 300 (0 vs 5 few-shot"
    )
    assert tests.loc[("task_a", 100, 200), "verdict"].startswith("beyond noise")
    assert tests["p_holm"].notna().sum() == 3  # Holm over the 3 tests left (step 100 -> 200)
    best = run.best(by="subset").set_index("group")
    assert best.loc["task_a", "untested"] == (300,)
    band = run.noise_band(by="subset").set_index(["group", "step"])  # no band across it either
    assert band.loc[("task_a", 300), "method"].startswith("no band: task_a is not the same")
    assert np.isnan(band.loc[("task_a", 300), "half_width"])
    assert not np.isnan(band.loc[("task_a", 200), "half_width"])
