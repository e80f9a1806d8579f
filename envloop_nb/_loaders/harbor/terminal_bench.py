"""Terminal-Bench 1 run results: the ``results.json`` the original ``tb run`` harness
(before Harbor) writes at the root of a run folder. Spec:
``shared/formats/terminal-bench.md``.

One JSON object of at most a few thousand trials, read in Python and staged with
:func:`envloop_nb._loaders.common.stage.insert_rows`. Pure row building
(:func:`build_rows`) comes first and needs no DuckDB.

**Verdicts.** ``is_resolved`` true / false is stored as reward 1.0 / 0.0. A trial with
``is_resolved`` null ended without a verdict (the tests timed out, their output could
not be parsed, the agent crashed): it is kept as an attempt **without reward** (status
``failed``, ``error_type`` = ``failure_mode``), so it is *invalid*, never a silent 0.
Terminal-Bench itself counts such a trial as not resolved in ``accuracy`` and
``pass_at_k``: ``job.summary(policy="failure")`` applies that rule and reproduces them.

**Trial names.** The spec writes ``<task_id>.<i>-of-<n>``; terminal-bench 0.2.x appends
the run id (``Harness._get_trial_name``: ``f"{task}.{i}-of-{n}.{run_id}"``). Both are
read; the run id, when present, is kept in the job's ``extra["run_id"]``.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError, LoadWarning
from ..._store.source_numbers import SourceNumber, Statistic
from ..common.stage import begin_job, insert_rows
from ..common.values import (
    INT32_MAX,
    INT64_MAX,
    check_k,
    duration_s,
    is_int,
    is_number,
    parse_time,
    read_json_file,
)
from .terminal_bench_meta import RunMetadata, read_run_metadata

__all__ = [
    "NO_STEPS",
    "RULE",
    "RunFolder",
    "build_rows",
    "job_name",
    "load_terminal_bench",
    "parse_run_folder",
    "source_numbers",
]

#: Why a Terminal-Bench 1 job has no steps (its ``extra["steps"]``).
NO_STEPS = {
    "source": None,
    "why": "Terminal-Bench 1 records each trial's terminal session as an asciinema "
    "recording (the attempt's artifacts.recording_path: screen output, not tool "
    "calls), no trajectory of steps",
}
#: Terminal-Bench's missing-value rule, in the words shown beside its numbers.
RULE = "Terminal-Bench counts a trial with is_resolved null as not resolved"

#: ``failure_mode`` values that mean nothing went wrong.
_NO_FAILURE = ("unset", "none")

_TRIAL_INDEX = re.compile(r"(?P<i>\d+)-of-(?P<n>\d+)(?:\.(?P<run>.+))?", re.DOTALL)
_RUN_FOLDER = re.compile(
    r"(?P<date>\d{4}-?\d{2}-?\d{2}(?:__\d{2}-\d{2}-\d{2})?)_(?P<agent>[^_]+)_(?P<model>.+)"
)


@dataclass(frozen=True)
class RunFolder:
    """What a run folder's name ``<date>_<agent>_<model>`` says (None when it does not)."""

    name: str
    date: str | None = None
    agent: str | None = None
    model: str | None = None


def parse_run_folder(path: Path) -> RunFolder:
    """Read date, agent and model from the folder holding ``results.json``.

    The folder itself is tried first, then its parent (the leaderboard keeps several
    ``run<N>_<date>`` folders under one ``<date>_<agent>_<model>``). The agent is the
    part up to the next ``_``, the model everything after it.

    Examples
    --------
    >>> parse_run_folder(Path("2025-06-01__12-00-00_terminus_claude-sonnet-4/results.json"))
    RunFolder(name='2025-06-01__12-00-00_terminus_claude-sonnet-4', date='2025-06-01__12-00-00', agent='terminus', model='claude-sonnet-4')
    >>> parse_run_folder(Path("20250811_cursor-cli_claude-4-sonnet/run1/results.json")).agent
    'cursor-cli'
    """
    folder = path.resolve().parent
    for candidate in (folder, folder.parent):
        m = _RUN_FOLDER.fullmatch(candidate.name)
        if m:
            return RunFolder(folder.name, m["date"], m["agent"], m["model"])
    return RunFolder(folder.name or path.stem)


