"""Any table: Parquet (file, glob, hive folder), CSV, JSONL(.gz), JSON array, frames."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb._loaders import detect_format
from tests.test_loaders_envloop import assert_frames_agree, load_job

ROWS = [
    # task, attempt, reward, status, subset, turns, started_at
    ("A", 1, 1.0, "completed", "math", 3, "2026-01-01T00:00:00Z"),
    ("A", 2, 0.0, "failed", "math", 5, "2026-01-01T00:01:00Z"),
    ("B", 1, 1.0, "completed", "code", 7, "2026-01-01T00:02:00Z"),
    ("B", 2, None, "cancelled", "code", None, None),
    ("C", 1, 0.0, "completed", "code", 2, "2026-01-01T00:03:00Z"),
]
COLUMNS = ["task", "attempt", "reward", "status", "subset", "turns", "started_at"]


def frame() -> pd.DataFrame:
    df = pd.DataFrame(ROWS, columns=COLUMNS)
    df["turns"] = df["turns"].astype("Int64")
    return df


def _core(job: enb.Job) -> list[tuple]:
    return job.con.execute(
        """SELECT task, attempt, reward, status, turns, started_at FROM attempts
           WHERE job_id = ? ORDER BY task, attempt""",
        [job.id],
    ).fetchall()


def _write(tmp_path: Path, kind: str) -> Path:
    df = frame()
    if kind == "parquet":
        path = tmp_path / "run.parquet"
        df.to_parquet(path)
    elif kind == "csv":
        path = tmp_path / "run.csv"
        df.to_csv(path, index=False)
    elif kind in ("jsonl", "jsonl.gz"):
        path = tmp_path / f"run.{kind}"
        text = "".join(
            json.dumps({k: (None if pd.isna(v) else v) for k, v in zip(COLUMNS, r, strict=True)})
            + "\n"
            for r in ROWS
        )
        if kind == "jsonl.gz":
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            path.write_text(text)
    elif kind == "json":
        path = tmp_path / "run.json"
        path.write_text(json.dumps([dict(zip(COLUMNS, r, strict=True)) for r in ROWS]))
    else:
        raise AssertionError(kind)
    return path


@pytest.mark.parametrize("kind", ["parquet", "csv", "jsonl", "jsonl.gz", "json"])
def test_every_file_kind_loads_the_same(ws: enb.Workspace, tmp_path: Path, kind: str) -> None:
    path = _write(tmp_path, kind)
    assert detect_format(path) == "table"
    job = load_job(ws, path)
    assert job.id == "table:run"
    assert job.k == 2
    reference = load_job(ws, frame(), job_id="ref")
    assert _core(job) == _core(reference)
    assert job.tasks()["task"].tolist() == ["A", "B", "C"]
    tags = job.tasks()["tags"].map(json.loads).tolist()
    assert tags == [{"subset": "math"}, {"subset": "code"}, {"subset": "code"}]
    s = job.summary()
    assert (s.total, s.scored, s.invalid) == (6, 4, 1)
    assert s.score == pytest.approx(0.5)
    assert_frames_agree(job)


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_in_memory_frames(ws: enb.Workspace, kind: str) -> None:
    df = frame()
    source = {"pandas": df, "polars": pl.from_pandas(df), "arrow": pa.Table.from_pandas(df)}[kind]
    job = load_job(ws, source, job_id=f"j-{kind}", model="m", dataset="d", dataset_version="1")
    assert job.info["source_format"] == "table" and job.info["model"] == "m"
    assert job.attempts()["source_place"].tolist()[:2] == ["row 0", "row 1"]
    assert _core(job) == _core(load_job(ws, frame(), job_id="ref"))
    assert df.equals(frame())  # the caller's frame is not changed
    assert_frames_agree(job)


def test_frame_needs_a_job_id(ws: enb.Workspace) -> None:
    with pytest.raises(enb.LoadError, match=r"pass job_id=\.\.\. to load an in-memory frame"):
        load_job(ws, frame())
    assert len(ws.jobs()) == 0


def test_parquet_glob_and_hive_folder(ws: enb.Workspace, tmp_path: Path) -> None:
    con = duckdb.connect()
    con.register("df", frame())
    root = tmp_path / "hive"
    con.execute(
        f"COPY (SELECT * EXCLUDE (subset), subset FROM df) TO '{root}' (FORMAT parquet, PARTITION_BY (subset))"
    )
    assert sorted(p.name for p in root.iterdir()) == ["subset=code", "subset=math"]
    job = load_job(ws, root)
    assert job.id == "table:hive"
    assert sorted(_core(job)) == sorted(_core(load_job(ws, frame(), job_id="ref")))
    tags = dict(zip(job.tasks()["task"], job.tasks()["tags"].map(json.loads), strict=True))
    assert tags["A"] == {"subset": "math"} and tags["C"] == {"subset": "code"}
    place = job.attempts()["source_place"].iloc[0]
    assert ".parquet row " in place
    # a glob over the same files
    job2 = load_job(ws, str(root / "*" / "*.parquet"), job_id="glob")
    assert sorted(_core(job2)) == sorted(_core(job))


def test_mapping_and_numbering_by_appearance(ws: enb.Workspace) -> None:
    df = pd.DataFrame(
        {
            "problem": ["x", "y", "x", "x", "y"],
            "score": [1, 0, 0, 1, None],
            "prompt": ["p1", "p2", "p1", "p1", "p2"],
            "answer": ["a", "b", "c", "d", "e"],
            "gold": ["a", "b", "a", "a", "b"],
            "level": ["easy", "hard", "easy", "easy", "hard"],
            "dim_style": [0.5, 0.2, 0.1, 0.9, None],
            "seed": [1, 2, 3, 4, 5],
        }
    )
    job = load_job(
        ws,
        df,
        job_id="mapped",
        mapping={
            "task": "problem",
            "reward": "score",
            "input": "prompt",
            "output": "answer",
            "reference": "gold",
            "tags": {"difficulty": "level"},
        },
    )
    a = job.attempts()
    assert a[["task", "attempt"]].values.tolist() == [
        ["x", 1],
        ["x", 2],
        ["x", 3],
        ["y", 1],
        ["y", 2],
    ]
    assert a["output"].tolist() == ["a", "c", "d", "b", "e"]
    assert (a["status"] == "completed").all()
    assert job.k == 3
    assert json.loads(a["extra"].iloc[0]) == {"seed": 1}
    assert json.loads(job.tasks()["tags"].iloc[0]) == {"difficulty": "easy"}
    dims = job.dimensions()
    assert dims.query("task == 'x' and attempt == 3")["value"].tolist() == [0.9]
    assert set(dims["name"]) == {"style"}
    s = job.summary()
    assert (s.total, s.scored, s.invalid) == (6, 4, 1)  # y: 2 of 3 slots dispatched


def test_k_option_and_nan_reward(ws: enb.Workspace) -> None:
    df = frame()
    df.loc[0, "reward"] = float("nan")
    job = load_job(ws, pl.from_pandas(df, nan_to_null=False), job_id="nan", k=3)
    assert job.k == 3
    rewards = job.attempts()["reward"].tolist()
    assert rewards[0] != rewards[0]  # NaN is no reward, never 0
    assert job.summary().total == 9


def test_running_rows_make_a_running_job(ws: enb.Workspace) -> None:
    df = frame()
    df.loc[4, "status"] = "running"
    df.loc[4, "reward"] = None
    assert load_job(ws, df, job_id="r").info["status"] == "running"
    assert load_job(ws, frame(), job_id="c").info["status"] == "completed"


def test_reload_is_idempotent(ws: enb.Workspace, tmp_path: Path) -> None:
    path = _write(tmp_path, "csv")
    load_job(ws, path)
    load_job(ws, path)
    assert len(ws.jobs()) == 1 and len(ws.job("table:run").attempts()) == 5


def test_a_million_rows_stay_in_duckdb(ws: enb.Workspace, tmp_path: Path) -> None:
    """1M rows load through SQL (their speed is benchmarks.bench_scale's, not a test's)."""
    path = tmp_path / "big.parquet"
    duckdb.connect().execute(
        f"""COPY (SELECT 'task-' || (i % 10000) AS task, (i // 10000 + 1)::INTEGER AS attempt,
                  (hash(i) % 2)::DOUBLE AS reward, 'subset-' || (i % 10000 % 5) AS subset
                  FROM range(1000000) t(i)) TO '{path}' (FORMAT parquet)"""
    )
    job = load_job(ws, path)
    s = job.summary()
    assert (job.k, s.total_members, s.total, s.scored) == (100, 10000, 1_000_000, 1_000_000)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from([0.0, 1.0, None, 0.25]),
            st.sampled_from(["completed", "failed", "running", None]),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_property_counts_match_brute_force(
    rows: list[tuple[str, float | None, str | None]],
) -> None:
    """Numbering by appearance, k, counts and means agree with a plain-Python count,
    and a CSV round trip loads the same attempts as the frame."""
    df = pd.DataFrame(rows, columns=["task", "reward", "status"])
    ws = enb.open()
    try:
        job = load_job(ws, df, job_id="p")
        per_task: dict[str, list[tuple[float | None, str]]] = {}
        for task, reward, status in rows:
            per_task.setdefault(task, []).append((reward, status or "completed"))
        k = max(len(v) for v in per_task.values())
        assert job.k == k
        got = job.attempts()[["task", "attempt"]].values.tolist()
        want = [[t, i + 1] for t in per_task for i in range(len(per_task[t]))]
        assert sorted(map(tuple, got)) == sorted(map(tuple, want))
        assert job.tasks()["task"].tolist() == list(per_task)  # first appearance
        s = job.summary(policy="failure")
        scored = sum(r is not None for v in per_task.values() for r, _ in v)
        invalid = sum(r is None and st_ != "running" for v in per_task.values() for r, st_ in v)
        assert (s.total, s.scored, s.invalid) == (len(per_task) * k, scored, invalid)
        if scored:
            total_reward = sum(r or 0.0 for v in per_task.values() for r, _ in v)
            assert s.score == pytest.approx(total_reward / (len(per_task) * k))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "p.csv"
            df.to_csv(path, index=False)
            csv_job = load_job(ws, path, job_id="p-csv")
            assert _core(csv_job) == _core(job)
    finally:
        ws.close()


def test_typed_parquet_integers_are_exact_and_range_checked(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    big = 2**60 + 1  # a DOUBLE round trip would give 2**60
    table = pa.table(
        {
            "task": ["a", "a", "b"],
            "attempt": pa.array([1, 2, 1], pa.int64()),
            "reward": pa.array([1, 0, 1], pa.int8()),
            "input_tokens": pa.array([big, 3, None], pa.int64()),
            "turns": pa.array([2, 3, 4], pa.uint32()),
            "cost_usd": pa.array([1, 2, 3], pa.int16()),
            "started_at": pa.array([0, 1, 2], pa.timestamp("s", tz="UTC")),
        }
    )
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path)
    job = load_job(ws, path)
    got = job.con.execute(
        "SELECT task, attempt, reward, input_tokens, turns, cost_usd, epoch(started_at) "
        "FROM attempts WHERE job_id = ? ORDER BY task, attempt",
        [job.id],
    ).fetchall()
    assert got == [
        ("a", 1, 1.0, big, 2, 1.0, 0.0),
        ("a", 2, 0.0, 3, 3, 2.0, 1.0),
        ("b", 1, 1.0, None, 4, 3.0, 2.0),
    ]
    # a typed integer still has to fit the column it lands in, and attempts start at 1
    for column, values, message in (
        ("turns", pa.array([1, 2**31, 3], pa.int64()), r"row 2: turns 2147483648 is out of range"),
        ("attempt", pa.array([1, 0, 1], pa.int64()), r"row 2: attempt 0 is out of range: attempts are numbered"),
        ("attempt", pa.array([1, None, 1], pa.int64()), r"row 2: attempt must be an integer, got nothing"),
        ("attempt", pa.array([1, 2**40, 1], pa.int64()), r"row 2: attempt 1099511627776 is out of range: it must fit"),
    ):  # fmt: skip
        bad = tmp_path / f"bad_{column}.parquet"
        pq.write_table(table.set_column(table.column_names.index(column), column, values), bad)
        with pytest.raises(enb.LoadError, match=message):
            load_job(ws, bad)


def test_lenient_parquet_skips_rows_checked_while_inserting(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    df = pd.DataFrame(
        {"task": [f"t{i % 7}" for i in range(100)], "reward": [i % 2 for i in range(100)]}
    )
    df["status"] = "completed"
    df.loc[[5, 60], "status"] = "weird"
    path = tmp_path / "s.parquet"
    df.to_parquet(path)
    before = ws.jobs()
    with pytest.raises(
        enb.LoadError, match=r"s\.parquet, row 6: status must be one of .* \(1 more"
    ):
        load_job(ws, path)
    assert ws.jobs().equals(before)  # the rows already inserted were rolled back
    with pytest.warns(enb.LoadWarning, match=r"skipped 2 unusable row\(s\); first at row 6"):
        job = load_job(ws, path, lenient=True)
    assert len(job.attempts()) == 98 and job.info["extra"]["skipped_rows"] == 2
    # row 6 (t5's first) was skipped: t5 first appears at row 13, after t6
    assert job.tasks()["task"].tolist() == ["t0", "t1", "t2", "t3", "t4", "t6", "t5"]


@pytest.mark.parametrize("shadow", [False, True])
def test_several_parquet_files_keep_file_order(
    ws: enb.Workspace, tmp_path: Path, shadow: bool
) -> None:
    """Attempts are numbered in file-name order, then row order, also when a column
    named ``file_index`` would shadow DuckDB's own (the files are then joined by name)."""
    folder = tmp_path / "parts"
    folder.mkdir()
    for name, rewards in (("b.parquet", [0, 1]), ("a.parquet", [1, 1]), ("c.parquet", [0, 0])):
        cols: dict[str, object] = {"task": ["x", "x"], "reward": rewards}
        if shadow:
            cols["file_index"] = [9, 9]
        pd.DataFrame(cols).to_parquet(folder / name)
    job = load_job(ws, folder)
    a = job.attempts()
    assert a["attempt"].tolist() == [1, 2, 3, 4, 5, 6]
    assert a["reward"].tolist() == [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    assert a["source_place"].tolist()[2].endswith("b.parquet row 1")


@pytest.mark.parametrize("k", [3, 5000])
def test_a_repeated_attempt_is_refused_with_any_k(ws: enb.Workspace, k: int) -> None:
    """Below 4,097 attempts per task repeats are found with a k-bit string per task,
    above by counting distinct attempts: both name the first repeat."""
    df = pd.DataFrame(
        {"task": ["a", "b", "b", "c"], "attempt": [1, 2, 2, 3], "reward": [1, 0, 1, 1]}
    )
    before = ws.jobs()
    with pytest.raises(enb.LoadError, match=r"<DataFrame>, task 'b': attempt 2 appears 2 times"):
        load_job(ws, df, job_id="rep", k=k)
    assert ws.jobs().equals(before)
    ok = load_job(ws, df.iloc[[0, 1, 3]], job_id="rep", k=k)
    assert ok.k == k and ok.summary().total == 3 * k


def test_tag_json_is_duckdbs_own_for_awkward_keys_and_values(ws: enb.Workspace) -> None:
    """The tasks' tags are written as JSON text: the same bytes as DuckDB's
    ``to_json(map_from_entries(...))``, keys and values escaped, absent tags left out."""
    values = ['say "hi"', "back\\slash", "line\nbreak", "é ✓", None, "'; DROP TABLE tasks; --"]
    df = pd.DataFrame({"task": [f"t{i}" for i in range(6)], "reward": [1.0] * 6, "v": values})
    df["w"] = ["x", None, "y", None, "z", None]
    job = ws.load(df, job_id="awkward", mapping={"tags": {'ké"y': "v", "plain": "w"}})
    got = ws.sql(
        "SELECT task, tags::VARCHAR FROM tasks WHERE job_id = 'awkward' ORDER BY position"
    ).fetchall()
    want = duckdb.sql(
        """SELECT task, to_json(map_from_entries(list_filter(
                      list_zip(['ké"y', 'plain'], [v, w]), e -> e[2] IS NOT NULL)))::VARCHAR
           FROM df ORDER BY task"""
    ).fetchall()
    assert got == want
    assert json.loads(got[0][1]) == {'ké"y': 'say "hi"', "plain": "x"}
    assert json.loads(got[4][1]) == {"plain": "z"}
    assert json.loads(got[5][1]) == {'ké"y': "'; DROP TABLE tasks; --"}
    assert len(job.tasks()) == 6
