"""The Spark path (``ws.load_spark``): the per-task reduction runs on Spark's local mode,
and every number of the summarised job equals the DuckDB path's on the same attempts.

The Spark session's Python workers are pointed at ``/bin/false``: a Python UDF anywhere
in the reduction would fail (``test_python_workers_are_off`` shows that one does), so
the reduction is proven to run on Spark's native functions only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pandas as pd
import pytest
from pyspark.sql import SparkSession  # the dev extra installs it: never skipped

import envloop_nb as enb
from envloop_nb import LoadError


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = "/bin/false"  # the Python workers: no UDF can run
    session = (
        SparkSession.builder.master("local[2]")
        .appName("envloop_nb tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")  # frames in by Arrow
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    if before is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = before


def attempts(seed: int, tasks: int = 120, k: int = 4) -> pd.DataFrame:
    """Attempts with every case the counts distinguish, in task order (row = position)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "task": np.repeat([f"t{i:04d}" for i in range(tasks)], k),
            "attempt": np.tile(np.arange(1, k + 1), tasks),
        }
    )
    n = len(df)
    df["reward"] = rng.choice([0.0, 1.0, 1.0, 0.5, 0.3, 0.1 + 0.2, np.nan], size=n)
    df["status"] = rng.choice(["completed"] * 8 + ["failed", "pending"], size=n)
    df.loc[df["status"] == "pending", "reward"] = np.nan
    df["subset"] = np.where(df.index // k % 3 == 0, "math", "code")
    df["tag_level"] = np.where(df.index // k % 2 == 0, "L1", "L2")
    keep = rng.random(n) > 0.1  # missing slots (never dispatched)
    keep[: k * 2] = False  # two tasks... are dropped whole: not requested at all here
    df = df[keep].reset_index(drop=True)
    df["order"] = np.arange(len(df), dtype=np.int64)
    return df


def to_spark(spark: SparkSession, df: pd.DataFrame, folder: Path) -> Any:
    """``df`` as a Spark DataFrame, through a Parquet file as a cluster would read it."""
    path = folder / f"frame{len(list(folder.glob('frame*')))}.parquet"
    df.to_parquet(path)
    return spark.read.parquet(str(path))


def both(
    ws: enb.Workspace,
    spark: SparkSession,
    df: pd.DataFrame,
    tmp_path: Path,
    thresholds: tuple[float, ...] = (),
) -> tuple[enb.Job, enb.Job]:
    path = tmp_path / "attempts.parquet"
    df.to_parquet(path)
    duck = ws.load(path, job_id="duck", k=4)
    sdf = spark.read.parquet(str(path))
    [reduced] = ws.load_spark(sdf, job_id="spark", k=4, thresholds=thresholds)
    return duck, reduced


def same_summary(a: enb.Job, b: enb.Job, **kw: Any) -> None:
    left, right = a.summary(**kw).to_dict(), b.summary(**kw).to_dict()
    left.pop("job_id"), right.pop("job_id")
    assert left == right


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_number_equals_the_duckdb_path(
    spark: SparkSession, tmp_path: Path, seed: int
) -> None:
    ws = enb.open()
    duck, reduced = both(ws, spark, attempts(seed), tmp_path, (0.3, 0.5))
    assert duck.summary().total == 4 * 118  # the test can fail: the data has gaps
    assert 0 < duck.summary().scored < duck.summary().total
    for policy in ("unknown", "failure"):
        for threshold in (None, 0.3, 0.5):
            same_summary(duck, reduced, policy=policy, threshold=threshold)
            pd.testing.assert_frame_equal(
                duck.samples(policy=policy, threshold=threshold),
                reduced.samples(policy=policy, threshold=threshold),
            )
            pd.testing.assert_frame_equal(
                duck.curve(policy=policy, threshold=threshold),
                reduced.curve(policy=policy, threshold=threshold),
            )
        for by in ("subset", "tag:level"):
            pd.testing.assert_frame_equal(
                duck.groups(by=by, policy=policy), reduced.groups(by=by, policy=policy)
            )
        pd.testing.assert_frame_equal(
            duck.intervals(policy=policy, seed=3), reduced.intervals(policy=policy, seed=3)
        )
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.34), enb.Bucket("easy", 0.66, 1.01)])
    b1 = duck.buckets(rules, allow_partial=True)
    b2 = reduced.buckets(rules, allow_partial=True)
    pd.testing.assert_frame_equal(b1.counts, b2.counts)
    pd.testing.assert_frame_equal(b1.frame, b2.frame)
    board = ws.compare([duck, reduced]).leaderboard()
    numbers = board.drop(columns=["job", "model"], errors="ignore")
    assert numbers.iloc[0].equals(numbers.iloc[1]), board.T


def test_sums_are_exact_at_every_scale(spark: SparkSession, tmp_path: Path) -> None:
    """Rewards whose float sum depends on order, and a scale set by a large reward."""
    df = attempts(5, tasks=40)
    rng = np.random.default_rng(9)
    df["reward"] = rng.random(len(df)) * rng.choice([1e-9, 1.0, 7.3e5], size=len(df))
    ws = enb.open()
    duck, reduced = both(ws, spark, df, tmp_path)
    a = duck.samples()[["reward_mean", "reward_std"]].to_numpy()
    b = reduced.samples()[["reward_mean", "reward_std"]].to_numpy()
    assert np.array_equal(a, b, equal_nan=True)
    same_summary(duck, reduced)


