"""The run's per-task counts as tasks × steps matrices, and the shared task resampling.

Each job's per-task counts are :func:`envloop_nb._metrics.counts.task_counts` — the one
definition its summary reads, memoized per job — lined up on the union of the run's task
names (in the first job's task order, then any task only later jobs requested). A cell
of a task a job did not request is ``requested = False`` with zero counts; a metrics-only
job (lm-eval results without samples, an MLflow run's aggregates) has no per-task counts:
its column is all unrequested and :attr:`TaskMatrix.per_task` says so.

From the counts, per cell and under the run's policy and threshold (as the comparison's
per-task rows, :mod:`envloop_nb._compare.tasks`): ``n`` (scored attempts, or requested
ones under ``policy="failure"``), ``complete``, ``task_score`` (mean reward over ``n``),
``pass_rate`` (passes over ``n``, complete binary cells only) and ``solved`` (pass rate,
or mean reward for non-binary rewards, ``>= solved_at``; NaN where not complete).

:func:`weights` draws the task bootstrap once for the whole run: ``resamples`` draws of
``T`` task indices uniformly with replacement (the package's task bootstrap,
:mod:`envloop_nb._metrics.uncertainty`, with the same generator and seed), kept as a
``resamples × T`` multiplicity matrix. Every step and every pair of steps is resampled
with the same draws, so statistics stay paired across steps, and a sum over resampled
tasks is one matrix product for all steps at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from .._metrics.counts import task_counts
from .._store.ref import metrics_only
from .assemble import RunState

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["TaskMatrix", "group_values", "matrix", "percentiles", "weights"]


@dataclass(frozen=True, eq=False)
class TaskMatrix:
    """Per-task counts of a run: arrays of shape ``(tasks, steps)`` (see the module)."""

    tasks: NDArray[np.str_]
    tags: tuple[dict[str, str], ...]
    per_task: NDArray[np.bool_]  # (steps,): the job has per-task counts
    k: NDArray[np.int64]  # (steps,)
    binary: NDArray[np.bool_]  # (steps,)
    requested: NDArray[np.bool_]
    scored: NDArray[np.float64]
    invalid: NDArray[np.float64]
    passes: NDArray[np.float64]
    reward_sum: NDArray[np.float64]
    reward_sumsq: NDArray[np.float64]
    n: NDArray[np.float64]
    complete: NDArray[np.bool_]
    task_score: NDArray[np.float64]
    pass_rate: NDArray[np.float64]
    solved: NDArray[np.float64]  # 1.0 / 0.0 / NaN (not complete, or not requested)


def matrix(state: RunState) -> TaskMatrix:
    """The run's :class:`TaskMatrix` (memoized on the state)."""
    if "matrix" not in state.data:
        state.data["matrix"] = _build(state)
    built: TaskMatrix = state.data["matrix"]
    return built


