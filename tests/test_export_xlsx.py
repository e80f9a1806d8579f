"""The XLSX review export, read back with openpyxl (a real reload of the saved file)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openpyxl import load_workbook

import envloop_nb as enb
import envloop_nb._export.cells as xl  # the cell writer under the job workbook
from envloop_nb import Bucket, BucketRules

from .conftest import SAMPLE_DATA, THREE_TASKS

RULES = BucketRules(
    [Bucket("hard", 0, 0.25), Bucket("medium", 0.25, 0.75), Bucket("easy", 0.75, 1.01)]
)
HOSTILE = {
    "output": '=HYPERLINK("http://evil.example/x","click me")',
    "error": "+cmd|' /C calc'!A0",
    "input": "@SUM(1+1)*cmd|' /C calc'!A0",
    "reference": "-2+3",
    "task": "=1+1",
}


def write_job(
    path: Path,
    trials: list[dict[str, Any]],
    tasks: list[str],
    status: str = "completed",
    k: int = 2,
) -> Path:
    doc = {
        "schema_version": "envloop.job-result/v1",
        "job": {
            "id": "job_hand",
            "status": status,
            "dataset": {"name": "hand", "version": "1", "revision": "sha256:00"},
            "model": "m",
            "attempts": k,
            "tasks": [{"name": t, "tags": {"subset": "s"}} for t in tasks],
        },
        "trials": [
            {"id": f"tr_{i}", "status": "completed", "reward": 1, **t} for i, t in enumerate(trials)
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def rows(ws: Any) -> list[tuple[Any, ...]]:
    return list(ws.iter_rows(values_only=True))


@pytest.fixture
def base(ws: enb.Workspace) -> enb.Job:
    return ws.load(SAMPLE_DATA / "base.json")


def test_workbook_matches_the_frames(base: enb.Job, tmp_path: Path) -> None:
    out = base.export_xlsx(tmp_path / "review.xlsx", rules=RULES)
    wb = load_workbook(out.path)
    assert wb.sheetnames == ["Summary", "Tasks", "Attempts"]
    result = base.buckets(RULES)
    frame = result.frame

    tasks = wb["Tasks"]
    header = [c.value for c in tasks[1]]
    # people's headers (issue 37: the workbook showed raw column names); tags keep their keys
    assert header[:4] == ["Bucket", "Task", "subset", "difficulty"]
    assert len(set(header)) == len(header)
    assert not [h for h in header if h.startswith(("metric: ", "tag: "))]
    for col in ("Attempts", "Scored", "Pass rate", "pass@4", "pass^4", "Reward mean", "Reward std"):
        assert col in header
    assert not [h for h in header if "_" in h]
    assert tasks.freeze_panes == "A2"
    assert tasks.auto_filter.ref == f"A1:{tasks.cell(1, len(header)).column_letter}{len(frame) + 1}"
    assert tasks.max_row == len(frame) + 1 == out.rows_per_sheet["Tasks"] + 1
    named = {
        "task": "Task",
        "bucket": "Bucket",
        "pass_rate": "Pass rate",
        "reward_mean": "Reward mean",
    }
    idx = {
        c: header.index(named.get(c, c))
        for c in ("task", "bucket", "subset", *named, "pass@4", "pass^4")
    }
    tags = base.tasks().set_index("task")["tags"].map(json.loads)
    for r, (_, row) in zip(rows(tasks)[1:], frame.iterrows(), strict=True):
        assert r[idx["task"]] == row["task"]
        assert r[idx["bucket"]] == row["bucket"]
        assert r[idx["subset"]] == tags[row["task"]]["subset"]
        for col in ("pass_rate", "pass@4", "pass^4", "reward_mean"):
            if pd.isna(row[col]):
                assert r[idx[col]] is None
            else:
                assert r[idx[col]] == pytest.approx(row[col])
    for col in ("pass_rate", "pass@4", "pass^4"):
        cell = tasks.cell(2, idx[col] + 1)
        assert cell.number_format == "0.0%", col
    assert tasks.cell(1, 1).font.b

    attempts = wb["Attempts"]
    a_header = [c.value for c in attempts[1]]
    assert a_header[:4] == ["Task", "Attempt", "Bucket", "Status"]
    for col in ("Reward", "Error", "Input", "Output", "Reference", "Input tokens", "Turns"):
        assert col in a_header
    assert not [h for h in a_header if "_" in h or h[:1].islower()]
    expected = base.attempts()
    assert attempts.max_row == len(expected) + 1
    assert attempts.freeze_panes == "A2" and attempts.auto_filter.ref
    a_idx = {h: i for i, h in enumerate(a_header)}
    got = rows(attempts)[1:]
    bucket_of = dict(zip(frame["task"], frame["bucket"], strict=True))
    for r, (_, e) in zip(got, expected.iterrows(), strict=True):
        assert (r[a_idx["Task"]], r[a_idx["Attempt"]]) == (e["task"], e["attempt"])
        assert r[a_idx["Bucket"]] == bucket_of[e["task"]]
        assert r[a_idx["Reward"]] == (None if pd.isna(e["reward"]) else e["reward"])
        assert r[a_idx["Output"]] == (None if pd.isna(e["output"]) else e["output"] or None)
    assert attempts.cell(2, a_idx["Input"] + 1).alignment.wrap_text

    summary = {r[0]: r[1] for r in rows(wb["Summary"]) if r and r[0]}
    info = base.info
    assert summary["job"] == "job_base"
    assert summary["model"] == info["model"]
    assert summary["dataset"] == f"{info['dataset_name']}@{info['dataset_version']}"
    assert summary["policy"] == "unknown"
    assert summary["coverage"] == base.summary().coverage_text
    assert summary["pass@4"] == pytest.approx(base.summary().pass_at_k)
    assert summary["partial"] == "no"
    counts = dict(zip(result.counts["bucket"], result.counts["count"], strict=True))
    assert (summary["hard"], summary["medium"], summary["easy"]) == (
        "[0%, 25%)",
        "[25%, 75%)",
        "[75%, 101%)",
    )
    table = {r[0]: r[2] for r in rows(wb["Summary"]) if r and r[0] in counts}
    assert table == {k: int(v) for k, v in counts.items()}


def test_text_never_becomes_a_formula(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = [
        {
            "task": HOSTILE["task"],
            "attempt": 1,
            **{k: v for k, v in HOSTILE.items() if k != "task"},
        },
        {"task": HOSTILE["task"], "attempt": 2, "output": "=cmd|' /C calc'!A0", "reward": 0},
    ]
    job = ws.load(write_job(tmp_path / "hostile.json", trials, [HOSTILE["task"]]))
    out = job.export_xlsx(tmp_path / "hostile.xlsx", rules=RULES)
    wb = load_workbook(out.path)
    sheet = wb["Attempts"]
    header = [c.value for c in sheet[1]]
    row = {h: sheet.cell(2, i + 1) for i, h in enumerate(header)}
    for key in ("output", "error", "input", "reference", "task"):
        cell = row[key.capitalize()]
        assert cell.data_type == "s", key
        assert cell.value == HOSTILE[key], key
        assert cell.quotePrefix, key
    assert sheet.cell(3, header.index("Output") + 1).value == "=cmd|' /C calc'!A0"
    assert wb["Tasks"].cell(2, 2).value == "=1+1"
    assert wb["Tasks"].cell(2, 2).data_type == "s"
    with zipfile.ZipFile(out.path) as z:
        for name in z.namelist():
            if name.startswith("xl/worksheets/"):
                assert b"<f>" not in z.read(name) and b"<f " not in z.read(name), name


def test_long_text_is_truncated_visibly(ws: enb.Workspace, tmp_path: Path) -> None:
    long = "y" * 40_000
    trials = [{"task": "t", "attempt": 1, "output": long}, {"task": "t", "attempt": 2}]
    job = ws.load(write_job(tmp_path / "long.json", trials, ["t"]))
    out = job.export_xlsx(tmp_path / "long.xlsx")
    assert out.truncated_cells == 1
    sheet = load_workbook(out.path)["Attempts"]
    header = [c.value for c in sheet[1]]
    value = sheet.cell(2, header.index("Output") + 1).value
    assert len(value) == xl.MAX_CELL_CHARS
    kept = value.index("…")
    assert value.endswith(f"… [truncated {40_000 - kept} chars]")


def test_control_characters_are_escaped(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = [
        {"task": "t", "attempt": 1, "output": "bell\x07and\x1bescape\ttab"},
        {"task": "t", "attempt": 2},
    ]
    job = ws.load(write_job(tmp_path / "ctl.json", trials, ["t"]))
    out = job.export_xlsx(tmp_path / "ctl.xlsx")
    assert out.escaped_cells == 1
    sheet = load_workbook(out.path)["Attempts"]
    header = [c.value for c in sheet[1]]
    assert sheet.cell(2, header.index("Output") + 1).value == "bell\\x07and\\x1bescape\ttab"


def test_row_limit_splits_sheets(
    base: enb.Job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(xl, "MAX_ROWS", 301)  # 300 data rows + header per sheet
    out = base.export_xlsx(tmp_path / "split.xlsx")
    n = len(base.attempts())  # 797
    assert out.rows_per_sheet["Attempts"] == 300
    assert out.rows_per_sheet["Attempts (2)"] == 300
    assert out.rows_per_sheet["Attempts (3)"] == n - 600
    wb = load_workbook(out.path)
    assert wb.sheetnames == ["Summary", "Tasks", "Attempts", "Attempts (2)", "Attempts (3)"]
    got = []
    for name in ("Attempts", "Attempts (2)", "Attempts (3)"):
        sheet = wb[name]
        assert sheet.max_row <= 301
        assert sheet.cell(1, 1).value == "Task"  # header repeated
        assert sheet.freeze_panes == "A2"
        assert sheet.auto_filter.ref.endswith(str(sheet.max_row))
        got.extend((r[0], r[1]) for r in rows(sheet)[1:])
    exp = base.attempts()
    assert got == list(zip(exp["task"], exp["attempt"], strict=True))


def test_bucket_selection_and_sheet_per_bucket(base: enb.Job, tmp_path: Path) -> None:
    result = base.buckets(RULES)
    hard = set(result.frame.loc[result.frame["bucket"] == "hard", "task"])
    out = base.export_xlsx(tmp_path / "hard.xlsx", rules=RULES, buckets=["hard"])
    wb = load_workbook(out.path)
    assert {r[1] for r in rows(wb["Tasks"])[1:]} == hard
    assert {r[0] for r in rows(wb["Attempts"])[1:]} == hard
    assert {r[2] for r in rows(wb["Attempts"])[1:]} == {"hard"}
    summary = {r[0]: r[1] for r in rows(wb["Summary"]) if r and r[0]}
    assert summary["exported"] == "buckets: hard"

    out = base.export_xlsx(tmp_path / "per.xlsx", rules=RULES, sheet_per_bucket=True)
    wb = load_workbook(out.path)
    assert wb.sheetnames == [
        "Summary",
        "Tasks",
        "hard",
        "medium",
        "easy",
        "Other (matched no rule)",
        "(excluded)",
    ]
    for name in ("hard", "medium", "easy"):
        assert {r[2] for r in rows(wb[name])[1:]} == {name}
    assert out.rows_per_sheet["(excluded)"] == int(
        base.attempts()["task"].isin(result.frame.loc[result.frame["bucket"].isna(), "task"]).sum()
    )


def test_option_errors(base: enb.Job, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs rules"):
        base.export_xlsx(tmp_path / "x.xlsx", buckets=["hard"])
    with pytest.raises(ValueError, match="needs rules"):
        base.export_xlsx(tmp_path / "x.xlsx", sheet_per_bucket=True)
    with pytest.raises(ValueError, match="unknown bucket"):
        base.export_xlsx(tmp_path / "x.xlsx", rules=RULES, buckets=["nope"])
    with pytest.raises(ValueError, match=r"\.xlsx"):
        base.export_xlsx(tmp_path / "x.csv")
    assert not (tmp_path / "x.xlsx").exists()


def test_partial_job_is_refused_or_marked(ws: enb.Workspace, tmp_path: Path) -> None:
    job = ws.load(THREE_TASKS)  # running
    with pytest.raises(enb.EnvloopError, match="still running"):
        job.export_xlsx(tmp_path / "p.xlsx", rules=RULES)
    out = job.export_xlsx(tmp_path / "p.xlsx", rules=RULES, allow_partial=True)
    assert out.partial and "PARTIAL" in str(out)
    summary = {r[0]: r[1] for r in rows(load_workbook(out.path)["Summary"]) if r and r[0]}
    assert summary["partial"] == "yes"
    assert "PARTIAL" in summary
    # without rules there is no bucketing, so nothing to refuse; still partial
    everything = job.export_xlsx(tmp_path / "all.xlsx")
    assert everything.partial and "PARTIAL" in str(everything)
    summary = {r[0]: r[1] for r in rows(load_workbook(everything.path)["Summary"]) if r and r[0]}
    assert summary["partial"] == "yes"
    assert summary["PARTIAL"].startswith("job was running when exported: attempts and pass")
    assert summary["rules"].startswith("none")


def test_finished_job_without_rules_is_not_partial(base: enb.Job, tmp_path: Path) -> None:
    out = base.export_xlsx(tmp_path / "done.xlsx")
    summary = {r[0]: r[1] for r in rows(load_workbook(out.path)["Summary"]) if r and r[0]}
    assert not out.partial and summary["partial"] == "no" and "PARTIAL" not in summary


def test_chat_input_is_rendered_as_turns(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = [
        {
            "task": "t",
            "attempt": 1,
            "input": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            ],
        },
        {"task": "t", "attempt": 2, "input": "plain"},
    ]
    job = ws.load(write_job(tmp_path / "chat.json", trials, ["t"]))
    sheet = load_workbook(job.export_xlsx(tmp_path / "chat.xlsx").path)["Attempts"]
    header = [c.value for c in sheet[1]]
    col = header.index("Input") + 1
    assert sheet.cell(2, col).value == "system: Be brief.\n\nuser: Hi"
    assert sheet.cell(3, col).value == "plain"


def test_dimensions_become_columns(ws: enb.Workspace, tmp_path: Path) -> None:
    graded = ws.load(SAMPLE_DATA / "graded.json")
    out = graded.export_xlsx(tmp_path / "g.xlsx")
    sheet = load_workbook(out.path)["Attempts"]
    header = [c.value for c in sheet[1]]
    dims = graded.dimensions()
    first = dims[(dims["task"] == dims["task"].iloc[0]) & (dims["attempt"] == 1)]
    row = rows(sheet)[1]
    for name, value in zip(first["name"], first["value"], strict=True):
        assert row[header.index(name)] == pytest.approx(value)


def test_summary_without_rules(base: enb.Job, tmp_path: Path) -> None:
    out = base.export_xlsx(tmp_path / "all.xlsx")
    wb = load_workbook(out.path)
    assert "Bucket" not in [c.value for c in wb["Tasks"][1]]
    summary = {r[0]: r[1] for r in rows(wb["Summary"]) if r and r[0]}
    assert summary["rules"].startswith("none")
    assert summary["exported"] == "everything"


def test_per_attempt_buckets(ws: enb.Workspace, tmp_path: Path) -> None:
    graded = ws.load(SAMPLE_DATA / "graded.json")
    rules = BucketRules(
        [Bucket("low", 0, 0.5), Bucket("high", 0.5, 1.01)], "reward", level="attempt"
    )
    out = graded.export_xlsx(tmp_path / "a.xlsx", rules=rules, buckets=["low"])
    wb = load_workbook(out.path)
    attempts = graded.attempts()
    low = attempts[(attempts["reward"] >= 0) & (attempts["reward"] < 0.5)]
    got = rows(wb["Attempts"])[1:]
    assert [(r[0], r[1]) for r in got] == list(zip(low["task"], low["attempt"], strict=True))
    assert {r[2] for r in got} == {"low"}
    assert {r[0] for r in rows(wb["Tasks"])[1:]} == set(low["task"])
    assert "Bucket" not in [c.value for c in wb["Tasks"][1]]  # buckets are per attempt here


def test_cell_styles_survive_the_fast_path(base: enb.Job, tmp_path: Path) -> None:
    """Styles are shared per combination: each cell still reads back with its own format."""
    out = base.export_xlsx(tmp_path / "styles.xlsx", rules=RULES)
    wb = load_workbook(out.path)
    attempts = wb["Attempts"]
    header = [c.value for c in attempts[1]]
    assert all(c.font.b for c in attempts[1])
    idx = {h: i + 1 for i, h in enumerate(header)}
    for r in range(2, 12):
        assert attempts.cell(r, idx["Output"]).alignment.wrap_text
        assert attempts.cell(r, idx["Output"]).alignment.vertical == "top"
        assert not attempts.cell(r, idx["Task"]).alignment.wrap_text
        assert not attempts.cell(r, idx["Task"]).font.b
        assert attempts.cell(r, idx["Attempt"]).data_type == "n"
        if attempts.cell(r, idx["Reward"]).value is not None:
            assert attempts.cell(r, idx["Reward"]).number_format == "0.###"
        if attempts.cell(r, idx["Duration (s)"]).value is not None:
            assert attempts.cell(r, idx["Duration (s)"]).number_format == "0.0"
    summary = wb["Summary"]
    assert summary.cell(1, 1).font.b and not summary.cell(2, 1).font.b
    pct = next(r for r in summary.iter_rows() if r[0].value == "pass@4")[1]
    assert pct.number_format == "0.0%" and pct.data_type == "n"
    bucket_header = next(r for r in summary.iter_rows() if r[0].value == "bucket")
    assert all(c.font.b for c in bucket_header if c.value is not None)


def test_xml_illegal_noncharacters_are_escaped(ws: enb.Workspace, tmp_path: Path) -> None:
    trials = [
        {"task": "t", "attempt": 1, "output": "a\ufffeb\uffffc"},
        {"task": "t", "attempt": 2, "output": "=ok"},
    ]
    job = ws.load(write_job(tmp_path / "nonchar.json", trials, ["t"]))
    out = job.export_xlsx(tmp_path / "nonchar.xlsx")
    assert out.escaped_cells == 1
    sheet = load_workbook(out.path)["Attempts"]
    header = [c.value for c in sheet[1]]
    assert sheet.cell(2, header.index("Output") + 1).value == "a\\ufffeb\\uffffc"
    assert sheet.cell(3, header.index("Output") + 1).data_type == "s"


@pytest.mark.parametrize("sheet_per_bucket", [False, True])
def test_per_attempt_buckets_on_a_dimension(
    ws: enb.Workspace, tmp_path: Path, sheet_per_bucket: bool
) -> None:
    """Attempt-level rules on a named dimension export (they raised a BinderException)."""
    graded = ws.load(SAMPLE_DATA / "graded.json")
    rules = BucketRules([Bucket("low", 0, 0.5)], "accuracy", level="attempt")
    out = graded.export_xlsx(tmp_path / "d.xlsx", rules=rules, sheet_per_bucket=sheet_per_bucket)
    wb = load_workbook(out.path)
    dims = graded.dimensions()
    acc = dims[dims["name"] == "accuracy"].set_index(["task", "attempt"])["value"]
    expected = {}
    for task, attempt in zip(graded.attempts()["task"], graded.attempts()["attempt"], strict=True):
        v = acc.get((task, attempt))
        expected[(task, attempt)] = (
            None if v is None or v != v else ("low" if 0 <= v < 0.5 else "Other (matched no rule)")
        )
    sheets = [n for n in wb.sheetnames if n not in ("Summary", "Tasks")]
    if not sheet_per_bucket:
        assert sheets == ["Attempts"]
    got = {}
    for name in sheets:
        header = [c.value for c in wb[name][1]]
        assert header[:3] == ["Task", "Attempt", "Bucket"] and "accuracy" in header
        for r in rows(wb[name])[1:]:
            got[(r[0], r[1])] = r[2]
            value = r[header.index("accuracy")]
            if value is not None:
                assert value == pytest.approx(acc[(r[0], r[1])])
    assert got == expected and "low" in got.values()
    assert sum(v for k, v in out.rows_per_sheet.items() if k in sheets) == len(expected)


def test_long_text_is_cut_in_utf16_units(ws: enb.Workspace, tmp_path: Path) -> None:
    """Excel counts 32,767 UTF-16 units per cell: emoji take two; pairs are never split."""
    emoji = "😀" * 20_000  # 20,000 characters but 40,000 UTF-16 units: over the limit
    odd = "a" + "😀" * 16_383 + "b"  # a pair straddles unit 32,767: 32,768 units in all
    short = "😀" * 16_383  # 32,766 units: fits
    trials = [
        {"task": "t", "attempt": 1, "output": emoji},
        {"task": "t", "attempt": 2, "output": odd},
        {"task": "u", "attempt": 1, "output": short},
        {"task": "u", "attempt": 2},
    ]
    job = ws.load(write_job(tmp_path / "emoji.json", trials, ["t", "u"]))
    out = job.export_xlsx(tmp_path / "emoji.xlsx")
    assert out.truncated_cells == 2
    sheet = load_workbook(out.path)["Attempts"]
    col = [c.value for c in sheet[1]].index("Output") + 1
    for row, source in ((2, emoji), (3, odd)):
        value = sheet.cell(row, col).value
        assert xl.utf16_len(value) <= xl.MAX_CELL_CHARS
        value.encode("utf-8")  # no lone surrogate: no pair was split
        head, marker = value.split("…")
        assert source.startswith(head) and marker == f" [truncated {len(source) - len(head)} chars]"
        assert xl.utf16_len(value) >= xl.MAX_CELL_CHARS - 1  # cut as late as possible
    assert sheet.cell(4, col).value == short


def test_sheet_titles_never_collide() -> None:
    """The naming function on its own: buckets named like overflow sheets and the reverse."""
    taken: set[str] = set()
    cases = [
        (("Summary", 1), "Summary"),
        (("Tasks", 1), "Tasks"),
        (("hard", 1), "hard"),
        (("hard", 2), "hard (2)"),  # overflow of "hard"
        (("hard (2)", 1), "hard (2) (2)"),  # a bucket named like it, after it
        (("HARD (3)", 1), "HARD (3)"),  # a bucket named like the next overflow, before it
        (("hard", 3), "hard (3) (2)"),  # Excel compares titles ignoring case
        (("History", 1), "History (2)"),  # a title Excel refuses
        (("x" * 40, 1), "x" * 31),
        (("x" * 35, 1), "x" * 27 + " (2)"),  # equal to the one before once cut to 31
        (("x" * 40, 2), "x" * 27 + " (3)"),
        (("a[b]:c*d?e/f\\g", 1), "a_b__c_d_e_f_g"),
        (("'quoted'", 1), "quoted"),
    ]
    got = [xl.sheet_title(name, taken, part) for (name, part), _ in cases]
    assert got == [title for _, title in cases]
    assert taken == {t.lower() for t in got} and len(taken) == len(got)


def test_overflowing_bucket_sheets_named_like_overflow_sheets(
    base: enb.Job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket "hard (2)" beside an overflowing "hard" (it crashed with a KeyError)."""
    monkeypatch.setattr(xl, "MAX_ROWS", 101)  # 100 data rows + header per sheet
    for order in (["hard", "hard (2)"], ["hard (2)", "hard"]):
        bounds = {"hard": (0, 0.5), "hard (2)": (0.5, 1.01)}
        rules = BucketRules([Bucket(n, *bounds[n]) for n in order])
        result = base.buckets(rules)
        out = base.export_xlsx(tmp_path / "o.xlsx", rules=rules, sheet_per_bucket=True)
        wb = load_workbook(out.path)
        assert len(set(wb.sheetnames)) == len(wb.sheetnames)
        assert list(out.rows_per_sheet) == wb.sheetnames
        attempts = base.attempts()
        for name in order:  # each bucket's attempts, across its parts, exactly once
            tasks = set(result.frame.loc[result.frame["bucket"] == name, "task"])
            want = int(attempts["task"].isin(tasks).sum())
            assert want > 100  # the bucket overflows onto more sheets
            parts = [n for n in wb.sheetnames if {r[2] for r in rows(wb[n])[1:]} == {name}]
            assert sum(out.rows_per_sheet[p] for p in parts) == want
            assert all(out.rows_per_sheet[p] <= 100 for p in parts)


