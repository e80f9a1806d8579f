"""τ-bench and τ²-bench results. Spec: ``shared/formats/tau-bench.md``.

Both are single JSON documents of at most a few thousand trials, read in Python and
staged with :func:`envloop_nb._loaders.common.stage.insert_rows`.

**What a pass is.** τ-bench counts a trial as a success when its reward is within 1e-6
of 1. The workspace's metrics count ``reward = 1`` as a pass, so a reward in
``[1 - 1e-6, 1 + 1e-6]`` is stored as exactly ``1.0`` (the raw value is kept in the
attempt's ``extra.raw_reward`` whenever it differs). Every other reward is stored as
it is. With ``policy="failure"`` (τ-bench's own rule: every trial counts) the job's
pass^k then equals τ-bench's reported pass^k.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError
from ..common.stage import begin_job, insert_rows
from ..common.values import (
    INT32_MAX,
    check_k,
    infer_k,
    is_int,
    is_number,
    parse_time,
    read_json_file,
)
from .steps import read_tau2_steps, read_tau_steps
from .tau2_layout import (
    find_submission,
    is_submission,
    read_simulations,
    results_path,
    submission_alone,
    submission_numbers,
)
from .trial_steps import TrialSteps

__all__ = ["PASS_TOLERANCE", "load_tau2_bench", "load_tau_bench"]

#: τ-bench's success rule: ``abs(reward - 1) <= PASS_TOLERANCE``.
PASS_TOLERANCE = 1e-6


def _snap(reward: float) -> float:
    return 1.0 if abs(reward - 1.0) <= PASS_TOLERANCE else reward


def _last_assistant(messages: list[Any]) -> str | None:
    """Content of the last assistant message that has text content."""
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            content = m.get("content")
            if isinstance(content, str) and content:
                return content
    return None


def _n_assistant(messages: list[Any]) -> int:
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def _default_id(prefix: str, path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return f"{prefix}:{name}"


def _job_row(
    job_id: str,
    fmt: str,
    path: Path,
    k: int,
    *,
    model: str | None,
    dataset: str | None,
    dataset_version: str | None,
    created_at: Any = None,
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "source_format": fmt,
        "source_path": str(path),
        "status": "completed",
        "created_at": created_at,
        "dataset_name": dataset,
        "dataset_version": dataset_version,
        "runner": fmt,
        "model": model,
        "attempts": k,
    }


def _stage(
    con: duckdb.DuckDBPyConnection,
    job: dict[str, Any],
    tasks: list[str],
    attempts: list[dict[str, Any]],
    dims: list[dict[str, Any]],
    *,
    steps: TrialSteps,
    extra: dict[str, Any],
) -> None:
    """Stage the rows (the job claimed and its steps written already); the job's row
    last, with ``extra["steps"]`` from the steps checked against the attempts."""
    jid = job["job_id"]
    insert_rows(
        con,
        "tasks",
        [{"job_id": jid, "task": t, "position": i, "tags": "{}"} for i, t in enumerate(tasks)],
    )
    insert_rows(con, "attempts", attempts)
    insert_rows(con, "dimensions", dims)
    names = sorted({d["name"] for d in dims})
    insert_rows(con, "dimension_meta", [{"job_id": jid, "name": n} for n in names])
    extra["steps"] = steps.finish()
    insert_rows(con, "jobs", [{**job, "extra": json.dumps(extra)}])


def _check_trial(path: Path, place: str, trial: Any) -> int:
    """The trial number: an integer >= 0 whose attempt (``trial + 1``) fits INTEGER."""
    if not is_int(trial) or trial < 0:
        raise LoadError(path, place, f"trial must be an integer >= 0, got {trial!r}")
    if trial >= INT32_MAX:
        raise LoadError(
            path,
            place,
            f"trial {trial} is out of range: attempt trial + 1 must fit a 32-bit integer",
        )
    return trial


def _or_empty(value: Any, kind: type, path: Path, place: str, what: str) -> Any:
    """``value``, or an empty ``kind`` for null/absent; any other type is refused (an
    ``x or {}`` would turn ``0``, ``""`` or ``[]`` into "nothing recorded" quietly)."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise LoadError(path, place, f"{what}, got {value!r:.60}")
    return value


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else type(value).__name__


