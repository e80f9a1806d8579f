"""A job's headline numbers: score, pass, pass@k, pass^k with their coverage.

Derived from the per-task counts of :mod:`envloop_nb._metrics.counts` (the exact
semantics are described there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._present.cards import coverage_text, metric_items, summary_card_html
from .._store.memo import job_row
from .._store.ref import metrics_only
from .._types import Policy
from .counts import check_options, count_rows

if TYPE_CHECKING:
    import duckdb

__all__ = ["JobSummary", "job_summary", "run_metrics_summary", "summary_of_counts"]


@dataclass(frozen=True)
class JobSummary:
    """A job's headline numbers with their coverage. Immutable.

    ``to_dict()`` uses the platform's keys: ``score, pass, pass@k, pass^k, k, total,
    scored, missing, invalid, total_members, complete_members``, plus ``policy``,
    ``threshold``, ``binary``, ``job_id`` and ``note``: a sentence about the source's own
    rule when it matters (a Harbor job: which policy reproduces its ``result.json``),
    else None.

    ``scored``, ``missing``, ``invalid`` and ``complete_members`` are None only for a
    *metrics-only* job (an MLflow run holding aggregate metrics alone) whose metrics do
    not state them: unknown, never guessed.
    """

    job_id: str
    k: int
    total: int
    scored: int | None
    missing: int | None
    invalid: int | None
    total_members: int
    complete_members: int | None
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


def job_summary(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> JobSummary:
    """Compute a job's summary (see the module docstring for the exact semantics).

    A metrics-only job (:func:`envloop_nb._store.ref.metrics_only`) reports its run's
    own aggregate metrics (:func:`run_metrics_summary`; lm-eval results without samples:
    :func:`envloop_nb._metrics.lm_eval_results.results_summary`).
    """
    check_options(policy, threshold)
    reduced = metrics_only(con, job_id)
    if reduced is not None and reduced.get("engine") == "lm-eval":  # results, no samples
        from .lm_eval_results import results_rows, results_summary

        rows = results_rows(con, job_id) or []
        return results_summary(con, job_id, rows, policy=policy, threshold=threshold)
    if reduced is not None:
        return run_metrics_summary(con, job_id, reduced, policy=policy, threshold=threshold)
    counts = count_rows(con, job_id, threshold)  # the counts, not the tasks' tags
    if counts.num_rows:
        k = int(np.asarray(counts.column("k"))[0])
    else:  # a job with no requested task
        row = job_row(con, job_id)
        if row is None:
            raise ValueError(f"no job {job_id!r} in this workspace")
        k = row[1]
    columns = {name: np.asarray(counts.column(name)) for name in _COUNTED}
    return summary_of_counts(job_id, columns, k=k, policy=policy, threshold=threshold)


#: The per-task count columns a summary reads.
_COUNTED = ("k", "scored", "invalid", "passes", "nonbinary", "reward_sum")


def summary_of_counts(
    job_id: str,
    counts: Mapping[str, np.ndarray],
    *,
    k: int,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> JobSummary:
    """The summary of a job from its per-task counts (one entry per requested task, in
    task order: ``k``, ``scored``, ``invalid``, ``passes``, ``nonbinary``,
    ``reward_sum``), as :func:`job_summary` computes it from ``count_rows`` — the same
    arithmetic in the same order, so the same bits (a run's many jobs read their counts
    at once and come here)."""
    arr = per_task_arrays_of(counts)
    k_col, scored_t, passes_t = arr["k"], arr["scored"], arr["c"]
    members = len(k_col)
    scored = int(scored_t.sum())
    invalid = int(np.asarray(counts["invalid"], dtype=np.int64).sum())
    full = scored_t == k_col
    complete = int(full.sum())
    reward_sum = float(np.asarray(counts["reward_sum"], dtype=np.float64).sum())
    passes = int(passes_t.sum())
    nonbinary = int(np.asarray(counts["nonbinary"], dtype=np.int64).sum())
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


def per_task_arrays_of(counts: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``k``, ``scored`` and ``c`` (passes) as int64 arrays (``per_task_arrays``' keys)."""
    return {
        "k": np.asarray(counts["k"], dtype=np.int64),
        "scored": np.asarray(counts["scored"], dtype=np.int64),
        "c": np.asarray(counts["passes"], dtype=np.int64),
    }


