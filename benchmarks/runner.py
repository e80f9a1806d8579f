"""Time each benchmark stage in fresh subprocesses and write ``benchmarks/RESULTS.md``.

``python -m benchmarks run [--sizes 100k,1M,10M] [--repeats 5] [--quick]``

Every repeat of every stage runs in a fresh ``python -m benchmarks stage ...`` child:
imports and setup (opening a workspace, generating missing data) are not timed; the
child then resets its peak-RSS mark (``/proc/self/clear_refs``), runs the timed body,
and reports wall time and the peak RSS of the timed body (``VmHWM``; the whole-process
``ru_maxrss`` as a fallback). The first repeat also dumps the numbers it computed so
that the parent can check that envloop_nb and the baselines agree before it reports
any time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import baselines as bl
from .generate import DATA, THRESHOLD, Shape, ensure, shape

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WS_DIR = DATA / "ws"
CHECK_DIR = DATA / "_check"
OUT_DIR = DATA / "_out"
KMAX = 32


# ======================================================================================
# child side: one stage, one repeat
# ======================================================================================


def _proc_status(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def ws_path(s: Shape, via: str) -> Path:
    return WS_DIR / f"{s.name}-{via}.duckdb"


def table_loader_available() -> bool:
    return (ROOT / "envloop_nb" / "_loaders" / "table.py").exists()


def stage_workspace(s: Shape) -> Path:
    """The workspace file stage 2-4 open: the Parquet-ingested one when there is one."""
    for via in ("table", "jsonl"):
        if ws_path(s, via).exists():
            return ws_path(s, via)
    raise SystemExit(f"no workspace for {s.name}: run the ingest stage first")


def _open_job(s: Shape) -> Any:
    import envloop_nb as enb

    ws = enb.open(stage_workspace(s))
    return ws, ws.job(s.job_id)


def _fresh_ws(s: Shape, via: str) -> Any:
    import envloop_nb as enb

    path = ws_path(s, via)
    path.parent.mkdir(parents=True, exist_ok=True)
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)
    return enb.open(path)


# Every column of the generated files, mapped explicitly (the loader's defaults would
# pick the same ones by name).
TABLE_MAPPING: dict[str, Any] = {
    **{
        c: c
        for c in (
            "task", "attempt", "trial_id", "status", "exit_code", "error", "reward",
            "input_tokens", "output_tokens", "turns", "cost_usd", "started_at",
            "finished_at", "input", "output", "reference",
        )
    },
    "tags": ["subset", "difficulty"],
}  # fmt: skip


def _table_kwargs(s: Shape) -> dict[str, Any]:
    return {
        "format": "table",
        "mapping": dict(TABLE_MAPPING),
        "k": s.k,
        "job_id": s.job_id,
    }


Body = Callable[[], Any]


def pass_rate_rules() -> Any:
    """The benchmark's four buckets on the pass rate (stage 3, stage 9)."""
    from envloop_nb._buckets.rules import Bucket, BucketRules

    return BucketRules(
        [
            Bucket("never", 0, 0.0001),
            Bucket("hard", 0.0001, 0.25),
            Bucket("medium", 0.25, 0.75),
            Bucket("easy", 0.75, 1.0001),
        ],
        metric="pass_rate",
    )


