"""An experiment loaded from MLflow traces keeps each case's spans as its steps
(``exp_steps``): ``experiment.steps(case=…)``, ``experiment.transcript(case)``, the
panel's case detail. The store is the real SQLite one ``tests/test_mlflow_steps.py``
builds (a travel agent with two asked tool calls, one failing, and a sub-agent with a
tool no model asked for; a rolled-up agent; a crash), with one feedback per trace so
the experiment has an evaluator.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

import envloop_nb as enb  # noqa: E402
from envloop_nb._errors import LoadError  # noqa: E402
from tests.conftest import THREE_TASKS  # noqa: E402
from tests.test_mlflow_steps import _build  # noqa: E402

pytestmark = [
    pytest.mark.slow,  # MLflow's imports and its SQLite schema migrations
    pytest.mark.filterwarnings("ignore:.*Any type hint is inferred as AnyType:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    before = mlflow.get_tracking_uri()
    root = tmp_path_factory.mktemp("mlflow")
    try:
        made = _build(root)
        judge = mlflow.entities.AssessmentSource(source_type="CODE", source_id="check")
        ids = {}
        for name, trace in made.items():
            tid = _trace_id(trace["spans"])
            mlflow.log_feedback(trace_id=tid, name="ok", source=judge, value=name != "crash")
            ids[name] = tid
        made["ids"] = ids
        made["uri"] = f"sqlite:///{root / 'mlflow.db'}"
        return made
    finally:
        mlflow.set_tracking_uri(before)


def _trace_id(spans: list[dict[str, Any]]) -> str:
    """The trace id of MLflow's ``Span.to_dict()`` form (base64 of the OTel id in
    ``trace_id``; the ``tr-`` id in the attribute ``mlflow.traceRequestId``)."""
    return str(json.loads(spans[0]["attributes"]["mlflow.traceRequestId"]))


def _type(span: dict[str, Any]) -> str:
    return str(json.loads(span["attributes"]["mlflow.spanType"]))


def test_each_case_keeps_its_trace_spans_as_steps(store: dict[str, Any]) -> None:
    exp = enb.open().load_mlflow(experiment="agents", tracking_uri=store["uri"])
    ids = store["ids"]
    assert exp.info["extra"]["steps"]["cases_with_steps"] == 3
    every = exp.steps()
    assert set(every["task"]) == set(ids.values()) and (every["attempt"] == 0).all()

    travel = store["travel"]["spans"]
    s = exp.steps(case=ids["travel"])
    assert s["step"].tolist() == list(range(1, len(s) + 1))
    tool_spans = [x for x in travel if _type(x) == "TOOL"]
    results = s[s["kind"] == "tool_result"]
    assert len(results) == len(tool_spans) == 3
    calls = s[s["kind"] == "tool_call"]
    assert calls["tool"].tolist() == ["get_weather", "book", "search"]
    assert calls["call_id"].tolist()[:2] == ["c1", "c2"]
    assert results["is_error"].tolist() == [False, True, False]
    assert results["content"].iloc[1] == "no seats on AF1"
    # the request, turn2's text, the plan, the answer; 3 calls, 3 results; the sub-agent
    assert s["kind"].value_counts().to_dict() == {
        "message": 4, "tool_call": 3, "tool_result": 3, "subagent": 1,
    }  # fmt: skip
    usage = store["travel"]["usage"]
    assert s["tokens_in"].sum() == usage["input_tokens"]
    assert s["tokens_out"].sum() == usage["output_tokens"]
    # the other cases: the rolled-up agent's usage once; the crash an error row
    rollup = exp.steps(case=ids["rollup"])
    assert rollup["tokens_in"].sum() == store["rollup"]["usage"]["input_tokens"] == 11
    crash = exp.steps(case=ids["crash"])
    assert crash["is_error"].any() and "tool unavailable" in " ".join(crash["content"].dropna())

    t = exp.transcript(ids["travel"])
    assert (t.steps, t.first_error) == (11, int(results["step"].iloc[1]))
    assert "jump to first error" in t.html and "no seats on AF1" in t.html
    assert f"<h4>case {ids['travel']} · 11 steps</h4>" in t.html
    assert ">reward<" not in t.html  # a case has no reward (a job's attempt shows "-")
    assert "&lt;script&gt;alert(1)" in t.html and "<script>alert(1)" not in t.html
    with pytest.raises(KeyError, match="no case"):
        exp.transcript("tr-nope")


def test_reload_replaces_and_a_job_of_the_same_id_is_apart(store: dict[str, Any]) -> None:
    ws = enb.open()
    exp = ws.load_mlflow(experiment="agents", tracking_uri=store["uri"])
    n = len(exp.steps())
    job = ws.load(THREE_TASKS, job_id=exp.id)  # a job that happens to share the id
    assert set(job.steps()["task"]) <= {"A", "B", "C"}  # none of the experiment's
    again = ws.load_mlflow(experiment="agents", tracking_uri=store["uri"])
    assert len(again.steps()) == n  # replaced, not doubled
    ws.load(THREE_TASKS, job_id=exp.id)  # reloading the job keeps the experiment's steps
    ws.remove(job)
    assert len(exp.steps()) == n
    ws.remove_experiment(exp)
    assert ws.sql("SELECT count(*) FROM exp_steps").fetchone() == (0,)


def test_a_bad_span_refuses_the_load_and_changes_nothing(
    store: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from envloop_nb._loaders.mlflow import traces

    real = traces.read_mlflow_traces

    def broken(**kw: Any) -> Any:
        record, got = real(**kw)
        got[0]["spans"][1]["parent_span_id"] = "nowhere"
        return record, got

    monkeypatch.setattr(traces, "read_mlflow_traces", broken)
    ws = enb.open()
    with pytest.raises(LoadError, match="parent span 'nowhere' is not in the trace"):
        ws.load_mlflow(experiment="agents", tracking_uri=store["uri"])
    assert ws.sql("SELECT count(*) FROM exp_steps").fetchone() == (0,)
    assert ws.sql("SELECT count(*) FROM exp_cases").fetchone() == (0,)


def test_the_panel_case_detail_shows_the_transcript(store: dict[str, Any]) -> None:
    exp = enb.open().load_mlflow(experiment="agents", tracking_uri=store["uri"])
    panel = exp.panel()
    try:
        panel.select_trace(store["ids"]["travel"])
        assert "enb-tr" in panel.transcript.value and "no seats on AF1" in panel.transcript.value
        panel.select_trace(store["ids"]["rollup"])
        assert "enb-tr" in panel.transcript.value
    finally:
        panel.close()


def test_traces_not_judged_yet_are_cases_with_their_steps(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """MLflow traces without any feedback: an experiment with no evaluator. Its summary,
    case list and panel work (they raised on the counts of no rows, and listed no case)."""
    before = mlflow.get_tracking_uri()
    root = tmp_path_factory.mktemp("unjudged")
    try:
        made = _build(root)
    finally:
        mlflow.set_tracking_uri(before)
    exp = enb.open().load_mlflow(experiment="agents", tracking_uri=f"sqlite:///{root}/mlflow.db")
    s = exp.summary()
    assert (s.counted, s.total, s.cases, s.composite) == (0, 0, 3, None)
    cases = exp.cases()
    assert len(cases) == 3 and (cases["counted"] == 0).all() and (cases["total"] == 0).all()
    assert set(cases["trace_id"]) == {_trace_id(t["spans"]) for t in made.values()}
    panel = exp.panel()
    try:
        panel.select_trace(_trace_id(made["travel"]["spans"]))
        assert "no seats on AF1" in panel.transcript.value
    finally:
        panel.close()
