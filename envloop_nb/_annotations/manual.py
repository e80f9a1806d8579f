"""Manual dimensions: a score a person gives each attempt, with who, when and why.

A manual dimension is defined on a job with either labels (each label's value, e.g.
``{"correct": 1, "partly": 0.5, "wrong": 0}``) or a numeric scale (``(1, 5)``), and is
*required* unless told otherwise: a job with a required manual dimension is not
completed until every attempt is annotated (it is *awaiting annotation*). Every
annotation ever made is kept (``annotations``; the current one of an attempt has
``replaced_at`` NULL, a cleared one a NULL value) and the current values are mirrored
into the ``dimensions`` table, so the dimension's metrics, coverage and exports are
those of any other dimension: an attempt nobody annotated is missing, never 0. A
reload of the job keeps its annotations (:func:`remirror` puts them back on the
attempts that still exist).

Every change is one checked transaction: a label not in the dimension, a value off
its scale, an attempt the job does not have — refused with a message, nothing changed.

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> dim = define(job.con, job.id, "helpful", labels={"yes": 1, "no": 0}, by="ana")
>>> annotate(job.con, job.id, "helpful", "A", 1, label="yes", reason="clear", by="ana")
>>> [p.describe() for p in progress(job.con, job.id)]
['helpful: 1/6 annotated']
>>> annotate(job.con, job.id, "helpful", "A", 1, label="maybe")
Traceback (most recent call last):
...
ValueError: 'maybe' is not a label of 'helpful'; its labels: yes, no
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._options import who
from .._store.memo import forget_job
from .._store.transaction import transaction

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = [
    "AWAITING",
    "AnnotationProgress",
    "ManualDimension",
    "annotate",
    "annotated",
    "annotation_frame",
    "awaiting",
    "awaiting_jobs",
    "clear",
    "current",
    "define",
    "manual_dimensions",
    "progress",
    "remirror",
]


@dataclass(frozen=True)
class ManualDimension:
    """One manual dimension of a job: its labels (or scale), whether it is required."""

    name: str
    labels: tuple[tuple[str, float], ...] | None
    scale: tuple[float, float] | None
    required: bool
    created_by: str
    created_at: dt.datetime

    @property
    def choices(self) -> list[str]:
        """The labels in display order (empty for a scale)."""
        return [label for label, _ in self.labels or ()]

    def check(self, *, label: str | None, value: float | None) -> tuple[str | None, float]:
        """``(label, value)`` to store, or ``ValueError`` saying what this dimension takes."""
        if self.labels is not None:
            known = dict(self.labels)
            if label is None:
                raise ValueError(f"{self.name!r} takes a label: one of {', '.join(self.choices)}")
            if label not in known:
                raise ValueError(
                    f"{label!r} is not a label of {self.name!r}; its labels: "
                    f"{', '.join(self.choices)}"
                )
            if value is not None and value != known[label]:
                raise ValueError(f"label {label!r} of {self.name!r} is worth {known[label]:g}")
            return label, known[label]
        assert self.scale is not None
        lo, hi = self.scale
        if label is not None:
            raise ValueError(f"{self.name!r} takes a number from {lo:g} to {hi:g}, not a label")
        if not _is_number(value) or not lo <= float(value) <= hi:  # type: ignore[arg-type]
            raise ValueError(f"{self.name!r} takes a number from {lo:g} to {hi:g}, got {value!r}")
        return None, float(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class AnnotationProgress:
    """How many of a job's attempts carry a current annotation of one dimension."""

    name: str
    annotated: int
    total: int
    required: bool

    @property
    def done(self) -> bool:
        return self.annotated >= self.total

    def describe(self) -> str:
        """``"helpful: 37/200 annotated"``."""
        return f"{self.name}: {self.annotated:,}/{self.total:,} annotated"


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _require_job(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    row = con.execute("""SELECT count(*) FROM jobs WHERE job_id = $j""", {"j": job_id}).fetchone()
    if not row or not row[0]:
        raise KeyError(f"job {job_id!r} is no longer in the workspace")


def define(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    name: str,
    *,
    labels: Mapping[str, float] | None = None,
    scale: tuple[float, float] | None = None,
    required: bool = True,
    by: str | None = None,
) -> ManualDimension:
    """Define the manual dimension ``name`` on a job (labels *or* a scale)."""
    _require_job(con, job_id)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a manual dimension needs a non-empty name, got {name!r}")
    if (labels is None) == (scale is None):
        raise ValueError("give labels={'label': value, ...} or scale=(low, high), not both")
    stored_labels: list[list[Any]] | None = None
    lo = hi = None
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise TypeError("labels maps each label to its value, e.g. {'correct': 1, 'wrong': 0}")
        if len(labels) < 2:
            raise ValueError("labels needs at least two labels")
        for label, v in labels.items():
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"a label must be a non-empty string, got {label!r}")
            if not _is_number(v):
                raise ValueError(f"label {label!r} needs a finite number as its value, got {v!r}")
        stored_labels = [[label, float(v)] for label, v in labels.items()]
    else:
        assert scale is not None
        if len(scale) != 2 or not all(_is_number(v) for v in scale) or not scale[0] < scale[1]:
            raise ValueError(f"scale must be (low, high) with low < high, got {scale!r}")
        lo, hi = float(scale[0]), float(scale[1])
    taken = con.execute(
        """SELECT (SELECT count(*) FROM dimensions WHERE job_id = $j AND name = $n)
                + (SELECT count(*) FROM manual_dimensions WHERE job_id = $j AND name = $n)""",
        {"j": job_id, "n": name},
    ).fetchone()
    if name in ("reward", "composite") or (taken and taken[0]):
        raise ValueError(f"the job already has a dimension named {name!r}")
    summarised = con.execute(
        "SELECT (extra->'summarised') IS NOT NULL FROM jobs WHERE job_id = ?", [job_id]
    ).fetchone()
    if summarised and summarised[0]:
        raise ValueError(
            f"job {job_id!r} is summarised: its attempts are not in the workspace to annotate"
        )
    author, now = who(by), dt.datetime.now(dt.UTC)
    with transaction(con):
        con.execute(
            "INSERT INTO manual_dimensions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [job_id, name, None if stored_labels is None else json.dumps(stored_labels),
             lo, hi, bool(required), author, now],
        )  # fmt: skip
        con.execute(
            "INSERT INTO dimension_meta VALUES (?, ?, ?, true, NULL)",
            [job_id, name, "label" if labels is not None else "scale"],
        )
    forget_job(con, job_id)
    return ManualDimension(
        name=name,
        labels=None
        if stored_labels is None
        else tuple((str(a), float(b)) for a, b in stored_labels),
        scale=None if lo is None or hi is None else (lo, hi),
        required=bool(required),
        created_by=author,
        created_at=now,
    )


