"""A baseline report's numbers: one model on several benchmarks.

A benchmark (:class:`Benchmark`) is a whole job, or one ``subset`` of a job that ran
several (an lm-eval run over several tasks is one job whose tasks carry the lm-eval task
name as their ``subset`` tag). :func:`benchmarks_of` makes them; the rule
(``split_by``): ``"auto"`` splits a job whose ``source_format`` is ``lm-eval`` and whose
tasks have more than one ``subset`` value, ``"subset"`` splits every job whose tasks
have more than one, ``None`` splits none.

Every number is an existing metric function's: a whole job's row is its summary
(:func:`envloop_nb._metrics.facts.noted_summary`) beside the bad-case count of its
``reward`` row in :func:`envloop_nb._metrics.groups.group_summaries` (``by=
"dimension"``, counted as ``job.groups`` counts it); a split benchmark's row is its
subset's row of ``group_summaries(by="subset")`` (``job.groups(by="subset")``). A
drill-down is ``group_summaries`` of the job by subset, by a tag or by dimension; within
a split benchmark it is by another tag (:func:`restricted_tag_groups`). Functions take
``(con, benchmarks, ...)``: a report's benchmarks in order (a job id stands for the
whole job).

A whole job is named by its dataset name, a split benchmark by its subset; a label that
two benchmarks would share becomes the job id (``<job id>:<subset>`` when split), so
every label is unique.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._errors import EnvloopError
from .._metrics.counts import check_options, task_counts
from .._metrics.facts import has_dimensions, noted_summary
from .._metrics.groups import finish_rows, group_summaries
from .._metrics.inference import inference_config
from .._store.ref import job_info
from .._types import Policy
from .tables import coverage_text

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
else:
    from .state import pandas as pd

__all__ = [
    "TABLE_COLUMNS",
    "Benchmark",
    "SplitBy",
    "benchmarks_of",
    "check_one_model",
    "dimension_choices",
    "drilldown",
    "model_label",
    "overview",
    "report_table",
    "restricted_tag_groups",
    "subset_tasks",
]

#: Columns of :func:`report_table`, in order.
TABLE_COLUMNS = [
    "benchmark", "job_id", "subset", "status", "k", "completed", "total", "samples", "score",
    "pass@k", "pass^k", "scored", "attempts", "coverage", "bad_cases", "bad_below",
]  # fmt: skip


def _rows(con: duckdb.DuckDBPyConnection, job_ids: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for jid in job_ids:
        try:
            rows.append(job_info(con, jid))
        except KeyError:
            raise EnvloopError(f"no job {jid!r} in this workspace") from None
    return rows


def check_one_model(con: duckdb.DuckDBPyConnection, job_ids: Sequence[str]) -> str | None:
    """The one model of these jobs; refuses jobs of different models, naming them.

    A job without a model is allowed only when no job names one.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> check_one_model(ws.con, [job.id])
    'my-endpoint/sft'
    """
    if not job_ids:
        raise EnvloopError("a baseline report needs at least one job")
    if len(set(job_ids)) != len(job_ids):
        twice = sorted({j for j in job_ids if list(job_ids).count(j) > 1})
        raise EnvloopError(f"job(s) {', '.join(twice)} listed twice")
    models: dict[str | None, list[str]] = {}
    for row in _rows(con, job_ids):
        models.setdefault(row["model"], []).append(row["job_id"])
    if len(models) == 1:
        return next(iter(models))
    named = "; ".join(f"{m or 'no model'}: {', '.join(j)}" for m, j in models.items())
    extra = (
        " (a job without a model is allowed only when no job names one)" if None in models else ""
    )
    raise EnvloopError(f"a baseline report is one model on several benchmarks; got {named}{extra}")


#: How jobs become benchmarks (see the module docstring): ``"auto"``, ``"subset"``, None.
SplitBy = Literal["auto", "subset"] | None

_NO_SUBSET = "(no subset)"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a report: a whole job, or (``split``) the tasks of ``job_id``
    whose ``subset`` tag is ``subset`` (None: its tasks without a subset)."""

    label: str
    job_id: str
    subset: str | None = None
    split: bool = False

    @property
    def value(self) -> str:
        """The subset as a drill-down shows it (``(no subset)`` for tasks without one)."""
        return _NO_SUBSET if self.subset is None else self.subset


