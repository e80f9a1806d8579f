"""An MLflow 3 trace's spans as steps. The spans are MLflow's own JSON form
(``Span.to_dict()``, as ``MlflowClient.get_trace`` / ``search_traces`` return them:
``span_id``, ``parent_span_id``, ``name``, ``start_time_unix_nano``,
``end_time_unix_nano``, ``status {code, message}``, ``events``, and ``attributes`` whose
values are JSON text), so the mapping is pure and runs on plain dicts.

How spans become rows, in order of start time (``turn``: the span's place in that
order, counted from 1):

- the root span's inputs are the first row, a ``user`` message (the trace's request);
  the root's output is the case's output, not a step;
- an ``LLM`` / ``CHAT_MODEL`` span is a model turn: its output message
  (``choices[0].message``, a message ``{role, content, tool_calls}``, Anthropic-style
  content blocks, or a string) is its reasoning, its text and the ``tool_calls`` it asked
  for; ``mlflow.llm.model`` (else the inputs' ``model``) is its ``model``;
- a ``TOOL`` span is the result of the open call of the same tool a model turn asked
  for (oldest first; the result names that call's id); a tool span no model turn asked
  for is a call (``call_id``: the span's id) and its result. Its inputs are the
  arguments, its outputs the content; status ``ERROR`` makes the result ``is_error``
  (the exception's message, from the span's ``exception`` event or its status, is kept
  in ``extra`` and is the content when the tool returned nothing);
- an ``AGENT`` span below the root is a ``subagent`` row; the rows of the spans under it
  carry its name as ``agent`` and its step as ``parent_step`` (a root ``AGENT`` span is
  the attempt's own agent);
- any other span (``CHAIN``, ``RETRIEVER``, ``PARSER``, …) is structure, not a step,
  except where it failed and no span under it did: there the failure is an ``error``
  row (``environment``).

**Usage.** ``mlflow.chat.tokenUsage`` (``input_tokens``, ``output_tokens``,
``cache_read_input_tokens``) and ``mlflow.llm.cost`` (``total_cost``) are counted as
MLflow counts a trace's usage: a span's own only where no span above it has any (a
framework that rolls its calls' usage up onto an agent span counts once). Each such
span's usage is written on the first row of its subtree, so the rows sum to the
trace's ``mlflow.trace.tokenUsage``; usage of a subtree that wrote no row is counted in
:class:`MlflowStepsRead`. ``started_at`` is the span's start, ``duration_s`` its length
(on the turn's first row).

Refused with a :class:`LoadError` naming the span: a span that is not an object or has
no ``span_id``, an attribute that is not JSON, a parent that is not in the trace, a
token count that is not a whole number, a call id answered by no call.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._errors import LoadError
from ..._store.steps import StepSink
from ..common.chat_steps import (
    StepRows,
    StepsRead,
    chat_text,
    json_text,
    token_count,
    tool_arguments,
    usd,
)
from ..common.values import is_int

__all__ = ["MlflowStepsRead", "read_mlflow_steps"]

_MODEL_TYPES = ("LLM", "CHAT_MODEL")
_ERROR = "STATUS_CODE_ERROR"


@dataclass
class MlflowStepsRead(StepsRead):
    """What reading one trace gave; ``unplaced_usage``: spans whose usage no row holds."""

    spans: int = 0
    errors: int = 0
    unplaced_usage: int = 0


@dataclass(frozen=True)
class _Span:
    index: int
    id: str
    parent: str | None
    name: str
    type: str | None
    start: int | None
    end: int | None
    error: str | None
    attrs: Mapping[str, Any]


def _attrs(raw: Mapping[str, Any], source: object, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                raise LoadError(
                    source,
                    f"{where}.attributes.{key}",
                    "not JSON (MLflow stores attributes as JSON)",
                ) from None
        else:
            out[key] = value
    return out


def _span(raw: Any, index: int, source: object, place: str) -> _Span:
    where = f"{place}[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("span_id"), str):
        raise LoadError(source, where, "expected a span object with a span_id (Span.to_dict())")
    attrs = _attrs(raw.get("attributes") or {}, source, where)
    status = raw.get("status") or {}
    error = None
    if isinstance(status, dict) and status.get("code") == _ERROR:
        events = [e for e in raw.get("events") or [] if isinstance(e, dict)]
        exc = next((e.get("attributes") or {} for e in events if e.get("name") == "exception"), {})
        error = str(exc.get("exception.message") or status.get("message") or "error")
    start, end = raw.get("start_time_unix_nano"), raw.get("end_time_unix_nano")
    return _Span(
        index=index,
        id=raw["span_id"],
        parent=raw.get("parent_span_id"),
        name=str(raw.get("name") or ""),
        type=attrs.get("mlflow.spanType"),
        start=start if is_int(start) else None,
        end=end if is_int(end) else None,
        error=error,
        attrs=attrs,
    )


def _time(ns: int | None) -> dt.datetime | None:
    if ns is None:
        return None
    return dt.datetime.fromtimestamp(ns // 1_000_000_000, tz=dt.UTC) + dt.timedelta(
        microseconds=(ns % 1_000_000_000) // 1000
    )


def _message(output: Any) -> Mapping[str, Any]:
    """An LLM span's output as one assistant message ``{content, tool_calls, ...}``."""
    if isinstance(output, dict):
        choices = output.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                return message
        if "content" in output or "tool_calls" in output:
            return output
    if isinstance(output, str) or output is None:
        return {"content": output}
    return {"content": json.dumps(output, ensure_ascii=False)}


