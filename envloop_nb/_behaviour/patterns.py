"""Action patterns: which tool-call sequences failing and passing attempts make, loops,
and what an attempt does after its last successful tool call.

An attempt's *call sequence* is its tool calls in step order, one sequence per agent
(the attempt's own agent, and each sub-agent apart), replayed context left out; the
other steps (text, results) between two calls do not break it.

``ngrams``
    Every run of ``n`` consecutive calls (``n = 1..3``) of a call sequence, as the tool
    names joined with ``" → "``. Per n-gram: its occurrences and the attempts containing
    it among failed and among passed attempts, and the share of failed / passed attempts
    containing it (``share_failed - share_passed``: ``difference``). Unscored attempts are
    in neither. The ``top`` n-grams per ``n`` by attempts containing them are kept.
``loops``
    A *loop* is ``min_repeat`` (default 3) or more consecutive calls of one call
    sequence with the same tool and the same arguments (JSON compared after minifying:
    whitespace ignored, key order as written; two calls without arguments are equal).
    One row per loop: ``task, attempt, agent, tool, arguments, first_step, last_step,
    repeats, outcome`` (``passed`` / ``failed`` / ``not scored``).
``after_success``
    The *last successful tool call* of an attempt is its last tool result that is not
    an error; the steps after it are the attempt's length minus that result's step. Per
    outcome: attempts, those with a successful call, and the mean / median / max steps
    after it (attempts without a successful call are in no mean: null, not 0).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Basis, basis, outcome_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = ["ActionPatterns", "action_patterns", "loops_sql"]

_OUTCOME = "CASE passed WHEN 1 THEN 'passed' WHEN 0 THEN 'failed' ELSE 'not scored' END"


@dataclass(frozen=True)
class ActionPatterns:
    """N-grams, loops and steps after the last successful call of one job.

    Attributes
    ----------
    ngrams, loops, after_success
        See the module docstring.
    basis
        The attempts counted.
    min_repeat
        Consecutive identical calls that make a loop.
    """

    ngrams: pd.DataFrame
    loops: pd.DataFrame
    after_success: pd.DataFrame
    basis: Basis
    min_repeat: int

    def loop_attempts(self) -> dict[str, int]:
        """Attempts with at least one loop, by outcome (``passed``/``failed``/``not scored``)."""
        if not len(self.loops):
            return {}
        per = self.loops.drop_duplicates(["task", "attempt"])["outcome"].value_counts()
        return {str(k): int(v) for k, v in per.items()}

    def _repr_html_(self) -> str:
        from .._present.behaviour_html import patterns_html

        return patterns_html(
            self.ngrams, self.loops, self.after_success, note=html.escape(str(self.basis))
        )


def loops_sql(min_repeat_param: str = "$min_repeat") -> str:
    """SQL of the job's loops (``$job``; see the module docstring), without outcomes."""
    return f"""
    WITH c AS (
        SELECT task, attempt, agent, step, tool, json(arguments)::VARCHAR AS args,
               row_number() OVER (PARTITION BY task, attempt, agent ORDER BY step) AS i,
               row_number() OVER (PARTITION BY task, attempt, agent, tool, json(arguments)::VARCHAR
                                  ORDER BY step) AS j
        FROM steps WHERE job_id = $job AND kind = 'tool_call' AND NOT copied)
    SELECT task, attempt, agent, tool, args AS arguments, min(step)::BIGINT AS first_step,
           max(step)::BIGINT AS last_step, count(*)::BIGINT AS repeats
    FROM c GROUP BY task, attempt, agent, tool, args, i - j
    HAVING count(*) >= {min_repeat_param}
    """


