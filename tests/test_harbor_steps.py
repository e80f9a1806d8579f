"""Harbor jobs load with their trials' ATIF trajectories as steps, end to end through
``ws.load``: the sample runs of two checkpoints, and a real Harbor job folder carrying
Harbor's own trajectory files; what the trajectories' ``final_metrics`` and the trials'
``agent_result`` say against the rows is recorded in ``job.info["extra"]["steps"]``."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._store.steps import check_steps
from tests.conftest import HARBOR, ROOT, SAMPLE_DATA, SHARED

RUNS = SAMPLE_DATA / "agent_runs"
ATIF = SHARED / "fixtures" / "trajectories" / "harbor-atif"
REAL_JOB = HARBOR / "2026-03-02__14-05-11"
#: A Harbor job of two agent/model combinations.
MULTI = ROOT / "tests" / "data" / "harbor_multi" / "2026-03-04__10-00-00"
#: The top-level trajectory files (continuations and sub-agent files go beside them).
FIXTURES = (
    "openhands/hello-world.trajectory.json",
    "openhands/hello-world.trajectory.no_function_calling.json",
    "terminus_2/context-summarization/trajectory.json",
    "terminus_2/hello-world-invalid-json.trajectory.json",
    "terminus_2/hello-world-timeout.trajectory.json",
    "terminus_2/linear-history/trajectory.json",
    "v1.5/hello-world-invalid-json.trajectory.json",
)


# -- counted from the files themselves ---------------------------------------------------------


def _segments(path: Path) -> list[dict[str, Any]]:
    docs = [json.loads(path.read_text())]
    while docs[-1].get("continued_trajectory_ref"):
        docs.append(json.loads((path.parent / docs[-1]["continued_trajectory_ref"]).read_text()))
    return docs


def _expected(path: Path) -> dict[str, int]:
    """Calls, results, sub-agent hand-offs, turns of the attempt's own agent and prompt
    tokens of a trajectory (its continuations and the sub-agent files found beside it)."""
    out = {"tool_call": 0, "tool_result": 0, "subagent": 0, "turns": 0, "tokens_in": 0}

    def walk(doc: dict[str, Any], own: bool) -> None:
        out["turns"] += len(doc["steps"]) if own else 0
        for step in doc["steps"]:
            out["tool_call"] += len(step.get("tool_calls") or [])
            out["tokens_in"] += (step.get("metrics") or {}).get("prompt_tokens") or 0
            for result in (step.get("observation") or {}).get("results") or []:
                refs = result.get("subagent_trajectory_ref") or []
                out["subagent"] += len(refs)
                out["tool_result"] += not refs
                for ref in refs:
                    child = path.parent / ref["trajectory_path"]
                    if child.is_file():
                        walk(json.loads(child.read_text()), False)

    for doc in _segments(path):
        walk(doc, True)
    return out


def _counts(steps: Any) -> dict[str, int]:
    own = steps[steps["agent"].isna()]
    kinds = steps["kind"].value_counts().to_dict()
    return {
        "tool_call": int(kinds.get("tool_call", 0)),
        "tool_result": int(kinds.get("tool_result", 0)),
        "subagent": int(kinds.get("subagent", 0)),
        "turns": int(own["turn"].max()),
        "tokens_in": int(steps["tokens_in"].sum()),
    }


def _sample_trials(name: str) -> dict[tuple[str, int], Path]:
    """Trial folders keyed (task, attempt): a task's trials by start time, as Harbor has them."""
    by_task: dict[str, list[tuple[str, Path]]] = {}
    for sub in sorted(p for p in (RUNS / name).iterdir() if p.is_dir()):
        result = json.loads((sub / "result.json").read_text())
        by_task.setdefault(result["task_name"], []).append((result["started_at"], sub))
    return {
        (task, n): sub
        for task, group in by_task.items()
        for n, (_, sub) in enumerate(sorted(group), 1)
    }


@pytest.fixture(scope="module")
def samples() -> Any:
    ws = enb.open()
    yield ws, {name: ws.load(RUNS / name) for name in ("base", "sft-step2000")}
    ws.close()


