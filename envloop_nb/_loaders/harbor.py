"""Harbor job directories (the Terminal-Bench harness, v0.22 layout and the older
``sandboxes`` layout). Spec: ``shared/formats/harbor.md``.

A Harbor job is small (tasks × attempts trial folders), so it is read in Python and
staged with :func:`envloop_nb._loaders._stage.insert_rows`.

Which policy reproduces Harbor's own ``result.json`` (its ``mean`` and ``pass_at_k``)
depends on the Harbor version that wrote the folder:

* Harbor **before 0.26** counts a trial without a reward as 0: ``policy="failure"``.
* Harbor **0.26 and later** skips trials without a valid reward: ``policy="unknown"``.

The version comes from the job's ``lock.json`` (``harbor.version``); without one, the
``sandboxes``-era layouts (``verifier_result.reward``, ``stats.n_trials``) still date a
folder as before 0.26, and any other folder's version is unknown. The loader stores the
finding in ``jobs.extra["harbor"]`` (``version``, ``version_source``,
``missing_reward_rule``, ``policy``; see :func:`envloop_nb._loaders.harbor_version.detect_version`),
``job.summary()`` states it in ``JobSummary.note``, and the panel and ``job.diagnose()``
compare Harbor's numbers under that version's policy (:func:`envloop_nb._metrics.harbor.check`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeGuard

import duckdb

from .._errors import LoadError
from ._common import (
    INT32_MAX,
    INT64_MAX,
    duration_s,
    fits,
    is_number,
    parse_time,
    read_json_file,
)
from ._read import bad_path_name, shown_path
from ._stage import begin_job, insert_rows
from .harbor_version import detect_version

__all__ = ["load_harbor"]

PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _trial_rewards(
    result: dict[str, Any], source: Path, place: str
) -> tuple[float | None, dict[str, float | None]]:
    """The trial's reward and its full reward map (``{}`` when there is none).

    Current layout: ``verifier_result = {"rewards": {key: number}}``; legacy
    (``sandboxes``): ``verifier_result = {"reward": number | null}``; ``null``: no reward.
    """
    vr = result.get("verifier_result")
    if vr is None:
        return None, {}
    if not isinstance(vr, dict):
        raise LoadError(source, place, f"verifier_result must be an object or null, got {vr!r}")
    if "rewards" in vr:
        rewards = vr["rewards"]
        field = "verifier_result.rewards"
        if rewards is None:
            return None, {}
        if not isinstance(rewards, dict):
            raise LoadError(
                source, place, f"{field} must be a {{key: number}} map, got {rewards!r}"
            )
    elif "reward" in vr:  # legacy sandboxes-era layout
        rewards = {"reward": vr["reward"]}
        field = "verifier_result"
    else:
        raise LoadError(
            source,
            place,
            f"verifier_result must hold 'rewards' (or legacy 'reward'), got keys {sorted(vr)}",
        )
    for key, value in rewards.items():
        if value is not None and not is_number(value):
            kind = type(value).__name__
            raise LoadError(
                source, place, f"{field}.{key} must be a number or null, got {kind} {value!r}"
            )
    clean: dict[str, float | None] = {
        str(k): (None if v is None else float(v)) for k, v in rewards.items()
    }
    if "reward" in clean:
        return clean["reward"], clean
    if len(clean) == 1:  # a single key under another name is still the reward
        return next(iter(clean.values())), clean
    return None, clean


def _job_header(folder: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise LoadError(
            folder, "config.json", "missing: a Harbor job folder holds config.json (JobConfig)"
        )
    config = read_json_file(config_path, "Harbor's JobConfig object")
    if not isinstance(config, dict):
        raise LoadError(config_path, None, "expected Harbor's JobConfig object")
    k = config.get("n_attempts")
    if not _is_int(k) or k < 1:
        raise LoadError(config_path, "$.n_attempts", f"expected an integer >= 1, got {k!r}")
    if k > INT32_MAX:
        raise LoadError(
            config_path,
            "$.n_attempts",
            f"n_attempts {k} is out of range: it must fit a 32-bit integer",
        )
    agents = config.get("agents")
    if not isinstance(agents, list) or not agents or not isinstance(agents[0], dict):
        raise LoadError(
            config_path, "$.agents", f"expected a list of {{name, model_name}}, got {agents!r}"
        )
    if len(agents) > 1:
        raise LoadError(
            config_path,
            "$.agents",
            f"the job ran {len(agents)} agents; envloop_nb loads one agent/model per job",
        )
    datasets = config.get("datasets") or []
    if (
        not isinstance(datasets, list)
        or len(datasets) > 1
        or not all(isinstance(d, dict) for d in datasets)
    ):  # a dataset that is not an object would lose its name quietly
        raise LoadError(
            config_path, "$.datasets", f"expected one dataset {{name, version}}, got {datasets!r}"
        )
    result_path = folder / "result.json"
    job_result = None
    if result_path.exists():
        job_result = read_json_file(result_path, "Harbor's JobResult object")
        if not isinstance(job_result, dict):
            raise LoadError(result_path, None, "expected Harbor's JobResult object")
    return config, job_result


def _read_trials(folder: Path) -> list[dict[str, Any]]:
    """Every trial folder's parsed result, with ``_place`` (folder name) and ``_path``.

    A sub-folder with a ``config.json`` (TrialConfig) but no ``result.json`` is a trial
    that has not finished: it is kept as a running attempt. Sub-folders with neither
    file are not trials. The same trial reached twice — a folder that is a symlink to a
    sibling, or two results with one trial ``id`` — is refused: it would count as two
    attempts.
    """
    trials = []
    folders: dict[Path, str] = {}  # resolved trial folder -> its first name
    ids: dict[str, str] = {}  # trial id -> folder name
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        result_path = sub / "result.json"
        place = f"trial {sub.name}"
        if result_path.exists() or (sub / "config.json").is_file():
            bad_name = bad_path_name(sub.name)
            if bad_name is not None:  # the workspace records the folder name as text
                raise LoadError(
                    folder,
                    f"trial {shown_path(sub.name)}",
                    f"the folder name is {bad_name}: the workspace cannot record it; rename it",
                )
            real = sub.resolve()
            if real in folders:
                raise LoadError(
                    folder,
                    place,
                    f"the same folder as trial {folders[real]} ({real}): one trial would "
                    "count as two attempts",
                )
            folders[real] = sub.name
        if result_path.exists():
            result = read_json_file(result_path, "Harbor's TrialResult object")
            if not isinstance(result, dict):
                raise LoadError(result_path, None, "expected Harbor's TrialResult object")
            task = result.get("task_name")
            if not isinstance(task, str) or not task:
                raise LoadError(
                    result_path, "$.task_name", f"expected a non-empty string, got {task!r}"
                )
            trial_id = result.get("id")
            if trial_id is not None:
                if str(trial_id) in ids:
                    raise LoadError(
                        folder,
                        place,
                        f"trial id {trial_id!r} is also the id of trial {ids[str(trial_id)]}: "
                        "one trial would count as two attempts",
                    )
                ids[str(trial_id)] = sub.name
            result["_running"] = False
        elif (sub / "config.json").is_file():
            cfg = read_json_file(sub / "config.json", "Harbor's TrialConfig object")
            task_path = (cfg.get("task") or {}).get("path") if isinstance(cfg, dict) else None
            if not isinstance(task_path, str) or not task_path:
                raise LoadError(
                    sub / "config.json",
                    "$.task.path",
                    "a trial without result.json needs its task path to be counted as running",
                )
            result = {"task_name": Path(task_path).name, "trial_name": sub.name, "_running": True}
        else:
            continue
        result["_place"] = place
        result["_folder"] = sub.name
        result["_path"] = result_path
        trials.append(result)
    return trials


def load_harbor(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
) -> None:
    """Stage one Harbor job folder (``jobs/<job_name>/``).

    Mapping:

    * job id: the job ``result.json`` ``id`` (the folder's ``job_name`` if there is none);
      k: ``config.json`` ``n_attempts``; model: ``agents[0].model_name``; dataset name
      and version from ``datasets[0]``; runner ``harbor`` with the agent's name and
      version in ``extra``; ``platform_metrics`` is the job result's ``stats`` verbatim
      (Harbor's mean / pass@k: before Harbor 0.26 a missing reward counts as 0, compare
      with ``policy="failure"``; from 0.26 it is skipped, compare with
      ``policy="unknown"``); the Harbor version and its rule (from ``lock.json`` or the
      layout) go to ``extra["harbor"]``.
    * requested tasks: Harbor writes no task list, so the requested tasks are the
      distinct ``task_name`` values of the trials found (a task with no trial folder at
      all cannot be known). ``digest`` is the ``task_checksum`` when all of the task's
      trials agree on it, else NULL (each trial's checksum stays in its ``extra``);
      tag ``source`` is the trial's ``source`` (dataset name).
    * attempts: a task's trials ordered by ``started_at`` (then folder name) are
      attempts 1, 2, ...; more trials than ``n_attempts`` is an error naming the trial.
      A trial folder without ``result.json`` (not finished) is a ``running`` attempt.
    * reward: ``verifier_result.rewards["reward"]`` (legacy: ``verifier_result.reward``;
      a single key under another name is the reward too). ``verifier_result: null`` is
      no reward (NULL), never 0. A multi-key reward map becomes ``dimensions`` rows,
      ``reward`` included, so per-dimension means reproduce Harbor's ``metrics``.
    * status: Harbor has no trial status. It is derived: an exception and no reward
      → ``failed``; otherwise ``completed`` (an ``AgentTimeoutError`` that still got
      reward 0 is ``completed`` with its ``error_type`` kept).
    * ``error_type``/``error``: ``exception_info.exception_type``/``exception_message``;
      tokens: ``n_input_tokens`` (includes cache), ``n_cache_tokens``,
      ``n_output_tokens``; ``cost_usd``; phase timings, task id, trial URI and the
      exception traceback go to ``extra``. ``source_place`` is ``trial <folder>``.

    The trial ``result.json`` is the record: ``verifier/reward.txt|json`` files are not
    read (Harbor already copied them into ``verifier_result``). ``lenient`` has no
    effect: a Harbor job is small enough to fix by hand.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/fixtures/harbor/2026-03-02__14-05-11")
    >>> job.k, len(job.attempts()), job.summary(policy="failure").score
    (5, 30, 0.5)
    """
    del lenient
    folder = Path(source)
    if not folder.is_dir():
        raise LoadError(folder, None, "expected a Harbor job folder (config.json + trials)")
    config, job_result = _job_header(folder)
    k = int(config["n_attempts"])
    agent = config["agents"][0]
    datasets = config.get("datasets") or [{}]
    jid = job_id or (job_result or {}).get("id") or config.get("job_name") or folder.name
    trials = _read_trials(folder)

    # Attempts: each task's trials ordered by start time.
    by_task: dict[str, list[dict[str, Any]]] = {}
    for t in trials:
        place = t["_place"]
        t["_started"] = parse_time(t.get("started_at"), folder, place, "started_at")
        t["_finished"] = parse_time(t.get("finished_at"), folder, place, "finished_at")
        by_task.setdefault(t["task_name"], []).append(t)

    attempt_rows: list[dict[str, Any]] = []
    dim_rows: list[dict[str, Any]] = []
    dim_names: set[str] = set()
    task_rows: list[dict[str, Any]] = []
    tag_rows: list[dict[str, Any]] = []
    agent_version = None
    for position, task in enumerate(sorted(by_task)):
        group = sorted(
            by_task[task],
            key=lambda t: (t["_started"] is None, t["_started"] or 0, t["_folder"]),
        )
        if len(group) > k:
            extra_trial = group[k]["_folder"]
            raise LoadError(
                folder,
                f"trial {extra_trial}",
                f"task {task!r} has {len(group)} trials but the job requested "
                f"n_attempts={k}: attempt {k + 1} is out of range",
            )
        checksums = {t.get("task_checksum") for t in group if not t["_running"]}
        source_names = {t.get("source") for t in group if t.get("source")}
        tags = {"source": str(next(iter(source_names)))} if len(source_names) == 1 else {}
        task_rows.append(
            {
                "job_id": jid,
                "task": task,
                "position": position,
                "digest": checksums.pop() if len(checksums) == 1 else None,
                "tags": json.dumps(tags),
            }
        )
        tag_rows.extend(
            {"job_id": jid, "task": task, "key": a, "value": b} for a, b in tags.items()
        )
        for attempt, t in enumerate(group, start=1):
            row = _attempt_row(t, folder, jid, task, attempt)
            attempt_rows.append(row)
            rewards = t.get("_rewards") or {}
            if len(rewards) > 1:
                for name, value in rewards.items():
                    dim_names.add(name)
                    dim_rows.append(
                        {
                            "job_id": jid,
                            "task": task,
                            "attempt": attempt,
                            "name": name,
                            "value": value,
                        }
                    )
            info = t.get("agent_info")
            if info is not None and not isinstance(info, dict):
                raise LoadError(
                    folder, t["_place"], f"agent_info must be an object or null, got {info!r}"
                )
            if agent_version is None and info:
                agent_version = info.get("version")

    jr = job_result or {}
    lock_path = folder / "lock.json"
    lock = read_json_file(lock_path, "Harbor's JobLock object") if lock_path.is_file() else None
    harbor = detect_version(lock, job_result, [t for t in trials if not t["_running"]])
    begin_job(con, jid)
    insert_rows(
        con,
        "jobs",
        [
            {
                "job_id": jid,
                "source_format": "harbor",
                "source_path": str(folder),
                "status": "running" if not jr.get("finished_at") else "completed",
                "created_at": parse_time(jr.get("started_at"), folder, "result.json", "started_at"),
                "finished_at": parse_time(
                    jr.get("finished_at"), folder, "result.json", "finished_at"
                ),
                "dataset_name": datasets[0].get("name") if isinstance(datasets[0], dict) else None,
                "dataset_version": (
                    str(datasets[0]["version"])
                    if isinstance(datasets[0], dict) and datasets[0].get("version") is not None
                    else None
                ),
                "dataset_revision": None,
                "runner": "harbor",
                "model": agent.get("model_name"),
                "attempts": k,
                "platform_metrics": json.dumps(jr["stats"]) if jr.get("stats") else None,
                "extra": json.dumps(
                    {
                        "job_name": config.get("job_name"),
                        "agent": {"name": agent.get("name"), "version": agent_version},
                        "n_concurrent_trials": config.get("n_concurrent_trials"),
                        "n_total_trials": jr.get("n_total_trials"),
                        "updated_at": jr.get("updated_at"),
                        "harbor": harbor,
                    }
                ),
            }
        ],
    )
    insert_rows(con, "tasks", task_rows)
    insert_rows(con, "task_tags", tag_rows)
    insert_rows(con, "attempts", attempt_rows)
    insert_rows(con, "dimensions", dim_rows)
    insert_rows(con, "dimension_meta", [{"job_id": jid, "name": n} for n in sorted(dim_names)])


def _attempt_row(
    t: dict[str, Any], folder: Path, job_id: str, task: str, attempt: int
) -> dict[str, Any]:
    place = t["_place"]
    base = {
        "job_id": job_id,
        "task": task,
        "attempt": attempt,
        "trial_id": None if t.get("id") is None else str(t["id"]),
        "n_trials": 1,
        "source_place": t["_folder"],
        "started_at": t["_started"],
        "finished_at": t["_finished"],
    }
    if t["_running"]:
        return base | {"status": "running"}
    reward, rewards = _trial_rewards(t, folder, place)
    t["_rewards"] = rewards
    exc = t.get("exception_info")
    if exc is not None and not isinstance(exc, dict):
        raise LoadError(folder, place, f"exception_info must be an object or null, got {exc!r}")
    exc = exc or {}
    for field in ("exception_type", "exception_message"):
        value = exc.get(field)
        if value is not None and not isinstance(value, str):
            raise LoadError(
                folder, place, f"exception_info.{field} must be a string or null, got {value!r}"
            )
    ar = t.get("agent_result") or {}
    if not isinstance(ar, dict):
        raise LoadError(folder, place, f"agent_result must be an object or null, got {ar!r}")
    for field in ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd"):
        value = ar.get(field)
        if value is not None and not is_number(value):
            raise LoadError(
                folder, place, f"agent_result.{field} must be a number or null, got {value!r}"
            )
        if value is not None and field != "cost_usd" and not fits(value, INT64_MAX):
            raise LoadError(
                folder,
                place,
                f"agent_result.{field} {value!r} is out of range: it must fit a 64-bit integer",
            )
    phases: dict[str, Any] = {}
    for phase in PHASES:
        span = t.get(phase)
        if span is not None and not isinstance(span, dict):  # its timing would be lost
            raise LoadError(
                folder,
                place,
                f"{phase} must be an object {{started_at, finished_at}} or null, got {span!r}",
            )
        if span is not None:
            start = parse_time(span.get("started_at"), folder, place, f"{phase}.started_at")
            end = parse_time(span.get("finished_at"), folder, place, f"{phase}.finished_at")
            phases[phase] = {
                "started_at": span.get("started_at"),
                "finished_at": span.get("finished_at"),
                "duration_s": duration_s(start, end),
            }
    extra = {
        "trial_name": t.get("trial_name"),
        "trial_uri": t.get("trial_uri"),
        "task_id": t.get("task_id"),
        "task_checksum": t.get("task_checksum"),
        "phases": phases,
        "exception_occurred_at": exc.get("occurred_at"),
        "exception_traceback": exc.get("exception_traceback"),
    }
    if rewards:
        extra["rewards"] = rewards
    if t.get("step_results"):
        extra["step_results"] = t["step_results"]
    return base | {
        "status": "failed" if exc and reward is None else "completed",
        "error": exc.get("exception_message"),
        "error_type": exc.get("exception_type"),
        "reward": reward,
        "input_tokens": _int_or_none(ar.get("n_input_tokens")),
        "cache_tokens": _int_or_none(ar.get("n_cache_tokens")),
        "output_tokens": _int_or_none(ar.get("n_output_tokens")),
        "cost_usd": None if ar.get("cost_usd") is None else float(ar["cost_usd"]),
        "duration_s": duration_s(t["_started"], t["_finished"]),
        "extra": json.dumps(extra),
    }


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
