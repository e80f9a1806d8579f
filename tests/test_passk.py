"""Unbiased pass@k / pass^k: worked examples, invariants, and exact brute force."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from envloop_nb import pass_at_k, pass_hat_k


def test_issue_worked_example() -> None:
    assert pass_at_k(5, 3, 2) == pytest.approx(0.9, abs=1e-12)
    assert pass_hat_k(5, 3, 2) == pytest.approx(0.3, abs=1e-12)
    # Substituting the mean success rate into 1-(1-p)^k is a different, wrong number.
    assert pass_at_k(5, 3, 2) != pytest.approx(1 - (1 - 0.6) ** 2)


def test_vectorized_matches_scalar() -> None:
    n = np.array([4, 4, 10, 3])
    c = np.array([0, 4, 3, 1])
    out = pass_at_k(n, c, 2)
    assert out.tolist() == pytest.approx(
        [pass_at_k(int(a), int(b), 2) for a, b in zip(n, c, strict=False)]
    )


def test_stable_for_thousands_of_attempts() -> None:
    value = pass_at_k(5000, 1, 2500)
    assert value == pytest.approx(0.5, abs=1e-9)
    assert pass_hat_k(4000, 3999, 3000) == pytest.approx(1 - 3000 / 4000, abs=1e-9)


@pytest.mark.parametrize("bad", [(3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_rejects_invalid_counts(bad: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        pass_at_k(*bad)


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
    assert pass_at_k(n, c, k) == pytest.approx(float(at), abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(float(hat), abs=1e-12)
    assert float(hat) == pytest.approx(comb(c, k) / comb(n, k))


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_invariants(args: tuple[int, int]) -> None:
    n, c = args
    ks = np.arange(1, n + 1)
    at = np.asarray(pass_at_k(n, c, ks))
    hat = np.asarray(pass_hat_k(n, c, ks))
    assert ((at >= 0) & (at <= 1) & (hat >= 0) & (hat <= 1)).all()
    assert at[0] == pytest.approx(c / n) and hat[0] == pytest.approx(c / n)
    assert (hat <= at[0] + 1e-12).all() and (at[0] <= at + 1e-12).all()
    assert (np.diff(at) >= -1e-12).all() and (np.diff(hat) <= 1e-12).all()
