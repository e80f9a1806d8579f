"""The lines of a trajectory dataset (``format="openai_chat"`` or ``"atif"``): every
attempt of the chosen tasks, one JSON line each, streamed from DuckDB.

The attempts are read in Arrow batches (task order, then attempt); their steps are
queried for a chunk of attempts at a time (about :data:`STEP_BUDGET` steps per query),
turned into the line's ``messages`` or ``trajectory`` (:mod:`.trajectories`) and handed
on, so memory holds one chunk's steps, never the job's. An attempt without steps is
written from its ChatML ``input`` / ``output`` when it has an output, else skipped; the
counts go to the manifest's ``trajectories`` (see :class:`TrajectoryCounts`).

A line: ``task``, ``attempt``, ``job``, ``reward``, ``status``, ``bucket``, ``tags``,
``input`` (the attempt's input as the job recorded it: the held-out guard's key),
``reference``, ``from`` (``"steps"`` or ``"chatml"``), ``notes`` (what the conversion
left out or made), and ``messages`` (OpenAI chat) or ``trajectory`` (the ATIF document).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .._store.ref import job_info
from .trajectories import atif_document, chat_messages

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = [
    "BULK_KEYS",
    "STEP_BUDGET",
    "TRAJECTORY_FORMATS",
    "TrajectoryCounts",
    "chatml_rows",
    "trajectory_lines",
]

#: The dataset formats that write attempts' trajectories (one line per attempt).
TRAJECTORY_FORMATS = ("openai_chat", "atif")
#: A line's bulky keys: not copied into the workspace's registration (``dataset_rows``).
BULK_KEYS = ("messages", "trajectory")
#: Steps fetched per query (a chunk of attempts; one attempt longer than this is alone).
STEP_BUDGET = 100_000
#: Attempts fetched per Arrow batch.
ATTEMPT_BATCH = 1_024
#: Skipped attempts named in the manifest (the count is always whole).
NAMED_SKIPS = 50

_STEP_COLUMNS = """s.task, s.attempt, s.step, s.turn, s.parent_step, s.agent, s.role, s.kind,
    s.tool, s.call_id, s.arguments::VARCHAR AS arguments, s.content, s.is_error,
    s.tokens_in, s.tokens_out, s.tokens_cached, s.cost_usd, s.model, s.started_at,
    s.duration_s, s.copied, s.extra::VARCHAR AS extra"""


@dataclass
class TrajectoryCounts:
    """What the export found: attempts written from steps, from ChatML, skipped (with
    the first :data:`NAMED_SKIPS` named as ``"task#attempt"``)."""

    attempts: int = 0
    from_steps: int = 0
    from_chatml: int = 0
    skipped: int = 0
    skipped_attempts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _chunks(attempts: Sequence[dict[str, Any]]) -> Generator[list[dict[str, Any]], None, None]:
    """Runs of attempts whose steps add up to about :data:`STEP_BUDGET`."""
    run: list[dict[str, Any]] = []
    steps = 0
    for a in attempts:
        n = int(a["n_steps"] or 0)
        if run and steps + n > STEP_BUDGET:
            yield run
            run, steps = [], 0
        run.append(a)
        steps += n
    if run:
        yield run


def _steps_of(
    con: Any, job_id: str, chunk: Sequence[dict[str, Any]]
) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The chunk's attempts' step rows, by ``(task, attempt)``, in step order."""
    with_steps = [a for a in chunk if a["n_steps"]]
    if not with_steps:
        return {}
    table = con.execute(
        f"""SELECT {_STEP_COLUMNS}
            FROM steps s
            JOIN (SELECT unnest($tasks) AS task, unnest($attempts) AS attempt) c
              ON c.task = s.task AND c.attempt = s.attempt
            WHERE s.job_id = $job
            ORDER BY s.task, s.attempt, s.step""",
        {
            "job": job_id,
            "tasks": [a["task"] for a in with_steps],
            "attempts": [int(a["attempt"]) for a in with_steps],
        },
    ).to_arrow_table()
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        out.setdefault((row["task"], int(row["attempt"])), []).append(row)
    return out


