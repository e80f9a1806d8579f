"""What the message-list step readers share (Inspect, τ-bench, τ²-bench, an EnvLoop
ChatML input, MLflow spans): numbering an attempt's rows, writing a model turn's rows
with its usage once, pairing each tool result with the call it answers, and reading an
OpenAI-style chat message list.

**Pairing.** A result that names its call (``tool_call_id`` / ``id``) must answer a call
made earlier in the attempt, else it is a :class:`LoadError` naming the file and the
message. A result without an id answers the oldest call not answered yet (real files do
this); with no call left open it is read as it is, a result of no call. A call that is
never answered (the final one, often) is read as it is.

**OpenAI-style messages** (:func:`read_chat_messages`): ``system`` (and ``developer``),
``user``, ``assistant``, ``tool`` (and the legacy ``function``) roles; any other role is
refused. An assistant message is, in order, its reasoning (``reasoning_content`` or
``reasoning``, as vLLM / DeepSeek / OpenRouter write it), its text (when not empty, or
when the message has nothing else), then each of its ``tool_calls`` (``{id, function:
{name, arguments}}``, ``arguments`` a JSON string: parsed; text that is not JSON is kept
as a JSON string and marked ``extra.arguments_not_json``) or its legacy
``function_call``. Content given as a list of parts is joined: text parts as they are,
images as ``[image: url]`` (``[image]`` for inline data), other parts as ``[<type>]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._errors import LoadError
from ..._store.steps import StepSink
from .values import is_int, is_number

__all__ = [
    "StepRows",
    "StepsRead",
    "Turn",
    "chat_text",
    "json_text",
    "read_chat_messages",
    "token_count",
    "tool_arguments",
    "usd",
]

_CHAT_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
_TEXT_PARTS = ("text", "input_text", "output_text")


@dataclass
class StepsRead:
    """What reading one attempt's steps gave (counts of rows written)."""

    rows: int = 0
    messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    tool_errors: int = 0


@dataclass
class StepRows:
    """One attempt's rows: numbered ``1..n`` in the order written, with the calls made so
    far (to check and pair the results)."""

    writer: StepSink
    task: str
    attempt: int
    out: StepsRead
    step: int = 0
    _calls: dict[str, str] = field(default_factory=dict, repr=False)
    _open: list[tuple[str | None, str]] = field(default_factory=list, repr=False)

    def add(self, **values: Any) -> int:
        """Write one row; returns its step number."""
        return self.put(values)

    def put(self, row: dict[str, Any]) -> int:
        """Write one row given as a dict of its columns, which the row becomes (numbered
        and handed to the writer as it is: a fresh dict the caller no longer uses)."""
        self.step += 1
        row["task"], row["attempt"], row["step"] = self.task, self.attempt, self.step
        self.writer.add(row)
        self.out.rows += 1
        return self.step

    def call(self, *, tool: str, call_id: str | None, **values: Any) -> int:
        """A ``tool_call`` row; the call is open until a result answers it."""
        return self.put_call(tool, call_id, values)

    def put_call(self, tool: str, call_id: str | None, row: dict[str, Any]) -> int:
        """:meth:`call` with the row's other columns as a fresh dict (see :meth:`put`)."""
        if call_id is not None:
            self._calls[call_id] = tool
        self._open.append((call_id, tool))
        self.out.tool_calls += 1
        row["kind"], row["tool"], row["call_id"] = "tool_call", tool, call_id
        return self.put(row)

    def result(
        self,
        source: object,
        place: str,
        *,
        call_id: str | None,
        tool: str | None,
        is_error: bool,
        **values: Any,
    ) -> int:
        """A ``tool_result`` row answering ``call_id`` (checked), or without an id the
        oldest open call (none open: a result of no call)."""
        return self.put_result(source, place, call_id, tool, is_error, values)

    def put_result(
        self,
        source: object,
        place: str,
        call_id: str | None,
        tool: str | None,
        is_error: bool,
        row: dict[str, Any],
    ) -> int:
        """:meth:`result` with the row's other columns as a fresh dict (see :meth:`put`)."""
        if call_id is not None:
            if call_id not in self._calls:
                raise LoadError(
                    source, place, f"tool call id {call_id!r} names no earlier tool call"
                )
            tool = tool or self._calls[call_id]
            opened = next((i for i, (cid, _) in enumerate(self._open) if cid == call_id), None)
            if opened is not None:
                del self._open[opened]
        elif self._open:
            _, called = self._open.pop(0)
            tool = tool or called
        self.out.tool_results += 1
        self.out.tool_errors += bool(is_error)
        row["kind"], row["tool"], row["call_id"] = "tool_result", tool, call_id
        row["is_error"] = bool(is_error)
        return self.put(row)

    def turn(self, common: Mapping[str, Any], first: Mapping[str, Any]) -> Turn:
        """The rows of one model turn: ``common`` on each, ``first`` (usage) on the first."""
        return Turn(self, dict(common), dict(first))


@dataclass
class Turn:
    """Rows of one message or model turn: its common columns on each, its usage on the
    first row only (so sums over an attempt are its usage)."""

    rows: StepRows
    common: dict[str, Any]
    first: dict[str, Any]

    def _values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        merged = self.common.copy()
        first = self.first
        if first:
            merged.update(first)
            self.first = {}
        merged.update(values)
        if first.get("extra") and values.get("extra"):  # both JSON objects: merged
            merged["extra"] = json_text(
                {**json.loads(first["extra"]), **json.loads(values["extra"])}
            )
        return merged

    def row(self, **values: Any) -> int:
        return self.rows.put(self._values(values))

    def call(self, *, tool: str, call_id: str | None, **values: Any) -> int:
        return self.rows.put_call(tool, call_id, self._values(values))

    def result(
        self,
        source: object,
        place: str,
        *,
        call_id: str | None,
        tool: str | None,
        is_error: bool,
        **values: Any,
    ) -> int:
        return self.rows.put_result(source, place, call_id, tool, is_error, self._values(values))


