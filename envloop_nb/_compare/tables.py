"""Per-group tables of a comparison: groups (long), table (wide), strengths in words.

A group is a subset (a tag's value) or a score dimension (the composite included).
Subset values are reward sums over scored attempts (or requested ones under
``policy="failure"``) from the per-task rows of :mod:`envloop_nb._compare.tasks`.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._metrics.paired_stats import PairedDiff, paired_diff_ci, ratio_ci
from .._metrics.scale import scale_of
from .._present.compare_html import best_jobs, scale_words
from .._present.compare_html import table_html as render_table_html
from .._present.display import format_pct, format_points, format_signed
from .._store.sql import ident
from .guard import mark, pair_blockers
from .state import CompareState, colors
from .tasks import dimension_labels, dimension_tasks, task_frame

if TYPE_CHECKING:
    import pandas as pd
else:
    from .state import pandas as pd

__all__ = [
    "By",
    "coverage_text",
    "groups",
    "noise_words",
    "none_or_float",
    "paired_on",
    "per_task_values",
    "strengths",
    "table",
    "table_html",
]

By = Literal["subset", "dimension"]


def coverage_text(scored: int, total: int) -> str:
    """``"780/800 scored, 20 missing"``."""
    missing = total - scored
    return f"{scored:,}/{total:,} scored" + (f", {missing:,} missing" if missing else "")


def none_or_float(value: Any) -> float | None:
    """A frame's value as a float, or None when missing (NA, NaN)."""
    if value is None or value is pd.NA:
        return None
    try:
        if np.isnan(value):
            return None
    except TypeError:
        pass
    return float(value)


def _order_groups(frame: pd.DataFrame, job_ids: tuple[str, ...]) -> pd.DataFrame:
    frame = frame.copy()
    frame["_j"] = frame["job"].map({j: i for i, j in enumerate(job_ids)})
    frame = frame.sort_values(["group", "_j"], kind="stable").drop(columns="_j")
    return frame.reset_index(drop=True)


def groups(state: CompareState, by: By = "subset", *, tag: str | None = None) -> pd.DataFrame:
    """Long frame: one row per job and subset (or dimension); see ``Comparison.groups``."""
    key = ("groups", by, tag)
    if key in state.data:
        cached: pd.DataFrame = state.data[key]
        return cached.copy()
    if by == "subset":
        frame = _subset_groups(state, tag or "subset")
    elif by == "dimension":
        frame = _dimension_groups(state)
    else:
        raise ValueError(f"by must be 'subset' or 'dimension', got {by!r}")
    state.data[key] = frame
    return frame.copy()


def _subset_groups(state: CompareState, tag: str) -> pd.DataFrame:
    pt = task_frame(state, tag)
    # relation.query registers its name as a temporary view: a private name, dropped
    # after, so the workspace is left as it was (and a user's own "pt" is never shadowed).
    view = f"_enb_pt_{uuid.uuid4().hex}"
    try:
        agg = (
            state.con.from_df(pt)
            .query(
                view,
                f"""SELECT job_id AS job, grp AS "group",
                      fsum(reward_sum ORDER BY task) / nullif(sum(n), 0) AS value,
                      sum(scored)::BIGINT AS scored, sum(k)::BIGINT AS total,
                      count(*)::BIGINT AS tasks,
                      count(*) FILTER (WHERE complete)::BIGINT AS complete_tasks
               FROM {ident(view)} GROUP BY job_id, grp ORDER BY grp, job_id""",
            )
            .df()
        )
    finally:
        state.con.execute(f"DROP VIEW IF EXISTS {ident(view)}")
    lows, highs = [], []
    for job, grp in zip(agg["job"], agg["group"], strict=True):
        rows = pt[(pt["job_id"] == job) & (pt["grp"] == grp)]
        _, low, high = ratio_ci(
            rows["reward_sum"].to_numpy(float),
            rows["n"].to_numpy(float),
            resamples=min(state.resamples, 1000),
            seed=state.seed,
            confidence=state.confidence,
        )
        lows.append(low)
        highs.append(high)
    agg["low"] = pd.array(lows, dtype="Float64")
    agg["high"] = pd.array(highs, dtype="Float64")
    agg["coverage"] = [
        coverage_text(int(s), int(t)) for s, t in zip(agg["scored"], agg["total"], strict=True)
    ]
    agg["higher_is_better"] = True
    agg["percent"] = True
    return _order_groups(agg, state.job_ids)


