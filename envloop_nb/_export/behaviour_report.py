"""The HTML report's Behaviour sections (a job's, and the compared jobs' side by side).

Only for jobs with steps: a job without steps gets no section; in a comparison, a job
without steps is a row saying ``no steps recorded``, and the section is left out when no
compared job has steps.
"""

from __future__ import annotations

from .._behaviour.patterns import action_patterns
from .._behaviour.tools import tool_stats
from .._behaviour.turns import turn_stats
from .._compare.behaviour import survival_table, tool_table, turn_table
from .._compare.state import CompareState, colors
from .._present import behaviour_charts
from .._present.behaviour_html import behaviour_html, compare_behaviour_html
from .._present.report_html import ReportSection
from .._store.ref import JobRef
from .._store.steps import has_tool_calls

__all__ = ["behaviour_section", "compare_behaviour_section"]


def behaviour_section(job: JobRef, threshold: float | None) -> ReportSection | None:
    """The job's Behaviour section (turns, tools, patterns, charts); None without tool
    calls among its steps."""
    if not has_tool_calls(job.con, job.id):
        return None
    tools = tool_stats(job.con, job.id, threshold=threshold)
    turns = turn_stats(job.con, job.id, threshold=threshold)
    patterns = action_patterns(job.con, job.id, threshold=threshold)
    specs = [behaviour_charts.survival_chart(turns.survival).to_dict()]
    if len(turns.steps):
        specs.append(behaviour_charts.pass_by_steps_chart(turns.steps).to_dict())
    if len(tools.tools):
        specs.append(behaviour_charts.tool_pass_chart(tools.tools).to_dict())
    body = behaviour_html(
        basis=str(turns.basis), summary=turns.summary(), steps=turns.steps, tools=tools.tools,
        ngrams=patterns.ngrams, loops=patterns.loops, after=patterns.after_success,
        method=tools.method,
    )  # fmt: skip
    return ReportSection("Behaviour", body, charts=tuple(specs))


def compare_behaviour_section(state: CompareState) -> ReportSection | None:
    """The compared jobs' behaviour side by side; None when no compared job's steps hold a
    tool call."""
    if not any(has_tool_calls(state.con, j) for j in state.job_ids):
        return None
    turns = turn_table(state)
    tools = tool_table(state)
    survival = survival_table(state)
    shown = {j: c for j, c in colors(state).items() if j in set(survival["job"])}
    chart = behaviour_charts.survival_chart(survival, colors=shown).to_dict()
    body = compare_behaviour_html(turns, tools, mark=str(turns.attrs["mark"]))
    return ReportSection("Behaviour", body, charts=(chart,), note=str(turns.attrs["mark"]))
