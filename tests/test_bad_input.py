"""Bad input: every malformed source gives a clear LoadError naming the file and the
place, and a failed load leaves the workspace exactly as it was."""

from __future__ import annotations

import copy
import gzip
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import envloop_nb as enb
from tests.conftest import HARBOR, TAU_BENCH, THREE_TASKS
from tests.test_loaders_envloop import load_job, to_jsonl

TABLES = ["jobs", "tasks", "task_tags", "attempts", "dimensions", "dimension_meta"]
CURRENT = HARBOR / "2026-03-02__14-05-11"


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
