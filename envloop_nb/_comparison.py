"""Checkpoint comparison of up to five jobs: guard, leaderboard, table, paired stats, transitions.

``ws.compare([a, b, ...], baseline=a)`` returns a :class:`Comparison`. The numbers come
from one DuckDB query over all the jobs, grouped by job and task (and by subset, or by
dimension); Python only sees per-task rows (tasks x jobs, never attempts).

Comparability guard
    Jobs are *comparable* when they ran the same frozen work: the same dataset
    (name, version, revision), the same runner, the same requested task names with the
    same digests, and the same attempts per task. Model and profile may differ. Every
    way they differ is a :class:`Difference` with a plain sentence. Differences that do
    not break comparability (a verifier version, a dimension's unit or direction, a job
    still running) are listed with ``blocking=False``. Incomparable jobs can still be
    shown side by side; every view then carries a mark, and paired statistics use only
    the tasks both jobs requested (same name and digest) and say so.

Dimensions
    A dimension is identified by its name, unit and direction (``higher_is_better``).
    When jobs disagree on the unit or direction of a name, each variant gets its own
    label (``"accuracy [pct]"`` / ``"accuracy [ratio]"``) and is never put on one row.

Paired statistics (``cmp.paired()``)
    On the tasks both jobs requested and scored completely (every requested attempt has
    a reward; under ``policy="failure"`` every task counts), the per-task score
    (mean reward) and pass rate are paired task by task; the interval is a percentile
    bootstrap over tasks (same resampled tasks for both jobs, seeded). For binary
    rewards an exact McNemar test runs on the per-task "solved" outcome (pass rate
    ``>= solved_at``, default 0.5). A gap is called *beyond noise* when the score
    interval excludes zero and (binary rewards) McNemar's p < 0.05, *borderline* when
    only one of the two says so, otherwise *within noise*. Nothing is assessed when the
    pair is not comparable or when fewer than half of the tasks are shared and complete.

Transitions (``cmp.transitions()``)
    A task is *solved* by a job when its pass rate is at least ``solved_at`` (default
    0.5: a majority of attempts pass; use ``solved_at=1e-9`` for "any attempt passes",
    ``1.0`` for "every attempt passes"). With non-binary rewards the task's mean reward
    is used instead. Tasks not shared or not completely scored in both jobs are listed
    as "not compared".
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._errors import EnvloopError
from ._job import Job
from ._metrics.counts import _check_options
from ._metrics.paired_stats import PairedDiff, mcnemar_exact, paired_diff_ci, ratio_ci
from ._present.display import format_metric, format_pct
from ._store.frames import to_frame
from ._store.sql import number
from ._types import FrameKind, Policy

if TYPE_CHECKING:
    import pandas as pd

    from ._metrics.counts import JobSummary
    from ._workspace import Workspace
else:

    class _LazyPandas:
        """pandas, imported on first use: ``import envloop_nb`` stays cheap."""

        def __getattr__(self, name: str) -> Any:
            import pandas

            return getattr(pandas, name)

    pd = _LazyPandas()

__all__ = [
    "MAX_JOBS",
    "PALETTE",
    "Comparison",
    "Difference",
    "LeaderboardSnapshot",
    "compare",
    "save_snapshot",
    "saved_leaderboard",
]

MAX_JOBS = 5
#: One colour per job, keyed by the job's position in the comparison (never by baseline).
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2")
TRANSITIONS = ("fixed", "broken", "still failing", "still passing")
NOT_COMPARED = "not compared"
NO_BUCKET = "(no bucket: metric undefined)"
By = Literal["subset", "dimension"]


# -- results -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    """One way the compared jobs differ.

    Parameters
    ----------
    field
        What differs: ``dataset``, ``dataset_revision``, ``runner``, ``tasks``,
        ``task_digests``, ``attempts``, ``verifier_version``, ``dimension_unit``,
        ``dimension_direction``, ``status``.
    jobs
        The ids of the jobs concerned.
    detail
        A plain sentence: ``"12 tasks only in job_otherrev"``, ``"attempts 2 vs 4"``.
    blocking
        True when this makes the jobs incomparable (dataset, runner, tasks, attempts).

    Examples
    --------
    >>> str(Difference("attempts", ("a", "b"), "attempts 2 (a) vs 4 (b)"))
    'attempts 2 (a) vs 4 (b)'
    """

    field: str
    jobs: tuple[str, ...]
    detail: str
    blocking: bool = True

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class LeaderboardSnapshot:
    """A job's headline numbers saved in the workspace leaderboard.

    ``new`` is False when the same job (same id, same attempts fingerprint, same policy
    and threshold) had been saved before and the earlier snapshot was returned.
    """

    snapshot_id: str
    job_id: str
    fingerprint: str
    saved_at: Any
    score: float | None
    scored: int
    missing: int
    total: int
    new: bool

    def __str__(self) -> str:
        state = "saved" if self.new else "already saved"
        return (
            f"{self.job_id} {state} as {self.snapshot_id}: score {format_metric(self.score)}"
            f" · {self.scored:,}/{self.total:,} scored, {self.missing:,} missing"
        )


def _pts(value: float | None, percent: bool) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    return f"{value * 100:+.1f} pts" if percent else f"{value:+.3g}"


def _signed(value: float | None, percent: bool) -> str:
    if value is None:
        return "-"
    return f"{value * 100:+.1f}" if percent else f"{value:+.3g}"


def _coverage_text(scored: int, total: int) -> str:
    missing = total - scored
    return f"{scored:,}/{total:,} scored" + (f", {missing:,} missing" if missing else "")


def _framed(method: Callable[..., pd.DataFrame]) -> Callable[..., Any]:
    """Add ``frame="pandas"|"polars"`` to a method returning a pandas frame.

    A polars frame has no ``attrs``: the incomparability mark is then in
    ``Comparison.mark`` only, and a matrix's row labels become its first column.
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, frame: FrameKind = "pandas", **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        if frame == "pandas":
            return out
        if frame == "polars":
            import polars as pl

            if out.index.name is not None:
                out = out.reset_index()
            return pl.from_pandas(out)
        raise ValueError(f"frame must be 'pandas' or 'polars', got {frame!r}")

    return wrapper


