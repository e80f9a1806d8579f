"""The run's per-task counts as tasks × steps matrices, and the shared task resampling.

Each job's per-task counts are :func:`envloop_nb._metrics.counts.task_counts` — the one
definition its summary reads, memoized per job — lined up on the union of the run's task
names (in the first job's task order, then any task only later jobs requested). A cell
of a task a job did not request is ``requested = False`` with zero counts; a metrics-only
job (lm-eval results without samples, an MLflow run's aggregates) has no per-task counts:
its column is all unrequested and :attr:`TaskMatrix.per_task` says so. The counts the
jobs' loads kept are read for all of them in one query; before the matrix is built from
them, :func:`step_counts` gives one step's counts from that read (a run's curve points —
each job's summary — need no matrix).

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
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .._metrics.counts import task_counts
from .._metrics.dimension_counts import dimension_task_counts
from .._store.ref import metrics_only
from .assemble import RunState

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "TaskMatrix",
    "counted_steps",
    "dimension_matrices",
    "group_values",
    "job_counts",
    "matrix",
    "percentiles",
    "step_attempts",
    "step_counts",
    "weights",
]


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
    nonbinary: NDArray[np.float64]
    ordered: NDArray[np.bool_]  # (steps,): the job's tasks are the rows' order (summary bits)
    n: NDArray[np.float64]
    complete: NDArray[np.bool_]
    task_score: NDArray[np.float64]
    pass_rate: NDArray[np.float64]
    solved: NDArray[np.float64]  # 1.0 / 0.0 / NaN (not complete, or not requested)

    def column(self, name: str, j: int) -> NDArray[Any]:
        """Step ``j``'s column of the ``(tasks, steps)`` array ``name``: the values of
        ``getattr(self, name)[:, j]``, contiguous (each array transposed once, on first use:
        a run's per-step reads gather no strided column)."""
        by_step = self._by_step
        if name not in by_step:
            by_step[name] = np.ascontiguousarray(getattr(self, name).T)
        column: NDArray[Any] = by_step[name][j]
        return column

    @cached_property
    def _by_step(self) -> dict[str, NDArray[Any]]:
        return {}


def matrix(state: RunState) -> TaskMatrix:
    """The run's :class:`TaskMatrix` (memoized on the state)."""
    if "matrix" not in state.data:
        state.data["matrix"] = _build(state)
    built: TaskMatrix = state.data["matrix"]
    return built


_CELLS = ("scored", "invalid", "passes", "nonbinary", "reward_sum", "reward_sumsq")


_KEPT = """
    WITH want AS (SELECT unnest($jobs) AS job_id, generate_subscripts($jobs, 1) - 1 AS o),
         n AS (SELECT t.job_id, count(*) AS tasks FROM tasks t SEMI JOIN want USING (job_id)
               GROUP BY t.job_id),
         live AS (SELECT w.o, j.job_id, j.loaded_at FROM jobs j JOIN want w USING (job_id)
                  WHERE (j.extra->'summarised') IS NULL),
         c AS (SELECT l.o, c.* FROM task_counts_cache c
               JOIN live l ON l.job_id = c.job_id AND l.loaded_at = c.loaded_at),
         ok AS (SELECT c.o FROM c JOIN n USING (job_id) GROUP BY c.o, n.tasks
                HAVING count(*) = n.tasks AND count(c.position) = n.tasks),
         kept AS (SELECT * FROM c SEMI JOIN ok USING (o))
    """


@dataclass(frozen=True, eq=False)
class _Kept:
    """The counts the jobs' loads kept, read in one query (:func:`_kept`), rows in step
    then task (position) order: step ``j``'s rows are ``bounds[j]:bounds[j + 1]``;
    ``steps``, ``columns`` (the count columns as read) are views of the query's result,
    ``tasks`` its task names."""

    tasks: Any  # pyarrow ChunkedArray of the rows' task names
    steps: NDArray[np.int64]
    columns: dict[str, NDArray[Any]]
    bounds: NDArray[np.int64]
    in_bulk: NDArray[np.bool_]  # (steps,): the step's counts are here


def _kept(state: RunState) -> _Kept | None:
    """The counts every job's load kept (``task_counts_cache``), read in one query for all
    the jobs (memoized on the state until :func:`matrix` has used them). Only for jobs whose
    kept counts are those :func:`task_counts` reads as they are (no threshold, the job not
    summarised, one row per requested task at its position); the others are left to
    :func:`task_counts`, one by one. No task name crosses into Python per row."""
    if "kept" in state.data:
        found: _Kept | None = state.data["kept"]
        return found
    state.data["kept"] = read = _read_kept(state)
    return read


def _read_kept(state: RunState) -> _Kept | None:
    if state.threshold is not None:
        return None
    # in step then task order (a job's positions are distinct), sorted by DuckDB: its sort
    # reuses its own memory, where a sort here allocated ~90 MB afresh at 1M rows
    table = state.con.execute(
        f"""{_KEPT}
            SELECT o::BIGINT AS o, task, {", ".join(_CELLS)} FROM kept ORDER BY o, position""",
        {"jobs": list(state.job_ids)},
    ).to_arrow_table()
    if not table.num_rows:
        return None
    steps = np.asarray(table.column("o"), dtype=np.int64)
    bounds = np.searchsorted(steps, np.arange(len(state.job_ids) + 1))
    return _Kept(
        tasks=table.column("task"),
        steps=steps,
        columns={c: np.asarray(table.column(c)) for c in _CELLS},
        bounds=bounds,
        in_bulk=np.diff(bounds) > 0,
    )


def step_counts(state: RunState, j: int) -> dict[str, NDArray[Any]] | None:
    """Step ``j``'s per-task counts in the job's task order — the columns
    :func:`envloop_nb._metrics.summary.summary_of_counts` reads, the values and the order
    :func:`task_counts` gives — or None (then ``task_counts`` itself). Before the run's
    :class:`TaskMatrix` is built, from the counts its load kept (:func:`_kept`: those rows
    as they are, in task order: what ``task_counts`` returns for such a job); after, from
    the matrix, where its rows are the job's order."""
    if "matrix" in state.data:
        m = matrix(state)
        return job_counts(m, j) if m.per_task[j] and m.ordered[j] else None
    kept = _kept(state)
    if kept is None or not kept.in_bulk[j]:
        return None
    rows = slice(int(kept.bounds[j]), int(kept.bounds[j + 1]))
    out = {c: np.asarray(kept.columns[c][rows], dtype=np.float64) for c in _COUNTED}
    out["k"] = np.full(rows.stop - rows.start, step_attempts(state)[j], dtype=np.int64)
    return out


def counted_steps(state: RunState) -> NDArray[np.bool_]:
    """``(steps,)``: the steps whose per-task counts are at hand — the matrix's
    :attr:`TaskMatrix.per_task` once it is built; before, the steps whose loads kept their
    counts (one query for all: a step counted some other way is False until then)."""
    if "matrix" in state.data:
        return matrix(state).per_task
    kept = _kept(state)
    return kept.in_bulk if kept is not None else np.zeros(len(state.job_ids), dtype=bool)


#: The count columns a summary reads (``k`` besides).
_COUNTED = ("scored", "invalid", "passes", "nonbinary", "reward_sum")


def step_attempts(state: RunState) -> NDArray[np.int64]:
    """Each step's ``k`` (the job's attempts per task), memoized."""
    if "attempts" not in state.data:
        attempts = dict(
            state.con.execute(
                "SELECT job_id, attempts FROM jobs WHERE list_contains($jobs, job_id)",
                {"jobs": list(state.job_ids)},
            ).fetchall()
        )
        state.data["attempts"] = np.array([int(attempts[j]) for j in state.job_ids], dtype=np.int64)
    k: NDArray[np.int64] = state.data["attempts"]
    return k


def _build(state: RunState) -> TaskMatrix:
    import pandas as pd
    import pyarrow.compute as pc

    con = state.con
    bulk = _kept(state)
    state.data.pop("kept", None)  # read once: the matrix holds the counts from here on
    n_steps = len(state.job_ids)
    in_bulk = bulk.in_bulk if bulk is not None else np.zeros(n_steps, dtype=bool)
    parts: dict[int, tuple[Any, dict[str, Any]] | None] = {}
    for j, job_id in enumerate(state.job_ids):
        if in_bulk[j]:
            continue
        if metrics_only(con, job_id) is not None:
            parts[j] = None
            continue
        table = task_counts(con, job_id, state.threshold)
        names = np.asarray(table.column("task").to_numpy(zero_copy_only=False))
        parts[j] = (names, {c: np.asarray(table.column(c), dtype=np.float64) for c in _CELLS})
    known = []
    if bulk is not None:  # each task's first row (in step, task order) is its first appearance
        coded = pc.dictionary_encode(bulk.tasks.combine_chunks())
        known.append(np.asarray(coded.dictionary.to_pylist(), dtype=object))
    known += [p[0] for p in parts.values() if p is not None]
    union = pd.unique(np.concatenate(known)) if known else np.zeros(0, dtype=object)
    index = pd.Index(union)
    tasks = np.asarray(union, dtype=str)
    shape = (len(union), n_steps)
    requested = np.zeros(shape, dtype=bool)
    cells = {c: np.zeros(shape) for c in _CELLS}
    binary = np.zeros(n_steps, dtype=bool)
    ordered = np.zeros(n_steps, dtype=bool)
    per_task = in_bulk.copy()
    if bulk is not None:  # the bulk's codes are the first rows of the union, in order
        codes, steps, columns = np.asarray(coded.indices, dtype=np.int64), bulk.steps, bulk.columns
        requested[codes, steps] = True
        for name, cell in cells.items():
            cell[codes, steps] = columns[name]
        nonbinary = np.bincount(steps, weights=columns["nonbinary"], minlength=n_steps)
        binary[in_bulk] = (state.threshold is not None) | (nonbinary[in_bulk] == 0)
        # in task order within each step, the codes rise when the rows are the job's order
        rising = np.r_[True, (np.diff(codes) > 0) | (np.diff(steps) != 0)]
        ordered[in_bulk] = np.bincount(steps, weights=~rising, minlength=n_steps)[in_bulk] == 0
    for j, part in parts.items():
        if part is None:
            continue
        per_task[j] = True
        at = index.get_indexer(part[0])
        requested[at, j] = True
        for name, cell in cells.items():
            cell[at, j] = part[1][name]
        binary[j] = state.threshold is not None or int(part[1]["nonbinary"].sum()) == 0
        ordered[j] = bool(np.all(np.diff(at) > 0))
    k = step_attempts(state)
    tags = _tags(state, tasks)
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
        nonbinary=cells["nonbinary"],
        ordered=ordered,
        n=n,
        complete=complete,
        task_score=score,
        pass_rate=rate,
        solved=solved,
    )