def test_buckets_named_like_the_fixed_sheets(base: enb.Job, tmp_path: Path) -> None:
    rules = BucketRules([Bucket("tasks", 0, 0.5), Bucket("SUMMARY", 0.5, 1.01)])
    out = base.export_xlsx(tmp_path / "fixed.xlsx", rules=rules, sheet_per_bucket=True)
    wb = load_workbook(out.path)
    assert wb.sheetnames[:4] == ["Summary", "Tasks", "tasks (2)", "SUMMARY (2)"]
    assert {r[2] for r in rows(wb["tasks (2)"])[1:]} == {"tasks"}
    assert list(out.rows_per_sheet) == wb.sheetnames


def _xlsx_exports() -> dict[str, Any]:
    ws = enb.open()
    job = ws.load(THREE_TASKS)
    exp = ws.load(SAMPLE_DATA / "experiments" / "ops-helper.json")
    other = ws.load(SAMPLE_DATA / "base.json")
    return {
        "job": job.export_xlsx,
        "experiment": exp.export_xlsx,
        "comparison": ws.compare([other, job]).export_xlsx,
    }


@pytest.mark.parametrize(
    ("kind", "name"),
    [("job", "a\nb.xlsx"), ("experiment", "tab\there.xlsx"), ("comparison", "cr\r.xlsx")],
)
def test_a_workbook_name_with_a_control_character_is_refused(
    tmp_path: Path, kind: str, name: str
) -> None:
    """(It wrote a workbook named with a newline.)"""
    with pytest.raises(ValueError, match="control character") as info:
        _xlsx_exports()[kind](tmp_path / name)
    assert repr(str(tmp_path / name)) in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["job", "experiment", "comparison"])