def _setup(
    name: str, s: Shape | None, dump: Path | None, size: str = ""
) -> tuple[Body, int, Callable[[Any], Any]]:
    """(timed body, rows processed, after(result) -> extra facts for the report)."""
    if name.startswith("steps_"):  # issue 35: sizes are samples, attempts or steps
        from . import bench_steps

        return bench_steps.setup(name, size, WS_DIR)
    if name.startswith("inspect_"):  # stage 6: sizes are "<samples>x<epochs>"
        from . import bench_inspect

        return bench_inspect.setup(name, size, WS_DIR)
    assert s is not None
    if name.startswith("spark_"):  # stage 7: ws.load_spark on Spark's local mode
        from . import bench_spark

        return bench_spark.setup(name, s, WS_DIR)
    if name.startswith("scale_"):  # stage 8: workspace panel of 50 jobs, HTML report
        from . import bench_scale

        return bench_scale.setup(name, s, WS_DIR)
    if name.startswith("front_"):  # stage 9: the front door against DuckDB floors
        from . import bench_front

        return bench_front.setup(name, s, WS_DIR)
    if name == "ingest_jsonl":
        ensure(s, ("jsonl",))
        ws = _fresh_ws(s, "jsonl")

        def after(job: Any) -> Any:
            d = job.summary().to_dict()
            dispatched = ws.con.execute(
                "SELECT count(*) FROM attempts WHERE job_id = ?", [job.id]
            ).fetchone()[0]
            ws.close()
            return {"scored": d["scored"], "total": d["total"], "dispatched": dispatched}

        return (lambda: ws.load(s.jsonl, job_id=s.job_id)), s.slots, after

    if name in ("ingest_table", "ingest_table_hive", "ingest_table_1gb"):
        src = s.hive if name == "ingest_table_hive" else s.parquet
        ensure(s, ("hive",) if name == "ingest_table_hive" else ("parquet",))
        if not table_loader_available():
            raise SystemExit("SKIP: envloop_nb/_loaders/tables/job.py does not exist yet")
        via = {"ingest_table": "table", "ingest_table_hive": "hive"}.get(name, "table1gb")
        ws = _fresh_ws(s, via)
        if name == "ingest_table_1gb":
            ws.con.execute("SET memory_limit = '1GB'")
        kwargs = _table_kwargs(s)

        def after_t(job: Any) -> Any:
            d = job.summary().to_dict()
            dispatched = ws.con.execute(
                "SELECT count(*) FROM attempts WHERE job_id = ?", [job.id]
            ).fetchone()[0]
            ws.close()
            if via != "table":
                ws_path(s, via).unlink(missing_ok=True)
            return {"scored": d["scored"], "total": d["total"], "dispatched": dispatched}

        return (lambda: ws.load(str(src), **kwargs)), s.slots, after_t

    if name.startswith("stage2_"):
        impl = name.removeprefix("stage2_")

        def keep(result: Any) -> Any:
            if dump is None:
                return {}
            if impl == "envloop":
                summary, per_task, curve = result
                extra = {"summary": str(summary)}
            else:
                per_task, curve = result
                extra = {}
            pt, cv = bl.canonical(per_task, curve)
            dump.mkdir(parents=True, exist_ok=True)
            pt.to_parquet(dump / f"{impl}-per_task.parquet")
            cv.to_parquet(dump / f"{impl}-curve.parquet")
            return extra

        if impl == "envloop":
            ws, job = _open_job(s)
            return (lambda: bl.envloop(job, THRESHOLD, KMAX)), s.slots, keep
        ensure(s, ("parquet",))
        fn = {
            "floor": bl.floor,
            "pandas": bl.pandas_baseline,
            "polars": bl.polars_baseline,
            "pandas_apply": bl.pandas_apply_baseline,
        }[impl]
        return (lambda: fn(s.parquet, THRESHOLD, KMAX)), s.slots, keep

    if name == "buckets":
        ws, job = _open_job(s)
        frame = job.samples(ks=[1, 8, 32], threshold=THRESHOLD)
        rules = pass_rate_rules()

        def body() -> Any:
            out = rules.apply(frame)
            return out, rules.summary(frame)

        def counts(result: Any) -> Any:
            summary = result[1]
            return {
                "summary": summary.to_dict(orient="list")
                if hasattr(summary, "to_dict")
                else str(summary)
            }

        return body, len(frame), counts

    if name in ("export_xlsx", "export_dataset"):
        ws, job = _open_job(s)
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        rows = int(
            ws.con.execute("SELECT count(*) FROM attempts WHERE job_id = ?", [job.id]).fetchone()[0]
        )
        if name == "export_xlsx":
            target = OUT_DIR / f"{s.name}.xlsx"
            target.unlink(missing_ok=True)

            def size(_r: Any) -> Any:
                return {"bytes": target.stat().st_size}

            return (lambda: job.export_xlsx(target)), rows, size
        folder = OUT_DIR / f"dataset-{s.name}"
        shutil.rmtree(folder, ignore_errors=True)
        tasks = int(
            ws.con.execute("SELECT count(*) FROM tasks WHERE job_id = ?", [job.id]).fetchone()[0]
        )

        def written(result: Any) -> Any:
            return {"row_count": getattr(result, "row_count", None)}

        return (
            (
                lambda: job.export_dataset(
                    folder, name="bench", version="1", format="jsonl", overwrite=True
                )
            ),
            tasks,
            written,
        )

    if name == "panel":
        sys.path.insert(0, str(HERE))
        import bench_panel  # type: ignore[import-not-found]

        return (
            (lambda: bench_panel.run(n_attempts=s.slots, repeats=5)),
            s.slots,
            (lambda r: {"interactions": r}),
        )

    raise SystemExit(f"unknown stage {name!r}")


