"""An Inspect AI sample's steps: its ``messages``, with timing and usage from its
``events``. The sample is the parsed JSON of either log form (the ``.json`` log's
``samples[i]``, the ``.eval`` archive's ``samples/<id>_epoch_<n>.json`` member); in both
``messages`` is the whole conversation (an ``.eval`` log's ``message_pool`` /
``input_refs`` only shorten the model events' inputs, which are not read).

How a sample becomes rows (``envloop_nb._store.steps``), message ``i`` being turn ``i + 1``:

- ``system`` / ``user``: a message. ``assistant``: its reasoning parts
  (``ContentReasoning``: the text, or the summary of redacted reasoning), its text
  (when not empty, or when the message has nothing else), each server-side
  ``tool_use`` part (a call and its result at once), then each of its ``tool_calls``
  (``{id, function, arguments}``; a ``parse_error`` kept in ``extra``). ``tool``: the
  result of the call its ``tool_call_id`` names; ``error`` (``{type, message}``) makes it
  ``is_error`` (the message kept in ``extra``, and as the content when there is none).
  Content is a string or a list of parts: text as it is, images / audio / video /
  documents as ``[image]``-style markers, provider-internal ``data`` parts left out.
- ``attachment://<hash>`` references (Inspect's de-duplication) are resolved from the
  sample's ``attachments``; a reference it lacks is an error.
- **Usage and time.** The agent's ``model`` events (those inside a scorer's span are the
  scorer's, not the agent's) are matched to the assistant messages they produced: by
  the id of ``output.choices[0].message`` where the log has message ids, else in order.
  A matched event's ``output.usage`` (``input_tokens``, ``output_tokens``,
  ``input_tokens_cache_read``, ``total_cost``) goes on the first row of its message's
  turn, its ``timestamp`` is the turn's ``started_at`` and ``completed - timestamp``
  (else ``working_time``) its ``duration_s``. A ``tool`` event gives its result's
  ``started_at`` / ``duration_s`` (and an error the message lacks).
- A model event that failed (``error``, its output in no message) is an ``error`` row
  (``environment``) before the next message a later model call produced, with the
  event's usage; the sample's own ``error`` is a last ``error`` row unless a failed
  model call already said the same.

Sums: where the log states usage per call, the rows' tokens sum to the sample's
``model_usage`` except for calls that match no message (sub-agents run as tools, whose
messages are not the sample's); :class:`InspectStepsRead` counts them.

Refused with a :class:`LoadError` naming the file, sample and message: an unknown
role, a result whose ``tool_call_id`` names no earlier call, a tool call without a
function, a missing attachment, a token count that is not a whole number.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..._errors import LoadError
from ..._store.steps import StepSink
from ..common.chat_steps import (
    StepRows,
    StepsRead,
    Turn,
    json_text,
    token_count,
    tool_arguments,
    usd,
)
from ..common.values import duration_s, is_number, parse_time

__all__ = ["InspectStepsRead", "read_inspect_steps"]

_ROLES = ("system", "user", "assistant", "tool")
_ATTACHMENT = "attachment://"
_MEDIA = ("image", "audio", "video", "document")
_SCORER_SPANS = ("scorer", "scorers")


@dataclass
class InspectStepsRead(StepsRead):
    """What reading one sample gave: rows and counts, the agent's model events, those
    matched to no message, and the error rows written."""

    model_events: int = 0
    unmatched_events: int = 0
    errors: int = 0


def _resolver(sample: Mapping[str, Any], source: object, place: str) -> Callable[[Any, str], Any]:
    attachments = sample.get("attachments") or {}

    def resolve(value: Any, where: str) -> Any:
        if isinstance(value, str):
            if not value.startswith(_ATTACHMENT):
                return value
            key = value[len(_ATTACHMENT) :]
            if key not in attachments:
                raise LoadError(
                    source, f"{place}, {where}", f"{value!r} is not in the sample's attachments"
                )
            return attachments[key]
        if isinstance(value, list):
            return [resolve(v, where) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v, where) for k, v in value.items()}
        return value

    return resolve


def _agent_calls(
    events: Any,
) -> tuple[list[tuple[int, Mapping[str, Any]]], dict[Any, tuple[int, Mapping[str, Any]]]]:
    """The agent's ``model`` events (``(index, event)``, in order) and its ``tool`` events
    by id: the sample's top-level events outside any scorer, by span (``span_begin`` of
    type scorer, and its descendants) or, in older logs, between a scorer ``step``
    event's begin and end."""
    models: list[tuple[int, Mapping[str, Any]]] = []
    tools: dict[Any, tuple[int, Mapping[str, Any]]] = {}
    if not isinstance(events, list):
        return models, tools
    scorer_spans: set[Any] = set()
    in_scorer = 0
    for k, event in enumerate(events):
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        if kind == "model" or kind == "tool":
            if in_scorer or event.get("span_id") in scorer_spans:
                continue
            if kind == "model":
                models.append((k, event))
            elif event.get("id"):
                tools[event["id"]] = (k, event)
        elif kind == "span_begin":
            scorer = event.get("type") in _SCORER_SPANS or event.get("parent_id") in scorer_spans
            if scorer and event.get("id") is not None:
                scorer_spans.add(event["id"])
        elif kind == "step" and event.get("type") in _SCORER_SPANS:
            in_scorer += 1 if event.get("action") == "begin" else -1
    return models, tools


