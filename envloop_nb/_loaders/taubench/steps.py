"""τ-bench and τ²-bench trajectories as steps (``formats/tau-bench.md``).

**τ-bench** (:func:`read_tau_steps`): a result's ``traj`` is an OpenAI-style message list
(read by :func:`envloop_nb._loaders.common.chat_steps.read_chat_messages`): the system prompt
(the domain policy), ``user`` messages (τ-bench's user simulator), ``assistant``
messages with ``tool_calls`` (``{id, function: {name, arguments}}``, ``arguments`` a
JSON string) and ``tool`` messages naming their call by ``tool_call_id``. τ-bench has
no error flag: its environment answers a tool that raised with ``"Error: <exception>"``
and a tool it does not have with ``"Unknown action <name>"`` (``tau_bench/envs/base.py``,
``Env.step``), so a tool result whose text starts with either is ``is_error``
(:func:`is_tau_error`). The file has no usage, time or cost per message.

**τ²-bench** (:func:`read_tau2_steps`): a simulation's ``messages`` (``tau2.data_model.
message``): ``system``; ``assistant`` and ``user`` (the user simulator) with ``content``
and ``tool_calls`` (``{id, name, arguments, requestor}``, arguments an object; the user
has tools of its own in some domains); ``tool`` messages naming their call by ``id``
with τ²'s own ``error`` flag; a ``MultiToolMessage`` (role ``tool`` with
``tool_messages``) is its tool messages in order. Each message's ``timestamp`` is the
row's ``started_at``, ``generation_time_seconds`` its ``duration_s``. An assistant
message's ``usage`` (``prompt_tokens``, ``completion_tokens``) and ``cost`` are the turn's
usage, on its first row, so the rows' ``cost_usd`` sums to the simulation's
``agent_cost``; a user message's usage and cost are the user simulator's, kept in the
row's ``extra`` (``simulator_usage``, ``simulator_cost``: they sum to ``user_cost``,
which is not the agent's). ``turn_idx`` equals the message's index in the files seen;
``turn`` is the index + 1 as for every message-list source.

Both: message ``i`` is turn ``i + 1``; an unknown role, a result whose id names no
earlier call, a tool call without a name, a token count or cost that is not a number is
a :class:`LoadError` naming the file and the message. A result without an id answers
the oldest open call; a final call with no result is read as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._errors import LoadError
from ..._store.steps import StepSink
from ..common.chat_steps import (
    StepRows,
    StepsRead,
    chat_text,
    json_text,
    read_chat_messages,
    token_count,
    usd,
)
from ..common.values import is_number, parse_time

__all__ = ["is_tau_error", "read_tau2_steps", "read_tau_steps"]

_TAU_ERRORS = ("Error:", "Unknown action ")
_TAU2_ROLES = ("system", "user", "assistant", "tool")


def is_tau_error(text: str | None) -> bool:
    """Whether a τ-bench tool result is its environment's error (``"Error: …"`` from a
    tool that raised, ``"Unknown action …"`` for a tool it does not have)."""
    return isinstance(text, str) and text.startswith(_TAU_ERRORS)


def read_tau_steps(
    writer: StepSink,
    *,
    task: str,
    attempt: int,
    traj: Sequence[Any],
    source: object,
    place: str,
    model: str | None = None,
) -> StepsRead:
    """Write one τ-bench result's ``traj`` as steps (``place``: the result, ``"[13]"``;
    a message's place is ``[13].traj[i]``). ``model`` is the agent's, set on its rows.

    Examples
    --------
    >>> import json, envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> from envloop_nb._store.steps import StepWriter
    >>> w = StepWriter(ws.con, job.id)
    >>> path = "../shared/fixtures/trajectories/tau-bench/gpt-4o-airline.excerpt-task13-trials.json"
    >>> result = json.load(open(path))[0]
    >>> got = read_tau_steps(w, task="A", attempt=1, traj=result["traj"], source=path,
    ...                      place="[0]")
    >>> (got.messages, got.tool_calls, got.tool_results, got.tool_errors)
    (58, 14, 14, 6)
    """
    if not isinstance(traj, list):
        raise LoadError(
            source, f"{place}.traj", f"expected a message list, got {type(traj).__name__}"
        )
    out = StepsRead()
    rows = StepRows(writer, task, attempt, out)
    read_chat_messages(
        rows, traj, source=source, place=f"{place}.traj", is_error=is_tau_error, model=model
    )
    return out


def _usage(
    message: Mapping[str, Any], source: object, place: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(usage columns, extra)``: a message's usage and cost as checked numbers."""
    usage = message.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise LoadError(source, f"{place}.usage", f"expected an object, got {usage!r}")
    usage = usage or {}
    cols = {
        "tokens_in": token_count(usage.get("prompt_tokens"), source, place, "usage.prompt_tokens"),
        "tokens_out": token_count(
            usage.get("completion_tokens"), source, place, "usage.completion_tokens"
        ),
        "cost_usd": usd(message.get("cost"), source, place, "cost"),
    }
    return cols, {}