class _TaskIds:
    """Task ids as text, refusing two that differ in the file but read the same
    (``1`` and ``"1"``): they would be merged into one task."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.first: dict[str, tuple[Any, str]] = {}  # text -> (value, place)

    def text(self, value: Any, place: str) -> str:
        text = str(value)
        seen = self.first.setdefault(text, (value, place))
        if type(seen[0]) is not type(value):
            kinds = [f"{v!r} ({_kind(v)})" for v in (seen[0], value)]
            raise LoadError(
                self.path,
                f"{seen[1]} and {place}",
                f"task {kinds[0]} and task {kinds[1]} would be merged into one task "
                f"{text!r}: write every task id the same way",
            )
        return text


def _check_unique(
    path: Path, seen: dict[tuple[str, int], str], key: tuple[str, int], place: str
) -> None:
    if key in seen:
        raise LoadError(
            path,
            place,
            f"task {key[0]!r} trial {key[1] - 1} appears twice (first at {seen[key]})",
        )
    seen[key] = place


def load_tau_bench(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    k: int | None = None,
    model: str | None = None,
    dataset: str | None = "tau-bench",
    dataset_version: str | None = None,
) -> None:
    """Stage τ-bench results: a JSON array of ``{task_id, reward, info, traj, trial}``.

    * task: ``str(task_id)``; the requested tasks are the distinct task ids (τ-bench
      writes no task list), in numeric order.
    * k: ``highest trial + 1`` (τ-bench numbers trials ``0..num_trials-1``, so this is the
      number of distinct trials) unless ``k`` is given; attempt = ``trial + 1``.
    * reward: stored raw except that a reward within 1e-6 of 1 is stored as 1.0 (see
      the module docstring). τ-bench stores an exception as reward 0 with
      ``info.error``: such a trial keeps reward 0, gets status ``failed`` and
      ``error`` = ``info.error``; every other trial is ``completed``.
    * input: the conversation ``traj`` as a ChatML JSON list (``input_is_chat``);
      output: the last assistant message with text; turns: assistant messages;
      ``extra``: the task (instruction, expected actions), reward info, user cost.
    * job id: ``"tau-bench:<file stem>"`` unless ``job_id`` is given; the model is
      unknown unless ``model`` is given.

    * steps: each result's ``traj``, read by
      :func:`~envloop_nb._loaders.taubench.steps.read_tau_steps` (``job.steps()``); the
      job's ``extra["steps"]`` says how many trials have steps and whether their turns
      agree (:mod:`~envloop_nb._loaders.taubench.trial_steps`).

    A malformed message fails the load naming the file, the message and the trial;
    with ``lenient=True`` that trial is kept without steps and the load warns how many
    (every other problem fails the load either way).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/fixtures/tau-bench/gpt-4o-airline.json")
    >>> job.id, job.k, len(job.tasks())
    ('tau-bench:gpt-4o-airline', 4, 50)
    >>> [round(x, 3) for x in job.curve(policy="failure")["pass^k"]]
    [0.42, 0.273, 0.22, 0.2]
    """
    path = Path(source)
    check_k(path, k)
    rows = read_json_file(path, "a τ-bench results array")
    if not isinstance(rows, list):
        raise LoadError(
            path, "$", f"expected a JSON array of τ-bench results, got {type(rows).__name__}"
        )
    parsed: list[tuple[int | str, int, float, dict[str, Any], list[Any], int, str]] = []
    names = _TaskIds(path)
    for i, row in enumerate(rows):
        place = f"[{i}]"
        if not isinstance(row, dict):
            raise LoadError(path, place, f"expected a result object, got {row!r:.60}")
        task_id = row.get("task_id")
        if task_id is None or not (is_int(task_id) or isinstance(task_id, str)):
            raise LoadError(path, place, f"task_id must be an integer or string, got {task_id!r}")
        names.text(task_id, place)
        place = f"[{i}] (task_id {task_id}, trial {row.get('trial')})"
        trial = _check_trial(path, place, row.get("trial"))
        reward = row.get("reward")
        if not is_number(reward):
            raise LoadError(
                path, place, f"reward must be a number, got {type(reward).__name__} {reward!r}"
            )
        info = _or_empty(row.get("info"), dict, path, place, "info must be an object")
        traj = _or_empty(row.get("traj"), list, path, place, "traj must be a list of messages")
        parsed.append((task_id, trial, float(reward), info, traj, i, place))

    max_trial = max((p[1] for p in parsed), default=-1)
    if k is not None:
        kk = k
    else:  # k is how many trials tasks have, not the highest trial number (see infer_k)
        trials: dict[str, set[int]] = {}
        for p in parsed:  # distinct trials: a duplicate is refused below, by place
            trials.setdefault(str(p[0]), set()).add(p[1])
        kk = infer_k(path, {t: len(v) for t, v in trials.items()}, max_trial + 1)
    jid = job_id or _default_id("tau-bench", path)
    task_ids = sorted({p[0] for p in parsed}, key=lambda t: (isinstance(t, str), t))
    attempts: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], str] = {}
    begin_job(con, jid)
    steps = TrialSteps(con, jid, path, "read_tau_steps", lenient)
    for task_id, trial, reward, info, traj, i, place in parsed:
        task, attempt = str(task_id), trial + 1
        if attempt > kk:
            raise LoadError(
                path, place, f"trial {trial} is out of range: k={kk} allows trials 0..{kk - 1}"
            )
        _check_unique(path, seen, (task, attempt), place)
        error = info.get("error")
        stored = _snap(reward)
        extra: dict[str, Any] = {
            key: info[key] for key in ("task", "reward_info", "user_cost", "source") if key in info
        }
        if stored != reward:
            extra["raw_reward"] = reward
        attempts.append(
            {
                "job_id": jid,
                "task": task,
                "attempt": attempt,
                "status": "failed" if error else "completed",
                "error": None if error is None else str(error),
                "reward": stored,
                "turns": _n_assistant(traj),
                "input": json.dumps(traj),
                "input_is_chat": True,
                "output": _last_assistant(traj),
                "extra": json.dumps(extra),
                "n_trials": 1,
                "source_place": place,
            }
        )
        read = partial(
            read_tau_steps, task=task, attempt=attempt, traj=traj, source=path, place=f"[{i}]",
            model=model,
        )  # fmt: skip
        steps.add(traj, read, trial=f"task_id {task_id}, trial {trial}")
    job = _job_row(
        jid, "tau-bench", path, kk, model=model, dataset=dataset, dataset_version=dataset_version
    )
    _stage(con, job, [str(t) for t in task_ids], attempts, [], steps=steps, extra={})


def load_tau2_bench(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    k: int | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
) -> None:
    """Stage a τ²-bench run: ``results.json`` (``{timestamp, info, tasks, simulations}``),
    or its dir form (a folder, or a ``results.json`` with a ``simulations/`` folder beside
    it: one ``simulations/<id>.json`` each, see :mod:`~envloop_nb._loaders.taubench.tau2_layout`),
    which loads as the same job.

    * requested tasks: ``tasks[].id`` (τ² writes the task list, so tasks that never ran
      are known); trials of a task not in the list are an error.
    * k: ``info.num_trials`` unless ``k`` is given; attempt = ``trial + 1``.
    * model: ``info.agent_info.llm``; dataset: ``"tau2-bench/<domain_name>"``; created
      at: ``timestamp``; job id ``"tau2-bench:<run folder>"`` unless given.
    * reward: ``reward_info.reward`` (within 1e-6 of 1 stored as 1.0, as for τ-bench);
      ``reward_info.reward_breakdown`` entries become ``dimensions`` rows.
    * A simulation with ``termination_reason == "infrastructure_error"`` is kept as an
      attempt **without reward** (status ``failed``, ``error_type``
      ``infrastructure_error``): τ² leaves these out of its metrics rather than count
      them as failures, which is exactly what a missing reward means here under the
      default ``policy="unknown"``. Every other simulation is ``completed``.
    * duration_s: ``duration``; cost_usd: ``agent_cost`` (``user_cost`` and the
      termination reason go to ``extra``); input: ``messages`` as ChatML JSON; output:
      the last assistant message with text.
    * The leaderboard's ``submission.json`` beside the run (or above the
      ``trajectories/`` folder holding it): its pass^1..4 of the run's domain become the
      job's source numbers (``job.source_agreement()``), its model and date
      ``extra["submission"]``. Loaded by itself it is refused: it is no job.

    * steps: each simulation's ``messages``, read by
      :func:`~envloop_nb._loaders.taubench.steps.read_tau2_steps` (``job.steps()``); the
      job's ``extra["steps"]`` says how many simulations have steps, whether their turns
      agree and whether ``agent_cost`` is the sum of their steps' cost
      (:mod:`~envloop_nb._loaders.taubench.trial_steps`).

    A malformed message fails the load naming the file, the message and the trial;
    with ``lenient=True`` that simulation is kept without steps and the load warns how
    many (every other problem fails the load either way).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("tests/data/tau2/results.json")
    >>> s = job.summary()
    >>> s.scored, s.invalid, s.score
    (5, 1, 0.6)
    """
    path, sims_dir = results_path(Path(source))
    check_k(path, k)
    doc = read_json_file(path, "a τ²-bench results object")
    if is_submission(doc):
        raise submission_alone(path)
    if not isinstance(doc, dict):
        raise LoadError(path, "$", "expected a τ²-bench results object {info, tasks, simulations}")
    info = _or_empty(doc.get("info"), dict, path, "$.info", "expected an object")
    for key in ("environment_info", "agent_info"):
        _or_empty(info.get(key), dict, path, f"$.info.{key}", "expected an object")
    sims = read_simulations(path, doc, sims_dir)
    num_trials = info.get("num_trials")
    if k is None:
        if not is_int(num_trials) or num_trials < 1:
            raise LoadError(
                path, "$.info.num_trials", f"expected an integer >= 1, got {num_trials!r}"
            )
        if num_trials > INT32_MAX:
            raise LoadError(
                path,
                "$.info.num_trials",
                f"num_trials {num_trials} is out of range: it must fit a 32-bit integer",
            )
        k = int(num_trials)
    tasks_doc = doc.get("tasks")
    task_names: list[str] = []
    names, sim_names = _TaskIds(path), _TaskIds(path)  # each list on its own: 1 vs "1"
    if tasks_doc is not None:
        if not isinstance(tasks_doc, list):
            raise LoadError(path, "$.tasks", "expected an array of task objects")
        for i, t in enumerate(tasks_doc):
            tid = t.get("id") if isinstance(t, dict) else None
            if tid is None:
                raise LoadError(path, f"$.tasks[{i}]", "expected a task object with an id")
            task_names.append(names.text(tid, f"$.tasks[{i}]"))
    known = set(task_names)
    derive_tasks = tasks_doc is None
    domain = (info.get("environment_info") or {}).get("domain_name")
    model = (info.get("agent_info") or {}).get("llm")
    jid = job_id or f"tau2-bench:{path.parent.name or path.stem}"
    attempts: list[dict[str, Any]] = []
    dims: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], str] = {}
    begin_job(con, jid)
    steps = TrialSteps(con, jid, path, "read_tau2_steps", lenient, cost=True)
    for src, at, sim in sims:
        if not isinstance(sim, dict):
            raise LoadError(src, at, "expected a simulation object")
        place = f"{at} (id {sim.get('id')})"
        task_id = sim.get("task_id")
        if task_id is None:
            raise LoadError(src, place, "task_id is missing")
        task = sim_names.text(task_id, place)
        if derive_tasks and task not in known:
            known.add(task)
            task_names.append(task)
        if task not in known:
            raise LoadError(src, place, f"task {task!r} is not among the results' tasks")
        trial = _check_trial(src, place, sim.get("trial"))
        if trial + 1 > k:
            raise LoadError(
                src, place, f"trial {trial} is out of range: num_trials={k} allows 0..{k - 1}"
            )
        _check_unique(src, seen, (task, trial + 1), place)
        reason = sim.get("termination_reason")
        infra = reason == "infrastructure_error"
        reward_info = _or_empty(
            sim.get("reward_info"), dict, src, place, "reward_info must be an object or null"
        )
        raw = reward_info.get("reward")
        if raw is not None and not is_number(raw):
            raise LoadError(
                src,
                place,
                f"reward_info.reward must be a number, got {type(raw).__name__} {raw!r}",
            )
        reward = None if infra or raw is None else _snap(float(raw))
        for field in ("duration", "agent_cost", "user_cost"):
            value = sim.get(field)
            if value is not None and not is_number(value):
                raise LoadError(src, place, f"{field} must be a number, got {value!r}")
        messages = _or_empty(sim.get("messages"), list, src, place, "messages must be a list")
        extra: dict[str, Any] = {
            "termination_reason": reason,
            "user_cost": sim.get("user_cost"),
            "reward_info": reward_info or None,
        }
        if raw is not None and reward is not None and reward != raw:
            extra["raw_reward"] = raw
        breakdown = _or_empty(
            reward_info.get("reward_breakdown"),
            dict,
            src,
            place,
            "reward_info.reward_breakdown must be an object of numbers or null",
        )
        if not infra:
            for name, value in breakdown.items():
                if value is not None and not is_number(value):
                    raise LoadError(
                        src, place, f"reward_breakdown.{name} must be a number, got {value!r}"
                    )
                dims.append(
                    {
                        "job_id": jid,
                        "task": task,
                        "attempt": trial + 1,
                        "name": str(name),
                        "value": None if value is None else float(value),
                    }
                )
        attempts.append(
            {
                "job_id": jid,
                "task": task,
                "attempt": trial + 1,
                "trial_id": None if sim.get("id") is None else str(sim["id"]),
                "status": "failed" if infra else "completed",
                "error_type": "infrastructure_error" if infra else None,
                "reward": reward,
                "cost_usd": sim.get("agent_cost"),
                "duration_s": sim.get("duration"),
                "turns": _n_assistant(messages),
                "input": json.dumps(messages),
                "input_is_chat": True,
                "output": _last_assistant(messages),
                "extra": json.dumps(extra),
                "n_trials": 1,
                "source_place": place,
            }
        )
        read = partial(
            read_tau2_steps, task=task, attempt=trial + 1, messages=messages, source=src,
            place=at if src == path else "$", model=model if isinstance(model, str) else None,
        )  # fmt: skip
        steps.add(messages, read, trial=f"task_id {task_id}, trial {trial}")
    extra = {"user_info": info.get("user_info"), "timestamp": doc.get("timestamp")}
    submission = find_submission(path)
    if submission is not None:  # the leaderboard's numbers of this run's domain
        numbers, extra["submission"] = submission_numbers(
            submission, domain=domain if isinstance(domain, str) else None, results=path
        )
        extra["source_numbers"] = numbers
    job = _job_row(
        jid,
        "tau2-bench",
        path,
        k,
        model=model,
        dataset=dataset or (f"tau2-bench/{domain}" if domain else "tau2-bench"),
        dataset_version=dataset_version,
        created_at=parse_time(doc.get("timestamp"), path, "$.timestamp", "timestamp"),
    )
    _stage(con, job, task_names, attempts, dims, steps=steps, extra=extra)
