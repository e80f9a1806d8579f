"""A training run: dozens to hundreds of checkpoints of one eval, followed over training.

``ws.run("rl-0412")`` gathers the jobs labelled ``agent_run = "rl-0412"`` ordered by their
``agent_round``; ``ws.run([jobs...], step=...)`` takes any jobs with a step (a label, a
number in the name such as ``step143000``, or a list). The :class:`Run` binds the
functions of ``envloop_nb._runs`` (see each module's docstring for the exact rules):

* ``curve`` / ``noise_band`` — the metric per step (per subset, tag or dimension with
  ``by``) with its interval (task bootstrap, or the source's stderr for aggregates-only
  jobs), coverage and coverage drops; the band the step-to-step change stays in when
  nothing changed (per group with ``by``);
* ``tests`` / ``best`` / ``mde`` — paired tests between steps with Holm and
  Benjamini–Hochberg adjustment, the best checkpoint with the steps indistinguishable from
  it, the minimum detectable effect; with ``by`` per group (results-only lm-eval files,
  one number per task: unpaired, from the files' stderr);
* ``task_matrix`` / ``task_states`` / ``learned`` / ``forgotten`` / ``flaky`` /
  ``matrix_blocks`` — tasks over training;
* ``compare(a, b)`` — two steps as the existing :class:`envloop_nb.Comparison`.

The numbers are each job's own: a step's score is ``job.summary().score`` bit for bit.
A run is a snapshot of its jobs' counts, memoized on first use (as a comparison is): after
reloading or removing one of its jobs, call ``ws.run`` again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

from ._errors import EnvloopError
from ._runs import assemble as _assemble
from ._runs import by_group as _by_group
from ._runs import curve as _curve
from ._runs import tasks as _tasks
from ._runs import tests as _tests
from ._runs.assemble import RunState, Step
from ._types import Policy

if TYPE_CHECKING:
    import os
    from pathlib import Path

    import pandas as pd

    from ._compare.guard import Difference
    from ._comparison import Comparison, JobSource
    from ._export.html_report import HtmlReport
    from ._job import Job
    from ._metrics.multitest import Adjust
    from ._runs.tasks import Value
    from ._runs.tests import BestCheckpoint, DetectableEffect
    from ._ui.run_panel import RunPanel

__all__ = ["Run", "run"]


class Run:
    """Checkpoints of one eval over training (see the module docstring).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> _ = ws.load_all("sample_data/training_run")
    >>> run = ws.run("rl-0412")
    >>> run
    <envloop_nb.Run rl-0412 · 10 steps (1 – 10) by agent_round>
    >>> bool(run.curve()["estimate"].iloc[5] == ws.job(run.job_ids[5]).summary().score)
    True
    """

    def __init__(self, workspace: JobSource, state: RunState) -> None:
        self.workspace = workspace
        self.state = state

    def __repr__(self) -> str:
        s = self.state
        name = s.name or "run"
        first, last = _assemble.step_text(s.steps[0]), _assemble.step_text(s.steps[-1])
        by = "agent_round" if s.step_from == f"label {_assemble.STEP_LABEL}" else s.step_from
        return f"<envloop_nb.Run {name} · {len(s.steps)} steps ({first} – {last}) by {by}>"

    @property
    def name(self) -> str | None:
        """The run's name (its ``agent_run`` label), or None for jobs given as a list."""
        return self.state.name

    @property
    def steps(self) -> list[Step]:
        """The steps, in order."""
        return list(self.state.steps)

    @property
    def job_ids(self) -> list[str]:
        """The jobs' ids, in step order."""
        return list(self.state.job_ids)

    @property
    def jobs(self) -> list[Job]:
        """The jobs, in step order."""
        return [self.workspace.job(j) for j in self.state.job_ids]

    def job(self, step: Step) -> Job:
        """The job at ``step``."""
        return self.workspace.job(self.state.job_ids[_assemble.step_index(self.state, step)])

    @property
    def differences(self) -> list[Difference]:
        """The comparison guard's findings over all the jobs (blocking ones first)."""
        return list(self.state.differences)

    @property
    def mark(self) -> str:
        """The mark every view of a run with blocking differences carries ('' if none)."""
        return _assemble.mark(self.state)

    # -- the curve ---------------------------------------------------------------
    def curve(
        self, *, metric: str = "score", by: str | None = None, coverage_tolerance: float = 0.01
    ) -> pd.DataFrame:
        """The metric per step (per group with ``by="subset"`` / ``"tag:<key>"``, per
        dimension with ``by="dimension"``) with its interval and coverage: see
        :func:`envloop_nb._runs.curve.curve`.

        ``metric``: ``"score"``, ``"pass"``, ``"pass@k"``, ``"pass^k"`` (the summary's) or
        ``"pass@<j>"`` / ``"pass^<j>"`` (the unbiased estimates of ``job.curve()``).
        """
        return _curve.curve(self.state, metric=metric, by=by, coverage_tolerance=coverage_tolerance)

    def noise_band(self, *, metric: str = "score", by: str | None = None) -> pd.DataFrame:
        """What the step-to-step change looks like when nothing changed (per step; per group
        and step with ``by`` as in :meth:`curve`): see
        :func:`envloop_nb._runs.curve.noise_band`."""
        return _curve.noise_band(self.state, metric=metric, by=by)

    # -- which changes are real ------------------------------------------------------
    def tests(
        self,
        *,
        baseline: Step | None = None,
        adjacent: bool = True,
        against_baseline: bool = True,
        adjust: Adjust = "holm",
        alpha: float = 0.05,
        by: str | None = None,
    ) -> pd.DataFrame:
        """Paired tests of adjacent steps and of each step against ``baseline`` (default:
        the first), adjusted across all of them; with ``by`` (``"subset"`` /
        ``"tag:<key>"``) per group — for results-only files (one number per lm-eval task)
        unpaired, from the files' stderr: see :func:`envloop_nb._runs.tests.tests`."""
        return _tests.tests(
            self.state, baseline=baseline, adjacent=adjacent,
            against_baseline=against_baseline, adjust=adjust, alpha=alpha, by=by,
        )  # fmt: skip

    @overload
    def best(
        self,
        *,
        metric: str = "score",
        alpha: float = 0.05,
        skip_coverage_drops: bool = True,
        by: None = None,
    ) -> BestCheckpoint: ...
    @overload
    def best(
        self,
        *,
        metric: str = "score",
        alpha: float = 0.05,
        skip_coverage_drops: bool = True,
        by: str,
    ) -> pd.DataFrame: ...
    def best(
        self,
        *,
        metric: str = "score",
        alpha: float = 0.05,
        skip_coverage_drops: bool = True,
        by: str | None = None,
    ) -> BestCheckpoint | pd.DataFrame:
        """The best checkpoint with its interval and the steps indistinguishable from it:
        see :func:`envloop_nb._runs.tests.best`. With ``by`` (``"subset"`` /
        ``"tag:<key>"``): one row per group, its score's best step (the lowest for a
        lower-is-better metric such as ``ppl``): see :func:`envloop_nb._runs.by_group.best_by`."""
        if by is not None:
            if metric != "score":
                raise ValueError(f"best(by=...) compares each group's score, not {metric!r}")
            return _by_group.best_by(
                self.state, by=by, alpha=alpha, skip_coverage_drops=skip_coverage_drops
            )
        return _tests.best(
            self.state, metric=metric, alpha=alpha, skip_coverage_drops=skip_coverage_drops
        )

    @overload
    def mde(
        self,
        *,
        alpha: float = 0.05,
        power: float = 0.8,
        n_tasks: int | None = None,
        k: int | None = None,
        by: None = None,
    ) -> DetectableEffect: ...
    @overload
    def mde(
        self,
        *,
        alpha: float = 0.05,
        power: float = 0.8,
        n_tasks: int | None = None,
        k: int | None = None,
        by: str,
    ) -> pd.DataFrame: ...
    def mde(
        self,
        *,
        alpha: float = 0.05,
        power: float = 0.8,
        n_tasks: int | None = None,
        k: int | None = None,
        by: str | None = None,
    ) -> DetectableEffect | pd.DataFrame:
        """The minimum detectable effect at this run's tasks × attempts (or at ``n_tasks``
        × ``k``): see :func:`envloop_nb._runs.tests.mde`. With ``by``: one row per group,
        in the group's own units: see :func:`envloop_nb._runs.by_group.mde_by`."""
        if by is not None:
            if n_tasks is not None or k is not None:
                raise ValueError("mde(by=...) is at each group's own tasks: no n_tasks or k")
            return _by_group.mde_by(self.state, by=by, alpha=alpha, power=power)
        return _tests.mde(self.state, alpha=alpha, power=power, n_tasks=n_tasks, k=k)

    # -- tasks over training -----------------------------------------------------------
    def task_matrix(self, *, value: Value = "pass_rate") -> pd.DataFrame:
        """Tasks × steps, rows ordered so the structure shows: see
        :func:`envloop_nb._runs.tasks.task_matrix`."""
        return _tasks.task_matrix(self.state, value=value)

    def matrix_blocks(
        self, *, max_tasks: int = 200, max_steps: int = 100, value: Value = "pass_rate"
    ) -> pd.DataFrame:
        """The matrix reduced to at most ``max_tasks × max_steps`` blocks (for a chart):
        see :func:`envloop_nb._runs.tasks.aggregate`."""
        return _tasks.aggregate(self.state, max_tasks=max_tasks, max_steps=max_steps, value=value)

    def task_states(self, *, stable: int = 2, flaky_flips: int = 3) -> pd.DataFrame:
        """Per task: first step solved stably, learned, forgotten, flips: see
        :func:`envloop_nb._runs.tasks.task_states`."""
        return _tasks.task_states(self.state, stable=stable, flaky_flips=flaky_flips)

    def learned(self, *, stable: int = 2) -> pd.DataFrame:
        """The tasks learned during the run, by step."""
        return _tasks.learned(self.state, stable=stable)

    def forgotten(self, *, stable: int = 2) -> pd.DataFrame:
        """The tasks failed after ``stable`` or more consecutive solved steps, by step."""
        return _tasks.forgotten(self.state, stable=stable)

    def flaky(self, *, flips: int = 3) -> pd.DataFrame:
        """The tasks whose solved state changed at least ``flips`` times."""
        return _tasks.flaky(self.state, flips=flips)

    def attempts(self, task: str, step: Step) -> pd.DataFrame:
        """The attempts behind one cell of the matrix: ``task`` at ``step``."""
        return _tasks.attempts_at(self.state, task, step)

    # -- two steps side by side ----------------------------------------------------------
    def compare(self, step_a: Step, step_b: Step) -> Comparison:
        """Two steps as a :class:`envloop_nb.Comparison` (``step_a`` the baseline), with
        the run's policy, threshold, solved_at and seed."""
        from ._comparison import Comparison, compare

        s = self.state
        a = s.job_ids[_assemble.step_index(s, step_a)]
        b = s.job_ids[_assemble.step_index(s, step_b)]
        if a == b:
            raise EnvloopError(f"step {step_a!r} twice: compare two different steps")
        out = compare(
            self.workspace, [a, b], baseline=a, policy=s.policy, threshold=s.threshold,
            solved_at=s.solved_at, seed=s.seed,
        )  # fmt: skip
        assert isinstance(out, Comparison)
        return out

    # -- panel, report, workbook, MLflow (issue 36 item 5) ----------------------------
    def panel(self) -> RunPanel:
        """The run in one panel: curve with bands and significance marks, the changes beyond
        noise, tasks learned / forgotten / flaky, the tasks × steps matrix (click a block, or
        pick a task and a step: its attempts and transcript), two steps → the comparison
        panel. In a notebook each step's number on the curve shows first; its bands, the
        matrix, the headline, the tests' marks and changes and the task lists right after
        the cell. See :mod:`envloop_nb._ui.run_panel`."""
        from ._ui.run_panel import RunPanel

        return RunPanel(self.state, compare=lambda a, b: self.compare(a, b).panel(), defer=True)

    def export_html(self, path: str | os.PathLike[str], *, metric: str = "score") -> HtmlReport:
        """Write the run's standalone HTML report (offline, one file): see
        :mod:`envloop_nb._export.run_export`."""
        from ._export.run_export import export_run_html

        return export_run_html(self.state, path, metric=metric)

    def export_xlsx(self, path: str | os.PathLike[str], *, metric: str = "score") -> Path:
        """Write the run's workbook (run facts, curve, noise band, tests, task states, task
        matrix): see :mod:`envloop_nb._export.run_export`."""
        from ._export.run_export import export_run_xlsx

        return export_run_xlsx(self.state, path, metric=metric)

    def log_mlflow(
        self,
        *,
        experiment: str,
        run_name: str | None = None,
        tracking_uri: str | None = None,
        artifact_location: str | None = None,
        metrics: Sequence[str] = ("score", "pass"),
    ) -> str:
        """Log the run as ONE MLflow run whose metrics have a step axis (``eval/score`` at
        every checkpoint's step, its interval, coverage); returns the run id. Every
        definition: :mod:`envloop_nb._export.run_mlflow`."""
        from ._export.run_mlflow import log_run

        return log_run(
            self.state, experiment=experiment, run_name=run_name, tracking_uri=tracking_uri,
            artifact_location=artifact_location, metrics=metrics,
        )  # fmt: skip


