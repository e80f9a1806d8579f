"""The per-task counts in SQL, and the copy of them a load keeps (``task_counts_cache``).

The count columns (:func:`count_columns_sql`), the condition of a pass
(:func:`pass_sql`) and the exact reward sums (:func:`fixed_sum`) are written once here;
:mod:`envloop_nb._metrics.counts` builds every job metric on them.

A load counts each task's attempts anyway (its checks group the attempts by task), so it
keeps the counts that do not depend on a threshold, with the passes of ``reward = 1``,
in ``task_counts_cache`` (:func:`stage_counts_sql`, written by the load transaction): a
reopened workspace answers its first question from one row per task instead of
scanning every attempt. Under a threshold only the passes are counted again
(:func:`passes_sql`), and not even that when every reward is 0 or 1. The rows are valid
while their ``loaded_at`` is the job's (a reload deletes them; a workspace written
before the cache existed has none, and its counts are taken from the attempts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._types import ENDED
from .sql import fixed_point_scale, number

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = [
    "COUNT_NAMES",
    "MAX_ABS_REWARD",
    "NULLABLE",
    "STATS_SQL",
    "attempts_by_task_sql",
    "cached_counts",
    "count_columns_sql",
    "fixed_sum",
    "pass_sql",
    "passes_in_order_sql",
    "passes_sql",
    "reward_out_of_range",
    "reward_range_sql",
    "reward_sums_sql",
    "scales",
    "stage_counts_sql",
]

#: The per-task count columns (besides ``task``), in their order everywhere.
COUNT_NAMES = ("dispatched", "scored", "invalid", "passes", "nonbinary", "reward_sum",
               "reward_sumsq", "reward_min", "reward_max")  # fmt: skip
#: The count columns that stay null for a task without a scored attempt (every other is 0).
NULLABLE = ("reward_min", "reward_max")
#: The largest ``|reward|`` a load takes: its square, summed over up to 2^31 attempts,
#: stays a finite double, so the exact per-task sums (:func:`fixed_sum`) of any job can
#: be formed (beyond, ``reward²`` or its scale overflows: DuckDB's raw ``DOUBLE inf →
#: INT64`` error, naming nothing). 2^496 is about 2.05e149.
MAX_ABS_REWARD = 2.0**496
_RANGE = "is out of range: the exact per-task sums take |reward| up to 2^496 (about 2.05e+149)"


def reward_out_of_range(value: float) -> str:
    """The problem of a reward beyond :data:`MAX_ABS_REWARD`.

    Examples
    --------
    >>> reward_out_of_range(1e300)
    'reward 1e+300 is out of range: the exact per-task sums take |reward| up to 2^496 (about 2.05e+149)'
    """
    return f"reward {value!r} {_RANGE}"


def reward_range_sql(value: str, text: str) -> str:
    """A CASE branch: the DOUBLE ``value`` is beyond :data:`MAX_ABS_REWARD`, the problem
    shows the reward as the source wrote it (``text``, SQL of a VARCHAR). NaN is not
    beyond it (DuckDB orders NaN above every number)."""
    return (
        f"WHEN abs({value}) > {number(MAX_ABS_REWARD)} AND NOT isnan({value}) "
        f"THEN 'reward ' || {text} || ' {_RANGE}'"
    )


#: ``k`` and the recorded ``extra.reward_stats`` of a ``jobs`` row: :func:`scales`' inputs.
STATS_SQL = """attempts, TRY_CAST(extra->'reward_stats'->>'max_abs' AS DOUBLE),
               TRY_CAST(extra->'reward_stats'->>'max_sq' AS DOUBLE)"""


def scales(k: int | None, top: float | None, top_sq: float | None) -> dict[str, float]:
    """``$rscale`` / ``$qscale`` of the exact reward sums of a job of ``k`` attempts per
    task whose largest ``|reward|`` is ``top`` and largest ``reward²`` is ``top_sq``.

    Examples
    --------
    >>> scales(2, 1.0, 1.0) == {"rscale": 2.0**59, "qscale": 2.0**59}
    True
    """
    return {"rscale": fixed_point_scale(top, k), "qscale": fixed_point_scale(top_sq, k)}


def pass_sql(threshold: float | None) -> str:
    """The SQL condition of a pass: ``reward = 1``, or ``reward >= t`` with a threshold.

    Examples
    --------
    >>> pass_sql(None), pass_sql(0.5)
    ('reward = 1', 'reward >= 0.5e0')
    """
    return "reward = 1" if threshold is None else f"reward >= {number(threshold)}"


def count_columns_sql(value: str, status: str, passed: str, attempt: str = "attempt") -> str:
    """The per-task count columns, written once: ``dispatched, scored, invalid, passes,
    nonbinary`` of the rows grouped by task.

    ``value`` is the attempt's value (the reward, or a dimension's value), ``status`` its
    status column, ``passed`` the SQL condition of a pass and ``attempt`` the column that
    is null for a task's row without an attempt (a left join). A slot is *scored* when the
    value is not null; an unscored attempt that ended is *invalid*.

    Examples
    --------
    >>> print(count_columns_sql("reward", "status", "reward = 1").splitlines()[1].strip())
    count(reward)::INTEGER AS scored,
    """
    # list_contains, not IN: DuckDB runs an IN of several constants as a join per chunk
    return f"""count({attempt})::INTEGER AS dispatched,
               count({value})::INTEGER AS scored,
               count_if({value} IS NULL AND list_contains({list(ENDED)!r}, {status}))::INTEGER AS invalid,
               count_if({passed})::INTEGER AS passes,
               count_if({value} <> 0 AND {value} <> 1)::INTEGER AS nonbinary"""


def fixed_sum(value: str, scale: str, *, unchecked: bool = False) -> str:
    """An order-independent sum: each value scaled by a power of two, rounded to an
    integer, summed exactly, scaled back (the scales:
    :func:`envloop_nb._metrics.counts.reward_scales`).

    The scale makes every value and the sum of up to k of them fit 64 bits; a task with
    more rows than k is a load's error found after its counting pass, where
    ``unchecked`` makes such a sum NULL instead of DuckDB's raw conversion error.

    Examples
    --------
    >>> import duckdb
    >>> duckdb.sql(f"SELECT {fixed_sum('x', '2.0^4')} FROM (VALUES (0.5), (0.25)) t(x)").fetchone()
    (0.75,)
    """
    total = f"sum(({value} * {scale})::BIGINT)"
    total = f"TRY_CAST({total} AS BIGINT)" if unchecked else f"({total}::BIGINT)"
    return f"coalesce({total}::DOUBLE / {scale}, 0)::DOUBLE"


def reward_sums_sql(rscale: str, qscale: str, *, unchecked: bool = False) -> str:
    """The exact ``reward_sum`` and ``reward_sumsq`` columns at the scales ``rscale`` and
    ``qscale`` (SQL: parameters or numbers); ``unchecked``: see :func:`fixed_sum`.

    Examples
    --------
    >>> print(reward_sums_sql("$rscale", "$qscale").split(" AS ")[1].split(",")[0])
    reward_sum
    """
    return f"""{fixed_sum("reward", rscale, unchecked=unchecked)} AS reward_sum,
               {fixed_sum("reward * reward", qscale, unchecked=unchecked)} AS reward_sumsq"""


def _sum_columns(rscale: str, qscale: str, *, unchecked: bool = False) -> str:
    return f"""{reward_sums_sql(rscale, qscale, unchecked=unchecked)},
               min(reward) AS reward_min, max(reward) AS reward_max"""


def attempts_by_task_sql(job_id_param: str, threshold: float | None) -> str:
    """One row per task with attempts: ``task`` and the :data:`COUNT_NAMES` columns
    (parameters: the job id and ``$rscale`` / ``$qscale``)."""
    return f"""
        SELECT task,
               {count_columns_sql("reward", "status", pass_sql(threshold))},
               {_sum_columns("$rscale", "$qscale")}
        FROM attempts WHERE job_id = {job_id_param}
        GROUP BY task"""


def stage_counts_sql(distinct: str) -> str:
    """The load's one pass over a job's attempts (parameters ``$jid``, ``$rscale`` and
    ``$qscale``): per task, what its checks need (``n``, ``lo``, ``hi`` and ``d``, the
    number of distinct attempt numbers given by ``distinct``) and the counts
    :func:`cached_counts` reads back (a count over nothing but nulls is 0 there:
    DuckDB's ``count_if`` gives null). A sum over more rows than k is NULL (unchecked):
    the load's checks refuse such a task by name."""
    zeroed = ", ".join(f"coalesce({n}, 0) AS {n}" for n in COUNT_NAMES if n not in NULLABLE)
    return f"""
        SELECT * REPLACE ({zeroed}) FROM (
            SELECT task, count(*) AS n, min(attempt) AS lo, max(attempt) AS hi,
                   {distinct} AS d,
                   {count_columns_sql("reward", "status", pass_sql(None))},
                   {_sum_columns("$rscale", "$qscale", unchecked=True)}
            FROM attempts WHERE job_id = $jid GROUP BY task)"""


def passes_sql(threshold: float) -> str:
    """Per task with attempts: ``task`` and its ``passes`` under ``threshold``
    (parameter ``$job_id``), the one count a threshold changes."""
    return f"""SELECT task, count_if({pass_sql(threshold)})::INTEGER AS passes
               FROM attempts WHERE job_id = $job_id GROUP BY task"""


def cached_counts(con: duckdb.DuckDBPyConnection, job_id: str) -> pa.Table | None:
    """The counts the job's load kept (``task``, ``position`` and :data:`COUNT_NAMES`,
    passes of ``reward = 1``) in task order, or None when it kept none (a workspace
    written before the cache, a job without attempts) or they are not of its current
    load. Kept by this version: one row per requested task; by version 1: one per task
    with attempts, ``position`` null."""
    rows = con.execute(
        f"""SELECT task, position, {", ".join(COUNT_NAMES)} FROM task_counts_cache c
            WHERE job_id = $job_id
              AND loaded_at = (SELECT loaded_at FROM jobs WHERE job_id = $job_id)
            ORDER BY position, task""",
        {"job_id": job_id},
    ).to_arrow_table()
    return rows if rows.num_rows else None


def passes_in_order_sql(threshold: float) -> str:
    """Every requested task's ``passes`` under ``threshold``, in task order (parameter
    ``$job_id``): the column that replaces a kept count's passes."""
    return f"""SELECT coalesce(p.passes, 0)::INTEGER AS passes
               FROM tasks t LEFT JOIN ({passes_sql(threshold)}) p USING (task)
               WHERE t.job_id = $job_id ORDER BY t.position, t.task"""
