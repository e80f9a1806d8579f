"""Smoke test of the benchmark (issue 6) at 100k attempts: agreement, not timing.

Generates the 100k job (Parquet file, hive-partitioned folder, EnvLoop JSONL.gz) into a
temporary folder, loads it into a workspace both ways, and checks that envloop_nb's
per-task table and pass@k / pass^k curve agree with the three baselines (DuckDB floor,
pandas, polars) to 1e-9, as the runner does before it reports any time.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import duckdb
import pytest

import envloop_nb as enb
from benchmarks import baselines as bl
from benchmarks.generate import SIZES, THRESHOLD, generate
from benchmarks.report import write_markdown
from benchmarks.runner import TABLE_MAPPING

KMAX = 32


@pytest.fixture(scope="module")
def shape_100k(tmp_path_factory: pytest.TempPathFactory):
    s = dataclasses.replace(SIZES["100k"], root=tmp_path_factory.mktemp("bench"))
    generate(s, ("parquet", "hive", "jsonl"))
    return s


@pytest.fixture(scope="module")
def envloop_result(shape_100k):
    ws = enb.open()
    job = ws.load(
        str(shape_100k.parquet),
        format="table",
        mapping=dict(TABLE_MAPPING),
        k=shape_100k.k,
        job_id="from_parquet",
    )
    summary, per_task, curve = bl.envloop(job, THRESHOLD, KMAX)
    yield ws, job, summary, bl.canonical(per_task, curve)
    ws.close()


def test_generated_shares_are_realistic(shape_100k) -> None:
    row = duckdb.sql(
        f"""SELECT count(*), count(reward),
                   count(*) FILTER (WHERE status = 'failed'),
                   count(*) FILTER (WHERE reward NOT IN (0, 1)),
                   count(DISTINCT task)
            FROM read_parquet('{shape_100k.parquet}')"""
    ).fetchone()
    assert row is not None
    dispatched, scored, failed, nonbinary, tasks = row
    slots = shape_100k.slots
    assert tasks == shape_100k.tasks
    assert 0.002 < 1 - dispatched / slots < 0.01  # undispatched
    assert 0.01 < failed / dispatched < 0.03
    assert 0.01 < 1 - scored / dispatched < 0.04  # dispatched without reward
    assert 0.03 < nonbinary / scored < 0.07


def test_generator_is_deterministic(tmp_path: Path) -> None:
    a = dataclasses.replace(SIZES["10k"], root=tmp_path / "a")
    b = dataclasses.replace(SIZES["10k"], root=tmp_path / "b")
    generate(a, ("parquet",))
    generate(b, ("parquet",))
    q = "SELECT * FROM read_parquet('{}') EXCEPT ALL SELECT * FROM read_parquet('{}')"
    assert duckdb.sql(q.format(a.parquet, b.parquet)).fetchall() == []
    assert duckdb.sql(q.format(b.parquet, a.parquet)).fetchall() == []


@pytest.mark.parametrize("name", ["floor", "pandas", "polars", "pandas_apply"])
def test_baselines_agree_with_envloop_nb(shape_100k, envloop_result, name: str) -> None:
    fn = {
        "floor": bl.floor,
        "pandas": bl.pandas_baseline,
        "polars": bl.polars_baseline,
        "pandas_apply": bl.pandas_apply_baseline,
    }[name]
    expected = envloop_result[3]
    got = bl.canonical(*fn(shape_100k.parquet, THRESHOLD, KMAX))
    assert bl.disagreement(expected, got) is None
    assert len(got[0]) == shape_100k.tasks and len(got[1]) == KMAX


def test_floor_on_hive_folder_agrees(shape_100k, envloop_result) -> None:
    glob = f"{shape_100k.hive}/**/*.parquet"
    got = bl.canonical(*bl.floor(glob, THRESHOLD, KMAX))
    assert bl.disagreement(envloop_result[3], got) is None


def test_jsonl_and_hive_ingests_give_the_same_numbers(shape_100k, envloop_result) -> None:
    ws, _, summary, expected = envloop_result
    from_jsonl = ws.load(shape_100k.jsonl, job_id="from_jsonl")
    from_hive = ws.load(
        str(shape_100k.hive),
        format="table",
        mapping=dict(TABLE_MAPPING),
        k=shape_100k.k,
        job_id="from_hive",
    )
    for job in (from_jsonl, from_hive):
        s2, per_task, curve = bl.envloop(job, THRESHOLD, KMAX)
        assert bl.disagreement(expected, bl.canonical(per_task, curve)) is None
        assert (s2.scored, s2.total, s2.invalid) == (summary.scored, summary.total, summary.invalid)
    # the JSONL carries retried slots: resolved to the same attempts of record
    retried = ws.sql(
        "SELECT count(*) FROM attempts WHERE job_id = 'from_jsonl' AND n_trials > 1"
    ).fetchone()
    assert retried is not None and retried[0] > 100


def test_disagreement_is_detected(envloop_result) -> None:
    per_task, curve = envloop_result[3]
    broken = per_task.copy()
    broken.loc[5, "pass@8"] = broken.loc[5, "pass@8"] + 1e-6
    problem = bl.disagreement((per_task, curve), (broken, curve))
    assert problem is not None and "pass@8" in problem


def _report(results: list[dict], checks: list[dict]) -> dict:
    """A runner report around ``results`` (machine facts made up)."""
    keys = ("cpu", "cores", "memory", "os", "python", "duckdb", "pandas", "polars")
    return {
        "machine": {k: "x" for k in keys}
        | {"pyarrow": "x", "numpy": "x", "date": "today", "commit": "abc"},
        "load_start": (0.1, 0.2, 0.3),
        "load_end": (0.1, 0.2, 0.3),
        "wall_minutes": 1.0,
        "notes": [],
        "results": results,
        "checks": checks,
    }


def test_report_renders() -> None:
    run = {"seconds": 1.0, "rows": 100, "rss_setup": 1, "rss_peak": 2, "peak_exact": True}
    result = {
        "stage": "stage2_floor",
        "size": "100k",
        "repeats": 1,
        "median": 1.0,
        "min": 1.0,
        "max": 1.0,
        "rows": 100_000,
        "rss_peak": 300 * 2**20,
        "rss_setup": 60 * 2**20,
        "extra": {},
        "runs": [run],
    }
    report = _report([result], [{"what": "stage 2 100k: envloop_nb vs floor", "problem": None}])
    text = write_markdown(report)
    assert "| 2 metrics | DuckDB floor: floor | 100k (3,125×32) | 1.00 s |" in text
    assert "## Targets" in text


def test_panel_numbers_have_one_record(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """RESULTS.md (stage 5) is the only record: PANEL_RESULTS.md contradicted it."""
    from benchmarks import bench_panel
    from benchmarks.report import PANEL_NOTES

    here = Path(bench_panel.__file__).resolve().parent
    assert not (here / "PANEL_RESULTS.md").exists()
    results = (here / "RESULTS.md").read_text(encoding="utf-8")
    assert "## Stage 5: panel interactions" in results and PANEL_NOTES in results
    row = {"interaction": "cases: next page", "n_attempts": 10, "repeats": 1}
    fake = [row | {"median_ms": 5.0, "min_ms": 4.0, "max_ms": 6.0}]
    monkeypatch.setattr(bench_panel, "run", lambda n, repeats: fake)
    monkeypatch.setattr("sys.argv", ["bench_panel.py", "10", "1"])
    before = sorted(p.name for p in here.iterdir())
    bench_panel.main()  # prints, writes nothing
    assert sorted(p.name for p in here.iterdir()) == before
    assert "| cases: next page | 10 | 5 | 4 | 6 | 1 |" in capsys.readouterr().out
    # the report's stage 5 section carries the notes
    panel = {"stage": "panel", "size": "1M", "rss_peak": 2**30, "extra": {"interactions": fake}}
    report = _report([panel], [])
    text = write_markdown(report)
    assert "| cases: next page | 10 | 5 ms | 4–6 ms | 1 |" in text and PANEL_NOTES in text


@pytest.mark.slow  # ~8 s (importing inspect_ai alone takes ~5 s)
# samples_df (inspect_ai 0.3.285) calls drop_duplicates(inplace=True): deprecated in pandas 3.1
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.drop_duplicates")
def test_stage6_inspect_log_agrees(tmp_path: Path) -> None:
    """Stage 6 at 200 samples × 2 epochs: inspect_ai writes the log, both readers agree."""
    pytest.importorskip("inspect_ai")
    from benchmarks import bench_inspect as bi

    eval_path, json_path = bi.ensure_log("200x2", tmp_path)
    assert eval_path.stat().st_size > 0 and json_path.stat().st_size > 0
    by_stage = {}
    for name in bi.STAGES:
        body, rows, after = bi.setup(name, "200x2", tmp_path / "ws", root=tmp_path)
        assert rows == 400
        by_stage[name] = {"stage": name, "size": "200x2", "extra": after(body())}
    checks = bi.check("200x2", by_stage)
    assert [c["problem"] for c in checks] == [None, None]
    # ~2% errored samples: scored < records
    extra = by_stage["inspect_envloop_eval"]["extra"]
    assert 350 < extra["scored"] < 400
    run = {"seconds": 1.0, "cpu_seconds": 1.0, "rows": 400, "rss_setup": 1, "rss_peak": 2}
    results = [
        r
        | {
            "repeats": 1,
            "median": m,
            "min": m,
            "max": m,
            "rows": 400,
            "rss_peak": 300 * 2**20,
            "rss_setup": 60 * 2**20,
            "runs": [run | {"seconds": m, "cpu_seconds": m}],
        }
        for r, m in zip(by_stage.values(), (0.1, 2.0, 0.2, 3.0), strict=True)
    ]
    text = write_markdown(_report(results, checks))
    assert "## Stage 6: Inspect AI log" in text
    assert "| 20.0× | yes |" in text  # samples_df 2.0 s ÷ envloop_nb 0.1 s
    assert "stage 6: Inspect .eval load ≥ 10× faster than samples_df, < 1 GB peak (@200x2)" in text


@pytest.mark.slow  # ~40-70 s: a cold JVM's first queries (JIT) take most of it
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_stage7_spark_agrees_with_the_duckdb_path(
    shape_100k, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stage 7 at 100k: the reduction by phase (the private steps of ``reduce_spark``
    that the benchmark calls), the Spark SQL floor and the DuckDB path on the same
    Parquet files; the runner's check passes, the report renders the stage 7 section.
    (``spark_envloop``, the public ``ws.load_spark``, is left out for time: the same
    queries, and tests/test_spark.py covers it.)"""
    pytest.importorskip("pyspark")
    from benchmarks import bench_spark as bsp

    # agreement, not timing: few shuffle partitions keep the smoke test short
    monkeypatch.setattr(bsp, "CONF", bsp.CONF | {"spark.sql.shuffle.partitions": "4"})
    monkeypatch.setenv("PYSPARK_PYTHON", "/bin/false")
    files = sorted(bsp.ensure_files(shape_100k).glob("*.parquet"))
    assert len(files) == bsp.FILES
    by_stage = {}
    run = {"seconds": 1.0, "cpu_seconds": 1.0, "rows": shape_100k.slots}
    for name in ("spark_phases", "spark_floor", "spark_duckdb"):
        body, rows, after = bsp.setup(name, shape_100k, tmp_path / "ws")
        assert rows == shape_100k.slots
        extra = after(body())
        by_stage[name] = {"stage": name, "size": "100k", "extra": extra}
        by_stage[name] |= {
            "repeats": 1,
            "median": 1.0,
            "min": 1.0,
            "max": 1.0,
            "rows": rows,
            "rss_peak": 300 * 2**20,
            "rss_setup": 60 * 2**20,
            "runs": [run | {"extra": extra}],
        }
    checks = bsp.check("100k", by_stage)
    assert [c["problem"] for c in checks] == [None, None]
    assert by_stage["spark_phases"]["extra"]["summary"]["total_members"] == shape_100k.tasks
    assert by_stage["spark_phases"]["extra"]["jvm_rss_peak"] > 0
    phases = by_stage["spark_phases"]["extra"]["phases"]
    assert phases["per_task_rows"] == shape_100k.tasks and phases["to_arrow"] > 0
    # a broken number is caught
    broken = dict(by_stage["spark_phases"])
    broken["extra"] = broken["extra"] | {"summary": broken["extra"]["summary"] | {"scored": 1}}
    assert bsp.check("100k", by_stage | {"spark_phases": broken})[0]["problem"]
    text = write_markdown(_report(list(by_stage.values()), checks))
    assert "## Stage 7: Spark (`ws.load_spark`) in local mode" in text
    assert "| `toArrow()` of the per-task rows (JVM → Python) |" in text


