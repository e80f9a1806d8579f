"""MLflow 3 traces as steps: spans built with MLflow's own API on a real (SQLite) tracking
store, fetched back with MlflowClient, read with read_mlflow_steps.

Traces:

1. ``travel_agent`` (root AGENT): a chat model asks for ``get_weather`` (c1), the tool
   runs; a chat model asks for ``book`` (c2), the tool raises; a sub-agent
   ``researcher`` runs a chat model and a ``search`` tool no model asked for; a last
   chat model answers. Usage on every chat model span.
2. ``rollup`` (root CHAIN): an AGENT span holding the rolled-up usage of its two LLM
   spans (as pydantic_ai / dspy record it): MLflow counts the agent's usage once.
3. ``crash`` (root CHAIN, no model): the agent raises.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

import envloop_nb as enb  # noqa: E402
from envloop_nb._loaders.mlflow.steps import read_mlflow_steps  # noqa: E402
from envloop_nb._store.steps import StepWriter, check_steps  # noqa: E402
from tests.conftest import THREE_TASKS  # noqa: E402

pytestmark = [
    pytest.mark.slow,  # MLflow's imports and its SQLite schema migrations
    pytest.mark.filterwarnings("ignore:.*Any type hint is inferred as AnyType:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"
    ),
]


def _chat(name: str, out: dict[str, Any], usage: dict[str, int] | None) -> None:
    from mlflow.entities import SpanType

    with mlflow.start_span(name=name, span_type=SpanType.CHAT_MODEL) as span:
        span.set_inputs({"messages": [{"role": "user", "content": "..."}], "model": "gpt-4o"})
        span.set_outputs({"choices": [{"message": {"role": "assistant", **out}}]})
        if usage:
            span.set_attribute("mlflow.chat.tokenUsage", usage)


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _build(root: Path) -> dict[str, Any]:
    from mlflow.entities import SpanType

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    mlflow.create_experiment("agents", artifact_location=(root / "artifacts").as_uri())
    mlflow.set_experiment("agents")

    @mlflow.trace(span_type=SpanType.TOOL)
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    @mlflow.trace(span_type=SpanType.TOOL)
    def book(flight: str) -> str:
        raise RuntimeError("no seats on " + flight)

    @mlflow.trace(span_type=SpanType.TOOL)
    def search(query: str) -> list[str]:
        return ["<script>alert(1)</script>", '=HYPERLINK("x")']

    @mlflow.trace(span_type=SpanType.AGENT)
    def researcher(topic: str) -> str:
        _chat("plan", {"content": "I will search."}, {"input_tokens": 7, "output_tokens": 3})
        search(topic)
        return "found"

    @mlflow.trace(span_type=SpanType.AGENT)
    def travel_agent(request: str) -> str:
        u = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 40}
        _chat(
            "turn1",
            {"content": None, "tool_calls": [_call("c1", "get_weather", {"city": "Paris"})]},
            u,
        )
        get_weather("Paris")
        _chat(
            "turn2",
            {"content": "Booking.", "tool_calls": [_call("c2", "book", {"flight": "AF1"})]},
            u,
        )
        with contextlib.suppress(RuntimeError):
            book("AF1")
        researcher("'); DROP TABLE steps; --")
        _chat(
            "turn3",
            {"content": "It is sunny; AF1 is full."},
            {"input_tokens": 150, "output_tokens": 12},
        )
        return "It is sunny; AF1 is full."

    @mlflow.trace(span_type=SpanType.AGENT)
    def inner_agent(q: str) -> str:
        span = mlflow.get_current_active_span()
        _chat("a", {"content": "x"}, {"input_tokens": 5, "output_tokens": 1})
        _chat("b", {"content": "y"}, {"input_tokens": 6, "output_tokens": 2})
        span.set_attribute("mlflow.chat.tokenUsage", {"input_tokens": 11, "output_tokens": 3})
        return "y"

    @mlflow.trace(span_type=SpanType.CHAIN)
    def rollup(q: str) -> str:
        return inner_agent(q)

    @mlflow.trace(span_type=SpanType.CHAIN)
    def crash(q: str) -> str:
        raise ValueError("tool unavailable")

    ids = []
    for fn, arg in ((travel_agent, "Weather in Paris, and book AF1?"), (rollup, "q"), (crash, "q")):
        with contextlib.suppress(ValueError):
            fn(arg)
        ids.append(mlflow.get_last_active_trace_id())
    mlflow.flush_trace_async_logging()
    client = mlflow.MlflowClient()
    out = {}
    for name, tid in zip(("travel", "rollup", "crash"), ids, strict=True):
        trace = client.get_trace(tid)
        out[name] = {
            "spans": [s.to_dict() for s in trace.data.spans],
            "usage": json.loads(trace.info.trace_metadata.get("mlflow.trace.tokenUsage") or "null"),
        }
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _build(tmp_path_factory.mktemp("mlflow"))


def _read(spans: list[dict[str, Any]]) -> tuple[enb.Job, Any]:
    ws = enb.open()
    job = ws.load(THREE_TASKS, steps=False)
    w = StepWriter(ws.con, job.id)
    got = read_mlflow_steps(w, task="A", attempt=1, spans=spans, source="trace tr-1")
    w.close()
    check_steps(ws.con, job.id, "trace tr-1")
    return job, got


def _type(span: dict[str, Any]) -> str:
    return json.loads(span["attributes"]["mlflow.spanType"])


def test_an_agent_trace_counted_from_its_spans(traces: dict[str, Any]) -> None:
    spans = traces["travel"]["spans"]
    job, got = _read(spans)
    s = job.steps()
    tool_spans = [x for x in spans if _type(x) == "TOOL"]
    asked = [
        c["function"]["name"]
        for x in spans
        if _type(x) == "CHAT_MODEL"
        for c in json.loads(x["attributes"]["mlflow.spanOutputs"])["choices"][0]["message"].get(
            "tool_calls"
        )
        or []
    ]
    unasked = [x for x in tool_spans if x["name"] not in asked]
    kinds = s["kind"].value_counts().to_dict()
    assert kinds["tool_result"] == len(tool_spans) == got.tool_results == 3
    assert kinds["tool_call"] == len(asked) + len(unasked) == got.tool_calls == 3
    assert got.spans == len(spans)
    calls = s[s["kind"] == "tool_call"]
    assert calls["tool"].tolist() == ["get_weather", "book", "search"]
    assert calls["call_id"].tolist()[:2] == ["c1", "c2"]
    results = s[s["kind"] == "tool_result"]
    assert results["call_id"].tolist()[:2] == ["c1", "c2"]
    assert results["content"].tolist()[0] == "sunny in Paris"
    # the failed tool: status ERROR, its exception's message
    assert results["is_error"].tolist() == [False, True, False]
    assert results["content"].iloc[1] == "no seats on AF1"
    # the sub-agent and its rows
    sub = s[s["kind"] == "subagent"]
    assert sub["content"].tolist() == ["researcher"]
    under = s[s["parent_step"] == sub["step"].iloc[0]]
    assert len(under) == 3 and (under["agent"] == "researcher").all()  # plan, search call+result
    # the request first, the final answer last; time order
    assert s["role"].iloc[0] == "user"
    assert json.loads(s["content"].iloc[0]) == {"request": "Weather in Paris, and book AF1?"}
    assert s["content"].iloc[-1] == "It is sunny; AF1 is full."
    assert s["started_at"].is_monotonic_increasing
    # usage sums to MLflow's own trace usage; once per model turn
    usage = traces["travel"]["usage"]
    assert s["tokens_in"].sum() == usage["input_tokens"] == 100 + 100 + 7 + 150
    assert s["tokens_out"].sum() == usage["output_tokens"]
    assert s["tokens_cached"].sum() == 80
    assert s["tokens_in"].notna().sum() == 4 and got.unplaced_usage == 0
    assert (s[s["kind"] == "message"]["model"].dropna() == "gpt-4o").all()


def test_rolled_up_usage_counts_once(traces: dict[str, Any]) -> None:
    job, got = _read(traces["rollup"]["spans"])
    s = job.steps()
    assert traces["rollup"]["usage"]["input_tokens"] == 11
    assert s["tokens_in"].sum() == 11 and s["tokens_out"].sum() == 3
    assert got.unplaced_usage == 0
    # the agent's usage on its own row (the first of its subtree)
    assert s[s["kind"] == "subagent"]["tokens_in"].iloc[0] == 11


def test_a_failed_agent_is_an_error_row(traces: dict[str, Any]) -> None:
    job, got = _read(traces["crash"]["spans"])
    s = job.steps()
    assert s["kind"].tolist() == ["message", "error"]
    assert s["content"].iloc[1] == "tool unavailable" and s["is_error"].iloc[1]
    assert got.errors == 1 and traces["crash"]["usage"] is None
    assert s["tokens_in"].isna().all()


def test_hostile_content_is_data(traces: dict[str, Any]) -> None:
    job, _ = _read(traces["travel"]["spans"])
    s = job.steps()
    search = s[(s["kind"] == "tool_result") & (s["tool"] == "search")]
    assert json.loads(search["content"].iloc[0]) == [
        "<script>alert(1)</script>",
        '=HYPERLINK("x")',
    ]
    call = s[(s["kind"] == "tool_call") & (s["tool"] == "search")]
    assert json.loads(call["arguments"].iloc[0]) == {"query": "'); DROP TABLE steps; --"}


def _no_parent(spans: list[dict[str, Any]]) -> None:
    spans[1]["parent_span_id"] = "nope"


def _not_json(spans: list[dict[str, Any]]) -> None:
    spans[1]["attributes"]["mlflow.spanOutputs"] = "{not json"


def _bad_tokens(spans: list[dict[str, Any]]) -> None:
    spans[1]["attributes"]["mlflow.chat.tokenUsage"] = json.dumps({"input_tokens": "many"})


def _not_a_span(spans: list[dict[str, Any]]) -> None:
    spans[2] = {"name": "x"}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_no_parent, r"trace tr-1, spans\[1\]: parent span 'nope' is not in the trace"),
        (_not_json, r"trace tr-1, spans\[1\]\.attributes\.mlflow\.spanOutputs: not JSON"),
        (_bad_tokens, r"trace tr-1, spans\[1\]: input_tokens must be a whole number"),
        (_not_a_span, r"trace tr-1, spans\[2\]: expected a span object with a span_id"),
    ],
)
def test_bad_spans_are_named(traces: dict[str, Any], mutate: Any, message: str) -> None:
    spans = copy.deepcopy(traces["travel"]["spans"])
    mutate(spans)
    with pytest.raises(enb.LoadError, match=message):
        _read(spans)