def _compile_package() -> None:
    """Write envloop_nb's bytecode if it is missing or stale (untimed), as pip does when it
    installs a package: every library a stage imports was compiled at its install, and
    an editable install on a machine with ``PYTHONDONTWRITEBYTECODE`` set (this one)
    would otherwise compile our modules from source in every timed process (25-40 ms of
    a cold question, 2026-12-04). Python reads the files whatever that variable says."""
    import compileall

    compileall.compile_dir(str(ROOT / "envloop_nb"), quiet=1)


def stage_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks stage")
    parser.add_argument("name")
    parser.add_argument("--size", required=True)
    parser.add_argument("--dump", default="")
    args = parser.parse_args(argv)
    s = None if args.name.startswith(("inspect_", "steps_")) else shape(args.size)
    dump = Path(args.dump) if args.dump else None
    _compile_package()
    body, rows, after = _setup(args.name, s, dump, args.size)
    import gc
    import resource

    gc.collect()
    base = _proc_status("VmRSS")
    exact = _reset_peak()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 = time.process_time()
    t0 = time.perf_counter()
    result = body()
    seconds = time.perf_counter() - t0
    cpu_seconds = time.process_time() - c0
    # worker processes the body started and reaped (e.g. the Harbor loader's readers):
    # their CPU apart, and the largest one's peak RSS (it counts the pages it shares
    # with this process after a fork)
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_children = done.ru_utime + done.ru_stime - kids.ru_utime - kids.ru_stime
    peak = _proc_status("VmHWM") if exact else None
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    extra = after(result)
    out = {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "cpu_children_seconds": cpu_children,
        "rss_peak_children": done.ru_maxrss * 1024 if cpu_children else None,
        "rows": rows,
        "rss_setup": base,
        "rss_peak": peak,
        "peak_exact": exact,
        "extra": extra,
    }
    print("RESULT " + json.dumps(out, default=str))


# ======================================================================================
# parent side
# ======================================================================================


