"""An EnvLoop export's steps, loaded end to end through ``ws.load``: ATIF trajectories a
trial references (``artifacts[]`` ``agent/trajectory.json``) or holds inline
(``trajectory``), else its ChatML ``input`` / ``output``. Counts come from the files."""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders.envloop.steps import read_chatml_steps
from envloop_nb._store.steps import StepWriter
from tests.conftest import EXAMPLES, THREE_TASKS
from tests.test_loaders_envloop import load_job, to_jsonl

DATA = Path(__file__).parent / "data" / "envloop_trajectories"
EXPORT = DATA / "job.json"
INLINE = DATA / "inline.json"
HOSTILE = (
    "<script>alert('x')</script>",
    "'); DROP TABLE steps; --",
    '=HYPERLINK("http://evil.example","click")',
)


def _doc(path: Path = EXPORT) -> dict[str, Any]:
    return json.loads(path.read_text())


def _segments(path: Path) -> list[dict[str, Any]]:
    docs = [json.loads(path.read_text())]
    while docs[-1].get("continued_trajectory_ref"):
        docs.append(json.loads((path.parent / docs[-1]["continued_trajectory_ref"]).read_text()))
    return docs


def _expected(docs: list[dict[str, Any]], here: Path | None) -> dict[str, int]:
    """Counted from the ATIF documents themselves (sub-agent files found beside them)."""
    out = {"calls": 0, "results": 0, "subagents": 0, "missing": 0, "steps": 0, "tokens_in": 0}

    def walk(doc: dict[str, Any], at: Path | None) -> None:
        out["steps"] += len(doc["steps"])
        for step in doc["steps"]:
            out["calls"] += len(step.get("tool_calls") or [])
            out["tokens_in"] += (step.get("metrics") or {}).get("prompt_tokens") or 0
            for result in (step.get("observation") or {}).get("results") or []:
                refs = result.get("subagent_trajectory_ref") or []
                out["subagents"] += len(refs)
                out["results"] += not refs
                for ref in refs:
                    child = at.parent / ref["trajectory_path"] if at else None
                    if child is not None and child.is_file():
                        walk(json.loads(child.read_text()), child)
                    else:
                        out["missing"] += 1

    for doc in docs:
        walk(doc, here)
    return out


def _trajectory(trial: dict[str, Any], export: Path) -> Path:
    (art,) = [a for a in trial["artifacts"] if a["name"] == "agent/trajectory.json"]
    return export.parent / art["uri"]


def _copy(tmp_path: Path) -> Path:
    """The test export and its trial folders, copied where a test may change them."""
    shutil.copytree(DATA, tmp_path / "export")
    return tmp_path / "export" / EXPORT.name


def _steps_of(job: enb.Job, task: str, attempt: int) -> Any:
    return job.steps(task=task, attempt=attempt)


def _jobs(ws: enb.Workspace) -> list[tuple[Any, ...]]:
    return ws.con.execute(
        "SELECT job_id, (SELECT count(*) FROM steps s WHERE s.job_id = j.job_id) FROM jobs j "
        "ORDER BY 1"
    ).fetchall()


# -- ChatML input / output --------------------------------------------------------------


def _chatml_rows(trial: dict[str, Any]) -> int:
    """Rows a ChatML trial gives, counted from the file: a string input is one message, a
    list one per plain message; the output one more (none when null)."""
    value = trial.get("input")
    n = 1 if isinstance(value, str) else len(value or [])
    return n + (trial.get("output") is not None)


@pytest.mark.parametrize("form", ["json", "jsonl", "jsonl.gz"])
def test_the_example_loads_with_chatml_steps(ws: enb.Workspace, tmp_path: Path, form: str) -> None:
    doc = _doc(THREE_TASKS)
    source = THREE_TASKS if form == "json" else to_jsonl(doc, tmp_path / f"job.{form}")
    job = load_job(ws, source)
    s = job.steps()
    assert len(s) == sum(_chatml_rows(t) for t in doc["trials"]) == 11
    for t in doc["trials"]:
        rows = _steps_of(job, t["task"], t["attempt"])
        assert len(rows) == _chatml_rows(t)
        assert rows["step"].tolist() == list(range(1, len(rows) + 1))
        inputs = [t["input"]] if isinstance(t["input"], str) else [m["content"] for m in t["input"]]
        outputs = [] if t["output"] is None else [t["output"]]
        assert rows["content"].tolist() == inputs + outputs  # "" kept: the attempt said nothing
        assert rows["role"].tolist()[-1] == ("assistant" if outputs else "user")
    assert s["tokens_in"].isna().all()  # the trial's usage is the attempt's, not a turn's
    place = "trials[0]" if form == "json" else "line 2 $"
    assert _steps_of(job, "A", 1)["source_place"].tolist() == [
        f"{source.name}, {place}.input",
        f"{source.name}, {place}.output",
    ]
    extra = job.info["extra"]["steps"]
    assert extra["source"] == "chatml"
    assert extra["attempts_with_steps"] == 6 and extra["attempts_without"] == 0
    assert extra["skipped"] == 0


