"""The regression gate: two sources loaded, guarded, paired and decided (see
:mod:`envloop_nb._cli` for the rule and the exit codes)."""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, suppress
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import EnvloopError

if TYPE_CHECKING:
    import duckdb

    from .._comparison import Comparison
    from .._job import Job
    from .._types import Policy
    from .._workspace import Workspace

__all__ = [
    "BASELINE_ID",
    "CANDIDATE_ID",
    "EXIT_CANNOT_TELL",
    "EXIT_NO_REGRESSION",
    "EXIT_REGRESSION",
    "Coverage",
    "GateResult",
    "Metric",
    "decide",
    "gate",
    "load",
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


def load(ws: Workspace, source: str, *, job_id: str | None, fmt: str | None) -> Job:
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
    """Whether :func:`load` reads ``source`` in place: a local Parquet file or glob."""
    return fmt in (None, "table") and source.endswith(".parquet") and "://" not in source


def _at_once(baseline: str, candidate: str, fmt: str | None) -> bool:
    """Whether :func:`_load_both` loads the two sources at once (two local Parquet files)."""
    return _in_place_file(baseline, fmt) and _in_place_file(candidate, fmt)


def _in_place_file(source: str, fmt: str | None) -> bool:
    """Whether ``source`` is one local Parquet file that :func:`load` reads in place."""
    return _in_place(source, fmt) and Path(source).is_file()


def _load_both(
    ws: Workspace, baseline: str, candidate: str, *, fmt: str | None
) -> list[Job | EnvloopError]:
    """The baseline's and the candidate's jobs (ids :data:`BASELINE_ID`,
    :data:`CANDIDATE_ID`), or the refusal of the first that did not load, in that order.

    Two local Parquet files are loaded at once, each on its own connection to the
    workspace (``ws.con.cursor()``) in its own thread: DuckDB runs the two loads' checking
    passes on two cores. Each is the load :func:`load` makes (``ws.load(copy=False)``:
    every check, its own transaction); the ``attempts`` view is rebuilt once after both
    (:func:`~envloop_nb._store.attempt_sources.view_later`). Other sources load one
    after the other. :func:`gate` runs the loads at once with one DuckDB thread fewer
    (:func:`~envloop_nb._store.memory.fewer_threads`: on two cores three threads of the
    two passes were ~0.1 s slower than two) and one purge of the allocator after them.
    """
    sources = ((baseline, BASELINE_ID), (candidate, CANDIDATE_ID))
    out: list[Job | EnvloopError] = []
    if not _at_once(baseline, candidate, fmt):
        for source, job_id in sources:
            try:
                out.append(load(ws, source, job_id=job_id, fmt=fmt))
            except EnvloopError as exc:
                return [*out, exc]
        return out
    from .._datasets.heldout import warn_job_overlaps
    from .._job import Job
    from .._store.attempt_sources import rebuild

    zone = ws.con.execute("SELECT current_setting('TimeZone')").fetchone()
    with ThreadPoolExecutor(max_workers=2) as pool:
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
    """``source`` read in place as :func:`load` reads it, on ``con``, a connection of
    its own (closed here), set to the workspace's time ``zone``, that leaves the
    ``attempts`` view to the caller; the job id. ``started`` is set once the load's
    checking pass has started (or it ended)."""
    from .._loaders import check_format, load_source
    from .._loaders.tables.inplace import telling_the_pass
    from .._store.attempt_sources import view_later
    from .._store.sql import literal

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
    from .._comparison import Comparison
    from .._store.memory import fewer_threads
    from .._workspace import open as open_workspace

    head = GateResult(EXIT_CANNOT_TELL, "", metric, max_drop, 1 - alpha)
    ws = open_workspace()
    try:
        jobs = []
        with ExitStack() as fewer:
            # one DuckDB thread fewer: for the two loads' callers (when they load at once),
            # then for the bootstrap's two threads (draws, sums) beside the comparison's
            # small queries; set once for both (each change relaunches DuckDB's threads)
            at_once = _at_once(baseline, candidate, fmt)
            if at_once:
                fewer.enter_context(fewer_threads(ws.con, 1))
            loaded = _load_both(ws, baseline, candidate, fmt=fmt)  # stops at a refusal
            for side, job in zip(("baseline", "candidate"), loaded, strict=False):
                if isinstance(job, EnvloopError):
                    return replace(head, reason=f"the {side} did not load: {job}")
                jobs.append(job)
            if not at_once:
                fewer.enter_context(fewer_threads(ws.con, 1))
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
            with ThreadPoolExecutor(max_workers=1) as pool:
                pending = _pair_ahead(cmp, pool)
                covs = []
                for source, job in zip((baseline, candidate), jobs, strict=True):
                    s = job.summary(policy=policy, threshold=threshold)
                    covs.append(Coverage(source, s.scored or 0, s.total))
                if pending is not None:
                    with suppress(Exception):  # _verdict asks again: a failure is raised
                        pending.result()  # there, as before, or not at all (low coverage)
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
    from .._compare.tasks import task_frame

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