def _child(name: str, size: str, dump: Path | None, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks", "stage", name, "--size", size]
    if dump is not None:
        cmd += ["--dump", str(dump)]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": " / ".join(tail) or f"exit code {proc.returncode}"}


def measure(
    name: str, size: str, repeats: int, *, dump: Path | None = None, timeout: float = 900
) -> dict[str, Any]:
    """Run a stage ``repeats`` times; the first repeat dumps its numbers to ``dump``."""
    runs = []
    for i in range(repeats):
        r = _child(name, size, dump if i == 0 else None, timeout)
        if "error" in r:
            print(f"  {name} {size}: {r['error']}", flush=True)
            return {"stage": name, "size": size, "error": r["error"], "runs": runs}
        runs.append(r)
        print(f"  {name} {size} #{i + 1}: {r['seconds']:.3f} s", flush=True)
    times = sorted(r["seconds"] for r in runs)
    return {
        "stage": name,
        "size": size,
        "repeats": len(runs),
        "median": statistics.median(times),
        "min": times[0],
        "max": times[-1],
        "rows": runs[0]["rows"],
        "rss_peak": max(r["rss_peak"] for r in runs),
        "rss_setup": max(r["rss_setup"] or 0 for r in runs),
        "peak_exact": all(r["peak_exact"] for r in runs),
        "extra": runs[0]["extra"],
        "runs": runs,
    }


def _load_check(folder: Path, impl: str) -> tuple[Any, Any]:
    import pandas as pd

    return (
        pd.read_parquet(folder / f"{impl}-per_task.parquet"),
        pd.read_parquet(folder / f"{impl}-curve.parquet"),
    )


def _parquet_counts(s: Shape) -> dict[str, int]:
    import duckdb

    n, scored = duckdb.sql(
        f"SELECT count(*), count(reward) FROM read_parquet('{s.parquet}')"
    ).fetchone()  # type: ignore[misc]
    return {"dispatched": int(n), "scored": int(scored), "total": s.slots}


def machine() -> dict[str, Any]:
    import duckdb
    import numpy
    import pandas
    import polars
    import pyarrow

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = "?"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "pandas": pandas.__version__,
        "polars": polars.__version__,
        "pyarrow": pyarrow.__version__,
        "numpy": numpy.__version__,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
    }


def save(report: dict[str, Any], out: Path) -> None:
    """Write ``data/results.json`` and the Markdown (after every stage: partial runs count)."""
    from .report import write_markdown

    DATA.mkdir(parents=True, exist_ok=True)
    results_json(out).write_text(json.dumps(report, indent=1, default=str))
    out.write_text(write_markdown(report))


def results_json(out: Path) -> Path:
    """``data/results.json`` for ``RESULTS.md``, ``data/results-quick.json`` for a quick run."""
    return DATA / f"{out.stem.lower()}.json"