def test_a_workbook_onto_a_folder_is_refused_and_leaves_nothing(tmp_path: Path, kind: str) -> None:
    """(It was refused only after writing the whole workbook, with an IsADirectoryError
    about ``out.xlsx.partial-write``.)"""
    (tmp_path / "out.xlsx").mkdir()
    with pytest.raises(IsADirectoryError) as info:
        _xlsx_exports()[kind](tmp_path / "out.xlsx")
    assert str(info.value) == (
        f"{tmp_path / 'out.xlsx'} is a folder: give the path of a file to write (a new "
        "name, or a name inside that folder)"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["out.xlsx"]
    assert list((tmp_path / "out.xlsx").iterdir()) == []


def test_a_workbook_that_fails_while_saving_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envloop_nb._export.sheet_rows as sheet_rows

    def fails(wb: Any, saved: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sheet_rows, "splice", fails)
    monkeypatch.setattr(xl, "splice", fails)
    with pytest.raises(OSError, match="No space left"):
        _xlsx_exports()["job"](tmp_path / "job.xlsx")
    assert list(tmp_path.iterdir()) == []


def test_the_summary_gives_each_dimension_its_scale(ws: enb.Workspace, tmp_path: Path) -> None:
    job = ws.load(Path(__file__).parent / "data" / "dimension_scale" / "two-scales.json")
    out = job.export_xlsx(str(tmp_path / "s.xlsx"))
    rows = {r[0]: r[1] for r in load_workbook(out.path)["Summary"].iter_rows(values_only=True)}
    assert rows["dimension quality"] == "0–100 pct, higher is better"
    assert rows["dimension error_rate"] == "0–1 ratio, lower is better"
