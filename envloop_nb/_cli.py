"""The command line: ``python -m envloop_nb gate`` and ``report`` (also ``envloop-nb``).

``gate BASELINE CANDIDATE``
    A regression gate for CI. Both sources are loaded with the toolkit's own loaders into
    a temporary in-memory workspace (as the jobs ``baseline`` and ``candidate``), the
    comparison guard runs (the same frozen work: dataset and revision, runner, tasks and
    digests, attempts per task), and the paired difference *candidate − baseline* of the
    metric is taken on the tasks both jobs requested and scored completely, with its
    ``1 − alpha`` task-bootstrap interval ``[lo, hi]`` — the comparison's own paired
    statistics (:meth:`envloop_nb.Comparison.paired`), never a second definition. With
    the margin ``δ = --max-drop``:

    - exit 0, *no regression*: ``lo ≥ −δ`` (the whole interval is above the margin);
    - exit 1, *regression*: the difference is below ``−δ`` and ``hi < 0`` (a drop beyond
      the margin and beyond noise);
    - exit 2, *cannot tell*, with the reason: anything else (the interval reaches below
      ``−δ`` without the drop being established: underpowered), and before any number:
      a source that does not load (a missing file too), jobs that are not comparable,
      either job's coverage (scored / requested attempts) below ``--min-coverage``, fewer
      than half of the tasks shared and completely scored (the comparison's own rule),
      fewer than ``--min-tasks`` such tasks, or a metric that is undefined (a pass rate
      of non-binary rewards without ``--threshold``).

    It prints one line (or, with ``--json``, one JSON object) and never says "no
    regression" when it cannot tell.

``report PATH… -o OUT``
    One path: that job's standalone HTML report (:meth:`envloop_nb.Job.export_html`);
    2–5 paths: the comparison report of those jobs, the first the baseline
    (:meth:`envloop_nb.Comparison.export_html`). Which report a set of paths makes is
    decided in one place, :data:`REPORTS` / :func:`report_kind`.

``report --run PATH… -o OUT``
    A training run's report (:meth:`envloop_nb.Run.export_html`): every checkpoint the
    paths hold (a folder: every job in it, as ``ws.load_all``), their steps from the
    ``agent_round`` label, else the lm-eval revision's step (``step143000``).

Exit codes: argparse's own usage errors exit 2 as well (an unknown option, a missing
argument), so a gate's 2 always means "not a pass".
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TextIO

from ._errors import EnvloopError

if TYPE_CHECKING:
    import duckdb

    from ._comparison import Comparison
    from ._export.html_report import HtmlReport
    from ._job import Job
    from ._types import Policy
    from ._workspace import Workspace

__all__ = [
    "EXIT_CANNOT_TELL",
    "EXIT_NO_REGRESSION",
    "EXIT_REGRESSION",
    "REPORTS",
    "Coverage",
    "GateResult",
    "decide",
    "gate",
    "main",
    "report",
    "report_kind",
    "run",
]

EXIT_NO_REGRESSION, EXIT_REGRESSION, EXIT_CANNOT_TELL = 0, 1, 2
VERDICTS = {
    EXIT_NO_REGRESSION: "NO REGRESSION",
    EXIT_REGRESSION: "REGRESSION",
    EXIT_CANNOT_TELL: "CANNOT TELL",
}
Metric = Literal["score", "pass"]
#: The ids the gate gives the two jobs (two copies of one export keep one id otherwise).
BASELINE_ID, CANDIDATE_ID = "baseline", "candidate"


@dataclass(frozen=True)
class Coverage:
    """One job's coverage: scored attempts of the requested ones (``job.summary()``)."""

    source: str
    scored: int
    total: int

    @property
    def share(self) -> float:
        return self.scored / self.total if self.total else 0.0

    def __str__(self) -> str:
        if not self.total:
            return "no attempts (aggregate numbers only)"
        return f"{self.scored:,}/{self.total:,} scored ({self.share * 100:.1f}%)"


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: exit code, reason, the difference and its interval, coverage.

    ``diff``/``low``/``high`` are candidate − baseline on ``tasks`` shared and completely
    scored tasks (of ``tasks_union``); None where nothing was computed. ``notes``: the
    guard's differences that do not break comparability (a verifier version, a job still
    running).
    """

    exit_code: int
    reason: str
    metric: Metric
    max_drop: float
    confidence: float
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    tasks: int | None = None
    tasks_union: int | None = None
    baseline: Coverage | None = None
    candidate: Coverage | None = None
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return VERDICTS[self.exit_code]

    def line(self) -> str:
        """The one line the gate prints."""
        parts = [f"{self.verdict}: {self.reason}"]
        if self.diff is not None and self.low is not None and self.high is not None:
            parts.append(
                f"{self.metric} candidate-baseline {self.diff:+.4f},"
                f" {self.confidence * 100:g}% CI [{self.low:+.4f}, {self.high:+.4f}],"
                f" margin -{self.max_drop:g}"
            )
        if self.tasks is not None and self.tasks_union is not None:
            parts.append(f"{self.tasks:,}/{self.tasks_union:,} tasks shared and complete")
        if self.baseline is not None and self.candidate is not None:
            parts.append(f"coverage baseline {self.baseline}, candidate {self.candidate}")
        parts += [f"note: {n}" for n in self.notes]
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (``--json``)."""
        out = asdict(self)
        out["verdict"] = self.verdict
        for side in ("baseline", "candidate"):
            cov = getattr(self, side)
            if cov is not None:
                out[side]["share"] = cov.share
        return out


