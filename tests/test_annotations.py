"""Human annotation: manual dimensions, annotations with who/when/why, "awaiting
annotation", the same coverage rules as every dimension, reloads, exports, and the
Cases tab's quick annotation mode driven from Python."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

import envloop_nb as enb
from envloop_nb._metrics.job_list import job_rows

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT.parent / "shared" / "formats" / "examples" / "three-tasks-two-attempts.json"
SAMPLE = ROOT / "sample_data" / "base.json"


def _tables(ws: enb.Workspace) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    for t in ("manual_dimensions", "annotations", "dimensions", "dimension_meta"):
        out[t] = sorted(ws.con.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
    return out


@pytest.fixture
def ws() -> enb.Workspace:
    return enb.open()


def test_annotate_replace_clear_and_history(ws: enb.Workspace) -> None:
    job = ws.load(EXAMPLE)
    dim = job.add_manual_dimension("correct", {"yes": 1, "partly": 0.5, "no": 0}, by="ana")
    assert dim.choices == ["yes", "partly", "no"] and dim.required and dim.created_by == "ana"
    job.annotate("A", 1, label="yes", reason="matches", by="ana")
    job.annotate("A", 1, label="partly", reason="second look", by="bo")  # replaces
    job.annotate("B", 2, label="no", by="ana")
    now = job.annotations()
    assert now[["task", "attempt", "label", "value", "annotator"]].values.tolist() == [
        ["A", 1, "partly", 0.5, "bo"], ["B", 2, "no", 0.0, "ana"]
    ]  # fmt: skip
    history = job.annotations(history=True)
    assert len(history) == 3 and history["replaced_at"].notna().sum() == 1
    assert history.iloc[0]["reason"] == "matches"  # the replaced one is kept, with its reason
    job.clear_annotation("B", 2, reason="wrong case")
    assert job.annotations()["task"].tolist() == ["A"]
    assert [p.describe() for p in job.annotation_progress()] == ["correct: 1/6 annotated"]
    # the current values are the dimension's values
    dims = job.dimensions()
    assert dims[dims["name"] == "correct"][["task", "attempt", "value"]].values.tolist() == [
        ["A", 1, 0.5]
    ]


def test_a_scale_dimension(ws: enb.Workspace) -> None:
    job = ws.load(EXAMPLE)
    job.add_manual_dimension("quality", scale=(1, 5), required=False)
    job.annotate("C", 1, value=4)
    assert job.annotations()["value"].tolist() == [4.0]
    with pytest.raises(ValueError, match="from 1 to 5"):
        job.annotate("C", 2, value=6)
    with pytest.raises(ValueError, match="not a label"):
        job.annotate("C", 2, label="good")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda j: j.annotate("A", 1, label="maybe"), "'maybe' is not a label of 'correct'"),
        (lambda j: j.annotate("A", 1), "takes a label"),
        (lambda j: j.annotate("A", 9, label="yes"), "no attempt 9 of task 'A'"),
        (lambda j: j.annotate("Z", 1, label="yes"), "no attempt 1 of task 'Z'"),
        (lambda j: j.annotate("A", 1, "other", label="yes"), "no manual dimension 'other'"),
        (lambda j: j.add_manual_dimension("correct", {"a": 1, "b": 0}), "already has"),
        (lambda j: j.add_manual_dimension("style", {"a": 1, "b": 0}), "already has"),
        (lambda j: j.add_manual_dimension("x", {"a": 1}), "at least two"),
        (lambda j: j.add_manual_dimension("x", {"a": 1, "b": "hi"}), "finite number"),
        (lambda j: j.add_manual_dimension("x", {"a": 1}, scale=(0, 1)), "not both"),
        (lambda j: j.add_manual_dimension("x", scale=(3, 1)), "low < high"),
        (lambda j: j.add_manual_dimension("x", ["a", "b"]), "maps each label"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_is_refused_and_changes_nothing(ws: enb.Workspace, call, message) -> None:  # type: ignore[no-untyped-def]
    job = ws.load(EXAMPLE)
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    job.annotate("B", 1, label="yes")
    before = _tables(ws)
    with pytest.raises((ValueError, TypeError), match=message):
        call(job)
    assert _tables(ws) == before


def test_awaiting_annotation_until_every_attempt_is_annotated(ws: enb.Workspace) -> None:
    job = ws.load(EXAMPLE)  # a running job: make it a completed one
    ws.con.execute("UPDATE jobs SET status = 'completed' WHERE job_id = ?", [job.id])
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    job.add_manual_dimension("notes", {"ok": 1, "odd": 0}, required=False)
    assert [r.status for r in job_rows(ws.con)] == ["awaiting annotation"]
    # ws.jobs() and job.info say it too, not "completed" (issue 37)
    assert list(ws.jobs()["status"]) == ["awaiting annotation"]
    assert job.info["status"] == "awaiting annotation"
    assert "awaiting annotation: correct: 0/6 annotated" in (job.summary().note or "")
    html = job.panel().overview.facts.value
    assert "awaiting annotation" in html
    for task, attempt in job.attempts()[["task", "attempt"]].itertuples(index=False):
        job.annotate(task, int(attempt), "correct", label="yes")
    assert [r.status for r in job_rows(ws.con)] == ["completed"]  # the optional one waits not
    assert list(ws.jobs()["status"]) == ["completed"] and job.info["status"] == "completed"
    assert job.summary().note is None


def test_the_manual_dimension_follows_every_dimension_s_coverage_rules(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE)
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    empty = job.groups(by="dimension").set_index("dimension").loc["correct"]
    assert empty["scored"] == 0 and empty["coverage"] == 0 and empty["total"] == 800
    attempts = job.attempts()
    picked = attempts.iloc[::7]
    for i, (task, attempt) in enumerate(picked[["task", "attempt"]].itertuples(index=False)):
        job.annotate(task, int(attempt), label="yes" if i % 3 else "no")
    row = job.groups(by="dimension").set_index("dimension").loc["correct"]
    values = [0.0 if i % 3 == 0 else 1.0 for i in range(len(picked))]
    assert row["scored"] == len(picked) and row["total"] == 800
    assert row["coverage"] == pytest.approx(len(picked) / 800)
    assert row["score"] == pytest.approx(sum(values) / len(values))  # missing is not 0


def test_a_reload_keeps_the_annotations_and_remove_drops_them(ws: enb.Workspace) -> None:
    job = ws.load(EXAMPLE)
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    job.annotate("A", 2, label="no", reason="crashed")
    again = ws.load(EXAMPLE)  # the same job id: replaced
    assert again.annotations()[["task", "attempt", "label", "reason"]].values.tolist() == [
        ["A", 2, "no", "crashed"]
    ]
    dims = again.dimensions()
    assert dims[dims["name"] == "correct"]["value"].tolist() == [0.0]
    assert "correct" in again.groups(by="dimension")["dimension"].tolist()
    ws.remove(again)
    assert ws.con.execute("SELECT count(*) FROM annotations").fetchone() == (0,)
    assert ws.con.execute("SELECT count(*) FROM manual_dimensions").fetchone() == (0,)


def test_a_workspace_file_keeps_them(tmp_path: Path) -> None:
    ws = enb.open(tmp_path / "w.duckdb")
    job = ws.load(EXAMPLE)
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    job.annotate("A", 1, label="yes", by="ana")
    ws.close()
    again = enb.open(tmp_path / "w.duckdb").job(job.id)
    assert again.annotations()["annotator"].tolist() == ["ana"]


def test_exported_with_the_job(ws: enb.Workspace, tmp_path: Path) -> None:
    job = ws.load(SAMPLE)
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    job.annotate("math-001", 1, label="yes", reason="right", by="ana")
    job.annotate("math-001", 1, label="no", reason="misread", by="bo")
    out = job.export_xlsx(tmp_path / "a.xlsx")
    assert out.rows_per_sheet["Annotations"] == 2
    wb = openpyxl.load_workbook(out.path, read_only=True)
    rows = list(wb["Annotations"].iter_rows(values_only=True))
    assert rows[0][:6] == ("Dimension", "Task", "Attempt", "Label", "Value", "Reason")
    assert [r[3] for r in rows[1:]] == ["yes", "no"]
    assert rows[1][8].startswith("replaced ") and rows[2][8] == "current"
    header = list(next(wb["Attempts"].iter_rows(values_only=True)))
    assert "correct" in header  # the value, beside the other dimensions
    ds = job.export_dataset(tmp_path, name="hard", version="1")
    first = json.loads((ds.path / "rows.jsonl").read_text().splitlines()[0])
    assert first["task"] == "math-001"
    assert first["annotations"] == [
        {"annotated_at": first["annotations"][0]["annotated_at"], "annotator": "bo",
         "attempt": 1, "dimension": "correct", "label": "no", "reason": "misread", "value": 0.0}
    ]  # fmt: skip


def test_quick_annotation_in_the_cases_tab(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE)
    p = job.panel()
    assert p.cases.mode.disabled  # nothing to annotate yet
    p.cases.manual_toggle.value = True
    p.cases.manual_name.value = "correct"
    p.cases.manual_labels.value = "correct=1, wrong=0"
    p.cases.add_manual_dimension()
    assert "added" in p.cases.manual_message.value and not p.cases.mode.disabled
    p.cases.subset.value = "math"  # quick mode walks the rows the tab shows
    p.cases.mode.value = "quick"
    quick = p.cases.quick
    assert quick is not None and p.cases.normal_box.layout.display == "none"
    w = quick.widget
    assert w.progress.startswith(
        "0/797 annotated"
    )  # the attempts there are and w.position == "case 1 of 160"
    assert w.choices == ["correct", "wrong"] and "task math-001 · attempt 1" in w.card
    w.reason = "checked by hand"
    w.event = {"kind": "label", "index": 0}  # the key "1"
    w.events += 1
    assert w.position == "case 2 of 160" and w.progress.startswith("1/797")
    assert "saved math-001 · attempt 1: correct" in w.message and not w.message_is_error
    assert job.annotations()[["task", "attempt", "label", "reason"]].values.tolist() == [
        ["math-001", 1, "correct", "checked by hand"]
    ]
    before = _tables(ws)
    # issue 37: a refusal showed in the success green — the front end draws the message
    # when it changes, and the error flag came after it (and was not listened to)
    styles: list[bool] = []
    w.observe(lambda _: styles.append(w.message_is_error), names="message")
    w.event = {"kind": "label", "index": 4}  # the key "5": no such label
    w.events += 1
    assert w.message_is_error and "no label on key 5" in w.message
    assert styles == [True] and '"message_is_error"' in w._esm
    assert _tables(ws) == before and w.position == "case 2 of 160"
    w.event = {"kind": "move", "delta": -1}
    w.events += 1
    assert w.position == "case 1 of 160" and w.current == "correct"
    w.event = {"kind": "next_open"}
    w.events += 1
    assert w.position == "case 2 of 160" and w.current == ""
    p.cases.mode.value = "normal"  # back to the rows: the column shows the annotation
    assert "correct" in p.cases.frame.columns
    assert p.cases.frame.iloc[0]["correct"] == 1.0


def test_the_panel_form_refuses_bad_specs(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE)
    p = job.panel()
    p.cases.manual_name.value = "correct"
    p.cases.manual_labels.value = "good, bad"
    p.cases.add_manual_dimension()
    assert "label=value" in p.cases.manual_message.value
    p.cases.manual_labels.value = "good=1"
    p.cases.add_manual_dimension()
    assert "at least two" in p.cases.manual_message.value
    assert job.manual_dimensions() == [] and p.cases.mode.disabled


def test_a_running_job_awaiting_annotation_stays_running(ws: enb.Workspace) -> None:
    """Only a completed job waits for annotation; a running one is still running."""
    job = ws.load(EXAMPLE)
    job.add_manual_dimension("correct", {"yes": 1, "no": 0})
    assert list(ws.jobs()["status"]) == ["running"]
    assert job.info["status"] == "running"  # the panel adds "· awaiting annotation"
