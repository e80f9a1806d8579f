"""An MLflow run read back as a *summarised* job (:mod:`envloop_nb._loaders.tables.summary`).

Two kinds of run:

* **a run logged by** ``job.log_mlflow`` (:mod:`envloop_nb._export.mlflow_run`): its
  artifact ``task_counts.parquet`` holds the job's exact per-task counts for each
  threshold it was logged with and, in its schema metadata (``envloop_nb.job``), the
  job's k, reward scales and facts. The summarised job's numbers are then those of the
  original job, bit for bit (:func:`from_counts`).
* **any other run with SageMaker's evaluation metrics** (``eval/reward/*``, no
  artifact, no envloop_nb tag; or one of ours logged before the counts artifact
  existed): a *metrics-only* summarised job (:func:`from_metrics`) with no task at all.
  Its row keeps the run's metrics verbatim in ``platform_metrics`` (a non-finite value
  as null, JSON has none); its summary is the run's own aggregates
  (:func:`envloop_nb._metrics.summary.job_summary`), every per-task view refuses it.

The job id is, by default, ``<base>@mlflow-<first 8 characters of the run id>``: the
base is the original job id (tag ``envloop_nb.job_id``), else the run's name, else
``mlflow``. The same run loaded again gets the same id, so it replaces itself; two runs
of one job (other policy or threshold) stay apart.

Only :func:`read_run` talks to MLflow (imported there); the rest is pure.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

from ..._errors import LoadError
from ..tables.summary import COUNT_COLUMNS, Summarised

__all__ = [
    "COUNTS_ARTIFACT",
    "default_job_id",
    "from_counts",
    "from_metrics",
    "mlflow_client",
    "read_run",
    "read_run_steps",
    "safe_uri",
    "step_metrics",
]  # fmt: skip

#: The artifact ``job.log_mlflow`` writes with the exact per-task counts.
COUNTS_ARTIFACT = "task_counts.parquet"
_META = b"envloop_nb.job"
_TIMES = ("created_at", "finished_at")
#: MLflow's run status → a job status.
_STATUS = {"FINISHED": "completed", "RUNNING": "running", "SCHEDULED": "pending",
           "FAILED": "failed", "KILLED": "cancelled"}  # fmt: skip
_PARAM_FACTS = ("model", "dataset_name", "dataset_version", "dataset_revision")
_MLFLOW_IMPORT_WARNING = "The ``noload`` loader strategy is deprecated"


def mlflow_client(tracking_uri: str | None, what: str) -> tuple[str, Any]:
    """The tracking URI (MLflow's default when None) and an ``MlflowClient`` on it.

    MLflow is imported here only; a missing MLflow is an ``ImportError`` saying what
    to install (``what`` needs it). The one deprecation warning MLflow's own SQLite store
    raises on import is silenced.
    """
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=_MLFLOW_IMPORT_WARNING, category=DeprecationWarning
            )
            import mlflow

            uri = tracking_uri if tracking_uri is not None else mlflow.get_tracking_uri()
            return str(uri), mlflow.MlflowClient(tracking_uri=uri)
    except ImportError as e:
        raise ImportError(f"{what} needs MLflow 3: pip install 'envloop_nb[mlflow]'") from e


def safe_uri(uri: str) -> str:
    """A tracking URI without credentials: no user or password, no query, no fragment.

    Examples
    --------
    >>> safe_uri("https://me:secret@mlflow.example.com/api?token=x")
    'https://mlflow.example.com/api'
    >>> safe_uri("sqlite:////tmp/mlflow.db")
    'sqlite:////tmp/mlflow.db'
    """
    bare = uri.split("#", 1)[0].split("?", 1)[0]
    netloc = urlsplit(bare).netloc
    if "@" not in netloc:
        return bare
    return bare.replace(netloc, netloc.rpartition("@")[2], 1)


def default_job_id(run_id: str, base: str | None) -> str:
    """``<base>@mlflow-<run id[:8]>`` (see the module docstring).

    Examples
    --------
    >>> default_job_id("0123456789abcdef", "job_base"), default_job_id("0123456789", None)
    ('job_base@mlflow-01234567', 'mlflow@mlflow-01234567')
    """
    return f"{base or 'mlflow'}@mlflow-{run_id[:8]}"


def _time(value: Any) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if isinstance(value, str) else None


def from_counts(table: pa.Table, *, job_id: str, where: str) -> Summarised:
    """The summarised job of a ``task_counts.parquet`` table (pure).

    Raises
    ------
    LoadError
        The table lacks its metadata or a column.
    """
    raw = (table.schema.metadata or {}).get(_META)
    if raw is None:
        raise LoadError(where, COUNTS_ARTIFACT, "no envloop_nb.job metadata in its schema")
    meta = json.loads(raw)
    missing = [c for c in ("task", "position", "tags", "threshold", *COUNT_COLUMNS)
               if c not in table.column_names]  # fmt: skip
    if missing:
        raise LoadError(where, COUNTS_ARTIFACT, f"columns {missing} are missing")
    thresholds = [None if t is None else float(t) for t in meta["thresholds"]]
    import pyarrow.compute as pc

    first = table.filter(pc.is_null(table.column("threshold")))
    tasks = first.select(["task", "position", "tags"] + (["digest"] if "digest" in
                         table.column_names else []))  # fmt: skip
    facts: dict[str, Any] = dict(meta.get("facts") or {})
    for name in _TIMES:
        facts[name] = _time(facts.get(name))
    facts["source_path"] = where
    return Summarised(
        job_id=job_id,
        k=int(meta["k"]),
        tasks=tasks,
        counts=table.select(["task", "threshold", *COUNT_COLUMNS]),
        thresholds=thresholds,
        reward_stats=meta.get("reward_stats") or {"max_abs": None, "max_sq": None},
        engine="mlflow",
        where=where,
        facts=facts,
    )


def _finite(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def from_metrics(
    metrics: Mapping[str, Any],
    params: Mapping[str, str],
    *,
    job_id: str,
    where: str,
    status: str | None = None,
    created_at: dt.datetime | None = None,
    finished_at: dt.datetime | None = None,
) -> Summarised:
    """The *metrics-only* summarised job of a run's SageMaker metrics (pure).

    ``k`` is ``eval/reward/rollouts_per_prompt``; the thresholds answered are None and
    ``eval/reward/success_threshold`` when the run states one.

    Raises
    ------
    LoadError
        ``eval/reward/rollouts_per_prompt`` or ``eval/reward/num_prompts`` is missing or
        not a whole number >= 1 / >= 0: not an evaluation run.
    """
    k = _finite(metrics.get("eval/reward/rollouts_per_prompt"))
    prompts = _finite(metrics.get("eval/reward/num_prompts"))
    if (
        k is None
        or k < 1
        or k != int(k)
        or prompts is None
        or prompts < 0
        or prompts != int(prompts)
    ):
        raise LoadError(
            where,
            "metrics",
            "not an evaluation run: eval/reward/rollouts_per_prompt (>= 1) and "
            "eval/reward/num_prompts (>= 0) must be whole numbers "
            f"(got {metrics.get('eval/reward/rollouts_per_prompt')!r}, "
            f"{metrics.get('eval/reward/num_prompts')!r}), and no {COUNTS_ARTIFACT}",
        )
    threshold = _finite(metrics.get("eval/reward/success_threshold"))
    tasks = pa.table({"task": pa.array([], pa.string()), "position": pa.array([], pa.int32()),
                      "tags": pa.array([], pa.string())})  # fmt: skip
    counts = pa.table(
        {"task": pa.array([], pa.string()), "threshold": pa.array([], pa.float64()),
         **{c: pa.array([], pa.float64() if c.startswith("reward") else pa.int32())
            for c in COUNT_COLUMNS}}
    )  # fmt: skip
    facts: dict[str, Any] = {p: params[p] for p in _PARAM_FACTS if params.get(p)}
    facts.update(
        status=status,
        created_at=created_at,
        finished_at=finished_at,
        source_path=where,
        platform_metrics=json.dumps({name: _finite(v) for name, v in sorted(metrics.items())}),
    )
    return Summarised(
        job_id=job_id,
        k=int(k),
        tasks=tasks,
        counts=counts,
        thresholds=[None] if threshold is None else list(dict.fromkeys([None, threshold])),
        reward_stats={"max_abs": None, "max_sq": None},
        engine="mlflow",
        where=where,
        facts=facts,
        metrics_only=True,
    )


def _ms(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    return dt.datetime.fromtimestamp(int(value) / 1000, tz=dt.UTC)


def read_run(run: Any, *, tracking_uri: str | None = None, job_id: str | None = None) -> Summarised:
    """Fetch ``run`` (a run id or an ``mlflow.entities.Run``) and build its summarised
    job; the counts artifact is downloaded into a temporary folder, removed after.

    Raises
    ------
    ImportError
        MLflow is not installed.
    LoadError
        The run is neither ours (no counts artifact) nor an evaluation run.
    """
    uri, client = mlflow_client(tracking_uri, "reading an MLflow run")
    if isinstance(run, str):
        run = client.get_run(run)
    run_id = str(run.info.run_id)
    where = f"MLflow run {run_id} ({safe_uri(str(uri))})"
    tags = dict(run.data.tags)
    base = tags.get("envloop_nb.job_id") or run.info.run_name or None
    jid = job_id or default_job_id(run_id, base)
    names = {a.path for a in client.list_artifacts(run_id)}
    if COUNTS_ARTIFACT in names:
        import pyarrow.parquet as pq

        with tempfile.TemporaryDirectory(prefix="envloop_nb-mlflow-") as tmp:
            path = client.download_artifacts(run_id, COUNTS_ARTIFACT, tmp)
            table = pq.read_table(Path(path))
        return from_counts(table, job_id=jid, where=where)
    return from_metrics(
        dict(run.data.metrics),
        dict(run.data.params),
        job_id=jid,
        where=where,
        status=_STATUS.get(str(run.info.status)),
        created_at=_ms(run.info.start_time),
        finished_at=_ms(run.info.end_time),
    )


#: Metrics that describe the evaluation's set-up, not a result: carried forward to later
#: steps of a metric history when logged once (every other metric counts only at its step).
_SETUP = ("eval/reward/num_prompts", "eval/reward/rollouts_per_prompt",
          "eval/reward/success_threshold")  # fmt: skip


def step_metrics(
    history: Mapping[str, list[tuple[int, int, float]]],
) -> dict[int, dict[str, float]]:
    """Per step of ``eval/reward/mean``'s history, the run's metrics at that step (pure).

    ``history`` maps a metric to its ``(step, timestamp, value)`` points. At a step a
    metric's value is its last one logged at that step; the set-up metrics
    (:data:`_SETUP`: prompts, rollouts, threshold) also carry forward from the latest
    earlier step they were logged at. A result metric absent at a step is absent there.

    Examples
    --------
    >>> steps = step_metrics({"eval/reward/mean": [(0, 1, 0.2), (100, 2, 0.3)],
    ...                       "eval/reward/num_prompts": [(0, 1, 50)]})
    >>> steps[100]
    {'eval/reward/mean': 0.3, 'eval/reward/num_prompts': 50}
    """
    points = {key: sorted(values) for key, values in history.items()}
    steps = sorted({step for step, _, _ in points.get("eval/reward/mean", [])})
    out: dict[int, dict[str, float]] = {}
    for step in steps:
        metrics: dict[str, float] = {}
        for key, values in points.items():
            here = [v for s, _, v in values if s == step]
            if here:
                metrics[key] = here[-1]
            elif key in _SETUP:
                before = [v for s, _, v in values if s < step]
                if before:
                    metrics[key] = before[-1]
        out[step] = metrics
    return out


def read_run_steps(run: Any, *, tracking_uri: str | None = None) -> list[Summarised]:
    """One *metrics-only* job per step of a run whose metric history has a step axis (as
    SageMaker logs ``eval/*`` during training): the run's metrics at each step of
    ``eval/reward/mean`` (:func:`step_metrics`), job id ``<run name>@step<N>``, labelled
    ``agent_run = <run name>``, ``agent_round = <N>`` so that ``ws.run(<run name>)``
    follows them.

    Raises
    ------
    ImportError
        MLflow is not installed.
    LoadError
        The run has no ``eval/reward/mean`` history, or a step is not an evaluation
        (:func:`from_metrics`).
    """
    uri, client = mlflow_client(tracking_uri, "reading an MLflow run")
    if isinstance(run, str):
        run = client.get_run(run)
    run_id = str(run.info.run_id)
    where = f"MLflow run {run_id} ({safe_uri(str(uri))})"
    history = {
        key: [(int(m.step), int(m.timestamp), float(m.value))
              for m in client.get_metric_history(run_id, key)]
        for key in run.data.metrics
    }  # fmt: skip
    per_step = step_metrics(history)
    if not per_step:
        raise LoadError(where, "metrics", "no eval/reward/mean history: the run has no step axis")
    name = str(run.info.run_name or run_id)
    out = []
    for step, metrics in per_step.items():
        one = from_metrics(
            metrics,
            dict(run.data.params),
            job_id=f"{name}@step{step}",
            where=f"{where}, step {step}",
            status=_STATUS.get(str(run.info.status)),
            created_at=_ms(run.info.start_time),
            finished_at=_ms(run.info.end_time),
        )
        labels = json.dumps({"agent_run": name, "agent_round": str(step)})
        out.append(dataclasses.replace(one, facts={**one.facts, "labels": labels}))
    return out
