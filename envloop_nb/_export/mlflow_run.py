"""A job's numbers as an MLflow run, under the names SageMaker's multi-turn RL evaluation logs.

:func:`run_content` is pure: from a job's rollout statistics, summary, curve, per-task
table and job row it builds the metrics (name → float), params and tags of one run.
:func:`job_run_content` gathers those inputs for a job; :func:`log_job_run` writes the
run through ``MlflowClient`` (MLflow is imported only there) and attaches the per-task
table and the XLSX workbook as artifacts.

Notes
-----
**Metrics.** Every value comes from a number the library already computes:
``rollout_stats`` (:mod:`envloop_nb._metrics.rollouts`, rows ``quantity × level``),
``summary`` (:class:`envloop_nb.JobSummary`), ``curve`` and the per-task table
``samples`` (:mod:`envloop_nb._metrics.passk_views`). A *rollout* is an attempt of
record; a *prompt group* is a task.

==================================== ===================================================
metric                               definition (source)
==================================== ===================================================
``eval/reward/mean``                 mean reward over the rollouts with a reward
                                     (rollout_stats ``reward × rollout``: ``mean``)
``eval/reward/min`` / ``max``        lowest / highest reward (same row: ``min``, ``max``)
``eval/reward/std``                  sample standard deviation of the rewards (``std``)
``eval/reward/zero_frac``            share of rewarded rollouts whose reward is exactly 0
                                     (``zero_frac``)
``eval/reward/pass_at_{k}``          pass@k for each k of ``ks``: the unbiased
                                     estimator's mean over the tasks with >= k scored
                                     attempts (``curve``; at k = the job's k it is
                                     ``summary["pass@k"]``); follows ``policy``
``eval/reward/pass_power_{k}``       pass^k likewise (``curve``: ``pass^k``)
``eval/reward/succeeded_rollouts``   scored attempts that pass (reward >= threshold;
                                     without one, reward = 1): the sum of ``samples``
                                     ``passes``
``eval/reward/failed_rollouts``      scored attempts that do not pass:
                                     ``summary.scored`` − succeeded
``eval/reward/num_prompts``          requested tasks (``summary.total_members``)
``eval/reward/rollouts_per_prompt``  attempts requested per task (``summary.k``)
``eval/reward/success_threshold``    ``threshold``; 1.0 when there is none and every
                                     reward is 0 or 1 (then reward = 1 ⇔ reward >= 1)
``eval/reward/mean_within_groups``   mean over tasks of each task's mean reward
                                     (rollout_stats ``reward × task mean``: ``mean``)
``eval/reward/std_within_groups``    mean over tasks of each task's sample standard
                                     deviation of its rewards (``samples``
                                     ``reward_std``; tasks with >= 2 scored attempts)
``eval/reward/min_within_groups``    mean over tasks of each task's lowest reward
                                     (``samples`` ``reward_min``)
``eval/reward/max_within_groups``    mean over tasks of each task's highest reward
                                     (``samples`` ``reward_max``)
``eval/tokens/prompt_mean``          mean input tokens per rollout (``input_tokens``)
``eval/tokens/response_*``           ``mean``, ``min``, ``max``, ``std`` of the output
                                     tokens per rollout (``output_tokens``)
``eval/turns/{mean,min,max}``        turns per rollout (``turns``)
``eval/logprob/nz_mean``             mean over rollouts of each rollout's mean token
                                     logprob (``logprob_mean``: ``mean``)
``eval/logprob/nz_min``              lowest token logprob of any rollout
                                     (``logprob_min``: ``min``)
``timing_s/eval``                    the job's wall time in seconds: ``finished_at`` −
                                     ``created_at`` of its row (a finished job only)
``eval/coverage/*``                  the summary's coverage counts ``total``,
                                     ``scored``, ``missing``, ``invalid``,
                                     ``complete_members``
==================================== ===================================================

The ``*_within_groups`` statistics follow SageMaker's definitions (a statistic *within*
each prompt group, averaged over the groups); the means over tasks are exact sums
(``math.fsum``) divided once. Reward statistics, counts and group statistics never
count a missing reward as 0, whatever the policy; ``policy`` changes only
``pass_at_{k}`` / ``pass_power_{k}`` (and the artifacts). SageMaker's ``response_*``
are per turn and its logprob statistics per token; a job records tokens and logprobs
per rollout, so these are per rollout. SageMaker's ``eval/logprob/{nz_max, nz_std,
zero_frac, zero_count, zero_per_group}`` need token counts a job does not hold: they are
never logged.

**Undefined values are not logged** (never as 0): a statistic over no values (no
logprobs, no scored attempt, a std over one value), pass@k beyond every task's scored
attempts or over non-binary rewards without a threshold, an unfinished job's wall time.
Their names are listed, comma-separated in catalog order, in the tag
``envloop_nb.skipped_metrics`` (empty when nothing was skipped).

**Params**: ``policy``, ``threshold`` (``"none"``: a pass is reward = 1), ``k``,
``ks``, ``job_id``, ``model``, ``dataset_name``, ``dataset_version``,
``dataset_revision``, ``source_format``, ``envloop_nb_version`` (an unknown value is
left out). **Tags**: ``envloop_nb.job_id``, ``envloop_nb.kind`` (``"job"``),
``envloop_nb.version``, ``envloop_nb.job_status``, ``envloop_nb.partial`` (``"true"``
while the job is pending or running), ``envloop_nb.skipped_metrics``.

**Artifacts**: ``per_task.parquet`` (the per-task table ``job.samples(policy=...,
threshold=...)``), ``<job id>.xlsx`` (``job.export_xlsx``; characters other than
letters, digits, ``.``, ``_`` and ``-`` become ``_``) and ``task_counts.parquet``: the
exact per-task counts (:func:`envloop_nb._metrics.counts.task_counts`) for the threshold
None and the run's threshold, one row per (task, threshold), that
``ws.load_mlflow_run`` reads back as a summarised job with the very same numbers. The
job's facts (k, reward scales, dataset, runner, model, status, times) travel in that
file's Parquet schema metadata (key ``envloop_nb.job``, JSON): typed and exact (a float
by its shortest repr, a timestamp in ISO 8601 with its offset, an unknown value as null)
and tied to the counts they belong to, where params are untyped strings of which MLflow
keeps at most 6000 characters (:func:`task_counts_table`).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import numpy as np

from .._loaders.mlflow.run import mlflow_client
from .._metrics.counts import check_options, task_counts
from .._metrics.passk_views import curve, samples
from .._metrics.rollouts import rollout_stats
from .._metrics.summary import JobSummary, job_summary
from .._store.ref import job_info
from .job_xlsx import export_xlsx

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from .._store.ref import JobRef
    from .._types import Policy

__all__ = [
    "SAGEMAKER_KS",
    "RunContent",
    "default_ks",
    "job_run_content",
    "log_job_run",
    "run_content",
    "task_counts_table",
]

#: The Parquet schema metadata key of ``task_counts.parquet`` holding the job's facts.
COUNTS_META = b"envloop_nb.job"
_FACTS = ("status", "created_at", "finished_at", "model", "dataset_name", "dataset_version",
          "dataset_revision", "runner", "profile_name", "profile_version")  # fmt: skip

#: SageMaker's default ``pass_k_values``.
SAGEMAKER_KS = (1, 2, 4, 8, 16, 32)

#: ``(metric, rollout_stats quantity, level, statistic)`` in catalog order, before pass@k.
_REWARD = (
    ("eval/reward/mean", "reward", "rollout", "mean"),
    ("eval/reward/min", "reward", "rollout", "min"),
    ("eval/reward/max", "reward", "rollout", "max"),
    ("eval/reward/std", "reward", "rollout", "std"),
    ("eval/reward/zero_frac", "reward", "rollout", "zero_frac"),
)
_ROLLOUT = (
    ("eval/tokens/prompt_mean", "input_tokens", "rollout", "mean"),
    ("eval/tokens/response_mean", "output_tokens", "rollout", "mean"),
    ("eval/tokens/response_min", "output_tokens", "rollout", "min"),
    ("eval/tokens/response_max", "output_tokens", "rollout", "max"),
    ("eval/tokens/response_std", "output_tokens", "rollout", "std"),
    ("eval/turns/mean", "turns", "rollout", "mean"),
    ("eval/turns/min", "turns", "rollout", "min"),
    ("eval/turns/max", "turns", "rollout", "max"),
    ("eval/logprob/nz_mean", "logprob_mean", "rollout", "mean"),
    ("eval/logprob/nz_min", "logprob_min", "rollout", "min"),
)
#: ``(metric, samples column)``: a per-task statistic averaged over the tasks that have it.
_WITHIN = (
    ("eval/reward/std_within_groups", "reward_std"),
    ("eval/reward/min_within_groups", "reward_min"),
    ("eval/reward/max_within_groups", "reward_max"),
)
_COVERAGE = ("total", "scored", "missing", "invalid", "complete_members")
_UNFINISHED = ("pending", "running")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# MLflow's SQLAlchemy store, imported when a client first opens one, configures mappers
# with a loader strategy SQLAlchemy 2.1 deprecates; nothing a caller can act on.


@dataclass(frozen=True)
class RunContent:
    """What one MLflow run of a job holds (see the module docstring).

    ``metrics`` are the defined values in catalog order; ``skipped`` the catalog names
    left out because their value is undefined (also in ``tags``).
    """

    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]
    skipped: tuple[str, ...]


def default_ks(k: int) -> tuple[int, ...]:
    """SageMaker's default k values up to ``k``, and ``k`` itself.

    Examples
    --------
    >>> default_ks(4), default_ks(3), default_ks(40)
    ((1, 2, 4), (1, 2, 3), (1, 2, 4, 8, 16, 32, 40))
    """
    return tuple(sorted({*(x for x in SAGEMAKER_KS if x <= k), max(int(k), 1)}))


def _value(x: Any) -> float | None:
    """A finite float, or None for null / NaN / infinite."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _mean_of_defined(values: np.ndarray) -> float | None:
    """The mean of the finite values (an exact sum divided once), None if there are none."""
    ok = values[np.isfinite(values)]
    return math.fsum(ok.tolist()) / len(ok) if len(ok) else None


