"""Corrections with undo and history, bad input refused with the place named and nothing
changed, corrections surviving a reopen, and a reload of a newer export merging."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "shared/formats/examples/experiment-two-evaluators.json"
)


def doc() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def write(tmp_path: Path, d: dict[str, Any], name: str = "e.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def snapshot(ws: enb.Workspace) -> list[Any]:
    return [
        ws.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
        for t in ("experiments", "exp_evaluators", "exp_cases", "exp_results", "exp_corrections")
    ]


def test_correct_undo_history() -> None:
    exp = enb.open().load(EXAMPLE)
    exp.correct("tr_001", "answer_accuracy", 100, "matches exactly", by="rev")
    row = exp.results().set_index(["trace_id", "evaluator"]).loc[("tr_001", "answer_accuracy")]
    assert (row["machine_score"], row["corrected_score"], row["score"]) == (95, 100, 100)
    assert exp.evaluators().set_index("evaluator").loc["answer_accuracy", "mean"] == 85.0
    exp.undo_correction("tr_001", "answer_accuracy", by="boss")
    assert exp.evaluators().set_index("evaluator").loc["answer_accuracy", "mean"] == 82.5
    hist = exp.corrections()
    last = hist.iloc[-1]
    assert (last["state"], last["by"], last["undone_by"], last["reason"]) == (
        "undone",
        "rev",
        "boss",
        "matches exactly",
    )
    assert last["machine_score"] == 95 and last["score"] == 100
    # undone, a new correction of the same row is allowed again
    exp.correct("tr_001", "answer_accuracy", 90, "second look", by="rev")
    assert exp.corrections()["state"].tolist()[-2:] == ["undone", "live"]


def test_reviewer_defaults_to_the_option() -> None:
    exp = enb.open().load(EXAMPLE)
    enb.options.reviewer = "li.wei"
    try:
        exp.correct("tr_001", "answer_accuracy", 99, "ok")
    finally:
        enb.options.reviewer = None
    assert exp.corrections()["by"].tolist()[-1] == "li.wei"
    exp.undo_correction("tr_001", "answer_accuracy")  # the OS user
    assert exp.corrections()["undone_by"].tolist()[-1]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (
            ("tr_001", "answer_accuracy", 101, "x"),
            ValueError,
            "outside 'answer_accuracy''s scale 0-100",
        ),
        (("tr_001", "answer_accuracy", -1, "x"), ValueError, "outside"),
        (("tr_001", "answer_accuracy", 50, "  "), ValueError, "needs a reason"),
        (
            ("tr_003", "answer_quality", 50, "x"),
            enb.EnvloopError,
            "is running: only a succeeded row",
        ),
        (("tr_404", "answer_quality", 50, "x"), enb.EnvloopError, "has no case 'tr_404'"),
        (("tr_001", "style", 50, "x"), enb.EnvloopError, "has no evaluator 'style'"),
        (("tr_002", "answer_quality", 50, "x"), enb.EnvloopError, "already has a live correction"),
        (("tr_001", "answer_accuracy", float("nan"), "x"), ValueError, "finite number"),
    ],
)
def test_bad_corrections_change_nothing(args: tuple[Any, ...], error: type, match: str) -> None:
    ws = enb.open()
    exp = ws.load(EXAMPLE)
    before = snapshot(ws)
    with pytest.raises(error, match=match):
        exp.correct(*args)
    assert snapshot(ws) == before


def test_correcting_failed_and_undoing_nothing(tmp_path: Path) -> None:
    d = doc()
    d["results"][2]["run"] = 3  # make the failed r3 the current run of its pair
    ws = enb.open()
    exp = ws.load(write(tmp_path, d))
    before = snapshot(ws)
    with pytest.raises(enb.EnvloopError, match="is failed: only a succeeded row can be corrected"):
        exp.correct("tr_002", "answer_accuracy", 50, "x")
    with pytest.raises(enb.EnvloopError, match="no live correction to undo"):
        exp.undo_correction("tr_001", "answer_quality")
    assert snapshot(ws) == before


def test_superseded_run_cannot_be_corrected() -> None:
    from envloop_nb._experiments.edits import correct

    exp = enb.open().load(EXAMPLE)
    with pytest.raises(enb.EnvloopError, match="run 1 is superseded by run 2"):
        correct(exp.con, exp.id, "tr_002", "answer_accuracy", 50, "x", "me", run=1)


def _bad(d: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    d = copy.deepcopy(d)
    *keys, last = path.split(".")
    node: Any = d
    for k in keys:
        node = node[int(k)] if k.isdigit() else node[k]
    node[int(last) if last.isdigit() else last] = value
    return d


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "corrections.0.score",
            120,
            "corrections[0].score: score 120 is outside evaluator 'answer_quality''s scale 0-100",
        ),
        ("corrections.0.reason", "", "corrections[0].reason: must not be empty"),
        ("corrections.0.result_id", "r99", "corrections[0].result_id: unknown result 'r99'"),
        ("corrections.1.undone_by", None, None),  # replaced below: two live corrections
        ("corrections.0.result_id", "r6", "corrections[0]: corrects result 'r6', which is running"),
        ("results.0.trace_id", "tr_999", "results[0].trace_id: unknown trace 'tr_999'"),
        ("results.0.evaluator", "style", "results[0].evaluator: unknown evaluator 'style'"),
        ("results.0.score", 101, "results[0].score: score 101 is outside"),
        (
            "results.0.status",
            "done",
            "results[0].status: must be one of pending, running, succeeded, failed",
        ),
        ("results.2.score", 10, "results[2].score: a failed row has no score"),
        ("results.3.run", 1, "results[3]: ('tr_002', 'answer_accuracy') run 1 appears twice"),
        ("cases.1.trace_id", "tr_001", "cases[1].trace_id: trace 'tr_001' is a case twice"),
        ("results.0.run", 0, "results[0].run: must be an integer >= 1"),
        (
            "results.0.evaluated_at",
            "yesterday",
            "results[0].evaluated_at: evaluated_at is not an RFC 3339 time",
        ),
    ],
)
def test_bad_files_name_the_place_and_change_nothing(
    tmp_path: Path, path: str, value: Any, message: str | None
) -> None:
    d = _bad(doc(), path, value)
    if message is None:  # two live corrections of one row
        d["corrections"][1] = d["corrections"][0] | {"reason": "again"}
        message = (
            "corrections[1]: a second live correction of result 'r4' (the first: corrections[0])"
        )
    ws = enb.open()
    ws.load(EXAMPLE)
    before = snapshot(ws)
    bad = write(tmp_path, d)
    with pytest.raises(enb.LoadError) as err:
        ws.load(bad)
    assert str(err.value) == f"{bad}, {message}" or message in str(err.value)
    assert str(bad) in str(err.value)
    assert snapshot(ws) == before


def test_a_bad_streamed_line_names_its_line(tmp_path: Path) -> None:
    d = doc()
    lines = [json.dumps({"schema_version": d["schema_version"], "experiment": d["experiment"]})]
    lines += [json.dumps({"kind": "case", **c}) for c in d["cases"]]
    lines.append(
        '{"kind": "result", "id": "r1", "trace_id": "tr_001", "evaluator": "nope", "status": "pending"}'
    )
    lines.append("{not json")
    p = tmp_path / "e.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(enb.LoadError, match=r"line 6: not valid JSON"):
        enb.open().load(p)
    p.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(enb.LoadError, match=r"line 5.evaluator: unknown evaluator 'nope'"):
        enb.open().load(p)


def test_corrections_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "ws.duckdb"
    with enb.open(path) as ws:
        exp = ws.load(EXAMPLE)
        exp.correct("tr_001", "answer_accuracy", 100, "exact match", by="rev")
        exp.undo_correction("tr_002", "answer_quality", by="rev")
    with enb.open(path, read_only=True) as ws:
        exp = ws.experiment("exp_5c1e02")
        hist = exp.corrections()
        assert hist["state"].tolist() == ["undone", "undone", "live"]
        assert exp.evaluators()["mean"].tolist() == [85.0, 60.0]
        assert str(exp.summary()) == "composite 72.5 · 4/6 rows counted · 1 pending"


def test_reloading_a_newer_export_merges(tmp_path: Path) -> None:
    ws = enb.open()
    exp = ws.load(EXAMPLE)
    exp.correct("tr_001", "answer_accuracy", 100, "exact", by="rev")  # run 1 stays: kept
    exp.use(enb.Evaluator("answer_quality", lambda c: 75))
    exp.undo_correction("tr_002", "answer_quality", by="rev")  # a source correction, undone here
    newer = doc()
    # the platform finished r6 and re-evaluated (tr_001, answer_accuracy) as run 2
    newer["results"][6] |= {"status": "succeeded", "score": 55}
    newer["results"].append(
        {"id": "r1b", "trace_id": "tr_001", "evaluator": "answer_accuracy", "status": "succeeded",
         "score": 88, "reason": "re-run", "points": [], "error": None,
         "evaluated_at": "2026-11-21T09:00:00Z", "run": 2}
    )  # fmt: skip
    exp = ws.load(write(tmp_path, newer))
    res = exp.results().set_index(["trace_id", "evaluator"])
    assert res.loc[("tr_003", "answer_quality"), "score"] == 55
    assert res.loc[("tr_001", "answer_accuracy"), ["run", "score"]].tolist() == [2, 88]
    hist = exp.corrections()
    local = hist[hist["origin"] == "local"]
    assert local["state"].tolist() == ["cleared"]  # its run was superseded by the export
    # the export's own corrections replace the ones loaded from it before
    assert hist[hist["origin"] == "source"]["state"].tolist() == ["live", "undone"]
    assert len(ws.experiments()) == 1
    assert exp.progress() == {"completed": 6, "failed": 0, "pending": 0, "missing": 0, "total": 6}
