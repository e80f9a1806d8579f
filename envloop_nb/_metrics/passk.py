"""Unbiased pass@k and pass^k estimators: exact math on counts, no frames.

For a task with ``n`` scored attempts of which ``c`` pass:

- pass@k = 1 − C(n−c, k) / C(n, k)  (at least one of k drawn attempts passes)
- pass^k = C(c, k) / C(n, k)        (all k drawn attempts pass)

Both are rationals, and every float this module returns is the **correctly rounded**
value of the exact rational, identical on every CPU:

- for ``n <= EXACT_LIMIT`` (2,000) the binomials are exact Python integers and the
  ratio is an integer true division, which CPython rounds correctly;
- beyond that the binomials are carried as ``decimal`` numbers with 60 significant
  digits (software arithmetic, the same bits on every machine). After at most 2·k
  roundings the relative error is below 1e-50, so the float is still the correctly
  rounded value unless the exact rational lies within 1e-50 (relative) of a halfway
  point between two floats; the documented guarantee is a relative error <= 1e-15
  (far inside the 1e-12 asked of it) for n up to 100,000 and beyond.

``pass@1 == pass^1 == c/n`` exactly. A mean over tasks (:func:`mean_estimates`, used by
the curve) is also correctly rounded: the count-weighted sum over the distinct
``(n, c)`` pairs is formed in exact rationals and rounded once.

Out of domain (``k < 1``, ``k > n``, ``c > n``, negative or non-integer values) raises
``ValueError`` naming the argument. This differs from the references on purpose:

- OpenAI human-eval's ``estimate_pass_at_k`` returns 1.0 when ``n − c < k``, so
  ``k > n`` gives 1.0 for any ``c`` (even ``c = 0``), and it computes
  ``1 − prod(1 − k / arange(n−c+1, n+1))`` in floats (last bits depend on the order);
- τ-bench computes ``comb(c, k) / comb(n, k)`` per task in floats and averages the
  floats (an unrounded float sum); for ``k > n`` ``comb(n, k)`` is 0 and it divides by
  zero.

Here ``k > n`` is an error: a task counts at k only with at least k scored attempts
(the callers select those tasks and report how many a point covers).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["EXACT_LIMIT", "mean_estimates", "pass_at_k", "pass_hat_k"]

#: Largest n for which binomials are exact integers (beyond it: 60-digit decimals).
EXACT_LIMIT = 2000

Kind = Literal["at", "hat"]

_CTX = decimal.Context(prec=60, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
Binomial = int | decimal.Decimal


def _as_ints(name: str, value: ArrayLike) -> NDArray[np.int64]:
    """``value`` as an int64 array, or a ValueError naming the argument."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        if arr.dtype == object:  # Python ints (possibly big) or Fractions
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a whole number, got {value!r}") from None
        else:
            raise ValueError(f"{name} must be a whole number, got {value!r}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            first = float(arr[bad].flat[0])
            raise ValueError(f"{name} must be a whole number, got {first!r}")
        if (np.abs(arr) > 2**53).any():
            raise ValueError(f"{name} is too large, got {float(np.abs(arr).max())!r}")
    return arr.astype(np.int64)


def _check(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> tuple[NDArray[np.int64], ...]:
    n_a, c_a, k_a = _as_ints("n", n), _as_ints("c", c), _as_ints("k", k)
    n_a, c_a, k_a = np.broadcast_arrays(n_a, c_a, k_a)
    if (n_a < 0).any():
        raise ValueError(f"n must be >= 0, got {int(n_a[n_a < 0].flat[0])}")
    if (k_a < 1).any():
        raise ValueError(f"k must be a whole number >= 1, got {int(k_a[k_a < 1].flat[0])}")
    bad = (c_a < 0) | (c_a > n_a)
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        raise ValueError(
            f"c must be between 0 and n, got c={int(c_a.flat[i])} with n={int(n_a.flat[i])}"
        )
    over = k_a > n_a
    if over.any():
        i = np.flatnonzero(over.ravel())[0]
        raise ValueError(
            f"k must not exceed n, got k={int(k_a.flat[i])} with n={int(n_a.flat[i])}: "
            "a task counts at k only with >= k scored attempts"
        )
    return n_a, c_a, k_a


def _binomials(values: set[int], ks: Sequence[int]) -> dict[int, dict[int, Binomial]]:
    """``C(v, k)`` for every v in ``values`` and k in ``ks`` (sorted, >= 1).

    Exact integers for ``v <= EXACT_LIMIT``, 60-digit decimals beyond. Dense ``ks``
    advance along k with ``C(v, k) = C(v, k-1) · (v-k+1) / k``; sparse ones call
    ``math.comb`` directly.
    """
    out: dict[int, dict[int, Binomial]] = {v: {} for v in values}
    if not ks:
        return out
    kmax = ks[-1]
    wanted = set(ks)
    for v in values:
        row = out[v]
        if v <= EXACT_LIMIT and 8 * len(ks) < min(v, kmax):
            for k in ks:
                row[k] = math.comb(v, k)
            continue
        exact = v <= EXACT_LIMIT
        cur: Binomial = 1 if exact else decimal.Decimal(1)
        for k in range(1, min(v, kmax) + 1):
            # Exact: the product of k consecutive integers is divisible by k!.
            cur = cur * (v - k + 1) // k if exact else _CTX.divide(_CTX.multiply(cur, v - k + 1), k)
            if k in wanted:
                row[k] = cur
        for k in ks:  # C(v, k) = 0 for k > v
            row.setdefault(k, 0)
    return out


def _exact(num: Binomial, den: Binomial) -> Fraction:
    """``num / den`` as an exact Fraction (of the decimals' values where inexact)."""
    if isinstance(num, int) and isinstance(den, int):
        return Fraction(num, den)
    return Fraction(_CTX.divide(decimal.Decimal(num), decimal.Decimal(den)))


def _value(n: int, c: int, k: int, kind: Kind, table: dict[int, dict[int, Binomial]]) -> Fraction:
    """pass@k (``kind="at"``) or pass^k (``"hat"``) of one task, exactly (see module)."""
    if k == 1:
        return Fraction(c, n)
    top = c if kind == "hat" else n - c
    ratio = _exact(table[top][k], table[n][k])
    return ratio if kind == "hat" else 1 - ratio


def _distinct_triples(
    n: NDArray[np.int64], c: NDArray[np.int64], k: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
    """Distinct ``(n, c, k)`` rows and the inverse index (one int64 key when it fits)."""
    if not len(n):
        return np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.intp)
    base_n, base_k = int(n.max()) + 1, int(k.max()) + 1
    if base_n * base_n * base_k < 2**62:
        keys, inverse = np.unique((n * base_n + c) * base_k + k, return_inverse=True)
        uniq = np.stack([keys // base_k // base_n, keys // base_k % base_n, keys % base_k], 1)
        return uniq, inverse.reshape(-1)
    rows = np.stack([n, c, k], axis=1)
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


def _estimate(n: ArrayLike, c: ArrayLike, k: ArrayLike, kind: Kind) -> NDArray[np.float64] | float:
    n_a, c_a, k_a = _check(n, c, k)
    shape = n_a.shape
    uniq, inverse = _distinct_triples(n_a.ravel(), c_a.ravel(), k_a.ravel())
    ks = sorted({int(t[2]) for t in uniq})
    values = {int(t[0]) for t in uniq} | {
        int(t[1]) if kind == "hat" else int(t[0] - t[1]) for t in uniq
    }
    with decimal.localcontext(_CTX):
        table = _binomials(values, ks)
        floats = np.array(
            [float(_value(int(a), int(b), int(kk), kind, table)) for a, b, kk in uniq],
            dtype=np.float64,
        )
    result = floats[inverse].reshape(shape)
    return float(result) if result.ndim == 0 else result


@overload
def pass_at_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float: ...
def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float:
    """Unbiased pass@k of a task with ``n`` scored attempts and ``c`` passes.

    The correctly rounded float of ``1 − C(n−c, k) / C(n, k)`` (see the module).

    Parameters
    ----------
    n, c, k
        Whole numbers or arrays of them (broadcast together); ``1 <= k <= n`` and
        ``0 <= c <= n``, else ``ValueError`` naming the argument.

    Examples
    --------
    >>> pass_at_k(5, 3, 2)
    0.9
    >>> pass_at_k([4, 4], [0, 4], 1).tolist()
    [0.0, 1.0]
    >>> pass_at_k(3, 1, 4)
    Traceback (most recent call last):
    ...
    ValueError: k must not exceed n, got k=4 with n=3: a task counts at k only with >= k scored attempts
    """
    return _estimate(n, c, k, "at")


@overload
def pass_hat_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_hat_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float: ...
def pass_hat_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float:
    """Unbiased pass^k (all k attempts pass) of a task with ``n`` scored attempts, ``c`` passes.

    The correctly rounded float of ``C(c, k) / C(n, k)`` (see the module).

    Examples
    --------
    >>> pass_hat_k(5, 3, 2)
    0.3
    >>> pass_hat_k(4, 3, 1)
    0.75
    >>> pass_hat_k(3000, 1500, 2) < 0.25
    True
    """
    return _estimate(n, c, k, "hat")


def mean_estimates(
    n: ArrayLike, c: ArrayLike, weight: ArrayLike, ks: Sequence[int]
) -> list[tuple[float, float] | None]:
    """Weighted means over tasks of pass@k and pass^k, one ``(at, hat)`` per k.

    ``n``, ``c``, ``weight`` describe distinct tasks (or distinct ``(n, c)`` pairs with
    their counts as weights). For each k the mean covers the entries with ``n >= k``;
    it is the correctly rounded float of the exact weighted mean (None where no entry
    has ``n >= k``).

    Examples
    --------
    τ-bench's published airline run has 50 tasks × 4 trials; its pass^1..4:

    >>> import numpy as np
    >>> c = np.array([4] * 10 + [3] * 4 + [2] * 10 + [1] * 12 + [0] * 14)
    >>> [hat for _, hat in mean_estimates([4] * 50, c, [1] * 50, [1, 2, 3, 4])]
    [0.42, 0.2733333333333333, 0.22, 0.2]
    >>> mean_estimates([2], [1], [1], [3])
    [None]
    """
    n_a = _as_ints("n", n).ravel()
    c_a = _as_ints("c", c).ravel()
    w_a = _as_ints("weight", weight).ravel()
    out: list[tuple[float, float] | None] = []
    ks = [int(k) for k in ks]
    if not len(n_a):
        return [None for _ in ks]
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be a whole number >= 1, got {k}")
    if (n_a < 0).any() or (c_a < 0).any() or (c_a > n_a).any() or (w_a < 0).any():
        raise ValueError("need 0 <= c <= n and weight >= 0 for every entry")
    # Distinct (n, c) pairs with their total weight (float64 sums of counts < 2**53: exact).
    pairs, inverse = np.unique(np.stack([n_a, c_a], axis=1), axis=0, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=w_a, minlength=len(pairs))
    totals = [int(x) for x in sums]
    pn = [int(x) for x in pairs[:, 0]]
    pc = [int(x) for x in pairs[:, 1]]
    values = set(pn) | set(pc) | {a - b for a, b in zip(pn, pc, strict=True)}
    with decimal.localcontext(_CTX):
        table = _binomials(values, sorted(set(ks)))
        for k in ks:
            out.append(_mean_at(k, pn, pc, totals, table))
    return out


def _mean_at(
    k: int,
    pn: list[int],
    pc: list[int],
    totals: list[int],
    table: dict[int, dict[int, Binomial]],
) -> tuple[float, float] | None:
    """One k of :func:`mean_estimates` (inside its decimal context)."""
    covered = [i for i, a in enumerate(pn) if a >= k]
    weight_sum = sum(totals[i] for i in covered)
    if weight_sum == 0:
        return None
    # Group by n: per distinct n, one sum of binomials over its c values.
    by_n: dict[int, tuple[Binomial, Binomial]] = {}
    for i in covered:
        a, b, w = pn[i], pc[i], totals[i]
        hat_part = b * w if k == 1 else table[b][k] * w
        miss_part = (a - b) * w if k == 1 else table[a - b][k] * w
        h, m = by_n.get(a, (0, 0))
        by_n[a] = (h + hat_part, m + miss_part)
    # Sum h/den and m/den over n on the least common denominator (the C(n, k) of nearby
    # n share most factors), then divide once: Python's int / int is correctly rounded
    # at any size, so each float is rounded exactly once.
    hat_num = miss_num = 0
    common = 1
    for a, (h, m) in by_n.items():
        den: Binomial = a if k == 1 else table[a][k]
        (hp, hq), (mp, mq) = _ratio(h, den), _ratio(m, den)
        for q in (hq, mq):
            if common % q:
                grow = q // math.gcd(common, q)
                hat_num, miss_num, common = hat_num * grow, miss_num * grow, common * grow
        hat_num += hp * (common // hq)
        miss_num += mp * (common // mq)
    total = weight_sum * common
    return (total - miss_num) / total, hat_num / total


def _ratio(num: Binomial, den: Binomial) -> tuple[int, int]:
    """``num / den`` as an integer pair: exact, or the 60-digit quotient beyond the limit."""
    if isinstance(num, int) and isinstance(den, int):
        return num, den
    exact = _exact(num, den)
    return exact.numerator, exact.denominator
