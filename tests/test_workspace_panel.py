"""The workspace panel (``ws.panel()``): the job list, its filters and its row actions,
driven by clicking the real widgets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
EXAMPLE = ROOT.parent / "shared" / "formats" / "examples" / "three-tasks-two-attempts.json"


@pytest.fixture
def ws() -> enb.Workspace:
    ws = enb.open()
    ws.load_all(SAMPLES / "inspect")  # two jobs, completed
    ws.load(EXAMPLE)  # one job, still running
    return ws


def buttons(panel: Any, job_id: str) -> dict[str, Any]:
    row = panel.list.children[1 + [r.job_id for r in panel.rows].index(job_id)]
    named = {"": "?", "pencil": "Rename", "download": "Report", "trash": "Delete"}
    return {b.description or named[b.icon]: b for b in row.children if hasattr(b, "on_click")}


def test_one_row_per_job_with_score_and_coverage(ws: enb.Workspace) -> None:
    panel = ws.panel()
    ids = sorted(r.job_id for r in panel.rows)
    assert ids == sorted(ws.jobs()["job_id"])
    for row in panel.rows:
        s = ws.job(row.job_id).summary()
        assert (row.score, row.scored, row.total, row.k) == (s.score, s.scored, s.total, s.k)
    text = " ".join(c.value for line in panel.list.children[1:] for c in line.children
                    if hasattr(c, "value") and isinstance(c.value, str))  # fmt: skip
    assert "5/6 scored" in text and "running" in text and "completed" in text
    assert panel.count.value.endswith("3 jobs</span>")


def test_search_status_and_sort(ws: enb.Workspace) -> None:
    panel = ws.panel()
    panel.search.value = "ckpt-b"  # the model of one Inspect log
    assert [r.model for r in panel.rows] == ["mockllm/ckpt-b"]
    assert "1 of 3 jobs" in panel.count.value
    panel.search.value = ""
    panel.status.value = "running"
    assert [r.job_id for r in panel.rows] == ["job_abc0001"]
    panel.status.value = "cancelled"
    assert panel.rows == [] and "no job matches" in panel.list.children[1].value
    panel.status.value = ""
    newest = [r.job_id for r in panel.rows]
    panel.order.value = "oldest"
    assert [r.job_id for r in panel.rows] == newest[::-1]


def test_rename_is_kept_across_a_reload_and_delete_asks_first(ws: enb.Workspace) -> None:
    panel = ws.panel()
    buttons(panel, "job_abc0001")["Rename"].click()
    box, save = panel.detail.children[0].children[1:3]
    box.value = "tiny agent, ckpt 1"
    save.click()
    assert [r.name for r in panel.rows if r.job_id == "job_abc0001"] == ["tiny agent, ckpt 1"]
    ws.load(EXAMPLE)  # a reload replaces the job, not its name
    panel.refresh()
    assert [r.name for r in panel.rows if r.job_id == "job_abc0001"] == ["tiny agent, ckpt 1"]

    buttons(panel, "job_abc0001")["Delete"].click()
    confirm = panel.detail.children[0]
    assert "cannot be undone" in confirm.children[0].value
    cancel = confirm.children[1].children[1]
    cancel.click()
    assert "job_abc0001" in set(ws.jobs()["job_id"])  # cancelled: nothing deleted
    buttons(panel, "job_abc0001")["Delete"].click()
    panel.detail.children[0].children[1].children[0].click()  # Delete
    assert "job_abc0001" not in set(ws.jobs()["job_id"])
    assert ws.sql("SELECT count(*) FROM job_names").fetchone() == (0,)
    assert [r.job_id for r in panel.rows if r.job_id == "job_abc0001"] == []


def test_open_report_and_compare(
    ws: enb.Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    panel = ws.panel()
    buttons(panel, "job_abc0001")["Open"].click()
    assert "enb-job-panel" in panel.detail.children[0]._dom_classes

    buttons(panel, "job_abc0001")["Report"].click()
    written = tmp_path / "reports" / "job_abc0001.html"
    assert written.is_file() and "<html" in written.read_text()[:200].lower()
    assert 'href="reports/job_abc0001.html"' in panel.detail.children[0].value

    inspect_ids = [r.job_id for r in panel.rows if r.method.startswith("inspect")]
    assert panel.compare_button.disabled
    panel.ticks[inspect_ids[0]].value = True
    assert panel.compare_button.disabled  # one is not a comparison
    panel.ticks[inspect_ids[1]].value = True
    assert not panel.compare_button.disabled
    assert panel.compare_button.description == "Compare selected (2)"
    panel.compare_button.click()
    assert type(panel.detail.children[0]).__name__ == "ComparisonPanel"
    panel.search.value = "mockllm"  # the ticks survive a filter
    assert panel.selected() == sorted(inspect_ids, key=[r.job_id for r in panel.rows].index)


def test_a_name_in_use_is_refused_and_a_snapshot_outlives_its_job(ws: enb.Workspace) -> None:
    panel = ws.panel()
    other = next(r.job_id for r in panel.rows if r.job_id != "job_abc0001")
    buttons(panel, "job_abc0001")["Rename"].click()
    box, save = panel.detail.children[0].children[1:3]
    box.value = other  # another job's id is its shown name
    save.click()
    assert "already job" in panel.message.value
    assert ws.sql("SELECT count(*) FROM job_names").fetchone() == (0,)  # nothing changed
    with pytest.raises(ValueError, match="already job"):
        ws.rename(other, "job_abc0001")

    ws.save_to_leaderboard("job_abc0001")
    buttons(panel, "job_abc0001")["Delete"].click()
    assert "1 saved leaderboard snapshot(s) are kept" in panel.detail.children[0].children[0].value
    panel.detail.children[0].children[1].children[0].click()
    assert "job_abc0001" not in set(ws.jobs()["job_id"])
    assert list(ws.leaderboard()["job"]) == ["job_abc0001"]


def test_the_list_keeps_each_job_s_numbers_until_it_is_reloaded(tmp_path: Path) -> None:
    """The list's numbers are kept in the workspace (a reopened workspace lists without
    recounting), and a reload of the job makes them be counted again."""
    import json as _json

    from envloop_nb._metrics.job_list import job_rows

    example = ROOT.parent / "shared" / "formats" / "examples" / "three-tasks-two-attempts.json"
    ws = enb.open(tmp_path / "w.duckdb")
    job = ws.load(example)
    first = job_rows(ws.con)[0]
    cached = ws.con.execute("SELECT summary FROM job_summary_cache").fetchall()
    assert len(cached) == 1 and _json.loads(cached[0][0])["scored"] == first.scored == 5
    ws.close()
    ws = enb.open(tmp_path / "w.duckdb")
    assert job_rows(ws.con) == [first]  # read back, the same row
    doc = _json.loads(example.read_text())
    doc["trials"] = [t for t in doc["trials"] if t["task"] != "C"]
    changed = tmp_path / "changed.json"
    changed.write_text(_json.dumps(doc))
    ws.load(changed)  # the same job id, other attempts
    again = job_rows(ws.con)[0]
    s = ws.job(job.id).summary()
    assert (again.scored, again.total, again.score) == (s.scored, s.total, s.score)
    assert ws.con.execute("SELECT count(*) FROM job_summary_cache").fetchone() == (1,)


def test_an_older_file_opened_read_only_still_lists_and_groups(tmp_path: Path) -> None:
    """A file written before the annotation tables existed, opened read-only."""
    path = tmp_path / "old.duckdb"
    ws = enb.open(path)
    ws.load(ROOT / "sample_data" / "base.json")
    for table in ("manual_dimensions", "annotations", "job_summary_cache"):
        ws.con.execute(f"DROP TABLE {table}")
    ws.close()
    ro = enb.open(path, read_only=True)
    job = ro.job("job_base")
    assert "reward" in job.groups(by="dimension")["dimension"].tolist()
    assert job.manual_dimensions() == [] and job.annotation_progress() == []
    panel = ro.panel()
    assert len(panel.rows) == 1 and panel.rows[0].scored == job.summary().scored


def test_long_names_stay_apart(ws: enb.Workspace) -> None:
    """Issue 37: two Inspect jobs both read ``inspect:capitals:m…`` in the list."""
    from envloop_nb._ui.workspace_panel import row_cells_html

    panel = ws.panel()
    inspect = [r for r in panel.rows if r.method.startswith("inspect")]
    shown = [re.sub(r"<[^>]+>", "", row_cells_html(r)[0]) for r in inspect]
    # the column (190px) shows 26 characters whole: the CSS cut a 40-character name at
    # the same place for both jobs
    assert len(set(shown)) == 2 and all("ckpt-" in s and len(s) <= 26 for s in shown)
    line = panel.list.children[1 + panel.rows.index(inspect[0])]
    assert f'title="{inspect[0].name} ({inspect[0].job_id})"' in line.children[1].value


def test_compare_selected_lets_you_choose_the_baseline(ws: enb.Workspace) -> None:
    """Issue 37: "Compare selected" silently made the newer job the baseline (the list's
    first). Now a baseline dropdown, by default the oldest ticked job."""
    panel = ws.panel()
    inspect = [r for r in panel.rows if r.method.startswith("inspect")]
    assert panel.baseline.layout.display == "none"
    for r in inspect:
        panel.ticks[r.job_id].value = True
    oldest = min(inspect, key=lambda r: r.created_at or r.loaded_at).job_id
    assert panel.baseline.layout.display is None
    assert panel.baseline.value == oldest != panel.selected()[0]
    panel.compare_button.click()
    assert panel.detail.children[0].state.baseline == oldest
    newer = next(r.job_id for r in inspect if r.job_id != oldest)
    panel.baseline.value = newer
    panel.compare_button.click()
    assert panel.detail.children[0].state.baseline == newer


def test_opening_a_workspace_and_its_panel_imports_no_pandas(tmp_path: Path) -> None:
    """Stage 8 (issue 37): a parameter bound by ``enb.open`` made DuckDB import pandas,
    most of a fresh process's wait for ``ws.panel()``; neither needs it."""
    import subprocess
    import sys

    path = tmp_path / "w.duckdb"
    sample = Path(__file__).resolve().parents[1] / "sample_data" / "base.json"
    code = (
        "import sys, envloop_nb as enb\n"
        f"ws = enb.open({str(path)!r})\n"
        "p = ws.panel()\n"
        "print(len(p.rows), 'pandas' in sys.modules)\n"
    )
    setup = f"import envloop_nb as enb\nws = enb.open({str(path)!r})\nws.load({str(sample)!r})\n"
    subprocess.run([sys.executable, "-c", setup + "ws.panel(); ws.close()"], check=True)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "False"]
