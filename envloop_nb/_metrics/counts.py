"""Job metrics with the platform's exact semantics, computed in DuckDB per task.

Per job, ``k`` attempts are requested for every requested task. A slot is *scored* when
its attempt of record has a numeric reward; an unscored slot whose attempt ended is
also *invalid*. ``policy="unknown"`` keeps missing slots unknown (the platform's rule);
``policy="failure"`` counts them as reward 0 (τ-bench's, Harbor's < 0.26). Counts never
depend on the policy; metrics do. ``threshold=t`` makes ``reward >= t`` a pass. Under
``failure`` a missing slot is a failed attempt: reward 0 in the score and never a pass,
even with a threshold <= 0.

Aggregation groups by task in SQL, so work on the Python side scales with tasks, not
attempts; the combinatorics run vectorized on the per-task counts (``_passk``), once per
distinct (n, c) pair: with k attempts per task there are at most (k+1)² of them.

One scan per (job, threshold): the per-task counts are memoized per connection (a small
LRU, weakly keyed by the connection) and keyed by ``jobs.loaded_at``, so a reload or a
removal of the job is never answered from the cache. The policy never changes the counts,
so switching it never rescans the attempts.
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .._present.cards import coverage_text, metric_items, summary_card_html
from .._store.sql import number
from .._types import FrameKind, Policy
from .passk import mean_estimates, pass_at_k, pass_hat_k

if TYPE_CHECKING:
    import duckdb

__all__ = ["JobSummary", "curve", "job_summary", "samples", "task_counts"]

ENDED = ("completed", "failed", "cancelled")


def _check_options(policy: str, threshold: float | None) -> None:
    if policy not in ("unknown", "failure"):
        raise ValueError(f"policy must be 'unknown' or 'failure', got {policy!r}")
    if threshold is not None and not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")


def _pass_sql(threshold: float | None) -> str:
    return "reward = 1" if threshold is None else f"reward >= {number(threshold)}"


def _attempts_by_task_sql(job_id_param: str, threshold: float | None) -> str:
    return f"""
        SELECT task,
               count(attempt)::INTEGER AS dispatched,
               count(reward)::INTEGER AS scored,
               count(*) FILTER (WHERE reward IS NULL AND status IN {ENDED!r})::INTEGER
                   AS invalid,
               count(*) FILTER (WHERE {_pass_sql(threshold)})::INTEGER AS passes,
               count(*) FILTER (WHERE reward IS NOT NULL AND reward NOT IN (0, 1))::INTEGER
                   AS nonbinary,
               {_fixed_sum("reward", "$rscale")} AS reward_sum,
               {_fixed_sum("reward * reward", "$qscale")} AS reward_sumsq,
               min(reward) AS reward_min, max(reward) AS reward_max
        FROM attempts WHERE job_id = {job_id_param}
        GROUP BY task"""


def _fixed_sum(value: str, scale: str) -> str:
    """An order-independent sum: each value scaled by a power of two, rounded to an
    integer, summed exactly, scaled back (see :func:`reward_scales`)."""
    return f"coalesce((sum(({value} * {scale})::BIGINT)::BIGINT)::DOUBLE / {scale}, 0)::DOUBLE"


def reward_scales(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, float]:
    """The powers of two ``$rscale`` / ``$qscale`` of the per-task reward sums.

    Floating-point sums depend on the order of their terms, and DuckDB's parallel
    aggregation (and the attempts' physical order after a load) varies between runs, so
    rewards are summed as integers: ``reward · 2^s`` rounded, with ``s`` the largest
    exponent for which a task's sum (at most ``k`` attempts of ``|reward| <= max``) stays
    below 2^61. Rewards down to ``max · 2^-52 / k`` keep every bit; smaller parts are
    rounded at that absolute granularity (about 1e-17 for rewards in [0, 1] and k = 32)
    — in every run and on every CPU the same.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> reward_scales(ws.con, job.id) == {"rscale": 2.0**59, "qscale": 2.0**59}
    True
    """

    def compute() -> dict[str, float]:
        row = con.execute(
            """SELECT max(abs(reward)), max(reward * reward), max(j.attempts)
               FROM attempts a JOIN jobs j USING (job_id) WHERE job_id = ?""",
            [job_id],
        ).fetchone()
        top, top_sq, k = row if row else (None, None, None)
        return {"rscale": _scale(top, k), "qscale": _scale(top_sq, k)}

    value: dict[str, float] = cached(con, job_id, ("reward_scales",), compute)
    return value


def _scale(top: float | None, k: int | None) -> float:
    """``2^s`` with ``top · k · 2^s < 2^61`` (``s`` at most 1000; 1 for no value)."""
    if not top or not k or not math.isfinite(top):
        return 1.0
    exponent = math.frexp(top * max(int(k), 1))[1]  # top · k < 2^exponent
    return math.ldexp(1.0, min(61 - exponent, 1000))


_COUNT_COLUMNS = """
           coalesce(a.dispatched, 0)::INTEGER AS dispatched,
           coalesce(a.scored, 0)::INTEGER AS scored,
           coalesce(a.invalid, 0)::INTEGER AS invalid,
           coalesce(a.passes, 0)::INTEGER AS passes,
           coalesce(a.nonbinary, 0)::INTEGER AS nonbinary,
           coalesce(a.reward_sum, 0)::DOUBLE AS reward_sum,
           coalesce(a.reward_sumsq, 0)::DOUBLE AS reward_sumsq,
           a.reward_min, a.reward_max"""

#: The task columns of :func:`task_counts_sql` (no attempt involved), in its row order.
_TASK_ROWS_SQL = """
    SELECT t.task, t.position, t.tags, json_extract_string(t.tags, '$.subset') AS subset,
           j.attempts AS k
    FROM tasks t JOIN jobs j ON j.job_id = t.job_id
    WHERE t.job_id = $job_id
    ORDER BY t.position, t.task
    """


def task_counts_sql(job_id_param: str = "$job_id", threshold: float | None = None) -> str:
    """SQL giving one row per requested task with its attempt counts and reward sums.

    Columns: task, position, tags, subset (the ``subset`` tag or null), k, dispatched,
    scored, invalid, passes, nonbinary, reward_sum, reward_sumsq, reward_min, reward_max.
    Parameters: ``$job_id`` and the scales of :func:`reward_scales`.
    """
    # Aggregate the attempts by task first, then join the (few) task rows: grouping the
    # joined rows by (task, position, tags, k) was ~1.5-2x slower at 10M attempts
    # (benchmarks/RESULTS.md). Results are identical, types included.
    return f"""
    WITH a AS ({_attempts_by_task_sql(job_id_param, threshold)})
    SELECT t.task, t.position, t.tags, json_extract_string(t.tags, '$.subset') AS subset,
           j.attempts AS k, {_COUNT_COLUMNS}
    FROM tasks t
    JOIN jobs j ON j.job_id = t.job_id
    LEFT JOIN a ON a.task = t.task
    WHERE t.job_id = {job_id_param}
    ORDER BY t.position, t.task
    """


_COUNT_NAMES = ("dispatched", "scored", "invalid", "passes", "nonbinary", "reward_sum",
                "reward_sumsq", "reward_min", "reward_max")  # fmt: skip


#: Cached results per connection, least recently used first (see :func:`cached`).
_CACHE: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)
#: Entries kept per connection (each per-task table is ~100 bytes per task).
CACHE_SIZE = 8


def job_row(con: duckdb.DuckDBPyConnection, job_id: str) -> tuple[Any, int] | None:
    """``(loaded_at, attempts)`` of the job, or None when the workspace has no such job."""
    row = con.execute("SELECT loaded_at, attempts FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    return None if row is None else (row[0], int(row[1]))


def cached(
    con: duckdb.DuckDBPyConnection, job_id: str, key: Hashable, compute: Callable[[], Any]
) -> Any:
    """``compute()`` memoized per connection under ``(job_id, key, jobs.loaded_at)``.

    A reloaded job has a new ``loaded_at`` and a removed one has no row, so neither is
    answered from the cache (and a reload drops the job's older entries). Values are
    shared between callers: never modify them.
    """
    row = job_row(con, job_id)
    if row is None:
        try:  # forget a removed job's entries
            known = _CACHE.get(con)
        except TypeError:
            known = None
        if known:
            for stale in [e for e in known if e[0] == job_id]:
                del known[stale]
        return compute()
    full = (job_id, key, row[0])
    try:
        entries = _CACHE.setdefault(con, OrderedDict())
    except TypeError:  # a connection-like object that cannot be weakly referenced
        return compute()
    if full in entries:
        entries.move_to_end(full)
        return entries[full]
    value = compute()
    for stale in [e for e in entries if e[0] == job_id and e[2] != row[0]]:
        del entries[stale]  # the job was reloaded since
    entries[full] = value
    while len(entries) > CACHE_SIZE:
        entries.popitem(last=False)
    return value


def clear_cache(con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Forget the memoized per-task tables of one connection (or of all)."""
    if con is None:
        _CACHE.clear()
    else:
        _CACHE.pop(con, None)


def task_counts(
    con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None = None
) -> pa.Table:
    """Per-task counts of one job as an Arrow table (one row per requested task).

    The same table as :func:`task_counts_sql` gives, memoized per ``(connection, job_id,
    threshold, jobs.loaded_at)`` (see :func:`cached`); the table is shared, never modify it.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> counts = task_counts(ws.con, job.id)
    >>> counts.column("passes").to_pylist(), task_counts(ws.con, job.id) is counts
    ([1, 2, 0], True)
    """
    threshold = None if threshold is None else float(threshold)
    # The task columns (tags: JSON text) do not depend on the threshold: fetched once per
    # job; a new threshold only aggregates the attempts again.
    rows: pa.Table = cached(
        con,
        job_id,
        ("task_rows",),
        lambda: con.execute(_TASK_ROWS_SQL, {"job_id": job_id}).to_arrow_table(),
    )

    def compute() -> pa.Table:
        import pyarrow.compute as pc

        # Aggregate the attempts by task, then line the rows up with the cached task rows
        # by a hash lookup (a SQL join + sort of the task rows cost as much again).
        sql = _attempts_by_task_sql("$job_id", threshold)
        params = {"job_id": job_id, **reward_scales(con, job_id)}
        agg = con.execute(sql, params).to_arrow_table()
        where = pc.index_in(rows.column("task"), value_set=agg.column("task").combine_chunks())
        columns = []
        for name in _COUNT_NAMES:  # a task without attempts: 0 (min/max: null)
            column = pc.take(agg.column(name), where)
            columns.append(column if name in ("reward_min", "reward_max") else column.fill_null(0))
        return pa.Table.from_arrays(
            [*rows.columns, *columns], names=[*rows.column_names, *_COUNT_NAMES]
        )

    return cached(con, job_id, ("task_counts", threshold), compute)


def _unique_pairs(
    n: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (n, c) pairs: ``(un, uc, inverse, counts)`` with ``n == un[inverse]``."""
    if len(n) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    base = int(c.max()) + 1
    uniq, inverse, counts = np.unique(n * base + c, return_inverse=True, return_counts=True)
    return uniq // base, uniq % base, inverse.reshape(-1), counts


@dataclass(frozen=True)
class JobSummary:
    """A job's headline numbers with their coverage. Immutable.

    ``to_dict()`` uses the platform's keys: ``score, pass, pass@k, pass^k, k, total,
    scored, missing, invalid, total_members, complete_members``, plus ``policy``,
    ``threshold``, ``binary``, ``job_id`` and ``note``: a sentence about the source's own
    rule when it matters (a Harbor job: which policy reproduces its ``result.json``),
    else None.
    """

    job_id: str
    k: int
    total: int
    scored: int
    missing: int
    invalid: int
    total_members: int
    complete_members: int
    score: float | None
    pass_: float | None
    pass_at_k: float | None
    pass_hat_k: float | None
    binary: bool
    policy: Policy
    threshold: float | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary keyed as the platform keys it (``pass@k``, ``pass^k``...).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> d = job.summary().to_dict()
        >>> d["score"], d["pass@k"], d["pass^k"], d["scored"], d["total"]
        (0.6, 1.0, 0.5, 5, 6)
        """
        d = asdict(self)
        out = {
            "score": d.pop("score"),
            "pass": d.pop("pass_"),
            "pass@k": d.pop("pass_at_k"),
            "pass^k": d.pop("pass_hat_k"),
        }
        out.update(d)
        return out

    @property
    def coverage_text(self) -> str:
        """``"5/6 attempts scored · 2/3 members complete"``."""
        return coverage_text(self.scored, self.total, self.complete_members, self.total_members)

    def __str__(self) -> str:
        score = "-" if self.score is None else f"{self.score * 100:.1f}%"
        if self.score is not None and not 0 <= self.score <= 1:
            score = f"{self.score:.4g}"
        line = f"score {score} · {self.coverage_text}"
        return line if self.note is None else f"{line}\n{self.note}"

    def metric_items(self) -> list[tuple[str, str]]:
        """Label/value pairs as the cards show them, with the real k."""
        return metric_items(self.to_dict())

    def _repr_html_(self) -> str:
        return summary_card_html(self.to_dict())


def _per_task_arrays(counts: pa.Table, policy: Policy) -> dict[str, np.ndarray]:
    """Effective n / c / sums per task under the policy (numpy, vectorized)."""
    k = np.asarray(counts.column("k"), dtype=np.int64)
    scored = np.asarray(counts.column("scored"), dtype=np.int64)
    passes = np.asarray(counts.column("passes"), dtype=np.int64)
    n = k.copy() if policy == "failure" else scored
    return {"k": k, "scored": scored, "n": n, "c": passes}


def job_summary(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> JobSummary:
    """Compute a job's summary (see the module docstring for the exact semantics)."""
    _check_options(policy, threshold)
    counts = task_counts(con, job_id, threshold)
    arr = _per_task_arrays(counts, "unknown")
    k_col, scored_t, passes_t = arr["k"], arr["scored"], arr["c"]
    members = len(k_col)
    if members:
        k = int(k_col[0])
    else:  # a job with no requested task
        row = job_row(con, job_id)
        if row is None:
            raise ValueError(f"no job {job_id!r} in this workspace")
        k = row[1]
    scored = int(scored_t.sum())
    invalid = int(np.asarray(counts.column("invalid"), dtype=np.int64).sum())
    full = scored_t == k_col
    complete = int(full.sum())
    reward_sum = float(np.asarray(counts.column("reward_sum"), dtype=np.float64).sum())
    passes = int(passes_t.sum())
    nonbinary = int(np.asarray(counts.column("nonbinary"), dtype=np.int64).sum())
    any_pass, all_pass = passes_t > 0, passes_t == k_col
    # At n = k the estimators are indicators: pass@k = [c > 0], pass^k = [c = k]; the
    # shares are integer ratios, correctly rounded by int / int.
    at_k_complete = int(any_pass[full].sum()) / complete if complete else None
    hat_k_complete = int(all_pass[full].sum()) / complete if complete else None
    at_k_all = int(any_pass.sum()) / members if members else None
    hat_k_all = int(all_pass.sum()) / members if members else None
    total = int(members) * int(k)
    binary = threshold is not None or int(nonbinary) == 0
    score = pass_ = at_k = hat_k = None
    if scored > 0:
        denominator = total if policy == "failure" else scored
        score = float(reward_sum) / denominator
        if binary:
            pass_ = float(passes) / denominator
            if policy == "failure":
                at_k, hat_k = at_k_all, hat_k_all
            else:
                at_k, hat_k = at_k_complete, hat_k_complete
    return JobSummary(
        job_id=job_id,
        k=int(k),
        total=total,
        scored=int(scored),
        missing=total - int(scored),
        invalid=int(invalid),
        total_members=int(members),
        complete_members=int(complete),
        score=score,
        pass_=pass_,
        pass_at_k=None if at_k is None else float(at_k),
        pass_hat_k=None if hat_k is None else float(hat_k),
        binary=binary,
        policy=policy,
        threshold=threshold,
    )


def _arrow_frame(table: pa.Table, frame: FrameKind) -> Any:
    """An Arrow table as a frame, like :func:`envloop_nb._store.frames.to_frame` but without a
    round trip through DuckDB (which copies the table: 60 of 100 ms at 312,500 tasks)."""
    if frame == "pandas":
        return table.to_pandas()
    if frame == "polars":
        import polars as pl

        return pl.from_arrow(table)
    raise ValueError(f"frame must be 'pandas' or 'polars', got {frame!r}")


def _job_k(con: duckdb.DuckDBPyConnection, job_id: str) -> int:
    row = job_row(con, job_id)
    if row is None:
        raise ValueError(f"no job {job_id!r} in this workspace")
    return row[1]


def _estimates(
    n: np.ndarray, c: np.ndarray, k: int, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-task pass@k and pass^k where ``ok`` (n >= k), NaN elsewhere."""
    at = np.full(n.shape, np.nan)
    hat = np.full(n.shape, np.nan)
    if ok.any():
        at[ok] = pass_at_k(n[ok], c[ok], k)
        hat[ok] = pass_hat_k(n[ok], c[ok], k)
    return at, hat


def samples(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    ks: Sequence[int] | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    frame: FrameKind = "pandas",
) -> Any:
    """The per-task table: counts, pass rate, pass@k / pass^k for ``ks``, reward stats.

    ``complete`` says whether every requested attempt of the task is scored (a count:
    it does not change with the policy). ``pass_rate`` is c/n and null ("-") unless the
    task is complete; under ``policy="failure"`` it always exists (missing = a failure).
    pass@k columns are null where the task has fewer than k scored attempts (under
    ``failure``: fewer than k requested) or rewards are non-binary. A ``subset`` column
    (the task's ``subset`` tag) comes before ``tags`` when any task has that tag.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> df = job.samples(ks=[1, 2])
    >>> df[["task", "n", "scored", "passes", "pass_rate", "complete", "subset"]].values.tolist()
    [['A', 2, 2, 1, 0.5, True, 'math'], ['B', 2, 2, 2, 1.0, True, 'code'], ['C', 2, 1, 0, nan, False, 'code']]
    """
    _check_options(policy, threshold)
    counts = task_counts(con, job_id, threshold)
    ks = list(ks) if ks is not None else [_job_k(con, job_id)]
    arr = _per_task_arrays(counts, policy)
    n, c, scored = arr["n"], arr["c"], arr["scored"]
    k_req = arr["k"]
    nonbinary = np.asarray(counts.column("nonbinary"), dtype=np.int64)
    binary = threshold is not None or int(nonbinary.sum()) == 0
    complete = scored == k_req
    rated = (complete | (policy == "failure")) & (n > 0)
    reward_sum = np.asarray(counts.column("reward_sum"), dtype=np.float64)
    sumsq = np.asarray(counts.column("reward_sumsq"), dtype=np.float64)
    # Under "failure" a missing slot is a 0: it adds to n but not to the sums.
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, reward_sum / np.maximum(n, 1), np.nan)
        var = np.where(n > 1, (sumsq - n * mean * mean) / np.maximum(n - 1, 1), np.nan)
    std = np.sqrt(np.clip(var, 0, None))
    rmin = np.asarray(counts.column("reward_min").to_numpy(zero_copy_only=False), dtype=np.float64)
    rmax = np.asarray(counts.column("reward_max").to_numpy(zero_copy_only=False), dtype=np.float64)
    if policy == "failure":
        has_missing = scored < k_req
        rmin = np.where(has_missing, np.fmin(rmin, 0.0), rmin)
        rmax = np.where(has_missing, np.fmax(rmax, 0.0), rmax)
    cols: dict[str, Any] = {
        "task": counts.column("task"),
        "n": pa.array(k_req),
        "dispatched": counts.column("dispatched"),
        "scored": pa.array(scored),
        "missing": pa.array(k_req - scored),
        "invalid": counts.column("invalid"),
        "passes": pa.array(c, mask=~np.full(c.shape, binary)),
        "pass_rate": pa.array(
            np.where(rated, c / np.maximum(n, 1), np.nan),
            mask=~(rated & binary),
        ),
        "complete": pa.array(complete),
    }
    un, uc, inverse, _ = _unique_pairs(n, c)  # evaluate once per distinct (n, c)
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        ok_u = (un >= k) & binary
        at_u, hat_u = _estimates(un, uc, k, ok_u)
        ok = ok_u[inverse]
        cols[f"pass@{k}"] = pa.array(at_u[inverse], mask=~ok)
        cols[f"pass^{k}"] = pa.array(hat_u[inverse], mask=~ok)
    cols["reward_mean"] = pa.array(mean, mask=np.isnan(mean))
    cols["reward_min"] = pa.array(rmin, mask=np.isnan(rmin))
    cols["reward_max"] = pa.array(rmax, mask=np.isnan(rmax))
    cols["reward_std"] = pa.array(std, mask=np.isnan(std))
    subset = counts.column("subset")
    if subset.null_count < len(subset):
        cols["subset"] = subset
    cols["tags"] = counts.column("tags")
    return _arrow_frame(pa.table(cols), frame)


def curve(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    ks: Sequence[int] | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    frame: FrameKind = "pandas",
) -> Any:
    """pass@k and pass^k for each k, averaged over the tasks that have >= k scored attempts.

    Columns: ``k, pass@k, pass^k, tasks`` (tasks the point covers) and ``tasks_total``.
    """
    _check_options(policy, threshold)
    counts = task_counts(con, job_id, threshold)
    ks = list(ks) if ks is not None else list(range(1, _job_k(con, job_id) + 1))
    arr = _per_task_arrays(counts, policy)
    n, c = arr["n"], arr["c"]
    binary = threshold is not None or int(np.asarray(counts.column("nonbinary")).sum()) == 0
    # With no scored attempt at all every metric is null, whatever the policy.
    binary = binary and int(arr["scored"].sum()) > 0
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
    # The mean over tasks is a count-weighted mean over the distinct (n, c) pairs, formed
    # in exact rationals and rounded once (see _passk.mean_estimates).
    un, uc, _, weight = _unique_pairs(n, c)
    means = mean_estimates(un, uc, weight, ks) if binary else [None] * len(ks)
    rows_at = [None if m is None else m[0] for m in means]
    rows_hat = [None if m is None else m[1] for m in means]
    rows_tasks = [int(weight[un >= k].sum()) for k in ks]
    table = pa.table(
        {
            "k": pa.array(ks, pa.int64()),
            "pass@k": pa.array(rows_at, pa.float64()),
            "pass^k": pa.array(rows_hat, pa.float64()),
            "tasks": pa.array(rows_tasks, pa.int64()),
            "tasks_total": pa.array([len(n)] * len(ks), pa.int64()),
        }
    )
    return _arrow_frame(table, frame)
