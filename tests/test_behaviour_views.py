"""Behaviour in the panels, the comparison and the HTML reports: only for jobs with steps."""

from __future__ import annotations

from pathlib import Path

import envloop_nb as enb
from tests.conftest import THREE_TASKS
from tests.test_behaviour import HOSTILE, WORKED, _write


def _pair() -> tuple[enb.Workspace, enb.Job, enb.Job]:
    ws = enb.open()
    stepped = ws.load(THREE_TASKS, steps=False)
    _write(stepped, {**WORKED, ("B", 1): [{"step": 1, "role": "user", "kind": "message",
                                             "content": "<script>alert(1)</script>"}]})  # fmt: skip
    plain = ws.load(THREE_TASKS, job_id="plain", steps=False)
    return ws, stepped, plain


def test_the_job_panel_has_a_behaviour_tab_only_with_steps() -> None:
    _, stepped, plain = _pair()
    p = stepped.panel()
    assert repr(p).endswith("Overview · Cases · Buckets & export · Behaviour>")
    tab = p.behaviour
    assert tab is not None and p.built
    assert "Tools" in tab.body.value and "&lt;script&gt;" not in tab.body.value  # not shown there
    assert set(tab.charts) == {"survival", "steps", "tools"}
    tab.contains.value = HOSTILE
    tab.find_button.click()
    assert tab.found is not None and tab.found.values.tolist() == [["C", 1, 7, 1]]
    tab.contains.value = "nothing like this"
    tab.find_button.click()
    assert "no attempt has such a step" in tab.found_box.value and tab.error.value == ""
    p.overview.use_threshold.value = True  # the threshold in force reaches the tab
    p.overview.threshold.value = 0.0
    assert tab.tool_stats.basis.passed == 5
    assert "Tool &#x27;broken&#x27; always fails" in p.overview.diagnosis.value
    q = plain.panel()
    assert "Behaviour" not in repr(q) and q.behaviour is None and q.built


def test_the_comparison_marks_and_says_no_steps() -> None:
    ws, stepped, plain = _pair()
    other = ws.load("sample_data/base.json", steps=False)  # a job without steps
    cmp = ws.compare([stepped, plain, other], baseline=stepped)
    turns = cmp.turn_stats()
    assert turns["job"].tolist() == [stepped.id, "plain", other.id]
    assert turns["note"].tolist() == ["", "no steps recorded", "no steps recorded"]
    assert turns["comparable"].tolist() == [True, True, False]  # base.json: other dataset
    assert turns.attrs["mark"].startswith("⚠ not comparable")
    tools = cmp.tool_stats()
    assert set(tools["job"]) == {stepped.id} and tools.attrs["without_steps"] == ["plain", other.id]
    assert cmp.survival()["job"].unique().tolist() == [stepped.id]
    assert cmp.action_patterns(frame="polars").height == len(stepped.action_patterns().ngrams)
    panel = cmp.panel()
    assert panel.behaviour is not None
    assert panel.tabs.get_title(4) == "Behaviour"
    assert "no steps recorded" in panel.behaviour.children[1].value
    assert "not comparable" in panel.behaviour.children[1].value
    plain_only = ws.compare([plain, ws.load(THREE_TASKS, job_id="plain2", steps=False)])
    assert plain_only.panel().behaviour is None


def test_reports_have_a_behaviour_section_only_with_steps(tmp_path: Path) -> None:
    ws, stepped, plain = _pair()
    report = stepped.export_html(tmp_path / "s.html")
    assert "Behaviour" in report.sections
    text = (tmp_path / "s.html").read_text()
    assert "<script>alert(1)" not in text and "Loops: the same call repeated" in text
    assert "Behaviour" not in plain.export_html(tmp_path / "p.html").sections
    both = ws.compare([stepped, plain]).export_html(tmp_path / "c.html")
    assert both.sections[-1] == "Behaviour"
    assert "no steps recorded" in (tmp_path / "c.html").read_text()
    none = ws.compare([plain, ws.load(THREE_TASKS, job_id="plain2", steps=False)]).export_html(
        tmp_path / "n.html"
    )
    assert "Behaviour" not in none.sections


def test_steps_without_a_tool_call_get_no_behaviour_tab_or_section(tmp_path: Path) -> None:
    """Prompts and answers only (a ChatML job's two steps): nothing to measure, no tab."""
    ws = enb.open()
    talk = ws.load(THREE_TASKS, job_id="talk", steps=False)
    rows = [{"step": 1, "role": "user", "kind": "message", "content": "q"},
            {"step": 2, "role": "assistant", "kind": "message", "content": "a"}]  # fmt: skip
    _write(talk, {("A", 1): rows})
    assert not talk.steps().empty
    p = talk.panel()
    assert "Behaviour" not in repr(p) and p.behaviour is None
    assert "Behaviour" not in talk.export_html(tmp_path / "r.html").sections
