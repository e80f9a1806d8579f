"""Summaries by tag and by score dimension: coverage, metrics, bad cases, directions."""

from __future__ import annotations

from pathlib import Path

import pytest

import envloop_nb as enb
from tests.conftest import SAMPLE_DATA, THREE_TASKS
from tests.envloop_docs import job_doc, load, trial


def test_subset_groups_of_the_worked_example(ws: enb.Workspace, frame_kind: str) -> None:
    df = ws.load(THREE_TASKS).groups(frame=frame_kind)
    rows = df.to_dicts() if frame_kind == "polars" else df.to_dict("records")
    code, math = rows
    assert (code["key"], code["value"], math["value"]) == ("subset", "code", "math")
    # code = B [1, 1] and C [0, missing]
    assert (code["tasks"], code["total"], code["scored"], code["missing"]) == (2, 4, 3, 1)
    assert code["complete_members"] == 1 and code["coverage"] == pytest.approx(0.75)
    assert code["score"] == pytest.approx(2 / 3) and code["pass"] == pytest.approx(2 / 3)
    assert code["pass@k"] == 1.0 and code["pass^k"] == 1.0 and code["k"] == 2
    assert (code["bad_cases"], code["rated_tasks"]) == (0, 1)  # C has no pass rate yet
    # math = A [1, 0]: pass rate 0.5 is not below 0.5
    assert (math["score"], math["pass@k"], math["pass^k"], math["bad_cases"]) == (0.5, 1.0, 0.0, 0)