def _output_id(event: Mapping[str, Any]) -> Any:
    output = event.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message.get("id")
    return None


def _timing(
    event: Mapping[str, Any], source: object, where: str
) -> tuple[dt.datetime | None, float | None]:
    start = parse_time(event.get("timestamp"), source, where, "timestamp")
    end = parse_time(event.get("completed"), source, where, "completed")
    took = duration_s(start, end)
    if took is None and is_number(event.get("working_time")):
        took = float(event["working_time"])
    return start, took


def _usage(event: Mapping[str, Any], source: object, where: str) -> dict[str, Any]:
    output = event.get("output")
    usage = output.get("usage") if isinstance(output, dict) else None
    if not isinstance(usage, dict):
        return {}
    return {
        "tokens_in": token_count(usage.get("input_tokens"), source, where, "usage.input_tokens"),
        "tokens_out": token_count(usage.get("output_tokens"), source, where, "usage.output_tokens"),
        "tokens_cached": token_count(
            usage.get("input_tokens_cache_read"), source, where, "usage.input_tokens_cache_read"
        ),
        "cost_usd": usd(usage.get("total_cost"), source, where, "usage.total_cost"),
    }


def _error_text(error: Any) -> str | None:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "error")
    return None if error in (None, "", False) else str(error)


def _parts(content: Any) -> tuple[list[Mapping[str, Any]], str | None, list[Mapping[str, Any]]]:
    """A content's reasoning parts, its text, and its server-side tool uses."""
    if content is None or isinstance(content, str):
        return [], content, []
    if not isinstance(content, list):
        return [], json.dumps(content, ensure_ascii=False), []
    reasoning: list[Mapping[str, Any]] = []
    uses: list[Mapping[str, Any]] = []
    texts: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "reasoning":
            reasoning.append(part)
        elif kind == "tool_use":
            uses.append(part)
        elif kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind in _MEDIA:
            texts.append(f"[{kind}]")
        elif kind != "data":  # provider-internal payload: not content people read
            texts.append(part if isinstance(part, str) else json.dumps(part, ensure_ascii=False))
    return reasoning, "\n".join(texts) if texts else None, uses


@dataclass
class _Sample:
    rows: StepRows
    out: InspectStepsRead
    source: object
    place: str

    def where(self, sub: str) -> str:
        return f"{self.place}, {sub}"

    def error_row(self, event: Mapping[str, Any], k: int, text: str) -> None:
        where = f"events[{k}]"
        start, took = _timing(event, self.source, self.where(where))
        self.rows.turn(
            {"started_at": start, "source_place": f"{self.source}, {self.where(where)}"},
            {**_usage(event, self.source, self.where(where)), "duration_s": took},
        ).row(role="environment", kind="error", content=text, is_error=True)
        self.out.errors += 1

    def assistant(self, turn: Turn, message: Mapping[str, Any], where: str) -> None:
        reasoning, text, uses = _parts(message.get("content"))
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise LoadError(self.source, self.where(f"{where}.tool_calls"), "expected a list")
        for part in reasoning:
            redacted = bool(part.get("redacted"))
            turn.row(
                role="assistant",
                kind="reasoning",
                content=part.get("summary") or "[redacted reasoning]"
                if redacted
                else part.get("reasoning"),
                extra=json_text({"redacted": True} if redacted else None),
            )
        if text or not (reasoning or uses or calls):
            turn.row(role="assistant", kind="message", content=text)
        for part in uses:
            cid = part.get("id")
            turn.call(
                role="assistant",
                tool=str(part.get("name") or part.get("tool_type") or "tool_use"),
                call_id=cid,
                arguments=json_text(tool_arguments(part.get("arguments"))[0]),
                extra=json_text({"server_side": True, "tool_type": part.get("tool_type")}),
            )
            error = _error_text(part.get("error"))
            turn.result(
                self.source,
                self.where(where),
                role="tool",
                call_id=cid,
                tool=None,
                is_error=error is not None,
                content=part.get("result") or error,
                extra=json_text({"error": error} if error else None),
            )
        for j, call in enumerate(calls):
            cwhere = self.where(f"{where}.tool_calls[{j}]")
            if not isinstance(call, dict) or not isinstance(call.get("function"), str):
                raise LoadError(self.source, cwhere, "a tool call without a function name")
            extra = {"parse_error": call["parse_error"]} if call.get("parse_error") else None
            turn.call(
                role="assistant",
                tool=call["function"],
                call_id=None if call.get("id") in (None, "") else str(call["id"]),
                arguments=json_text(call.get("arguments", {})),
                extra=json_text(extra),
            )


