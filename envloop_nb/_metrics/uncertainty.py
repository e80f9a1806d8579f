"""How sure are we: Wilson intervals and task-resampling bootstrap intervals.

Attempts of one task are correlated (same prompt, same environment), so an interval that
treats attempts as independent is too narrow. The bootstrap here resamples **tasks**:
each resample draws as many task indices as the job has, uniformly with replacement, and
recomputes the metric from the summed per-task values of the drawn tasks. The draws are
vectorized with numpy in chunks of resamples (to bound memory); a seed makes them
reproducible, and the chunk size does not change them. Whole-number values (counts) are
summed as (how often each task was drawn) x values, one matrix product for all columns:
exact, so the same numbers; the last draws' counts are kept for the next call. Intervals
are percentile intervals. This is the one bootstrap of the package: the comparison statistics
(:mod:`envloop_nb._metrics.paired_stats`) call it too.

The pure functions (:func:`wilson_interval`, :func:`bootstrap_mean_ci`,
:func:`bootstrap_ratio_ci`, :func:`paired_bootstrap_diff`) see only numbers; the
workspace wrapper :func:`~envloop_nb._metrics.job_intervals.job_intervals` groups by task in
DuckDB first.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._present.display import format_metric, format_pct

if TYPE_CHECKING:
    pass

__all__ = [
    "Interval",
    "bootstrap_mean_ci",
    "bootstrap_ratio_ci",
    "bootstrap_ratio_cis",
    "paired_bootstrap_diff",
    "wilson_interval",
]

# Most task indices drawn at once (resamples x tasks); larger work is chunked. 4 MB of
# indices (and of gathered values): below numpy's 4 MiB huge-page threshold, and reused
# by the allocator from chunk to chunk; 16 MB chunks were fresh pages each time (at 2,000
# x 31,250 draws, 0.25-0.7 s of system time on a loaded machine). The draws and sums do
# not depend on it.
_CHUNK_CELLS = 500_000


@dataclass(frozen=True)
class Interval:
    """An estimate with a confidence interval and a sentence saying how it was made.

    ``estimate``, ``low`` and ``high`` are None when there is nothing to estimate from
    (no task, or no task with a value). ``n_tasks`` is the number of tasks the estimate is
    computed over — for a ratio, those that count in its denominator (pass@k over the
    complete tasks, not every task resampled); for a Wilson interval, the number of
    observations. ``resamples`` and ``seed`` are None
    for closed-form intervals.
    """

    estimate: float | None
    low: float | None
    high: float | None
    method: str
    confidence: float
    n_tasks: int
    resamples: int | None = None
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)

    @property
    def width(self) -> float | None:
        """``high - low``, or None."""
        if self.low is None or self.high is None:
            return None
        return self.high - self.low

    def __str__(self) -> str:
        level = format_pct(self.confidence, trim=True)
        if self.estimate is None:
            return f"- ({level} CI: -)"
        return (
            f"{format_metric(self.estimate)} ({level} CI {format_metric(self.low)}"
            f" – {format_metric(self.high)})"
        )


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")


def _z(confidence: float) -> float:
    from scipy.special import ndtri  # here, not at import: scipy takes ~0.5 s to load

    return float(ndtri(0.5 + confidence / 2))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a simple proportion ``successes / n``.

    Right for independent yes/no observations (e.g. one attempt per task). For attempts
    clustered in tasks prefer the task bootstrap (:func:`bootstrap_ratio_ci`).

    Parameters
    ----------
    successes, n
        Counts, ``0 <= successes <= n``. With ``n == 0`` every number is None.
    confidence
        Coverage of the interval, e.g. 0.95.

    Examples
    --------
    >>> iv = wilson_interval(0, 10)
    >>> round(iv.low, 4), round(iv.high, 4)
    (0.0, 0.2775)
    >>> iv = wilson_interval(5, 10)
    >>> round(iv.low, 4), round(iv.high, 4)
    (0.2366, 0.7634)
    """
    _check_confidence(confidence)
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    method = f"Wilson score interval over {n:,} independent observations"
    if n == 0:
        return Interval(None, None, None, method, confidence, 0)
    z = _z(confidence)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, method, confidence, int(n))


