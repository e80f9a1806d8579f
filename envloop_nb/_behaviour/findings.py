"""Diagnosis findings read from steps, each with the steps as evidence.

Checks (``code``: what it flags), run only for a job with steps (a job without steps
gets none of them, never an invented one):

``steps-looping``
    attempts that make the same call with the same arguments ``loop_min_repeat`` or more
    times in a row (a loop as :mod:`.patterns` defines it).
``tool-always-fails``
    a tool with at least ``tool_fail_min_results`` results, every one an error.
``stops-after-tool-error``
    attempts that do not pass whose last tool result is an error and that make no tool
    call after it: the agent gave up (or was stopped) on a tool error.

Each finding's ``numbers["steps"]`` lists the evidence as ``{"task", "attempt", "step"}``
(a loop also has ``last_step``), at most ``max_evidence`` of them, and its text names
them. :func:`diagnose` is :func:`envloop_nb._metrics.diagnosis.diagnose` plus these.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._metrics.counts import task_counts
from .._metrics.diagnosis import DiagnosisOptions, Finding, Findings
from .._metrics.diagnosis import diagnose as diagnose_attempts
from .._store.steps import has_steps
from .base import outcome_sql
from .patterns import loops_sql

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = ["StepCheckOptions", "diagnose", "step_findings"]

_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class StepCheckOptions:
    """Thresholds of the step checks (see :mod:`envloop_nb._behaviour.findings`).

    Examples
    --------
    >>> StepCheckOptions(loop_min_repeat=4).tool_fail_min_results
    3
    """

    loop_min_repeat: int = 3
    tool_fail_min_results: int = 3
    max_evidence: int = 8


def _where(rows: list[dict[str, Any]]) -> str:
    parts = []
    for r in rows:
        span = f"steps {r['step']}–{r['last_step']}" if "last_step" in r else f"step {r['step']}"
        parts.append(f"{r['task']} #{r['attempt']} {span}")
    return "; ".join(parts)


def _threshold(job: JobRef, options: DiagnosisOptions) -> float | None:
    """The pass of the attempt checks (as the attempt diagnosis decides it)."""
    if options.threshold is not None:
        return float(options.threshold)
    nonbinary = sum(task_counts(job.con, job.id).column("nonbinary").to_pylist())
    return None if nonbinary == 0 else float(options.graded_pass)


def _looping(job: JobRef, o: StepCheckOptions, threshold: float | None) -> list[Finding]:
    rows = job.con.execute(
        f"""WITH o AS ({outcome_sql("$job", threshold)}), l AS ({loops_sql()})
            SELECT l.task, l.attempt, l.tool, l.first_step, l.last_step, l.repeats, o.passed
            FROM l JOIN o USING (task, attempt)
            ORDER BY l.repeats DESC, l.task, l.attempt, l.first_step""",
        {"job": job.id, "min_repeat": o.loop_min_repeat},
    ).fetchall()
    if not rows:
        return []
    attempts = {(r[0], r[1]): r[6] for r in rows}
    failed = sum(p == 0 for p in attempts.values())
    passed = sum(p == 1 for p in attempts.values())
    shown = [{"task": r[0], "attempt": r[1], "step": r[3], "last_step": r[4], "tool": r[2],
              "repeats": r[5]} for r in rows[: o.max_evidence]]  # fmt: skip
    longest = "; ".join(
        f"{s['task']} #{s['attempt']} steps {s['step']}–{s['last_step']} ({s['tool']} ×{s['repeats']})"
        for s in shown
    )
    return [
        Finding(
            "steps-looping",
            "warning",
            "The agent repeats the same tool call (looping)",
            f"{len(attempts):,} attempt(s) make the same call with the same arguments "
            f"{o.loop_min_repeat} or more times in a row ({failed:,} failed, {passed:,} passed, "
            f"{len(attempts) - failed - passed:,} not scored). Longest: {longest}.",
            tuple(dict.fromkeys(r[0] for r in rows)),
            {"attempts": len(attempts), "failed": failed, "passed": passed, "steps": shown},
        )
    ]


def _always_fails(job: JobRef, o: StepCheckOptions) -> list[Finding]:
    found = job.con.execute(
        """WITH s AS (SELECT * FROM steps WHERE job_id = $job AND NOT copied),
                k AS (SELECT task, attempt, call_id, any_value(tool) AS tool FROM s
                      WHERE kind = 'tool_call' AND call_id IS NOT NULL GROUP BY ALL),
                r AS (SELECT s.task, s.attempt, s.step, coalesce(s.tool, k.tool) AS tool, s.is_error
                      FROM s LEFT JOIN k USING (task, attempt, call_id)
                      WHERE s.kind = 'tool_result')
           SELECT tool, count(*) AS results, count(DISTINCT (task, attempt)) AS attempts,
                  list({'task': task, 'attempt': attempt, 'step': step}
                       ORDER BY task, attempt, step)[1:$max] AS steps
           FROM r WHERE tool IS NOT NULL GROUP BY tool
           HAVING count(*) >= $min AND bool_and(is_error)
           ORDER BY results DESC, tool""",
        {"job": job.id, "min": o.tool_fail_min_results, "max": o.max_evidence},
    ).fetchall()
    out = []
    for tool, results, attempts, steps in found:
        out.append(
            Finding(
                "tool-always-fails",
                "error",
                f"Tool {tool!r} always fails",
                f"all {results:,} results of {tool!r} in {attempts:,} attempt(s) are errors: "
                f"check the tool and its sandbox before reading this as model behaviour. "
                f"First: {_where(steps)}.",
                tuple(dict.fromkeys(s["task"] for s in steps)),
                {"tool": tool, "results": results, "attempts": attempts, "steps": steps},
            )
        )
    return out


def _stops_after_error(job: JobRef, o: StepCheckOptions, threshold: float | None) -> list[Finding]:
    rows = job.con.execute(
        f"""WITH o AS ({outcome_sql("$job", threshold)}),
                 a AS (SELECT task, attempt, max(step) AS n,
                              max(step) FILTER (WHERE kind = 'tool_call' AND NOT copied) AS last_call,
                              arg_max(step, step) FILTER (WHERE kind = 'tool_result' AND NOT copied)
                                  AS last_result,
                              arg_max(is_error, step) FILTER (WHERE kind = 'tool_result'
                                                              AND NOT copied) AS last_failed
                       FROM steps WHERE job_id = $job GROUP BY task, attempt)
            SELECT a.task, a.attempt, a.last_result, a.n, o.passed FROM a JOIN o USING (task, attempt)
            WHERE a.last_failed AND (a.last_call IS NULL OR a.last_call < a.last_result)
              AND o.passed IS DISTINCT FROM 1
            ORDER BY a.task, a.attempt""",
        {"job": job.id},
    ).fetchall()
    if not rows:
        return []
    shown = [{"task": r[0], "attempt": r[1], "step": r[2]} for r in rows[: o.max_evidence]]
    ends = [r[3] - r[2] for r in rows]
    return [
        Finding(
            "stops-after-tool-error",
            "warning",
            "The agent stops after a tool error",
            f"{len(rows):,} attempt(s) that do not pass end on a failed tool call: no tool "
            f"call follows their last tool result, an error (ended {min(ends)}–{max(ends)} "
            f"steps later). The error: {_where(shown)}.",
            tuple(dict.fromkeys(r[0] for r in rows)),
            {"attempts": len(rows), "steps": shown},
        )
    ]


def step_findings(
    job: JobRef,
    *,
    options: DiagnosisOptions | None = None,
    steps: StepCheckOptions | None = None,
) -> list[Finding]:
    """The step checks' findings (none for a job without steps).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> step_findings(job)
    []
    """
    if not has_steps(job.con, job.id):
        return []
    o = steps or StepCheckOptions()
    threshold = _threshold(job, options or DiagnosisOptions())
    return [
        *_always_fails(job, o),
        *_looping(job, o, threshold),
        *_stops_after_error(job, o, threshold),
    ]


def diagnose(
    job: JobRef,
    *,
    against: JobRef | None = None,
    options: DiagnosisOptions | None = None,
    steps: StepCheckOptions | None = None,
    **overrides: Any,
) -> Findings:
    """Every attempt check (:func:`envloop_nb._metrics.diagnosis.diagnose`) and, for a
    job with steps, the step checks; errors first. ``overrides`` replace single
    thresholds of either (``loop_min_repeat=4``, ``looping_min_turns=50``)."""
    step_names = {f.name for f in dataclasses.fields(StepCheckOptions)}
    mine = {k: v for k, v in overrides.items() if k in step_names}
    rest = {k: v for k, v in overrides.items() if k not in step_names}
    o = replace(options or DiagnosisOptions(), **rest)
    s = replace(steps or StepCheckOptions(), **mine)
    found = list(diagnose_attempts(job, against=against, options=o))
    if "not_diagnosed" not in [f.code for f in found]:
        found += step_findings(job, options=o, steps=s)
    found.sort(key=lambda f: _ORDER[f.severity])
    return Findings(found)
