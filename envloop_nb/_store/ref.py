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

__all__ = ["JobRef", "WorkspaceRef", "job_info", "job_k"]


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
