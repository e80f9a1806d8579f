"""Harbor trial folders: reading each trial's ``result.json`` (or a running trial's
``config.json``), its reward map, the agent / model / dataset it ran with, and its
``attempts`` row. Used by :mod:`envloop_nb._loaders.harbor.job`; spec:
``shared/formats/harbor.md``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..common.read import bad_path_name, shown_path
from ..common.values import (
    INT64_MAX,
    duration_s,
    fits,
    is_number,
    parse_time,
    read_json_file,
)

__all__ = ["PHASES", "attempt_row", "model_names", "ran_with", "read_trials", "trial_rewards"]

PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def trial_rewards(
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


def read_trials(folder: Path) -> list[dict[str, Any]]:
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
    # by name (as sorting the paths would); a folder that is not a symlink resolves to
    # the resolved job folder / its name: only symlinks are resolved one by one
    with os.scandir(folder) as listing:
        entries = sorted((e for e in listing if e.is_dir()), key=lambda e: e.name)
    here = folder.resolve()
    for entry in entries:
        sub = folder / entry.name
        result_path = sub / "result.json"
        place = f"trial {sub.name}"
        if os.path.exists(result_path) or (sub / "config.json").is_file():
            bad_name = bad_path_name(sub.name)
            if bad_name is not None:  # the workspace records the folder name as text
                raise LoadError(
                    folder,
                    f"trial {shown_path(sub.name)}",
                    f"the folder name is {bad_name}: the workspace cannot record it; rename it",
                )
            real = sub.resolve() if entry.is_symlink() else here / entry.name
            if real in folders:
                raise LoadError(
                    folder,
                    place,
                    f"the same folder as trial {folders[real]} ({real}): one trial would "
                    "count as two attempts",
                )
            folders[real] = sub.name
        if os.path.exists(result_path):
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
            result["config"] = cfg
        else:
            continue
        result["_place"] = place
        result["_ran"] = _ran_with(result, folder, place)
        result["_folder"] = sub.name
        result["_path"] = result_path
        trials.append(result)
    return trials


def attempt_row(
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
    reward, rewards = trial_rewards(t, folder, place)
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


def model_names(model: str | None) -> set[str]:
    """The names a trial may record for the JobConfig ``model_name`` ``model``.

    Harbor's ``agent_info.model_info`` splits ``provider/name``: the job's
    ``anthropic/claude-sonnet-4-5`` is the trial's ``claude-sonnet-4-5``.

    >>> sorted(model_names("openrouter/anthropic/claude-haiku-4.5"))
    ['anthropic/claude-haiku-4.5', 'claude-haiku-4.5', 'openrouter/anthropic/claude-haiku-4.5']
    """
    if not model:
        return set()
    return {model, model.split("/", 1)[-1], model.rsplit("/", 1)[-1]}


def ran_with(
    t: dict[str, Any],
    agent: str | None,
    model: str | None,
    dataset: str | None,
    *,
    axes: tuple[bool, bool] = (True, True),
) -> bool:
    """Whether trial ``t`` ran the combination (JobConfig agent name, ``model_name``, dataset).

    ``axes``: whether to compare the agent/model and the dataset; a job that ran one
    agent (or one dataset) need not, so a trial that names it differently still counts.

    A trial's own fields decide, as Harbor keys its evals: ``agent_info.name``,
    ``agent_info.model_info.name`` (``provider/name`` too) and ``source``; a trial that
    lacks them (a running one) falls back on its TrialConfig's ``agent`` and ``task.source``.
    """
    trial_agent, trial_models, source = t["_ran"]
    by_agent, by_dataset = axes
    if by_agent:
        if trial_agent != agent:
            return False
        if model is None:
            if trial_models:
                return False
        elif not model_names(model) & set(trial_models):
            return False
    return source == dataset or not by_dataset


def _ran_with(
    t: dict[str, Any], folder: Path, place: str
) -> tuple[str | None, tuple[str, ...], str | None]:
    """The trial's agent name, the names of its model, and its dataset (``source``)."""
    cfg = _obj(t.get("config"))
    cfg_agent = _obj(cfg.get("agent"))
    cfg_task = _obj(cfg.get("task"))
    info = t.get("agent_info")
    if info is not None and not isinstance(info, dict):
        raise LoadError(folder, place, f"agent_info must be an object or null, got {info!r}")
    info = info or {}
    agent = info.get("name", cfg_agent.get("name"))
    models: list[str] = []
    model_info = info.get("model_info")
    if isinstance(model_info, dict) and isinstance(model_info.get("name"), str):
        name = model_info["name"]
        provider = model_info.get("provider")
        models.append(name)
        if isinstance(provider, str) and provider:
            models.append(f"{provider}/{name}")
    elif isinstance(cfg_agent.get("model_name"), str):
        models.append(cfg_agent["model_name"])
    source = t.get("source", cfg_task.get("source"))
    return (
        None if agent is None else str(agent),
        tuple(models),
        None if source is None else str(source),
    )


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
