"""The job workbook's Steps sheet: the exported attempts' steps, one row per step, bounded.

One row per step (task, attempt, step, turn, agent, role, kind, tool, call id,
arguments, content, error, copied, tokens in / out / cached) for the attempts the
workbook exports (its buckets), in task order, then attempt, then step. Bounded twice,
and said so on the sheet: at most :data:`MAX_STEP_ROWS` rows (a bold note row above
the header says how many steps of how many attempts were left out, and from where on),
and a step's content or arguments cut at :data:`MAX_STEP_CHARS` characters with a
visible ``… [N more characters: job.steps() has them]`` (cut in DuckDB: the long text
never reaches Python). Cells go through the one safe writer (:mod:`.cells`): content
such as ``=HYPERLINK(...)`` stays text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .cells import CellWriter, Column, Sheet

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = ["MAX_STEP_CHARS", "MAX_STEP_ROWS", "write_steps_sheet"]

#: Most step rows the sheet holds (the rest is named in its note row).
MAX_STEP_ROWS = 50_000
#: Characters of a step's content or arguments a cell holds.
MAX_STEP_CHARS = 2_000
_BATCH = 4_096

_COLUMNS = [
    Column("Task", 24), Column("Attempt", 8), Column("Step", 7), Column("Turn", 7),
    Column("Agent", 12), Column("Role", 11), Column("Kind", 13), Column("Tool", 14),
    Column("Call id", 14), Column("Arguments", 40, wrap=True), Column("Content", 70, wrap=True),
    Column("Error", 7), Column("Copied", 8), Column("Tokens in", 10), Column("Tokens out", 10),
    Column("Tokens cached", 12),
]  # fmt: skip


def _cut_sql(expr: str) -> str:
    """``expr`` (text) cut at :data:`MAX_STEP_CHARS` with a note of what was cut."""
    n = MAX_STEP_CHARS
    return (
        f"CASE WHEN length({expr}) > {n} THEN left({expr}, {n}) || '… [' || "
        f"format('{{:,}}', length({expr}) - {n}) || ' more characters: job.steps() has them]' "
        f"ELSE {expr} END"
    )


def write_steps_sheet(
    job: JobRef,
    wb: Any,
    cells: CellWriter,
    titles: set[str],
    attempts: str,
    params: dict[str, Any],
) -> Sheet:
    """Write the Steps sheet of the attempts in the SQL subquery ``attempts`` (columns
    ``task``, ``attempt``, ``position``; its ``params``), streamed from DuckDB."""
    con = job.con
    base = f"""FROM steps s JOIN {attempts} a ON a.task = s.task AND a.attempt = s.attempt
               WHERE s.job_id = $job_id"""
    total = con.execute(
        f"SELECT count(*), count(DISTINCT (s.task, s.attempt)) {base}", params
    ).fetchone()
    n_steps, n_attempts = (int(total[0]), int(total[1])) if total else (0, 0)
    note = ""
    if n_steps > MAX_STEP_ROWS:
        first = con.execute(
            f"""SELECT s.task, s.attempt, s.step,
                       count(DISTINCT (s.task, s.attempt)) OVER () AS attempts
                {base}
                QUALIFY row_number() OVER (ORDER BY a.position, s.attempt, s.step) > $cap
                ORDER BY a.position, s.attempt, s.step LIMIT 1""",
            {**params, "cap": MAX_STEP_ROWS},
        ).fetchone()
        cut = n_steps - MAX_STEP_ROWS
        where = f" from task {first[0]!r} attempt {first[1]} step {first[2]} on" if first else ""
        note = (
            f"The first {MAX_STEP_ROWS:,} of {n_steps:,} steps ({n_attempts:,} attempts): "
            f"{cut:,} steps{where} are not on this sheet; job.steps() has them all."
        )
    sheet = Sheet(wb, "Steps", list(_COLUMNS), cells, titles, note=note)
    query = f"""
        SELECT s.task, s.attempt, s.step, s.turn, s.agent, s.role, s.kind, s.tool, s.call_id,
               {_cut_sql("s.arguments::VARCHAR")}, {_cut_sql("s.content")},
               s.is_error, s.copied, s.tokens_in, s.tokens_out, s.tokens_cached
        {base}
        ORDER BY a.position, s.attempt, s.step
        LIMIT $cap"""
    reader = con.execute(query, {**params, "cap": MAX_STEP_ROWS}).to_arrow_reader(_BATCH)
    for batch in reader:
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for row in zip(*columns, strict=True):
            sheet.append(row)
    sheet.close()
    return sheet
