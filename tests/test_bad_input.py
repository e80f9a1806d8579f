"""Bad input: every malformed source gives a clear LoadError naming the file and the
place, and a failed load leaves the workspace exactly as it was."""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import shutil
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._metrics.counts import task_counts
from tests.conftest import FIXTURES, HARBOR, ROOT, TAU_BENCH, THREE_TASKS
from tests.test_loaders_envloop import load_job, to_jsonl

TABLES = ["jobs", "tasks", "task_tags", "attempts", "dimensions", "dimension_meta"]
CURRENT = HARBOR / "2026-03-02__14-05-11"
TAU2 = ROOT / "tests" / "data" / "tau2" / "results.json"


def _doc() -> dict[str, Any]:
    return json.loads(THREE_TASKS.read_text())


def _snapshot(ws: enb.Workspace) -> dict[str, Any]:
    snap: dict[str, Any] = {
        t: ws.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES
    }
    snap["temp"] = ws.con.execute(
        """SELECT table_name FROM duckdb_tables() WHERE temporary
           UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal
           ORDER BY 1"""
    ).fetchall()
    return snap


@pytest.fixture
def loaded(ws: enb.Workspace) -> enb.Workspace:
    """A workspace that already holds a good job (the one most bad files resemble)."""
    load_job(ws, THREE_TASKS)
    return ws


# -- builders: each writes one malformed file from a good fixture --------------------


def _json_doc(tmp: Path, edit: Callable[[dict[str, Any]], None], name: str = "bad.json") -> Path:
    doc = _doc()
    edit(doc)
    path = tmp / name
    path.write_text(json.dumps(doc, indent=1))
    return path


def malformed_json(tmp: Path) -> Path:
    path = tmp / "broken.json"
    path.write_text(THREE_TASKS.read_text()[:700])
    return path


def truncated_jsonl(tmp: Path) -> Path:
    path = to_jsonl(_doc(), tmp / "run.jsonl")
    lines = path.read_text().splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2]  # line 4: cut in the middle
    path.write_text("\n".join(lines) + "\n")
    return path


def truncated_jsonl_gz(tmp: Path) -> Path:
    plain = truncated_jsonl(tmp)
    path = tmp / "run.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(plain.read_text())
    return path


def wrong_schema_version(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d.update(schema_version="envloop.job-result/v2"))


def missing_job_attempts(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"].pop("attempts"))


def attempt_out_of_range_jsonl(tmp: Path) -> Path:
    doc = _doc()
    doc["trials"][1]["attempt"] = 3
    return to_jsonl(doc, tmp / "range.jsonl")


def attempt_out_of_range_doc(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][4].update(attempt=0))


def reward_is_a_string(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][2].update(reward="0.5"))


def unknown_task(tmp: Path) -> Path:
    doc = _doc()
    doc["trials"][5]["task"] = "Z"
    return to_jsonl(doc, tmp / "unknown.jsonl")


def bad_status(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][0].update(status="done"))


def bad_timestamp(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1].update(started_at="yesterday at noon"))


def bad_tag_value(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"]["tasks"][1]["tags"].update(level=3))


def dimension_not_a_number(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][2]["metrics"]["dimensions"].update(style="good"))


def empty_jsonl(tmp: Path) -> Path:
    path = tmp / "empty.jsonl"
    path.write_text("")
    return path


def tau_not_an_array(tmp: Path) -> Path:
    path = tmp / "tau.json"
    path.write_text(json.dumps({"task_id": 0, "reward": 1.0, "trial": 0}))
    return path


def tau_row_missing_task_id(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:5]
    del rows[3]["task_id"]
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def tau_reward_string(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:5]
    rows[2]["reward"] = "1.0"
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def tau_duplicate_trial(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:5]
    rows.append(copy.deepcopy(rows[1]))
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def _harbor_copy(tmp: Path) -> Path:
    folder = tmp / "harbor-job"
    shutil.copytree(CURRENT, folder)
    return folder


