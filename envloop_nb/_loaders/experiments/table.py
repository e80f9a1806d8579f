"""Any long table of evaluation results as an experiment: one row per (trace,
evaluator[, run]) — Parquet, CSV, JSONL, or a pandas / polars / Arrow frame — read by
the tables' own reader (:mod:`..tables.source`), mapped with ``mapping=`` like jobs.

Fields (``mapping`` maps a field to the source's column; by default a column of the
field's name is taken when present): ``trace_id`` and ``evaluator`` (required),
``score``, ``status``, ``reason``, ``error``, ``run`` (default 1), ``result_id``,
``evaluated_at``, and per case ``input``, ``output``, ``reference``, ``agent``.

Without a ``status`` column a row with a score succeeded, a row with an error and no
score failed, and any other row succeeded without a number (never a 0). The first row of
a trace gives its case fields. Errors name the row (``row 12``, ``line 12``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from ..._errors import LoadError
from ..tables.columns import Source
from ..tables.source import cleanup, open_frame, open_path
from .doc import EXPERIMENT_SCHEMA

__all__ = ["FIELDS", "table_experiment_doc"]

FIELDS = (
    "trace_id", "evaluator", "score", "status", "reason", "error", "run", "result_id",
    "evaluated_at", "input", "output", "reference", "agent",
)  # fmt: skip
_NUMBERS = {"score", "run"}


def _select(src: Source, field: str, col: str) -> str:
    if field in _NUMBERS:
        return src.number(col)
    return src.text(col)


def table_experiment_doc(
    con: duckdb.DuckDBPyConnection,
    source: Any,
    *,
    experiment_id: str,
    name: str | None = None,
    agent: str | None = None,
    mapping: Mapping[str, str] | None = None,
    scale: tuple[float, float] = (0.0, 100.0),
) -> dict[str, Any]:
    """The experiment document of a long results table (see the module docstring)."""
    mapping = dict(mapping or {})
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown mapping field(s) {unknown}; fields: {', '.join(FIELDS)}")
    is_path = isinstance(source, str) or hasattr(source, "__fspath__")
    src = open_path(con, source) if is_path else open_frame(con, source)
    try:
        columns = set(src.columns)
        chosen: dict[str, str] = {}
        for field in FIELDS:
            col = mapping.get(field, field)
            if col in columns:
                chosen[field] = col
            elif field in mapping:
                raise LoadError(
                    src.label,
                    None,
                    f"mapping {field}={col!r}: no such column; columns: {sorted(columns)}",
                )
        for need in ("trace_id", "evaluator"):
            if need not in chosen:
                raise LoadError(
                    src.label, None,
                    f"column {need!r} missing (pass mapping={{'{need}': '<column>'}}); columns: {sorted(columns)}",
                )  # fmt: skip
        picks = ", ".join(f"{_select(src, f, c)} AS {f}" for f, c in chosen.items())
        rows = con.execute(f"SELECT {picks}, _enb_place FROM _tb_src ORDER BY _enb_ord").fetchall()
        bad_numbers = con.execute(
            "SELECT _enb_place, "
            + ", ".join(f"{src.number_ok(chosen[f])} AS {f}" for f in _NUMBERS if f in chosen)
            + " FROM _tb_src WHERE NOT ("
            + " AND ".join(src.number_ok(chosen[f]) for f in _NUMBERS if f in chosen)
            + ") ORDER BY _enb_ord LIMIT 1"
        ).fetchone() if any(f in chosen for f in _NUMBERS) else None  # fmt: skip
    finally:
        cleanup(con, src)
    if bad_numbers is not None:
        raise LoadError(src.label, str(bad_numbers[0]), "score and run must be numbers")
    fields = [*chosen, "_place"]
    cases: dict[str, dict[str, Any]] = {}
    evaluators: dict[str, None] = {}
    results = []
    for raw in rows:
        r = dict(zip(fields, raw, strict=True))
        tid, ev = r["trace_id"], r["evaluator"]
        if tid is None or ev is None:
            raise LoadError(src.label, r["_place"], "trace_id and evaluator must not be empty")
        evaluators.setdefault(ev)
        cases.setdefault(
            tid,
            {"trace_id": tid, "agent": r.get("agent") or agent, "input": r.get("input"),
             "output": r.get("output"), "reference": r.get("reference"),
             "reference_source": "dataset" if r.get("reference") else None,
             "status": "success", "_place": r["_place"]},
        )  # fmt: skip
        score = r.get("score")
        status = r.get("status") or (
            "succeeded" if score is not None else "failed" if r.get("error") else "succeeded"
        )
        run = r.get("run")
        results.append(
            {"id": r.get("result_id") or f"{tid}/{ev}/{int(run or 1)}", "trace_id": tid, "evaluator": ev,
             "run": int(run) if run is not None and float(run).is_integer() else (run if run is not None else 1),
             "status": status, "score": score, "reason": r.get("reason"), "error": r.get("error"),
             "evaluated_at": r.get("evaluated_at"), "points": [], "_place": r["_place"]}
        )  # fmt: skip
    return {
        "schema_version": EXPERIMENT_SCHEMA,
        "experiment": {
            "id": experiment_id,
            "name": name or experiment_id,
            "agent": agent,
            "status": "completed",
            "evaluators": [
                {
                    "name": e,
                    "kind": "custom",
                    "needs_reference": False,
                    "scale": {"min": scale[0], "max": scale[1]},
                }
                for e in evaluators
            ],
        },
        "cases": list(cases.values()),
        "results": results,
        "corrections": [],
    }
