"""Which changes are real: paired tests between steps, adjusted; the best checkpoint; the MDE.

Paired test of two steps (:func:`tests`, rows of :data:`TEST_COLUMNS`), as the comparison
pairs two jobs (:mod:`envloop_nb._compare.paired`): on the tasks both steps requested and
scored completely, the per-task score (mean reward) is paired task by task — ``diff`` is
the mean of ``b − a``, its interval the run's task bootstrap (the same resampled tasks for
both steps, :func:`envloop_nb._runs.pertask.weights`) — and, for binary rewards, an exact
McNemar test runs on the tasks solved (pass rate ``>= solved_at``) in one step and not
the other (``fixed``, ``broken``). Two steps holding only aggregates (lm-eval results
without samples) are compared on their numbers, *from the source's stderr, unpaired*:
``d ± z·√(se_a² + se_b²)`` and a two-sided normal p-value of ``d / √(se_a² + se_b²)``
(independent samples assumed: the same docs at two checkpoints are positively correlated,
so the true variance of ``d`` is smaller and the test is conservative; no pairing is
possible, the files hold no per-doc value).

``by`` (``"subset"`` / ``"tag:<key>"``): one row per pair of steps and group, the group's
score compared (:mod:`envloop_nb._runs.groups`): paired on the group's tasks where steps
have per-task counts, unpaired from the source's stderr where they hold only aggregates —
an lm-eval results file with several tasks states one number per task and none for the
whole run, so its run is tested per task (without ``by`` such pairs are *not assessed*,
the verdict says why: a whole-run number would need the tasks' weights, which the files
do not give); two such steps whose files state another version or few-shot count of the
task are *not assessed* across that change. A group's direction (``ppl``: lower is
better) words the verdict; unknown, it says *higher* / *lower*. The per-group best
checkpoint and MDE: :mod:`envloop_nb._runs.by_group`.

Every p-value shown is adjusted across all the tests shown (Holm's step-down for the
family-wise error rate, Benjamini–Hochberg for the false discovery rate:
:func:`envloop_nb._metrics.multitest.adjust_pvalues`); ``adjust`` picks the one that
decides ``verdict``: *beyond noise* when the interval excludes zero and the adjusted
p < ``alpha``, *borderline* when only one says so, *within noise* otherwise; *not
assessed* when the two steps do not request the same tasks, share no complete task or
fewer than half of their tasks are complete in both.

:func:`best` — the step with the highest estimate, its interval, and the steps
statistically indistinguishable from it: each tested against the best (Holm across those
tests), every step whose verdict is not *beyond noise* (the interval and the adjusted
McNemar test do not both say it differs; without a p-value: its interval includes zero).

:func:`mde` — the minimum detectable effect: the smallest change in score a paired test at
``alpha`` (two-sided) detects with probability ``power`` on ``n`` tasks × ``k`` attempts,
``(z_{1−α/2} + z_{power}) · σ_d / √n``, with ``σ_d² = 2σ²/k`` the variance of a task's
paired difference when nothing changed (only attempts vary) and ``σ²`` the within-task
variance of a reward, pooled over the run's complete tasks (unbiased, ``k ≥ 2``; with
``k = 1`` it is not identifiable and the run's Bernoulli variance ``p̄(1 − p̄)`` of the
mean score — an upper bound — is used instead). From aggregates only (unpaired, the
sources' stderr): ``(z_{1−α/2} + z_{power}) · √2 · median(se)`` — the change the unpaired
z-test of two steps detects when both have the run's typical stderr
(``(z_{1−α/2} + z_{power}) · √(se_a² + se_b²)`` with ``se_a = se_b``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import EnvloopError
from .._metrics.multitest import Adjust, adjust_pvalues
from .assemble import RunState, Step, mark, setup_difference, step_index, step_text
from .curve import check_metric, curve
from .groups import group_direction, group_lines, group_mask
from .pertask import matrix, percentiles

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = [
    "TEST_COLUMNS",
    "UNPAIRED",
    "BestCheckpoint",
    "DetectableEffect",
    "best",
    "mde",
    "pair_rows",
    "tests",
]

TEST_COLUMNS = ("kind", "group", "step_a", "step_b", "job_a", "job_b", "shared_complete", "tasks_union",
                "score_a", "score_b", "diff", "low", "high", "fixed", "broken", "p", "p_holm",
                "p_bh", "p_adjusted", "verdict", "method", "note")  # fmt: skip


@lru_cache(maxsize=4096)
def mcnemar_p(fixed: int, broken: int) -> float:
    """The exact McNemar p-value of :func:`envloop_nb._metrics.paired_stats.mcnemar_exact`
    (two-sided binomial test of ``fixed`` among ``fixed + broken`` at 1/2), in exact
    integer arithmetic and correctly rounded: ``min(1, 2 · P(X <= min(fixed, broken)))``.
    No scipy import (seconds, cold) for a run's hundreds of tests.

    Examples
    --------
    >>> mcnemar_p(0, 0), mcnemar_p(13, 0), round(mcnemar_p(6, 4), 4)
    (1.0, 0.000244140625, 0.7539)
    """
    if fixed < 0 or broken < 0:
        raise ValueError(f"counts must be >= 0, got {fixed}, {broken}")
    n, low = fixed + broken, min(fixed, broken)
    if n == 0 or fixed == broken:
        return 1.0
    term = tail = 1  # C(n, 0); then C(n, i) = C(n, i - 1) · (n − i + 1) / i, exactly
    for i in range(1, low + 1):
        term = term * (n - i + 1) // i
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def pair_rows(
    state: RunState,
    pairs: list[tuple[int, int, str]],
    *,
    mask: NDArray[np.bool_] | None = None,
    line: pd.DataFrame | None = None,
    group: str | None = None,
) -> list[dict[str, Any]]:
    """One unadjusted test row per ``(a, b, kind)`` (step positions), scores compared.

    For one group (``group``): ``mask`` keeps its tasks in the paired tests, ``line`` is
    its curve (one row per step, in step order) for steps holding only aggregates."""
    m = matrix(state)
    per_task = [(a, b) for a, b, _ in pairs if m.per_task[a] and m.per_task[b]]
    tested: dict[tuple[int, int], tuple[float, float, dict[str, int], NDArray[np.bool_]]] = {}
    if per_task:
        cols_a = np.array([a for a, _ in per_task])
        cols_b = np.array([b for _, b in per_task])
        ok = (
            m.complete[:, cols_a]
            & m.complete[:, cols_b]
            & (m.n[:, cols_a] > 0)
            & (m.n[:, cols_b] > 0)
        )
        if mask is not None:
            ok &= mask[:, None]
        with np.errstate(invalid="ignore"):
            diff = np.where(ok, m.task_score[:, cols_b] - m.task_score[:, cols_a], 0.0)
        low, high = percentiles(diff, ok.astype(np.float64), state)
        # every pair's task counts at once (whole numbers: the same in any order)
        req_a, req_b = m.requested[:, cols_a], m.requested[:, cols_b]
        if mask is not None:
            req_a, req_b = req_a & mask[:, None], req_b & mask[:, None]
        solved_a, solved_b = m.solved[:, cols_a], m.solved[:, cols_b]
        counts = {
            "union": (req_a | req_b).sum(axis=0),
            "both": (req_a & req_b).sum(axis=0),
            "only_a": (req_a & ~req_b).sum(axis=0),
            "only_b": (req_b & ~req_a).sum(axis=0),
            "n_ok": ok.sum(axis=0),
            "fixed": (ok & (solved_a == 0) & (solved_b == 1)).sum(axis=0),
            "broken": (ok & (solved_a == 1) & (solved_b == 0)).sum(axis=0),
        }
        ok_rows = np.ascontiguousarray(ok.T)
        tested = {
            p: (low[i], high[i], {c: int(v[i]) for c, v in counts.items()}, ok_rows[i])
            for i, p in enumerate(per_task)
        }
    rows = []
    for a, b, kind in pairs:
        base = {"kind": kind, "group": group, "step_a": state.steps[a], "step_b": state.steps[b],
                "job_a": state.job_ids[a], "job_b": state.job_ids[b]}  # fmt: skip
        if (a, b) in tested:
            rows.append({**base, **_task_pair(state, a, b, tested[(a, b)])})
        else:
            if line is None:
                line = curve(state)
            found = _aggregate_pair(state, line, a, b)
            differs = setup_difference(state, a, b, group) if group is not None else ""
            if differs and not m.per_task[a] and not m.per_task[b]:
                found = {**found, "p": None, "verdict": f"not assessed: {differs}"}
            rows.append({**base, **found})
    return rows


def _task_pair(
    state: RunState,
    a: int,
    b: int,
    tested: tuple[float, float, dict[str, int], NDArray[np.bool_]],
) -> dict[str, Any]:
    """One pair's row from its bootstrap bounds, its task counts (``pair_rows``) and its
    tasks complete in both steps (``ok``)."""
    m = matrix(state)
    low, high, counts, ok = tested
    bounds = (low, high)
    union, n_ok = counts["union"], counts["n_ok"]
    sa, sb = m.column("task_score", a)[ok], m.column("task_score", b)[ok]
    d = sb - sa
    binary = bool(m.binary[a] and m.binary[b])
    fixed = broken = None
    p: float | None = None
    if binary and n_ok:
        fixed, broken = counts["fixed"], counts["broken"]
        p = mcnemar_p(fixed, broken)
    notes = []
    only_a, only_b = counts["only_a"], counts["only_b"]
    if only_a or only_b:
        notes.append(f"not the same tasks: {only_a:,} only in step {step_text(state.steps[a])}, "
                     f"{only_b:,} only in step {step_text(state.steps[b])}")  # fmt: skip
    left = counts["both"] - n_ok
    if left:
        notes.append(f"{left:,} shared task(s) not completely scored in both: left out")
    share = n_ok / union if union else 0.0
    assessed = ""
    if n_ok == 0:
        assessed = "not assessed: no task is completely scored in both steps"
    elif only_a or only_b:
        assessed = "not assessed: not comparable (" + notes[0] + ")"
    elif share < 0.5:
        assessed = (f"not assessed: only {n_ok:,} of {union:,} tasks are complete in both "
                    "steps (need at least 50%)")  # fmt: skip
    has = n_ok > 0 and not np.isnan(bounds[0])
    return {
        "shared_complete": n_ok,
        "tasks_union": union,
        "score_a": float(sa.mean()) if n_ok else None,
        "score_b": float(sb.mean()) if n_ok else None,
        "diff": float(d.sum() / n_ok) if n_ok else None,
        "low": float(bounds[0]) if has else None,
        "high": float(bounds[1]) if has else None,
        "fixed": fixed,
        "broken": broken,
        "p": None if assessed else p,
        "verdict": assessed,
        "method": "paired task bootstrap" + (" + exact McNemar" if p is not None else ""),
        "note": "; ".join(notes),
    }


#: How a difference of two steps' aggregates is tested (their sources' stderr).
UNPAIRED = ("from the source's stderr, unpaired: d ± z·√(se_a² + se_b²), two-sided z-test "
            "(independent samples assumed: conservative when the checkpoints share docs)")  # fmt: skip


def _aggregate_pair(state: RunState, line: pd.DataFrame, a: int, b: int) -> dict[str, Any]:
    """Two steps compared on their numbers and their sources' stderr (module docstring);
    ``line``: one curve row per step, in step order."""
    m = matrix(state)
    z = NormalDist().inv_cdf(0.5 + state.confidence / 2)
    est = line["estimate"].to_numpy(dtype=float, na_value=np.nan)
    low = line["low"].to_numpy(dtype=float, na_value=np.nan)
    high = line["high"].to_numpy(dtype=float, na_value=np.nan)
    out: dict[str, Any] = {"shared_complete": None, "tasks_union": None, "score_a": None,
                           "score_b": None, "diff": None, "low": None, "high": None,
                           "fixed": None, "broken": None, "p": None, "method": "", "note": ""}  # fmt: skip
    interval = line["interval"].tolist()
    why = ""
    if bool(m.per_task[a]) != bool(m.per_task[b]):
        why = "one step has per-task counts and the other only aggregates"
    else:
        for i in (a, b):
            if np.isnan(est[i]):
                why = f"step {step_text(state.steps[i])} has no number here" + (
                    " (its source states one per task, none for the whole run: "
                    "run.tests(by='subset'))"
                    if not m.per_task[i] and line["group"].isna().all()
                    else ""
                )
                break
            if interval[i] != "source stderr":
                why = f"step {step_text(state.steps[i])} states no stderr for its number"
                break
    if why:
        out["verdict"] = f"not assessed: {why}"
        return out
    se = np.hypot((high[a] - low[a]) / (2 * z), (high[b] - low[b]) / (2 * z))
    d = float(est[b] - est[a])
    p = 2 * (1 - NormalDist().cdf(abs(d) / se)) if se > 0 else (1.0 if d == 0 else 0.0)
    out.update(score_a=float(est[a]), score_b=float(est[b]), diff=d, low=d - z * se,
               high=d + z * se, p=float(p), verdict="", method=UNPAIRED)  # fmt: skip
    return out


def _adjust(rows: list[dict[str, Any]], adjust: Adjust, alpha: float) -> None:
    """Holm and BH over the rows with a p-value; the verdict of each assessed row."""
    if adjust not in ("holm", "bh"):
        raise ValueError(f"adjust must be 'holm' or 'bh', got {adjust!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    with_p = [i for i, r in enumerate(rows) if r["p"] is not None]
    raw = [float(rows[i]["p"]) for i in with_p]
    for name, method in (("p_holm", "holm"), ("p_bh", "bh")):
        adjusted = adjust_pvalues(raw, method)  # type: ignore[arg-type]
        for i, value in zip(with_p, adjusted, strict=True):
            rows[i][name] = value
    for r in rows:
        r.setdefault("p_holm", None)
        r.setdefault("p_bh", None)
        r["p_adjusted"] = r["p_holm"] if adjust == "holm" else r["p_bh"]
        if r["verdict"]:
            continue
        low, high, pa = r["low"], r["high"], r["p_adjusted"]
        by_ci = low is not None and high is not None and (low > 0 or high < 0)
        by_test = pa is not None and pa < alpha
        up = (r["diff"] or 0) > 0
        hib = r.get("higher_is_better", True)  # a group's metric may be lower-is-better
        direction = ("higher" if up else "lower") if hib is None else (
            "better" if up == hib else "worse")  # fmt: skip
        a, b = step_text(r["step_a"]), step_text(r["step_b"])
        if by_ci and (pa is None or by_test):
            r["verdict"] = f"beyond noise: step {b} is {direction} than step {a}"
        elif by_ci or by_test:
            r["verdict"] = ("borderline: the interval " + ("excludes" if by_ci else "includes")
                            + f" zero but the adjusted p {'<' if by_test else '≥'} {alpha:g}")  # fmt: skip
        else:
            r["verdict"] = "within noise: not distinguishable from no change"


def tests(
    state: RunState,
    *,
    baseline: Step | None = None,
    adjacent: bool = True,
    against_baseline: bool = True,
    adjust: Adjust = "holm",
    alpha: float = 0.05,
    by: str | None = None,
) -> pd.DataFrame:
    """Adjacent steps (``adjacent``) and each step against ``baseline`` (default: the
    first step; ``against_baseline``), one row per pair of steps (a pair both adjacent and
    against the baseline is tested once, ``kind`` ``"adjacent, baseline"``), p-values
    adjusted across all rows (module). With ``by`` (``"subset"`` / ``"tag:<key>"``): one
    row per pair of steps and group, each group's score compared (paired on its tasks, or
    unpaired from the source's stderr), adjusted across all of them."""
    import pandas as pd

    base = 0 if baseline is None else step_index(state, baseline)
    kinds: dict[tuple[int, int], list[str]] = {}
    if adjacent:
        for j in range(1, len(state.steps)):
            kinds.setdefault((j - 1, j), []).append("adjacent")
    for j in range(len(state.steps) if against_baseline else 0):
        if j != base:
            kinds.setdefault((min(base, j), max(base, j)), []).append("baseline")
    pairs = [(a, b, ", ".join(kind)) for (a, b), kind in kinds.items()]
    if by is None:
        rows = pair_rows(state, pairs)
    else:
        rows = []
        for group, line in group_lines(state, by).items():
            higher, _ = group_direction(state, by, group)
            found = pair_rows(state, pairs, mask=group_mask(state, by, group), line=line,
                              group=group)  # fmt: skip
            rows += [{**r, "higher_is_better": higher} for r in found]
    _adjust(rows, adjust, alpha)
    frame = pd.DataFrame(rows, columns=list(TEST_COLUMNS))
    frame.attrs["mark"] = mark(state)
    frame.attrs["adjust"] = adjust
    frame.attrs["alpha"] = alpha
    frame.attrs["by"] = by
    return frame


