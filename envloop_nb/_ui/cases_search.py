"""Where a Cases search matched: the column and the text around the match, in SQL.

The Cases filter keeps rows whose task, input, output or error contains the search
(case-insensitive); a match can sit in a column that is off-screen or past a snippet's
end. :func:`match_sql` gives, for the rows of one page, ``"error: …after 30 s timeout
while…"``: the first column that matched and up to 40 characters either side.

Examples
--------
>>> import duckdb
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE a AS SELECT 'T1' AS task, 'q' AS input, "
...                 "'fine' AS output, 'step 3: Timeout (30 s) in tool' AS error")
>>> params = {}
>>> con.execute(f"SELECT {match_sql('a', params, 'timeout (')} FROM a", params).fetchone()[0]
'error: step 3: Timeout (30 s) in tool'
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONTEXT", "match_pattern", "match_sql"]

#: Characters of context shown either side of a match.
CONTEXT = 40


def match_pattern(needle: str) -> str:
    """An RE2 pattern for ``needle`` (case-insensitive, dot matches newline) with up to
    :data:`CONTEXT` characters either side; every non-alphanumeric character of the
    needle is escaped as ``\\x{..}`` (a parameter value, never SQL text).

    Examples
    --------
    >>> match_pattern("a.b")
    '(?is).{0,40}a\\\\x{2e}b.{0,40}'
    """
    escaped = "".join(ch if ch.isalnum() else f"\\x{{{ord(ch):x}}}" for ch in needle)
    return f"(?is).{{0,{CONTEXT}}}{escaped}.{{0,{CONTEXT}}}"


def match_sql(alias: str, params: dict[str, Any], search: str) -> str:
    """SQL for the match column of the attempts table ``alias`` (adds its parameters)."""
    needle = search.strip().lower()
    params["match_needle"] = needle
    params["match_pattern"] = match_pattern(search.strip())
    arms = []
    for column in ("error", "output", "input", "task"):
        col = f"{alias}.{column}"
        arms.append(
            f"WHEN contains(lower({col}), $match_needle) THEN '{column}: ' || "
            f"coalesce(nullif(regexp_replace(regexp_extract({col}, $match_pattern), '\\s+', ' ', "
            f"'g'), ''), '(in a part of the text not shown)')"
        )
    return f"CASE {' '.join(arms)} END"
