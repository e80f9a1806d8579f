"""Tasks over training: the tasks × steps matrix, and which tasks were learned, forgotten,
or flip.

A task is *solved* at a step when it is completely scored there and its pass rate (the
mean reward for non-binary rewards) is at least the run's ``solved_at`` (0.5: a majority
of attempts pass), as the comparison's transitions count it; a step where the task is not
complete (or not requested) is *unknown* — never a failure — and is skipped: "consecutive"
means consecutive among the steps where the task's state is known.

Per task (:func:`task_states`):

* ``first_stable`` — the first step from which the task stays solved at every later known
  step, over at least ``stable`` (2) known steps: *solved stably*;
* ``learned_at`` — ``first_stable`` when the task was unsolved at some earlier known step
  (:func:`learned`; a task solved from the first step was not learned during the run);
* ``forgotten_at`` — the first step at which the task failed after being solved at
  ``stable`` (2) or more consecutive known steps (:func:`forgotten`; ``times_forgotten``
  counts every such fall);
* ``flips`` — how often the state changes between consecutive known steps; *flaky* with
  ``flips >= 3`` (:func:`flaky`).

Everything is vectorized over tasks (numpy over the run's ``tasks × steps`` matrix, one
pass per step). :func:`task_matrix` orders the rows so the structure shows — solved from
the start, learned (by step), forgotten (by step), flaky, never solved stably (by mean
pass rate) — and :func:`aggregate` reduces it to at most ``max_tasks × max_steps`` blocks
of contiguous rows and steps before anything reaches a browser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._errors import EnvloopError
from .assemble import RunState, Step, mark
from .pertask import TaskMatrix, group_values, matrix

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = ["STATE_COLUMNS", "aggregate", "attempts_at", "flaky", "forgotten", "learned", "no_tasks", "scan", "task_matrix",
           "task_states"]  # fmt: skip

STATE_COLUMNS = ("task", "subset", "category", "first_stable", "learned_at", "forgotten_at",
                 "times_forgotten", "flips", "solved_steps", "known_steps", "mean_pass_rate")  # fmt: skip
_CATEGORIES = ("solved from the start", "learned", "forgotten", "flaky", "never solved stably")
Value = Literal["pass_rate", "solved", "score"]


def scan(solved: NDArray[np.float64], stable: int, flaky_flips: int) -> dict[str, Any]:
    """Per task: first stable step index, learned index, forgotten index and count, flips."""
    t, j_count = solved.shape
    good, bad = solved == 1, solved == 0
    # from each step on: any known failure, and how many known solved steps
    bad_after = np.flip(np.logical_or.accumulate(np.flip(bad, 1), axis=1), 1)
    good_after = np.flip(np.cumsum(np.flip(good, 1), axis=1), 1)
    stable_from = good & ~bad_after & (good_after >= stable)
    has_stable = stable_from.any(axis=1)
    first = np.where(has_stable, stable_from.argmax(axis=1), -1)
    bad_before = np.logical_or.accumulate(bad, axis=1)
    earlier_bad = np.zeros(t, dtype=bool)
    rows = np.flatnonzero(has_stable)
    earlier_bad[rows] = bad_before[rows, first[rows]]  # the first stable step is solved
    run = np.zeros(t, dtype=np.int64)
    last = np.full(t, np.nan)
    forgotten_at = np.full(t, -1)
    times = np.zeros(t, dtype=np.int64)
    flips = np.zeros(t, dtype=np.int64)
    for j in range(j_count):
        g, b = good[:, j], bad[:, j]
        fell = b & (run >= stable)
        forgotten_at = np.where(fell & (forgotten_at < 0), j, forgotten_at)
        times += fell
        run = np.where(g, run + 1, np.where(b, 0, run))
        known = g | b
        flips += known & ~np.isnan(last) & (solved[:, j] != last)
        last = np.where(known, solved[:, j], last)
    return {
        "first": first,
        "learned": np.where(has_stable & earlier_bad, first, -1),
        "forgotten": forgotten_at,
        "times": times,
        "flips": flips,
        "flaky": flips >= flaky_flips,
    }


def task_states(state: RunState, *, stable: int = 2, flaky_flips: int = 3) -> pd.DataFrame:
    """One row per task of the run: :data:`STATE_COLUMNS` (module docstring), in the
    matrix's order (:func:`task_matrix`)."""
    import pandas as pd

    if stable < 1 or flaky_flips < 1:
        raise ValueError(f"stable and flaky_flips must be >= 1, got {stable}, {flaky_flips}")
    key = ("states", stable, flaky_flips)
    if key not in state.data:
        m = matrix(state)
        found = scan(m.solved, stable, flaky_flips)
        steps = np.array(state.steps, dtype=object)

        def at(idx: NDArray[np.int64]) -> pd.Series:
            return pd.Series([steps[i] if i >= 0 else None for i in idx], dtype=object)

        with np.errstate(invalid="ignore"):
            mean = (
                np.nanmean(np.where(np.isnan(m.solved), np.nan, _rate(m)), axis=1)
                if m.solved.size
                else np.zeros(0)
            )
        category = np.full(len(m.tasks), _CATEGORIES[4], dtype=object)
        category[found["flaky"]] = _CATEGORIES[3]
        category[found["forgotten"] >= 0] = _CATEGORIES[2]
        category[found["learned"] >= 0] = _CATEGORIES[1]
        start = (found["first"] >= 0) & (found["learned"] < 0) & (found["forgotten"] < 0)
        category[start] = _CATEGORIES[0]
        frame = pd.DataFrame(
            {
                "task": m.tasks,
                "subset": group_values(m, "subset"),
                "category": category,
                "first_stable": at(found["first"]),
                "learned_at": at(found["learned"]),
                "forgotten_at": at(found["forgotten"]),
                "times_forgotten": found["times"],
                "flips": found["flips"],
                "solved_steps": (m.solved == 1).sum(axis=1),
                "known_steps": (~np.isnan(m.solved)).sum(axis=1),
                "mean_pass_rate": mean,
            }
        )
        rank = frame["category"].map({c: i for i, c in enumerate(_CATEGORIES)})
        when = frame["learned_at"].where(rank == 1, frame["forgotten_at"].where(rank == 2))
        order = pd.DataFrame({"rank": rank, "when": pd.to_numeric(when).fillna(0),
                              "mean": -frame["mean_pass_rate"].fillna(-1), "task": frame["task"]})  # fmt: skip
        idx = order.sort_values(["rank", "when", "mean", "task"], kind="stable").index
        state.data[key] = frame.loc[idx].reset_index(drop=True)
    out: pd.DataFrame = state.data[key].copy()
    out.attrs["mark"] = mark(state)
    return out


