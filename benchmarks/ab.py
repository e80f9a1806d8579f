"""A/B timing of two source trees in the same run, alternating, each run in a fresh process.

``python -m benchmarks.ab <other-tree> [--rounds 3]``: ``<other-tree>`` is a checkout of
another commit (``git worktree add /tmp/old <commit>``); this tree is the other side.
Three measurements on the 1M-attempt Parquet of ``benchmarks/data/1M`` (``python -m
benchmarks run --sizes 1M`` writes it) and on a synthetic 1M-attempt job:

* ``ingest``: ``ws.load`` of the Parquet into a fresh workspace file (stage 1's table ingest);
* ``metrics``: summary + curve at four thresholds, each cold (stage 2's work);
* ``task_view``: the panel's per-task table of 250,000 tasks (stage 5's "switch to the
  per-task view"), its minimum over five builds.

Alternating A and B in one run is what makes a comparison fair on a busy machine: both
sides see the same load. Reported: each side's minimum per measurement, and B/A.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, os, sys, tempfile, time
root, what = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
import envloop_nb as enb
sys.path.insert(0, sys.argv[3])
from benchmarks.runner import TABLE_MAPPING
from benchmarks.bench_panel import generate_job
src = os.path.join(sys.argv[3], "benchmarks", "data", "1M", "attempts.parquet")
kw = dict(format="table", mapping=dict(TABLE_MAPPING), k=32, job_id="j")
if what == "ingest":
    ws = enb.open(os.path.join(tempfile.mkdtemp(), "w.duckdb"))
    t = time.perf_counter(); ws.load(src, **kw); out = time.perf_counter() - t
elif what == "metrics":
    ws = enb.open(); job = ws.load(src, **kw); ts = []
    for thr in (None, 0.5, 0.75, 0.9):
        t = time.perf_counter(); job.summary(threshold=thr); job.curve(threshold=thr)
        ts.append(time.perf_counter() - t)
    out = min(ts)
else:
    ws = enb.open(); p = generate_job(ws, 1_000_000).panel(); ts = []
    for _ in range(5):
        p.cases.source._task_tables.clear()
        t = time.perf_counter(); p.cases.source.task_table("unknown", None)
        ts.append(time.perf_counter() - t)
    out = min(ts[1:])
print(json.dumps({"seconds": out}))
"""


def _run(tree: Path, what: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tree), what, str(HERE)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("other", type=Path, help="a checkout of the commit to compare with (A)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {}
    for what in ("ingest", "metrics", "task_view"):
        sides: dict[str, list[float]] = {"A": [], "B": []}
        for _ in range(args.rounds):
            sides["A"].append(_run(args.other.resolve(), what))
            sides["B"].append(_run(HERE, what))
        results[what] = sides
        a, b = min(sides["A"]), min(sides["B"])
        print(f"{what:10s} A {a:7.3f} s   B {b:7.3f} s   B/A {b / a:5.2f}", flush=True)


if __name__ == "__main__":
    main()
