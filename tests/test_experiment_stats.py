"""The experiment's numbers: the spec's worked example verbatim, and a property test of
random experiments (re-runs, corrections, undo, re-evaluation) against a brute-force
reference written here from the spec's definitions."""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envloop_nb as enb

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "shared/formats/examples/experiment-two-evaluators.json"
)


@pytest.fixture
def exp() -> enb.Experiment:
    return enb.open().load(EXAMPLE)


def test_load_returns_an_experiment(exp: enb.Experiment) -> None:
    assert isinstance(exp, enb.Experiment)
    assert exp.id == "exp_5c1e02"
    assert exp.info["agent"] == "ops-helper"
    assert exp.workspace.experiments()["experiment_id"].tolist() == ["exp_5c1e02"]
    assert exp.workspace.experiment("exp_5c1e02").summary() == exp.summary()


def test_known_answers(exp: enb.Experiment) -> None:
    assert exp.progress() == {"completed": 5, "failed": 0, "pending": 1, "missing": 0, "total": 6}
    s = exp.summary()
    assert s.to_dict()["composite"] == 76.25
    assert (s.counted, s.total, s.pending) == (4, 6, 1)
    assert str(s) == "composite 76.3 · 4/6 rows counted · 1 pending"
    ev = exp.evaluators().set_index("evaluator")
    assert ev.loc["answer_accuracy", ["mean", "counted", "total"]].tolist() == [82.5, 2, 3]
    assert ev.loc["answer_quality", ["mean", "counted", "total"]].tolist() == [70.0, 2, 3]
    assert ev.loc["answer_accuracy", "succeeded_without_score"] == 1
    assert ev.loc["answer_quality", "pending"] == 1
    assert ev["needs_reference"].tolist() == [True, False]
    cases = exp.cases().set_index("trace_id")
    assert cases.loc["tr_001", "composite"] == 87.5
    assert cases.loc["tr_002", "composite"] == 65.0
    assert math.isnan(cases.loc["tr_003", "composite"])
    res = exp.results()
    assert len(res) == 6  # r3 is superseded by its run 2
    assert "r3" not in res["result_id"].tolist()
    q = res.set_index(["trace_id", "evaluator"])
    assert q.loc[
        ("tr_002", "answer_quality"), ["machine_score", "corrected_score", "score"]
    ].tolist() == [40, 60, 60]
    assert q.loc[("tr_001", "answer_quality"), "score"] == 80  # its correction to 100 was undone
    assert q.loc[("tr_002", "answer_accuracy"), "run"] == 2
    hist = exp.corrections()
    assert hist["state"].tolist() == ["live", "undone"]
    assert hist["by"].tolist() == ["li.wei", "li.wei"]
    assert hist["undone_by"].tolist()[1] == "a.khan"


def test_reevaluation_clears_the_correction(exp: enb.Experiment) -> None:
    exp.use(enb.Evaluator("answer_quality", lambda case: 50))
    assert exp.reevaluate(trace_id="tr_002", evaluator="answer_quality", progress=False) == {
        "succeeded": 1,
        "failed": 0,
    }
    ev = exp.evaluators().set_index("evaluator")
    assert ev.loc["answer_quality", "mean"] == 65.0
    assert exp.summary().composite == 73.75
    hist = exp.corrections()
    assert hist["state"].tolist() == ["cleared", "undone"]
    assert not hist["cleared_at"].isna()[0]
    row = exp.results().set_index(["trace_id", "evaluator"]).loc[("tr_002", "answer_quality")]
    assert (row["run"], row["machine_score"], row["score"]) == (2, 50, 50)
    assert math.isnan(row["corrected_score"])


