"""A new experiment made in the notebook, and evaluators added to an experiment.

Rules from the platform: a reference-based evaluator cannot be chosen while any case
lacks a reference (the error lists those cases); a case added later without a reference
gets, for such an evaluator, a succeeded row without a number ("no reference answer"),
which is never counted.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from .._errors import EnvloopError
from .._loaders.experiments.doc import check_doc
from .._loaders.experiments.store import (
    EVALUATOR_COLUMNS,
    RESULT_COLUMNS,
    insert_arrow,
    write_experiment,
)
from .._store.transaction import transaction
from .runner import Evaluator

__all__ = [
    "NO_REFERENCE",
    "add_evaluators",
    "cases_without_reference",
    "create_experiment",
    "pending_rows",
]

NO_REFERENCE = "no reference answer: not scored"


def cases_without_reference(con: duckdb.DuckDBPyConnection, eid: str) -> list[str]:
    """Trace ids of the cases with no (or a blank) reference, in case order."""
    rows = con.execute(
        """SELECT trace_id FROM exp_cases WHERE experiment_id = ?
             AND (reference IS NULL OR trim(reference) = '') ORDER BY position""",
        [eid],
    ).fetchall()
    return [str(r[0]) for r in rows]


def _refuse_reference(evaluators: Sequence[Evaluator], missing: Sequence[str]) -> None:
    needs = [e.name for e in evaluators if e.needs_reference]
    if needs and missing:
        shown = ", ".join(missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        raise EnvloopError(
            f"{', '.join(needs)} needs a reference answer, and {len(missing)} case(s) have none: "
            f"{shown}; fill them (exp.fill_references(dataset) or the cases' reference) first"
        )


def _evaluator_row(eid: str, ev: Evaluator, position: int) -> dict[str, Any]:
    return {
        "experiment_id": eid,
        "name": ev.name,
        "position": position,
        "kind": "local",
        "needs_reference": ev.needs_reference,
        "version": None,
        "judge_model": None,
        "scale_min": float(ev.scale[0]),
        "scale_max": float(ev.scale[1]),
    }


def pending_rows(
    con: duckdb.DuckDBPyConnection, eid: str, traces: Sequence[str], evaluators: Sequence[str]
) -> list[dict[str, Any]]:
    """Insert run-1 rows for each (trace, evaluator): ``pending``, or for a
    reference-based evaluator and a case without reference a succeeded row without a
    number. Returns the pending ones. Call inside a transaction."""
    if not traces or not evaluators:
        return []
    needs = dict(
        con.execute(
            "SELECT name, needs_reference FROM exp_evaluators WHERE experiment_id = ?", [eid]
        ).fetchall()
    )
    missing = set(cases_without_reference(con, eid))
    now = dt.datetime.now(dt.UTC)
    rows, pending = [], []
    for t in traces:
        for name in evaluators:
            row = {
                "experiment_id": eid,
                "result_id": f"{t}/{name}/run1-{uuid.uuid4().hex[:8]}",
                "trace_id": t,
                "evaluator": name,
                "run": 1,
                "status": "pending",
                "points": "[]",
                "origin": "local",
            }
            if needs.get(name) and t in missing:
                row |= {"status": "succeeded", "reason": NO_REFERENCE, "evaluated_at": now}
            else:
                pending.append(row)
            rows.append(row)
    insert_arrow(con, "exp_results", rows, RESULT_COLUMNS)
    return pending


def create_experiment(
    con: duckdb.DuckDBPyConnection,
    *,
    name: str,
    agent: str | None,
    evaluators: Sequence[Evaluator],
    cases: Sequence[Mapping[str, Any]],
    experiment_id: str | None = None,
) -> str:
    """Create an experiment with its cases and one pending row per case × evaluator."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"an experiment needs a name, got {name!r}")
    names = [e.name for e in evaluators]
    if len(set(names)) != len(names):
        raise ValueError(f"evaluator names must be distinct, got {names}")
    eid = experiment_id or f"exp_{uuid.uuid4().hex[:8]}"
    if con.execute("SELECT 1 FROM experiments WHERE experiment_id = ?", [eid]).fetchone():
        raise EnvloopError(
            f"experiment {eid!r} already exists: open it with ws.experiment({eid!r})"
        )
    now = dt.datetime.now(dt.UTC).isoformat()
    doc = check_doc(
        {
            "experiment": {
                "id": eid, "name": name, "agent": agent, "type": "single-group",
                "status": "running", "created_at": now, "started_at": now,
                "evaluators": [
                    {"name": e.name, "kind": "local", "needs_reference": e.needs_reference,
                     "scale": {"min": e.scale[0], "max": e.scale[1]}}
                    for e in evaluators
                ],
            },
            "cases": [dict(c) | {"added_by": c.get("added_by", "selection")} for c in cases],
        },
        "cases",
    )  # fmt: skip
    missing = [c["trace_id"] for c in doc.cases if not (c["reference"] or "").strip()]
    _refuse_reference(evaluators, missing)
    write_experiment(con, doc, source_format="notebook", source_path=None)
    with transaction(con):
        pending_rows(con, eid, [c["trace_id"] for c in doc.cases], names)
    return eid


def add_evaluators(
    con: duckdb.DuckDBPyConnection, eid: str, evaluators: Sequence[Evaluator]
) -> list[dict[str, Any]]:
    """Add notebook evaluators to an experiment (pending rows for every case); the rows."""
    known = {
        r[0]
        for r in con.execute(
            "SELECT name FROM exp_evaluators WHERE experiment_id = ?", [eid]
        ).fetchall()
    }
    clash = [e.name for e in evaluators if e.name in known]
    if clash:
        raise EnvloopError(
            f"{eid!r} already has evaluator(s) {clash}: bind a function to them with exp.use(...)"
        )
    _refuse_reference(evaluators, cases_without_reference(con, eid))
    traces = [
        r[0] for r in con.execute(
            "SELECT trace_id FROM exp_cases WHERE experiment_id = ? ORDER BY position", [eid]
        ).fetchall()
    ]  # fmt: skip
    with transaction(con):
        start = con.execute(
            "SELECT coalesce(max(position), -1) + 1 FROM exp_evaluators WHERE experiment_id = ?",
            [eid],
        ).fetchone()
        first = int(start[0]) if start else 0
        insert_arrow(
            con,
            "exp_evaluators",
            [_evaluator_row(eid, e, first + i) for i, e in enumerate(evaluators)],
            EVALUATOR_COLUMNS,
        )
        return pending_rows(con, eid, traces, [e.name for e in evaluators])


def listen_json(enabled: bool, since: dt.datetime | None, stopped_at: dt.datetime | None) -> str:
    """The ``experiments.listen`` value."""
    return json.dumps(
        {
            "enabled": enabled,
            "since": since.isoformat() if since else None,
            "stopped_at": stopped_at.isoformat() if stopped_at else None,
        }
    )
