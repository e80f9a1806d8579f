"""The numbers of stage 2 computed without envloop_nb, straight from the Parquet file.

Each baseline returns ``(per_task, curve)`` as pandas frames with the canonical columns
(see :data:`PER_TASK_COLUMNS`), so the runner can check that every implementation agrees
with envloop_nb before it reports a time:

- :func:`floor` — the engine's floor: hand-written DuckDB SQL (one aggregation over the
  Parquet file into a per-task table, the per-task pass@k columns, and the curve from
  the per-task ``(n, c)`` histogram);
- :func:`pandas_baseline` — plain pandas as a user writes it in a notebook:
  ``read_parquet``, ``groupby("task").agg``, ``scipy.special.comb`` on the columns;
- :func:`polars_baseline` — idiomatic polars: ``scan_parquet`` (lazy), ``group_by``,
  the estimator as a running product of ratios in vectorized expressions.

Semantics are envloop_nb's under ``policy="unknown"``: per task ``n`` = scored attempts
(reward not null), ``c`` = passes (``reward >= threshold``); pass@k / pass^k of a task
are defined when ``n >= k``; a curve point averages the tasks with ``n >= k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

ENDED = ("completed", "failed", "cancelled")
KS = (1, 8, 32)


def per_task_columns(ks: Sequence[int] = KS) -> list[str]:
    cols = ["task", "dispatched", "scored", "invalid", "passes", "reward_mean"]
    for k in ks:
        cols += [f"pass@{k}", f"pass^{k}"]
    return cols


PER_TASK_COLUMNS = per_task_columns()
CURVE_COLUMNS = ["k", "pass@k", "pass^k", "tasks"]


# -- the floor: hand-written DuckDB SQL -------------------------------------------------

_RATIO_MACRO = """
CREATE OR REPLACE TEMP MACRO choose_ratio(top, n, k) AS
    CASE WHEN top < k THEN 0.0 WHEN top = n THEN 1.0
         ELSE exp(lgamma(top + 1) - lgamma(top - k + 1) - lgamma(n + 1) + lgamma(n - k + 1))
    END
