"""Inspect AI logs as EnvLoop experiment documents (``envloop.experiment-result/v1``):
the score-edit fixture written by inspect_ai itself (``data/inspect_edits``, made by its
``make_fixture.py``), the shared real logs (no edits), and bad input refused by place."""

from __future__ import annotations

import json
import math
import statistics
import zipfile
from pathlib import Path
from typing import Any

import pytest

from envloop_nb import LoadError
from envloop_nb._loaders.inspect.experiment import inspect_experiment_doc
from envloop_nb._loaders.inspect.read import central_directory, mapped, member_bytes

from .conftest import FIXTURES

EDITS = Path(__file__).resolve().parent / "data" / "inspect_edits"
EDITS_EVAL = EDITS / "capitals_edits.eval"
EDITS_JSON = EDITS / "capitals_edits.json"
SHARED_LOGS = sorted((FIXTURES / "inspect").glob("*/*_capitals_*.*"))
ERROR = "RuntimeError('simulated provider failure')"

#: The three edits make_fixture.py applies, written out by hand; corrections[] is in the
#: order they were made (by time), not the log's sample order (c00 comes before c09 there).
CORRECTIONS = [
    {
        "result_id": "c00#1/exact", "run": 1, "score": 1.0,
        "reason": "Lyon is an acceptable answer in this test", "by": "alice",
        "at": "2026-12-01T09:00:00Z",
        "undone_by": "carol", "undone_at": "2026-12-01T10:30:00Z",  # the chain
    },
    {
        "result_id": "c09#1/exact", "run": 1, "score": 0.0, "reason": "edited in Inspect",
        "by": "bob", "at": "2026-12-01T09:05:00Z", "undone_by": None, "undone_at": None,
    },
    {
        "result_id": "c00#1/exact", "run": 1, "score": 0.0,
        "reason": "Reverted: the answer is wrong", "by": "carol",
        "at": "2026-12-01T10:30:00Z", "undone_by": None, "undone_at": None,
    },
]  # fmt: skip


def _evaluator(name: str) -> dict[str, Any]:
    return {
        "name": name, "kind": "custom", "needs_reference": False, "version": None,
        "judge_model": None, "scale": {"min": 0, "max": 1},
    }  # fmt: skip


@pytest.fixture(scope="module", params=[EDITS_EVAL, EDITS_JSON], ids=["eval", "json"])
def edited(request: pytest.FixtureRequest) -> dict[str, Any]:
    return inspect_experiment_doc(request.param)


def _rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in doc["results"]}


def test_experiment_block(edited: dict[str, Any]) -> None:
    assert edited["schema_version"] == "envloop.experiment-result/v1"
    assert edited["experiment"] == {
        "id": "inspect:GZykN69upeX57YF97jdhGa",
        "name": "capitals",
        "agent": "mockllm/ckpt-a",
        "type": "single-group",
        "status": "completed",
        "created_at": "2026-12-01T07:28:02+00:00",
        "started_at": "2026-12-01T07:28:02+00:00",
        "finished_at": "2026-12-01T07:28:03+00:00",
        "listen": {"enabled": False, "since": None, "stopped_at": None},
        "evaluators": [_evaluator("exact"), _evaluator("brevity")],
    }


def test_cases(edited: dict[str, Any]) -> None:
    cases = {c["trace_id"]: c for c in edited["cases"]}
    assert len(edited["cases"]) == len(cases) == 21  # 7 samples x 3 epochs
    assert cases["c00#1"] == {
        "trace_id": "c00#1",
        "agent": "mockllm/ckpt-a",
        "parent_trace_id": None,
        "status": "success",
        "trace_started_at": "2026-12-01T07:28:02.735272+00:00",
        "ingested_at": "2026-12-01T07:28:03.265141+00:00",
        "input": "Capital of France? (#0)",
        "output": "Lyon, I think",
        "reference": "Paris",
        "reference_source": "dataset",
        "added_by": "selection",
        "tags": {"sample_id": "c00", "epoch": "1", "subset": "easy"},
    }
    assert sorted(t for t, c in cases.items() if c["status"] == "error") == ["c05#1", "c05#2"]


def test_result_rows(edited: dict[str, Any]) -> None:
    rows = _rows(edited)
    assert len(edited["results"]) == len(rows) == 42
    # the machine score is the ORIGINAL value: "I" before alice's and carol's edits
    assert rows["c00#1/exact"] == {
        "id": "c00#1/exact", "trace_id": "c00#1", "evaluator": "exact",
        "status": "succeeded", "score": 0.0, "reason": None, "points": [], "error": None,
        "evaluated_at": "2026-12-01T07:28:03.265141+00:00", "run": 1,
    }  # fmt: skip
    # NaN (unscored) before bob's edit: succeeded without a number, not 0
    assert (rows["c09#1/exact"]["status"], rows["c09#1/exact"]["score"]) == ("succeeded", None)
    assert rows["c09#1/exact"]["reason"] == "unscorable"
    assert rows["c00#1/brevity"]["score"] == 0.35
    assert rows["c09#1/brevity"]["score"] == 0.85
    assert rows["c01#2/exact"]["score"] == 1.0
    for trace in ("c05#1", "c05#2"):
        for evaluator in ("exact", "brevity"):
            row = rows[f"{trace}/{evaluator}"]
            assert (row["status"], row["score"], row["error"]) == ("failed", None, ERROR)
    assert rows["c05#3/exact"]["status"] == "succeeded"
    assert rows["c05#3/exact"]["error"] is None