def _wall_time(info: Mapping[str, Any]) -> float | None:
    start, end = info.get("created_at"), info.get("finished_at")
    if str(info.get("status") or "") in _UNFINISHED:
        return None
    if not isinstance(start, dt.datetime) or not isinstance(end, dt.datetime) or end < start:
        return None
    return (end - start).total_seconds()


def _text(x: Any) -> str | None:
    return None if x is None else str(x)


def run_content(
    *,
    stats: pd.DataFrame,
    summary: JobSummary,
    curve: pd.DataFrame,
    tasks: pd.DataFrame,
    info: Mapping[str, Any],
    version: str,
) -> RunContent:
    """Build a run's metrics, params and tags from numbers already computed. Pure.

    Parameters
    ----------
    stats
        The job's ``rollout_stats()`` (pandas).
    summary
        The job's summary under the chosen policy and threshold.
    curve
        The job's ``curve(ks=..., policy=..., threshold=...)``: one ``pass_at_{k}`` /
        ``pass_power_{k}`` pair per row.
    tasks
        The per-task table ``samples(policy="unknown", threshold=...)`` (its
        ``passes``, ``reward_std``, ``reward_min`` and ``reward_max``).
    info
        The job's row (:attr:`envloop_nb.Job.info`).
    version
        The envloop_nb version recorded in params and tags.

    Returns
    -------
    RunContent
        Metrics (defined values only), params, tags and the skipped metric names.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> content = job_run_content(job)
    >>> content.metrics["eval/reward/mean"], content.metrics["eval/reward/pass_at_2"]
    (0.6, 1.0)
    >>> content.metrics["eval/coverage/scored"], content.metrics["eval/coverage/total"]
    (5.0, 6.0)
    >>> content.skipped
    ('eval/logprob/nz_mean', 'eval/logprob/nz_min', 'timing_s/eval')
    >>> content.params["policy"], content.params["threshold"], content.params["ks"]
    ('unknown', 'none', '1,2')
    """
    by_row: dict[tuple[str, str], Mapping[Any, Any]] = {
        (str(r["quantity"]), str(r["level"])): r for r in stats.to_dict("records")
    }

    def stat(quantity: str, level: str, name: str) -> float | None:
        row = by_row.get((quantity, level))
        return None if row is None else _value(row.get(name))

    values: dict[str, float | None] = {}
    for metric, quantity, level, name in _REWARD:
        values[metric] = stat(quantity, level, name)
    ks = [int(k) for k in curve["k"].tolist()]
    for k, at, hat in zip(ks, curve["pass@k"].tolist(), curve["pass^k"].tolist(), strict=True):
        values[f"eval/reward/pass_at_{k}"] = _value(at)
        values[f"eval/reward/pass_power_{k}"] = _value(hat)
    passes = tasks["passes"].to_numpy(dtype=np.float64, na_value=np.nan)
    binary = summary.binary and bool(np.isfinite(passes).all())
    succeeded = int(passes.sum()) if binary else None
    values["eval/reward/succeeded_rollouts"] = None if succeeded is None else float(succeeded)
    values["eval/reward/failed_rollouts"] = (
        None if succeeded is None or summary.scored is None else float(summary.scored - succeeded)
    )
    values["eval/reward/num_prompts"] = float(summary.total_members)
    values["eval/reward/rollouts_per_prompt"] = float(summary.k)
    threshold = summary.threshold
    values["eval/reward/success_threshold"] = (
        float(threshold) if threshold is not None else (1.0 if summary.binary else None)
    )
    values["eval/reward/mean_within_groups"] = stat("reward", "task mean", "mean")
    for metric, column in _WITHIN:
        column_values = tasks[column].to_numpy(dtype=np.float64, na_value=np.nan)
        values[metric] = _mean_of_defined(column_values)
    for metric, quantity, level, name in _ROLLOUT:
        values[metric] = stat(quantity, level, name)
    values["timing_s/eval"] = _wall_time(info)
    for name in _COVERAGE:
        values[f"eval/coverage/{name}"] = float(getattr(summary, name))

    metrics = {name: v for name, v in values.items() if v is not None}
    skipped = tuple(name for name, v in values.items() if v is None)
    raw_params: dict[str, str | None] = {
        "policy": summary.policy,
        "threshold": "none" if threshold is None else repr(float(threshold)),
        "k": str(summary.k),
        "ks": ",".join(str(k) for k in ks),
        "job_id": summary.job_id,
        "model": _text(info.get("model")),
        "dataset_name": _text(info.get("dataset_name")),
        "dataset_version": _text(info.get("dataset_version")),
        "dataset_revision": _text(info.get("dataset_revision")),
        "source_format": _text(info.get("source_format")),
        "envloop_nb_version": version,
    }
    params = {key: v for key, v in raw_params.items() if v is not None}
    status = str(info.get("status") or "")
    tags = {
        "envloop_nb.job_id": summary.job_id,
        "envloop_nb.kind": "job",
        "envloop_nb.version": version,
        "envloop_nb.job_status": status,
        "envloop_nb.partial": "true" if status in _UNFINISHED else "false",
        "envloop_nb.skipped_metrics": ",".join(skipped),
    }
    return RunContent(metrics=metrics, params=params, tags=tags, skipped=skipped)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("envloop_nb")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def job_run_content(
    job: JobRef,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    ks: Sequence[int] | None = None,
) -> RunContent:
    """The run content of ``job`` (:func:`run_content` on its own numbers).

    ``ks`` are the k values of ``pass_at_{k}`` / ``pass_power_{k}``; by default
    :func:`default_ks` of the job's k.
    """
    check_options(policy, threshold)
    info = job_info(job.con, job.id)
    chosen = list(ks) if ks is not None else list(default_ks(int(info["attempts"])))
    for k in chosen:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"ks must be positive integers, got {k!r}")
    return run_content(
        stats=rollout_stats(job.con, job.id),
        summary=job_summary(job.con, job.id, policy=policy, threshold=threshold),
        curve=curve(job.con, job.id, ks=chosen, policy=policy, threshold=threshold),
        tasks=samples(job.con, job.id, policy="unknown", threshold=threshold),
        info=info,
        version=_version(),
    )