def test_streaming_form_gives_the_same_numbers(tmp_path: Path) -> None:
    doc = json.loads(EXAMPLE.read_text())
    lines = [json.dumps({"schema_version": doc["schema_version"], "experiment": doc["experiment"]})]
    for kind, key in (("case", "cases"), ("result", "results"), ("correction", "corrections")):
        lines += [json.dumps({"kind": kind, **row}) for row in doc[key]]
    # a later line for the same (trace, evaluator, run) replaces the earlier one
    r6 = next(r for r in doc["results"] if r["id"] == "r6")
    lines.append(json.dumps({"kind": "result", **r6, "status": "succeeded", "score": 90}))
    path = tmp_path / "exp.jsonl"
    path.write_text("\n".join(lines) + "\n")
    exp = enb.open().load(path)
    assert exp.progress()["completed"] == 6
    assert exp.evaluators().set_index("evaluator").loc["answer_quality", "mean"] == pytest.approx(
        230 / 3
    )


# ---------------------------------------------------------------------------------
# property test against a brute-force reference
# ---------------------------------------------------------------------------------


def reference(doc: dict[str, Any], ops: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The spec's definitions, written out directly, over the document plus operations
    (``("correct", trace, ev, score)``, ``("undo", trace, ev)``, ``("rerun", trace, ev, score)``)."""
    results = [dict(r) for r in doc["results"]]
    corrections = [dict(c) for c in doc["corrections"]]
    by_id = {r["id"]: r for r in results}
    for op in ops:
        cur = max(
            (r for r in results if (r["trace_id"], r["evaluator"]) == op[1:3]),
            key=lambda r: r["run"],
        )
        if op[0] == "correct":
            corrections.append(
                {"result_id": cur["id"], "run": cur["run"], "score": op[3], "undone": False}
            )
        elif op[0] == "undo":
            for c in corrections:
                if (
                    c["result_id"] == cur["id"]
                    and c["run"] == cur["run"]
                    and not c.get("undone")
                    and not c.get("undone_by")
                ):
                    c["undone"] = True
        else:
            new = {"id": f"x{len(results)}", "trace_id": op[1], "evaluator": op[2], "run": cur["run"] + 1,
                   "status": "succeeded", "score": op[3]}  # fmt: skip
            results.append(new)
            by_id[new["id"]] = new
    evaluators = [e["name"] for e in doc["experiment"]["evaluators"]]
    cells: dict[tuple[str, str], tuple[str, Fraction | None]] = {}
    for case in doc["cases"]:
        for ev in evaluators:
            runs = [
                r for r in results if r["trace_id"] == case["trace_id"] and r["evaluator"] == ev
            ]
            if not runs:
                cells[case["trace_id"], ev] = ("missing", None)
                continue
            cur = max(runs, key=lambda r: r["run"])
            score = None
            if cur["status"] == "succeeded":
                live = [c for c in corrections if c["result_id"] == cur["id"] and c["run"] == cur["run"]
                        and not c.get("undone") and not c.get("undone_by")]  # fmt: skip
                value = live[-1]["score"] if live else cur["score"]
                score = None if value is None else Fraction(value)
            cells[case["trace_id"], ev] = (cur["status"], score)

    def mean(xs: list[Fraction]) -> float | None:
        return None if not xs else float(sum(xs) / len(xs))

    counted = [s for _, s in cells.values() if s is not None]
    return {
        "composite": mean(counted),
        "counted": len(counted),
        "total": len(cells),
        "completed": sum(st == "succeeded" for st, _ in cells.values()),
        "failed": sum(st == "failed" for st, _ in cells.values()),
        "pending": sum(st in ("pending", "running") for st, _ in cells.values()),
        "per_evaluator": {
            ev: mean([s for (t, e), (_, s) in cells.items() if e == ev and s is not None])
            for ev in evaluators
        },
        "per_case": {
            c["trace_id"]: mean(
                [s for (t, _), (_, s) in cells.items() if t == c["trace_id"] and s is not None]
            )
            for c in doc["cases"]
        },
    }


def same(got: float | None, want: float | None) -> bool:
    """Equal, or both "nothing counted". The sum is compensated (``fsum`` in a fixed
    order) and the mean one division, so a mean may sit one unit in the last place from
    the exactly rounded rational; integers and halves come out exact."""
    if want is None:
        return got is None or math.isnan(got)
    return got is not None and abs(got - want) <= math.ulp(want)


SCORES = st.one_of(
    st.integers(0, 100), st.floats(0, 100, allow_nan=False).map(lambda x: round(x, 3))
)


@st.composite
def experiments(draw: Any) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    n_cases = draw(st.integers(1, 5))
    n_ev = draw(st.integers(1, 3))
    evaluators = [{"name": f"ev{i}", "scale": {"min": 0, "max": 100}} for i in range(n_ev)]
    cases = [{"trace_id": f"t{i}"} for i in range(n_cases)]
    results, corrections = [], []
    for c in cases:
        for e in evaluators:
            if draw(st.integers(0, 9)) == 0:
                continue  # never judged
            for run in range(1, draw(st.integers(1, 3)) + 1):
                status = draw(
                    st.sampled_from(["succeeded", "succeeded", "failed", "pending", "running"])
                )
                score = draw(st.one_of(st.none(), SCORES)) if status == "succeeded" else None
                rid = f"{c['trace_id']}-{e['name']}-{run}"
                results.append({"id": rid, "trace_id": c["trace_id"], "evaluator": e["name"], "run": run,
                                "status": status, "score": score})  # fmt: skip
                if status == "succeeded" and draw(st.booleans()):
                    undone = draw(st.booleans())
                    corrections.append({"result_id": rid, "run": run, "score": draw(SCORES), "reason": "r",
                                        "by": "a", "at": "2026-01-01T00:00:00Z",
                                        "undone_by": "b" if undone else None,
                                        "undone_at": "2026-01-02T00:00:00Z" if undone else None})  # fmt: skip
    doc = {"schema_version": "envloop.experiment-result/v1",
           "experiment": {"id": "e", "name": "p", "agent": "a", "evaluators": evaluators},
           "cases": cases, "results": results, "corrections": corrections}  # fmt: skip
    ops: list[tuple[Any, ...]] = []
    pairs = sorted({(r["trace_id"], r["evaluator"]) for r in results})
    for _ in range(draw(st.integers(0, 6))):
        if not pairs:
            break
        t, e = draw(st.sampled_from(pairs))
        ops.append(
            draw(
                st.sampled_from(
                    [("correct", t, e, draw(SCORES)), ("undo", t, e), ("rerun", t, e, draw(SCORES))]
                )
            )
        )
    return doc, ops


@settings(max_examples=60, deadline=None)
@given(experiments())
def test_numbers_match_a_brute_force_reference(
    case: tuple[dict[str, Any], list[tuple[Any, ...]]],
) -> None:
    doc, ops = case
    tmp = Path(__import__("tempfile").mkdtemp()) / "e.json"
    tmp.write_text(json.dumps(doc))
    ws = enb.open()
    exp = ws.load(tmp)
    applied: list[tuple[Any, ...]] = []
    for op in ops:
        try:
            if op[0] == "correct":
                exp.correct(op[1], op[2], op[3], "because", by="t")
            elif op[0] == "undo":
                exp.undo_correction(op[1], op[2], by="t")
            else:
                score = op[3]
                exp.use(enb.Evaluator(op[2], lambda case, s=score: s))
                exp.reevaluate(trace_id=op[1], evaluator=op[2], progress=False)
        except enb.EnvloopError:
            continue  # refused (not succeeded, already corrected, nothing to undo): no change
        applied.append(op)
    # the refused operations changed nothing, so the reference replays only the applied
    want = reference(copy.deepcopy(doc), applied)
    s = exp.summary()
    assert (s.counted, s.total, s.completed, s.failed, s.pending) == (
        want["counted"], want["total"], want["completed"], want["failed"], want["pending"],
    )  # fmt: skip
    assert same(s.composite, want["composite"])
    got_ev = dict(zip(exp.evaluators()["evaluator"], exp.evaluators()["mean"], strict=True))
    for ev, m in want["per_evaluator"].items():
        assert same(got_ev[ev], m), (ev, got_ev[ev], m)
    got_case = dict(zip(exp.cases()["trace_id"], exp.cases()["composite"], strict=True))
    for t, m in want["per_case"].items():
        assert same(got_case[t], m), (t, got_case[t], m)
    ws.close()