def _subset_values(con: duckdb.DuckDBPyConnection, job_id: str) -> list[str | None]:
    """The job's subset values in ``job.groups(by="subset")`` order (None last: tasks
    without a subset)."""
    rows = con.execute(
        """SELECT DISTINCT tt.value FROM tasks t LEFT JOIN task_tags tt
           ON tt.job_id = t.job_id AND tt.task = t.task AND tt.key = 'subset'
           WHERE t.job_id = ?""",
        [job_id],
    ).fetchall()
    values: list[str | None] = [*sorted(str(v) for (v,) in rows if v is not None)]
    return values + ([None] if any(v is None for (v,) in rows) else [])


def benchmarks_of(
    con: duckdb.DuckDBPyConnection,
    items: Sequence[str | Benchmark],
    *,
    split_by: SplitBy = "auto",
) -> list[Benchmark]:
    """The benchmarks of these jobs (a :class:`Benchmark` is kept as it is).

    ``split_by="auto"`` splits an lm-eval job whose tasks have more than one ``subset``
    value into one benchmark per value (an lm-eval task each); ``"subset"`` splits every
    such job, whatever its source; None splits none.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> lm = ws.load("tests/data/lm_eval/run")
    >>> [(b.label, b.subset) for b in benchmarks_of(ws.con, [lm.id])]
    [('envloop_alpha', 'envloop_alpha'), ('envloop_beta', 'envloop_beta')]
    >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
    >>> c = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="c")
    >>> [x.label for x in benchmarks_of(ws.con, [lm.id, "b", "c"], split_by=None)]
    ['envloop_group', 'b', 'c']
    """
    if split_by not in ("auto", "subset", None):
        raise ValueError(f"split_by must be 'auto', 'subset' or None, got {split_by!r}")
    ids = [i for i in items if isinstance(i, str)]
    infos = {r["job_id"]: r for r in _rows(con, ids)}
    found: list[tuple[str | None, str, Benchmark]] = []  # (label, fallback, benchmark)
    for item in items:
        if isinstance(item, Benchmark):
            found.append((item.label, item.label, item))
            continue
        info = infos[item]
        values = _subset_values(con, item) if split_by is not None else []
        named = [v for v in values if v is not None]
        split = len(named) > 1 and (split_by == "subset" or info["source_format"] == "lm-eval")
        if not split:
            found.append((info["dataset_name"], item, Benchmark(item, item)))
            continue
        for v in values:
            label = v if v is not None else f"{info['dataset_name'] or item} {_NO_SUBSET}"
            found.append((label, f"{item}:{v or _NO_SUBSET}", Benchmark(label, item, v, True)))
    labels = [f[0] for f in found]
    return [
        Benchmark(
            la if la is not None and labels.count(la) == 1 else fb, b.job_id, b.subset, b.split
        )
        for la, fb, b in found
    ]


def _benches(con: duckdb.DuckDBPyConnection, items: Sequence[str | Benchmark]) -> list[Benchmark]:
    return benchmarks_of(con, items, split_by=None)  # a job id here: the whole job


def _job_ids(benches: Sequence[Benchmark]) -> list[str]:
    return list(dict.fromkeys(b.job_id for b in benches))


def model_label(model: str | None, job_ids: Sequence[str]) -> str:
    """What a report is called by default: its model, else ``"baseline of <first job>"``."""
    return model if model else f"baseline of {job_ids[0]}"


