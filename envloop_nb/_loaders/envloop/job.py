"""EnvLoop job result export (``envloop.job-result/v1``): single JSON document, or
streaming JSONL (optionally gzip-compressed). Spec: ``shared/formats/envloop-job-result.md``.

The header (job) is small and read in Python; trials are read, validated and resolved
to their attempt of record in DuckDB SQL, so a million-line file never becomes Python
objects.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..._errors import LoadError, LoadWarning
from ..._store.sql import json_pointer_sql, literal
from ..._store.task_counts import reward_range_sql
from ..common.read import (
    check_gzip,
    decode_utf8,
    explain_bad_line,
    is_gzip,
    parse_json,
    read_bytes,
    read_first_line,
)
from ..common.stage import begin_job, insert_rows, stage_name
from ..common.values import INT32_MAX, check_claimed_k, parse_time, physical_place
from .job_steps import stage_steps

__all__ = ["SCHEMA_VERSION", "load_envloop"]

SCHEMA_VERSION = "envloop.job-result/v1"
STATUSES = ("pending", "running", "completed", "failed", "cancelled")

# One parse per line: every field the spec names, nested objects kept as JSON.
_TRIAL_STRUCT = json.dumps(
    {
        "id": "JSON",
        "task": "JSON",
        "attempt": "JSON",
        "status": "JSON",
        "exit_code": "JSON",
        "error": "VARCHAR",
        "reward": "JSON",
        "metrics": "JSON",
        "usage": "JSON",
        "logprob": "JSON",
        "started_at": "VARCHAR",
        "finished_at": "VARCHAR",
        "input": "JSON",
        "output": "VARCHAR",
        "reference": "VARCHAR",
        "artifacts": "JSON",
        "trajectory": "JSON",
        "schema_version": "JSON",
        "job": "JSON",
    }
)

_NUMBER = "('BIGINT', 'UBIGINT', 'DOUBLE')"
_INTEGER = "('BIGINT', 'UBIGINT')"


def _is_jsonl(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"))


def _check_job(source: Path, doc: Any, place: str) -> dict[str, Any]:
    """Validate the header: schema version and the job object's required fields."""
    if not isinstance(doc, dict):
        raise LoadError(source, place, "expected a JSON object with schema_version and job")
    sep = " " if place else ""
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise LoadError(
            source, f"{place}{sep}$.schema_version", f"expected {SCHEMA_VERSION!r}, got {version!r}"
        )
    job = doc.get("job")
    if not isinstance(job, dict):
        raise LoadError(source, f"{place}{sep}$.job", "expected the job object")

    def need(cond: bool, field: str, what: str) -> None:
        if not cond:
            raise LoadError(
                source, f"{place}{sep}$.job.{field}", f"expected {what}, got {job.get(field)!r}"
            )

    need(isinstance(job.get("id"), str) and bool(job["id"]), "id", "a non-empty string")
    need(job.get("status") in STATUSES, "status", f"one of {', '.join(STATUSES)}")
    attempts = job.get("attempts")
    need(
        isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= 1,
        "attempts",
        "an integer >= 1",
    )
    if isinstance(attempts, int) and attempts > INT32_MAX:
        raise LoadError(
            source,
            f"{place}{sep}$.job.attempts",
            f"attempts {attempts} is out of range: it must fit a 32-bit integer",
        )
    dataset = job.get("dataset")
    need(
        isinstance(dataset, dict)
        and isinstance(dataset.get("name"), str)
        and isinstance(dataset.get("version"), str),
        "dataset",
        "an object with string name and version",
    )
    revision = dataset.get("revision") if isinstance(dataset, dict) else None
    if revision is not None and not isinstance(revision, str):
        raise LoadError(
            source, f"{place}{sep}$.job.dataset.revision", f"expected a string, got {revision!r}"
        )
    for field in ("runner", "model", "request_id"):  # never a Python repr of an object
        need(job.get(field) is None or isinstance(job[field], str), field, "a string or null")
    profile = job.get("profile")
    need(profile is None or isinstance(profile, dict), "profile", "an object or null")
    for field in ("created_at", "finished_at"):
        parse_time(job.get(field), source, f"{place}{sep}$.job.{field}", field)
    need(isinstance(job.get("tasks"), list), "tasks", "an array of {name, digest, tags}")
    for i, task in enumerate(job["tasks"]):
        where = f"{place}{sep}$.job.tasks[{i}]"
        if not isinstance(task, dict) or not isinstance(task.get("name"), str) or not task["name"]:
            raise LoadError(
                source, where, f"expected an object with a non-empty name, got {task!r}"
            )
        tags = task.get("tags") or {}
        if not isinstance(tags, dict):
            raise LoadError(source, f"{where}.tags", f"expected a string map, got {tags!r}")
        for key, value in tags.items():
            if not isinstance(value, str):
                raise LoadError(
                    source, f"{where}.tags.{key}", f"tag values must be strings, got {value!r}"
                )
    return job