# -- the sample runs ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["base", "sft-step2000"])
def test_sample_runs_load_every_trials_steps(samples: Any, name: str) -> None:
    ws, jobs = samples
    job = jobs[name]
    check_steps(ws.con, job.id, name)
    steps = job.steps()
    trials = _sample_trials(name)
    assert len(trials) == 36
    assert len(steps.groupby(["task", "attempt"])) == 36
    for (task, attempt), sub in trials.items():
        path = sub / "agent" / "trajectory.json"
        mine = job.steps(task=task, attempt=attempt)
        assert _counts(mine) == _expected(path), (task, attempt)
        assert mine["step"].tolist() == list(range(1, len(mine) + 1))
        assert mine["source_place"].iloc[0] == f"{sub.name}/agent/trajectory.json, steps[0]"
        mine_all = steps[(steps["task"] == task) & (steps["attempt"] == attempt)]
        assert mine_all.reset_index(drop=True).equals(mine.reset_index(drop=True))
    info = job.info["extra"]["steps"]
    assert info["source"] == "atif"
    assert info["file"] == "agent/trajectory.json"
    assert (info["attempts_with_steps"], info["attempts_without"], info["skipped"]) == (36, 0, 0)
    assert info["rows"] == len(steps)
    assert info["schema_versions"] == {"ATIF-v1.7": 36}
    # the generator writes final_metrics as the steps' sums and the trial's agent_result alike
    for key in ("final_metrics_vs_steps", "agent_result_vs_steps", "agent_result_vs_final_metrics"):
        assert info[key] == {"agree": 36, "differ": 0, "not_compared": 0}, key


def test_sample_runs_steps_find_the_built_in_loops_and_errors(samples: Any) -> None:
    _, jobs = samples
    base, sft = jobs["base"], jobs["sft-step2000"]
    loops = base.action_patterns().loops
    looping = sorted({(t, int(a)) for t, a in zip(loops["task"], loops["attempt"], strict=True)})
    assert looping == [
        ("make-static-binary", 1),
        ("openssl-selfsigned-cert", 1),
        ("openssl-selfsigned-cert", 2),
        ("openssl-selfsigned-cert", 3),
        ("parse-nginx-logs", 1),
        ("parse-nginx-logs", 2),
        ("port-flask-to-fastapi", 1),
        ("sqlite-index-migration", 1),
    ]
    timeout = loops[(loops["task"] == "openssl-selfsigned-cert") & (loops["attempt"] == 3)]
    assert timeout["repeats"].max() == 22 and set(timeout["tool"]) == {"bash"}
    sft_loops = sft.action_patterns().loops
    assert sorted(set(zip(sft_loops["task"], sft_loops["attempt"], strict=True))) == [
        ("openssl-selfsigned-cert", 1)
    ]
    for job, errors in ((base, 9), (sft, 3)):
        tools = job.tool_stats().tools.set_index("tool")
        assert set(tools.index) == {"bash", "read_file", "edit_file", "run_tests", "submit"}
        assert int(tools.loc["edit_file", "errors"]) == errors
        assert int(tools["errors"].sum()) == errors
        found = job.find_steps(tool="edit_file", error=True)
        assert int(found["matches"].sum()) == errors
    # the transcript of the looping timeout renders, its 22 identical calls in it
    shown = base.transcript("openssl-selfsigned-cert", 3)
    assert shown.steps == len(base.steps(task="openssl-selfsigned-cert", attempt=3))
    assert "<div" in shown._repr_html_() and "bash" in shown.html


# -- a real Harbor job folder carrying Harbor's own trajectory files ------------------------------


