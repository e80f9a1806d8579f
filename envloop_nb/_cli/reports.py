"""``report PATH… -o OUT``: the standalone report a set of paths makes (see
:mod:`envloop_nb._cli`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import EnvloopError
from .regression import load

if TYPE_CHECKING:
    from .._export.html_report import HtmlReport
    from .._job import Job
    from .._types import Policy
    from .._workspace import Workspace

__all__ = ["REPORTS", "ReportWriter", "report", "report_kind"]

ReportWriter = Callable[["Workspace", "list[Job]", Path, "Policy", "float | None"], "HtmlReport"]


def _job_report(
    ws: Workspace, jobs: list[Job], out: Path, policy: Policy, threshold: float | None
) -> HtmlReport:
    return jobs[0].export_html(out, policy=policy, threshold=threshold)


def _comparison_report(
    ws: Workspace, jobs: list[Job], out: Path, policy: Policy, threshold: float | None
) -> HtmlReport:
    from .._comparison import Comparison

    return Comparison(ws, jobs, jobs[0], policy=policy, threshold=threshold).export_html(out)


#: Which report a set of jobs makes: the kind (:func:`report_kind`) -> its writer. A run
#: report (a training run's checkpoints) registers here, with its case in report_kind.
def _run_report(
    ws: Workspace, jobs: list[Job], out: Path, policy: Policy, threshold: float | None
) -> HtmlReport:
    names = {(j.info.get("labels") or {}).get("agent_run") for j in jobs}
    name = names.pop() if len(names) == 1 else None
    if isinstance(name, str):  # one labelled run, all of it: by its name (and its title)
        return ws.run(name, policy=policy, threshold=threshold).export_html(out)
    return ws.run(jobs, policy=policy, threshold=threshold).export_html(out)


REPORTS: dict[str, ReportWriter] = {
    "job": _job_report,
    "comparison": _comparison_report,
    "run": _run_report,
}


def report_kind(n_paths: int, *, run: bool = False) -> str:
    """``"job"`` for one path, ``"comparison"`` for 2-5; more is refused; ``"run"`` for
    any number of paths with ``run`` (a run's checkpoints: the run counts its jobs).

    Examples
    --------
    >>> report_kind(1), report_kind(3), report_kind(1, run=True)
    ('job', 'comparison', 'run')
    """
    if run:
        if n_paths < 1:
            raise EnvloopError("a run report takes the run's checkpoints: give at least one path")
        return "run"
    if n_paths == 1:
        return "job"
    if 2 <= n_paths <= 5:
        return "comparison"
    raise EnvloopError(
        f"a report takes one job or 2-5 jobs to compare, got {n_paths} paths"
        " (the comparison shows at most five side by side)"
    )


def report(
    paths: Sequence[str],
    out: str | Path,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    fmt: str | None = None,
    run: bool = False,
) -> HtmlReport:
    """Load ``paths`` into a temporary workspace and write the report they make to ``out``.

    Two sources with the same job id are both kept: the later one gets ``<id>-<n>``
    (``n`` its position on the command line). With ``run``, a folder is every job it
    holds (``ws.load_all``) and all the jobs are one training run's checkpoints.
    """
    kind = report_kind(len(paths), run=run)
    from .._workspace import open as open_workspace

    ws = open_workspace()
    try:
        jobs: list[Job] = []
        if run:
            for path in paths:
                if Path(path).is_dir():
                    jobs.extend(ws.load_all(path))
                else:
                    jobs.append(load(ws, path, job_id=None, fmt=fmt))
            return REPORTS[kind](ws, jobs, Path(out), policy, threshold)
        for n, path in enumerate(paths, start=1):
            job = load(ws, path, job_id=None, fmt=fmt)
            clash = [i for i, j in enumerate(jobs) if j.id == job.id]
            if clash:  # the load replaced an earlier source's job: keep both
                job = load(ws, path, job_id=f"{job.id}-{n}", fmt=fmt)
                jobs[clash[0]] = load(ws, paths[clash[0]], job_id=jobs[clash[0]].id, fmt=fmt)
            jobs.append(job)
        return REPORTS[kind](ws, jobs, Path(out), policy, threshold)
    finally:
        ws.close()