def _blocks(
    message: Mapping[str, Any],
) -> tuple[str | None, str | None, list[tuple[Any, str, Any]]]:
    """``(reasoning, text, [(id, name, arguments)])`` of an assistant message, OpenAI-style
    (``tool_calls``) or Anthropic-style (content blocks ``thinking`` / ``text`` /
    ``tool_use``)."""
    content = message.get("content")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    calls: list[tuple[Any, str, Any]] = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call["function"] if isinstance(call.get("function"), dict) else call
            args, _ = tool_arguments(fn.get("arguments"))
            calls.append((call.get("id"), str(fn.get("name") or ""), args))
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "thinking") for b in content
    ):
        texts = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use":
                calls.append((block.get("id"), str(block.get("name") or ""), block.get("input")))
            elif kind == "thinking":
                reasoning = block.get("thinking")
            else:
                texts.append(block)
        return chat_text(reasoning), chat_text(texts) if texts else None, calls
    return chat_text(reasoning), chat_text(content), calls


def _usage(span: _Span, source: object, where: str) -> dict[str, Any] | None:
    usage = span.attrs.get("mlflow.chat.tokenUsage")
    cost = span.attrs.get("mlflow.llm.cost")
    if not isinstance(usage, dict) and not isinstance(cost, dict):
        return None
    usage = usage if isinstance(usage, dict) else {}
    cost = cost if isinstance(cost, dict) else {}
    return {
        "tokens_in": token_count(usage.get("input_tokens"), source, where, "input_tokens"),
        "tokens_out": token_count(usage.get("output_tokens"), source, where, "output_tokens"),
        "tokens_cached": token_count(
            usage.get("cache_read_input_tokens"), source, where, "cache_read_input_tokens"
        ),
        "cost_usd": usd(cost.get("total_cost"), source, where, "total_cost"),
    }


