"""``ws.load(parquet, copy=False)``: a job read in place answers exactly as a copied one.

Each test loads the same Parquet source twice into one workspace, copied and in place,
and compares what a user sees: summary, curve, samples, groups, intervals, buckets,
rollouts, consumption, the frames, the exported workbook, the comparison of the two.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import load_workbook

import envloop_nb as enb
from envloop_nb import Bucket, BucketRules, LoadError
from envloop_nb._store.task_counts import cached_counts

RULES = BucketRules(
    [Bucket("hard", 0, 0.34), Bucket("medium", 0.34, 0.67), Bucket("easy", 0.67, 1.01)]
)


def rich_frame(seed: int = 0, *, tasks: int = 40, k: int = 4, binary: bool = True) -> pd.DataFrame:
    """Attempts with tags, dimensions, statuses, tokens, times, extras and gaps."""
    rng = np.random.default_rng(seed)
    n = tasks * k
    reward = rng.integers(0, 2, n).astype(float) if binary else rng.random(n).round(3)
    reward[rng.random(n) < 0.1] = np.nan
    status = np.where(np.isnan(reward), rng.choice(["failed", "cancelled"], n), "completed")
    start = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 10**6, n), "s")
    return pd.DataFrame(
        {
            "task": [f"t{i // k:03d}" for i in range(n)],
            "attempt": [i % k + 1 for i in range(n)],
            "reward": reward,
            "status": status,
            "subset": [("math", "code", "chat")[(i // k) % 3] for i in range(n)],
            "difficulty": [("easy", "hard")[(i // k) % 2] for i in range(n)],
            "tag_lang": [("en", "fr")[(i // k) % 2] for i in range(n)],
            "dim_style": rng.random(n).round(2),
            "input_tokens": rng.integers(10, 1000, n),
            "output_tokens": rng.integers(10, 1000, n),
            "cost_usd": rng.random(n).round(4),
            "turns": rng.integers(1, 9, n).astype("int32"),
            "started_at": start,
            "finished_at": start + pd.to_timedelta(rng.integers(1, 600, n), "s"),
            "input": [f"question {i // k}" for i in range(n)],
            "output": [f"answer {i}" for i in range(n)],
            "note": [f"n{i % 7}" for i in range(n)],  # kept in extra
        }
    )


def _same(a: Any, b: Any) -> None:
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            if f.name not in ("job_id", "job"):
                _same(getattr(a, f.name), getattr(b, f.name))
    elif isinstance(a, list | tuple) and a and dataclasses.is_dataclass(a[0]):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, pd.DataFrame):
        a, b = a.reset_index(drop=True), b.reset_index(drop=True)
        for col in ("job_id", "job"):
            if col in a.columns:
                a, b = a.drop(columns=col), b.drop(columns=col)
        pd.testing.assert_frame_equal(a, b)
    else:
        assert str(a) == str(b)


def assert_same_answers(copied: enb.Job, in_place: enb.Job) -> None:
    """Every question a user asks gets the same answer from both jobs."""
    assert copied.k == in_place.k
    for policy in ("unknown", "failure"):
        _same(copied.summary(policy), in_place.summary(policy))
        _same(copied.samples(policy=policy), in_place.samples(policy=policy))
    _same(copied.summary(threshold=0.5), in_place.summary(threshold=0.5))
    _same(copied.curve(), in_place.curve())
    _same(copied.curve(threshold=0.5), in_place.curve(threshold=0.5))
    _same(copied.attempts(), in_place.attempts())
    _same(copied.tasks(), in_place.tasks())
    _same(copied.dimensions(), in_place.dimensions())
    _same(copied.groups("subset"), in_place.groups("subset"))
    _same(copied.groups("tag:lang"), in_place.groups("tag:lang"))
    _same(copied.groups("dimension"), in_place.groups("dimension"))
    _same(copied.intervals(resamples=200), in_place.intervals(resamples=200))
    _same(copied.buckets(RULES), in_place.buckets(RULES))
    _same(copied.rollout_stats(), in_place.rollout_stats())
    _same(copied.consumption(), in_place.consumption())
    assert str(copied.diagnose()) == str(in_place.diagnose()).replace(in_place.id, copied.id)
    left = cached_counts(copied.con, copied.id)
    right = cached_counts(in_place.con, in_place.id)
    assert left is not None and right is not None
    assert left.sort_by("task").equals(right.sort_by("task"))


def _pair(ws: enb.Workspace, source: Path | str, **options: Any) -> tuple[enb.Job, enb.Job]:
    copied = ws.load(source, job_id="copied", **options)
    in_place = ws.load(source, job_id="in-place", copy=False, **options)
    return copied, in_place


def test_in_place_answers_as_copied(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    rich_frame().to_parquet(path)
    copied, in_place = _pair(ws, path)
    assert_same_answers(copied, in_place)
    assert in_place.info["extra"]["in_place"] is True
    assert ws.sql("SELECT count(*) FROM attempt_rows WHERE job_id = 'in-place'").fetchone() == (0,)
    comparison = ws.compare([copied, in_place])
    assert comparison.comparable
    assert all(d.delta == 0 for d in comparison.differences)


def test_non_binary_rewards_take_the_exact_sums(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    rich_frame(3, binary=False).to_parquet(path)
    assert_same_answers(*_pair(ws, path))


def test_without_attempt_column_numbers_in_file_order(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    df = rich_frame(5).drop(columns="attempt").sample(frac=1, random_state=1)
    df.to_parquet(path)
    copied, in_place = _pair(ws, path)
    assert_same_answers(copied, in_place)


def test_hive_folder_and_glob(ws: enb.Workspace, tmp_path: Path) -> None:
    df = rich_frame(7)
    folder = tmp_path / "hive"
    for subset, part in df.groupby("subset"):
        (folder / f"subset={subset}").mkdir(parents=True)
        part.drop(columns="subset").to_parquet(folder / f"subset={subset}" / "part.parquet")
    assert_same_answers(*_pair(ws, folder))
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(3):
        df.iloc[i * 50 : (i + 1) * 50].to_parquet(flat / f"part-{i}.parquet")
    copied = ws.load(str(flat / "*.parquet"), job_id="copied")
    in_place = ws.load(str(flat / "*.parquet"), job_id="in-place", copy=False)
    assert_same_answers(copied, in_place)


def test_exported_workbooks_are_the_same(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    rich_frame(11).to_parquet(path)
    copied, in_place = _pair(ws, path)
    books = []
    for job in (copied, in_place):
        out = tmp_path / f"{job.id}.xlsx"
        job.export_xlsx(out, rules=RULES)
        book = load_workbook(out, read_only=True)
        books.append(  # the export's own time may differ by a second between the two
            {
                name: [
                    [row[0]] if row and row[0] == "exported at (UTC)" else list(row)
                    for row in book[name].iter_rows(values_only=True)
                ]
                for name in book.sheetnames
            }
        )
    text = json.dumps(books[1], default=str).replace("in-place", "copied")
    assert json.dumps(books[0], default=str) == text
    html = in_place.export_html(tmp_path / "job.html", rules=RULES)
    assert Path(html.path if hasattr(html, "path") else html).stat().st_size > 10_000


def test_unusable_rows_lenient_and_not(ws: enb.Workspace, tmp_path: Path) -> None:
    df = rich_frame(13)
    df["reward"] = df["reward"].astype(object)
    df.loc[5, "reward"] = "lots"
    df["reward"] = df["reward"].astype(str)
    path = tmp_path / "bad.parquet"
    df.to_parquet(path)
    with pytest.raises(LoadError) as copied_error:
        ws.load(path, job_id="copied")
    with pytest.raises(LoadError) as in_place_error:
        ws.load(path, job_id="in-place", copy=False)
    assert str(in_place_error.value) == str(copied_error.value).replace("copied", "in-place")
    assert "row 6" in str(in_place_error.value)
    assert len(ws.jobs()) == 0
    with pytest.warns(enb.LoadWarning, match="skipped 1 unusable row"):
        copied = ws.load(path, job_id="copied", lenient=True)
    with pytest.warns(enb.LoadWarning, match="skipped 1 unusable row"):
        in_place = ws.load(path, job_id="in-place", lenient=True, copy=False)
    assert_same_answers(copied, in_place)


@pytest.mark.parametrize(
    ("change", "message"),
    [((0, 9), "attempt 9 is out of range"), ((1, 1), "attempt 1 appears 2 times")],
)
def test_bad_attempts_are_refused_and_nothing_changes(
    ws: enb.Workspace, tmp_path: Path, change: tuple[int, int], message: str
) -> None:
    before = rich_frame(17)
    good = tmp_path / "good.parquet"
    before.to_parquet(good)
    ws.load(good, job_id="kept", copy=False)
    view = ws.sql("SELECT sql FROM duckdb_views() WHERE view_name = 'attempts'").fetchall()
    df = before.copy()
    df.loc[change[0], "attempt"] = change[1]
    bad = tmp_path / "bad.parquet"
    df.to_parquet(bad)
    with pytest.raises(LoadError, match=message):
        ws.load(bad, job_id="kept", copy=False, k=4)
    assert ws.sql("SELECT sql FROM duckdb_views() WHERE view_name = 'attempts'").fetchall() == view
    assert ws.sql("SELECT count(*) FROM attempt_sources").fetchone() == (1,)
    assert ws.job("kept").summary().total == len(before)


def test_more_rows_than_k_without_attempt_column(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    rich_frame(43).drop(columns="attempt").to_parquet(path)
    with pytest.raises(LoadError) as copied:
        ws.load(path, job_id="j", k=3)
    with pytest.raises(LoadError) as in_place:
        ws.load(path, job_id="j", k=3, copy=False)
    for err in (copied, in_place):  # the place named is one of the offenders
        assert re.search(r"run.parquet, row \d+: attempt 4 is out of range", str(err.value))
    assert len(ws.jobs()) == 0


def test_reopen_read_only_and_changed_or_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "it's a run.parquet"  # a quote in the name: data, never SQL text
    rich_frame(19).to_parquet(path)
    other = tmp_path / "other.parquet"
    rich_frame(23).to_parquet(other)
    db = tmp_path / "ws.duckdb"
    with enb.open(db) as ws:
        ws.load(path, job_id="in-place", copy=False)
        ws.load(other, job_id="copied")
        expected = str(ws.job("in-place").summary())
    with enb.open(db) as ws:
        assert str(ws.job("in-place").summary()) == expected
    with enb.open(db, read_only=True) as ws:
        assert str(ws.job("in-place").summary()) == expected
    moved = tmp_path / "moved.parquet"
    shutil.move(path, moved)
    for read_only in (False, True):
        with enb.open(db, read_only=read_only) as ws:
            with pytest.raises(LoadError, match="no longer there") as err:
                ws.job("in-place")
            assert "it's a run.parquet" in str(err.value) and "copy=True" in str(err.value)
            assert ws.job("copied").summary().total == 160  # the others still answer
    shutil.move(moved, path)
    with enb.open(db) as ws:
        assert str(ws.job("in-place").summary()) == expected
    rich_frame(29).to_parquet(path)  # rewritten: another size or time
    os.utime(path, ns=(1, 1))
    with enb.open(db) as ws:
        with pytest.raises(LoadError, match="changed since it was registered"):
            ws.job("in-place")
        ws.load(path, job_id="in-place", copy=False)  # registered again: answers anew
        assert ws.job("in-place").summary().total == 160


def test_reload_and_remove(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    rich_frame(31).to_parquet(path)
    ws.load(path, job_id="j", copy=False)
    ws.load(path, job_id="j", copy=False)
    assert ws.sql("SELECT count(*) FROM attempt_sources").fetchone() == (1,)
    assert ws.sql("SELECT count(*) FROM attempts").fetchone() == (160,)
    ws.load(path, job_id="j")  # copied now: the source leaves the view
    assert ws.sql("SELECT count(*) FROM attempt_sources").fetchone() == (0,)
    assert ws.sql("SELECT count(*) FROM attempts").fetchone() == (160,)
    ws.load(path, job_id="j", copy=False)
    ws.remove("j")
    assert ws.sql("SELECT count(*) FROM attempts").fetchone() == (0,)
    assert "read_parquet" not in str(
        ws.sql("SELECT sql FROM duckdb_views() WHERE view_name = 'attempts'").fetchone()
    )


def test_sources_that_cannot_be_read_in_place(ws: enb.Workspace, tmp_path: Path) -> None:
    df = rich_frame(37)
    with pytest.raises(LoadError, match="copy=False reads Parquet files"):
        ws.load(df, job_id="frame", copy=False)
    csv = tmp_path / "run.csv"
    df.to_csv(csv, index=False)
    with pytest.raises(LoadError, match="copy=False reads Parquet files"):
        ws.load(csv, copy=False)
    with pytest.raises(LoadError, match="does not take"):
        ws.load("../shared/formats/examples/three-tasks-two-attempts.json", copy=False)
    assert len(ws.jobs()) == 0


def test_a_version_1_workspace_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    path = tmp_path / "run.parquet"
    rich_frame(41).to_parquet(path)
    with enb.open(db) as ws:
        ws.load(path, job_id="old")
        expected = str(ws.job("old").summary())
        ws.con.execute("DROP VIEW attempts")  # as version 1 wrote it
        ws.con.execute("DROP TABLE attempt_sources")
        ws.con.execute("ALTER TABLE attempt_rows RENAME TO attempts")
        ws.con.execute("DELETE FROM task_counts_cache WHERE dispatched = 0")
        ws.con.execute("ALTER TABLE task_counts_cache DROP COLUMN position")
        ws.con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with enb.open(db, read_only=True) as ws:  # read as it is
        assert str(ws.job("old").summary()) == expected
    with enb.open(db) as ws:
        assert str(ws.job("old").summary()) == expected
        ws.load(path, job_id="new", copy=False)
        assert str(ws.job("new").summary()) == expected
        kinds = dict(
            ws.sql(
                "SELECT table_name, table_type FROM information_schema.tables "
                "WHERE table_name IN ('attempts', 'attempt_rows')"
            ).fetchall()
        )
    assert kinds == {"attempts": "VIEW", "attempt_rows": "BASE TABLE"}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rewards=st.lists(
        st.lists(st.sampled_from([None, 0.0, 1.0, 0.5, 0.25, 1.0, 0.0]), min_size=1, max_size=5),
        min_size=1,
        max_size=12,
    ),
    k=st.integers(1, 6),
)
def test_property_in_place_counts_are_the_copied_counts(
    tmp_path: Path, rewards: list[list[float | None]], k: int
) -> None:
    rows = [
        {"task": f"t{t}", "attempt": a + 1, "reward": r}
        for t, task in enumerate(rewards)
        for a, r in enumerate(task)
    ]
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    ws = enb.open()
    try:
        top = max(len(t) for t in rewards)
        copied, in_place = _pair(ws, path, k=max(k, top))
        for threshold in (None, 0.5):
            _same(copied.summary(threshold=threshold), in_place.summary(threshold=threshold))
            _same(copied.curve(threshold=threshold), in_place.curve(threshold=threshold))
        left, right = (cached_counts(ws.con, j.id) for j in (copied, in_place))
        assert left is not None and right is not None
        assert left.sort_by("task").equals(right.sort_by("task"))
    finally:
        ws.close()


def test_the_panel_shows_the_same(ws: enb.Workspace, tmp_path: Path) -> None:
    """The job panel of a job read in place: the same cards, cases, pages and buckets."""
    path = tmp_path / "run.parquet"
    rich_frame(47, tasks=60).to_parquet(path)
    copied, in_place = _pair(ws, path)
    panels = [copied.panel(), in_place.panel()]
    seen: list[list[str]] = [[], []]
    for i, p in enumerate(panels):
        seen[i].append(p.overview.cards.value.replace(p.job.id, "<id>"))
        cases = p.cases
        cases.status.value = "completed"
        cases.sort_by.value = "reward"
        cases.next_page.click()
        seen[i].append(cases.frame.drop(columns=["job_id"], errors="ignore").to_json())
        cases.view.value = "task"
        seen[i].append(cases.frame.to_json())
        cases.select_row(0)
        seen[i].append(cases.detail.value.replace(p.job.id, "<id>"))
        p.buckets.set_rules([("hard", 0, 0.5), ("easy", 0.5, 1.01)])
        p.buckets.apply_button.click()
        assert p.buckets.guard.last_error is None
        seen[i].append(p.buckets.counts.value.replace(p.job.id, "<id>"))
    assert seen[0] == seen[1]
    assert "hard" in seen[1][-1] and "pass@4" in seen[1][0]
    facts = [p.overview.facts.value for p in panels]
    assert f"read in place from {path}" in facts[1] and "read in place" not in facts[0]


def test_writes_into_attempts_are_refused(ws: enb.Workspace, tmp_path: Path) -> None:
    """Filling references writes into the workspace's attempts: not into a file read in
    place (refused, naming the job and what to do)."""
    path = tmp_path / "run.parquet"
    rich_frame(53).to_parquet(path)
    copied, in_place = _pair(ws, path)
    ds = copied.export_dataset(tmp_path / "ds", name="refs", version="1")
    with pytest.raises(enb.EnvloopError, match=r"reads its attempts in place.*copy=True"):
        in_place.fill_references(ds)
    assert copied.fill_references(ds).job_id == "copied"


@settings(max_examples=200, deadline=None)
@given(attempts=st.lists(st.integers(1, 63), min_size=1, max_size=70), top=st.integers(1, 80))
def test_property_repeats_show_in_the_distinct_number(attempts: list[int], top: int) -> None:
    """The pass's number equals the task's rows exactly when no attempt repeats, for
    every form the in-place pass and a copying load's check take (sum of powers of two,
    bit string, DISTINCT)."""
    import duckdb

    from envloop_nb._loaders.common.stage import _distinct_sql
    from envloop_nb._loaders.tables.inplace import _distinct

    top = max(top, *attempts)
    con = duckdb.connect()
    for form in (_distinct(top), _distinct_sql(top), _distinct(5000), _distinct_sql(5000)):
        row = con.execute(
            f"SELECT {form}, count(*) FROM (SELECT unnest($a) AS attempt)", {"a": attempts}
        ).fetchone()
        assert row is not None
        assert (row[0] == row[1]) == (len(set(attempts)) == len(attempts)), form
    con.close()


def _places(ws: enb.Workspace, job: str) -> list[tuple[Any, ...]]:
    return ws.sql(
        "SELECT task, attempt, source_place FROM attempts WHERE job_id = ? ORDER BY ALL",
        params=[job],
    ).fetchall()


def test_places_are_the_rows_of_the_source(ws: enb.Workspace, tmp_path: Path) -> None:
    """A copied Parquet file or frame keeps each row's number, and the attempts view
    shows the same ``row N`` place as the file read in place, and as the file has it."""
    frame = rich_frame(5, tasks=6, k=3)
    path = tmp_path / "run.parquet"
    frame.to_parquet(path)
    _pair(ws, path)
    ws.load(frame, job_id="frame")
    expected = sorted(
        (t, int(a), f"row {i + 1}")
        for i, (t, a) in enumerate(zip(frame.task, frame.attempt, strict=True))
    )
    assert _places(ws, "copied") == _places(ws, "in-place") == expected
    stored = ws.sql(
        "SELECT count(*), count(source_place), min(source_row), max(source_row) "
        "FROM attempt_rows WHERE job_id = 'copied'"
    ).fetchone()
    assert stored == (18, 0, 1, 18)  # the number, not the text
    # a frame's rows are numbered from 0, as its errors name them
    assert _places(ws, "frame") == [(t, a, f"row {int(p[4:]) - 1}") for t, a, p in expected]


def _as_version_2(db: Path) -> None:
    """Rewrite a workspace file as schema version 2 wrote it: places as text, no
    ``source_row``, the attempts view over attempt_rows as it was."""
    from envloop_nb._store.attempt_sources import view_sql

    con = duckdb_connect(db)
    con.execute(
        "UPDATE attempt_rows SET source_place = coalesce(source_place, 'row ' || source_row)"
    )
    con.execute("DROP VIEW attempts")
    con.execute("ALTER TABLE attempt_rows DROP COLUMN source_row")
    selects = [
        r[0]
        for r in con.execute("SELECT select_sql FROM attempt_sources ORDER BY job_id").fetchall()
    ]
    con.execute(view_sql(selects, numbered=False))
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.close()


def duckdb_connect(db: Path) -> Any:
    import duckdb

    return duckdb.connect(str(db))


def test_a_version_2_workspace_is_read_and_migrated(tmp_path: Path) -> None:
    db = tmp_path / "v2.duckdb"
    path = tmp_path / "run.parquet"
    rich_frame(43, tasks=8, k=3).to_parquet(path)
    with enb.open(db) as ws:
        ws.load(path, job_id="copied")
        ws.load(path, job_id="in-place", copy=False)
        expected = {j: (str(ws.job(j).summary()), _places(ws, j)) for j in ("copied", "in-place")}
    _as_version_2(db)
    with enb.open(db, read_only=True) as ws:  # read as it is
        assert {j: (str(ws.job(j).summary()), _places(ws, j)) for j in expected} == expected
    with enb.open(db) as ws:  # migrated: the places written stay, new loads keep numbers
        assert {j: (str(ws.job(j).summary()), _places(ws, j)) for j in expected} == expected
        ws.load(path, job_id="new")
        assert _places(ws, "new") == expected["copied"][1]
        assert ws.sql(
            "SELECT count(source_place), count(source_row) FROM attempt_rows WHERE job_id = 'new'"
        ).fetchone() == (0, 24)
        version = ws.sql("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == ("5",)  # migrated to this schema (5: the steps' searchable text)


def test_rewards_beyond_one_with_k_given(ws: enb.Workspace, tmp_path: Path) -> None:
    """The one pass guesses the sums' scales of rewards within [-1, 1]: rewards far
    beyond (which do not fit those scales) take the exact second pass, copied or not."""
    frame = rich_frame(7, tasks=12, k=4, binary=False)
    frame["reward"] = frame["reward"] * np.where(np.arange(len(frame)) % 3 == 0, 7.3e5, 1.0)
    path = tmp_path / "big.parquet"
    frame.to_parquet(path)
    copied, in_place = _pair(ws, path, k=4)
    assert_same_answers(copied, in_place)
    exact = frame.dropna(subset=["reward"]).groupby("task")["reward"].sum()
    got = copied.samples().set_index("task")
    assert np.allclose(got.loc[exact.index, "reward_mean"] * got.loc[exact.index, "scored"], exact)


def test_many_repeats_of_one_attempt_are_named(ws: enb.Workspace, tmp_path: Path) -> None:
    rows = [{"task": "t", "attempt": 1, "reward": 1.0}] * 40 + [
        {"task": "u", "attempt": 1, "reward": 1.0}
    ]
    path = tmp_path / "rep.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    for copy in (True, False):
        with pytest.raises(LoadError, match="attempt 1 appears 40 times"):
            ws.load(path, k=2, copy=copy)


def test_one_pass_sums_when_k_is_inferred(
    ws: enb.Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``k``, the highest attempt number (the k a load without repeats infers)
    gives the one pass its guessed scales: non-binary rewards within [-1, 1] are summed
    there, not in a second pass over the file, and the answers are the copied ones."""
    from envloop_nb._loaders.tables import job as table_job
    from envloop_nb._store.task_counts import scales

    passes: list[Any] = []
    real = table_job.count_in_place

    def counting(*args: Any, **kwargs: Any) -> Any:
        passes.append(real(*args, **kwargs))
        return passes[-1]

    monkeypatch.setattr(table_job, "count_in_place", counting)
    frame = rich_frame(3, binary=False)  # 4 attempts per task, rewards in [0, 1)
    frame.loc[::5, "reward"] = 1.0  # the largest reward 1: the scales the pass guesses
    path = tmp_path / "run.parquet"
    frame.to_parquet(path)
    copied, in_place = _pair(ws, path)
    assert_same_answers(copied, in_place)
    assert in_place.k == 4 and len(passes) == 2
    assert all(p.summed_at == scales(4, 1.0, 1.0) for p in passes)


