"""Unbiased pass@k / pass^k: correctly rounded exact rationals, the references' numbers,
invariants, and the domain."""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb import pass_at_k, pass_hat_k
from envloop_nb._metrics.passk import EXACT_LIMIT, mean_estimates
from tests.conftest import THREE_TASKS


def exact_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def exact_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(comb(c, k), comb(n, k))


# -- the references, ported as they are written --------------------------------------


def humaneval_estimate_pass_at_k(n: int, c: int, k: int) -> float:
    """OpenAI human-eval's ``estimate_pass_at_k`` for one task (float product form)."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def taubench_pass_hat_k(n: int, c: int, k: int) -> float:
    """τ-bench's ``comb(c, k) / comb(n, k)`` (a float division of exact binomials)."""
    return comb(c, k) / comb(n, k)


# -- worked examples, verbatim --------------------------------------------------------


def test_issue_worked_example() -> None:
    assert pass_at_k(5, 3, 2) == 0.9
    assert pass_hat_k(5, 3, 2) == 0.3
    # Substituting the mean success rate into 1-(1-p)^k is a different, wrong number.
    assert pass_at_k(5, 3, 2) != pytest.approx(1 - (1 - 0.6) ** 2)


def test_the_reported_defects_are_exact_now() -> None:
    assert pass_hat_k(4, 3, 1) == 0.75  # was 0.7499999999999998
    assert pass_at_k(5000, 1, 1) == 1 / 5000  # was off by 3e-8 relative
    assert pass_at_k(100_000, 1, 1) == 1 / 100_000  # was off by 2e-5 relative


@pytest.mark.parametrize("n", [1, 2, 3, 7, 40, 1999, 2000, 2001, 5000, 100_000])
def test_k1_is_c_over_n_exactly(n: int) -> None:
    for c in {0, 1, n // 3, n // 2, n - 1, n}:
        if 0 <= c <= n:
            assert pass_at_k(n, c, 1) == pass_hat_k(n, c, 1) == c / n


@pytest.mark.parametrize(
    ("fn", "n", "c", "k", "expected"),
    [
        # Inspect AI's reducer vectors: scores [6, 0, 0, 0, 8, 4] with threshold 1 and 2
        # (3 of 6 pass either way).
        (pass_at_k, 6, 3, 2, 0.8),
        (pass_at_k, 6, 3, 3, 0.95),  # pass_at(3) at value 2
        (pass_at_k, 6, 3, 5, 1.0),
        (pass_hat_k, 6, 3, 2, 0.2),
        (pass_hat_k, 6, 3, 3, 0.05),  # pass^3 at value 2
        (pass_hat_k, 6, 3, 5, 0.0),
    ],
)
def test_inspect_reducer_vectors(fn: object, n: int, c: int, k: int, expected: float) -> None:
    assert fn(n, c, k) == expected  # type: ignore[operator]


def test_inspect_undefined_vector() -> None:
    # [0, 0, NaN, NaN] with pass_at(3): the NaN scores drop out, 2 scored < k = 3.
    with pytest.raises(ValueError, match="k must not exceed n, got k=3 with n=2"):
        pass_at_k(2, 0, 3)
    assert mean_estimates([2], [0], [1], [3]) == [None]


# -- bit-exact against exact rationals --------------------------------------------------


def test_every_small_n_bit_exact_and_against_references() -> None:
    for n in range(1, 41):
        for c in range(n + 1):
            ks = np.arange(1, n + 1)
            at = pass_at_k(n, c, ks)
            hat = pass_hat_k(n, c, ks)
            for k in range(1, n + 1):
                assert at[k - 1] == float(exact_at(n, c, k)), (n, c, k)
                assert hat[k - 1] == float(exact_hat(n, c, k)), (n, c, k)
                # human-eval's float product: within a few ulps of the exact value.
                assert at[k - 1] == pytest.approx(
                    humaneval_estimate_pass_at_k(n, c, k), rel=1e-13, abs=1e-15
                )
                # τ-bench divides exact binomials: its float is the correctly rounded one.
                assert hat[k - 1] == taubench_pass_hat_k(n, c, k)


def test_sampled_n_up_to_the_exact_limit_bit_exact() -> None:
    rng = random.Random(20261201)
    for _ in range(300):
        n = rng.randint(1, EXACT_LIMIT)
        c, k = rng.randint(0, n), rng.randint(1, n)
        assert pass_at_k(n, c, k) == float(exact_at(n, c, k)), (n, c, k)
        assert pass_hat_k(n, c, k) == float(exact_hat(n, c, k)), (n, c, k)


def test_random_n_up_to_5000_against_references() -> None:
    rng = random.Random(7)
    for _ in range(60):
        n = rng.randint(1, 5000)
        c, k = rng.randint(0, n), rng.randint(1, min(n, 60))
        assert pass_at_k(n, c, k) == float(exact_at(n, c, k)), (n, c, k)
        assert pass_hat_k(n, c, k) == float(exact_hat(n, c, k)), (n, c, k)
        assert pass_hat_k(n, c, k) == taubench_pass_hat_k(n, c, k)
        he = humaneval_estimate_pass_at_k(n, c, k)
        assert pass_at_k(n, c, k) == pytest.approx(he, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(2001, 1000, 1000), (5000, 1234, 2500), (20_000, 3, 7), (100_000, 99_990, 20),
     (100_000, 50_000, 3), (100_000, 1, 2), (100_000, 70_000, 40_000)],
)  # fmt: skip
def test_beyond_the_exact_limit_relative_error(n: int, c: int, k: int) -> None:
    for fn, ref in ((pass_at_k, exact_at(n, c, k)), (pass_hat_k, exact_hat(n, c, k))):
        got = fn(n, c, k)
        want = float(ref)
        if want == 0:
            assert got == 0
        else:
            assert abs(Fraction(got) - ref) / ref <= Fraction(1, 10**12)
            assert got == want  # in practice correctly rounded too