def read_mlflow_steps(
    writer: StepSink,
    *,
    task: str,
    attempt: int,
    spans: Sequence[Any],
    source: object,
    place: str = "spans",
) -> MlflowStepsRead:
    """Write one trace's spans (``Span.to_dict()`` each) as steps; the module docstring
    says how. ``source`` names the trace (``"mlflow.db, trace tr-…"``), ``place`` the
    span list in it: a span's place is ``place[i] (name)``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> from envloop_nb._store.steps import StepWriter
    >>> w = StepWriter(ws.con, job.id)
    >>> attrs = lambda kind, inputs, outputs: {"mlflow.spanType": f'"{kind}"',
    ...     "mlflow.spanInputs": json.dumps(inputs), "mlflow.spanOutputs": json.dumps(outputs)}
    >>> spans = [
    ...     {"span_id": "r", "parent_span_id": None, "name": "bot", "start_time_unix_nano": 1,
    ...      "attributes": attrs("AGENT", {"q": "ls?"}, "done")},
    ...     {"span_id": "t", "parent_span_id": "r", "name": "bash", "start_time_unix_nano": 2,
    ...      "attributes": attrs("TOOL", {"cmd": "ls"}, "a.txt")}]
    >>> got = read_mlflow_steps(w, task="A", attempt=1, spans=spans, source="trace tr-1")
    >>> w.close(), got.tool_calls, got.tool_results
    (3, 1, 1)
    """
    out = MlflowStepsRead()
    rows = StepRows(writer, task, attempt, out)
    parsed = [_span(raw, i, source, place) for i, raw in enumerate(spans)]
    by_id = {s.id: s for s in parsed}
    for s in parsed:
        if s.parent is not None and s.parent not in by_id:
            raise LoadError(
                source, f"{place}[{s.index}]", f"parent span {s.parent!r} is not in the trace"
            )
    order = sorted(parsed, key=lambda s: (s.start is None, s.start or 0, s.index))
    out.spans = len(order)
    position = {s.id: n for n, s in enumerate(order, 1)}
    roots = [s for s in order if s.parent is None]
    root = roots[0] if roots else None

    def ancestors(s: _Span) -> list[_Span]:
        chain, seen = [], {s.id}
        while s.parent is not None and s.parent in by_id and s.parent not in seen:
            s = by_id[s.parent]
            seen.add(s.id)
            chain.append(s)
        return chain

    # usage as MLflow counts it: a span's own where no ancestor has any
    pending: dict[str, dict[str, Any]] = {}
    for s in order:
        usage = _usage(s, source, f"{place}[{s.index}]")
        if usage and not any(_usage(a, source, place) for a in ancestors(s)):
            pending[s.id] = usage
    failed_below = {a.id for s in order if s.error for a in ancestors(s)}
    agent_rows: dict[str, int] = {}
    open_calls: list[tuple[str | None, str]] = []

    def columns(s: _Span) -> tuple[dict[str, Any], dict[str, Any]]:
        owner = next((a for a in [s, *ancestors(s)] if a.id in pending), None)
        first = dict(pending.pop(owner.id)) if owner else {}
        took = (s.end - s.start) / 1e9 if s.start is not None and s.end is not None else None
        first["duration_s"] = took
        agent = next(
            (a for a in ancestors(s) if a.type == "AGENT" and a is not root and a.id in agent_rows),
            None,
        )
        common = {
            "turn": position[s.id],
            "started_at": _time(s.start),
            "agent": agent.name if agent else None,
            "parent_step": agent_rows[agent.id] if agent else None,
            "source_place": f"{source}, {place}[{s.index}] ({s.name})",
        }
        return common, first

    for s in order:
        where = f"{place}[{s.index}]"
        inputs, outputs = s.attrs.get("mlflow.spanInputs"), s.attrs.get("mlflow.spanOutputs")
        if s is root and inputs is not None:
            common, first = columns(s)
            rows.turn(common, first).row(
                role="user", kind="message",
                content=inputs if isinstance(inputs, str) else json_text(inputs),
            )  # fmt: skip
            out.messages += 1
        if s is root and s.type == "AGENT":  # the attempt's own agent
            if s.error and s.id not in failed_below:
                common, first = columns(s)
                rows.turn(common, first).row(
                    role="environment", kind="error", content=s.error, is_error=True
                )
                out.errors += 1
        elif s.type in _MODEL_TYPES:
            common, first = columns(s)
            model = s.attrs.get("mlflow.llm.model")
            if model is None and isinstance(inputs, dict):
                model = inputs.get("model")
            common["model"] = None if model is None else str(model)
            turn = rows.turn(common, first)
            reasoning, text, calls = _blocks(_message(outputs))
            out.messages += 1
            if reasoning:
                turn.row(role="assistant", kind="reasoning", content=reasoning)
            if text or not (calls or reasoning):
                turn.row(role="assistant", kind="message", content=text)
            for cid, name, args in calls:
                cid = None if cid in (None, "") else str(cid)
                turn.call(
                    role="assistant", tool=name or "?", call_id=cid, arguments=json_text(args)
                )
                open_calls.append((cid, name))
            if s.error:
                turn.row(role="environment", kind="error", content=s.error, is_error=True)
                out.errors += 1
        elif s.type == "TOOL":
            common, first = columns(s)
            turn = rows.turn(common, first)
            asked = next((j for j, (_, name) in enumerate(open_calls) if name == s.name), None)
            if asked is not None:
                cid = open_calls.pop(asked)[0]
            else:
                cid = s.id
                turn.call(role="assistant", tool=s.name, call_id=cid, arguments=json_text(inputs))
            content = outputs if isinstance(outputs, str) or outputs is None else json_text(outputs)
            turn.result(
                source, where, role="tool", call_id=cid, tool=s.name,
                is_error=s.error is not None, content=content if content not in (None, "") else s.error,
                extra=json_text({"error": s.error} if s.error else None),
            )  # fmt: skip
        elif s.type == "AGENT":
            common, first = columns(s)
            agent_rows[s.id] = rows.turn(common, first).row(
                role="system", kind="subagent", content=s.name
            )
        elif s.error and s.id not in failed_below:
            common, first = columns(s)
            rows.turn(common, first).row(
                role="environment", kind="error", content=s.error, is_error=True
            )
            out.errors += 1
    out.unplaced_usage = len(pending)
    return out