def _fixture_job(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of a real Harbor job with each fixture trajectory as one trial's
    ``agent/trajectory.json`` (continuation and sub-agent files beside it); returns the
    folder and fixture -> trial folder name. The other trials have no trajectory."""
    folder = tmp_path / REAL_JOB.name
    shutil.copytree(REAL_JOB, folder)
    trials = sorted(p.name for p in folder.iterdir() if p.is_dir())
    placed = {}
    for fixture, trial in zip(FIXTURES, trials, strict=False):
        src = ATIF / fixture
        agent = folder / trial / "agent"
        agent.mkdir()
        shutil.copyfile(src, agent / "trajectory.json")
        if src.name == "trajectory.json":  # its continuation / sub-agent files beside it
            for other in src.parent.glob("trajectory.*.json"):
                shutil.copyfile(other, agent / other.name)
        placed[fixture] = trial
    return folder, placed


def _trial_attempts(job: enb.Job) -> dict[str, tuple[str, int]]:
    attempts = job.attempts()
    return {
        str(p): (str(t), int(a))
        for p, t, a in zip(
            attempts["source_place"], attempts["task"], attempts["attempt"], strict=True
        )
    }


def test_a_harbor_job_with_harbors_own_trajectories_loads_their_steps(tmp_path: Path) -> None:
    folder, placed = _fixture_job(tmp_path)
    ws = enb.open()
    job = ws.load(folder)
    where = _trial_attempts(job)
    rows = {
        "openhands/hello-world.trajectory.json": 9,
        "openhands/hello-world.trajectory.no_function_calling.json": 5,
        "terminus_2/context-summarization/trajectory.json": 49,
        "terminus_2/hello-world-invalid-json.trajectory.json": 16,
        "terminus_2/hello-world-timeout.trajectory.json": 10,
        "terminus_2/linear-history/trajectory.json": 23,
        "v1.5/hello-world-invalid-json.trajectory.json": 16,
    }
    for fixture, trial in placed.items():
        task, attempt = where[trial]
        mine = job.steps(task=task, attempt=attempt)
        assert len(mine) == rows[fixture], fixture
        assert _counts(mine) == _expected(ATIF / fixture), fixture
    steps = job.steps()
    assert len(steps) == sum(rows.values())
    assert len(steps.groupby(["task", "attempt"])) == 7
    # names: the trial's own files, continuation and sub-agent files included
    linear = placed["terminus_2/linear-history/trajectory.json"]
    places = set(steps["source_place"].str.split(", ").str[0])
    assert f"{linear}/agent/trajectory.cont-1.json" in places
    summ = placed["terminus_2/context-summarization/trajectory.json"]
    assert f"{summ}/agent/trajectory.summarization-1-summary.json" in places
    info = job.info["extra"]["steps"]
    assert (info["attempts_with_steps"], info["attempts_without"], info["skipped"]) == (7, 23, 0)
    assert info["rows"] == sum(rows.values())
    assert info["schema_versions"] == {"ATIF-v1.5": 3, "ATIF-v1.6": 1, "ATIF-v1.7": 3}
    assert info["missing_subagents"] == {"refs": 3, "at": {f"{linear}/agent/trajectory.json": 3}}
    # Harbor's final_metrics vs the rows: hello-world-timeout's own totals exceed its
    # steps' sums (the source's discrepancy), linear-history's count its three missing
    # sub-agents; the others agree
    fm = info["final_metrics_vs_steps"]
    assert (fm["agree"], fm["differ"], fm["not_compared"]) == (5, 2, 0)
    timeout = placed["terminus_2/hello-world-timeout.trajectory.json"]
    differ = {d["trial"]: d["fields"] for d in fm["differ_at"]}
    assert differ[timeout] == {
        "prompt_tokens": [982, 882],
        "completion_tokens": [145, 115],
        "cost_usd": [0.0039050000000000005, 0.0033550000000000003],
    }
    assert differ[linear]["prompt_tokens"] == [7802, 6502]
    # the trials' agent_result are claude-code's, not these trajectories': all differ
    ar = info["agent_result_vs_steps"]
    assert (ar["agree"], ar["differ"], ar["not_compared"]) == (0, 7, 0)
    assert info["agent_result_vs_final_metrics"]["differ"] == 7
    check_steps(ws.con, job.id, str(folder))
    task, attempt = where[placed["terminus_2/context-summarization/trajectory.json"]]
    shown = job.transcript(task, attempt)
    assert shown.steps == 49 and "terminus-2-summarization" in shown.html


def test_a_harbor_job_without_trajectories_says_so() -> None:
    job = enb.open().load(REAL_JOB)
    assert job.steps().empty
    info = job.info["extra"]["steps"]
    assert info["source"] is None
    assert "agent/trajectory.json" in info["why"]
    assert info["attempts_without"] == 30


def _corrupt(folder: Path, trial: str) -> None:
    path = folder / trial / "agent" / "trajectory.json"
    doc = json.loads(path.read_text())
    doc["steps"][2]["step_id"] = 7
    path.write_text(json.dumps(doc))


def test_a_corrupted_trajectory_fails_the_load_and_leaves_the_workspace(tmp_path: Path) -> None:
    folder, placed = _fixture_job(tmp_path)
    ws = enb.open()
    before_job = ws.load(folder)
    before_steps = len(before_job.steps())
    jobs_before = ws.jobs()
    bad = placed["openhands/hello-world.trajectory.json"]
    _corrupt(folder, bad)
    with pytest.raises(
        enb.LoadError,
        match=rf"{bad}/agent/trajectory\.json, steps\[2\]: step_id 7 out of sequence",
    ):
        ws.load(folder)
    assert ws.jobs().equals(jobs_before)
    assert len(ws.job(before_job.id).steps()) == before_steps


def test_lenient_skips_the_attempts_steps_and_says_so(tmp_path: Path) -> None:
    folder, placed = _fixture_job(tmp_path)
    bad = placed["openhands/hello-world.trajectory.json"]
    _corrupt(folder, bad)
    ws = enb.open()
    with pytest.warns(enb.LoadWarning, match=rf"skipped the steps of 1 attempt.*{bad}/agent/"):
        job = ws.load(folder, lenient=True)
    task, attempt = _trial_attempts(job)[bad]
    assert job.steps(task=task, attempt=attempt).empty
    assert len(job.attempts()) == 30  # the attempt itself is loaded
    info = job.info["extra"]["steps"]
    assert (info["attempts_with_steps"], info["attempts_without"], info["skipped"]) == (6, 23, 1)
    assert bad in info["skipped_at"][0]
    assert len(job.steps()) == 128 - 9


def test_reloading_replaces_the_steps(tmp_path: Path) -> None:
    folder, placed = _fixture_job(tmp_path)
    ws = enb.open()
    first = len(ws.load(folder).steps())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ws.load(folder).steps()) == first  # not doubled
    gone = placed["terminus_2/linear-history/trajectory.json"]
    shutil.rmtree(folder / gone / "agent")
    job = ws.load(folder)
    assert len(job.steps()) == first - 23
    assert job.info["extra"]["steps"]["attempts_without"] == 24


def test_terminal_bench_1_says_it_records_no_steps() -> None:
    job = enb.open().load(
        "tests/data/terminal_bench/2025-06-01__12-00-00_terminus_claude-sonnet-4/results.json",
        format="terminal-bench",
    )
    assert job.steps().empty
    info = job.info["extra"]["steps"]
    assert info["source"] is None and "asciinema" in info["why"]


def _bad_metric(doc: dict[str, Any]) -> str:
    i, step = next((i, s) for i, s in enumerate(doc["steps"]) if s.get("metrics"))
    step["metrics"]["prompt_tokens"] = "12"
    return rf"steps\[{i}\]\.metrics\.prompt_tokens: expected a whole number of tokens, got '12'"


def _bad_final(doc: dict[str, Any]) -> str:
    doc["final_metrics"]["total_cost_usd"] = "0.1"
    return r"final_metrics\.total_cost_usd: expected a number, got '0\.1'"


@pytest.mark.parametrize("mutate", [_bad_metric, _bad_final])
def test_bad_usage_in_a_trajectory_is_named(tmp_path: Path, mutate: Any) -> None:
    """Before: the step's text reached the int64 column (pyarrow's ArrowInvalid, no file
    named) or was compared as if a number."""
    folder, placed = _fixture_job(tmp_path)
    trial = placed["openhands/hello-world.trajectory.json"]
    path = folder / trial / "agent" / "trajectory.json"
    doc = json.loads(path.read_text())
    message = mutate(doc)
    path.write_text(json.dumps(doc))
    ws = enb.open()
    with pytest.raises(enb.LoadError, match=rf"{trial}/agent/trajectory\.json, {message}"):
        ws.load(folder)
    assert ws.jobs().empty


# -- worker processes: a big job's trajectories read in chunks, the same as one process ----------


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``workers(True)``: every job's trials and trajectories are read by two worker
    processes, two trials a chunk (a fixture job is far below the size that starts
    them); ``workers(False)``: here. ``workers.chunks`` / ``workers.trial_chunks``: what
    the workers returned for the trajectories / the trials' ``result.json``."""
    from envloop_nb._loaders.harbor import pool

    chunks: list[Any] = []
    trial_chunks: list[Any] = []
    real = pool.in_order

    def counted(fn: Any, *args: Any, **kw: Any) -> Any:
        for part in real(fn, *args, **kw):
            if kw["workers"] > 1:
                (trial_chunks if fn.__module__.endswith(".trials") else chunks).append(part)
            yield part

    def use(on: bool) -> None:
        monkeypatch.setattr(pool, "PARALLEL_FROM", 0 if on else 10**9)
        monkeypatch.setattr(pool, "_cpus", lambda: 2)
        monkeypatch.setattr(pool, "CHUNK", 2)
        monkeypatch.setattr(pool, "in_order", counted)

    use.chunks = chunks  # type: ignore[attr-defined]
    use.trial_chunks = trial_chunks  # type: ignore[attr-defined]
    return use