def manual_dimensions(con: duckdb.DuckDBPyConnection, job_id: str) -> list[ManualDimension]:
    """The job's manual dimensions, in the order they were defined."""
    rows = con.execute(
        """SELECT name, labels, scale_min, scale_max, required, created_by, created_at
           FROM manual_dimensions WHERE job_id = ? ORDER BY created_at, name""",
        [job_id],
    ).fetchall()
    out = []
    for name, labels, lo, hi, required, by, at in rows:
        parsed = json.loads(labels) if isinstance(labels, str) else None
        out.append(
            ManualDimension(
                name=name,
                labels=None if parsed is None else tuple((str(a), float(b)) for a, b in parsed),
                scale=None if lo is None else (float(lo), float(hi)),
                required=bool(required),
                created_by=by,
                created_at=at,
            )
        )
    return out


def _dimension(con: duckdb.DuckDBPyConnection, job_id: str, name: str) -> ManualDimension:
    for d in manual_dimensions(con, job_id):
        if d.name == name:
            return d
    names = [d.name for d in manual_dimensions(con, job_id)]
    raise ValueError(
        f"job {job_id!r} has no manual dimension {name!r}"
        + (f"; its manual dimensions: {', '.join(names)}" if names else "")
    )


def _write(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    name: str,
    task: str,
    attempt: int,
    label: str | None,
    value: float | None,
    reason: str | None,
    by: str | None,
) -> None:
    if reason is not None and not isinstance(reason, str):
        raise ValueError(f"reason must be text, got {reason!r}")
    found = con.execute(
        "SELECT count(*) FROM attempts WHERE job_id = ? AND task = ? AND attempt = ?",
        [job_id, str(task), int(attempt)],
    ).fetchone()
    if not found or not found[0]:
        raise ValueError(f"job {job_id!r} has no attempt {int(attempt)} of task {task!r}")
    author, now = who(by), dt.datetime.now(dt.UTC)
    key = {"j": job_id, "n": name, "t": str(task), "a": int(attempt)}
    where = "job_id = $j AND name = $n AND task = $t AND attempt = $a"
    with transaction(con):
        con.execute(
            f"UPDATE annotations SET replaced_at = $now WHERE {where} AND replaced_at IS NULL",
            key | {"now": now},
        )
        con.execute(
            "INSERT INTO annotations VALUES ($j, $n, $t, $a, $label, $value, $reason, $by, $now,"
            " NULL)",
            key | {"label": label, "value": value, "reason": reason or None, "by": author,
                   "now": now},
        )  # fmt: skip
        con.execute(f"DELETE FROM dimensions WHERE {where}", key)
        if value is not None:
            con.execute(
                "INSERT INTO dimensions VALUES ($j, $t, $a, $n, $value)", key | {"value": value}
            )
    forget_job(con, job_id)  # the job's dimension values changed in place


