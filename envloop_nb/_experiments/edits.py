"""Changing an experiment in the workspace: manual corrections and their undo, new runs
(re-evaluation), appended cases, references. Each change is one transaction that checks
first: a refused change names what is wrong and leaves the workspace as it was.

A correction never overwrites the machine score: it is a row of ``exp_corrections``
(score, reason, who, when) naming the run it corrects; undo stamps it with who undid it
and when; a re-evaluation adds a higher run, which clears it (the history keeps it).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from .._errors import EnvloopError
from .._loaders.experiments.doc import check_doc
from .._loaders.experiments.store import (
    CASE_COLUMNS,
    CORRECTION_COLUMNS,
    RESULT_COLUMNS,
    insert_arrow,
    next_seq,
)
from .._options import who
from .._store.transaction import transaction

__all__ = [
    "add_cases",
    "correct",
    "new_runs",
    "undo_correction",
]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _pair(
    con: duckdb.DuckDBPyConnection, eid: str, trace_id: str, evaluator: str
) -> dict[str, Any]:
    """The current row of a pair (checked: known case, known evaluator, a row exists)."""
    if (
        con.execute(
            "SELECT 1 FROM exp_cases WHERE experiment_id = ? AND trace_id = ?", [eid, trace_id]
        ).fetchone()
        is None
    ):
        raise EnvloopError(f"experiment {eid!r} has no case {trace_id!r}")
    ev = con.execute(
        "SELECT scale_min, scale_max FROM exp_evaluators WHERE experiment_id = ? AND name = ?",
        [eid, evaluator],
    ).fetchone()
    if ev is None:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM exp_evaluators WHERE experiment_id = ? ORDER BY position", [eid]
            ).fetchall()
        ]
        raise EnvloopError(
            f"experiment {eid!r} has no evaluator {evaluator!r}; evaluators: {names}"
        )
    cur = con.execute(
        """SELECT result_id, run, status, score FROM exp_results
           WHERE experiment_id = ? AND trace_id = ? AND evaluator = ?
           ORDER BY run DESC LIMIT 1""",
        [eid, trace_id, evaluator],
    ).fetchone()
    if cur is None:
        raise EnvloopError(
            f"({trace_id!r}, {evaluator!r}) has no result row yet: nothing to correct"
        )
    return {
        "result_id": cur[0], "run": int(cur[1]), "status": cur[2], "score": cur[3],
        "scale_min": float(ev[0]), "scale_max": float(ev[1]),
    }  # fmt: skip


def _live(con: duckdb.DuckDBPyConnection, eid: str, result_id: str, run: int) -> int | None:
    row = con.execute(
        """SELECT max(seq) FROM exp_corrections
           WHERE experiment_id = ? AND result_id = ? AND run = ?
             AND undone_at IS NULL AND undone_by IS NULL""",
        [eid, result_id, run],
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def correct(
    con: duckdb.DuckDBPyConnection,
    eid: str,
    trace_id: str,
    evaluator: str,
    score: float,
    reason: str,
    by: str | None = None,
    run: int | None = None,
) -> dict[str, Any]:
    """Correct the current succeeded row of ``(trace_id, evaluator)``; the new correction.

    ``run`` (optional) must be the current run: a superseded run cannot be corrected.
    """
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError(f"score must be a finite number, got {score!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("a correction needs a reason (a non-empty text)")
    author = who(by)
    with transaction(con):
        row = _pair(con, eid, trace_id, evaluator)
        if run is not None and run != row["run"]:
            raise EnvloopError(
                f"({trace_id!r}, {evaluator!r}) run {run} is superseded by run {row['run']}: "
                "only the current run can be corrected"
            )
        if row["status"] != "succeeded":
            raise EnvloopError(
                f"({trace_id!r}, {evaluator!r}) is {row['status']}: only a succeeded row can be "
                "corrected (re-evaluate a failed one)"
            )
        if not row["scale_min"] <= float(score) <= row["scale_max"]:
            raise ValueError(
                f"score {score:g} is outside {evaluator!r}'s scale "
                f"{row['scale_min']:g}-{row['scale_max']:g}"
            )
        if _live(con, eid, row["result_id"], row["run"]) is not None:
            raise EnvloopError(
                f"({trace_id!r}, {evaluator!r}) already has a live correction: undo it first "
                "(exp.undo_correction), then correct again"
            )
        new = {
            "experiment_id": eid,
            "seq": next_seq(con, eid),
            "result_id": row["result_id"],
            "trace_id": trace_id,
            "evaluator": evaluator,
            "run": row["run"],
            "score": float(score),
            "reason": reason,
            "by": author,
            "at": _now(),
            "undone_by": None,
            "undone_at": None,
            "origin": "local",
        }
        insert_arrow(con, "exp_corrections", [new], CORRECTION_COLUMNS)
    return new


def undo_correction(
    con: duckdb.DuckDBPyConnection, eid: str, trace_id: str, evaluator: str, by: str | None = None
) -> None:
    """Undo the live correction of the current row: the machine score counts again."""
    author = who(by)
    with transaction(con):
        row = _pair(con, eid, trace_id, evaluator)
        seq = _live(con, eid, row["result_id"], row["run"])
        if seq is None:
            raise EnvloopError(f"({trace_id!r}, {evaluator!r}) has no live correction to undo")
        con.execute(
            """UPDATE exp_corrections SET undone_by = ?, undone_at = ?
               WHERE experiment_id = ? AND seq = ?""",
            [author, _now(), eid, seq],
        )


def new_runs(
    con: duckdb.DuckDBPyConnection, eid: str, pairs: Sequence[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Start a new run (status ``pending``) of each ``(trace_id, evaluator)`` pair: run 1
    where the pair has none, else its highest run + 1 (which clears its correction).
    Returns the new rows (``result_id``, ``trace_id``, ``evaluator``, ``run``)."""
    if not pairs:
        return []
    out = []
    with transaction(con):
        for trace_id, evaluator in pairs:
            row = con.execute(
                """SELECT max(run) FROM exp_results
                   WHERE experiment_id = ? AND trace_id = ? AND evaluator = ?""",
                [eid, trace_id, evaluator],
            ).fetchone()
            run = 1 if row is None or row[0] is None else int(row[0]) + 1
            out.append(
                {
                    "experiment_id": eid,
                    "result_id": f"{trace_id}/{evaluator}/run{run}-{uuid.uuid4().hex[:8]}",
                    "trace_id": trace_id,
                    "evaluator": evaluator,
                    "run": run,
                    "status": "pending",
                    "points": "[]",
                    "origin": "local",
                }
            )
        insert_arrow(con, "exp_results", out, RESULT_COLUMNS)
    return out


