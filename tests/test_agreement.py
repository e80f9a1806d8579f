"""The agreement engine (``job.source_agreement()``) against a brute-force recomputation
of every reducer × statistic × policy on a small job with gaps, NaN-free missing values
and two subsets."""

from __future__ import annotations

import json
import math
import statistics
from itertools import product
from math import comb

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._store.source_numbers import SourceNumber

K = 3
ROWS = [  # task, attempt, reward (None: ended without one), subset
    ("a", 1, 1.0, "x"), ("a", 2, 0.0, "x"), ("a", 3, 1.0, "x"),
    ("b", 1, 0.5, "x"), ("b", 2, None, "x"),
    ("c", 1, 0.0, "y"), ("c", 2, 0.0, "y"), ("c", 3, 1.0, "y"),
    ("d", 1, None, "y"),
]  # fmt: skip


@pytest.fixture(scope="module")
def job() -> enb.Job:
    df = pd.DataFrame(ROWS, columns=["task", "attempt", "reward", "subset"])
    return enb.open().load(df, job_id="agree", k=K)


def _values(policy: str, subset: str | None) -> dict[str, list[float]]:
    tasks = sorted({r[0] for r in ROWS if subset is None or r[3] == subset})
    out: dict[str, list[float]] = {}
    for t in tasks:
        got = {r[1]: r[2] for r in ROWS if r[0] == t}
        if policy == "failure":
            out[t] = [got.get(i) or 0.0 for i in range(1, K + 1)]
        else:
            out[t] = [v for v in got.values() if v is not None]
    return out


def _brute(reducer: str, statistic: str, policy: str, k: int | None, subset: str | None) -> float:
    per = _values(policy, subset)
    if reducer == "none":
        obs = [v for vs in per.values() for v in vs]
        requested = len(per) * K if policy == "failure" else len(obs)
        passes = sum(v == 1 for v in obs)
        counts = {"scored": len(obs), "unscored": len(per) * K - len(obs)}
        counts |= {"passed": passes, "not_passed": requested - passes}
    else:
        red: list[float] = []
        for vs in per.values():
            n, c = len(vs), sum(v == 1 for v in vs)
            if reducer == "mean" and n:
                red.append(statistics.mean(vs))
            elif reducer == "max" and n:
                red.append(max(vs))
            elif reducer == "median" and n:
                red.append(statistics.median(vs))
            elif reducer == "at_least" and n:
                red.append(float(c >= k))
            elif reducer == "pass_at" and n >= k:
                red.append(1 - comb(n - c, k) / comb(n, k))
            elif reducer == "pass_k" and n >= k:
                red.append(comb(c, k) / comb(n, k))
        obs = red
        passes = sum(v >= 1 for v in red)
        counts = {"scored": len(red), "unscored": len(per) - len(red)}
        counts |= {"passed": passes, "not_passed": len(per) - passes}
    if statistic in counts:
        return float(counts[statistic])
    if not obs:
        return math.nan
    if statistic == "mean":
        return statistics.fmean(obs)
    if len(obs) < 2:
        return 0.0
    var = statistics.variance(obs)
    return {"var": var, "std": math.sqrt(var), "stderr": math.sqrt(var / len(obs))}[statistic]


CASES = [
    (reducer, statistic, policy, subset)
    for reducer, statistic, policy, subset in product(
        ["none", "mean", "max", "median", "at_least", "pass_at", "pass_k"],
        ["mean", "stderr", "std", "var", "scored", "unscored", "passed", "not_passed"],
        ["unknown", "failure"],
        [None, "x", "y"],
    )
]


def test_every_recipe_matches_the_brute_force(job: enb.Job) -> None:
    numbers = []
    for reducer, statistic, policy, subset in CASES:
        k = 2 if reducer in ("pass_at", "pass_k", "at_least") else None
        expected = _brute(reducer, statistic, policy, k, subset)
        numbers.append(
            SourceNumber(
                metric=f"{reducer}/{statistic}/{policy}/{subset}", source=expected, of="reward",
                reducer=reducer, statistic=statistic, policy=policy, rule="test", k=k,
                tasks_tag=("subset", subset) if subset else None,  # type: ignore[arg-type]
            ).as_dict()
        )  # fmt: skip
    extra = json.dumps({"source_numbers": numbers})
    job.con.execute("UPDATE jobs SET extra = ?::JSON WHERE job_id = ?", [extra, job.id])
    rows = job.source_agreement()
    assert len(rows) == len(CASES)
    bad = rows[~rows["agrees"]]
    assert bad.empty, bad[["metric", "source", "recomputed"]].to_string()


def test_a_disagreeing_number_is_reported(job: enb.Job) -> None:
    wrong = SourceNumber(
        metric="score", source=0.9, of="reward", reducer="none", statistic="mean",
        policy="unknown", rule="test",
    )  # fmt: skip
    extra = json.dumps({"source_numbers": [wrong.as_dict()]})
    job.con.execute("UPDATE jobs SET extra = ?::JSON WHERE job_id = ?", [extra, job.id])
    row = job.source_agreement().iloc[0]
    assert not row["agrees"] and row["recomputed"] == pytest.approx(3.5 / 7)


