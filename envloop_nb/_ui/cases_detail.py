"""The detail of one case: an attempt in full, or a task with all its attempts (plain dicts).

The Cases tab shows them through :func:`envloop_nb._present.cases_html.attempt_detail_html`
and :func:`~envloop_nb._present.cases_html.task_detail_html`.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from .._types import Policy

if TYPE_CHECKING:
    import duckdb

__all__ = ["attempt_detail", "task_detail"]


def attempt_detail(
    con: duckdb.DuckDBPyConnection, job_id: str, task: str, attempt: int
) -> dict[str, Any]:
    """Everything about one attempt: its row, its score dimensions, decoded JSON fields.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> d = attempt_detail(job.con, job.id, "B", 1)
    >>> d["reward"], d["dimensions"], d["artifacts"][0]["name"]
    (1.0, {'style': 0.8, 'tests_passed': 1.0}, 'diff.patch')
    """
    cur = con.execute(
        "SELECT * EXCLUDE (job_id) FROM attempts WHERE job_id = ? AND task = ? AND attempt = ?",
        [job_id, task, int(attempt)],
    )
    names = [d[0] for d in cur.description]
    row = cur.fetchone()
    if row is None:
        raise KeyError(f"job {job_id!r} has no attempt {attempt} of task {task!r}")
    detail = dict(zip(names, row, strict=True))
    for key in ("artifacts", "extra"):
        if isinstance(detail.get(key), str):
            with contextlib.suppress(ValueError):
                detail[key] = json.loads(detail[key])
    detail["dimensions"] = dict(
        con.execute(
            "SELECT name, value FROM dimensions WHERE job_id = ? AND task = ? AND attempt = ? "
            "ORDER BY name",
            [job_id, task, int(attempt)],
        ).fetchall()
    )
    return detail


def task_detail(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    task: str,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> dict[str, Any]:
    """One task: its tags, per-task numbers and every attempt of record (a small frame)."""
    from .._metrics.passk_views import samples

    row = con.execute(
        "SELECT tags, digest FROM tasks WHERE job_id = ? AND task = ?", [job_id, task]
    ).fetchone()
    if row is None:
        raise KeyError(f"job {job_id!r} has no task {task!r}")
    per_task = samples(con, job_id, policy=policy, threshold=threshold)
    numbers = per_task[per_task["task"] == task].iloc[0].to_dict()
    attempts = con.execute(
        """SELECT attempt, status, reward, exit_code, turns,
                  coalesce(input_tokens, 0) + coalesce(output_tokens, 0) AS tokens, duration_s,
                  left(output, 200) AS output, left(error, 200) AS error
           FROM attempts WHERE job_id = ? AND task = ? ORDER BY attempt""",
        [job_id, task],
    ).df()
    return {
        "task": task,
        "tags": json.loads(row[0]) if row[0] else {},
        "digest": row[1],
        "numbers": numbers,
        "attempts": attempts,
        "k": int(numbers["n"]),
    }
