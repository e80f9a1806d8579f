"""mlflow_experiment_doc on a real MLflow 3 tracking store (SQLite, built with MLflow's API).

The store holds four traces of one agent, ``support_bot``:

1. OK, chat-free question, a nested ``@mlflow.trace`` call and a ``start_span`` (child
   spans, not a sub-trace), ``expected_response``; feedback ``correctness`` from an LLM
   judge (0.4) overridden by a human (0.9) whose override is overridden again (0.7),
   ``is_polite`` from code (True), ``helpful`` from a human ("yes").
2. OK, a chat message list as input, ``expected_facts``; ``correctness`` failed (judge
   error, no value) and then overridden by a human (no correction: the row stays failed),
   ``is_polite`` False, ``helpful`` "maybe" (no numeric reading).
3. ERROR (the agent raised); ``correctness`` 0.
4. OK, two arguments as input; ``correctness`` evaluated twice (0.5, then 0.8: runs 1
   and 2), ``tone_score`` 85 on a 0–100 scale.

Expected values are written out by hand; only ids and times come from MLflow's own
objects (formatted here by :func:`_at`, not by the code under test).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# MLflow decides at import time whether to send usage telemetry; a test run never should.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

from envloop_nb import LoadError  # noqa: E402
from envloop_nb._loaders.mlflow.traces import mlflow_experiment_doc  # noqa: E402

# Warnings MLflow emits on its own and nothing here can avoid (pytest makes warnings errors):
# - its first trace imports mlflow.pyfunc, whose loaders warn that an ``Any`` type hint is
#   not validated (mlflow/utils/warnings_utils.py); as an error it silently kills tracing;
# - its SQLAlchemy store configures mappers with a loader strategy SQLAlchemy 2.1
#   deprecates (mlflow/store/tracking/sqlalchemy_store.py).
pytestmark = [
    pytest.mark.slow,  # MLflow's imports and its SQLite schema migrations take ~10 s, once
    pytest.mark.filterwarnings("ignore:.*Any type hint is inferred as AnyType:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"
    ),
]

EXPERIMENT = "support-bot-eval"


def _at(ms: int) -> str:
    """Epoch ms as RFC 3339 UTC with milliseconds (the test's own formatting)."""
    moment = dt.datetime.fromtimestamp(ms // 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def _build(root: Path) -> dict[str, Any]:
    """The tracking store; returns MLflow's ids and times of what it logged."""
    from mlflow.entities import AssessmentError, AssessmentSource

    judge = AssessmentSource(source_type="LLM_JUDGE", source_id="gpt-4o-mini")
    code = AssessmentSource(source_type="CODE", source_id="politeness.py")
    reviewer = AssessmentSource(source_type="HUMAN", source_id="reviewer@example.com")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    # artifacts (trace payloads) under the temp root, not ./mlruns of the working folder
    for name in ("other-exp", EXPERIMENT):
        mlflow.create_experiment(name, artifact_location=(root / "artifacts" / name).as_uri())
    mlflow.set_experiment("other-exp")
    exp = mlflow.set_experiment(EXPERIMENT)

    @mlflow.trace
    def lookup_docs(topic: str) -> str:
        return f"docs about {topic}"

    @mlflow.trace
    def support_bot(request: Any, user: str | None = None) -> Any:
        lookup_docs("shell")
        with mlflow.start_span(name="format_answer") as span:
            span.set_inputs({"draft": "pwd"})
            span.set_outputs("formatted")
        if request == "crash":
            raise ValueError("tool unavailable")
        if isinstance(request, list):
            mlflow.update_current_trace(tags={"channel": "chat"})
            return "Use ls -a."
        if user is not None:
            return {"answer": "du -sh *"}
        mlflow.update_current_trace(tags={"topic": "shell"})
        return "Run pwd."

    ids = []
    for args in (
        ("How do I see the current directory?",),
        (
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hidden files?"},
            ],
        ),
        ("crash",),
        ("Disk usage per folder?", "li.wei"),
    ):
        with contextlib.suppress(ValueError):  # trace 3: the agent fails, MLflow records it
            support_bot(*args)
        ids.append(mlflow.get_last_active_trace_id())
        time.sleep(0.01)  # distinct request times: cases are ordered by them
    mlflow.flush_trace_async_logging()
    t1, t2, t3, t4 = ids

    def feedback(trace_id: str, name: str, source: Any, **kw: Any) -> Any:
        return mlflow.log_feedback(trace_id=trace_id, name=name, source=source, **kw)

    made = {
        "uri": uri,
        "experiment_id": exp.experiment_id,
        "created": exp.creation_time,
        "traces": ids,
        "c1": feedback(t1, "correctness", judge, value=0.4, rationale="Terse."),
        "p1": feedback(t1, "is_polite", code, value=True),
        "h1": feedback(t1, "helpful", reviewer, value="yes", rationale="Solved it."),
        "c2": feedback(
            t2,
            "correctness",
            judge,
            error=AssessmentError(error_code="TIMEOUT", error_message="judge model unreachable"),
        ),
        "p2": feedback(t2, "is_polite", code, value=False),
        "h2": feedback(t2, "helpful", reviewer, value="maybe"),
        "c3": feedback(t3, "correctness", judge, value=0, rationale="No answer."),
        "c4a": feedback(t4, "correctness", judge, value=0.5),
        "c4b": feedback(t4, "correctness", judge, value=0.8, rationale="Re-run."),
        "t4": feedback(t4, "tone_score", code, value=85),
    }
    mlflow.log_expectation(trace_id=t1, name="expected_response", value="Run the pwd command.")
    mlflow.log_expectation(
        trace_id=t2,
        name="expected_facts",
        value=["ls -a shows hidden files", "ls -la adds details"],
    )
    made["o1"] = mlflow.override_feedback(
        trace_id=t1,
        assessment_id=made["c1"].assessment_id,
        value=0.9,
        rationale="Terse is what was asked.",
        source=AssessmentSource(source_type="HUMAN", source_id="li.wei"),
    )
    made["o2"] = mlflow.override_feedback(
        trace_id=t1,
        assessment_id=made["o1"].assessment_id,
        value=0.7,
        source=AssessmentSource(source_type="HUMAN", source_id="a.khan"),
    )
    # a human fills in the score the judge failed to give: no correction (row stays failed)
    made["o3"] = mlflow.override_feedback(
        trace_id=t2,
        assessment_id=made["c2"].assessment_id,
        value=0.3,
        source=AssessmentSource(source_type="HUMAN", source_id="li.wei"),
    )
    client = mlflow.MlflowClient(tracking_uri=uri)
    made["request_times"] = [client.get_trace(t).info.request_time for t in ids]
    made["t1_spans"] = {s.name: s.parent_id for s in client.get_trace(t1).data.spans}
    made["t1_assessments"] = {a.assessment_id: a for a in client.get_trace(t1).info.assessments}
    return made


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    before = mlflow.get_tracking_uri()
    made = _build(tmp_path_factory.mktemp("mlflow"))
    yield made
    mlflow.set_tracking_uri(before)


@pytest.fixture(scope="module")
def doc(store: dict[str, Any]) -> dict[str, Any]:
    return mlflow_experiment_doc(experiment=EXPERIMENT, tracking_uri=store["uri"])


def _id(store: dict[str, Any], key: str) -> str:
    return str(store[key].assessment_id)


def test_the_store_is_what_the_tests_assume(store: dict[str, Any]) -> None:
    """MLflow itself: nested calls are child spans of one trace, and an override chain
    leaves only its newest link valid."""
    root = store["t1_spans"]["support_bot"]
    assert root is None
    assert store["t1_spans"]["lookup_docs"] is not None
    assert store["t1_spans"]["format_answer"] is not None
    a = store["t1_assessments"]
    assert [a[_id(store, k)].valid for k in ("c1", "o1", "o2")] == [False, False, True]
    assert a[_id(store, "o1")].overrides == _id(store, "c1")
    assert a[_id(store, "o2")].overrides == _id(store, "o1")


def test_experiment(store: dict[str, Any], doc: dict[str, Any]) -> None:
    exp = doc["experiment"]
    assert doc["schema_version"] == "envloop.experiment-result/v1"
    assert {k: v for k, v in exp.items() if k not in ("evaluators", "created_at")} == {
        "id": f"mlflow:{store['experiment_id']}",
        "name": "support-bot-eval",
        "agent": "support_bot",
        "type": "single-group",
        "status": "completed",
        "started_at": _at(store["c1"].create_time_ms),
        "finished_at": _at(store["t4"].create_time_ms),
        "listen": {"enabled": False, "since": None, "stopped_at": None},
    }
    assert exp["created_at"] == _at(store["created"])
    assert exp["evaluators"] == [
        {
            "name": "correctness",
            "kind": "preset",
            "needs_reference": False,
            "version": None,
            "judge_model": "gpt-4o-mini",
            "scale": {"min": 0, "max": 1},
        },
        {
            "name": "is_polite",
            "kind": "custom",
            "needs_reference": False,
            "version": None,
            "judge_model": None,
            "scale": {"min": 0, "max": 1},
        },
        {
            "name": "helpful",
            "kind": "custom",
            "needs_reference": False,
            "version": None,
            "judge_model": None,
            "scale": {"min": 0, "max": 1},
        },
        {
            "name": "tone_score",
            "kind": "custom",
            "needs_reference": False,
            "version": None,
            "judge_model": None,
            "scale": {"min": 0, "max": 100},
        },
    ]


def test_cases(store: dict[str, Any], doc: dict[str, Any]) -> None:
    """Four traces, four cases (the nested spans are no cases); ERROR → error."""
    t1, t2, t3, t4 = store["traces"]
    times = [_at(ms) for ms in store["request_times"]]
    assert [c["trace_id"] for c in doc["cases"]] == [t1, t2, t3, t4]
    assert [c["status"] for c in doc["cases"]] == ["success", "success", "error", "success"]
    assert [c["trace_started_at"] for c in doc["cases"]] == times
    assert [c["ingested_at"] for c in doc["cases"]] == times
    assert doc["cases"][0] | {"trace_started_at": None, "ingested_at": None} == {
        "trace_id": t1,
        "agent": "support_bot",
        "parent_trace_id": None,
        "status": "success",
        "trace_started_at": None,
        "ingested_at": None,
        "input": "How do I see the current directory?",
        "output": "Run pwd.",
        "reference": "Run the pwd command.",
        "reference_source": "dataset",
        "added_by": "selection",
        "tags": {"topic": "shell"},
    }
    two, three, four = doc["cases"][1:]
    assert two["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hidden files?"},
    ]
    assert (two["output"], two["tags"]) == ("Use ls -a.", {"channel": "chat"})
    assert two["reference"] == "ls -a shows hidden files\nls -la adds details"
    assert (three["input"], three["output"], three["reference"], three["reference_source"]) == (
        "crash",
        None,
        None,
        None,
    )
    assert four["input"] == '{"request": "Disk usage per folder?", "user": "li.wei"}'
    assert four["output"] == "du -sh *"
    assert all(c["parent_trace_id"] is None for c in doc["cases"])


