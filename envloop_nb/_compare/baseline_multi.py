"""Several baseline reports side by side: one model each, over the union of benchmarks.

A :class:`ReportSet` holds up to five reports (a name and its benchmarks, in order; see
:mod:`envloop_nb._compare.baseline`). Benchmarks are matched by label (the dataset
name, or the subset of a split job). For every benchmark that several reports ran,
their jobs form a :class:`~envloop_nb._compare.state.CompareState` (the first report's
job as its baseline), so the comparison engine's guard says whether they ran the same
frozen work (dataset revision, runner, task set and digests, k), and its paired
bootstrap over the tasks both jobs scored completely says whether a gap is beyond noise
(:func:`envloop_nb._compare.tables.noise_words`). Benchmarks missing from some report
are shown with a mark, never as zero.

When a benchmark is a split one (one subset of a job) in some report, the task set and
digest checks compare the tasks of that benchmark only (:func:`bench_differences`: each
job's tasks restricted to its subset); the job-level checks (dataset, revision, runner,
k) stay as the guard finds them. A job whose task list is unknown (aggregate metrics
only) keeps the guard's blocking sentence: never claimed comparable. The paired interval
of a split benchmark is over its subset's tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError
from .._metrics.counts import check_options
from .._present.compare_html import signed_points
from .._store.ref import metrics_only
from .._types import Policy
from .baseline import Benchmark, benchmarks_of, report_table, subset_tasks
from .guard import Difference, differences, unknown_tasks_text
from .state import MAX_JOBS, CompareState
from .tables import noise_words, paired_on, per_task_values

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
else:
    from .state import pandas as pd

__all__ = [
    "ReportSet",
    "bench_differences",
    "benchmarks",
    "combined_table",
    "comparability",
    "long_scores",
    "names_for",
    "radar",
    "state_of",
    "strengths",
    "words",
]


@dataclass(frozen=True, eq=False)
class ReportSet:
    """Up to five reports: ``names[i]`` has the benchmarks ``benches[i]`` (a job id stands
    for its whole job).

    ``data`` memoizes the per-report tables and per-benchmark comparison states.
    """

    con: duckdb.DuckDBPyConnection
    names: tuple[str, ...]
    benches: tuple[tuple[Benchmark | str, ...], ...]
    policy: Policy = "unknown"
    threshold: float | None = None
    bad_below: float = 0.5
    resamples: int = 2000
    seed: int = 0
    confidence: float = 0.95
    data: dict[Any, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check_options(self.policy, self.threshold)
        if not 2 <= len(self.names) <= MAX_JOBS:
            raise EnvloopError(
                f"a baseline comparison takes 2 to {MAX_JOBS} reports in total, got "
                f"{len(self.names)}: {list(self.names)}"
            )
        if len(set(self.names)) != len(self.names):
            raise EnvloopError(f"two reports share a name: {list(self.names)}; name them apart")
        object.__setattr__(
            self,
            "benches",
            tuple(tuple(benchmarks_of(self.con, b, split_by=None)) for b in self.benches),
        )
        seen: dict[str, str] = {}
        for name, ids in zip(self.names, self.jobs, strict=True):
            for jid in dict.fromkeys(ids):
                if jid in seen:
                    raise EnvloopError(f"job {jid!r} is in both reports {seen[jid]!r} and {name!r}")
                seen[jid] = name

    @property
    def jobs(self) -> tuple[tuple[str, ...], ...]:
        """Each report's job ids, one per benchmark (a split job repeats)."""
        return tuple(tuple(b.job_id for b in self.bench(i)) for i in range(len(self.names)))

    def bench(self, i: int) -> tuple[Benchmark, ...]:
        """Report ``i``'s benchmarks."""
        return tuple(b for b in self.benches[i] if isinstance(b, Benchmark))


def _table(rs: ReportSet, i: int) -> pd.DataFrame:
    key = ("table", i)
    if key not in rs.data:
        rs.data[key] = report_table(
            rs.con, rs.bench(i), policy=rs.policy, threshold=rs.threshold, bad_below=rs.bad_below
        )
    frame: pd.DataFrame = rs.data[key]
    return frame


def benchmarks(rs: ReportSet) -> dict[str, dict[str, Benchmark]]:
    """Benchmark label -> {report name: its benchmark}, in order of first appearance."""
    out: dict[str, dict[str, Benchmark]] = {}
    for i, name in enumerate(rs.names):
        for b in rs.bench(i):
            out.setdefault(b.label, {})[name] = b
    return out


