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

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from ._compare import charts as _charts
from ._compare import guard as _guard
from ._compare import leaderboard as _leaderboard
from ._compare import paired as _paired
from ._compare import tables as _tables
from ._compare.guard import Difference
from ._compare.leaderboard import LeaderboardSnapshot
from ._compare.state import MAX_JOBS, PALETTE, CompareState
from ._compare.state import colors as _colors
from ._compare.state import with_baseline as _with_baseline
from ._compare.tables import By
from ._errors import EnvloopError
from ._job import Job
from ._types import FrameKind, Policy

if TYPE_CHECKING:
    import os
    from pathlib import Path

    import altair as alt
    import duckdb
    import pandas as pd
    import polars as pl

    from ._export.html_report import HtmlReport
    from ._metrics.summary import JobSummary
    from ._present.side_by_side_html import SideBySide
    from ._ui.compare_panel import ComparisonPanel

__all__ = [
    "MAX_JOBS",
    "PALETTE",
    "Comparison",
    "Difference",
    "JobSource",
    "LeaderboardSnapshot",
    "compare",
    "save_snapshot",
    "saved_leaderboard",
]


class JobSource(Protocol):
    """What the comparison needs of a workspace: its connection and its job handles."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...

    def job(self, job_id: str) -> Job: ...


def _as_frame(out: pd.DataFrame, frame: FrameKind) -> pd.DataFrame | pl.DataFrame:
    """A pandas result as ``frame`` asks.

    A polars frame has no ``attrs``: the incomparability mark is then in
    ``Comparison.mark`` only, and a matrix's row labels become its first column.
    """
    if frame == "pandas":
        return out
    if frame == "polars":
        import polars as pl

        if out.index.name is not None:
            out = out.reset_index()
        return pl.from_pandas(out)
    raise ValueError(f"frame must be 'pandas' or 'polars', got {frame!r}")


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
        workspace: JobSource,
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
        jobs = tuple(jobs)
        state = CompareState(
            workspace.con,
            tuple(j.id for j in jobs),
            baseline.id,
            policy=policy,
            threshold=threshold,
            solved_at=solved_at,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
        )
        self._bind(workspace, jobs, baseline, state)

    def _bind(
        self, workspace: JobSource, jobs: tuple[Job, ...], baseline: Job, state: CompareState
    ) -> None:
        self.workspace = workspace
        self.jobs: tuple[Job, ...] = jobs
        self.baseline = baseline
        #: The frozen record every ``_compare`` function takes.
        self.state = state

    # -- basics ------------------------------------------------------------------
    @property
    def policy(self) -> Policy:
        """The missing-attempt policy (as in :meth:`envloop_nb.Job.summary`)."""
        return self.state.policy

    @property
    def threshold(self) -> float | None:
        """The pass threshold (None: a pass is reward 1)."""
        return self.state.threshold

    @property
    def solved_at(self) -> float:
        """Pass rate at which a task counts as solved (transitions, McNemar)."""
        return self.state.solved_at

    @property
    def resamples(self) -> int:
        """Bootstrap resamples."""
        return self.state.resamples

    @property
    def seed(self) -> int:
        """Bootstrap seed."""
        return self.state.seed

    @property
    def confidence(self) -> float:
        """Interval confidence level."""
        return self.state.confidence

    @property
    def job_ids(self) -> list[str]:
        """Job ids in comparison order (the colour order)."""
        return list(self.state.job_ids)

    @property
    def others(self) -> list[Job]:
        """Every job but the baseline."""
        return [j for j in self.jobs if j.id != self.baseline.id]

    @property
    def colors(self) -> dict[str, str]:
        """Job id -> colour, fixed by job order."""
        return _colors(self.state)

    def with_baseline(self, baseline: Job | str) -> Comparison:
        """The same comparison against another of its jobs (a new object)."""
        bid = baseline.id if isinstance(baseline, Job) else baseline
        state = _with_baseline(self.state, bid)
        other = object.__new__(Comparison)
        other._bind(self.workspace, self.jobs, next(j for j in self.jobs if j.id == bid), state)
        return other

    def __repr__(self) -> str:
        state = "comparable" if self.comparable else "NOT comparable"
        return (
            f"<envloop_nb.Comparison {', '.join(self.job_ids)} · baseline {self.baseline.id}"
            f" · {state}>"
        )

    # -- guard ---------------------------------------------------------------------
    @property
    def differences(self) -> list[Difference]:
        """Every way the jobs differ (blocking ones first), as plain sentences."""
        return _guard.differences(self.state)

    @property
    def comparable(self) -> bool:
        """True when no difference breaks comparability."""
        return _guard.comparable(self.state)

    def guard_text(self) -> str:
        """The guard's findings as lines of text."""
        return _guard.guard_text(self.state)

    @property
    def mark(self) -> str:
        """The short mark every view of an incomparable comparison carries ('' if comparable)."""
        return _guard.mark(self.state)

    # -- groups, leaderboard, table ---------------------------------------------------
    @overload
    def groups(
        self, by: By = ..., *, tag: str | None = ..., frame: Literal["pandas"] = ...
    ) -> pd.DataFrame: ...
    @overload
    def groups(
        self, by: By = ..., *, tag: str | None = ..., frame: Literal["polars"]
    ) -> pl.DataFrame: ...
    def groups(
        self, by: By = "subset", *, tag: str | None = None, frame: FrameKind = "pandas"
    ) -> pd.DataFrame | pl.DataFrame:
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
        return _as_frame(_tables.groups(self.state, by, tag=tag), frame)

    @overload
    def leaderboard(self, *, frame: Literal["pandas"] = ...) -> pd.DataFrame: ...
    @overload
    def leaderboard(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def leaderboard(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
        """One row per job, ranked by score (best first; a job without a score ranks last);
        jobs not comparable with the baseline rank after every comparable one.

        Columns: ``rank, job, model`` (the job id when there is none), ``status, score,
        pass, pass@K, pass^K`` at the shared K (the smallest k of the jobs; as
        :meth:`envloop_nb.Job.curve` gives it: over the tasks with at least K scored
        attempts), ``scored,
        missing, total, complete_members, total_members``, then ``composite`` and each
        named dimension where present, ``coverage`` ("780/800 scored, 20 missing") and
        ``warning`` (missing attempts, an unfinished job, not comparable to the baseline)
        and ``comparable`` (False for a job not comparable with the baseline).

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
        return _as_frame(_leaderboard.leaderboard(self.state), frame)

    @overload
    def table(
        self, by: By = ..., *, tag: str | None = ..., frame: Literal["pandas"] = ...
    ) -> pd.DataFrame: ...
    @overload
    def table(
        self, by: By = ..., *, tag: str | None = ..., frame: Literal["polars"]
    ) -> pl.DataFrame: ...
    def table(
        self, by: By = "subset", *, tag: str | None = None, frame: FrameKind = "pandas"
    ) -> pd.DataFrame | pl.DataFrame:
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
        return _as_frame(_tables.table(self.state, by, tag=tag), frame)

    def export_html(self, path: str | Path) -> HtmlReport:
        """Write a standalone HTML report of the comparison (guard, leaderboard, charts,
        tables, strengths, paired statistics; no Jupyter or network needed to read it)."""
        from ._export.html_report import export_compare_html

        return export_compare_html(self.state, path)

    def table_html(self, by: By = "subset", *, tag: str | None = None) -> str:
        """The comparison table as HTML: best per row highlighted, coverage under each value."""
        return _tables.table_html(self.state, by, tag=tag)

    @overload
    def strengths(
        self, by: By = ..., *, tag: str | None = ..., frame: Literal["pandas"] = ...
    ) -> pd.DataFrame: ...
    @overload
    def strengths(
        self, by: By = ..., *, tag: str | None = ..., frame: Literal["polars"]
    ) -> pl.DataFrame: ...
    def strengths(
        self, by: By = "subset", *, tag: str | None = None, frame: FrameKind = "pandas"
    ) -> pd.DataFrame | pl.DataFrame:
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
        return _as_frame(_tables.strengths(self.state, by, tag=tag), frame)

    # -- paired statistics, transitions ----------------------------------------------------
    @overload
    def paired(self, *, frame: Literal["pandas"] = ...) -> pd.DataFrame: ...
    @overload
    def paired(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def paired(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
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
        return _as_frame(_paired.paired(self.state), frame)

    @overload
    def transitions(
        self,
        other: Job | str | None = ...,
        rules: Any = ...,
        *,
        shape: Literal["matrix", "long"] = ...,
        frame: Literal["pandas"] = ...,
    ) -> pd.DataFrame: ...
    @overload
    def transitions(
        self,
        other: Job | str | None = ...,
        rules: Any = ...,
        *,
        shape: Literal["matrix", "long"] = ...,
        frame: Literal["polars"],
    ) -> pl.DataFrame: ...
    def transitions(
        self,
        other: Job | str | None = None,
        rules: Any = None,
        *,
        shape: Literal["matrix", "long"] = "matrix",
        frame: FrameKind = "pandas",
    ) -> pd.DataFrame | pl.DataFrame:
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
        oid = other.id if isinstance(other, Job) else other
        return _as_frame(_paired.transitions(self.state, oid, rules, shape=shape), frame)

    @overload
    def attempts_of(
        self, tasks: Sequence[str], *, snippet: int = ..., frame: Literal["pandas"] = ...
    ) -> pd.DataFrame: ...
    @overload
    def attempts_of(
        self, tasks: Sequence[str], *, snippet: int = ..., frame: Literal["polars"]
    ) -> pl.DataFrame: ...
    def attempts_of(
        self, tasks: Sequence[str], *, snippet: int = 120, frame: FrameKind = "pandas"
    ) -> pd.DataFrame | pl.DataFrame:
        """Those tasks' attempts in every compared job: task, job, attempt, status, reward, output."""
        return _as_frame(_paired.attempts_of(self.state, tasks, snippet=snippet), frame)

    def side_by_side(
        self,
        task: str,
        *,
        jobs: tuple[Job | str, Job | str] | None = None,
        attempts: tuple[int, int] = (1, 1),
        page_size: int = 200,
    ) -> SideBySide:
        """One task's attempts in two of the compared jobs, aligned step by step, the
        first divergence marked, rewards and scorer verdicts on top (see
        :meth:`envloop_nb.Job.compare_attempts`). ``jobs`` defaults to the baseline and
        the first other job; ``attempts`` are the attempt numbers in each."""
        from ._ui.steps_view import side_by_side_of

        pair = jobs if jobs is not None else (self.baseline, self.others[0])
        ids = [j.id if isinstance(j, Job) else j for j in pair]
        unknown = [j for j in ids if j not in self.state.job_ids]
        if unknown:
            raise ValueError(f"not a job of this comparison: {', '.join(unknown)}; its jobs: "
                             f"{', '.join(self.state.job_ids)}")  # fmt: skip
        return side_by_side_of(
            self.state.con,
            (ids[0], task, attempts[0]),
            (ids[1], task, attempts[1]),
            page_size=page_size,
        )

    # -- behaviour (from steps) -----------------------------------------------------------
    def tool_stats(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
        """Each job's :meth:`envloop_nb.Job.tool_stats` side by side: one row per (job,
        tool), ``job`` and ``comparable`` (no blocking difference with the baseline) first.
        ``frame.attrs["mark"]`` is the incomparability mark and ``attrs["without_steps"]``
        the jobs that recorded no steps (no rows)."""
        from ._compare.behaviour import tool_table

        return _as_frame(tool_table(self.state), frame)

    def turn_stats(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
        """One row per job: attempts with steps and their outcomes, median steps, attempts
        with an error, median first error step, attempts with a loop (``note``: ``no steps
        recorded`` for a job without steps); ``comparable`` and the mark as
        :meth:`tool_stats`."""
        from ._compare.behaviour import turn_table

        return _as_frame(turn_table(self.state), frame)

    def survival(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
        """Each job's survival curve (share of attempts with no error up to step t):
        ``job, step, no_error, share``."""
        from ._compare.behaviour import survival_table

        return _as_frame(survival_table(self.state), frame)

    def action_patterns(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
        """Each job's most frequent tool-call n-grams in failed versus passed attempts
        (:meth:`envloop_nb.Job.action_patterns`): one row per (job, n-gram)."""
        from ._compare.behaviour import pattern_table

        return _as_frame(pattern_table(self.state), frame)

    # -- charts -------------------------------------------------------------------------
    def radar(self, by: By = "subset", *, tag: str | None = None) -> alt.LayerChart:
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
        chart: alt.LayerChart = _charts.radar(self.state, by, tag=tag)
        return chart

    def bars(self, by: By = "subset", *, tag: str | None = None) -> alt.LayerChart:
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
        chart: alt.LayerChart = _charts.bars(self.state, by, tag=tag)
        return chart

    def curves(self) -> alt.Chart:
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
        chart: alt.Chart = _charts.curves(self.state)
        return chart

    @overload
    def curve_frame(self, *, frame: Literal["pandas"] = ...) -> pd.DataFrame: ...
    @overload
    def curve_frame(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def curve_frame(self, *, frame: FrameKind = "pandas") -> pd.DataFrame | pl.DataFrame:
        """Long frame: job, k, metric (pass@k / pass^k), value, tasks, tasks_total."""
        return _as_frame(_charts.curve_frame(self.state), frame)

    # -- panel, export, display ----------------------------------------------------------
    def panel(self, *, rules: Any = None, export_path: str = "comparison.xlsx") -> ComparisonPanel:
        """The interactive comparison panel (see :func:`envloop_nb._ui.compare_panel.compare_panel`)."""
        from ._ui.compare_panel import compare_panel

        return compare_panel(self.state, rules=rules, export_path=export_path)

    def export_xlsx(self, path: str | os.PathLike[str], *, rules: Any = None) -> Path:
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
        from ._export.compare_xlsx import export_compare_xlsx

        return export_compare_xlsx(self.state, path, rules=rules)

    def _repr_html_(self) -> str:
        from ._present.compare_html import guard_html

        return guard_html(self.differences, len(self.jobs)) + self.table_html("subset")


# -- entry point ---------------------------------------------------------------------------
def compare(
    ws: JobSource,
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
def save_snapshot(
    ws: JobSource, job: Job | str, *, policy: Policy = "unknown", threshold: float | None = None
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
    return _leaderboard.save_snapshot(ws.con, handle.id, policy=policy, threshold=threshold)


def saved_leaderboard(ws: JobSource) -> pd.DataFrame:
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
    return _leaderboard.saved_leaderboard(ws.con)
