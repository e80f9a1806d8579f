"""A τ-bench / τ²-bench load's steps: each trial's messages through its reader
(:mod:`~envloop_nb._loaders.taubench.steps`), into one :class:`StepWriter` per load.

**A malformed message** fails the load with the reader's :class:`LoadError` (file and
message), its place followed by the trial (``[13].traj[20] (task_id 13, trial 1)``).
Under ``lenient=True`` that trial keeps its attempt but gets no steps — none of its
rows: a trial's rows are held until its reader finished, then written — and the load
warns (:class:`~envloop_nb.LoadWarning`) how many trials' steps it skipped.

**Steps and attempts agree.** After the last trial, one SQL over the job's rows checks,
for each attempt with steps, that its ``turns`` (the assistant messages) equals the
steps' assistant turns and, for τ², that its ``cost_usd`` (the simulation's
``agent_cost``) equals the sum of the steps' cost where the messages state one. The
job's ``extra["steps"]`` says where the steps came from and what the checks found::

    {"source": "read_tau2_steps", "attempts_with_steps": 5, "attempts_without": 1,
     "skipped": 0, "turns_differ": 0,
     "agent_cost": {"agree": 0, "differ": 0, "steps_without_cost": 5}}

(``attempts_without``: trials with no messages; ``skipped``: under ``lenient``, trials
whose messages were malformed, the first as ``first_skipped``; a disagreement's first
attempt as ``first_differ``, with both values.)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError, LoadWarning
from ..._store.steps import HeldRows, StepSink, StepWriter

__all__ = ["TrialSteps"]

#: Relative tolerance of ``agent_cost`` against the sum of the steps' cost (a float sum).
COST_TOLERANCE = 1e-9

_AGREEMENT = """
WITH s AS (
    SELECT task, attempt,
           count(DISTINCT turn) FILTER (WHERE role = 'assistant') AS turns,
           sum(cost_usd) AS cost
    FROM steps WHERE job_id = $job GROUP BY task, attempt),
both_ AS (
    SELECT a.task, a.attempt, a.source_place AS place, a.turns AS a_turns,
           s.turns AS s_turns, a.cost_usd AS a_cost, s.cost AS s_cost,
           a.turns IS DISTINCT FROM s.turns AS turns_differ,
           a.cost_usd IS NOT NULL AND s.cost IS NOT NULL AS priced,
           abs(a.cost_usd - s.cost)
               > $tol * greatest(abs(a.cost_usd), abs(s.cost)) + 1e-12 AS cost_differs
    FROM s JOIN attempts a
      ON a.job_id = $job AND a.task = s.task AND a.attempt = s.attempt)
SELECT
    count(*) FILTER (WHERE turns_differ),
    arg_min(json_object('place', place, 'attempt', a_turns, 'steps', s_turns),
            (task, attempt)) FILTER (WHERE turns_differ),
    count(*) FILTER (WHERE priced AND NOT cost_differs),
    count(*) FILTER (WHERE priced AND cost_differs),
    arg_min(json_object('place', place, 'attempt', a_cost, 'steps', s_cost),
            (task, attempt)) FILTER (WHERE priced AND cost_differs),
    count(*) FILTER (WHERE a_cost IS NOT NULL AND s_cost IS NULL)
FROM both_
"""


@dataclass
class TrialSteps:
    """The steps of one load's trials (``reader``: the reader's name, for ``extra``;
    ``cost``: whether attempts state the agent's cost to check against the steps)."""

    con: duckdb.DuckDBPyConnection
    job_id: str
    source: Path
    reader: str
    lenient: bool
    cost: bool = False
    with_steps: int = 0
    without: int = 0
    skipped: list[str] = field(default_factory=list)
    writer: StepWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = StepWriter(self.con, self.job_id)

    def add(self, messages: list[Any], read: Callable[[StepSink], object], *, trial: str) -> None:
        """Read one trial's ``messages`` with ``read`` (the reader, given a writer);
        ``trial`` names it in an error (``"task_id 13, trial 1"``)."""
        if not messages:
            self.without += 1
            return
        held = HeldRows()
        try:
            read(held)
        except LoadError as err:
            named = LoadError(err.source, f"{err.place} ({trial})", err.problem)
            if not self.lenient:
                raise named from err
            self.skipped.append(str(named))
            return
        held.write_to(self.writer)
        self.with_steps += 1

    def finish(self) -> dict[str, Any]:
        """Write what is left and check the steps against the attempts (already staged);
        returns the job's ``extra["steps"]``. Warns when trials' steps were skipped."""
        self.writer.close()
        row = self.con.execute(_AGREEMENT, {"job": self.job_id, "tol": COST_TOLERANCE}).fetchone()
        assert row is not None
        turns_differ, first_turns, agree, differ, first_cost, unpriced = row
        out: dict[str, Any] = {
            "source": self.reader,
            "attempts_with_steps": self.with_steps,
            "attempts_without": self.without,
            "skipped": len(self.skipped),
            "turns_differ": turns_differ,
        }
        if turns_differ:
            out["first_turns_differ"] = _json(first_turns)
        if self.cost:
            cost: dict[str, Any] = {
                "agree": agree,
                "differ": differ,
                "steps_without_cost": unpriced,
            }
            if differ:
                cost["first_differ"] = _json(first_cost)
            out["agent_cost"] = cost
        if self.skipped:
            out["first_skipped"] = self.skipped[0]
            warnings.warn(
                f"{self.source}: skipped the steps of {len(self.skipped)} trial(s) with a "
                f"malformed message (their attempts are kept, without steps); first: "
                f"{self.skipped[0]}",
                LoadWarning,
                stacklevel=8,  # at the user's ws.load(...)
            )
        return out


def _json(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text
