"""A training run at scale: 200 checkpoints × 5,000 tasks × 8 attempts (8M attempts).

Usage (from the project root)::

    .venv/bin/python -m benchmarks.bench_run                 # 200 x 5000 x 8
    .venv/bin/python -m benchmarks.bench_run --steps 20      # a smaller run

One Parquet file per checkpoint, written by DuckDB SQL (every reward a pure function of
``(step, task, attempt)`` through ``hash()``: a per-task solve rate that drifts with the
step, ~1% of slots without a reward), each loaded as a table job with ``step<N>`` in its id.
After the loads, timed one after the other in this process (wall clock): ``ws.run(jobs,
step="name")`` (assemble, the guard over all jobs), ``run.curve()`` with its task
bootstrap (1,000 resamples), ``run.tests(against_baseline=False)`` (the 199 adjacent
pairs, Holm), the same with every step against the first, ``run.task_matrix()`` and
``run.learned()``, and the peak RSS. ``--workspace FILE`` keeps the loaded jobs in a
workspace file and reuses them (the timings are then of a reopened workspace: nothing
memoized yet). The issue's target: curve + adjusted adjacent
tests + matrix < 5 s after load, peak < 2 GB.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import duckdb

import envloop_nb as enb


def write(folder: Path, steps: int, tasks: int, k: int) -> list[Path]:
    con = duckdb.connect()
    paths = []
    for i in range(steps):
        step = i * 1000
        path = folder / f"ckpt_step{step}.parquet"
        u = "((hash({key}) >> 11)::DOUBLE / 9007199254740992.0)"
        rate = f"least(1.0, greatest(0.0, {u.format(key='t.range * 7 + 1')} + {i} * 0.002 - 0.2))"
        con.execute(
            f"""COPY (
                SELECT 'task-' || lpad(t.range::VARCHAR, 5, '0') AS task,
                       a.range::INTEGER AS attempt, 'completed' AS status,
                       CASE WHEN {u.format(key=f"(t.range * 16 + a.range) * 1000 + {i} + 5")} < 0.01
                            THEN NULL
                            ELSE ({u.format(key=f"(t.range * 16 + a.range) * 1000 + {i}")} < {rate})::INTEGER::DOUBLE
                       END AS reward
                FROM range({tasks}) t, range(1, {k + 1}) a)
               TO '{path}' (FORMAT PARQUET)"""
        )
        paths.append(path)
    con.close()
    return paths


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--workspace", help="a workspace file: loaded once, reused after")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        paths = write(folder, args.steps, args.tasks, args.k)
        print(f"write {len(paths)} files: {time.perf_counter() - t0:.1f} s")
        ws = enb.open(args.workspace)
        t0 = time.perf_counter()
        have = set(ws.jobs()["job_id"])
        jobs = [ws.job(p.stem) if p.stem in have else
                ws.load(str(p), format="table", k=args.k, job_id=p.stem, dataset="bench-run",
                        dataset_version="1", dataset_revision="sha256:bench", runner="bench")
                for p in paths]  # fmt: skip
        print(f"load: {time.perf_counter() - t0:.1f} s, peak {peak_mb():.0f} MB")
        timings = {}
        t0 = time.perf_counter()
        run = ws.run(jobs, step="name")
        timings["assemble"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        curve = run.curve()
        timings["curve"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        tests = run.tests(against_baseline=False)
        timings["adjacent tests (Holm)"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        both = run.tests()
        timings["adjacent + baseline tests"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        matrix = run.task_matrix()
        learned = run.learned()
        timings["matrix + learned"] = time.perf_counter() - t1
        for name, seconds in timings.items():
            print(f"{name}: {seconds:.2f} s")
        target = sum(timings[n] for n in ("curve", "adjacent tests (Holm)", "matrix + learned"))
        print(f"curve + adjacent tests + matrix: {target:.2f} s (target < 5 s); with the run's "
              f"assembly {target + timings['assemble']:.2f} s; peak {peak_mb():.0f} MB")  # fmt: skip
        print(f"{len(curve)} curve rows, {len(tests)} + {len(both)} tests, matrix {matrix.shape}, "
              f"{len(learned)} learned")  # fmt: skip
        ws.close()


if __name__ == "__main__":
    main()