"""


def floor_sql(source: str, threshold: float, ks: Sequence[int] = KS) -> tuple[str, str, str]:
    """The three statements of the floor: per-task aggregate, per-task frame, curve."""
    aggregate = f"""
    CREATE OR REPLACE TEMP TABLE per_task AS
    SELECT task,
           count(*) AS dispatched,
           count(reward) AS scored,
           count(*) FILTER (WHERE reward IS NULL AND status IN {ENDED!r}) AS invalid,
           count(*) FILTER (WHERE reward >= {threshold!r}) AS passes,
           avg(reward) AS reward_mean
    FROM read_parquet('{source}')
    GROUP BY task
    """
    cols = []
    for k in ks:
        cols.append(
            f"CASE WHEN scored >= {k} THEN 1 - choose_ratio(scored - passes, scored, {k}) END"
            f' AS "pass@{k}"'
        )
        cols.append(
            f'CASE WHEN scored >= {k} THEN choose_ratio(passes, scored, {k}) END AS "pass^{k}"'
        )
    per_task = f"SELECT *, {', '.join(cols)} FROM per_task ORDER BY task"
    curve = """
    WITH hist AS (SELECT scored AS n, passes AS c, count(*) AS tasks FROM per_task GROUP BY ALL)
    SELECT k, sum(tasks * (1 - choose_ratio(n - c, n, k))) / sum(tasks) AS "pass@k",
           sum(tasks * choose_ratio(c, n, k)) / sum(tasks) AS "pass^k",
           sum(tasks) AS tasks
    FROM hist, range(1, (SELECT max(n) FROM hist) + 1) r(k)
    WHERE n >= k AND k <= $kmax
    GROUP BY k ORDER BY k
    """
    return aggregate, per_task, curve


def floor(path: Path | str, threshold: float, kmax: int, ks: Sequence[int] = KS) -> Any:
    import duckdb

    source = str(path).replace("'", "''")
    con = duckdb.connect()
    con.execute(_RATIO_MACRO)
    aggregate, per_task_q, curve_q = floor_sql(source, threshold, ks)
    con.execute(aggregate)
    per_task = con.execute(per_task_q).df()
    curve = con.execute(curve_q, {"kmax": kmax}).df()
    con.close()
    return per_task, curve


# -- pandas, as a user writes it --------------------------------------------------------


def _pandas_per_task(path: Path | str, threshold: float) -> Any:
    """Read and group by task: the step both pandas baselines share (and time)."""
    import pandas as pd

    df = pd.read_parquet(path, columns=["task", "status", "reward"])
    df["passed"] = df["reward"] >= threshold
    df["invalid"] = df["reward"].isna() & df["status"].isin(ENDED)
    per_task = (
        df.groupby("task")
        .agg(
            dispatched=("reward", "size"),
            scored=("reward", "count"),
            invalid=("invalid", "sum"),
            passes=("passed", "sum"),
            reward_mean=("reward", "mean"),
        )
        .reset_index()
    )
    return per_task


def pandas_baseline(path: Path | str, threshold: float, kmax: int, ks: Sequence[int] = KS) -> Any:
    import numpy as np
    import pandas as pd
    from scipy.special import comb

    per_task = _pandas_per_task(path, threshold)
    n, c = per_task["scored"], per_task["passes"]

    def pass_at_k(k: int) -> Any:
        with np.errstate(invalid="ignore"):  # 0/0 where n < k, masked below
            return 1 - pd.Series(comb(n - c, k) / comb(n, k), index=per_task.index)

    def pass_hat_k(k: int) -> Any:
        with np.errstate(invalid="ignore"):
            return pd.Series(comb(c, k) / comb(n, k), index=per_task.index)

    for k in ks:
        per_task[f"pass@{k}"] = pass_at_k(k).where(n >= k)
        per_task[f"pass^{k}"] = pass_hat_k(k).where(n >= k)
    rows = []
    for k in range(1, kmax + 1):
        ok = n >= k
        if ok.any():
            rows.append(
                {
                    "k": k,
                    "pass@k": pass_at_k(k)[ok].mean(),
                    "pass^k": pass_hat_k(k)[ok].mean(),
                    "tasks": int(ok.sum()),
                }
            )
    return per_task, pd.DataFrame(rows)


def pandas_apply_baseline(
    path: Path | str, threshold: float, kmax: int, ks: Sequence[int] = KS
) -> Any:
    """pandas with the per-task estimator applied row by row (``DataFrame.apply``), the
    way the Codex paper's ``estimator`` is often pasted into notebooks. Slow by nature;
    run at 1M attempts at most."""
    import math

    import numpy as np
    import pandas as pd

    per_task = _pandas_per_task(path, threshold)

    def pass_at_k(n: int, c: int, k: int) -> float:
        if n < k:
            return np.nan
        if n - c < k:
            return 1.0
        return 1.0 - math.comb(n - c, k) / math.comb(n, k)

    def pass_hat_k(n: int, c: int, k: int) -> float:
        if n < k:
            return np.nan
        return math.comb(c, k) / math.comb(n, k)

    def column(f: Any, k: int) -> Any:
        return per_task.apply(lambda r: f(int(r["scored"]), int(r["passes"]), k), axis=1)

    for k in ks:
        per_task[f"pass@{k}"] = column(pass_at_k, k)
        per_task[f"pass^{k}"] = column(pass_hat_k, k)
    rows = []
    for k in range(1, kmax + 1):
        at, hat = column(pass_at_k, k), column(pass_hat_k, k)
        if at.notna().any():
            rows.append(
                {"k": k, "pass@k": at.mean(), "pass^k": hat.mean(), "tasks": int(at.notna().sum())}
            )
    return per_task, pd.DataFrame(rows)


# -- polars, idiomatic ------------------------------------------------------------------


def polars_baseline(path: Path | str, threshold: float, kmax: int, ks: Sequence[int] = KS) -> Any:
    import polars as pl

    reward = pl.col("reward")
    per_task = (
        pl.scan_parquet(path)
        .group_by("task")
        .agg(
            dispatched=pl.len(),
            scored=reward.count(),
            invalid=(reward.is_null() & pl.col("status").is_in(ENDED)).sum(),
            passes=(reward >= threshold).sum(),
            reward_mean=reward.mean(),
        )
        .sort("task")
        .collect()
    )
    n, c = pl.col("scored"), pl.col("passes")
    # C(top, k) / C(n, k) as the running product of (top - i) / (n - i), i < k.
    fail, every = pl.lit(1.0), pl.lit(1.0)
    at: dict[int, pl.Expr] = {}
    hat: dict[int, pl.Expr] = {}
    for k in range(1, kmax + 1):
        fail = fail * ((n - c - (k - 1)) / (n - (k - 1))).clip(lower_bound=0)
        every = every * ((c - (k - 1)) / (n - (k - 1))).clip(lower_bound=0)
        at[k] = pl.when(n >= k).then(1 - fail)
        hat[k] = pl.when(n >= k).then(every)
    curve_row = per_task.select(
        [at[k].mean().alias(f"a{k}") for k in at]
        + [hat[k].mean().alias(f"h{k}") for k in hat]
        + [(n >= k).sum().alias(f"t{k}") for k in at]
    ).row(0, named=True)
    curve = pl.DataFrame(
        {
            "k": list(at),
            "pass@k": [curve_row[f"a{k}"] for k in at],
            "pass^k": [curve_row[f"h{k}"] for k in at],
            "tasks": [curve_row[f"t{k}"] for k in at],
        }
    ).filter(pl.col("tasks") > 0)
    per_task = per_task.with_columns(
        [e for k in ks for e in (at[k].alias(f"pass@{k}"), hat[k].alias(f"pass^{k}"))]
    )
    return per_task.to_pandas(), curve.to_pandas()


# -- envloop_nb -------------------------------------------------------------------------


def envloop(job: Any, threshold: float, kmax: int, ks: Sequence[int] = KS) -> Any:
    """Stage 2 with envloop_nb: summary, per-task table, curve (pandas frames)."""
    summary = job.summary(threshold=threshold)
    per_task = job.samples(ks=list(ks), threshold=threshold)
    curve = job.curve(ks=list(range(1, kmax + 1)), threshold=threshold)
    return summary, per_task, curve


def canonical(per_task: Any, curve: Any, ks: Sequence[int] = KS) -> tuple[Any, Any]:
    """The columns every implementation must agree on, sorted, as float64/str."""
    pt = per_task[per_task_columns(ks)].copy()
    pt["task"] = pt["task"].astype(str)
    pt = pt.sort_values("task").reset_index(drop=True)
    for col in pt.columns[1:]:
        pt[col] = pt[col].astype("float64")
    cv = curve[CURVE_COLUMNS].copy()
    cv = cv[cv["tasks"] > 0].sort_values("k").reset_index(drop=True)
    for col in cv.columns:
        cv[col] = cv[col].astype("float64")
    return pt, cv


def disagreement(a: tuple[Any, Any], b: tuple[Any, Any]) -> str | None:
    """None when two canonical results agree (counts exactly, rates within 1e-9)."""
    import numpy as np

    for what, x, y in (("per-task", a[0], b[0]), ("curve", a[1], b[1])):
        if x.shape != y.shape:
            return f"{what}: shape {x.shape} vs {y.shape}"
        for col in x.columns:
            if col == "task":
                if not (x[col].to_numpy() == y[col].to_numpy()).all():
                    return f"{what}: task names differ"
                continue
            xv, yv = x[col].to_numpy(dtype=float), y[col].to_numpy(dtype=float)
            if not np.array_equal(np.isnan(xv), np.isnan(yv)):
                return f"{what}.{col}: null in different rows ({np.isnan(xv).sum()} vs {np.isnan(yv).sum()})"
            diff = np.abs(np.nan_to_num(xv) - np.nan_to_num(yv))
            if diff.size and diff.max() > 1e-9:
                i = int(diff.argmax())
                return f"{what}.{col}: row {i}: {xv[i]!r} vs {yv[i]!r}"
    return None