def _stage_job(
    con: duckdb.DuckDBPyConnection,
    source: Path,
    job: dict[str, Any],
    metrics: Any,
    job_id: str,
) -> None:
    dataset = job["dataset"]
    profile = job.get("profile") or {}
    dumps = json.dumps
    insert_rows(
        con,
        "jobs",
        [
            {
                "job_id": job_id,
                "source_format": "envloop",
                "source_path": str(source),
                "status": job["status"],
                "created_at": parse_time(job.get("created_at"), source, "$.job", "created_at"),
                "finished_at": parse_time(job.get("finished_at"), source, "$.job", "finished_at"),
                "dataset_name": dataset["name"],
                "dataset_version": dataset["version"],
                "dataset_revision": dataset.get("revision"),
                "runner": job.get("runner"),
                "profile_name": profile.get("name"),
                "profile_version": profile.get("version"),
                "profile_params": dumps(profile.get("params")) if profile.get("params") else None,
                "model": job.get("model"),
                "request_id": job.get("request_id"),
                "attempts": job["attempts"],
                "labels": dumps(job["labels"]) if job.get("labels") else None,
                "platform_metrics": dumps(metrics) if metrics else None,
                "extra": None,
            }
        ],
    )
    tasks = job["tasks"]
    insert_rows(
        con,
        "tasks",
        [
            {
                "job_id": job_id,
                "task": t["name"],
                "position": i,
                "digest": t.get("digest"),
                "tags": dumps(t.get("tags") or {}),
            }
            for i, t in enumerate(tasks)
        ],
    )
    insert_rows(
        con,
        "task_tags",
        [
            {"job_id": job_id, "task": t["name"], "key": key, "value": value}
            for t in tasks
            for key, value in (t.get("tags") or {}).items()
        ],
    )