# -- the comparison --------------------------------------------------------------------
class Comparison:
    """A comparison of 2-5 jobs against a baseline (see the module docstring).

    Create it with ``ws.compare(jobs, baseline=...)``. Frames come back as pandas; every
    frame method also takes ``frame="polars"``.
    Colours follow the order of ``jobs`` (never the baseline) in every chart. Results are
    computed on first use and kept: reload a job, then compare again to see the change.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="copy")
    >>> cmp = ws.compare([a, b])
    >>> cmp.comparable, [d.detail for d in cmp.differences if d.blocking]
    (True, [])
    >>> cmp.leaderboard()[["rank", "job", "score", "coverage"]].values.tolist()
    [[1, 'job_abc0001', 0.6, '5/6 scored, 1 missing'], [1, 'copy', 0.6, '5/6 scored, 1 missing']]
    """

    def __init__(
        self,
        workspace: Workspace,
        jobs: Sequence[Job],
        baseline: Job,
        *,
        policy: Policy = "unknown",
        threshold: float | None = None,
        solved_at: float = 0.5,
        resamples: int = 2000,
        seed: int = 0,
        confidence: float = 0.95,
    ) -> None:
        _check_options(policy, threshold)
        if not 0 < solved_at <= 1:
            raise ValueError(f"solved_at must be in (0, 1], got {solved_at!r}")
        self.workspace = workspace
        self.jobs: tuple[Job, ...] = tuple(jobs)
        self.baseline = baseline
        self.policy: Policy = policy
        self.threshold = threshold
        self.solved_at = solved_at
        self.resamples = resamples
        self.seed = seed
        self.confidence = confidence

    # -- basics ------------------------------------------------------------------
    @property
    def job_ids(self) -> list[str]:
        """Job ids in comparison order (the colour order)."""
        return [j.id for j in self.jobs]

    @property
    def others(self) -> list[Job]:
        """Every job but the baseline."""
        return [j for j in self.jobs if j.id != self.baseline.id]

    @property
    def colors(self) -> dict[str, str]:
        """Job id -> colour, fixed by job order."""
        return {jid: PALETTE[i] for i, jid in enumerate(self.job_ids)}

    def with_baseline(self, baseline: Job | str) -> Comparison:
        """The same comparison against another of its jobs (a new object)."""
        bid = baseline.id if isinstance(baseline, Job) else baseline
        match = [j for j in self.jobs if j.id == bid]
        if not match:
            raise EnvloopError(f"baseline {bid!r} is not one of the compared jobs {self.job_ids}")
        other = Comparison(
            self.workspace,
            self.jobs,
            match[0],
            policy=self.policy,
            threshold=self.threshold,
            solved_at=self.solved_at,
            resamples=self.resamples,
            seed=self.seed,
            confidence=self.confidence,
        )
        # What does not depend on the baseline is reused (per-task rows, groups, guard).
        keep = {
            k: v
            for k, v in self._cache.items()
            if k == "dim_tasks" or (isinstance(k, tuple) and k[0] in ("tasks", "groups"))
        }
        other._cache.update(keep)
        if "differences" in self.__dict__:
            other.__dict__["differences"] = self.differences
        return other

    def __repr__(self) -> str:
        state = "comparable" if self.comparable else "NOT comparable"
        return (
            f"<envloop_nb.Comparison {', '.join(self.job_ids)} · baseline {self.baseline.id}"
            f" · {state}>"
        )

    @property
    def _con(self) -> Any:
        return self.workspace.con

    # -- guard ---------------------------------------------------------------------
    @cached_property
    def differences(self) -> list[Difference]:
        """Every way the jobs differ (blocking ones first), as plain sentences."""
        return _guard(self._con, self.job_ids)

    @property
    def comparable(self) -> bool:
        """True when no difference breaks comparability."""
        return not any(d.blocking for d in self.differences)

    def _pair_differences(self, other: str) -> list[Difference]:
        return [
            d
            for d in _guard(self._con, [self.baseline.id, other])
            if d.blocking and set(d.jobs) & {self.baseline.id, other}
        ]

    def guard_text(self) -> str:
        """The guard's findings as lines of text."""
        if not self.differences:
            return f"comparable: {len(self.jobs)} jobs ran the same frozen work"
        head = "comparable" if self.comparable else "NOT comparable"
        lines = [f"{head}: {len(self.differences)} difference(s)"]
        lines += [
            f"  {'✗' if d.blocking else '!'} {d.detail}"
            + ("" if d.blocking else " (does not break comparability)")
            for d in self.differences
        ]
        return "\n".join(lines)

    @property
    def mark(self) -> str:
        """The short mark every view of an incomparable comparison carries ('' if comparable)."""
        if self.comparable:
            return ""
        first = next(d.detail for d in self.differences if d.blocking)
        more = sum(d.blocking for d in self.differences) - 1
        return f"⚠ not comparable: {first}" + (f" (+{more} more)" if more else "")

    # -- per-task data (one query over all jobs) ------------------------------------
    def _per_task_sql(self) -> str:
        pass_sql = "reward = 1" if self.threshold is None else f"reward >= {number(self.threshold)}"
        n_expr = "k" if self.policy == "failure" else "scored"
        complete = "TRUE" if self.policy == "failure" else "scored = k"
        return f"""
        WITH raw AS (
            SELECT t.job_id, t.task, t.position, coalesce(t.digest, '') AS digest,
                   j.attempts AS k,
                   coalesce(tt.value, '(no ' || $tag || ')') AS grp,
                   count(a.attempt)::INTEGER AS dispatched,
                   count(a.reward)::INTEGER AS scored,
                   count(*) FILTER (WHERE a.{pass_sql})::INTEGER AS passes,
                   count(*) FILTER (WHERE a.reward IS NOT NULL
                                    AND a.reward NOT IN (0, 1))::INTEGER AS nonbinary,
                   coalesce(sum(a.reward), 0)::DOUBLE AS reward_sum
            FROM tasks t
            JOIN jobs j ON j.job_id = t.job_id
            LEFT JOIN task_tags tt ON tt.job_id = t.job_id AND tt.task = t.task AND tt.key = $tag
            LEFT JOIN attempts a ON a.job_id = t.job_id AND a.task = t.task
            WHERE list_contains($jobs, t.job_id)
            GROUP BY ALL
        ), per_job AS (
            SELECT job_id, ({"TRUE" if self.threshold is not None else "sum(nonbinary) = 0"})
                   AS binary
            FROM raw GROUP BY job_id
        )
        SELECT r.*, {n_expr} AS n, ({complete}) AS complete, pj.binary,
               CASE WHEN {n_expr} > 0 THEN reward_sum / {n_expr} END AS task_score,
               CASE WHEN ({complete}) AND {n_expr} > 0 AND pj.binary
                    THEN passes / {n_expr} END AS pass_rate
        FROM raw r JOIN per_job pj USING (job_id)
        """

    def _task_frame(self, tag: str = "subset") -> pd.DataFrame:
        """Per job and task: counts, n, complete, task_score, pass_rate, grp (one query)."""
        key = ("tasks", tag)
        if key not in self._cache:
            self._cache[key] = self._con.execute(
                self._per_task_sql() + " ORDER BY job_id, position",
                {"jobs": self.job_ids, "tag": tag},
            ).df()
        frame: pd.DataFrame = self._cache[key]
        return frame

    @cached_property
    def _cache(self) -> dict[Any, Any]:
        return {}

    @cached_property
    def _summaries(self) -> dict[str, JobSummary]:
        return {j.id: j.summary(self.policy, self.threshold) for j in self.jobs}

    @cached_property
    def _dimension_labels(self) -> pd.DataFrame:
        """job_id, name, label, unit, higher_is_better for every dimension of the jobs."""
        meta = self._con.execute(
            """SELECT job_id, name, any_value(unit) AS unit,
                      any_value(higher_is_better) AS higher_is_better
               FROM dimension_meta WHERE list_contains($jobs, job_id)
               GROUP BY job_id, name ORDER BY name, job_id""",
            {"jobs": self.job_ids},
        ).df()
        return _label_dimensions(meta)

    # -- groups (subset / dimension) ------------------------------------------------
    @_framed
    def groups(self, by: By = "subset", *, tag: str | None = None) -> pd.DataFrame:
        """Long frame: one row per job and subset (or dimension) with value, interval, coverage.

        Columns: ``job, group, value, low, high, scored, total, coverage, tasks,
        higher_is_better, percent``. For subsets the value is the subset's score
        (reward sum / scored attempts, or / requested attempts under
        ``policy="failure"``), computed in one SQL query over all jobs; ``low``/``high``
        are a task bootstrap interval. For dimensions it is the mean over scored
        attempts; the composite is listed as ``composite``.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> g = cmp.groups()
        >>> len(g), sorted(set(g["group"]))
        (10, ['code', 'math', 'reasoning', 'tool-use', 'writing'])
        >>> g.loc[g["group"] == "math", ["job", "value"]].round(3).values.tolist()
        [['job_base', 0.487], ['job_sft1000', 0.755]]
        >>> g["coverage"].iloc[0]
        '154/160 scored, 6 missing'
        >>> cmp.groups("dimension").empty  # these jobs have no named dimensions
        True
        """
        key = ("groups", by, tag)
        if key in self._cache:
            cached: pd.DataFrame = self._cache[key]
            return cached.copy()
        if by == "subset":
            frame = self._subset_groups(tag or "subset")
        elif by == "dimension":
            frame = self._dimension_groups()
        else:
            raise ValueError(f"by must be 'subset' or 'dimension', got {by!r}")
        self._cache[key] = frame
        return frame.copy()

    def _subset_groups(self, tag: str) -> pd.DataFrame:
        agg = self._con.execute(
            f"""WITH pt AS ({self._per_task_sql()})
                SELECT job_id AS job, grp AS "group",
                       fsum(reward_sum ORDER BY task) / nullif(sum(n), 0) AS value,
                       sum(scored)::BIGINT AS scored, sum(k)::BIGINT AS total,
                       count(*)::BIGINT AS tasks,
                       count(*) FILTER (WHERE complete)::BIGINT AS complete_tasks
                FROM pt GROUP BY job_id, grp ORDER BY grp, job_id""",
            {"jobs": self.job_ids, "tag": tag},
        ).df()
        pt = self._task_frame(tag)
        lows, highs = [], []
        for job, grp in zip(agg["job"], agg["group"], strict=True):
            rows = pt[(pt["job_id"] == job) & (pt["grp"] == grp)]
            _, low, high = ratio_ci(
                rows["reward_sum"].to_numpy(float),
                rows["n"].to_numpy(float),
                resamples=min(self.resamples, 1000),
                seed=self.seed,
                confidence=self.confidence,
            )
            lows.append(low)
            highs.append(high)
        agg["low"] = pd.array(lows, dtype="Float64")
        agg["high"] = pd.array(highs, dtype="Float64")
        agg["coverage"] = [
            _coverage_text(int(s), int(t)) for s, t in zip(agg["scored"], agg["total"], strict=True)
        ]
        agg["higher_is_better"] = True
        agg["percent"] = True
        return _order_groups(agg, self.job_ids)

    def _dimension_tasks(self) -> pd.DataFrame:
        """Per job, task and dimension label: mean value over scored attempts (SQL)."""
        if "dim_tasks" not in self._cache:
            frame = self._con.execute(
                """SELECT job_id, task, name,
                          fsum(value ORDER BY attempt) / count(value) AS value, count(value) AS n
                   FROM (SELECT job_id, task, attempt, name, value FROM dimensions
                         WHERE list_contains($jobs, job_id)
                         UNION ALL
                         SELECT job_id, task, attempt, 'composite', composite FROM attempts
                         WHERE list_contains($jobs, job_id) AND composite IS NOT NULL)
                   GROUP BY job_id, task, name""",
                {"jobs": self.job_ids},
            ).df()
            labels = self._dimension_labels[["job_id", "name", "label"]]
            frame = frame.merge(labels, on=["job_id", "name"], how="left")
            frame["label"] = frame["label"].fillna(frame["name"])
            self._cache["dim_tasks"] = frame
        result: pd.DataFrame = self._cache["dim_tasks"]
        return result

    def _dimension_groups(self) -> pd.DataFrame:
        agg = self._con.execute(
            """WITH vals AS (
                   SELECT job_id, task, attempt, name, value FROM dimensions
                   WHERE list_contains($jobs, job_id)
                   UNION ALL
                   SELECT job_id, task, attempt, 'composite', composite FROM attempts
                   WHERE list_contains($jobs, job_id) AND composite IS NOT NULL),
               req AS (SELECT t.job_id, count(*) * any_value(j.attempts) AS total
                       FROM tasks t JOIN jobs j USING (job_id)
                       WHERE list_contains($jobs, t.job_id) GROUP BY t.job_id)
               SELECT v.job_id AS job, v.name,
                      fsum(v.value ORDER BY v.task, v.attempt) / count(v.value) AS value,
                      count(v.value)::BIGINT AS scored, any_value(req.total)::BIGINT AS total,
                      min(v.value) AS vmin, max(v.value) AS vmax
               FROM vals v JOIN req USING (job_id) GROUP BY v.job_id, v.name""",
            {"jobs": self.job_ids},
        ).df()
        cols = ["job", "group", "value", "low", "high", "scored", "total", "coverage", "tasks"]
        if agg.empty:
            return pd.DataFrame({c: [] for c in [*cols, "higher_is_better", "percent"]}).astype(
                {"value": float}
            )
        labels = self._dimension_labels.rename(columns={"job_id": "job"})
        agg = agg.merge(labels, on=["job", "name"], how="left")
        agg["group"] = agg["label"].fillna(agg["name"])
        agg["higher_is_better"] = agg["higher_is_better"].map(lambda v: v is not False)
        in_unit = agg.groupby("group")[["vmin", "vmax"]].agg({"vmin": "min", "vmax": "max"})
        percent_groups = set(in_unit.index[(in_unit["vmin"] >= 0) & (in_unit["vmax"] <= 1)])
        agg["percent"] = agg["group"].isin(percent_groups)
        per_task = self._dimension_tasks()
        lows, highs, tasks = [], [], []
        for job, grp in zip(agg["job"], agg["group"], strict=True):
            vals = per_task[(per_task["job_id"] == job) & (per_task["label"] == grp)]["value"]
            vals = vals.dropna().to_numpy(float)
            _, low, high = ratio_ci(
                vals,
                np.ones_like(vals),
                resamples=min(self.resamples, 1000),
                seed=self.seed,
                confidence=self.confidence,
            )
            lows.append(low)
            highs.append(high)
            tasks.append(len(vals))
        agg["low"] = pd.array(lows, dtype="Float64")
        agg["high"] = pd.array(highs, dtype="Float64")
        agg["tasks"] = tasks
        agg["coverage"] = [
            _coverage_text(int(s), int(t)) for s, t in zip(agg["scored"], agg["total"], strict=True)
        ]
        out = agg[[*cols, "higher_is_better", "percent"]]
        return _order_groups(out, self.job_ids)

    # -- leaderboard ------------------------------------------------------------------
    @_framed
    def leaderboard(self) -> pd.DataFrame:
        """One row per job, ranked by score (best first; a job without a score ranks last).

        Columns: ``rank, job, model`` (the job id when there is none), ``status, score,
        pass, pass@K, pass^K`` at the shared K (the smallest k of the jobs; as
        :meth:`envloop_nb.Job.curve` gives it: over the tasks with at least K scored
        attempts), ``scored,
        missing, total, complete_members, total_members``, then ``composite`` and each
        named dimension where present, ``coverage`` ("780/800 scored, 20 missing") and
        ``warning`` (missing attempts, an unfinished job, not comparable to the baseline).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> lb = cmp.leaderboard()
        >>> lb[["rank", "job"]].values.tolist()
        [[1, 'job_sft1000'], [2, 'job_base']]
        >>> lb["score"].round(3).tolist(), lb["coverage"].tolist()[1]
        ([0.61, 0.501], '767/800 scored, 33 missing')
        >>> "pass@4" in lb.columns and "pass^4" in lb.columns
        True
        """
        k_shared = min(j.k for j in self.jobs)
        dims = self.groups("dimension")
        rows = []
        for job in self.jobs:
            s = self._summaries[job.id]
            info = job.info
            point = job.curve(ks=[k_shared], policy=self.policy, threshold=self.threshold)
            row: dict[str, Any] = {
                "job": job.id,
                "model": info["model"] or job.id,
                "status": info["status"],
                "score": s.score,
                "pass": s.pass_,
                f"pass@{k_shared}": _none(point["pass@k"].iloc[0]),
                f"pass^{k_shared}": _none(point["pass^k"].iloc[0]),
                "scored": s.scored,
                "missing": s.missing,
                "total": s.total,
                "complete_members": s.complete_members,
                "total_members": s.total_members,
            }
            for _, d in dims[dims["job"] == job.id].iterrows():
                row[str(d["group"])] = d["value"]
            row["coverage"] = _coverage_text(s.scored, s.total)
            warnings = []
            if s.missing:
                warnings.append(f"⚠ {s.missing:,} missing")
            if info["status"] != "completed":
                warnings.append(f"⚠ job {info['status']}")
            if job.id != self.baseline.id and self._pair_differences(job.id):
                warnings.append("⚠ not comparable to baseline")
            row["warning"] = " · ".join(warnings)
            rows.append(row)
        frame = pd.DataFrame(rows)
        score = pd.to_numeric(frame["score"], errors="coerce")
        frame.insert(0, "rank", score.rank(method="min", ascending=False, na_option="bottom"))
        frame["rank"] = frame["rank"].astype(int)
        # Ties keep the comparison's job order.
        frame = frame.sort_values("rank", kind="stable").reset_index(drop=True)
        frame.attrs["mark"] = self.mark
        return frame

    # -- comparison table ---------------------------------------------------------------
    @_framed
    def table(self, by: By = "subset", *, tag: str | None = None) -> pd.DataFrame:
        """Wide frame: one row per subset (or dimension), each job's value and coverage.

        Columns: the group (``subset`` or ``dimension``), then per job ``<job>`` (the
        value) and ``<job> coverage``, then ``best`` (the job with the best value; on a
        lower-is-better dimension the smallest). ``frame.attrs["mark"]`` carries the
        incomparability mark. :meth:`table_html` renders it with the best per row
        highlighted; :meth:`strengths` says it in words.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> t = cmp.table()
        >>> t.columns.tolist()[:4]
        ['subset', 'job_base', 'job_base coverage', 'job_sft1000']
        >>> t["subset"].tolist()
        ['code', 'math', 'reasoning', 'tool-use', 'writing']
        >>> t["best"].tolist()
        ['job_sft1000', 'job_sft1000', 'job_sft1000', 'job_sft1000', 'job_base']
        """
        long = self.groups(by, tag=tag)
        name = "subset" if by == "subset" else "dimension"
        groups = list(dict.fromkeys(long["group"]))
        rows = []
        for grp in groups:
            part = long[long["group"] == grp]
            row: dict[str, Any] = {name: grp}
            for jid in self.job_ids:
                hit = part[part["job"] == jid]
                row[jid] = _none(hit["value"].iloc[0]) if len(hit) else None
                row[f"{jid} coverage"] = hit["coverage"].iloc[0] if len(hit) else "not measured"
            row["best"] = _best(part)
            rows.append(row)
        columns = [name, *[c for jid in self.job_ids for c in (jid, f"{jid} coverage")], "best"]
        frame = pd.DataFrame(rows, columns=columns)
        for jid in self.job_ids:
            frame[jid] = pd.to_numeric(frame[jid], errors="coerce").astype("Float64")
        frame.attrs["mark"] = self.mark
        return frame

    def table_html(self, by: By = "subset", *, tag: str | None = None) -> str:
        """The comparison table as HTML: best per row highlighted, coverage under each value."""
        return _table_html(
            self.groups(by, tag=tag), self.job_ids, self.colors, by, self.mark, self.baseline.id
        )

    @_framed
    def strengths(self, by: By = "subset", *, tag: str | None = None) -> pd.DataFrame:
        """Where each job is above (strength) or below (weakness) all the others, in words.

        For every row where a job's value is better than every other job's, the gap to
        the runner-up is a strength; where it is worse than every other, the gap to the
        next worst is a weakness. ``gap`` is this job's value minus the other's, and the
        interval is a paired bootstrap of the same difference over the tasks both jobs
        scored completely, so the sentence, the gap and the interval share one sign: on
        a lower-is-better dimension a strength reads "below the others by -3, and lower
        is better". Columns: ``job, kind, group, gap, low, high, noise, sentence``.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> s = cmp.strengths()
        >>> s.loc[(s["job"] == "job_base") & (s["kind"] == "strength"), "group"].tolist()
        ['writing']
        >>> s.loc[s["group"] == "math", ["job", "kind", "noise"]].values.tolist()
        [['job_sft1000', 'strength', 'beyond noise'], ['job_base', 'weakness', 'beyond noise']]
        >>> s.loc[s["group"] == "reasoning", "noise"].tolist()
        ['within noise', 'within noise']
        """
        key = ("strengths", by, tag)
        if key in self._cache:
            cached: pd.DataFrame = self._cache[key].copy()
            cached.attrs["mark"] = self.mark
            return cached
        long = self.groups(by, tag=tag)
        values = self._per_task_values(by, tag)
        out = []
        for grp in dict.fromkeys(long["group"]):
            part = long[(long["group"] == grp) & long["value"].notna()]
            if len(part) < 2:
                continue
            hib = bool(part["higher_is_better"].iloc[0])
            percent = bool(part["percent"].iloc[0])
            ordered = part.sort_values("value", ascending=not hib, kind="stable")
            top, second = ordered.iloc[0], ordered.iloc[1]
            bottom, second_last = ordered.iloc[-1], ordered.iloc[-2]
            for kind, this, ref in (
                ("strength", top, second),
                ("weakness", bottom, second_last),
            ):
                gap = float(this["value"]) - float(ref["value"])
                if gap == 0 or (kind == "weakness" and len(part) == 2 and this is top):
                    continue
                diff = self._paired_on(values, grp, str(ref["job"]), str(this["job"]))
                noise = self._noise_words(diff, str(this["job"]), str(ref["job"]), percent)
                # The words follow the values (the gap's sign, as in the interval); on a
                # lower-is-better dimension a strength is a value below the others.
                where = "above" if gap > 0 else "below"
                better = "" if hib else ", and lower is better"
                sentence = (
                    f"{this['job']} is {where} the others on {grp} by {_pts(gap, percent)}"
                    f"{better} ({noise})"
                )
                out.append(
                    {
                        "job": this["job"],
                        "kind": kind,
                        "group": grp,
                        "gap": gap,
                        "low": diff.low,
                        "high": diff.high,
                        "noise": noise.split(":")[0],
                        "sentence": sentence,
                    }
                )
        frame = pd.DataFrame(
            out, columns=["job", "kind", "group", "gap", "low", "high", "noise", "sentence"]
        )
        self._cache[key] = frame.copy()
        frame.attrs["mark"] = self.mark
        return frame

    def _per_task_values(self, by: By, tag: str | None) -> pd.DataFrame:
        """job_id, task, group, value (complete tasks only for subsets)."""
        if by == "subset":
            pt = self._task_frame(tag or "subset")
            pt = pt[pt["complete"] & (pt["n"] > 0)]
            return pt.rename(columns={"grp": "group", "task_score": "value"})[
                ["job_id", "task", "digest", "group", "value"]
            ]
        dt = self._dimension_tasks()
        digests = self._task_frame()[["job_id", "task", "digest"]]
        dt = dt.merge(digests, on=["job_id", "task"], how="left")
        return dt.rename(columns={"label": "group"})[["job_id", "task", "digest", "group", "value"]]

    def _paired_on(self, values: pd.DataFrame, grp: Any, a: str, b: str) -> PairedDiff:
        va = values[(values["job_id"] == a) & (values["group"] == grp)]
        vb = values[(values["job_id"] == b) & (values["group"] == grp)]
        m = va.merge(vb, on=["task", "digest"], suffixes=("_a", "_b"))
        return paired_diff_ci(
            m["value_a"].to_numpy(float),
            m["value_b"].to_numpy(float),
            resamples=self.resamples,
            seed=self.seed,
            confidence=self.confidence,
        )

    def _noise_words(self, diff: PairedDiff, a: str, b: str, percent: bool = True) -> str:
        level = format_pct(self.confidence)
        if diff.estimate is None:
            return "not assessed: no task scored completely by both"
        ci = (
            f"paired {level} CI [{_signed(diff.low, percent)}, {_signed(diff.high, percent)}]"
            f" over {diff.n_tasks} tasks complete in both"
        )
        blockers = self._pair_differences(a if a != self.baseline.id else b)
        if a != self.baseline.id and b != self.baseline.id:
            blockers = [d for d in self.differences if d.blocking and set(d.jobs) & {a, b}]
        if blockers:
            return f"not assessed: jobs not comparable; {ci}"
        if diff.excludes_zero:
            return f"beyond noise: {ci}"
        return f"within noise: {ci}"

    # -- paired statistics ----------------------------------------------------------------
    @_framed
    def paired(self) -> pd.DataFrame:
        """Each other job against the baseline on shared, completely scored tasks.

        Columns: ``baseline, job, shared_complete, tasks_union, shared_share, score_base,
        score_job, score_diff, score_low, score_high, pass_diff, pass_low, pass_high,
        fixed, broken, mcnemar_p, verdict, note``. Differences are job − baseline
        (score and pass rate in [0, 1]). See the module docstring for the verdict rule.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> p = cmp.paired()
        >>> p.loc[0, "verdict"]
        'beyond noise: job_sft1000 is better than job_base'
        >>> [int(p.loc[0, c]) for c in ("shared_complete", "tasks_union", "fixed", "broken")]
        [140, 200, 23, 4]
        >>> [round(float(p.loc[0, c]), 4) for c in ("score_base", "score_job", "score_diff")]
        [0.5125, 0.625, 0.1125]
        >>> bool(p.loc[0, "score_low"] > 0)  # the interval excludes zero
        True
        >>> p.loc[0, "note"]
        '60 shared task(s) not completely scored in both: left out'
        """
        if "paired" not in self._cache:
            pt = self._task_frame()
            base = pt[pt["job_id"] == self.baseline.id]
            rows = [
                self._paired_row(base, pt[pt["job_id"] == other.id], other.id)
                for other in self.others
            ]
            self._cache["paired"] = pd.DataFrame(rows)
        frame: pd.DataFrame = self._cache["paired"].copy()
        frame.attrs["mark"] = self.mark
        return frame

    def _paired_row(self, base: pd.DataFrame, oth: pd.DataFrame, other: str) -> dict[str, Any]:
        m = base.merge(oth, on=["task", "digest"], how="inner", suffixes=("_b", "_o"))
        union = len(
            set(zip(base["task"], base["digest"], strict=True))
            | set(zip(oth["task"], oth["digest"], strict=True))
        )
        ok = m["complete_b"] & m["complete_o"] & (m["n_b"] > 0) & (m["n_o"] > 0)
        s = m[ok]
        n_shared = len(m)
        n_ok = len(s)
        binary = bool(s["binary_b"].all() and s["binary_o"].all()) if n_ok else False
        opts: dict[str, Any] = {
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence": self.confidence,
        }
        sd = paired_diff_ci(
            s["task_score_b"].to_numpy(float), s["task_score_o"].to_numpy(float), **opts
        )
        pass_b, pass_o = s["pass_rate_b"].to_numpy(float), s["pass_rate_o"].to_numpy(float)
        if not binary:
            pd_ = PairedDiff(None, None, None, 0, self.resamples, self.seed, self.confidence)
        elif np.array_equal(pass_b, s["task_score_b"].to_numpy(float)) and np.array_equal(
            pass_o, s["task_score_o"].to_numpy(float)
        ):
            pd_ = sd  # binary rewards, no threshold: pass rate is the score, same interval
        else:
            pd_ = paired_diff_ci(pass_b, pass_o, **opts)
        fixed = broken = 0
        p_value: float | None = None
        if binary and n_ok:
            sb = s["pass_rate_b"].to_numpy(float) >= self.solved_at
            so = s["pass_rate_o"].to_numpy(float) >= self.solved_at
            fixed, broken = int((~sb & so).sum()), int((sb & ~so).sum())
            p_value = mcnemar_exact(fixed, broken)
        share = n_ok / union if union else 0.0
        notes = []
        if n_shared < union:
            notes.append(f"shared tasks only: {n_shared:,} of {union:,} tasks are in both jobs")
        if n_ok < n_shared:
            notes.append(
                f"{n_shared - n_ok:,} shared task(s) not completely scored in both: left out"
            )
        blockers = self._pair_differences(other)
        if n_ok == 0:
            verdict = "not assessed: no task is completely scored in both jobs"
        elif blockers:
            verdict = "not assessed: not comparable (" + "; ".join(d.detail for d in blockers) + ")"
        elif share < 0.5:
            verdict = (
                f"not assessed: only {n_ok:,} of {union:,} tasks ({format_pct(share)}) are shared"
                " and completely scored (need at least 50%)"
            )
        else:
            by_ci = sd.excludes_zero
            by_test = p_value is not None and p_value < 0.05
            direction = "better" if (sd.estimate or 0) > 0 else "worse"
            if by_ci and (p_value is None or by_test):
                verdict = f"beyond noise: {other} is {direction} than {self.baseline.id}"
            elif by_ci or by_test:
                verdict = (
                    "borderline: the score interval "
                    + ("excludes" if by_ci else "includes")
                    + " zero but McNemar p "
                    + ("≥" if not by_test else "<")
                    + " 0.05"
                )
            else:
                verdict = "within noise: not distinguishable from no difference"
        return {
            "baseline": self.baseline.id,
            "job": other,
            "shared_complete": n_ok,
            "tasks_union": union,
            "shared_share": share,
            "score_base": _mean(s["task_score_b"]),
            "score_job": _mean(s["task_score_o"]),
            "score_diff": sd.estimate,
            "score_low": sd.low,
            "score_high": sd.high,
            "pass_diff": pd_.estimate,
            "pass_low": pd_.low,
            "pass_high": pd_.high,
            "fixed": fixed if binary else None,
            "broken": broken if binary else None,
            "mcnemar_p": p_value,
            "verdict": verdict,
            "note": "; ".join(notes),
        }

    # -- transitions ----------------------------------------------------------------------
    def _other(self, other: Job | str | None) -> list[Job]:
        if other is None:
            return self.others
        oid = other.id if isinstance(other, Job) else other
        match = [j for j in self.jobs if j.id == oid]
        if not match:
            raise EnvloopError(f"{oid!r} is not one of the compared jobs {self.job_ids}")
        if oid == self.baseline.id:
            raise EnvloopError(f"{oid!r} is the baseline: pick another job to compare it with")
        return match

    @_framed
    def transitions(
        self,
        other: Job | str | None = None,
        rules: Any = None,
        *,
        shape: Literal["matrix", "long"] = "matrix",
    ) -> pd.DataFrame:
        """Per-task transitions from the baseline to ``other`` (every other job by default).

        Without ``rules``: one row per job and transition (``fixed``, ``broken``,
        ``still failing``, ``still passing``, and ``not compared``) with ``count`` and
        the ``tasks`` (list of names). A task is solved when its pass rate is at least
        ``solved_at`` (module docstring).

        With a bucket rule set (``rules.apply(samples_frame)`` adds a ``bucket`` column):
        the bucket transition matrix of the baseline (rows) against one other job
        (columns), counts in cells; ``frame.attrs["tasks"]`` maps ``(row, column)`` to
        the cell's task names. ``shape="long"`` gives one row per non-empty cell with
        ``baseline_bucket, other_bucket, count, tasks`` instead.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> t = cmp.transitions()
        >>> t["transition"].tolist()
        ['fixed', 'broken', 'still failing', 'still passing', 'not compared']
        >>> t["count"].tolist()
        [23, 4, 33, 80, 60]
        >>> int(t["count"].sum()) == len(a.tasks())  # every task is in exactly one row
        True
        >>> t["basis"].iloc[0]
        'solved = pass rate ≥ 0.5'
        """
        targets = self._other(other)
        if rules is not None:
            if len(targets) != 1:
                raise EnvloopError(
                    "a bucket transition matrix is between two jobs: pass other=... "
                    f"(one of {[j.id for j in targets]})"
                )
            return self._bucket_matrix(targets[0], rules, shape)
        pt = self._task_frame()
        base = pt[pt["job_id"] == self.baseline.id]
        rows = []
        for job in targets:
            oth = pt[pt["job_id"] == job.id]
            solved_b, solved_o, compared, left_out, basis = self._solved(base, oth)
            groups = {
                "fixed": ~solved_b & solved_o,
                "broken": solved_b & ~solved_o,
                "still failing": ~solved_b & ~solved_o,
                "still passing": solved_b & solved_o,
            }
            for name in TRANSITIONS:
                tasks = list(compared[groups[name]])
                rows.append(
                    {
                        "job": job.id,
                        "transition": name,
                        "count": len(tasks),
                        "tasks": tasks,
                        "basis": basis,
                    }
                )
            rows.append(
                {
                    "job": job.id,
                    "transition": NOT_COMPARED,
                    "count": len(left_out),
                    "tasks": left_out,
                    "basis": "not shared, or not completely scored in both jobs",
                }
            )
        frame = pd.DataFrame(rows, columns=["job", "transition", "count", "tasks", "basis"])
        frame.attrs["mark"] = self.mark
        return frame

    def _solved(
        self, base: pd.DataFrame, oth: pd.DataFrame
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], str]:
        m = base.merge(
            oth, on=["task", "digest"], how="outer", suffixes=("_b", "_o"), indicator=True
        )
        both = (m["_merge"] == "both").to_numpy()
        ok = both & (m["complete_b"] == True).to_numpy() & (m["complete_o"] == True).to_numpy()  # noqa: E712
        ok &= (m["n_b"].fillna(0) > 0).to_numpy() & (m["n_o"].fillna(0) > 0).to_numpy()
        s = m[ok]
        binary = bool(s["binary_b"].all() and s["binary_o"].all()) if len(s) else True
        col = "pass_rate" if binary else "task_score"
        basis = (
            f"solved = pass rate ≥ {self.solved_at:g}"
            if binary
            else f"solved = mean reward ≥ {self.solved_at:g} (rewards are not binary)"
        )
        solved_b = s[f"{col}_b"].to_numpy(float) >= self.solved_at
        solved_o = s[f"{col}_o"].to_numpy(float) >= self.solved_at
        left_out = sorted(set(m.loc[~ok, "task"].astype(str)))
        return solved_b, solved_o, s["task"].to_numpy(str), left_out, basis

    def _bucket_matrix(self, other: Job, rules: Any, shape: str) -> pd.DataFrame:
        from ._buckets.apply import bucket_frame
        from ._buckets.rules import OTHER

        if getattr(rules, "level", "task") != "task":
            raise EnvloopError("a bucket transition matrix needs per-task rules (level='task')")
        frames = []
        for job in (self.baseline, other):
            sm = bucket_frame(
                job, rules.metric, level="task", policy=self.policy, threshold=self.threshold
            )
            applied = rules.apply(sm)
            part = applied[["task", "bucket"]].copy()
            part["bucket"] = part["bucket"].astype(object).where(part["bucket"].notna(), NO_BUCKET)
            digests = job.tasks()[["task", "digest"]]
            frames.append(part.merge(digests, on="task", how="left").fillna({"digest": ""}))
        m = frames[0].merge(frames[1], on=["task", "digest"], suffixes=("_b", "_o"))
        names = [str(n) for n in rules.names]
        seen = list(dict.fromkeys([*m["bucket_b"].astype(str), *m["bucket_o"].astype(str)]))
        # Every rule's bucket (even empty); Other and "no bucket" only when they hold tasks.
        order = [n for n in dict.fromkeys(names) if n != OTHER or n in seen]
        order += [s for s in seen if s not in order and s != NO_BUCKET]
        if NO_BUCKET in seen:
            order.append(NO_BUCKET)
        cells: dict[tuple[str, str], list[str]] = {}
        for task, b, o in zip(m["task"], m["bucket_b"], m["bucket_o"], strict=True):
            cells.setdefault((str(b), str(o)), []).append(str(task))
        if shape == "long":
            long = pd.DataFrame(
                [
                    {"baseline_bucket": b, "other_bucket": o, "count": len(t), "tasks": t}
                    for (b, o), t in sorted(
                        cells.items(), key=lambda kv: (order.index(kv[0][0]), order.index(kv[0][1]))
                    )
                ],
                columns=["baseline_bucket", "other_bucket", "count", "tasks"],
            )
            long.attrs["mark"] = self.mark
            return long
        matrix = pd.DataFrame(
            [[len(cells.get((r, c), [])) for c in order] for r in order],
            index=pd.Index(order, name=f"{self.baseline.id} \\ {other.id}"),
            columns=order,
        )
        matrix.attrs["tasks"] = cells
        matrix.attrs["mark"] = self.mark
        matrix.attrs["left_out"] = len(set(frames[0]["task"]) ^ set(frames[1]["task"]))
        return matrix

    @_framed
    def attempts_of(self, tasks: Sequence[str], *, snippet: int = 120) -> pd.DataFrame:
        """Those tasks' attempts in every compared job: task, job, attempt, status, reward, output."""
        rel = self._con.execute(
            f"""SELECT a.task, a.job_id AS job, a.attempt, a.status, a.reward,
                       CASE WHEN length(a.output) > {int(snippet)}
                            THEN left(a.output, {int(snippet)}) || '…' ELSE a.output END AS output
                FROM attempts a
                WHERE list_contains($jobs, a.job_id) AND list_contains($tasks, a.task)
                ORDER BY a.task, list_position($jobs, a.job_id), a.attempt""",
            {"jobs": self.job_ids, "tasks": list(tasks)},
        )
        return rel.df()

    # -- charts -------------------------------------------------------------------------
    def radar(self, by: By = "subset", *, tag: str | None = None) -> Any:
        """Radar chart of the jobs over subsets (or dimensions): an altair chart.

        When there is nothing to draw — ``by="dimension"`` on jobs that report no score
        dimension and no composite — the chart is empty and says so in words (as
        :meth:`bars` does); it is not an error. ``cmp.groups(by).empty`` tells it in code.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> spec = cmp.radar().to_dict()
        >>> spec["title"]["text"], len(spec["layer"])
        ('score by subset', 8)
        >>> [layer["mark"]["type"] for layer in spec["layer"][:2]]  # grid rings and spokes
        ['line', 'rule']
        >>> empty = cmp.radar(by="dimension").to_dict()  # these jobs have no dimensions
        >>> empty["datasets"][empty["data"]["name"]][0]["text"]
        'no score dimensions: none of the compared jobs reports a named dimension or a composite'
        """
        from ._present.compare_charts import radar_chart

        return radar_chart(
            self.groups(by, tag=tag),
            self.job_ids,
            title=self._title(by),
            mark=self.mark,
            empty=self._nothing_to_draw(by, tag),
        )

    def bars(self, by: By = "subset", *, tag: str | None = None) -> Any:
        """Grouped bars per subset (or dimension) with bootstrap interval whiskers.

        Nothing to draw (no dimensions, by dimension) gives an empty chart that says so.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> spec = cmp.bars().to_dict()
        >>> [layer["mark"]["type"] for layer in spec["layer"]]  # bars, then whiskers
        ['bar', 'rule']
        >>> [len(rows) for rows in spec["datasets"].values()]  # 2 jobs x 5 subsets
        [10]
        """
        from ._present.compare_charts import bars_chart

        return bars_chart(
            self.groups(by, tag=tag),
            self.job_ids,
            title=self._title(by),
            mark=self.mark,
            empty=self._nothing_to_draw(by, tag),
        )

    def curves(self) -> Any:
        """pass@k (solid) and pass^k (dashed) curves of every job on one chart.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> enc = cmp.curves().to_dict()["encoding"]
        >>> enc["color"]["scale"]["domain"], enc["strokeDash"]["scale"]["domain"]
        (['job_base', 'job_sft1000'], ['pass@k', 'pass^k'])
        """
        from ._present.compare_charts import curves_chart

        return curves_chart(self.curve_frame(), self.job_ids, mark=self.mark)

    @_framed
    def curve_frame(self) -> pd.DataFrame:
        """Long frame: job, k, metric (pass@k / pass^k), value, tasks, tasks_total."""
        parts = []
        for job in self.jobs:
            c = job.curve(policy=self.policy, threshold=self.threshold)
            long = c.melt(
                id_vars=["k", "tasks", "tasks_total"],
                value_vars=["pass@k", "pass^k"],
                var_name="metric",
                value_name="value",
            )
            long.insert(0, "job", job.id)
            parts.append(long)
        return pd.concat(parts, ignore_index=True)

    def _title(self, by: By) -> str:
        return "score by subset" if by == "subset" else "mean by dimension"

    def _nothing_to_draw(self, by: By, tag: str | None) -> str:
        """What an empty radar / bars chart says."""
        if by == "dimension":
            return (
                "no score dimensions: none of the compared jobs reports a named dimension "
                "or a composite"
            )
        return f"no scores by {tag or 'subset'}: no compared job has a scored attempt"

    # -- panel, export, display ----------------------------------------------------------
    def panel(self, **options: Any) -> Any:
        """The interactive comparison panel (see :func:`envloop_nb._ui.compare_panel.compare_panel`)."""
        from ._ui.compare_panel import compare_panel

        return compare_panel(self, **options)

    def export_xlsx(self, path: Any, *, rules: Any = None) -> Any:
        """Write the guard, leaderboard, tables, paired stats and transitions to XLSX.

        The cells go through the job export's writer (:func:`envloop_nb.export_xlsx`):
        text is stored as text (never a formula), a cell past Excel's 32,767 characters
        ends with a visible ``"… [truncated N chars]"``, XML-illegal control characters
        are escaped (``\\x07``); a sheet's incomparability mark is a bold red first row.
        With ``rules``, one bucket transition sheet per other job is added. Returns the
        path.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> a = ws.load("sample_data/base.json")
        >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
        >>> cmp = ws.compare([a, b], baseline=a)
        >>> import os, tempfile
        >>> from openpyxl import load_workbook
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = cmp.export_xlsx(os.path.join(tmp.name, "compare.xlsx"))
        >>> wb = load_workbook(path)
        >>> wb.sheetnames
        ['Guard', 'Leaderboard', 'By subset', 'Strengths', 'Paired', 'Transitions']
        >>> [c.value for c in wb["Leaderboard"]["B"] if c.value in ("job_base", "job_sft1000")]
        ['job_sft1000', 'job_base']
        >>> wb.close(); tmp.cleanup()
        """
        return _export_xlsx(self, path, rules=rules)

    def _repr_html_(self) -> str:
        return _guard_html(self) + self.table_html("subset")


