"""Stage 9: the front door — what a user waits for, against a hand-written DuckDB floor.

``python -m benchmarks run --stages 9 --front-sizes 1M,10M,100M [--out /tmp/front.md]``

Every stage runs in a fresh Python process (``runner.py``), cold and end to end;
``import envloop_nb`` and the libraries both sides use (``duckdb``, ``pyarrow``,
``pandas``) are setup, for the floors too. The file is the generator's
Parquet job of the size (``benchmarks/generate.py``: 1M = 31,250 tasks × 32, 10M =
312,500 × 32, 100M = 3,125,000 × 32, ~2% missing rewards, text columns). Pairs
(envloop_nb → its floor, same file, same memory limit of 1 GB):

- ``front_load`` → ``front_ctas``: ``enb.open(new file).load(parquet)`` (mapping,
  checks, attempt of record, tasks table, commit) against
  ``CREATE TABLE t AS SELECT * FROM read_parquet(file)`` into a new DuckDB file.
- ``front_load_answer``: the same load, then ``summary``, ``samples(ks=[1, 8, 32])``,
  ``curve(ks=1..32)``, ``groups(by="subset")`` and four buckets on the pass rate; each
  phase's time in ``extra.phases`` (the scale table: 1M, 10M, 100M, with peak memory).
- ``front_reopen_curve`` → ``front_reopen_curve_floor``: reopen the loaded workspace
  (read-only) and take the first ``job.curve(ks=1..32)``, against the same curve in SQL
  over the workspace's attempts table.
- ``front_one_question`` → ``front_one_question_floor``: open an in-memory workspace,
  load the file, take the curve, against the curve in SQL straight on the file.
- ``front_one_question_in_place`` → ``front_one_question_floor``: the same with
  ``ws.load(file, copy=False)`` (the attempts are read in place, not copied).
- ``front_in_place_answer``: ``front_load_answer``'s phases with ``copy=False``.

Checks (runner): every curve equals the floor's (``k``, ``pass@k``, ``pass^k``, tasks;
counts exactly, rates within 1e-9), and the load's scored count equals the file's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .generate import THRESHOLD, Shape, ensure
from .runner import _table_kwargs, pass_rate_rules

STAGES = (
    "front_ctas",
    "front_load",
    "front_jsonl_floor",
    "front_jsonl",
    "front_load_answer",
    "front_reopen_curve_floor",
    "front_reopen_curve",
    "front_one_question_floor",
    "front_one_question",
    "front_one_question_in_place",
    "front_in_place_answer",
)
#: Sizes whose EnvLoop JSONL.gz export the generator writes (stages front_jsonl*).
JSONL_MAX_SLOTS = 1_000_000
#: (envloop_nb stage, its floor)
PAIRS = (
    ("front_load", "front_ctas"),
    ("front_jsonl", "front_jsonl_floor"),
    ("front_reopen_curve", "front_reopen_curve_floor"),
    ("front_one_question", "front_one_question_floor"),
    ("front_one_question_in_place", "front_one_question_floor"),
)
#: the issue's targets: time ÷ floor at most this
TARGETS = {
    "front_load": 1.5,
    "front_jsonl": 1.5,
    "front_reopen_curve": 1.3,
    "front_one_question": 2.0,
    "front_one_question_in_place": 2.0,
}
PEAK_TARGET_BYTES = 2 * 1024**3  # the 100M load and its answers
KMAX = 32
MEMORY_LIMIT = "1GB"  # envloop_nb's default, given to the floors too

Body = Any


def _fresh(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)
    return path


def loaded_ws(s: Shape, ws_dir: Path) -> Path:
    """The workspace ``front_load`` writes and ``front_reopen_curve`` reopens."""
    return ws_dir / f"front-{s.name}.duckdb"


def _curve_sql(source: str) -> tuple[str, str]:
    """The floor's per-task aggregate over ``source`` (a table expression) and its curve."""
    from .baselines import floor_sql

    aggregate, _per_task, curve = floor_sql("__SOURCE__", THRESHOLD, (1,))
    return aggregate.replace("read_parquet('__SOURCE__')", source), curve


def _floor_curve(con: Any, source: str) -> Any:
    from .baselines import _RATIO_MACRO

    aggregate, curve = _curve_sql(source)
    con.execute(_RATIO_MACRO)
    con.execute(aggregate)
    return con.execute(curve, {"kmax": KMAX}).to_arrow_table().to_pandas()


