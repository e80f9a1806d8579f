"""The curve over training: a metric per step with its interval, coverage and noise band.

Numbers are each job's own: the estimate at a step is ``job.summary()``'s ``score``,
``pass``, ``pass@k`` or ``pass^k`` (its ``k``), or ``job.curve()``'s unbiased ``pass@j`` /
``pass^j`` — the same function computes both, so they agree bit for bit. With ``by``
(``"subset"``, ``"tag:<key>"``) each group's number is formed from the same per-task
counts as ``job.groups(by=...)``; ``by="dimension"`` is ``job.groups(by="dimension")``'s
numbers per step (the reward, the composite, each named dimension), each with the task
bootstrap of that value on the run's draws (:func:`envloop_nb._runs.pertask.dimension_matrices`:
the reward's interval is the curve's own, so ``job.intervals()``'s), and for a
results-only lm-eval step its file's other metrics (``"<task>/<metric>"``) with the
file's stderr interval, as ``job.groups(by="dimension")`` gives them.

Intervals (``interval`` column):

* ``"task bootstrap"`` — where the job has per-task counts: the percentile bootstrap over
  tasks (attempts stay with their task) of the same ratio ``job.intervals`` resamples
  (:mod:`envloop_nb._metrics.uncertainty`), drawn once for the whole run
  (:func:`envloop_nb._runs.pertask.weights`): every step sees the same resampled tasks;
* ``"source stderr"`` — a job holding only aggregates (lm-eval results without samples):
  the file's number ± z·stderr, as ``job.intervals()`` gives it;
* ``"none"`` — no estimate, or a source that states no stderr.

Coverage: ``scored`` of ``total`` attempts (``coverage``) and complete members per step.
A step whose coverage is more than ``coverage_tolerance`` below the run's best is marked
``coverage_drop`` with a note: its number is over fewer attempts, never a drop in score.

The noise band (:func:`noise_band`): what the step-to-step change looks like when nothing
changed. For each step, the task bootstrap of its paired difference from the previous step
(same resampled tasks for both), centred on the observed difference: the ``confidence``
quantile of ``|d* - d|`` is the half-width ``h``; the band is ``previous ± h`` and a step
outside it moved beyond resampling noise. From a source's stderr: ``h = z·√(se² + se_prev²)``
(two independent samples: conservative when the checkpoints share docs). With ``by`` one
band per group, from the group's own numbers (its tasks' bootstrap on the same draws, a
dimension's values, or its source's stderr).
"""

from __future__ import annotations

import re
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from .._metrics.groups import group_summaries
from .._metrics.job_intervals import job_intervals
from .._metrics.lm_eval_results import results_groups, results_rows
from .._metrics.passk import pass_at_k, pass_hat_k
from .._metrics.passk_views import curve as job_curve
from .._metrics.summary import JobSummary, job_summary, summary_of_counts
from .assemble import RunState, mark, setup_difference, step_text
from .pertask import (
    TaskMatrix,
    _quantiles,
    counted_steps,
    dimension_matrices,
    group_values,
    matrix,
    percentiles,
    ratio_stats,
    step_attempts,
    step_counts,
)

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = [
    "CURVE_COLUMNS",
    "METRICS",
    "POINT_COLUMNS",
    "check_metric",
    "curve",
    "group_lines",
    "noise_band",
    "points",
    "ratio_parts",
]

METRICS = ("score", "pass", "pass@k", "pass^k")
_UNBIASED = re.compile(r"^pass(@|\^)(\d+)$")
CURVE_COLUMNS = ("step", "job_id", "group", "metric", "estimate", "low", "high", "interval",
                 "tasks", "scored", "total", "coverage", "complete_members", "total_members",
                 "coverage_drop", "note")  # fmt: skip


def check_metric(metric: str) -> tuple[str, int | None]:
    """``(metric, j)``: a summary metric (j None) or an unbiased ``pass@j`` / ``pass^j``."""
    if metric in METRICS:
        return metric, None
    found = _UNBIASED.match(metric)
    if found and int(found[2]) >= 1:
        return metric, int(found[2])
    raise ValueError(
        f"metric must be one of {', '.join(METRICS)} or pass@<j> / pass^<j> (j >= 1, the "
        f"unbiased estimate of job.curve()), got {metric!r}"
    )