def job_name(path: Path) -> str:
    """The run's name in its job id: the folder of ``results.json``; for a results file
    renamed ``<run>_results.json`` (the leaderboard keeps several runs so, in one folder)
    ``<folder>@<run>``, so that each run is a job of its own.

    Examples
    --------
    >>> job_name(Path("20250811_cursor-cli_claude-4-sonnet/run1/results.json"))
    'run1'
    >>> job_name(Path("20250829_goose_claude-4-opus/2025-08-27__22-13-13_results.json"))
    '20250829_goose_claude-4-opus@2025-08-27__22-13-13'
    """
    folder = parse_run_folder(path).name
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    run = re.sub(r"[_.-]*results$", "", stem)
    return f"{folder}@{run}" if stem != "results" and run else folder


def _opt(value: Any, kind: type | tuple[type, ...], path: Path, place: str, what: str) -> Any:
    """``value`` when it is null or of ``kind``; otherwise a LoadError naming the place."""
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise LoadError(path, place, f"{what}, got {type(value).__name__} {value!r:.60}")


def _tokens(value: Any, path: Path, place: str) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value < 0 or value > INT64_MAX:
        raise LoadError(path, place, f"expected an integer >= 0 or null, got {value!r:.60}")
    return value


def _trial_index(path: Path, place: str, name: Any, task: str) -> tuple[int, int, str | None]:
    """``(i, n, run id)`` from ``<task_id>.<i>-of-<n>[.<run id>]``."""
    if not isinstance(name, str):
        raise LoadError(path, place, f"expected a string, got {type(name).__name__} {name!r:.60}")
    m = _TRIAL_INDEX.fullmatch(name[len(task) + 1 :]) if name.startswith(f"{task}.") else None
    if m is None:
        raise LoadError(
            path,
            place,
            f"{name!r} is not '<task_id>.<i>-of-<n>' for task_id {task!r}: "
            "the attempt index and count cannot be read",
        )
    i, n = int(m["i"]), int(m["n"])
    if n < 1 or n > INT32_MAX:
        raise LoadError(path, place, f"{name!r}: the number of attempts {n} must be 1..{INT32_MAX}")
    if not 1 <= i <= n:
        raise LoadError(path, place, f"{name!r}: attempt {i} is outside 1..{n}")
    return i, n, m["run"]


def _parse_trial(path: Path, i: int, row: Any) -> dict[str, Any]:
    """One trial object, checked field by field, as the values the rows need."""
    place = f"results[{i}]"
    if not isinstance(row, dict):
        raise LoadError(path, place, f"expected a trial object, got {row!r:.60}")
    task = row.get("task_id")
    if not isinstance(task, str) or not task:
        raise LoadError(path, f"{place}.task_id", f"expected a non-empty string, got {task!r:.60}")
    attempt, n, run = _trial_index(path, f"{place}.trial_name", row.get("trial_name"), task)
    resolved = row.get("is_resolved")
    if resolved is not None and not isinstance(resolved, bool):
        raise LoadError(
            path, f"{place}.is_resolved", f"expected true, false or null, got {resolved!r:.60}"
        )
    mode = _opt(row.get("failure_mode"), str, path, f"{place}.failure_mode", "expected a string")
    parsed = _opt(
        row.get("parser_results"),
        dict,
        path,
        f"{place}.parser_results",
        "expected an object or null",
    )
    trial_id = row.get(
        "uuid", row.get("id")
    )  # the spec's ``uuid``; terminal-bench 0.2 writes ``id``
    _opt(trial_id, str, path, f"{place}.{'uuid' if 'uuid' in row else 'id'}", "expected a string")
    for field in ("instruction", "recording_path"):
        _opt(row.get(field), str, path, f"{place}.{field}", "expected a string or null")
    times = {
        key: parse_time(row.get(key), path, f"{place}.{key}", key)
        for key in ("trial_started_at", "trial_ended_at")
    }
    return {
        "place": place,
        "task": task,
        "attempt": attempt,
        "n": n,
        "run_id": run,
        "trial_name": row["trial_name"],
        "resolved": resolved,
        "failure_mode": mode,
        "parser_results": parsed,
        "trial_id": trial_id,
        "instruction": row.get("instruction"),
        "recording_path": row.get("recording_path"),
        "input_tokens": _tokens(row.get("total_input_tokens"), path, f"{place}.total_input_tokens"),
        "output_tokens": _tokens(
            row.get("total_output_tokens"), path, f"{place}.total_output_tokens"
        ),
        "started_at": times["trial_started_at"],
        "finished_at": times["trial_ended_at"],
        "phases": {
            key: row[key]
            for key in ("agent_started_at", "agent_ended_at", "test_started_at", "test_ended_at")
            if row.get(key) is not None
        },
    }