def _tau2_message(
    rows: StepRows,
    message: Any,
    *,
    source: object,
    where: str,
    turn: int,
    model: str | None,
) -> None:
    if not isinstance(message, dict):
        raise LoadError(source, where, "expected a message object")
    role = message.get("role")
    if role not in _TAU2_ROLES:
        raise LoadError(source, where, f"unknown role {role!r} (system, user, assistant or tool)")
    if role == "tool" and isinstance(message.get("tool_messages"), list):  # MultiToolMessage
        for j, inner in enumerate(message["tool_messages"]):
            _tau2_message(
                rows, inner, source=source, where=f"{where}.tool_messages[{j}]", turn=turn,
                model=model,
            )  # fmt: skip
        return
    rows.out.messages += 1
    gen = message.get("generation_time_seconds")
    if gen is not None and not is_number(gen):
        raise LoadError(source, where, f"generation_time_seconds must be a number, got {gen!r}")
    common: dict[str, Any] = {
        "turn": turn,
        "started_at": parse_time(message.get("timestamp"), source, where, "timestamp"),
        "source_place": f"{source}, {where}",
    }
    text = chat_text(message.get("content"))
    if role == "tool":
        cid = message.get("id")
        extra = {"requestor": message["requestor"]} if message.get("requestor") == "user" else {}
        rows.turn(common, {}).result(
            source,
            where,
            role="tool",
            call_id=str(cid) if cid not in (None, "") else None,
            tool=None,
            is_error=bool(message.get("error")),
            content=text,
            extra=json_text(extra or None),
        )
        return
    usage, extra = _usage(message, source, where)
    if role == "assistant":
        first: dict[str, Any] = {**usage, "duration_s": gen}
        common["model"] = model
    else:  # the user simulator's (or the system's): not the agent's usage
        first = {"duration_s": gen}
        sim = message.get("usage")
        if sim is not None:
            extra["simulator_usage"] = sim
        if usage["cost_usd"] is not None:
            extra["simulator_cost"] = usage["cost_usd"]
    for key in ("context_truncation", "is_audio"):
        if message.get(key):
            extra[key] = message[key]
    first["extra"] = json_text(extra or None)
    turn_rows = rows.turn(common, first)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise LoadError(source, f"{where}.tool_calls", "expected a list of tool calls")
    if text or not calls:
        turn_rows.row(role=role, kind="message", content=text)
    for j, call in enumerate(calls):
        place = f"{where}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise LoadError(source, place, "expected a tool call object")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise LoadError(source, place, "a tool call without a name")
        cid = call.get("id")
        turn_rows.call(
            role=role,
            tool=name,
            call_id=str(cid) if cid not in (None, "") else None,
            arguments=json_text(call.get("arguments", {})),
        )


def read_tau2_steps(
    writer: StepSink,
    *,
    task: str,
    attempt: int,
    messages: Sequence[Any],
    source: object,
    place: str,
    model: str | None = None,
) -> StepsRead:
    """Write one τ²-bench simulation's ``messages`` as steps (``place``: the simulation,
    ``"simulations[2]"``; a message's place is ``simulations[2].messages[i]``). ``model``
    is the agent's (``info.agent_info.llm``), set on its rows.

    Examples
    --------
    >>> import json, envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> from envloop_nb._store.steps import StepWriter
    >>> w = StepWriter(ws.con, job.id)
    >>> path = "../shared/fixtures/trajectories/tau2-bench/ironshell_ironforge_v3_deepseek.json"
    >>> sim = json.load(open(path))["simulations"][0]
    >>> got = read_tau2_steps(w, task="A", attempt=1, messages=sim["messages"], source=path,
    ...                       place="simulations[0]")
    >>> (got.messages, got.tool_calls, got.tool_results, got.tool_errors)
    (34, 11, 11, 0)
    """
    if not isinstance(messages, list):
        raise LoadError(
            source, f"{place}.messages", f"expected a message list, got {type(messages).__name__}"
        )
    out = StepsRead()
    rows = StepRows(writer, task, attempt, out)
    for i, message in enumerate(messages):
        _tau2_message(
            rows, message, source=source, where=f"{place}.messages[{i}]", turn=i + 1, model=model
        )
    return out