def harbor_missing_config(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    (folder / "config.json").unlink()
    return folder


def harbor_trial_unreadable(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    result = folder / "regex-log__T7ZdMmV" / "result.json"
    result.write_text(result.read_text()[:300])
    return folder


def harbor_too_many_trials(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    config = json.loads((folder / "config.json").read_text())
    config["n_attempts"] = 4
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def harbor_reward_string(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    path = folder / "hello-world__E4MNpbM" / "result.json"
    result = json.loads(path.read_text())
    result["verifier_result"]["rewards"]["reward"] = "pass"
    path.write_text(json.dumps(result))
    return folder


def table_missing_reward_column(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("task,attempt,score\nA,1,1\nA,2,0\n")
    return path


def csv_non_numeric_reward(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("task,attempt,reward\nA,1,1\nA,2,high\nB,1,0\n")
    return path


def csv_attempt_zero(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("task,attempt,reward\nA,1,1\nA,0,0\n")
    return path


def csv_duplicate_slot(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("task,attempt,reward\nA,1,1\nA,1,0\n")
    return path


def csv_bad_status(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("task,reward,status\nA,1,completed\nA,0,ok\n")
    return path


def csv_ragged_row(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text("task,attempt,reward\nA,1,1\nA,2,0,7\nB,1,0\n")
    return path


def parquet_corrupt(tmp: Path) -> Path:
    path = tmp / "t.parquet"
    path.write_bytes(b"PAR1 this is not really a parquet file PAR1")
    return path


# -- silent loss or invention of data (issue 10, item 5) -----------------------------


def _many_trials_doc(n_tasks: int = 200) -> dict[str, Any]:
    """The fixture's job with ``n_tasks`` tasks x 2 trials: a file far past the 4 KB
    that format detection reads, so a cut beyond that point is not noticed there."""
    doc = _doc()
    doc["job"]["tasks"] = [{"name": f"t{i}", "digest": None, "tags": {}} for i in range(n_tasks)]
    doc["trials"] = [
        {"id": f"tr{i}", "task": f"t{i // 2}", "attempt": i % 2 + 1, "status": "completed",
         "reward": float(i % 3 == 0)}
        for i in range(2 * n_tasks)
    ]  # fmt: skip
    return doc


def _lines(tmp: Path, doc: dict[str, Any]) -> list[bytes]:
    """The lines of ``doc`` as an EnvLoop JSONL export (no metrics line)."""
    return to_jsonl(doc, tmp / "lines.jsonl", metrics=False).read_bytes().splitlines(True)


def _gzip_parts(*parts: bytes, flush: int = zlib.Z_FULL_FLUSH) -> bytes:
    """A gzip stream of ``parts``, each flushed so that a reader inflates all of it, and
    no end: neither the final deflate block nor the gzip trailer (CRC-32, length)."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return b"".join(z.compress(part) + z.flush(flush) for part in parts)


def gz_cut_mid_line(tmp: Path) -> Path:
    """A JSONL.gz cut in the middle of line 101 (as by an interrupted copy)."""
    lines = _lines(tmp, _many_trials_doc())
    path = tmp / "cut.jsonl.gz"
    path.write_bytes(_gzip_parts(b"".join(lines[:100]), lines[100][:20]))
    return path


def gz_cut_at_line_boundary(tmp: Path) -> Path:
    """A JSONL.gz that ends cleanly after line 300, without gzip's end and trailer."""
    lines = _lines(tmp, _many_trials_doc())
    path = tmp / "cut.jsonl.gz"
    path.write_bytes(_gzip_parts(b"".join(lines[:300]), flush=zlib.Z_SYNC_FLUSH))
    return path


def gz_document_without_trailer(tmp: Path) -> Path:
    """A whole .json.gz document whose last 8 bytes (CRC-32 and length) are missing."""
    path = tmp / "doc.json.gz"
    text = json.dumps(_many_trials_doc(), indent=1).encode()
    path.write_bytes(gzip.compress(text)[:-8])
    return path


def gz_table_cut(tmp: Path) -> Path:
    rows = b"".join(json.dumps({"task": f"t{i % 50}", "reward": i % 2}).encode() + b"\n"
                    for i in range(500))  # fmt: skip
    path = tmp / "rows.jsonl.gz"
    path.write_bytes(_gzip_parts(rows[: rows.index(b"\n", len(rows) // 2) + 1]))
    return path


def gz_tau_cut(tmp: Path) -> Path:
    path = tmp / "tau.json.gz"
    path.write_bytes(gzip.compress(TAU_BENCH.read_bytes())[:-8])
    return path


def _trial_line(tmp: Path, line3: bytes, name: str = "run.jsonl") -> Path:
    """The fixture as JSONL with line 3 (the second trial) replaced by ``line3``."""
    path = to_jsonl(_doc(), tmp / name)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = line3 + b"\n"
    path.write_bytes(b"".join(lines))
    return path


_TRIAL_2 = b'"id": "tr_2", "task": "A", "attempt": 2, "status": "failed"'


def reward_nan_document(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1].update(reward=float("nan")))


def reward_infinity_jsonl(tmp: Path) -> Path:
    return _trial_line(tmp, b"{" + _TRIAL_2 + b', "reward": Infinity}')


def reward_overflow_jsonl(tmp: Path) -> Path:
    return _trial_line(tmp, b"{" + _TRIAL_2 + b', "reward": 1e999}')


def metrics_without_task(tmp: Path) -> Path:
    """A trial line that lost its task but has metrics, in a file without a metrics line."""
    doc = _doc()
    del doc["trials"][2]["task"]
    return to_jsonl(doc, tmp / "run.jsonl", metrics=False)


def metrics_line_not_last(tmp: Path) -> Path:
    doc = _doc()
    line = json.dumps({"metrics": doc["metrics"]}).encode()
    return _trial_line(tmp, line)


def utf8_invalid_jsonl(tmp: Path) -> Path:
    return _trial_line(tmp, b'{"output": "\xff\xfe", ' + _TRIAL_2 + b', "reward": 0}')


def utf8_invalid_document(tmp: Path) -> Path:
    path = _json_doc(tmp, lambda d: d["job"].update(model="@@"))
    path.write_bytes(path.read_bytes().replace(b'"@@"', b'"\xc3("'))
    return path


def surrogate_document(tmp: Path) -> Path:
    path = tmp / "bad.json"
    path.write_text(THREE_TASKS.read_text().replace('"my-endpoint/sft",\n', '"x\\ud800",\n', 1))
    return path


def surrogate_jsonl(tmp: Path) -> Path:
    return _trial_line(tmp, b'{"output": "\\udc00", ' + _TRIAL_2 + b', "reward": 0}')


def surrogate_tau(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:3]
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows, indent=1).replace('"role": "user"', '"role": "\\ud83d"', 1))
    return path


def nesting_header(tmp: Path) -> Path:
    header = json.dumps({"schema_version": "envloop.job-result/v1", "job": _doc()["job"]})
    path = tmp / "deep.jsonl"
    path.write_text('{"x": ' + "[" * 5000 + "]" * 5000 + ", " + header[1:] + "\n")
    return path


def nesting_tau(tmp: Path) -> Path:
    path = tmp / "tau.json"
    path.write_text("[\n" + "[" * 5000 + "]" * 5000 + "\n]")
    return path


def turns_overflow_jsonl(tmp: Path) -> Path:
    turns = str(2**70).encode()
    return _trial_line(tmp, b"{" + _TRIAL_2 + b', "reward": 0, "usage": {"turns": ' + turns + b"}}")


def attempts_overflow_header(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"].update(attempts=2**70))


def harbor_tokens_overflow(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    path = folder / "hello-world__E4MNpbM" / "result.json"
    result = json.loads(path.read_text())
    result["agent_result"]["n_input_tokens"] = 2**70
    path.write_text(json.dumps(result))
    return folder


def csv_turns_overflow(tmp: Path) -> Path:
    path = tmp / "t.csv"
    path.write_text(f"task,reward,turns\nA,1,3\nA,0,{2**40}\n")
    return path


def tau_trial_overflow(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:3]
    rows[1]["trial"] = 2**70
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def tau_valid(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:6]
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def harbor_symlinked_trial(tmp: Path) -> Path:
    """hello-world's fifth trial replaced by a link to its first: 5 trials, 4 of them real."""
    folder = _harbor_copy(tmp)
    shutil.rmtree(folder / "hello-world__tdTPcMd")
    os.symlink("hello-world__E4MNpbM", folder / "hello-world__linked")
    return folder


def harbor_copied_trial(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    shutil.rmtree(folder / "hello-world__tdTPcMd")
    shutil.copytree(folder / "hello-world__E4MNpbM", folder / "hello-world__copy")
    return folder


def jsonl_task_number_and_string(tmp: Path) -> Path:
    path = tmp / "t.jsonl"
    rows = [{"task": "0", "reward": 1}, {"task": 1, "reward": 1}, {"task": "2", "reward": 0},
            {"task": "1", "reward": 0}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def tau_task_number_and_string(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:3]
    rows[2]["task_id"] = str(rows[1]["task_id"])
    rows[2]["trial"] = 1
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


# -- column names DuckDB would rename, merge or replace (table loader) ---------------


def _text_file(tmp: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    return path


def csv_dims_differ_in_case(tmp: Path) -> Path:
    """DuckDB read dim_x as dim_x_1: dimension "x_1", made up."""
    return _text_file(tmp, "task,reward,dim_X,dim_x\nA,1,0.5,0.7\n")


def csv_gz_rewards_differ_in_case(tmp: Path) -> Path:
    return _text_file(tmp, "task,Reward,reward\nA,1,0\n", "t.csv.gz")


def csv_title_line_then_clash(tmp: Path) -> Path:
    """DuckDB skips the title line and reads the header on line 2."""
    return _text_file(tmp, "report of run 7\ntask,reward,dim_X,dim_x\nA,1,0.5,0.7\nB,0,1,1\n")


def csv_header_twice(tmp: Path) -> Path:
    return _text_file(tmp, "task,reward,note,note\nA,1,x,y\n")


def csv_reserved_ordinality(tmp: Path) -> Path:
    """The loader reads CSV WITH ORDINALITY: this column became the row number."""
    return _text_file(tmp, "task,reward,Ordinality\nA,1,x\nB,0,y\n")


def _parquet(path: Path, **columns: list[Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    out = pa.BufferOutputStream()  # pyarrow opens only UTF-8 paths: write the bytes here
    pq.write_table(pa.table(columns), out)
    path.write_bytes(out.getvalue().to_pybytes())


def parquet_dims_differ_in_case(tmp: Path) -> Path:
    path = tmp / "t.parquet"
    _parquet(path, task=["A"], reward=[1.0], **{"dim_X": [0.5], "dim_x": [0.7]})
    return path


def parquet_files_differ_in_case(tmp: Path) -> Path:
    """Read by name, DuckDB merged b's dim_x into a's dim_X."""
    _parquet(tmp / "runs" / "a.parquet", task=["A"], reward=[1.0], dim_X=[0.5])
    _parquet(tmp / "runs" / "b.parquet", task=["B"], reward=[0.0], dim_x=[0.7])
    return tmp / "runs"


def hive_key_shadows_column(tmp: Path) -> Path:
    """The folder Task=9 replaced every task id in the file with 9."""
    _parquet(tmp / "runs" / "Task=9" / "a.parquet", task=["A", "B"], reward=[1.0, 0.0])
    return tmp / "runs"


def parquet_reserved_file_row_number(tmp: Path) -> Path:
    path = tmp / "t.parquet"
    _parquet(path, task=["A"], reward=[1.0], File_Row_Number=[7])
    return path


# -- bad costs, logprobs and other fields that were dropped quietly ------------------


def _usage_line(tmp: Path, usage: bytes) -> Path:
    return _trial_line(tmp, b"{" + _TRIAL_2 + b', "reward": 0, "usage": ' + usage + b"}")


def cost_usd_string(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1]["usage"].update(cost_usd="0.01"))


def cost_usd_nan_jsonl(tmp: Path) -> Path:
    return _usage_line(tmp, b'{"turns": 3, "cost_usd": NaN}')


def cost_usd_boolean(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1]["usage"].update(cost_usd=True))


def cost_usd_object_jsonl(tmp: Path) -> Path:
    return _usage_line(tmp, b'{"cost_usd": {"usd": 0.01}}')


def usage_not_an_object(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1].update(usage="lots"))


def logprob_not_an_object(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1].update(logprob=-0.5))


def logprob_mean_infinite_jsonl(tmp: Path) -> Path:
    return _trial_line(tmp, b"{" + _TRIAL_2 + b', "reward": 0, "logprob": {"mean": -Infinity}}')


def logprob_std_string(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][1].update(logprob={"mean": -0.2, "std": "high"}))


def higher_is_better_string(tmp: Path) -> Path:
    return _json_doc(
        tmp, lambda d: d["trials"][2]["metrics"].update(higher_is_better={"style": "yes"})
    )


def units_value_number(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["trials"][2]["metrics"].update(units={"style": 100}))


def header_profile_string(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"].update(profile="team/eval"))


def header_model_object(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"].update(model={"name": "m"}))


def header_created_at_bad(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"].update(created_at="yesterday"))


def header_revision_number(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"]["dataset"].update(revision=3))


def _harbor_edit(tmp: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    folder = _harbor_copy(tmp)
    path = folder / "hello-world__E4MNpbM" / "result.json"
    result = json.loads(path.read_text())
    edit(result)
    path.write_text(json.dumps(result))
    return folder


def harbor_phase_string(tmp: Path) -> Path:
    return _harbor_edit(tmp, lambda r: r.update(agent_execution="3 minutes"))


def harbor_agent_info_list(tmp: Path) -> Path:
    return _harbor_edit(tmp, lambda r: r.update(agent_info=["claude-code"]))


def harbor_exception_type_number(tmp: Path) -> Path:
    return _harbor_edit(
        tmp, lambda r: r.update(exception_info={"exception_type": 3, "exception_message": "x"})
    )


def harbor_dataset_string(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    config = json.loads((folder / "config.json").read_text())
    config["datasets"] = ["terminal-bench"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _tau_rows(tmp: Path, edit: Callable[[list[Any]], None]) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:3]
    edit(rows)
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def tau_info_zero(tmp: Path) -> Path:
    return _tau_rows(tmp, lambda rows: rows[1].update(info=0))


def tau_traj_object(tmp: Path) -> Path:
    return _tau_rows(tmp, lambda rows: rows[1].update(traj={}))


def _tau2(tmp: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads(TAU2.read_text())
    edit(doc)
    path = tmp / "run" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    return path


def tau2_reward_info_list(tmp: Path) -> Path:
    """`[] or {}` made the reward "not recorded"."""
    return _tau2(tmp, lambda d: d["simulations"][0].update(reward_info=[]))


def tau2_breakdown_list(tmp: Path) -> Path:
    """A breakdown that is not an object dropped the dimensions."""
    return _tau2(
        tmp, lambda d: d["simulations"][0]["reward_info"].update(reward_breakdown=["DB", 1.0])
    )


def tau2_messages_string(tmp: Path) -> Path:
    return _tau2(tmp, lambda d: d["simulations"][0].update(messages=""))


def tau2_agent_info_string(tmp: Path) -> Path:
    return _tau2(tmp, lambda d: d["info"].update(agent_info="gpt-4.1-mini"))


def table_cost_infinite(tmp: Path) -> Path:
    text = '{"task": "A", "reward": 1, "cost_usd": 0.5}\n{"task": "A", "reward": 0, "cost_usd": Infinity}\n'
    return _text_file(tmp, text, "t.jsonl")


def table_dimension_infinite(tmp: Path) -> Path:
    return _text_file(tmp, '{"task": "A", "reward": 1, "dim_x": -Infinity}\n', "t.jsonl")


_TRUNCATED = re.escape(
    "truncated gzip file: the compressed stream ends without its end marker and CRC "
    "trailer (the file was cut short)"
)
_ONCE = re.escape("one trial would count as two attempts")
_MERGED = re.escape("would be merged into one task '1': write every task id the same way")
_CASE = re.escape(
    "the names differ only in case: DuckDB column names ignore case, so it would load one "
    "under a made-up name; rename one of them"
)
_RESERVED = re.escape("to read the source (DuckDB column names ignore case); rename the column")
_TRIAL = r"bad\.json, trials\[1\] \(id tr_2\)"
_HELLO = r"harbor-job, trial hello-world__E4MNpbM"
_SIM = r"run/results\.json, simulations\[0\] \(id s-0-0\)"

#: name, builder, load options, the exact message after the source's folder (a regex).
LOSS_CASES: list[tuple[str, Callable[[Path], Path], dict[str, Any], str]] = [
    ("JSONL.gz cut mid-line", gz_cut_mid_line, {}, rf"cut\.jsonl\.gz, line 101: {_TRUNCATED}"),
    (
        "JSONL.gz cut at a line boundary, no trailer",
        gz_cut_at_line_boundary,
        {},
        rf"cut\.jsonl\.gz, after line 300: {_TRUNCATED}",
    ),
    (
        "JSON.gz document without its trailer",
        gz_document_without_trailer,
        {},
        rf"doc\.json\.gz, line 3845: {_TRUNCATED}",
    ),
    ("table JSONL.gz cut", gz_table_cut, {}, rf"rows\.jsonl\.gz, after line 251: {_TRUNCATED}"),
    ("τ-bench .json.gz cut", gz_tau_cut, {}, rf"tau\.json\.gz, after line 53013: {_TRUNCATED}"),
    (
        "NaN reward (document)",
        reward_nan_document,
        {},
        r"bad\.json, trials\[1\] \(id tr_2\): reward must be finite, got NaN",
    ),
    (
        "Infinity reward (JSONL)",
        reward_infinity_jsonl,
        {},
        r"run\.jsonl, line 3: reward must be finite, got Infinity",
    ),
    (
        "overflowing reward 1e999 (JSONL)",
        reward_overflow_jsonl,
        {},
        r"run\.jsonl, line 3: reward must be finite, got 1e999",
    ),
    (
        "trial line without task but with metrics",
        metrics_without_task,
        {},
        r"run\.jsonl, line 4: task must be a string, got nothing",
    ),
    (
        "metrics line that is not the last line",
        metrics_line_not_last,
        {},
        r"run\.jsonl, line 3: a line holding only \"metrics\" is the platform's aggregate: "
        r"it may only be the last line",
    ),
    (
        "invalid UTF-8 (JSONL trial line)",
        utf8_invalid_jsonl,
        {},
        r"run\.jsonl, line 3: not valid UTF-8 \(byte 0xff at column 13\)",
    ),
    (
        "invalid UTF-8 (JSON document)",
        utf8_invalid_document,
        {},
        r"bad\.json, line 22: not valid UTF-8 \(byte 0xc3 at column 13\)",
    ),
    (
        "lone surrogate (JSON document header)",
        surrogate_document,
        {},
        r"bad\.json, line 11: lone surrogate \\ud800 at column 16: not valid Unicode text",
    ),
    (
        "lone surrogate (JSONL trial line)",
        surrogate_jsonl,
        {},
        r"run\.jsonl, line 3: lone surrogate \\udc00 at column 13: not valid Unicode text",
    ),
    (
        "lone surrogate (τ-bench)",
        surrogate_tau,
        {},
        r"tau\.json, line 111: lone surrogate \\ud83d at column 14: not valid Unicode text",
    ),
    (
        "nesting past the recursion limit (JSONL header)",
        nesting_header,
        {"format": "envloop"},
        r"deep\.jsonl, line 1: JSON nested 5001 levels deep \(deepest at column 5006\); "
        rf"Python's JSON parser stops at about {sys.getrecursionlimit()} levels",
    ),
    (
        "nesting past the recursion limit (τ-bench)",
        nesting_tau,
        {"format": "tau-bench"},
        r"tau\.json, line 2: JSON nested 5001 levels deep \(deepest at column 5000\); "
        rf"Python's JSON parser stops at about {sys.getrecursionlimit()} levels",
    ),
    (
        "turns 2**70 (JSONL)",
        turns_overflow_jsonl,
        {},
        rf"run\.jsonl, line 3: usage\.turns {2**70} is out of range: it must fit a 32-bit "
        r"integer",
    ),
    (
        "attempts 2**70 (header)",
        attempts_overflow_header,
        {},
        rf"bad\.json, \$\.job\.attempts: attempts {2**70} is out of range: it must fit a "
        r"32-bit integer",
    ),
    (
        "Harbor n_input_tokens 2**70",
        harbor_tokens_overflow,
        {},
        rf"harbor-job, trial hello-world__E4MNpbM: agent_result\.n_input_tokens {2**70} is "
        r"out of range: it must fit a 64-bit integer",
    ),
    (
        "CSV turns 2**40",
        csv_turns_overflow,
        {},
        rf"t\.csv, line 3: turns {2**40} is out of range: it must fit a 32-bit integer",
    ),
    (
        "τ-bench trial 2**70",
        tau_trial_overflow,
        {},
        rf"tau\.json, \[1\] \(task_id 1, trial {2**70}\): trial {2**70} is out of range: "
        r"attempt trial \+ 1 must fit a 32-bit integer",
    ),
    ("τ-bench k=2.5", tau_valid, {"k": 2.5}, r"tau\.json, k: expected an integer >= 1, got 2\.5"),
    (
        "Harbor trial folder that links to a sibling",
        harbor_symlinked_trial,
        {},
        r"harbor-job, trial hello-world__linked: the same folder as trial "
        rf"hello-world__E4MNpbM \(.*hello-world__E4MNpbM\): {_ONCE}",
    ),
    (
        "Harbor trial copied (same trial id)",
        harbor_copied_trial,
        {},
        r"harbor-job, trial hello-world__copy: trial id '[0-9a-f-]+' is also the id of "
        rf"trial hello-world__E4MNpbM: {_ONCE}",
    ),
    (
        'task 1 and task "1" in one JSONL',
        jsonl_task_number_and_string,
        {},
        rf"t\.jsonl, line 2 and line 4: task 1 \(a number\) and task \"1\" \(a string\) "
        rf"{_MERGED}",
    ),
    (
        'τ-bench task_id 1 and "1"',
        tau_task_number_and_string,
        {},
        rf"tau\.json, \[1\] and \[2\]: task 1 \(a number\) and task '1' \(a string\) "
        rf"{_MERGED}",
    ),
]

#: Names DuckDB would rename, merge or replace; costs, logprobs and other fields that
#: were dropped (or stored as NaN) quietly. Exact messages, as for LOSS_CASES.
LOSS_CASES += [
    (
        "CSV dim_X and dim_x",
        csv_dims_differ_in_case,
        {},
        rf"t\.csv, columns 'dim_X' and 'dim_x': {_CASE}",
    ),
    (
        "CSV.gz Reward and reward",
        csv_gz_rewards_differ_in_case,
        {},
        rf"t\.csv\.gz, columns 'Reward' and 'reward': {_CASE}",
    ),
    (
        "CSV header after a title line",
        csv_title_line_then_clash,
        {},
        rf"t\.csv, columns 'dim_X' and 'dim_x': {_CASE}",
    ),
    (
        "CSV column named twice",
        csv_header_twice,
        {},
        r"t\.csv, column 'note': appears 2 times: column names must be unique",
    ),
    (
        "CSV column named like the reader's row number",
        csv_reserved_ordinality,
        {},
        r"t\.csv, column 'Ordinality': the name is reserved: envloop_nb adds a column "
        rf"'ordinality' {_RESERVED}",
    ),
    (
        "Parquet dim_X and dim_x",
        parquet_dims_differ_in_case,
        {},
        rf"t\.parquet, columns 'dim_X' and 'dim_x': {_CASE}",
    ),
    (
        "Parquet files spelling a column two ways",
        parquet_files_differ_in_case,
        {},
        r"runs, columns 'dim_X' \(a\.parquet\) and 'dim_x' \(b\.parquet\): the names differ "
        r"only in case: DuckDB column names ignore case, so it would merge them into one "
        r"column; write the name one way",
    ),
    (
        "hive folder Task=9 over a task column",
        hive_key_shadows_column,
        {},
        r"runs, column 'task' and hive partition key 'Task' \(Task=9\): the same name, "
        r"ignoring case: DuckDB would replace the file's column with the folder's value; "
        r"rename one of them",
    ),
    (
        "Parquet column named like the reader's row number",
        parquet_reserved_file_row_number,
        {},
        r"t\.parquet, column 'File_Row_Number': the name is reserved: envloop_nb adds a column "
        rf"'file_row_number' {_RESERVED}",
    ),
    (
        "usage.cost_usd a string",
        cost_usd_string,
        {},
        rf"{_TRIAL}: usage\.cost_usd must be a number or null, got varchar \"0\.01\"",
    ),
    (
        "usage.cost_usd NaN (JSONL)",
        cost_usd_nan_jsonl,
        {},
        r"run\.jsonl, line 3: usage\.cost_usd must be finite, got NaN",
    ),
    (
        "usage.cost_usd a boolean",
        cost_usd_boolean,
        {},
        rf"{_TRIAL}: usage\.cost_usd must be a number or null, got boolean true",
    ),
    (
        "usage.cost_usd an object (JSONL)",
        cost_usd_object_jsonl,
        {},
        r'run\.jsonl, line 3: usage\.cost_usd must be a number or null, got object \{"usd":0\.01\}',
    ),
    (
        "usage not an object",
        usage_not_an_object,
        {},
        rf"{_TRIAL}: usage must be an object or null, got varchar \"lots\"",
    ),
    (
        "logprob not an object",
        logprob_not_an_object,
        {},
        rf"{_TRIAL}: logprob must be an object or null, got double -0\.5",
    ),
    (
        "logprob.mean -Infinity (JSONL)",
        logprob_mean_infinite_jsonl,
        {},
        r"run\.jsonl, line 3: logprob\.mean must be finite, got -Infinity",
    ),
    (
        "logprob.std a string",
        logprob_std_string,
        {},
        rf"{_TRIAL}: logprob\.std must be a number or null, got varchar \"high\"",
    ),
    (
        "metrics.higher_is_better not a boolean",
        higher_is_better_string,
        {},
        r"bad\.json, trials\[2\] \(id tr_3\): metrics\.higher_is_better values must be "
        r'booleans, got \{"style":"yes"\}',
    ),
    (
        "metrics.units value not a string",
        units_value_number,
        {},
        r"bad\.json, trials\[2\] \(id tr_3\): metrics\.units values must be strings, got "
        r'\{"style":100\}',
    ),
    (
        "job.profile a string",
        header_profile_string,
        {},
        r"bad\.json, \$\.job\.profile: expected an object or null, got 'team/eval'",
    ),
    (
        "job.model an object",
        header_model_object,
        {},
        r"bad\.json, \$\.job\.model: expected a string or null, got \{'name': 'm'\}",
    ),
    (
        "job.created_at not a time",
        header_created_at_bad,
        {},
        r"bad\.json, \$\.job\.created_at: created_at is not an RFC 3339 time: 'yesterday'",
    ),
    (
        "job.dataset.revision a number",
        header_revision_number,
        {},
        r"bad\.json, \$\.job\.dataset\.revision: expected a string, got 3",
    ),
    (
        "Harbor phase timing not an object",
        harbor_phase_string,
        {},
        rf"{_HELLO}: agent_execution must be an object \{{started_at, finished_at\}} or null, "
        r"got '3 minutes'",
    ),
    (
        "Harbor agent_info a list",
        harbor_agent_info_list,
        {},
        rf"{_HELLO}: agent_info must be an object or null, got \['claude-code'\]",
    ),
    (
        "Harbor exception_type a number",
        harbor_exception_type_number,
        {},
        rf"{_HELLO}: exception_info\.exception_type must be a string or null, got 3",
    ),
    (
        "Harbor dataset a string",
        harbor_dataset_string,
        {},
        r"harbor-job/config\.json, \$\.datasets: expected one dataset \{name, version\}, got "
        r"\['terminal-bench'\]",
    ),
    (
        "τ-bench info 0",
        tau_info_zero,
        {},
        r"tau\.json, \[1\] \(task_id 1, trial 0\): info must be an object, got 0",
    ),
    (
        "τ-bench traj an object",
        tau_traj_object,
        {},
        r"tau\.json, \[1\] \(task_id 1, trial 0\): traj must be a list of messages, got \{\}",
    ),
    (
        "τ²-bench reward_info a list",
        tau2_reward_info_list,
        {},
        rf"{_SIM}: reward_info must be an object or null, got \[\]",
    ),
    (
        "τ²-bench reward_breakdown a list",
        tau2_breakdown_list,
        {},
        rf"{_SIM}: reward_info\.reward_breakdown must be an object of numbers or null, got "
        r"\['DB', 1\.0\]",
    ),
    (
        "τ²-bench messages a string",
        tau2_messages_string,
        {},
        rf"{_SIM}: messages must be a list, got ''",
    ),
    (
        "τ²-bench info.agent_info a string",
        tau2_agent_info_string,
        {},
        r"run/results\.json, \$\.info\.agent_info: expected an object, got 'gpt-4\.1-mini'",
    ),
    (
        "table cost_usd Infinity",
        table_cost_infinite,
        {},
        r"t\.jsonl, line 2: cost_usd must be finite, got Infinity",
    ),
    (
        "table dimension -Infinity",
        table_dimension_infinite,
        {},
        r"t\.jsonl, line 1: dimension x must be finite, got -Infinity",
    ),
]


CASES: list[tuple[str, Callable[[Path], Path], dict[str, Any], str]] = [
    ("malformed JSON document", malformed_json, {}, r"broken\.json, line \d+: not valid JSON"),
    (
        "truncated JSONL line",
        truncated_jsonl,
        {},
        r"run\.jsonl, line 4: not valid JSON \(.*\); truncated line\?$",
    ),
    (
        "truncated JSONL.gz line",
        truncated_jsonl_gz,
        {},
        r"run\.jsonl\.gz, line 4: not valid JSON .*truncated line\?",
    ),
    (
        "wrong schema_version",
        wrong_schema_version,
        {},
        r"bad\.json, \$\.schema_version: expected 'envloop\.job-result/v1', "
        r"got 'envloop\.job-result/v2'",
    ),
    (
        "missing job.attempts",
        missing_job_attempts,
        {},
        r"bad\.json, \$\.job\.attempts: expected an integer >= 1, got None",
    ),
    (
        "attempt out of range (JSONL line)",
        attempt_out_of_range_jsonl,
        {},
        r"range\.jsonl, line 3: attempt 3 is out of range: the job requested 1\.\.2 per task",
    ),
    (
        "attempt out of range (trial id)",
        attempt_out_of_range_doc,
        {},
        r"bad\.json, trials\[4\] \(id tr_5\): attempt 0 is out of range",
    ),
    (
        "reward that is a string",
        reward_is_a_string,
        {},
        r"bad\.json, trials\[2\] \(id tr_3\): reward must be a number or null, "
        r"got varchar \"0\.5\"",
    ),
    (
        "unknown task in a trial",
        unknown_task,
        {},
        r"unknown\.jsonl, line 7: task \"Z\" is not among the job's requested tasks",
    ),
    (
        "bad status",
        bad_status,
        {},
        r"bad\.json, trials\[0\] \(id tr_1\): status must be one of pending, running, "
        r"completed, failed, cancelled, got \"done\"",
    ),
    (
        "bad timestamp",
        bad_timestamp,
        {},
        r"bad\.json, trials\[1\] \(id tr_2\): started_at is not an RFC 3339 time: "
        r"yesterday at noon",
    ),
    (
        "tag value not a string",
        bad_tag_value,
        {},
        r"bad\.json, \$\.job\.tasks\[1\]\.tags\.level: tag values must be strings, got 3",
    ),
    (
        "dimension value not a number",
        dimension_not_a_number,
        {},
        r"bad\.json, trials\[2\] \(id tr_3\): metrics\.dimensions values must be numbers",
    ),
    ("empty JSONL", empty_jsonl, {}, r"empty\.jsonl: empty file: nothing to load"),
    (
        "τ-bench file that is not an array",
        tau_not_an_array,
        {"format": "tau-bench"},
        r"tau\.json, \$: expected a JSON array of τ-bench results, got dict",
    ),
    (
        "τ-bench row missing task_id",
        tau_row_missing_task_id,
        {},
        r"tau\.json, \[3\]: task_id must be an integer or string, got None",
    ),
    (
        "τ-bench reward string",
        tau_reward_string,
        {},
        r"tau\.json, \[2\] \(task_id 2, trial 0\): reward must be a number, got str '1\.0'",
    ),
    (
        "τ-bench duplicate trial",
        tau_duplicate_trial,
        {},
        r"tau\.json, \[5\] \(task_id 1, trial 0\): task '1' trial 0 appears twice "
        r"\(first at \[1\]",
    ),
    (
        "Harbor folder missing config.json",
        harbor_missing_config,
        {},
        r"harbor-job, config\.json: missing: a Harbor job folder holds config\.json",
    ),
    (
        "Harbor trial result.json unreadable",
        harbor_trial_unreadable,
        {},
        r"regex-log__T7ZdMmV/result\.json, line \d+: not valid JSON .*TrialResult",
    ),
    (
        "Harbor more trials than n_attempts",
        harbor_too_many_trials,
        {},
        r"harbor-job, trial \S+: task '\S+' has 5 trials but the job requested n_attempts=4",
    ),
    (
        "Harbor reward string",
        harbor_reward_string,
        {},
        r"harbor-job, trial hello-world__E4MNpbM: verifier_result\.rewards\.reward must be "
        r"a number or null, got str 'pass'",
    ),
    (
        "table missing the mapped reward column",
        table_missing_reward_column,
        {},
        r"t\.csv, column 'reward': missing: the reward column was mapped to 'reward'",
    ),
    (
        "table missing an explicitly mapped column",
        table_missing_reward_column,
        {"mapping": {"reward": "points"}},
        r"t\.csv, column 'points': missing",
    ),
    (
        "table mapping that drops the reward",
        csv_non_numeric_reward,
        {"mapping": {"reward": None}},
        r"t\.csv, mapping: the reward column is required",
    ),
    (
        "table mapping with an unknown field",
        csv_non_numeric_reward,
        {"mapping": {"score": "reward"}},
        r"t\.csv, mapping: unknown field\(s\) \['score'\]",
    ),
    (
        "non-numeric reward column in CSV",
        csv_non_numeric_reward,
        {},
        r"t\.csv, line 3: reward must be a number or empty, got 'high'",
    ),
    (
        "CSV attempt 0",
        csv_attempt_zero,
        {},
        r"t\.csv, line 3: attempt 0 is out of range: attempts are numbered from 1",
    ),
    (
        "CSV attempt beyond k",
        csv_non_numeric_reward,
        {"k": 1},
        r"t\.csv, line 3: attempt 2 is out of range: the job requested 1\.\.1 per task",
    ),
    (
        "CSV duplicate (task, attempt)",
        csv_duplicate_slot,
        {},
        r"t\.csv, task 'A': attempt 1 appears 2 times",
    ),
    (
        "CSV bad status",
        csv_bad_status,
        {},
        r"t\.csv, line 3: status must be one of .*, got ok",
    ),
    (
        "ragged CSV row",
        csv_ragged_row,
        {},
        r"t\.csv, line 3: malformed CSV row: Expected Number of Columns: 3 Found: 4",
    ),
    (
        "corrupt Parquet",
        parquet_corrupt,
        {},
        r"t\.parquet: cannot be read as table: ",
    ),
    (
        "unknown option",
        csv_non_numeric_reward,
        {"colour": "red"},
        r"t\.csv, options: format 'table' does not take",
    ),
]


# Each of these once loaded silently (too few rows, or invented ones) or raised a raw
# error. Their messages are exact: everything after the source's folder, to the end.
CASES += [(name, make, options, f"/{message}$") for name, make, options, message in LOSS_CASES]


@pytest.mark.parametrize(
    ("make", "options", "message"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_bad_input_names_file_and_place_and_changes_nothing(
    loaded: enb.Workspace,
    tmp_path: Path,
    make: Callable[[Path], Path],
    options: dict[str, Any],
    message: str,
) -> None:
    source = make(tmp_path)
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError, match=message) as info:
        load_job(loaded, source, **options)
    assert str(info.value).startswith(str(source)) or str(source) in str(info.value)
    assert _snapshot(loaded) == before


def test_at_least_ten_distinct_malformed_files() -> None:
    assert len({c[1] for c in CASES}) >= 10


def test_csv_non_numeric_reward_after_an_earlier_good_load(
    loaded: enb.Workspace, tmp_path: Path
) -> None:
    """Reloading a job id that exists, from a bad file, keeps the old job intact."""
    doc = _doc()
    doc["trials"][0]["reward"] = "x"
    bad = tmp_path / "same-id.json"
    bad.write_text(json.dumps(doc))
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError, match=r"same-id\.json, trials\[0\] \(id tr_1\)"):
        load_job(loaded, bad)
    assert _snapshot(loaded) == before
    assert loaded.job("job_abc0001").summary().scored == 5


def _big_jsonl(tmp: Path, name: str, n_trials: int = 20000) -> Path:
    """A JSONL export with ``n_trials`` good trials and one truncated line."""
    doc = _doc()
    tasks: list[dict[str, Any]] = [
        {"name": f"t{i}", "digest": None, "tags": {}} for i in range(n_trials // 2)
    ]
    doc["job"]["tasks"] = tasks
    doc["job"]["id"] = "job_big"
    doc["trials"] = [
        {"id": f"tr{i}", "task": f"t{i // 2}", "attempt": i % 2 + 1, "status": "completed",
         "reward": float(i % 3 == 0)}
        for i in range(n_trials)
    ]  # fmt: skip
    path = to_jsonl(doc, tmp / name, metrics=False)
    opener: Any = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    lines[5000] = lines[5000][:25]  # one truncated line
    with opener(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", ["big.jsonl", "big.jsonl.gz"])
def test_lenient_skips_one_bad_line_and_says_so(
    loaded: enb.Workspace, tmp_path: Path, name: str
) -> None:
    path = _big_jsonl(tmp_path, name)
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError, match=rf"{re.escape(name)}, line 5001: not valid JSON"):
        load_job(loaded, path)
    assert _snapshot(loaded) == before
    with pytest.warns(enb.LoadWarning, match=r"skipped 1 unusable trial\(s\); first at line 5001"):
        job = load_job(loaded, path, lenient=True)
    assert len(job.attempts()) == 19999
    assert job.summary().missing == 1


def test_lenient_table_rows(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [json.dumps({"task": f"t{i % 10}", "reward": i % 2}) for i in range(1000)]
    rows[10] = rows[10][:8]
    rows[20] = json.dumps({"task": "t0", "reward": "NaN?"})
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(enb.LoadError, match=r"t\.jsonl, line 11: not valid JSON .*\(1 more"):
        load_job(ws, path)
    with pytest.warns(enb.LoadWarning, match=r"skipped 2 unusable row\(s\); first at line 11"):
        job = load_job(ws, path, lenient=True)
    assert len(job.attempts()) == 998
    assert job.info["extra"]["skipped_rows"] == 2


def test_blank_lines_do_not_shift_line_numbers(ws: enb.Workspace, tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text('{"task": "a", "reward": 1}\n\n\n{"task": "a", "reward": "x"}\n')
    with pytest.raises(enb.LoadError, match=r"blank\.jsonl, line 4: reward must be a number"):
        load_job(ws, path)


def test_missing_file_and_unknown_format(ws: enb.Workspace, tmp_path: Path) -> None:
    with pytest.raises(enb.LoadError, match=r"nope\.json: no such file or folder"):
        load_job(ws, tmp_path / "nope.json")
    with pytest.raises(enb.LoadError, match=r"unknown format 'xml'"):
        load_job(ws, THREE_TASKS, format="xml")
    odd = tmp_path / "notes.txt"
    odd.write_text("hello")
    with pytest.raises(enb.LoadError, match=r"notes\.txt: unrecognised format"):
        load_job(ws, odd)


def test_an_internal_format_name_is_refused_with_the_public_names(
    loaded: enb.Workspace,
) -> None:
    """``summary`` names an internal loader (reduced jobs from Spark / MLflow), not a
    file format: ``ws.load(path, format="summary")`` crashed with AttributeError."""
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError, match=r"unknown format 'summary'; one of .*'inspect'") as err:
        loaded.load(THREE_TASKS, format="summary")
    assert "'summary'" not in str(err.value).split("one of", 1)[1]
    assert "'dataset'" in str(err.value) and "'experiment'" in str(err.value)
    assert _snapshot(loaded) == before


def test_failed_frame_load_changes_nothing(loaded: enb.Workspace) -> None:
    before = _snapshot(loaded)
    df = pd.DataFrame({"task": ["a", "b"], "reward": ["1", "lots"]})
    with pytest.raises(enb.LoadError, match=r"<pandas DataFrame>, row 1: reward must be"):
        load_job(loaded, df, job_id="job_abc0001")
    assert _snapshot(loaded) == before


def test_lenient_csv_skips_ragged_lines(ws: enb.Workspace, tmp_path: Path) -> None:
    path = csv_ragged_row(tmp_path)
    with pytest.warns(enb.LoadWarning, match=r"skipped 1 malformed CSV line\(s\); first at line 3"):
        job = load_job(ws, path, lenient=True)
    a = job.attempts()
    assert a[["task", "attempt"]].values.tolist() == [["A", 1], ["B", 1]]
    assert a["source_place"].tolist() == ["row 1", "row 2"]  # data rows once lines are skipped


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (reward_infinity_jsonl, r"reward must be finite, got Infinity"),
        (cost_usd_nan_jsonl, r"usage\.cost_usd must be finite, got NaN"),
    ],
    ids=["non-finite reward", "NaN cost"],
)
def test_lenient_skips_a_bad_trial_and_counts_it(
    loaded: enb.Workspace, tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    path = make(tmp_path)
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError):
        load_job(loaded, path)
    assert _snapshot(loaded) == before
    with pytest.warns(
        enb.LoadWarning,
        match=rf"run\.jsonl: skipped 1 unusable trial\(s\); first at line 3: {problem}$",
    ):
        job = load_job(loaded, path, lenient=True)
    assert len(job.attempts()) == 5
    assert "tr_2" not in set(job.attempts()["trial_id"])
    assert job.summary().score == 0.75  # tr_1, tr_3, tr_4 pass; tr_5 fails; no NaN


def test_gzip_checked_whole_before_a_load(ws: enb.Workspace, tmp_path: Path) -> None:
    """A complete multi-member .jsonl.gz loads; the same bytes cut by one byte do not."""
    lines = b"".join(_lines(tmp_path, _many_trials_doc()))
    path = tmp_path / "run.jsonl.gz"
    half = lines.index(b"\n", len(lines) // 2) + 1
    whole = gzip.compress(lines[:half]) + gzip.compress(lines[half:])
    path.write_bytes(whole)
    assert len(load_job(ws, path).attempts()) == 400
    path.write_bytes(whole[:-1])
    with pytest.raises(enb.LoadError, match=r"run\.jsonl\.gz, after line 401: truncated gzip"):
        load_job(ws, path)
    bad_crc = bytearray(whole)
    bad_crc[-5] ^= 0xFF  # the second member's CRC-32
    path.write_bytes(bytes(bad_crc))
    with pytest.raises(
        enb.LoadError,
        match=r"run\.jsonl\.gz, gzip trailer of member 2: corrupt gzip file: its CRC-32 or "
        r"length check failed \(Error -3 while decompressing data: incorrect data check\)$",
    ):
        load_job(ws, path)


def _frame_duplicated_columns() -> pd.DataFrame:
    return pd.DataFrame([["a", 1.0, 0.0], ["b", 0.0, 1.0]], columns=["task", "reward", "reward"])


def _frame_mixed_task() -> pd.DataFrame:
    return pd.DataFrame({"task": pd.Series(["a", 7, "b"], dtype=object), "reward": [1, 0, 1]})


def _frame_surrogate() -> pd.DataFrame:
    return pd.DataFrame({"task": pd.Series(["a", "b\ud800"], dtype=object), "reward": [1, 0]})


def _frame_int_overflow() -> pd.DataFrame:
    turns = pd.Series([3, 2**70], dtype=object)
    return pd.DataFrame({"task": ["a", "b"], "reward": [1.0, 0.0], "turns": turns})


def _frame_dims_differ_in_case() -> pd.DataFrame:
    """DuckDB registered dim_x as dim_x_1: dimension "x_1", made up."""
    return pd.DataFrame({"task": ["a"], "reward": [1.0], "dim_X": [0.5], "dim_x": [0.7]})


def _polars_rewards_differ_in_case() -> Any:
    import polars as pl

    return pl.DataFrame({"task": ["a"], "Reward": [0.0], "reward": [1.0]})


def _arrow_dims_differ_in_case() -> Any:
    import pyarrow as pa

    return pa.table({"task": ["a"], "reward": [1.0], "dim_Speed": [1.0], "dim_speed": [2.0]})


def _frame_reserved_place() -> pd.DataFrame:
    return pd.DataFrame({"task": ["a"], "reward": [1.0], "_ENB_PLACE": ["x"]})


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            _frame_duplicated_columns,
            r"<pandas DataFrame>, column 'reward': appears 2 times: column names must be unique",
        ),
        (
            _frame_mixed_task,
            r"<pandas DataFrame>, row 1, column 'task': mixed types in one column: str at "
            r"row 0, int at row 1; give the column one type \(e\.g\. \.astype\(str\)\)",
        ),
        (
            _frame_surrogate,
            r"<pandas DataFrame>, row 1, column 'task': lone surrogate in 'b\\ud800': not "
            r"valid Unicode text",
        ),
        (
            _frame_int_overflow,
            rf"<pandas DataFrame>, row 1, column 'turns': {2**70} is out of range: it must "
            r"fit a 64-bit integer",
        ),
        (
            _frame_dims_differ_in_case,
            rf"<pandas DataFrame>, columns 'dim_X' and 'dim_x': {_CASE}",
        ),
        (
            _polars_rewards_differ_in_case,
            rf"<polars DataFrame>, columns 'Reward' and 'reward': {_CASE}",
        ),
        (
            _arrow_dims_differ_in_case,
            rf"<pyarrow Table>, columns 'dim_Speed' and 'dim_speed': {_CASE}",
        ),
        (
            _frame_reserved_place,
            r"<pandas DataFrame>, column '_ENB_PLACE': the name is reserved: envloop_nb adds a "
            rf"column '_enb_place' {_RESERVED}",
        ),
    ],
    ids=[
        "duplicated columns",
        "mixed-type object column",
        "lone surrogate",
        "int beyond 64 bits",
        "dimensions differ in case",
        "polars rewards differ in case",
        "Arrow dimensions differ in case",
        "reserved name",
    ],
)
def test_frames_arrow_cannot_hold(
    loaded: enb.Workspace, make: Callable[[], Any], message: str
) -> None:
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError) as info:
        load_job(loaded, make(), job_id="job_abc0001")
    assert re.fullmatch(message, str(info.value)), str(info.value)
    assert _snapshot(loaded) == before


def test_workspace_file_from_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    import duckdb

    from envloop_nb._store.schema import SCHEMA_VERSION
    from envloop_nb._store.schema import written_by as _written_by

    path = tmp_path / "evals.duckdb"
    ws = enb.open(path)
    load_job(ws, THREE_TASKS)
    ws.close()
    con = duckdb.connect(str(path))
    newer = SCHEMA_VERSION + 1
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(newer)])
    con.execute("INSERT OR REPLACE INTO meta VALUES ('written_by', 'envloop_nb 9.0.0')")
    con.execute("DROP TABLE leaderboard")  # as if the newer schema had dropped a table
    con.close()

    def content() -> Any:
        con = duckdb.connect(str(path), read_only=True)
        try:
            names = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
            return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in names}
        finally:
            con.close()

    before = content()
    for read_only in (False, True):
        with pytest.raises(enb.LoadError) as info:
            enb.open(path, read_only=read_only)
        assert str(info.value) == (
            f"{path}, meta.schema_version: written by envloop_nb 9.0.0 (workspace schema "
            f"version {newer}); {_written_by()} reads schema version {SCHEMA_VERSION} at most: "
            "upgrade envloop_nb to open it (the file was not changed)"
        )
        assert content() == before  # not reset to 1, no table re-created


def test_names_duckdb_keeps_apart_still_load(ws: enb.Workspace, tmp_path: Path) -> None:
    """Only names DuckDB would rename are refused: JSON keys are never renamed, DuckDB
    compares only ASCII letters without case (É and é are two names), and a column named
    like one the Parquet reader adds is kept in ``extra`` from CSV and frames (it was
    dropped)."""
    jsonl = _text_file(
        tmp_path, '{"task": "A", "reward": 1, "dim_X": 0.5, "dim_x": 0.7}\n', "t.jsonl"
    )
    dims = load_job(ws, jsonl).dimensions()
    assert sorted(zip(dims["name"], dims["value"], strict=True)) == [("X", 0.5), ("x", 0.7)]
    csv = _text_file(tmp_path, "task,reward,dim_É,dim_é,file_row_number\nA,1,0.5,0.7,9\n")
    job = load_job(ws, csv)
    assert sorted(job.dimensions()["name"]) == ["É", "é"]
    assert json.loads(job.attempts()["extra"][0]) == {"file_row_number": 9}
    frame = pd.DataFrame({"task": ["A"], "reward": [1.0], "file_row_number": [3]})
    extra = load_job(ws, frame, job_id="frame").attempts()["extra"][0]
    assert json.loads(extra) == {"file_row_number": 3}


def test_null_cost_and_logprob_are_not_recorded(ws: enb.Workspace, tmp_path: Path) -> None:
    """The spec: every usage and logprob key is optional; null is "not recorded"."""
    usage = b'{"turns": 3, "cost_usd": null}, "logprob": {"mean": null, "min": -2}'
    path = _trial_line(tmp_path, b"{" + _TRIAL_2 + b', "reward": 0, "usage": ' + usage + b"}")
    job = load_job(ws, path)
    row = job.con.execute(
        "SELECT cost_usd, logprob_mean, logprob_min, turns FROM attempts WHERE trial_id = 'tr_2'"
    ).fetchone()
    assert row == (None, None, -2.0, 3)


def test_table_nan_cost_is_not_recorded(ws: enb.Workspace, tmp_path: Path) -> None:
    """A NaN cost or duration in a table is "not recorded" (as for the reward, and as
    pandas' NaN already was): NULL, not a NaN that turns every sum into NaN."""
    text = (
        '{"task": "A", "reward": 1, "cost_usd": NaN, "duration_s": NaN}\n'
        '{"task": "B", "reward": 0, "cost_usd": 0.5, "duration_s": 2}\n'
    )
    job = load_job(ws, _text_file(tmp_path, text, "t.jsonl"))
    rows = job.con.execute(
        "SELECT task, cost_usd, duration_s FROM attempts WHERE job_id = ? ORDER BY task",
        [job.id],
    ).fetchall()
    assert rows == [("A", None, None), ("B", 0.5, 2.0)]


# -- paths that are not UTF-8 (os.fsdecode of bytes: a str with surrogate escapes) ----

_NOT_UTF8 = "DuckDB cannot open it and the workspace cannot record it; rename it"


def _not_utf8(folder: Path, name: bytes) -> Path:
    path = folder / os.fsdecode(name)
    try:
        path.touch()
        path.unlink()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    return path


def _copy_of(source: Path) -> Callable[[Path], Any]:
    if source.is_dir():
        return lambda path: shutil.copytree(source, path)
    return lambda path: shutil.copy(source, path)


def _text(text: str) -> Callable[[Path], Any]:
    return lambda path: path.write_text(text)


@pytest.mark.parametrize(
    ("name", "write"),
    [
        (b"\xff.json", _copy_of(THREE_TASKS)),
        (b"run-\xfe.jsonl", lambda path: to_jsonl(_doc(), path)),
        (b"tau-\xff.json", _copy_of(TAU_BENCH)),
        (b"results-\xff.json", _copy_of(TAU2)),
        (b"job-\xff", _copy_of(CURRENT)),
        (b"t-\xff.csv", _text("task,reward\nA,1\n")),
        (b"t-\xff.parquet", lambda path: _parquet(path, task=["A"], reward=[1.0])),
        (b"t-\xff.jsonl", _text('{"task": "A", "reward": 1}\n')),
    ],
    ids=[
        "EnvLoop .json",
        "EnvLoop .jsonl",
        "τ-bench",
        "τ²-bench",
        "Harbor",
        "CSV",
        "Parquet",
        "JSONL table",
    ],
)
def test_path_not_utf8_is_refused_by_every_loader(
    loaded: enb.Workspace, tmp_path: Path, name: bytes, write: Callable[[Path], Any]
) -> None:
    """DuckDB takes paths as UTF-8 text (it cannot open such a name: the old loaders
    raised a raw UnicodeEncodeError or RuntimeError), so each loader names the path, its
    bad byte written \\xff so that the message prints."""
    source = _not_utf8(tmp_path, name)
    write(source)
    shown = name.decode("utf-8", "backslashreplace")
    byte = next(b for b in name if b >= 0x80)
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError) as info:
        load_job(loaded, source)
    assert str(info.value) == (
        f"{tmp_path}/{shown}: the path is not valid UTF-8 (byte 0x{byte:02x}): {_NOT_UTF8}"
    )
    assert _snapshot(loaded) == before
    with pytest.raises(enb.LoadError, match=re.escape(f"{tmp_path}/{shown}: the path")):
        load_job(loaded, source, format="table", job_id="x")  # with the format given too


def test_names_not_utf8_inside_a_folder(loaded: enb.Workspace, tmp_path: Path) -> None:
    """A Harbor trial folder, or a Parquet file in a hive folder, named with bytes that
    are not UTF-8: named by place (a raw UnicodeEncodeError; DuckDB's "Invalid unicode")."""
    folder = _harbor_copy(tmp_path)
    trial = _not_utf8(folder, b"hello-\xff")
    (folder / "hello-world__E4MNpbM").rename(trial)
    parquet = tmp_path / "runs" / os.fsdecode(b"subset=\xfe") / "a.parquet"
    _parquet(parquet, task=["A"], reward=[1.0])
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError) as info:
        load_job(loaded, folder)
    assert str(info.value) == (
        f"{folder}, trial hello-\\xff: the folder name is not valid UTF-8 (byte 0xff): the "
        "workspace cannot record it; rename it"
    )
    with pytest.raises(enb.LoadError) as info:
        load_job(loaded, tmp_path / "runs")
    assert str(info.value) == (
        f"{tmp_path / 'runs'}, file subset=\\xfe/a.parquet: the path is not valid UTF-8 "
        "(byte 0xfe): DuckDB cannot open it; rename it"
    )
    assert _snapshot(loaded) == before


# -- hostile numbers (issue 34): a claimed k far beyond the attempts, rewards the exact
# sums cannot hold ------------------------------------------------------------------

_HUGE_K = 2_000_000_000
#: the message of a reward beyond the exact sums' range (after "reward <value> ")
_REWARD_RANGE = (
    r"is out of range: the exact per-task sums take \|reward\| up to 2\^496 "
    r"\(about 2\.05e\+149\)"
)


def envloop_huge_k(tmp: Path) -> Path:
    return _json_doc(tmp, lambda d: d["job"].update(attempts=_HUGE_K))


def envloop_huge_k_jsonl(tmp: Path) -> Path:
    doc = _doc()
    doc["job"]["attempts"] = _HUGE_K
    return to_jsonl(doc, tmp / "run.jsonl")


def _reward(value: float) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        return _json_doc(tmp, lambda d: d["trials"][2].update(reward=value))

    return make


def _reward_jsonl(value: float) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        doc = _doc()
        doc["trials"][2]["reward"] = value
        return to_jsonl(doc, tmp / "run.jsonl")

    return make


def _table_reward(name: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        text = "task,attempt,reward\nA,1,1\nA,2,1e300\nB,1,0\n"
        if name.endswith(".jsonl"):
            text = '{"task": "A", "reward": 1}\n{"task": "A", "reward": -1e300}\n'
        return _text_file(tmp, text, name)

    return make


def _parquet_reward(tmp: Path) -> Path:
    path = tmp / "t.parquet"
    pd.DataFrame({"task": ["A", "A", "B"], "reward": [1.0, 1e300, 0.0]}).to_parquet(path)
    return path


def tau_reward_huge(tmp: Path) -> Path:
    rows = json.loads(TAU_BENCH.read_text())[:5]
    rows[2]["reward"] = 1e300
    path = tmp / "tau.json"
    path.write_text(json.dumps(rows))
    return path


def harbor_reward_huge(tmp: Path) -> Path:
    folder = _harbor_copy(tmp)
    path = folder / "hello-world__E4MNpbM" / "result.json"
    result = json.loads(path.read_text())
    result["verifier_result"]["rewards"]["reward"] = -1e300
    path.write_text(json.dumps(result))
    return folder


def inspect_score_huge(tmp: Path) -> Path:
    source = (
        FIXTURES
        / "inspect"
        / "json"
        / "2026-12-01T07-28-03-00-00_capitals_WfHWhh9mCufEDm9cJmDtKv.json"
    )
    doc = json.loads(source.read_text())
    doc["samples"][0]["scores"]["exact"]["value"] = 1e300
    path = tmp / "log.json"
    path.write_text(json.dumps(doc))
    return path


def _repeated_slot(name: str) -> Callable[[Path], Path]:
    """Twenty rows of one (task, attempt): more than k values in a task's exact sum."""

    def make(tmp: Path) -> Path:
        frame = pd.DataFrame({"task": ["A"] * 20, "attempt": [1] * 20, "reward": [0.9] * 20})
        path = tmp / name
        frame.to_csv(path, index=False) if name.endswith(".csv") else frame.to_parquet(path)
        return path

    return make


HOSTILE_CASES: list[tuple[str, Callable[[Path], Path], dict[str, Any], str]] = [
    (
        "CSV k=1, one slot repeated 20 times",
        _repeated_slot("t.csv"),
        {"k": 1},
        r"t\.csv, task 'A': attempt 1 appears 20 times",
    ),
    (
        "Parquet k=1, one slot repeated 20 times",
        _repeated_slot("t.parquet"),
        {"k": 1},
        r"t\.parquet, task 'A': attempt 1 appears 20 times",
    ),
    (
        "EnvLoop attempts 2e9 with attempts 1..2 present",
        envloop_huge_k,
        {},
        r"bad\.json, \$\.job\.attempts: attempts 2000000000 is far beyond the attempts "
        r"present \(the highest is 2\): at most 10000 is taken \(10000, or 100 × the highest\)",
    ),
    (
        "EnvLoop JSONL attempts 2e9",
        envloop_huge_k_jsonl,
        {},
        r"run\.jsonl, line 1 \$\.job\.attempts: attempts 2000000000 is far beyond",
    ),
    (
        "CSV k=2e9",
        lambda tmp: _text_file(tmp, "task,attempt,reward\nA,1,1\nB,1,0\n"),
        {"k": _HUGE_K},
        r"t\.csv, k: k=2000000000 is far beyond the attempts present \(the highest is 1\)",
    ),
    (
        "EnvLoop reward 1e300",
        _reward(1e300),
        {},
        rf"bad\.json, trials\[2\] \(id tr_3\): reward 1e300 {_REWARD_RANGE}",
    ),
    (
        "EnvLoop reward -1e300 (JSONL)",
        _reward_jsonl(-1e300),
        {},
        rf"run\.jsonl, line 4: reward -1e300 {_REWARD_RANGE}",
    ),
    (
        "CSV reward 1e300",
        _table_reward("t.csv"),
        {},
        rf"t\.csv, line 3: reward 1e\+300 {_REWARD_RANGE}",
    ),
    (
        "table JSONL reward -1e300",
        _table_reward("t.jsonl"),
        {},
        rf"t\.jsonl, line 2: reward -1e300 {_REWARD_RANGE}",
    ),
    (
        "Parquet reward 1e300",
        _parquet_reward,
        {},
        rf"t\.parquet, row 2: reward 1e\+300 {_REWARD_RANGE}",
    ),
    (
        "Parquet in place reward 1e300",
        _parquet_reward,
        {"copy": False},
        rf"t\.parquet, row 2: reward 1e\+300 {_REWARD_RANGE}",
    ),
    (
        "τ-bench reward 1e300",
        tau_reward_huge,
        {},
        rf"tau\.json, \[2\] \(task_id 2, trial 0\): reward 1e\+300 {_REWARD_RANGE}",
    ),
    (
        "Harbor reward -1e300",
        harbor_reward_huge,
        {},
        rf"harbor-job, hello-world__E4MNpbM: reward -1e\+300 {_REWARD_RANGE}",
    ),
    (
        "Inspect score 1e300",
        inspect_score_huge,
        {},
        rf"log\.json, .*: reward 1e\+300 {_REWARD_RANGE}",
    ),
]


@pytest.mark.parametrize(
    ("make", "options", "message"),
    [c[1:] for c in HOSTILE_CASES],
    ids=[c[0] for c in HOSTILE_CASES],
)
def test_hostile_numbers_name_file_and_place_and_change_nothing(
    loaded: enb.Workspace,
    tmp_path: Path,
    make: Callable[[Path], Path],
    options: dict[str, Any],
    message: str,
) -> None:
    source = make(tmp_path)
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError, match=f"/{message}") as info:
        load_job(loaded, source, **options)
    assert str(source) in str(info.value)
    assert _snapshot(loaded) == before


def test_frame_reward_beyond_the_sums_is_refused(loaded: enb.Workspace) -> None:
    frame = pd.DataFrame({"task": ["A", "B"], "reward": [1.0, -1e300]})
    before = _snapshot(loaded)
    with pytest.raises(enb.LoadError, match=rf"row 1: reward -1e\+300 {_REWARD_RANGE}"):
        load_job(loaded, frame, job_id="f")
    assert _snapshot(loaded) == before


def test_running_job_with_nothing_dispatched_keeps_its_k(ws: enb.Workspace, tmp_path: Path) -> None:
    """A claimed k with no attempt present is a job that has not started: it loads."""
    path = _json_doc(tmp_path, lambda d: (d["job"].update(attempts=8), d.update(trials=[])))
    job = load_job(ws, path)
    assert job.k == 8 and job.summary().total == 24
    path = _json_doc(tmp_path, lambda d: d["job"].update(attempts=10_000), "many.json")
    assert load_job(ws, path).k == 10_000  # the floor of the rule: any k up to 10,000


@pytest.mark.parametrize("reward", [1e19, -1e19, 2.0**496, -1e140])
@pytest.mark.parametrize("kind", ["json", "csv", "parquet", "parquet in place"])
def test_large_legit_rewards_load_exactly(
    ws: enb.Workspace, tmp_path: Path, reward: float, kind: str
) -> None:
    """Rewards up to 2^496 load, their task's sums exact (1e19 is beyond int64 unscaled).

    (The sums are fixed-point at one scale per job, set by its largest reward: beside a
    reward of 1e19 another task's reward of 1 rounds to a multiple of 16. Not checked.)"""
    if kind == "json":
        job = load_job(ws, _reward(reward)(tmp_path))
        task, want = "B", reward + 1.0
    else:
        frame = pd.DataFrame({"task": ["A", "A", "B"], "reward": [reward, 0.5, 0.0]})
        path = tmp_path / ("t.csv" if kind == "csv" else "t.parquet")
        frame.to_csv(path, index=False) if kind == "csv" else frame.to_parquet(path)
        job = load_job(ws, path, **({"copy": False} if kind == "parquet in place" else {}))
        task, want = "A", reward + 0.5
    counts = task_counts(job.con, job.id, None)
    row = counts.column("task").to_pylist().index(task)
    assert counts.column("reward_sum")[row].as_py() == want
    assert counts.column("reward_max" if reward > 0 else "reward_min")[row].as_py() == reward


def test_every_loader_refuses_a_claimed_k_far_beyond_its_attempts(tmp_path: Path) -> None:
    """The load's own check, whatever the source: a τ-bench k= or a Harbor job's
    n_attempts of 2e9 (curve() and the views would count up to it) is refused, nothing
    changed; a plausible k beyond the attempts present still loads."""
    import shutil

    from tests.conftest import HARBOR, TAU_BENCH

    ws = enb.open()
    with pytest.raises(
        enb.LoadError,
        match=r"gpt-4o-airline\.json, job: k=20000 is far beyond the attempts present \(the highest is 4\)",
    ):
        ws.load(TAU_BENCH, k=20_000)
    job = next(p for p in sorted(HARBOR.iterdir()) if (p / "config.json").is_file())
    shutil.copytree(job, tmp_path / "job")
    config = tmp_path / "job" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "n_attempts": 2_000_000_000}))
    with pytest.raises(enb.LoadError, match=r"k=2000000000 is far beyond the attempts present"):
        ws.load(tmp_path / "job")
    assert ws.jobs().empty
    assert ws.load(TAU_BENCH, k=400).k == 400