def task_counts_table(job: JobRef, *, threshold: float | None = None) -> pa.Table:
    """The exact per-task counts of ``job`` for the threshold None and ``threshold``, one
    row per (task, threshold) with the task's ``digest``, the job's facts in the schema
    metadata (``COUNTS_META``).

    Examples
    --------
    >>> import json, envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> table = task_counts_table(job, threshold=0.5)
    >>> table.num_rows, table.column("threshold").to_pylist()[::3]
    (6, [None, 0.5])
    >>> json.loads(table.schema.metadata[COUNTS_META])["k"]
    2
    """
    import json

    import pyarrow as pa

    info = job_info(job.con, job.id)
    parts = []
    for t in dict.fromkeys([None, None if threshold is None else float(threshold)]):
        counts = task_counts(job.con, job.id, t).drop_columns(["subset"])
        parts.append(
            counts.append_column("threshold", pa.array([t] * counts.num_rows, pa.float64()))
        )
    table = pa.concat_tables(parts)
    digests = dict(
        job.con.execute("SELECT task, digest FROM tasks WHERE job_id = ?", [job.id]).fetchall()
    )
    names = table.column("task").to_pylist()
    table = table.append_column("digest", pa.array([digests.get(t) for t in names], pa.string()))
    extra = info.get("extra") or {}
    facts = {
        name: v.isoformat() if isinstance(v, dt.datetime) else v
        for name in _FACTS
        if (v := info.get(name)) is not None
    }
    meta = {
        "job_id": job.id,
        "k": int(info["attempts"]),
        "thresholds": list(dict.fromkeys([None, threshold])),
        "reward_stats": extra.get("reward_stats") if isinstance(extra, dict) else None,
        "source_format": info.get("source_format"),
        "facts": facts,
    }
    return table.replace_schema_metadata({COUNTS_META: json.dumps(meta).encode()})


