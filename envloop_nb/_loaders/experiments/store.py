"""Write a checked experiment document into the workspace: one transaction, all or nothing.

Reloading a newer export of an experiment already in the workspace merges, it does not
start over:

* the experiment row and its listed evaluators are replaced (evaluators added in this
  workspace — notebook functions — are kept);
* cases are replaced by ``trace_id``; cases the file does not hold (appended here) stay;
* result rows are replaced by ``(trace_id, evaluator, run)``; runs made here that the
  file does not hold stay;
* the file's corrections replace the corrections loaded from it before; corrections made
  here stay — a correction of a run the file has since superseded is *cleared by
  re-evaluation* (derived from the runs, never deleted), so the history keeps it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ..._store.sql import ident
from .doc import ExperimentDoc

__all__ = ["arrow_rows", "insert_arrow", "next_seq", "write_experiment"]

_TYPES: dict[str, pa.DataType] = {
    "position": pa.int32(),
    "run": pa.int32(),
    "seq": pa.int32(),
    "needs_reference": pa.bool_(),
    "input_is_chat": pa.bool_(),
    "scale_min": pa.float64(),
    "scale_max": pa.float64(),
    "score": pa.float64(),
}
_TIMES = {
    "created_at", "started_at", "finished_at", "trace_started_at", "ingested_at",
    "evaluated_at", "at", "undone_at", "loaded_at",
}  # fmt: skip


def arrow_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pa.Table:
    """The ``columns`` of ``rows`` as an Arrow table with the workspace's column types."""
    arrays = {}
    for col in columns:
        kind = _TYPES.get(col, pa.timestamp("us", tz="UTC") if col in _TIMES else pa.string())
        arrays[col] = pa.array([r.get(col) for r in rows], type=kind)
    return pa.table(arrays)


def insert_arrow(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
) -> None:
    """``INSERT INTO table (columns) SELECT … FROM`` an Arrow table of ``rows``."""
    if not rows:
        return
    data = arrow_rows(rows, columns)
    names = ", ".join(ident(c) for c in columns)
    con.register("_el_exp_rows", data)
    try:
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _el_exp_rows")
    finally:
        con.unregister("_el_exp_rows")


EVALUATOR_COLUMNS = (
    "experiment_id", "name", "position", "kind", "needs_reference", "version",
    "judge_model", "scale_min", "scale_max",
)  # fmt: skip
CASE_COLUMNS = (
    "experiment_id", "trace_id", "position", "agent", "parent_trace_id", "status",
    "trace_started_at", "ingested_at", "input", "input_is_chat", "output", "reference",
    "reference_source", "added_by", "tags",
)  # fmt: skip
RESULT_COLUMNS = (
    "experiment_id", "result_id", "trace_id", "evaluator", "run", "status", "score",
    "reason", "points", "error", "evaluated_at", "origin",
)  # fmt: skip
CORRECTION_COLUMNS = (
    "experiment_id", "seq", "result_id", "trace_id", "evaluator", "run", "score", "reason",
    "by", "at", "undone_by", "undone_at", "origin",
)  # fmt: skip
EXPERIMENT_COLUMNS = (
    "experiment_id", "name", "agent", "type", "status", "created_at", "started_at",
    "finished_at", "listen", "source_format", "source_path", "extra", "loaded_at",
)  # fmt: skip


def next_seq(con: duckdb.DuckDBPyConnection, experiment_id: str) -> int:
    """The ``seq`` the next correction of the experiment gets."""
    row = con.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM exp_corrections WHERE experiment_id = ?",
        [experiment_id],
    ).fetchone()
    return int(row[0]) if row else 1


def write_experiment(
    con: duckdb.DuckDBPyConnection,
    doc: ExperimentDoc,
    *,
    source_format: str,
    source_path: str | None,
    extra: str | None = None,
    also: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None,
) -> str:
    """Write (or merge, see the module docstring) ``doc``; returns the experiment id.

    One transaction: on any error nothing changes. ``also(con, experiment_id)`` writes
    what else the source holds (an MLflow trace's spans as its case's steps) inside it.
    """
    eid = str(doc.experiment["experiment_id"])
    con.execute("BEGIN TRANSACTION")
    try:
        _merge(con, doc, eid, source_format, source_path, extra)
        if also is not None:
            also(con, eid)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return eid


def _merge(
    con: duckdb.DuckDBPyConnection,
    doc: ExperimentDoc,
    eid: str,
    source_format: str,
    source_path: str | None,
    extra: str | None,
) -> None:
    p = {"e": eid}
    con.execute("DELETE FROM experiments WHERE experiment_id = $e", p)
    row = dict(doc.experiment) | {
        "source_format": source_format,
        "source_path": source_path,
        "extra": extra,
        "loaded_at": dt.datetime.now(dt.UTC),
    }
    insert_arrow(con, "experiments", [row], EXPERIMENT_COLUMNS)

    names = [e["name"] for e in doc.evaluators]
    con.execute(
        "DELETE FROM exp_evaluators WHERE experiment_id = $e AND (kind IS DISTINCT FROM 'local' OR list_contains($n, name))",
        p | {"n": names},
    )
    kept = con.execute("SELECT count(*) FROM exp_evaluators WHERE experiment_id = $e", p).fetchone()
    offset = int(kept[0]) if kept else 0
    insert_arrow(
        con,
        "exp_evaluators",
        [e | {"experiment_id": eid, "position": offset + e["position"]} for e in doc.evaluators],
        EVALUATOR_COLUMNS,
    )

    traces = [c["trace_id"] for c in doc.cases]
    positions = dict(
        con.execute(
            "SELECT trace_id, position FROM exp_cases WHERE experiment_id = $e", p
        ).fetchall()
    )
    start = max(positions.values(), default=-1) + 1
    cases = []
    for c in doc.cases:
        pos = positions.get(c["trace_id"])
        if pos is None:
            pos, start = start, start + 1
        cases.append(c | {"experiment_id": eid, "position": pos})
    con.execute(
        "DELETE FROM exp_cases WHERE experiment_id = $e AND list_contains($t, trace_id)",
        p | {"t": traces},
    )
    insert_arrow(con, "exp_cases", cases, CASE_COLUMNS)

    if doc.results:
        keys = pa.table(
            {
                "trace_id": [r["trace_id"] for r in doc.results],
                "evaluator": [r["evaluator"] for r in doc.results],
                "run": pa.array([r["run"] for r in doc.results], pa.int32()),
            }
        )
        con.register("_el_exp_keys", keys)
        try:
            con.execute(
                """DELETE FROM exp_results r USING _el_exp_keys k
                   WHERE r.experiment_id = $e AND r.trace_id = k.trace_id
                     AND r.evaluator = k.evaluator AND r.run = k.run""",
                p,
            )
        finally:
            con.unregister("_el_exp_keys")
    insert_arrow(
        con,
        "exp_results",
        [r | {"experiment_id": eid, "origin": "source"} for r in doc.results],
        RESULT_COLUMNS,
    )

    con.execute("DELETE FROM exp_corrections WHERE experiment_id = $e AND origin = 'source'", p)
    seq = next_seq(con, eid)
    insert_arrow(
        con,
        "exp_corrections",
        [
            c | {"experiment_id": eid, "seq": seq + i, "origin": "source"}
            for i, c in enumerate(doc.corrections)
        ],
        CORRECTION_COLUMNS,
    )
