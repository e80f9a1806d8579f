"""Unbiased pass@k and pass^k estimators: pure math on counts, no frames.

For a task with ``n`` scored attempts of which ``c`` pass:

- pass@k = 1 − C(n−c, k) / C(n, k)  (at least one of k drawn attempts passes)
- pass^k = C(c, k) / C(n, k)        (all k drawn attempts pass)

Both are computed as products of ratios, never as binomials, so they are exact to
floating point and stable for n in the thousands.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln

__all__ = ["pass_at_k", "pass_hat_k"]


def _log_choose(n: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
    result: NDArray[np.float64] = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return result


def _check(n: Any, c: Any, k: Any) -> tuple[NDArray[np.float64], ...]:
    n_a, c_a, k_a = (np.asarray(x, dtype=np.float64) for x in (n, c, k))
    if np.any(k_a < 1) or np.any(k_a != np.floor(k_a)):
        raise ValueError("k must be a whole number >= 1")
    if np.any(c_a < 0) or np.any(c_a > n_a):
        raise ValueError("c must be between 0 and n")
    if np.any(k_a > n_a):
        raise ValueError("k must not exceed n: a task counts at k only with >= k scored attempts")
    return n_a, c_a, k_a


def _ratio(
    top: NDArray[np.float64], n: NDArray[np.float64], k: NDArray[np.float64]
) -> NDArray[np.float64]:
    """C(top, k) / C(n, k), 0 where top < k."""
    safe_top = np.where(top >= k, top, k)
    value = np.exp(_log_choose(safe_top, k) - _log_choose(n, k))
    result: NDArray[np.float64] = np.where(top >= k, np.minimum(value, 1.0), 0.0)
    # Exact at the ends: C(n, k) / C(n, k) = 1.
    return np.where(top == n, 1.0, result)


@overload
def pass_at_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float: ...
def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float:
    """Unbiased pass@k of a task with ``n`` scored attempts and ``c`` passes.

    Parameters
    ----------
    n, c, k
        Ints or numpy arrays (broadcast together); ``1 <= k <= n`` and ``0 <= c <= n``.

    Examples
    --------
    >>> round(pass_at_k(5, 3, 2), 10)
    0.9
    >>> pass_at_k([4, 4], [0, 4], 1).tolist()
    [0.0, 1.0]
    """
    n_a, c_a, k_a = _check(n, c, k)
    result = 1.0 - _ratio(n_a - c_a, n_a, k_a)
    return float(result) if result.ndim == 0 else result


@overload
def pass_hat_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_hat_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float: ...
def pass_hat_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float:
    """Unbiased pass^k (all k attempts pass) of a task with ``n`` scored attempts, ``c`` passes.

    Examples
    --------
    >>> round(pass_hat_k(5, 3, 2), 10)
    0.3
    >>> pass_hat_k(3000, 1500, 2) < 0.25
    True
    """
    n_a, c_a, k_a = _check(n, c, k)
    result = _ratio(c_a, n_a, k_a)
    return float(result) if result.ndim == 0 else result