def _rows(con: Any, job_id: str) -> list[dict[str, Any]]:
    rows = (
        con.execute(
            "SELECT * EXCLUDE (job_id) FROM steps WHERE job_id = ? ORDER BY task, attempt, step",
            [job_id],
        )
        .to_arrow_table()
        .to_pylist()
    )
    for row in rows:
        row["extra"] = json.loads(row["extra"]) if row["extra"] else None
    return rows


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_the_chatml_sql_path_writes_what_the_reader_writes(
    ws: enb.Workspace, tmp_path: Path, form: str
) -> None:
    """Plain messages are written in SQL; the Python reader is the reference."""
    doc = _doc(THREE_TASKS)
    doc["trials"][2]["input"] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": HOSTILE[1], "name": "bob"},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "\u00e9t\u00e9 \U0001f600 ''"},
        {"role": "developer", "content": "Python path: a role the SQL path leaves alone"},
    ]
    doc["trials"][3]["input"] = []
    doc["trials"][1]["input"] = doc["trials"][1]["output"] = None
    doc["trials"][0]["input"] = ""
    path = tmp_path / f"job.{form}"
    if form == "json":
        path.write_text(json.dumps(doc))
    else:
        to_jsonl(doc, path)
    got = _rows(ws.con, load_job(ws, path).id)
    ref = enb.open()
    job = load_job(ref, THREE_TASKS, steps=False)
    w = StepWriter(ref.con, job.id)
    for i, t in enumerate(doc["trials"]):
        place = f"trials[{i}]" if form == "json" else f"line {i + 2} $"
        read_chatml_steps(
            w, task=t["task"], attempt=t["attempt"], input=t["input"], output=t["output"],
            source=path.name, place=place,
        )  # fmt: skip
    w.close()
    assert got == _rows(ref.con, job.id)
    assert len(got) == 2 + 0 + 6 + 1 + 2 + 1


