"""The record a comparison's functions take: connection, jobs, baseline and options.

``with_baseline`` is :func:`dataclasses.replace`: the new state shares the
baseline-independent results (per-task rows, groups, the guard) and starts the
baseline-dependent ones (paired statistics, strengths) afresh.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError
from .._metrics.counts import check_options
from .._types import Policy

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "MAX_JOBS",
    "PALETTE",
    "CompareState",
    "JobHandle",
    "colors",
    "job_ref",
    "others",
    "pandas",
    "with_baseline",
]


class _LazyPandas:
    """pandas, imported on first use: ``import envloop_nb`` stays cheap."""

    def __getattr__(self, name: str) -> Any:
        import pandas

        return getattr(pandas, name)


#: ``pandas`` for the comparison modules, imported on first attribute access.
pandas: Any = _LazyPandas()

MAX_JOBS = 5
#: One colour per job, keyed by the job's position in the comparison (never by baseline).
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2")


@dataclass(frozen=True)
class JobHandle:
    """A compared job as a ``JobRef``: the connection and the id (for workflow functions)."""

    con: duckdb.DuckDBPyConnection
    id: str


@dataclass(frozen=True, eq=False)
class CompareState:
    """A comparison of 2-5 jobs against a baseline; every ``_compare`` function takes one.

    ``data`` memoizes what does not depend on the baseline and is shared by the states
    :func:`with_baseline` derives; ``views`` memoizes the rest, per state.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
    >>> state = CompareState(ws.con, (a.id, "b"), "b")
    >>> with_baseline(state, a.id).baseline, others(state)
    ('job_abc0001', ['job_abc0001'])
    """

    con: duckdb.DuckDBPyConnection
    job_ids: tuple[str, ...]
    baseline: str
    policy: Policy = "unknown"
    threshold: float | None = None
    solved_at: float = 0.5
    resamples: int = 2000
    seed: int = 0
    confidence: float = 0.95
    data: dict[Any, Any] = field(default_factory=dict, repr=False)
    views: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        check_options(self.policy, self.threshold)
        if not 0 < self.solved_at <= 1:
            raise ValueError(f"solved_at must be in (0, 1], got {self.solved_at!r}")


def others(state: CompareState) -> list[str]:
    """Every job id but the baseline, in comparison order."""
    return [j for j in state.job_ids if j != state.baseline]


def colors(state: CompareState) -> dict[str, str]:
    """Job id -> colour, fixed by job order."""
    return {jid: PALETTE[i] for i, jid in enumerate(state.job_ids)}


def job_ref(state: CompareState, job_id: str) -> JobHandle:
    """One compared job as a ``JobRef``."""
    return JobHandle(state.con, job_id)


def with_baseline(state: CompareState, baseline: str) -> CompareState:
    """The same comparison against another of its jobs (shares the baseline-free results)."""
    if baseline not in state.job_ids:
        raise EnvloopError(
            f"baseline {baseline!r} is not one of the compared jobs {list(state.job_ids)}"
        )
    return dataclasses.replace(state, baseline=baseline)