@dataclass(frozen=True, eq=False)
class BestCheckpoint:
    """The step with the highest estimate, its interval, and the steps statistically
    indistinguishable from it (the best included); ``comparisons``: the best tested
    against every other step (the columns of ``run.tests()``, Holm across them)."""

    step: Step
    job_id: str
    metric: str
    estimate: float
    low: float | None
    high: float | None
    interval: str
    indistinguishable: tuple[Step, ...]
    untested: tuple[Step, ...]
    alpha: float
    comparisons: pd.DataFrame

    def __str__(self) -> str:
        ci = "" if self.low is None else f" ({self.low:.1%} – {self.high:.1%})"
        same = ", ".join(step_text(s) for s in self.indistinguishable)
        return (f"best {self.metric}: step {step_text(self.step)} {self.estimate:.1%}{ci}; "
                f"statistically indistinguishable (α {self.alpha:g}, Holm): steps {same}")  # fmt: skip


def best(
    state: RunState, *, metric: str = "score", alpha: float = 0.05, skip_coverage_drops: bool = True
) -> BestCheckpoint:
    """The best checkpoint by ``metric`` (module docstring); ties: the earliest step. A
    step whose coverage dropped (``curve``'s ``coverage_drop``) is not a candidate unless
    ``skip_coverage_drops=False``: its number is over fewer attempts (it is still tested
    against the best and may be indistinguishable from it)."""
    check_metric(metric)
    line = curve(state, metric=metric)
    if not matrix(state).per_task.any() and line["estimate"].isna().all():
        raise EnvloopError(
            f"no step has a {metric} for the whole run: the sources hold one number per task "
            "(a whole-run number would need the tasks' weights, which the files do not give); "
            "per task: run.best(by='subset')"
        )
    return _best_of(state, line, metric=metric, alpha=alpha, skip=skip_coverage_drops)