def run(
    sizes: list[str],
    repeats: int,
    *,
    pandas_repeats: int,
    xlsx_sizes: list[str],
    panel_size: str | None,
    stages: set[str],
    jsonl_sizes: tuple[str, ...] = ("100k", "1M"),
    dataset_sizes: tuple[str, ...] = ("10kt", "50kt", "100kt"),
    inspect_sizes: tuple[str, ...] = ("100kx5",),
    inspect_df_repeats: int = 1,
    spark_sizes: tuple[str, ...] = ("10M",),
    spark_repeats: int = 1,
    scale_sizes: tuple[str, ...] = ("1M",),
    front_sizes: tuple[str, ...] = ("1M", "10M", "100M"),
    out: Path = HERE / "RESULTS.md",
    merge: bool = False,
) -> dict[str, Any]:
    """Run the stages in the order that gets the headline numbers first.

    Order: Parquet ingest (it builds the workspaces), stage 2 with the baselines, stage
    3, stage 5, stage 4, then the other ingests (JSONL, hive folder, memory-limited).
    """
    report: dict[str, Any] = {
        "machine": machine(),
        "load_start": os.getloadavg(),
        "sizes": sizes,
        "results": [],
        "checks": [],
        "notes": [],
    }
    if merge and results_json(out).exists():
        # add to (or replace stages of) an earlier run instead of starting afresh
        old = json.loads(results_json(out).read_text())
        for key in ("results", "checks", "notes"):
            report[key] = old[key]
        first = old["machine"]["date"].split(" – ")[0]
        report["machine"]["date"] = first + " – " + report["machine"]["date"]
        report["load_start"] = old["load_start"]
        report["merged_minutes"] = old.get("wall_minutes", 0)
    results: list[dict[str, Any]] = report["results"]
    t_start = time.perf_counter()

    def add(r: dict[str, Any]) -> dict[str, Any]:
        results[:] = [
            x
            for x in results
            if (x["stage"], x["size"]) != (r["stage"], r["size"])
            and not (x["stage"] == r["stage"] and "error" in x)  # superseded failures
        ]
        results.append(r)
        report["load_end"] = os.getloadavg()
        report["wall_minutes"] = (
            report.get("merged_minutes", 0) + (time.perf_counter() - t_start) / 60
        )
        save(report, out)
        return r

    def ingest_repeats(s: Shape) -> int:
        return min(repeats, 2) if s.slots >= 10_000_000 else repeats

    # -- data -------------------------------------------------------------------------
    for size in sorted(
        set(sizes) | set(xlsx_sizes) | set(dataset_sizes) if stages & set("12345") else (),
        key=lambda n: shape(n).slots,
    ):
        s = shape(size)
        formats = ("parquet", "hive", "jsonl") if size in jsonl_sizes else ("parquet", "hive")
        ensure(s, formats)
    have_table = table_loader_available()
    if not have_table:
        report["notes"].append(
            "envloop_nb/_loaders/tables/job.py did not exist at run time: Parquet ingest not "
            "measured; stages 2-4 ran on workspaces ingested from EnvLoop JSONL.gz."
        )
    # -- stage 1a: Parquet ingest (builds the workspaces of stages 2-4) -----------------
    if "1" in stages and have_table:
        for size in sizes:
            s = shape(size)
            r = add(measure("ingest_table", size, ingest_repeats(s), timeout=1800))
            report["checks"].append(_check_ingest(s, r))
    for size in (
        set(sizes) | set(xlsx_sizes) | set(dataset_sizes) if stages & {"2", "3", "4"} else ()
    ):
        s = shape(size)
        if not any(ws_path(s, via).exists() for via in ("table", "jsonl")):
            r = measure("ingest_table" if have_table else "ingest_jsonl", size, 1, timeout=3600)
            if "error" in r:
                report["notes"].append(f"could not build the {size} workspace: {r['error']}")
    # -- stage 2: summary + per-task + curve, and the baselines -----------------------
    if "2" in stages:
        for size in sizes:
            folder = CHECK_DIR / size
            shutil.rmtree(folder, ignore_errors=True)
            by_impl = {}
            for impl in ("envloop", "floor", "polars", "pandas"):
                n = pandas_repeats if impl == "pandas" else repeats
                by_impl[impl] = add(measure(f"stage2_{impl}", size, n, dump=folder, timeout=1800))
            if "error" not in by_impl["envloop"]:
                ref = _load_check(folder, "envloop")
                for impl in ("floor", "polars", "pandas"):
                    if "error" in by_impl[impl]:
                        continue
                    problem = bl.disagreement(ref, _load_check(folder, impl))
                    report["checks"].append(
                        {"what": f"stage 2 {size}: envloop_nb vs {impl}", "problem": problem}
                    )
                    by_impl[impl]["agrees"] = problem is None
            save(report, out)
    # -- stage 2b: pandas with a row-wise apply (the slow notebook idiom), one run -------
    if stages & {"2", "2b"}:
        for size in sizes:
            if not (CHECK_DIR / size / "envloop-curve.parquet").exists():
                continue
            r = add(measure("stage2_pandas_apply", size, 1, dump=CHECK_DIR / size, timeout=1800))
            if "error" not in r:
                problem = bl.disagreement(
                    _load_check(CHECK_DIR / size, "envloop"),
                    _load_check(CHECK_DIR / size, "pandas_apply"),
                )
                report["checks"].append(
                    {"what": f"stage 2 {size}: envloop_nb vs pandas_apply", "problem": problem}
                )
                r["agrees"] = problem is None
                save(report, out)
    # -- stage 3: buckets --------------------------------------------------------------
    if "3" in stages:
        for size in sizes:
            add(measure("buckets", size, repeats))
    # -- stage 5: panel ------------------------------------------------------------------
    if "5" in stages and panel_size:
        if (HERE / "bench_panel.py").exists():
            add(measure("panel", panel_size, 1, timeout=1800))
        else:
            report["notes"].append("benchmarks/bench_panel.py did not exist at run time.")
    # -- stage 4: exports ----------------------------------------------------------------
    if "4" in stages:
        for size in xlsx_sizes:
            add(measure("export_xlsx", size, max(1, min(repeats, 3)), timeout=1800))
        for size in dataset_sizes:
            add(measure("export_dataset", size, max(1, min(repeats, 3)), timeout=1800))
    # -- stage 6: an Inspect AI log, envloop_nb vs inspect_ai's samples_df ---------------
    if "6" in stages:
        from . import bench_inspect

        for size in inspect_sizes:
            try:
                bench_inspect.ensure_log(size)
            except ImportError as err:
                report["notes"].append(f"stage 6 not run: inspect_ai is not installed ({err})")
                break
            by_stage = {}
            for name in bench_inspect.STAGES:
                n = inspect_df_repeats if "samples_df" in name else repeats
                by_stage[name] = r = measure(name, size, n, timeout=3600)
                r["log"] = bench_inspect.log_facts(size)
            report["checks"].extend(bench_inspect.check(size, by_stage))
            for r in by_stage.values():
                add(r)
    # -- stage 7: ws.load_spark on Spark's local mode vs its floors ---------------------
    if "7" in stages:
        from . import bench_spark

        for size in spark_sizes:
            bench_spark.ensure_files(shape(size))
            by_stage = {}
            for name in bench_spark.STAGES:
                by_stage[name] = measure(name, size, spark_repeats, timeout=3600)
            report["checks"].extend(bench_spark.check(size, by_stage))
            for r in by_stage.values():
                add(r)
    # -- stage 8: a 1M-attempt job among 50: workspace panel, HTML report ---------------
    if "8" in stages:
        from . import bench_scale

        for size in scale_sizes:
            s = shape(size)
            built = bench_scale.ensure_workspace(s, WS_DIR)
            by_stage = {}
            for name in bench_scale.STAGES:
                by_stage[name] = r = measure(name, size, repeats, timeout=1800)
                r["workspace"] = built
            report["checks"].extend(bench_scale.check(s, by_stage))
            for r in by_stage.values():
                add(r)
    # -- stage 9: the front door (load, reopen, one question) against DuckDB floors -----
    if "9" in stages:
        from . import bench_front

        for size in front_sizes:
            s = shape(size)
            ensure(s, ("parquet",))
            by_stage = {}
            for name in bench_front.STAGES:
                if name.startswith("front_jsonl") and s.slots > bench_front.JSONL_MAX_SLOTS:
                    continue
                n = 1 if s.slots > 20_000_000 or name.endswith("_answer") else repeats
                by_stage[name] = measure(name, size, n, timeout=3600)
            report["checks"].extend(bench_front.check(s, by_stage))
            for r in by_stage.values():
                add(r)
    # -- stage 1b: the other ingests -----------------------------------------------------
    if "1" in stages:
        for size in sizes:
            s = shape(size)
            if size in jsonl_sizes or not have_table:
                ensure(s, ("jsonl",))
                r = add(measure("ingest_jsonl", size, ingest_repeats(s), timeout=1800))
                report["checks"].append(_check_ingest(s, r))
        for size in sizes:
            s = shape(size)
            if have_table and s.slots >= 1_000_000:
                add(measure("ingest_table_hive", size, 1, timeout=1800))
            if have_table and s.slots >= 10_000_000:
                add(measure("ingest_table_1gb", size, 1, timeout=1800))
    report["load_end"] = os.getloadavg()
    report["wall_minutes"] = report.get("merged_minutes", 0) + (time.perf_counter() - t_start) / 60
    return report