def _attempt_row(job_id: str, t: dict[str, Any]) -> dict[str, Any]:
    mode = t["failure_mode"]
    failure = None if mode is None or mode in _NO_FAILURE else mode
    verdict = t["resolved"]
    extra: dict[str, Any] = {"trial_name": t["trial_name"], "failure_mode": mode}
    if t["parser_results"] is not None:
        extra["parser_results"] = t["parser_results"]
    if t["phases"]:
        extra["phases"] = t["phases"]
    return {
        "job_id": job_id,
        "task": t["task"],
        "attempt": t["attempt"],
        "trial_id": t["trial_id"],
        "status": "failed" if verdict is None else "completed",
        "error_type": failure,
        "reward": None if verdict is None else float(verdict),
        "input_tokens": t["input_tokens"],
        "output_tokens": t["output_tokens"],
        "started_at": t["started_at"],
        "finished_at": t["finished_at"],
        "duration_s": duration_s(t["started_at"], t["finished_at"]),
        "input": t["instruction"],
        "input_is_chat": False,
        "artifacts": (
            json.dumps({"recording_path": t["recording_path"]}) if t["recording_path"] else None
        ),
        "extra": json.dumps(extra),
        "n_trials": 1,
        "source_place": f"{t['place']} ({t['trial_name']})",
    }


def _number(value: Any, path: Path, place: str, *, count: bool = False) -> Any:
    ok = (is_int(value) and value >= 0) if count else is_number(value)
    if not ok:
        kind = "an integer >= 0" if count else "a finite number"
        raise LoadError(path, place, f"expected {kind}, got {value!r:.60}")
    return value