def test_corrections_verbatim(edited: dict[str, Any]) -> None:
    assert edited["corrections"] == CORRECTIONS


def test_chain_leaves_one_live_correction_per_row(edited: dict[str, Any]) -> None:
    chain = [c for c in edited["corrections"] if c["result_id"] == "c00#1/exact"]
    earlier, later = chain
    assert (earlier["undone_by"], earlier["undone_at"]) == (later["by"], later["at"])
    assert later["undone_by"] is None
    live = [c["result_id"] for c in edited["corrections"] if c["undone_by"] is None]
    assert sorted(live) == sorted(set(live))
    rows = _rows(edited)
    assert all(rows[c["result_id"]]["status"] == "succeeded" for c in edited["corrections"])


def test_both_forms_give_the_same_document() -> None:
    # no field depends on where a sample sits (samples/c00_epoch_1.json vs samples[0])
    assert inspect_experiment_doc(EDITS_EVAL) == inspect_experiment_doc(EDITS_JSON)


def _per_sample_mean(doc: dict[str, Any], evaluator: str, corrected: bool) -> float:
    """Inspect's headline for a ``mean`` reducer: each sample's epochs averaged (errored
    epochs and NaN scores dropped), then the mean over samples that have a value.
    ``corrected`` takes the live correction's score instead of the machine score."""
    live = {c["result_id"]: c["score"] for c in doc["corrections"] if c["undone_by"] is None}
    sample_of = {c["trace_id"]: c["tags"]["sample_id"] for c in doc["cases"]}
    by_sample: dict[str, list[float]] = {}
    for r in doc["results"]:
        score = live.get(r["id"], r["score"]) if corrected else r["score"]
        if r["evaluator"] == evaluator and r["status"] == "succeeded" and score is not None:
            by_sample.setdefault(sample_of[r["trace_id"]], []).append(score)
    return statistics.fmean(statistics.fmean(v) for v in by_sample.values())


def _headline(log: Path, scorer: str) -> float:
    """``results.scores[...]`` of the scorer's ``mean`` reducer, its mean metric."""
    doc = json.loads(log.read_text()) if log.suffix == ".json" else _header(log)
    (entry,) = [
        s for s in doc["results"]["scores"] if s["scorer"] == scorer and s["reducer"] == "mean"
    ]
    metric = {"exact": "accuracy", "brevity": "mean"}[scorer]
    return float(entry["metrics"][metric]["value"])


def _header(log: Path) -> dict[str, Any]:
    with mapped(log) as data:
        (info,) = [m for m in central_directory(log) if m.filename == "header.json"]
        return dict(json.loads(member_bytes(log, data, info)))


@pytest.mark.parametrize("scorer", ["exact", "brevity"])
def test_live_corrections_reproduce_inspects_recomputed_metrics(scorer: str) -> None:
    """edit_score recomputed the header's metrics from the edited values: the machine
    scores with the live corrections applied give the same number."""
    doc = inspect_experiment_doc(EDITS_EVAL)
    assert _per_sample_mean(doc, scorer, corrected=True) == pytest.approx(
        _headline(EDITS_EVAL, scorer), rel=1e-12
    )


@pytest.mark.parametrize("log", SHARED_LOGS, ids=lambda p: p.name[:30])
def test_shared_logs(log: Path) -> None:
    doc = inspect_experiment_doc(log)
    raw = _raw_samples(log)
    assert len(doc["cases"]) == len(raw) == 60
    assert [e["name"] for e in doc["experiment"]["evaluators"]] == ["exact", "brevity"]
    assert len(doc["results"]) == len(raw) * 2
    assert doc["corrections"] == []
    rows = _rows(doc)
    errored = [s for s in raw if s.get("error")]
    assert errored
    for s in errored:
        for evaluator in ("exact", "brevity"):
            row = rows[f"{s['id']}#{s['epoch']}/{evaluator}"]
            assert (row["status"], row["score"], row["error"]) == ("failed", None, ERROR)
    nans = [
        f"{s['id']}#{s['epoch']}/{name}"
        for s in raw
        for name, score in (s.get("scores") or {}).items()
        if isinstance(score["value"], float) and math.isnan(score["value"])
    ]
    assert nans
    for rid in nans:
        assert (rows[rid]["status"], rows[rid]["score"], rows[rid]["error"]) == (
            "succeeded",
            None,
            None,
        )
    counted = [r for r in doc["results"] if r["status"] == "succeeded" and r["score"] is not None]
    assert len(counted) == len(raw) * 2 - 2 * len(errored) - len(nans)
    # The headline's `mean` reducer averages each sample's epochs first, so a flat mean
    # over rows would weight samples with errored / NaN epochs less: reduce the same way.
    for scorer in ("exact", "brevity"):
        assert _per_sample_mean(doc, scorer, corrected=False) == pytest.approx(
            _headline(log, scorer), rel=1e-12
        )


