"""The steps of an EnvLoop export's attempts (``formats/envloop-job-result.md``, section
"Trajectories"), written while the export loads.

Each attempt of record is read from the first of:

1. its inline ``trajectory`` (an ATIF document): :func:`~..harbor.atif.read_atif`;
2. its ``artifacts[]`` entry named ``agent/trajectory.json``: the file its ``uri`` names
   (a path relative to the export file, or a ``file://`` URI), with the continuation and
   sub-agent files beside it, as in a Harbor trial folder. A file that is missing, or a
   ``uri`` of another scheme (it cannot be read from here), is an error for that trial;
3. its ChatML ``input`` / ``output``: :func:`.steps.read_chatml_steps`.

Plain ChatML -- a string ``input``, or messages whose role is ``system`` / ``user`` /
``assistant``, whose content is a string or null and which carry nothing else the reader
looks at (tool calls, reasoning) -- is written by one SQL statement, so a million-trial
export's steps never pass through Python; the reader is the reference (the tests
compare the two). Every other trial is read in Python, a page of trials at a time.

A bad trajectory or message is a :class:`LoadError` naming the file and step (and the
trial of the export that led to it); under ``lenient=True`` the attempt keeps its row but
none of its steps (each trial's rows are held in a :class:`~envloop_nb._store.steps.HeldRows`
until its reader finished), counted in the load's :class:`~envloop_nb.LoadWarning`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import duckdb
import pyarrow as pa

from ..._errors import LoadError
from ..._store.steps import HeldRows, StepSink, StepWriter, insert_sql
from ..common.values import physical_place
from ..harbor.atif import AtifRead, read_atif
from .steps import read_chatml_steps

__all__ = ["TRAJECTORY_ARTIFACT", "StepsLoaded", "stage_steps"]

#: The ``artifacts[]`` name of a trial's ATIF trajectory.
TRAJECTORY_ARTIFACT = "agent/trajectory.json"
_PAGE = 256  # trials read into Python at a time (an inline trajectory can be large)
_KEYS_READ = ("tool_calls", "function_call", "reasoning_content", "reasoning")

# A ChatML input the SQL path writes exactly as read_chatml_steps would (else: Python).
_PLAIN_MESSAGE = (
    "json_type(m) = 'OBJECT' AND coalesce(json_type(m, '$.role') = 'VARCHAR'"
    " AND (m->>'$.role') IN ('system', 'user', 'assistant'), false)"
    " AND coalesce(json_type(m, '$.content'), 'NULL') IN ('VARCHAR', 'NULL')"
    + "".join(f" AND coalesce(json_type(m, '$.{k}'), 'NULL') = 'NULL'" for k in _KEYS_READ)
)
_PLAIN = f"""(trajectory IS NULL
  AND NOT coalesce(json_type(artifacts) = 'ARRAY' AND list_contains(
        json_extract_string(artifacts, '$[*].name'), '{TRAJECTORY_ARTIFACT}'), false)
  AND CASE json_type(input) WHEN 'VARCHAR' THEN true
        WHEN 'ARRAY' THEN coalesce(list_bool_and(list_transform(
            json_extract(input, '$[*]'), lambda m: {_PLAIN_MESSAGE})), true)
        ELSE input IS NULL END)"""

_SQL_ROWS = insert_sql(f"""
SELECT $job AS job_id, 'message' AS kind, false AS is_error, false AS copied,
       NULL::JSON AS arguments, * FROM (
  WITH p AS (SELECT task, attempt, {{place}} AS place, input, output, json_type(input) AS it
             FROM {{good}} WHERE {_PLAIN})
  SELECT task, attempt, 1 AS step, 1 AS turn, 'user' AS role, input->>'$' AS content,
         $src || ', ' || place || '.input' AS source_place
  FROM p WHERE it = 'VARCHAR'
  UNION ALL
  SELECT task, attempt, i, i, m->>'$.role', m->>'$.content',
         $src || ', ' || place || '.input[' || (i - 1) || ']'
  FROM p, unnest(json_extract(input, '$[*]')) WITH ORDINALITY AS u(m, i) WHERE it = 'ARRAY'
  UNION ALL
  SELECT task, attempt, n + 1, n + 1, 'assistant', output, $src || ', ' || place || '.output'
  FROM (SELECT *, CASE it WHEN 'VARCHAR' THEN 1 WHEN 'ARRAY' THEN json_array_length(input)
                          ELSE 0 END AS n FROM p)
  WHERE output IS NOT NULL)
""")


# ATIF final_metrics fields and the step columns whose sums they state.
_FINAL = {
    "total_prompt_tokens": "tokens_in",
    "total_completion_tokens": "tokens_out",
    "total_cached_tokens": "tokens_cached",
}


@dataclass
class StepsLoaded:
    """What :func:`stage_steps` did: the job's ``extra["steps"]`` and what it skipped."""

    info: dict[str, Any]
    skipped: int = 0
    first_skip: str | None = None