@pytest.mark.slow  # ~10-20 s: the altair import and the vega-embed bundle dominate
def test_stage8_scale_stages_run_and_agree(tmp_path: Path) -> None:
    """Stage 8 at 3 jobs of 10k attempts: every stage's body runs, the checks pass, the
    report renders its section and target rows (timing is the runner's, not asserted)."""
    from benchmarks import bench_scale as bs

    s = dataclasses.replace(SIZES["10k"], root=tmp_path)
    built = bs.ensure_workspace(s, tmp_path / "ws", n_jobs=3, small=s)
    assert built["built_s"] is not None
    assert bs.ensure_workspace(s, tmp_path / "ws", n_jobs=3, small=s)["built_s"] is None
    by_stage = {}
    for name in bs.STAGES:
        body, rows, after = bs.setup(name, s, tmp_path / "ws", n_jobs=3, out_dir=tmp_path / "out")
        assert rows == s.slots
        extra = after(body())
        run = {"seconds": 0.5, "cpu_seconds": 0.5, "rows": rows, "extra": extra}
        by_stage[name] = {
            "stage": name,
            "size": "10k",
            "repeats": 1,
            "median": 0.5,
            "min": 0.5,
            "max": 0.5,
            "rows": rows,
            "rss_peak": 300 * 2**20,
            "rss_setup": 60 * 2**20,
            "extra": extra,
            "runs": [run],
            "workspace": built,
        }
    checks = bs.check(s, by_stage, n_jobs=3)
    assert [c["problem"] for c in checks] == [None, None, None]
    html = by_stage["scale_html_rules"]["extra"]
    assert 0 < html["bytes"] < bs.HTML_TARGET_BYTES and "Buckets" in html["sections"]
    assert set(by_stage["scale_html_phases"]["extra"]["phases"]) >= {"vega_bundle", "diagnose"}
    broken = by_stage["scale_ws_panel"] | {
        "extra": by_stage["scale_ws_panel"]["extra"] | {"jobs_listed": 2}
    }
    assert bs.check(s, by_stage | {"scale_ws_panel": broken}, n_jobs=3)[0]["problem"]
    text = write_markdown(_report(list(by_stage.values()), checks))
    assert "## Stage 8: a 1M-attempt job at scale" in text
    assert "| workspace panel | 10k | the list's data: `job_rows`" in text
    assert "stage 8: workspace panel of 50 jobs (one of 1M attempts) opens < 1 s (@10k)" in text