def state_of(rs: ReportSet, benchmark: str) -> CompareState | None:
    """The comparison state of one benchmark's jobs (None when only one report ran it)."""
    key = ("state", benchmark)
    if key not in rs.data:
        per = benchmarks(rs)[benchmark]
        rs.data[key] = (
            CompareState(
                rs.con,
                tuple(b.job_id for b in per.values()),
                next(iter(per.values())).job_id,
                policy=rs.policy,
                threshold=rs.threshold,
                resamples=rs.resamples,
                seed=rs.seed,
                confidence=rs.confidence,
            )
            if len(per) > 1
            else None
        )
    found: CompareState | None = rs.data[key]
    return found


def _tasks_of(con: duckdb.DuckDBPyConnection, b: Benchmark) -> dict[str, str]:
    """A benchmark's tasks -> digest (``<none>`` without one): a split one's subset only."""
    rows = con.execute("SELECT task, digest FROM tasks WHERE job_id = ?", [b.job_id]).fetchall()
    inside = set(subset_tasks(con, b.job_id, b.subset)) if b.split else None
    return {t: d or "<none>" for t, d in rows if inside is None or t in inside}


def _task_checks(rs: ReportSet, bench: str, per: Sequence[Benchmark]) -> list[Difference]:
    """The guard's task-set and digest checks over these benchmarks' own tasks."""
    tasks = {b.job_id: _tasks_of(rs.con, b) for b in per}
    ids, out = list(tasks), []
    where = f" (tasks of benchmark {bench})"
    for jid in ids:
        lacking = [o for o in ids if o != jid and set(tasks[jid]) - set(tasks[o])]
        if not lacking:
            continue
        only = {t for t in tasks[jid] if any(t not in tasks[o] for o in lacking)}
        detail = (
            f"{len(only):,} tasks only in {jid}"
            if len(ids) == 2
            else f"{len(only):,} tasks of {jid} are missing from {', '.join(lacking)}"
        )
        out.append(Difference("tasks", (jid, *lacking), detail + where))
    shared = set.intersection(*(set(t) for t in tasks.values())) if tasks else set()
    changed = sum(len({tasks[j][t] for j in ids}) > 1 for t in shared)
    if changed:
        out.append(
            Difference("task_digests", tuple(ids), f"{changed:,} tasks have the same name but"
                       f" a different digest (different content){where}")
        )  # fmt: skip
    return out


def bench_differences(rs: ReportSet, bench: str) -> list[Difference]:
    """The guard's findings for one benchmark's jobs (blocking first; memoized).

    When some report's benchmark is split (one subset of its job), the task set and the
    digests compared are each job's tasks of this benchmark; a job whose task list is
    unknown (aggregate metrics only) stays blocking.
    """
    key = ("differences", bench)
    if key not in rs.data:
        state = state_of(rs, bench)
        per = list(benchmarks(rs)[bench].values())
        found = [] if state is None else list(differences(state))
        if state is not None and any(b.split for b in per):
            unknown = [b for b in per if metrics_only(rs.con, b.job_id) is not None]
            found = [d for d in found if d.field not in ("tasks", "task_digests")]
            if unknown:  # one finding for all of them, as the guard's
                ids = [b.job_id for b in unknown]
                found.append(Difference("tasks", tuple(ids), unknown_tasks_text(ids)))
            found += _task_checks(rs, bench, [b for b in per if b not in unknown])
            found.sort(key=lambda d: not d.blocking)
        rs.data[key] = found
    out: list[Difference] = rs.data[key]
    return out


def _split_noise(noise: str, blocked: bool, excludes_zero: bool) -> str:
    """``noise_words`` with the verdict of a split benchmark's own guard (the engine's
    judges the whole jobs)."""
    head = "not assessed: jobs not comparable; "
    if noise.startswith("not assessed: no task"):
        return noise
    ci = noise[len(head) :] if noise.startswith(head) else noise.split(": ", 1)[1]
    if blocked:
        return head + ci
    return ("beyond noise: " if excludes_zero else "within noise: ") + ci