def _read_jsonl(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, Any]:
    """Read the header in Python and expose the other lines as view ``_el_raw(ord, j)``.

    The platform's trailing ``{"metrics": {...}}`` line is among them: the trial pass
    recognises it (see :func:`load_envloop`), so the file is read only once.
    """
    first = read_first_line(path)
    if not first.strip():
        raise LoadError(path, "line 1", "empty file: expected the job header line")
    header = parse_json(path, decode_utf8(path, first))
    job = _check_job(path, header, "line 1")
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW _el_raw AS
            SELECT ordinality AS ord, json AS j, 'line ' || ordinality AS place
            FROM read_json_objects({literal(str(path))}, format='newline_delimited',
                                   ignore_errors=true) WITH ORDINALITY
            WHERE ordinality > 1"""
    )
    return job


def _read_document(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[dict[str, Any], Any]:
    doc = parse_json(path, decode_utf8(path, read_bytes(path)))
    job = _check_job(path, doc, "")
    trials = doc.get("trials")
    if not isinstance(trials, list):
        raise LoadError(
            path, "$.trials", f"expected an array of trials, got {type(trials).__name__}"
        )
    places = []
    for i, t in enumerate(trials):
        tid = t.get("id") if isinstance(t, dict) else None
        places.append(f"trials[{i}]" + (f" (id {tid})" if tid else ""))
    table = pa.table(
        {
            "ord": pa.array(range(len(trials)), pa.int64()),
            "j": pa.array([json.dumps(t) for t in trials], pa.string()),
            "place": pa.array(places, pa.string()),
        }
    )
    con.register("_el_doc", table)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _el_doc_t AS SELECT ord, j::JSON AS j, place FROM _el_doc"
    )
    con.unregister("_el_doc")
    con.execute("CREATE OR REPLACE TEMP VIEW _el_raw AS SELECT * FROM _el_doc_t")
    return job, doc.get("metrics")


def _digits(json_value: str) -> str:
    """SQL: the JSON value is written as an integer (one too large for BIGINT/UBIGINT
    is typed DOUBLE by DuckDB; it is out of range, not a non-integer)."""
    return f"regexp_full_match({json_value}::VARCHAR, '-?[0-9]+')"


def _whole(double: str) -> str:
    """SQL: the DOUBLE expression is a finite whole number."""
    return f"coalesce(isfinite({double}) AND {double} = floor({double}), false)"


# usage's integer fields, parsed once per line into ``u`` (a struct of JSON values).
_USAGE_INTS = {
    "input_tokens": ("BIGINT", 64),
    "output_tokens": ("BIGINT", 64),
    "cache_tokens": ("BIGINT", 64),
    "turns": ("INTEGER", 32),
}
_USAGE_STRUCT = json.dumps({**{name: "JSON" for name in _USAGE_INTS}, "cost_usd": "JSON"})
# logprob's fields, parsed once per line into ``lp``.
_LOGPROB_FIELDS = ("mean", "min", "max", "std", "zero_frac")
_LOGPROB_STRUCT = json.dumps({name: "JSON" for name in _LOGPROB_FIELDS})
# metrics' checked fields, parsed once per line into ``m`` (not once per check).
_METRICS_STRUCT = json.dumps(
    {name: "JSON" for name in ("dimensions", "composite", "units", "higher_is_better")}
)


def _object_problem(value: str, field: str) -> str:
    """CASE branch: the JSON ``value`` is absent, null or an object, else a problem."""
    return f"""  WHEN json_type({value}) NOT IN ('OBJECT', 'NULL')
    THEN '{field} must be an object or null, got ' || lower(json_type({value})) || ' ' || {value}::VARCHAR
"""


def _number_problem(value: str, field: str) -> str:
    """CASE branches: the JSON ``value`` is absent, null or a finite number, else a
    problem (a string, boolean, object, NaN or infinity is never dropped quietly)."""
    return f"""  WHEN json_type({value}) NOT IN ('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE')
    THEN '{field} must be a number or null, got ' || lower(json_type({value})) || ' ' || {value}::VARCHAR
  WHEN json_type({value}) = 'DOUBLE' AND NOT isfinite(TRY_CAST({value} AS DOUBLE))
    THEN '{field} must be finite, got ' || {value}::VARCHAR
"""


def _map_problem(key: str, kinds: str, what: str) -> str:
    """CASE branches: ``metrics.<key>`` is absent, null or an object whose values are of
    the JSON types ``kinds`` (or null), else a problem (a value would be dropped)."""
    values = f"map_values(json_transform(m.{key}, '\"MAP(VARCHAR, JSON)\"'))"
    return f"""  WHEN json_type(m.{key}) NOT IN ('OBJECT', 'NULL')
    THEN 'metrics.{key} must be an object of {what}, got ' || m.{key}::VARCHAR
  WHEN json_type(m.{key}) = 'OBJECT' AND coalesce(list_bool_or(list_transform(
         {values}, v -> coalesce(json_type(v), 'NULL') NOT IN {kinds})), false)
    THEN 'metrics.{key} values must be {what}, got ' || m.{key}::VARCHAR
"""


# A whole number written as a float (3.0, 1e3) is taken; 2.5 or "3" is not (it used to
# be rounded, or dropped, quietly). So is a cost or a logprob that is not a finite number.
_USAGE_PROBLEMS = _object_problem("t.usage", "usage") + "".join(
    f"""  WHEN json_type(u.{name}) NOT IN ('NULL', 'BIGINT', 'UBIGINT') AND NOT {_digits(f"u.{name}")}
       AND NOT (json_type(u.{name}) = 'DOUBLE' AND {_whole(f"TRY_CAST(u.{name} AS DOUBLE)")})
    THEN 'usage.{name} must be an integer or null, got ' || u.{name}::VARCHAR
  WHEN json_type(u.{name}) <> 'NULL' AND TRY_CAST(u.{name} AS {sql_type}) IS NULL
    THEN 'usage.{name} ' || u.{name}::VARCHAR || ' is out of range: it must fit a {bits}-bit integer'
