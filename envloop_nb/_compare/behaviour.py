"""The compared jobs' behaviour side by side: per tool, per turn, action patterns.

Each job's numbers are its own (:mod:`envloop_nb._behaviour`, under the comparison's
threshold, resamples, seed and confidence), put in long frames with a ``job`` column in
comparison order. The guard's rules hold here too: every frame carries the
incomparability mark (``frame.attrs["mark"]``), and a ``comparable`` column says, per
job, whether it ran the same frozen work as the baseline (no blocking difference) — an
incomparable job is marked, never silently compared. A job without steps has no rows
in the tool and pattern frames and a row saying ``no steps recorded`` in
:func:`turn_table`; ``frame.attrs["without_steps"]`` names those jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._behaviour.patterns import action_patterns
from .._behaviour.tools import tool_stats
from .._behaviour.turns import turn_stats
from .._store.steps import has_steps
from .guard import mark, pair_blockers
from .state import CompareState

if TYPE_CHECKING:
    import pandas as pd
else:
    from .state import pandas as pd

__all__ = ["pattern_table", "survival_table", "tool_table", "turn_table"]


def _comparable(state: CompareState) -> dict[str, bool]:
    """Job -> no blocking difference with the baseline (the baseline: True)."""
    key = ("behaviour_comparable", state.baseline)
    if key not in state.views:
        state.views[key] = {
            j: j == state.baseline or not pair_blockers(state, state.baseline, j)
            for j in state.job_ids
        }
    found: dict[str, bool] = state.views[key]
    return found


def _stepped(state: CompareState) -> list[str]:
    if "behaviour_stepped" not in state.data:
        state.data["behaviour_stepped"] = [j for j in state.job_ids if has_steps(state.con, j)]
    found: list[str] = state.data["behaviour_stepped"]
    return found


def _per_job(state: CompareState, what: str, make: Any) -> dict[str, Any]:
    """``make(job_id)`` of every job with steps, memoized on the state."""
    key = ("behaviour", what)
    if key not in state.data:
        state.data[key] = {j: make(j) for j in _stepped(state)}
    found: dict[str, Any] = state.data[key]
    return found


def _marked(state: CompareState, frame: pd.DataFrame) -> pd.DataFrame:
    ok = _comparable(state)
    if "job" in frame.columns:
        frame.insert(1, "comparable", [ok[j] for j in frame["job"]])
    frame.attrs["mark"] = mark(state)
    frame.attrs["without_steps"] = [j for j in state.job_ids if j not in _stepped(state)]
    return frame


def _options(state: CompareState) -> dict[str, Any]:
    return {"threshold": state.threshold, "resamples": state.resamples, "seed": state.seed,
            "confidence": state.confidence}  # fmt: skip


def tool_table(state: CompareState) -> pd.DataFrame:
    """One row per (job, tool): :data:`envloop_nb._behaviour.tools.TOOL_COLUMNS` with
    ``job`` and ``comparable`` first."""
    stats = _per_job(state, "tools", lambda j: tool_stats(state.con, j, **_options(state)))
    parts = [s.tools.assign(job=j) for j, s in stats.items() if len(s.tools)]
    if not parts:
        from .._behaviour.tools import TOOL_COLUMNS

        return _marked(state, pd.DataFrame(columns=["job", *TOOL_COLUMNS]))
    frame = pd.concat(parts, ignore_index=True)
    return _marked(state, frame[["job", *[c for c in frame.columns if c != "job"]]])


def turn_table(state: CompareState) -> pd.DataFrame:
    """One row per job: attempts with steps, passed / failed / not scored, median steps,
    attempts with an error and their share, median first error step, attempts with a
    loop, and ``note`` (``no steps recorded`` for a job without steps)."""
    turns = _per_job(state, "turns", lambda j: turn_stats(state.con, j, **_options(state)))
    patterns = _per_job(
        state, "patterns", lambda j: action_patterns(state.con, j, threshold=state.threshold)
    )
    rows = []
    for j in state.job_ids:
        if j not in turns:
            rows.append({"job": j, "note": "no steps recorded"})
            continue
        t, b = turns[j], turns[j].basis
        loops = patterns[j].loop_attempts()
        rows.append({
            "job": j, "attempts": b.attempts, "passed": b.passed, "failed": b.failed,
            "unscored": b.unscored, **{k: v for k, v in t.summary().items() if k != "attempts"},
            "loop_attempts": sum(loops.values()), "note": "",
        })  # fmt: skip
    return _marked(state, pd.DataFrame(rows))


def survival_table(state: CompareState) -> pd.DataFrame:
    """``job, step, no_error, share``: each job's survival curve (jobs with steps)."""
    turns = _per_job(state, "turns", lambda j: turn_stats(state.con, j, **_options(state)))
    parts = [t.survival.assign(job=j) for j, t in turns.items() if len(t.survival)]
    if not parts:
        return _marked(state, pd.DataFrame(columns=["job", "step", "no_error", "share"]))
    frame = pd.concat(parts, ignore_index=True)
    return _marked(state, frame[["job", "step", "no_error", "share"]])


def pattern_table(state: CompareState) -> pd.DataFrame:
    """One row per (job, n-gram): the :class:`~envloop_nb._behaviour.patterns.ActionPatterns`
    n-grams of every job with steps, ``job`` and ``comparable`` first."""
    patterns = _per_job(
        state, "patterns", lambda j: action_patterns(state.con, j, threshold=state.threshold)
    )
    parts = [p.ngrams.assign(job=j) for j, p in patterns.items() if len(p.ngrams)]
    if not parts:
        return _marked(state, pd.DataFrame(columns=["job", "n", "pattern"]))
    frame = pd.concat(parts, ignore_index=True)
    return _marked(state, frame[["job", *[c for c in frame.columns if c != "job"]]])
