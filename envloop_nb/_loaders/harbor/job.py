"""Harbor job directories (the Terminal-Bench harness, v0.22 layout and the older
``sandboxes`` layout). Spec: ``shared/formats/harbor.md``.

Each trial folder is read in Python (:func:`envloop_nb._loaders.harbor.trials.read_trials`;
a big job's by worker processes) and kept as a row of Arrow columns, never as its parsed
``result.json``; the attempts are numbered on those columns and staged as one Arrow
table (:func:`envloop_nb._loaders.common.stage.insert_table`), so the memory a load holds
grows by a few hundred bytes per trial.

Which policy reproduces Harbor's own ``result.json`` (its ``mean`` and ``pass_at_k``)
depends on the Harbor version that wrote the folder:

* Harbor **before 0.26** counts a trial without a reward as 0: ``policy="failure"``.
* Harbor **0.26 and later** skips trials without a valid reward: ``policy="unknown"``.

The version comes from the job's ``lock.json`` (``harbor.version``); without one, the
``sandboxes``-era layouts (``verifier_result.reward``, ``stats.n_trials``) still date a
folder as before 0.26, and any other folder's version is unknown. The loader stores the
finding in ``jobs.extra["harbor"]`` (``version``, ``version_source``,
``missing_reward_rule``, ``policy``; see :func:`envloop_nb._loaders.harbor.version.detect_version`),
``job.summary()`` states it in ``JobSummary.note``, and the panel and ``job.diagnose()``
compare Harbor's numbers under that version's policy (:func:`envloop_nb._metrics.harbor.check`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._errors import LoadError
from ..._store.steps import StepWriter
from ..common.stage import begin_job, insert_rows, insert_table
from ..common.values import INT32_MAX, is_int, parse_time, read_json_file
from .trial_steps import read_trial_steps
from .trials import TRIAL, Keep, model_names, read_trials
from .version import detect_version

__all__ = ["evals_key", "harbor_splits", "load_harbor"]

#: One job of a Harbor folder: (agent name, model name, dataset name) as config.json has them.
Split = tuple[str, str | None, str | None]


def _job_header(
    folder: Path, *, read_result: bool = True
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise LoadError(
            folder, "config.json", "missing: a Harbor job folder holds config.json (JobConfig)"
        )
    config = read_json_file(config_path, "Harbor's JobConfig object")
    if not isinstance(config, dict):
        raise LoadError(config_path, None, "expected Harbor's JobConfig object")
    k = config.get("n_attempts")
    if not is_int(k) or k < 1:
        raise LoadError(config_path, "$.n_attempts", f"expected an integer >= 1, got {k!r}")
    if k > INT32_MAX:
        raise LoadError(
            config_path,
            "$.n_attempts",
            f"n_attempts {k} is out of range: it must fit a 32-bit integer",
        )
    agents = config.get("agents")
    if not isinstance(agents, list) or not agents or not all(isinstance(a, dict) for a in agents):
        raise LoadError(
            config_path, "$.agents", f"expected a list of {{name, model_name}}, got {agents!r}"
        )
    for i, a in enumerate(agents):
        for field in ("name", "model_name"):
            value = a.get(field)
            if value is not None and not isinstance(value, str):
                raise LoadError(
                    config_path,
                    f"$.agents[{i}].{field}",
                    f"expected a string or null, got {value!r}",
                )
    datasets = config.get("datasets") or []
    if not isinstance(datasets, list) or not all(isinstance(d, dict) for d in datasets):
        # a dataset that is not an object would lose its name quietly
        raise LoadError(
            config_path,
            "$.datasets",
            f"expected one dataset {{name, version}}, got {datasets!r}",
        )
    result_path = folder / "result.json"
    job_result = None
    if read_result and result_path.exists():
        job_result = read_json_file(result_path, "Harbor's JobResult object")
        if not isinstance(job_result, dict):
            raise LoadError(result_path, None, "expected Harbor's JobResult object")
    return config, job_result


def _dataset_name(dataset: dict[str, Any]) -> str | None:
    """A JobConfig dataset's name: ``name`` (registry) or the last part of ``path`` (local)."""
    name = dataset.get("name")
    if name is None and isinstance(dataset.get("path"), str):
        name = Path(dataset["path"]).name or None
    return None if name is None else str(name)


