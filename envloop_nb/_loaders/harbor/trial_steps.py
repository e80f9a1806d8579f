"""A Harbor job's steps: each trial folder's ATIF trajectory (``agent/trajectory.json``,
with its continuation and sub-agent files beside it) read as that attempt's steps by
:func:`envloop_nb._loaders.harbor.atif.read_atif`. Used by
:func:`envloop_nb._loaders.harbor.job.load_harbor`.

A trial without the file has no steps (counted, never invented). An attempt's rows are
handed to the load's one :class:`~envloop_nb._store.steps.StepWriter` only once its
trajectory was read whole, so under ``lenient=True`` a trajectory that cannot be read
leaves its attempt without steps — counted and named in a
:class:`~envloop_nb.LoadWarning` — and never half-written.

A big job (:data:`~envloop_nb._loaders.harbor.pool.PARALLEL_FROM` trials or more, on
Linux) is read by worker processes (:mod:`envloop_nb._loaders.harbor.pool`), one per CPU,
forked: each reads a chunk of trials and returns its rows as one Arrow batch with its
counts; this process writes the chunks in the attempts' order, so the rows, the
counts and the error raised (the first in that order, naming the file and step) are one
process's. Nothing is written by a worker: a failed load still leaves the workspace as
it was.

What the files say about their own usage is compared, never corrected: each
trajectory's ``final_metrics`` totals against the sums of its rows, and the trial's
``agent_result`` (``n_input_tokens``, ``n_output_tokens``, ``n_cache_tokens``,
``cost_usd``) against both. The counts of attempts that agree / differ (and the first
differing ones, with the values) go to the job's ``extra["steps"]``.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..._errors import LoadError, LoadWarning
from ..._store.steps import HeldRows, StepSink, StepWriter, rows_table
from ..common.values import is_number
from . import pool
from .atif import USAGE, read_atif
from .trials import USAGE_FIELDS

__all__ = ["TRAJECTORY", "read_trial_steps"]

#: Where a Harbor trial keeps its trajectory.
TRAJECTORY = "agent/trajectory.json"
#: How many places (differing attempts, skipped files) ``extra["steps"]`` lists.
_LISTED = 20
#: The trial ``agent_result`` field of each ATIF metric.
_AGENT_RESULT = {
    "prompt_tokens": "n_input_tokens",
    "completion_tokens": "n_output_tokens",
    "cached_tokens": "n_cache_tokens",
    "cost_usd": "cost_usd",
}

Usage = dict[str, int | float | None]


class _Attempt(HeldRows):
    """One attempt's rows, held until its trajectory was read whole, and their usage."""

    def sums(self) -> Usage:
        """Each metric's sum over the rows that have it (null when none has)."""
        out: Usage = {}
        for key, column in USAGE:
            known = [v for row in self.rows if (v := row.get(column)) is not None]
            if not known:
                out[key] = None
            elif column == "cost_usd":
                out[key] = math.fsum(known)
            else:
                out[key] = sum(known)
        return out


@dataclass
class _Tally:
    """Attempts whose two usage figures agree on every metric both state, differ on one,
    or share none."""

    agree: int = 0
    differ: int = 0
    not_compared: int = 0
    differ_at: list[dict[str, Any]] = field(default_factory=list)

    def count(self, trial: str, a: Usage, b: Usage) -> None:
        both = [k for k in a if a[k] is not None and b.get(k) is not None]
        apart = {k: [a[k], b[k]] for k in both if not _same(k, a[k], b[k])}
        if not both:
            self.not_compared += 1
        elif apart:
            self.differ += 1
            if len(self.differ_at) < _LISTED:
                self.differ_at.append({"trial": trial, "fields": apart})
        else:
            self.agree += 1

    def merge(self, other: _Tally) -> None:
        """Add a later run's counts (``differ_at`` keeps the first :data:`_LISTED`)."""
        self.agree += other.agree
        self.differ += other.differ
        self.not_compared += other.not_compared
        self.differ_at += other.differ_at[: _LISTED - len(self.differ_at)]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agree": self.agree,
            "differ": self.differ,
            "not_compared": self.not_compared,
        }
        return out | ({"differ_at": self.differ_at} if self.differ_at else {})


