"""Harbor trial folders: reading each trial's ``result.json`` (or a running trial's
``config.json``), its reward map, the agent / model / dataset it ran with, and its
``attempts`` row. Used by :mod:`envloop_nb._loaders.harbor.job`; spec:
``shared/formats/harbor.md``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

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
from . import pool

__all__ = [
    "PHASES",
    "TRIAL",
    "USAGE_FIELDS",
    "Keep",
    "model_names",
    "ran_with",
    "read_trials",
    "trial_rewards",
]

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


#: What :func:`read_trials` keeps of a trial, as Arrow columns (never its parsed
#: ``result.json``): the ``attempts`` row's own fields, and what the job and its steps
#: need. JSON text keeps a value as the file had it (compared, or copied, later).
TRIAL = pa.schema(
    [
        ("source_place", pa.string()),  # the trial folder's name
        ("task", pa.string()),
        ("trial_id", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("finished_at", pa.timestamp("us", tz="UTC")),
        ("status", pa.string()),
        ("error", pa.string()),
        ("error_type", pa.string()),
        ("reward", pa.float64()),
        ("input_tokens", pa.int64()),
        ("cache_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("duration_s", pa.float64()),
        ("extra", pa.string()),
        ("rewards", pa.string()),  # JSON: a reward map of several keys (its dimensions)
        ("checksum", pa.string()),  # JSON: a finished trial's task_checksum
        ("source", pa.string()),  # JSON: the trial's source (dataset), when set
        ("agent_version", pa.string()),  # JSON: agent_info.version, when set
        ("legacy_reward", pa.bool_()),  # verifier_result.reward (sandboxes layout)
        ("usage", pa.string()),  # JSON: agent_result's USAGE_FIELDS, when any is set
    ]
)
#: The ``agent_result`` fields of a trial's usage (tokens, cost).
USAGE_FIELDS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")

#: The one combination (agent, model, dataset, axes) whose trials a load keeps: see
#: :func:`ran_with`.
Keep = tuple[str, str | None, str | None, tuple[bool, bool]]
#: One trial as :data:`TRIAL`'s columns.
_Row = tuple[Any, ...]


def read_trials(folder: Path, *, keep: Keep | None = None) -> pa.Table:
    """Every trial folder's trial, as :data:`TRIAL`'s columns in folder-name order
    (only the trials that ran ``keep``'s combination, when given).

    A sub-folder with a ``config.json`` (TrialConfig) but no ``result.json`` is a trial
    that has not finished: it is kept as a running attempt. Sub-folders with neither
    file are not trials. The same trial reached twice — a folder that is a symlink to a
    sibling, or two results with one trial ``id`` — is refused: it would count as two
    attempts.

    A job of :data:`~envloop_nb._loaders.harbor.pool.PARALLEL_FROM` folders or more has
    its ``result.json`` files read by worker processes, :data:`~.pool.CHUNK` folders each
    time; the first error in folder order is raised, as in one process.
    """
    names = _trial_folders(folder)
    size = pool.CHUNK
    chunks = ((str(folder), names[i : i + size], keep) for i in range(0, len(names), size))
    ids: dict[str, str] = {}  # trial id -> folder name
    batches = []
    for chunk in pool.in_order(_read_chunk, chunks, workers=pool.workers(len(names))):
        for name, trial_id in chunk.ids:
            if trial_id in ids:
                raise LoadError(
                    folder,
                    f"trial {name}",
                    f"trial id {trial_id!r} is also the id of trial {ids[trial_id]}: "
                    "one trial would count as two attempts",
                )
            ids[trial_id] = name
        if chunk.error is not None:
            raise chunk.error
        batches.append(chunk.batch)
    return pa.Table.from_batches(batches, schema=TRIAL)


def _is_trial(sub: Path) -> bool:
    return os.path.exists(sub / "result.json") or (sub / "config.json").is_file()


def _trial_folders(folder: Path) -> list[str]:
    """The job's sub-folders by name (as sorting the paths would), once each: a trial
    folder whose name the workspace cannot record, or that is the same folder as an
    earlier one (a symlink), is refused.

    A folder that is not a symlink resolves to the resolved job folder / its name: only
    symlinks are resolved (and checked for being trials) one by one.
    """
    with os.scandir(folder) as listing:
        entries = sorted((e for e in listing if e.is_dir()), key=lambda e: e.name)
    here = folder.resolve()
    linked = {
        e.name: (folder / e.name).resolve()
        for e in entries
        if e.is_symlink() and _is_trial(folder / e.name)
    }
    targets = set(linked.values())
    folders: dict[Path, str] = {}  # resolved trial folder -> its first name
    for entry in entries:
        name = entry.name
        bad_name = bad_path_name(name)
        if bad_name is not None and _is_trial(folder / name):
            raise LoadError(  # the workspace records the folder name as text
                folder,
                f"trial {shown_path(name)}",
                f"the folder name is {bad_name}: the workspace cannot record it; rename it",
            )
        real = linked.get(name) or (None if entry.is_symlink() else here / name)
        if real is None or (name not in linked and real not in targets):
            continue  # no symlinked trial is this folder
        if real in folders:
            raise LoadError(
                folder,
                f"trial {name}",
                f"the same folder as trial {folders[real]} ({real}): one trial would "
                "count as two attempts",
            )
        folders[real] = name
    return [e.name for e in entries]


@dataclass
class _Chunk:
    """A run of trial folders read: the ids of its trials (folder name, id) in order,
    the kept ones as a batch, and the error that stopped it."""

    ids: list[tuple[str, str]] = field(default_factory=list)
    batch: pa.RecordBatch | None = None
    error: LoadError | None = None


def _read_chunk(folder: str, names: list[str], keep: Keep | None) -> _Chunk:
    out = _Chunk()
    rows: list[_Row] = []
    try:
        for name in names:
            got = _read_trial(Path(folder), name, keep)
            if got is None:
                continue
            trial_id, row = got
            if trial_id is not None:
                out.ids.append((name, trial_id))
            if row is not None:
                rows.append(row)
    except LoadError as err:
        out.error = err
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(TRIAL)
    out.batch = pa.record_batch(
        [pa.array(c, type=f.type) for c, f in zip(columns, TRIAL, strict=True)], schema=TRIAL
    )
    return out


def _read_trial(
    folder: Path, name: str, keep: Keep | None
) -> tuple[str | None, _Row | None] | None:
    """A trial folder's id and its row (None when ``keep`` leaves it out); None: the
    folder holds no trial."""
    sub = folder / name
    result_path = sub / "result.json"
    place = f"trial {name}"
    trial_id = None
    if os.path.exists(result_path):
        result = read_json_file(result_path, "Harbor's TrialResult object")
        if not isinstance(result, dict):
            raise LoadError(result_path, None, "expected Harbor's TrialResult object")
        task = result.get("task_name")
        if not isinstance(task, str) or not task:
            raise LoadError(
                result_path, "$.task_name", f"expected a non-empty string, got {task!r}"
            )
        trial_id = None if result.get("id") is None else str(result["id"])
        running = False
    elif (sub / "config.json").is_file():
        cfg = read_json_file(sub / "config.json", "Harbor's TrialConfig object")
        task_path = (cfg.get("task") or {}).get("path") if isinstance(cfg, dict) else None
        if not isinstance(task_path, str) or not task_path:
            raise LoadError(
                sub / "config.json",
                "$.task.path",
                "a trial without result.json needs its task path to be counted as running",
            )
        result = {"task_name": Path(task_path).name, "trial_name": name, "config": cfg}
        running = True
    else:
        return None
    ran = _ran_with(result, folder, place)
    if keep is not None and not ran_with(ran, *keep[:3], axes=keep[3]):
        return trial_id, None
    return trial_id, _trial_row(result, folder, place, name, running=running)


def _trial_row(t: dict[str, Any], folder: Path, place: str, name: str, *, running: bool) -> _Row:
    """The trial's :data:`TRIAL` columns."""
    started = parse_time(t.get("started_at"), folder, place, "started_at")
    finished = parse_time(t.get("finished_at"), folder, place, "finished_at")
    head = (
        name,
        t["task_name"],
        None if t.get("id") is None else str(t["id"]),
        started,
        finished,
    )
    if running:
        return (*head, "running", *[None] * 13, False, None)
    reward, rewards = trial_rewards(t, folder, place)
    exc = t.get("exception_info")
    if exc is not None and not isinstance(exc, dict):
        raise LoadError(folder, place, f"exception_info must be an object or null, got {exc!r}")
    exc = exc or {}
    for field_name in ("exception_type", "exception_message"):
        value = exc.get(field_name)
        if value is not None and not isinstance(value, str):
            raise LoadError(
                folder,
                place,
                f"exception_info.{field_name} must be a string or null, got {value!r}",
            )
    ar = t.get("agent_result") or {}
    if not isinstance(ar, dict):
        raise LoadError(folder, place, f"agent_result must be an object or null, got {ar!r}")
    for field_name in USAGE_FIELDS:
        value = ar.get(field_name)
        if value is not None and not is_number(value):
            raise LoadError(
                folder, place, f"agent_result.{field_name} must be a number or null, got {value!r}"
            )
        if value is not None and field_name != "cost_usd" and not fits(value, INT64_MAX):
            raise LoadError(
                folder,
                place,
                f"agent_result.{field_name} {value!r} is out of range: it must fit a 64-bit integer",
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
    vr = t.get("verifier_result")
    info = t.get("agent_info") or {}  # an object: _ran_with checked it
    version = info.get("version")
    usage = [ar.get(f) for f in USAGE_FIELDS]
    return (
        *head,
        "failed" if exc and reward is None else "completed",
        exc.get("exception_message"),
        exc.get("exception_type"),
        reward,
        _int_or_none(ar.get("n_input_tokens")),
        _int_or_none(ar.get("n_cache_tokens")),
        _int_or_none(ar.get("n_output_tokens")),
        None if ar.get("cost_usd") is None else float(ar["cost_usd"]),
        duration_s(started, finished),
        json.dumps(extra),
        json.dumps(rewards) if len(rewards) > 1 else None,
        json.dumps(t.get("task_checksum")),
        json.dumps(t["source"]) if t.get("source") else None,
        None if version is None else json.dumps(version),
        isinstance(vr, dict) and "reward" in vr and "rewards" not in vr,
        json.dumps(usage) if any(v is not None for v in usage) else None,
    )


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
    ran: tuple[str | None, tuple[str, ...], str | None],
    agent: str | None,
    model: str | None,
    dataset: str | None,
    *,
    axes: tuple[bool, bool] = (True, True),
) -> bool:
    """Whether a trial that ran ``ran`` (its agent, model names and dataset, as
    :func:`_ran_with` reads them) ran the combination (JobConfig agent name, ``model_name``, dataset).

    ``axes``: whether to compare the agent/model and the dataset; a job that ran one
    agent (or one dataset) need not, so a trial that names it differently still counts.

    A trial's own fields decide, as Harbor keys its evals: ``agent_info.name``,
    ``agent_info.model_info.name`` (``provider/name`` too) and ``source``; a trial that
    lacks them (a running one) falls back on its TrialConfig's ``agent`` and ``task.source``.
    """
    trial_agent, trial_models, source = ran
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
