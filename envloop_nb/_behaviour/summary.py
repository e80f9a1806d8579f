"""A job's steps summed per attempt, once: what the tool and turn statistics read.

The statistics of :mod:`.tools` and :mod:`.turns` (and their :class:`~.base.Basis`) need
only a few numbers per attempt, not the step rows. :func:`attempt_steps` scans the job's
``steps`` for them once and :func:`outcomes` joins the attempts with steps to their
outcome once per threshold, each keeping its result in the workspace's memo (:func:`envloop_nb._store.memo.cached`: per connection, keyed by
the job's ``loaded_at``, so a reload is never answered from it; a
:class:`~envloop_nb._store.steps.StepWriter` writing the job's rows and an annotation
forget it). The statistics then run on these, never on the step rows again: at 1M
attempts × 20 steps they are ~4M rows against 20M, and a second statistic or a second
call reuses them. :func:`tool_steps` scans the tool rows (its caller, the tool
statistics, keeps what it makes of them in the memo instead).

``attempts`` (one row per attempt with steps, in task and attempt order)
    ``task, attempt, n`` (its step rows), ``first_error`` (the step of its first error
    step, :data:`ERROR_SQL`; null without one), ``i`` (the row's number, from 0)
    and ``t`` (its task's number among the tasks with steps, sorted, from 0).
``tools`` (one row per attempt and tool it used or got a result of; replayed context out)
    ``task, attempt, tool, calls, results, errors``: tool calls, tool results and results
    with ``is_error``; a result without a tool name takes the tool of the call its
    ``call_id`` answers (in its attempt); a result naming neither is in no row.
``unattributed``
    Results that name no tool and answer no call of their attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._metrics.counts import pass_sql
from .._store.memo import cached

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

__all__ = [
    "ERROR_SQL",
    "Outcomes",
    "ToolSteps",
    "attempt_steps",
    "outcome_sql",
    "outcomes",
    "tool_steps",
]


#: The SQL condition of an error step.
ERROR_SQL = "(is_error OR kind = 'error')"


def outcome_sql(job_param: str, threshold: float | None) -> str:
    """SQL of one row per attempt of record of the job: ``task, attempt, passed`` (1 a
    pass, 0 a failure, null not scored).

    Examples
    --------
    >>> "reward >= 0.5e0" in outcome_sql("$job", 0.5)
    True
    """
    return f"""SELECT task, attempt,
                  CASE WHEN reward IS NULL THEN NULL
                       WHEN {pass_sql(threshold)} THEN 1 ELSE 0 END AS passed
           FROM attempts WHERE job_id = {job_param}"""


@dataclass(frozen=True)
class ToolSteps:
    """The ``tools`` rows and the ``unattributed`` count (module docstring)."""

    tools: pa.Table
    unattributed: int


@dataclass(frozen=True)
class Outcomes:
    """The outcome of each attempt with steps under one threshold.

    ``passed``: per ``attempts`` row (by ``i``), 1 a pass, 0 a failure, -1 not scored,
    -2 not an attempt of record; ``of_record``: the job's attempts of record, with steps
    or without.
    """

    passed: NDArray[np.int8]
    of_record: int


_ATTEMPTS_SQL = f"""
SELECT task, attempt, count(*)::BIGINT AS n,
       min(step) FILTER (WHERE {ERROR_SQL})::BIGINT AS first_error
FROM steps WHERE job_id = $job GROUP BY task, attempt ORDER BY task, attempt
"""

# Results without a tool name, and the calls they may answer (few or none: only these
# are joined, by task, attempt and call_id).
_ORPHANS = """
s AS (SELECT task, attempt, kind, tool, call_id, is_error FROM steps
      WHERE job_id = $job AND NOT copied AND kind IN ('tool_call', 'tool_result')),
orphans AS (SELECT task, attempt, call_id, is_error FROM s
            WHERE kind = 'tool_result' AND tool IS NULL),
calls AS (SELECT task, attempt, call_id, tool FROM s
          WHERE kind = 'tool_call' AND call_id IS NOT NULL
            AND (task, attempt, call_id) IN (SELECT (task, attempt, call_id) FROM orphans))
"""

# The tool rows: calls and named results in one aggregation.
_TOOLS_SQL = f"""
WITH {_ORPHANS},
known AS (SELECT task, attempt, call_id, any_value(tool) AS tool FROM calls GROUP BY ALL),
named AS (SELECT o.task, o.attempt, k.tool, o.is_error FROM orphans o
          JOIN known k USING (task, attempt, call_id))