def _metric(metrics: dict[str, Any], name: str) -> float | None:
    value = metrics.get(name)
    return float(value) if isinstance(value, int | float) and np.isfinite(value) else None


def _whole(metrics: dict[str, Any], name: str) -> int | None:
    value = _metric(metrics, name)
    return int(value) if value is not None and value == int(value) else None


def run_metrics_summary(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    reduced: dict[str, Any],
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> JobSummary:
    """The summary a metrics-only job's run states (``jobs.platform_metrics``), nothing
    derived that the run does not say.

    ``k`` = ``eval/reward/rollouts_per_prompt``, ``total_members`` =
    ``eval/reward/num_prompts``, ``total`` their product, ``score`` =
    ``eval/reward/mean``; ``pass@k`` / ``pass^k`` = ``eval/reward/pass_at_{k}`` /
    ``pass_power_{k}`` and ``pass`` = ``succeeded_rollouts / eval/coverage/scored``, only
    under the run's own ``eval/reward/success_threshold`` (``threshold=None`` when it is
    1: reward >= 1); ``scored``, ``missing``, ``invalid``, ``complete_members`` only
    from ``eval/coverage/*``, else None (unknown). The policy cannot change numbers
    already aggregated: it is recorded, and the note says so. Another threshold than the
    run's is refused.
    """
    row = con.execute(
        "SELECT attempts, platform_metrics FROM jobs WHERE job_id = ?", [job_id]
    ).fetchone()
    if row is None:
        raise ValueError(f"no job {job_id!r} in this workspace")
    metrics = json.loads(row[1]) if isinstance(row[1], str) else dict(row[1] or {})
    run_threshold = _metric(metrics, "eval/reward/success_threshold")
    known = [None if t is None else float(t) for t in reduced.get("thresholds") or [None]]
    if threshold is not None and float(threshold) not in known:
        shown = ", ".join("none" if t is None else repr(t) for t in known)
        raise ValueError(
            f"job {job_id!r} holds only its run's aggregate metrics, computed with the "
            f"thresholds {shown}, not {threshold!r}"
        )
    k = int(row[0])
    members = _whole(metrics, "eval/reward/num_prompts") or 0
    total = members * k
    applies = run_threshold is not None and (
        threshold == run_threshold or (threshold is None and run_threshold == 1.0)
    )
    scored = _whole(metrics, "eval/coverage/scored")
    succeeded = _metric(metrics, "eval/reward/succeeded_rollouts")
    pass_ = succeeded / scored if applies and succeeded is not None and scored else None
    missing = _whole(metrics, "eval/coverage/missing")
    where = reduced.get("where") or "an MLflow run"
    note = (
        f"From the aggregate metrics of {where} (eval/reward/*), not from per-task counts"
        f"; policy={policy!r} cannot change them; unknown counts are left out."
    )
    return JobSummary(
        job_id=job_id,
        k=k,
        total=total,
        scored=scored,
        missing=missing if missing is not None else (None if scored is None else total - scored),
        invalid=_whole(metrics, "eval/coverage/invalid"),
        total_members=members,
        complete_members=_whole(metrics, "eval/coverage/complete_members"),
        score=_metric(metrics, "eval/reward/mean"),
        pass_=pass_,
        pass_at_k=_metric(metrics, f"eval/reward/pass_at_{k}") if applies else None,
        pass_hat_k=_metric(metrics, f"eval/reward/pass_power_{k}") if applies else None,
        binary=applies,
        policy=policy,
        threshold=threshold,
        note=note,
    )