def _curve_facts(curve: Any) -> dict[str, Any]:
    cv = curve[["k", "pass@k", "pass^k", "tasks"]]
    cv = cv[cv["tasks"] > 0].sort_values("k")
    return {c: [float(x) for x in cv[c]] for c in cv.columns}


def setup(name: str, s: Shape, ws_dir: Path) -> tuple[Body, int, Any]:
    """(timed body, attempts, after(result) -> extra facts) of stage ``name``."""
    import duckdb
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    if name.startswith("front_jsonl"):
        return _jsonl(name, s, ws_dir)
    ensure(s, ("parquet",))
    src = str(s.parquet)
    literal = "'" + src.replace("'", "''") + "'"
    if name == "front_ctas":
        import duckdb

        path = _fresh(ws_dir / f"front-ctas-{s.name}.duckdb")

        def ctas() -> int:
            con = duckdb.connect(str(path), config={"memory_limit": MEMORY_LIMIT})
            con.execute(f"CREATE TABLE attempts AS SELECT * FROM read_parquet({literal})")
            row = con.execute("SELECT count(*) FROM attempts").fetchone()
            n = int(row[0]) if row else 0
            con.close()
            return n

        def gone(n: int) -> dict[str, Any]:
            size = path.stat().st_size
            path.unlink(missing_ok=True)
            return {"rows": n, "bytes": size}

        return ctas, s.slots, gone
    if name in ("front_load", "front_load_answer", "front_in_place_answer"):
        import envloop_nb as enb

        keep = name == "front_load"
        path = _fresh(loaded_ws(s, ws_dir) if keep else ws_dir / f"{name}-{s.name}.duckdb")
        kwargs = _table_kwargs(s)
        if name == "front_in_place_answer":
            kwargs["copy"] = False

        def load() -> dict[str, Any]:
            phases: dict[str, float] = {}
            t = time.perf_counter()
            ws = enb.open(path)
            job = ws.load(src, **kwargs)
            phases["load"] = time.perf_counter() - t
            out: dict[str, Any] = {"phases": phases}
            if not keep:
                out.update(_answers(job, phases))
            ws.close()
            return out

        def done(out: dict[str, Any]) -> dict[str, Any]:
            # the counts checked against the file, read after the timed body
            ws = enb.open(path, read_only=True)
            d = ws.job(s.job_id).summary(threshold=THRESHOLD).to_dict()
            ws.close()
            out.update(scored=int(d["scored"]), total=int(d["total"]), bytes=path.stat().st_size)
            if not keep:
                path.unlink(missing_ok=True)
            return out

        return load, s.slots, done
    if name == "front_reopen_curve":
        import envloop_nb as enb

        path = loaded_ws(s, ws_dir)
        if not path.exists():
            raise SystemExit(f"no {path.name}: run front_load first")

        def reopen() -> Any:
            ws = enb.open(path, read_only=True)
            return ws.job(s.job_id).curve(ks=list(range(1, KMAX + 1)), threshold=THRESHOLD)

        return reopen, s.slots, lambda curve: {"curve": _curve_facts(curve)}
    if name == "front_reopen_curve_floor":
        import duckdb

        path = loaded_ws(s, ws_dir)
        if not path.exists():
            raise SystemExit(f"no {path.name}: run front_load first")
        job = "'" + s.job_id.replace("'", "''") + "'"

        def reopen_floor() -> Any:
            con = duckdb.connect(str(path), read_only=True)
            # the attempt of record is the table's one row per slot (the loader keeps one)
            return _floor_curve(con, f"(SELECT * FROM attempts WHERE job_id = {job})")

        return reopen_floor, s.slots, lambda curve: {"curve": _curve_facts(curve)}
    if name in ("front_one_question", "front_one_question_in_place"):
        import envloop_nb as enb

        kwargs = _table_kwargs(s)
        if name == "front_one_question_in_place":
            kwargs["copy"] = False

        def one() -> Any:
            ws = enb.open()
            job = ws.load(src, **kwargs)
            return job.curve(ks=list(range(1, KMAX + 1)), threshold=THRESHOLD)

        return one, s.slots, lambda curve: {"curve": _curve_facts(curve)}
    if name == "front_one_question_floor":
        import duckdb

        def one_floor() -> Any:
            con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT})
            return _floor_curve(con, f"read_parquet({literal})")

        return one_floor, s.slots, lambda curve: {"curve": _curve_facts(curve)}
    raise SystemExit(f"unknown stage {name!r}")


