"""A Harbor job's steps: each trial folder's ATIF trajectory (``agent/trajectory.json``,
with its continuation and sub-agent files beside it) read as that attempt's steps by
:func:`envloop_nb._loaders.harbor.atif.read_atif`. Used by
:func:`envloop_nb._loaders.harbor.job.load_harbor`.

A trial without the file has no steps (counted, never invented). An attempt's rows are
handed to the load's one :class:`~envloop_nb._store.steps.StepWriter` only once its
trajectory was read whole, so under ``lenient=True`` a trajectory that cannot be read
leaves its attempt without steps — counted and named in a
:class:`~envloop_nb.LoadWarning` — and never half-written.

What the files say about their own usage is compared, never corrected: each
trajectory's ``final_metrics`` totals against the sums of its rows, and the trial's
``agent_result`` (``n_input_tokens``, ``n_output_tokens``, ``n_cache_tokens``,
``cost_usd``) against both. The counts of attempts that agree / differ (and the first
differing ones, with the values) go to the job's ``extra["steps"]``.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._errors import LoadError, LoadWarning
from ..._store.steps import HeldRows, StepWriter
from ..common.values import is_number
from .atif import USAGE, read_atif

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
            known = [row[column] for row in self.rows if row.get(column) is not None]
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


def read_trial_steps(
    writer: StepWriter,
    folder: Path,
    attempts: Sequence[tuple[str, int, Mapping[str, Any]]],
    *,
    lenient: bool,
) -> dict[str, Any]:
    """Write the steps of every attempt (``(task, attempt, trial)``, the trial as
    :func:`~envloop_nb._loaders.harbor.trials.read_trials` read it) whose trial folder
    holds :data:`TRAJECTORY`; return the job's ``extra["steps"]``.

    ``{"source": "atif", "file", "attempts_with_steps", "attempts_without", "skipped",
    "rows", "schema_versions", "missing_subagents", "final_metrics_vs_steps",
    "agent_result_vs_steps", "agent_result_vs_final_metrics"}`` (each comparison
    ``{"agree", "differ", "not_compared", "differ_at"}``, ``differ_at`` listing the first
    differing trials with ``{metric: [first, second]}``); ``skipped_at`` names the
    unreadable files under ``lenient``. A job none of whose trials holds a trajectory
    gives ``{"source": None, "why", "attempts_without"}``.

    Raises
    ------
    LoadError
        A trajectory that cannot be read (naming ``<trial>/agent/trajectory.json`` and
        the step), unless ``lenient``.
    """
    with_steps = without = rows = 0
    skipped: list[str] = []
    versions: Counter[str] = Counter()
    missing: dict[str, int] = {}
    missing_refs = 0
    vs_steps, ar_steps, ar_final = _Tally(), _Tally(), _Tally()
    final_names = {key: f"total_{key}" for key, _ in USAGE}
    for task, attempt, trial in attempts:
        name = str(trial["_folder"])
        path = folder / name / TRAJECTORY
        if not path.is_file():
            without += 1
            continue
        shown = f"{name}/{TRAJECTORY}"
        held = _Attempt()
        try:
            got = read_atif(held, task=task, attempt=attempt, path=path, relative_to=folder)
            final = _stated(got.final_metrics, final_names, shown, "final_metrics")
        except LoadError as err:
            if not lenient:
                raise
            skipped.append(str(err))
            continue
        with_steps += 1
        rows += held.write_to(writer)
        versions[str(got.schema_version)] += 1
        if got.missing_subagents:
            missing_refs += len(got.missing_subagents)
            if len(missing) < _LISTED:
                missing[shown] = len(got.missing_subagents)
        sums = held.sums()
        stated = _stated(
            trial.get("agent_result"), _AGENT_RESULT, str(trial["_path"]), "agent_result"
        )
        vs_steps.count(name, final, sums)
        ar_steps.count(name, stated, sums)
        ar_final.count(name, stated, final)
    if skipped:
        warnings.warn(
            f"{folder}: skipped the steps of {len(skipped)} attempt(s) whose trajectory "
            f"could not be read (the attempts are loaded without steps); first: {skipped[0]}",
            LoadWarning,
            stacklevel=2,
        )
    if not with_steps and not skipped:
        return {
            "source": None,
            "why": f"no trial folder holds {TRAJECTORY} (the agent wrote no ATIF trajectory)",
            "attempts_without": without,
        }
    out: dict[str, Any] = {
        "source": "atif",
        "file": TRAJECTORY,
        "attempts_with_steps": with_steps,
        "attempts_without": without,
        "skipped": len(skipped),
        "rows": rows,
        "schema_versions": dict(sorted(versions.items())),
        "missing_subagents": {"refs": missing_refs, "at": missing},
        "final_metrics_vs_steps": vs_steps.summary(),
        "agent_result_vs_steps": ar_steps.summary(),
        "agent_result_vs_final_metrics": ar_final.summary(),
    }
    return out | ({"skipped_at": skipped[:_LISTED]} if skipped else {})
