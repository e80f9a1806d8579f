"""The handle of one job in a workspace: frames, metrics, panels and exports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ._store.frames import attempts_frame, to_frame
from ._types import FrameKind, Policy

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import polars as pl

    from ._annotations.manual import AnnotationProgress, ManualDimension
    from ._behaviour.findings import StepCheckOptions
    from ._behaviour.patterns import ActionPatterns
    from ._behaviour.tools import ToolStats
    from ._behaviour.turns import TurnStats
    from ._buckets.apply import BucketResult
    from ._buckets.rules import BucketRules
    from ._datasets.dataset import Dataset
    from ._datasets.heldout import HeldOutResult, ReferenceFill
    from ._export.html_report import HtmlReport
    from ._export.job_xlsx import ExportResult
    from ._metrics.diagnosis import DiagnosisOptions, Findings
    from ._metrics.groups import PerName
    from ._metrics.inference import InferenceConfig
    from ._metrics.summary import JobSummary
    from ._metrics.uncertainty import Interval
    from ._present.side_by_side_html import SideBySide
    from ._present.transcript_html import Transcript
    from ._store.ref import WorkspaceRef
    from ._ui.panel import JobPanel

__all__ = ["Job"]

if TYPE_CHECKING:
    Frame = pd.DataFrame | pl.DataFrame


class Job:
    """One job in a workspace. Cheap to create: it holds only the workspace and the id.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> job
    <envloop_nb.Job job_abc0001 · my-endpoint/sft · tiny-agent@1 · k=2>
    """

    def __init__(self, workspace: WorkspaceRef, job_id: str) -> None:
        self.workspace = workspace
        self.id = job_id

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The workspace's DuckDB connection."""
        return self.workspace.con

    def __repr__(self) -> str:
        info = self.info
        dataset = f"{info['dataset_name']}@{info['dataset_version']}"
        return f"<envloop_nb.Job {self.id} · {info['model'] or '-'} · {dataset} · k={info['attempts']}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and other.id == self.id and other.workspace is self.workspace

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def info(self) -> dict[str, Any]:
        """The job's row in ``jobs`` as a dict (JSON columns decoded); a completed job
        whose required manual dimension lacks annotations has the status
        ``"awaiting annotation"``."""
        from ._metrics.facts import current_info

        return current_info(self.con, self.id)

    @property
    def k(self) -> int:
        """Attempts requested per task."""
        return int(self.info["attempts"])

    # -- frames ----------------------------------------------------------------
    @overload
    def attempts(self, frame: Literal["pandas"] = "pandas") -> pd.DataFrame: ...
    @overload
    def attempts(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def attempts(self, frame: FrameKind = "pandas") -> Frame:
        """One row per attempt of record (dispatched attempts only), in task order."""
        out: Frame = attempts_frame(self.con, self.id, frame)
        return out

    @overload
    def tasks(self, frame: Literal["pandas"] = "pandas") -> pd.DataFrame: ...
    @overload
    def tasks(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def tasks(self, frame: FrameKind = "pandas") -> Frame:
        """One row per requested task: name, digest, tags (JSON text)."""
        result = self.con.execute(
            "SELECT task, digest, tags FROM tasks WHERE job_id = ? ORDER BY position",
            [self.id],
        )
        out: Frame = to_frame(result, frame)
        return out

    @overload
    def steps(
        self,
        task: str | None = None,
        attempt: int | None = None,
        *,
        frame: Literal["pandas"] = "pandas",
    ) -> pd.DataFrame: ...
    @overload
    def steps(
        self, task: str | None = None, attempt: int | None = None, *, frame: Literal["polars"]
    ) -> pl.DataFrame: ...
    def steps(
        self, task: str | None = None, attempt: int | None = None, *, frame: FrameKind = "pandas"
    ) -> Frame:
        """What the agent did: one row per step (message, reasoning, tool call, tool result,
        error, context summary, sub-agent hand-off) of one attempt, one task or the job,
        in order. Columns: see ``envloop_nb._store.steps``. A source that records no steps
        gives no rows (``job.info["extra"]`` says why where the loader knows)."""
        from ._store.steps import steps_relation

        out: Frame = to_frame(steps_relation(self.con, self.id, task=task, attempt=attempt), frame)
        return out

    def transcript(self, task: str, attempt: int, *, page_size: int = 200) -> Transcript:
        """One attempt's steps as a transcript people can read; a notebook shows it.

        Roles as blocks, each tool call a card with its arguments and its result, errors
        in red, reasoning and long text folded, a timeline strip, a search box, "jump to
        first error", the reward and the judge's reasoning beside it; pages of
        ``page_size`` steps (see :mod:`envloop_nb._present.transcript_html`). An attempt
        whose source recorded no steps says so. ``KeyError`` for an attempt the job lacks.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
        >>> job.transcript("A", 1)
        <Transcript task 'A' · attempt 1 · 0 steps · 0 pages>
        """
        from ._ui.steps_view import transcript_of

        return transcript_of(self.con, self.id, task, attempt, page_size=page_size)

    def compare_attempts(
        self, task: str, attempt_a: int, attempt_b: int, *, page_size: int = 200
    ) -> SideBySide:
        """Two attempts of one task side by side, aligned step by step, with the first
        divergence (the first step whose tool call or action differs) marked and both
        rewards and scorer verdicts on top; a notebook shows it. See
        :mod:`envloop_nb._metrics.step_alignment` for what counts as the same action.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
        >>> job.compare_attempts("A", 1, 2)
        <SideBySide job_abc0001 · A · attempt 1 | job_abc0001 · A · attempt 2 · 0 rows · no divergence>
        """
        from ._ui.steps_view import side_by_side_of

        return side_by_side_of(
            self.con, (self.id, task, attempt_a), (self.id, task, attempt_b), page_size=page_size
        )

    # -- behaviour (from steps; see envloop_nb._behaviour) ---------------------------
    def tool_stats(
        self,
        *,
        threshold: float | None = None,
        resamples: int = 2000,
        seed: int = 0,
        confidence: float = 0.95,
    ) -> ToolStats:
        """Per tool: calls, attempts using it, calls per attempt, error rate, and the pass
        rate of attempts that used it versus not, with task-bootstrap intervals.

        A pass is ``reward = 1`` (or ``>= threshold``); an attempt without a reward is in
        no pass rate. Definitions: ``envloop_nb._behaviour.tools``. A job without steps
        gives an empty table.
        """
        from ._behaviour.tools import tool_stats

        return tool_stats(self.con, self.id, threshold=threshold, resamples=resamples,
                          seed=seed, confidence=confidence)  # fmt: skip

    def turn_stats(
        self,
        *,
        threshold: float | None = None,
        bins: int = 12,
        resamples: int = 2000,
        seed: int = 0,
        confidence: float = 0.95,
    ) -> TurnStats:
        """Steps per attempt, pass rate by number of steps (binned), the step of the first
        error and the survival curve (share of attempts with no error up to step t).

        Definitions: ``envloop_nb._behaviour.turns``.
        """
        from ._behaviour.turns import turn_stats

        return turn_stats(self.con, self.id, threshold=threshold, bins=bins,
                          resamples=resamples, seed=seed, confidence=confidence)  # fmt: skip

    def action_patterns(
        self, *, threshold: float | None = None, top: int = 10, min_repeat: int = 3
    ) -> ActionPatterns:
        """The most frequent tool-call n-grams (n = 1..3) in failed versus passed attempts,
        loops (the same call with the same arguments ``min_repeat`` or more times in a
        row) and the steps after the last successful tool call.

        Definitions: ``envloop_nb._behaviour.patterns``.
        """
        from ._behaviour.patterns import action_patterns

        return action_patterns(self.con, self.id, threshold=threshold, top=top,
                               min_repeat=min_repeat)  # fmt: skip

    @overload
    def find_steps(
        self,
        *,
        tool: str | None = ...,
        kind: str | None = ...,
        error: bool | None = ...,
        contains: str | None = ...,
        frame: Literal["pandas"] = ...,
    ) -> pd.DataFrame: ...
    @overload
    def find_steps(
        self,
        *,
        tool: str | None = ...,
        kind: str | None = ...,
        error: bool | None = ...,
        contains: str | None = ...,
        frame: Literal["polars"],
    ) -> pl.DataFrame: ...
    def find_steps(
        self,
        *,
        tool: str | None = None,
        kind: str | None = None,
        error: bool | None = None,
        contains: str | None = None,
        frame: FrameKind = "pandas",
    ) -> Frame:
        """The attempts with a step matching every given condition: ``task, attempt,
        first_step, matches``, in task order (one DuckDB query).

        ``tool`` (exact name), ``kind`` (a step kind), ``error`` (an error step or not),
        ``contains`` (a case-insensitive substring of the content or the arguments;
        ``%`` and ``_`` are plain characters).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.find_steps(contains="anything").empty  # this job has no steps
        True
        """
        from ._behaviour.find import find_steps_relation

        found = find_steps_relation(self.con, self.id, tool=tool, kind=kind, error=error,
                                    contains=contains)  # fmt: skip
        out: Frame = to_frame(found, frame)
        return out

    @overload
    def dimensions(self, frame: Literal["pandas"] = "pandas") -> pd.DataFrame: ...
    @overload
    def dimensions(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def dimensions(self, frame: FrameKind = "pandas") -> Frame:
        """Score dimensions in long form: task, attempt, name, value."""
        result = self.con.execute(
            """SELECT task, attempt, name, value FROM dimensions
               WHERE job_id = ? ORDER BY task, attempt, name""",
            [self.id],
        )
        out: Frame = to_frame(result, frame)
        return out

    # -- metrics ---------------------------------------------------------------
    def summary(self, policy: Policy = "unknown", threshold: float | None = None) -> JobSummary:
        """Score, pass, pass@k, pass^k with coverage counts (platform semantics).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> print(job.summary())
        score 60.0% · 5/6 attempts scored · 2/3 members complete

        A Harbor job's summary also says which policy reproduces Harbor's own
        ``result.json`` (``note``; it depends on the Harbor version, see
        :mod:`envloop_nb._metrics.harbor`):

        >>> harbor = enb.open().load("../shared/fixtures/harbor/2025-10-01__10-00-00-legacy")
        >>> print(harbor.summary())
        score 25.0% · 8/8 attempts scored · 4/4 members complete
        Harbor before 0.26 (sandboxes layout: verifier_result.reward): trials without a reward count as 0 (policy='failure' reproduces its result.json)
        """
        from ._metrics.facts import noted_summary

        return noted_summary(self.con, self.id, policy=policy, threshold=threshold)

    @overload
    def samples(
        self,
        ks: Sequence[int] | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        frame: Literal["pandas"] = "pandas",
    ) -> pd.DataFrame: ...
    @overload
    def samples(
        self,
        ks: Sequence[int] | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        *,
        frame: Literal["polars"],
    ) -> pl.DataFrame: ...
    def samples(
        self,
        ks: Sequence[int] | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        frame: FrameKind = "pandas",
    ) -> Frame:
        """The per-task table (see :func:`envloop_nb._metrics.passk_views.samples`)."""
        from ._metrics.passk_views import samples

        out: Frame = samples(
            self.con, self.id, ks=ks, policy=policy, threshold=threshold, frame=frame
        )
        return out

    @overload
    def curve(
        self,
        ks: Sequence[int] | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        frame: Literal["pandas"] = "pandas",
    ) -> pd.DataFrame: ...
    @overload
    def curve(
        self,
        ks: Sequence[int] | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        *,
        frame: Literal["polars"],
    ) -> pl.DataFrame: ...
    def curve(
        self,
        ks: Sequence[int] | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        frame: FrameKind = "pandas",
    ) -> Frame:
        """pass@k / pass^k for k = 1..k (or ``ks``) with the tasks each point covers; by
        default up to the most attempts a task has, then k itself without an estimate.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.curve()[["k", "pass@k", "pass^k", "tasks"]].values.tolist()
        [[1.0, 0.5, 0.5, 3.0], [2.0, 1.0, 0.5, 2.0]]
        """
        from ._metrics.passk_views import curve

        out: Frame = curve(
            self.con, self.id, ks=ks, policy=policy, threshold=threshold, frame=frame
        )
        return out

    @overload
    def groups(
        self,
        by: str = "subset",
        policy: Policy = "unknown",
        threshold: PerName = None,
        bad_below: PerName = 0.5,
        frame: Literal["pandas"] = "pandas",
    ) -> pd.DataFrame: ...
    @overload
    def groups(
        self,
        by: str = "subset",
        policy: Policy = "unknown",
        threshold: PerName = None,
        bad_below: PerName = 0.5,
        *,
        frame: Literal["polars"],
    ) -> pl.DataFrame: ...
    def groups(
        self,
        by: str = "subset",
        policy: Policy = "unknown",
        threshold: PerName = None,
        bad_below: PerName = 0.5,
        frame: FrameKind = "pandas",
    ) -> Frame:
        """Summaries by task tag (``"subset"``, ``"tag:<key>"``) or by ``"dimension"``.

        See :func:`envloop_nb._metrics.groups.group_summaries`.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.groups()[["value", "tasks", "score"]].values.tolist()
        [['code', 2, 0.6666666666666666], ['math', 1, 0.5]]
        """
        from ._metrics.groups import group_summaries

        out: Frame = group_summaries(
            self.con,
            self.id,
            by=by,
            policy=policy,
            threshold=threshold,
            bad_below=bad_below,
            frame=frame,
        )
        return out

    @overload
    def rollout_stats(self, frame: Literal["pandas"] = "pandas") -> pd.DataFrame: ...
    @overload
    def rollout_stats(self, *, frame: Literal["polars"]) -> pl.DataFrame: ...
    def rollout_stats(self, frame: FrameKind = "pandas") -> Frame:
        """Rollout statistics as RL evaluation reports them (see :mod:`envloop_nb._metrics.rollouts`)."""
        from ._metrics.rollouts import rollout_stats

        out: Frame = rollout_stats(self.con, self.id, frame=frame)
        return out

    @overload
    def source_agreement(self, frame: Literal["pandas"] = "pandas") -> pd.DataFrame: ...
    @overload
    def source_agreement(self, frame: Literal["polars"]) -> pl.DataFrame: ...
    def source_agreement(self, frame: FrameKind = "pandas") -> Frame:
        """The source tool's own numbers, each recomputed from this job's rows.

        One row per number the source reported (Inspect's ``results.scores``, the
        Terminal-Bench ``accuracy`` and ``pass_at_k``, lm-eval's ``results``):
        ``metric, source, recomputed, agrees, rule, note`` and the recipe (``of, reducer,
        k, statistic, policy, threshold``); ``rule`` says how the source treats a missing
        value and what a pass is. A number that cannot be checked (the job holds no
        attempts, or no value to recompute it from) has ``agrees`` null and a ``note``
        saying why. Empty when the source reported no numbers. See
        :mod:`envloop_nb._metrics.agreement`.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> from pathlib import Path
        >>> log = sorted(Path("../shared/fixtures/inspect/json").glob("*.json"))[0]
        >>> rows = enb.open().load(log).source_agreement()
        >>> rows[["metric", "source", "agrees"]].head(2).values.tolist()
        [['exact · mean · accuracy', 0.35, True], ['exact · mean · stderr', 0.07039986044643265, True]]
        >>> bool(rows["agrees"].all()), len(rows)
        (True, 14)
        """
        from ._metrics.agreement import agreement_frame

        out: Frame = agreement_frame(self.con, self.id, frame)
        return out

    @overload
    def consumption(self, frame: Literal["pandas"] = "pandas") -> pd.DataFrame: ...
    @overload
    def consumption(self, frame: Literal["polars"]) -> pl.DataFrame: ...
    def consumption(self, frame: FrameKind = "pandas") -> Frame:
        """Tokens and cost per model and role (see :mod:`envloop_nb._metrics.consumption`).

        Columns ``model, role, attempts, reported, input_tokens, output_tokens,
        cache_tokens, cost_usd, where``: usage an attempt did not report is not counted,
        and ``reported`` says how many attempts did.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> row = enb.open().load("sample_data/base.json").consumption().iloc[0]
        >>> row["model"], int(row["attempts"]), int(row["input_tokens"]) > 0
        ('acme-7b@base', 797, True)
        """
        from ._metrics.consumption import consumption

        rows = consumption(self.con, self.id)
        if frame == "polars":
            import polars as pl

            return pl.from_pandas(rows)
        return rows

    def add_manual_dimension(
        self,
        name: str,
        labels: Mapping[str, float] | None = None,
        *,
        scale: tuple[float, float] | None = None,
        required: bool = True,
        by: str | None = None,
    ) -> ManualDimension:
        """Define a dimension people annotate by hand: ``labels`` (each label's value)
        or ``scale=(low, high)``. While a required one lacks an annotation on some
        attempt the job is *awaiting annotation*. See :mod:`envloop_nb._annotations.manual`.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.add_manual_dimension("correct", {"yes": 1, "no": 0}).choices
        ['yes', 'no']
        >>> job.annotate("A", 1, label="yes", reason="matches the reference")
        >>> [p.describe() for p in job.annotation_progress()]
        ['correct: 1/6 annotated']
        """
        from ._annotations.manual import define

        return define(self.con, self.id, name, labels=labels, scale=scale, required=required, by=by)

    def manual_dimensions(self) -> list[ManualDimension]:
        """The job's manual dimensions, in the order they were defined."""
        from ._annotations.manual import manual_dimensions

        return manual_dimensions(self.con, self.id)

    def _manual_name(self, name: str | None) -> str:
        if name is not None:
            return name
        dims = self.manual_dimensions()
        if len(dims) != 1:
            names = ", ".join(d.name for d in dims) or "none yet (job.add_manual_dimension)"
            raise ValueError(f"say which manual dimension: name=...; the job's: {names}")
        return dims[0].name

    def annotate(
        self,
        task: str,
        attempt: int,
        name: str | None = None,
        *,
        label: str | None = None,
        value: float | None = None,
        reason: str | None = None,
        by: str | None = None,
    ) -> None:
        """Annotate one attempt (``name``: the manual dimension, optional when the job
        has one); annotating again replaces the value, the history keeps both."""
        from ._annotations.manual import annotate

        annotate(
            self.con, self.id, self._manual_name(name), task, attempt,
            label=label, value=value, reason=reason, by=by,
        )  # fmt: skip

    def clear_annotation(
        self,
        task: str,
        attempt: int,
        name: str | None = None,
        *,
        reason: str | None = None,
        by: str | None = None,
    ) -> None:
        """Take an attempt's annotation back (it is missing again; the history keeps it)."""
        from ._annotations.manual import clear

        clear(self.con, self.id, self._manual_name(name), task, attempt, reason=reason, by=by)

    def annotations(self, name: str | None = None, *, history: bool = False) -> pd.DataFrame:
        """The current annotations (``history=True``: every one made, with ``replaced_at``)."""
        from ._annotations.manual import annotation_frame

        return annotation_frame(self.con, self.id, name, history=history)

    def annotation_progress(self) -> list[AnnotationProgress]:
        """Per manual dimension: attempts annotated out of the job's attempts."""
        from ._annotations.manual import progress

        return progress(self.con, self.id)

    def inference_config(self) -> InferenceConfig:
        """The system prompt and generation parameters the source recorded.

        See :class:`~envloop_nb._metrics.inference.InferenceConfig`.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> cfg = enb.open().load("sample_data/base.json").inference_config()
        >>> cfg.params["MAX_TURNS"], cfg.system_prompt_from
        ('64', 'inputs')
        """
        from ._metrics.inference import inference_config

        return inference_config(self.con, self.id)

    def diagnose(
        self,
        against: Job | None = None,
        options: DiagnosisOptions | None = None,
        steps: StepCheckOptions | None = None,
        **overrides: Any,
    ) -> Findings:
        """Flag suspicious patterns with their evidence: a list of :class:`envloop_nb.Finding`.

        ``options`` is a :class:`envloop_nb.DiagnosisOptions`; keyword ``overrides`` replace
        single thresholds (``job.diagnose(looping_min_turns=50)``). A job with steps also
        gets the step checks (a looping agent, a tool that always fails, an agent that
        stops after a tool error; ``envloop_nb._behaviour.findings``, thresholds in
        ``steps``), each naming its steps as evidence.
        """
        from ._behaviour.findings import diagnose

        return diagnose(self, against=against, options=options, steps=steps, **overrides)

    @overload
    def intervals(
        self,
        policy: Policy = "unknown",
        threshold: float | None = None,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int = 0,
        frame: Literal["pandas"] = "pandas",
        ks: Sequence[int] = (),
    ) -> pd.DataFrame: ...
    @overload
    def intervals(
        self,
        policy: Policy = "unknown",
        threshold: float | None = None,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int = 0,
        *,
        frame: Literal["polars"],
        ks: Sequence[int] = (),
    ) -> pl.DataFrame: ...
    @overload
    def intervals(
        self,
        policy: Policy = "unknown",
        threshold: float | None = None,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int = 0,
        *,
        frame: None,
        ks: Sequence[int] = (),
    ) -> dict[str, Interval]: ...
    def intervals(
        self,
        policy: Policy = "unknown",
        threshold: float | None = None,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int = 0,
        frame: FrameKind | None = "pandas",
        ks: Sequence[int] = (),
    ) -> Frame | dict[str, Interval]:
        """Task-bootstrap intervals for score, pass, pass@k, pass^k (+ Wilson for pass).

        ``frame=None`` returns a dict of :class:`envloop_nb.Interval` keyed by metric;
        ``ks`` adds the unbiased pass@k / pass^k of the curve for those k.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.intervals(resamples=200, frame=None)["score"].estimate
        0.6
        """
        from ._metrics.job_intervals import intervals_frame, job_intervals

        ivs = job_intervals(
            self.con,
            self.id,
            policy=policy,
            threshold=threshold,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
            ks=ks,
        )
        return ivs if frame is None else intervals_frame(ivs, frame)

    # -- buckets and held-out checks (see _buckets.py, _heldout.py) ---------------
    def buckets(
        self,
        rules: BucketRules,
        policy: Policy = "unknown",
        threshold: float | None = None,
        *,
        allow_partial: bool = False,
        frame: FrameKind = "pandas",
    ) -> BucketResult:
        """Apply hard-case bucket rules (see :class:`envloop_nb.BucketRules`).

        Refuses a pending or running job unless ``allow_partial=True`` (the result is
        then marked partial). Returns a :class:`envloop_nb.BucketResult`.
        """
        from ._buckets.apply import job_buckets

        return job_buckets(
            self,
            rules,
            policy=policy,
            threshold=threshold,
            allow_partial=allow_partial,
            frame=frame,
        )

    def heldout_check(self, *, warn: bool = True) -> HeldOutResult:
        """Overlap of this job's inputs with training datasets (see :func:`envloop_nb.check_heldout`)."""
        from ._datasets.heldout import check_heldout

        return check_heldout(self.workspace, self, warn=warn)

    def fill_references(self, dataset: Dataset | str) -> ReferenceFill:
        """Fill missing reference answers from a dataset by stripped-exact input match.

        ``dataset`` is a :class:`envloop_nb.Dataset` or ``"name@version"``.
        """
        from ._datasets.heldout import fill_references

        return fill_references(self, dataset)

    # -- views and exports (each lives in its own module) ------------------------
    def panel(
        self,
        *,
        policy: Policy = "unknown",
        threshold: float | None = None,
        page_size: int = 20,
    ) -> JobPanel:
        """The interactive panel of this job (overview, cases, buckets & export).

        ``policy`` and ``threshold`` are the initial settings (both can be changed in the
        panel); ``page_size`` is the rows per page of the Cases tab. A job whose export is
        being watched (``ws.watch``) gets a panel that follows it: it redraws as trials
        arrive.
        """
        from ._ui.panel import job_panel

        panel = job_panel(self, policy=policy, threshold=threshold, page_size=page_size)
        session = getattr(self.workspace, "session", None)
        watched = session is not None and any(
            getattr(w, "job_id", None) == self.id and w.running for w in session.watchers.values()
        )
        if watched:
            assert session is not None
            session.on_close(panel.follow().unfollow)  # ws.close() stops the follower
        return panel

    def export_html(
        self,
        path: str | Path,
        *,
        rules: BucketRules | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        hard_cases: int = 50,
    ) -> HtmlReport:
        """Write a standalone HTML report (no Jupyter, no network needed to read it):
        summary with coverage, facts, charts, per-subset/dimension tables, diagnosis,
        buckets (with ``rules``) and the ``hard_cases`` tasks with the lowest pass rate.

        Examples
        --------
        >>> import tempfile, envloop_nb as enb
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.export_html(tempfile.mkdtemp() + "/job.html").sections[:3]
        ('Summary', 'Job', 'Inference configuration and consumption')
        """
        from ._export.html_report import export_job_html

        return export_job_html(
            self, path, rules=rules, policy=policy, threshold=threshold, hard_cases=hard_cases
        )

    def export_xlsx(
        self,
        path: str | Path,
        *,
        rules: BucketRules | None = None,
        buckets: Sequence[str] | str | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        sheet_per_bucket: bool = False,
        allow_partial: bool = False,
    ) -> ExportResult:
        """Write an XLSX workbook for reviewers (see :func:`envloop_nb.export_xlsx`)."""
        from ._export.job_xlsx import export_xlsx

        return export_xlsx(
            self,
            path,
            rules=rules,
            buckets=buckets,
            policy=policy,
            threshold=threshold,
            sheet_per_bucket=sheet_per_bucket,
            allow_partial=allow_partial,
        )

    def export_dataset(
        self,
        folder: str | Path,
        *,
        name: str,
        version: str,
        rules: BucketRules | None = None,
        buckets: Sequence[str] | str | None = None,
        format: Literal["jsonl", "parquet", "openai_chat", "atif"] = "jsonl",
        purpose: Literal["train", "eval"] | None = None,
        overwrite: bool = False,
        policy: Policy = "unknown",
        threshold: float | None = None,
        allow_partial: bool = False,
    ) -> Dataset:
        """Write a new dataset from chosen buckets (see :func:`envloop_nb.export_dataset`);
        ``format="openai_chat"`` or ``"atif"`` writes the chosen tasks' attempts' whole
        trajectories (OpenAI chat messages with tool calls for SFT, or ATIF-v1.7)."""
        from ._datasets.export import export_dataset

        return export_dataset(
            self,
            folder,
            name=name,
            version=version,
            rules=rules,
            buckets=buckets,
            format=format,
            purpose=purpose,
            overwrite=overwrite,
            policy=policy,
            threshold=threshold,
            allow_partial=allow_partial,
        )

    def log_mlflow(
        self,
        *,
        experiment: str,
        run_name: str | None = None,
        tracking_uri: str | None = None,
        artifact_location: str | None = None,
        policy: Policy = "unknown",
        threshold: float | None = None,
        ks: Sequence[int] | None = None,
    ) -> str:
        """Log this job as an MLflow run; returns the run id.

        Metrics under the names SageMaker's multi-turn RL evaluation uses
        (``eval/reward/*``, ``eval/tokens/*``, ``eval/turns/*``, ``eval/logprob/*``,
        ``timing_s/eval``) plus the coverage (``eval/coverage/*``); policy, threshold,
        k and the job's facts as params; the per-task table (``per_task.parquet``), the
        workbook (``<job id>.xlsx``) and the exact per-task counts that
        :meth:`envloop_nb.Workspace.load_mlflow_run` reads back (``task_counts.parquet``)
        as artifacts. An undefined value is not logged
        (never as 0): the tag ``envloop_nb.skipped_metrics`` names it. The experiment
        is created when missing. Needs ``pip install 'envloop_nb[mlflow]'``. Every
        definition: :mod:`envloop_nb._export.mlflow_run`.

        Examples
        --------
        >>> import os, tempfile, envloop_nb as enb
        >>> _ = os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no usage data sent
        >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> uri = f"sqlite:///{tempfile.mkdtemp()}/mlflow.db"
        >>> run_id = job.log_mlflow(experiment="tiny-agent", run_name="sft", tracking_uri=uri)
        >>> from mlflow import MlflowClient
        >>> run = MlflowClient(tracking_uri=uri).get_run(run_id)
        >>> run.data.metrics["eval/reward/mean"], run.data.metrics["eval/reward/pass_at_2"]
        (0.6, 1.0)
        >>> run.data.params["policy"], run.data.tags["envloop_nb.skipped_metrics"]
        ('unknown', 'eval/logprob/nz_mean,eval/logprob/nz_min,timing_s/eval')
        >>> sorted(a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(run_id))
        ['job_abc0001.xlsx', 'per_task.parquet', 'task_counts.parquet']
        """
        from ._export.mlflow_run import log_job_run

        return log_job_run(
            self,
            experiment=experiment,
            run_name=run_name,
            tracking_uri=tracking_uri,
            artifact_location=artifact_location,
            policy=policy,
            threshold=threshold,
            ks=ks,
        )