def long_scores(rs: ReportSet) -> pd.DataFrame:
    """One row per report and benchmark it ran: ``report, benchmark, job_id, score,
    percent, coverage, samples, bad_cases``."""
    parts = []
    for i, name in enumerate(rs.names):
        t = _table(rs, i)
        parts.append(
            pd.DataFrame(
                {
                    "report": name,
                    "benchmark": t["benchmark"],
                    "job_id": t["job_id"],
                    "score": t["score"],
                    "coverage": t["coverage"],
                    "samples": t["samples"],
                    "bad_cases": t["bad_cases"],
                }
            )
        )
    out = pd.concat(parts, ignore_index=True)
    out["percent"] = [v is pd.NA or 0 <= float(v) <= 1 for v in out["score"]]
    return out


def comparability(rs: ReportSet) -> pd.DataFrame:
    """Per benchmark: which reports ran it, which did not, and whether their jobs ran the
    same frozen work (the comparison guard); ``comparable`` is None for a benchmark one
    report alone ran. ``differences`` lists the guard's sentences (blocking first)."""
    rows = []
    for bench, per in benchmarks(rs).items():
        state = state_of(rs, bench)
        found = bench_differences(rs, bench)
        rows.append(
            {
                "benchmark": bench,
                "reports": list(per),
                "missing_from": [n for n in rs.names if n not in per],
                "in_every_report": len(per) == len(rs.names),
                "comparable": None if state is None else not any(d.blocking for d in found),
                "differences": [
                    d.detail + ("" if d.blocking else " (does not break comparability)")
                    for d in found
                ],
            }
        )
    return pd.DataFrame(
        rows,
        columns=["benchmark", "reports", "missing_from", "in_every_report", "comparable",
                 "differences"],
    )  # fmt: skip


def _mark(row: Any) -> str:
    marks = []
    if row["missing_from"]:
        marks.append(f"not run by {', '.join(row['missing_from'])}")
    if row["comparable"] is not None and not bool(row["comparable"]):
        blocking = [d for d in row["differences"] if not d.endswith("comparability)")]
        marks.append("not comparable: " + "; ".join(blocking))
    return "; ".join(marks)


def combined_table(rs: ReportSet) -> pd.DataFrame:
    """Benchmark x report: each report's score and coverage, the best report, and marks.

    Columns: ``benchmark``, per report ``<name>`` (its score; missing when it did not
    run the benchmark) and ``<name> coverage`` (``"not run"`` then), ``best``,
    ``in_every_report``, ``comparable`` (None: one report alone) and ``mark`` (why a row
    needs care: not run by some report, not the same frozen work).
    """
    long = long_scores(rs)
    checks = comparability(rs).set_index("benchmark")
    rows = []
    for bench in benchmarks(rs):
        part = long[long["benchmark"] == bench]
        row: dict[str, Any] = {"benchmark": bench}
        for name in rs.names:
            hit = part[part["report"] == name]
            row[name] = (
                None if hit.empty or hit["score"].iloc[0] is pd.NA else float(hit["score"].iloc[0])
            )
            row[f"{name} coverage"] = "not run" if hit.empty else str(hit["coverage"].iloc[0])
        scored = {n: row[n] for n in rs.names if row[n] is not None}
        top = max(scored.values()) if scored else None
        winners = [n for n, v in scored.items() if v == top]
        row["best"] = ", ".join(winners) if len(scored) > 1 and len(winners) < len(scored) else None
        check = checks.loc[bench]
        row["in_every_report"] = bool(check["in_every_report"])
        row["comparable"] = None if check["comparable"] is None else bool(check["comparable"])
        row["mark"] = _mark(check)
        rows.append(row)
    columns = ["benchmark", *[c for n in rs.names for c in (n, f"{n} coverage")],
               "best", "in_every_report", "comparable", "mark"]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    for name in rs.names:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("Float64")
    return frame


def radar(rs: ReportSet) -> Any:
    """One polygon per report over the union of benchmarks (an altair chart); a
    benchmark a report did not run has no vertex for it, and the subtitle says so."""
    from .._present.compare_charts import radar_chart

    long = long_scores(rs)
    groups = pd.DataFrame(
        {
            "job": long["report"],
            "group": long["benchmark"].astype(str),
            "value": long["score"],
            "percent": long["percent"],
            "coverage": long["coverage"],
        }
    )
    checks = comparability(rs)
    notes = [f"{r['benchmark']}: {_mark(r)}" for _, r in checks.iterrows() if _mark(r)]
    mark = ("⚠ " + " · ".join(notes)) if notes else ""
    return radar_chart(
        groups,
        list(rs.names),
        title="score by benchmark",
        mark=mark,
        empty="no report has a scored benchmark",
    )


