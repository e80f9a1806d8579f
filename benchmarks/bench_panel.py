"""Panel latency on a generated job: page, filter, sort and policy changes, driven from Python.

The job is generated in SQL (DuckDB ``range()``) straight into a workspace's tables, so a
million attempts take seconds to make. Each interaction is timed end to end as a user
would feel it in the kernel: the control changes, the library queries DuckDB, the panel
re-renders its HTML and widgets (without a browser).

Run: ``.venv/bin/python benchmarks/bench_panel.py [n_attempts] [repeats]``; prints a
Markdown table and writes nothing. The numbers of record are stage 5 of
``benchmarks/RESULTS.md`` (``.venv/bin/python -m benchmarks run --merge --stages 5``,
which calls ``run(...)`` in a fresh process): one file, so two can never disagree.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import envloop_nb as enb

SUBSETS = ("math", "code", "web", "shell", "data")


def generate_job(
    ws: enb.Workspace, n_attempts: int, *, k: int = 4, job_id: str = "job_bench"
) -> enb.Job:
    """Insert a synthetic job of ``n_attempts`` attempts (``n_attempts // k`` tasks) with SQL."""
    n_tasks = max(1, n_attempts // k)
    con = ws.con
    con.execute("BEGIN TRANSACTION")
    for table in ("jobs", "tasks", "task_tags", "attempt_rows", "dimensions", "dimension_meta"):
        con.execute(f"DELETE FROM {table} WHERE job_id = ?", [job_id])
    con.execute(
        """INSERT INTO jobs (job_id, source_format, status, created_at, finished_at, dataset_name,
               dataset_version, dataset_revision, runner, profile_name, profile_version, model,
               attempts, platform_metrics, loaded_at)
           VALUES ($id, 'envloop', 'completed', TIMESTAMPTZ '2026-11-01 00:00:00+00',
               TIMESTAMPTZ '2026-11-01 06:00:00+00', 'bench-set', '1', 'sha256:bench',
               'bench-runner', 'team/eval', '1', 'bench/model', $k, NULL, now())""",
        {"id": job_id, "k": k},
    )
    con.execute(
        """INSERT INTO tasks SELECT $id, 'task-' || lpad(i::VARCHAR, 7, '0'), i::INTEGER,
               'sha256:' || md5(i::VARCHAR),
               json_object('subset', ['math','code','web','shell','data'][1 + i % 5],
                           'difficulty', ['easy','medium','hard'][1 + i % 3])::JSON
           FROM range($n) r(i)""",
        {"id": job_id, "n": n_tasks},
    )
    con.execute(
        """INSERT INTO task_tags
           SELECT job_id, task, 'subset', json_extract_string(tags, '$.subset') FROM tasks WHERE job_id = $id
           UNION ALL
           SELECT job_id, task, 'difficulty', json_extract_string(tags, '$.difficulty') FROM tasks WHERE job_id = $id""",
        {"id": job_id},
    )
    # Per task a latent difficulty p; each attempt passes with probability p (hash-based, so
    # deterministic). 3% of attempts fail without reward, 1% are still running.
    con.execute(
        """INSERT INTO attempt_rows (job_id, task, attempt, trial_id, status, exit_code, error, reward,
               input_tokens, output_tokens, turns, started_at, finished_at, duration_s, input,
               input_is_chat, output, reference, artifacts, n_trials, source_place)
           SELECT $id, 'task-' || lpad(i::VARCHAR, 7, '0'), a::INTEGER, 'tr_' || i || '_' || a,
               CASE WHEN u < 0.01 THEN 'running' WHEN u < 0.04 THEN 'failed' ELSE 'completed' END,
               CASE WHEN u < 0.01 THEN NULL WHEN u < 0.04 THEN 1 ELSE 0 END,
               CASE WHEN u >= 0.01 AND u < 0.04 THEN 'agent exited with code 1 (timeout after ' || (i % 300) || ' s)' END,
               CASE WHEN u < 0.04 THEN NULL WHEN v < p THEN 1.0 ELSE 0.0 END,
               500 + (i * 7 + a * 13) % 20000, 50 + (i * 11 + a * 3) % 3000, 1 + (i + a) % 40,
               TIMESTAMPTZ '2026-11-01 00:00:00+00' + to_seconds(i % 3600),
               TIMESTAMPTZ '2026-11-01 00:00:00+00' + to_seconds(i % 3600 + 5 + (i * a) % 900),
               5 + ((i * a) % 900)::DOUBLE,
               'Solve problem number ' || i || ' of subset ' || ['math','code','web','shell','data'][1 + i % 5] || '. Show your work.',
               false,
               CASE WHEN u < 0.01 THEN NULL ELSE 'The answer is ' || ((i * 31 + a) % 1000) || '.' END,
               'The answer is ' || ((i * 31) % 1000) || '.', '[]'::JSON, 1, 'generated'
           FROM (SELECT i, a, hash(i, a, 'u') % 10000 / 10000.0 AS u,
                        hash(i, a, 'v') % 10000 / 10000.0 AS v,
                        (hash(i, 'p') % 1000) / 1000.0 AS p
                 FROM range($n) r(i), range(1, $k + 1) s(a))""",
        {"id": job_id, "n": n_tasks, "k": k},
    )
    con.execute("COMMIT")
    return ws.job(job_id)


def _time(fn: Callable[[], Any], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def run(n_attempts: int = 1_000_000, repeats: int = 5) -> list[dict[str, Any]]:
    """Generate a job of ``n_attempts`` attempts and time panel interactions.

    Returns one dict per interaction: ``interaction``, ``n_attempts``, ``median_ms``,
    ``min_ms``, ``max_ms``, ``repeats``.
    """
    ws = enb.open()
    t0 = time.perf_counter()
    job = generate_job(ws, n_attempts)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    panel = enb.panel(job)
    build_s = time.perf_counter() - t0
    cases = panel.cases
    overview = panel.overview
    results: list[dict[str, Any]] = []

    def record(name: str, times: list[float]) -> None:
        results.append(
            {
                "interaction": name,
                "n_attempts": n_attempts,
                "median_ms": statistics.median(times),
                "min_ms": min(times),
                "max_ms": max(times),
                "repeats": len(times),
            }
        )

    # page changes: next, then back to the first page between runs
    def next_page() -> None:
        cases.next_page.click()

    record("cases: next page (attempt view)", _time(next_page, repeats))

    def jump_far() -> None:
        cases.go_to_page(cases.page.pages - 2)

    record("cases: jump to last pages (OFFSET ~1M)", _time(jump_far, repeats))

    statuses = ["failed", "completed"]
    i = [0]

    def filter_status() -> None:
        cases.status.value = statuses[0] if cases.status.value == statuses[1] else statuses[1]

    record("cases: status filter change", _time(filter_status, repeats))
    cases.status.value = cases.ALL

    subsets = ["math", "code"]

    def filter_subset() -> None:
        cases.subset.value = subsets[0] if cases.subset.value == subsets[1] else subsets[1]

    record("cases: subset filter change", _time(filter_subset, repeats))
    cases.subset.value = cases.ALL

    words = ["timeout", "answer is 42"]

    def search() -> None:
        cases.search.value = words[0] if cases.search.value == words[1] else words[1]

    record("cases: text search (substring)", _time(search, repeats))
    cases.search.value = ""

    sorts = [("reward", True), ("tokens", False)]

    def sort() -> None:
        i[0] += 1
        col, desc = sorts[i[0] % 2]
        cases.sort_by.value = col
        cases.descending.value = desc

    record("cases: sort change", _time(sort, repeats))
    cases.sort_by.value = cases.DEFAULT_SORT

    def reward_range() -> None:
        i[0] += 1
        cases.value_range.value = (0.5, 1.0) if i[0] % 2 else (0.0, 0.5)

    record("cases: reward range change", _time(reward_range, repeats))

    def to_task_view() -> None:
        cases.view.value = "task"

    record("cases: switch to per-task view (builds per-task table once)", _time(to_task_view, 1))
    record("cases: next page (task view)", _time(next_page, repeats))

    policies = ["failure", "unknown"]

    def policy() -> None:  # always a real change
        overview.policy.value = policies[0] if overview.policy.value == policies[1] else policies[1]

    def policy_fresh() -> None:
        overview._cache.clear()  # as the first time each policy is chosen
        policy()

    record(
        "overview: policy change, first time (cards, groups, curve)", _time(policy_fresh, repeats)
    )
    record("overview: policy change, seen before (cached)", _time(policy, repeats))

    def task_view_policy() -> None:
        current = cases.query.policy
        cases.policy_changed(policies[0] if current == policies[1] else policies[1], None)

    record("cases: policy change (task view, cached)", _time(task_view_policy, repeats))

    # where the Overview's policy change spends its time (library calls it wires)
    for name, fn in (
        ("  └ job.summary(policy)", lambda: job.summary(policy="failure")),
        ("  └ job.groups(by='subset')", lambda: job.groups(by="subset", policy="failure")),
        ("  └ job.groups(by='dimension')", lambda: job.groups(by="dimension", policy="failure")),
        ("  └ job.curve(policy)", lambda: job.curve(policy="failure")),
    ):
        record(name, _time(fn, max(1, repeats // 2)))

    results.insert(
        0,
        {
            "interaction": f"setup: generate job ({gen_s:.1f} s), open panel",
            "n_attempts": n_attempts,
            "median_ms": build_s * 1000,
            "min_ms": build_s * 1000,
            "max_ms": build_s * 1000,
            "repeats": 1,
        },
    )
    ws.close()
    return results


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| interaction | attempts | median ms | min ms | max ms | runs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['interaction']} | {r['n_attempts']:,} | {r['median_ms']:.0f} | "
            f"{r['min_ms']:.0f} | {r['max_ms']:.0f} | {r['repeats']} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Print the interactions' table (nothing is written: see the module docstring)."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    results = run(n, repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Panel latency: generated job of {n:,} attempts (k=4), {repeats} runs; "
        f"{platform.machine()}, Python {platform.python_version()}, "
        f"DuckDB {__import__('duckdb').__version__}, load average {load:.1f}. "
        "Target: each interaction under 300 ms median.\n"
    )
    print(markdown(results))


if __name__ == "__main__":
    main()