def test_bad_below_and_failure_policy(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    strict = job.groups(bad_below=0.6).set_index("value")
    assert strict.loc["math", "bad_cases"] == 1  # A's 0.5 < 0.6
    failure = job.groups(policy="failure").set_index("value")
    # under failure C = [0, 0] is rated and bad; counts do not change
    assert failure.loc["code", "bad_cases"] == 1 and failure.loc["code", "rated_tasks"] == 2
    assert failure.loc["code", "scored"] == 3 and failure.loc["code", "complete_members"] == 1
    assert failure.loc["code", "score"] == pytest.approx(2 / 4)
    assert failure.loc["code", "pass@k"] == pytest.approx(1 / 2)


def test_groups_add_up_to_the_job(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "base.json")
    s = job.summary()
    for by in ("subset", "tag:difficulty"):
        df = job.groups(by=by)
        assert df["tasks"].sum() == s.total_members
        assert df["scored"].sum() == s.scored and df["missing"].sum() == s.missing
        assert df["invalid"].sum() == s.invalid
        assert df["complete_members"].sum() == s.complete_members
        weighted = (df["score"] * df["scored"]).sum() / df["scored"].sum()
        assert weighted == pytest.approx(s.score)
        at = (df["pass@k"] * df["complete_members"]).sum() / df["complete_members"].sum()
        assert at == pytest.approx(s.pass_at_k)


def test_one_group_equals_the_job_summary_and_untagged_tasks_are_a_null_group(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    trials = [
        trial("a", 1, 1),
        trial("a", 2, 0),
        trial("b", 1, 1),
        trial("b", 2, None, status="failed"),
        trial("c", 1, 0),
        trial("c", 2, 0),
    ]
    tasks = {"a": {"team": "x"}, "b": {"team": "x"}, "c": {}, "d": {"team": "x"}}
    job = load(ws, tmp_path, job_doc(trials, k=2, tasks=tasks))
    df = job.groups(by="tag:team")
    assert df["value"].tolist()[0] == "x" and df["value"].isna().tolist() == [False, True]
    x = df.iloc[0]
    assert (x["tasks"], x["total"], x["scored"], x["invalid"]) == (3, 6, 3, 1)
    assert x["complete_members"] == 1 and x["score"] == pytest.approx(2 / 3)
    every = job.groups(by="tag:team", policy="failure")
    assert every["tasks"].sum() == 4
    with pytest.raises(ValueError, match="tags present: team"):
        job.groups()
    with pytest.raises(ValueError, match="by must be"):
        job.groups(by="nonsense")


def test_graded_job_threshold_and_bad_cases_on_mean_reward(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    trials = [
        trial("a", 1, 0.2),
        trial("a", 2, 0.4),
        trial("b", 1, 0.9),
        trial("b", 2, 0.7),
    ]
    job = load(
        ws, tmp_path, job_doc(trials, k=2, tasks={"a": {"subset": "s"}, "b": {"subset": "s"}})
    )
    row = job.groups().iloc[0]
    assert row["pass"] is None or row["pass"] != row["pass"]  # null: graded rewards
    assert not row["binary"] and row["bad_cases"] == 1  # a's mean 0.3 < 0.5
    row = job.groups(threshold=0.5).iloc[0]
    assert row["binary"] and row["pass"] == pytest.approx(0.5)
    assert row["pass@k"] == pytest.approx(0.5) and row["pass^k"] == pytest.approx(0.5)
    assert row["threshold"] == 0.5 and row["bad_cases"] == 1  # a's pass rate 0


def _graded_doc() -> dict:
    def m(q: float, lat: float, extra: dict | None = None) -> dict:
        metrics = {
            "composite": q,
            "dimensions": {"quality": q, "latency_s": lat},
            "units": {"quality": "ratio", "latency_s": "s"},
            "higher_is_better": {"quality": True, "latency_s": False},
        }
        metrics.update(extra or {})
        return metrics

    trials = [
        trial("a", 1, 0.9, metrics=m(0.9, 2.0)),
        trial("a", 2, 0.8, metrics=m(0.8, 4.0)),
        trial("b", 1, 0.3, metrics=m(0.3, 30.0)),
        trial("b", 2, 0.1, metrics={"composite": 0.1}),  # no dimensions: missing there
    ]
    return job_doc(trials, k=2)


def test_dimension_groups_respect_units_and_direction(ws: enb.Workspace, tmp_path: Path) -> None:
    job = load(ws, tmp_path, _graded_doc())
    df = job.groups(by="dimension").set_index("dimension")
    assert df.index.tolist() == ["reward", "composite", "latency_s", "quality"]
    assert df.loc["latency_s", "unit"] == "s" and not df.loc["latency_s", "higher_is_better"]
    assert df.loc["quality", "unit"] == "ratio" and df.loc["quality", "higher_is_better"]
    s = job.summary()
    assert df.loc["reward", "score"] == pytest.approx(s.score)
    assert df.loc["reward", "scored"] == s.scored
    assert df.loc["quality", "scored"] == 3 and df.loc["quality", "missing"] == 1
    assert df.loc["quality", "complete_members"] == 1
    assert df.loc["latency_s", "score"] == pytest.approx(12.0)

    th = job.groups(
        by="dimension", threshold={"latency_s": 5.0, "quality": 0.5}, bad_below={"latency_s": 0.5}
    ).set_index("dimension")
    # lower is better: a pass is latency <= 5 s
    assert th.loc["latency_s", "pass"] == pytest.approx(2 / 3)
    assert th.loc["latency_s", "pass@k"] == pytest.approx(1.0)  # only a is complete
    assert th.loc["quality", "pass"] == pytest.approx(2 / 3)
    # with a threshold bad_below is compared with the pass rate: a's 1.0 is fine
    assert th.loc["latency_s", "bad_cases"] == 0 and th.loc["latency_s", "rated_tasks"] == 1
    assert th.loc["reward", "threshold"] != th.loc["reward", "threshold"]  # not in mapping

    graded_bad = job.groups(by="dimension", bad_below={"latency_s": 10}).set_index("dimension")
    # graded lower-is-better: bad when the mean is above bad_below: b (30 s)
    assert graded_bad.loc["latency_s", "bad_cases"] == 1
    assert graded_bad.loc["latency_s", "rated_tasks"] == 2
    with pytest.raises(ValueError, match="unknown dimension"):
        job.groups(by="dimension", threshold={"nope": 1})


def test_dimension_groups_on_sample_graded_job(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "graded.json")
    df = job.groups(by="dimension").set_index("dimension")
    assert {"accuracy", "format_pct", "helpfulness", "safety"} <= set(df.index)
    assert df.loc["format_pct", "unit"] == "pct" and df.loc["format_pct", "score"] > 1
    assert df.loc["reward", "score"] == pytest.approx(job.summary().score)


SCALED = Path(__file__).parent / "data" / "dimension_scale" / "two-scales.json"


def test_a_0_100_dimension_is_judged_on_its_own_scale() -> None:
    """A pct dimension (0–100) was judged at 0.5 (issue 37: pass@k 100%, bad cases 0):
    one number is a fraction of each dimension's range, so 0.5 is 50 on it."""
    job = enb.open().load(SCALED)
    g = job.groups(by="dimension").set_index("dimension")
    assert g.loc["quality", "unit"] == "pct" and g.loc["quality", "range"] == "0–100"
    assert g.loc["quality", "bad_below"] == 50.0
    assert g.loc["quality", "bad_cases"] == 1  # task C: mean 15 of 100
    t = job.groups(by="dimension", threshold=0.5).set_index("dimension")
    assert t.loc["quality", "threshold"] == 50.0
    assert t.loc["quality", "pass"] == pytest.approx(5 / 8)
    assert t.loc["quality", "pass@k"] == pytest.approx(3 / 4)
    # a threshold given per name is in the dimension's own units
    own = job.groups(by="dimension", threshold={"quality": 65.0}).set_index("dimension")
    assert own.loc["quality", "pass"] == pytest.approx(3 / 8)


def test_a_lower_is_better_dimension_keeps_its_direction() -> None:
    job = enb.open().load(SCALED)
    g = job.groups(by="dimension").set_index("dimension")
    assert not g.loc["error_rate", "higher_is_better"] and g.loc["error_rate", "range"] == "0–1"
    assert g.loc["error_rate", "bad_cases"] == 2  # tasks B and C: mean error above 0.5
    t = job.groups(by="dimension", threshold=0.5).set_index("dimension")
    assert t.loc["error_rate", "pass"] == pytest.approx(4 / 8)  # error <= 0.5
