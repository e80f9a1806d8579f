"""The command line (``envloop_nb/_cli/``): real ``python -m envloop_nb`` processes on real
files. The gate's three exits, each reason it cannot tell, ``--json``, argparse's own usage
exit, the ``envloop-nb`` console script, and ``report`` writing a job's and a comparison's
HTML. The candidates that must pass or fail are built in ``tmp_path`` from
``sample_data/base.json`` (its rewards changed, its stale ``metrics`` block dropped).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envloop_nb._cli import EXIT_CANNOT_TELL, EXIT_NO_REGRESSION, EXIT_REGRESSION, decide

from .conftest import ROOT, SAMPLE_DATA

BASE = SAMPLE_DATA / "base.json"
COVERAGE_BASE = "coverage baseline 767/800 scored (95.9%), candidate 767/800 scored (95.9%)"


def run(*args: str | Path, script: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m envloop_nb ARGS`` (or the ``envloop-nb`` script) from the repository root."""
    head = [str(Path(sys.executable).parent / "envloop-nb")] if script else [sys.executable, "-m", "envloop_nb"]  # fmt: skip
    return subprocess.run(
        [*head, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def variant(tmp_path: Path, name: str, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    """A copy of ``base.json`` with its trials changed by ``change`` (same job id)."""
    doc = json.loads(BASE.read_text())
    doc = copy.deepcopy(doc)
    doc.pop("metrics", None)  # the platform's numbers no longer hold
    change(doc["trials"])
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def regress(trials: list[dict[str, Any]]) -> None:
    """Every fourth passing attempt fails."""
    passes = [t for t in trials if t.get("reward") == 1.0]
    for t in passes[::4]:
        t["reward"] = 0.0


def noise(trials: list[dict[str, Any]]) -> None:
    """Six attempts fixed and six broken, each in its own task: no change on average."""
    fixed = broken = 0
    touched: set[str] = set()
    for t in trials:
        if t["task"] in touched or t.get("reward") is None:
            continue
        if t["reward"] == 1.0 and broken < 6:
            t["reward"], broken = 0.0, broken + 1
            touched.add(t["task"])
        elif t["reward"] == 0.0 and fixed < 6:
            t["reward"], fixed = 1.0, fixed + 1
            touched.add(t["task"])


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr
    return lines[0]


def gate(*args: str | Path, expect: int) -> str:
    """``envloop-nb gate ARGS``: its exit code checked against ``expect``, its one line."""
    proc = run("gate", *args)
    assert proc.returncode == expect, proc.stdout + proc.stderr
    return one_line(proc)


# -- exit 1: regression ---------------------------------------------------------------------
def test_gate_fails_a_regressed_candidate(tmp_path: Path) -> None:
    line = gate(BASE, variant(tmp_path, "regressed", regress), expect=EXIT_REGRESSION)
    assert line == (
        "REGRESSION: a drop beyond the margin -0.02 and beyond noise"
        " · score candidate-baseline -0.1213, 95% CI [-0.1391, -0.1035], margin -0.02"
        f" · 169/200 tasks shared and complete · {COVERAGE_BASE}"
    )


def test_gate_json_between_two_checkpoints() -> None:
    """The earlier checkpoint as candidate of the later one: a real regression, as JSON."""
    line = gate(
        SAMPLE_DATA / "sft-step1000.jsonl.gz",
        BASE,
        "--json",
        "--alpha",
        "0.1",
        expect=EXIT_REGRESSION,
    )
    out = json.loads(line)
    assert out["verdict"] == "REGRESSION" and out["exit_code"] == 1
    assert round(out["diff"], 4) == -0.1125  # cmp.paired()'s score_diff of these jobs
    assert out["confidence"] == pytest.approx(0.9)
    assert out["low"] < out["diff"] < out["high"] < 0
    assert (out["tasks"], out["tasks_union"]) == (140, 200)
    assert out["baseline"]["scored"] == 767 and out["candidate"]["total"] == 800


# -- exit 0: no regression beyond noise -----------------------------------------------------
def test_gate_passes_a_noisy_but_equal_candidate(tmp_path: Path) -> None:
    line = gate(BASE, variant(tmp_path, "noisy", noise), expect=EXIT_NO_REGRESSION)
    assert line == (
        "NO REGRESSION: the whole interval is above -0.02"
        " · score candidate-baseline +0.0000, 95% CI [-0.0089, +0.0089], margin -0.02"
        f" · 169/200 tasks shared and complete · {COVERAGE_BASE}"
    )


def test_gate_same_failure_is_a_regression_only_beyond_the_margin(tmp_path: Path) -> None:
    """The regressed candidate with a margin wider than its whole interval passes."""
    line = gate(
        BASE,
        variant(tmp_path, "regressed", regress),
        "--max-drop",
        "0.2",
        expect=EXIT_NO_REGRESSION,
    )
    assert line.startswith("NO REGRESSION: the whole interval is above -0.2 · ")


# -- exit 2: cannot tell --------------------------------------------------------------------
def test_gate_incomparable_pair() -> None:
    line = gate(BASE, SAMPLE_DATA / "other-revision.json", expect=EXIT_CANNOT_TELL)
    assert line == (
        "CANNOT TELL: not comparable: dataset acme-agent-bench@2026.11 (baseline) vs"
        " acme-agent-bench@2026.10 (candidate); dataset revision sha256:c60972a3c07b…"
        " (baseline) vs sha256:ff0840e8d8da… (candidate); attempts 4 (baseline) vs 2"
        " (candidate); 6 tasks only in baseline; 6 tasks only in candidate"
        " · coverage baseline 767/800 scored (95.9%), candidate 388/400 scored (97.0%)"
    )


def test_gate_aggregate_numbers_only() -> None:
    """lm-eval results without samples (Pythia checkpoints): no task list, nothing to pair."""
    zero_shot = ROOT / "tests" / "data" / "lm_eval" / "pythia-160m" / "zero-shot"
    line = gate(
        zero_shot / "160m_step113000.json",
        zero_shot / "160m_step123000.json",
        expect=EXIT_CANNOT_TELL,
    )
    assert line == (
        "CANNOT TELL: not comparable: the task lists of 2 jobs are unknown (baseline and"
        " candidate): their runs hold only aggregate metrics · coverage baseline no attempts"
        " (aggregate numbers only),"
        " candidate no attempts (aggregate numbers only)"
    )


def test_gate_underpowered_too_few_tasks() -> None:
    runs = SAMPLE_DATA / "agent_runs"
    line = gate(runs / "base", runs / "sft-step2000", expect=EXIT_CANNOT_TELL)
    assert line == (
        "CANNOT TELL: underpowered: only 10 tasks shared and completely scored (need at"
        " least 20, --min-tasks) · score candidate-baseline +0.1333, 95% CI [-0.2000, +0.4000],"
        " margin -0.02 · 10/12 tasks shared and complete"
        " · coverage baseline 35/36 scored (97.2%), candidate 35/36 scored (97.2%)"
    )


def test_gate_underpowered_wide_interval() -> None:
    """Enough tasks by --min-tasks, but the interval reaches below the margin: never a pass."""
    runs = SAMPLE_DATA / "agent_runs"
    line = gate(runs / "base", runs / "sft-step2000", "--min-tasks", "1", expect=EXIT_CANNOT_TELL)
    assert line.startswith(
        "CANNOT TELL: underpowered: the interval reaches below -0.02 but the drop is not"
        " established (more tasks or attempts would tell) · score candidate-baseline +0.1333"
    )


def test_gate_too_much_missing() -> None:
    line = gate(
        SAMPLE_DATA / "sft-step1000.jsonl.gz", SAMPLE_DATA / "running.json", expect=EXIT_CANNOT_TELL
    )
    assert line == (
        "CANNOT TELL: too much missing: coverage below the minimum 90% (--min-coverage):"
        " candidate 241/800 scored (30.1%)"
        " · coverage baseline 767/800 scored (95.9%), candidate 241/800 scored (30.1%)"
        " · note: candidate is running, not completed"
    )


def test_gate_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-job.json"
    line = gate(BASE, missing, expect=EXIT_CANNOT_TELL)
    assert line == f"CANNOT TELL: the candidate did not load: {missing}: no such file or folder"  # fmt: skip


def test_gate_pass_rate_of_non_binary_rewards_needs_a_threshold() -> None:
    graded = SAMPLE_DATA / "graded.json"
    line = gate(graded, graded, "--metric", "pass", expect=EXIT_CANNOT_TELL)
    assert line.startswith(
        "CANNOT TELL: the pass rate is undefined: rewards are not binary (give --threshold)"
    )
    line = gate(graded, graded, "--metric", "pass", "--threshold", "0.5", expect=EXIT_NO_REGRESSION)
    assert "pass candidate-baseline +0.0000, 95% CI [+0.0000, +0.0000]" in line


def test_a_crash_exits_2_never_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unexpected error must not exit 1 (Python's own exit for one), which reads as a regression."""
    import io

    from envloop_nb import _cli

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(_cli, "gate", broken)
    out = io.StringIO()
    assert _cli.main(["gate", "a.json", "b.json"], out=out) == EXIT_CANNOT_TELL
    assert out.getvalue() == "CANNOT TELL: the gate failed: RuntimeError: boom\n"
    assert "Traceback" in capsys.readouterr().err


def test_gate_usage_error_is_argparse_exit_2() -> None:
    proc = run("gate", BASE)
    assert proc.returncode == 2
    assert proc.stdout == "" and "usage: envloop-nb gate" in proc.stderr


def test_console_script_and_help() -> None:
    proc = run("gate", "--help", script=True)
    assert proc.returncode == 0, proc.stderr
    for words in ("exit 0  NO REGRESSION  lo >= -d", "exit 1  REGRESSION", "exit 2  CANNOT TELL"):  # fmt: skip
        assert words in proc.stdout
    proc = run("report", "--help", script=True)
    assert "one PATH makes that job's report" in proc.stdout


@given(
    diff=st.floats(-1, 1),
    a=st.floats(0, 1),
    b=st.floats(0, 1),
    max_drop=st.floats(0, 0.5),
)
def test_decide_never_passes_when_the_interval_reaches_below_the_margin(
    diff: float, a: float, b: float, max_drop: float
) -> None:
    low, high = diff - a, diff + b
    code, _ = decide(diff=diff, low=low, high=high, max_drop=max_drop)
    assert (code == EXIT_NO_REGRESSION) == (low >= -max_drop)
    assert (code == EXIT_REGRESSION) == (low < -max_drop and diff < -max_drop and high < 0)


# -- report -----------------------------------------------------------------------------------
def test_report_of_one_job(tmp_path: Path) -> None:
    out = tmp_path / "job.html"
    proc = run("report", BASE, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert one_line(proc).startswith(f"wrote {out} (")
    text = out.read_text()
    assert "<title>Job job_base</title>" in text
    assert "767/800" in text  # the summary's coverage


def test_report_of_a_comparison_keeps_two_jobs_of_one_id(tmp_path: Path) -> None:
    out = tmp_path / "cmp.html"
    proc = run("report", BASE, variant(tmp_path, "noisy", noise), "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "<title>Comparison job_base vs job_base-2</title>" in text


def test_report_refuses_more_than_five(tmp_path: Path) -> None:
    out = tmp_path / "six.html"
    proc = run("report", *([BASE] * 6), "-o", out)
    assert proc.returncode == 2
    assert "a report takes one job or 2-5 jobs to compare, got 6 paths" in proc.stderr
    assert not out.exists()


def test_gate_on_parquet_files_read_in_place(tmp_path: Path) -> None:
    """The benchmark's files in small: the generator's Parquet job and its regressed copy."""
    from benchmarks.bench_gate import candidate
    from benchmarks.generate import Shape, generate

    s = Shape("gate", 300, 4, root=tmp_path)
    generate(s, ("parquet",))
    cand = candidate(s.parquet)
    gate(s.parquet, s.parquet, "--policy", "failure", expect=EXIT_NO_REGRESSION)
    line = gate(s.parquet, cand, "--policy", "failure", "--json", expect=EXIT_REGRESSION)
    out = json.loads(line)
    assert (out["tasks"], out["baseline"]["total"]) == (300, 1200)
    import duckdb  # every task complete under policy=failure: the difference of the sums

    sums = [
        duckdb.execute("SELECT sum(reward) FROM read_parquet(?)", [str(p)]).fetchone()[0]
        for p in (s.parquet, cand)
    ]
    assert out["diff"] == pytest.approx((sums[1] - sums[0]) / 1200, abs=1e-12)


def test_gate_loads_two_parquet_files_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two local Parquet files load at once, each on its own connection to the workspace,
    the ``attempts`` view rebuilt once after both: the same jobs, view and verdict as one
    load after the other, and a refused source is named as before (each load on its own
    connection rebuilding the view failed: a catalog write-write conflict on ``attempts``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import envloop_nb as enb
    from benchmarks.bench_gate import candidate
    from benchmarks.generate import Shape, generate
    from envloop_nb._cli import regression

    s = Shape("gate", 300, 4, root=tmp_path)
    generate(s, ("parquet",))
    base, cand = str(s.parquet), str(candidate(s.parquet))
    ws = enb.open()
    try:
        threads = ws.sql("SELECT current_setting('threads')").fetchone()
        jobs = regression._load_both(ws, base, cand, fmt=None)
        assert [j.id for j in jobs if isinstance(j, enb.Job)] == ["baseline", "candidate"]
        rows = ws.sql("SELECT job_id, count(*) FROM attempts GROUP BY ALL ORDER BY 1").fetchall()
        assert [r[0] for r in rows] == ["baseline", "candidate"] and rows[0][1] == rows[1][1]
        assert ws.sql("SELECT current_setting('threads')").fetchone() == threads
    finally:
        ws.close()
    repeated = tmp_path / "repeated.parquet"
    pq.write_table(
        pa.table({"task": ["t", "t"], "attempt": [1, 1], "reward": [1.0, 0.0]}), repeated
    )
    cases = [(base, cand), (base, str(repeated)), (str(repeated), cand)]
    at_once = [regression.gate(a, b, policy="failure", resamples=300) for a, b in cases]
    assert [r.exit_code for r in at_once] == [EXIT_REGRESSION, EXIT_CANNOT_TELL, EXIT_CANNOT_TELL]
    assert at_once[1].reason.startswith("the candidate did not load: ")
    assert at_once[2].reason.startswith("the baseline did not load: ")
    monkeypatch.setattr(regression, "_in_place_file", lambda source, fmt: False)
    assert [regression.gate(a, b, policy="failure", resamples=300) for a, b in cases] == at_once


def test_gate_loads_at_once_in_the_workspace_time_zone(tmp_path: Path) -> None:
    """A connection of its own starts in the process's time zone, not the workspace's
    (``enb.open`` sets UTC): the loads at once read naive timestamps in the workspace's,
    as one load after the other does."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    import envloop_nb as enb
    from envloop_nb._cli import regression

    start = [dt.datetime(2026, 1, 1, 12, 0), dt.datetime(2026, 1, 1, 13, 0)]
    paths = []
    for name in ("a", "b"):
        paths.append(str(tmp_path / f"{name}.parquet"))
        table = pa.table(
            {"task": ["t", "u"], "attempt": [1, 1], "reward": [1.0, 0.0], "started_at": start,
             "finished_at": [s + dt.timedelta(minutes=5) for s in start]}
        )  # fmt: skip
        pq.write_table(table, paths[-1])
    infos = []
    for at_once in (True, False):
        ws = enb.open()
        try:
            ws.con.execute("SET TimeZone = 'Asia/Tokyo'")  # not the process's (UTC here)
            if at_once:
                jobs = regression._load_both(ws, *paths, fmt=None)
            else:
                jobs = [regression.load(ws, p, job_id=j, fmt=None) for p, j in zip(paths, ("baseline", "candidate"), strict=True)]  # fmt: skip
            infos.append(
                [
                    (j.info["created_at"], j.info["finished_at"])
                    for j in jobs
                    if isinstance(j, enb.Job)
                ]
            )
        finally:
            ws.close()
    assert len(infos[0]) == 2 and infos[0] == infos[1]