def dimension_matrices(state: RunState) -> dict[str, TaskMatrix]:
    """Per value of ``job.groups(by="dimension")`` (``reward``, ``composite``, each named
    dimension), the run's :class:`TaskMatrix` of that value: the same tasks, steps and
    slots, with ``scored`` / ``passes`` / ``nonbinary`` / ``reward_sum`` (the value's sum)
    and ``n`` / ``complete`` / ``binary`` of that value under the run's policy and threshold
    (:func:`envloop_nb._metrics.groups.dimension_task_counts`: the counts
    ``job.groups(by="dimension")`` aggregates). ``reward`` is :func:`matrix` itself. Steps
    without per-task counts have none (all unrequested). Only those counts are the value's
    (what :func:`envloop_nb._runs.curve.ratio_parts` reads): ``task_score``, ``pass_rate``,
    ``solved`` stay the reward's. Memoized on the state."""
    if "dimensions" in state.data:
        done: dict[str, TaskMatrix] = state.data["dimensions"]
        return done
    import dataclasses

    import pandas as pd

    m = matrix(state)
    index = pd.Index(m.tasks)
    shape = m.requested.shape
    cells: dict[str, dict[str, Any]] = {}
    for j, job_id in enumerate(state.job_ids):
        if not m.per_task[j]:
            continue
        table = dimension_task_counts(state.con, job_id, threshold=state.threshold)
        names = np.asarray(table.column("name").to_numpy(zero_copy_only=False))
        tasks = np.asarray(table.column("task").to_numpy(zero_copy_only=False))
        thr = np.asarray(table.column("thr").is_valid())
        for name in dict.fromkeys(names.tolist()):
            if name == "reward":
                continue
            rows = names == name
            got = cells.setdefault(name, {c: np.zeros(shape) for c in
                                          ("scored", "passes", "nonbinary", "reward_sum")})  # fmt: skip
            got.setdefault("binary", np.zeros(len(state.job_ids), dtype=bool))
            at = index.get_indexer(tasks[rows])
            for c, source in (("scored", "scored"), ("passes", "passes"),
                              ("nonbinary", "nonbinary"), ("reward_sum", "vsum")):  # fmt: skip
                got[c][at, j] = np.asarray(table.column(source), dtype=np.float64)[rows]
            got["binary"][j] = bool(thr[rows].any()) or got["nonbinary"][:, j].sum() == 0
    out: dict[str, TaskMatrix] = {"reward": m}
    failure = state.policy == "failure"
    for name, got in cells.items():
        n = np.where(m.requested, m.k[None, :], 0).astype(np.float64) if failure else got["scored"]
        complete = m.requested & (True if failure else got["scored"] == m.k[None, :])
        out[name] = dataclasses.replace(
            m, scored=got["scored"], passes=got["passes"], nonbinary=got["nonbinary"],
            reward_sum=got["reward_sum"], binary=got["binary"], n=n, complete=complete,
        )  # fmt: skip
    state.data["dimensions"] = out
    return out


