"""An attempt's steps as a trajectory another tool reads (pure: step rows in, JSON out).

Two shapes, one per dataset format of :func:`envloop_nb.export_dataset`:

**OpenAI chat** (``format="openai_chat"``, :func:`chat_messages`): the conversation the
model saw and wrote, ready for SFT.

- ``system`` / ``user`` rows are messages of that role; an ``environment`` row (a harness
  error, a result of no call such as a parser error sent back) is a ``user`` message: the
  harness speaking to the model.
- one model turn (the ``assistant`` rows sharing ``turn``) is ONE assistant message: its
  text as ``content`` (``null`` when it wrote none), its reasoning as
  ``reasoning_content`` (the field vLLM, DeepSeek and most SFT chat templates use; texts
  of several rows joined by a blank line), its calls as ``tool_calls`` (``arguments`` a
  JSON string). Text or reasoning written after a tool result starts a new message.
- a ``tool`` result is a ``tool`` message with ``tool_call_id``: its own ``call_id``, or
  without one the oldest unanswered call of the open assistant message. A call without
  an id gets ``call_<step>`` (OpenAI's format requires one); that is the only id ever
  made up (counted in ``notes.synthesized_call_ids``). A result whose call is not in
  the conversation is a ``user`` message (``notes.results_without_call``). A call never
  answered (a final ``finish``, often) stays as recorded (``notes.unanswered_calls``).
- left out, and counted in ``notes``: copied context (``copied``: ATIF's
  ``is_copied_context``, which consumers are told to drop from SFT data) and sub-agents
  (the hand-off row and every row of the sub-agent: another agent's conversation, not
  this one's). Usage, durations and ``is_error`` have no place in the format.

**ATIF** (``format="atif"``, :func:`atif_document`): one ``ATIF-v1.7`` trajectory.

- rows are grouped into ATIF steps: each ``system`` / ``user`` row is a step of that
  source; a model turn's ``assistant`` rows are one ``agent`` step (reasoning as
  ``reasoning_content``, text as ``message``, calls as ``tool_calls`` with ``arguments``
  an object) and the results answering its calls are that step's ``observation``
  (``source_call_id`` where the result named its call); an ``environment`` row (a result
  of no call) joins its turn's agent step as a result without a call when no call of
  that step is open (as Harbor writes a parser error), else it is a ``system`` step
  whose observation holds it. Usage is the step's ``metrics`` (the sum
  of its rows'), ``copied`` is ``is_copied_context``; an error is the result's
  ``extra.is_error``, a duration its ``extra.duration_s``; the usage of a row that is
  not the agent's (rare) is its step's ``extra.metrics`` (ATIF has ``metrics`` on agent
  steps only). A row's ``extra`` goes to its step's (``reasoning_effort`` and
  ``llm_call_count`` to the step's own fields).
- a call without an id gets ``call_<step>`` (ATIF's ``tool_call_id`` is required); a
  result keeps no id it did not have (``source_call_id`` is optional: it pairs by order).
- a sub-agent's rows are an embedded trajectory in the root's ``subagent_trajectories``
  (v1.7), referenced by ``trajectory_id`` from the hand-off (an observation result).

Read back with :func:`envloop_nb._loaders.harbor.atif.read_atif`, an exported trajectory gives
the same rows except: ``turn`` is renumbered (the ATIF step id), a result follows the
call it answers, a ``kind`` of ``error`` or ``context_summary`` reads back as a
``tool_result`` / ``message``, a sub-agent hand-off's role is ``system``, synthesized
call ids are kept, durations and ``source_place`` are not read back. Harbor's own
trajectories (``fixtures/trajectories/harbor-atif``) read back row for row.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._present.cases_html import is_missing

__all__ = [
    "ATIF_VERSION",
    "ChatConversation",
    "atif_document",
    "chat_messages",
    "is_missing_value",
]

ATIF_VERSION = "ATIF-v1.7"
_USAGE = (
    ("tokens_in", "prompt_tokens"),
    ("tokens_out", "completion_tokens"),
    ("tokens_cached", "cached_tokens"),
    ("cost_usd", "cost_usd"),
)


def is_missing_value(value: Any) -> bool:
    """``None``, NaN, ``pd.NA`` or ``NaT`` (what a frame row holds for a missing value)."""
    return is_missing(value)


def _v(row: Mapping[str, Any], key: str) -> Any:
    value = row.get(key)
    return None if is_missing_value(value) else value


def _join(old: str | None, new: str | None) -> str | None:
    if new is None:
        return old
    return new if old is None else f"{old}\n\n{new}"


def _call_id(row: Mapping[str, Any]) -> tuple[str, bool]:
    """The call's id, or ``call_<step>`` when it has none (and whether it was made up)."""
    cid = _v(row, "call_id")
    return (str(cid), False) if cid is not None else (f"call_{int(row['step'])}", True)