def _splits(config: dict[str, Any]) -> list[Split]:
    out: list[Split] = []
    datasets = config.get("datasets") or [{}]
    for agent in config["agents"]:
        name = agent.get("name") or agent.get("import_path")
        for dataset in datasets:
            split = (str(name), agent.get("model_name"), _dataset_name(dataset))
            if split not in out:
                out.append(split)
    return out


def harbor_splits(folder: Path) -> list[Split]:
    """The jobs a Harbor folder holds: its distinct (agent, model, dataset) combinations.

    Harbor's JobConfig runs every agent of ``agents[]`` (each ``{name, model_name}``) on
    every dataset of ``datasets[]``; each pair is one job for envloop_nb (load it with
    ``load_harbor(..., agent=, model=, dataset=)``). The model is the JobConfig
    ``model_name`` (``provider/name``); None parts are absent from the config (no model,
    or tasks given without a dataset). A one-agent, one-dataset folder gives one entry.
    Reads only ``config.json``.

    Examples
    --------
    >>> harbor_splits(Path("../shared/fixtures/harbor/2026-03-02__14-05-11"))
    [('claude-code', 'anthropic/claude-sonnet-4-5', 'terminal-bench')]
    """
    config, _ = _job_header(Path(folder), read_result=False)
    return _splits(config)


def evals_key(agent: str, model: str | None, dataset: str | None) -> str:
    """Harbor's ``stats.evals`` key of a combination: ``<agent>__<model>__<dataset>``.

    Harbor names the model as the trial's ``agent_info.model_info.name`` (the
    ``model_name`` without its provider) and a trial without a dataset ``adhoc``.

    >>> evals_key("claude-code", "anthropic/claude-sonnet-4-5", "terminal-bench")
    'claude-code__claude-sonnet-4-5__terminal-bench'
    """
    short = model.split("/", 1)[-1] if model else None
    dataset = dataset or "adhoc"
    return f"{agent}__{short}__{dataset}" if short else f"{agent}__{dataset}"


def _choose_split(
    folder: Path,
    splits: list[Split],
    agent: str | None,
    model: str | None,
    dataset: str | None,
) -> Split | None:
    """The one combination ``agent``/``model``/``dataset`` pick (None: load the folder whole)."""
    shown = ", ".join(f"(agent={a!r}, model={m!r}, dataset={d!r})" for a, m, d in splits)
    if agent is None and model is None and dataset is None:
        if len(splits) == 1:
            return None
        raise LoadError(
            folder / "config.json",
            "$.agents",
            f"the job holds {len(splits)} agent/model/dataset combinations: {shown}; "
            "envloop_nb loads one per job: ws.load_all(path) loads one job per "
            "combination, or pass agent=, model= and/or dataset= to pick one",
        )
    chosen = [
        s
        for s in splits
        if (agent is None or agent == s[0])
        and (model is None or (s[1] is not None and model in model_names(s[1])))
        and (dataset is None or dataset == s[2])
    ]
    if len(chosen) != 1:
        asked = ", ".join(
            f"{n}={v!r}"
            for n, v in (("agent", agent), ("model", model), ("dataset", dataset))
            if v is not None
        )
        verb = "matches none" if not chosen else f"matches {len(chosen)}"
        raise LoadError(
            folder / "config.json",
            "$.agents",
            f"{asked} {verb} of the job's combinations: {shown}; name one "
            "(ws.load_all(path) loads each)",
        )
    return chosen[0]


#: The ``attempts`` columns of a job's attempts table (:func:`_attempts`).
_ATTEMPT_COLUMNS = [
    "job_id",
    "task",
    "attempt",
    "n_trials",
    "source_place",
    "trial_id",
    *TRIAL.names[TRIAL.get_field_index("started_at") : TRIAL.get_field_index("extra") + 1],
]