def test_results(store: dict[str, Any], doc: dict[str, Any]) -> None:
    t1, t2, t3, t4 = store["traces"]
    rows = [
        (
            r["id"],
            r["trace_id"],
            r["evaluator"],
            r["run"],
            r["status"],
            r["score"],
            r["reason"],
            r["error"],
        )
        for r in doc["results"]
    ]
    i = {
        key: _id(store, key)
        for key in ("c1", "p1", "h1", "c2", "p2", "h2", "c3", "c4a", "c4b", "t4")
    }
    assert rows == [
        (i["c1"], t1, "correctness", 1, "succeeded", 0.4, "Terse.", None),
        (i["p1"], t1, "is_polite", 1, "succeeded", 1.0, None, None),
        (i["h1"], t1, "helpful", 1, "succeeded", 1.0, "Solved it.", None),
        (i["c2"], t2, "correctness", 1, "failed", None, None, "TIMEOUT: judge model unreachable"),
        (i["p2"], t2, "is_polite", 1, "succeeded", 0.0, None, None),
        (i["h2"], t2, "helpful", 1, "succeeded", None, None, None),
        (i["c3"], t3, "correctness", 1, "succeeded", 0.0, "No answer.", None),
        (i["c4a"], t4, "correctness", 1, "succeeded", 0.5, None, None),
        (i["c4b"], t4, "correctness", 2, "succeeded", 0.8, "Re-run.", None),
        (i["t4"], t4, "tone_score", 1, "succeeded", 85.0, None, None),
    ]
    assert all(r["points"] == [] for r in doc["results"])
    first = doc["results"][0]
    assert first["evaluated_at"] == _at(store["c1"].create_time_ms)
    # no feedback, no row: trace 3 has no is_polite / helpful, trace 4 no helpful
    assert not [
        r for r in doc["results"] if r["trace_id"] == t3 and r["evaluator"] != "correctness"
    ]


