"""Per tool: how often it is called, how often it fails, and how attempts using it fare.

For each tool name (``steps.tool`` of the tool calls; replayed context left out):

``calls``
    Its tool calls.
``attempts``
    Attempts with at least one call of it; ``calls_per_attempt`` = calls / attempts.
``results``, ``errors``, ``error_rate``
    Its tool results (a result without a tool name takes the name of the call its
    ``call_id`` answers; a result naming neither is *unattributed*, counted in
    :attr:`ToolStats.unattributed_results`) and those with ``is_error``; the rate is
    errors / results (null without results).
``pass_with`` / ``pass_without``
    The pass rate of scored attempts with steps that used the tool / that did not
    (passes / scored attempts; unscored attempts in neither).
Each rate has ``_low`` / ``_high``: the task bootstrap (see :mod:`.base`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Basis, basis, interval_columns, outcome_sql, task_intervals

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = ["TOOL_COLUMNS", "ToolStats", "tool_stats"]

#: The columns of :attr:`ToolStats.tools`, in order.
TOOL_COLUMNS = (
    "tool", "calls", "attempts", "calls_per_attempt", "results", "errors", "error_rate",
    "error_rate_low", "error_rate_high", "passed_with", "scored_with", "pass_with",
    "pass_with_low", "pass_with_high", "passed_without", "scored_without", "pass_without",
    "pass_without_low", "pass_without_high",
)  # fmt: skip

_RATES = (
    ("error_rate", "errors", "results"),
    ("pass_with", "passed_with", "scored_with"),
    ("pass_without", "passed_without", "scored_without"),
)


@dataclass(frozen=True)
class ToolStats:
    """Per-tool statistics of one job (see the module docstring).

    Attributes
    ----------
    tools
        One row per tool, most called first (:data:`TOOL_COLUMNS`); empty without steps.
    basis
        The attempts counted (:class:`~envloop_nb._behaviour.base.Basis`).
    unattributed_results
        Tool results that name no tool and answer no known call (in no tool's rate).
    method
        How the intervals were made.
    """

    tools: pd.DataFrame
    basis: Basis
    unattributed_results: int
    method: str

    def _repr_html_(self) -> str:
        from .._present.behaviour_html import tool_table_html

        return tool_table_html(self.tools, note=html.escape(str(self.basis)))


def _per_task_sql(threshold: float | None) -> str:
    return f"""
    WITH o AS ({outcome_sql("$job", threshold)}),
    s AS (SELECT task, attempt, kind, tool, call_id, is_error FROM steps
          WHERE job_id = $job AND NOT copied AND kind IN ('tool_call', 'tool_result')),
    known AS (SELECT task, attempt, call_id, any_value(tool) AS tool FROM s
              WHERE kind = 'tool_call' AND call_id IS NOT NULL GROUP BY ALL),
    r AS (SELECT s.task, s.attempt, coalesce(s.tool, k.tool) AS tool, s.is_error
          FROM s LEFT JOIN known k USING (task, attempt, call_id) WHERE s.kind = 'tool_result'),
    per AS (SELECT tool, task, attempt, sum(calls) AS calls, sum(results) AS results,
                   sum(errors) AS errors
            FROM (SELECT tool, task, attempt, count(*) AS calls, 0 AS results, 0 AS errors
                  FROM s WHERE kind = 'tool_call' GROUP BY ALL
                  UNION ALL
                  SELECT tool, task, attempt, 0, count(*), count_if(is_error)
                  FROM r WHERE tool IS NOT NULL GROUP BY ALL)
            GROUP BY ALL),
    w AS (SELECT per.tool, per.task, sum(per.calls) AS calls,
                 count(*) FILTER (WHERE per.calls > 0) AS attempts,
                 sum(per.results) AS results, sum(per.errors) AS errors,
                 count(*) FILTER (WHERE per.calls > 0 AND o.passed = 1) AS passed_with,
                 count(*) FILTER (WHERE per.calls > 0 AND o.passed IS NOT NULL) AS scored_with
          FROM per JOIN o USING (task, attempt) GROUP BY ALL),
    tt AS (SELECT o.task, count(*) FILTER (WHERE o.passed = 1) AS passed,
                  count(*) FILTER (WHERE o.passed IS NOT NULL) AS scored
           FROM o JOIN (SELECT DISTINCT task, attempt FROM steps WHERE job_id = $job)
                USING (task, attempt)
           GROUP BY ALL),
    names AS (SELECT DISTINCT tool FROM w)
    SELECT names.tool, tt.task,
           coalesce(w.calls, 0)::BIGINT AS calls, coalesce(w.attempts, 0)::BIGINT AS attempts,
           coalesce(w.results, 0)::BIGINT AS results, coalesce(w.errors, 0)::BIGINT AS errors,
           coalesce(w.passed_with, 0)::BIGINT AS passed_with,
           coalesce(w.scored_with, 0)::BIGINT AS scored_with,
           (tt.passed - coalesce(w.passed_with, 0))::BIGINT AS passed_without,
           (tt.scored - coalesce(w.scored_with, 0))::BIGINT AS scored_without
    FROM names CROSS JOIN tt LEFT JOIN w USING (tool, task)
    ORDER BY names.tool, tt.task
    """


_UNATTRIBUTED = """
    SELECT count(*) FROM steps r
    WHERE r.job_id = $job AND NOT r.copied AND r.kind = 'tool_result' AND r.tool IS NULL
      AND NOT EXISTS (SELECT 1 FROM steps c
                      WHERE c.job_id = r.job_id AND c.task = r.task AND c.attempt = r.attempt
                        AND c.kind = 'tool_call' AND c.call_id = r.call_id AND NOT c.copied)
"""


def tool_stats(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    threshold: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ToolStats:
    """Per-tool calls, errors and pass rates with and without the tool (module docstring).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(job.con, job.id)
    >>> w.add({"task": "A", "attempt": 1, "step": 1, "role": "assistant", "kind": "tool_call",
    ...        "tool": "ls", "call_id": "c"})
    >>> w.add({"task": "A", "attempt": 1, "step": 2, "role": "tool", "kind": "tool_result",
    ...        "call_id": "c", "is_error": True})
    >>> w.close()
    2
    >>> t = tool_stats(job.con, job.id, resamples=100).tools
    >>> t[["tool", "calls", "attempts", "results", "errors", "error_rate"]].values.tolist()
    [['ls', 1, 1, 1, 1, 1.0]]
    """
    import pandas as pd

    base = basis(con, job_id, threshold)
    per_task = con.execute(_per_task_sql(threshold), {"job": job_id}).df()
    row = con.execute(_UNATTRIBUTED, {"job": job_id}).fetchone()
    unattributed = int(row[0]) if row else 0
    tasks = sorted(set(per_task["task"]))
    method = (
        f"percentile task bootstrap ({resamples:,} resamples of the {len(tasks):,} tasks with "
        f"replacement, attempts and their steps staying with their task, seed {seed}), "
        f"{confidence:.0%} intervals"
    )
    if not len(per_task):
        empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "tool" else "float64")
                              for c in TOOL_COLUMNS})  # fmt: skip
        return ToolStats(empty, base, unattributed, method)
    counts = ["calls", "attempts", "results", "errors", "passed_with", "scored_with",
              "passed_without", "scored_without"]  # fmt: skip
    totals = per_task.groupby("tool", sort=False)[counts].sum().reset_index()
    ivs = task_intervals(
        per_task, key="tool", rates=_RATES, tasks=tasks,
        resamples=resamples, seed=seed, confidence=confidence,
    )  # fmt: skip
    for name, _, _ in _RATES:
        totals = interval_columns(totals, ivs, key="tool", name=name)
    totals["calls_per_attempt"] = totals["calls"] / totals["attempts"].where(totals["attempts"] > 0)
    totals = totals.sort_values(["calls", "tool"], ascending=[False, True], kind="stable")
    frame = totals[list(TOOL_COLUMNS)].reset_index(drop=True)
    return ToolStats(frame.astype({c: "int64" for c in counts}), base, unattributed, method)
