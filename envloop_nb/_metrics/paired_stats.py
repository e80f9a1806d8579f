"""Small pure statistics for comparing jobs task by task.

Everything here sees only numbers (numpy arrays, one entry per task) and is
reproducible with a seed:

- :func:`paired_diff_ci` — percentile bootstrap of ``mean(b - a)`` over tasks, both
  jobs resampled with the same task weights (what a task's difficulty adds cancels).
- :func:`ratio_ci` — task bootstrap of ``sum(num) / sum(den)`` (a subset's score when
  tasks carry different numbers of scored attempts).
- :func:`mcnemar_exact` — exact McNemar test on the discordant tasks (a two-sided
  binomial test of ``fixed`` against ``broken`` with p = 1/2).

The bootstraps are the package's one task bootstrap, :mod:`envloop_nb._metrics.uncertainty`
(task indices drawn uniformly with replacement, chunked, seeded): these functions only
adapt its :class:`~envloop_nb._metrics.uncertainty.Interval` results to the shapes the
comparison uses. The same seed gives the same interval here and there.

The bootstrap resamples tasks, never attempts, because attempts of one task are
correlated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .uncertainty import _check_resampling, bootstrap_ratio_ci, paired_bootstrap_diff

__all__ = ["PairedDiff", "mcnemar_exact", "paired_diff_ci", "ratio_ci"]


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
    iv = paired_bootstrap_diff(b, a, resamples=resamples, seed=seed, confidence=confidence)
    return PairedDiff(iv.estimate, iv.low, iv.high, iv.n_tasks, resamples, seed, confidence)


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
    _check_resampling(resamples, confidence)
    nv = np.asarray(num, dtype=np.float64).ravel()
    dv = np.asarray(den, dtype=np.float64).ravel()
    if nv.shape != dv.shape:
        raise ValueError(f"num and den differ in length: {nv.size} vs {dv.size}")
    if nv.size == 0 or dv.sum() <= 0:
        return None, None, None
    iv = bootstrap_ratio_ci(nv, dv, resamples=resamples, seed=seed, confidence=confidence)
    return iv.estimate, iv.low, iv.high


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
