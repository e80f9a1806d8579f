"""The platform's worked example, verbatim: A=[1,0], B=[1,1], C=[0,missing]."""

from __future__ import annotations

import json

import pytest

import envloop_nb as enb
from tests.conftest import THREE_TASKS


def test_worked_example(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    s = job.summary().to_dict()
    assert s["score"] == pytest.approx(0.6) and s["pass"] == pytest.approx(0.6)
    assert s["pass@k"] == 1.0 and s["pass^k"] == 0.5 and s["k"] == 2
    assert (s["total"], s["scored"], s["missing"], s["invalid"]) == (6, 5, 1, 0)
    assert (s["total_members"], s["complete_members"]) == (3, 2)
    assert str(job.summary()) == "score 60.0% · 5/6 attempts scored · 2/3 members complete"


def test_matches_the_platforms_own_block(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    platform = job.info["platform_metrics"]
    mine = job.summary().to_dict()
    for key in ("score", "pass", "pass@k", "pass^k", "k"):
        assert mine[key] == pytest.approx(platform[key])
    for key, value in platform["score_counts"].items():
        assert mine[key] == value


def test_failure_policy_counts_missing_as_zero(ws: enb.Workspace) -> None:
    s = ws.load(THREE_TASKS).summary(policy="failure")
    assert s.score == pytest.approx(3 / 6)
    assert s.pass_at_k == pytest.approx(2 / 3) and s.pass_hat_k == pytest.approx(1 / 3)
    assert (s.scored, s.missing, s.complete_members) == (5, 1, 2)  # counts never change


def test_no_scored_attempt_means_every_metric_null(ws: enb.Workspace, tmp_path) -> None:
    doc = json.loads(THREE_TASKS.read_text())
    for t in doc["trials"]:
        t["reward"] = None
    del doc["metrics"]
    path = tmp_path / "none.json"
    path.write_text(json.dumps(doc))
    s = ws.load(path).summary()
    assert (s.score, s.pass_, s.pass_at_k, s.pass_hat_k) == (None, None, None, None)
    assert s.invalid == 5  # five ended without reward; the running one is missing, not invalid


def test_curve_at_requested_k_equals_job_level(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    curve = job.curve()
    last = curve[curve["k"] == 2].iloc[0]
    assert last["pass@k"] == 1.0 and last["pass^k"] == 0.5 and last["tasks"] == 2