def test_an_export_without_inputs_or_outputs_says_why_there_are_no_steps(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    doc = _doc(THREE_TASKS)
    for t in doc["trials"]:
        t["input"] = t["output"] = None
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    job = load_job(ws, path)
    assert job.steps().empty
    extra = job.info["extra"]["steps"]
    assert extra["source"] is None and "no trial" in extra["why"]


# -- ATIF trajectories the trials reference ----------------------------------------------


def _assert_trajectory(
    job: enb.Job, trial: dict[str, Any], docs: list[dict[str, Any]], here: Path | None
) -> None:
    rows = _steps_of(job, trial["task"], trial["attempt"])
    want = _expected(docs, here)
    kinds = rows["kind"].value_counts().to_dict()
    assert kinds.get("tool_call", 0) == want["calls"]
    assert kinds.get("tool_result", 0) == want["results"]
    assert kinds.get("subagent", 0) == want["subagents"]
    assert rows["tokens_in"].sum() == want["tokens_in"]
    assert rows["step"].tolist() == list(range(1, len(rows) + 1))
    own = rows[rows["agent"].isna()]
    assert own["turn"].max() == sum(len(d["steps"]) for d in docs)  # the segments' steps


@pytest.mark.parametrize("form", ["json", "jsonl", "jsonl.gz"])
def test_an_export_referencing_atif_files_loads_with_their_steps(
    ws: enb.Workspace, tmp_path: Path, form: str
) -> None:
    doc = _doc()
    source = EXPORT
    if form != "json":  # beside the trial folders, so the relative uris resolve
        source = to_jsonl(doc, _copy(tmp_path).with_name(f"job.{form}"))
    job = load_job(ws, source)
    for trial in doc["trials"][:3]:
        path = _trajectory(trial, EXPORT)
        _assert_trajectory(job, trial, _segments(path), path)
    # linear-history: its continuation followed, its three sub-agents absent (parent whole)
    lh = _steps_of(job, "hello-world", 1)
    assert lh["source_place"].str.startswith("trajectory.cont-1.json").any()
    missing = lh[lh["kind"] == "subagent"]["extra"].map(json.loads)
    assert [m.get("missing") for m in missing] == [True, True, True]
    # context-summarization: the sub-agents' own rows follow their hand-off
    cs = _steps_of(job, "hello-world", 2)
    assert set(cs["agent"].dropna()) == {
        "terminus-2-summarization-summary",
        "terminus-2-summarization-questions",
        "terminus-2-summarization-answers",
    }
    # the ChatML trial beside them
    chat = _steps_of(job, "hello-invalid-json", 2)
    assert chat["kind"].tolist() == ["message", "message", "tool_call", "tool_result", "message"]
    assert chat["call_id"].tolist()[2:4] == ["call_1", "call_1"]
    extra = job.info["extra"]["steps"]
    assert extra["source"] == "atif+chatml"
    assert (extra["atif"], extra["chatml"]) == (3, 1)
    assert extra["attempts_with_steps"] == 4 and extra["skipped"] == 0
    assert extra["missing_subagents"] == 3


def test_a_file_uri_is_read(ws: enb.Workspace, tmp_path: Path) -> None:
    export = _copy(tmp_path)
    doc = _doc(export)
    art = doc["trials"][2]["artifacts"][0]
    art["uri"] = (export.parent / art["uri"]).resolve().as_uri()
    export.write_text(json.dumps(doc))
    job = load_job(ws, export)
    path = _trajectory(_doc()["trials"][2], EXPORT)
    _assert_trajectory(job, doc["trials"][2], _segments(path), path)


def test_an_inline_trajectory_loads_with_its_steps(ws: enb.Workspace) -> None:
    doc = _doc(INLINE)
    job = load_job(ws, INLINE)
    for trial in doc["trials"]:
        _assert_trajectory(job, trial, [trial["trajectory"]], None)
    oh = _steps_of(job, "hello-world", 1)
    calls = oh[oh["kind"] == "tool_call"]
    assert calls["tool"].tolist() == [
        c["function_name"]
        for s in doc["trials"][0]["trajectory"]["steps"]
        for c in s.get("tool_calls") or []
    ]
    assert oh["source_place"].iloc[0] == "inline.json, trials[0].trajectory, steps[0]"
    extra = job.info["extra"]["steps"]
    assert extra["source"] == "atif" and extra["atif"] == 2


def test_final_metrics_and_step_sums_are_compared(ws: enb.Workspace) -> None:
    job = load_job(ws, EXPORT)
    extra = job.info["extra"]["steps"]
    # Harbor's final_metrics count sub-agents and copied context: the step rows hold both
    # for context-summarization; linear-history's sub-agents are absent, so it differs
    assert extra["final_metrics_differ"] == 1
    assert extra["final_metrics_first_differs"].startswith("trials[0]")


# -- bad input ---------------------------------------------------------------------------


def test_a_missing_referenced_file_names_export_trial_and_uri(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    ws.load(THREE_TASKS)
    before = _jobs(ws)
    export = _copy(tmp_path)
    (export.parent / "trials" / "tr_3" / "agent" / "trajectory.json").unlink()
    with pytest.raises(enb.LoadError) as err:
        ws.load(export)
    msg = str(err.value)
    assert str(export) in msg and "trials[2]" in msg
    assert "trials/tr_3/agent/trajectory.json" in msg and "missing" in msg
    assert _jobs(ws) == before


def test_a_missing_continuation_fails_the_load(ws: enb.Workspace, tmp_path: Path) -> None:
    export = _copy(tmp_path)
    (export.parent / "trials" / "tr_1" / "agent" / "trajectory.cont-1.json").unlink()
    with pytest.raises(enb.LoadError, match=r"trajectory\.json, continued_trajectory_ref.*missing"):
        ws.load(export)
    assert _jobs(ws) == []


def test_an_unreadable_uri_scheme_is_an_error(ws: enb.Workspace, tmp_path: Path) -> None:
    export = _copy(tmp_path)
    doc = _doc(export)
    doc["trials"][0]["artifacts"][0]["uri"] = "artifact://job_traj01/tr_1/agent/trajectory.json"
    export.write_text(json.dumps(doc))
    with pytest.raises(enb.LoadError, match=r"trials\[0\].*artifact://.*a path relative"):
        ws.load(export)


def _bad_step(export: Path) -> Path:
    """tr_3's trajectory with its third step out of sequence."""
    path = export.parent / "trials" / "tr_3" / "agent" / "trajectory.json"
    traj = json.loads(path.read_text())
    traj["steps"][2]["step_id"] = 7
    path.write_text(json.dumps(traj))
    return path


def test_a_bad_step_fails_naming_the_file_and_step(ws: enb.Workspace, tmp_path: Path) -> None:
    ws.load(THREE_TASKS)
    before = _jobs(ws)
    export = _copy(tmp_path)
    path = _bad_step(export)
    with pytest.raises(enb.LoadError) as err:
        ws.load(export)
    assert str(err.value).startswith(f"{path}, steps[2]: step_id 7 out of sequence")
    assert "trials[2]" in str(err.value)  # and which trial of the export
    assert _jobs(ws) == before


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_lenient_skips_a_bad_trajectory_and_counts_it(
    ws: enb.Workspace, tmp_path: Path, form: str
) -> None:
    export = _copy(tmp_path)
    _bad_step(export)
    if form == "jsonl":
        export = to_jsonl(_doc(export), export.with_name("job.jsonl"))
    with pytest.warns(enb.LoadWarning, match=r"steps of 1 attempt\(s\).*steps\[2\]"):
        job = load_job(ws, export, lenient=True)
    assert _steps_of(job, "hello-invalid-json", 1).empty  # none of its rows, not a part
    assert len(job.attempts()) == 4  # the attempt itself is kept
    assert not _steps_of(job, "hello-world", 1).empty
    extra = job.info["extra"]["steps"]
    assert extra["skipped"] == 1 and extra["attempts_without"] == 1
    assert extra["attempts_with_steps"] == 3


def test_a_bad_chatml_message_fails_and_lenient_counts_it(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    doc = _doc(THREE_TASKS)
    doc["trials"][4]["input"] = [{"role": "narrator", "content": "Once upon a time"}]
    path = tmp_path / "job.jsonl.gz"
    to_jsonl(doc, path)
    with pytest.raises(
        enb.LoadError, match=r"job\.jsonl\.gz, line 6 \$\.input\[0\]: unknown role 'narrator'"
    ):
        ws.load(path)
    assert _jobs(ws) == []
    with pytest.warns(enb.LoadWarning, match="steps of 1 attempt"):
        job = load_job(ws, path, lenient=True)
    assert _steps_of(job, "C", 1).empty and len(job.steps()) == 11 - 2


def test_an_inline_trajectory_that_is_not_atif_is_named(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc(INLINE)
    doc["trials"][1]["trajectory"] = {"steps": []}
    path = tmp_path / "inline.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(enb.LoadError, match=r"inline\.json, trials\[1\]\.trajectory.*ATIF"):
        ws.load(path)


def test_reload_replaces_the_steps(ws: enb.Workspace) -> None:
    first = len(load_job(ws, EXPORT).steps())
    job = load_job(ws, EXPORT)
    assert len(job.steps()) == first
    assert first == ws.con.execute("SELECT count(*) FROM steps").fetchone()[0]


def test_hostile_content_stays_text(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc(INLINE)
    traj = copy.deepcopy(doc["trials"][0]["trajectory"])
    step = next(s for s in traj["steps"] if s.get("tool_calls"))
    step["tool_calls"][0]["arguments"] = {"command": HOSTILE[1], "path": HOSTILE[0]}
    step["observation"]["results"][0]["content"] = HOSTILE[2]
    doc["trials"][0]["trajectory"] = traj
    doc["trials"][1].pop("trajectory")
    doc["trials"][1]["input"] = [{"role": "user", "content": h} for h in HOSTILE]
    doc["trials"][1]["output"] = HOSTILE[0]
    path = tmp_path / "job.jsonl.gz"
    to_jsonl(doc, path)
    job = load_job(ws, path)
    s = job.steps()
    call = s[s["kind"] == "tool_call"].iloc[0]
    assert json.loads(call["arguments"]) == {"command": HOSTILE[1], "path": HOSTILE[0]}
    assert HOSTILE[2] in s[s["kind"] == "tool_result"]["content"].tolist()
    assert _steps_of(job, "hello-world", 2)["content"].tolist() == [*HOSTILE, HOSTILE[0]]
    assert ws.con.execute("SELECT count(*) FROM steps").fetchone()[0] == len(s)


def test_steps_false_loads_no_steps_and_says_so(ws: enb.Workspace) -> None:
    job = load_job(ws, EXPORT, steps=False)
    assert job.steps().empty
    assert len(job.attempts()) == 4
    extra = job.info["extra"]["steps"]
    assert extra["source"] is None and "steps=False" in extra["why"]


def test_every_example_job_export_loads_with_steps(ws: enb.Workspace) -> None:
    for path in sorted(EXAMPLES.glob("*.json")):
        doc = json.loads(path.read_text())
        if "trials" not in doc:
            continue  # an experiment export, not a job
        job = load_job(ws, path)
        assert len(job.steps()) == sum(
            _chatml_rows(t)
            for t in doc["trials"]
            if t.get("input") is None or isinstance(t["input"], (str, list))
        )


def test_gzip_export_with_trajectory_files(ws: enb.Workspace, tmp_path: Path) -> None:
    export = _copy(tmp_path)
    gz = export.with_name("job.jsonl.gz")
    to_jsonl(_doc(export), gz)
    with gzip.open(gz, "rt") as f:
        assert len(f.read().splitlines()) == 5
    job = load_job(ws, gz)
    assert set(map(tuple, job.steps()[["task", "attempt"]].drop_duplicates().values.tolist())) == {
        ("hello-world", 1),
        ("hello-world", 2),
        ("hello-invalid-json", 1),
        ("hello-invalid-json", 2),
    }