def _raw_samples(log: Path) -> list[dict[str, Any]]:
    if log.suffix == ".json":
        return list(json.loads(log.read_text())["samples"])
    with mapped(log) as data:
        return [
            json.loads(member_bytes(log, data, m))
            for m in central_directory(log)
            if m.filename.startswith("samples/")
        ]


def test_dict_scores_chat_input_and_a_started_log(tmp_path: Path) -> None:
    """A hand-made minimal log: a dict value is one evaluator per key, an edit of a dict
    is one correction per key, chat input keeps role and text, a list target is joined."""
    edit = {"timestamp": "2026-12-02T08:00:00Z", "author": "dana", "reason": "", "metadata": {}}
    sample = {
        "id": 7, "epoch": 2,
        "input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "target": ["a", "b"], "output": {"completion": "a"}, "metadata": {"m": {"n": 1}},
        "scores": {"judge": {
            "value": {"x": "C", "y": 0.25},
            "history": [
                {"value": {"x": "I", "y": 0.25}, "explanation": "machine"},
                {"value": {"x": "C", "y": 0.25}, "explanation": "UNCHANGED", "provenance": edit},
            ],
        }},
    }  # fmt: skip
    log = {
        "version": 2, "status": "started",
        "eval": {"eval_id": "e1", "task": "t", "model": "m", "created": "2026-12-02T07:00:00Z",
                 "scorers": [{"name": "judge"}, {"name": "never"}]},
        "samples": [sample],
    }  # fmt: skip
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(log))
    doc = inspect_experiment_doc(path)
    assert doc["experiment"]["status"] == "running"
    assert doc["experiment"]["started_at"] is None
    assert [e["name"] for e in doc["experiment"]["evaluators"]] == ["judge.x", "judge.y", "never"]
    (case,) = doc["cases"]
    assert case["trace_id"] == "7#2"
    assert case["input"] == [{"role": "user", "content": "hi"}]
    assert (case["reference"], case["tags"]) == (
        "a\nb",
        {"sample_id": "7", "epoch": "2", "m.n": "1"},
    )
    assert case["ingested_at"] == "2026-12-02T07:00:00Z"
    scores = {r["evaluator"]: (r["status"], r["score"], r["reason"]) for r in doc["results"]}
    assert scores == {
        "judge.x": ("succeeded", 0.0, "machine"),
        "judge.y": ("succeeded", 0.25, "machine"),
        "never": ("succeeded", None, None),
    }
    assert [(c["result_id"], c["score"], c["reason"]) for c in doc["corrections"]] == [
        ("7#2/judge.x", 1.0, "edited in Inspect"),
        ("7#2/judge.y", 0.25, "edited in Inspect"),
    ]


@pytest.mark.parametrize("log", [EDITS_EVAL, EDITS_JSON], ids=["eval", "json"])
def test_truncated_log_is_refused_naming_the_file(log: Path, tmp_path: Path) -> None:
    cut = tmp_path / f"cut{log.suffix}"
    cut.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    with pytest.raises(LoadError) as caught:
        inspect_experiment_doc(cut)
    assert str(cut) in str(caught.value)


def test_unreadable_history_in_json_names_the_sample(tmp_path: Path) -> None:
    doc = json.loads(EDITS_JSON.read_text())
    doc["samples"][0]["scores"]["exact"]["history"][1] = "edited"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(LoadError, match=r"samples\[0\]: scores\['exact'\]\.history\[1\]"):
        inspect_experiment_doc(bad)


def test_unreadable_history_in_eval_names_the_member(tmp_path: Path) -> None:
    """The .eval fixture rewritten with deflate, one member's edit without an author."""
    bad = tmp_path / "bad.eval"
    with mapped(EDITS_EVAL) as data, zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as out:
        for m in central_directory(EDITS_EVAL):
            blob = member_bytes(EDITS_EVAL, data, m)
            if m.filename == "samples/c09_epoch_1.json":
                sample = json.loads(blob)
                del sample["scores"]["exact"]["history"][1]["provenance"]["author"]
                blob = json.dumps(sample).encode()
            out.writestr(m.filename, blob)
    with pytest.raises(LoadError) as caught:
        inspect_experiment_doc(bad)
    assert str(caught.value).startswith(f"{bad}, samples/c09_epoch_1.json: ")
    assert "history[1].provenance" in str(caught.value)