def add_cases(
    con: duckdb.DuckDBPyConnection,
    eid: str,
    traces: Sequence[Mapping[str, Any]],
    *,
    added_by: str = "append",
    source: object = "cases",
) -> list[str]:
    """Append cases (trace dicts with the export's ``cases[]`` fields; ``trace_id``
    required); returns their trace ids. A trace already a case is refused."""
    doc = {
        "experiment": {"id": eid},
        "cases": [dict(t) | {"added_by": t.get("added_by", added_by)} for t in traces],
    }
    cases = check_doc(doc, source).cases
    ids = [c["trace_id"] for c in cases]
    with transaction(con):
        dup = con.execute(
            "SELECT trace_id FROM exp_cases WHERE experiment_id = ? AND list_contains(?, trace_id)",
            [eid, ids],
        ).fetchall()
        if dup:
            raise EnvloopError(f"already cases of {eid!r}: {sorted(r[0] for r in dup)}")
        row = con.execute(
            "SELECT coalesce(max(position), -1) + 1 FROM exp_cases WHERE experiment_id = ?", [eid]
        ).fetchone()
        start = int(row[0]) if row else 0
        insert_arrow(
            con,
            "exp_cases",
            [c | {"experiment_id": eid, "position": start + i} for i, c in enumerate(cases)],
            CASE_COLUMNS,
        )
    return ids


def case_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """A case row of the workspace back in the export's shape (input parsed)."""
    inp = row.get("input")
    if row.get("input_is_chat") and isinstance(inp, str):
        inp = json.loads(inp)
    tags = row.get("tags")
    return {
        "trace_id": row["trace_id"],
        "input": inp,
        "output": row.get("output"),
        "reference": row.get("reference"),
        "tags": json.loads(tags) if isinstance(tags, str) else (tags or {}),
    }