def strengths(rs: ReportSet) -> pd.DataFrame:
    """Per benchmark several reports scored: the best report's lead over the runner-up
    (a strength) and the worst one's gap to the next worst (a weakness), with the paired
    bootstrap interval over the tasks both jobs scored completely and its verdict.

    Columns: ``report, kind, benchmark, gap, low, high, noise, sentence``; ``noise`` is
    ``beyond noise``, ``within noise`` or ``not assessed`` (not the same frozen work, or
    no task complete in both).
    """
    if "strengths" in rs.data:
        cached: pd.DataFrame = rs.data["strengths"]
        return cached.copy()
    long = long_scores(rs)
    out = []
    for bench in benchmarks(rs):
        state = state_of(rs, bench)
        if state is None:
            continue
        part = long[(long["benchmark"] == bench) & long["score"].notna()]
        if len(part) < 2:
            continue
        values = per_task_values(state, "subset", None)
        per = benchmarks(rs)[bench]
        split = {b.job_id: b.value for b in per.values() if b.split}
        keep = [j not in split or g == split[j] for j, g in zip(values["job_id"],
                values["group"], strict=True)]  # fmt: skip
        values = values[keep].assign(group=bench)
        ordered = part.assign(v=part["score"].astype(float)).sort_values(
            "v", ascending=False, kind="stable"
        )
        percent = bool(ordered["percent"].all())
        pairs = (
            ("strength", ordered.iloc[0], ordered.iloc[1], "best", "ahead of"),
            ("weakness", ordered.iloc[-1], ordered.iloc[-2], "worst", "behind"),
        )
        for kind, this, ref, word, rel in pairs:
            gap = float(this["v"]) - float(ref["v"])
            if gap == 0:
                continue
            diff = paired_on(state, values, bench, str(ref["job_id"]), str(this["job_id"]))
            a, b = str(this["job_id"]), str(ref["job_id"])
            noise = noise_words(state, diff, a, b, percent)
            if split:
                blocked = any(
                    d.blocking and set(d.jobs) & {a, b} for d in bench_differences(rs, bench)
                )
                noise = _split_noise(noise, blocked, diff.excludes_zero)
            out.append(
                {
                    "report": this["report"],
                    "kind": kind,
                    "benchmark": bench,
                    "gap": gap,
                    "low": diff.low,
                    "high": diff.high,
                    "noise": noise.split(":")[0],
                    "sentence": f"{this['report']} is {word} on {bench}: "
                    f"{signed_points(gap, percent)} {rel} {ref['report']} ({noise})",
                }
            )
    frame = pd.DataFrame(
        out, columns=["report", "kind", "benchmark", "gap", "low", "high", "noise", "sentence"]
    )
    rs.data["strengths"] = frame
    return frame.copy()


def words(rs: ReportSet) -> list[str]:
    """One paragraph per report: where it leads, where it trails, which gaps are within
    the noise, and which benchmarks it did not run.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> b = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", job_id="b")
    >>> rs = ReportSet(ws.con, ("A", "B"), ((a.id,), ("b",)))
    >>> words(rs)
    ['A: no lead and no gap on any benchmark it shares.', 'B: no lead and no gap on any benchmark it shares.']
    """
    s = strengths(rs)
    per = benchmarks(rs)
    out = []
    for name in rs.names:
        mine = s[s["report"] == name]
        parts = []
        for kind, word in (("strength", "best on"), ("weakness", "worst on")):
            rows = mine[mine["kind"] == kind]
            if len(rows):
                items = [
                    f"{r['benchmark']} ({signed_points(r['gap'], True)}, {r['noise']})"
                    for _, r in rows.iterrows()
                ]
                parts.append(f"{word} {', '.join(items)}")
        noisy = sorted(set(mine.loc[mine["noise"] != "beyond noise", "benchmark"]))
        if noisy:
            parts.append(f"differences on {', '.join(noisy)} are not beyond the noise")
        missing = [b for b, p in per.items() if name not in p]
        if missing:
            parts.append(f"did not run {', '.join(missing)}")
        text = "; ".join(parts) if parts else "no lead and no gap on any benchmark it shares"
        out.append(f"{name}: {text}.")
    return out


def names_for(models: Sequence[str]) -> list[str]:
    """Unique series names from report names (a repeated name gets `` (2)``, ...)."""
    out: list[str] = []
    for m in models:
        name, i = m, 2
        while name in out:
            name, i = f"{m} ({i})", i + 1
        out.append(name)
    return out
