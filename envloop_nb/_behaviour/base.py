"""What every behaviour statistic shares: the attempts it reads and what a pass is.

Definitions (the same in every module of this room):

*Attempts with steps*
    The job's attempts of record that have at least one row in ``steps``. An attempt
    without steps is in none of the statistics (its count is :attr:`Basis.without_steps`);
    a job without steps gives empty results, never zeros.
*Outcome*
    The project's pass: ``reward = 1``, or ``reward >= threshold`` with a threshold
    (:func:`envloop_nb._metrics.counts.pass_sql`). An attempt without a reward is *not
    scored*: left out of every pass-rate denominator and counted on its own
    (:attr:`Basis.unscored`), never a failure.
*Error step*
    A row with ``is_error`` set or of kind ``error`` (a harness-recorded error).
*Replayed context*
    Rows marked ``copied`` (ATIF ``is_copied_context``) repeat an earlier context: they
    are left out of the tool, n-gram and loop statistics (the agent did not act there).
*Intervals*
    Rates of attempts (pass rates) and of tool results (error rates) cluster in tasks, so
    their intervals are the project's task bootstrap
    (:func:`envloop_nb._metrics.uncertainty.bootstrap_ratio_cis`: percentile intervals,
    tasks resampled with replacement, attempts and their steps staying with their task,
    every rate of one result sharing the same draws).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._metrics.counts import check_options
from .._metrics.uncertainty import Interval, bootstrap_ratio_cis
from .summary import ERROR_SQL, attempt_steps, outcome_sql, outcomes

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = [
    "ERROR_SQL",
    "Basis",
    "basis",
    "interval_columns",
    "outcome_sql",
    "task_intervals",
]


@dataclass(frozen=True)
class Basis:
    """The attempts a behaviour result is about.

    Attributes
    ----------
    attempts
        Attempts of record with steps.
    passed, failed, unscored
        Of those: passes, failures, attempts without a reward (not in pass rates).
    without_steps
        The job's attempts of record that have no step (in no statistic).
    tasks
        Tasks with at least one attempt with steps (the bootstrap's units).
    threshold
        The pass threshold (None: a pass is reward 1).
    """

    attempts: int
    passed: int
    failed: int
    unscored: int
    without_steps: int
    tasks: int
    threshold: float | None

    @property
    def scored(self) -> int:
        """Attempts with steps and a reward."""
        return self.passed + self.failed

    def __str__(self) -> str:
        if not self.attempts:
            return "no steps recorded"
        text = (
            f"{self.attempts:,} attempts with steps in {self.tasks:,} tasks: "
            f"{self.passed:,} passed, {self.failed:,} failed"
        )
        if self.unscored:
            text += f", {self.unscored:,} not scored (left out of pass rates)"
        if self.without_steps:
            text += f"; {self.without_steps:,} attempts without steps left out"
        return text


def basis(con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None) -> Basis:
    """The :class:`Basis` of the job's behaviour statistics under ``threshold``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> str(basis(job.con, job.id, None))
    'no steps recorded'
    """
    import numpy as np

    check_options("unknown", threshold)
    found = outcomes(con, job_id, threshold)
    passed, task = found.passed, attempt_steps(con, job_id).column("t").to_numpy()
    mine = passed >= -1  # attempts of record with steps
    n = int(mine.sum())
    p, f, u = (int((passed == v).sum()) for v in (1, 0, -1))
    tasks = int(np.unique(task[mine]).size)
    return Basis(n, p, f, u, found.of_record - n, tasks, threshold)


def task_intervals(
    per_task: pd.DataFrame,
    *,
    key: str,
    rates: Sequence[tuple[str, str, str]],
    tasks: Sequence[str],
    resamples: int,
    seed: int,
    confidence: float,
) -> dict[tuple[Any, str], Interval]:
    """Task-bootstrap intervals of several rates per group, sharing one set of draws.

    ``per_task`` has one row per (``key`` group, task) with count columns; each rate is
    ``(name, numerator column, denominator column)``; ``tasks`` are the resampled units
    (a task absent from a group's rows counts 0 there). Returns ``(group, name)`` →
    :class:`Interval` (estimate: the group's pooled rate; None without a denominator).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"g": ["x", "x"], "task": ["A", "B"], "n": [1, 0], "d": [2, 1]})
    >>> iv = task_intervals(f, key="g", rates=[("r", "n", "d")], tasks=["A", "B", "C"],
    ...                     resamples=200, seed=0, confidence=0.95)
    >>> round(iv[("x", "r")].estimate, 4)
    0.3333
    """
    import numpy as np

    order = {t: i for i, t in enumerate(tasks)}
    groups = list(dict.fromkeys(per_task[key].tolist()))
    at = per_task["task"].map(order).to_numpy()
    if len(per_task) and np.isnan(at.astype(float)).any():
        raise ValueError("per_task names a task that is not among the resampled tasks")
    where = {g: (per_task[key] == g).to_numpy() for g in groups}
    pairs = []
    for g in groups:
        rows = where[g]
        for name, num, den in rates:
            n_vec = np.zeros(len(tasks))
            d_vec = np.zeros(len(tasks))
            np.add.at(n_vec, at[rows].astype(int), per_task.loc[rows, num].to_numpy(float))
            np.add.at(d_vec, at[rows].astype(int), per_task.loc[rows, den].to_numpy(float))
            pairs.append((n_vec, d_vec, name))
    found = bootstrap_ratio_cis(pairs, resamples=resamples, seed=seed, confidence=confidence)
    keys = [(g, name) for g in groups for name, _, _ in rates]
    return dict(zip(keys, found, strict=True))


def interval_columns(
    frame: pd.DataFrame, ivs: dict[tuple[Any, str], Interval], *, key: str, name: str
) -> pd.DataFrame:
    """``frame`` with ``<name>``, ``<name>_low``, ``<name>_high`` from the intervals of
    rate ``name`` per row's ``key`` (missing stays missing, never 0)."""
    out = frame.copy()
    for suffix, attr in (("", "estimate"), ("_low", "low"), ("_high", "high")):
        values = [getattr(ivs[(g, name)], attr) if (g, name) in ivs else None for g in out[key]]
        out[f"{name}{suffix}"] = [float("nan") if v is None else float(v) for v in values]
    return out
