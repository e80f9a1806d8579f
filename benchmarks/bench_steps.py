"""Steps (issue 35): loading, asking and showing agents' steps, each against a floor.

``python -m benchmarks.bench_steps [--inspect 20k] [--atif 10k,100k] [--scale 1M]
[--transcript 10000] [--compare 500] [--repeats 3] [--only stage,...]`` runs the stages below, each repeat in a fresh process
(``runner.measure``: imports and setup untimed, median of N, peak RSS of the timed body),
checks that each stage and its floor read the same things, saves
``benchmarks/data/steps-results.json`` and writes the section "Steps (issue 35)" into
``benchmarks/RESULTS.md``. The data: ``benchmarks/steps_data.py``.

Stages (``steps_<what>``; the size is samples, attempts or steps):

- **Inspect** (``20k`` samples, 13 messages each, five tool calls): ``inspect_load``
  (``ws.load(log.eval)`` into a fresh file workspace: end to end, steps included once the
  Inspect loader writes them), ``inspect_reader`` (the steps reader alone:
  ``read_inspect_steps`` over every sample of the log, decoded as the loader decodes it
  (``samples(steps=True)``), through one ``StepWriter``, then commit), floor ``inspect_messages_df`` (``inspect_ai.analysis.messages_df``).
- **ATIF** (``10k`` attempts × 20 step rows): ``atif_harbor`` (``ws.load(job folder)``: end
  to end; from 2,000 trials the loader reads the trajectories in worker processes, one per
  CPU: their CPU is counted in), ``atif_reader`` (``read_atif`` over every trajectory file through one
  ``StepWriter``, ``check_steps``, commit; the job's attempts loaded in setup from
  ``attempts.parquet``), floor ``atif_floor`` (DuckDB ``CREATE TABLE AS SELECT * FROM
  read_json(the trajectory files)`` in a fresh file) and ``atif_floor_1t`` (the same after
  ``SET threads = 1``: on this shared 2-core machine DuckDB's threads reading many small
  files are several times slower than one).
- **Asking** (``1M`` attempts, 20M step rows; warm: the call made once, untimed, in setup):
  ``find_tool`` (``find_steps(tool="edit_file", error=True)``), ``find_contains``
  (``find_steps(contains="no such file")``), floor ``find_floor`` (the first one's
  ``GROUP BY`` by hand); ``tool_stats``, ``turn_stats`` (``job.tool_stats()`` /
  ``job.turn_stats()`` with their defaults), floor ``stats_floor`` (calls / errors per tool
  and steps per attempt by hand).
- **Browser** (headless Chromium on an HTML file): ``browser_transcript`` (``10000`` steps:
  ``job.transcript(...)._repr_html_()``), ``browser_compare`` (``500``: two attempts of
  500 steps, ``job.compare_attempts(...)``), floors ``browser_floor`` (plain static HTML
  of the same bytes, one ``<div>`` per step). From ``page.goto`` to the first step block
  visible and one animation frame after it (painted): ``benchmarks/steps_browser.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import steps_data as sd

Body = Callable[[], Any]
HERE = Path(__file__).resolve().parent
RESULTS_JSON = sd.DATA / "steps-results.json"
BEGIN, END = "<!-- steps:begin -->", "<!-- steps:end -->"
MB = 1024 * 1024

#: (group, stage names, the floor's stage)
GROUPS = {
    "inspect": (("steps_inspect_load", "steps_inspect_reader"), "steps_inspect_messages_df"),
    "atif": (("steps_atif_harbor", "steps_atif_reader", "steps_atif_floor_1t"), "steps_atif_floor"),
    "find": (("steps_find_tool", "steps_find_contains"), "steps_find_floor"),
    "stats": (("steps_tool_stats", "steps_turn_stats"), "steps_stats_floor"),
    "transcript": (("steps_browser_transcript",), "steps_browser_floor"),
    "compare": (("steps_browser_compare",), "steps_browser_floor"),
}


def _fresh(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)
    return path


def _step_counts(con: Any, job_id: str) -> dict[str, int]:
    """Rows, tool calls, error results and model turns of a job's steps."""
    row = con.execute(
        """SELECT count(*), count(*) FILTER (WHERE kind = 'tool_call'),
                  count(*) FILTER (WHERE kind = 'tool_result' AND is_error),
                  count(DISTINCT (task, attempt, turn)), count(DISTINCT (task, attempt))
           FROM steps WHERE job_id = ?""",
        [job_id],
    ).fetchone()
    keys = ("steps", "tool_calls", "tool_errors", "turns", "attempts_with_steps")
    return dict(zip(keys, (int(x) for x in row), strict=True))