def ratio_parts(
    m: TaskMatrix, metric: str, state: RunState
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per task and step, the numerator and denominator whose sums over tasks give the
    metric (``job.intervals``' definitions); zero where a job did not request a task."""
    name, j = check_metric(metric)
    failure = state.policy == "failure"
    counted = (m.requested if failure else m.complete).astype(np.float64)
    if name == "score":
        return m.reward_sum, m.n
    if name == "pass":
        return m.passes, m.n
    if name == "pass@k":
        return (m.passes > 0) * counted, counted
    if name == "pass^k":
        return ((m.passes == m.k[None, :]) & (m.k[None, :] > 0)) * counted, counted
    assert j is not None
    ok = m.requested & (m.n >= j)
    value = np.zeros(m.n.shape)
    if ok.any():
        fn = pass_at_k if name.startswith("pass@") else pass_hat_k
        value[ok] = fn(m.n[ok].astype(np.int64), m.passes[ok].astype(np.int64), j)
    return value, ok.astype(np.float64)


def _summary(state: RunState, job_id: str) -> JobSummary:
    """The job's summary: from the run's counts when they are the job's in its task order
    (the same function on the same arrays: :func:`step_counts`, read before the run's
    matrix when that is not built yet), else ``job_summary`` itself. Memoized on the state."""
    key = ("summary", job_id)
    if key not in state.data:
        j = state.job_ids.index(job_id)
        counts = step_counts(state, j) if state.policy in ("unknown", "failure") else None
        if counts is None:
            found = job_summary(state.con, job_id, policy=state.policy, threshold=state.threshold)
        else:
            found = summary_of_counts(
                job_id, counts, k=int(step_attempts(state)[j]), policy=state.policy,
                threshold=state.threshold,
            )  # fmt: skip
        state.data[key] = found
    memo: JobSummary = state.data[key]
    return memo


def _job_value(state: RunState, job_id: str, metric: str) -> float | None:
    """The job's own number for ``metric`` (its summary, or its curve's point)."""
    name, j = check_metric(metric)
    if j is None:
        s = _summary(state, job_id)
        value = {"score": s.score, "pass": s.pass_, "pass@k": s.pass_at_k, "pass^k": s.pass_hat_k}
        return value[name]
    if results_rows(state.con, job_id) is not None:
        return None
    frame = job_curve(state.con, job_id, ks=[j], policy=state.policy, threshold=state.threshold)
    column = "pass@k" if name.startswith("pass@") else "pass^k"
    point = frame[column].iloc[0]
    return None if point is None or np.isnan(point) else float(point)


def curve(
    state: RunState,
    *,
    metric: str = "score",
    by: str | None = None,
    coverage_tolerance: float = 0.01,
) -> pd.DataFrame:
    """One row per step (per group with ``by``): :data:`CURVE_COLUMNS` (module docstring).

    ``frame.attrs["mark"]`` carries the run's guard mark ('' when comparable).
    """
    import pandas as pd

    check_metric(metric)
    if by is not None and by not in ("subset", "dimension") and not by.startswith("tag:"):
        raise ValueError(f"by must be None, 'subset', 'tag:<key>' or 'dimension', got {by!r}")
    if by == "dimension":
        frame = pd.DataFrame(_dimension_rows(state, metric), columns=list(CURVE_COLUMNS))
        _mark_coverage(frame, coverage_tolerance)
        frame = frame.sort_values(["group", "step"], kind="stable").reset_index(drop=True)
        frame.attrs["mark"] = mark(state)
        return frame
    key = ("curve", metric, by, coverage_tolerance)
    if key in state.data:  # memoized (the panel, best and noise_band read it again)
        memo: pd.DataFrame = state.data[key]
        return memo.copy()
    m = matrix(state)
    num, den = ratio_parts(m, metric, state)
    rows: list[dict[str, Any]] = []
    if by is None:
        low, high = _quantiles(metric_stats(state, metric), state.confidence)
        for j, job_id in enumerate(state.job_ids):
            rows.append(_row(state, m, j, job_id, None, metric, low[j], high[j], None))
    else:
        groups = np.array(group_values(m, by), dtype=object)
        names = list(dict.fromkeys(groups.tolist()))
        for g in names:
            mask = (groups == g)[:, None]
            low, high = percentiles(num * mask, den * mask, state)
            for j, job_id in enumerate(state.job_ids):
                rows.append(_row(state, m, j, job_id, g, metric, low[j], high[j], mask[:, 0],
                                 num=num, den=den))  # fmt: skip
        extra = _results_groups(state, by, metric)
        rows.extend(extra)
    frame = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    _mark_coverage(frame, coverage_tolerance)
    frame = frame.sort_values(["group", "step"], kind="stable", na_position="first")
    frame = frame.reset_index(drop=True)
    frame.attrs["mark"] = mark(state)
    state.data[key] = frame
    return frame.copy()


#: The columns of :func:`points`: the curve's without its interval.
POINT_COLUMNS = tuple(c for c in CURVE_COLUMNS if c not in ("low", "high", "interval"))


def points(
    state: RunState, *, metric: str = "score", coverage_tolerance: float = 0.01
) -> pd.DataFrame | None:
    """The curve without its intervals: :data:`POINT_COLUMNS` of :func:`curve`, the same
    values (each step's own number, its coverage and coverage drops), from the counts the
    jobs' loads kept — before, or without, the run's task matrix and its bootstrap (what a
    panel can draw first). None when some step's load kept no per-task counts to read
    (under a threshold, a summarised or metrics-only job, an older load) and the run's
    matrix is not built yet: then :func:`curve` gives them.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> _ = ws.load_all("sample_data/training_run")
    >>> run = ws.run("rl-0412")
    >>> first = points(run.state)
    >>> "matrix" in run.state.data, first.equals(run.curve()[list(POINT_COLUMNS)])
    (False, True)
    """
    import pandas as pd

    check_metric(metric)
    key = ("curve", metric, None, coverage_tolerance)
    if key in state.data:
        done: pd.DataFrame = state.data[key]
        return done[list(POINT_COLUMNS)].copy()
    if not counted_steps(state).all():
        return None
    failure = state.policy == "failure"
    rows = []
    for step, job_id in zip(state.steps, state.job_ids, strict=True):
        s = _summary(state, job_id)
        tasks = s.total_members
        rows.append({"step": step, "job_id": job_id, "group": None, "metric": metric,
                     "estimate": _job_value(state, job_id, metric), "tasks": tasks,
                     "scored": s.scored, "total": s.total,
                     "coverage": s.scored / s.total if s.scored is not None and s.total else None,
                     "complete_members": tasks if failure else s.complete_members,
                     "total_members": tasks, "coverage_drop": False, "note": ""})  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(POINT_COLUMNS))
    _mark_coverage(frame, coverage_tolerance)
    frame = frame.sort_values(["group", "step"], kind="stable", na_position="first")
    frame = frame.reset_index(drop=True)
    frame.attrs["mark"] = mark(state)
    return frame


def metric_stats(state: RunState, metric: str) -> NDArray[np.float64]:
    """``sum(num) / sum(den)`` of ``metric`` per task resample (rows) and step (columns):
    the run's bootstrap statistics, computed once per metric (memoized on the state) for
    the curve's intervals and the noise band; NaN where a resample has no denominator."""
    key = ("metric_stats", metric)
    if key not in state.data:
        num, den = ratio_parts(matrix(state), metric, state)
        state.data[key] = ratio_stats(num, den, state)
    stats: NDArray[np.float64] = state.data[key]
    return stats


def _row(
    state: RunState,
    m: TaskMatrix,
    j: int,
    job_id: str,
    group: str | None,
    metric: str,
    low: float,
    high: float,
    mask: NDArray[np.bool_] | None,
    *,
    num: NDArray[np.float64] | None = None,
    den: NDArray[np.float64] | None = None,
) -> dict[str, Any]:
    step = state.steps[j]
    base = {"step": step, "job_id": job_id, "group": group, "metric": metric}
    if not m.per_task[j]:
        return {**base, **_results_row(state, job_id, metric)}
    rows = m.column("requested", j) if mask is None else m.column("requested", j) & mask
    tasks = int(rows.sum())
    k = int(m.k[j])
    scored = int(m.column("scored", j)[rows].sum())
    total = tasks * k
    if mask is None:
        estimate = _job_value(state, job_id, metric)
    else:
        assert num is not None and den is not None
        d = float(den[rows, j].sum())
        estimate = float(num[rows, j].sum()) / d if d > 0 else None
        if estimate is not None and not _defined(m, j, metric, scored):
            estimate = None
    has = estimate is not None and not np.isnan(low)
    return {
        **base,
        "estimate": estimate,
        "low": float(low) if has else None,
        "high": float(high) if has else None,
        "interval": "task bootstrap" if has else "none",
        "tasks": tasks,
        "scored": scored,
        "total": total,
        "coverage": scored / total if total else None,
        "complete_members": int((m.column("complete", j) & rows).sum()),
        "total_members": tasks,
        "coverage_drop": False,
        "note": "",
    }


def _defined(m: TaskMatrix, j: int, metric: str, scored: int) -> bool:
    """A group's metric exists as the summary's does: some attempt scored (under either
    policy); a pass metric only for binary rewards (or under a threshold)."""
    return scored > 0 and (metric == "score" or bool(m.binary[j]))


def _results_row(state: RunState, job_id: str, metric: str) -> dict[str, Any]:
    """A metrics-only step: its summary's number with the source's stderr interval."""
    s = job_summary(state.con, job_id, policy=state.policy, threshold=state.threshold)
    value = _job_value(state, job_id, metric)
    low = high = None
    interval = "none"
    if metric == "score" and value is not None and results_rows(state.con, job_id) is not None:
        iv = job_intervals(state.con, job_id, confidence=state.confidence)["score"]
        if iv.low is not None:  # an MLflow run's aggregates state no stderr: no interval
            low, high, interval = iv.low, iv.high, "source stderr"
    return {
        "estimate": value,
        "low": low,
        "high": high,
        "interval": interval,
        "tasks": s.total_members or None,
        "scored": s.scored,
        "total": s.total or None,
        "coverage": None if s.scored is None or not s.total else s.scored / s.total,
        "complete_members": s.complete_members,
        "total_members": s.total_members or None,
        "coverage_drop": False,
        "note": "aggregates only: the source's own number",
    }


def _results_groups(state: RunState, by: str, metric: str) -> list[dict[str, Any]]:
    """The per-group numbers of metrics-only steps (lm-eval: per lm-eval task)."""
    m = matrix(state)
    out: list[dict[str, Any]] = []
    for j, job_id in enumerate(state.job_ids):
        if m.per_task[j]:
            continue
        rows = results_rows(state.con, job_id)
        if rows is None or metric != "score":
            continue
        frame = results_groups(state.con, job_id, rows, by=by, confidence=state.confidence)
        for r in frame.to_dict("records"):
            has = r["ci_low"] is not None and not _nan(r["ci_low"])
            out.append(
                {
                    "step": state.steps[j],
                    "job_id": job_id,
                    "group": r["value"],
                    "metric": metric,
                    "estimate": None if _nan(r["score"]) else r["score"],
                    "low": r["ci_low"] if has else None,
                    "high": r["ci_high"] if has else None,
                    "interval": "source stderr" if has else "none",
                    "tasks": None if _nan(r["tasks"]) else int(r["tasks"]),
                    "scored": None if _nan(r["scored"]) else int(r["scored"]),
                    "total": None if _nan(r["total"]) else int(r["total"]),
                    "coverage": None if _nan(r["coverage"]) else r["coverage"],
                    "complete_members": None,
                    "total_members": None if _nan(r["tasks"]) else int(r["tasks"]),
                    "coverage_drop": False,
                    "note": f"aggregates only: the source's {r['metric']}",
                }
            )
    return out


def _dimension_rows(state: RunState, metric: str) -> list[dict[str, Any]]:
    """Per step and dimension: ``job.groups(by="dimension")``'s number (the reward, the
    composite and every named dimension) with its task-bootstrap interval (the run's
    draws, :func:`dimension_matrices`: the reward's is the curve's own); a results-only
    step's other metrics as its file states them, ``"<task>/<metric>"``, with the file's
    stderr interval (``job.groups(by="dimension")``'s ``ci_low`` / ``ci_high``)."""
    name, j = check_metric(metric)
    if j is not None:
        raise ValueError(f"by='dimension' takes the summary metrics {METRICS}, not {metric!r}")
    m = matrix(state)
    bounds: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    if m.per_task.any():
        for dim, dm in dimension_matrices(state).items():
            num, den = ratio_parts(dm, metric, state)
            bounds[dim] = _quantiles(ratio_stats(num, den, state), state.confidence)
    out: list[dict[str, Any]] = []
    for i, job_id in enumerate(state.job_ids):
        rows = results_rows(state.con, job_id)
        if rows is not None:
            if metric == "score":
                out += _results_dimension_rows(state, i, job_id, rows)
            continue
        if not m.per_task[i]:
            continue  # aggregates without per-task counts nor a file's metrics
        frame = group_summaries(state.con, job_id, by="dimension", policy=state.policy,
                                threshold=state.threshold)  # fmt: skip
        for r in frame.to_dict("records"):
            value = r[name]
            low, high = (b[i] for b in bounds[r["dimension"]])
            has = not _nan(value) and not np.isnan(low)
            out.append({"step": state.steps[i], "job_id": job_id, "group": r["dimension"],
                        "metric": metric, "estimate": None if _nan(value) else float(value),
                        "low": float(low) if has else None, "high": float(high) if has else None,
                        "interval": "task bootstrap" if has else "none",
                        "tasks": int(r["tasks"]), "scored": int(r["scored"]),
                        "total": int(r["total"]), "coverage": r["coverage"],
                        "complete_members": int(r["complete_members"]),
                        "total_members": int(r["tasks"]), "coverage_drop": False,
                        "note": ""})  # fmt: skip
    return out


def _results_dimension_rows(
    state: RunState, i: int, job_id: str, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    frame = results_groups(state.con, job_id, rows, by="dimension", confidence=state.confidence)
    out = []
    for r in frame.to_dict("records"):
        has = not _nan(r["ci_low"]) and not _nan(r["score"])
        n = None if _nan(r["tasks"]) else int(r["tasks"])
        out.append({"step": state.steps[i], "job_id": job_id,
                    "group": f"{r['subset']}/{r['dimension']}", "metric": "score",
                    "estimate": None if _nan(r["score"]) else r["score"],
                    "low": r["ci_low"] if has else None, "high": r["ci_high"] if has else None,
                    "interval": "source stderr" if has else "none", "tasks": n, "scored": n,
                    "total": None if _nan(r["total"]) else int(r["total"]),
                    "coverage": None if _nan(r["coverage"]) else r["coverage"],
                    "complete_members": None, "total_members": n, "coverage_drop": False,
                    "note": f"aggregates only: the source's {r['dimension']}"})  # fmt: skip
    return out


def _nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def _mark_coverage(frame: pd.DataFrame, tolerance: float) -> None:
    """Mark the steps whose coverage is more than ``tolerance`` below the group's best."""
    if frame.empty:
        return
    key = frame["group"].fillna("\0")
    best = frame["coverage"].astype(float).groupby(key).transform("max")
    cov = frame["coverage"].astype(float)
    drop = (cov < best - tolerance).fillna(False).to_numpy(bool)
    frame["coverage_drop"] = drop
    where = int(list(frame.columns).index("note"))
    for i in np.flatnonzero(drop):
        row = frame.iloc[int(i)]
        note = (
            f"coverage dropped: {int(row['scored']):,} of {int(row['total']):,} attempts scored "
            f"({row['coverage']:.1%}, the run's best is {best.iloc[i]:.1%}): the number is over "
            "fewer attempts, not a drop in score"
        )
        frame.iat[int(i), where] = note if not row["note"] else f"{row['note']}; {note}"


def group_lines(state: RunState, frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``curve(by=...)``'s rows of each group, one row per step of the run in step order
    (a step without the group: no estimate, interval ``"none"``)."""
    import pandas as pd

    steps = pd.DataFrame({"step": list(state.steps), "job_id": list(state.job_ids)})
    out: dict[str, pd.DataFrame] = {}
    for name in dict.fromkeys(frame["group"].tolist()):
        part = frame[frame["group"] == name].drop(columns="job_id")
        line = steps.merge(part, on="step", how="left", sort=False)
        line["group"] = name
        line["interval"] = line["interval"].fillna("none")
        line["coverage_drop"] = line["coverage_drop"].fillna(False).astype(bool)
        out[str(name)] = line
    return out


def noise_band(state: RunState, *, metric: str = "score", by: str | None = None) -> pd.DataFrame:
    """Per step: the band the step would fall in if nothing changed since the previous
    step (module docstring). Columns: step, job_id, group, estimate, previous, half_width,
    band_low, band_high, outside, method. The first step has no previous: no band.
    ``frame.attrs["noise"]`` is the median half-width over the run.

    With ``by`` (``"subset"``, ``"tag:<key>"``, ``"dimension"``: the groups of
    ``curve(by=...)``) one band per group and step, each from that group's own numbers:
    the task bootstrap of the group's change (its tasks, or the dimension's values, on the
    run's shared draws), else its source's stderr; ``frame.attrs["noise"]`` is then the
    median half-width of each group."""
    import pandas as pd

    check_metric(metric)
    if by is None:
        lines: dict[str | None, pd.DataFrame] = {None: curve(state, metric=metric)}
    else:
        per_group = group_lines(state, curve(state, metric=metric, by=by))
        lines = {name: line for name, line in per_group.items()}
    rows: list[dict[str, Any]] = []
    noise: dict[str | None, float | None] = {}
    for group, line in lines.items():
        found = _band_rows(state, line, _group_stats(state, metric, by, group), group)
        halves = [r["half_width"] for r in found if r["half_width"] is not None]
        noise[group] = float(np.median(halves)) if halves else None
        rows += found
    frame = pd.DataFrame(rows)
    frame.attrs["noise"] = noise[None] if by is None else noise
    frame.attrs["mark"] = mark(state)
    return frame


def _group_stats(
    state: RunState, metric: str, by: str | None, group: str | None
) -> NDArray[np.float64]:
    """The bootstrap statistics (resamples × steps) of the run's or one group's metric."""
    m = matrix(state)
    if by is None:
        return metric_stats(state, metric)
    if by == "dimension":
        dm = dimension_matrices(state).get(str(group)) if m.per_task.any() else None
        if dm is None:  # a results-only step's metric: its stderr
            return np.full((state.resamples, len(state.steps)), np.nan)
        return ratio_stats(*ratio_parts(dm, metric, state), state)
    num, den = ratio_parts(m, metric, state)
    mask = (np.array(group_values(m, by), dtype=object) == group)[:, None]
    return ratio_stats(num * mask, den * mask, state)


def _band_rows(
    state: RunState, line: pd.DataFrame, stats: NDArray[np.float64], group: str | None
) -> list[dict[str, Any]]:
    m = matrix(state)
    est = line["estimate"].to_numpy(dtype=float, na_value=np.nan)
    z = NormalDist().inv_cdf(0.5 + state.confidence / 2)
    rows: list[dict[str, Any]] = []
    for j, job_id in enumerate(state.job_ids):
        row: dict[str, Any] = {"step": state.steps[j], "job_id": job_id, "group": group,
                               "estimate": None if np.isnan(est[j]) else float(est[j]),
                               "previous": None, "half_width": None, "band_low": None,
                               "band_high": None, "outside": None, "method": ""}  # fmt: skip
        if j == 0 or np.isnan(est[j]) or np.isnan(est[j - 1]):
            row["method"] = "first step: no previous step" if j == 0 else "no estimate"
            rows.append(row)
            continue
        prev = float(est[j - 1])
        half: float | None = None
        if m.per_task[j] and m.per_task[j - 1]:
            d = stats[:, j] - stats[:, j - 1]
            d = d[np.isfinite(d)]
            if d.size:
                half = float(np.quantile(np.abs(d - (est[j] - est[j - 1])), state.confidence))
                row["method"] = (
                    f"task bootstrap of the change from step {step_text(state.steps[j - 1])}: "
                    f"{state.resamples:,} resamples, the same tasks for both steps, seed {state.seed}"
                )
        else:
            se = [_stderr(line, i, z) for i in (j - 1, j)]
            task = None if group is None else group.rpartition("/")[0] or group
            differs = "" if task is None else setup_difference(state, j - 1, j, task)
            if differs and not m.per_task[j] and not m.per_task[j - 1]:
                row["method"] = f"no band: {differs}"
            elif se[0] is not None and se[1] is not None:
                half = z * float(np.hypot(se[0], se[1]))
                row["method"] = "source stderr of both steps: z·√(se² + se_prev²)"
        if half is not None:
            row.update(previous=prev, half_width=half, band_low=prev - half, band_high=prev + half,
                       outside=bool(abs(float(est[j]) - prev) > half))  # fmt: skip
        rows.append(row)
    return rows


def _stderr(line: pd.DataFrame, i: int, z: float) -> float | None:
    low, high = line["low"].iloc[i], line["high"].iloc[i]
    if _nan(low) or _nan(high):
        return None
    return float(high - low) / (2 * z)
