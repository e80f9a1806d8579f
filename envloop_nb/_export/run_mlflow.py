"""A training run as ONE MLflow run with a step axis (``run.log_mlflow``).

:func:`run_metrics` is pure: from the run's curve (``run.curve()`` for each metric) it
builds one metric history per name, one point per checkpoint at the checkpoint's step:

==================================== ===================================================
metric                               value at each step (``run.curve(metric=...)``)
==================================== ===================================================
``eval/{metric}``                    the estimate (``score``: ``job.summary().score``
                                     bit for bit; likewise ``pass``)
``eval/{metric}_low`` / ``_high``    its interval (task bootstrap, or the source's stderr)
``eval/coverage``                    scored / total attempts of the step
``eval/coverage_drop``               1 at a step whose coverage dropped, else 0
``eval/checkpoint``                  the checkpoint's own step value (logged only when
                                     a step is not a whole number: the axis is then the
                                     step's position, 0, 1, 2…)
==================================== ===================================================

An undefined value (no scored attempt, no interval) is not logged at that step — never 0.
Params: the run's name, steps, where the steps came from, policy, threshold, solved_at,
confidence, resamples, seed, the best checkpoint and the minimum detectable effect (as
text). Tags: ``envloop_nb.kind`` = ``run``, ``envloop_nb.run``, ``envloop_nb.version``,
``envloop_nb.not_comparable`` (the guard's mark, empty when comparable). Artifacts: the
run's workbook (``run.xlsx``) and ``curve.parquet`` / ``tests.parquet``.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError
from .._loaders.mlflow.run import mlflow_client
from .._runs import curve as _curve
from .._runs import tests as _tests
from .._runs.assemble import RunState, mark
from .mlflow_run import _experiment_id, _sqlite_artifacts, _version
from .run_export import export_run_xlsx, mde_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunHistory", "log_run", "run_metrics"]


@dataclass(frozen=True)
class RunHistory:
    """What the MLflow run holds: ``points`` as ``(name, value, step)`` in step order."""

    points: tuple[tuple[str, float, int], ...]
    params: dict[str, str]
    tags: dict[str, str]


def _defined(value: Any) -> float | None:
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def run_metrics(curves: dict[str, pd.DataFrame]) -> list[tuple[str, float, int]]:
    """The metric points of each curve (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> c = pd.DataFrame({"step": [100, 200], "estimate": [0.5, None], "low": [0.4, None],
    ...                   "high": [0.6, None], "coverage": [1.0, 0.0], "coverage_drop": [False, True]})
    >>> run_metrics({"score": c})  # doctest: +NORMALIZE_WHITESPACE
    [('eval/score', 0.5, 100), ('eval/score_low', 0.4, 100), ('eval/score_high', 0.6, 100),
     ('eval/coverage', 1.0, 100), ('eval/coverage_drop', 0.0, 100),
     ('eval/coverage', 0.0, 200), ('eval/coverage_drop', 1.0, 200)]
    """
    points: list[tuple[str, float, int]] = []
    first = True
    for metric, frame in curves.items():
        steps = list(frame["step"])
        whole = all(float(s).is_integer() for s in steps)
        for i, row in enumerate(frame.to_dict("records")):
            at = int(row["step"]) if whole else i
            for name, col in (
                (metric, "estimate"),
                (f"{metric}_low", "low"),
                (f"{metric}_high", "high"),
            ):
                v = _defined(row.get(col))
                if v is not None:
                    points.append((f"eval/{name}", v, at))
            if first:
                cov = _defined(row.get("coverage"))
                if cov is not None:
                    points.append(("eval/coverage", cov, at))
                points.append(("eval/coverage_drop", 1.0 if row.get("coverage_drop") else 0.0, at))
                if not whole:
                    points.append(("eval/checkpoint", float(row["step"]), at))
        first = False
    return points


def run_history(state: RunState, *, metrics: Sequence[str] = ("score", "pass")) -> RunHistory:
    """The points, params and tags of the run (see the module docstring)."""
    curves = {m: _curve.curve(state, metric=m) for m in metrics}
    try:
        best = str(_tests.best(state, metric=metrics[0]))
    except (EnvloopError, ValueError) as e:
        best = f"none: {e}"
    params = {
        "run": state.name or "", "steps": str(len(state.steps)), "step_from": state.step_from,
        "policy": state.policy, "threshold": "none" if state.threshold is None else f"{state.threshold:g}",
        "solved_at": f"{state.solved_at:g}", "confidence": f"{state.confidence:g}",
        "resamples": str(state.resamples), "seed": str(state.seed), "best": best[:6000],
        "mde": mde_text(state)[0][:6000], "envloop_nb_version": _version(),
    }  # fmt: skip
    tags = {
        "envloop_nb.kind": "run", "envloop_nb.run": state.name or "",
        "envloop_nb.version": _version(), "envloop_nb.not_comparable": mark(state)[:5000],
    }  # fmt: skip
    return RunHistory(points=tuple(run_metrics(curves)), params=params, tags=tags)


def log_run(
    state: RunState,
    *,
    experiment: str,
    run_name: str | None = None,
    tracking_uri: str | None = None,
    artifact_location: str | None = None,
    metrics: Sequence[str] = ("score", "pass"),
) -> str:
    """Log the run as one MLflow run with a step axis; returns its run id (FINISHED, or
    FAILED when MLflow refused part of it: the error is raised). ``experiment`` is created
    when missing; ``tracking_uri`` / ``artifact_location`` as in
    :func:`envloop_nb._export.mlflow_run.log_job_run`."""
    if not isinstance(experiment, str) or not experiment.strip():
        raise ValueError(f"experiment must be a non-empty name, got {experiment!r}")
    if not metrics:
        raise ValueError("metrics must name at least one metric, e.g. ('score',)")
    content = run_history(state, metrics=metrics)
    uri, client = mlflow_client(tracking_uri, "logging a run to MLflow")
    from mlflow.entities import Metric, Param, RunTag

    with tempfile.TemporaryDirectory(prefix="envloop_nb-mlflow-") as tmp:
        workbook = export_run_xlsx(state, Path(tmp) / "run.xlsx", metric=metrics[0])
        curve_file = Path(tmp) / "curve.parquet"
        _curve.curve(state, metric=metrics[0]).to_parquet(curve_file, index=False)
        tests_file = Path(tmp) / "tests.parquet"
        _tests.tests(state).to_parquet(tests_file, index=False)
        location = artifact_location if artifact_location is not None else _sqlite_artifacts(uri)
        experiment_id = _experiment_id(client, experiment, location)
        run = client.create_run(experiment_id, run_name=run_name or state.name)
        run_id = str(run.info.run_id)
        try:
            now = int(time.time() * 1000)
            points = [Metric(n, v, now, s) for n, v, s in content.points]
            for i in range(0, max(len(points), 1), 1000):  # MLflow takes 1000 per batch
                client.log_batch(
                    run_id,
                    metrics=points[i : i + 1000],
                    params=[Param(k, v) for k, v in content.params.items()] if i == 0 else [],
                    tags=[RunTag(k, v) for k, v in content.tags.items()] if i == 0 else [],
                )
            for f in (workbook, curve_file, tests_file):
                client.log_artifact(run_id, str(f))
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")
    return run_id
