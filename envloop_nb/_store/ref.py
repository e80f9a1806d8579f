"""A job as the lower floors see it: a connection and an id (the ``JobRef`` protocol).

Workflow functions (buckets, exports, datasets, diagnosis, panels) take a ``JobRef``,
never the ``Job`` facade: ``Job`` satisfies the protocol and binds those functions as
its methods (great_tables' ``GTSelf`` pattern). Metric functions take ``(con, job_id)``.
``WorkspaceRef`` is the same idea for a workspace: what the lower floors need of one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "JobRef",
    "WorkspaceRef",
    "job_info",
    "job_k",
    "metrics_only",
    "require_attempts",
    "require_task_table",
    "summarised",
]


class JobRef(Protocol):
    """What a workflow function needs of a job: its workspace connection and its id."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...

    @property
    def id(self) -> str: ...


class WorkspaceRef(Protocol):
    """What a lower floor needs of a workspace: its connection."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...


_JSON_COLUMNS = ("profile_params", "labels", "platform_metrics", "extra")


def job_info(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Any]:
    """The job's row in ``jobs`` as a dict (JSON columns decoded).

    Raises ``KeyError`` when the workspace holds no such job.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> job_info(ws.con, job.id)["attempts"]
    2
    """
    cur = con.execute("SELECT * FROM jobs WHERE job_id = ?", [job_id])
    names = [d[0] for d in cur.description or ()]
    row = cur.fetchone()
    if row is None:
        raise KeyError(f"job {job_id!r} is no longer in the workspace")
    info = dict(zip(names, row, strict=True))
    for key in _JSON_COLUMNS:
        if isinstance(info.get(key), str):
            info[key] = json.loads(info[key])
    return info


def job_k(con: duckdb.DuckDBPyConnection, job_id: str) -> int:
    """Attempts requested per task (``ValueError`` when there is no such job).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> job_k(ws.con, job.id)
    2
    """
    row = con.execute("SELECT attempts FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    if row is None:
        raise ValueError(f"no job {job_id!r} in this workspace")
    return int(row[0])


def summarised(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Any] | None:
    """How a *summarised* job was reduced (``jobs.extra.summarised``: ``engine``, ``where``
    the attempts stayed, ``thresholds`` counted), or None for a job with its attempts.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> summarised(ws.con, job.id) is None
    True
    """
    row = con.execute("SELECT extra->'summarised' FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    if row is None or row[0] is None:
        return None
    value = json.loads(row[0]) if isinstance(row[0], str) else row[0]
    return value if isinstance(value, dict) else None


def require_attempts(con: duckdb.DuckDBPyConnection, job_id: str, what: str) -> None:
    """Refuse an attempt-level view (``what``) of a summarised job, saying where its
    attempts are and what works without them.

    Raises
    ------
    ValueError
        The job is summarised: only its per-task counts are in the workspace.
    """
    info = summarised(con, job_id)
    if info is None:
        return
    require_task_table(con, job_id, what)  # a metrics-only job: no per-task counts either
    where = info.get("where") or f"the {info.get('engine', 'source')} reduction"
    raise ValueError(
        f"job {job_id!r} is summarised: its attempts stayed in {where}, only the per-task "
        f"counts came into the workspace, so {what} is not available. Summary, samples, "
        "curve, groups by tag, intervals, buckets by task and comparisons work."
    )


def metrics_only(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Any] | None:
    """How a *metrics-only* summarised job was read (an MLflow run that holds only
    aggregate metrics: no task, no per-task count), or None for any other job."""
    info = summarised(con, job_id)
    return info if info is not None and info.get("metrics_only") is True else None


def require_task_table(
    con: duckdb.DuckDBPyConnection, job_id: str, what: str = "a per-task view"
) -> None:
    """Refuse a per-task view (``what``) of a metrics-only job.

    Raises
    ------
    ValueError
        The job holds only the run's aggregate metrics.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> require_task_table(ws.con, job.id) is None
    True
    """
    info = metrics_only(con, job_id)
    if info is None:
        return
    where = info.get("where") or "its source"
    if info.get("engine") == "lm-eval":
        raise ValueError(
            f"job {job_id!r} comes from {where}: lm-eval results without samples hold only "
            f"per-task aggregates, no doc, so {what} is not available (run lm_eval with "
            "--log_samples). Its summary, groups (by='subset', 'tag:group', 'dimension') "
            "and intervals give the file's own numbers."
        )
    raise ValueError(
        f"job {job_id!r} comes from {where}: the run holds only aggregate metrics; no "
        f"per-task table, so {what} is not available. Its summary (the run's own "
        "numbers) works; comparisons mark it not comparable on its tasks."
    )