# ======================================================================================
# Inspect
# ======================================================================================


def _inspect(name: str, size: str, ws_dir: Path) -> tuple[Body, int, Any]:
    n = sd.parse_count(size)
    log = sd.ensure_inspect_log(n, sd.ROOT)
    ws_file = ws_dir / f"steps-inspect-{size}.duckdb"
    if name == "steps_inspect_messages_df":
        from inspect_ai.analysis import messages_df

        def floor() -> Any:
            return messages_df(str(log), quiet=True)

        def counted(df: Any) -> dict[str, Any]:
            # ``tool_calls``: the calls as text, one ``f(args)`` a line
            calls = df["tool_calls"].dropna()
            return {
                "messages": len(df),
                "columns": len(df.columns),
                "tool_calls": int(sum(len(str(c).splitlines()) for c in calls)),
                "tool_errors": int(df["tool_call_error"].notna().sum()),
            }

        return floor, n, counted

    import envloop_nb as enb

    if name == "steps_inspect_load":

        def load() -> Any:
            ws = enb.open(_fresh(ws_file))
            return ws, ws.load(log)

        def loaded(result: Any) -> dict[str, Any]:
            ws, job = result
            out = _step_counts(ws.con, job.id) | {"wired": bool(job.info["extra"].get("steps"))}
            ws.close()
            return out

        return load, n, loaded

    from envloop_nb._loaders.inspect.read import open_inspect_log
    from envloop_nb._loaders.inspect.steps import read_inspect_steps
    from envloop_nb._store.steps import StepWriter

    def read() -> Any:
        ws = enb.open(_fresh(ws_file))
        ws.con.execute("BEGIN")
        writer = StepWriter(ws.con, "inspect")
        opened = open_inspect_log(log)
        for place, sample in opened.samples(steps=True):
            read_inspect_steps(writer, task=str(sample["id"]), attempt=int(sample["epoch"]),
                               sample=sample, source=log.name, place=place)  # fmt: skip
        writer.close()
        ws.con.execute("COMMIT")
        return ws

    def counted_rows(ws: Any) -> dict[str, Any]:
        out = _step_counts(ws.con, "inspect")
        ws.close()
        return out

    return read, n, counted_rows


# ======================================================================================
# ATIF
# ======================================================================================


def _trials(job: Path) -> list[tuple[str, int, Path]]:
    out = []
    for entry in os.scandir(job):
        if entry.is_dir() and "__a" in entry.name:
            task, attempt = entry.name.split("__a")
            out.append((task, int(attempt), Path(entry.path) / "agent" / "trajectory.json"))
    return sorted(out)


