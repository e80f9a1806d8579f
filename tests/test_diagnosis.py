"""Diagnosis: each check on a hand-made job that triggers it and one that does not."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._metrics.diagnosis import findings_html
from tests.conftest import SAMPLE_DATA, THREE_TASKS
from tests.envloop_docs import job_doc, load, trial


def _usage(turns: int, out: int = 200) -> dict[str, Any]:
    return {"input_tokens": 1000, "output_tokens": out, "turns": turns}


def _healthy(n_tasks: int = 6, k: int = 2) -> list[dict[str, Any]]:
    """Tasks that pass half the time with 4-6 turns and normal responses."""
    return [
        trial(f"t{i}", a, a % 2, usage=_usage(4 + i % 3))
        for i in range(n_tasks)
        for a in range(1, k + 1)
    ]


def _codes(job: enb.Job, **kw: Any) -> list[str]:
    return job.diagnose(**kw).codes()


def test_healthy_job_has_no_findings(ws: enb.Workspace, tmp_path: Path) -> None:
    job = load(ws, tmp_path, job_doc(_healthy(), k=2))
    findings = job.diagnose()
    assert findings == [] and str(findings) == "no findings"
    assert "No findings" in findings._repr_html_()


def test_all_rewards_zero(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = [trial(f"t{i}", a, 0, usage=_usage(4)) for i in range(4) for a in (1, 2)]
    trials.append(trial("t0", 3, None, status="failed"))
    job = load(ws, tmp_path, job_doc(trials, k=3))
    (f,) = [f for f in job.diagnose() if f.code == "all-rewards-zero"]
    assert f.severity == "error" and f.numbers == {"scored": 8, "tasks": 4}
    assert "all 8 scored rewards across 4 tasks are 0" in f.evidence
    one_pass = [*trials[:-1], trial("t0", 3, 1)]
    assert "all-rewards-zero" not in _codes(load(ws, tmp_path, job_doc(one_pass, k=3), "b"))


def test_looping(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = _healthy()
    trials += [trial("loop", a, 0, usage=_usage(40)) for a in (1, 2)]
    job = load(ws, tmp_path, job_doc(trials, k=2))
    (f,) = [f for f in job.diagnose() if f.code == "looping"]
    assert f.tasks == ("loop",) and "40.0" in f.evidence and f.numbers["turn_limit"] == 30
    # the same turns on a task that passes once is not looping
    trials[-1] = trial("loop", 2, 1, usage=_usage(40))
    job2 = load(ws, tmp_path, job_doc(trials, k=2), "b")
    assert "looping" not in _codes(job2)
    # and the limit is overridable
    assert "looping" not in _codes(job, options=enb.DiagnosisOptions(looping_min_turns=50))


def test_short_output_by_tokens_and_by_characters(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = _healthy()
    trials += [trial("empty", a, 0, usage=_usage(3, out=2)) for a in (1, 2)]
    job = load(ws, tmp_path, job_doc(trials, k=2))
    (f,) = [f for f in job.diagnose() if f.code == "short-output"]
    assert f.tasks == ("empty",) and "2 tokens" in f.evidence
    chars = [
        trial("x", 1, 0, output=""),
        trial("x", 2, 0, output="{"),
        trial("y", 1, 1, output="ok"),
    ]
    (g,) = [
        f
        for f in load(ws, tmp_path, job_doc(chars, k=2), "c").diagnose()
        if f.code == "short-output"
    ]
    assert g.tasks == ("x",) and "chars" in g.evidence
    long_fail = [*_healthy(), *(trial("long", a, 0, usage=_usage(3, out=500)) for a in (1, 2))]
    assert "short-output" not in _codes(load(ws, tmp_path, job_doc(long_fail, k=2), "d"))


def test_turn_spread(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = [trial(f"t{i}", 1, i % 2, usage=_usage(2 if i < 8 else 40)) for i in range(10)]
    job = load(ws, tmp_path, job_doc(trials, k=1))
    (f,) = [f for f in job.diagnose() if f.code == "turn-spread"]
    assert f.severity == "info" and f.numbers["cv"] >= 1 and f.tasks == ("t8", "t9")
    assert "coefficient of variation is 1.67" in f.evidence
    assert "turn-spread" not in _codes(load(ws, tmp_path, job_doc(_healthy(10), k=2), "b"))
    # too few tasks to judge a spread
    few = [trial("a", 1, 1, usage=_usage(1)), trial("b", 1, 0, usage=_usage(50))]
    assert "turn-spread" not in _codes(load(ws, tmp_path, job_doc(few, k=1), "c"))


def test_confident_but_wrong(ws: enb.Workspace, tmp_path: Path) -> None:
    sure = {"mean": -0.01}
    trials = [trial(f"t{i}", 1, 0, logprob=sure) for i in range(6)]
    trials += [trial("ok", 1, 1, logprob=sure), trial("unsure", 1, 0, logprob={"mean": -1.2})]
    job = load(ws, tmp_path, job_doc(trials, k=1))
    (f,) = [f for f in job.diagnose() if f.code == "confident-wrong"]
    assert f.numbers["wrong"] == 6 and f.numbers["confident"] == 7
    assert f.tasks == ("t0", "t1", "t2", "t3", "t4", "t5")
    assert "the other 1 scored rollouts fail 100.0%" in f.evidence
    right = [trial(f"t{i}", 1, 1, logprob=sure) for i in range(6)] + trials[6:]
    assert "confident-wrong" not in _codes(load(ws, tmp_path, job_doc(right, k=1), "b"))


def _timeout_job(ws: enb.Workspace, tmp_path: Path, n_timeouts: int, name: str) -> enb.Job:
    trials = [
        trial(f"t{i}", 1, None, status="failed", error="AgentTimeoutError: timed out after 1800s")
        if i < n_timeouts
        else trial(f"t{i}", 1, i % 2)
        for i in range(20)
    ]
    return load(ws, tmp_path, job_doc(trials, k=1, job_id=name), name)


def test_timeouts_versus_another_job(ws: enb.Workspace, tmp_path: Path) -> None:
    many = _timeout_job(ws, tmp_path, 6, "many")
    few = _timeout_job(ws, tmp_path, 1, "few")
    (f,) = [f for f in many.diagnose(against=few) if f.code == "timeouts"]
    assert f.title == "More timeouts than few"
    assert f.numbers["share"] == pytest.approx(0.3) and f.numbers["other_share"] == 0.05
    assert "6 of 20" in f.evidence and "1 of 20" in f.evidence and len(f.tasks) == 6
    assert "timeouts" not in _codes(few, against=many)
    same = _timeout_job(ws, tmp_path, 6, "same")
    assert "timeouts" not in _codes(many, against=same)
    # alone: flagged only at a high share
    assert "timeouts" in _codes(many)  # 30% >= 25%
    assert "timeouts" not in _codes(_timeout_job(ws, tmp_path, 3, "some"))


def test_platform_block_mismatch_names_each_key(ws: enb.Workspace, tmp_path: Path) -> None:
    assert "platform-mismatch" not in _codes(ws.load(THREE_TASKS))
    trials = [trial("a", 1, 1), trial("a", 2, 0), trial("b", 1, 1), trial("b", 2, None)]
    metrics = {
        "score": 0.5,
        "pass": 2 / 3,
        "pass@k": 1.0,
        "pass^k": None,
        "k": 2,
        "score_counts": {"total": 4, "scored": 4, "missing": 1, "invalid": 0},
    }
    job = load(ws, tmp_path, job_doc(trials, k=2, metrics=metrics))
    (f,) = [f for f in job.diagnose() if f.code == "platform-mismatch"]
    assert set(f.numbers) == {"score", "pass^k", "score_counts.scored", "score_counts.invalid"}
    assert f.numbers["score"] == {"platform": 0.5, "recomputed": pytest.approx(2 / 3)}
    assert f.numbers["pass^k"] == {"platform": None, "recomputed": 0.0}
    assert "score: platform 50% vs recomputed 66.667%" in f.evidence
    assert "score_counts.scored: platform 4 vs recomputed 3" in f.evidence


def test_sample_jobs(ws: enb.Workspace) -> None:
    base = ws.load(SAMPLE_DATA / "base.json")
    sft = ws.load(SAMPLE_DATA / "sft-step500.json")
    # exactly the pathologies planted in the sample data (sample_data/README.md)
    assert _codes(sft, against=base) == ["platform-mismatch", "looping", "timeouts", "turn-spread"]
    assert _codes(base) == ["short-output"]
    assert _codes(ws.load(SAMPLE_DATA / "sft-step1000.jsonl.gz")) == ["confident-wrong"]
    assert _codes(ws.load(SAMPLE_DATA / "graded.json")) == []


def test_finding_is_frozen_and_renders() -> None:
    f = enb.Finding("looping", "warning", "Loops", "2 tasks <b>", ("a", "b"), {"tasks": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.code = "x"  # type: ignore[misc]
    assert str(f) == "[warning] Loops\n  2 tasks <b>\n  tasks: a, b"
    html = findings_html([f])
    assert "&lt;b&gt;" in html and "enb-warning" in html
    assert f._repr_html_() == html
    opts = enb.DiagnosisOptions()
    assert dataclasses.replace(opts, turn_spread_cv=9).turn_spread_cv == 9