"""
    for name, (sql_type, bits) in _USAGE_INTS.items()
)
_USAGE_PROBLEMS += _number_problem("u.cost_usd", "usage.cost_usd")
_USAGE_PROBLEMS += _object_problem("t.logprob", "logprob")
_USAGE_PROBLEMS += "".join(_number_problem(f"lp.{n}", f"logprob.{n}") for n in _LOGPROB_FIELDS)
_USAGE_PROBLEMS = _USAGE_PROBLEMS.rstrip("\n")
_METRICS_PROBLEMS = (
    _map_problem("units", "('VARCHAR', 'NULL')", "strings")
    + _map_problem("higher_is_better", "('BOOLEAN', 'NULL')", "booleans")
).rstrip("\n")

# Why a trial line cannot be used, or NULL. Evaluated once per line in SQL.
_PROBLEM = f"""
CASE
  WHEN j IS NULL THEN 'not valid JSON'
  WHEN json_type(j) <> 'OBJECT' THEN 'expected a trial object, got ' || json_type(j)
  WHEN t.task IS NULL AND $jsonl AND json_keys(j) = ['metrics']
    THEN 'a line holding only "metrics" is the platform''s aggregate: it may only be the last line'
  WHEN t.task IS NULL OR json_type(t.task) <> 'VARCHAR'
    THEN 'task must be a string, got ' || coalesce(t.task::VARCHAR, 'nothing')
  WHEN t.attempt IS NULL OR (json_type(t.attempt) NOT IN {_INTEGER} AND NOT {_digits("t.attempt")})
    THEN 'attempt must be an integer, got ' || coalesce(t.attempt::VARCHAR, 'nothing')
  WHEN NOT coalesce(TRY_CAST(t.attempt AS BIGINT) BETWEEN 1 AND $k, false)
    THEN 'attempt ' || t.attempt::VARCHAR || ' is out of range: the job requested 1..' || $k || ' per task'
  WHEN t.status IS NULL OR json_type(t.status) <> 'VARCHAR' OR (t.status->>'$') NOT IN {STATUSES!r}
    THEN 'status must be one of {", ".join(STATUSES)}, got ' || coalesce(t.status::VARCHAR, 'nothing')
  WHEN t.reward IS NOT NULL AND json_type(t.reward) NOT IN ('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE')
    THEN 'reward must be a number or null, got ' || lower(json_type(t.reward)) || ' ' || t.reward::VARCHAR
  WHEN json_type(t.reward) = 'DOUBLE' AND NOT isfinite(TRY_CAST(t.reward AS DOUBLE))
    THEN 'reward must be finite, got ' || t.reward::VARCHAR
  {reward_range_sql("TRY_CAST(t.reward AS DOUBLE)", "t.reward::VARCHAR")}
  WHEN json_type(t.exit_code) NOT IN ('NULL', 'BIGINT', 'UBIGINT') AND NOT {_digits("t.exit_code")}
    THEN 'exit_code must be an integer or null, got ' || t.exit_code::VARCHAR
  WHEN json_type(t.exit_code) <> 'NULL' AND TRY_CAST(t.exit_code AS INTEGER) IS NULL
    THEN 'exit_code ' || t.exit_code::VARCHAR || ' is out of range: it must fit a 32-bit integer'
{_USAGE_PROBLEMS}
  WHEN t.started_at IS NOT NULL AND TRY_CAST(t.started_at AS TIMESTAMPTZ) IS NULL
    THEN 'started_at is not an RFC 3339 time: ' || t.started_at
  WHEN t.finished_at IS NOT NULL AND TRY_CAST(t.finished_at AS TIMESTAMPTZ) IS NULL
    THEN 'finished_at is not an RFC 3339 time: ' || t.finished_at
  WHEN (t.task->>'$') NOT IN (SELECT task FROM tasks WHERE job_id = $job_id)
    THEN 'task ' || t.task::VARCHAR || ' is not among the job''s requested tasks'
  WHEN t.metrics IS NOT NULL AND json_type(t.metrics) NOT IN ('OBJECT', 'NULL')
    THEN 'metrics must be an object or null'
  WHEN json_type(m.dimensions) NOT IN ('OBJECT', 'NULL')
    THEN 'metrics.dimensions must be an object of numbers'
  WHEN json_type(m.dimensions) = 'OBJECT' AND coalesce(list_bool_or(list_transform(
         map_values(json_transform(m.dimensions, '"MAP(VARCHAR, JSON)"')),
         v -> coalesce(json_type(v), 'NULL') NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'NULL'))), false)
    THEN 'metrics.dimensions values must be numbers, got ' || m.dimensions::VARCHAR
  WHEN json_type(m.dimensions) = 'OBJECT' AND coalesce(list_bool_or(list_transform(
         map_values(json_transform(m.dimensions, '"MAP(VARCHAR, JSON)"')),
         v -> NOT isfinite(coalesce(TRY_CAST(v AS DOUBLE), 0)))), false)
    THEN 'metrics.dimensions values must be finite, got ' || m.dimensions::VARCHAR
  WHEN json_type(m.composite) NOT IN ('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE')
    THEN 'metrics.composite must be a number'
  WHEN json_type(m.composite) = 'DOUBLE' AND NOT isfinite(TRY_CAST(m.composite AS DOUBLE))
    THEN 'metrics.composite must be finite, got ' || m.composite::VARCHAR
{_METRICS_PROBLEMS}
  ELSE NULL
