"""The steps table: the writer, the checks every load's steps pass, the schema version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import envloop_nb as enb
from envloop_nb._store.schema import SCHEMA_VERSION
from envloop_nb._store.steps import StepWriter, check_steps, has_steps
from tests.conftest import THREE_TASKS


def _row(step: int, kind: str = "message", **more: Any) -> dict[str, Any]:
    role = "tool" if kind == "tool_result" else "assistant"
    return {"task": "A", "attempt": 1, "step": step, "role": role, "kind": kind,
            "source_place": f"t.json, steps[{step - 1}]", **more}  # fmt: skip


def _written(rows: list[dict[str, Any]], batch: int = 65_536) -> enb.Job:
    ws = enb.open()
    job = ws.load(THREE_TASKS, steps=False)
    w = StepWriter(ws.con, job.id, batch=batch)
    for row in rows:
        w.add(row)
    assert w.close() == len(rows)
    return job


def test_rows_stream_in_batches_and_read_back_in_order() -> None:
    rows = [_row(n, content=f"say {n}") for n in range(1, 8)]
    job = _written(list(reversed(rows)), batch=3)  # written out of order, read in order
    got = job.steps(task="A", attempt=1)
    assert got["step"].tolist() == list(range(1, 8))
    assert got["content"].tolist() == [f"say {n}" for n in range(1, 8)]
    assert not got["is_error"].any() and not got["copied"].any()
    assert job.steps(task="B").empty
    assert job.steps(frame="polars").height == 7
    check_steps(job.con, job.id, "t.json")


def test_a_tool_call_and_its_result_keep_arguments_as_json() -> None:
    job = _written([
        _row(1, "tool_call", tool="bash", call_id="c1", arguments='{"cmd": "ls; DROP TABLE jobs"}'),
        _row(2, "tool_result", tool="bash", call_id="c1", content="<script>x</script>", is_error=True),
    ])  # fmt: skip
    check_steps(job.con, job.id, "t.json")
    arg = job.con.execute("SELECT arguments->>'cmd' FROM steps WHERE kind = 'tool_call'").fetchone()
    assert arg == ("ls; DROP TABLE jobs",)
    assert job.steps()["is_error"].tolist() == [False, True]


def test_an_absent_flag_is_false_and_a_none_one_is_refused() -> None:
    # one batch: rows with the flags given, absent, and (the last test) given as None
    job = _written([_row(1, is_error=True), _row(2), _row(3, copied=True, is_error=False)])
    got = job.steps()
    assert got["is_error"].tolist() == [True, False, False]
    assert got["copied"].tolist() == [False, False, True]
    with pytest.raises(duckdb.ConstraintException, match="is_error"):
        _written([_row(1), _row(2, is_error=None)])


def test_an_unknown_column_is_a_programming_error() -> None:
    w = StepWriter(enb.open().con, "j")
    with pytest.raises(KeyError, match="not step columns"):
        w.add({"task": "A", "colour": "red"})


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([_row(1, "thought")], r"t\.json, steps\[0\]: unknown step kind 'thought'"),
        ([{**_row(1), "role": "robot"}], r"unknown step source 'robot'"),
        ([_row(1, "tool_call")], r"steps\[0\]: a tool call without a tool name"),
        ([_row(1), _row(3)], r"numbered 1\.\.n without gaps or repeats \(found 1\.\.3 in 2 rows\)"),
        ([_row(1), _row(1)], r"found 1\.\.1 in 2 rows"),
        ([_row(2)], r"found 2\.\.2 in 1 rows"),
        (
            [_row(1, "tool_call", tool="ls", call_id="a"), _row(2, "tool_result", call_id="b")],
            r"steps\[1\]: a tool result for call 'b', which no earlier tool call",
        ),
        ([{**_row(1), "task": "nope"}], r"steps of an attempt the job does not have"),
        ([{**_row(1), "attempt": 9}], r"steps of an attempt the job does not have"),
    ],
)
def test_bad_steps_are_named(rows: list[dict[str, Any]], message: str) -> None:
    job = _written(rows)
    with pytest.raises(enb.LoadError, match=message) as err:
        check_steps(job.con, job.id, "t.json")
    assert str(err.value).startswith("t.json, ")


def test_a_result_without_a_call_id_is_read_as_it_is() -> None:
    """Results paired with calls by order (Harbor's terminus-2) carry no call id."""
    job = _written([_row(1, "tool_call", tool="bash"), _row(2, "tool_result")])
    check_steps(job.con, job.id, "t.json")
    assert has_steps(job.con, job.id)


def test_a_reload_removes_the_jobs_steps(tmp_path: Path) -> None:
    job = _written([_row(1)])
    ws = job.workspace
    ws.load(
        THREE_TASKS, steps=False
    )  # the same job again: its rows replaced, its steps gone with them
    assert not has_steps(ws.con, job.id)


def test_a_version_3_workspace_gains_the_steps_table(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    ws = enb.open(path)
    ws.load(THREE_TASKS, steps=False)
    ws.con.execute("DROP TABLE steps")
    ws.con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    ws.close()
    ro = enb.open(path, read_only=True)  # read-only: an empty steps table for the session
    assert ro.job(ro.jobs()["job_id"][0]).steps().empty
    ro.close()
    rw = enb.open(path)
    version = rw.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),) and SCHEMA_VERSION == 5
    assert rw.job(rw.jobs()["job_id"][0]).steps().empty
    rw.close()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT count(*) FROM steps").fetchone() == (0,)
    con.close()


def test_the_writer_holds_no_written_batch_inside_the_load_transaction() -> None:
    """Rows stream: a written batch is freed. A batch handed to DuckDB with
    ``con.register`` stays referenced by the transaction's catalog until the commit (the
    view is dropped only then), so a load held every batch of its steps in memory."""
    import gc

    import pyarrow as pa

    ws = enb.open()
    job = ws.load(THREE_TASKS)
    ws.con.execute("BEGIN TRANSACTION")  # as a load writes them
    w = StepWriter(ws.con, job.id, batch=1000)
    base = pa.total_allocated_bytes()
    for i in range(10_000):  # ten batches of ~1 MB
        w.add({"task": "A", "attempt": 1, "step": i + 1, "role": "user", "kind": "message",
               "content": "x" * 1000})  # fmt: skip
    assert w.close() == 10_000
    gc.collect()
    assert pa.total_allocated_bytes() - base < 1_000_000
    ws.con.execute("ROLLBACK")