def _best_of(
    state: RunState,
    line: pd.DataFrame,
    *,
    metric: str,
    alpha: float,
    skip: bool,
    higher: bool = True,
    mask: NDArray[np.bool_] | None = None,
    group: str | None = None,
) -> BestCheckpoint:
    """The best step of ``line`` (one curve row per step, in step order), highest when
    ``higher`` else lowest, tested against every other step (Holm across those tests)."""
    import pandas as pd

    est = line["estimate"].to_numpy(dtype=float, na_value=np.nan)
    candidates = est.copy()
    if skip:
        candidates[line["coverage_drop"].to_numpy(bool)] = np.nan
    if np.isnan(candidates).all():
        raise EnvloopError(
            f"no step of this run has a {metric} with full coverage: no best checkpoint"
        )
    top = int(np.nanargmax(candidates) if higher else np.nanargmin(candidates))
    if metric != "score":  # the tests compare scores; for another metric: the intervals
        pairs: list[tuple[int, int, str]] = []
    else:
        pairs = [(top, j, "best") for j in range(len(state.steps)) if j != top]
    rows = pair_rows(state, pairs, mask=mask, line=line, group=group)
    _adjust(rows, "holm", alpha)
    same, untested = [state.steps[top]], []
    for r, (_, j, _) in zip(rows, pairs, strict=True):
        if r["verdict"].startswith("not assessed"):
            untested.append(state.steps[j])
        elif not r["verdict"].startswith("beyond noise"):
            same.append(state.steps[j])
    if not pairs:  # another metric: overlapping intervals
        lo = line["low"].to_numpy(dtype=float, na_value=np.nan)
        hi = line["high"].to_numpy(dtype=float, na_value=np.nan)
        for j in range(len(state.steps)):
            if j != top and not np.isnan(est[j]) and hi[j] >= lo[top]:
                same.append(state.steps[j])
    row = line.iloc[top]
    return BestCheckpoint(
        step=state.steps[top],
        job_id=state.job_ids[top],
        metric=metric,
        estimate=float(est[top]),
        low=None if pd.isna(row["low"]) else float(row["low"]),
        high=None if pd.isna(row["high"]) else float(row["high"]),
        interval=str(row["interval"]),
        indistinguishable=tuple(sorted(same)),
        untested=tuple(untested),
        alpha=alpha,
        comparisons=pd.DataFrame(rows, columns=list(TEST_COLUMNS)),
    )