END
"""


def load_envloop(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    steps: bool = True,
) -> None:
    """Stage one EnvLoop export (``.json``, ``.jsonl`` or ``.jsonl.gz``).

    Duplicate ``(task, attempt)`` trials resolve to the attempt of record: latest
    ``finished_at``, then latest ``started_at``, then the later one in the file.

    Nothing is lost or invented quietly: a ``.gz`` file must hold its whole gzip
    stream; a reward (or composite, dimension value, ``usage.cost_usd`` or ``logprob``
    field) must be a finite number or null (null: not recorded), a reward at most
    :data:`~envloop_nb._store.task_counts.MAX_ABS_REWARD` in magnitude; ``job.attempts``
    at most :func:`~envloop_nb._loaders.common.values.check_claimed_k`'s bound; ``usage`` and
    ``logprob`` must be objects or null, ``metrics.units`` map to strings and
    ``metrics.higher_is_better`` to booleans; integers must fit their columns; the
    header's ``runner``/``model``/``request_id`` are strings or null, its times RFC 3339;
    only the last line of a JSONL file may be the platform's ``{"metrics": ...}`` line
    (any other line without ``task`` is a bad trial). ``lenient=True`` skips a bad trial
    and counts it in a :class:`~envloop_nb.LoadWarning`.
    """
    path = Path(source)
    jsonl = _is_jsonl(path)
    if is_gzip(path):
        check_gzip(path)  # DuckDB would read a cut stream up to the cut, quietly
    if jsonl:
        job, metrics = _read_jsonl(con, path), None
    else:
        job, metrics = _read_document(con, path)
    jid = job_id or job["id"]
    begin_job(con, jid)
    _stage_job(con, path, job, metrics, jid)
    k = int(job["attempts"])

    # One pass over the trial lines: parse each into the typed struct, say what is wrong
    # with it (or NULL), and rank retried slots -- one temporary table, no raw JSON kept.
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _el_trials AS
        SELECT ord, place, problem,
               t.task->>'$' AS task,
               CASE WHEN problem IS NULL THEN TRY_CAST(t.attempt AS INTEGER) END AS attempt,
               t.id->>'$' AS trial_id,
               t.status->>'$' AS status,
               TRY_CAST(t.exit_code AS INTEGER) AS exit_code,
               t.error AS error,
               TRY_CAST(t.reward AS DOUBLE) AS reward,
               t.metrics, t.usage, t.input, t.output, t.reference, t.artifacts, t.trajectory,
               TRY_CAST(u.input_tokens AS BIGINT) AS input_tokens,
               TRY_CAST(u.output_tokens AS BIGINT) AS output_tokens,
               TRY_CAST(u.cache_tokens AS BIGINT) AS cache_tokens,
               TRY_CAST(u.turns AS INTEGER) AS turns,
               TRY_CAST(u.cost_usd AS DOUBLE) AS cost_usd,
               TRY_CAST(lp.mean AS DOUBLE) AS logprob_mean,
               TRY_CAST(lp.min AS DOUBLE) AS logprob_min,
               TRY_CAST(lp.max AS DOUBLE) AS logprob_max,
               TRY_CAST(lp.std AS DOUBLE) AS logprob_std,
               TRY_CAST(lp.zero_frac AS DOUBLE) AS logprob_zero_frac,
               CASE WHEN problem LIKE 'a line holding only "metrics"%'
                    THEN no_task->'$.metrics' END AS metrics_line,
               TRY_CAST(t.started_at AS TIMESTAMPTZ) AS started_at,
               TRY_CAST(t.finished_at AS TIMESTAMPTZ) AS finished_at,
               count(*) OVER slot AS n_trials,
               row_number() OVER (
                   slot ORDER BY TRY_CAST(t.finished_at AS TIMESTAMPTZ) DESC NULLS LAST,
                                 TRY_CAST(t.started_at AS TIMESTAMPTZ) DESC NULLS LAST, ord DESC
               ) AS rank_of_record
        FROM (SELECT ord, place, t, u, lp, {_PROBLEM} AS problem,
                     CASE WHEN t.task IS NULL THEN j END AS no_task
              FROM (SELECT ord, place, j, t, json_transform(t.usage, '{_USAGE_STRUCT}') AS u,
                           json_transform(t.logprob, '{_LOGPROB_STRUCT}') AS lp,
                           json_transform(t.metrics, '{_METRICS_STRUCT}') AS m
                    FROM (SELECT ord, place, j, json_transform(j, '{_TRIAL_STRUCT}') AS t
                          FROM _el_raw)))
        WINDOW slot AS (PARTITION BY problem IS NULL, t.task, t.attempt)""",
        {"k": k, "job_id": jid, "jsonl": jsonl},
    )
    if jsonl:  # the platform's aggregate: a {"metrics": ...} line that is the last line
        last = con.execute(
            "SELECT ord, metrics_line FROM _el_trials ORDER BY ord DESC LIMIT 1"
        ).fetchone()
        if last is not None and last[1] is not None:
            con.execute("DELETE FROM _el_trials WHERE ord = ?", [last[0]])
            metrics = json.loads(last[1])
            con.execute(
                f"UPDATE {stage_name('jobs')} SET platform_metrics = ?::JSON WHERE job_id = ?",
                [json.dumps(metrics) if metrics else None, jid],
            )
    for name in ("_el_doc_t",):  # the document's trials are parsed: drop the raw copy
        con.execute(f"DROP TABLE IF EXISTS {name}")
    notes: list[str] = []  # what lenient skipped: one LoadWarning at the end
    bad = con.execute(
        "SELECT count(*), arg_min(place, ord), arg_min(problem, ord) "
        "FROM _el_trials WHERE problem IS NOT NULL"
    ).fetchone()
    n_bad = int(bad[0]) if bad else 0
    if n_bad:
        assert bad is not None
        place, problem = str(bad[1]), str(bad[2])
        if _is_jsonl(path):
            place = physical_place(path, place)
        if problem == "not valid JSON" and _is_jsonl(path):
            problem = explain_bad_line(path, int(place.removeprefix("line ")))
        if not lenient:
            more = f" ({n_bad - 1} more unusable lines)" if n_bad > 1 else ""
            raise LoadError(path, place, problem + more)
        notes.append(f"skipped {n_bad} unusable trial(s); first at {place}: {problem}")
    top = con.execute("SELECT max(attempt) FROM _el_trials WHERE problem IS NULL").fetchone()
    check_claimed_k(
        path, ("line 1 " if jsonl else "") + "$.job.attempts", k, top[0] if top else None,
        name="attempts",
    )  # fmt: skip
    _stage_trials(con, jid)
    if steps:
        got = stage_steps(con, path, jid, good="_el_good", jsonl=jsonl, lenient=lenient)
        info = got.info
        if got.skipped:
            notes.append(
                f"skipped the steps of {got.skipped} attempt(s) (the attempts are kept); "
                f"first: {got.first_skip}"
            )
    else:
        info = {"source": None, "why": "loaded with steps=False"}
    row = con.execute(f"SELECT extra FROM {stage_name('jobs')}").fetchone()
    extra = {**json.loads(row[0] if row and row[0] else "{}"), "steps": info}  # nulls kept
    con.execute(f"UPDATE {stage_name('jobs')} SET extra = ?::JSON", [json.dumps(extra)])
    con.execute("DROP VIEW IF EXISTS _el_good")
    con.execute("DROP TABLE IF EXISTS _el_trials")
    con.execute("DROP VIEW IF EXISTS _el_raw")
    if notes:
        warnings.warn(f"{path}: " + "; ".join(notes), LoadWarning, stacklevel=4)


