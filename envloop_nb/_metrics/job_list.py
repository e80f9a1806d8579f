"""The workspace's job list: one row per job with its headline score and coverage.

What the workspace panel (``ws.panel()``) lists and filters: the job's display name
(``ws.rename``; the job id when never renamed), model, method (the runner, else the
source format), status in the platform's states, the score with the coverage beside it,
attempts per task and when it was created. Each job's numbers are its
:func:`~envloop_nb._metrics.summary.job_summary` (missing stays unknown), so the list
and the job panel never disagree.

Statuses follow the platform: ``pending → running → completed / failed / cancelled``.
A cancelled job is shown as *terminated*: what it evaluated is kept and usable. A
completed job with a required manual dimension some attempt lacks is *awaiting
annotation* (:mod:`envloop_nb._annotations.manual`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import duckdb

from .._annotations.manual import AWAITING, awaiting_jobs
from .summary import job_summary

__all__ = ["STATUS_LABELS", "JobRow", "filter_jobs", "job_rows"]

#: The platform's job states, in lifecycle order, as the list shows them.
STATUS_LABELS = {
    "pending": "pending",
    "running": "running",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "terminated",
    AWAITING: AWAITING,
}


@dataclass(frozen=True)
class JobRow:
    """One job as the workspace list shows it. Immutable."""

    job_id: str
    name: str
    model: str | None
    method: str
    status: str
    score: float | None
    scored: int | None  # None: unknown (a run that reported only aggregate metrics)
    total: int
    complete_members: int | None
    total_members: int
    k: int
    created_at: dt.datetime | None
    loaded_at: dt.datetime

    @property
    def status_label(self) -> str:
        """The status as the platform words it (``cancelled`` is *terminated*)."""
        return STATUS_LABELS.get(self.status, self.status)


def job_rows(con: duckdb.DuckDBPyConnection) -> list[JobRow]:
    """Every job of the workspace, newest first (created, else loaded).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> _ = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> [(r.name, r.status_label, r.score, r.scored, r.total) for r in job_rows(ws.con)]
    [('job_abc0001', 'running', 0.6, 5, 6)]
    """
    rows = con.execute(
        """SELECT j.job_id, coalesce(n.name, j.job_id), j.model,
                  coalesce(j.runner, j.source_format), coalesce(j.status, 'completed'),
                  j.created_at, j.loaded_at, c.summary
           FROM jobs j LEFT JOIN job_names n USING (job_id)
           LEFT JOIN job_summary_cache c ON c.job_id = j.job_id AND c.loaded_at = j.loaded_at
           ORDER BY coalesce(j.created_at, j.loaded_at) DESC, j.job_id"""
    ).fetchall()
    waiting = awaiting_jobs(con)
    out = []
    for job_id, name, model, method, status, created, loaded, cached in rows:
        if status == "completed" and job_id in waiting:
            status = AWAITING
        numbers = json.loads(cached) if isinstance(cached, str) else _numbers(con, job_id, loaded)
        out.append(
            JobRow(
                job_id=job_id,
                name=name,
                model=model,
                method=method,
                status=status,
                score=numbers["score"],
                scored=numbers["scored"],
                total=numbers["total"],
                complete_members=numbers["complete_members"],
                total_members=numbers["total_members"],
                k=numbers["k"],
                created_at=created,
                loaded_at=loaded,
            )
        )
    return out


def _numbers(con: duckdb.DuckDBPyConnection, job_id: str, loaded: dt.datetime) -> dict[str, Any]:
    """The list's numbers of one job from its summary, kept in ``job_summary_cache`` (so
    the next list, in any process, reads them instead of recounting the job)."""
    try:
        s = job_summary(con, job_id)
    except ValueError:  # a metrics-only job without per-task counts: no summary here
        s = None
    numbers: dict[str, Any] = {
        "score": None if s is None else s.score,
        "scored": 0 if s is None else s.scored,
        "total": 0 if s is None else s.total,
        "complete_members": 0 if s is None else s.complete_members,
        "total_members": 0 if s is None else s.total_members,
        "k": 0 if s is None else s.k,
    }
    with contextlib.suppress(duckdb.Error):  # e.g. inside a failed transaction: recount later
        con.execute(
            "INSERT INTO job_summary_cache VALUES (?, ?, ?)", [job_id, loaded, json.dumps(numbers)]
        )
    return numbers


def filter_jobs(
    rows: Sequence[JobRow],
    *,
    search: str = "",
    status: str | None = None,
    order: Literal["newest", "oldest"] = "newest",
) -> list[JobRow]:
    """The rows whose name, id or model contains ``search`` (ignoring case), in
    ``status`` (a platform state; ``None``: all), sorted by created time.

    Examples
    --------
    >>> t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    >>> a = JobRow("a", "base", "m1", "table", "completed", 0.5, 1, 2, 0, 1, 2, t, t)
    >>> b = JobRow("b", "sft", "m2", "table", "cancelled", None, 0, 2, 0, 1, 2,
    ...            t + dt.timedelta(days=1), t)
    >>> [r.name for r in filter_jobs([a, b])], [r.name for r in filter_jobs([a, b], order="oldest")]
    (['sft', 'base'], ['base', 'sft'])
    >>> [r.name for r in filter_jobs([a, b], search="M2")], filter_jobs([a, b], status="failed")
    (['sft'], [])
    """
    needle = search.strip().casefold()

    def keep(r: JobRow) -> bool:
        if status is not None and r.status != status:
            return False
        text = " ".join(str(x) for x in (r.name, r.job_id, r.model or "")).casefold()
        return needle in text

    def when(r: JobRow) -> Any:
        return (r.created_at or r.loaded_at).timestamp()

    chosen = [r for r in rows if keep(r)]
    chosen.sort(key=lambda r: (when(r), r.job_id), reverse=order == "newest")
    return chosen