@dataclass(frozen=True)
class DetectableEffect:
    """The minimum detectable effect of a paired test between two steps (module)."""

    effect: float
    n_tasks: int
    k: int
    alpha: float
    power: float
    sd_diff: float
    method: str

    def __str__(self) -> str:
        return (f"smallest detectable change in score: {self.effect * 100:.1f} points "
                f"({self.n_tasks:,} tasks × {self.k} attempts, α {self.alpha:g} two-sided, "
                f"power {self.power:.0%})")  # fmt: skip


def mde(
    state: RunState,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    n_tasks: int | None = None,
    k: int | None = None,
) -> DetectableEffect:
    """The minimum detectable effect at this run's tasks and attempts, or at ``n_tasks``
    tasks × ``k`` attempts (module docstring)."""
    z = _z_power(alpha, power)
    if not matrix(state).per_task.any():
        line = curve(state)
        if line["estimate"].isna().all():
            raise EnvloopError(
                "no step has a score for the whole run: the sources hold one number per task "
                "(their stderr is per task); per task: run.mde(by='subset')"
            )
        return _mde_aggregates(state, z, alpha, power, n_tasks, line)
    return _mde_paired(state, z, alpha, power, n_tasks, k, None)


def _z_power(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha!r}, {power!r}")
    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