def test_stage9_front_door_stages_run_and_agree(tmp_path: Path) -> None:
    """Stage 9 at 10k attempts: every body runs, every curve equals its DuckDB floor's,
    a wrong curve or count is caught, and the report renders the section and the scale
    table (timing is the runner's, not asserted)."""
    from benchmarks import bench_front as bf

    s = dataclasses.replace(SIZES["10k"], root=tmp_path)
    by_stage = {}
    for name in bf.STAGES:
        body, rows, after = bf.setup(name, s, tmp_path / "ws")
        extra = after(body())
        by_stage[name] = {
            "stage": name, "size": "10k", "repeats": 1, "median": 0.5, "min": 0.5, "max": 0.5,
            "rows": rows, "rss_peak": 300 * 2**20, "rss_setup": 60 * 2**20, "extra": extra,
            "runs": [{"seconds": 0.5, "cpu_seconds": 0.5, "rows": rows, "extra": extra}],
        }  # fmt: skip
    checks = bf.check(s, by_stage)
    assert [c["problem"] for c in checks] == [None] * 9
    for answered in ("front_load_answer", "front_in_place_answer"):
        assert set(by_stage[answered]["extra"]["phases"]) == set(bf.PHASES)
    in_place = by_stage["front_one_question_in_place"] | {
        "extra": {"curve": {**curve_of(by_stage), "tasks": [0.0]}}
    }
    assert "k/tasks differ" in str(
        bf.check(s, by_stage | {"front_one_question_in_place": in_place})[3]["problem"]
    )
    curve = by_stage["front_one_question"]["extra"]["curve"]
    wrong = {**curve, "pass@k": [x + 1e-6 for x in curve["pass@k"]]}
    bad = by_stage | {
        "front_one_question": by_stage["front_one_question"] | {"extra": {"curve": wrong}}
    }
    assert "pass@k differs" in str(bf.check(s, bad)[1]["problem"])
    short = by_stage["front_load"] | {"extra": by_stage["front_load"]["extra"] | {"scored": 1}}
    assert bf.check(s, by_stage | {"front_load": short})[5]["problem"]
    text = write_markdown(_report(list(by_stage.values()), checks))
    assert "## Stage 9: the front door" in text
    assert "| load | 10k (313×32) |" in text and "| copied | 10k (313×32) | " in text
    assert "| one question in place | 10k (313×32) |" in text
    assert "| in place | 10k (313×32) | " in text