def _arguments(row: Mapping[str, Any]) -> Any:
    """A call's arguments as a value (stored as JSON text; absent: an empty object)."""
    raw = _v(row, "arguments")
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


# -- OpenAI chat ------------------------------------------------------------------------


@dataclass
class ChatConversation:
    """An attempt as OpenAI chat ``messages`` and what the conversion left out or made."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    dropped_copied: int = 0
    dropped_subagent: int = 0
    synthesized_call_ids: int = 0
    results_without_call: int = 0
    unanswered_calls: int = 0

    def notes(self) -> dict[str, int]:
        """The counts, as a line's ``notes``."""
        return {
            "dropped_copied": self.dropped_copied,
            "dropped_subagent": self.dropped_subagent,
            "results_without_call": self.results_without_call,
            "synthesized_call_ids": self.synthesized_call_ids,
            "unanswered_calls": self.unanswered_calls,
        }


def chat_messages(rows: Sequence[Mapping[str, Any]]) -> ChatConversation:
    """An attempt's step rows (in step order) as OpenAI chat messages (module docstring).

    Examples
    --------
    >>> rows = [
    ...     {"step": 1, "turn": 1, "role": "user", "kind": "message", "content": "ls?"},
    ...     {"step": 2, "turn": 2, "role": "assistant", "kind": "reasoning", "content": "hm"},
    ...     {"step": 3, "turn": 2, "role": "assistant", "kind": "tool_call", "tool": "bash",
    ...      "arguments": '{"cmd": "ls"}'},
    ...     {"step": 4, "turn": 2, "role": "tool", "kind": "tool_result", "content": "a.txt"},
    ... ]
    >>> conv = chat_messages(rows)
    >>> [m["role"] for m in conv.messages], conv.messages[1]["tool_calls"][0]["id"]
    (['user', 'assistant', 'tool'], 'call_3')
    >>> conv.messages[2]["tool_call_id"], conv.messages[1]["reasoning_content"]
    ('call_3', 'hm')
    """
    out = ChatConversation()
    current: dict[str, Any] | None = None  # the open assistant message
    turn: Any = None
    answered_since = False  # a tool result followed the open message
    open_calls: list[str] = []  # ids of its calls no result answered yet, in order
    ids: set[str] = set()  # every call id of the conversation so far

    def close() -> None:
        nonlocal current
        if current is not None:
            out.unanswered_calls += len(open_calls)
            open_calls.clear()
        current = None

    for r in rows:
        role, kind = str(r.get("role")), str(r.get("kind"))
        if _v(r, "copied"):
            out.dropped_copied += 1
            continue
        if _v(r, "agent") is not None or kind == "subagent":
            out.dropped_subagent += 1
            continue
        content = _v(r, "content")
        text = None if content is None else str(content)
        if role == "assistant":
            row_turn = _v(r, "turn")
            same_turn = turn == row_turn if row_turn is not None and turn is not None else True
            keep = current is not None and same_turn
            if keep and kind != "tool_call" and answered_since:
                keep = False  # text after a tool result: the next message
            if not keep:
                close()
                current = {"role": "assistant", "content": None}
                out.messages.append(current)
                turn, answered_since = row_turn, False
            assert current is not None
            if kind == "tool_call":
                cid, made = _call_id(r)
                out.synthesized_call_ids += made
                arguments = _arguments(r)
                current.setdefault("tool_calls", []).append(
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": str(r.get("tool")),
                            "arguments": arguments
                            if isinstance(arguments, str)
                            else json.dumps(arguments, ensure_ascii=False),
                        },
                    }
                )
                open_calls.append(cid)
                ids.add(cid)
            elif kind == "reasoning":
                current["reasoning_content"] = _join(current.get("reasoning_content"), text)
            else:
                current["content"] = _join(current["content"], text)
            continue
        if role == "tool":
            cid = _v(r, "call_id")
            answer: str | None = None
            if cid is not None and str(cid) in ids:
                answer = str(cid)
                if answer in open_calls:
                    open_calls.remove(answer)
            elif cid is None and open_calls:
                answer = open_calls.pop(0)
            if answer is not None:
                out.messages.append({"role": "tool", "tool_call_id": answer, "content": text or ""})
                answered_since = True
                continue
            out.results_without_call += 1
        close()
        chat_role = role if role in ("system", "user") else "user"
        out.messages.append({"role": chat_role, "content": text or ""})
    close()
    return out