def test_override_chain_is_two_corrections_one_live(
    store: dict[str, Any], doc: dict[str, Any]
) -> None:
    o1, o2 = store["o1"].create_time_ms, store["o2"].create_time_ms
    assert doc["corrections"] == [
        {
            "result_id": _id(store, "c1"),
            "run": 1,
            "score": 0.9,
            "reason": "Terse is what was asked.",
            "by": "li.wei",
            "at": _at(o1),
            "undone_by": "a.khan",
            "undone_at": _at(o2),
        },
        {
            "result_id": _id(store, "c1"),
            "run": 1,
            "score": 0.7,
            "reason": "override in MLflow",
            "by": "a.khan",
            "at": _at(o2),
            "undone_by": None,
            "undone_at": None,
        },
    ]
    # the machine score stays on the row; the override ids are no result rows
    assert doc["results"][0]["score"] == 0.4
    ids = {r["id"] for r in doc["results"]}
    assert not ids & {_id(store, "o1"), _id(store, "o2"), _id(store, "o3")}


def test_max_traces_reads_the_oldest(store: dict[str, Any]) -> None:
    doc = mlflow_experiment_doc(experiment=EXPERIMENT, tracking_uri=store["uri"], max_traces=2)
    assert [c["trace_id"] for c in doc["cases"]] == store["traces"][:2]
    assert len(doc["results"]) == 6
    assert [e["name"] for e in doc["experiment"]["evaluators"]] == [
        "correctness",
        "is_polite",
        "helpful",
    ]
    with pytest.raises(ValueError, match="max_traces must be a positive integer"):
        mlflow_experiment_doc(experiment=EXPERIMENT, tracking_uri=store["uri"], max_traces=0)


