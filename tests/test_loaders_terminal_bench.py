"""Terminal-Bench 1 ``results.json``: a fixture written by the harness's own models
(``tests/data/terminal_bench/make_fixture.py``; the tests only read its JSON)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format
from tests.conftest import ROOT
from tests.test_loaders_envloop import load_job

RUN = "2025-06-01__12-00-00_terminus_claude-sonnet-4"
TB = ROOT / "tests" / "data" / "terminal_bench" / RUN / "results.json"
DOC: dict[str, Any] = json.loads(TB.read_text())
JOB_ID = f"terminal-bench:{RUN}"


def _load(ws: enb.Workspace, path: Path = TB, **options: Any) -> enb.Job:
    return load_job(ws, path, format="terminal-bench", **options)


def _write(tmp_path: Path, doc: Any, folder: str = RUN) -> Path:
    path = tmp_path / folder / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4))
    return path


def _doc() -> dict[str, Any]:
    return copy.deepcopy(DOC)


def _index(doc: dict[str, Any], trial_name_start: str) -> int:
    """The position in ``results`` of the trial whose name starts so."""
    return next(
        i for i, t in enumerate(doc["results"]) if t["trial_name"].startswith(trial_name_start)
    )


def test_detected_and_counted(ws: enb.Workspace) -> None:
    assert detect_format(TB) == "terminal-bench"
    job = load_job(ws, TB)  # detected
    assert job.id == JOB_ID
    assert job.k == 3
    tasks = job.tasks()["task"].tolist()
    assert tasks == sorted({t["task_id"] for t in DOC["results"]})
    assert len(tasks) == 6 and "crack-7z-hash.hard" in tasks and "crack-7z-hash" in tasks
    a = job.attempts()
    assert len(a) == len(DOC["results"]) == 18
    assert a.groupby("task")["attempt"].apply(sorted).map(tuple).unique().tolist() == [(1, 2, 3)]
    info = job.info
    assert info["source_format"] == "terminal-bench"
    assert info["dataset_name"] is None


def test_verdicts_null_is_invalid_not_zero(ws: enb.Workspace) -> None:
    job = _load(ws)
    a = job.attempts().set_index("trial_id")
    for t in DOC["results"]:
        row = a.loc[t["id"]]
        name = t["trial_name"]
        assert row["attempt"] == int(name.removeprefix(t["task_id"] + ".").split("-of-")[0])
        if t["is_resolved"] is None:
            assert row["status"] == "failed" and math.isnan(row["reward"]), name
            assert row["error_type"] == t["failure_mode"], name
        else:
            assert row["status"] == "completed" and row["reward"] == float(t["is_resolved"])
            expected = None if t["failure_mode"] == "unset" else t["failure_mode"]
            assert (row["error_type"] if isinstance(row["error_type"], str) else None) == expected
    nulls = a[a["status"] == "failed"]
    assert sorted(nulls["error_type"]) == ["agent_timeout", "parse_error", "test_timeout"]
    # an agent timeout whose tests still ran keeps its verdict (0) and its error type
    timed_out = a[(a["error_type"] == "agent_timeout") & (a["status"] == "completed")]
    assert timed_out["reward"].tolist() == [0.0]
    s = job.summary()  # the default policy: a trial without verdict is unknown
    assert (s.total, s.scored, s.invalid, s.missing) == (18, 15, 3, 3)
    assert s.score == 8 / 15


def test_attempt_fields(ws: enb.Workspace) -> None:
    job = _load(ws)
    a = job.attempts().set_index("trial_id")
    for t in DOC["results"]:
        row = a.loc[t["id"]]
        assert row["input_tokens"] == t["total_input_tokens"]
        assert row["output_tokens"] == t["total_output_tokens"]
        assert row["input"] == t["instruction"] and not row["input_is_chat"]
        assert json.loads(row["artifacts"]) == {"recording_path": t["recording_path"]}
        extra = json.loads(row["extra"])
        assert extra.get("parser_results") == t["parser_results"]
        assert extra["trial_name"] == t["trial_name"]
        assert extra["failure_mode"] == t["failure_mode"]
        assert row["duration_s"] == 360.0
        assert row["source_place"].endswith(f"({t['trial_name']})")


def test_job_from_folder_name(ws: enb.Workspace, tmp_path: Path) -> None:
    info = _load(ws).info
    assert info["model"] == "claude-sonnet-4"
    assert info["runner"] == info["extra"]["agent"] == "terminus"
    assert info["extra"]["run_date"] == "2025-06-01__12-00-00"
    assert info["extra"]["run_id"] == "2025-06-01__12-00-00"  # the trial names' suffix
    assert str(info["created_at"]).startswith("2025-06-01 12:07:00")
    job = _load(
        ws, job_id="mine", model="other", dataset="terminal-bench-core", dataset_version="0.1.1"
    )
    assert (job.id, job.info["model"], job.info["dataset_version"]) == ("mine", "other", "0.1.1")
    # the leaderboard layout: <date>_<agent>_<model>/run1_<date>/results.json
    path = _write(tmp_path, DOC, "20250811_cursor-cli_claude-4-sonnet/run1_2025-08-10__05-27-18")
    job = _load(ws, path)
    assert job.id == "terminal-bench:run1_2025-08-10__05-27-18"
    assert (job.info["runner"], job.info["model"]) == ("cursor-cli", "claude-4-sonnet")
    plain = _load(ws, _write(tmp_path, DOC, "my-run"))
    assert plain.id == "terminal-bench:my-run"
    assert (plain.info["runner"], plain.info["model"]) == (None, None)


def test_failure_policy_reproduces_accuracy(ws: enb.Workspace) -> None:
    job = _load(ws)
    s = job.summary(policy="failure")
    assert s.score == DOC["accuracy"]
    assert s.scored + s.invalid == DOC["n_resolved"] + DOC["n_unresolved"]
    curve = job.curve(policy="failure").set_index("k")
    assert curve.loc[2, "pass@k"] == pytest.approx(DOC["pass_at_k"]["2"], rel=1e-12)


def test_source_numbers_and_platform_block(ws: enb.Workspace) -> None:
    info = _load(ws).info
    nums = {n["metric"]: n for n in info["extra"]["source_numbers"]}
    assert list(nums) == ["accuracy", "pass@2", "n_resolved", "n_unresolved"]
    assert nums["accuracy"]["source"] == DOC["accuracy"]
    assert nums["pass@2"]["source"] == DOC["pass_at_k"]["2"]
    assert nums["n_resolved"]["source"] == DOC["n_resolved"] == 8
    assert nums["n_unresolved"]["source"] == DOC["n_unresolved"] == 10
    assert {n["policy"] for n in nums.values()} == {"failure"}
    assert (nums["accuracy"]["reducer"], nums["accuracy"]["statistic"]) == ("none", "mean")
    assert (nums["pass@2"]["reducer"], nums["pass@2"]["k"]) == ("pass_at", 2)
    assert nums["n_resolved"]["statistic"] == "passed"
    assert nums["n_unresolved"]["statistic"] == "not_passed"
    assert all(n["of"] == "reward" and n["threshold"] is None for n in nums.values())
    assert info["platform_metrics"] == {k: v for k, v in DOC.items() if k != "results"}


def test_every_source_number_agrees(ws: enb.Workspace) -> None:
    agreement = pytest.importorskip("envloop_nb._metrics.agreement")
    job = _load(ws)
    method = getattr(job, "source_agreement", None)
    frame = method() if method else agreement.agreement_frame(job.con, job.id)
    assert len(frame) == 4
    assert frame["agrees"].tolist() == [True] * 4, frame[["metric", "source", "recomputed"]]


def _bad_name(doc: dict[str, Any]) -> str:
    i = _index(doc, "fix-git.2-of-3")
    doc["results"][i]["trial_name"] = "fix-git.second-try"
    return f"results[{i}].trial_name"


def _other_task(doc: dict[str, Any]) -> str:
    i = _index(doc, "fix-git.2-of-3")
    doc["results"][i]["trial_name"] = "hello-world.2-of-3"
    return f"results[{i}].trial_name"


def _mismatched_n(doc: dict[str, Any]) -> str:
    i = _index(doc, "play-zork.3-of-3")
    doc["results"][i]["trial_name"] = "play-zork.3-of-4.2025-06-01__12-00-00"
    return f"results[{i}].trial_name"


def _duplicate(doc: dict[str, Any]) -> str:
    i, first = _index(doc, "fix-git.2-of-3"), _index(doc, "fix-git.1-of-3")
    doc["results"][i]["trial_name"] = doc["results"][i]["trial_name"].replace("2-of-3", "1-of-3")
    return f"results[{max(i, first)}].trial_name"


def _attempt_zero(doc: dict[str, Any]) -> str:
    doc["results"][0]["trial_name"] = doc["results"][0]["task_id"] + ".0-of-3"
    return "results[0].trial_name"


def _verdict_text(doc: dict[str, Any]) -> str:
    doc["results"][4]["is_resolved"] = "yes"
    return "results[4].is_resolved"


def _tokens(doc: dict[str, Any]) -> str:
    doc["results"][5]["total_input_tokens"] = -3
    return "results[5].total_input_tokens"


def _no_task(doc: dict[str, Any]) -> str:
    del doc["results"][6]["task_id"]
    return "results[6].task_id"


def _accuracy(doc: dict[str, Any]) -> str:
    doc["accuracy"] = "44%"
    return "$.accuracy"


def _results(doc: dict[str, Any]) -> str:
    doc["results"] = {"a": 1}
    return "$.results"


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (_bad_name, "is not '<task_id>.<i>-of-<n>'"),
        (_other_task, "for task_id 'fix-git'"),
        (_mismatched_n, "says 4 attempts per task"),
        (_duplicate, "appears twice"),
        (_attempt_zero, "attempt 0 is outside 1..3"),
        (_verdict_text, "expected true, false or null"),
        (_tokens, "expected an integer >= 0"),
        (_no_task, "expected a non-empty string"),
        (_accuracy, "expected a finite number"),
        (_results, "expected an array of trials"),
    ],
)
def test_bad_input_names_file_and_place(
    ws: enb.Workspace, tmp_path: Path, spoil: Any, says: str
) -> None:
    doc = _doc()
    place = spoil(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(enb.LoadError) as err:
        _load(ws, path)
    assert err.value.source == str(path)
    assert err.value.place == place
    assert says in err.value.problem
    assert str(path) in str(err.value) and place in str(err.value)


def test_failed_load_leaves_workspace_unchanged(ws: enb.Workspace, tmp_path: Path) -> None:
    job = _load(ws, _write(tmp_path, DOC))
    before = job.attempts()
    tables = {
        t: ws.con.execute(f"SELECT count(*) FROM {t}").fetchone()
        for t in ("jobs", "tasks", "attempts")
    }
    doc = _doc()
    _duplicate(doc)
    bad = _write(tmp_path / "bad", doc)
    with pytest.raises(enb.LoadError):
        _load(ws, bad)  # the same job id: a reload that fails must not delete the old rows
    assert {t: ws.con.execute(f"SELECT count(*) FROM {t}").fetchone() for t in tables} == tables
    after = ws.job(JOB_ID).attempts()
    assert after.equals(before)


def test_mismatched_n_with_k_and_uneven_counts_warn(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc()
    _mismatched_n(doc)
    with pytest.warns(enb.LoadWarning, match="uneven attempt counts"):
        job = _load(ws, _write(tmp_path, doc), k=4)
    assert job.k == 4
    doc = _doc()
    del doc["results"][_index(doc, "fix-git.3-of-3")]
    with pytest.warns(enb.LoadWarning, match=r"1 of 6 with fewer than k=3: fix-git: 2"):
        job = _load(ws, _write(tmp_path, doc))
    assert (job.k, len(job.attempts())) == (3, 17)
    with pytest.raises(enb.LoadError, match="attempt 3 is out of range: k=2"):
        _load(ws, TB, k=2)
    with pytest.raises(enb.LoadError, match="k: expected an integer"):
        _load(ws, TB, k=0)


def test_spec_trial_names_and_uuid_field(ws: enb.Workspace, tmp_path: Path) -> None:
    """The spec's form: ``<task_id>.<i>-of-<n>`` without a run id, trial id in ``uuid``."""
    doc = _doc()
    for t in doc["results"]:
        t["trial_name"] = t["trial_name"].removesuffix(".2025-06-01__12-00-00")
        t["uuid"] = t.pop("id")
    job = _load(ws, _write(tmp_path, doc))
    assert (job.k, len(job.attempts())) == (3, 18)
    assert set(job.attempts()["trial_id"]) == {t["uuid"] for t in doc["results"]}
    assert job.info["extra"]["run_id"] is None


