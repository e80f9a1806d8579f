"""Small pure statistics for comparing jobs task by task.

Everything here sees only numbers (numpy arrays, one entry per task) and is
reproducible with a seed:

- :func:`paired_diff_ci` — percentile bootstrap of ``mean(b - a)`` over tasks, both
  jobs resampled with the same task weights (what a task's difficulty adds cancels).
- :func:`ratio_ci` — task bootstrap of ``sum(num) / sum(den)`` (a subset's score when
  tasks carry different numbers of scored attempts).
- :func:`mcnemar_exact` — exact McNemar test on the discordant tasks (a two-sided
  binomial test of ``fixed`` against ``broken`` with p = 1/2).

The bootstraps resample task *indices* (uniformly, with replacement): the same
distribution as the multinomial task weights of :mod:`envloop_nb._uncertainty`, but
about ten times cheaper to draw, which matters here because a comparison runs dozens of
intervals (every subset of every job, every pair) each time the panel recomputes.

The bootstrap resamples tasks, never attempts, because attempts of one task are
correlated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["PairedDiff", "mcnemar_exact", "paired_diff_ci", "ratio_ci"]

_MAX_CELLS = 4_000_000  # resamples x tasks drawn at once; larger work is chunked


@dataclass(frozen=True)
class PairedDiff:
    """``mean(b - a)`` over paired tasks with a percentile bootstrap interval.

    ``estimate``/``low``/``high`` are None when no task has a value on both sides.
    """

    estimate: float | None
    low: float | None
    high: float | None
    n_tasks: int
    resamples: int
    seed: int
    confidence: float

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies strictly above or strictly below zero."""
        if self.low is None or self.high is None:
            return False
        return self.low > 0 or self.high < 0


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")


def _resampled_sums(values: NDArray[np.float64], resamples: int, seed: int) -> NDArray[np.float64]:
    """Column sums of ``values`` (tasks x columns) over ``resamples`` task resamples.

    Each resample draws as many tasks as there are, with replacement (uniform indices;
    the same distribution as multinomial task weights, much cheaper to draw). Rows are
    drawn in chunks so memory stays bounded. Result: ``resamples x columns``.
    """
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    rows = max(1, _MAX_CELLS // max(n, 1))
    out = np.empty((resamples, values.shape[1]))
    done = 0
    while done < resamples:
        size = min(rows, resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        out[done : done + size] = values[idx].sum(axis=1)
        done += size
    return out


def _percentiles(
    stats: NDArray[np.float64], confidence: float
) -> tuple[float | None, float | None]:
    finite = stats[np.isfinite(stats)]
    if finite.size == 0:
        return None, None
    alpha = (1 - confidence) / 2
    low, high = np.quantile(finite, [alpha, 1 - alpha])
    return float(low), float(high)


def paired_diff_ci(
    a: ArrayLike,
    b: ArrayLike,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedDiff:
    """Paired task bootstrap of ``mean(b) - mean(a)`` (``a[i]``, ``b[i]`` are one task).

    Both jobs are resampled with the same tasks, so what a task's difficulty adds
    cancels. Pairs where either side is NaN are left out (``n_tasks`` counts the pairs
    used). Identical inputs give exactly ``[0, 0]``.

    Examples
    --------
    >>> d = paired_diff_ci([0, 1, 1, 0], [0, 1, 1, 0])
    >>> d.estimate, d.low, d.high, d.excludes_zero
    (0.0, 0.0, 0.0, False)
    >>> d = paired_diff_ci([0.0] * 40, [1.0] * 30 + [0.0] * 10, seed=1)
    >>> d.estimate, d.excludes_zero
    (0.75, True)
    """
    _check(resamples, confidence)
    av = np.asarray(a, dtype=np.float64).ravel()
    bv = np.asarray(b, dtype=np.float64).ravel()
    if av.shape != bv.shape:
        raise ValueError(f"a and b must be paired by task: lengths {av.size} and {bv.size}")
    keep = np.isfinite(av) & np.isfinite(bv)
    diff = bv[keep] - av[keep]
    n = int(diff.size)
    if n == 0:
        return PairedDiff(None, None, None, 0, resamples, seed, confidence)
    if np.all(diff == 0):  # no resample can move an exact zero gap
        return PairedDiff(0.0, 0.0, 0.0, n, resamples, seed, confidence)
    stats = _resampled_sums(diff[:, None], resamples, seed)[:, 0] / n
    low, high = _percentiles(stats, confidence)
    return PairedDiff(float(diff.mean()), low, high, n, resamples, seed, confidence)


def ratio_ci(
    num: ArrayLike,
    den: ArrayLike,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """``(estimate, low, high)`` of ``sum(num) / sum(den)`` with a task bootstrap.

    A resample whose denominator is 0 is left out of the percentiles.

    Examples
    --------
    >>> est, low, high = ratio_ci([2, 1, 0], [2, 2, 1], resamples=300, seed=1)
    >>> est, low <= est <= high
    (0.6, True)
    >>> ratio_ci([], [])
    (None, None, None)
    """
    _check(resamples, confidence)
    nv = np.asarray(num, dtype=np.float64).ravel()
    dv = np.asarray(den, dtype=np.float64).ravel()
    if nv.shape != dv.shape:
        raise ValueError(f"num and den differ in length: {nv.size} vs {dv.size}")
    if nv.size == 0 or dv.sum() <= 0:
        return None, None, None
    sums = _resampled_sums(np.column_stack([nv, dv]), resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = np.where(sums[:, 1] > 0, sums[:, 0] / sums[:, 1], np.nan)
    low, high = _percentiles(stats, confidence)
    return float(nv.sum() / dv.sum()), low, high


def mcnemar_exact(fixed: int, broken: int) -> float:
    """Two-sided exact McNemar p-value from the discordant task counts.

    Under "no difference" a discordant task is as likely fixed as broken, so
    ``fixed ~ Binomial(fixed + broken, 1/2)``. No discordant task gives p = 1.

    Examples
    --------
    >>> mcnemar_exact(0, 0)
    1.0
    >>> mcnemar_exact(30, 0) < 1e-8
    True
    >>> round(mcnemar_exact(6, 4), 4)
    0.7539
    """
    if fixed < 0 or broken < 0:
        raise ValueError(f"counts must be >= 0, got {fixed}, {broken}")
    if fixed + broken == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(int(fixed), int(fixed + broken), 0.5).pvalue)
