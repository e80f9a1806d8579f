"""An attempt's steps: what the agent did, one row per item, in the ``steps`` table.

A *step* is one item of an attempt's trajectory, numbered ``1..n`` without gaps in the
order the agent took them: a message (system prompt, user turn, the model's text), the
model's reasoning, a tool call, the tool's result (an observation), an error the harness
recorded, a context summary, or a hand-off to a sub-agent. One model turn that wrote text
and called two tools is three rows sharing ``turn`` (the source's own step or message
number). A sub-agent's rows follow the step that delegated to them, with ``agent`` set to
its name and ``parent_step`` to that step.

Usage (``tokens_in`` / ``tokens_out`` / ``tokens_cached`` / ``cost_usd``) is the model
call's, written once per turn on its first row, so a column's sum over an attempt is the
attempt's usage.

Readers (one beside each source's job reader) write through :class:`StepWriter`, which
streams rows into the table in Arrow batches (never a Python object per step kept for
the whole load); :func:`check_steps` then checks every invariant over the job's rows in
SQL, inside the load's transaction, naming the file and step of the first violation.

``steps`` keeps beside each row its searchable text, ``search_text`` (:data:`SEARCH_SQL`):
made with the row by every insert (:func:`insert_sql`), so a search lowers only the text
asked for, not every step's.

An experiment's cases (MLflow traces) keep their steps in ``exp_steps``, the same columns
owned by ``experiment_id`` (``task``: the case's trace id, ``attempt``: 0); the writer,
the checks and :func:`steps_relation` take ``table="exp_steps"`` for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pyarrow as pa

from .._errors import LoadError
from .memo import forget_job

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "KINDS",
    "ROLES",
    "SEARCH_SQL",
    "SEPARATOR",
    "STEP_COLUMNS",
    "HeldRows",
    "StepSink",
    "StepWriter",
    "StepsTable",
    "check_steps",
    "has_steps",
    "has_tool_calls",
    "insert_sql",
    "rows_table",
    "steps_relation",
]

#: What a step row is.
KINDS = (
    "message", "reasoning", "tool_call", "tool_result", "error", "context_summary", "subagent",
)  # fmt: skip
#: Who wrote it: ``environment`` is the harness itself (a parser error, a timeout).
ROLES = ("system", "user", "assistant", "tool", "environment")

#: The columns a reader fills (``job_id`` is the writer's), with their Arrow types.
STEP_COLUMNS: dict[str, pa.DataType] = {
    "task": pa.string(),
    "attempt": pa.int32(),
    "step": pa.int32(),
    "turn": pa.int32(),
    "parent_step": pa.int32(),
    "agent": pa.string(),
    "role": pa.string(),
    "kind": pa.string(),
    "tool": pa.string(),
    "call_id": pa.string(),
    "arguments": pa.string(),  # JSON text
    "content": pa.string(),
    "is_error": pa.bool_(),
    "tokens_in": pa.int64(),
    "tokens_out": pa.int64(),
    "tokens_cached": pa.int64(),
    "cost_usd": pa.float64(),
    "model": pa.string(),
    "started_at": pa.timestamp("us", tz="UTC"),
    "duration_s": pa.float64(),
    "copied": pa.bool_(),
    "extra": pa.string(),  # JSON text
    "source_place": pa.string(),
}
_DEFAULTS: dict[str, Any] = {"is_error": False, "copied": False}
#: Between the content and the arguments in ``search_text``: a text searched for that
#: holds no NUL is found in ``search_text`` exactly where it is in the lowered content or
#: the lowered arguments (never across the two); ``find_steps`` asks one with a NUL of
#: the steps' own columns.
SEPARATOR = "\x00"
#: ``steps.search_text``, made from the row's own columns when it is written: the
#: content (``''`` when null) lowered, then, where the step has arguments, NUL and their
#: JSON text lowered. DuckDB's ``lower()``: the one ``find_steps`` applies to the text
#: asked for, so matching in it is matching in ``lower(content)`` or in
#: ``lower(arguments::VARCHAR)``, as when every step was lowered per search.
SEARCH_SQL = "concat_ws(chr(0), lower(coalesce(content, '')), lower(arguments::VARCHAR))"
#: Where steps live: a job's (``steps``) or an experiment's cases' (``exp_steps``).
StepsTable = Literal["steps", "exp_steps"]
#: The column naming each table's owner.
_OWNER: dict[str, str] = {"steps": "job_id", "exp_steps": "experiment_id"}
_NAMES = frozenset(STEP_COLUMNS)
_ROW = pa.struct([pa.field(name, kind) for name, kind in STEP_COLUMNS.items()])
#: Rows held (as the readers' dicts) before a batch is written: 16k rows keep the held
#: dicts near the size of the column lists an older writer held for 65k.
_BATCH = 16_384


def rows_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows (mappings of :data:`STEP_COLUMNS` names) as one Arrow batch of those columns.

    One struct array (absent: null), then the columns with a default where one is
    null: absent there is the default, a ``None`` given stays null (and is refused by
    the table). What :class:`StepWriter` writes; a reader in another process makes its
    batches with it too (:meth:`StepWriter.add_table`).
    """
    table = pa.Table.from_struct_array(pa.array(rows, type=_ROW))
    for name, default in _DEFAULTS.items():
        if table.column(name).null_count:
            column = pa.array([r.get(name, default) for r in rows], type=STEP_COLUMNS[name])
            table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


