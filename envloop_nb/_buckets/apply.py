"""Bucket rules applied to a job in the workspace: its per-task or per-attempt values.

The rules themselves are pure (:mod:`envloop_nb._buckets.rules`); this module builds the
frame they apply to from the job's tables in DuckDB and wraps the outcome in a
:class:`BucketResult`. Functions take a :class:`~envloop_nb._store.ref.JobRef` (anything
with ``.con`` and ``.id``; ``Job`` is one and delegates ``job.buckets(...)`` here).

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> rules = BucketRules([("hard", 0, 0.75), ("easy", 0.75, 1.01)])
>>> result = job_buckets(job, rules, allow_partial=True)
>>> result.count_of("hard"), result.count_of("easy"), result.excluded, result.partial
(1, 1, 1, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError
from .._metrics.counts import scored_mean
from .._metrics.passk_views import samples
from .._store.frames import attempts_frame, to_frame
from .._store.ref import job_info
from .._store.sql import ident
from .rules import PASS_K, BucketRules, Level

if TYPE_CHECKING:
    import duckdb

    from .._store.ref import JobRef
    from .._types import Policy

__all__ = ["BucketResult", "bucket_frame", "check_finished", "job_buckets"]

#: Job statuses whose pass rates can still change.
_UNFINISHED = ("pending", "running")


@dataclass(frozen=True)
class BucketResult:
    """Rules applied to a job: the bucketed frame, counts, warnings and coverage.

    ``partial`` is true when the job was still pending or running (bucketing was
    explicitly allowed with ``allow_partial=True``); every export of this result says so.
    """

    frame: Any
    counts: Any
    warnings: tuple[str, ...]
    partial: bool
    excluded: int
    excluded_reason: str
    rules: BucketRules
    metric: str
    job_id: str
    status: str | None
    policy: str
    threshold: float | None

    def count_of(self, name: str) -> int:
        """How many rows landed in bucket ``name``."""
        frame = self.counts
        names = list(frame["bucket"])
        if name not in names:
            raise KeyError(f"no bucket {name!r}; buckets: {self.rules.names}")
        return int(list(frame["count"])[names.index(name)])

    def __str__(self) -> str:
        head = f"Buckets of {self.job_id} on {self.metric}"
        if self.partial:
            head += f" · PARTIAL (job {self.status})"
        rows = [head]
        names = list(self.counts["bucket"])
        counts = list(self.counts["count"])
        shares = list(self.counts["share"])
        width = max(len(str(n)) for n in names)
        for n, c, s in zip(names, counts, shares, strict=True):
            share = "" if s is None or s != s else f"  {s * 100:.1f}%"
            rows.append(f"  {str(n).ljust(width)}  {int(c):>6,}{share}")
        if self.excluded:
            rows.append(f"  {self.excluded:,} excluded: {self.excluded_reason}")
        rows.extend(f"  warning: {w}" for w in self.warnings)
        return "\n".join(rows)


def _metric_columns(metric: str, level: Level) -> str:
    """SQL giving ``task[, attempt], _bk_value`` for composite / dimension metrics.

    Parameters ``$job_id`` and (for a dimension) ``$metric``.
    """
    if metric == "composite":
        value, src = "composite", "FROM attempts WHERE job_id = $job_id"
    else:
        value = "value"
        src = "FROM dimensions WHERE job_id = $job_id AND name = $metric"
    if level == "attempt":
        return f"SELECT task, attempt, {value}::DOUBLE AS _bk_value {src}"
    return f"SELECT task, {scored_mean(value, 'attempt')} AS _bk_value {src} GROUP BY task"


def _known_dimension(con: duckdb.DuckDBPyConnection, job_id: str, metric: str) -> bool:
    row = con.execute(
        "SELECT count(*) FROM dimensions WHERE job_id = ? AND name = ?", [job_id, metric]
    ).fetchone()
    return bool(row and row[0])


def bucket_frame(
    job: JobRef,
    metric: str = "pass_rate",
    *,
    level: Level = "task",
    policy: Policy = "unknown",
    threshold: float | None = None,
    frame: str = "pandas",
) -> Any:
    """The per-task (or per-attempt) frame of ``job`` holding ``metric`` as a column.

    Per task this is the per-task table of :func:`envloop_nb._metrics.passk_views.samples`
    (with the k of a ``pass@K`` metric) plus, for ``composite`` or a named dimension,
    its per-task mean over the attempts that have a value (null when none has one),
    computed in DuckDB grouped by task. Per attempt it is the job's attempts
    (``job.attempts()``) plus the composite or dimension value of each attempt.
    """
    con, job_id = job.con, job.id
    m = PASS_K.match(metric)
    if level == "task":
        ks = None
        if m:  # the job's k and K (job_info: KeyError when the job left the workspace)
            ks = sorted({int(job_info(con, job_id)["attempts"]), int(m.group(1))})
        base = samples(con, job_id, ks=ks, policy=policy, threshold=threshold, frame="pandas")
    else:
        base = attempts_frame(con, job_id)
    if metric in base.columns:
        return base if frame == "pandas" else _to_polars(base)
    if metric != "composite" and not _known_dimension(con, job_id, metric):
        dims = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT name FROM dimensions WHERE job_id = ? ORDER BY 1", [job_id]
            ).fetchall()
        ]
        raise KeyError(
            f"job {job_id} has no metric {metric!r}; per {level}: pass_rate, pass@K, pass^K, "
            f"reward_mean, composite, reward (per attempt) or a dimension: {dims}"
        )
    keys = "task" if level == "task" else "task, attempt"
    params = {"job_id": job_id} | ({} if metric == "composite" else {"metric": metric})
    con.register("_bk_base", base)
    try:
        result = con.execute(
            f"""SELECT b.*, e._bk_value AS {ident(metric)} FROM
                (SELECT *, row_number() OVER () AS _bk_order FROM _bk_base) b
                LEFT JOIN ({_metric_columns(metric, level)}) e USING ({keys})
                ORDER BY b._bk_order""",
            params,
        )
        out = to_frame(result, "pandas").drop(columns=["_bk_order"])
    finally:
        con.unregister("_bk_base")
    return out if frame == "pandas" else _to_polars(out)


def _to_polars(frame: Any) -> Any:
    import polars as pl

    return pl.from_pandas(frame)


def check_finished(job: JobRef, allow_partial: bool, what: str = "bucketing") -> tuple[bool, str]:
    """``(partial, status)``; refuse an unfinished job unless ``allow_partial``."""
    status = str(job_info(job.con, job.id).get("status") or "")
    if status in _UNFINISHED:
        if not allow_partial:
            raise EnvloopError(
                f"job {job.id} is still {status}: {what} is for finished jobs, because "
                "pass rates of unfinished tasks would change. Wait for it to finish, or pass "
                "allow_partial=True to get a result marked partial."
            )
        return True, status
    return False, status


def job_buckets(
    job: JobRef,
    rules: BucketRules,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    allow_partial: bool = False,
    frame: str = "pandas",
) -> BucketResult:
    """Apply ``rules`` to ``job`` (see :meth:`envloop_nb.Job.buckets`)."""
    if not isinstance(rules, BucketRules):
        raise TypeError(f"rules must be a BucketRules, got {type(rules).__name__}")
    partial, status = check_finished(job, allow_partial)
    base = bucket_frame(
        job, rules.metric, level=rules.level, policy=policy, threshold=threshold, frame=frame
    )
    out = rules.apply(base)
    counts = rules.summary(base)
    excluded = int(list(counts["count"])[-1])
    return BucketResult(
        frame=out,
        counts=counts,
        warnings=tuple(rules.warnings()),
        partial=partial,
        excluded=excluded,
        excluded_reason=rules.excluded_reason() if excluded else "",
        rules=rules,
        metric=rules.metric,
        job_id=job.id,
        status=status or None,
        policy=policy,
        threshold=threshold,
    )
