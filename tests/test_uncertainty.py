"""Wilson and task-bootstrap intervals: known values, reproducibility, pairing, job wrapper."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

import envloop_nb as enb
from envloop_nb._metrics.uncertainty import (
    _CHUNK_CELLS,
    Interval,
    _resampled_sums,
    bootstrap_mean_ci,
    bootstrap_ratio_ci,
    paired_bootstrap_diff,
    wilson_interval,
)
from tests.conftest import SAMPLE_DATA, THREE_TASKS


@pytest.mark.parametrize(
    ("s", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_known_values(s: int, n: int, low: float, high: float) -> None:
    iv = wilson_interval(s, n)
    assert iv.low == pytest.approx(low, abs=1e-4) and iv.high == pytest.approx(high, abs=1e-4)
    assert iv.estimate == pytest.approx(s / n)
    assert "Wilson" in iv.method and iv.resamples is None


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_wilson_matches_scipy(args: tuple[int, int], confidence: float) -> None:
    s, n = args
    ref = binomtest(s, n).proportion_ci(confidence_level=confidence, method="wilson")
    iv = wilson_interval(s, n, confidence)
    assert iv.low == pytest.approx(ref.low, abs=1e-9)
    assert iv.high == pytest.approx(ref.high, abs=1e-9)


def test_wilson_edge_cases() -> None:
    assert wilson_interval(0, 0).estimate is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=1.0)


def test_interval_is_frozen_and_printable() -> None:
    iv = wilson_interval(5, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        iv.low = 0  # type: ignore[misc]
    assert str(iv) == "50.0% (95% CI 23.7% – 76.3%)"
    assert str(Interval(None, None, None, "x", 0.9, 0)) == "- (90% CI: -)"


def test_bootstrap_reproducible_with_seed_and_changes_without() -> None:
    rng = np.random.default_rng(0)
    values = rng.random(50)
    a = bootstrap_mean_ci(values, resamples=500, seed=11)
    b = bootstrap_mean_ci(values, resamples=500, seed=11)
    c = bootstrap_mean_ci(values, resamples=500, seed=12)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    assert "resamples" in a.method and "seed 11" in a.method and a.n_tasks == 50


def test_bootstrap_chunking_does_not_change_the_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.arange(40, dtype=float)
    whole = bootstrap_mean_ci(values, resamples=300, seed=5)
    import envloop_nb._metrics.uncertainty as mod

    monkeypatch.setattr(mod, "_CHUNK_CELLS", 40 * 7)  # 7 resamples per chunk
    chunked = bootstrap_mean_ci(values, resamples=300, seed=5)
    assert chunked == whole


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40),
    st.integers(0, 2**31),
)
def test_bootstrap_covers_the_estimate(values: list[float], seed: int) -> None:
    iv = bootstrap_mean_ci(values, resamples=200, seed=seed)
    assert iv.estimate == pytest.approx(float(np.mean(values)))
    assert iv.low is not None and iv.high is not None
    assert min(values) - 1e-12 <= iv.low <= iv.estimate + 1e-9
    assert iv.estimate - 1e-9 <= iv.high <= max(values) + 1e-12


def test_bootstrap_width_shrinks_with_more_tasks() -> None:
    rng = np.random.default_rng(1)
    small = bootstrap_mean_ci(rng.integers(0, 2, 20), seed=0)
    large = bootstrap_mean_ci(rng.integers(0, 2, 2000), seed=0)
    assert large.width is not None and small.width is not None
    assert large.width < small.width / 4


def test_bootstrap_roughly_matches_normal_theory() -> None:
    rng = np.random.default_rng(2)
    values = rng.normal(0.5, 0.2, 400)
    iv = bootstrap_mean_ci(values, resamples=4000, seed=0)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert iv.width == pytest.approx(2 * half, rel=0.1)


def test_ratio_bootstrap_weights_tasks_not_attempts() -> None:
    iv = bootstrap_ratio_ci([2, 1, 0], [2, 2, 1], resamples=300, seed=0)
    assert iv.estimate == pytest.approx(0.6)
    assert bootstrap_ratio_ci([], [], seed=0).estimate is None
    assert bootstrap_ratio_ci([0, 0], [0, 0], seed=0).estimate is None
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([1, np.nan], [1, 1])
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([1], [1, 1])


def test_paired_identical_data_gives_zero_difference() -> None:
    values = np.random.default_rng(3).random(30)
    iv = paired_bootstrap_diff(values, values, resamples=500, seed=0)
    assert (iv.estimate, iv.low, iv.high) == (0.0, 0.0, 0.0)


def test_paired_is_narrower_than_unpaired_when_tasks_share_difficulty() -> None:
    rng = np.random.default_rng(4)
    difficulty = rng.random(200)
    a = difficulty + 0.05 + rng.normal(0, 0.02, 200)
    b = difficulty
    paired = paired_bootstrap_diff(a, b, seed=0)
    assert paired.low is not None and paired.low > 0  # the +0.05 is detected
    assert paired.width is not None and paired.width < 0.02
    assert paired.estimate == pytest.approx(float(np.mean(a - b)))


def test_paired_drops_pairs_with_a_missing_side_and_says_so() -> None:
    iv = paired_bootstrap_diff([1.0, np.nan, 0.0], [0.0, 1.0, 0.0], resamples=100, seed=0)
    assert iv.n_tasks == 2 and "1 task(s) without a value on both sides" in iv.method
    with pytest.raises(ValueError):
        paired_bootstrap_diff([1, 2], [1])


def test_job_intervals_estimates_equal_the_summary(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    for policy in ("unknown", "failure"):
        ivs = job.intervals(policy=policy, resamples=300, frame=None)
        s = job.summary(policy=policy)
        assert ivs["score"].estimate == pytest.approx(s.score)
        assert ivs["pass"].estimate == pytest.approx(s.pass_)
        assert ivs["pass@k"].estimate == pytest.approx(s.pass_at_k)
        assert ivs["pass^k"].estimate == pytest.approx(s.pass_hat_k)
        for iv in ivs.values():
            assert iv.low is not None and iv.high is not None
            assert iv.low - 1e-12 <= iv.estimate <= iv.high + 1e-12  # type: ignore[operator]


def test_job_intervals_frame(ws: enb.Workspace, frame_kind: str) -> None:
    job = ws.load(THREE_TASKS)
    df = job.intervals(resamples=100, seed=1, frame=frame_kind)
    assert list(df.columns) == [
        "metric", "estimate", "low", "high", "confidence", "n_tasks", "resamples", "seed", "method",
    ]  # fmt: skip
    assert df.shape[0] == 5
    again = job.intervals(resamples=100, seed=1, frame=frame_kind)
    assert df.equals(again)


def test_job_intervals_equal_separate_bootstraps_with_the_same_seed(ws: enb.Workspace) -> None:
    from envloop_nb._metrics.counts import task_counts

    job = ws.load(SAMPLE_DATA / "base.json")
    ivs = job.intervals(resamples=300, seed=9, frame=None)
    counts = task_counts(job.con, job.id)
    scored = np.asarray(counts.column("scored"), dtype=float)
    reward_sum = np.asarray(counts.column("reward_sum"), dtype=float)
    alone = bootstrap_ratio_ci(reward_sum, scored, resamples=300, seed=9)
    assert (ivs["score"].low, ivs["score"].high) == (alone.low, alone.high)
    assert ivs["pass@k"].low < ivs["pass@k"].estimate < ivs["pass@k"].high  # type: ignore[operator]
    wilson = ivs["pass (Wilson)"]
    assert wilson.width is not None and ivs["pass"].width is not None
    assert wilson.width < ivs["pass"].width  # attempts cluster in tasks


def test_unbiased_pass_at_k_intervals_match_the_curve(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "running.json")  # partly scored: tasks drop out as k grows
    for policy in ("unknown", "failure"):
        ivs = job.intervals(policy=policy, ks=[1, 2, 3], resamples=200, frame=None)
        curve = job.curve(policy=policy).set_index("k")
        for k in (1, 2, 3):
            at, hat = ivs[f"pass@{k} (unbiased)"], ivs[f"pass^{k} (unbiased)"]
            assert at.estimate == pytest.approx(curve.loc[k, "pass@k"])
            assert hat.estimate == pytest.approx(curve.loc[k, "pass^k"])
            assert at.low <= at.estimate <= at.high  # type: ignore[operator]
            assert f"unbiased pass@{k}" in at.method
    with pytest.raises(ValueError):
        job.intervals(ks=[0], frame=None)


def test_resampled_sums_are_index_draws_whatever_the_chunk_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import envloop_nb._metrics.uncertainty as mod

    values = np.random.default_rng(3).random((41, 3))  # odd task count
    whole = mod._resampled_sums(values, 50, seed=9)
    # Brute force: one resample at a time, task indices drawn uniformly with replacement.
    rng = np.random.default_rng(9)
    brute = np.array([values[rng.integers(0, 41, size=(1, 41))[0]].sum(axis=0) for _ in range(50)])
    np.testing.assert_allclose(whole, brute, rtol=0, atol=1e-12)
    for cells in (41, 41 * 7, 41 * 50 + 1):  # 1, 7 and all resamples per chunk
        monkeypatch.setattr(mod, "_CHUNK_CELLS", cells)
        assert np.array_equal(mod._resampled_sums(values, 50, seed=9), whole)


def test_comparison_statistics_use_the_same_bootstrap() -> None:
    from envloop_nb._metrics.paired_stats import paired_diff_ci, ratio_ci

    rng = np.random.default_rng(4)
    num, den = rng.integers(0, 4, 60).astype(float), np.full(60, 4.0)
    iv = bootstrap_ratio_ci(num, den, resamples=700, seed=2)
    assert ratio_ci(num, den, resamples=700, seed=2) == (iv.estimate, iv.low, iv.high)
    a, b = rng.random(60), rng.random(60)
    a[5] = np.nan
    pd_ = paired_diff_ci(a, b, resamples=700, seed=2)
    ref = paired_bootstrap_diff(b, a, resamples=700, seed=2)
    assert (pd_.estimate, pd_.low, pd_.high, pd_.n_tasks) == (
        ref.estimate,
        ref.low,
        ref.high,
        ref.n_tasks,
    )
    assert pd_.n_tasks == 59


def test_interval_counts_the_tasks_it_is_computed_over() -> None:
    """Issue 37: ``intervals()`` said ``n_tasks`` 200 for a pass@4 over 169 complete tasks."""
    job = enb.open().load(SAMPLE_DATA / "base.json")
    ivs = job.intervals(resamples=200, frame=None)
    complete = job.summary().complete_members
    assert complete == 169
    assert ivs["pass@k"].n_tasks == ivs["pass^k"].n_tasks == complete
    assert "the estimate counts 169 of them" in ivs["pass@k"].method
    assert ivs["score"].n_tasks == 200  # every task has a scored attempt


def _gathered_sums(values: np.ndarray, resamples: int, seed: int, chunk: int) -> np.ndarray:
    """The bootstrap as it was before columns of ones were skipped: every column gathered."""
    rng = np.random.default_rng(seed)
    n, width = values.shape
    out = np.zeros((resamples, width))
    rows, done = max(1, chunk // n), 0
    while done < resamples:
        size = min(rows, resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        for j in range(width):
            out[done : done + size, j] = np.ascontiguousarray(values[:, j])[idx].sum(axis=1)
        done += size
    return out


def _gathered(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The resampled sums as the bootstrap first took them: a gather per column."""
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    rows = max(1, _CHUNK_CELLS // n)
    out, done = np.zeros((resamples, values.shape[1])), 0
    while done < resamples:
        size = min(rows, resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        for j in range(values.shape[1]):
            out[done : done + size, j] = values[:, j][idx].sum(axis=1)
        done += size
    return out


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_resampled_sums_skip_columns_of_ones_bit_for_bit(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envloop_nb._metrics.uncertainty as mod

    rng = np.random.default_rng(100 + seed)
    for n in (1, 2, 33, 1000, 31_250):
        diff = rng.integers(-32, 33, n) / 32 + rng.random(n) * (rng.random(n) < 0.05)
        values = np.column_stack([diff, np.ones(n), rng.random(n), np.full(n, 1.0)])
        if n > 1:
            values[n // 2, 2] = 1.0  # a column with some ones is gathered
        resamples = 300 if n > 1000 else 2000
        got = mod._resampled_sums(values, resamples, seed)
        want = _gathered_sums(values, resamples, seed, mod._CHUNK_CELLS)
        assert np.array_equal(got, want), n
    # the paired bootstrap itself, on random inputs: the same intervals as gathering all
    a, b = rng.random(500), rng.random(500)
    a[3] = np.nan
    got_iv = paired_bootstrap_diff(a, b, resamples=999, seed=seed)
    got_mean = bootstrap_mean_ci(b, resamples=999, seed=seed)
    monkeypatch.setattr(
        mod, "_resampled_sums", lambda v, r, s: _gathered_sums(v, r, s, mod._CHUNK_CELLS)
    )
    assert got_iv == paired_bootstrap_diff(a, b, resamples=999, seed=seed)
    assert got_mean == bootstrap_mean_ci(b, resamples=999, seed=seed)


@pytest.mark.parametrize("n", [1, 7, 3000])
def test_resampled_sums_are_the_gathered_sums(n: int) -> None:
    # whole numbers go through draw counts x values (and the kept draws on a second
    # call), fractions through the gather: every sum is the same number either way
    rng = np.random.default_rng(n)
    counts = rng.integers(0, 40, size=(n, 5)).astype(float)
    fractions = counts / 7
    for values in (counts, fractions, counts):
        got = _resampled_sums(values, 1500, 3)
        assert np.array_equal(got, _gathered(values, 1500, 3))


def test_gate_sized_bootstrap_is_the_serial_gather_bit_for_bit() -> None:
    """The gate's bootstrap (2,000 resamples of 31,250 tasks, 32 chunks): each chunk
    gathered on a second thread while the next is drawn gives the serial gather's sums,
    bit for bit: the reference here, and the digest of the sums the serial loop gave
    (main at 723e686)."""
    import hashlib

    import envloop_nb._metrics.uncertainty as mod

    rng = np.random.default_rng(36)
    n = 31_250
    diff = rng.integers(-32, 33, n) / 32 + rng.random(n) * (rng.random(n) < 0.05)
    values = np.column_stack([diff, np.ones(n)])
    got = mod._resampled_sums(values, 2000, 0)
    assert np.array_equal(got, _gathered_sums(values, 2000, 0, mod._CHUNK_CELLS))
    assert hashlib.sha256(got.tobytes()).hexdigest() == (
        "0a6d84b95732cc3e745fa592be513d4c923943cd1329ece04068ed23ed52d2e3"
    )
    assert not np.array_equal(mod._resampled_sums(values, 2000, 1), got)  # the seed counts