def _dimension_groups(state: CompareState) -> pd.DataFrame:
    agg = state.con.execute(
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
        {"jobs": list(state.job_ids)},
    ).df()
    cols = ["job", "group", "value", "low", "high", "scored", "total", "coverage", "tasks"]
    extra = ["higher_is_better", "percent", "scale", "same_scale", "note"]
    if agg.empty:
        return pd.DataFrame({c: [] for c in [*cols, *extra]}).astype({"value": float})
    labels = dimension_labels(state).rename(columns={"job_id": "job"})
    agg = agg.merge(labels, on=["job", "name"], how="left")
    agg["group"] = agg["label"].fillna(agg["name"])
    # each job's scale of the dimension, as its source states it (scale.Scale.describe)
    agg["scale"] = [
        _scale_text(str(n), u, h, bool(lo >= 0 and hi <= 1))
        for n, u, h, lo, hi in zip(
            agg["name"], agg["unit"], agg["higher_is_better"], agg["vmin"], agg["vmax"],
            strict=True,
        )
    ]  # fmt: skip
    agg["higher_is_better"] = agg["higher_is_better"].map(lambda v: v is not False)
    in_unit = agg.groupby("group")[["vmin", "vmax"]].agg({"vmin": "min", "vmax": "max"})
    percent_groups = set(in_unit.index[(in_unit["vmin"] >= 0) & (in_unit["vmax"] <= 1)])
    agg["percent"] = agg["group"].isin(percent_groups)
    agg["same_scale"] = agg.groupby("group")["scale"].transform("nunique") == 1
    agg["note"] = [_scale_note(state, g, labels, agg) for g in agg["group"]]
    per_task = dimension_tasks(state)
    lows, highs, tasks = [], [], []
    for job, grp in zip(agg["job"], agg["group"], strict=True):
        vals = per_task[(per_task["job_id"] == job) & (per_task["label"] == grp)]["value"]
        vals = vals.dropna().to_numpy(float)
        _, low, high = ratio_ci(
            vals,
            np.ones_like(vals),
            resamples=min(state.resamples, 1000),
            seed=state.seed,
            confidence=state.confidence,
        )
        lows.append(low)
        highs.append(high)
        tasks.append(len(vals))
    agg["low"] = pd.array(lows, dtype="Float64")
    agg["high"] = pd.array(highs, dtype="Float64")
    agg["tasks"] = tasks
    agg["coverage"] = [
        coverage_text(int(s), int(t)) for s, t in zip(agg["scored"], agg["total"], strict=True)
    ]
    out = agg[[*cols, *extra]]
    return _order_groups(out, state.job_ids)


def _scale_text(name: str, unit: Any, hib: Any, within: bool) -> str:
    """A job's scale of dimension ``name`` in words (the composite's is the platform's:
    higher is better, on the reward's range)."""
    unit = unit if isinstance(unit, str) else None
    way = None if hib is None or hib is pd.NA or hib != hib else bool(hib)
    if name == "composite":
        return dataclasses.replace(
            scale_of(None, higher_is_better=True, within_unit=within), range_stated=within
        ).describe()
    return scale_of(unit, higher_is_better=way, within_unit=within).describe()


def _scale_note(state: CompareState, group: str, labels: pd.DataFrame, agg: pd.DataFrame) -> str:
    """Why a dimension's values are not compared across jobs, or ``""``: the jobs state
    different scales (its rows stay apart), or their values lie on different ranges."""
    part = agg[agg["group"] == group]
    name = str(part["name"].iloc[0])
    apart = labels[labels["name"] == name]
    if apart["label"].nunique() > 1:
        sides = " vs ".join(
            f"{'/'.join(sorted(set(apart[apart['label'] == lab]['job'])))}: {lab}"
            for lab in dict.fromkeys(apart["label"])
        )
        return (
            f"the jobs disagree on {name}'s scale ({sides}): its rows stay apart and no "
            "difference is computed across different scales"
        )
    if part["scale"].nunique() > 1:
        return f"the jobs' values of {name} lie on different scales: no difference computed"
    return ""