def _build(state: RunState) -> TaskMatrix:
    con = state.con
    counts: list[Any] = []
    names: dict[str, int] = {}
    tags: list[dict[str, str]] = []
    for job_id in state.job_ids:
        if metrics_only(con, job_id) is not None:
            counts.append(None)
            continue
        table = task_counts(con, job_id, state.threshold)
        counts.append(table)
        fresh = [t for t in table.column("task").to_pylist() if t not in names]
        if fresh:
            where = pc.index_in(pa_array(fresh), value_set=table.column("task").combine_chunks())
            raw = pc.take(table.column("tags"), where).to_pylist()
            for task, text in zip(fresh, raw, strict=True):
                names[task] = len(names)
                value = json.loads(text) if isinstance(text, str) else text or {}
                tags.append(
                    {str(a): str(b) for a, b in value.items()} if isinstance(value, dict) else {}
                )
    tasks = np.array(list(names), dtype=str)
    n_tasks, n_steps = len(names), len(state.job_ids)
    shape = (n_tasks, n_steps)
    requested = np.zeros(shape, dtype=bool)
    cells = {
        c: np.zeros(shape) for c in ("scored", "invalid", "passes", "reward_sum", "reward_sumsq")
    }
    k = np.zeros(n_steps, dtype=np.int64)
    binary = np.zeros(n_steps, dtype=bool)
    per_task = np.array([c is not None for c in counts], dtype=bool)
    rows = con.execute(
        "SELECT job_id, attempts FROM jobs WHERE list_contains($jobs, job_id)",
        {"jobs": list(state.job_ids)},
    ).fetchall()
    attempts = dict(rows)
    union = pa_array(list(names))
    for j, (job_id, table) in enumerate(zip(state.job_ids, counts, strict=True)):
        k[j] = int(attempts[job_id])
        if table is None:
            continue
        at = np.asarray(pc.index_in(table.column("task"), value_set=union), dtype=np.int64)
        requested[at, j] = True
        for name, cell in cells.items():
            cell[at, j] = np.asarray(table.column(name), dtype=np.float64)
        nonbinary = int(np.asarray(table.column("nonbinary"), dtype=np.int64).sum())
        binary[j] = state.threshold is not None or nonbinary == 0
    failure = state.policy == "failure"
    n = np.where(requested, k[None, :], 0).astype(np.float64) if failure else cells["scored"]
    complete = requested & (True if failure else cells["scored"] == k[None, :])
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(has, cells["reward_sum"] / n, np.nan)
        rate = np.where(has & complete & binary[None, :], cells["passes"] / n, np.nan)
    level = np.where(binary[None, :], rate, np.where(complete, score, np.nan))
    with np.errstate(invalid="ignore"):
        solved = np.where(np.isnan(level), np.nan, (level >= state.solved_at).astype(np.float64))
    return TaskMatrix(
        tasks=tasks,
        tags=tuple(tags),
        per_task=per_task,
        k=k,
        binary=binary,
        requested=requested,
        scored=cells["scored"],
        invalid=cells["invalid"],
        passes=cells["passes"],
        reward_sum=cells["reward_sum"],
        reward_sumsq=cells["reward_sumsq"],
        n=n,
        complete=complete,
        task_score=score,
        pass_rate=rate,
        solved=solved,
    )


def pa_array(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())


def group_values(m: TaskMatrix, by: str) -> list[str]:
    """Each task's group under ``by`` (``"subset"`` or ``"tag:<key>"``); ``"(no <key>)"``
    for a task without that tag (as the comparison's per-task rows name it)."""
    key = by.removeprefix("tag:")
    return [t.get(key, f"(no {key})") for t in m.tags]


def weights(state: RunState) -> NDArray[np.float64]:
    """The run's task bootstrap as a ``resamples × tasks`` multiplicity matrix (memoized).

    The draws are those of :func:`envloop_nb._metrics.uncertainty.bootstrap_ratio_ci`
    with the run's seed over ``T`` tasks: for a job whose tasks are the run's tasks in the
    same order, an interval here equals ``job.intervals(resamples=..., seed=...)``'s
    (exactly, whenever the per-task sums are whole numbers).
    """
    if "weights" not in state.data:
        t = len(matrix(state).tasks)
        rng = np.random.default_rng(state.seed)
        out = np.zeros((state.resamples, t))
        if t:
            rows = max(1, 2_000_000 // t)  # the same stream however it is split
            done = 0
            while done < state.resamples:
                size = min(rows, state.resamples - done)
                idx = rng.integers(0, t, size=(size, t))
                flat = (idx + (np.arange(size) * t)[:, None]).ravel()
                out[done : done + size] = np.bincount(flat, minlength=size * t).reshape(size, t)
                done += size
        state.data["weights"] = out
    w: NDArray[np.float64] = state.data["weights"]
    return w


def percentiles(
    num: NDArray[np.float64], den: NDArray[np.float64], state: RunState
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Percentile interval bounds of ``sum(num) / sum(den)`` per column over the run's
    task resamples (``num``, ``den``: ``tasks × columns``); NaN where no resample has a
    denominator. A resample whose denominator is 0 is left out (as the package's
    bootstrap does)."""
    w = weights(state)
    top, bottom = w @ num, w @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = np.where(bottom > 0, top / bottom, np.nan)
    return _quantiles(stats, state.confidence)


def _quantiles(
    stats: NDArray[np.float64], confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    alpha = (1 - confidence) / 2
    low = np.full(stats.shape[1], np.nan)
    high = np.full(stats.shape[1], np.nan)
    for j in range(stats.shape[1]):
        finite = stats[:, j][np.isfinite(stats[:, j])]
        if finite.size:
            low[j], high[j] = np.quantile(finite, [alpha, 1 - alpha])
    return low, high