def _atif(name: str, size: str, ws_dir: Path) -> tuple[Body, int, Any]:
    n = sd.parse_count(size)
    job_dir = sd.ensure_atif_job(n, sd.ROOT)
    ws_file = ws_dir / f"steps-atif-{size}.duckdb"
    if name.startswith("steps_atif_floor"):
        import duckdb

        pattern = sd.trajectory_glob(n, sd.ROOT)

        def floor() -> Any:
            con = duckdb.connect(str(_fresh(ws_file)))
            if name.endswith("_1t"):  # one thread: see FINDINGS "read_json of many files"
                con.execute("SET threads = 1")
            con.execute("CREATE TABLE t AS SELECT * FROM read_json(?)", [pattern])
            got = con.execute("SELECT count(*), sum(len(steps)) FROM t").fetchone()
            con.close()
            return got

        def counted(got: Any) -> dict[str, Any]:
            return {"files": int(got[0]), "atif_steps": int(got[1])}

        return floor, n * 20, counted

    import envloop_nb as enb

    if name == "steps_atif_harbor":

        def load() -> Any:
            ws = enb.open(_fresh(ws_file))
            return ws, ws.load(str(job_dir))

        def loaded(result: Any) -> dict[str, Any]:
            ws, job = result
            out = _step_counts(ws.con, job.id) | {"wired": bool(job.info["extra"].get("steps"))}
            ws.close()
            return out

        return load, n * 20, loaded

    from envloop_nb._loaders.harbor.atif import read_atif
    from envloop_nb._store.steps import StepWriter, check_steps

    ws = enb.open(_fresh(ws_file))
    ws.load(str(job_dir.parent / "attempts.parquet"), format="table", k=sd.K, job_id="atif")
    trials = _trials(job_dir)

    def read() -> Any:
        ws.con.execute("BEGIN")
        writer = StepWriter(ws.con, "atif")
        for task, attempt, path in trials:
            read_atif(writer, task=task, attempt=attempt, path=path)
        writer.close()
        check_steps(ws.con, "atif", job_dir.name)
        ws.con.execute("COMMIT")
        return ws

    def counted_rows(ws: Any) -> dict[str, Any]:
        out = _step_counts(ws.con, "atif")
        ws.close()
        return out

    return read, n * 20, counted_rows


# ======================================================================================
# asking: find_steps, tool and turn statistics over a generated workspace (warm)
# ======================================================================================

FIND_FLOOR_SQL = """
SELECT task, attempt, min(step)::INTEGER AS first_step, count(*)::BIGINT AS matches
FROM steps WHERE job_id = $job AND tool = 'edit_file' AND is_error
GROUP BY task, attempt ORDER BY task, attempt
"""
STATS_FLOOR_SQL = (
    """SELECT tool, count(*) FILTER (WHERE kind = 'tool_call') AS calls,
              count(DISTINCT (task, attempt)) FILTER (WHERE kind = 'tool_call') AS attempts,
              count(*) FILTER (WHERE kind = 'tool_result' AND is_error) AS errors
       FROM steps WHERE job_id = $job AND tool IS NOT NULL GROUP BY tool ORDER BY tool""",
    """SELECT n, count(*) AS attempts FROM (
           SELECT count(*) AS n FROM steps WHERE job_id = $job GROUP BY task, attempt)
       GROUP BY n ORDER BY n""",
)


def _asking(name: str, size: str) -> tuple[Body, int, Any]:
    import envloop_nb as enb

    n = sd.parse_count(size)
    path = sd.ensure_steps_workspace(n, sd.ROOT)
    ws = enb.open(path, read_only=True)
    job = ws.job(sd.steps_job_id(n))
    job_id = job.id
    calls: dict[str, Body] = {
        "steps_find_tool": lambda: job.find_steps(tool="edit_file", error=True),
        "steps_find_contains": lambda: job.find_steps(contains="no such file"),
        "steps_find_floor": lambda: ws.con.sql(FIND_FLOOR_SQL, params={"job": job_id}).df(),
        "steps_tool_stats": lambda: job.tool_stats(),
        "steps_turn_stats": lambda: job.turn_stats(),
        "steps_stats_floor": lambda: [
            ws.con.sql(q, params={"job": job_id}).df() for q in STATS_FLOOR_SQL
        ],
    }
    body = calls[name]
    body()  # warm: the same call once, untimed

    def facts(result: Any) -> dict[str, Any]:
        if name.startswith("steps_find"):
            return {"attempts": len(result), "matches": int(result["matches"].sum())}
        if name == "steps_stats_floor":
            tools, hist = result
            return {
                "tools": {r.tool: [int(r.calls), int(r.errors)] for r in tools.itertuples()},
                "steps_per_attempt": {int(r.n): int(r.attempts) for r in hist.itertuples()},
            }
        if name == "steps_tool_stats":
            t = result.tools
            return {"tools": {r.tool: [int(r.calls), int(r.errors)] for r in t.itertuples()}}
        return {"repr": repr(result)[:300]}

    return body, n * 20, facts


