"""Rollout statistics: counts by status, reward per rollout and per task, usage and logprob."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._metrics.rollouts import ROLLOUT_QUANTITIES
from tests.conftest import SAMPLE_DATA
from tests.envloop_docs import job_doc, load, trial


def _doc() -> dict:
    u = lambda i, o, t: {"input_tokens": i, "output_tokens": o, "turns": t}  # noqa: E731
    trials = [
        trial("a", 1, 1, usage=u(100, 10, 2), logprob={"mean": -0.2, "min": -3.0},
              started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:00:10Z"),
        trial("a", 2, 0, usage=u(100, 0, 4), started_at="2026-01-01T00:00:00Z",
              finished_at="2026-01-01T00:00:30Z"),
        trial("a", 3, 1, status="failed", error="boom", usage=u(120, 30, 6)),
        trial("b", 1, 0, usage=u(200, 20, 8)),
        trial("b", 2, None, status="failed", error="timeout"),
        trial("b", 3, None, status="running"),
        trial("c", 1, 0.5, status="cancelled"),
    ]  # fmt: skip
    return job_doc(trials, k=3, tasks=["a", "b", "c", "d"])


def test_counts_and_statistics_by_hand(ws: enb.Workspace, tmp_path: Path, frame_kind: str) -> None:
    job = load(ws, tmp_path, _doc())
    df = job.rollout_stats(frame=frame_kind)
    rows = df.to_dicts() if frame_kind == "polars" else df.to_dict("records")
    by = {(r["quantity"], r["level"]): r for r in rows}
    counts = {lvl: by[("rollouts", lvl)]["count"] for q, lvl in by if q == "rollouts"}
    assert counts == {
        "dispatched": 7,
        "completed": 3,
        "failed": 2,
        "cancelled": 1,
        "in progress": 1,
        "with reward": 5,
        "without reward": 2,
    }
    rewards = [1, 0, 1, 0, 0.5]
    r = by[("reward", "rollout")]
    assert r["count"] == 5 and r["mean"] == pytest.approx(statistics.mean(rewards))
    assert r["std"] == pytest.approx(statistics.stdev(rewards))
    assert (r["min"], r["max"], r["p50"]) == (0, 1, 0.5)
    assert r["zero_frac"] == pytest.approx(2 / 5)  # missing rewards are not zeros
    t = by[("reward", "task mean")]
    task_means = [2 / 3, 0.0, 0.5]  # d was never dispatched: no mean
    assert t["count"] == 3 and t["mean"] == pytest.approx(statistics.mean(task_means))
    assert t["std"] == pytest.approx(statistics.stdev(task_means))
    assert t["zero_frac"] == pytest.approx(1 / 3)
    out = by[("output_tokens", "rollout")]
    assert out["count"] == 4 and out["mean"] == pytest.approx(15) and out["zero_frac"] == 0.25
    assert by[("turns", "rollout")]["max"] == 8
    assert by[("duration_s", "rollout")]["mean"] == pytest.approx(20)
    lp = by[("logprob_mean", "rollout")]
    assert lp["count"] == 1 and lp["mean"] == pytest.approx(-0.2)
    cost = by[("cost_usd", "rollout")]
    assert cost["count"] == 0
    assert cost["mean"] is None or cost["mean"] != cost["mean"]  # null (None or NaN)


def test_every_quantity_has_a_row_in_order(ws: enb.Workspace, tmp_path: Path) -> None:
    df = load(ws, tmp_path, job_doc([trial("a", 1, None, status="pending")], k=1)).rollout_stats()
    quantities = [q for q in df["quantity"] if q != "rollouts"]
    assert quantities == ["reward", "reward", *ROLLOUT_QUANTITIES[1:]]
    assert (df.loc[df["quantity"] != "rollouts", "count"] == 0).all()


def test_sample_job_matches_pandas(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "base.json")
    att = job.attempts()
    df = job.rollout_stats().set_index(["quantity", "level"])
    for q in ("reward", "output_tokens", "turns", "logprob_mean", "duration_s"):
        col = att[q].dropna()
        row = df.loc[(q, "rollout")]
        assert row["count"] == len(col)
        assert row["mean"] == pytest.approx(col.mean())
        assert row["std"] == pytest.approx(col.std())
        assert row["p50"] == pytest.approx(col.median())
    per_task = att.groupby("task")["reward"].mean().dropna()
    assert df.loc[("reward", "task mean"), "mean"] == pytest.approx(per_task.mean())
