"""The per-task table (``samples``) and the pass@k curve (``curve``) of a job.

Derived from the per-task counts of :mod:`envloop_nb._metrics.counts`; the
combinatorics run vectorized once per distinct (n, c) pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .._store.ref import job_k
from .._types import FrameKind, Policy
from .counts import check_options, count_rows, per_task_arrays, task_counts
from .passk import mean_estimates, pass_at_k, pass_hat_k

if TYPE_CHECKING:
    import duckdb

__all__ = ["curve", "sample_table", "samples"]


def _unique_pairs(
    n: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (n, c) pairs: ``(un, uc, inverse, counts)`` with ``n == un[inverse]``."""
    if len(n) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    base = int(c.max()) + 1
    uniq, inverse, counts = np.unique(n * base + c, return_inverse=True, return_counts=True)
    return uniq // base, uniq % base, inverse.reshape(-1), counts


def _arrow_frame(table: pa.Table, frame: FrameKind) -> Any:
    """An Arrow table as a frame, like :func:`envloop_nb._store.frames.to_frame` but without a
    round trip through DuckDB (which copies the table: 60 of 100 ms at 312,500 tasks).

    The table is consumed: pandas takes its columns one by one, each freed once converted
    (``self_destruct``), with no consolidating copy (``split_blocks``); the caller must
    hold no other reference to it."""
    if frame == "pandas":
        return table.to_pandas(split_blocks=True, self_destruct=True)
    if frame == "polars":
        import polars as pl

        return pl.from_arrow(table)
    raise ValueError(f"frame must be 'pandas' or 'polars', got {frame!r}")