def test_the_pass_is_kept_not_copied(
    ws: enb.Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the one pass summed the rewards at the job's scales its per-task table is the
    load's kept counts as it is (renamed), not copied into another table; the answers
    are the copied load's. Other sums still make their own table."""
    from envloop_nb._loaders.tables import inplace

    copies: list[str] = []
    real = inplace.keep_counts

    def copying(con: Any, sql: str, params: Any) -> None:
        copies.append(sql)
        real(con, sql, params)

    monkeypatch.setattr(inplace, "keep_counts", copying)
    frame = rich_frame(4, binary=False)
    frame.loc[::5, "reward"] = 1.0  # the largest reward 1: the scales the pass guesses
    path = tmp_path / "run.parquet"
    frame.to_parquet(path)
    copied, in_place = _pair(ws, path)
    assert_same_answers(copied, in_place)
    assert copies == []
    frame["reward"] *= 3  # a largest reward of 3: the pass's guess is not the job's scales
    frame.to_parquet(path)
    copied, in_place = _pair(ws, path)
    assert_same_answers(copied, in_place)
    assert len(copies) == 2  # the copied load's and the in-place load's second pass


class _Recording:
    """A connection whose statements are recorded: (SQL, whether it bound parameters)."""

    def __init__(self, con: Any, log: list[tuple[str, bool]]) -> None:
        self._con, self._log = con, log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def execute(self, sql: str, params: Any = None) -> Any:
        self._log.append((" ".join(str(sql).split()), bool(params)))
        return self._con.execute(sql) if params is None else self._con.execute(sql, params)


def test_nothing_is_bound_up_to_the_pass_and_its_start_is_told(tmp_path: Path) -> None:
    """Up to its checking pass a load read in place binds no parameter (DuckDB imports
    pandas at the first one; the gate imports it meanwhile, beside the two passes), and
    :func:`telling_the_pass` sets its event as the pass starts; the answers are the
    copied load's."""
    import threading

    from envloop_nb._loaders import load_source
    from envloop_nb._loaders.tables.inplace import telling_the_pass

    frame = rich_frame(5, binary=False)
    frame.loc[::5, "reward"] = 1.0  # the pass sums at its guessed scales: they are in its SQL
    path = tmp_path / "run.parquet"
    frame.to_parquet(path)
    ws = enb.open()
    log: list[tuple[str, bool]] = []
    started = threading.Event()
    at_pass: list[bool] = []
    con = _Recording(ws.con, log)
    real = con.execute

    def execute(sql: str, params: Any = None) -> Any:
        if "TEMP TABLE _tb_tasks AS" in str(sql):
            at_pass.append(started.is_set())
        return real(sql, params)

    con.execute = execute  # type: ignore[method-assign]
    with telling_the_pass(con, started):  # type: ignore[arg-type]
        job_id = load_source(con, str(path), job_id="inplace", copy=False)  # type: ignore[arg-type]
    first = next(i for i, (sql, _) in enumerate(log) if "TEMP TABLE _tb_tasks AS" in sql)
    assert [sql for sql, bound in log[: first + 1] if bound] == []
    assert any(bound for _, bound in log[first + 1 :])  # afterwards parameters as usual
    assert at_pass == [True] and started.is_set()
    copied = ws.load(path, job_id="copied")
    assert_same_answers(copied, ws.job(job_id))