def _same(key: str, a: Any, b: Any) -> bool:
    if key == "cost_usd":
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def _stated(
    values: Mapping[str, Any] | None, names: Mapping[str, str], source: str, place: str
) -> Usage:
    """The metrics a record states (``names``: metric -> its field there); a field that
    is there but not a number is a :class:`LoadError` naming it."""
    out: Usage = {}
    for key, name in names.items():
        value = (values or {}).get(name)
        if value is not None and not is_number(value):
            raise LoadError(source, f"{place}.{name}", f"expected a number, got {value!r}")
        out[key] = value
    return out


#: One attempt to read: (task, attempt, trial folder name, its usage as
#: :data:`~envloop_nb._loaders.harbor.trials.TRIAL` keeps it: JSON or None).
_Item = tuple[str, int, str, str | None]


def _items(attempts: pa.Table) -> list[_Item]:
    """The attempts' items, in order (a big job's a chunk at a time: a chunk's Python
    objects live while it is read; an Arrow slice would pickle its whole buffers)."""
    return list(
        zip(
            attempts.column("task").to_pylist(),
            attempts.column("attempt").to_pylist(),
            attempts.column("source_place").to_pylist(),
            attempts.column("usage").to_pylist(),
            strict=True,
        )
    )


@dataclass
class _Part:
    """What reading a run of attempts gave: a worker's chunk, or the whole job."""

    with_steps: int = 0
    without: int = 0
    rows: int = 0
    skipped: list[str] = field(default_factory=list)
    versions: Counter[str] = field(default_factory=Counter)
    missing: dict[str, int] = field(default_factory=dict)
    missing_refs: int = 0
    vs_steps: _Tally = field(default_factory=_Tally)
    ar_steps: _Tally = field(default_factory=_Tally)
    ar_final: _Tally = field(default_factory=_Tally)
    #: a worker's rows (its chunk, in order)
    table: pa.Table | None = None

    def merge(self, other: _Part) -> None:
        """Add a later run of attempts (lists keep their first :data:`_LISTED`)."""
        self.with_steps += other.with_steps
        self.without += other.without
        self.rows += other.rows
        self.skipped += other.skipped
        self.versions.update(other.versions)
        for shown, n in other.missing.items():
            if len(self.missing) < _LISTED:
                self.missing[shown] = n
        self.missing_refs += other.missing_refs
        for mine, theirs in (
            (self.vs_steps, other.vs_steps),
            (self.ar_steps, other.ar_steps),
            (self.ar_final, other.ar_final),
        ):
            mine.merge(theirs)


_FINAL_NAMES = {key: f"total_{key}" for key, _ in USAGE}


def _read_part(folder: Path, items: Sequence[_Item], *, lenient: bool, sink: StepSink) -> _Part:
    """Read the attempts' trajectories in order, each attempt's rows to ``sink`` once it
    was read whole."""
    out = _Part()
    for task, attempt, name, usage in items:
        path = folder / name / TRAJECTORY
        if not path.is_file():
            out.without += 1
            continue
        shown = f"{name}/{TRAJECTORY}"
        held = _Attempt()
        try:
            got = read_atif(held, task=task, attempt=attempt, path=path, relative_to=folder)
            final = _stated(got.final_metrics, _FINAL_NAMES, shown, "final_metrics")
        except LoadError as err:
            if not lenient:
                raise
            out.skipped.append(str(err))
            continue
        out.with_steps += 1
        out.rows += held.write_to(sink)
        out.versions[str(got.schema_version)] += 1
        if got.missing_subagents:
            out.missing_refs += len(got.missing_subagents)
            if len(out.missing) < _LISTED:
                out.missing[shown] = len(got.missing_subagents)
        sums = held.sums()
        agent_result = (
            None if usage is None else dict(zip(USAGE_FIELDS, json.loads(usage), strict=True))
        )
        result_path = str(folder / name / "result.json")
        stated = _stated(agent_result, _AGENT_RESULT, result_path, "agent_result")
        out.vs_steps.count(name, final, sums)
        out.ar_steps.count(name, stated, sums)
        out.ar_final.count(name, stated, final)
    return out


