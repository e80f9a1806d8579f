"""The summary card: real k, coverage beside the score, missing attempts impossible to miss."""

from __future__ import annotations

import envloop_nb as enb
from envloop_nb._present.cards import summary_card_html
from tests.conftest import SAMPLE_DATA, THREE_TASKS


def test_card_of_the_worked_example(ws: enb.Workspace) -> None:
    html = ws.load(THREE_TASKS).summary()._repr_html_()
    assert html == summary_card_html(ws.job("job_abc0001").summary())
    for text in (
        "pass@2",
        "pass^2",
        "60.0%",
        "83.3%",
        "5/6 attempts scored",
        "2/3 members complete",
    ):
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
    assert "enb-coverage enb-warn" not in html and "nothing missing" in html and "100.0%" in html


def _summary(scored: int, total: int, score: float) -> dict:
    return {"job_id": "j", "k": 4, "total": total, "scored": scored, "missing": total - scored,
            "invalid": 0, "total_members": total // 4, "complete_members": total // 4 - 1,
            "score": score, "pass": score, "pass@k": 0.8, "pass^k": 0.48, "binary": True,
            "policy": "unknown", "threshold": None, "note": None}  # fmt: skip


def _values(html: str) -> list[str]:
    import re

    return re.findall(r'class="enb-value">([^<]*)<', html)


def test_every_card_shows_one_decimal() -> None:
    """95.96% coverage read "96%" beside "50.1%": now one decimal on every card."""
    assert _values(summary_card_html(_summary(959_600, 1_000_000, 0.501))) == [
        "50.1%", "96.0%", "50.1%", "80.0%", "48.0%"
    ]  # fmt: skip
    assert _values(summary_card_html(_summary(767, 800, 0.5)))[1] == "95.9%"


def test_sample_job_coverage_card(ws: enb.Workspace) -> None:
    html = ws.load(SAMPLE_DATA / "base.json").summary()._repr_html_()
    assert _values(html) == ["50.1%", "95.9%", "50.1%", "79.9%", "20.7%"]


def test_cards_share_one_row() -> None:
    """Five cards stay on one row of a 900-px panel: each may shrink to a 120-px basis
    (wide sub-labels wrap inside their card) instead of pushing the last card down."""
    from envloop_nb._present.cards import CARD_CSS

    card = CARD_CSS[CARD_CSS.index(".enb-card{") :].split("}", 1)[0]
    assert "flex:1 1 120px" in card and "min-width:0" in card
    assert 5 * 120 + 4 * 8 < 900  # five bases and four gaps
    bar = CARD_CSS[CARD_CSS.index(".enb-bar{") :].split("}", 1)[0]
    assert "min-width" not in bar  # the coverage bar no longer widens its card