def test_unknown_experiment(store: dict[str, Any]) -> None:
    with pytest.raises(LoadError) as caught:
        mlflow_experiment_doc(experiment="nope", tracking_uri=store["uri"])
    assert str(caught.value) == (
        f"{store['uri']}, experiment 'nope': no such MLflow experiment; "
        "experiments: ['Default', 'other-exp', 'support-bot-eval']"
    )


def test_missing_database_file_is_not_created(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'typo.db'}"
    with pytest.raises(LoadError, match="no such MLflow database file"):
        mlflow_experiment_doc(experiment=EXPERIMENT, tracking_uri=uri)
    assert not (tmp_path / "typo.db").exists()


def test_without_mlflow_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)
    with pytest.raises(ImportError, match=r"pip install 'envloop_nb\[mlflow\]'"):
        mlflow_experiment_doc(experiment=EXPERIMENT, tracking_uri="sqlite:///x.db")


def _fb(aid: str, minute: int, value: Any, by: str, **kw: Any) -> dict[str, Any]:
    """An assessment in MLflow's ``to_dictionary()`` form."""
    source_type = "LLM_JUDGE" if by == "judge" else "HUMAN"
    return {
        "assessment_id": aid,
        "assessment_name": "correctness",
        "source": {"source_type": source_type, "source_id": by},
        "create_time": f"2026-01-01T00:{minute:02d}:00.000Z",
        "last_update_time": f"2026-01-01T00:{minute:02d}:00.000Z",
        "feedback": {"value": value},
        **kw,
    }