def _attempts(folder: Path, trials: pa.Table, jid: str, k: int) -> pa.Table:
    """The trials as the job's attempts: each task's trials ordered by start time (a
    trial without one last, then by folder name) are attempts 1, 2, ...; the tasks by
    name. :data:`~envloop_nb._loaders.harbor.trials.TRIAL`'s columns with ``job_id``,
    ``attempt`` and ``n_trials`` (1).

    Raises
    ------
    LoadError
        A task with more trials than ``k``, naming its first trial out of range.
    """
    keys = [(c, "ascending", "at_end") for c in ("task", "started_at", "source_place")]
    trials = trials.take(pc.sort_indices(trials, sort_keys=keys))
    n = trials.num_rows
    task = trials.column("task")
    changes = (
        pc.not_equal(task.slice(1), task.slice(0, n - 1)) if n > 1 else pa.array([], pa.bool_())
    )
    starts = np.flatnonzero(np.concatenate([[True], np.asarray(changes, dtype=bool)]))
    counts = np.diff(np.append(starts, n))
    over = np.flatnonzero(counts > k)
    if len(over):
        first = int(starts[over[0]])
        raise LoadError(
            folder,
            f"trial {trials.column('source_place')[first + k].as_py()}",
            f"task {task[first].as_py()!r} has {int(counts[over[0]])} trials but the job "
            f"requested n_attempts={k}: attempt {k + 1} is out of range",
        )
    attempt = np.arange(n) - np.repeat(starts, counts) + 1
    return (
        trials.append_column("job_id", pa.array([jid] * n, pa.string()))
        .append_column("attempt", pa.array(attempt, pa.int32()))
        .append_column("n_trials", pa.array(np.ones(n, np.int32)))
    )