def _loaded(folder: Path, **kw: Any) -> tuple[Any, ...]:
    """Everything a load wrote: the steps in the order they were written, the job's
    ``extra["steps"]``, its attempts."""
    ws = enb.open()
    job = ws.load(folder, **kw)
    steps = ws.con.execute(
        "SELECT * FROM steps WHERE job_id = ? ORDER BY rowid", [job.id]
    ).to_arrow_table()
    return steps, job.info["extra"]["steps"], job.attempts()


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert a[0].num_rows > 0
    assert a[0].equals(b[0])  # the same rows, values and order
    assert a[1] == b[1]
    assert a[2].equals(b[2])


@pytest.mark.parametrize("name", ["fixtures", "base", "sft-step2000"])
def test_workers_write_the_same_steps_as_one_process(
    tmp_path: Path, workers: Any, name: str
) -> None:
    """The job of Harbor's own trajectory files (continuations, sub-agents, missing
    sub-agent files, differing usage) and the sample runs (36 trials)."""
    folder = _fixture_job(tmp_path)[0] if name == "fixtures" else RUNS / name
    workers(False)
    here = _loaded(folder)
    workers(True)
    _same(here, _loaded(folder))
    assert len(workers.chunks) >= 15  # 30 or 36 trials, two a chunk
    assert len(workers.trial_chunks) >= 15  # their result.json files too


