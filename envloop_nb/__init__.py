"""envloop_nb: Jupyter-native analysis of model and agent evaluation results.

>>> import envloop_nb as enb
>>> ws = enb.open()
>>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> print(job.summary())
score 60.0% · 5/6 attempts scored · 2/3 members complete
"""

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
from ._errors import EnvloopError, LoadError, LoadWarning
from ._experiment import Experiment
from ._experiments.references import ReferenceFillResult
from ._experiments.runner import EvalCase, Evaluator
from ._experiments.stats import ExperimentSummary
from ._export.experiment_xlsx import ExperimentExport
from ._export.job_xlsx import ExportResult, export_xlsx
from ._job import Job
from ._metrics.diagnosis import DiagnosisOptions, Finding, Findings
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
from ._ui.panel import JobPanel, panel
from ._workspace import Workspace, open

__all__ = [
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
    "Workspace",
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