# -- ATIF ---------------------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    if is_missing_value(value):
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        text: str = value.astimezone(dt.UTC).isoformat()
        return text.replace("+00:00", "Z")
    return str(value)


def _extra(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = _v(row, "extra")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return dict(raw) if isinstance(raw, dict) else {}


@dataclass
class _Step:
    """An ATIF step being built from rows."""

    source: str
    turn: Any
    copied: bool
    rows: list[Mapping[str, Any]] = field(default_factory=list)
    message: str | None = None
    reasoning: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    call_ids: dict[str, str] = field(default_factory=dict)  # the rows' ids -> the step's
    free: int = 0  # calls with no result yet

    def takes(self, row: Mapping[str, Any], kind: str) -> bool:
        """Whether ``row`` (of the attempt's own agent) continues this agent step."""
        turn = _v(row, "turn")
        same = (self.turn == turn) if turn is not None and self.turn is not None else True
        if self.source != "agent" or not same or self.copied != bool(_v(row, "copied")):
            return False
        if kind == "tool_call":
            return not any(r.get("_loose") for r in self.results)  # loose ones come last
        if kind == "reasoning":
            return self.message is None and not self.calls and not self.results
        if kind == "ref":  # a hand-off: a loose result, read after the calls and results
            return True
        return not self.calls and not self.results  # text comes before the calls


def _holds_ref(cur: _Step, row: Mapping[str, Any], copied: bool) -> bool:
    """Whether a hand-off that is not the agent's own joins step ``cur``: an agent step,
    or the system step of its turn (Harbor's summarization: a message and its refs)."""
    if cur.copied != copied:
        return False
    return cur.source == "agent" or (cur.source == "system" and cur.turn == _v(row, "turn"))


class _Atif:
    """Builds one document: the root's steps and every sub-agent's embedded trajectory."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], trajectory_id: str) -> None:
        self.children: dict[int, list[Mapping[str, Any]]] = {}
        self.root_rows: list[Mapping[str, Any]] = []
        for r in rows:
            parent = _v(r, "parent_step")
            if parent is None:
                self.root_rows.append(r)
            else:
                self.children.setdefault(int(parent), []).append(r)
        self.trajectory_id = trajectory_id
        self.embedded: list[dict[str, Any]] = []

    def steps(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        built: list[_Step] = []
        for r in rows:
            role, kind = str(r.get("role")), str(r.get("kind"))
            copied = bool(_v(r, "copied"))
            cur = built[-1] if built else None
            content = _v(r, "content")
            text = None if content is None else str(content)
            if kind == "subagent" or int(r["step"]) in self.children:
                if kind != "subagent":  # a row that delegated without a hand-off row
                    self._plain(built, r, role, kind, text, copied)
                    cur = built[-1]
                ref = self._child(r, summary=text if kind == "subagent" else None)
                if role == "assistant" and kind == "subagent":  # the agent's own hand-off
                    if cur is None or not cur.takes(r, "ref"):
                        cur = _Step("agent", _v(r, "turn"), copied)
                        built.append(cur)
                elif cur is None or not _holds_ref(cur, r, copied):
                    cur = _Step("system", _v(r, "turn"), copied)
                    built.append(cur)
                cur.rows.append(r)
                cur.results.append({"subagent_trajectory_ref": [ref], "_loose": True})
                continue
            self._plain(built, r, role, kind, text, copied)
        return [self._step_json(i, s) for i, s in enumerate(built, 1)]

    def _plain(
        self,
        built: list[_Step],
        r: Mapping[str, Any],
        role: str,
        kind: str,
        text: str | None,
        copied: bool,
    ) -> None:
        cur = built[-1] if built else None
        turn = _v(r, "turn")
        if role == "assistant":
            if cur is None or not cur.takes(r, kind):
                cur = _Step("agent", turn, copied)
                built.append(cur)
            cur.rows.append(r)
            if kind == "tool_call":
                cid, _ = _call_id(r)
                own = _v(r, "call_id")
                if own is not None:
                    cur.call_ids[str(own)] = cid
                args = _arguments(r)
                cur.calls.append(
                    {
                        "tool_call_id": cid,
                        "function_name": str(r.get("tool")),
                        "arguments": args if isinstance(args, dict) else {"value": args},
                    }
                )
                cur.free += 1
            elif kind == "reasoning":
                cur.reasoning = _join(cur.reasoning, text)
            else:
                cur.message = _join(cur.message, text)
            return
        result: dict[str, Any] = {"content": text if text is not None else ""}
        extra: dict[str, Any] = {}
        if _v(r, "is_error") or kind == "error":
            extra["is_error"] = True
        if _v(r, "duration_s") is not None:
            extra["duration_s"] = float(r["duration_s"])
        if extra:
            result["extra"] = extra
        if role == "tool" and cur is not None and cur.source == "agent" and cur.copied == copied:
            own = _v(r, "call_id")
            if own is not None and str(own) in cur.call_ids:
                result["source_call_id"] = cur.call_ids[str(own)]
                cur.free -= 1
                cur.rows.append(r)
                cur.results.append(result)
                return
            if own is None and cur.free > 0:  # pairs by order, as it did in the source
                cur.free -= 1
                cur.rows.append(r)
                cur.results.append(result)
                return
        if (
            role == "environment"
            and cur is not None
            and (cur.source, cur.turn, cur.copied, cur.free) == ("agent", turn, copied, 0)
        ):  # joins its turn's agent step: no open call there it could pair with
            cur.rows.append(r)
            cur.results.append({**result, "_loose": True})
            return
        if role in ("tool", "environment"):  # a result of no call: the harness's step
            step = _Step("system", turn, copied, rows=[r], message="")
            step.results.append({**result, "_loose": True})
            built.append(step)
            return
        step = _Step(role if role in ("system", "user") else "system", turn, copied, rows=[r])
        step.message = text if text is not None else ""
        built.append(step)

    def _child(self, row: Mapping[str, Any], summary: str | None) -> dict[str, Any]:
        n = int(row["step"])
        rows = self.children.get(n, [])
        ref: dict[str, Any] = {}
        if summary is not None:
            ref["extra"] = {"summary": summary}
        if not rows:  # a hand-off whose trajectory the source did not have
            extra = _extra(row)
            found = extra.get("ref")
            old: dict[str, Any] = found if isinstance(found, dict) else {}
            if old.get("trajectory_path"):  # read from ATIF: the reference as it was
                return dict(old)
            ref["trajectory_path"] = str(
                old.get("trajectory_path") or old.get("trajectory_id") or f"missing-{n}"
            )
            return ref
        tid = f"{self.trajectory_id}/sub-{n}"
        ref["trajectory_id"] = tid
        name = next((str(r["agent"]) for r in rows if _v(r, "agent") is not None), f"sub-{n}")
        doc: dict[str, Any] = {
            "schema_version": ATIF_VERSION,
            "trajectory_id": tid,
            "agent": {"name": name, "version": "unknown"},
            "steps": [],
        }
        self.embedded.append(doc)  # listed before its own sub-agents
        doc["steps"] = self.steps(rows)
        return ref

    def _step_json(self, number: int, s: _Step) -> dict[str, Any]:
        first = s.rows[0]
        out: dict[str, Any] = {"step_id": number, "source": s.source}
        when = _iso(first.get("started_at"))
        if when is not None:
            out["timestamp"] = when
        model = next((r["model"] for r in s.rows if _v(r, "model") is not None), None)
        if model is not None and s.source == "agent":
            out["model_name"] = str(model)
        out["message"] = s.message if s.message is not None else ""
        if s.reasoning is not None:
            out["reasoning_content"] = s.reasoning
        if s.calls:
            out["tool_calls"] = s.calls
        if s.results:
            out["observation"] = {
                "results": [{k: v for k, v in r.items() if k != "_loose"} for r in s.results]
            }
        metrics: dict[str, Any] = {}
        for column, name in _USAGE:
            values = [r[column] for r in s.rows if _v(r, column) is not None]
            if values:
                metrics[name] = sum(values)
        if metrics and s.source == "agent":
            out["metrics"] = metrics
        elif metrics:  # ATIF has usage on agent steps only: kept beside, in extra
            out.setdefault("extra", {})["metrics"] = metrics
        extra = _extra(first)
        for key in ("reasoning_effort", "llm_call_count"):
            if key in extra and s.source == "agent":
                out[key] = extra.pop(key)
        inner = extra.pop("extra", None)
        extra.pop("ref", None)
        extra.pop("missing", None)
        merged = {**(inner if isinstance(inner, dict) else {}), **extra, **out.get("extra", {})}
        if merged:
            out["extra"] = merged
        if s.copied:
            out["is_copied_context"] = True
        return out


def atif_document(
    rows: Sequence[Mapping[str, Any]],
    *,
    trajectory_id: str,
    agent: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An attempt's step rows (in step order) as one ``ATIF-v1.7`` document.

    ``agent`` is the root's ``agent`` object (``name`` and ``version`` required);
    ``extra`` goes to the root's ``extra``. ``final_metrics`` sums every row's usage
    (sub-agents and copied context included, as Harbor's do).

    Examples
    --------
    >>> doc = atif_document(
    ...     [{"step": 1, "turn": 1, "role": "user", "kind": "message", "content": "hi"},
    ...      {"step": 2, "turn": 2, "role": "assistant", "kind": "tool_call", "tool": "bash",
    ...       "call_id": "c1", "arguments": '{"cmd": "ls"}', "tokens_in": 10},
    ...      {"step": 3, "turn": 2, "role": "tool", "kind": "tool_result", "call_id": "c1",
    ...       "content": "a.txt"}],
    ...     trajectory_id="j/A/1", agent={"name": "x", "version": "1"})
    >>> [s["source"] for s in doc["steps"]], doc["steps"][1]["observation"]["results"]
    (['user', 'agent'], [{'content': 'a.txt', 'source_call_id': 'c1'}])
    >>> doc["final_metrics"]
    {'total_prompt_tokens': 10, 'total_steps': 2}
    """
    build = _Atif(rows, trajectory_id)
    steps = build.steps(build.root_rows)
    doc: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": trajectory_id,
        "trajectory_id": trajectory_id,
        "agent": dict(agent),
        "steps": steps,
    }
    final: dict[str, Any] = {}
    for column, name in _USAGE:
        values = [r[column] for r in rows if _v(r, column) is not None]
        if values:
            final[f"total_{name}"] = sum(values)
    final["total_steps"] = len(steps)
    doc["final_metrics"] = final
    if build.embedded:
        doc["subagent_trajectories"] = build.embedded
    if extra:
        doc["extra"] = dict(extra)
    return doc