def decide(*, diff: float, low: float, high: float, max_drop: float) -> tuple[int, str]:
    """The gate's rule on a difference and its interval: (exit code, reason).

    Examples
    --------
    >>> decide(diff=-0.01, low=-0.015, high=-0.005, max_drop=0.02)
    (0, 'the whole interval is above -0.02')
    >>> decide(diff=-0.1, low=-0.15, high=-0.05, max_drop=0.02)[0]
    1
    >>> decide(diff=-0.01, low=-0.08, high=0.06, max_drop=0.02)[0]
    2
    """
    if low >= -max_drop:
        return EXIT_NO_REGRESSION, f"the whole interval is above -{max_drop:g}"
    if diff < -max_drop and high < 0:
        return EXIT_REGRESSION, f"a drop beyond the margin -{max_drop:g} and beyond noise"
    return (
        EXIT_CANNOT_TELL,
        f"underpowered: the interval reaches below -{max_drop:g} but the drop is not"
        " established (more tasks or attempts would tell)",
    )


def _load(ws: Workspace, source: str, *, job_id: str | None, fmt: str | None) -> Job:
    """A job from ``source``, its loader's refusal as an :class:`EnvloopError`.

    A local Parquet file (or glob) is read in place (``copy=False``): the workspace lives
    only as long as the command, so copying its attempts would buy nothing.
    """
    options: dict[str, Any] = {}
    if _in_place(source, fmt):
        options["copy"] = False
    try:
        job: Job = ws.load(source, format=fmt, job_id=job_id, **options)
    except OSError as exc:
        raise EnvloopError(f"{source}: {exc.strerror or exc}") from exc
    return job


def _in_place(source: str, fmt: str | None) -> bool:
    """Whether :func:`_load` reads ``source`` in place: a local Parquet file or glob."""
    return fmt in (None, "table") and source.endswith(".parquet") and "://" not in source


def _in_place_file(source: str, fmt: str | None) -> bool:
    """Whether ``source`` is one local Parquet file that :func:`_load` reads in place."""
    return _in_place(source, fmt) and Path(source).is_file()


