"""Comparability: the same frozen work (dataset revision, runner, tasks and digests, k).

Every way the compared jobs differ is a :class:`Difference` with a plain sentence;
the blocking ones make them incomparable (see the ``Comparison`` docstring).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._store.ref import metrics_only
from .state import CompareState

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "Difference",
    "comparable",
    "describe",
    "differences",
    "direction_word",
    "find_differences",
    "guard_text",
    "mark",
    "pair_blockers",
    "pair_differences",
    "short_value",
    "unknown_tasks_text",
]


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


def direction_word(value: Any) -> str:
    if value is True:
        return "higher is better"
    if value is False:
        return "lower is better"
    return "direction unknown"


def short_value(value: Any) -> str:
    """A value for a sentence: long digests cut to ``sha256:c60972a3c07b…``."""
    text = "-" if value is None else str(value)
    return text[:19] + "…" if len(text) > 24 else text


def describe(values: dict[str, Any], fmt: Any = short_value) -> str:
    """``"2 (job_a) vs 4 (job_b, job_c)"`` from job -> value."""
    groups: dict[Any, list[str]] = {}
    for jid, v in values.items():
        groups.setdefault(v, []).append(jid)
    return " vs ".join(f"{fmt(v)} ({', '.join(j)})" for v, j in groups.items())


def unknown_tasks_text(job_ids: Sequence[str], *, shown: int = 3) -> str:
    """Why jobs of aggregate metrics only have no task list, naming them (the first few).

    Examples
    --------
    >>> unknown_tasks_text(["a"])
    'the task list of a is unknown: its run holds only aggregate metrics'
    >>> unknown_tasks_text(["a", "b", "c", "d", "e"])
    'the task lists of 5 jobs are unknown (a, b, c and 2 more): their runs hold only aggregate metrics'
    """
    if len(job_ids) == 1:
        return f"the task list of {job_ids[0]} is unknown: its run holds only aggregate metrics"
    names = list(job_ids[:shown])
    rest = len(job_ids) - len(names)
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if not rest else ", ".join(names)
    if rest:
        listed += f" and {rest} more"
    return (
        f"the task lists of {len(job_ids)} jobs are unknown ({listed}): their runs hold only "
        "aggregate metrics"
    )


def find_differences(con: duckdb.DuckDBPyConnection, job_ids: Sequence[str]) -> list[Difference]:
    """The comparability findings for these jobs (SQL over jobs, tasks, dimension_meta)."""
    job_ids = list(job_ids)
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
                    f"{label} {describe(values)}",
                    blocking,
                )
            )

    check("dataset", "dataset", lambda r: f"{r[0]}@{r[1]}")
    check("dataset_revision", "dataset revision", lambda r: r[2])
    check("runner", "runner", lambda r: r[3])
    check("attempts", "attempts", lambda r: r[4])

    # A metrics-only job (an MLflow run of aggregate metrics) has no task list to compare:
    # never comparable on its tasks, and left out of the task checks below.
    # One finding for all of them (a run of 27 results-only checkpoints is one fact, not 27).
    unknown = [j for j in ids if metrics_only(con, j) is not None]
    if unknown:
        out.append(Difference("tasks", tuple(unknown), unknown_tasks_text(unknown)))
    every, ids = ids, [j for j in ids if j not in unknown]
    n = len(ids)
    # Per job: how many of its tasks some other job lacks, and which jobs lack them (none
    # when every task is in every job: checked first, in one pass over the task rows,
    # since the per-job query pairs every job with every other: 200 jobs, 40,000 pairs).
    uneven = con.execute(
        """SELECT count(*) FROM (SELECT task FROM tasks WHERE list_contains($jobs, job_id)
                                 GROUP BY task HAVING count(DISTINCT job_id) < $n)""",
        {"jobs": ids, "n": n},
    ).fetchone()
    rows = (
        []
        if not uneven or not uneven[0]
        else con.execute(
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
    )
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
    ver = con.execute(  # NOT NULL: a file read in place without the column is not scanned
        """SELECT job_id, string_agg(DISTINCT verifier_version, ', ' ORDER BY verifier_version)
           FROM attempts WHERE list_contains($jobs, job_id) AND verifier_version IS NOT NULL
           GROUP BY job_id""",
        {"jobs": ids},
    ).fetchall()
    versions = dict(ver)
    if len(versions) > 1 and len(set(versions.values())) > 1:
        out.append(
            Difference(
                "verifier_version",
                tuple(versions),
                f"verifier version differs ({describe(versions)})",
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
                    f"verifier version differs on dimension {name} ({describe(vv, lambda v: v or '-')})",
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
        dirs = {j: direction_word(v[1]) for j, v in ordered.items()}
        if len(set(dirs.values())) > 1:
            out.append(
                Difference(
                    "dimension_direction",
                    tuple(ordered),
                    f"direction of dimension {name} differs ({describe(dirs)}): shown as separate dimensions",
                    False,
                )
            )
    for jid in every:
        status = info[jid][5]
        if status != "completed":
            out.append(Difference("status", (jid,), f"{jid} is {status}, not completed", False))
    out.sort(key=lambda d: not d.blocking)
    return out


#: One finding at a time: a comparison's statistics may run on a thread while its
#: guard is found (the regression gate), and only one of them may query its connection.
_FINDING = threading.Lock()


def differences(state: CompareState) -> list[Difference]:
    """Every way the jobs differ (blocking ones first), as plain sentences (memoized)."""
    with _FINDING:
        if "differences" not in state.data:
            state.data["differences"] = find_differences(state.con, state.job_ids)
    found: list[Difference] = state.data["differences"]
    return found


def comparable(state: CompareState) -> bool:
    """True when no difference breaks comparability."""
    return not any(d.blocking for d in differences(state))


def pair_differences(state: CompareState, other: str) -> list[Difference]:
    """The blocking differences between the baseline and ``other`` (of two jobs, baseline
    first: the comparison's own :func:`differences`, found once)."""
    pair = [state.baseline, other]
    found = differences(state) if list(state.job_ids) == pair else find_differences(state.con, pair)
    return [d for d in found if d.blocking and set(d.jobs) & set(pair)]


def pair_blockers(state: CompareState, a: str, b: str) -> list[Difference]:
    """The blocking differences concerning two jobs (either may be the baseline)."""
    if a != state.baseline and b != state.baseline:
        return [d for d in differences(state) if d.blocking and set(d.jobs) & {a, b}]
    return pair_differences(state, a if a != state.baseline else b)


def guard_text(state: CompareState) -> str:
    """The guard's findings as lines of text."""
    found = differences(state)
    if not found:
        return f"comparable: {len(state.job_ids)} jobs ran the same frozen work"
    head = "comparable" if comparable(state) else "NOT comparable"
    lines = [f"{head}: {len(found)} difference(s)"]
    lines += [
        f"  {'✗' if d.blocking else '!'} {d.detail}"
        + ("" if d.blocking else " (does not break comparability)")
        for d in found
    ]
    return "\n".join(lines)


def mark(state: CompareState) -> str:
    """The short mark every view of an incomparable comparison carries ('' if comparable)."""
    if comparable(state):
        return ""
    found = differences(state)
    first = next(d.detail for d in found if d.blocking)
    more = sum(d.blocking for d in found) - 1
    return f"⚠ not comparable: {first}" + (f" (+{more} more)" if more else "")