# ======================================================================================
# runner glue, checks, the section
# ======================================================================================


def setup(name: str, size: str, ws_dir: Path) -> tuple[Body, int, Any]:
    """(timed body, rows, after(result) -> facts) for one stage run (``runner._setup``)."""
    if name.startswith("steps_inspect_"):
        return _inspect(name, size, ws_dir)
    if name.startswith("steps_atif_"):
        return _atif(name, size, ws_dir)
    if name.startswith("steps_browser_"):
        from .steps_browser import browser_stage

        return browser_stage(name, size)
    return _asking(name, size)


def _get(res: list[dict[str, Any]], stage: str, size: str) -> dict[str, Any] | None:
    for r in res:
        if r["stage"] == stage and r["size"] == size and "error" not in r:
            return r
    return None


def check(res: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stage against its floor: the same messages / calls / errors / rows."""
    out: list[dict[str, Any]] = []

    def add(what: str, problem: str | None, *rows: dict[str, Any]) -> None:
        for r in rows:
            r["agrees"] = problem is None
        out.append({"what": what, "problem": problem})

    for size in sorted({r["size"] for r in res}):
        df = _get(res, "steps_inspect_messages_df", size)
        for name in ("steps_inspect_reader", "steps_inspect_load"):
            r = _get(res, name, size)
            if not r or not df or not r["extra"]["steps"]:
                continue
            a, b = r["extra"], df["extra"]
            got = (a["turns"], a["tool_calls"], a["tool_errors"])
            want = (b["messages"], b["tool_calls"], b["tool_errors"])
            add(f"{name} {size}: model turns, tool calls, tool errors vs messages_df's "
                "messages, tool calls, tool errors",
                None if got == want else f"{got} vs {want}", r, df)  # fmt: skip
        floor = _get(res, "steps_atif_floor", size)
        reader = _get(res, "steps_atif_reader", size)
        if reader:
            n = sd.parse_count(size)
            e = reader["extra"]
            problem = None if e["steps"] == 20 * n and e["attempts_with_steps"] == n else str(e)
            floors = [x for x in (floor, _get(res, "steps_atif_floor_1t", size)) if x]
            for f in floors:
                if (f["extra"]["files"], f["extra"]["atif_steps"]) != (n, 8 * n):
                    problem = f"{f['stage']}: {f['extra']}"
            add(f"steps_atif_reader {size}: 20 rows per trajectory, read_json 8 ATIF steps per "
                "file", problem, reader, *floors)  # fmt: skip
        harbor = _get(res, "steps_atif_harbor", size)
        if harbor and reader and harbor["extra"]["steps"]:
            keys = ("steps", "tool_calls", "tool_errors", "turns")
            a = {k: harbor["extra"][k] for k in keys}
            b = {k: reader["extra"][k] for k in keys}
            add(f"steps_atif_harbor {size}: the same steps as read_atif",
                None if a == b else f"{a} vs {b}", harbor)  # fmt: skip
        ff = _get(res, "steps_find_floor", size)
        ft = _get(res, "steps_find_tool", size)
        if ff and ft:
            add(f"steps_find_tool {size}: attempts and matches vs the floor's GROUP BY",
                None if ft["extra"] == ff["extra"] else f"{ft['extra']} vs {ff['extra']}",
                ft, ff)  # fmt: skip
        sf = _get(res, "steps_stats_floor", size)
        ts = _get(res, "steps_tool_stats", size)
        if sf and ts:
            a, b = ts["extra"]["tools"], sf["extra"]["tools"]
            add(f"steps_tool_stats {size}: calls and errors per tool vs the floor's",
                None if a == b else f"{a} vs {b}", ts, sf)  # fmt: skip
    return out


def _fmt(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


#: (target text, stage, floor stage or None, test(median, floor median, result))
TARGETS: tuple[tuple[str, str, str | None, Callable[..., bool]], ...] = (
    ("Inspect: steps ≥ 10× faster than `messages_df`, peak < 1 GB", "steps_inspect_reader",
     "steps_inspect_messages_df", lambda m, f, r: f / m >= 10 and r["rss_peak"] < 1e9),
    ("Inspect, end to end (`ws.load`, attempts and steps): ≥ 10× faster than `messages_df`, "
     "peak < 1 GB", "steps_inspect_load", "steps_inspect_messages_df",
     lambda m, f, r: f / m >= 10 and r["rss_peak"] < 1e9),
    ("ATIF: load ≤ 2× DuckDB `read_json` of the same files", "steps_atif_reader",
     "steps_atif_floor", lambda m, f, r: m / f <= 2),
    ("ATIF, end to end (Harbor `ws.load`): ≤ 2× `read_json`", "steps_atif_harbor",
     "steps_atif_floor", lambda m, f, r: m / f <= 2),
    ("ATIF: load ≤ 2× `read_json` on one thread (`SET threads = 1`)", "steps_atif_reader",
     "steps_atif_floor_1t", lambda m, f, r: m / f <= 2),
    ("ATIF, end to end (Harbor `ws.load`): ≤ 2× `read_json` on one thread",
     "steps_atif_harbor", "steps_atif_floor_1t", lambda m, f, r: m / f <= 2),
    ("`find_steps(tool=, error=)` < 1 s warm", "steps_find_tool", "steps_find_floor",
     lambda m, f, r: m < 1),
    ("`find_steps(contains=)` < 1 s warm", "steps_find_contains", "steps_find_floor",
     lambda m, f, r: m < 1),
    ("`job.tool_stats()` < 2 s warm", "steps_tool_stats", "steps_stats_floor",
     lambda m, f, r: m < 2),
    ("`job.turn_stats()` < 2 s warm", "steps_turn_stats", "steps_stats_floor",
     lambda m, f, r: m < 2),
    ("browser: 10,000-step transcript, first screen < 1 s", "steps_browser_transcript",
     "steps_browser_floor", lambda m, f, r: m < 1),
    ("browser: two 500-step attempts side by side < 1 s", "steps_browser_compare",
     "steps_browser_floor", lambda m, f, r: m < 1),
)  # fmt: skip


def section(report: dict[str, Any]) -> str:
    """The "Steps (issue 35)" section of RESULTS.md."""
    res: list[dict[str, Any]] = report["results"]
    m = report["machine"]
    w: list[str] = []
    w.append("## Steps (issue 35)\n")
    runs: list[dict[str, Any]] = []  # one per invocation: (command, date)
    for r in res:
        if not r.get("run"):
            continue
        same = [
            x for x in runs if (x["command"], x["date"]) == (r["run"]["command"], r["run"]["date"])
        ]
        if same:
            same[0]["load_end"] = r["run"]["load_end"]
        else:
            runs.append(dict(r["run"]))

    def run_of(r: dict[str, Any]) -> Any:
        key = (r["run"]["command"], r["run"]["date"]) if r.get("run") else None
        return next((i for i, x in enumerate(runs, 1) if (x["command"], x["date"]) == key), "-")

    w.append(
        f"Machine: {m['cpu']}, {m['cores']} cores, shared with other engineers' builds and "
        "tests (load averages below). Each row: median of N runs, each in a fresh process "
        "(`python -m benchmarks stage <stage> --size <size>`; imports and setup untimed, the "
        "loader's own modules imported in the timed body as a first load would, the OS file "
        "cache warm); peak RSS of the timed body; CPU: process CPU time of the timed body "
        "(all threads, and the worker processes it ran: shown apart with the largest "
        "worker's peak RSS, which counts the pages it shares with the parent after the "
        "fork). *× floor*: this time / its floor's (the group's floor at the same "
        "size). *run*: which invocation measured the row (a row is replaced when its stage "
        "is re-run). What each stage times: `benchmarks/bench_steps.py`'s docstring; the "
        "data: `benchmarks/steps_data.py`. Why the misses are missed, with profiles: "
        '[`FINDINGS.md`](FINDINGS.md), "Steps (issue 35), 2026-12-06".\n'
    )
    for i, run in enumerate(runs, 1):
        w.append(
            f"{i}. `{run['command']}` — {run['date']}, commit {run['commit']}, "
            + "load average "
            + " → ".join(
                "?" if x is None else f"{x:.1f}" for x in (run["load_start"], run["load_end"])
            )
        )
    w.append("")
    for note in report.get("notes", []):
        w.append(f"- Note: {note}")
    if report.get("notes"):
        w.append("")
    w.append(
        "| stage | size | median | spread (min–max) | N | CPU | peak RSS | × floor | run | facts |"
    )
    w.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in res:
        run_no = run_of(r)
        if "error" in r:
            w.append(
                f"| {r['stage'].removeprefix('steps_')} | {r['size']} | failed | | | | | | "
                f"{run_no} | {r['error'][:200]} |"
            )
            continue
        floor_name = next((f for s, f in GROUPS.values() if r["stage"] in s), None)
        floor = _get(res, floor_name, r["size"]) if floor_name else None
        ratio = f"{r['median'] / floor['median']:.2f}×" if floor else "-"
        cpu = statistics.median(x["cpu_seconds"] for x in r["runs"])
        kids = statistics.median(x.get("cpu_children_seconds") or 0 for x in r["runs"])
        cpu_text = _fmt(cpu)
        if kids:  # worker processes: their CPU counted in, and shown apart
            cpu = statistics.median(
                x["cpu_seconds"] + (x.get("cpu_children_seconds") or 0) for x in r["runs"]
            )
            peak = max(x.get("rss_peak_children") or 0 for x in r["runs"])
            cpu_text = f"{_fmt(cpu)} (workers {_fmt(kids)}, their peak {peak / MB:.0f} MB)"
        facts = ", ".join(f"{k} {v}" for k, v in r["extra"].items() if k not in ("repr",)
                          and not isinstance(v, dict))  # fmt: skip
        if r["stage"].startswith("steps_browser_"):
            shown = [x["extra"]["shown_s"] for x in r["runs"]]
            fcp = [x["extra"]["fcp_ms"] for x in r["runs"] if x["extra"]["fcp_ms"]]
            facts = (f"{r['extra']['page']}.html {r['extra']['bytes'] / MB:.1f} MB; "
                     f"first contentful paint {statistics.median(fcp):.0f} ms (median)"
                     if fcp else facts) + f"; shown median {_fmt(statistics.median(shown))}"  # fmt: skip
        w.append(
            f"| {r['stage'].removeprefix('steps_')} | {r['size']} | {_fmt(r['median'])} "
            f"| {_fmt(r['min'])}–{_fmt(r['max'])} | {r['repeats']} | {cpu_text} "
            f"| {r['rss_peak'] / MB:.0f} MB | {ratio} | {run_no} | {facts} |"
        )
    w.append("")
    w.append("| target | size | measured | floor | ratio | met |")
    w.append("|---|---|---:|---:|---:|---|")
    for text, stage, floor_name, test in TARGETS:
        for r in res:
            if r["stage"] != stage or "error" in r:
                continue
            floor = _get(res, floor_name, r["size"]) if floor_name else None
            if floor is None:
                continue
            wired = r["extra"].get("wired", True)
            if not wired:
                w.append(f"| {text} | {r['size']} | {_fmt(r['median'])} | "
                         f"{_fmt(floor['median'])} | - | not measured: the loader "
                         "does not write steps yet |")  # fmt: skip
                continue
            fm, mm = floor["median"], r["median"]
            ratio = f"{fm / mm:.1f}× faster" if "faster" in text else f"{mm / fm:.2f}×"
            ok = test(mm, fm, r)
            w.append(f"| {text} | {r['size']} | {_fmt(mm)} (peak {r['rss_peak'] / MB:.0f} MB) "
                     f"| {_fmt(fm)} | {ratio} | {'yes' if ok else '**no**'} |")  # fmt: skip
    w.append("")
    w.append("Agreement checks (before any time is reported):\n")
    for c in report["checks"]:
        w.append(
            f"- {c['what']}: {'agree' if c['problem'] is None else '**' + c['problem'] + '**'}"
        )
    w.append("")
    return "\n".join(w) + "\n"


def with_section(text: str, report: dict[str, Any]) -> str:
    """``text`` (RESULTS.md) with the steps section replaced, or added before "## Targets"."""
    block = f"{BEGIN}\n{section(report)}{END}\n"
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        head, rest = text.split("## Targets\n", 1)
        text = head + block + "\n## Targets\n" + rest
    return text


def write_section(report: dict[str, Any], results_md: Path = HERE / "RESULTS.md") -> None:
    """Write the section into RESULTS.md (``python -m benchmarks report`` keeps it: it adds
    the section again from ``benchmarks/data/steps-results.json``)."""
    results_md.write_text(with_section(results_md.read_text(), report))


def run(
    plan: list[tuple[str, str, int]],
    command: str,
    *,
    merge: bool = True,
    notes: tuple[str, ...] | list[str] = (),
) -> dict[str, Any]:
    """Measure each ``(stage, size, repeats)``; save and write the section after each."""
    from .runner import machine, measure

    report: dict[str, Any] = {"machine": machine(), "command": command, "results": [],
                              "checks": [], "notes": [], "load_start": os.getloadavg()}  # fmt: skip
    if merge and RESULTS_JSON.exists():
        old = json.loads(RESULTS_JSON.read_text())
        report["results"] = old["results"]
        report["notes"] = old.get("notes", [])
    report["notes"] += [n for n in notes if n not in report["notes"]]
    t0 = time.perf_counter()
    this = {"command": command, "date": report["machine"]["date"],
            "commit": report["machine"]["commit"], "load_start": report["load_start"][0]}  # fmt: skip
    for stage, size, repeats in plan:
        r = measure(stage, size, repeats, timeout=3600)
        r["run"] = this | {"load_end": os.getloadavg()[0]}
        report["results"] = [
            x for x in report["results"] if (x["stage"], x["size"]) != (stage, size)
        ] + [r]
        report["checks"] = check(report["results"])
        report["load_end"] = os.getloadavg()
        report["wall_minutes"] = (time.perf_counter() - t0) / 60
        RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
        RESULTS_JSON.write_text(json.dumps(report, indent=1, default=str))
        write_section(report)
    return report


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_steps")
    p.add_argument("--inspect", default="20k", help="Inspect log sizes (samples)")
    p.add_argument("--atif", default="10k,100k", help="ATIF job sizes (attempts)")
    p.add_argument("--scale", default="1M", help="attempts (× 20 steps) for find/stats")
    p.add_argument("--transcript", default="10000", help="steps of the browser transcript")
    p.add_argument("--compare", default="500", help="steps of each side-by-side attempt")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated stage names (else all)")
    p.add_argument("--fresh", action="store_true", help="start a new results file")
    p.add_argument("--note", action="append", default=[], help="a note for the section")
    args = p.parse_args(argv)
    sizes = {
        "inspect": args.inspect, "atif": args.atif, "find": args.scale,
        "stats": args.scale, "transcript": args.transcript, "compare": args.compare,
    }  # fmt: skip
    plan = []
    for group, (stages, floor) in GROUPS.items():
        for size in (x for x in sizes[group].split(",") if x):
            for stage in (*stages, floor):
                if args.only and stage not in args.only.split(","):
                    continue
                slow = stage in ("steps_inspect_messages_df",) or (
                    stage.startswith("steps_atif") and sd.parse_count(size) >= 100_000
                )
                plan.append((stage, size, 1 if slow else args.repeats))  # fmt: skip
    plan = list(dict.fromkeys(plan))
    command = "python -m benchmarks.bench_steps " + " ".join(argv)
    report = run(plan, command.strip(), merge=not args.fresh, notes=args.note)
    bad = [c for c in report["checks"] if c["problem"]]
    for c in bad:
        print(f"DISAGREEMENT: {c['what']}: {c['problem']}", file=sys.stderr)
    print(section(report))
    if bad:
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