def _resampled_sums(values: NDArray[np.float64], resamples: int, seed: int) -> NDArray[np.float64]:
    """Column sums of ``values`` (tasks x columns) over ``resamples`` task resamples.

    Each resample draws as many task indices as there are tasks, uniformly with
    replacement (the same distribution as multinomial task weights, about ten times
    cheaper to draw). Resamples are drawn in chunks of at most ``_CHUNK_CELLS`` indices
    so memory stays bounded; the draws are the same whatever the chunk size (numpy's
    generator yields the same stream however it is split); with several chunks each is
    gathered and summed on a second thread while the next is drawn (the same numbers, so
    the same bits). Result: ``resamples x columns``.

    A column of ones (the denominator of a mean over tasks) sums to ``n`` in every
    resample, exactly (integers below 2**53 add exactly), so it is not gathered.
    """
    n, width = values.shape
    out = np.zeros((resamples, width))
    if n == 0:
        return out
    if _exact_as_weights(values):  # how often each task was drawn x values, all columns
        done = 0
        for counts in _draw_counts(n, resamples, seed):
            out[done : done + len(counts)] = counts.astype(np.float64) @ values
            done += len(counts)
        return out
    rng = np.random.default_rng(seed)
    columns = [np.ascontiguousarray(values[:, j]) for j in range(width)]
    drawn = [j for j, column in enumerate(columns) if not (column == 1.0).all()]
    out[:, [j for j in range(width) if j not in drawn]] = float(n)
    rows = max(1, _CHUNK_CELLS // n)

    def gather(idx: NDArray[np.int64], done: int) -> None:
        for j in drawn:
            out[done : done + len(idx), j] = columns[j][idx].sum(axis=1)

    chunks = ((done, min(rows, resamples - done)) for done in range(0, resamples, rows))
    if rows >= resamples:  # one chunk
        for done, size in chunks:
            gather(rng.integers(0, n, size=(size, n)), done)
        return out
    # Several: each chunk is gathered on a second thread while the next is drawn here,
    # from the one generator in order (numpy releases the GIL in both); the same draws,
    # the same sums of the same numbers, so the same bits.
    from concurrent.futures import Future, ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending: Future[None] | None = None
        for done, size in chunks:
            idx = rng.integers(0, n, size=(size, n))
            if pending is not None:
                pending.result()  # at most two chunks of draws held at once
            pending = pool.submit(gather, idx, done)
        if pending is not None:
            pending.result()
    return out


#: The last draws' counts (:func:`_draw_counts`) and the most bytes kept there.
_DRAWS: dict[tuple[int, int, int], list[NDArray[np.unsignedinteger[Any]]]] = {}
_DRAWS_KEPT_BYTES = 256 * 1024 * 1024


def _draw_counts(n: int, resamples: int, seed: int) -> Iterator[NDArray[np.unsignedinteger[Any]]]:
    """Per resample, how often each of the ``n`` tasks was drawn (chunks of resamples x n).

    The draws of the gathering loop (same generator, same chunks), counted. The last
    ones are kept when they fit in :data:`_DRAWS_KEPT_BYTES`: the statistics of one job
    draw the same tasks with the same seed again and again (each tool, each turn bin, a
    second call), and drawing is most of a resample's cost.
    """
    key = (n, resamples, seed)
    if key in _DRAWS:
        yield from _DRAWS[key]
        return
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_CELLS // n)
    keep = n * resamples <= _DRAWS_KEPT_BYTES
    chunks: list[NDArray[np.unsignedinteger[Any]]] = []
    done = 0
    while done < resamples:
        size = min(rows, resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        counts = np.empty((size, n), dtype=np.uint32)
        for r in range(size):
            counts[r] = np.bincount(idx[r], minlength=n)
        chunk = counts.astype(np.uint8) if counts.max() < 256 else counts
        if keep:
            chunks.append(chunk)
        yield chunk
        done += size
    if keep and sum(c.nbytes for c in chunks) <= _DRAWS_KEPT_BYTES:
        _DRAWS.clear()
        _DRAWS[key] = chunks


def _exact_as_weights(values: NDArray[np.float64]) -> bool:
    """Whether every resampled sum is exact in any order of additions (whole numbers,
    partial sums below 2**53): then draw counts x values are the gathered sums."""
    if not np.isfinite(values).all() or not (values == np.round(values)).all():
        return False
    return bool(values.shape[0] * float(np.abs(values).max(initial=0.0)) < 2.0**53)


def _percentile(stats: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    finite = stats[np.isfinite(stats)]
    if finite.size == 0:
        return math.nan, math.nan
    low, high = np.quantile(finite, [alpha, 1 - alpha])
    return float(low), float(high)


def _check_resampling(resamples: int, confidence: float) -> None:
    _check_confidence(confidence)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else x


def bootstrap_ratio_ci(
    numerator: ArrayLike,
    denominator: ArrayLike,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    what: str = "ratio",
) -> Interval:
    """Task bootstrap of ``sum(numerator) / sum(denominator)`` over per-task values.

    One entry per task, e.g. reward sum and scored attempts (the job's score), or a
    per-task pass@k estimate and a 0/1 "task counts at k" flag. Tasks are resampled with
    replacement; a resample whose denominator is 0 is left out of the percentiles.

    Examples
    --------
    >>> iv = bootstrap_ratio_ci([2, 1, 0], [2, 2, 1], resamples=500, seed=1)
    >>> iv.estimate, iv.low <= iv.estimate <= iv.high, iv.n_tasks
    (0.6, True, 3)
    """
    _check_resampling(resamples, confidence)
    (iv,) = _ratio_cis(
        [(numerator, denominator, what)], resamples=resamples, seed=seed, confidence=confidence
    )
    return iv


def bootstrap_ratio_cis(
    pairs: Sequence[tuple[ArrayLike, ArrayLike, str]],
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[Interval]:
    """Several :func:`bootstrap_ratio_ci` over the same tasks, drawn once and shared.

    Each pair is ``(numerator, denominator, what)``, one value per task; every pair's
    interval is the one :func:`bootstrap_ratio_ci` gives it alone with the same seed.

    Examples
    --------
    >>> a, b = bootstrap_ratio_cis([([2, 1, 0], [2, 2, 1], "x"), ([1, 1, 1], [2, 2, 1], "y")],
    ...                            resamples=300, seed=1)
    >>> a == bootstrap_ratio_ci([2, 1, 0], [2, 2, 1], resamples=300, seed=1, what="x")
    True
    """
    _check_resampling(resamples, confidence)
    return _ratio_cis(pairs, resamples=resamples, seed=seed, confidence=confidence)


def _ratio_cis(
    pairs: Sequence[tuple[ArrayLike, ArrayLike, str]],
    *,
    resamples: int,
    seed: int,
    confidence: float,
) -> list[Interval]:
    """Ratio intervals for several (numerator, denominator) pairs over the same tasks.

    The task draws are made once and shared: every pair sees the same resamples, and
    the draws (the expensive part) are made once. Each pair's interval is identical to
    what :func:`bootstrap_ratio_ci` gives it alone with the same seed.
    """
    arrays = []
    for numerator, denominator, what in pairs:
        num = np.asarray(numerator, dtype=np.float64).ravel()
        den = np.asarray(denominator, dtype=np.float64).ravel()
        if num.shape != den.shape:
            raise ValueError(
                f"numerator and denominator differ in length: {num.size} vs {den.size}"
            )
        if not (np.isfinite(num).all() and np.isfinite(den).all()):
            raise ValueError("per-task values must be finite numbers (drop or fill missing first)")
        arrays.append((num, den, what))
    sizes = {num.size for num, _, _ in arrays}
    if len(sizes) > 1:
        raise ValueError(f"every pair must have one value per task; lengths {sorted(sizes)}")
    n = sizes.pop() if sizes else 0
    live = [i for i, (_, den, _) in enumerate(arrays) if n and den.sum() != 0]
    stats: dict[int, NDArray[np.float64]] = {}
    if live:
        # One column per distinct per-task vector (pairs often share a denominator).
        slot: dict[bytes, int] = {}
        columns: list[NDArray[np.float64]] = []
        where: dict[int, tuple[int, int]] = {}
        for i in live:
            num, den, _ = arrays[i]
            pos = []
            for vec in (num, den):
                key = vec.tobytes()
                if key not in slot:
                    slot[key] = len(columns)
                    columns.append(vec)
                pos.append(slot[key])
            where[i] = (pos[0], pos[1])
        sums = _resampled_sums(np.column_stack(columns), resamples, seed)
        for i in live:
            a, b = where[i]
            with np.errstate(invalid="ignore", divide="ignore"):
                stats[i] = np.where(sums[:, b] > 0, sums[:, a] / sums[:, b], np.nan)
    out = []
    for i, (num, den, what) in enumerate(arrays):
        used = int(np.count_nonzero(np.asarray(den) > 0))  # the tasks the ratio counts
        method = (
            f"percentile bootstrap of the {what}: {resamples:,} resamples of the {n:,} tasks "
            f"with replacement (attempts stay with their task), seed {seed}"
            + ("" if used == n else f"; the estimate counts {used:,} of them")
        )
        if i not in stats:
            out.append(Interval(None, None, None, method, confidence, used, resamples, seed))
            continue
        low, high = _percentile(stats[i], confidence)
        out.append(
            Interval(
                float(num.sum() / den.sum()),
                _none_if_nan(low),
                _none_if_nan(high),
                method,
                confidence,
                used,
                resamples,
                seed,
            )
        )
    return out


def bootstrap_mean_ci(
    values: ArrayLike,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval:
    """Percentile bootstrap interval of the mean of one value per task.

    Parameters
    ----------
    values
        One finite number per task (e.g. per-task mean reward or pass rate).
    resamples, seed, confidence
        Number of resamples, the random seed (same seed, same interval), coverage.

    Examples
    --------
    >>> iv = bootstrap_mean_ci([0.0, 0.5, 1.0, 1.0], resamples=1000, seed=7)
    >>> iv.estimate, iv.low <= 0.625 <= iv.high, iv == bootstrap_mean_ci(
    ...     [0.0, 0.5, 1.0, 1.0], resamples=1000, seed=7)
    (0.625, True, True)
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    return bootstrap_ratio_ci(
        v,
        np.ones_like(v),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        what="mean over tasks",
    )


def paired_bootstrap_diff(
    a: ArrayLike,
    b: ArrayLike,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval:
    """Paired task bootstrap of ``mean(a) - mean(b)`` where ``a[i]``, ``b[i]`` are one task.

    Both jobs are resampled with the *same* task weights, so what the tasks share
    (difficulty) cancels and the interval is about the difference only. Pairs where
    either side is NaN (task missing or unscored in one job) are left out; ``n_tasks``
    and ``method`` say how many pairs were used.

    Examples
    --------
    >>> iv = paired_bootstrap_diff([1, 0, 1, 1], [1, 0, 1, 1], seed=3)
    >>> iv.estimate, iv.low, iv.high
    (0.0, 0.0, 0.0)
    >>> iv = paired_bootstrap_diff([1, 1, 1, 0], [0, 1, 0, 0], resamples=500, seed=3)
    >>> iv.estimate, iv.low <= 0.5 <= iv.high
    (0.5, True)
    """
    _check_resampling(resamples, confidence)
    av = np.asarray(a, dtype=np.float64).ravel()
    bv = np.asarray(b, dtype=np.float64).ravel()
    if av.shape != bv.shape:
        raise ValueError(f"a and b must be paired by task: lengths {av.size} and {bv.size}")
    keep = np.isfinite(av) & np.isfinite(bv)
    dropped = int((~keep).sum())
    diff = av[keep] - bv[keep]
    iv = bootstrap_ratio_ci(
        diff,
        np.ones_like(diff),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        what="paired difference of means (a - b), same task weights for both",
    )
    if dropped:
        method = iv.method + f"; {dropped:,} task(s) without a value on both sides left out"
        iv = Interval(iv.estimate, iv.low, iv.high, method, confidence, iv.n_tasks, resamples, seed)
    return iv


# -- workspace wrapper ---------------------------------------------------------------