#: ``json.dumps(value, ensure_ascii=False, sort_keys=True)`` without building an encoder
#: per call (the same text).
_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def json_text(value: Any) -> str | None:
    """``value`` as JSON text (None stays None)."""
    return None if value is None else _ENCODE(value)


def token_count(value: Any, source: object, place: str, name: str) -> int | None:
    """A token count as given (absent: None, never 0); anything but a whole number >= 0 is
    an error."""
    if value is None:
        return None
    if not is_int(value) or value < 0:
        raise LoadError(source, place, f"{name} must be a whole number >= 0, got {value!r}")
    return value


def usd(value: Any, source: object, place: str, name: str) -> float | None:
    """A cost in USD as given (absent: None); anything but a finite number is an error."""
    if value is None:
        return None
    if not is_number(value):
        raise LoadError(source, place, f"{name} must be a number, got {value!r}")
    return float(value)


def chat_text(value: Any) -> str | None:
    """A message's content as text: a string as it is, a list of parts joined by lines."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_part_text(part) for part in value)
    return json.dumps(value, ensure_ascii=False)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return json.dumps(part, ensure_ascii=False)
    kind = part.get("type")
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return str(part["text"])
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return str(part["refusal"])
    if kind in ("image_url", "image"):
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url or part.get("image")
        if isinstance(url, str) and not url.startswith("data:"):
            return f"[image: {url}]"
        return "[image]"
    return f"[{kind or 'part'}]"


def tool_arguments(value: Any) -> tuple[Any, dict[str, Any]]:
    """Tool-call arguments: a JSON string parsed; text that is not JSON kept as it is
    (with ``{"arguments_not_json": True}`` as the second value, for ``extra``)."""
    if not isinstance(value, str):
        return value, {}
    try:
        return json.loads(value), {}
    except json.JSONDecodeError:
        return value, {"arguments_not_json": True}


def _chat_call(
    source: object, place: str, call: Any
) -> tuple[str | None, str, Any, dict[str, Any]]:
    """An OpenAI ``tool_calls`` entry: ``(id, name, arguments, extra)``."""
    if not isinstance(call, dict):
        raise LoadError(source, place, "expected a tool call object")
    fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise LoadError(source, place, "a tool call without a function name")
    args, extra = tool_arguments(fn.get("arguments"))
    cid = call.get("id")
    return (str(cid) if cid not in (None, "") else None), name, args, extra


def read_chat_messages(
    rows: StepRows,
    messages: Sequence[Any],
    *,
    source: object,
    place: str,
    is_error: Callable[[str | None], bool] | None = None,
    first_turn: int = 1,
    model: str | None = None,
) -> None:
    """Write an OpenAI-style chat message list as steps (the module docstring says how).

    ``place`` names the list in ``source`` (``"traj"``): a message's place is
    ``place[i]``, its ``turn`` ``first_turn + i``. ``is_error`` decides from a tool
    result's text whether the call failed (the format has no flag; default: never);
    ``model`` is set on the assistant's rows.
    """
    for i, message in enumerate(messages):
        where = f"{place}[{i}]"
        if not isinstance(message, dict):
            raise LoadError(source, where, "expected a message object")
        role = _CHAT_ROLES.get(message.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise LoadError(
                source,
                where,
                f"unknown role {message.get('role')!r} "
                "(system, developer, user, assistant, tool or function)",
            )
        rows.out.messages += 1
        common = {
            "turn": first_turn + i,
            "model": model if role == "assistant" else None,
            "source_place": f"{source}, {where}",
        }
        extra = {"role": message["role"]} if message["role"] != role else {}
        turn = rows.turn(common, {"extra": json_text(extra or None)})
        text = chat_text(message.get("content"))
        if role == "tool":
            cid = message.get("tool_call_id")
            name = message.get("name")
            turn.result(
                source,
                where,
                role="tool",
                call_id=str(cid) if cid not in (None, "") else None,
                tool=name if isinstance(name, str) and name else None,
                is_error=bool(is_error(text)) if is_error else False,
                content=text,
            )
            continue
        calls = (message.get("tool_calls") or []) if role == "assistant" else []
        if not isinstance(calls, list):
            raise LoadError(source, f"{where}.tool_calls", "expected a list of tool calls")
        legacy = message.get("function_call") if role == "assistant" else None
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning and role == "assistant":
            turn.row(role=role, kind="reasoning", content=chat_text(reasoning))
        if text or not (calls or legacy or (reasoning and role == "assistant")):
            turn.row(role=role, kind="message", content=text)
        for j, call in enumerate(calls):
            cid, name, args, more = _chat_call(source, f"{where}.tool_calls[{j}]", call)
            turn.call(
                role=role, tool=name, call_id=cid, arguments=json_text(args),
                extra=json_text(more or None),
            )  # fmt: skip
        if legacy:
            _, name, args, more = _chat_call(source, f"{where}.function_call", legacy)
            turn.call(
                role=role, tool=name, call_id=None, arguments=json_text(args),
                extra=json_text(more or None),
            )  # fmt: skip
