"""Per turn: how long attempts run, how that relates to passing, and when errors come.

``steps``
    An attempt's steps are its step rows (``1..n``): ``n`` is its length. Attempts are
    binned by length — each length its own bin when there are at most ``bins`` distinct
    lengths, else bins of equal whole-number width (``low..high`` inclusive) — with the
    attempts, scored attempts and passes of each bin and the pass rate (task bootstrap
    interval, see :mod:`.base`; unscored attempts are in ``attempts`` only).
``first_error``
    The step of an attempt's first error step (``is_error`` or kind ``error``): one row
    per step with the attempts whose first error it is. Attempts without an error are
    in no row (:attr:`TurnStats.without_error` counts them).
``survival``
    For ``t = 0..`` the longest attempt: the attempts with no error step at or before
    step ``t`` and their share of the attempts with steps. An attempt that ended before
    ``t`` without an error stays error-free (the share of attempts that never met an
    error by step t; not a Kaplan–Meier estimate). ``t = 0`` is always 1.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Basis, basis, interval_columns, task_intervals
from .summary import attempt_steps, outcomes

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

__all__ = ["TurnStats", "turn_stats"]


@dataclass(frozen=True)
class TurnStats:
    """Steps per attempt, pass rate by length, first error and survival of one job.

    Attributes
    ----------
    steps
        Per length bin: ``low, high, attempts, scored, passed, pass_rate, pass_rate_low,
        pass_rate_high``.
    first_error
        ``step, attempts``: the attempts whose first error step is that step.
    survival
        ``step, no_error, share`` for ``step = 0..max``.
    basis
        The attempts counted.
    median_steps, median_first_error
        Medians over the attempts with steps / with an error (None without any).
    without_error
        Attempts with steps and no error step.
    method
        How the pass-rate intervals were made.
    """

    steps: pd.DataFrame
    first_error: pd.DataFrame
    survival: pd.DataFrame
    basis: Basis
    median_steps: float | None
    median_first_error: float | None
    without_error: int
    method: str

    def _repr_html_(self) -> str:
        from .._present.behaviour_html import turn_summary_html

        return turn_summary_html(self.summary(), self.steps, note=html.escape(str(self.basis)))

    def summary(self) -> dict[str, float | int | None]:
        """The headline numbers as a dict (attempts, medians, errors)."""
        with_error = self.basis.attempts - self.without_error
        return {
            "attempts": self.basis.attempts,
            "median_steps": self.median_steps,
            "with_error": with_error,
            "error_share": with_error / self.basis.attempts if self.basis.attempts else None,
            "median_first_error": self.median_first_error,
        }


def _per_attempt(con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None) -> pa.Table:
    """One row per attempt of record with steps: ``task, attempt, n, first_error, passed``
    (1 a pass, 0 a failure, null not scored)."""
    import numpy as np
    import pyarrow as pa

    found = outcomes(con, job_id, threshold).passed
    mine = found >= -1
    passed = found[mine].astype(np.int32)
    table = attempt_steps(con, job_id).filter(pa.array(mine))
    table = table.select(["task", "attempt", "n", "first_error"])
    return table.append_column("passed", pa.array(passed, mask=passed == -1))


def turn_stats(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    threshold: float | None = None,
    bins: int = 12,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> TurnStats:
    """Steps per attempt, pass rate by length, first error and survival (module docstring).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> t = turn_stats(job.con, job.id)
    >>> len(t.steps), len(t.survival), t.median_steps
    (0, 0, None)
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    base = basis(con, job_id, threshold)
    # one row per attempt with steps, queried four times below (by DuckDB's replacement scan)
    _el_per = _per_attempt(con, job_id, threshold)
    per = "_el_per"
    lo, hi, distinct, median, median_err, no_err = con.execute(
        f"""SELECT min(n), max(n), count(DISTINCT n), median(n), median(first_error),
                   count(*) FILTER (WHERE first_error IS NULL) FROM {per}"""
    ).fetchone()  # type: ignore[misc]
    width = 1 if lo is None or distinct <= bins else math.ceil((hi - lo + 1) / bins)
    per_bin = con.execute(
        f"""SELECT $lo + b * $w AS low, $lo + (b + 1) * $w - 1 AS high, task,
                   count(*) AS attempts, count(passed) AS scored,
                   count(*) FILTER (WHERE passed = 1) AS passed
            FROM (SELECT *, ((n - $lo) // $w)::BIGINT AS b FROM {per})
            GROUP BY b, task ORDER BY b, task""",
        {"lo": lo or 0, "w": width},
    ).df()
    tasks = sorted(set(per_bin["task"]))
    method = (
        f"percentile task bootstrap ({resamples:,} resamples of the {len(tasks):,} tasks with "
        f"replacement, seed {seed}), {confidence:.0%} intervals"
    )
    steps = per_bin.groupby(["low", "high"], sort=True)[["attempts", "scored", "passed"]].sum()
    steps = steps.reset_index()
    if len(per_bin):
        per_bin["bin"] = per_bin["low"]
        ivs = task_intervals(
            per_bin, key="bin", rates=[("pass_rate", "passed", "scored")], tasks=tasks,
            resamples=resamples, seed=seed, confidence=confidence,
        )  # fmt: skip
        steps = interval_columns(steps.assign(bin=steps["low"]), ivs, key="bin", name="pass_rate")
        steps = steps.drop(columns="bin")
    else:
        for c in ("pass_rate", "pass_rate_low", "pass_rate_high"):
            steps[c] = []
    steps = steps.astype({c: "int64" for c in ("low", "high", "attempts", "scored", "passed")})
    first = con.execute(
        f"""SELECT first_error AS step, count(*)::BIGINT AS attempts FROM {per}
            WHERE first_error IS NOT NULL GROUP BY 1 ORDER BY 1"""
    ).df()
    survival = con.execute(
        f"""WITH f AS (SELECT first_error AS t, count(*) AS e FROM {per}
                       WHERE first_error IS NOT NULL GROUP BY 1),
                 g AS (SELECT range AS t FROM range(0, coalesce((SELECT max(n) FROM {per}) + 1, 0)))
            SELECT g.t::BIGINT AS step,
                   ($total - coalesce(sum(f.e) OVER (ORDER BY g.t), 0))::BIGINT AS no_error
            FROM g LEFT JOIN f USING (t) ORDER BY g.t""",
        {"total": base.attempts},
    ).df()
    survival["share"] = survival["no_error"] / base.attempts if base.attempts else []
    return TurnStats(
        steps=steps,
        first_error=first,
        survival=survival,
        basis=base,
        median_steps=None if median is None else float(median),
        median_first_error=None if median_err is None else float(median_err),
        without_error=int(no_err or 0),
        method=method,
    )