def curve_of(by_stage: dict[str, Any]) -> dict[str, Any]:
    return dict(by_stage["front_one_question"]["extra"]["curve"])


def test_trace_load_times_every_statement_and_explains_the_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m benchmarks.trace_load``: the load's one checking pass is among the
    timed statements (so ``--explain`` finds it), copied into a file and read in place."""
    from benchmarks import trace_load as tl

    s = dataclasses.replace(SIZES["10k"], root=tmp_path)
    for copy, file in ((False, False), (True, True)):
        phases, log = tl.trace(s, copy=copy, file=file, explain=True)
        assert set(phases) == {"open", "load", "curve", "total"}
        assert any(sql.startswith(tl.PASS) for _, sql in log)
        assert any(sql.startswith("INSERT INTO attempt_rows") for _, sql in log) == copy
        assert "HASH_GROUP_BY" in capsys.readouterr().out  # the pass's plan, analysed


def _steps_run(name: str, size: str, ws_dir: Path) -> dict[str, Any]:
    """One stage of ``bench_steps`` run in this process, as the runner would report it."""
    from benchmarks import bench_steps as bst

    body, rows, after = bst.setup(name, size, ws_dir)
    extra = after(body())
    run = {"seconds": 0.5, "cpu_seconds": 0.5, "rows": rows, "extra": extra}
    return {
        "stage": name, "size": size, "repeats": 1, "median": 0.5, "min": 0.5, "max": 0.5,
        "rows": rows, "rss_peak": 300 * 2**20, "rss_setup": 60 * 2**20, "extra": extra,
        "runs": [run],
    }  # fmt: skip


def _steps_report(results: list[dict[str, Any]], checks: list[dict[str, Any]]) -> dict:
    return _report(results, checks) | {"command": "python -m benchmarks.bench_steps"}


def test_steps_atif_and_asking_stages_run_and_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_steps at 100 ATIF attempts and a 1,000-attempt workspace (20,000 step rows):
    every stage's body runs, each agrees with its floor, a wrong count is caught, and the
    section renders with its targets (timing is the runner's, not asserted)."""
    from benchmarks import bench_steps as bst
    from benchmarks import steps_data as sd

    monkeypatch.setattr(sd, "ROOT", tmp_path / "data")
    names = [
        "steps_atif_reader", "steps_atif_floor", "steps_atif_harbor", "steps_find_tool",
        "steps_find_contains", "steps_find_floor", "steps_tool_stats", "steps_turn_stats",
        "steps_stats_floor",
    ]  # fmt: skip
    res = [_steps_run(n, "100" if "atif" in n else "1k", tmp_path / "ws") for n in names]
    by = {r["stage"]: r for r in res}
    assert by["steps_atif_reader"]["extra"]["steps"] == 2_000
    assert by["steps_atif_floor"]["extra"] == {"files": 100, "atif_steps": 800}
    assert by["steps_find_tool"]["extra"]["attempts"] > 0
    checks = bst.check(res)
    assert len(checks) >= 3 and all(c["problem"] is None for c in checks), checks
    wrong = dict(by["steps_find_floor"], extra={"attempts": 1, "matches": 1})
    assert any(c["problem"] for c in bst.check([*res, wrong][::-1]))
    text = bst.section(_steps_report(res, checks))
    assert "## Steps (issue 35)" in text
    assert "| `find_steps(tool=, error=)` < 1 s warm | 1k |" in text
    assert "| ATIF: load ≤ 2× DuckDB `read_json` of the same files | 100 |" in text


