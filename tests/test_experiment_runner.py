"""Experiments run in the notebook: evaluators (sync, async, failing, hanging), new
experiments, re-evaluation, appended cases, reference-based evaluators, references
from a dataset and saved as one."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "shared/formats/examples/experiment-two-evaluators.json"
)

CASES = [
    {
        "trace_id": "t1",
        "input": "How do I see the current directory?",
        "output": "pwd",
        "reference": "pwd",
    },
    {
        "trace_id": "t2",
        "input": [{"role": "user", "content": " List hidden files "}],
        "output": "ls",
        "reference": "ls -a",
    },
    {"trace_id": "t3", "input": "Disk usage?", "output": "du -sh", "reference": "du -sh"},
]


def exact(case: enb.EvalCase) -> Any:
    return (100.0, "same") if case.output == case.reference else (0.0, "differs")


async def length(case: enb.EvalCase) -> Any:
    await asyncio.sleep(0.01)
    return {"score": min(100, 10 * len(str(case.output))), "reason": "longer is better",
            "points": [{"name": "chars", "score": len(str(case.output)), "evidence": case.output}]}  # fmt: skip


def test_new_experiment_runs_sync_and_async_evaluators() -> None:
    ws = enb.open()
    exp = ws.new_experiment(
        "demo", agent="bot", evaluators=[enb.Evaluator("exact", exact, needs_reference=True),
                                         enb.Evaluator("length", length)],
        cases=CASES, experiment_id="exp_demo",
    )  # fmt: skip
    assert exp.progress() == {"completed": 0, "failed": 0, "pending": 6, "missing": 0, "total": 6}
    assert exp.run(progress=False) == {"succeeded": 6, "failed": 0}
    res = exp.results().set_index(["trace_id", "evaluator"])
    assert res.loc[("t2", "exact"), ["score", "reason"]].tolist() == [0.0, "differs"]
    assert json.loads(res.loc[("t1", "length"), "points"]) == [
        {"name": "chars", "score": 3, "evidence": "pwd"}
    ]
    assert exp.evaluators()["mean"].tolist() == [pytest.approx(200 / 3), pytest.approx(110 / 3)]
    assert ws.experiment("exp_demo").summary() == exp.summary()
    with pytest.raises(enb.EnvloopError, match="already exists"):
        ws.new_experiment("demo", evaluators=[], cases=[], experiment_id="exp_demo")


def test_failures_are_failed_rows_never_zero() -> None:
    gate, finished = threading.Event(), threading.Event()

    def hangs(case: enb.EvalCase) -> float:
        gate.wait(60)
        finished.set()
        return 1.0

    def raises(case: enb.EvalCase) -> float:
        raise ConnectionError("judge model unreachable")

    ws = enb.open()
    exp = ws.new_experiment(
        "f", evaluators=[enb.Evaluator("hangs", hangs, timeout=0.3), enb.Evaluator("raises", raises),
                         enb.Evaluator("silly", lambda c: "yes"), enb.Evaluator("too_big", lambda c: 120),
                         enb.Evaluator("none", lambda c: None)],
        cases=CASES[:1],
    )  # fmt: skip
    assert exp.run(progress=False) == {"succeeded": 1, "failed": 4}
    assert not finished.is_set()  # run() returned at the timeout, not when `hangs` ended
    gate.set()
    errors = dict(zip(exp.results()["evaluator"], exp.results()["error"], strict=True))
    assert errors["hangs"] == "timed out after 0.3 s"
    assert errors["raises"] == "ConnectionError: judge model unreachable"
    assert errors["silly"] == "returned 'yes', not a number"
    assert errors["too_big"] == "returned 120, outside the scale 0-100"
    s = exp.summary()
    assert (s.composite, s.counted, s.failed) == (None, 0, 4)
    assert str(s) == "composite - · 0/5 rows counted · 4 failed"
    ev = exp.evaluators().set_index("evaluator")
    assert ev.loc["none", "succeeded_without_score"] == 1
    # re-evaluating the failed rows with a fixed function: a new run each
    exp.use(enb.Evaluator("raises", lambda c: 42))
    assert exp.reevaluate(failed=True, evaluator="raises", progress=False) == {
        "succeeded": 1,
        "failed": 0,
    }
    res = exp.results().set_index("evaluator")
    assert res.loc["raises", ["run", "score"]].tolist() == [2, 42.0]
    # every failed row again: 'hangs' now answers (its gate is open), the others still fail
    assert exp.reevaluate(failed=True, progress=False) == {"succeeded": 1, "failed": 2}
    assert exp.results().set_index("evaluator")["run"].to_dict() == {
        "hangs": 2, "raises": 2, "silly": 2, "too_big": 2, "none": 1,
    }  # fmt: skip


def test_reference_based_evaluators_and_appended_cases() -> None:
    ws = enb.open()
    no_ref = [dict(c, reference=None) if c["trace_id"] == "t3" else c for c in CASES]
    with pytest.raises(
        enb.EnvloopError, match=r"exact needs a reference answer, and 1 case\(s\) have none: t3"
    ):
        ws.new_experiment(
            "r", evaluators=[enb.Evaluator("exact", exact, needs_reference=True)], cases=no_ref
        )
    assert len(ws.experiments()) == 0  # nothing was created
    exp = ws.new_experiment("r", evaluators=[enb.Evaluator("length", length)], cases=no_ref)
    with pytest.raises(enb.EnvloopError, match="have none: t3"):
        exp.add_evaluator(enb.Evaluator("exact", exact, needs_reference=True))
    exp.run(progress=False)
    # an appended case without reference: an uncounted row of a reference-based evaluator
    exp2 = ws.new_experiment("r2", evaluators=[enb.Evaluator("exact", exact, needs_reference=True),
                                               enb.Evaluator("length", length)], cases=CASES)  # fmt: skip
    exp2.run(progress=False)
    assert exp2.add_cases([{"trace_id": "t4", "input": "new", "output": "x"}], progress=False) == [
        "t4"
    ]
    res = exp2.results().set_index(["trace_id", "evaluator"])
    assert res.loc[("t4", "exact"), ["status", "counted"]].tolist() == ["succeeded", False]
    assert res.loc[("t4", "exact"), "reason"] == "no reference answer: not scored"
    assert res.loc[("t4", "length"), "score"] == 10.0
    assert exp2.cases().set_index("trace_id").loc["t4", "added_by"] == "append"
    with pytest.raises(enb.EnvloopError, match=r"already cases of .*\['t4'\]"):
        exp2.add_cases([{"trace_id": "t4"}], progress=False)


def test_platform_evaluators_need_a_bound_function() -> None:
    exp = enb.open().load(EXAMPLE)
    with pytest.raises(enb.EnvloopError, match="no notebook function for \\['answer_accuracy'\\]"):
        exp.reevaluate(evaluator="answer_accuracy", progress=False)
    with pytest.raises(enb.EnvloopError, match="has no evaluator 'style'"):
        exp.use(enb.Evaluator("style", exact))
    with pytest.raises(ValueError, match="choose what to re-evaluate"):
        exp.reevaluate(progress=False)


def test_fill_and_save_references(tmp_path: Path) -> None:
    ws = enb.open()
    job = ws.load(
        Path(__file__).resolve().parents[2]
        / "shared/formats/examples/three-tasks-two-attempts.json"
    )
    del job
    exp = ws.new_experiment(
        "refs", evaluators=[enb.Evaluator("length", length)],
        cases=[{"trace_id": "a", "input": "  List hidden files", "output": "ls"},
               {"trace_id": "b", "input": [{"role": "system", "content": "s"},
                                           {"role": "user", "content": "List hidden files  "}], "output": "ls"},
               {"trace_id": "c", "input": "kept", "output": "x", "reference": "mine"},
               {"trace_id": "d", "input": "no match", "output": "x"}],
    )  # fmt: skip
    rows = [
        {"task": "x1", "input": "List hidden files", "reference": "   "},  # blank: not valid
        {"task": "x2", "input": "List hidden files", "reference": "ls -a"},  # first valid wins
        {"task": "x3", "input": "List hidden files", "reference": "ls -la"},
        {"task": "x4", "input": "kept", "reference": "theirs"},
    ]
    folder = tmp_path / "ds@1"
    folder.mkdir()
    from envloop_nb._datasets.dataset import content_hash

    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = {"schema": "envloop_nb.dataset/v1", "name": "ds", "version": "1", "file": "rows.jsonl",
                "format": "jsonl", "row_count": 4, "content_hash": content_hash(rows)}  # fmt: skip
    (folder / "manifest.json").write_text(json.dumps(manifest))
    ds = ws.load_dataset(folder)
    fill = exp.fill_references(ds)
    assert (fill.missing_before, fill.filled) == (3, 2)
    cases = exp.cases().set_index("trace_id")
    assert cases.loc["a", "reference"] == "ls -a" and cases.loc["b", "reference"] == "ls -a"
    assert cases.loc["a", "reference_source"] == "dataset"
    assert cases.loc["c", "reference"] == "mine"  # existing references kept
    saved = exp.save_references(tmp_path / "out", name="annotated", version="1")
    assert saved.row_count == 3
    assert saved.manifest["source"]["experiment"] == exp.id
    assert [r["task"] for r in saved.rows().to_dict("records")] == ["a", "b", "c"]


def test_export_the_hard_cases(tmp_path: Path) -> None:
    ws = enb.open()
    exp = ws.load(
        Path(__file__).resolve().parent.parent / "sample_data/experiments/ops-helper.json"
    )
    ds = exp.export_dataset(tmp_path, name="ops-hard", version="1", below=70, purpose="train")
    rows = ds.rows().to_dict("records")
    assert [r["task"] for r in rows] == ["tr_002", "tr_005"]  # composites 67.5 and 32.5
    assert rows[1]["output"] == "netstat" and rows[1]["reference"].startswith("ss -ltnp")
    assert ds.manifest["source"]["experiment"] == "exp_ops01" and ds.manifest["threshold"] == 70
    assert ws.load(ds.path).content_hash == ds.content_hash
    chosen = exp.export_dataset(tmp_path, name="two", version="1", traces=["tr_012", "tr_001"])
    assert [r["task"] for r in chosen.rows().to_dict("records")] == ["tr_001", "tr_012"]
    with pytest.raises(enb.EnvloopError, match=r"no case\(s\) \['nope'\]"):
        exp.export_dataset(tmp_path, name="x", version="1", traces=["nope"])