def _load_both(
    ws: Workspace, baseline: str, candidate: str, *, fmt: str | None
) -> list[Job | EnvloopError]:
    """The baseline's and the candidate's jobs (ids :data:`BASELINE_ID`,
    :data:`CANDIDATE_ID`), or the refusal of the first that did not load, in that order.

    Two local Parquet files are loaded at once, each on its own connection to the
    workspace (``ws.con.cursor()``) in its own thread: DuckDB runs the two loads' checking
    passes on two cores. Each is the load :func:`_load` makes (``ws.load(copy=False)``:
    every check, its own transaction); the ``attempts`` view is rebuilt once after both
    (:func:`~envloop_nb._store.attempt_sources.view_later`). Other sources load one
    after the other.
    """
    sources = ((baseline, BASELINE_ID), (candidate, CANDIDATE_ID))
    out: list[Job | EnvloopError] = []
    if not (_in_place_file(baseline, fmt) and _in_place_file(candidate, fmt)):
        for source, job_id in sources:
            try:
                out.append(_load(ws, source, job_id=job_id, fmt=fmt))
            except EnvloopError as exc:
                return [*out, exc]
        return out
    from ._datasets.heldout import warn_job_overlaps
    from ._job import Job
    from ._store.attempt_sources import rebuild
    from ._store.memory import fewer_threads

    # two callers: one worker fewer (on two cores three threads of the two loads' passes
    # were ~0.1 s slower than two), and one purge of the allocator after both loads
    zone = ws.con.execute("SELECT current_setting('TimeZone')").fetchone()
    with fewer_threads(ws.con, 1), ThreadPoolExecutor(max_workers=2) as pool:
        passes = [threading.Event(), threading.Event()]
        futures = [  # each thread on a connection of its own, made here (not on ws.con)
            pool.submit(_load_on_cursor, ws.con.cursor(), s, job_id, fmt, started, zone)
            for (s, job_id), started in zip(sources, passes, strict=True)
        ]
        for started in passes:  # both loads in their checking pass, which binds nothing:
            started.wait()  # DuckDB imports pandas at the first parameter after it,
        import pandas  # noqa: F401  (so it is imported here, while the passes run)
    ws.con.execute("BEGIN TRANSACTION")  # the view over the sources that loaded
    try:
        rebuild(ws.con)
        ws.con.execute("COMMIT")
    except BaseException:
        ws.con.execute("ROLLBACK")
        raise
    for future in futures:
        try:
            loaded_id = future.result()  # another exception is raised here, in order
        except EnvloopError as exc:
            return [*out, exc]
        warn_job_overlaps(ws, loaded_id)  # as ws.load: task inputs in a training dataset
        out.append(Job(ws, loaded_id))
    return out


def _load_on_cursor(
    con: duckdb.DuckDBPyConnection,
    source: str,
    job_id: str,
    fmt: str | None,
    started: threading.Event,
    zone: tuple[Any, ...] | None,
) -> str:
    """``source`` read in place as :func:`_load` reads it, on ``con``, a connection of
    its own (closed here), set to the workspace's time ``zone``, that leaves the
    ``attempts`` view to the caller; the job id. ``started`` is set once the load's
    checking pass has started (or it ended)."""
    from ._loaders import check_format, load_source
    from ._loaders.tables.inplace import telling_the_pass
    from ._store.attempt_sources import view_later
    from ._store.sql import literal

    try:
        check_format(source, fmt)
        # a new connection starts in the process's time zone: the workspace's instead
        con.execute(f"SET TimeZone = {literal(str(zone[0]) if zone else 'UTC')}")
        with view_later(con), telling_the_pass(con, started):
            return load_source(con, source, format=fmt, job_id=job_id, copy=False)
    except OSError as exc:
        raise EnvloopError(f"{source}: {exc.strerror or exc}") from exc
    finally:
        con.close()
        started.set()  # also when the load stopped before its block