@dataclass
class _Tally:
    atif: int = 0
    chatml: int = 0
    with_steps: int = 0
    compared: int = 0
    missing: int = 0
    first_missing: str | None = None
    skipped: int = 0
    first_skip: str | None = None
    final: dict[str, list[Any]] = field(
        default_factory=lambda: {k: [] for k in ("task", "attempt", "ord", "place", *_FINAL)}
    )


def _place_sql(jsonl: bool) -> str:
    """SQL: a trial's place as the step rows name it (``trials[3]``, ``line 7 $``)."""
    return "'line ' || ord || ' $'" if jsonl else "'trials[' || ord || ']'"


def _artifact(artifacts: Any) -> tuple[int, Any] | None:
    """The trajectory's ``artifacts[]`` entry: ``(index, uri)``, or None."""
    if not isinstance(artifacts, list):
        return None
    for i, entry in enumerate(artifacts):
        if isinstance(entry, dict) and entry.get("name") == TRAJECTORY_ARTIFACT:
            return i, entry.get("uri")
    return None


def _resolve(export: Path, where: str, uri: Any) -> Path:
    """The trajectory file a ``uri`` names: relative to the export, or ``file://``."""
    if not isinstance(uri, str) or not uri:
        raise LoadError(export.name, f"{where}.uri", f"expected a path, got {uri!r}")
    parsed = urlparse(uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        path = Path(url2pathname(unquote(parsed.path)))
    elif "://" in uri:
        raise LoadError(
            export.name,
            f"{where}.uri",
            f"{uri!r} cannot be read: a trajectory's uri must be a path relative to the "
            "export file or a file:// URI",
        )
    else:
        path = export.parent / uri
    if not path.is_file():
        raise LoadError(
            export.name, f"{where}.uri", f"the trajectory {uri!r} is missing (no file {path})"
        )
    return path


def _trajectory_file(export: Path, row: tuple[Any, ...]) -> Path | None:
    """The ATIF file a trial without an inline trajectory references, or None."""
    place, artifacts_text, trajectory = row[1], row[6], row[7]
    if trajectory is not None or artifacts_text is None:
        return None
    ref = _artifact(json.loads(artifacts_text))
    if ref is None:
        return None
    return _resolve(export, f"{place}.artifacts[{ref[0]}]", ref[1])


def _read_trial(
    writer: StepSink, export: Path, row: tuple[Any, ...], path: Path | None
) -> AtifRead | int:
    """One trial's steps: what the ATIF reader read, or the ChatML rows written."""
    _, place, task, attempt, input_text, output, _, trajectory = row
    if trajectory is not None:
        doc = json.loads(trajectory)
        source = f"{export.name}, {place}.trajectory"
        return read_atif(writer, task=task, attempt=attempt, doc=doc, source=source)
    if path is not None:
        return read_atif(writer, task=task, attempt=attempt, path=path)
    got = read_chatml_steps(
        writer, task=task, attempt=attempt, output=output, source=export.name, place=place,
        input=json.loads(input_text) if input_text is not None else None,
    )  # fmt: skip
    return got.rows


def _named(err: LoadError, export: Path, place: str, jsonl: bool, path: Path | None) -> LoadError:
    """``err`` with the export's full path and file line; for an error inside a
    trajectory file, that file's path and the trial of the export that led to it."""
    real = place
    if jsonl:
        line = physical_place(export, place.removesuffix(" $"))
        real = line + (" $" if place.endswith(" $") else "")
    head = f"{export.name}, "
    if err.source == export.name or err.source.startswith(head):
        inner = err.source[len(head) :] if err.source.startswith(head) else ""
        where = ", ".join(p for p in (inner, err.place) if p).replace(place, real, 1)
        return LoadError(export, where, err.problem)
    source: Path | str = err.source
    if path is not None and (path.parent / err.source).is_file():  # ATIF names files by name
        source = path.parent / err.source
    return LoadError(source, err.place, f"{err.problem} (the trajectory of {export}, {real})")


def _final_metrics(tally: _Tally, row: tuple[Any, ...], got: AtifRead) -> None:
    fm = got.final_metrics or {}
    if not any(isinstance(fm.get(k), int) for k in _FINAL):
        return
    tally.compared += 1
    for key, value in zip(("ord", "place", "task", "attempt"), row[:4], strict=True):
        tally.final[key].append(value)
    for key in _FINAL:
        value = fm.get(key)
        tally.final[key].append(value if isinstance(value, int) else None)


def _flush_final(con: duckdb.DuckDBPyConnection, tally: _Tally) -> None:
    if not tally.final["task"]:
        return
    table = pa.table({k: pa.array(v) for k, v in tally.final.items()})
    for values in tally.final.values():
        values.clear()
    con.register("_el_fm_batch", table)
    try:
        con.execute("INSERT INTO _el_fm BY NAME SELECT * FROM _el_fm_batch")
    finally:
        con.unregister("_el_fm_batch")


def _python_trials(
    con: duckdb.DuckDBPyConnection,
    export: Path,
    job_id: str,
    *,
    good: str,
    jsonl: bool,
    lenient: bool,
) -> _Tally:
    """Read the trials the SQL path leaves, a page at a time, through one StepWriter."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _el_steps_py AS
            SELECT row_number() OVER (ORDER BY ord) AS n, ord, {_place_sql(jsonl)} AS place,
                   task, attempt, input::VARCHAR AS input, output,
                   artifacts::VARCHAR AS artifacts, trajectory::VARCHAR AS trajectory
            FROM {good} WHERE NOT {_PLAIN} ORDER BY ord"""
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _el_fm (ord BIGINT, place VARCHAR, task VARCHAR, "
        "attempt INTEGER, " + ", ".join(f"{k} BIGINT" for k in _FINAL) + ")"
    )
    tally = _Tally()
    writer = StepWriter(con, job_id)
    start = 0
    while True:
        page = con.execute(
            "SELECT ord, place, task, attempt, input, output, artifacts, trajectory "
            "FROM _el_steps_py WHERE n > ? AND n <= ? ORDER BY n",
            [start, start + _PAGE],
        ).fetchall()
        if not page:
            break
        start += _PAGE
        for row in page:
            path = None
            held = HeldRows() if lenient else None  # a refused trial leaves no rows
            try:
                path = _trajectory_file(export, row)
                got = _read_trial(writer if held is None else held, export, row, path)
            except LoadError as err:
                named = _named(err, export, row[1], jsonl, path)
                if not lenient:
                    raise named from err
                tally.skipped += 1
                tally.first_skip = tally.first_skip or str(named)
                continue
            if held is not None:
                held.write_to(writer)
            if isinstance(got, int):
                tally.chatml += got > 0
                tally.with_steps += got > 0
                continue
            tally.atif += 1
            tally.with_steps += got.rows > 0
            if got.missing_subagents:
                tally.missing += len(got.missing_subagents)
                tally.first_missing = tally.first_missing or f"{row[1]}: {got.missing_subagents[0]}"
            _final_metrics(tally, row, got)
        _flush_final(con, tally)
    writer.close()
    return tally


def stage_steps(
    con: duckdb.DuckDBPyConnection,
    export: Path,
    job_id: str,
    *,
    good: str,
    jsonl: bool,
    lenient: bool,
) -> StepsLoaded:
    """Write the steps of the attempts of record (the relation ``good``: ``ord``, ``task``,
    ``attempt``, ``input``, ``output``, ``artifacts``, ``trajectory``) and say where they
    came from (the job's ``extra["steps"]``)."""
    con.execute(
        _SQL_ROWS.format(place=_place_sql(jsonl), good=good), {"job": job_id, "src": export.name}
    )
    counts = con.execute(
        f"""SELECT count(*) FILTER (WHERE {_PLAIN} AND (input IS NOT NULL OR output IS NOT NULL)),
                   count(*)
            FROM {good}"""
    ).fetchone()
    assert counts is not None
    tally = _python_trials(con, export, job_id, good=good, jsonl=jsonl, lenient=lenient)
    tally.chatml += int(counts[0])
    with_steps, total = int(counts[0]) + tally.with_steps, int(counts[1])
    differ: tuple[Any, ...] = (0, None)
    if tally.compared:  # the ATIF attempts whose final_metrics state token totals
        differ = (
            con.execute(
                f"""SELECT count(*), arg_min(f.place, f.ord) FROM _el_fm f JOIN (
                    SELECT task, attempt,
                           {", ".join(f"sum({c}) AS {c}" for c in _FINAL.values())}
                    FROM steps WHERE job_id = $job
                         AND (task, attempt) IN (SELECT (task, attempt) FROM _el_fm)
                    GROUP BY task, attempt) s USING (task, attempt)
                WHERE {" OR ".join(f"f.{k} <> s.{c}" for k, c in _FINAL.items())}""",
                {"job": job_id},
            ).fetchone()
            or differ
        )
    con.execute("DROP TABLE IF EXISTS _el_fm")
    con.execute("DROP TABLE IF EXISTS _el_steps_py")
    readers = [name for name, n in (("atif", tally.atif), ("chatml", tally.chatml)) if n]
    info: dict[str, Any] = {
        "source": "+".join(readers) or None,
        "attempts_with_steps": with_steps,
        "attempts_without": total - with_steps,
        "skipped": tally.skipped,
        "atif": tally.atif,
        "chatml": tally.chatml,
    }
    if not readers:
        info["why"] = (
            "every attempt's steps were skipped (lenient)"
            if tally.skipped
            else "no trial records a trajectory, an input or an output"
        )
    if tally.atif:
        info["missing_subagents"] = tally.missing
        if tally.first_missing:
            info["missing_subagents_first"] = tally.first_missing
        info["final_metrics_differ"] = int(differ[0])
        if differ[0]:
            info["final_metrics_first_differs"] = differ[1]
    return StepsLoaded(info, tally.skipped, tally.first_skip)