def _tasks(attempts: pa.Table, jid: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The job's ``tasks`` and ``task_tags`` rows: the tasks by name; ``digest`` the
    ``task_checksum`` its finished trials agree on (else null), tag ``source`` the one
    source its trials name."""
    by_task = (
        attempts.group_by("task", use_threads=False)
        .aggregate(
            [
                ("checksum", "count_distinct"),
                ("checksum", "min"),
                ("source", "count_distinct"),
                ("source", "min"),
            ]
        )
        .sort_by("task")
    )
    task_rows: list[dict[str, Any]] = []
    tag_rows: list[dict[str, Any]] = []
    columns = (
        "task",
        "checksum_count_distinct",
        "checksum_min",
        "source_count_distinct",
        "source_min",
    )
    for position, (task, n_sums, checksum, n_sources, source) in enumerate(
        zip(*(by_task.column(c).to_pylist() for c in columns), strict=True)
    ):
        tags = {"source": str(json.loads(source))} if n_sources == 1 else {}
        task_rows.append(
            {
                "job_id": jid,
                "task": task,
                "position": position,
                "digest": json.loads(checksum) if n_sums == 1 else None,
                "tags": json.dumps(tags),
            }
        )
        tag_rows.extend(
            {"job_id": jid, "task": task, "key": a, "value": b} for a, b in tags.items()
        )
    return task_rows, tag_rows


def load_harbor(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    agent: str | None = None,
    model: str | None = None,
    dataset: str | None = None,
) -> None:
    """Stage one Harbor job folder (``jobs/<job_name>/``), or one combination of it.

    A folder whose ``config.json`` lists several agents (each with its model) or several
    datasets holds one job per (agent, model, dataset) combination
    (:func:`harbor_splits`). ``agent``, ``model`` (the JobConfig ``model_name``, with or
    without its ``provider/``) and ``dataset`` pick one: only the trials that ran it are
    loaded (each trial by its own ``agent_info.name``, ``agent_info.model_info.name`` and
    ``source``, as Harbor keys its evals); the job's model, dataset and agent are the
    combination's; the default job id is ``<result id or job_name>/<agent>/<model>/
    <dataset>`` (None parts left out); ``platform_metrics`` is ``stats`` with ``evals``
    narrowed to the combination's ``"<agent>__<model>__<dataset>"`` entry, and
    ``extra["split"]`` records the combination and that key. Without them a
    one-combination folder loads whole and a several-combination one is refused
    (``ws.load_all(path)`` loads one job per combination).

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

    * steps: a trial's ATIF trajectory ``agent/trajectory.json`` (its continuation and
      sub-agent files beside it) is the attempt's steps; a trial without one has none.
      ``extra["steps"]`` counts both and compares each trajectory's ``final_metrics``
      with its rows' sums and with the trial's ``agent_result``
      (:mod:`envloop_nb._loaders.harbor.trial_steps`). A trajectory that cannot be read
      fails the load naming ``<trial>/agent/trajectory.json`` and the step.

    The trial ``result.json`` is the record: ``verifier/reward.txt|json`` files are not
    read (Harbor already copied them into ``verifier_result``). ``lenient=True`` only
    skips the steps of a trajectory that cannot be read (the attempt loads without
    them; a :class:`~envloop_nb.LoadWarning` counts them); anything else wrong in a
    Harbor job is refused: it is small enough to fix by hand.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/fixtures/harbor/2026-03-02__14-05-11")
    >>> job.k, len(job.attempts()), job.summary(policy="failure").score
    (5, 30, 0.5)
    """
    folder = Path(source)
    if not folder.is_dir():
        raise LoadError(folder, None, "expected a Harbor job folder (config.json + trials)")
    config, job_result = _job_header(folder)
    k = int(config["n_attempts"])
    splits = _splits(config)
    split = _choose_split(folder, splits, agent, model, dataset)
    agent_cfg = config["agents"][0]
    datasets = config.get("datasets") or [{}]
    dataset_cfg = datasets[0]
    jid = job_id or (job_result or {}).get("id") or config.get("job_name") or folder.name
    stats = (job_result or {}).get("stats")
    split_extra: dict[str, Any] | None = None
    keep: Keep | None = None
    if split is not None:
        name, model_name, dataset_name = split
        agent_cfg = next(
            a
            for a in config["agents"]
            if (a.get("name") or a.get("import_path")) == name and a.get("model_name") == model_name
        )
        dataset_cfg = next((d for d in datasets if _dataset_name(d) == dataset_name), {})
        if job_id is None:
            jid = "/".join(str(p) for p in (jid, *split) if p is not None)
        axes = (len({s[:2] for s in splits}) > 1, len({s[2] for s in splits}) > 1)
        keep = (*split, axes)
        key = evals_key(*split)
        if isinstance(stats, dict) and isinstance(stats.get("evals"), dict):
            evals = stats["evals"]
            stats = stats | {"evals": {key: evals[key]} if key in evals else {}}
        split_extra = {
            "agent": name,
            "model": model_name,
            "dataset": dataset_name,
            "evals_key": key,
            "combinations": len(splits),
        }
    attempts = _attempts(folder, read_trials(folder, keep=keep), jid, k)
    task_rows, tag_rows = _tasks(attempts, jid)
    several = attempts.filter(pc.is_valid(attempts.column("rewards")))  # reward maps
    dim_rows = [
        {"job_id": jid, "task": task, "attempt": attempt, "name": n, "value": v}
        for task, attempt, rewards in zip(
            *(several.column(c).to_pylist() for c in ("task", "attempt", "rewards")), strict=True
        )
        for n, v in json.loads(rewards).items()
    ]
    dim_names = {row["name"] for row in dim_rows}
    versions = pc.drop_null(attempts.column("agent_version"))
    agent_version = json.loads(versions[0].as_py()) if len(versions) else None
    legacy = pc.any(attempts.column("legacy_reward")).as_py() is True

    jr = job_result or {}
    lock_path = folder / "lock.json"
    lock = read_json_file(lock_path, "Harbor's JobLock object") if lock_path.is_file() else None
    harbor = detect_version(lock, job_result, legacy_reward=legacy)
    begin_job(con, jid)
    writer = StepWriter(con, jid)
    steps = read_trial_steps(writer, folder, attempts, lenient=lenient)
    writer.close()
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
                "dataset_name": dataset_cfg.get("name") if split is None else split[2],
                "dataset_version": (
                    str(dataset_cfg["version"]) if dataset_cfg.get("version") is not None else None
                ),
                "dataset_revision": None,
                "runner": "harbor",
                "model": agent_cfg.get("model_name"),
                # the agent's settings as configured (kwargs, timeouts), model and name apart
                "profile_params": json.dumps(
                    {key: v for key, v in agent_cfg.items() if key not in ("name", "model_name")}
                    | {"n_concurrent_trials": config.get("n_concurrent_trials")},
                    default=str,
                ),
                "attempts": k,
                "platform_metrics": json.dumps(stats) if stats else None,
                "extra": json.dumps(
                    {
                        "job_name": config.get("job_name"),
                        "agent": {"name": agent_cfg.get("name"), "version": agent_version},
                        "n_concurrent_trials": config.get("n_concurrent_trials"),
                        "n_total_trials": jr.get("n_total_trials"),
                        "updated_at": jr.get("updated_at"),
                        "harbor": harbor,
                        "steps": steps,
                    }
                    | ({"split": split_extra} if split_extra else {})
                ),
            }
        ],
    )
    insert_rows(con, "tasks", task_rows)
    insert_rows(con, "task_tags", tag_rows)
    insert_table(con, "attempts", attempts.select(_ATTEMPT_COLUMNS))
    insert_rows(con, "dimensions", dim_rows)
    insert_rows(con, "dimension_meta", [{"job_id": jid, "name": n} for n in sorted(dim_names)])