def test_a_recipe_is_validated() -> None:
    with pytest.raises(ValueError, match="needs k"):
        SourceNumber(metric="m", source=1, of="reward", reducer="pass_at", statistic="mean",
                     policy="unknown", rule="r")  # fmt: skip
    with pytest.raises(ValueError, match="of must be"):
        SourceNumber(metric="m", source=1, of="score", reducer="none", statistic="mean",
                     policy="unknown", rule="r")  # fmt: skip


def test_a_rounded_percentage_agrees_within_its_last_decimal(job: enb.Job) -> None:
    """τ²-bench's leaderboard states pass^k in percent, rounded (33.33 for 1/3)."""

    def row(source: float, decimals: int | None) -> pd.Series:
        num = SourceNumber(
            metric="pass^1", source=source, of="reward", reducer="pass_k", k=1,
            statistic="mean", policy="unknown", rule="test", scale=100.0, decimals=decimals,
        )  # fmt: skip
        extra = json.dumps({"source_numbers": [num.as_dict()]})
        job.con.execute("UPDATE jobs SET extra = ?::JSON WHERE job_id = ?", [extra, job.id])
        return job.source_agreement().iloc[0]

    first = row(33.33, 2)  # a: 2/3, b: 0/1, c: 1/3 -> 1/3
    assert first["agrees"] and first["recomputed"] == pytest.approx(100 / 3)
    assert not row(33.34, 2)["agrees"]
    assert not row(33.33, None)["agrees"]  # no stated rounding: exact up to float noise
    assert row(100 / 3, None)["agrees"]
    assert SourceNumber.from_dict({**SourceNumber(
        metric="m", source=1, of="reward", reducer="none", statistic="mean",
        policy="unknown", rule="r").as_dict(), "scale": 100.0, "decimals": 2}).decimals == 2  # fmt: skip


def test_a_number_with_nothing_to_recompute_from_cannot_be_checked(job: enb.Job) -> None:
    """A stated mean over values the job does not have (recomputed: NaN) is not a
    disagreement: it cannot be checked, and says why."""
    stated = SourceNumber(
        metric="score of d", source=0.5, of="reward", reducer="none", statistic="mean",
        policy="unknown", rule="test", tasks_tag=("subset", "y"),
    )  # fmt: skip
    nothing = SourceNumber(
        metric="pass_at_4", source=0.25, of="reward", reducer="pass_at", k=4,
        statistic="mean", policy="unknown", rule="test",
    )  # fmt: skip
    both_nan = SourceNumber(
        metric="nan", source=math.nan, of="reward", reducer="pass_at", k=4,
        statistic="mean", policy="unknown", rule="test",
    )  # fmt: skip
    extra = json.dumps({"source_numbers": [n.as_dict() for n in (stated, nothing, both_nan)]})
    job.con.execute("UPDATE jobs SET extra = ?::JSON WHERE job_id = ?", [extra, job.id])
    rows = job.source_agreement()
    assert rows["agrees"].tolist() == [False, None, True]  # 'score of d': 1/3, not 0.5
    assert pd.isna(rows["note"].iloc[0]) and pd.isna(rows["note"].iloc[2])
    assert math.isnan(rows["recomputed"].iloc[1])
    assert "cannot be checked" in rows["note"].iloc[1]
    assert "no task has a value" in rows["note"].iloc[1]


def test_a_job_without_attempts_cannot_check_any_number() -> None:
    """A log written without its samples states numbers nothing here can recompute: even
    a count (0 scored against the stated 20) is unchecked, not a disagreement."""
    df = pd.DataFrame({"task": ["a", "b"], "reward": [1.0, 0.0]})
    ws = enb.open()
    job = ws.load(df, job_id="empty", k=1)
    ws.con.execute("DELETE FROM attempt_rows WHERE job_id = 'empty'")
    numbers = [
        SourceNumber(
            metric=statistic, source=2.0 if statistic == "scored" else 0.5, of="reward",
            reducer="none", statistic=statistic, policy="unknown", rule="test",
        ).as_dict()
        for statistic in ("mean", "scored")
    ]  # fmt: skip
    extra = json.dumps({"source_numbers": numbers})
    ws.con.execute("UPDATE jobs SET extra = ?::JSON WHERE job_id = ?", [extra, job.id])
    rows = job.source_agreement()
    assert rows["agrees"].tolist() == [None, None]
    assert all("holds no attempts" in note for note in rows["note"])


def test_the_panel_says_unchecked_numbers_cannot_be_checked() -> None:
    from envloop_nb._present.panel_html import source_agreement_html

    ok = {"metric": "a", "source": 0.5, "recomputed": 0.5, "agrees": True, "rule": "r"}
    unchecked = {
        "metric": "b", "source": 0.5, "recomputed": None, "agrees": None, "rule": "r",
        "note": "cannot be checked: no task has a value",
    }  # fmt: skip
    html = source_agreement_html("Inspect AI", [ok, unchecked]).split('class="enb-panel">')[1]
    assert "1 of 2 numbers agree" in html and "1 cannot be checked" in html
    assert "no task has a value" in html
    html = source_agreement_html("Inspect AI", [unchecked, unchecked]).split('"enb-panel">')[1]
    assert "agree" not in html.split("<details>")[0]
    assert "none of Inspect AI's 2 numbers can be checked" in html
