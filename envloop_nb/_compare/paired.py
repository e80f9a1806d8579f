"""Paired statistics against the baseline, per-task transitions, bucket transition matrices.

On the tasks both jobs requested (same name and digest) and scored completely, the
per-task score and pass rate are paired task by task (seeded percentile bootstrap over
tasks) and, for binary rewards, an exact McNemar test runs on the tasks solved (pass
rate ``>= solved_at``); see the ``Comparison`` docstring for the verdict rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._errors import EnvloopError
from .._metrics.paired_stats import PairedDiff, mcnemar_exact, paired_diff_ci
from .._present.display import format_pct
from .guard import mark, pair_differences
from .state import CompareState, job_ref, others
from .tasks import task_frame

if TYPE_CHECKING:
    import pandas as pd
else:
    from .state import pandas as pd

__all__ = [
    "NOT_COMPARED",
    "NO_BUCKET",
    "TRANSITIONS",
    "attempts_of",
    "bucket_matrix",
    "paired",
    "targets",
    "transitions",
]

TRANSITIONS = ("fixed", "broken", "still failing", "still passing")
NOT_COMPARED = "not compared"
NO_BUCKET = "(no bucket: metric undefined)"


def paired(state: CompareState) -> pd.DataFrame:
    """Each other job against the baseline on shared, completely scored tasks."""
    if "paired" not in state.views:
        pt = task_frame(state)
        base = pt[pt["job_id"] == state.baseline]
        rows = [_paired_row(state, base, pt[pt["job_id"] == o], o) for o in others(state)]
        state.views["paired"] = pd.DataFrame(rows)
    frame: pd.DataFrame = state.views["paired"].copy()
    frame.attrs["mark"] = mark(state)
    return frame


def _mean(series: pd.Series) -> float | None:
    return float(series.mean()) if len(series) else None


def _matched(base: pd.DataFrame, oth: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The rows of ``base`` and ``oth`` with the same task and digest side by side (the
    inner merge, in ``base``'s order, suffixes ``_b`` and ``_o``) and the number of
    distinct (task, digest) pairs of either.

    Two jobs of the same task list in the same order (a rerun, the gate's two files) are
    matched row by row: the merge's frame without hashing both jobs' task and digest
    strings (31,250 of each in the gate's benchmark). Each job's tasks are distinct (its
    load refuses a task listed twice); frames with a repeat take the merge.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = ["task", "digest"]
    if (  # compared as Arrow arrays (the frames' own): no Python string per task
        len(base) == len(oth)
        and all(pa.array(base[k]).equals(pa.array(oth[k])) for k in keys)
        and pc.count_distinct(pa.array(base["task"])).as_py() == len(base)
    ):
        left = base.reset_index(drop=True)
        right = oth.drop(columns=keys).reset_index(drop=True)
        side = {c: c if c in keys else f"{c}_b" for c in left.columns}
        m = pd.concat([left.rename(columns=side), right.rename(columns=lambda c: f"{c}_o")], axis=1)
        return m, len(base)
    m = base.merge(oth, on=keys, how="inner", suffixes=("_b", "_o"))
    # the distinct (task, digest) pairs of either job, counted
    union = len(pd.concat([base[keys], oth[keys]], ignore_index=True).drop_duplicates())
    return m, union


def _paired_row(
    state: CompareState, base: pd.DataFrame, oth: pd.DataFrame, other: str
) -> dict[str, Any]:
    m, union = _matched(base, oth)
    ok = m["complete_b"] & m["complete_o"] & (m["n_b"] > 0) & (m["n_o"] > 0)
    s = m[ok]
    n_shared = len(m)
    n_ok = len(s)
    binary = bool(s["binary_b"].all() and s["binary_o"].all()) if n_ok else False
    opts: dict[str, Any] = {
        "resamples": state.resamples,
        "seed": state.seed,
        "confidence": state.confidence,
    }
    sd = paired_diff_ci(
        s["task_score_b"].to_numpy(float), s["task_score_o"].to_numpy(float), **opts
    )
    pass_b, pass_o = s["pass_rate_b"].to_numpy(float), s["pass_rate_o"].to_numpy(float)
    if not binary:
        pd_ = PairedDiff(None, None, None, 0, state.resamples, state.seed, state.confidence)
    elif np.array_equal(pass_b, s["task_score_b"].to_numpy(float)) and np.array_equal(
        pass_o, s["task_score_o"].to_numpy(float)
    ):
        pd_ = sd  # binary rewards, no threshold: pass rate is the score, same interval
    else:
        pd_ = paired_diff_ci(pass_b, pass_o, **opts)
    fixed = broken = 0
    p_value: float | None = None
    if binary and n_ok:
        sb = s["pass_rate_b"].to_numpy(float) >= state.solved_at
        so = s["pass_rate_o"].to_numpy(float) >= state.solved_at
        fixed, broken = int((~sb & so).sum()), int((sb & ~so).sum())
        p_value = mcnemar_exact(fixed, broken)
    share = n_ok / union if union else 0.0
    notes = []
    if n_shared < union:
        notes.append(f"shared tasks only: {n_shared:,} of {union:,} tasks are in both jobs")
    if n_ok < n_shared:
        notes.append(f"{n_shared - n_ok:,} shared task(s) not completely scored in both: left out")
    blockers = pair_differences(state, other)
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
            verdict = f"beyond noise: {other} is {direction} than {state.baseline}"
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
        "baseline": state.baseline,
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


def targets(state: CompareState, other: str | None) -> list[str]:
    """The jobs a transition view compares with the baseline: ``other``, or all others."""
    if other is None:
        return others(state)
    if other not in state.job_ids:
        raise EnvloopError(f"{other!r} is not one of the compared jobs {list(state.job_ids)}")
    if other == state.baseline:
        raise EnvloopError(f"{other!r} is the baseline: pick another job to compare it with")
    return [other]


def transitions(
    state: CompareState,
    other: str | None = None,
    rules: Any = None,
    *,
    shape: Literal["matrix", "long"] = "matrix",
) -> pd.DataFrame:
    """Per-task transitions from the baseline (see ``Comparison.transitions``)."""
    jobs = targets(state, other)
    if rules is not None:
        if len(jobs) != 1:
            raise EnvloopError(
                f"a bucket transition matrix is between two jobs: pass other=... (one of {jobs})"
            )
        return bucket_matrix(state, jobs[0], rules, shape)
    pt = task_frame(state)
    base = pt[pt["job_id"] == state.baseline]
    rows = []
    for job in jobs:
        oth = pt[pt["job_id"] == job]
        solved_b, solved_o, compared, left_out, basis = _solved(state, base, oth)
        cells = {
            "fixed": ~solved_b & solved_o,
            "broken": solved_b & ~solved_o,
            "still failing": ~solved_b & ~solved_o,
            "still passing": solved_b & solved_o,
        }
        for name in TRANSITIONS:
            tasks = list(compared[cells[name]])
            rows.append(
                {
                    "job": job,
                    "transition": name,
                    "count": len(tasks),
                    "tasks": tasks,
                    "basis": basis,
                }
            )
        rows.append(
            {
                "job": job,
                "transition": NOT_COMPARED,
                "count": len(left_out),
                "tasks": left_out,
                "basis": "not shared, or not completely scored in both jobs",
            }
        )
    frame = pd.DataFrame(rows, columns=["job", "transition", "count", "tasks", "basis"])
    frame.attrs["mark"] = mark(state)
    return frame


def _solved(
    state: CompareState, base: pd.DataFrame, oth: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], str]:
    m = base.merge(oth, on=["task", "digest"], how="outer", suffixes=("_b", "_o"), indicator=True)
    both = (m["_merge"] == "both").to_numpy()
    ok = both & (m["complete_b"] == True).to_numpy() & (m["complete_o"] == True).to_numpy()  # noqa: E712
    ok &= (m["n_b"].fillna(0) > 0).to_numpy() & (m["n_o"].fillna(0) > 0).to_numpy()
    s = m[ok]
    binary = bool(s["binary_b"].all() and s["binary_o"].all()) if len(s) else True
    col = "pass_rate" if binary else "task_score"
    basis = (
        f"solved = pass rate ≥ {state.solved_at:g}"
        if binary
        else f"solved = mean reward ≥ {state.solved_at:g} (rewards are not binary)"
    )
    solved_b = s[f"{col}_b"].to_numpy(float) >= state.solved_at
    solved_o = s[f"{col}_o"].to_numpy(float) >= state.solved_at
    left_out = sorted(set(m.loc[~ok, "task"].astype(str)))
    return solved_b, solved_o, s["task"].to_numpy(str), left_out, basis


def bucket_matrix(state: CompareState, other: str, rules: Any, shape: str) -> pd.DataFrame:
    """The bucket transition matrix of the baseline (rows) against ``other`` (columns)."""
    from .._buckets.apply import bucket_frame
    from .._buckets.rules import OTHER

    if getattr(rules, "level", "task") != "task":
        raise EnvloopError("a bucket transition matrix needs per-task rules (level='task')")
    frames = []
    for job_id in (state.baseline, other):
        sm = bucket_frame(
            job_ref(state, job_id),
            rules.metric,
            level="task",
            policy=state.policy,
            threshold=state.threshold,
        )
        applied = rules.apply(sm)
        part = applied[["task", "bucket"]].copy()
        part["bucket"] = part["bucket"].astype(object).where(part["bucket"].notna(), NO_BUCKET)
        digests = state.con.execute(
            "SELECT task, digest FROM tasks WHERE job_id = ? ORDER BY position", [job_id]
        ).df()
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
        long.attrs["mark"] = mark(state)
        return long
    matrix = pd.DataFrame(
        [[len(cells.get((r, c), [])) for c in order] for r in order],
        index=pd.Index(order, name=f"{state.baseline} \\ {other}"),
        columns=order,
    )
    matrix.attrs["tasks"] = cells
    matrix.attrs["mark"] = mark(state)
    matrix.attrs["left_out"] = len(set(frames[0]["task"]) ^ set(frames[1]["task"]))
    return matrix


def attempts_of(state: CompareState, tasks: Sequence[str], *, snippet: int = 120) -> pd.DataFrame:
    """Those tasks' attempts in every compared job: task, job, attempt, status, reward, output."""
    rel = state.con.execute(
        f"""SELECT a.task, a.job_id AS job, a.attempt, a.status, a.reward,
                   CASE WHEN length(a.output) > {int(snippet)}
                        THEN left(a.output, {int(snippet)}) || '…' ELSE a.output END AS output
            FROM attempts a
            WHERE list_contains($jobs, a.job_id) AND list_contains($tasks, a.task)
            ORDER BY a.task, list_position($jobs, a.job_id), a.attempt""",
        {"jobs": list(state.job_ids), "tasks": list(tasks)},
    )
    frame: pd.DataFrame = rel.df()
    return frame