def gate(
    baseline: str,
    candidate: str,
    *,
    metric: Metric = "score",
    max_drop: float = 0.02,
    alpha: float = 0.05,
    min_coverage: float = 0.9,
    min_tasks: int = 20,
    policy: Policy = "unknown",
    threshold: float | None = None,
    fmt: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> GateResult:
    """Load both sources, guard, pair, decide (see the module docstring for the rule).

    A source that does not load gives exit 2 with the loader's message; so does every
    other reason the gate cannot tell.

    Examples
    --------
    >>> r = gate("sample_data/sft-step1000.jsonl.gz", "sample_data/base.json", resamples=500)
    >>> r.exit_code, r.verdict, round(r.diff, 4)
    (1, 'REGRESSION', -0.1125)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if max_drop < 0:
        raise ValueError(f"max-drop must be >= 0, got {max_drop!r}")
    from ._comparison import Comparison
    from ._store.memory import fewer_threads
    from ._workspace import open as open_workspace

    head = GateResult(EXIT_CANNOT_TELL, "", metric, max_drop, 1 - alpha)
    ws = open_workspace()
    try:
        jobs = []
        loaded = _load_both(ws, baseline, candidate, fmt=fmt)  # stops at a refusal
        for side, job in zip(("baseline", "candidate"), loaded, strict=False):
            if isinstance(job, EnvloopError):
                return replace(head, reason=f"the {side} did not load: {job}")
            jobs.append(job)
        cmp = Comparison(
            ws,
            jobs,
            jobs[0],
            policy=policy,
            threshold=threshold,
            resamples=resamples,
            seed=seed,
            confidence=head.confidence,
        )
        # one DuckDB thread: the comparison's queries are small, and the bootstrap's two
        # threads (draws, sums) take the cores meanwhile
        with fewer_threads(ws.con, 1), ThreadPoolExecutor(max_workers=1) as pool:
            pending = _pair_ahead(cmp, pool)
            covs = []
            for source, job in zip((baseline, candidate), jobs, strict=True):
                s = job.summary(policy=policy, threshold=threshold)
                covs.append(Coverage(source, s.scored or 0, s.total))
            if pending is not None:
                with suppress(Exception):  # _verdict asks again: a failure is raised there,
                    pending.result()  # as before, or not at all (coverage too low)
        head = replace(head, baseline=covs[0], candidate=covs[1])
        return _verdict(cmp, head, min_coverage=min_coverage, min_tasks=min_tasks)
    finally:
        ws.close()


def _pair_ahead(cmp: Comparison, pool: ThreadPoolExecutor) -> Future[Any] | None:
    """The paired statistics started on ``pool``, then the guard's differences found here.

    The per-task rows are read first, so the statistics' work left — matching the tasks,
    the paired bootstrap — is numpy's alone and runs beside the guard's and the
    summaries' queries: the thread reads the differences only after the bootstrap, and
    :func:`~envloop_nb._compare.guard.differences` lets one thread find them (no two
    threads on one connection). When the guard blocks, the statistics go unused; a job
    without per-task rows (aggregate numbers only) starts none (None).
    """
    from ._compare.tasks import task_frame

    try:
        task_frame(cmp.state)
    except (EnvloopError, ValueError):  # no per-task rows (aggregate numbers only): the
        return None  # guard says why, or _verdict raises it where it did
    pending = pool.submit(cmp.paired)
    cmp.differences  # noqa: B018  (found on this thread, beside the bootstrap)
    return pending


def _verdict(
    cmp: Comparison, head: GateResult, *, min_coverage: float, min_tasks: int
) -> GateResult:
    """``head`` (coverage known) completed with the guard, the paired row and the rule."""
    blockers = [d.detail for d in cmp.differences if d.blocking]
    head = replace(head, notes=tuple(d.detail for d in cmp.differences if not d.blocking))
    if blockers:
        return replace(head, reason="not comparable: " + "; ".join(blockers))
    low_cov = [
        f"{side} {cov}" for side, cov in (("baseline", head.baseline), ("candidate", head.candidate))
        if cov is not None and cov.share < min_coverage
    ]  # fmt: skip
    if low_cov:
        return replace(
            head,
            reason=f"too much missing: coverage below the minimum {min_coverage * 100:g}%"
            f" (--min-coverage): {', '.join(low_cov)}",
        )
    row = cmp.paired().iloc[0]
    col = "score" if head.metric == "score" else "pass"
    diff, low, high = (_number(row[f"{col}_{k}"]) for k in ("diff", "low", "high"))
    tasks = int(row["shared_complete"])
    head = replace(
        head, diff=diff, low=low, high=high, tasks=tasks, tasks_union=int(row["tasks_union"])
    )
    verdict = str(row["verdict"])
    if verdict.startswith("not assessed"):  # the comparison's own rule (shared share)
        return replace(head, reason="too much missing: " + verdict.removeprefix("not assessed: "))
    if tasks < min_tasks:
        return replace(
            head,
            reason=f"underpowered: only {tasks:,} tasks shared and completely scored"
            f" (need at least {min_tasks:,}, --min-tasks)",
        )
    if diff is None or low is None or high is None:
        why = (
            "the pass rate is undefined: rewards are not binary (give --threshold)"
            if col == "pass"
            else "no difference could be computed"
        )
        return replace(head, reason=why)
    code, reason = decide(diff=diff, low=low, high=high, max_drop=head.max_drop)
    return replace(head, exit_code=code, reason=reason)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    x = float(value)
    return None if math.isnan(x) else x


# -- report ----------------------------------------------------------------------------
ReportWriter = Callable[["Workspace", "list[Job]", Path, "Policy", "float | None"], "HtmlReport"]


def _job_report(
    ws: Workspace, jobs: list[Job], out: Path, policy: Policy, threshold: float | None
) -> HtmlReport:
    return jobs[0].export_html(out, policy=policy, threshold=threshold)


def _comparison_report(
    ws: Workspace, jobs: list[Job], out: Path, policy: Policy, threshold: float | None
) -> HtmlReport:
    from ._comparison import Comparison

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
    from ._workspace import open as open_workspace

    ws = open_workspace()
    try:
        jobs: list[Job] = []
        if run:
            for path in paths:
                if Path(path).is_dir():
                    jobs.extend(ws.load_all(path))
                else:
                    jobs.append(_load(ws, path, job_id=None, fmt=fmt))
            return REPORTS[kind](ws, jobs, Path(out), policy, threshold)
        for n, path in enumerate(paths, start=1):
            job = _load(ws, path, job_id=None, fmt=fmt)
            clash = [i for i, j in enumerate(jobs) if j.id == job.id]
            if clash:  # the load replaced an earlier source's job: keep both
                job = _load(ws, path, job_id=f"{job.id}-{n}", fmt=fmt)
                jobs[clash[0]] = _load(ws, paths[clash[0]], job_id=jobs[clash[0]].id, fmt=fmt)
            jobs.append(job)
        return REPORTS[kind](ws, jobs, Path(out), policy, threshold)
    finally:
        ws.close()


# -- the command line ------------------------------------------------------------------
_GATE_HELP = """\
Is CANDIDATE worse than BASELINE beyond noise? Both are loaded with envloop_nb's loaders
(any supported source: EnvLoop exports, Harbor / Terminal-Bench folders, Inspect logs,
lm-eval output, tau-bench results, Parquet / CSV tables), the comparison guard runs (same
frozen work), and the paired difference candidate - baseline of the metric on the tasks
both scored completely gets its (1 - alpha) task-bootstrap interval [lo, hi].

With the margin d = --max-drop:
  exit 0  NO REGRESSION  lo >= -d (the whole interval is above the margin)
  exit 1  REGRESSION     difference < -d and hi < 0 (beyond the margin and beyond noise)
  exit 2  CANNOT TELL    anything else, with the reason: the interval reaches below -d
                         (underpowered), fewer than --min-tasks shared complete tasks,
                         not comparable, coverage below --min-coverage, fewer than half
                         the tasks shared and complete, a source that does not load
                         (a missing file too), an unexpected error (its traceback on
                         stderr), or a usage error (argparse's own exit 2)
One line is printed (one JSON object with --json). It never says NO REGRESSION when it
cannot tell.
"""

_REPORT_HELP = """\
Write a standalone HTML report (one self-contained file, no network needed to read it):
one PATH makes that job's report (summary with coverage, charts, tables, diagnosis,
hard cases); 2-5 PATHs make the comparison report of those jobs, the first the baseline
(guard, leaderboard, charts, tables, paired statistics); with --run, PATHs (files or
folders of checkpoints) make a training run's report (curve over training with its noise
band, changes beyond noise, best checkpoint, tasks learned and forgotten; steps from the
agent_round label or the lm-eval revision). Exit 0 when written, 2 when a source does
not load, the paths are too many or do not make a run.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envloop-nb",
        description="envloop_nb from the command line: a regression gate and HTML reports.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--format", default=None, help="the sources' format when detection is ambiguous (e.g. table, envloop, harbor, inspect)")  # fmt: skip
        p.add_argument("--threshold", type=float, default=None, help="pass threshold: a pass is reward >= THRESHOLD (default: reward 1)")  # fmt: skip
        p.add_argument("--policy", choices=("unknown", "failure"), default="unknown", help="a requested attempt without reward: stays missing (unknown, default) or counts as 0 (failure)")  # fmt: skip

    g = sub.add_parser("gate", help="exit 0/1/2: no regression / regression / cannot tell", description=_GATE_HELP, formatter_class=fmt)  # fmt: skip
    g.add_argument("baseline", metavar="BASELINE")
    g.add_argument("candidate", metavar="CANDIDATE")
    g.add_argument("--metric", choices=("score", "pass"), default="score", help="score: mean reward per task (default); pass: pass rate per task")  # fmt: skip
    g.add_argument("--max-drop", type=float, default=0.02, help="the margin d: a drop up to d is tolerated (default 0.02, in the metric's units)")  # fmt: skip
    g.add_argument("--alpha", type=float, default=0.05, help="the interval is (1 - alpha) (default 0.05: 95%%)")  # fmt: skip
    g.add_argument("--min-coverage", type=float, default=0.9, help="least share of each job's requested attempts that must be scored (default 0.9)")  # fmt: skip
    g.add_argument("--min-tasks", type=int, default=20, help="least number of tasks shared and completely scored (default 20)")  # fmt: skip
    g.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")  # fmt: skip
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of the line")  # fmt: skip
    common(g)
    r = sub.add_parser("report", help="write a job's or a comparison's standalone HTML report", description=_REPORT_HELP, formatter_class=fmt)  # fmt: skip
    r.add_argument("paths", nargs="+", metavar="PATH")
    r.add_argument("-o", "--output", required=True, help="the HTML file to write")
    r.add_argument("--run", action="store_true", help="the PATHs are one training run's checkpoints (files or folders): a run report")  # fmt: skip
    common(r)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    stdout = out if out is not None else sys.stdout
    args = _parser().parse_args(argv)
    if args.command == "gate":
        try:
            result = gate(
                args.baseline,
                args.candidate,
                metric=args.metric,
                max_drop=args.max_drop,
                alpha=args.alpha,
                min_coverage=args.min_coverage,
                min_tasks=args.min_tasks,
                policy=args.policy,
                threshold=args.threshold,
                fmt=args.format,
                resamples=args.resamples,
                seed=args.seed,
            )
        except (EnvloopError, ValueError) as exc:
            result = GateResult(EXIT_CANNOT_TELL, str(exc), args.metric, args.max_drop, 1 - args.alpha)  # fmt: skip
        except Exception as exc:  # a crash must not exit 1, which reads as "regression"
            traceback.print_exc()
            why = f"the gate failed: {type(exc).__name__}: {exc}"
            result = GateResult(EXIT_CANNOT_TELL, why, args.metric, args.max_drop, 1 - args.alpha)
        text = json.dumps(result.to_dict()) if args.json else result.line()
        print(text, file=stdout)
        return result.exit_code
    try:
        written = report(
            args.paths, args.output, policy=args.policy, threshold=args.threshold,
            fmt=args.format, run=args.run,
        )  # fmt: skip
    except (EnvloopError, ValueError) as exc:
        print(f"envloop-nb report: {exc}", file=sys.stderr)
        return EXIT_CANNOT_TELL
    except Exception:  # the same exit as a refusal: 2, never 1
        traceback.print_exc()
        return EXIT_CANNOT_TELL
    print(str(written), file=stdout)
    return 0


def run() -> NoReturn:
    """The process's entry (``python -m envloop_nb``, the ``envloop-nb`` script):
    :func:`main` on the command line's arguments, then the process ends at once.

    Once the command has printed its line (its files written and closed, the workspace
    closed) nothing is left to do but the interpreter's teardown — every module of
    pandas, pyarrow and DuckDB freed one by one, ~0.09 s of the gate's 1M-attempt run —
    so the streams are flushed and the process exits with the code. The gate also runs
    without the cyclic garbage collector: a command of a second or two whose memory is
    bounded by its two loads, where each full collection walked every object the
    imports made (~0.04 s in all). Arrow allocates from the C heap unless
    ``ARROW_DEFAULT_MEMORY_POOL`` says otherwise (see the comment below).
    """
    # Arrow's default pool (mimalloc) asks for transparent huge pages on its arenas: where
    # the kernel grants them on request (``madvise``, Debian's default) each new 2 MB page
    # is zeroed at its first touch, which on a VM whose memory is backed lazily stalled
    # the gate's Arrow steps by 0.2-0.35 s in about a third of the runs. The C heap has no
    # such pages; a pool the user chose is kept.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if sys.argv[1:2] == ["gate"]:
        gc.disable()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