def _read_chunk(folder: str, items: list[_Item], lenient: bool) -> _Part:
    """A worker's chunk: its rows as one Arrow batch (a :class:`LoadError` is raised in
    the parent when it reaches the chunk, in order: see :func:`.pool.in_order`)."""
    held = HeldRows()
    out = _read_part(Path(folder), items, lenient=lenient, sink=held)
    out.table = rows_table(held.rows) if held.rows else None
    return out


def read_trial_steps(
    writer: StepWriter,
    folder: Path,
    attempts: pa.Table,
    *,
    lenient: bool,
) -> dict[str, Any]:
    """Write the steps of every attempt (``attempts``: the job's in order, with ``task``,
    ``attempt`` and :data:`~envloop_nb._loaders.harbor.trials.TRIAL`'s ``source_place``
    and ``usage``) whose trial folder holds :data:`TRAJECTORY`; return the job's
    ``extra["steps"]``.

    ``{"source": "atif", "file", "attempts_with_steps", "attempts_without", "skipped",
    "rows", "schema_versions", "missing_subagents", "final_metrics_vs_steps",
    "agent_result_vs_steps", "agent_result_vs_final_metrics"}`` (each comparison
    ``{"agree", "differ", "not_compared", "differ_at"}``, ``differ_at`` listing the first
    differing trials with ``{metric: [first, second]}``); ``skipped_at`` names the
    unreadable files under ``lenient``. A job none of whose trials holds a trajectory
    gives ``{"source": None, "why", "attempts_without"}``.

    A job of :data:`~envloop_nb._loaders.harbor.pool.PARALLEL_FROM` attempts or more is
    read by worker processes (:func:`~envloop_nb._loaders.harbor.pool.workers`),
    :data:`~envloop_nb._loaders.harbor.pool.CHUNK` attempts each time, the rows written
    in the attempts' order: the same rows, counts and errors as one process (the first
    error in the attempts' order is the one raised).

    Raises
    ------
    LoadError
        A trajectory that cannot be read (naming ``<trial>/agent/trajectory.json`` and
        the step), unless ``lenient``.
    """
    workers = pool.workers(attempts.num_rows)
    if workers > 1:
        got = _Part()
        size = pool.CHUNK
        chunks = (
            (str(folder), _items(attempts.slice(i, size)), lenient)
            for i in range(0, attempts.num_rows, size)
        )
        for part in pool.in_order(_read_chunk, chunks, workers=workers):
            if part.table is not None:
                writer.add_table(part.table)
            got.merge(part)
    else:
        got = _read_part(folder, _items(attempts), lenient=lenient, sink=writer)
    return _summary(folder, got)


def _summary(folder: Path, got: _Part) -> dict[str, Any]:
    skipped = got.skipped
    if skipped:
        warnings.warn(
            f"{folder}: skipped the steps of {len(skipped)} attempt(s) whose trajectory "
            f"could not be read (the attempts are loaded without steps); first: {skipped[0]}",
            LoadWarning,
            stacklevel=3,
        )
    if not got.with_steps and not skipped:
        return {
            "source": None,
            "why": f"no trial folder holds {TRAJECTORY} (the agent wrote no ATIF trajectory)",
            "attempts_without": got.without,
        }
    out: dict[str, Any] = {
        "source": "atif",
        "file": TRAJECTORY,
        "attempts_with_steps": got.with_steps,
        "attempts_without": got.without,
        "skipped": len(skipped),
        "rows": got.rows,
        "schema_versions": dict(sorted(got.versions.items())),
        "missing_subagents": {"refs": got.missing_refs, "at": got.missing},
        "final_metrics_vs_steps": got.vs_steps.summary(),
        "agent_result_vs_steps": got.ar_steps.summary(),
        "agent_result_vs_final_metrics": got.ar_final.summary(),
    }
    return out | ({"skipped_at": skipped[:_LISTED]} if skipped else {})