def _ngrams_sql(threshold: float | None) -> str:
    return f"""
    WITH o AS ({outcome_sql("$job", threshold)}),
    c AS (SELECT task, attempt, tool,
                 lead(tool, 1) OVER w AS t2, lead(tool, 2) OVER w AS t3
          FROM steps WHERE job_id = $job AND kind = 'tool_call' AND NOT copied
          WINDOW w AS (PARTITION BY task, attempt, agent ORDER BY step)),
    g AS (SELECT task, attempt, 1 AS n, tool AS pattern FROM c
          UNION ALL SELECT task, attempt, 2, tool || ' → ' || t2 FROM c WHERE t2 IS NOT NULL
          UNION ALL SELECT task, attempt, 3, tool || ' → ' || t2 || ' → ' || t3 FROM c
                    WHERE t3 IS NOT NULL),
    per AS (SELECT n, pattern, task, attempt, count(*) AS k FROM g GROUP BY ALL),
    tot AS (SELECT count(*) FILTER (WHERE passed = 0) AS failed,
                   count(*) FILTER (WHERE passed = 1) AS passed
            FROM o JOIN (SELECT DISTINCT task, attempt FROM steps WHERE job_id = $job)
                 USING (task, attempt)),
    agg AS (SELECT n, pattern,
                   coalesce(sum(k) FILTER (WHERE passed = 0), 0)::BIGINT AS calls_failed,
                   coalesce(sum(k) FILTER (WHERE passed = 1), 0)::BIGINT AS calls_passed,
                   count(*) FILTER (WHERE passed = 0)::BIGINT AS attempts_failed,
                   count(*) FILTER (WHERE passed = 1)::BIGINT AS attempts_passed
            FROM per JOIN o USING (task, attempt) GROUP BY n, pattern
            HAVING count(passed) > 0)
    SELECT n, pattern, calls_failed, calls_passed, attempts_failed, attempts_passed,
           CASE WHEN tot.failed > 0 THEN attempts_failed / tot.failed END AS share_failed,
           CASE WHEN tot.passed > 0 THEN attempts_passed / tot.passed END AS share_passed,
           share_failed - share_passed AS difference
    FROM agg, tot
    QUALIFY row_number() OVER (PARTITION BY n ORDER BY attempts_failed + attempts_passed DESC,
                                calls_failed + calls_passed DESC, pattern) <= $top
    ORDER BY n, attempts_failed + attempts_passed DESC, calls_failed + calls_passed DESC, pattern
    """


def _after_sql(threshold: float | None) -> str:
    return f"""
    WITH o AS ({outcome_sql("$job", threshold)}),
    a AS (SELECT task, attempt, max(step) AS n,
                 max(step) FILTER (WHERE kind = 'tool_result' AND NOT is_error AND NOT copied)
                     AS last_ok
          FROM steps WHERE job_id = $job GROUP BY task, attempt)
    SELECT {_OUTCOME} AS outcome, count(*)::BIGINT AS attempts,
           count(last_ok)::BIGINT AS with_success,
           avg(n - last_ok) AS mean_after, median(n - last_ok) AS median_after,
           max(n - last_ok)::BIGINT AS max_after
    FROM a JOIN o USING (task, attempt) GROUP BY 1
    ORDER BY list_position(['failed', 'passed', 'not scored'], outcome)
    """


def action_patterns(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    threshold: float | None = None,
    top: int = 10,
    min_repeat: int = 3,
) -> ActionPatterns:
    """N-grams in failed vs passed attempts, loops, steps after the last successful call.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(job.con, job.id)
    >>> for n in range(1, 4):
    ...     w.add({"task": "A", "attempt": 1, "step": n, "role": "assistant",
    ...            "kind": "tool_call", "tool": "ls", "arguments": '{"path": "."}'})
    >>> w.close()
    3
    >>> p = action_patterns(job.con, job.id)
    >>> p.loops[["task", "attempt", "tool", "first_step", "last_step", "repeats"]].values.tolist()
    [['A', 1, 'ls', 1, 3, 3]]
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    if min_repeat < 2:
        raise ValueError(f"min_repeat must be >= 2 (a loop repeats a call), got {min_repeat}")
    base = basis(con, job_id, threshold)
    params = {"job": job_id}
    ngrams = con.execute(_ngrams_sql(threshold), {**params, "top": top}).df()
    loops = con.execute(
        f"""WITH o AS ({outcome_sql("$job", threshold)}), l AS ({loops_sql()})
            SELECT l.*, {_OUTCOME} AS outcome FROM l JOIN o USING (task, attempt)
            ORDER BY l.repeats DESC, l.task, l.attempt, l.first_step""",
        {**params, "min_repeat": min_repeat},
    ).df()
    after = con.execute(_after_sql(threshold), params).df()
    return ActionPatterns(ngrams, loops, after, base, min_repeat)