SELECT task, attempt, tool, count(*) FILTER (WHERE kind = 'tool_call')::BIGINT AS calls,
       count(*) FILTER (WHERE kind = 'tool_result')::BIGINT AS results,
       count(*) FILTER (WHERE kind = 'tool_result' AND is_error)::BIGINT AS errors
FROM (SELECT task, attempt, kind, tool, is_error FROM s WHERE tool IS NOT NULL
      UNION ALL
      SELECT task, attempt, 'tool_result', tool, is_error FROM named WHERE tool IS NOT NULL)
GROUP BY ALL
"""

_UNATTRIBUTED_SQL = f"""
WITH {_ORPHANS}
SELECT count(*) FROM orphans r
WHERE NOT EXISTS (SELECT 1 FROM calls c
                  WHERE c.task = r.task AND c.attempt = r.attempt AND c.call_id = r.call_id)
"""


def attempt_steps(con: duckdb.DuckDBPyConnection, job_id: str) -> pa.Table:
    """The job's ``attempts`` rows (module docstring), computed once and kept in the memo.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(job.con, job.id)
    >>> for n, err in enumerate([False, True, True], 1):
    ...     w.add({"task": "A", "attempt": 1, "step": n, "role": "user", "kind": "message",
    ...            "is_error": err})
    >>> w.close()
    3
    >>> attempt_steps(job.con, job.id).to_pylist()
    [{'task': 'A', 'attempt': 1, 'n': 3, 'first_error': 2, 'i': 0, 't': 0}]
    """

    def compute() -> pa.Table:
        import numpy as np
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        table = con.execute(_ATTEMPTS_SQL, {"job": job_id}).to_arrow_table()
        tasks = sorted(pc.unique(table.column("task")).to_pylist())
        t = pd.Index(tasks).get_indexer(table.column("task").to_pandas())
        table = table.append_column("i", pa.array(np.arange(table.num_rows, dtype=np.int64)))
        return table.append_column("t", pa.array(t.astype(np.int64)))

    table: pa.Table = cached(con, job_id, ("attempt_steps",), compute)
    return table


def tool_steps(con: duckdb.DuckDBPyConnection, job_id: str) -> ToolSteps:
    """The job's ``tools`` rows and ``unattributed`` count (module docstring); not kept
    (:mod:`.tools` keeps its arrays made of them).

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
    >>> w.add({"task": "A", "attempt": 1, "step": 3, "role": "tool", "kind": "tool_result",
    ...        "call_id": "x"})
    >>> w.close()
    3
    >>> t = tool_steps(job.con, job.id)
    >>> t.tools.to_pylist(), t.unattributed
    ([{'task': 'A', 'attempt': 1, 'tool': 'ls', 'calls': 1, 'results': 1, 'errors': 1}], 1)
    """

    params = {"job": job_id}
    tools = con.execute(_TOOLS_SQL, params).to_arrow_table()
    row = con.execute(_UNATTRIBUTED_SQL, params).fetchone()
    return ToolSteps(tools, int(row[0]) if row else 0)


def outcomes(con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None) -> Outcomes:
    """The :class:`Outcomes` of the job's attempts with steps under ``threshold``
    (:func:`outcome_sql`), computed once per threshold and kept in the memo.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(job.con, job.id)
    >>> w.add({"task": "A", "attempt": 1, "step": 1, "role": "user", "kind": "message"})
    >>> w.close()
    1
    >>> o = outcomes(job.con, job.id, None)
    >>> o.passed.tolist(), o.of_record
    ([1], 6)
    """

    def compute() -> Outcomes:
        import numpy as np

        _el_attempt_steps = attempt_steps(con, job_id)  # read by DuckDB's replacement scan
        params = {"job": job_id}
        o = outcome_sql("$job", threshold)
        got = con.execute(
            f"""SELECT s.i, coalesce(o.passed, -1) AS passed
                FROM _el_attempt_steps s JOIN ({o}) o USING (task, attempt)""",
            params,
        ).fetchnumpy()
        passed = np.full(_el_attempt_steps.num_rows, -2, dtype=np.int8)
        passed[np.asarray(got["i"], dtype=np.int64)] = np.asarray(got["passed"], dtype=np.int8)
        row = con.execute(f"SELECT count(*) FROM ({o})", params).fetchone()
        return Outcomes(passed, int(row[0]) if row else 0)

    found: Outcomes = cached(con, job_id, ("outcomes", threshold), compute)
    return found