def _brute(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Enumerate every k-subset of n attempts (c passing)."""
    attempts = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    any_pass = sum(1 for s in subsets if any(attempts[i] for i in s))
    all_pass = sum(1 for s in subsets if all(attempts[i] for i in s))
    return Fraction(any_pass, len(subsets)), Fraction(all_pass, len(subsets))


@given(
    st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n)))
)
def test_matches_enumeration(args: tuple[int, int, int]) -> None:
    n, c, k = args
    at, hat = _brute(n, c, k)
    assert pass_at_k(n, c, k) == float(at)
    assert pass_hat_k(n, c, k) == float(hat)


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_invariants(args: tuple[int, int]) -> None:
    n, c = args
    ks = np.arange(1, n + 1)
    at = np.asarray(pass_at_k(n, c, ks))
    hat = np.asarray(pass_hat_k(n, c, ks))
    assert ((at >= 0) & (at <= 1) & (hat >= 0) & (hat <= 1)).all()
    assert at[0] == hat[0] == c / n
    # Correct rounding is monotone: the exact sequences are, so the floats are too.
    assert (hat <= at[0]).all() and (at[0] <= at).all()
    assert (np.diff(at) >= 0).all() and (np.diff(hat) <= 0).all()


def test_vectorized_matches_scalar_bit_for_bit() -> None:
    n = np.array([[4, 4], [10, 3]])
    c = np.array([[0, 4], [3, 1]])
    out = pass_at_k(n, c, 2)
    assert out.shape == (2, 2)
    assert out.tolist() == [[pass_at_k(int(a), int(b), 2) for a, b in zip(ra, rb, strict=True)]
                            for ra, rb in zip(n, c, strict=True)]  # fmt: skip


# -- means over tasks ------------------------------------------------------------------


@given(
    st.lists(
        st.integers(1, 12).flatmap(
            lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, 5))
        ),
        min_size=1,
        max_size=30,
    ),
    st.lists(st.integers(1, 12), min_size=1, max_size=5),
)
def test_mean_is_the_correctly_rounded_exact_mean(
    tasks: list[tuple[int, int, int]], ks: list[int]
) -> None:
    n, c, w = (np.array(x) for x in zip(*tasks, strict=True))
    got = mean_estimates(n, c, w, ks)
    for k, point in zip(ks, got, strict=True):
        cov = [(a, b, ww) for a, b, ww in tasks if a >= k]
        if not cov:
            assert point is None
            continue
        weight = sum(ww for _, _, ww in cov)
        at = sum(ww * exact_at(a, b, k) for a, b, ww in cov) / weight
        hat = sum(ww * exact_hat(a, b, k) for a, b, ww in cov) / weight
        assert point == (float(at), float(hat))


def test_mean_beyond_the_exact_limit() -> None:
    n, c, w = [3000, 2500, 2500, 5000], [1000, 3, 2400, 4999], [1, 2, 3, 4]
    for k, point in zip([1, 2, 7, 2500], mean_estimates(n, c, w, [1, 2, 7, 2500]), strict=True):
        cov = [(a, b, ww) for a, b, ww in zip(n, c, w, strict=True) if a >= k]
        weight = sum(ww for _, _, ww in cov)
        at = sum(ww * exact_at(a, b, k) for a, b, ww in cov) / weight
        hat = sum(ww * exact_hat(a, b, k) for a, b, ww in cov) / weight
        assert point == (float(at), float(hat))


def test_taubench_fixture_counts_give_the_published_table_exactly() -> None:
    # 50 tasks × 4 trials: 10 tasks pass 4/4, 4 pass 3/4, 10 pass 2/4, 12 pass 1/4, 14 none.
    c = [4] * 10 + [3] * 4 + [2] * 10 + [1] * 12 + [0] * 14
    hats = [p[1] for p in mean_estimates([4] * 50, c, [1] * 50, [1, 2, 3, 4]) if p]
    assert hats == [0.42, float(Fraction(41, 150)), 0.22, 0.2]


# -- the domain ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3, 4, 1), "c must be between 0 and n, got c=4 with n=3"),
        ((3, -1, 1), "c must be between 0 and n, got c=-1 with n=3"),
        ((3, 1, 0), "k must be a whole number >= 1, got 0"),
        ((3, 1, -2), "k must be a whole number >= 1, got -2"),
        ((3, 1, 4), "k must not exceed n, got k=4 with n=3"),
        ((-1, 0, 1), "n must be >= 0, got -1"),
        ((3, 1, 2.5), "k must be a whole number, got 2.5"),
        ((3.5, 1, 1), "n must be a whole number, got 3.5"),
        ((3, math.nan, 1), "c must be a whole number, got nan"),
        ((3, 1, "2"), "k must be a whole number, got '2'"),
        ((3, True, 1), "c must be a whole number, got True"),
    ],
)
def test_out_of_domain_names_the_argument(args: tuple[object, ...], message: str) -> None:
    for fn in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("+", r"\+")):
            fn(*args)  # type: ignore[arg-type]


def test_integral_floats_are_accepted() -> None:
    assert pass_at_k(5.0, 3.0, 2.0) == 0.9  # type: ignore[arg-type]


def test_curve_stops_at_the_attempts_present(tmp_path: Path) -> None:
    """A curve never iterates up to a claimed k: its default ks are those some task has
    attempts for, then the job's k once (no task has that many: no estimate, 0 tasks)."""
    doc = json.loads(THREE_TASKS.read_text())
    doc["job"]["attempts"] = 10_000  # the largest a load takes with 2 attempts present
    path = tmp_path / "many.json"
    path.write_text(json.dumps(doc))
    job = enb.open().load(path)
    assert isinstance(job, enb.Job)
    rows = job.curve()[["k", "pass@k", "pass^k", "tasks"]].to_dict("records")
    assert [r["k"] for r in rows] == [1, 2, 10_000]
    assert rows[1]["pass@k"] == 1.0 and rows[1]["tasks"] == 2
    assert math.isnan(rows[2]["pass@k"]) and math.isnan(rows[2]["pass^k"])
    assert rows[2]["tasks"] == 0
    # under "failure" every task has k slots (missing ones fail): every k has an estimate
    assert job.curve(ks=[10_000], policy="failure")["pass@k"].tolist() == [2 / 3]
    doc["trials"] = []  # nothing dispatched yet: only the job's k, without an estimate
    path.write_text(json.dumps(doc))
    empty = enb.open().load(path)
    assert isinstance(empty, enb.Job)
    assert empty.curve()[["k", "tasks"]].values.tolist() == [[10_000, 0]]