def _mde_paired(
    state: RunState,
    z: float,
    alpha: float,
    power: float,
    n_tasks: int | None,
    k: int | None,
    mask: NDArray[np.bool_] | None,
) -> DetectableEffect:
    """The paired test's MDE over the steps with per-task counts (``mask``: a group's tasks)."""
    m = matrix(state)
    cols = np.flatnonzero(m.per_task)
    rows = np.ones(len(m.tasks), dtype=bool) if mask is None else mask
    run_k = int(m.k[cols].min())
    k = run_k if k is None else int(k)
    n = int((m.requested[:, cols].any(axis=1) & rows).sum()) if n_tasks is None else int(n_tasks)
    if k < 1 or n < 1:
        raise ValueError(f"n_tasks and k must be >= 1, got {n}, {k}")
    full = m.complete[:, cols] & (m.n[:, cols] >= 2) & rows[:, None]
    if run_k >= 2 and full.any():
        nn = m.n[:, cols][full]
        s, sq = m.reward_sum[:, cols][full], m.reward_sumsq[:, cols][full]
        var = float(np.mean((sq - s * s / nn) / (nn - 1)))
        how = (
            f"within-task variance of a reward pooled over {int(full.sum()):,} complete task-steps"
        )
    else:
        scored = m.scored[:, cols][rows].sum()
        p = float(m.reward_sum[:, cols][rows].sum() / scored) if scored else 0.5
        var = p * (1 - p)
        how = "k = 1: Bernoulli variance of the run's mean score (an upper bound)"
    sd = float(np.sqrt(2 * var / k))
    return DetectableEffect(
        effect=z * sd / float(np.sqrt(n)), n_tasks=n, k=k, alpha=alpha, power=power,
        sd_diff=sd, method=f"normal approximation of a paired test; σ² = {how}",
    )  # fmt: skip


def _mde_aggregates(
    state: RunState,
    z: float,
    alpha: float,
    power: float,
    n_tasks: int | None,
    line: pd.DataFrame,
) -> DetectableEffect:
    zc = NormalDist().inv_cdf(0.5 + state.confidence / 2)
    ses = ((line["high"] - line["low"]) / (2 * zc)).dropna().astype(float)
    if ses.empty:
        raise EnvloopError("no step of this run states a stderr for its score: no MDE")
    se = float(np.median(ses))
    docs = line["tasks"].dropna()
    n_file = int(docs.median()) if len(docs) else None
    if n_tasks is not None:
        if n_file is None:
            raise EnvloopError(
                "the sources do not state how many docs they scored: no MDE at another n"
            )
        se *= float(np.sqrt(n_file / n_tasks))
    return DetectableEffect(
        effect=z * float(np.sqrt(2)) * se, n_tasks=n_tasks or n_file or 0, k=1, alpha=alpha,
        power=power, sd_diff=float(np.sqrt(2)) * se,
        method="from the sources' stderr, unpaired: (z_{1−α/2} + z_power) · √2 · median(se)",
    )  # fmt: skip