def test_workers_raise_the_first_error_in_the_attempts_order(tmp_path: Path, workers: Any) -> None:
    folder, placed = _fixture_job(tmp_path)
    ws = enb.open()
    before = ws.load(RUNS / "base")
    jobs = ws.jobs()
    for fixture in ("terminus_2/hello-world-timeout.trajectory.json", FIXTURES[0]):
        _corrupt(folder, placed[fixture])
    raised = []
    for on in (False, True):
        workers(on)
        with pytest.raises(enb.LoadError, match=r"step_id 7 out of sequence") as err:
            ws.load(folder)
        raised.append(err.value)
        assert ws.jobs().equals(jobs)  # the workspace as it was
        assert len(ws.job(before.id).steps()) == len(before.steps())
    assert str(raised[0]) == str(raised[1])
    assert type(raised[1].__cause__).__name__ == "_RemoteTraceback"  # a worker found it
    assert workers.chunks  # and the chunks before it were the workers' too


def test_a_load_error_crosses_a_process_whole() -> None:
    """A worker's LoadError (or subclass) pickles as its parts: the same class, source,
    place, problem and message in the parent."""
    import pickle

    from envloop_nb._errors import WorkspaceError

    for err in (enb.LoadError("a/b.json", "step 3", "bad"), WorkspaceError("w.duckdb", None, "x")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err)
        assert (back.source, back.place, back.problem, str(back)) == (
            err.source,
            err.place,
            err.problem,
            str(err),
        )


