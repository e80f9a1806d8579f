"""The summary card: real k, coverage beside the score, missing attempts impossible to miss."""

from __future__ import annotations

import envloop_nb as enb
from envloop_nb._present.cards import summary_card_html
from tests.conftest import SAMPLE_DATA, THREE_TASKS


def test_card_of_the_worked_example(ws: enb.Workspace) -> None:
    html = ws.load(THREE_TASKS).summary()._repr_html_()
    assert html == summary_card_html(ws.job("job_abc0001").summary())
    for text in ("pass@2", "pass^2", "60%", "83.3%", "5/6 attempts scored", "2/3 members complete"):
        assert text in html, text
    assert (
        "enb-coverage enb-warn" in html
        and "1 of 6 attempts missing" in html
        and "not counted as 0" in html
    )
    assert "policy=&#x27;unknown&#x27;" in html and "pass = reward = 1" in html


def test_card_under_failure_policy_and_threshold(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "graded.json")
    graded = job.summary()._repr_html_()
    assert "graded rewards" in graded and "job.summary(threshold=0.5)" in graded
    html = job.summary(policy="failure", threshold=0.7)._repr_html_()
    assert "pass = reward ≥ 0.7" in html and "each counted as reward 0" in html
    assert "pass@3" in html and "over 60 members" in html


def test_complete_job_has_no_warning(ws: enb.Workspace, tmp_path) -> None:
    from tests.envloop_docs import job_doc, load, trial

    job = load(ws, tmp_path, job_doc([trial("a", 1, 1), trial("b", 1, 0)], k=1))
    html = job.summary()._repr_html_()
    assert "enb-coverage enb-warn" not in html and "nothing missing" in html and "100%" in html