def _sqlite_artifacts(tracking_uri: str) -> str | None:
    """``<folder of the database>/mlruns`` as a file URI for a ``sqlite:`` file store."""
    parsed = urlparse(tracking_uri)
    name = unquote(parsed.path[1:])
    if parsed.scheme != "sqlite" or name in ("", ":memory:"):
        return None
    return (Path(name).resolve().parent / "mlruns").as_uri()


def _experiment_id(client: Any, name: str, artifact_location: str | None) -> str:
    """The id of the experiment called ``name``, created when there is none."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            return str(client.create_experiment(name, artifact_location=artifact_location))
        except MlflowException as e:  # created meanwhile by someone else
            found = client.get_experiment_by_name(name)
            if found is None:
                raise e from None
    if found.lifecycle_stage == "deleted":
        raise ValueError(
            f"MLflow experiment {name!r} is deleted: restore it "
            "(MlflowClient.restore_experiment) or choose another name"
        )
    return str(found.experiment_id)


def log_job_run(
    job: JobRef,
    *,
    experiment: str,
    run_name: str | None = None,
    tracking_uri: str | None = None,
    artifact_location: str | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    ks: Sequence[int] | None = None,
) -> str:
    """Log ``job`` as one MLflow run: metrics, params, tags and two artifacts.

    Parameters
    ----------
    job
        The job to log.
    experiment
        The MLflow experiment's name; created when it does not exist.
    run_name
        The run's name (MLflow picks one when None).
    tracking_uri
        Where MLflow keeps runs (``"sqlite:///path/mlflow.db"``, a server URL...);
        None: MLflow's own default (``MLFLOW_TRACKING_URI``, else ``mlflow.db`` in
        the working folder). MLflow's global tracking URI is left alone.
    artifact_location
        Where a *new* experiment keeps its artifacts; by default MLflow's choice, except
        for a ``sqlite:`` file: ``mlruns`` beside the database (not in the working
        folder). An existing experiment keeps its own.
    policy, threshold
        Metric options, as in :meth:`envloop_nb.Job.summary`.
    ks
        The k values of ``pass_at_{k}`` / ``pass_power_{k}`` (default:
        :func:`default_ks`).

    Returns
    -------
    str
        The run id. The run is FINISHED, or FAILED when MLflow refused part of it (the
        error is raised).

    Raises
    ------
    ImportError
        MLflow is not installed.
    ValueError
        A bad option, an empty experiment name, or a deleted experiment of that name.
    """
    if not isinstance(experiment, str) or not experiment.strip():
        raise ValueError(f"experiment must be a non-empty name, got {experiment!r}")
    content = job_run_content(job, policy=policy, threshold=threshold, ks=ks)
    uri, client = mlflow_client(tracking_uri, "logging a job to MLflow")
    import pyarrow.parquet as pq
    from mlflow.entities import Metric, Param, RunTag

    with tempfile.TemporaryDirectory(prefix="envloop_nb-mlflow-") as tmp:
        per_task = Path(tmp) / "per_task.parquet"
        samples(job.con, job.id, policy=policy, threshold=threshold).to_parquet(
            per_task, index=False
        )
        workbook = Path(tmp) / f"{_UNSAFE.sub('_', job.id)}.xlsx"
        export_xlsx(job, workbook, policy=policy, threshold=threshold)
        counts = Path(tmp) / "task_counts.parquet"
        pq.write_table(task_counts_table(job, threshold=threshold), counts)

        location = artifact_location if artifact_location is not None else _sqlite_artifacts(uri)
        experiment_id = _experiment_id(client, experiment, location)
        run = client.create_run(experiment_id, run_name=run_name)
        run_id = str(run.info.run_id)
        try:
            now = int(time.time() * 1000)
            client.log_batch(
                run_id,
                metrics=[Metric(name, v, now, 0) for name, v in content.metrics.items()],
                params=[Param(name, v) for name, v in content.params.items()],
                tags=[RunTag(name, v) for name, v in content.tags.items()],
            )
            client.log_artifact(run_id, str(per_task))
            client.log_artifact(run_id, str(workbook))
            client.log_artifact(run_id, str(counts))
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")
    return run_id