def table(state: CompareState, by: By = "subset", *, tag: str | None = None) -> pd.DataFrame:
    """Wide frame: one row per subset (or dimension); see ``Comparison.table``."""
    long = groups(state, by, tag=tag)
    name = "subset" if by == "subset" else "dimension"
    scaled = by == "dimension"  # each dimension's scale once, and why it is not compared
    rows = []
    for grp in dict.fromkeys(long["group"]):
        part = long[long["group"] == grp]
        row: dict[str, Any] = {name: grp}
        if scaled:
            row["scale"] = scale_words(part)
        for jid in state.job_ids:
            hit = part[part["job"] == jid]
            row[jid] = none_or_float(hit["value"].iloc[0]) if len(hit) else None
            row[f"{jid} coverage"] = hit["coverage"].iloc[0] if len(hit) else "not measured"
        # no best where the jobs' scales differ (split rows hold one job each)
        row["best"] = best_jobs(part) if not scaled or not part["note"].iloc[0] else None
        if scaled:
            row["note"] = part["note"].iloc[0]
        rows.append(row)
    columns = [name, *(["scale"] if scaled else [])]
    columns += [c for jid in state.job_ids for c in (jid, f"{jid} coverage")]
    columns += ["best", *(["note"] if scaled else [])]
    frame = pd.DataFrame(rows, columns=columns)
    for jid in state.job_ids:
        frame[jid] = pd.to_numeric(frame[jid], errors="coerce").astype("Float64")
    frame.attrs["mark"] = mark(state)
    return frame


def table_html(state: CompareState, by: By = "subset", *, tag: str | None = None) -> str:
    """The comparison table as HTML: best per row highlighted, coverage under each value."""
    return render_table_html(
        groups(state, by, tag=tag),
        list(state.job_ids),
        colors(state),
        by,
        mark(state),
        state.baseline,
    )


def strengths(state: CompareState, by: By = "subset", *, tag: str | None = None) -> pd.DataFrame:
    """Where each job is above or below all the others, in words; see ``Comparison.strengths``."""
    key = ("strengths", by, tag)
    if key in state.views:
        cached: pd.DataFrame = state.views[key].copy()
        cached.attrs["mark"] = mark(state)
        return cached
    long = groups(state, by, tag=tag)
    values = per_task_values(state, by, tag)
    out = []
    for grp in dict.fromkeys(long["group"]):
        part = long[(long["group"] == grp) & long["value"].notna()]
        if len(part) < 2 or ("same_scale" in part and not part["same_scale"].all()):
            continue  # values on different scales are not compared
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
            diff = paired_on(state, values, grp, str(ref["job"]), str(this["job"]))
            noise = noise_words(state, diff, str(this["job"]), str(ref["job"]), percent)
            # The words carry the sign ("below … by 4.1 pts", the interval keeps its
            # signs); on a lower-is-better dimension a strength is a value below the others.
            where = "above" if gap > 0 else "below"
            better = "" if hib else ", and lower is better"
            size = format_points(abs(gap), percent=percent).removeprefix("+")
            sentence = f"{this['job']} is {where} the others on {grp} by {size}{better} ({noise})"
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
    state.views[key] = frame.copy()
    frame.attrs["mark"] = mark(state)
    return frame


def per_task_values(state: CompareState, by: By, tag: str | None) -> pd.DataFrame:
    """job_id, task, digest, group, value (complete tasks only for subsets)."""
    if by == "subset":
        pt = task_frame(state, tag or "subset")
        pt = pt[pt["complete"] & (pt["n"] > 0)]
        return pt.rename(columns={"grp": "group", "task_score": "value"})[
            ["job_id", "task", "digest", "group", "value"]
        ]
    dt = dimension_tasks(state)
    digests = task_frame(state)[["job_id", "task", "digest"]]
    dt = dt.merge(digests, on=["job_id", "task"], how="left")
    return dt.rename(columns={"label": "group"})[["job_id", "task", "digest", "group", "value"]]


def paired_on(state: CompareState, values: pd.DataFrame, grp: Any, a: str, b: str) -> PairedDiff:
    """The paired bootstrap of ``b - a`` on one group's tasks both jobs have values for."""
    va = values[(values["job_id"] == a) & (values["group"] == grp)]
    vb = values[(values["job_id"] == b) & (values["group"] == grp)]
    m = va.merge(vb, on=["task", "digest"], suffixes=("_a", "_b"))
    return paired_diff_ci(
        m["value_a"].to_numpy(float),
        m["value_b"].to_numpy(float),
        resamples=state.resamples,
        seed=state.seed,
        confidence=state.confidence,
    )


def noise_words(state: CompareState, diff: PairedDiff, a: str, b: str, percent: bool = True) -> str:
    """``"beyond noise: paired 95% CI [...] over N tasks complete in both"`` and kin."""
    level = format_pct(state.confidence, trim=True)
    if diff.estimate is None:
        return "not assessed: no task scored completely by both"
    ci = (
        f"paired {level} CI [{format_signed(diff.low, percent=percent)}, {format_signed(diff.high, percent=percent)}]"
        f" over {diff.n_tasks} tasks complete in both"
    )
    if pair_blockers(state, a, b):
        return f"not assessed: jobs not comparable; {ci}"
    if diff.excludes_zero:
        return f"beyond noise: {ci}"
    return f"within noise: {ci}"