def source_numbers(path: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The harness's own numbers as ``SourceNumber`` dicts (``jobs.extra["source_numbers"]``).

    ``accuracy`` is the mean over all trials, ``pass_at_k[k]`` the mean over tasks of the
    unbiased pass@k, ``n_resolved`` / ``n_unresolved`` counts of trials: all under the
    ``failure`` policy (a null verdict is not resolved). A ``pass_at_k`` entry written as
    null (no task had k trials) has no number to check and is left out.
    """
    nums: list[SourceNumber] = []
    base: dict[str, Any] = {"of": "reward", "policy": "failure", "rule": RULE}
    if "accuracy" in doc:
        value = _number(doc["accuracy"], path, "$.accuracy")
        nums.append(SourceNumber("accuracy", value, reducer="none", statistic="mean", **base))
    pass_at = _opt(doc.get("pass_at_k"), dict, path, "$.pass_at_k", "expected an object")
    for key, value in sorted((pass_at or {}).items(), key=lambda kv: (len(kv[0]), kv[0])):
        place = f"$.pass_at_k[{json.dumps(key)}]"
        if not (key.isdigit() and key.isascii()) or not 1 <= int(key) <= INT32_MAX:
            raise LoadError(path, place, f"expected a key k >= 1, got {key!r:.60}")
        if value is not None:
            value = _number(value, path, place)
            nums.append(
                SourceNumber(
                    f"pass@{int(key)}",
                    value,
                    reducer="pass_at",
                    k=int(key),
                    statistic="mean",
                    **base,
                )
            )
    counts: tuple[tuple[str, Statistic], ...] = (
        ("n_resolved", "passed"),
        ("n_unresolved", "not_passed"),
    )
    for field, statistic in counts:
        if field in doc:
            value = _number(doc[field], path, f"$.{field}", count=True)
            nums.append(SourceNumber(field, value, reducer="none", statistic=statistic, **base))
    return [n.as_dict() for n in nums]


def _resolve_k(
    path: Path, trials: list[dict[str, Any]], k: int | None, meta: RunMetadata | None = None
) -> int:
    """``k`` if given, else ``n_attempts`` of the run's metadata, else the ``n`` every
    trial name agrees on; metadata and trial names that disagree are refused."""
    first = trials[0]
    if k is None and meta is not None and meta.n_attempts is not None:
        said = {t["n"] for t in trials}
        if len(said) == 1 and meta.n_attempts not in said:
            raise LoadError(
                meta.path,
                "$.n_attempts",
                f"says {meta.n_attempts} attempts per task, but the trial names say "
                f"{first['n']} ({first['trial_name']!r} in {path}): pass k= to choose",
            )
        k = meta.n_attempts
    for t in trials:
        if t["n"] != first["n"] and k is None:
            raise LoadError(
                path,
                f"{t['place']}.trial_name",
                f"{t['trial_name']!r} says {t['n']} attempts per task, but "
                f"{first['trial_name']!r} ({first['place']}) says {first['n']}: "
                "pass k= to choose",
            )
        if k is not None and t["attempt"] > k:
            raise LoadError(
                path, f"{t['place']}.trial_name", f"attempt {t['attempt']} is out of range: k={k}"
            )
    return k if k is not None else int(first["n"])


def build_rows(
    path: Path,
    doc: Any,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    k: int | None = None,
    model: str | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    meta: RunMetadata | None = None,
) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
    """The job row, the task list and the attempt rows of a parsed ``results.json``
    (and of its ``run_metadata.json``, ``meta``).

    Pure: no DuckDB. Raises :class:`LoadError` naming ``path`` and the place.
    """
    if not isinstance(doc, dict):
        raise LoadError(
            path, "$", f"expected a Terminal-Bench results object, got {type(doc).__name__}"
        )
    rows = doc.get("results")
    if not isinstance(rows, list):
        raise LoadError(
            path, "$.results", f"expected an array of trials, got {type(rows).__name__}"
        )
    if not rows:
        raise LoadError(path, "$.results", "no trials: nothing to load")
    trials: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    skipped: list[LoadError] = []
    for i, row in enumerate(rows):
        try:
            t = _parse_trial(path, i, row)
            key = (t["task"], t["attempt"])
            if key in seen:
                raise LoadError(
                    path,
                    f"{t['place']}.trial_name",
                    f"task {key[0]!r} attempt {key[1]} appears twice "
                    f"(first at {seen[key]['place']}, {seen[key]['trial_name']!r})",
                )
            if lenient and trials and k is None and t["n"] != trials[0]["n"]:
                _resolve_k(path, [trials[0], t], None)  # raises, naming both trials
        except LoadError as err:
            if not lenient:
                raise
            skipped.append(err)
            continue
        seen[key] = t
        trials.append(t)
    if not trials:
        raise LoadError(path, "$.results", f"no usable trial; first problem: {skipped[0]}")
    if skipped:
        warnings.warn(
            f"{path}: skipped {len(skipped)} unusable trial(s); first at "
            f"{skipped[0].place}: {skipped[0].problem}",
            LoadWarning,
            stacklevel=5,
        )
    kk = _resolve_k(path, trials, k, meta)
    per_task = Counter(t["task"] for t in trials)
    if meta is not None and meta.task_ids is not None:  # the tasks the run was asked to do
        asked = set(meta.task_ids)
        for t in trials:
            if t["task"] not in asked:
                raise LoadError(
                    meta.path,
                    "$.task_ids",
                    f"task {t['task']!r} has trials in {path.name} ({t['place']}) but is not "
                    "among the run's task_ids",
                )
        per_task.update({task: 0 for task in asked})
    short = sorted((task, n) for task, n in per_task.items() if n < kk)
    if short or len(set(per_task.values())) > 1:
        listed = ", ".join(f"{task}: {n}" for task, n in short[:3])
        warnings.warn(
            f"{path}: tasks have uneven attempt counts ({len(short)} of {len(per_task)} "
            f"with fewer than k={kk}{': ' + listed if listed else ''}); the missing attempts "
            "stay missing, while Terminal-Bench's pass@k leaves out tasks with fewer than k",
            LoadWarning,
            stacklevel=5,
        )
    folder = parse_run_folder(path)
    jid = job_id or f"terminal-bench:{job_name(path)}"
    m = meta or RunMetadata(path)
    own = {key: doc.get(key) if isinstance(doc.get(key), str) else None
           for key in ("agent_name", "model_name")}  # fmt: skip
    agent = m.agent_name or own["agent_name"] or folder.agent
    model = model or m.model_name or own["model_name"] or folder.model
    runs = sorted({t["run_id"] for t in trials if t["run_id"]})
    starts = [t["started_at"] for t in trials if t["started_at"] is not None]
    ends = [t["finished_at"] for t in trials if t["finished_at"] is not None]
    extra = {
        "agent": agent,
        "run_folder": folder.name,
        "run_date": folder.date,
        "run_id": m.run_id or (runs[0] if len(runs) == 1 else (runs or None)),
        "source_numbers": source_numbers(path, doc),
        "steps": NO_STEPS,
    }
    if meta is not None:
        extra["run_uuid"] = meta.uuid
        extra["run_metadata"] = meta.extra()
    job = {
        "job_id": jid,
        "source_format": "terminal-bench",
        "source_path": str(path),
        "status": "completed",
        "created_at": m.start_time or min(starts, default=None),
        "finished_at": m.end_time or max(ends, default=None),
        "dataset_name": dataset or m.dataset_name,
        "dataset_version": dataset_version or m.dataset_version,
        "runner": agent,
        "model": model,
        "attempts": kk,
        "platform_metrics": json.dumps({key: v for key, v in doc.items() if key != "results"}),
        "extra": json.dumps(extra),
    }
    return job, sorted(per_task), [_attempt_row(jid, t) for t in trials]


def load_terminal_bench(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    k: int | None = None,
    model: str | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
) -> None:
    """Stage a Terminal-Bench 1 ``results.json`` (``{results, accuracy, pass_at_k, ...}``).

    * task: ``task_id`` (``crack-7z-hash`` and ``crack-7z-hash.hard`` are two tasks); every
      task that appears is a requested task (the file has no task list), sorted by name.
    * attempt and k: ``i`` and ``n`` of the trial name ``<task_id>.<i>-of-<n>`` (a trailing
      ``.<run id>`` is allowed). Every trial must say the same ``n`` unless ``k`` is
      given; tasks with fewer than k trials load with a :class:`~envloop_nb.LoadWarning`.
    * reward: 1.0 / 0.0 from ``is_resolved``; a null verdict is an attempt without
      reward (status ``failed``). ``error_type``: ``failure_mode`` unless it is
      ``unset`` / ``none`` (no failure); an agent timeout whose tests still ran keeps
      its verdict and its error type.
    * ``trial_id``: ``uuid`` (or ``id``); input: ``instruction``; tokens:
      ``total_input_tokens`` / ``total_output_tokens``; times and duration from
      ``trial_started_at`` / ``trial_ended_at``; ``artifacts.recording_path``;
      ``extra``: the trial name, ``failure_mode``, ``parser_results``, phase times.
    * steps: none. The harness records each trial's session as an asciinema cast, not
      as steps; ``extra["steps"]`` says so (:data:`NO_STEPS`).
    * job: id ``"terminal-bench:<run folder>"`` unless given; a results file renamed
      ``<run>_results.json`` (several runs in one folder, as leaderboard submissions keep
      them) is ``"terminal-bench:<folder>@<run>"``, a job of its own (:func:`job_name`).
      ``platform_metrics``: every top-level field but ``results``; the harness's
      ``accuracy``, ``pass_at_k`` and counts in ``extra["source_numbers"]``.
    * ``run_metadata.json`` beside ``results.json``
      (:mod:`~envloop_nb._loaders.harbor.terminal_bench_meta`): dataset name and version, model,
      agent (= runner), k (``n_attempts``, checked against the trial names), the
      requested tasks (``task_ids``: a task that never ran is missing, never 0), start
      and end time, ``run_id`` and ``uuid``; the rest in ``extra["run_metadata"]``.
      Without it the agent and model come from the folder name
      ``<date>_<agent>_<model>``. The options ``model=``, ``dataset=``,
      ``dataset_version=``, ``k=`` win over both.

    ``lenient=True`` skips unusable trials (bad fields, a repeated trial, a trial whose
    ``n`` differs from the first) and warns how many.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load(
    ...     "tests/data/terminal_bench/2025-06-01__12-00-00_terminus_claude-sonnet-4/results.json",
    ...     format="terminal-bench",
    ... )
    >>> job.id, job.k, len(job.tasks()), job.info["model"], job.info["runner"]
    ('terminal-bench:2025-06-01__12-00-00_terminus_claude-sonnet-4', 3, 6, 'claude-sonnet-4', 'terminus')
    >>> s = job.summary(policy="failure")
    >>> s.scored, s.invalid, round(s.score, 4)
    (15, 3, 0.4444)
    """
    path = Path(source)
    if path.is_dir():  # a run folder: its results.json
        path = path / "results.json"
    check_k(path, k)
    doc = read_json_file(path, "a Terminal-Bench results.json")
    meta = read_run_metadata(path)
    job, tasks, attempts = build_rows(
        path,
        doc,
        job_id=job_id,
        lenient=lenient,
        k=k,
        model=model,
        dataset=dataset,
        dataset_version=dataset_version,
        meta=meta,
    )
    jid = job["job_id"]
    begin_job(con, jid)
    insert_rows(con, "jobs", [job])
    insert_rows(
        con,
        "tasks",
        [{"job_id": jid, "task": t, "position": i, "tags": "{}"} for i, t in enumerate(tasks)],
    )
    insert_rows(con, "attempts", attempts)