def _tags(state: RunState, tasks: NDArray[np.str_]) -> tuple[dict[str, str], ...]:
    """Each task's tags, from the first job (in step order) that requested it."""
    rows = state.con.execute(
        """SELECT task, arg_min(tags, list_position($jobs, job_id)) FROM tasks
           WHERE list_contains($jobs, job_id) GROUP BY task""",
        {"jobs": list(state.job_ids)},
    ).fetchall()
    found: dict[str, dict[str, str]] = {}
    for task, text in rows:
        value = json.loads(text) if isinstance(text, str) else text or {}
        found[task] = {str(a): str(b) for a, b in value.items()} if isinstance(value, dict) else {}
    return tuple(found.get(str(t), {}) for t in tasks)


def job_counts(m: TaskMatrix, j: int) -> dict[str, NDArray[Any]]:
    """Step ``j``'s per-task counts in the job's task order (when ``m.ordered[j]``): the
    columns :func:`envloop_nb._metrics.summary.summary_of_counts` reads."""
    rows = m.column("requested", j)
    out = {c: m.column(c, j)[rows] for c in ("scored", "invalid", "passes", "nonbinary",
                                             "reward_sum")}  # fmt: skip
    out["k"] = np.full(int(rows.sum()), m.k[j], dtype=np.int64)
    return out


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
                for r in range(size):  # a row at a time: 4x faster than one long bincount
                    out[done + r] = np.bincount(idx[r], minlength=t)
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
    return _quantiles(ratio_stats(num, den, state), state.confidence)


def ratio_stats(
    num: NDArray[np.float64], den: NDArray[np.float64], state: RunState
) -> NDArray[np.float64]:
    """``sum(num) / sum(den)`` per task resample (rows) and column; NaN where a resample
    has no denominator."""
    w = weights(state)
    top, bottom = w @ num, w @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        stats: NDArray[np.float64] = np.where(bottom > 0, top / bottom, np.nan)
    return stats


def _quantiles(
    stats: NDArray[np.float64], confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    alpha = (1 - confidence) / 2
    low = np.full(stats.shape[1], np.nan)
    high = np.full(stats.shape[1], np.nan)
    whole = np.isfinite(stats).all(axis=0)
    if whole.any():  # every resample has a value: all these columns at once
        low[whole], high[whole] = np.quantile(stats[:, whole], [alpha, 1 - alpha], axis=0)
    for j in np.flatnonzero(~whole):
        finite = stats[:, j][np.isfinite(stats[:, j])]
        if finite.size:
            low[j], high[j] = np.quantile(finite, [alpha, 1 - alpha])
    return low, high
