"""Does the source's own number agree with the toolkit's? One row per number.

Every loader keeps the aggregates its source reports as
:class:`~envloop_nb._store.source_numbers.SourceNumber` recipes (``jobs.extra``). Each
is recomputed here from the job's stored rows, under the source's own rules: which values,
how a task's attempts are reduced (Inspect's epoch reducers), the statistic over tasks or
attempts, what a pass is and how a missing value counts (Inspect drops NaN scores and
errored epochs; Terminal-Bench and τ-bench count them as failures).

The per-task counts come from one SQL pass over the job (``n`` values, ``c`` passes,
their sum, max and median per task); reducers and statistics are vectorised over tasks.
pass@k / pass^k use the exact estimators of :mod:`.passk`.

Where numbers differ by definition, not by error: Inspect's headline ``mean`` is a mean
per sample over its epochs, then a mean over samples; the EnvLoop ``score`` is a mean over
all scored attempts. They agree when every task has the same number of scored attempts.

Examples
--------
>>> import envloop_nb as enb
>>> from pathlib import Path
>>> log = sorted(Path("../shared/fixtures/inspect/eval").glob("*.eval"))[0]
>>> job = enb.open().load(log)
>>> rows = source_agreement(job.con, job.id)
>>> [(r.metric, r.source, r.agrees) for r in rows][4:6]
[('exact · pass_at_2 · accuracy', 0.5555555555555556, True), ('exact · pass_at_2 · stderr', 0.08937774072664932, True)]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._store.frames import to_frame
from .._store.source_numbers import SourceNumber
from .._types import FrameKind
from .passk import pass_at_k, pass_hat_k

if TYPE_CHECKING:
    import duckdb
    from numpy.typing import NDArray

__all__ = [
    "NO_ATTEMPTS",
    "NO_VALUES",
    "Agreement",
    "agreement_frame",
    "source_agreement",
    "source_numbers",
]

#: Relative and absolute tolerance of ``agrees`` for non-count statistics: the source's
#: float arithmetic (numpy means, products) differs from exact arithmetic in the last bits.
REL_TOL = 1e-9
ABS_TOL = 1e-12
_COUNTS = ("scored", "unscored", "passed", "not_passed")


@dataclass(frozen=True)
class Agreement:
    """One source number beside the recomputed one.

    ``agrees`` is None when the number cannot be checked: the job holds no attempts (a
    log written without its samples) or nothing to recompute it from (every value it
    would be taken over is missing, so the recomputation is NaN while the source states
    a number). ``note`` then says why.
    """

    number: SourceNumber
    recomputed: float | None
    agrees: bool | None
    note: str | None = None

    @property
    def metric(self) -> str:
        return self.number.metric

    @property
    def source(self) -> float:
        return self.number.source


def source_numbers(con: duckdb.DuckDBPyConnection, job_id: str) -> list[SourceNumber]:
    """The numbers the job's source reported (empty when it reported none)."""
    row = con.execute("SELECT extra FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    if row is None:
        raise KeyError(f"job {job_id!r} is no longer in the workspace")
    extra = json.loads(row[0]) if isinstance(row[0], str) else (row[0] or {})
    return [SourceNumber.from_dict(d) for d in extra.get("source_numbers") or []]


@dataclass(frozen=True)
class _PerTask:
    """Per requested task: values counted, passes, sum, max, median, mode (numpy)."""

    n: NDArray[np.int64]
    c: NDArray[np.int64]
    total: NDArray[np.float64]
    top: NDArray[np.float64]
    median: NDArray[np.float64]
    mode: NDArray[np.float64]
    k: int


def _values_sql(num: SourceNumber) -> str:
    """``task, attempt, value`` of the number's values (the reward or a dimension)."""
    if num.dimension is None:
        return "SELECT task, attempt, reward AS value FROM attempts WHERE job_id = $job_id"
    return "SELECT task, attempt, value FROM dimensions WHERE job_id = $job_id AND name = $dim"


def _tagged_sql(num: SourceNumber, task: str) -> str:
    """SQL true for the number's tasks (all of them unless it names ``tasks_tag``)."""
    if not num.tasks_tag:
        return "true"
    return (
        f"EXISTS (SELECT 1 FROM task_tags g WHERE g.job_id = $job_id AND g.task = {task} "
        "AND g.key = $tag_key AND g.value = $tag_value)"
    )


def _params(job_id: str, num: SourceNumber) -> dict[str, Any]:
    """The parameters of :func:`_values_sql` and :func:`_tagged_sql`."""
    params: dict[str, Any] = {"job_id": job_id}
    if num.dimension is not None:
        params["dim"] = num.dimension
    if num.tasks_tag:
        params["tag_key"], params["tag_value"] = num.tasks_tag
    return params


def _per_task(con: duckdb.DuckDBPyConnection, job_id: str, num: SourceNumber) -> _PerTask:
    passed = "v.value = 1" if num.threshold is None else "v.value >= $thr"
    if num.policy == "failure":  # every requested slot, a missing value as 0
        obs = """SELECT r.task, s.attempt, coalesce(v.value, 0) AS value
                 FROM req r CROSS JOIN range(1, $k + 1) s(attempt)
                 LEFT JOIN vals v ON v.task = r.task AND v.attempt = s.attempt"""
    else:
        obs = """SELECT r.task, v.attempt, v.value FROM req r
                 LEFT JOIN vals v ON v.task = r.task AND v.value IS NOT NULL"""
    sql = f"""
    WITH vals AS ({_values_sql(num)}),
    req AS (SELECT t.task, t.position FROM tasks t
            WHERE t.job_id = $job_id AND {_tagged_sql(num, "t.task")}),
    obs AS ({obs}),
    modes AS (
        SELECT task, arg_max(value, (cnt, -first)) AS mode FROM (
            SELECT task, value, count(*) AS cnt, min(attempt) AS first FROM obs
            WHERE value IS NOT NULL GROUP BY task, value)
        GROUP BY task)
    SELECT count(v.value)::BIGINT AS n,
           count(*) FILTER (WHERE {passed})::BIGINT AS c,
           coalesce(fsum(v.value ORDER BY v.attempt), 0)::DOUBLE AS total,
           max(v.value)::DOUBLE AS top,
           quantile_cont(v.value, 0.5)::DOUBLE AS median,
           any_value(m.mode)::DOUBLE AS mode
    FROM req r LEFT JOIN obs v ON v.task = r.task LEFT JOIN modes m ON m.task = r.task
    GROUP BY r.task, r.position ORDER BY r.position
    """
    k_row = con.execute("SELECT attempts FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    k = int(k_row[0]) if k_row else 1
    params = _params(job_id, num)
    if num.policy == "failure":
        params["k"] = k
    if num.threshold is not None:
        params["thr"] = num.threshold
    cols = con.execute(sql, params).fetchnumpy()

    def floats(name: str) -> NDArray[np.float64]:
        col = cols[name]
        filled = col.filled(np.nan) if np.ma.isMaskedArray(col) else col
        return np.asarray(filled, dtype=np.float64)

    return _PerTask(
        n=np.asarray(cols["n"], dtype=np.int64),
        c=np.asarray(cols["c"], dtype=np.int64),
        total=floats("total"),
        top=floats("top"),
        median=floats("median"),
        mode=floats("mode"),
        k=k,
    )


def _reduced(t: _PerTask, num: SourceNumber) -> NDArray[np.float64]:
    """Each task's reduced value; NaN for a task the reducer cannot score."""
    scored = t.n > 0
    out = np.full(t.n.shape, np.nan)
    if num.reducer == "mean":
        out[scored] = t.total[scored] / t.n[scored]
    elif num.reducer == "max":
        out[scored] = t.top[scored]
    elif num.reducer == "median":
        out[scored] = t.median[scored]
    elif num.reducer == "mode":
        out[scored] = t.mode[scored]
    elif num.reducer == "at_least":
        assert num.k is not None
        out[scored] = (t.c[scored] >= num.k).astype(np.float64)
    elif num.reducer in ("pass_at", "pass_k"):
        assert num.k is not None
        enough = t.n >= num.k
        if enough.any():
            fn = pass_at_k if num.reducer == "pass_at" else pass_hat_k
            out[enough] = fn(t.n[enough], t.c[enough], num.k)
    return out


def _statistic(values: NDArray[np.float64], requested: int, passes: int, name: str) -> float:
    kept = values[~np.isnan(values)]
    n = len(kept)
    if name == "scored":
        return float(n)
    if name == "unscored":
        return float(requested - n)
    if name == "passed":
        return float(passes)
    if name == "not_passed":
        return float(requested - passes)
    if n == 0:
        return math.nan
    if name == "mean":
        return math.fsum(kept.tolist()) / n
    return _spread(float(np.var(kept, ddof=1)) if n > 1 else 0.0, n, name)


def _spread(var: float, n: int, name: str) -> float:
    """``var``, ``std`` or ``stderr`` from a sample variance (ddof = 1) of ``n`` values;
    0 for fewer than two (Inspect's std / stderr / var of one value)."""
    if n < 2:
        return 0.0
    if name == "var":
        return var
    if name == "std":
        return math.sqrt(var)
    return math.sqrt(var) / math.sqrt(n)  # stderr


def _recompute(
    con: duckdb.DuckDBPyConnection, job_id: str, num: SourceNumber, t: _PerTask
) -> float:
    if num.reducer == "none":  # every attempt is an observation
        requested = len(t.n) * t.k if num.policy == "failure" else int(t.n.sum())
        if num.statistic in _COUNTS:
            scored = int(t.n.sum())
            return float(
                {
                    "scored": scored,
                    "unscored": len(t.n) * t.k - scored,
                    "passed": int(t.c.sum()),
                    "not_passed": requested - int(t.c.sum()),
                }[num.statistic]
            )
        return _attempt_statistic(con, job_id, num, requested, t)
    values = _reduced(t, num)
    passes = int(np.nansum(values >= (1.0 if num.threshold is None else num.threshold)))
    requested = len(t.n)
    return _statistic(values, requested, passes, num.statistic)


def _attempt_statistic(
    con: duckdb.DuckDBPyConnection, job_id: str, num: SourceNumber, requested: int, t: _PerTask
) -> float:
    """mean / std / var / stderr over attempts (reducer ``none``)."""
    n = requested
    if n == 0:
        return math.nan
    mean = math.fsum(t.total.tolist()) / n
    if num.statistic == "mean":
        return mean
    # sum of squares about the mean, over the same observations, in SQL
    row = con.execute(
        f"""SELECT fsum((value - $mean) * (value - $mean) ORDER BY task, attempt), count(value)
            FROM ({_values_sql(num)}) v WHERE {_tagged_sql(num, "v.task")}""",
        {**_params(job_id, num), "mean": mean},
    ).fetchone()
    ss = float(row[0] or 0.0) if row else 0.0
    if num.policy == "failure":  # the missing slots are zeros
        ss += (n - int(row[1] if row else 0)) * mean * mean
    return _spread(ss / (n - 1) if n > 1 else 0.0, n, num.statistic)


def _agrees(num: SourceNumber, mine: float) -> bool:
    """``mine`` is in the source's units (times ``num.scale``)."""
    if math.isnan(num.source) or math.isnan(mine):
        return math.isnan(num.source) and math.isnan(mine)
    if num.statistic in _COUNTS:
        return num.source == mine
    if num.decimals is not None:  # rounded by the source: within half its last decimal
        half = 0.5 * 10.0**-num.decimals
        if abs(num.source - mine) <= half * (1 + REL_TOL):
            return True
    return math.isclose(num.source, mine, rel_tol=REL_TOL, abs_tol=ABS_TOL)


#: Why a number cannot be checked (``Agreement.note``).
NO_ATTEMPTS = (
    "cannot be checked: the job holds no attempts (a log written without its samples), "
    "so there is nothing to recompute it from"
)
NO_VALUES = (
    "cannot be checked: no task has a value it is taken over (every value is missing), "
    "so the recomputation is undefined"
)


def _has_attempts(con: duckdb.DuckDBPyConnection, job_id: str) -> bool:
    row = con.execute("SELECT EXISTS (FROM attempts WHERE job_id = ?)", [job_id]).fetchone()
    return bool(row and row[0])


def source_agreement(con: duckdb.DuckDBPyConnection, job_id: str) -> list[Agreement]:
    """Each number the job's source reported, recomputed from the job's rows.

    A number that cannot be checked (:class:`Agreement`) has ``agrees`` None and a
    ``note``, never ``False``: a disagreement is a recomputed number that differs.
    """
    numbers = source_numbers(con, job_id)
    if numbers and not _has_attempts(con, job_id):
        return [Agreement(num, None, None, NO_ATTEMPTS) for num in numbers]
    out = []
    per_task: dict[tuple[Any, ...], _PerTask] = {}  # numbers of one recipe share a pass
    for num in numbers:
        key = (num.of, num.policy, num.threshold, num.tasks_tag)
        if key not in per_task:
            per_task[key] = _per_task(con, job_id, num)
        mine = _recompute(con, job_id, num, per_task[key]) * num.scale
        if math.isnan(mine) and not math.isnan(num.source):
            out.append(Agreement(num, None, None, NO_VALUES))
        else:
            out.append(Agreement(num, None if math.isnan(mine) else mine, _agrees(num, mine)))
    return out


def agreement_frame(
    con: duckdb.DuckDBPyConnection, job_id: str, frame: FrameKind = "pandas"
) -> Any:
    """:func:`source_agreement` as a frame: ``metric, source, recomputed, agrees, rule,
    note`` and the recipe (``of, reducer, k, statistic, policy, threshold``); ``agrees``
    is null and ``note`` says why when a number cannot be checked."""
    import pyarrow as pa

    rows = source_agreement(con, job_id)
    table = pa.table(
        {
            "metric": pa.array([r.metric for r in rows], pa.string()),
            "source": pa.array([r.source for r in rows], pa.float64()),
            "recomputed": pa.array([r.recomputed for r in rows], pa.float64()),
            "agrees": pa.array([r.agrees for r in rows], pa.bool_()),
            "rule": pa.array([r.number.rule for r in rows], pa.string()),
            "note": pa.array([r.note for r in rows], pa.string()),
            "of": pa.array([r.number.of for r in rows], pa.string()),
            "reducer": pa.array([r.number.reducer for r in rows], pa.string()),
            "k": pa.array([r.number.k for r in rows], pa.int64()),
            "statistic": pa.array([r.number.statistic for r in rows], pa.string()),
            "policy": pa.array([r.number.policy for r in rows], pa.string()),
            "threshold": pa.array([r.number.threshold for r in rows], pa.float64()),
        }
    )
    return to_frame(con.from_arrow(table), frame)