def annotate(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    name: str,
    task: str,
    attempt: int,
    *,
    label: str | None = None,
    value: float | None = None,
    reason: str | None = None,
    by: str | None = None,
) -> None:
    """Give attempt ``attempt`` of ``task`` a label (or a value on the scale) of ``name``;
    a second annotation replaces the first (both are kept in the history)."""
    dim = _dimension(con, job_id, name)
    label, number = dim.check(label=label, value=value)
    _write(con, job_id, name, task, attempt, label, number, reason, by)


def clear(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    name: str,
    task: str,
    attempt: int,
    *,
    reason: str | None = None,
    by: str | None = None,
) -> None:
    """Take an attempt's annotation of ``name`` back: it is missing again (history kept)."""
    _dimension(con, job_id, name)
    _write(con, job_id, name, task, attempt, None, None, reason, by)


def annotation_frame(
    con: duckdb.DuckDBPyConnection, job_id: str, name: str | None = None, *, history: bool = False
) -> pd.DataFrame:
    """The current annotations (``history=True``: every one ever made, with
    ``replaced_at``) — ``name, task, attempt, label, value, reason, annotator,
    annotated_at``, in task order."""
    cols = "a.name, a.task, a.attempt, a.label, a.value, a.reason, a.annotator, a.annotated_at"
    cur = "" if history else "AND a.replaced_at IS NULL AND a.value IS NOT NULL"
    extra = ", a.replaced_at" if history else ""
    frame: pd.DataFrame = (
        con.execute(
            f"""SELECT {cols}{extra} FROM annotations a
            LEFT JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
            WHERE a.job_id = $j AND ($n IS NULL OR a.name = $n) {cur}
            ORDER BY a.name, t.position, a.attempt, a.annotated_at""",
            {"j": job_id, "n": name},
        )
        .to_arrow_table()
        .to_pandas()
    )  # via Arrow: time zones kept, no pandas deprecation
    return frame


#: Per manual dimension: attempts with a current annotation, and the job's attempts.
_PROGRESS_SQL = """
    SELECT m.job_id, m.name, m.required,
           (SELECT count(*) FROM annotations a
            JOIN attempts x ON x.job_id = a.job_id AND x.task = a.task AND x.attempt = a.attempt
            WHERE a.job_id = m.job_id AND a.name = m.name AND a.replaced_at IS NULL
              AND a.value IS NOT NULL) AS done,
           (SELECT count(*) FROM attempts x WHERE x.job_id = m.job_id) AS total
    FROM manual_dimensions m WHERE $job IS NULL OR m.job_id = $job
    ORDER BY m.job_id, m.created_at, m.name"""