# A dimension name is data: look it up by JSON pointer, never as a path (``$``, ``/x``).
_KEY = json_pointer_sql("name")


def _stage_trials(con: duckdb.DuckDBPyConnection, job_id: str) -> None:
    """Write the attempts of record, their dimensions and the dimensions' metadata."""
    con.execute(
        """CREATE OR REPLACE TEMP VIEW _el_good AS
           SELECT * FROM _el_trials WHERE problem IS NULL AND rank_of_record = 1"""
    )
    con.execute(
        f"""INSERT INTO {stage_name("attempts")} BY NAME
        SELECT $job_id AS job_id, task, attempt, trial_id, status, exit_code, error,
               -- The export has no error type; take a leading exception name
               -- ("AgentTimeoutError: ...") when the error text starts with one.
               nullif(regexp_extract(error, '^([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Timeout))(?::| |$)', 1), '')
                   AS error_type, reward,
               TRY_CAST(metrics->'$.composite' AS DOUBLE) AS composite,
               metrics->>'$.judge_summary' AS judge_summary,
               metrics->>'$.verifier_version' AS verifier_version,
               input_tokens, output_tokens, cache_tokens, turns, cost_usd,
               logprob_mean, logprob_min, logprob_max, logprob_std, logprob_zero_frac,
               started_at, finished_at,
               epoch(finished_at) - epoch(started_at) AS duration_s,
               CASE json_type(input) WHEN 'VARCHAR' THEN input->>'$'
                    WHEN 'NULL' THEN NULL ELSE input::VARCHAR END AS input,
               json_type(input) = 'ARRAY' AS input_is_chat,
               output, reference, artifacts,
               CASE WHEN metrics IS NOT NULL OR usage IS NOT NULL
                    THEN json_object('metrics', metrics, 'usage', usage) END AS extra,
               n_trials::INTEGER AS n_trials, place AS source_place
        FROM _el_good""",
        {"job_id": job_id},
    )
    con.execute(
        f"""INSERT INTO {stage_name("dimensions")} BY NAME
        SELECT $job_id AS job_id, task, attempt, name,
               TRY_CAST((metrics->'$.dimensions')->{_KEY} AS DOUBLE) AS value
        FROM (SELECT task, attempt, metrics,
                     unnest(json_keys(metrics, '$.dimensions')) AS name
              FROM _el_good
              WHERE json_type(metrics, '$.dimensions') = 'OBJECT')""",
        {"job_id": job_id},
    )
    con.execute(
        f"""INSERT INTO {stage_name("dimension_meta")} BY NAME
        SELECT $job_id AS job_id, name,
               any_value((metrics->'$.units')->>{_KEY}) AS unit,
               any_value(TRY_CAST((metrics->'$.higher_is_better')->{_KEY} AS BOOLEAN))
                   AS higher_is_better,
               any_value(metrics->>'$.verifier_version') AS verifier_version
        FROM (SELECT metrics, unnest(json_keys(metrics, '$.dimensions')) AS name
              FROM _el_good
              WHERE json_type(metrics, '$.dimensions') = 'OBJECT')
        GROUP BY name""",
        {"job_id": job_id},
    )
