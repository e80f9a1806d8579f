"""The experiment panel driven from Python (filters, selection, the correction form,
re-evaluation, "+ new case"), its HTML, and the workbook read back."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

import envloop_nb as enb
from envloop_nb._present.experiment_html import case_list_html, history_html, summary_card_html

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data" / "experiments" / "ops-helper.json"


@pytest.fixture
def exp() -> enb.Experiment:
    return enb.open().load(SAMPLE)


def test_panel_filters_and_detail(exp: enb.Experiment) -> None:
    p = exp.panel()
    try:
        assert "20/24 rows counted" in p.header.value and "not counted as 0" in p.header.value
        assert len(p.visible) == 12
        p.status.value = "failed"
        assert p.visible == ["tr_009"]
        p.status.value = "pending"
        assert p.visible == ["tr_012"]
        p.status.value = "corrected"
        assert p.visible == ["tr_002"]
        p.status.value = "__all__"
        p.score.value = (0.0, 40.0)  # effective scores: tr_002's quality 40 was corrected to 65
        assert p.visible == ["tr_005"]
        p.evaluator.value = "answer_quality"
        p.score.value = (0.0, 70.0)
        assert p.visible == ["tr_002", "tr_005", "tr_011"]
        p.evaluator.value, p.score.value = "__all__", (0.0, 100.0)
        p.search.value = "reboot"
        assert p.visible == ["tr_011"]
        p.search.value = ""
        p.select_trace("tr_005")
        assert "Names a tool but not the one asked for." in p.detail.value
        assert "run 2" in p.detail.value
    finally:
        p.close()


def test_panel_correction_form(exp: enb.Experiment) -> None:
    p = exp.panel()
    try:
        p.select_trace("tr_003")
        p.form_evaluator.value = "answer_quality"
        assert p.form_score.value == 80
        p.form_score.value = 95
        p.form_reason.value = ""
        # issue 37: the feedback showed at the panel's top, out of sight of the form
        assert p.form_message in p.form.children
        p.save.click()
        assert "needs a reason" in p.form_message.value and "enb-error-box" in p.form_message.value
        assert p.message.value == ""
        p.form_reason.value = "complete answer"
        p.save.click()
        assert "corrected tr_003" in p.form_message.value and p.message.value == ""
        assert (
            exp.results()
            .set_index(["trace_id", "evaluator"])
            .loc[("tr_003", "answer_quality"), "score"]
            == 95
        )
        assert "complete answer" in p.history.value
        assert p.guard.run(p._undo)
        assert (
            exp.results()
            .set_index(["trace_id", "evaluator"])
            .loc[("tr_003", "answer_quality"), "score"]
            == 80
        )
        # re-evaluate needs a notebook function for a platform judge: the message says so
        p.rerun.click()
        assert "exp.use" in p.form_message.value
        exp.use(enb.Evaluator("answer_quality", lambda c: 50))
        assert p.guard.run(p._rerun)
        assert (
            exp.results()
            .set_index(["trace_id", "evaluator"])
            .loc[("tr_003", "answer_quality"), "run"]
            == 2
        )
        # + new case: evaluated with the bound function; accuracy has none bound here → pending
        p.new_id.value, p.new_input.value, p.new_output.value = (
            "tr_new",
            "What is my IP?",
            "ip addr",
        )
        assert p.guard.run(p._add)
        res = exp.results().set_index(["trace_id", "evaluator"])
        assert res.loc[("tr_new", "answer_quality"), "score"] == 50
        assert (
            res.loc[("tr_new", "answer_accuracy"), "status"] == "succeeded"
        )  # no reference: no number
        assert "tr_new" in p.visible
    finally:
        p.close()


def test_html_is_escaped_and_honest() -> None:
    s = {"name": "<b>", "agent": None, "composite": None, "counted": 0, "total": 2, "completed": 0,
         "failed": 1, "pending": 1, "missing": 0, "cases": 1, "evaluators": ["e"], "live_corrections": 0}  # fmt: skip
    out = summary_card_html(
        s, [{"evaluator": "<e>", "mean": None, "counted": 0, "total": 2, "failed": 1}]
    )
    assert "&lt;b&gt;" in out and "<b>:" not in out and "&lt;e&gt;" in out
    assert ">-<" in out and "0/2 rows counted" in out and "1 failed" in out
    rows = [{"trace_id": "x", "input": "=cmd()", "composite": float("nan"), "counted": 0, "total": 1,
             "e": float("nan"), "e status": "succeeded"}]  # fmt: skip
    assert "no number" in case_list_html(rows, ["e"])
    assert "no manual corrections" in history_html([])


def test_workbook_read_back(exp: enb.Experiment, tmp_path: Path) -> None:
    out = exp.export_xlsx(tmp_path / "exp.xlsx")
    assert out.rows_per_sheet == {
        "Summary": 12,
        "Evaluators": 2,
        "Cases": 12,
        "Results": 24,
        "Corrections": 2,
    }
    wb = openpyxl.load_workbook(out.path)
    assert wb.sheetnames == ["Summary", "Evaluators", "Cases", "Results", "Corrections"]
    summary = wb["Summary"]
    assert summary["A1"].value.startswith("composite 80.8 · 20/24 rows counted")
    fields = {r[0]: r[1] for r in summary.iter_rows(min_row=3, values_only=True)}
    assert fields["composite mean"] == 80.75
    assert fields["failed"] == 1 and fields["pending"] == 1
    res = list(wb["Results"].iter_rows(values_only=True))
    head = res[0]
    by = {(r[head.index("Trace id")], r[head.index("Evaluator")]): r for r in res[1:]}
    failed = by["tr_009", "answer_accuracy"]
    assert failed[head.index("Status")] == "failed"
    assert failed[head.index("Score")] is None  # empty, never 0
    assert failed[head.index("Error")] == "judge returned no score (malformed JSON)"
    hist = list(wb["Corrections"].iter_rows(values_only=True))
    assert [r[hist[0].index("State")] for r in hist[1:]] == ["live", "undone"]
    # people's headers; an evaluator's columns keep its name; total counts rows, not attempts
    cases = next(wb["Cases"].iter_rows(values_only=True))
    assert cases[:4] == ("Trace id", "Composite", "Counted", "Rows")
    assert {"answer_accuracy", "answer_accuracy status"} <= set(cases)
    assert not [h for h in cases if h.startswith(("Answer", "Attempts"))]


@pytest.mark.parametrize("how", ["ws.close()", "ws.con.close()"])
def test_closing_the_workspace_stops_the_panels_poll_quietly(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """``ws.close()`` stops an open panel's poll thread before the connection goes; a
    connection closed directly ends the poll quietly at its next look (the thread printed
    a raw ``ConnectionException`` traceback)."""
    import threading

    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    ws = enb.open()
    exp = ws.load(SAMPLE)
    p = exp.panel()
    poller = p._poller
    assert poller.is_alive()
    ws.close() if how == "ws.close()" else ws.con.close()
    poller.join(timeout=60)  # a guard against a hang, not a measure
    assert not poller.is_alive()
    assert raised == []
