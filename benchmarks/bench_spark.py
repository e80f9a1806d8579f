"""Stage 7: ``ws.load_spark`` on Spark's local mode vs hand-written floors, same files.

``python -m benchmarks run --merge --stages 7 [--spark-sizes 10M]``

The data: the generator's job (``benchmarks/generate.py``, e.g. 10M = 312,500 tasks × 32
attempts) rewritten as a folder of several Parquet files (``<size>/attempts_files/``,
``FILES`` files split by task range; ``subset`` and ``difficulty`` are plain columns,
the tags), cached under ``benchmarks/data/``.

Stages, each run in a fresh Python process (``runner.py``), cold and end to end (the
Spark session, i.e. the JVM, is started inside the timed body; imports are setup):

- ``spark_envloop``: session start, ``ws.load_spark(spark.read.parquet(folder),
  job_id=..., k=32)`` into a fresh file workspace, ``job.summary()``, ``job.curve()``:
  the public API, with time spans around the calls.
- ``spark_phases``: the same work split into phases by calling the private functions
  of ``envloop_nb/_loaders/tables/spark.py`` in the order ``reduce_spark`` calls them: session
  start; ``read.parquet`` (listing, schema); the checks/scales query (``_job_stats``);
  the per-task query (materialized with ``persist()`` + ``count()``, so that the
  ``toArrow`` transfer that follows is timed apart: one deviation from
  ``reduce_spark``, which pipelines the two); ``toArrow``; the workspace write
  (``_job`` + ``load_sources``); summary + curve. No timing code in the library.
- ``spark_floor``: the Spark SQL floor: the same per-task counts written by hand
  (``GROUP BY task`` with ``count``/``count_if``/``sum``/``min``/``max``, no
  attempt-of-record window, no checks) on the same files, ``toArrow``.
- ``spark_duckdb``: the DuckDB path: ``ws.load(folder, format="table", k=32)`` into a
  fresh file workspace + ``job.summary()`` + ``job.curve()``.

Peak RSS: the Python process as everywhere in the harness; the JVM's (``VmHWM`` of the
``spark-submit`` child, since it started) and its CPU time in ``extra``. The summary and
the curve of ``spark_envloop`` / ``spark_phases`` must equal ``spark_duckdb``'s (checked
by the runner; the floor's totals are checked against the summary).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from .generate import Shape, ensure

FILES = 8
STAGES = ("spark_envloop", "spark_phases", "spark_floor", "spark_duckdb")
CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "2g",
}
MASTER = "local[2]"


def folder(s: Shape) -> Path:
    return s.folder / "attempts_files"


def ensure_files(s: Shape) -> Path:
    """``FILES`` Parquet files of the job's attempts, split by task range (cached)."""
    out = folder(s)
    done = out / "_done"
    if done.exists():
        return out
    import duckdb

    ensure(s, ("parquet",))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    con.execute("SET enable_progress_bar = false")
    per = -(-s.tasks // FILES)
    for i in range(FILES):
        con.execute(
            f"""COPY (SELECT * FROM read_parquet('{s.parquet}')
                      WHERE CAST(substr(task, 6) AS INTEGER) >= {i * per}
                        AND CAST(substr(task, 6) AS INTEGER) < {(i + 1) * per})
                TO '{out / f"part-{i:03d}.parquet"}'
                (FORMAT PARQUET, COMPRESSION zstd, ROW_GROUP_SIZE 122880)"""
        )
    con.close()
    done.write_text("")
    return out


# ======================================================================================
# the JVM
# ======================================================================================


def _session() -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(MASTER).appName("envloop_nb benchmark")
    for key, value in CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _jvm_pids() -> list[int]:
    """The Java processes below this one (the spark-submit launcher execs java)."""
    me, found = os.getpid(), []
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(p.name))
    todo = list(children.get(me, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe.endswith("/java"):
            found.append(pid)
    return found


def jvm_facts() -> dict[str, Any]:
    """Peak RSS (``VmHWM``, since the JVM started) and CPU seconds of the JVM(s)."""
    peak, cpu = 0, 0.0
    pids = _jvm_pids()
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak += int(line.split()[1]) * 1024
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            continue
    return {"jvm_pids": len(pids), "jvm_rss_peak": peak or None, "jvm_cpu_s": cpu}


# ======================================================================================
# stages
# ======================================================================================


def _summary(job: Any) -> dict[str, Any]:
    d = job.summary().to_dict()
    d.pop("job_id", None)
    return d


def _curve(job: Any) -> list[list[Any]]:
    c = job.curve()
    return [[None if v != v else v for v in row] for row in c.itertuples(index=False)]


FLOOR_SQL = """
SELECT task, count(attempt) AS dispatched, count(reward) AS scored,
       count_if(reward = 1) AS passes, sum(reward) AS reward_sum,
       sum(reward * reward) AS reward_sumsq, min(reward) AS reward_min,
       max(reward) AS reward_max
FROM {view} GROUP BY task"""


def setup(name: str, s: Shape, ws_dir: Path) -> tuple[Any, int, Any]:
    """(timed body, attempt slots, after(result) -> facts) for one stage 7 run."""
    src = ensure_files(s)
    os.environ["PYSPARK_PYTHON"] = "/bin/false"  # no Python worker can run: native SQL only
    t0 = time.perf_counter()
    import envloop_nb as enb

    if name != "spark_duckdb":
        import pyspark.sql  # noqa: F401
    import_s = time.perf_counter() - t0
    ws_file = ws_dir / f"spark-{s.name}-{name}.duckdb"
    ws_file.parent.mkdir(parents=True, exist_ok=True)
    for p in (ws_file, Path(str(ws_file) + ".wal")):
        p.unlink(missing_ok=True)
    ws = enb.open(ws_file)
    job_id = f"{s.job_id}_{name}"
    phases: dict[str, float] = {}

    def span(key: str, t: float) -> float:
        now = time.perf_counter()
        phases[key] = now - t
        return now

    def body_envloop() -> Any:
        t = time.perf_counter()
        spark = _session()
        t = span("session", t)
        df = spark.read.parquet(str(src))
        t = span("read_parquet", t)
        [job] = ws.load_spark(df, job_id=job_id, k=s.k)
        t = span("load_spark", t)
        summary, curve = _summary(job), _curve(job)
        span("summary_curve", t)
        return spark, job, summary, curve

    def body_phases() -> Any:
        from envloop_nb._loaders import load_sources
        from envloop_nb._loaders.tables import spark as sp

        t = time.perf_counter()
        spark = _session()
        t = span("session", t)
        df = spark.read.parquet(str(src))
        t = span("read_parquet", t)
        label = "Spark DataFrame"
        fields, tags = sp._resolve(df, None, job_id, label)
        view = "_enb_bench_view"
        df.createOrReplaceTempView(view)
        source = sp._source_sql(view, fields, tags, job_id)
        t = span("resolve", t)
        stats = sp._job_stats(spark, source, s.k, label)
        t = span("checks_query", t)
        per_task = spark.sql(sp._per_task_sql(source, sp._scales_sql(stats), [], fields))
        per_task = per_task.persist()
        rows = per_task.count()
        t = span("per_task_query", t)
        table = per_task.toArrow()
        t = span("to_arrow", t)
        if sp._has_retries(table, stats):
            raise SystemExit("stage 7: the generated data has a retried slot; expected none")
        task_tags = spark.sql(sp._tags_sql(source, list(tags))).toArrow() if tags else None
        t = span("tags_query", t)
        per_task.unpersist()
        spark.catalog.dropTempView(view)
        t = time.perf_counter()  # unpersist/drop are not phases of reduce_spark
        facts = dict.fromkeys(
            ("source_path", "dataset_name", "dataset_version", "dataset_revision", "runner")
        )
        reduced = [
            sp._job(j, stats[j], table, task_tags, [], "order" in fields, facts) for j in stats
        ]
        ids = load_sources(ws.con, [(one, {"format": "summary"}) for one in reduced])
        t = span("workspace_write", t)
        job = ws.job(ids[0])
        summary, curve = _summary(job), _curve(job)
        span("summary_curve", t)
        phases["per_task_rows"] = rows
        phases["arrow_bytes"] = table.nbytes
        return spark, job, summary, curve

    def body_floor() -> Any:
        t = time.perf_counter()
        spark = _session()
        t = span("session", t)
        df = spark.read.parquet(str(src))
        df.createOrReplaceTempView("_floor")
        t = span("read_parquet", t)
        table = spark.sql(FLOOR_SQL.format(view="_floor")).toArrow()
        span("group_by_to_arrow", t)
        return spark, table

    def body_duckdb() -> Any:
        t = time.perf_counter()
        job = ws.load(str(src), format="table", k=s.k, job_id=job_id)
        t = span("load", t)
        summary, curve = _summary(job), _curve(job)
        span("summary_curve", t)
        return None, job, summary, curve

    def after(result: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"import_s": import_s, "phases": dict(phases)}
        out["load_avg"] = os.getloadavg()
        spark = result[0]
        if spark is not None:
            out |= jvm_facts()
            out["spark"] = f"{spark.version} {MASTER}, " + ", ".join(
                f"{k}={v}" for k, v in CONF.items()
            )
        if name == "spark_floor":
            table = result[1]
            out["tasks"] = table.num_rows
            out["dispatched"] = int(table.column("dispatched").to_numpy().sum())
            out["scored"] = int(table.column("scored").to_numpy().sum())
        else:
            out["summary"], out["curve"] = result[2], result[3]
        if name == "spark_duckdb":
            out["dispatched"] = ws.con.execute(
                "SELECT count(*) FROM attempts WHERE job_id = ?", [job_id]
            ).fetchone()[0]
        if spark is not None:
            spark.stop()
        ws.close()
        for p in (ws_file, Path(str(ws_file) + ".wal")):
            p.unlink(missing_ok=True)
        return out

    body = {
        "spark_envloop": body_envloop,
        "spark_phases": body_phases,
        "spark_floor": body_floor,
        "spark_duckdb": body_duckdb,
    }.get(name)
    if body is None:
        raise SystemExit(f"unknown stage {name!r}")
    return body, s.slots, after


def check(size: str, by_stage: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Summary and curve of both Spark runs == the DuckDB path's; floor totals too."""
    out = []
    ref = by_stage.get("spark_duckdb", {})
    for name in ("spark_envloop", "spark_phases", "spark_floor"):
        if name not in by_stage:  # not measured at all (a failed run is in by_stage)
            continue
        r = by_stage[name]
        what = f"stage 7 {size}: {name} vs the DuckDB path (ws.load(folder))"
        if "error" in r or "error" in ref or not r.get("extra") or not ref.get("extra"):
            out.append(
                {"what": what, "problem": "not run: " + str(r.get("error", ref.get("error")))}
            )
            continue
        want, got = ref["extra"], r["extra"]
        problem = None
        if name == "spark_floor":
            mine = {k: got[k] for k in ("tasks", "dispatched", "scored")}
            theirs = {
                "tasks": want["summary"]["total_members"],
                "dispatched": want["dispatched"],
                "scored": want["summary"]["scored"],
            }
            if mine != theirs:
                problem = f"floor {mine} vs summary {theirs}"
        elif got["summary"] != want["summary"]:
            diff = {
                k: (got["summary"].get(k), v)
                for k, v in want["summary"].items()
                if got["summary"].get(k) != v
            }
            problem = f"summary differs (spark, duckdb): {diff}"
        elif got["curve"] != want["curve"]:
            problem = "curve differs"
        r["agrees"] = problem is None
        out.append({"what": what, "problem": problem})
    return out