def _bad_cases(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    policy: Policy,
    threshold: float | None,
    bad_below: float,
) -> int | None:
    """The job's bad cases as ``job.groups`` counts them (its ``reward`` row)."""
    try:
        dims = group_summaries(
            con, job_id, by="dimension", policy=policy, threshold=threshold, bad_below=bad_below
        )
    except ValueError:  # a job without per-task counts (metrics only): unknown
        return None
    reward = dims[dims["dimension"] == "reward"]
    return int(reward["bad_cases"].iloc[0]) if len(reward) else None


def _numbers(
    con: duckdb.DuckDBPyConnection, b: Benchmark, policy: Policy, threshold: float | None,
    bad_below: float,
) -> dict[str, Any]:  # fmt: skip
    """A whole job's summary and bad cases; a split benchmark's subset row of
    ``job.groups(by="subset")``."""
    if not b.split:
        s = noted_summary(con, b.job_id, policy=policy, threshold=threshold)
        return {
            "k": s.k, "completed": s.complete_members, "total": s.total_members,
            "score": s.score, "pass@k": s.pass_at_k, "pass^k": s.pass_hat_k,
            "scored": s.scored, "attempts": s.total,
            "bad_cases": _bad_cases(con, b.job_id, policy, threshold, bad_below),
        }  # fmt: skip
    g = group_summaries(
        con, b.job_id, by="subset", policy=policy, threshold=threshold, bad_below=bad_below
    )
    hit = g[g["value"].isna()] if b.subset is None else g[g["value"] == b.subset]
    if hit.empty:
        raise EnvloopError(f"job {b.job_id!r} has no task of subset {b.value!r}")
    r = hit.iloc[0]

    def num(v: Any) -> float | None:
        return None if v is None or v != v else float(v)

    return {
        "k": int(r["k"]), "completed": int(r["complete_members"]), "total": int(r["tasks"]),
        "score": num(r["score"]), "pass@k": num(r["pass@k"]), "pass^k": num(r["pass^k"]),
        "scored": int(r["scored"]), "attempts": int(r["total"]),
        "bad_cases": int(r["bad_cases"]),
    }  # fmt: skip


