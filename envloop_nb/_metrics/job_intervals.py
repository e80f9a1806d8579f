"""A job's intervals: its score, pass, pass@k and pass^k with task-bootstrap intervals
(grouped by task in DuckDB, then :mod:`envloop_nb._metrics.uncertainty`'s one bootstrap),
and the frame ``job.intervals()`` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .uncertainty import Interval, _check_resampling, _ratio_cis, wilson_interval

if TYPE_CHECKING:
    import duckdb

    from .._types import FrameKind, Policy

__all__ = ["intervals_frame", "job_intervals"]


def job_intervals(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    ks: Sequence[int] = (),
) -> dict[str, Interval]:
    """Intervals for a job's score, pass, pass@k and pass^k, resampling tasks.

    Each estimate equals the job summary's number (same policy and threshold). The
    ``"pass (Wilson)"`` entry is the Wilson interval treating every scored attempt as
    independent, shown for contrast: it is narrower than the task bootstrap whenever
    attempts of a task agree with each other. For each k in ``ks``, entries
    ``"pass@{k} (unbiased)"`` and ``"pass^{k} (unbiased)"`` bootstrap the unbiased
    estimators over the tasks with at least k scored attempts (the estimates equal
    ``job.curve()``).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> ivs = job_intervals(job.con, job.id, resamples=200)
    >>> ivs["score"].estimate, ivs["pass@k"].estimate, ivs["pass^k"].n_tasks
    (0.6, 1.0, 2)
    """
    from .counts import check_options, task_counts
    from .lm_eval_results import results_rows

    check_options(policy, threshold)
    rows = results_rows(con, job_id)
    if rows is not None:  # lm-eval results without samples: the file's stderr
        from .lm_eval_results import results_intervals

        return results_intervals(con, job_id, rows, confidence=confidence)
    counts = task_counts(con, job_id, threshold)
    k = np.asarray(counts.column("k"), dtype=np.float64)
    scored = np.asarray(counts.column("scored"), dtype=np.float64)
    passes = np.asarray(counts.column("passes"), dtype=np.float64)
    reward_sum = np.asarray(counts.column("reward_sum"), dtype=np.float64)
    nonbinary = int(np.asarray(counts.column("nonbinary")).sum())
    binary = threshold is not None or nonbinary == 0
    any_scored = scored.sum() > 0
    if policy == "failure":
        n = k
        counted = np.ones_like(k)
    else:
        n = scored
        counted = (scored == k).astype(np.float64)
    _check_resampling(resamples, confidence)

    def gated(iv: Interval, ok: bool) -> Interval:
        if ok:
            return iv
        return Interval(None, None, None, iv.method, confidence, iv.n_tasks, resamples, seed)

    members = "requested" if policy == "failure" else "complete"
    attempts = "requested" if policy == "failure" else "scored"
    score, pass_, at_k, hat_k = _ratio_cis(
        [
            (reward_sum, n, f"score (reward sum / {attempts} attempts)"),
            (passes, n, "pass rate (passes / attempts)"),
            (
                (passes > 0) * counted,
                counted,
                f"pass@k (share of {members} members with a pass)",
            ),
            (
                ((passes == k) & (k > 0)) * counted,
                counted,
                f"pass^k (share of {members} members where every attempt passes)",
            ),
        ],
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )
    ok_binary = bool(any_scored and binary)
    out: dict[str, Interval] = {
        "score": gated(score, bool(any_scored)),
        "pass": gated(pass_, ok_binary),
        "pass@k": gated(at_k, ok_binary),
        "pass^k": gated(hat_k, ok_binary),
    }
    wilson = wilson_interval(int(passes.sum()), int(n.sum()), confidence)
    out["pass (Wilson)"] = gated(
        Interval(
            wilson.estimate,
            wilson.low,
            wilson.high,
            wilson.method + " (attempts treated as independent: too narrow when they cluster)",
            confidence,
            wilson.n_tasks,
        ),
        ok_binary,
    )
    if ks:
        from .passk import pass_at_k, pass_hat_k

        pairs: list[tuple[ArrayLike, ArrayLike, str]] = []
        for kk in ks:
            if kk < 1:
                raise ValueError(f"k must be >= 1, got {kk}")
            ok = n >= kk
            at = np.zeros_like(n)
            hat = np.zeros_like(n)
            if ok.any():
                at[ok] = pass_at_k(n[ok], passes[ok], kk)
                hat[ok] = pass_hat_k(n[ok], passes[ok], kk)
            cover = f"tasks with >= {kk} {attempts} attempts"
            pairs.append((at, ok.astype(np.float64), f"unbiased pass@{kk} over {cover}"))
            pairs.append((hat, ok.astype(np.float64), f"unbiased pass^{kk} over {cover}"))
        many = _ratio_cis(pairs, resamples=resamples, seed=seed, confidence=confidence)
        for i, kk in enumerate(ks):
            out[f"pass@{kk} (unbiased)"] = gated(many[2 * i], ok_binary)
            out[f"pass^{kk} (unbiased)"] = gated(many[2 * i + 1], ok_binary)
    return out


def intervals_frame(intervals: dict[str, Interval], frame: FrameKind = "pandas") -> Any:
    """One row per metric: metric, estimate, low, high, confidence, n_tasks, resamples, seed, method."""
    import duckdb
    import pyarrow as pa

    from .._store.frames import to_frame

    rows = [{"metric": name, **iv.to_dict()} for name, iv in intervals.items()]
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [
                ("metric", pa.string()),
                ("estimate", pa.float64()),
                ("low", pa.float64()),
                ("high", pa.float64()),
                ("method", pa.string()),
                ("confidence", pa.float64()),
                ("n_tasks", pa.int64()),
                ("resamples", pa.int64()),
                ("seed", pa.int64()),
            ]
        ),
    )
    con = duckdb.connect()
    try:
        return to_frame(
            con.from_arrow(table).select(
                "metric, estimate, low, high, confidence, n_tasks, resamples, seed, method"
            ),
            frame,
        )
    finally:
        con.close()
