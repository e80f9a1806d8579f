"""Turning DuckDB results into pandas or polars frames, through Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._types import FrameKind

if TYPE_CHECKING:
    import duckdb

__all__ = ["to_frame"]


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