def report_table(
    con: duckdb.DuckDBPyConnection,
    benchmarks: Sequence[str | Benchmark],
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
) -> pd.DataFrame:
    """One row per benchmark: completed / total samples, score, pass@k, coverage, bad cases.

    ``completed`` is the tasks with all k attempts scored (the summary's
    ``complete_members``), ``total`` the requested tasks; ``score``, ``pass@k`` and
    ``pass^k`` are the job's summary at its own k; ``scored`` / ``attempts`` and the
    ``coverage`` text count attempts; ``bad_cases`` the tasks below ``bad_below``. A split
    benchmark (``subset`` set) has its subset's row of ``job.groups(by="subset")``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> t = report_table(ws.con, [job.id])
    >>> t[["benchmark", "samples", "score", "coverage", "bad_cases"]].values.tolist()
    [['tiny-agent', '2/3', 0.6, '5/6 scored, 1 missing', 0]]
    """
    benches = _benches(con, benchmarks)
    infos = {r["job_id"]: r for r in _rows(con, _job_ids(benches))}
    rows = []
    for b in benches:
        n = _numbers(con, b, policy, threshold, bad_below)
        done, scored = n["completed"], n["scored"]
        rows.append(
            {
                **n,
                "benchmark": b.label,
                "job_id": b.job_id,
                "subset": b.value if b.split else None,
                "status": infos[b.job_id].get("status") or "completed",
                "samples": f"{'?' if done is None else f'{done:,}'}/{n['total']:,}",
                "coverage": "unknown"
                if scored is None
                else coverage_text(int(scored), int(n["attempts"])),
                "bad_below": float(bad_below),
            }
        )
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    for col in ("score", "pass@k", "pass^k"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Float64")
    for col in ("completed", "scored", "bad_cases"):
        frame[col] = frame[col].astype("Int64")
    return frame


def _when(value: Any) -> str:
    return "-" if value is None else str(value)[:19].replace("T", " ")


def overview(
    con: duckdb.DuckDBPyConnection,
    benchmarks: Sequence[str | Benchmark],
    *,
    name: str,
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
) -> dict[str, Any]:
    """The report's basic facts: model, method, created / updated, progress, benchmarks.

    ``method`` lists the distinct runners (else source formats); ``created`` is the
    earliest job's creation (else load) time, ``updated`` the latest finish or load
    time; ``progress`` counts attempts scored / requested over every benchmark.
    ``inference`` is each benchmark's generation parameters (``job.inference_config``).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> info = overview(ws.con, [job.id], name="sft")
    >>> info["model"], info["method"], info["progress"], info["benchmarks"]
    ('my-endpoint/sft', 'harbor@0.22.0', '5/6 attempts scored (83.3%)', ['tiny-agent'])
    """
    benches = _benches(con, benchmarks)
    job_ids = _job_ids(benches)
    rows = _rows(con, job_ids)
    table = report_table(con, benches, policy=policy, threshold=threshold, bad_below=bad_below)
    methods = list(dict.fromkeys(str(r.get("runner") or r["source_format"]) for r in rows))
    created = [r.get("created_at") or r["loaded_at"] for r in rows]
    updated = [r.get("finished_at") or r["loaded_at"] for r in rows]
    scored = [v for v in table["scored"] if v is not pd.NA]
    total = int(table["attempts"].sum())
    done = int(sum(scored))
    unknown = len(scored) < len(table)
    share = f" ({done / total * 100:.1f}%)" if total and not unknown else ""
    progress = f"{done:,}{'+?' if unknown else ''}/{total:,} attempts scored{share}"
    statuses = [str(r.get("status") or "completed") for r in rows]
    inference = {}
    for b in benches:
        inference[b.label] = dict(inference_config(con, b.job_id, inputs=False).params)
    return {
        "name": name,
        "model": rows[0]["model"],
        "method": ", ".join(methods),
        "created": _when(min(created)),
        "updated": _when(max(updated)),
        "progress": progress,
        "scored": done,
        "attempts": total,
        "status": "completed"
        if set(statuses) == {"completed"}
        else ", ".join(f"{s} {statuses.count(s)}" for s in dict.fromkeys(statuses)),
        "benchmarks": [str(b) for b in table["benchmark"]],
        "jobs": list(job_ids),
        "policy": policy,
        "threshold": threshold,
        "inference": inference,
    }


def _one(con: duckdb.DuckDBPyConnection, bench: str | Benchmark) -> Benchmark:
    return bench if isinstance(bench, Benchmark) else _benches(con, [bench])[0]


def subset_tasks(con: duckdb.DuckDBPyConnection, job_id: str, subset: str | None) -> list[str]:
    """The tasks of a job whose ``subset`` tag is ``subset`` (None: tasks without one)."""
    cond = "tt.value = $v" if subset is not None else "tt.value IS NOT NULL"
    rows = con.execute(
        f"""SELECT t.task FROM tasks t WHERE t.job_id = $j AND {"" if subset else "NOT "}EXISTS (
                SELECT 1 FROM task_tags tt WHERE tt.job_id = t.job_id AND tt.task = t.task
                AND tt.key = 'subset' AND {cond})
            ORDER BY t.position, t.task""",
        {"j": job_id, **({"v": subset} if subset is not None else {})},
    ).fetchall()
    return [str(t) for (t,) in rows]


def dimension_choices(con: duckdb.DuckDBPyConnection, benchmark: str | Benchmark) -> list[str]:
    """The drill-downs a benchmark offers: ``subset`` (its tasks have a subset tag),
    ``tag:<key>`` per other tag key, ``dimension`` (it has score dimensions or a
    composite).

    A split benchmark offers the other tag keys of its subset's tasks only: not the
    subset it was split on, and not ``dimension`` (``job.groups(by="dimension")`` counts
    the whole job; it has no per-subset form).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> dimension_choices(job.con, job.id)
    ['subset', 'dimension']
    """
    b = _one(con, benchmark)
    keys = [k for (k,) in con.execute(
        "SELECT DISTINCT key FROM task_tags WHERE job_id = $j AND (NOT $split OR "
        "list_contains($tasks, task)) ORDER BY key",
        {"j": b.job_id, "split": b.split,
         "tasks": subset_tasks(con, b.job_id, b.subset) if b.split else []},
    ).fetchall()]  # fmt: skip
    if b.split:
        return [f"tag:{k}" for k in keys if k != "subset"]
    out = ["subset"] if "subset" in keys else []
    out += [f"tag:{k}" for k in keys if k != "subset"]
    if has_dimensions(con, b.job_id):
        out.append("dimension")
    return out


def restricted_tag_groups(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    key: str,
    *,
    tasks: Sequence[str] | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
) -> pd.DataFrame:
    """``job.groups(by="tag:<key>")`` over ``tasks`` only (None: every task).

    The job's per-task counts (:func:`envloop_nb._metrics.counts.task_counts`) of those
    tasks, summed per tag value as ``job.groups`` sums them (binary or not decided over
    the whole job) and finished by :func:`envloop_nb._metrics.groups.finish_rows`; the
    same columns as ``job.groups``. With ``tasks=None`` it equals ``job.groups``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> f = restricted_tag_groups(job.con, job.id, "subset", tasks=["A", "B"])
    >>> f[["value", "tasks", "score"]].values.tolist()
    [['code', 1, 1.0], ['math', 1, 0.5]]
    """
    check_options(policy, threshold)
    counts = task_counts(con, job_id, threshold)
    names = counts.column("task").to_pylist()
    keep = np.ones(len(names), dtype=bool) if tasks is None else np.isin(names, list(tasks))
    tags = dict(
        con.execute(
            "SELECT task, value FROM task_tags WHERE job_id = ? AND key = ?", [job_id, key]
        ).fetchall()
    )
    vals = [tags.get(t) for t, m in zip(names, keep, strict=True) if m]
    labels: list[str | None] = [*sorted({str(v) for v in vals if v is not None})]
    labels += [None] if any(v is None for v in vals) else []
    group = np.array([labels.index(v) for v in vals], dtype=np.int64)
    size = len(labels)

    def col(name: str, dtype: type = np.int64) -> np.ndarray:
        return np.asarray(counts.column(name).to_numpy(zero_copy_only=False), dtype=dtype)

    binary = bool(threshold is not None or int(col("nonbinary").sum()) == 0)
    k, scored, invalid = col("k")[keep], col("scored")[keep], col("invalid")[keep]
    passes, vsum = col("passes")[keep], col("reward_sum", np.float64)[keep]
    failure = policy == "failure"
    n, full = (k if failure else scored), scored == k
    with np.errstate(invalid="ignore", divide="ignore"):
        has = (n > 0) & (failure or full) if binary else n > 0
        value = np.where(has, (passes if binary else vsum) / np.maximum(n, 1), np.nan)

    def tot(w: np.ndarray | None = None, where: np.ndarray | None = None) -> np.ndarray:
        sel = np.ones(len(group), dtype=bool) if where is None else where
        return np.bincount(group[sel], weights=None if w is None else w[sel], minlength=size)

    anyp, allp = (passes > 0).astype(np.float64), (passes == k).astype(np.float64)
    ntask, done = tot(), tot(where=full)
    sums = {"tasks": ntask, "total": tot(k.astype(np.float64)),
            "scored": tot(scored.astype(np.float64)), "invalid": tot(invalid.astype(np.float64)),
            "complete_members": done, "passes": tot(passes.astype(np.float64)),
            "rated_tasks": tot(where=has), "bad_cases": tot(where=has & (value < bad_below))}  # fmt: skip
    at_c, hat_c, at_a, hat_a = tot(anyp, full), tot(allp, full), tot(anyp), tot(allp)
    first = np.zeros(size, dtype=np.int64)
    first[group[::-1]] = k[::-1]
    vsums = tot(vsum)
    raw = [
        {
            **{name: int(v[g]) for name, v in sums.items()},
            "vsum": float(vsums[g]),
            "is_binary": binary,
            "k": int(first[g]),
            "at_complete": float(at_c[g]) / done[g] if done[g] else None,
            "hat_complete": float(hat_c[g]) / done[g] if done[g] else None,
            "at_all": float(at_a[g]) / ntask[g] if ntask[g] else None,
            "hat_all": float(hat_a[g]) / ntask[g] if ntask[g] else None,
            "bad_below": float(bad_below),
        }
        for g in range(size)
    ]
    rows = [
        {
            "key": key,
            "value": label,
            **f,
            "policy": policy,
            "threshold": np.nan if threshold is None else float(threshold),
        }
        for label, f in zip(labels, finish_rows(raw, policy), strict=True)
    ]
    if not rows:
        raise EnvloopError(f"no task of job {job_id!r} among the {len(tasks or [])} asked for")
    return pd.DataFrame(rows, columns=list(rows[0]))


def drilldown(
    con: duckdb.DuckDBPyConnection,
    benchmark: str | Benchmark,
    by: str = "subset",
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
    bad_below: float = 0.5,
) -> pd.DataFrame:
    """One benchmark's score per subset, tag value or dimension (``job.groups(by)``).

    Columns: ``value`` (the subset, tag value or dimension; ``(no <key>)`` for tasks
    without the tag), ``score, completed, tasks, samples, scored, total, coverage,
    pass@k, bad_cases`` and, by dimension, ``unit, higher_is_better``. A split benchmark
    drills down by another tag over its subset's tasks (:func:`restricted_tag_groups`).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> drilldown(job.con, job.id)[["value", "score", "samples", "bad_cases"]].values.tolist()
    [['code', 0.6666666666666666, '1/2', 0], ['math', 0.5, '1/1', 0]]
    """
    b = _one(con, benchmark)
    if b.split:
        choices = dimension_choices(con, b)
        if by not in choices:
            raise EnvloopError(
                f"benchmark {b.label!r} is subset {b.value!r} of job {b.job_id!r}: it cannot "
                f"be drilled down by {by!r}; its drill-downs: {', '.join(choices) or 'none'}"
            )
        groups = restricted_tag_groups(
            con, b.job_id, by.removeprefix("tag:"),
            tasks=subset_tasks(con, b.job_id, b.subset),
            policy=policy, threshold=threshold, bad_below=bad_below,
        )  # fmt: skip
    else:
        groups = group_summaries(
            con, b.job_id, by=by, policy=policy, threshold=threshold, bad_below=bad_below
        )
    if by == "dimension":
        values = groups["dimension"].astype(str)
    else:
        key = "subset" if by == "subset" else by.removeprefix("tag:")
        values = groups["value"].map(lambda v: f"(no {key})" if v is None or v != v else str(v))
    out = pd.DataFrame(
        {
            "value": values,
            "score": groups["score"],
            "completed": groups["complete_members"],
            "tasks": groups["tasks"],
            "samples": [
                f"{int(c):,}/{int(t):,}"
                for c, t in zip(groups["complete_members"], groups["tasks"], strict=True)
            ],
            "scored": groups["scored"],
            "total": groups["total"],
            "coverage": [
                coverage_text(int(s), int(t))
                for s, t in zip(groups["scored"], groups["total"], strict=True)
            ],
            "pass@k": groups["pass@k"],
            "bad_cases": groups["bad_cases"],
        }
    )
    if by == "dimension":
        out["unit"] = groups["unit"]
        out["higher_is_better"] = groups["higher_is_better"]
    return out.reset_index(drop=True)