def test_workers_skip_leniently_as_one_process(tmp_path: Path, workers: Any) -> None:
    folder, placed = _fixture_job(tmp_path)
    for fixture in ("terminus_2/hello-world-timeout.trajectory.json", FIXTURES[0]):
        _corrupt(folder, placed[fixture])
    got = []
    for on in (False, True):
        workers(on)
        with pytest.warns(enb.LoadWarning, match=r"skipped the steps of 2 attempt") as caught:
            got.append(_loaded(folder, lenient=True))
        assert len(caught) == 1
    _same(*got)
    assert got[0][1]["skipped"] == 2


def test_workers_read_the_trials_of_one_combination_as_one_process(
    tmp_path: Path, workers: Any
) -> None:
    """Each combination of a several-agent job: the trials of the other left out, by
    the workers as here."""
    from envloop_nb._loaders.harbor.job import harbor_splits

    for agent, model, dataset in harbor_splits(MULTI):
        kw = {"agent": agent, "model": model, "dataset": dataset}
        workers(False)
        ws = enb.open()
        here = ws.load(MULTI, **kw)
        workers(True)
        ws2 = enb.open()
        there = ws2.load(MULTI, **kw)
        assert here.id == there.id
        assert here.attempts().equals(there.attempts())
        assert here.tasks().equals(there.tasks())
        assert here.info["extra"] == there.info["extra"]
    assert workers.trial_chunks


def test_workers_raise_the_first_bad_result_in_folder_order(tmp_path: Path, workers: Any) -> None:
    """Two broken ``result.json`` in different chunks: the first in folder order is
    raised, whichever worker finished first; the workspace is unchanged."""
    folder = tmp_path / REAL_JOB.name
    shutil.copytree(REAL_JOB, folder)
    trials = sorted(p.name for p in folder.iterdir() if p.is_dir())
    first, later = trials[5], trials[20]
    (folder / first / "result.json").write_text('{"task_name": "hello-world", "id": "x",')
    result = json.loads((folder / later / "result.json").read_text())
    result["agent_result"] = ["not", "an", "object"]
    (folder / later / "result.json").write_text(json.dumps(result))
    ws = enb.open()
    before = ws.load(RUNS / "base")
    jobs = ws.jobs()
    raised = []
    for on in (False, True):
        workers(on)
        with pytest.raises(enb.LoadError, match=rf"{first}/result\.json, line 1: not valid") as err:
            ws.load(folder)
        raised.append(str(err.value))
        assert ws.jobs().equals(jobs)  # the workspace as it was
        assert len(ws.job(before.id).attempts()) == len(before.attempts())
    assert raised[0] == raised[1]
    assert any(c.error is not None for c in workers.trial_chunks)  # a worker found it


def test_workers_find_a_trial_id_repeated_in_another_chunk(tmp_path: Path, workers: Any) -> None:
    folder = tmp_path / REAL_JOB.name
    shutil.copytree(REAL_JOB, folder)
    first = sorted(p.name for p in folder.iterdir() if p.is_dir())[0]
    shutil.copytree(folder / first, folder / "zz-copy")  # the last folder, 15 chunks on
    for on in (False, True):
        workers(on)
        with pytest.raises(
            enb.LoadError, match=rf"trial zz-copy: trial id '.+' is also the id of trial {first}"
        ):
            enb.open().load(folder)