def _jsonl(name: str, s: Shape, ws_dir: Path) -> tuple[Body, int, Any]:
    """The EnvLoop JSONL.gz export of the job: ``ws.load`` against ``read_json``."""
    ensure(s, ("jsonl",))
    src = str(s.jsonl)
    path = _fresh(ws_dir / f"front-{name}-{s.name}.duckdb")
    if name == "front_jsonl_floor":
        import duckdb

        literal = "'" + src.replace("'", "''") + "'"

        def floor() -> int:
            con = duckdb.connect(str(path), config={"memory_limit": MEMORY_LIMIT})
            # every line (header, attempts, metrics) as a row of typed columns
            con.execute(f"CREATE TABLE t AS SELECT * FROM read_json({literal}, sample_size=-1)")
            row = con.execute("SELECT count(*) FROM t").fetchone()
            con.close()
            return int(row[0]) if row else 0

        def gone_floor(n: int) -> dict[str, Any]:
            path.unlink(missing_ok=True)
            return {"lines": n}

        return floor, s.slots, gone_floor
    import envloop_nb as enb

    def load() -> None:
        ws = enb.open(path)
        ws.load(src, job_id=s.job_id)
        ws.close()

    def gone(_: None) -> dict[str, Any]:
        ws = enb.open(path, read_only=True)  # the counts, read after the timed body
        d = ws.job(s.job_id).summary(threshold=THRESHOLD).to_dict()
        ws.close()
        path.unlink(missing_ok=True)
        return {"scored": int(d["scored"]), "total": int(d["total"])}

    return load, s.slots, gone


def _answers(job: Any, phases: dict[str, float]) -> dict[str, Any]:
    """Summary, per-task table, curve, groups and buckets of a loaded job, timed."""
    t = time.perf_counter()
    job.summary(threshold=THRESHOLD)
    phases["summary"] = time.perf_counter() - t
    t = time.perf_counter()
    frame = job.samples(ks=[1, 8, 32], threshold=THRESHOLD)
    phases["samples"] = time.perf_counter() - t
    t = time.perf_counter()
    curve = job.curve(ks=list(range(1, KMAX + 1)), threshold=THRESHOLD)
    phases["curve"] = time.perf_counter() - t
    t = time.perf_counter()
    groups = job.groups(by="subset", threshold=THRESHOLD)
    phases["groups"] = time.perf_counter() - t
    t = time.perf_counter()
    rules = pass_rate_rules()
    counts = rules.summary(frame)
    phases["buckets"] = time.perf_counter() - t
    return {
        "curve": _curve_facts(curve),
        "tasks": len(frame),
        "groups": len(groups),
        "buckets": len(counts),
    }


def _parquet_scored(s: Shape) -> int:
    import duckdb

    src = "'" + str(s.parquet).replace("'", "''") + "'"
    row = duckdb.sql(f"SELECT count(reward) FROM read_parquet({src})").fetchone()
    return int(row[0]) if row else 0