@dataclass
class StepWriter:
    """Streams one load's step rows into ``steps``, ``batch`` rows at a time.

    ``add`` takes a row as a mapping of :data:`STEP_COLUMNS` names (absent ones are
    null; ``is_error`` and ``copied`` default to false); ``close`` writes what is left.
    Rows go straight into the table inside the load's transaction; ``table="exp_steps"``
    writes an experiment's (``job_id`` is then the experiment's id).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(ws.con, job.id)
    >>> w.add({"task": "A", "attempt": 1, "step": 1, "role": "user", "kind": "message",
    ...        "content": "hi"})
    >>> w.close()
    1
    """

    con: duckdb.DuckDBPyConnection
    job_id: str
    batch: int = _BATCH
    table: StepsTable = "steps"
    written: int = 0
    _rows: list[Mapping[str, Any]] = field(default_factory=list, repr=False)

    def add(self, row: Mapping[str, Any]) -> None:
        """Queue one row (unknown column names are a programming error).

        The row is kept as given until the batch is written: a reader hands over a row
        it no longer changes (each reader builds a fresh mapping per row).
        """
        if not _NAMES.issuperset(row):
            raise KeyError(f"not step columns: {sorted(row.keys() - _NAMES)}")
        self._rows.append(row if type(row) is dict else dict(row))
        if len(self._rows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Write the queued rows."""
        rows, self._rows = self._rows, []
        if rows:
            table = rows_table(rows)
            del rows  # the held dicts, before DuckDB reads the batch
            self._insert(table)

    def add_table(self, table: pa.Table) -> None:
        """Write a batch :func:`rows_table` made (after the rows queued before it)."""
        self.flush()
        if table.num_rows:
            self._insert(table)

    def _insert(self, _el_steps_batch: pa.Table) -> None:
        # read by DuckDB's replacement scan, by name: a view registered and dropped
        # inside the load's transaction kept its batch in memory until the commit
        n = _el_steps_batch.num_rows
        rows_sql = (
            f"SELECT $job_id AS {_OWNER[self.table]}, * "
            "REPLACE (arguments::JSON AS arguments, extra::JSON AS extra) FROM _el_steps_batch"
        )
        self.con.execute(insert_sql(rows_sql, table=self.table), {"job_id": self.job_id})
        del _el_steps_batch
        forget_job(self.con, self.job_id)  # what was computed from the job's steps
        self.written += n

    def close(self) -> int:
        """Write what is left; returns the number of rows written."""
        self.flush()
        return self.written


def insert_sql(select: str, *, table: StepsTable = "steps") -> str:
    """``INSERT`` of the step rows a ``SELECT`` gives (step columns by name, ``arguments``
    as JSON, the owner's id), with the searchable text (:data:`SEARCH_SQL`) made from
    them for ``steps``: every writer of ``steps`` goes through here.

    Examples
    --------
    >>> insert_sql("SELECT * FROM t", table="exp_steps")
    'INSERT INTO exp_steps BY NAME SELECT * FROM (SELECT * FROM t)'
    """
    search = f", {SEARCH_SQL} AS search_text" if table == "steps" else ""
    return f"INSERT INTO {table} BY NAME SELECT *{search} FROM ({select})"


class StepSink(Protocol):
    """Where a reader writes its rows: a :class:`StepWriter`, or a :class:`HeldRows`."""

    def add(self, row: Mapping[str, Any]) -> None: ...


@dataclass
class HeldRows:
    """One attempt's rows, held until its reader finished: then handed to the load's
    :class:`StepWriter` (``write_to``), or dropped (a step the reader refused under
    ``lenient=True``: none of the attempt's rows reach the table).

    Examples
    --------
    >>> held = HeldRows()
    >>> held.add({"task": "A", "attempt": 1, "step": 1, "role": "user", "kind": "message"})
    >>> len(held.rows)
    1
    """

    rows: list[Mapping[str, Any]] = field(default_factory=list)

    def add(self, row: Mapping[str, Any]) -> None:
        """Hold one row."""
        self.rows.append(row)

    def write_to(self, writer: StepSink) -> int:
        """Hand the held rows on, in order; returns how many."""
        for row in self.rows:
            writer.add(row)
        return len(self.rows)


# Each check: the first violating row (its place, task, attempt, step) and what is wrong.
_CHECKS: tuple[tuple[str, str], ...] = (
    (
        "SELECT source_place, task, attempt, step, kind FROM steps "
        "WHERE job_id = $job AND kind NOT IN (SELECT unnest($kinds)) LIMIT 1",
        "unknown step kind {4!r}",
    ),
    (
        "SELECT source_place, task, attempt, step, role FROM steps "
        "WHERE job_id = $job AND role NOT IN (SELECT unnest($roles)) LIMIT 1",
        "unknown step source {4!r}",
    ),
    (
        "SELECT source_place, task, attempt, step FROM steps "
        "WHERE job_id = $job AND kind = 'tool_call' AND tool IS NULL LIMIT 1",
        "a tool call without a tool name",
    ),
    (
        """SELECT any_value(source_place), task, attempt, min(step), max(step), count(*),
                  count(DISTINCT step)
           FROM steps WHERE job_id = $job GROUP BY task, attempt
           HAVING min(step) <> 1 OR max(step) <> count(*) OR count(DISTINCT step) <> count(*)
           LIMIT 1""",
        "steps must be numbered 1..n without gaps or repeats (found {3}..{4} in {5} rows)",
    ),
    (
        """SELECT r.source_place, r.task, r.attempt, r.step, r.call_id FROM steps r
           WHERE r.job_id = $job AND r.kind = 'tool_result' AND r.call_id IS NOT NULL
             AND NOT EXISTS (
                 SELECT 1 FROM steps c
                 WHERE c.job_id = r.job_id AND c.task = r.task AND c.attempt = r.attempt
                   AND c.kind = 'tool_call' AND c.call_id = r.call_id AND c.step < r.step)
           ORDER BY r.task, r.attempt, r.step LIMIT 1""",
        "a tool result for call {4!r}, which no earlier tool call of the attempt made",
    ),
    (
        """SELECT s.source_place, s.task, s.attempt, min(s.step) FROM steps s
           WHERE s.job_id = $job AND NOT EXISTS (
               SELECT 1 FROM attempts a
               WHERE a.job_id = s.job_id AND a.task = s.task AND a.attempt = s.attempt)
           GROUP BY ALL LIMIT 1""",
        "steps of an attempt the job does not have",
    ),
)
# An experiment's steps: each belongs to one of its cases, as its only run (attempt 0).
_EXP_OWNER_CHECK = (
    """SELECT s.source_place, s.task, s.attempt, min(s.step) FROM exp_steps s
       WHERE s.experiment_id = $job AND (s.attempt <> 0 OR NOT EXISTS (
           SELECT 1 FROM exp_cases c
           WHERE c.experiment_id = s.experiment_id AND c.trace_id = s.task))
       GROUP BY ALL LIMIT 1""",
    "steps of a case the experiment does not have (or not as attempt 0)",
)


def check_steps(
    con: duckdb.DuckDBPyConnection, job_id: str, source: str, *, table: StepsTable = "steps"
) -> None:
    """Check the job's step rows; raise :class:`LoadError` naming the first bad one.

    Kinds and sources are known ones, a tool call names its tool, each attempt's steps
    run ``1..n`` without gaps, a result that names a call answers an earlier call of its
    attempt, and every attempt with steps is one of the job's attempts (with
    ``table="exp_steps"``: ``job_id`` is an experiment's, and every task with steps is
    one of its cases, as attempt 0).
    """
    params = {"job": job_id, "kinds": list(KINDS), "roles": list(ROLES)}
    checks = _CHECKS
    if table == "exp_steps":
        renamed = (
            (sql.replace("FROM steps", "FROM exp_steps").replace("job_id", "experiment_id"), p)
            for sql, p in _CHECKS[:-1]
        )
        checks = (*renamed, _EXP_OWNER_CHECK)
    for sql, problem in checks:
        used = {k: v for k, v in params.items() if f"${k}" in sql}
        row = con.execute(sql, used).fetchone()
        if row is not None:
            place, task, attempt = row[0], row[1], row[2]
            where = place or f"task {task!r}, attempt {attempt}"
            raise LoadError(source, where, problem.format(*row))


def has_steps(con: duckdb.DuckDBPyConnection, job_id: str) -> bool:
    """Whether the workspace holds any step of the job."""
    return (
        con.execute("SELECT 1 FROM steps WHERE job_id = ? LIMIT 1", [job_id]).fetchone() is not None
    )


def has_tool_calls(con: duckdb.DuckDBPyConnection, job_id: str) -> bool:
    """Whether any step of the job is a tool call: what makes behaviour worth measuring
    (a job whose steps are only its prompts and answers gets no Behaviour tab)."""
    row = con.execute(
        "SELECT 1 FROM steps WHERE job_id = ? AND kind = 'tool_call' LIMIT 1", [job_id]
    ).fetchone()
    return row is not None


def steps_relation(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    task: str | None = None,
    attempt: int | None = None,
    table: StepsTable = "steps",
) -> duckdb.DuckDBPyRelation:
    """The job's steps (one attempt's, one task's, or all), in order (``table="exp_steps"``:
    an experiment's, ``job_id`` its id and ``task`` a case's trace id).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(ws.con, job.id)
    >>> for n, kind in enumerate(["message", "tool_call"], 1):
    ...     w.add({"task": "A", "attempt": 1, "step": n, "role": "assistant", "kind": kind,
    ...            "tool": "ls" if kind == "tool_call" else None})
    >>> w.close()
    2
    >>> steps_relation(ws.con, job.id, task="A").select("step, kind, tool").fetchall()
    [(1, 'message', None), (2, 'tool_call', 'ls')]
    """
    owner = _OWNER[table]
    hidden = f"{owner}, search_text" if table == "steps" else owner
    return con.sql(
        f"""SELECT * EXCLUDE ({hidden}) FROM {table}
           WHERE {owner} = $job AND ($task IS NULL OR task = $task)
             AND ($attempt IS NULL OR attempt = $attempt)
           ORDER BY task, attempt, step""",
        params={"job": job_id, "task": task, "attempt": attempt},
    )