# -- helpers ------------------------------------------------------------------------------
def _none(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    try:
        if np.isnan(value):
            return None
    except TypeError:
        pass
    return float(value)


def _mean(series: pd.Series) -> float | None:
    return float(series.mean()) if len(series) else None


def _best(part: pd.DataFrame) -> str | None:
    part = part[part["value"].notna()]
    if part.empty or len(part) < 2:
        return None if part.empty else str(part["job"].iloc[0])
    hib = bool(part["higher_is_better"].iloc[0])
    values = part["value"].astype(float)
    best = values.max() if hib else values.min()
    winners = part[values == best]["job"].tolist()
    return ", ".join(map(str, winners)) if len(winners) < len(part) else None


def _order_groups(frame: pd.DataFrame, job_ids: list[str]) -> pd.DataFrame:
    frame = frame.copy()
    frame["_j"] = frame["job"].map({j: i for i, j in enumerate(job_ids)})
    frame = frame.sort_values(["group", "_j"], kind="stable").drop(columns="_j")
    return frame.reset_index(drop=True)


def _label_dimensions(meta: pd.DataFrame) -> pd.DataFrame:
    """Give each (name, unit, direction) variant its own label when jobs disagree."""
    meta = meta.copy()
    labels = []
    for _, row in meta.iterrows():
        same = meta[meta["name"] == row["name"]]
        units = set(same["unit"].fillna("no unit"))
        dirs = set(same["higher_is_better"].map(_direction_word))
        parts = []
        if len(units) > 1:
            parts.append(row["unit"] if isinstance(row["unit"], str) else "no unit")
        if len(dirs) > 1:
            parts.append(_direction_word(row["higher_is_better"]))
        labels.append(f"{row['name']} [{', '.join(parts)}]" if parts else row["name"])
    meta["label"] = labels
    return meta


def _direction_word(value: Any) -> str:
    if value is True:
        return "higher is better"
    if value is False:
        return "lower is better"
    return "direction unknown"


def _short(value: Any) -> str:
    """A value for a sentence: long digests cut to ``sha256:c60972a3c07b…``."""
    text = "-" if value is None else str(value)
    return text[:19] + "…" if len(text) > 24 else text


def _describe(values: dict[str, Any], fmt: Any = _short) -> str:
    """``"2 (job_a) vs 4 (job_b, job_c)"`` from job -> value."""
    groups: dict[Any, list[str]] = {}
    for jid, v in values.items():
        groups.setdefault(v, []).append(jid)
    return " vs ".join(f"{fmt(v)} ({', '.join(j)})" for v, j in groups.items())


def _guard(con: Any, job_ids: list[str]) -> list[Difference]:
    """The comparability findings for these jobs (SQL over jobs, tasks, dimension_meta)."""
    cur = con.execute(
        """SELECT job_id, dataset_name, dataset_version, dataset_revision, runner, attempts,
                  status
           FROM jobs WHERE list_contains($jobs, job_id)""",
        {"jobs": job_ids},
    )
    info = {r[0]: r[1:] for r in cur.fetchall()}
    out: list[Difference] = []
    ids = [j for j in job_ids if j in info]

    def check(fieldname: str, label: str, get: Any, blocking: bool = True) -> None:
        values = {j: get(info[j]) for j in ids}
        if len(set(values.values())) > 1:
            out.append(
                Difference(
                    fieldname,
                    tuple(ids),
                    f"{label} {_describe(values)}",
                    blocking,
                )
            )

    check("dataset", "dataset", lambda r: f"{r[0]}@{r[1]}")
    check("dataset_revision", "dataset revision", lambda r: r[2])
    check("runner", "runner", lambda r: r[3])
    check("attempts", "attempts", lambda r: r[4])

    n = len(ids)
    # Per job: how many of its tasks some other job lacks, and which jobs lack them.
    rows = con.execute(
        """WITH t AS (SELECT DISTINCT job_id, task FROM tasks WHERE list_contains($jobs, job_id)),
                gaps AS (
                    SELECT a.job_id, a.task, o.j AS lacking
                    FROM t a, (SELECT unnest($jobs) AS j) o
                    WHERE o.j <> a.job_id
                      AND NOT EXISTS (SELECT 1 FROM t b WHERE b.job_id = o.j AND b.task = a.task))
           SELECT job_id, count(DISTINCT task), list(DISTINCT lacking ORDER BY lacking)
           FROM gaps GROUP BY job_id""",
        {"jobs": ids},
    ).fetchall()
    for jid, not_shared, lacking in sorted(rows, key=lambda r: ids.index(r[0])):
        if n == 2:
            detail = f"{not_shared:,} tasks only in {jid}"
        else:
            lacking = sorted(lacking, key=ids.index)
            detail = f"{not_shared:,} tasks of {jid} are missing from {', '.join(lacking)}"
        out.append(Difference("tasks", (jid, *lacking), detail))
    digest = con.execute(
        """SELECT count(*) FROM (
               SELECT task FROM tasks WHERE list_contains($jobs, job_id)
               GROUP BY task
               HAVING count(*) = $n AND count(DISTINCT coalesce(digest, '<none>')) > 1)""",
        {"jobs": ids, "n": n},
    ).fetchone()
    if digest and digest[0]:
        out.append(
            Difference(
                "task_digests",
                tuple(ids),
                f"{digest[0]:,} tasks have the same name but a different digest (different content)",
            )
        )
    # Non-blocking: verifier versions, dimension units and directions, unfinished jobs.
    ver = con.execute(
        """SELECT job_id, string_agg(DISTINCT verifier_version, ', ' ORDER BY verifier_version)
           FROM attempts WHERE list_contains($jobs, job_id) GROUP BY job_id""",
        {"jobs": ids},
    ).fetchall()
    versions = {j: v for j, v in ver if v is not None}
    if len(versions) > 1 and len(set(versions.values())) > 1:
        out.append(
            Difference(
                "verifier_version",
                tuple(versions),
                f"verifier version differs ({_describe(versions)})",
                False,
            )
        )
    meta = con.execute(
        """SELECT name, job_id, any_value(unit), any_value(higher_is_better),
                  any_value(verifier_version)
           FROM dimension_meta WHERE list_contains($jobs, job_id)
           GROUP BY name, job_id ORDER BY name""",
        {"jobs": ids},
    ).fetchall()
    by_name: dict[str, dict[str, tuple[Any, Any, Any]]] = {}
    for name, jid, unit, hib, vv in meta:
        by_name.setdefault(name, {})[jid] = (unit, hib, vv)
    for name, per_job in by_name.items():
        if len(per_job) < 2:
            continue
        ordered = {j: per_job[j] for j in ids if j in per_job}
        vv = {j: v[2] for j, v in ordered.items()}
        if len(set(vv.values())) > 1:
            out.append(
                Difference(
                    "verifier_version",
                    tuple(ordered),
                    f"verifier version differs on dimension {name} ({_describe(vv, lambda v: v or '-')})",
                    False,
                )
            )
        units = {j: v[0] for j, v in ordered.items()}
        if len(set(units.values())) > 1:
            out.append(
                Difference(
                    "dimension_unit",
                    tuple(ordered),
                    f"unit of dimension {name} differs ({' vs '.join(str(u or 'none') for u in dict.fromkeys(units.values()))}):"
                    " shown as separate dimensions",
                    False,
                )
            )
        dirs = {j: _direction_word(v[1]) for j, v in ordered.items()}
        if len(set(dirs.values())) > 1:
            out.append(
                Difference(
                    "dimension_direction",
                    tuple(ordered),
                    f"direction of dimension {name} differs ({_describe(dirs)}): shown as separate dimensions",
                    False,
                )
            )
    for jid in ids:
        status = info[jid][5]
        if status != "completed":
            out.append(Difference("status", (jid,), f"{jid} is {status}, not completed", False))
    out.sort(key=lambda d: not d.blocking)
    return out


def _guard_html(cmp: Comparison) -> str:
    """The guard's findings as a banner: red when incomparable, amber for cautions."""
    if not cmp.differences:
        return (
            '<div class="enb-guard enb-ok" style="padding:6px 10px;border-left:4px solid #54a24b;'
            'margin:4px 0;font-family:var(--jp-ui-font-family,sans-serif)">'
            f"✓ comparable: {len(cmp.jobs)} jobs ran the same frozen work (dataset revision, runner, "
            "tasks and digests, attempts per task)</div>"
        )
    color = "#d62728" if not cmp.comparable else "#c98a00"
    head = (
        "⚠ NOT comparable — paired statistics use shared tasks only and claim no significance"
        if not cmp.comparable
        else "comparable, with cautions"
    )
    items = "".join(
        f"<li>{'<b>' if d.blocking else ''}{html.escape(d.detail)}{'</b>' if d.blocking else ''}"
        f"{'' if d.blocking else ' <i>(does not break comparability)</i>'}</li>"
        for d in cmp.differences
    )
    return (
        f'<div class="enb-guard{" enb-incomparable" if not cmp.comparable else ""}" '
        f'style="padding:6px 10px;border-left:4px solid {color};margin:4px 0;'
        f'font-family:var(--jp-ui-font-family,sans-serif)">'
        f'<div style="font-weight:600;color:{color}">{html.escape(head)}</div>'
        f'<ul style="margin:4px 0 0 0">{items}</ul></div>'
    )


def _table_html(
    long: pd.DataFrame,
    job_ids: list[str],
    colors: dict[str, str],
    by: str,
    mark: str,
    baseline: str | None = None,
) -> str:
    """Pure renderer: one row per group, one column per job, best per row highlighted.

    Under each value: its coverage, and for the other jobs the gap to the baseline.
    """
    head = "".join(
        f'<th style="text-align:right;padding:3px 8px"><span style="color:{colors[j]}">■</span> '
        f"{html.escape(j)}{'<br><small>(baseline)</small>' if j == baseline else ''}</th>"
        for j in job_ids
    )
    body = []
    for grp in dict.fromkeys(long["group"]):
        part = long[long["group"] == grp]
        best = _best(part)
        winners = set(best.split(", ")) if best else set()
        cells = []
        for jid in job_ids:
            hit = part[part["job"] == jid]
            if hit.empty or pd.isna(hit["value"].iloc[0]):
                cov = hit["coverage"].iloc[0] if len(hit) else "not measured"
                cells.append(
                    f'<td style="text-align:right;padding:3px 8px">-<br><small>{html.escape(cov)}</small></td>'
                )
                continue
            r = hit.iloc[0]
            value = float(r["value"])
            text = format_pct(value) if r["percent"] else f"{value:.4g}"
            base = part[part["job"] == baseline]
            if jid != baseline and len(base) and not pd.isna(base["value"].iloc[0]):
                gap = value - float(base["value"].iloc[0])
                text += f' <small style="opacity:0.75">({_pts(gap, bool(r["percent"]))})</small>'

            style = "text-align:right;padding:3px 8px;font-variant-numeric:tabular-nums"
            if jid in winners:
                style += ";font-weight:700;background:rgba(84,162,75,0.18)"
            missing = int(r["total"]) - int(r["scored"])
            cov_style = "color:#b45309;font-weight:600" if missing else "opacity:0.7"
            cells.append(
                f'<td style="{style}" class="{"enb-best" if jid in winners else ""}">{text}'
                f'<br><small style="{cov_style}">{html.escape(str(r["coverage"]))}</small></td>'
            )
        body.append(
            f'<tr><th style="text-align:left;padding:3px 8px">{html.escape(str(grp))}</th>{"".join(cells)}</tr>'
        )
    banner = f'<div style="color:#d62728;font-weight:600">{html.escape(mark)}</div>' if mark else ""
    name = "subset" if by == "subset" else "dimension"
    if not body:
        return f"{banner}<div><i>no {name}s to compare</i></div>"
    return (
        f'{banner}<table class="enb-compare-table" style="border-collapse:collapse;'
        f'font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
        f'<thead><tr><th style="text-align:left;padding:3px 8px">{name}</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        '<div style="font-size:11px;opacity:0.7">best per row highlighted · (gap to the '
        "baseline) · coverage under each value</div>"
    )


# -- entry point ---------------------------------------------------------------------------
def compare(
    ws: Workspace,
    jobs: Sequence[Job | str],
    baseline: Job | str | None = None,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    solved_at: float = 0.5,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison | JobSummary:
    """Compare 2-5 jobs of a workspace; one job gives just its summary.

    Parameters
    ----------
    jobs
        A list of jobs or job ids, in the order their colours follow. At most five. A
        single id or job on its own (``ws.compare("job_base")``) is refused with a
        ``TypeError`` asking for a list: a string is never read as its characters.
    baseline
        The job the others are measured against (default: the first). If it is not
        in ``jobs`` it is put first.
    policy, threshold
        As in :meth:`envloop_nb.Job.summary`.
    solved_at
        Pass rate at which a task counts as solved for transitions and McNemar.
    resamples, seed
        Bootstrap resamples and their seed (same seed, same intervals).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> print(ws.compare([job]))
    score 60.0% · 5/6 attempts scored · 2/3 members complete
    >>> ws.compare("job_abc0001")
    Traceback (most recent call last):
    ...
    TypeError: compare takes a list of jobs, got the single job id 'job_abc0001': pass a list, e.g. ws.compare(['job_abc0001', 'other_job']) (a list of one job gives its summary)
    """
    if isinstance(jobs, str | bytes | Job) or not isinstance(jobs, Iterable):
        what = (
            f"the single job id {jobs!r}"
            if isinstance(jobs, str | bytes)
            else f"a single job ({jobs.id!r})"
            if isinstance(jobs, Job)
            else f"{type(jobs).__name__} {jobs!r}"
        )
        one = repr(jobs.id if isinstance(jobs, Job) else jobs)
        raise TypeError(
            f"compare takes a list of jobs, got {what}: pass a list, e.g. "
            f"ws.compare([{one}, 'other_job']) (a list of one job gives its summary)"
        )
    handles: list[Job] = []
    for item in jobs:
        handle = item if isinstance(item, Job) else ws.job(str(item))
        if handle.workspace is not ws:
            raise EnvloopError(f"job {handle.id!r} belongs to another workspace")
        if handle.id in [h.id for h in handles]:
            raise EnvloopError(f"job {handle.id!r} is listed twice")
        handles.append(handle)
    if baseline is not None:
        bid = baseline.id if isinstance(baseline, Job) else str(baseline)
        if bid not in [h.id for h in handles]:
            handles.insert(0, baseline if isinstance(baseline, Job) else ws.job(bid))
    if not handles:
        raise EnvloopError("compare needs at least one job")
    if len(handles) > MAX_JOBS:
        raise EnvloopError(
            f"compare takes at most {MAX_JOBS} jobs (a chart stays readable with five); got "
            f"{len(handles)}: {[h.id for h in handles]}. Compare fewer, or rank them all "
            "with ws.leaderboard()."
        )
    for h in handles:
        h.info  # noqa: B018 - raises if the job was removed
    if len(handles) == 1:
        return handles[0].summary(policy, threshold)
    base = handles[0]
    if baseline is not None:
        bid = baseline.id if isinstance(baseline, Job) else str(baseline)
        base = next(h for h in handles if h.id == bid)
    return Comparison(
        ws,
        handles,
        base,
        policy=policy,
        threshold=threshold,
        solved_at=solved_at,
        resamples=resamples,
        seed=seed,
    )


# -- workspace leaderboard of saved snapshots ---------------------------------------------
_FINGERPRINT_SQL = """
SELECT sha256(coalesce(string_agg(
           concat_ws('|', task, attempt, status, coalesce(reward::VARCHAR, 'null')),
           chr(10) ORDER BY task, attempt), '')
           || '#' || (SELECT attempts FROM jobs WHERE job_id = $job)
           || '#' || (SELECT string_agg(task || '=' || coalesce(digest, ''), ',' ORDER BY task)
                      FROM tasks WHERE job_id = $job))
FROM attempts WHERE job_id = $job
"""


def save_snapshot(
    ws: Workspace, job: Job | str, *, policy: Policy = "unknown", threshold: float | None = None
) -> LeaderboardSnapshot:
    """Save a job's headline numbers in the workspace leaderboard (no duplicates).

    The key is the job id plus a fingerprint of its attempts of record (task, attempt,
    status, reward), its requested tasks and digests and k, plus the policy and
    threshold. Saving the same job again returns the saved snapshot (``new=False``);
    a job reloaded with different attempts gets a new snapshot.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._comparison import save_snapshot, saved_leaderboard
    >>> ws = enb.open()
    >>> a = ws.load("sample_data/base.json")
    >>> first = save_snapshot(ws, a)
    >>> first.new, first.job_id, round(first.score, 3), first.missing
    (True, 'job_base', 0.501, 33)
    >>> again = save_snapshot(ws, a)  # same job, same attempts: the saved snapshot
    >>> again.new, again.snapshot_id == first.snapshot_id
    (False, True)
    >>> save_snapshot(ws, a, policy="failure").new  # another policy: its own snapshot
    True
    """
    handle = job if isinstance(job, Job) else ws.job(job)
    con = ws.con
    row = con.execute(_FINGERPRINT_SQL, {"job": handle.id}).fetchone()
    fingerprint = str(row[0]) if row else ""
    found = con.execute(
        """SELECT snapshot_id, saved_at, score, scored, missing, total FROM leaderboard
           WHERE job_id = ? AND fingerprint = ? AND policy = ?
                 AND threshold IS NOT DISTINCT FROM ?""",
        [handle.id, fingerprint, policy, threshold],
    ).fetchone()
    if found:
        return LeaderboardSnapshot(
            found[0],
            handle.id,
            fingerprint,
            found[1],
            found[2],
            found[3],
            found[4],
            found[5],
            False,
        )
    s = handle.summary(policy, threshold)
    info = handle.info
    snapshot_id = f"{handle.id}@{fingerprint[:12]}"
    if policy != "unknown" or threshold is not None:
        snapshot_id += f"/{policy}" + ("" if threshold is None else f"/t{threshold:g}")
    con.execute(
        """INSERT INTO leaderboard VALUES
           (?, ?, ?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            snapshot_id,
            handle.id,
            fingerprint,
            info["model"],
            info["status"],
            info["dataset_name"],
            info["dataset_version"],
            info["dataset_revision"],
            info["runner"],
            s.k,
            policy,
            threshold,
            s.score,
            s.pass_,
            s.pass_at_k,
            s.pass_hat_k,
            s.total,
            s.scored,
            s.missing,
            s.complete_members,
            s.total_members,
            json.dumps(s.to_dict()),
        ],
    )
    saved = con.execute(
        "SELECT saved_at FROM leaderboard WHERE snapshot_id = ?", [snapshot_id]
    ).fetchone()
    return LeaderboardSnapshot(
        snapshot_id,
        handle.id,
        fingerprint,
        saved[0] if saved else None,
        s.score,
        s.scored,
        s.missing,
        s.total,
        True,
    )


def saved_leaderboard(ws: Workspace) -> pd.DataFrame:
    """The saved snapshots ranked by score within each dataset revision (best first).

    Snapshots of different dataset revisions are not comparable, so each
    ``(dataset_name, dataset_version, dataset_revision)`` has its own ranking.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._comparison import save_snapshot, saved_leaderboard
    >>> ws = enb.open()
    >>> a = ws.load("sample_data/base.json")
    >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
    >>> _ = save_snapshot(ws, a), save_snapshot(ws, b)
    >>> board = saved_leaderboard(ws)
    >>> board[["rank", "job", "k"]].values.tolist()
    [[1, 'job_sft1000', 4], [2, 'job_base', 4]]
    >>> board["score"].round(3).tolist()
    [0.61, 0.501]
    """
    rel = ws.con.sql(
        """SELECT rank() OVER (PARTITION BY dataset_name, dataset_version, dataset_revision
                               ORDER BY score DESC NULLS LAST) AS rank,
                  snapshot_id, job_id AS job, coalesce(model, job_id) AS model, status,
                  dataset_name, dataset_version, dataset_revision, k, policy, threshold,
                  score, pass, pass_at_k AS "pass@k", pass_hat_k AS "pass^k",
                  scored, missing, total, complete_members, total_members,
                  format('{:,}/{:,} scored', scored, total)
                      || CASE WHEN missing > 0 THEN format(', {:,} missing', missing) ELSE '' END
                      AS coverage,
                  CASE WHEN missing > 0 THEN '⚠ ' || missing || ' missing' ELSE '' END AS warning,
                  saved_at
           FROM leaderboard
           ORDER BY dataset_name, dataset_version, dataset_revision, rank, saved_at"""
    )
    frame: pd.DataFrame = to_frame(rel, "pandas")
    return frame


# -- XLSX export -------------------------------------------------------------------------
def _export_xlsx(cmp: Comparison, path: Any, *, rules: Any = None) -> Any:
    """The comparison workbook, through the job export's writer (``_export_xlsx``).

    One cell writer for every workbook: text stays text (never a formula), long text is
    cut at Excel's limit with a visible marker, control characters are escaped.
    """
    from pathlib import Path

    from ._export.cells import new_workbook, save_workbook, write_frame

    out = Path(path)
    wb, cells, titles = new_workbook()
    guard = pd.DataFrame(
        [
            {
                "field": d.field,
                "jobs": ", ".join(d.jobs),
                "detail": d.detail,
                "blocking": d.blocking,
            }
            for d in cmp.differences
        ],
        columns=["field", "jobs", "detail", "blocking"],
    )
    state = "comparable" if cmp.comparable else "NOT comparable"
    sheets: list[tuple[str, pd.DataFrame, str]] = [
        ("Guard", guard, f"{state} · baseline {cmp.baseline.id} · policy {cmp.policy}"),
        ("Leaderboard", cmp.leaderboard(), cmp.mark),
        ("By subset", cmp.table("subset"), cmp.mark),
    ]
    dims = cmp.table("dimension")
    if len(dims):
        sheets.append(("By dimension", dims, cmp.mark))
    sheets += [
        ("Strengths", cmp.strengths("subset"), cmp.mark),
        ("Paired", cmp.paired(), cmp.mark),
        ("Transitions", cmp.transitions(), cmp.mark),
    ]
    if rules is not None:
        for other in cmp.others:
            long = cmp.transitions(other, rules, shape="long")
            sheets.append((f"Buckets {other.id}", long, cmp.mark))
    for title, frame, note in sheets:
        write_frame(wb, cells, titles, title, frame, note)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_workbook(wb, out)
    return out