@pytest.mark.slow  # a real inspect_ai eval of 4 samples (~10 s)
# inspect_ai's retry set-up calls tenacity with a deprecated argument: not ours to fix
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_steps_inspect_stages_run_and_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_steps' Inspect stages on a log of 8 samples written by inspect_ai (a real eval
    with tool calls, then its samples written again); inspect_ai is the benchmarks' lock's
    (requirements/bench.txt), not the tests'."""
    pytest.importorskip("inspect_ai")
    from benchmarks import bench_steps as bst
    from benchmarks import steps_data as sd

    monkeypatch.setattr(sd, "ROOT", tmp_path / "data")
    monkeypatch.setattr(sd, "TEMPLATES", 4)
    names = ["steps_inspect_reader", "steps_inspect_load", "steps_inspect_messages_df"]
    res = [_steps_run(n, "8", tmp_path / "ws") for n in names]
    reader = res[0]["extra"]
    assert (reader["turns"], reader["tool_calls"], reader["tool_errors"]) == (8 * 13, 40, 2)
    checks = bst.check(res)
    assert checks and all(c["problem"] is None for c in checks), checks


@pytest.mark.slow  # Chromium
def test_steps_browser_stages_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench_steps' browser stages on a 1,001-step transcript and two 12-step attempts side
    by side, each against its static floor."""
    from benchmarks import bench_steps as bst
    from benchmarks import steps_data as sd
    from benchmarks.lab import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    monkeypatch.setattr(sd, "ROOT", tmp_path / "data")
    res = []
    for name, size in (("steps_browser_transcript", "1001"), ("steps_browser_floor", "1001"),
                       ("steps_browser_compare", "12"), ("steps_browser_floor", "12")):  # fmt: skip
        r = _steps_run(name, size, tmp_path / "ws")
        assert r["extra"]["shown_s"] > 0 and r["extra"]["bytes"] > 0
        res.append(r)
    text = bst.section(_steps_report(res, bst.check(res)))
    assert "| browser: two 500-step attempts side by side < 1 s | 12 |" in text
