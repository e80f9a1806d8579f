"""Turning DuckDB results into pandas or polars frames, through Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._types import FrameKind

if TYPE_CHECKING:
    import duckdb

__all__ = ["attempts_frame", "to_frame"]


def to_frame(
    rel: duckdb.DuckDBPyRelation | duckdb.DuckDBPyConnection, frame: FrameKind = "pandas"
) -> Any:
    """Materialize a relation (or an executed query's result) as a pandas (default) or
    polars frame via Arrow.

    Examples
    --------
    >>> import duckdb
    >>> to_frame(duckdb.connect().sql("SELECT 1 AS a"), "polars").shape
    (1, 1)
    """
    table = rel.to_arrow_table()
    if frame == "pandas":
        return table.to_pandas()
    if frame == "polars":
        import polars as pl

        return pl.from_arrow(table)
    raise ValueError(f"frame must be 'pandas' or 'polars', got {frame!r}")


def attempts_frame(con: duckdb.DuckDBPyConnection, job_id: str, frame: FrameKind = "pandas") -> Any:
    """One row per attempt of record of a job (dispatched attempts only), in task order.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> attempts_frame(ws.con, job.id)[["task", "attempt"]].values.tolist()
    [['A', 1], ['A', 2], ['B', 1], ['B', 2], ['C', 1], ['C', 2]]
    """
    from .ref import require_attempts

    require_attempts(con, job_id, "the attempts table")
    result = con.execute(
        """SELECT a.* EXCLUDE (job_id) FROM attempts a
           JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
           WHERE a.job_id = ? ORDER BY t.position, a.attempt""",
        [job_id],
    )
    return to_frame(result, frame)