def test_retried_slots_resolve_to_the_attempt_of_record(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Latest finished_at, then latest started_at, then the highest order — checked
    against a brute-force resolution loaded the DuckDB way."""
    df = attempts(3, tasks=30)
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    df["started_at"] = t0
    df["finished_at"] = t0 + pd.to_timedelta(df["order"], unit="s")
    rng = np.random.default_rng(4)
    retries = df.sample(frac=0.4, random_state=1).copy()
    shift = rng.choice([-5, 0, 5], size=len(retries))
    retries["finished_at"] = retries["finished_at"] + pd.to_timedelta(shift, unit="s")
    retries["started_at"] = retries["started_at"] + pd.to_timedelta(
        rng.choice([-1, 1], size=len(retries)), unit="s"
    )
    retries["reward"] = 1.0 - retries["reward"].fillna(0.5)
    retries["order"] = retries["order"] + 10_000
    trials = pd.concat([df, retries], ignore_index=True).sample(frac=1.0, random_state=2)
    key = ["finished_at", "started_at", "order"]
    best = (
        trials.sort_values(key, ascending=False)
        .drop_duplicates(["task", "attempt"])
        .sort_values("order")
        .drop(columns=["started_at", "finished_at"])
    )
    ws = enb.open()
    best.to_parquet(tmp_path / "best.parquet")
    duck = ws.load(tmp_path / "best.parquet", job_id="duck", k=4)
    trials.to_parquet(tmp_path / "trials.parquet")
    [reduced] = ws.load_spark(
        spark.read.parquet(str(tmp_path / "trials.parquet")), job_id="spark", k=4
    )
    same_summary(duck, reduced)
    assert duck.samples()["reward_mean"].equals(reduced.samples()["reward_mean"])


def test_one_job_per_job_id_in_one_transaction(spark: SparkSession, tmp_path: Path) -> None:
    a, b = attempts(0, tasks=20), attempts(1, tasks=30)
    a["run"], b["run"] = "ckpt-a", "ckpt-b"
    a["model"], b["model"] = "m-a", "m-b"
    sdf = to_spark(spark, pd.concat([a, b], ignore_index=True), tmp_path)
    ws = enb.open()
    jobs = ws.load_spark(sdf, mapping={"job_id": "run"}, k=4)
    assert [j.id for j in jobs] == ["ckpt-a", "ckpt-b"]
    assert [j.info["model"] for j in jobs] == ["m-a", "m-b"]
    assert [j.summary().total_members for j in jobs] == [18, 28]
    listed = ws.jobs().set_index("job_id")
    assert listed.loc["ckpt-a", "scored"] == jobs[0].summary().scored
    bad = pd.concat([a, b.assign(attempt=b["attempt"] + 4)], ignore_index=True)
    with pytest.raises(LoadError, match=r"job 'ckpt-b', task t\d+, attempt [5-8]: .*outside 1..4"):
        ws.load_spark(to_spark(spark, bad, tmp_path), mapping={"job_id": "run"}, k=4)
    assert [j.summary().scored for j in jobs] == [
        j.summary().scored for j in ws.load_spark(sdf, mapping={"job_id": "run"}, k=4)
    ]  # the failed load left both jobs as they were


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.assign(reward=np.where(d.index == 3, np.inf, d["reward"])), "infinite"),
        (lambda d: d.assign(status=np.where(d.index == 3, "done", d["status"])), "statuses"),
        (lambda d: pd.concat([d, d.iloc[[5]]]), "tie on finished_at"),
        (lambda d: d.assign(model=np.where(d.index < 9, "a", "b")), "several models in one job"),
        (lambda d: d.drop(columns=["reward"]), r"column 'reward' \(reward\) is not in the frame"),
    ],
)
def test_bad_attempts_are_refused_by_place(
    spark: SparkSession, tmp_path: Path, change: Any, message: str
) -> None:
    df = change(attempts(0, tasks=10)).reset_index(drop=True)
    ws = enb.open()
    with pytest.raises(LoadError, match=message):
        ws.load_spark(to_spark(spark, df, tmp_path), job_id="j", k=4)
    assert len(ws.jobs()) == 0
    left = [t.name for t in spark.catalog.listTables() if t.name.startswith("_enb_spark")]
    assert left == []  # the refused reduction left no view (or cached rows) behind
    assert spark.sparkContext._jsc.getPersistentRDDs().isEmpty()


def test_attempt_level_views_say_the_attempts_stayed_in_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    ws = enb.open()
    [job] = ws.load_spark(to_spark(spark, attempts(0, tasks=12), tmp_path), job_id="j", k=4)
    for view in (job.attempts, job.rollout_stats):
        with pytest.raises(ValueError, match="its attempts stayed in Spark"):
            view()
    with pytest.raises(ValueError, match=r"only for the thresholds .* not 0.7"):
        job.summary(threshold=0.7)
    assert job.diagnose().codes() == ["not_diagnosed"]
    result = job.export_xlsx(tmp_path / "j.xlsx")
    sheet = openpyxl.load_workbook(result.path)["Attempts"]
    assert "attempts stayed in Spark" in str(sheet["A1"].value)
    assert sheet.max_row == 2  # the note and the header, no attempt row
    tasks = openpyxl.load_workbook(result.path)["Tasks"]
    assert tasks.max_row == 1 + job.summary().total_members
    html = job.export_html(tmp_path / "j.html").path.read_text()
    assert "stayed in Spark" in html
    panel = job.panel()  # builds: the overview works from the counts
    assert "stayed in Spark" in panel.widget.children[1].value  # the Cases tab says why
    assert set(panel.overview.status_counts) == {
        "scored", "ended without reward", "no reward yet", "not dispatched"
    }  # fmt: skip


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_python_workers_are_off(spark: SparkSession) -> None:
    """The fixture's guard is real: a Python UDF fails in this session."""
    from pyspark.sql.functions import udf

    plus_one = udf(lambda x: x + 1, "long")
    with pytest.raises(Exception, match=r"(?i)python|worker|exit"):
        spark.range(3).select(plus_one("id")).collect()