def run(
    ws: JobSource,
    name_or_jobs: str | Sequence[Job | str],
    *,
    step: str | Sequence[Step] | None = None,
    strict: bool = True,
    policy: Policy = "unknown",
    threshold: float | None = None,
    solved_at: float = 0.5,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Run:
    """A :class:`Run` of a workspace (see :meth:`envloop_nb.Workspace.run`)."""
    con = ws.con
    if isinstance(name_or_jobs, str):
        if step is not None:
            raise EnvloopError(
                f"run {name_or_jobs!r} takes its steps from the {_assemble.STEP_LABEL} label: "
                "step=... is for a list of jobs"
            )
        ids, steps = _assemble.named_jobs(con, name_or_jobs)
        name: str | None = name_or_jobs
        step_from = f"label {_assemble.STEP_LABEL}"
    else:
        ids = []
        for item in name_or_jobs:
            job_id = item if isinstance(item, str) else item.id
            if not isinstance(item, str) and item.workspace is not ws:
                raise EnvloopError(f"job {job_id!r} belongs to another workspace")
            ids.append(job_id)
        _assemble.check_count(ids)
        steps, step_from = _assemble.resolve_steps(con, ids, step)
        name = None
    state = _assemble.assemble(
        con, ids, steps, step_from=step_from, name=name, strict=strict, policy=policy,
        threshold=threshold, solved_at=solved_at, resamples=resamples, seed=seed,
        confidence=confidence,
    )  # fmt: skip
    return Run(ws, state)