def _estimates(
    n: np.ndarray, c: np.ndarray, k: int, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-task pass@k and pass^k where ``ok`` (n >= k), NaN elsewhere."""
    at = np.full(n.shape, np.nan)
    hat = np.full(n.shape, np.nan)
    if ok.any():
        at[ok] = pass_at_k(n[ok], c[ok], k)
        hat[ok] = pass_hat_k(n[ok], c[ok], k)
    return at, hat


def samples(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    ks: Sequence[int] | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    frame: FrameKind = "pandas",
) -> Any:
    """The per-task table: counts, pass rate, pass@k / pass^k for ``ks``, reward stats.

    ``complete`` says whether every requested attempt of the task is scored (a count:
    it does not change with the policy). ``pass_rate`` is c/n and null ("-") unless the
    task is complete; under ``policy="failure"`` it always exists (missing = a failure).
    pass@k columns are null where the task has fewer than k scored attempts (under
    ``failure``: fewer than k requested) or rewards are non-binary. A ``subset`` column
    (the task's ``subset`` tag) comes before ``tags`` when any task has that tag.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> df = job.samples(ks=[1, 2])
    >>> df[["task", "n", "scored", "passes", "pass_rate", "complete", "subset"]].values.tolist()
    [['A', 2, 2, 1, 0.5, True, 'math'], ['B', 2, 2, 2, 1.0, True, 'code'], ['C', 2, 1, 0, nan, False, 'code']]
    """
    return _arrow_frame(sample_table(con, job_id, ks=ks, policy=policy, threshold=threshold), frame)


def sample_table(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    ks: Sequence[int] | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> pa.Table:
    """The per-task table of :func:`samples` as an Arrow table, in task order; its text
    columns (task, subset, tags) are the kept per-task counts' own, not copies.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> t = sample_table(job.con, job.id, ks=[1])
    >>> t.column("task").to_pylist(), t.column("pass@1").to_pylist()
    (['A', 'B', 'C'], [0.5, 1.0, 0.0])
    """
    check_options(policy, threshold)
    counts = task_counts(con, job_id, threshold)
    ks = list(ks) if ks is not None else [job_k(con, job_id)]
    arr = per_task_arrays(counts, policy)
    n, c, scored = arr["n"], arr["c"], arr["scored"]
    k_req = arr["k"]
    nonbinary = np.asarray(counts.column("nonbinary"), dtype=np.int64)
    binary = threshold is not None or int(nonbinary.sum()) == 0
    complete = scored == k_req
    rated = (complete | (policy == "failure")) & (n > 0)
    reward_sum = np.asarray(counts.column("reward_sum"), dtype=np.float64)
    sumsq = np.asarray(counts.column("reward_sumsq"), dtype=np.float64)
    # Under "failure" a missing slot is a 0: it adds to n but not to the sums.
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, reward_sum / np.maximum(n, 1), np.nan)
        var = np.where(n > 1, (sumsq - n * mean * mean) / np.maximum(n - 1, 1), np.nan)
    std = np.sqrt(np.clip(var, 0, None))
    rmin = np.asarray(counts.column("reward_min").to_numpy(zero_copy_only=False), dtype=np.float64)
    rmax = np.asarray(counts.column("reward_max").to_numpy(zero_copy_only=False), dtype=np.float64)
    if policy == "failure":
        has_missing = scored < k_req
        rmin = np.where(has_missing, np.fmin(rmin, 0.0), rmin)
        rmax = np.where(has_missing, np.fmax(rmax, 0.0), rmax)
    cols: dict[str, Any] = {
        "task": counts.column("task"),
        "n": pa.array(k_req),
        "dispatched": counts.column("dispatched"),
        "scored": pa.array(scored),
        "missing": pa.array(k_req - scored),
        "invalid": counts.column("invalid"),
        "passes": pa.array(c, mask=~np.full(c.shape, binary)),
        "pass_rate": pa.array(
            np.where(rated, c / np.maximum(n, 1), np.nan),
            mask=~(rated & binary),
        ),
        "complete": pa.array(complete),
    }
    un, uc, inverse, _ = _unique_pairs(n, c)  # evaluate once per distinct (n, c)
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        ok_u = (un >= k) & binary
        at_u, hat_u = _estimates(un, uc, k, ok_u)
        ok = ok_u[inverse]
        cols[f"pass@{k}"] = pa.array(at_u[inverse], mask=~ok)
        cols[f"pass^{k}"] = pa.array(hat_u[inverse], mask=~ok)
    cols["reward_mean"] = pa.array(mean, mask=np.isnan(mean))
    cols["reward_min"] = pa.array(rmin, mask=np.isnan(rmin))
    cols["reward_max"] = pa.array(rmax, mask=np.isnan(rmax))
    cols["reward_std"] = pa.array(std, mask=np.isnan(std))
    subset = counts.column("subset")
    if subset.null_count < len(subset):
        cols["subset"] = subset
    cols["tags"] = counts.column("tags")
    table = pa.table(cols)
    del cols  # the table is the columns' only holder: a frame frees them as it goes
    return table


def curve(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    ks: Sequence[int] | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    frame: FrameKind = "pandas",
) -> Any:
    """pass@k and pass^k for each k, averaged over the tasks that have >= k scored attempts.

    Columns: ``k, pass@k, pass^k, tasks`` (tasks the point covers) and ``tasks_total``.
    By default the ks are 1..k up to the most attempts a task has (under
    ``policy="failure"``: k), then the job's k itself when beyond: a point no task
    reaches has no estimate (null, ``tasks`` 0), said once rather than for every k up to
    a claimed k.
    """
    check_options(policy, threshold)
    counts = count_rows(con, job_id, threshold)  # no task text: only the counts
    arr = per_task_arrays(counts, policy)
    n, c = arr["n"], arr["c"]
    if ks is None:
        k, top = job_k(con, job_id), int(n.max()) if len(n) else 0
        ks = [*range(1, min(k, top) + 1), *([k] if k > top else [])]
    else:
        ks = list(ks)
    binary = threshold is not None or int(np.asarray(counts.column("nonbinary")).sum()) == 0
    # With no scored attempt at all every metric is null, whatever the policy.
    binary = binary and int(arr["scored"].sum()) > 0
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
    # The mean over tasks is a count-weighted mean over the distinct (n, c) pairs, formed
    # in exact rationals and rounded once (see _passk.mean_estimates).
    un, uc, _, weight = _unique_pairs(n, c)
    means = mean_estimates(un, uc, weight, ks) if binary else [None] * len(ks)
    rows_at = [None if m is None else m[0] for m in means]
    rows_hat = [None if m is None else m[1] for m in means]
    rows_tasks = [int(weight[un >= k].sum()) for k in ks]
    table = pa.table(
        {
            "k": pa.array(ks, pa.int64()),
            "pass@k": pa.array(rows_at, pa.float64()),
            "pass^k": pa.array(rows_hat, pa.float64()),
            "tasks": pa.array(rows_tasks, pa.int64()),
            "tasks_total": pa.array([len(n)] * len(ks), pa.int64()),
        }
    )
    return _arrow_frame(table, frame)