def test_lenient_skips_bad_trials(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc()
    _bad_name(doc)
    _verdict_text(doc)
    path = _write(tmp_path, doc)
    with pytest.warns(enb.LoadWarning) as caught:
        job = _load(ws, path, lenient=True)
    messages = [str(w.message) for w in caught]
    assert any("skipped 2 unusable trial(s)" in m for m in messages)
    assert len(job.attempts()) == 16


# The public leaderboard's layouts (``tests/data/terminal_bench_leaderboard``): several
# runs renamed ``<run id>_results.json`` in one folder, and a run folder whose
# ``run_metadata.json`` (the harness's ``RunMetadata``) sits beside ``results.json``.
LB = ROOT / "tests" / "data" / "terminal_bench_leaderboard"
GOOSE = LB / "20250829_goose_claude-4-opus"
OPENHANDS = LB / "20250711_openhands_claude-4-sonnet" / "openhands-sonnet"
META: dict[str, Any] = json.loads((OPENHANDS / "run_metadata.json").read_text())


def test_renamed_results_of_one_folder_are_one_job_each(ws: enb.Workspace, tmp_path: Path) -> None:
    first, second = sorted(GOOSE.glob("*_results.json"))
    a, b = _load(ws, first), _load(ws, second)
    assert a.id == "terminal-bench:20250829_goose_claude-4-opus@2025-08-27__22-13-13"
    assert b.id == "terminal-bench:20250829_goose_claude-4-opus@2025-08-29__07-37-19"
    assert sorted(ws.jobs()["job_id"]) == [a.id, b.id]  # the second replaced nothing
    assert a.summary(policy="failure").score == 1 / 3
    assert b.summary(policy="failure").score == 2 / 3
    assert (a.info["runner"], a.info["model"]) == ("goose", "claude-4-opus")
    assert _load(ws, first).id == a.id  # stable: the same file again is a reload
    assert len(ws.jobs()) == 2
    # goose's Sonnet submission writes ``<run id>__results.json``
    other = tmp_path / "20250829_goose_claude-4-sonnet" / "2025-08-25__12-29-38__results.json"
    other.parent.mkdir()
    other.write_text(first.read_text())
    assert (
        _load(ws, other).id == "terminal-bench:20250829_goose_claude-4-sonnet@2025-08-25__12-29-38"
    )


def test_run_metadata_gives_dataset_model_agent_and_k(ws: enb.Workspace) -> None:
    job = _load(ws, OPENHANDS)
    info = job.info
    assert job.id == "terminal-bench:openhands-sonnet"
    assert (info["dataset_name"], info["dataset_version"]) == ("terminal-bench-core", "0.1.1")
    assert info["model"] == META["model_name"]  # not the folder's "claude-4-sonnet"
    assert info["runner"] == info["extra"]["agent"] == "openhands"
    assert job.k == META["n_attempts"] == 2
    assert info["extra"]["run_id"] == "openhands-sonnet"
    assert info["extra"]["run_uuid"] == META["uuid"]
    assert str(info["created_at"]).startswith("2025-07-11 18:59:52")
    assert str(info["finished_at"]).startswith("2025-07-11 22:32:55")
    assert job.tasks()["task"].tolist() == sorted(META["task_ids"])
    assert job.source_agreement()["agrees"].tolist() == [True] * 4
    # the options still win over the file
    with pytest.warns(enb.LoadWarning, match="fewer than k=3"):
        mine = _load(ws, OPENHANDS, job_id="x", model="m", dataset="d", dataset_version="v", k=3)
    assert (mine.info["model"], mine.info["dataset_name"], mine.info["dataset_version"]) == (
        "m",
        "d",
        "v",
    )
    assert mine.k == 3


def _run(tmp_path: Path, meta: Any, name: str = "run") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.json").write_text((OPENHANDS / "results.json").read_text())
    text = meta if isinstance(meta, str) else json.dumps(meta, indent=4)
    (folder / "run_metadata.json").write_text(text)
    return folder


def test_run_metadata_lets_the_guard_see_one_frozen_dataset(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    a = _load(ws, OPENHANDS)
    b = _load(ws, _run(tmp_path, META, "same"))
    assert not [d for d in ws.compare([a, b]).differences if d.field == "dataset"]
    c = _load(ws, _run(tmp_path, {**META, "dataset_version": "0.1.0"}, "older"))
    found = [d for d in ws.compare([a, c]).differences if d.field == "dataset"]
    assert [(d.jobs, d.blocking) for d in found] == [((a.id, c.id), True)]


def test_run_metadata_task_ids_are_the_requested_tasks(ws: enb.Workspace, tmp_path: Path) -> None:
    more = {**META, "task_ids": [*META["task_ids"], "never-ran"]}
    with pytest.warns(enb.LoadWarning, match="fewer than k=2: never-ran: 0"):
        job = _load(ws, _run(tmp_path, more))
    assert "never-ran" in job.tasks()["task"].tolist()
    s = job.summary()
    assert (s.total_members, s.total, s.missing) == (4, 8, 2)  # missing, never 0
    short = {**META, "task_ids": META["task_ids"][:2]}
    folder = _run(tmp_path, short, "short")
    with pytest.raises(enb.LoadError, match=r"crack-7z-hash\.hard.* not among") as err:
        _load(ws, folder)
    assert err.value.source == str(folder / "run_metadata.json")
    assert err.value.place == "$.task_ids"


@pytest.mark.parametrize(
    ("meta", "place", "says"),
    [
        ("[1, 2]", "$", "expected a run_metadata object"),
        ('{"run_id": ', "line 1", ""),
        ({**META, "dataset_name": 5}, "$.dataset_name", "expected a string"),
        ({**META, "model_name": ["m"]}, "$.model_name", "expected a string"),
        ({**META, "agent_name": 1}, "$.agent_name", "expected a string"),
        ({**META, "n_attempts": "2"}, "$.n_attempts", "expected an integer >= 1"),
        ({**META, "n_attempts": 3}, "$.n_attempts", "the trial names say 2"),
        ({**META, "task_ids": "hello-world"}, "$.task_ids", "expected an array"),
        ({**META, "task_ids": ["hello-world", 7]}, "$.task_ids[1]", "expected a non-empty"),
        ({**META, "start_time": "yesterday"}, "$.start_time", "not an RFC 3339 time"),
    ],
)
def test_malformed_run_metadata_names_file_and_key(
    ws: enb.Workspace, tmp_path: Path, meta: Any, place: str, says: str
) -> None:
    folder = _run(tmp_path, meta)
    with pytest.raises(enb.LoadError) as err:
        _load(ws, folder)
    assert err.value.source == str(folder / "run_metadata.json")
    assert err.value.place is not None and err.value.place.startswith(place)
    assert says in err.value.problem
    assert ws.jobs().empty