def _check_ingest(s: Shape, r: dict[str, Any]) -> dict[str, Any]:
    what = f"stage 1 {s.name}: {r['stage']} counts vs the Parquet file"
    if "error" in r:
        return {"what": what, "problem": "not run: " + r["error"]}
    want = _parquet_counts(s)
    got = {k: int(r["extra"][k]) for k in want}
    problem = None if got == want else f"workspace {got} vs Parquet {want}"
    r["agrees"] = problem is None
    return {"what": what, "problem": problem}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks run")
    parser.add_argument("--sizes", default="1M,10M,1Mx1000", help="sizes for stages 1-3")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pandas-repeats", type=int, default=3)
    parser.add_argument("--jsonl-sizes", default="100k,1M", help="sizes of the JSONL ingest")
    parser.add_argument("--xlsx-sizes", default="10k,50k,100k")
    parser.add_argument("--dataset-sizes", default="10kt,50kt,100kt")
    parser.add_argument(
        "--merge", action="store_true", help="add to / replace stages of the last results.json"
    )
    parser.add_argument("--panel-size", default="1M")
    parser.add_argument(
        "--inspect-sizes", default="100kx5", help="stage 6 log sizes, <samples>x<epochs>"
    )
    parser.add_argument("--inspect-df-repeats", type=int, default=1, help="samples_df runs")
    parser.add_argument("--spark-sizes", default="10M", help="stage 7 sizes")
    parser.add_argument("--spark-repeats", type=int, default=1, help="stage 7 runs per stage")
    parser.add_argument(
        "--scale-sizes", default="1M", help="stage 8: the big job among 50 (panel, HTML)"
    )
    parser.add_argument(
        "--front-sizes", default="1M,10M,100M", help="stage 9: load, reopen, one question"
    )
    parser.add_argument("--stages", default="1,2,3,4,5")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="100k only, 2 repeats; writes benchmarks/data/RESULTS-quick.md",
    )
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats, args.pandas_repeats = "100k", 2, 2
        args.xlsx_sizes, args.panel_size, args.dataset_sizes = "10k,100k", "100k", "10kt"
        args.inspect_sizes = "1kx5"
        args.spark_sizes = "100k"
        args.scale_sizes = "100k"
        args.front_sizes = "100k"
        if args.out == str(HERE / "RESULTS.md"):  # keep the committed results
            args.out = str(DATA / "RESULTS-quick.md")
    report = run(
        args.sizes.split(","),
        args.repeats,
        pandas_repeats=args.pandas_repeats,
        xlsx_sizes=[x for x in args.xlsx_sizes.split(",") if x],
        panel_size=args.panel_size or None,
        stages=set(args.stages.split(",")),
        jsonl_sizes=tuple(x for x in args.jsonl_sizes.split(",") if x),
        dataset_sizes=tuple(x for x in args.dataset_sizes.split(",") if x),
        inspect_sizes=tuple(x for x in args.inspect_sizes.split(",") if x),
        inspect_df_repeats=args.inspect_df_repeats,
        spark_sizes=tuple(x for x in args.spark_sizes.split(",") if x),
        spark_repeats=args.spark_repeats,
        scale_sizes=tuple(x for x in args.scale_sizes.split(",") if x),
        front_sizes=tuple(x for x in args.front_sizes.split(",") if x),
        out=Path(args.out),
        merge=args.merge,
    )
    save(report, Path(args.out))
    print(f"wrote {args.out}")
    latest = {c["what"]: c for c in report["checks"]}  # a merged re-run supersedes
    bad = [c for c in latest.values() if c["problem"]]
    if bad:
        for c in bad:
            print(f"DISAGREEMENT: {c['what']}: {c['problem']}", file=sys.stderr)
        raise SystemExit(1)