def _rate(m: TaskMatrix) -> NDArray[np.float64]:
    """Pass rate per cell (mean reward for a non-binary step), NaN where unknown."""
    return np.where(m.binary[None, :], m.pass_rate, np.where(m.complete, m.task_score, np.nan))


def no_tasks(state: RunState) -> str | None:
    """Why the run's task lists are empty when no step holds per-task results (every step
    an aggregate-only source: lm-eval results without samples, MLflow metrics): then an
    empty ``learned()`` means *not assessed*, never *none learned*; else ``None``."""
    if len(matrix(state).tasks):
        return None
    return (
        "not assessed: no step holds per-task results (its sources state aggregate numbers "
        "only), so no task can be followed over training"
    )


def _listed(state: RunState, frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reset_index(drop=True)
    reason = no_tasks(state)
    if reason is not None:
        frame.attrs["not_assessed"] = reason
    return frame


def learned(state: RunState, *, stable: int = 2) -> pd.DataFrame:
    """The tasks learned during the run (``learned_at`` set), by step then name; with
    ``attrs["not_assessed"]`` when no step has per-task results (:func:`no_tasks`)."""
    states = task_states(state, stable=stable)
    out = states[states["learned_at"].notna()]
    return _listed(state, out.sort_values(["learned_at", "task"], kind="stable"))


def forgotten(state: RunState, *, stable: int = 2) -> pd.DataFrame:
    """The tasks failed after ``stable`` consecutive solved steps, by step then name."""
    states = task_states(state, stable=stable)
    out = states[states["forgotten_at"].notna()]
    return _listed(state, out.sort_values(["forgotten_at", "task"], kind="stable"))


def flaky(state: RunState, *, flips: int = 3) -> pd.DataFrame:
    """The tasks whose solved state changed at least ``flips`` times, most flips first."""
    states = task_states(state, flaky_flips=flips)
    out = states[states["flips"] >= flips]
    return _listed(
        state, out.sort_values(["flips", "task"], ascending=[False, True], kind="stable")
    )


def task_matrix(state: RunState, *, value: Value = "pass_rate") -> pd.DataFrame:
    """Tasks × steps: the pass rate (``"pass_rate"``; the mean reward for non-binary
    rewards), ``"solved"`` (1 / 0) or the mean reward (``"score"``); NaN where the task is
    not completely scored (``"score"``: nothing scored). Rows in the order of
    :func:`task_states`, columns the steps in order."""
    import pandas as pd

    m = matrix(state)
    cells = {"pass_rate": _rate(m), "solved": m.solved, "score": m.task_score}
    if value not in cells:
        raise ValueError(f"value must be 'pass_rate', 'solved' or 'score', got {value!r}")
    order = task_states(state)["task"]
    where = {t: i for i, t in enumerate(m.tasks)}
    rows = np.array([where[t] for t in order], dtype=np.int64)
    frame = pd.DataFrame(cells[value][rows], index=pd.Index(order, name="task"),
                         columns=pd.Index(list(state.steps), name="step"))  # fmt: skip
    frame.attrs["mark"] = mark(state)
    return frame


def aggregate(
    state: RunState, *, max_tasks: int = 200, max_steps: int = 100, value: Value = "pass_rate"
) -> pd.DataFrame:
    """The matrix in at most ``max_tasks × max_steps`` blocks of contiguous rows (in the
    matrix's order) and steps: one row per block with ``task_block``, ``step_block``,
    ``first_task``, ``last_task``, ``tasks``, ``first_step``, ``last_step``, ``steps``,
    ``mean`` (over the known cells) and ``known`` (their share). A run that fits is one
    block per cell."""
    import pandas as pd

    if max_tasks < 1 or max_steps < 1:
        raise ValueError(f"max_tasks and max_steps must be >= 1, got {max_tasks}, {max_steps}")
    full = task_matrix(state, value=value)
    values = full.to_numpy(dtype=float)
    t, j = values.shape
    tb = np.array_split(np.arange(t), min(t, max_tasks)) if t else []
    sb = np.array_split(np.arange(j), min(j, max_steps)) if j else []
    known = ~np.isnan(values)
    filled = np.where(known, values, 0.0)
    r_starts = np.array([b[0] for b in tb], dtype=np.int64)
    c_starts = np.array([b[0] for b in sb], dtype=np.int64)
    rows: list[dict[str, Any]] = []
    if t and j:
        sums = np.add.reduceat(np.add.reduceat(filled, r_starts, axis=0), c_starts, axis=1)
        counts = np.add.reduceat(
            np.add.reduceat(known.astype(np.int64), r_starts, axis=0), c_starts, axis=1
        )
        tasks, steps = list(full.index), list(full.columns)
        for a, rb in enumerate(tb):
            for b, cb in enumerate(sb):
                size = len(rb) * len(cb)
                rows.append({"task_block": a, "step_block": b, "first_task": tasks[rb[0]],
                             "last_task": tasks[rb[-1]], "tasks": len(rb), "first_step": steps[cb[0]],
                             "last_step": steps[cb[-1]], "steps": len(cb),
                             "mean": sums[a, b] / counts[a, b] if counts[a, b] else None,
                             "known": counts[a, b] / size})  # fmt: skip
    frame = pd.DataFrame(rows, columns=["task_block", "step_block", "first_task", "last_task",
                                        "tasks", "first_step", "last_step", "steps", "mean",
                                        "known"])  # fmt: skip
    frame.attrs["mark"] = mark(state)
    return frame


def attempts_at(state: RunState, task: str, step: Step) -> pd.DataFrame:
    """The attempts of ``task`` at ``step`` (a cell of the matrix): that job's rows of
    ``attempts`` for the task (``job.attempts()``'s columns), by attempt."""
    from .assemble import step_index

    job_id = state.job_ids[step_index(state, step)]
    m = matrix(state)
    if task not in set(m.tasks.tolist()):
        raise EnvloopError(f"task {task!r} is in no job of this run")
    from .._store.frames import to_frame

    frame: pd.DataFrame = to_frame(
        state.con.execute(
            "SELECT * FROM attempts WHERE job_id = ? AND task = ? ORDER BY attempt",
            [job_id, task],
        )
    )
    return frame
