"""envloop_nb: Jupyter-native analysis of model and agent evaluation results.

>>> import envloop_nb as enb
>>> ws = enb.open()
>>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> print(job.summary())
score 60.0% · 5/6 attempts scored · 2/3 members complete
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on use
    from ._baseline import BaselineReport
    from ._buckets.apply import BucketResult
    from ._buckets.rules import Bucket, BucketRules
    from ._comparison import Comparison, Difference, LeaderboardSnapshot
    from ._datasets.dataset import Dataset
    from ._datasets.export import export_dataset
    from ._datasets.heldout import (
        HeldOutResult,
        HeldOutWarning,
        ReferenceFill,
        check_heldout,
        fill_references,
    )
    from ._errors import EnvloopError, LoadError, LoadWarning, WorkspaceError
    from ._experiment import Experiment
    from ._experiments.references import ReferenceFillResult
    from ._experiments.runner import EvalCase, Evaluator
    from ._experiments.stats import ExperimentSummary
    from ._export.experiment_xlsx import ExperimentExport
    from ._export.job_xlsx import ExportResult, export_xlsx
    from ._job import Job
    from ._metrics.diagnosis import DiagnosisOptions, Finding, Findings
    from ._metrics.inference import InferenceConfig
    from ._metrics.passk import pass_at_k, pass_hat_k
    from ._metrics.summary import JobSummary
    from ._metrics.uncertainty import (
        Interval,
        bootstrap_mean_ci,
        paired_bootstrap_diff,
        wilson_interval,
    )
    from ._options import Options, options
    from ._present.render import chart_widget
    from ._run import Run
    from ._ui.panel import JobPanel, panel
    from ._workspace import Workspace, open

#: Where each public name lives. ``import envloop_nb`` loads none of them (nor duckdb,
#: numpy, pyarrow, scipy …): a name's module is imported the first time it is used
#: (PEP 562), so the import costs milliseconds and each library loads where it is used.
_WHERE = {
    "BaselineReport": "._baseline",
    "Bucket": "._buckets.rules",
    "BucketResult": "._buckets.apply",
    "BucketRules": "._buckets.rules",
    "Comparison": "._comparison",
    "Dataset": "._datasets.dataset",
    "DiagnosisOptions": "._metrics.diagnosis",
    "Difference": "._comparison",
    "EnvloopError": "._errors",
    "EvalCase": "._experiments.runner",
    "Evaluator": "._experiments.runner",
    "Experiment": "._experiment",
    "ExperimentExport": "._export.experiment_xlsx",
    "ExperimentSummary": "._experiments.stats",
    "ExportResult": "._export.job_xlsx",
    "Finding": "._metrics.diagnosis",
    "Findings": "._metrics.diagnosis",
    "HeldOutResult": "._datasets.heldout",
    "HeldOutWarning": "._datasets.heldout",
    "InferenceConfig": "._metrics.inference",
    "Interval": "._metrics.uncertainty",
    "Job": "._job",
    "JobPanel": "._ui.panel",
    "JobSummary": "._metrics.summary",
    "LeaderboardSnapshot": "._comparison",
    "LoadError": "._errors",
    "LoadWarning": "._errors",
    "Options": "._options",
    "ReferenceFill": "._datasets.heldout",
    "ReferenceFillResult": "._experiments.references",
    "Run": "._run",
    "Workspace": "._workspace",
    "WorkspaceError": "._errors",
    "bootstrap_mean_ci": "._metrics.uncertainty",
    "chart_widget": "._present.render",
    "check_heldout": "._datasets.heldout",
    "export_dataset": "._datasets.export",
    "export_xlsx": "._export.job_xlsx",
    "fill_references": "._datasets.heldout",
    "open": "._workspace",
    "options": "._options",
    "paired_bootstrap_diff": "._metrics.uncertainty",
    "panel": "._ui.panel",
    "pass_at_k": "._metrics.passk",
    "pass_hat_k": "._metrics.passk",
    "wilson_interval": "._metrics.uncertainty",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'envloop_nb' has no attribute {name!r}")
    value = getattr(import_module(where, __name__), name)
    globals()[name] = value  # the next use is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BaselineReport",
    "Bucket",
    "BucketResult",
    "BucketRules",
    "Comparison",
    "Dataset",
    "DiagnosisOptions",
    "Difference",
    "EnvloopError",
    "EvalCase",
    "Evaluator",
    "Experiment",
    "ExperimentExport",
    "ExperimentSummary",
    "ExportResult",
    "Finding",
    "Findings",
    "HeldOutResult",
    "HeldOutWarning",
    "InferenceConfig",
    "Interval",
    "Job",
    "JobPanel",
    "JobSummary",
    "LeaderboardSnapshot",
    "LoadError",
    "LoadWarning",
    "Options",
    "ReferenceFill",
    "ReferenceFillResult",
    "Run",
    "Workspace",
    "WorkspaceError",
    "bootstrap_mean_ci",
    "chart_widget",
    "check_heldout",
    "export_dataset",
    "export_xlsx",
    "fill_references",
    "open",
    "options",
    "paired_bootstrap_diff",
    "panel",
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
]
