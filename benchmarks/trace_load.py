"""Where a load and its first answer spend their time: every SQL statement, timed.

``python -m benchmarks.trace_load 10M [--copy] [--file] [--min 0.05] [--explain]``

Runs stage 9's *one question* on the generator's Parquet job of that size (``enb.open``,
``ws.load``, ``job.curve`` at the benchmark's threshold) with the workspace connection
wrapped so that each ``execute`` is timed, then prints the phases and every statement
that took at least ``--min`` seconds (its SQL cut to one line). ``--copy`` copies the
attempts (the default reads them in place, ``copy=False``); ``--file`` loads into a new
workspace file instead of an in-memory one (``front_load``'s case); ``--explain`` also
prints DuckDB's ``EXPLAIN ANALYZE`` of the load's one checking pass, run once more
before the load runs it. A profiling aid for FINDINGS.md, not a benchmark: the wrapper
adds a Python call per statement, and one run on a shared machine is noisy.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from .generate import THRESHOLD, Shape, ensure, shape
from .runner import _table_kwargs

#: the statement that makes the load's one checking pass (``count_in_place``)
PASS = "CREATE OR REPLACE TEMP TABLE _tb_tasks AS"


class _Timed:
    """A DuckDB connection whose ``execute`` calls are timed into ``log``."""

    def __init__(self, con: Any, log: list[tuple[float, str]], explain: bool) -> None:
        self._con, self._log, self._explain = con, log, explain

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def cursor(self) -> _Timed:
        return _Timed(self._con.cursor(), self._log, False)

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        if self._explain and sql.lstrip().startswith(PASS):
            self._explain = False
            select = sql.lstrip()[len(PASS) :]
            plan = self._con.execute("EXPLAIN ANALYZE " + select, *args, **kwargs)
            print(plan.fetchall()[0][1])
        t = time.perf_counter()
        out = self._con.execute(sql, *args, **kwargs)
        self._log.append((time.perf_counter() - t, " ".join(str(sql).split())))
        return out


def trace(
    s: Shape, *, copy: bool, file: bool, explain: bool
) -> tuple[dict[str, float], list[tuple[float, str]]]:
    """The phases' seconds and every statement's (seconds, SQL) of one question."""
    import duckdb  # noqa: F401  (the stage's setup imports these, untimed)
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    import envloop_nb as enb

    ensure(s, ("parquet",))
    kwargs = _table_kwargs(s)
    kwargs["copy"] = copy
    log: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory(prefix="enb-trace-") as scratch:  # the file goes too
        path = str(Path(scratch) / "w.duckdb") if file else None
        t0 = time.perf_counter()
        ws = enb.open(path)
        ws.con = _Timed(ws.con, log, explain)  # type: ignore[assignment]
        t1 = time.perf_counter()
        job = ws.load(str(s.parquet), **kwargs)
        t2 = time.perf_counter()
        job.curve(ks=list(range(1, 33)), threshold=THRESHOLD)
        t3 = time.perf_counter()
        ws.close()
    phases = {"open": t1 - t0, "load": t2 - t1, "curve": t3 - t2, "total": t3 - t0}
    return phases, log


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_load")
    parser.add_argument("size")
    parser.add_argument("--copy", action="store_true")
    parser.add_argument("--file", action="store_true")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--min", type=float, default=0.05)
    parser.add_argument("--width", type=int, default=110)
    args = parser.parse_args()
    phases, log = trace(shape(args.size), copy=args.copy, file=args.file, explain=args.explain)
    print(" · ".join(f"{k} {v:.3f} s" for k, v in phases.items()), end="")
    print(f" · {len(log)} statements, {sum(d for d, _ in log):.3f} s in DuckDB")
    for seconds, sql in log:
        if seconds >= args.min:
            print(f"{seconds:7.3f}  {sql[: args.width]}")


if __name__ == "__main__":
    main()