def read_inspect_steps(
    writer: StepSink,
    *,
    task: str,
    attempt: int,
    sample: Mapping[str, Any],
    source: object,
    place: str,
    refs: bool | None = None,
) -> InspectStepsRead:
    """Write one Inspect sample's messages as steps (the module docstring says how).

    ``source`` is the log file, ``place`` the sample in it (``"samples[0]"``, or the
    ``.eval`` member ``"samples/0_epoch_1.json"``). The messages are walked for
    ``attachment://`` references only when their text holds one (Inspect condenses events
    far more often than messages); ``refs`` says so instead when the caller knows (the
    loader asks DuckDB, which has the messages' JSON text).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from pathlib import Path
    >>> from envloop_nb._loaders.inspect.read import open_inspect_log
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> from envloop_nb._store.steps import StepWriter
    >>> w = StepWriter(ws.con, job.id)
    >>> log = open_inspect_log(Path("../shared/fixtures/trajectories/inspect/log_message_deduplication.eval"))
    >>> place, sample = next(log.samples())
    >>> got = read_inspect_steps(w, task="A", attempt=1, sample=sample, source=log.path.name,
    ...                          place=place)
    >>> (got.messages, got.tool_calls, got.tool_results, got.model_events)
    (12, 5, 5, 6)
    """
    messages = sample.get("messages")
    if not isinstance(messages, list):
        raise LoadError(source, f"{place}, messages", "expected a list of messages")
    if refs is None:  # a reference is a string: its repr holds the prefix as it is
        refs = _ATTACHMENT in repr(messages)
    resolve = _resolver(sample, source, place) if refs else None
    out = InspectStepsRead()
    s = _Sample(StepRows(writer, task, attempt, out), out, source, place)

    # the agent's model events, matched to assistant messages (by output id, else in order)
    assistants = [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    ids = {messages[i].get("id"): i for i in assistants if messages[i].get("id")}
    models, tools = _agent_calls(sample.get("events"))
    out.model_events = len(models)
    by_id = any(_output_id(e) in ids for _, e in models)
    matched: dict[int, tuple[int, Mapping[str, Any]]] = {}
    errors_before: dict[int | None, list[tuple[int, Mapping[str, Any], str]]] = {}
    pending: list[tuple[int, Mapping[str, Any], str]] = []
    free = iter(assistants)
    for k, event in models:
        if by_id:
            i = ids.get(_output_id(event))
        else:
            i = None if event.get("error") else next(free, None)
        if i is not None and i not in matched:
            matched[i] = (k, event)
            if pending:
                errors_before.setdefault(i, []).extend(pending)
                pending = []
        elif event.get("error"):
            pending.append((k, event, str(event["error"])))
        else:
            out.unmatched_events += 1
    errors_before.setdefault(None, []).extend(pending)

    for i, raw in enumerate(messages):
        where = f"messages[{i}]"
        for k, event, failure in errors_before.get(i, []):
            s.error_row(event, k, failure)
        if not isinstance(raw, dict):
            raise LoadError(source, s.where(where), "expected a message object")
        role = raw.get("role")
        if role not in _ROLES:
            raise LoadError(
                source, s.where(where), f"unknown role {role!r} (system, user, assistant or tool)"
            )
        message = raw if resolve is None else resolve(raw, where)
        out.messages += 1
        common: dict[str, Any] = {"turn": i + 1, "source_place": f"{source}, {s.where(where)}"}
        first: dict[str, Any] = {}
        if role == "assistant":
            common["model"] = message.get("model")
            if i in matched:
                k, event = matched[i]
                ewhere = s.where(f"events[{k}]")
                start, took = _timing(event, source, ewhere)
                common["started_at"] = start
                common["model"] = common["model"] or event.get("model")
                first = {**_usage(event, source, ewhere), "duration_s": took}
            s.assistant(s.rows.turn(common, first), message, where)
        elif role == "tool":
            cid = message.get("tool_call_id")
            _, tool_event = tools.get(cid, (None, {}))
            start, took = _timing(tool_event, source, s.where(where))
            error = message.get("error") or tool_event.get("error")
            error_text = _error_text(error)
            _, text, _ = _parts(message.get("content"))
            extra = (
                {"error": error if isinstance(error, dict) else {"message": error_text}}
                if error_text
                else None
            )
            s.rows.turn({**common, "started_at": start}, {"duration_s": took}).result(
                source,
                s.where(where),
                role="tool",
                call_id=None if cid in (None, "") else str(cid),
                tool=message.get("function"),
                is_error=error_text is not None,
                content=text or error_text,
                extra=json_text(extra),
            )
        else:
            reasoning, text, _ = _parts(message.get("content"))
            turn = s.rows.turn(common, first)
            for part in reasoning:
                turn.row(role=role, kind="reasoning", content=part.get("reasoning"))
            turn.row(role=role, kind="message", content=text)

    said = set()
    for k, event, failure in errors_before.get(None, []):
        s.error_row(event, k, failure)
        said.add(failure)
    last = _error_text(sample.get("error"))
    if last is not None and last not in said:
        s.rows.turn({"source_place": f"{source}, {s.where('error')}"}, {}).row(
            role="environment", kind="error", content=last, is_error=True
        )
        out.errors += 1
    return out