def check(s: Shape, by_stage: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every curve equals its floor's; every load's scored count equals the file's."""
    out: list[dict[str, Any]] = []
    floors = {
        "front_reopen_curve": "front_reopen_curve_floor",
        "front_one_question": "front_one_question_floor",
        "front_load_answer": "front_one_question_floor",
        "front_one_question_in_place": "front_one_question_floor",
        "front_in_place_answer": "front_one_question_floor",
    }
    for stage, floor in floors.items():
        r, f = by_stage.get(stage), by_stage.get(floor)
        what = f"stage 9 {s.name}: {stage} curve vs {floor}"
        if not r or not f or "error" in r or "error" in f:
            out.append({"what": what, "problem": "not run"})
            continue
        problem = _curve_problem(r["extra"]["curve"], f["extra"]["curve"])
        r["agrees"] = problem is None
        out.append({"what": what, "problem": problem})
    want = _parquet_scored(s)
    for stage in ("front_load", "front_load_answer", "front_in_place_answer", "front_jsonl"):
        r = by_stage.get(stage)
        if stage == "front_jsonl" and s.slots > JSONL_MAX_SLOTS:
            continue
        what = f"stage 9 {s.name}: {stage} scored count vs the Parquet file"
        if not r or "error" in r:
            out.append({"what": what, "problem": "not run"})
            continue
        got = int(r["extra"]["scored"])
        problem = None if got == want else f"{got} vs {want}"
        r["agrees"] = problem is None and r.get("agrees", True)
        out.append({"what": what, "problem": problem})
    return out


def _curve_problem(a: dict[str, list[float]], b: dict[str, list[float]]) -> str | None:
    if a["k"] != b["k"] or a["tasks"] != b["tasks"]:
        return f"k/tasks differ: {a['k'][:3]}… vs {b['k'][:3]}…"
    for col in ("pass@k", "pass^k"):
        worst = max((abs(x - y) for x, y in zip(a[col], b[col], strict=True)), default=0.0)
        if worst > 1e-9:
            return f"{col} differs by {worst:g}"
    return None


PHASES = ("load", "summary", "samples", "curve", "groups", "buckets")


def section(res: list[dict[str, Any]], w: Any) -> None:
    """Stage 9 in RESULTS.md: each stage against its floor, and the scale table."""
    from .report import MB, _cpu, _find, _fmt_s, _size_label

    rows = [r for r in res if r["stage"].startswith("front_")]
    if not rows:
        return
    w("## Stage 9: the front door — load, reopen, one question (against DuckDB floors)\n")
    w(
        "Measured by `benchmarks/bench_front.py` (`python -m benchmarks run --stages 9 "
        "--front-sizes 1M,10M,100M`): the generator's Parquet job, each run in a fresh "
        "Python process, cold and end to end (imports are setup), the workspace and the "
        f"floors at the same {MEMORY_LIMIT} memory limit. *× floor* = time ÷ the floor's "
        "median, same size, same run; *target* is the issue's.\n"
    )
    w(
        "| stage | attempts | median | spread (min–max) | N | CPU | peak RSS | setup RSS "
        "| × floor | target | agrees |"
    )
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    floors = dict(PAIRS)
    for r in rows:
        label = r["stage"].removeprefix("front_").replace("_", " ")
        if "error" in r:
            w(f"| {label} | {_size_label(r['size'])} | failed: {r['error']} |")
            continue
        floor = _find(res, floors.get(r["stage"], ""), r["size"])
        ratio = r["median"] / floor["median"] if floor and "error" not in floor else None
        target = TARGETS.get(r["stage"])
        met = "-"
        if target is not None and ratio is not None:
            met = f"≤ {target:g}×: " + ("yes" if ratio <= target else "**no**")
        if r["stage"].endswith("_answer") and r["rows"] > 20_000_000:
            ok = r["rss_peak"] < PEAK_TARGET_BYTES
            met = f"peak < {PEAK_TARGET_BYTES / MB:.0f} MB: " + ("yes" if ok else "**no**")
        agrees = {True: "yes", False: "**NO**"}.get(bool(r["agrees"]), "") if "agrees" in r else ""
        if r["stage"].endswith(("_floor", "_ctas")):
            agrees = "reference"
        cpu = _cpu(r)
        w(
            f"| {label} | {_size_label(r['size'])} | {_fmt_s(r['median'])} "
            f"| {_fmt_s(r['min'])}–{_fmt_s(r['max'])} | {r['repeats']} "
            f"| {_fmt_s(cpu) if cpu else '-'} | {r['rss_peak'] / MB:.0f} MB "
            f"| {r['rss_setup'] / MB:.0f} MB | {f'{ratio:.2f}×' if ratio else '-'} "
            f"| {met} | {agrees} |"
        )
    answered = [r for r in rows if r["stage"].endswith("_answer") and "error" not in r]
    if answered:
        w("\nHow cost grows (`front_load_answer`, copied, and `front_in_place_answer`, read in ")
        w("place: median run; peak RSS of the whole run):\n")
        w("| load | attempts | " + " | ".join(PHASES) + " | total | peak RSS | workspace file |")
        w("|---|---|" + "---:|" * (len(PHASES) + 3))
        for r in sorted(answered, key=lambda r: (r["stage"], r["rows"])):
            how = "in place" if "in_place" in r["stage"] else "copied"
            ph = r["extra"].get("phases", {})
            cells = " | ".join(_fmt_s(ph[p]) if p in ph else "-" for p in PHASES)
            size = r["extra"].get("bytes")
            w(
                f"| {how} | {_size_label(r['size'])} | {cells} | {_fmt_s(r['median'])} "
                f"| {r['rss_peak'] / MB:.0f} MB | {f'{size / 1e6:.0f} MB' if size else '-'} |"
            )
    w("")
