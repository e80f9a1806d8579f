"""Which attempts have steps like this: one DuckDB query over the job's steps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._store.steps import KINDS, SEPARATOR
from .base import ERROR_SQL

if TYPE_CHECKING:
    import duckdb

__all__ = ["find_steps_relation"]

# The steps' text is lowered once, when written (``search_text``: lower(content), NUL,
# lower(arguments); ``_store.steps.SEARCH_SQL``); here only the text asked for. A text
# holding a NUL could match across the two: it is matched in the columns themselves.
_SQL = f"""
SELECT s.task, s.attempt, min(s.step)::INTEGER AS first_step, count(*)::BIGINT AS matches
FROM steps s LEFT JOIN tasks t ON t.job_id = s.job_id AND t.task = s.task
WHERE s.job_id = $job
  AND ($tool IS NULL OR s.tool = $tool)
  AND ($kind IS NULL OR s.kind = $kind)
  AND ($error IS NULL OR {ERROR_SQL} = $error)
  AND ($contains IS NULL OR __CONTAINS__)
GROUP BY s.task, s.attempt
ORDER BY any_value(t.position), s.task, s.attempt
"""
_SQL_SEARCHED = _SQL.replace("__CONTAINS__", "contains(s.search_text, lower($contains))")
# Arguments are lowered only where there are any (a null's text, '', holds only the
# empty string, which every content holds too).
_SQL_LOWERED = _SQL.replace(
    "__CONTAINS__",
    """(contains(lower(coalesce(s.content, '')), lower($contains))
       OR (s.arguments IS NOT NULL AND contains(lower(s.arguments::VARCHAR), lower($contains))))""",
)


def find_steps_relation(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    tool: str | None = None,
    kind: str | None = None,
    error: bool | None = None,
    contains: str | None = None,
) -> duckdb.DuckDBPyRelation:
    """The attempts with at least one step matching every given condition.

    ``tool``: the step's tool name (exact); ``kind``: one of the step kinds; ``error``:
    an error step (``is_error`` or kind ``error``) or not; ``contains``: a substring of
    the step's content or of its arguments' JSON text, case-insensitive as DuckDB's
    ``lower()`` makes it (both lowered: the steps' text once, when written), a plain
    substring (``%`` and ``_`` are themselves; the text is a parameter, never SQL).
    Columns: ``task, attempt, first_step`` (the first matching step), ``matches`` (how
    many steps match), in task order. Every row is searched, replayed context included.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(job.con, job.id)
    >>> w.add({"task": "B", "attempt": 2, "step": 1, "role": "user", "kind": "message",
    ...        "content": "100% done"})
    >>> w.close()
    1
    >>> find_steps_relation(job.con, job.id, contains="0% D").fetchall()
    [('B', 2, 1, 1)]
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if error is not None and not isinstance(error, bool):
        raise TypeError(f"error must be True, False or None; got {error!r}")
    params = {"job": job_id, "tool": tool, "kind": kind, "error": error, "contains": contains}
    sql = _SQL_LOWERED if contains is not None and SEPARATOR in contains else _SQL_SEARCHED
    return con.sql(sql, params=params)
