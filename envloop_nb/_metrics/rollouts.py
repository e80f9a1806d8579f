"""Rollout statistics as RL evaluation reports them, computed in one DuckDB query.

Rows (``quantity``, ``level``):

- ``rollouts`` × ``dispatched | completed | failed | cancelled | in progress | with reward |
  without reward``: counts only (``count``). *completed* is the runner's status
  ("succeeded"), independent of the reward: a failed rollout can carry a reward.
- ``reward`` × ``rollout``: over every rollout that has a reward (missing rewards are left
  out, never counted as 0).
- ``reward`` × ``task mean``: the mean reward of each task first, then statistics across
  tasks (every task weighs the same, however many rollouts it has).
- ``input_tokens`` (prompt), ``output_tokens`` (response), ``cache_tokens``, ``turns``,
  ``logprob_mean``, ``logprob_min``, ``duration_s`` (wall time), ``cost_usd`` × ``rollout``.

Statistic columns: ``count, mean, std, min, p50, max, zero_frac`` (``std`` is the sample
standard deviation; ``zero_frac`` the share of values equal to 0). A quantity the data
does not have has ``count`` 0 and null statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._store.frames import to_frame
from .._store.ref import require_attempts
from .counts import reward_scales, task_counts_sql

if TYPE_CHECKING:
    import duckdb

    from .._types import FrameKind

__all__ = ["ROLLOUT_QUANTITIES", "rollout_stats", "rollout_stats_sql"]

#: Per-rollout columns of ``attempts`` summarized, in display order.
ROLLOUT_QUANTITIES = (
    "reward",
    "input_tokens",
    "output_tokens",
    "cache_tokens",
    "turns",
    "logprob_mean",
    "logprob_min",
    "duration_s",
    "cost_usd",
)

_COUNTS = (
    ("dispatched", "TRUE"),
    ("completed", "status = 'completed'"),
    ("failed", "status = 'failed'"),
    ("cancelled", "status = 'cancelled'"),
    ("in progress", "status IN ('pending', 'running')"),
    ("with reward", "reward IS NOT NULL"),
    ("without reward", "reward IS NULL"),
)


def _stats(expr: str) -> str:
    return f"""count({expr})::BIGINT AS count, avg({expr})::DOUBLE AS mean,
        stddev_samp({expr})::DOUBLE AS std, min({expr})::DOUBLE AS min,
        quantile_cont({expr}, 0.5)::DOUBLE AS p50, max({expr})::DOUBLE AS max,
        (count(*) FILTER (WHERE {expr} = 0) / nullif(count({expr}), 0))::DOUBLE AS zero_frac"""


def rollout_stats_sql() -> str:
    """The query (parameters ``$job_id`` and the scales of :func:`~envloop_nb._metrics.counts.reward_scales`); one row per (quantity, level), in display order."""
    parts = [
        f"""SELECT {i} AS ord, 'rollouts' AS quantity, '{level}' AS level,
               count(*) FILTER (WHERE {cond})::BIGINT AS count, NULL::DOUBLE AS mean,
               NULL::DOUBLE AS std, NULL::DOUBLE AS min, NULL::DOUBLE AS p50,
               NULL::DOUBLE AS max, NULL::DOUBLE AS zero_frac
            FROM mine"""
        for i, (level, cond) in enumerate(_COUNTS)
    ]
    base = len(_COUNTS)
    parts.append(f"SELECT {base} AS ord, 'reward', 'rollout', {_stats('reward')} FROM mine")
    parts.append(
        f"""SELECT {base + 1} AS ord, 'reward', 'task mean', {_stats("task_reward")}
            FROM (SELECT reward_sum / scored AS task_reward FROM ({task_counts_sql()})
                  WHERE scored > 0)"""
    )
    for i, q in enumerate(ROLLOUT_QUANTITIES[1:], start=base + 2):
        parts.append(f"SELECT {i} AS ord, '{q}', 'rollout', {_stats(q)} FROM mine")
    union = "\nUNION ALL ".join(parts)
    return f"""
    WITH mine AS (SELECT * FROM attempts WHERE job_id = $job_id)
    SELECT quantity, level, count, mean, std, min, p50, max, zero_frac
    FROM ({union}) ORDER BY ord
    """


def rollout_stats(
    con: duckdb.DuckDBPyConnection, job_id: str, *, frame: FrameKind = "pandas"
) -> Any:
    """Rollout statistics of one job (see the module docstring for the rows).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> df = rollout_stats(job.con, job.id).set_index(["quantity", "level"])
    >>> int(df.loc[("rollouts", "failed"), "count"]), float(df.loc[("reward", "rollout"), "mean"])
    (1, 0.6)
    >>> float(df.loc[("reward", "task mean"), "mean"]), float(df.loc[("turns", "rollout"), "max"])
    (0.5, 14.0)
    >>> int(df.loc[("logprob_mean", "rollout"), "count"])
    0
    """
    require_attempts(con, job_id, "the rollout statistics (tokens, turns, logprobs)")
    params = {"job_id": job_id, **reward_scales(con, job_id)}
    rel = con.sql(rollout_stats_sql(), params=params)
    return to_frame(rel, frame)
