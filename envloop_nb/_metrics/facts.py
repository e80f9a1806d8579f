"""Small facts about one job that its views ask for besides the metrics.

The job's summary with the source's own note (which policy reproduces Harbor's
``result.json``), the names of its score dimensions, the range of its rewards and the
time it was loaded (a cache key: a reloaded job is recomputed). All take
``(con, job_id)``; the ``Job`` facade and the panels call them alike.

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> dimension_names(job.con, job.id), has_dimensions(job.con, job.id)
(['style', 'tests_passed'], True)
>>> reward_range(job.con, job.id)
(0.0, 1.0)
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._annotations.manual import AWAITING, awaiting
from .._store.ref import job_info
from .._types import Policy
from .summary import JobSummary, job_summary

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "awaiting_note",
    "current_info",
    "dimension_names",
    "has_dimensions",
    "loaded_at",
    "noted_summary",
    "reward_range",
    "shown_info",
]


def noted_summary(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> JobSummary:
    """The job's summary (:func:`~envloop_nb._metrics.summary.job_summary`) with its note.

    A Harbor job's summary says which policy reproduces Harbor's own ``result.json``
    (it depends on the Harbor version, see :mod:`envloop_nb._metrics.harbor`); other
    sources carry no note.
    """
    s = job_summary(con, job_id, policy=policy, threshold=threshold)
    row = con.execute("SELECT source_format, extra FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    if row is not None and row[0] == "harbor":
        from .harbor import summary_note

        extra = json.loads(row[1]) if isinstance(row[1], str) else row[1]
        harbor = extra.get("harbor") if isinstance(extra, dict) else None
        s = replace(s, note=summary_note(harbor if isinstance(harbor, dict) else None))
    waiting = awaiting_note(con, job_id)
    if waiting:
        s = replace(s, note=waiting if s.note is None else f"{s.note}\n{waiting}")
    return s


def current_info(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Any]:
    """The job's row (``job_info``) with its status as it stands: a completed job whose
    required manual dimension lacks annotations is ``"awaiting annotation"``
    (``job.info``, ``ws.jobs()`` and the workspace list agree)."""
    info = job_info(con, job_id)
    if (info.get("status") or "completed") == "completed" and awaiting(con, job_id):
        info["status"] = AWAITING
    return info


def shown_info(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Any]:
    """The job's row as its views show it: :func:`current_info`, and a job of another
    state says "· awaiting annotation" too while a required annotation is missing."""
    info = current_info(con, job_id)
    if info.get("status") != AWAITING and awaiting(con, job_id):
        info["status"] = f"{info.get('status')} · {AWAITING}"
    return info


def awaiting_note(con: duckdb.DuckDBPyConnection, job_id: str) -> str | None:
    """``"awaiting annotation: correct 37/200 annotated"`` while a required manual
    dimension lacks annotations, else None."""
    waiting = awaiting(con, job_id)
    if not waiting:
        return None
    return "awaiting annotation: " + "; ".join(p.describe() for p in waiting)


def dimension_names(con: duckdb.DuckDBPyConnection, job_id: str) -> list[str]:
    """Names of the job's score dimensions, sorted."""
    rows = con.execute(
        "SELECT DISTINCT name FROM dimensions WHERE job_id = ? ORDER BY name", [job_id]
    ).fetchall()
    return [r[0] for r in rows]


def has_dimensions(con: duckdb.DuckDBPyConnection, job_id: str) -> bool:
    """Whether the job has scores beyond the reward: named dimensions or a composite."""
    row = con.execute(
        """SELECT (SELECT count(*) FROM dimensions WHERE job_id = $j) > 0
               OR (SELECT count(composite) FROM attempts WHERE job_id = $j) > 0""",
        {"j": job_id},
    ).fetchone()
    return bool(row and row[0])


def reward_range(con: duckdb.DuckDBPyConnection, job_id: str) -> tuple[float | None, float | None]:
    """Lowest and highest reward of the job's attempts (``None`` when none is scored)."""
    row = con.execute(
        "SELECT min(reward), max(reward) FROM attempts WHERE job_id = ?", [job_id]
    ).fetchone()
    lo, hi = row if row is not None else (None, None)
    return (None if lo is None else float(lo), None if hi is None else float(hi))


def loaded_at(con: duckdb.DuckDBPyConnection, job_id: str) -> Any:
    """When the job was (last) loaded; ``None`` when it is no longer in the workspace."""
    row = con.execute("SELECT loaded_at FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    return row[0] if row else None