def progress(con: duckdb.DuckDBPyConnection, job_id: str) -> list[AnnotationProgress]:
    """Per manual dimension: attempts annotated out of the job's attempts."""
    defined = con.execute("SELECT 1 FROM manual_dimensions WHERE job_id = ? LIMIT 1", [job_id])
    if defined.fetchone() is None:  # the usual case: no need to bind the ``attempts`` view
        return []  # (~10 ms for a job read in place: its files' footers)
    rows = con.execute(_PROGRESS_SQL, {"job": job_id}).fetchall()
    return [AnnotationProgress(n, int(d), int(t), bool(r)) for _, n, r, d, t in rows]


def awaiting(con: duckdb.DuckDBPyConnection, job_id: str) -> list[AnnotationProgress]:
    """The required manual dimensions some attempt still lacks (empty: nothing awaited)."""
    return [p for p in progress(con, job_id) if p.required and not p.done]


#: A completed job's status while a required manual dimension lacks annotations
#: (``ws.jobs()``, ``job.info``, the workspace list).
AWAITING = "awaiting annotation"


def awaiting_jobs(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every job :func:`awaiting` something, in one query (the workspace list)."""
    rows = con.execute(
        f"SELECT DISTINCT job_id FROM ({_PROGRESS_SQL}) WHERE required AND done < total",
        {"job": None},
    ).fetchall()
    return {r[0] for r in rows}


def current(
    con: duckdb.DuckDBPyConnection, job_id: str, name: str, task: str, attempt: int
) -> tuple[str | None, float | None, str | None] | None:
    """``(label, value, reason)`` of an attempt's current annotation of ``name`` (None:
    never annotated; a cleared one has a None value)."""
    row = con.execute(
        """SELECT label, value, reason FROM annotations WHERE job_id = ? AND name = ?
           AND task = ? AND attempt = ? AND replaced_at IS NULL""",
        [job_id, name, task, int(attempt)],
    ).fetchone()
    return None if row is None else (row[0], row[1], row[2])


def annotated(con: duckdb.DuckDBPyConnection, job_id: str, name: str) -> set[tuple[str, int]]:
    """``(task, attempt)`` of every attempt with a current annotation of ``name``."""
    rows = con.execute(
        """SELECT task, attempt FROM annotations WHERE job_id = ? AND name = ?
           AND replaced_at IS NULL AND value IS NOT NULL""",
        [job_id, name],
    ).fetchall()
    return {(str(t), int(a)) for t, a in rows}


def remirror(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Put the current annotations back into ``dimensions`` (and their ``dimension_meta``)
    for the attempts the job has now; runs inside the caller's transaction (a reload)."""
    defined = con.execute(
        "SELECT EXISTS (SELECT 1 FROM manual_dimensions WHERE job_id = $j)", {"j": job_id}
    ).fetchone()
    if not (defined and defined[0]):
        return  # nothing to put back (and no join over a large job's attempts)
    con.execute(
        """INSERT INTO dimension_meta
           SELECT job_id, name, CASE WHEN labels IS NULL THEN 'scale' ELSE 'label' END, true,
                  NULL
           FROM manual_dimensions m WHERE job_id = $j AND NOT EXISTS (
               SELECT 1 FROM dimension_meta d WHERE d.job_id = $j AND d.name = m.name)""",
        {"j": job_id},
    )
    con.execute(
        """INSERT INTO dimensions
           SELECT a.job_id, a.task, a.attempt, a.name, a.value FROM annotations a
           JOIN attempts x ON x.job_id = a.job_id AND x.task = a.task AND x.attempt = a.attempt
           WHERE a.job_id = $j AND a.replaced_at IS NULL AND a.value IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM dimensions d WHERE d.job_id = $j AND d.task = a.task
                             AND d.attempt = a.attempt AND d.name = a.name)""",
        {"j": job_id},
    )