def test_two_overrides_of_one_feedback_and_a_broken_chain() -> None:
    """Pure mapping: a feedback overridden twice directly (both overrides valid) keeps
    only the newer live; an override whose link was deleted still corrects the row; an
    override without a numeric value undoes the one before but is no correction."""
    from envloop_nb._loaders.mlflow.traces import experiment_doc_from_dicts

    trace = {
        "trace_id": "tr-1",
        "state": "OK",
        "request_time": "2026-01-01T00:00:00Z",
        "tags": {},
        "assessments": [
            _fb("a-judge", 1, 0.2, "judge", valid=False),
            _fb("a-ann", 2, 0.6, "ann", overrides="a-judge"),
            _fb("a-bob", 3, 0.8, "bob", overrides="a-judge"),
            _fb("a-eve", 4, 1.0, "eve", overrides="a-deleted", valid=False),
            _fb("a-zed", 5, "unsure", "zed", overrides="a-eve"),
        ],
    }
    doc = experiment_doc_from_dicts(
        {"experiment_id": "1", "name": "x", "creation_time": 0}, [trace]
    )
    assert [(r["id"], r["score"]) for r in doc["results"]] == [("a-judge", 0.2)]
    assert [
        (c["result_id"], c["score"], c["by"], c["undone_by"], c["undone_at"])
        for c in doc["corrections"]
    ] == [
        ("a-judge", 0.6, "ann", "bob", "2026-01-01T00:03:00.000Z"),
        ("a-judge", 0.8, "bob", "eve", "2026-01-01T00:04:00.000Z"),
        ("a-judge", 1.0, "eve", "zed", "2026-01-01T00:05:00.000Z"),
    ]  # zed's override has no number: no correction of its own, no live one left
    assert doc["cases"][0]["input"] is None
    assert doc["experiment"]["agent"] == "x"


def test_ws_load_mlflow_end_to_end(store: Any, tmp_path: Path) -> None:
    import envloop_nb as enb

    path = tmp_path / "ws.duckdb"
    with enb.open(path) as ws:
        exp = ws.load_mlflow(experiment=EXPERIMENT, tracking_uri=store["uri"])
        assert exp.id.startswith("mlflow:")
    with enb.open(path, read_only=True) as ws:
        exp = ws.experiment(ws.experiments()["experiment_id"][0])
        assert exp.progress() == {
            "completed": 8,
            "failed": 1,
            "pending": 0,
            "missing": 7,
            "total": 16,
        }
        ev = exp.evaluators().set_index("evaluator")
        assert ev.loc[
            "correctness", ["mean", "counted", "total", "failed", "corrected"]
        ].tolist() == [0.5, 3, 4, 1, 1]
        assert ev.loc["tone_score", ["mean", "scale_max"]].tolist() == [85.0, 100.0]
        s = exp.summary()
        assert s.mixed_scales and "different scales" in str(s)
        hist = exp.corrections()
        assert hist["state"].tolist() == ["undone", "live"]
        assert hist["by"].tolist() == ["li.wei", "a.khan"]
        assert hist["machine_score"].tolist() == [0.4, 0.4]
        res = exp.results()
        failed = res[res["status"] == "failed"].iloc[0]
        assert failed["error"] == "TIMEOUT: judge model unreachable"
