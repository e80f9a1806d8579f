"""Which changes are real: paired tests between steps, Holm and Benjamini–Hochberg, the best
checkpoint, the minimum detectable effect (``envloop_nb._runs.tests``,
``envloop_nb._metrics.multitest``)."""

from __future__ import annotations

import json
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

import envloop_nb as enb
from envloop_nb._metrics.multitest import adjust_pvalues

from .conftest import SAMPLE_DATA

RUN_DIR = SAMPLE_DATA / "training_run"


@pytest.fixture(scope="module")
def run() -> enb.Run:
    ws = enb.open()
    ws.load_all(RUN_DIR)
    return ws.run("rl-0412")


# -- the adjustment ----------------------------------------------------------------------


def _brute(p: list[float], method: str) -> list[float]:
    """Holm and BH from their definitions, one p-value at a time (no running extrema)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    rank = {i: r + 1 for r, i in enumerate(order)}
    ranked = [p[i] for i in order]
    out = []
    for i in range(m):
        r = rank[i]
        if method == "holm":  # max over the steps down to this one
            value = max((m - j + 1) * ranked[j - 1] for j in range(1, r + 1))
        else:  # min over the steps up from this one
            value = min(m * ranked[j - 1] / j for j in range(r, m + 1))
        out.append(min(1.0, value))
    return out


pvalues = st.lists(st.floats(0, 1, allow_nan=False), min_size=0, max_size=30)


@given(pvalues)
def test_holm_and_bh_equal_statsmodels_and_the_definitions(p: list[float]) -> None:
    for method, name in (("holm", "holm"), ("bh", "fdr_bh")):
        mine = adjust_pvalues(p, method)  # type: ignore[arg-type]
        assert mine == pytest.approx(_brute(p, method), rel=1e-12, abs=1e-15)
        if p:
            assert mine == pytest.approx(
                list(multipletests(p, method=name)[1]), rel=1e-12, abs=1e-15
            )


@given(pvalues)
def test_raw_le_bh_le_holm_le_one_and_order_is_kept(p: list[float]) -> None:
    holm, bh = adjust_pvalues(p, "holm"), adjust_pvalues(p, "bh")
    for raw, b, h in zip(p, bh, holm, strict=True):
        assert raw <= b + 1e-15 and b <= h + 1e-15 and h <= 1
    for adjusted in (holm, bh):  # a smaller raw p never gets a larger adjusted one
        for i in range(len(p)):
            for j in range(len(p)):
                if p[i] < p[j]:
                    assert adjusted[i] <= adjusted[j] + 1e-15


def test_adjust_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="method must be 'holm' or 'bh'"):
        adjust_pvalues([0.1], "bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"p-values must be numbers in \[0, 1\]"):
        adjust_pvalues([0.1, 1.5])


# -- the run's tests ------------------------------------------------------------------------


def test_adjacent_and_baseline_pairs_tested_once_and_adjusted_together(run: enb.Run) -> None:
    tests = run.tests()
    pairs = list(zip(tests["step_a"], tests["step_b"], strict=True))
    assert pairs[:9] == [(i, i + 1) for i in range(1, 10)]
    assert pairs[9:] == [(1, j) for j in range(3, 11)]
    assert tests["kind"].iloc[0] == "adjacent, baseline"
    p = tests["p"].astype(float).tolist()
    assert tests["p_holm"].tolist() == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert tests["p_bh"].tolist() == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    assert tests["p_adjusted"].tolist() == tests["p_holm"].tolist()
    assert run.tests(adjust="bh")["p_adjusted"].tolist() == tests["p_bh"].tolist()


def test_the_one_real_jump_is_the_only_adjacent_change_beyond_noise(run: enb.Run) -> None:
    tests = run.tests()
    adjacent = tests[tests["kind"].str.contains("adjacent")]
    beyond = adjacent[adjacent["verdict"].str.startswith("beyond noise")]
    assert list(zip(beyond["step_a"], beyond["step_b"], strict=True)) == [(5, 6)]
    jump = beyond.iloc[0]
    assert (jump["fixed"], jump["broken"], jump["p"]) == (13, 0, 2 / 2**13)
    # 17 tests; five baseline tests have smaller p: Holm multiplies the 6th smallest by 12
    assert jump["p_holm"] == 12 * 2 / 2**13
    assert jump["verdict"] == "beyond noise: step 6 is better than step 5"


def test_a_pair_is_the_comparisons_paired_row(run: enb.Run) -> None:
    row = run.tests().iloc[4]
    paired = run.compare(5, 6).paired().iloc[0]
    assert row["diff"] == paired["score_diff"]
    assert (row["fixed"], row["broken"], row["p"]) == (
        paired["fixed"],
        paired["broken"],
        paired["mcnemar_p"],
    )
    assert row["shared_complete"] == paired["shared_complete"]
    covered = run.tests().iloc[6]  # 7 -> 8: the tasks incomplete at step 8 are left out
    assert covered["shared_complete"] == 40
    assert covered["note"] == "8 shared task(s) not completely scored in both: left out"


def test_against_another_baseline(run: enb.Run) -> None:
    tests = run.tests(baseline=6, adjacent=False)
    assert list(zip(tests["step_a"], tests["step_b"], strict=True)) == [
        (1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 7), (6, 8), (6, 9), (6, 10)
    ]  # fmt: skip
    with pytest.raises(enb.EnvloopError, match=r"step 11 is not in this run \(steps: 1, 2,"):
        run.tests(baseline=11)


def test_the_best_checkpoint_and_the_steps_indistinguishable_from_it(run: enb.Run) -> None:
    best = run.best()
    line = run.curve()
    # step 8 scores highest but lost coverage: not a candidate (its number is over fewer
    # attempts); steps 6 and 10 tie at 60.9%: the earliest
    assert line["estimate"].idxmax() == 7
    assert (best.step, best.job_id) == (6, "job_rl0412_r06")
    assert best.estimate == run.job(6).summary().score
    assert (best.low, best.high) == (line["low"].iloc[5], line["high"].iloc[5])
    # rounds 1 and 5 are beyond noise below it; 2-4 are borderline (interval excludes zero,
    # Holm-adjusted McNemar p ≥ 0.05): not shown to differ
    assert best.indistinguishable == (2, 3, 4, 6, 7, 8, 9, 10)
    assert best.untested == ()
    assert str(best).startswith("best score: step 6 60.9% (")
    assert run.best(skip_coverage_drops=False).step == 8


def _attempt_variance() -> float:
    """The within-task reward variance (ddof 1) pooled over complete task-rounds, from the
    export files themselves."""
    values = []
    for path in sorted(RUN_DIR.glob("round-*.json")):
        doc = json.loads(path.read_text())
        rewards: dict[str, list[float]] = {}
        for trial in doc["trials"]:
            if trial["reward"] is not None:
                rewards.setdefault(trial["task"], []).append(float(trial["reward"]))
        values += [float(np.var(r, ddof=1)) for r in rewards.values() if len(r) == 4]
    return float(np.mean(values))


def test_the_minimum_detectable_effect(run: enb.Run) -> None:
    mde = run.mde()
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    sd = np.sqrt(2 * _attempt_variance() / 4)
    assert (mde.n_tasks, mde.k) == (48, 4)
    assert mde.sd_diff == pytest.approx(sd, rel=1e-12)
    assert mde.effect == pytest.approx(z * sd / np.sqrt(48), rel=1e-12)
    assert str(mde).startswith("smallest detectable change in score: 9.")
    # four times the tasks, or four times the attempts: half the effect
    assert run.mde(n_tasks=192).effect == pytest.approx(mde.effect / 2)
    assert run.mde(k=16).effect == pytest.approx(mde.effect / 2)
    assert run.mde(alpha=0.01).effect > mde.effect


def test_results_only_steps_are_compared_on_their_numbers(ws: enb.Workspace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Steps holding aggregates only: a z-test of the file's numbers with their stderr."""
    from .test_runs_curve import PYTHIA

    paths = []
    for step in (0, 13000, 143000):
        doc = json.loads((PYTHIA / f"160m_step{step}.json").read_text())
        doc["results"] = {"piqa": doc["results"]["piqa"]}  # one task: the run's number
        doc["versions"] = {"piqa": 0}
        path = tmp_path / f"160m_step{step}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    run = ws.run([ws.load(p) for p in paths])
    line = run.curve()
    assert set(line["interval"]) == {"source stderr"}
    tests = run.tests()
    first = tests.iloc[0]
    se = np.hypot(*((line["high"] - line["low"]).iloc[:2] / (2 * NormalDist().inv_cdf(0.975))))
    d = line["estimate"].iloc[1] - line["estimate"].iloc[0]
    assert first["diff"] == d
    assert first["p"] == pytest.approx(2 * (1 - NormalDist().cdf(abs(d) / se)))
    assert first["method"].startswith("from the source's stderr, unpaired")
    assert run.best().step == 143000
    assert run.mde().method.startswith("from the sources' stderr")


def test_the_exact_mcnemar_p_is_the_packages_correctly_rounded() -> None:
    """The run's McNemar p in exact integers equals scipy's binomtest (mcnemar_exact) up to
    its last bits, without importing scipy."""
    from envloop_nb._metrics.paired_stats import mcnemar_exact
    from envloop_nb._runs.tests import mcnemar_p

    for fixed in range(0, 40):
        for broken in range(0, 40):
            assert mcnemar_p(fixed, broken) == pytest.approx(
                mcnemar_exact(fixed, broken), rel=1e-12
            )
    assert mcnemar_p(2000, 1800) == pytest.approx(mcnemar_exact(2000, 1800), rel=1e-12)
    with pytest.raises(ValueError, match="counts must be >= 0"):
        mcnemar_p(-1, 2)
