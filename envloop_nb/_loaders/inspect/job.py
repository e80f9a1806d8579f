"""Inspect AI logs (``.eval`` and ``.json``), mapped to one job without inspect_ai.

The facts (Inspect's ``EvalLog`` / ``EvalSample``, read from its source):

* a sample's ``id`` is a task, its ``epoch`` an attempt, ``eval.config.epochs`` is k;
  the requested tasks are ``eval.dataset.sample_ids`` (else the ids seen), so samples
  that never ran (a cancelled or failed run) are missing slots that count in coverage;
* the reward is the log's headline scorer (``results.headline.scorer``, else the first
  of ``eval.scorers``); every other scorer is a dimension with its own coverage; a
  dict-valued score gives one value per key (``<scorer>.<key>``);
* a score value becomes a number by Inspect's own ``value_to_float`` rule (below); a
  NaN score (Inspect's "unscored" sentinel) is no value, never a 0;
* a sample with ``error`` set ended without a reward: status ``failed``, the error's
  message and type (``RuntimeError`` from ``"RuntimeError('...')"``); an empty message
  is no message;
* metadata → task tags (nested keys dotted, values as text), target → reference,
  messages → the ChatML input, ``output.completion`` → the output (in logs before 2025,
  which did not store it, the first choice's message text), the reward scorer's
  ``explanation`` → judge summary, model usage → tokens (cache reads as cache tokens)
  and cost, ``total_time`` → duration (``working_time`` kept in ``extra``);
* each attempt's steps are its sample's messages with its events' usage and timing
  (:mod:`.steps`, read as the samples are mapped: :mod:`.load_steps`); the job's
  ``extra.steps`` says what was read, what was left out and why;
* Inspect's own ``results.scores`` (per scorer × reducer × metric, with
  ``scored_samples`` / ``unscored_samples``) are kept as source numbers
  (:mod:`envloop_nb._store.source_numbers`): ``job.source_agreement()`` recomputes them.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError, LoadWarning
from ..common.stage import begin_job, insert_rows, stage_name
from ..common.values import check_k, parse_time
from .load_steps import LogSteps
from .map import STATUS, reward_name, source_numbers, value_to_float
from .read import InspectLog, open_inspect_log
from .sql import check_duplicates, epochs_seen, stage_samples
from .tasks import insert_dimension_meta, insert_tasks

__all__ = ["EPOCHS_OVER_SEEN", "MAX_EPOCHS", "load_inspect", "value_to_float"]

#: ``eval.config.epochs`` is k, the attempts asked per sample; the epochs that did not
#: run count as missing. A claim above ``MAX_EPOCHS`` (Inspect runs ask for 1 to a few
#: hundred) that is also over ``EPOCHS_OVER_SEEN`` times the most epochs any sample ran
#: is refused as not a real k (a claim of 2e9 over 3 epochs); ``k=`` sets k instead.
MAX_EPOCHS = 10_000
EPOCHS_OVER_SEEN = 100


def _job_id(log: InspectLog) -> str:
    ev = log.header["eval"]
    eval_id = str(ev.get("eval_id") or ev.get("task_id") or log.path.stem)
    return f"inspect:{ev.get('task')}:{ev.get('model')}:{eval_id[:8]}"


def load_inspect(
    con: duckdb.DuckDBPyConnection,
    source: Any,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    k: int | None = None,
    steps: bool = True,
) -> None:
    """Stage one Inspect AI log (``.eval`` or ``.json``) as a job, with each attempt's
    steps (its sample's messages, timed by its events: :mod:`.steps`).

    Parameters
    ----------
    source
        The log file.
    job_id
        Default ``inspect:<task>:<model>:<eval id, 8 characters>``.
    k
        Attempts requested per task; default the log's ``eval.config.epochs``.
    lenient
        A sample whose steps cannot be read loses its steps (counted, with a
        :class:`LoadWarning`) instead of failing the load; every sample's attempt is
        read or the load fails.
    steps
        ``False`` reads no steps (the attempts load faster); ``job.info`` says so.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from pathlib import Path
    >>> log = sorted(Path("../shared/fixtures/inspect/eval").glob("*.eval"))[0]
    >>> job = enb.open().load(log)
    >>> job.k, job.info["model"], job.summary().total
    (3, 'mockllm/ckpt-a', 60)
    """
    path = Path(source)
    check_k(path, k)
    log = open_inspect_log(path)
    reward = reward_name(log.header)
    jid = job_id or _job_id(log)
    begin_job(con, jid)
    # the samples, chunk by chunk, straight into the attempts; the mapping is SQL (.sql)
    reader = LogSteps(con, jid, path, lenient=lenient) if steps else None
    scratch = stage_samples(con, log, jid=jid, reward=reward, steps=reader)
    try:
        said = reader.close() if reader else {"source": None, "why": "not read (steps=False)"}
        _finish(con, scratch, log, jid=jid, k=k, reward=reward, steps=said)
    finally:
        scratch.close()


def _finish(
    con: duckdb.DuckDBPyConnection,
    scratch: duckdb.DuckDBPyConnection,
    log: InspectLog,
    *,
    jid: str,
    k: int | None,
    reward: str | None,
    steps: dict[str, Any],
) -> None:
    """The checks over the whole log, k, and the job, tasks and dimensions rows
    (``steps``: what the steps were read from, for ``extra.steps``)."""
    path = log.path
    ev = log.header["eval"]
    config = ev.get("config") if isinstance(ev.get("config"), Mapping) else {}
    epochs = config.get("epochs")
    dataset = ev.get("dataset") if isinstance(ev.get("dataset"), Mapping) else {}
    listed = [str(s) for s in dataset.get("sample_ids") or []]
    check_duplicates(scratch, path)
    most, counts = epochs_seen(scratch)
    if k is not None:
        job_k = k
    elif isinstance(epochs, int) and epochs >= 1:
        if epochs > MAX_EPOCHS and epochs > EPOCHS_OVER_SEEN * max(most, 1):
            raise LoadError(
                path,
                "eval.config.epochs",
                f"claims {epochs:,} epochs but no sample ran more than {most}: over "
                f"{MAX_EPOCHS:,} and {EPOCHS_OVER_SEEN} times the epochs present, it is "
                "not taken as k (pass k= to set it)",
            )
        job_k = epochs
    else:
        job_k = most
    if most > job_k:
        raise LoadError(
            path, "eval.config.epochs", f"a sample ran epoch {most}, beyond k = {job_k}"
        )
    _warn_uneven(path, counts, job_k, log.header.get("status"))
    stats_raw = log.header.get("stats")
    stats: Mapping[str, Any] = stats_raw if isinstance(stats_raw, Mapping) else {}
    results = log.header.get("results")
    insert_rows(
        con,
        "jobs",
        [
            {
                "job_id": jid,
                "source_format": "inspect",
                "source_path": str(path),
                "status": STATUS.get(str(log.header.get("status")), "completed"),
                "created_at": parse_time(ev.get("created"), path, "eval.created", "created"),
                "finished_at": parse_time(stats.get("completed_at"), path, "stats", "completed_at"),
                "dataset_name": str(dataset.get("name") or ev.get("task")),
                "dataset_version": str(ev.get("task_version", "")),
                "runner": f"inspect_ai {(ev.get('packages') or {}).get('inspect_ai', '')}".strip(),
                "model": ev.get("model"),
                "profile_params": json.dumps(
                    {
                        "generate_config": ev.get("model_generate_config") or {},
                        "plan": log.header.get("plan"),
                        "task_args": ev.get("task_args") or {},
                    },
                    default=str,
                ),
                "attempts": job_k,
                "platform_metrics": json.dumps(results, allow_nan=False, default=str)
                if results
                else None,
                "extra": json.dumps(
                    {
                        "inspect": {
                            "eval_id": ev.get("eval_id"),
                            "run_id": ev.get("run_id"),
                            "task": ev.get("task"),
                            "log_format": log.form,
                            "reward_scorer": reward,
                            "epochs_reducer": config.get("epochs_reducer"),
                            "error": log.header.get("error"),
                            # the log's own accounting, per model and per role (a
                            # grader's tokens are not the evaluated model's)
                            "model_usage": stats.get("model_usage") or {},
                            "role_usage": stats.get("role_usage") or {},
                            "model_roles": ev.get("model_roles") or {},
                            "max_samples": config.get("max_samples"),
                        },
                        "steps": steps,
                    },
                    default=str,
                ),
            }
        ],
    )
    insert_tasks(con, scratch, jid, listed)
    dims = insert_dimension_meta(con, scratch, jid, ev.get("scorers"))
    numbers = source_numbers(log.header, reward, dims)
    con.execute(
        f"""UPDATE {stage_name("jobs")}
            SET extra = json_merge_patch(extra, json_object('source_numbers', ?::JSON))""",
        [json.dumps(numbers)],
    )


def _warn_uneven(path: Path, counts: list[tuple[str, int]], k: int, status: Any) -> None:
    """Warn when tasks ran different numbers of epochs in a log that says it finished."""
    if status != "success":
        return
    short = [t for t, n in counts if n < k]
    if short:
        warnings.warn(
            f"{path}: {len(short)} sample(s) ran fewer than {k} epochs (first: {short[0]!r}); "
            "their missing epochs count as missing in coverage",
            LoadWarning,
            stacklevel=4,
        )