def trajectory_lines(
    job: JobRef,
    tasks: Any,
    chosen: list[str] | None,
    fmt: str,
    counts: TrajectoryCounts,
) -> Generator[list[dict[str, Any]], None, None]:
    """Lists of lines (one per attempt of the chosen tasks, in task then attempt order).

    ``tasks`` is the per-task frame the export chose from (``task`` and, with rules,
    ``bucket``); ``chosen`` the buckets kept (``None``: every task). ``counts`` is filled
    as the lines go.
    """
    import pyarrow as pa

    if fmt not in TRAJECTORY_FORMATS:
        raise ValueError(f"not a trajectory format: {fmt!r}")
    columns = list(tasks.column_names if isinstance(tasks, pa.Table) else tasks.columns)
    keep = ["task"] + (["bucket"] if "bucket" in columns else [])
    frame = tasks.select(keep) if isinstance(tasks, pa.Table) else tasks[keep]
    table = (
        frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    )
    if "bucket" not in keep:
        table = table.append_column("bucket", pa.nulls(len(table), pa.string()))
    info = job_info(job.con, job.id)
    agent = {
        "name": str(info.get("profile_name") or info.get("runner") or "unknown"),
        "version": str(info.get("profile_version") or "unknown"),
    }
    params: dict[str, Any] = {"job": job.id}
    and_bucket = ""
    if chosen is not None:
        params["chosen"] = list(chosen)
        and_bucket = "AND list_contains($chosen::VARCHAR[], b.bucket)"
    reader_con = job.con.cursor()  # the attempts stream; the steps are asked on another
    steps_con = job.con.cursor()
    reader_con.register("_traj_tasks", table)
    try:
        reader = reader_con.execute(
            f"""SELECT a.task, a.attempt, a.status, a.reward, a.input, a.input_is_chat,
                       a.output, a.reference, t.tags, b.bucket, coalesce(n.n, 0) AS n_steps
                FROM attempts a
                JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
                JOIN _traj_tasks b ON b.task = a.task
                LEFT JOIN (SELECT task, attempt, count(*) AS n FROM steps
                           WHERE job_id = $job GROUP BY task, attempt) n
                  ON n.task = a.task AND n.attempt = a.attempt
                WHERE a.job_id = $job {and_bucket}
                ORDER BY t.position, a.attempt""",
            params,
        ).to_arrow_reader(ATTEMPT_BATCH)
        for batch in reader:
            for chunk in _chunks(batch.to_pylist()):
                steps = _steps_of(steps_con, job.id, chunk)
                lines = []
                for a in chunk:
                    line = _line(job.id, a, steps.get((a["task"], int(a["attempt"]))), fmt, agent)
                    counts.attempts += 1
                    if line is None:
                        counts.skipped += 1
                        if len(counts.skipped_attempts) < NAMED_SKIPS:
                            counts.skipped_attempts.append(f"{a['task']}#{a['attempt']}")
                        continue
                    if line["from"] == "steps":
                        counts.from_steps += 1
                    else:
                        counts.from_chatml += 1
                    lines.append(line)
                if lines:
                    yield lines
    finally:
        reader_con.close()
        steps_con.close()


def _line(
    job_id: str,
    a: dict[str, Any],
    rows: list[dict[str, Any]] | None,
    fmt: str,
    agent: dict[str, str],
) -> dict[str, Any] | None:
    """One attempt's line, or ``None`` when it has neither steps nor an output."""
    source = "steps"
    if not rows:
        rows = chatml_rows(a["input"], bool(a["input_is_chat"]), a["output"])
        source = "chatml"
    if not rows:
        return None
    meta = {
        "task": a["task"],
        "attempt": int(a["attempt"]),
        "job": job_id,
        "reward": a["reward"],
        "status": a["status"],
    }
    line: dict[str, Any] = {
        **meta,
        "bucket": a["bucket"],
        "tags": json.loads(a["tags"]) if a.get("tags") else {},
        "input": a["input"],
        "reference": a["reference"],
        "from": source,
    }
    if fmt == "openai_chat":
        conv = chat_messages(rows)
        line["messages"] = conv.messages
        line["notes"] = conv.notes()
    else:
        tid = f"{job_id}/{a['task']}/{int(a['attempt'])}"
        doc = atif_document(rows, trajectory_id=tid, agent=agent, extra={"envloop_nb": meta})
        line["trajectory"] = doc
        line["notes"] = {
            "synthesized_call_ids": sum(
                1 for r in rows if r.get("kind") == "tool_call" and r.get("call_id") is None
            )
        }
    return line


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return json.dumps(value, ensure_ascii=False)


def chatml_rows(input: str | None, input_is_chat: bool, output: str | None) -> list[dict[str, Any]]:
    """Step rows of an attempt that has no steps, from its ChatML ``input`` (a message
    list as JSON text, or a plain prompt: one user message) and ``output`` (one assistant
    message); empty when it has no ``output`` (no answer: nothing to train on).

    Examples
    --------
    >>> [(r["role"], r["content"]) for r in chatml_rows("2+2?", False, "4")]
    [('user', '2+2?'), ('assistant', '4')]
    >>> chatml_rows("2+2?", False, None)
    []
    """
    if output is None:
        return []
    messages: list[Any] = []
    if input is not None:
        parsed: Any = None
        if input_is_chat:
            try:
                parsed = json.loads(input)
            except ValueError:
                parsed = None
        messages = parsed if isinstance(parsed, list) else [{"role": "user", "content": input}]
    messages = [*messages, {"role": "assistant", "content": output}]
    rows: list[dict[str, Any]] = []

    def add(**values: Any) -> None:
        rows.append({"step": len(rows) + 1, **values})

    for turn, m in enumerate(messages, 1):
        m = m if isinstance(m, dict) else {"role": "user", "content": str(m)}
        role = {"developer": "system", "function": "tool"}.get(str(m.get("role")), m.get("role"))
        role = role if role in ("system", "user", "assistant", "tool") else "user"
        if role == "tool":
            add(turn=turn, role="tool", kind="tool_result", tool=m.get("name"),
                call_id=m.get("tool_call_id"), content=_text(m.get("content")))  # fmt: skip
            continue
        reasoning = m.get("reasoning_content") or m.get("reasoning")
        if role == "assistant" and reasoning:
            add(turn=turn, role=role, kind="reasoning", content=_text(reasoning))
        text = _text(m.get("content"))
        calls = [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        if text or not calls:
            add(turn=turn, role=role, kind="message", content=text or "")
        for c in calls:
            fn = c.get("function") or {}
            args = fn.get("arguments")
            add(turn=turn, role=role, kind="tool_call", tool=str(fn.get("name")),
                call_id=c.get("id"), arguments=args if isinstance(args, str) else json.dumps(args))  # fmt: skip
    return rows
