"""ATIF trajectories (Harbor's Agent Trajectory Interchange Format, ``ATIF-v1.0`` … ``v1.7``)
as step rows: one file (``agent/trajectory.json`` in a Harbor trial folder, or an inline
document in an EnvLoop export) with its continuation files and sub-agent trajectories.

How a trajectory becomes rows (``envloop_nb._store.steps``):

- a ``system`` / ``user`` step is a message of that role; an ``agent`` step is, in order,
  its reasoning (``reasoning_content``), its message (when not empty), then each tool call
  followed by the result that answers it. A result names its call by ``source_call_id``,
  or, without ids (Harbor's terminus-2), pairs with the calls by order; a result with no
  call (a parser error the harness sent back) is the environment's. A final call with no
  result is read as it is.
- usage (``metrics``: prompt, completion and cached tokens, cost) is written once, on the
  turn's first row; ``is_copied_context`` marks replayed steps ``copied``.
- ``continued_trajectory_ref`` is followed (the file beside this one): its steps follow,
  their ``turn`` counted on from the segment before.
- a result's ``subagent_trajectory_ref`` is a ``subagent`` row; the sub-agent's steps
  (from ``trajectory_path`` beside the parent, or the root's ``subagent_trajectories`` by
  ``trajectory_id``) follow it with ``agent`` set and ``parent_step`` pointing at it. A
  referenced sub-agent file that is absent leaves the parent whole: the row says so
  (``extra.missing``). ATIF has no error flag of its own: a result is an error only when
  its ``extra.is_error`` is ``true`` (v1.7's free-form ``extra``, as EnvLoop's agents and
  the sample runs write it); nothing is guessed from the text.

Refused with a :class:`LoadError` naming the file and step (``lenient=True``: the file's
steps are skipped and counted instead): a document that is not ATIF, an unknown
``source``, a ``step_id`` out of sequence, a result whose ``source_call_id`` names no call
of its step, a missing continuation file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..._store.steps import StepSink
from ..common.values import INT64_MAX, fits, is_int, is_number, parse_time, read_json_file

__all__ = ["USAGE", "AtifRead", "is_atif", "read_atif"]

_SOURCES = {"system": "system", "user": "user", "agent": "assistant"}
#: A step's ``metrics`` keys and the step columns they fill (``final_metrics`` has them
#: as ``total_<key>``).
USAGE = (
    ("prompt_tokens", "tokens_in"),
    ("completion_tokens", "tokens_out"),
    ("cached_tokens", "tokens_cached"),
    ("cost_usd", "cost_usd"),
)
_MAX_DEPTH = 8  # sub-agents of sub-agents: deeper is a cycle or a bug in the producer


def is_atif(doc: object) -> bool:
    """Whether ``doc`` is an ATIF trajectory document (by its ``schema_version``)."""
    return isinstance(doc, dict) and str(doc.get("schema_version", "")).startswith("ATIF-v1.")


@dataclass
class AtifRead:
    """What reading one attempt's trajectory gave."""

    rows: int = 0
    tool_calls: int = 0
    missing_subagents: list[str] = field(default_factory=list)
    final_metrics: dict[str, Any] | None = None
    schema_version: str | None = None


@dataclass
class _Reader:
    writer: StepSink
    task: str
    attempt: int
    out: AtifRead
    relative_to: Path | None = None
    step: int = 0
    turns: int = 0

    def shown(self, path: Path) -> str:
        """A file's name as errors and ``source_place`` give it."""
        if self.relative_to is not None:
            try:
                return path.relative_to(self.relative_to).as_posix()
            except ValueError:
                pass
        return path.name

    def row(self, values: dict[str, Any]) -> int:
        """Write ``values`` (a fresh dict, the reader's own) as the next step."""
        self.step += 1
        values["task"], values["attempt"], values["step"] = self.task, self.attempt, self.step
        self.writer.add(values)
        self.out.rows += 1
        return self.step


@dataclass
class _Turn:
    """Rows of one step: the step's common columns, its usage on the first row only."""

    reader: _Reader
    common: dict[str, Any]
    first: dict[str, Any]

    def emit(self, **values: Any) -> int:
        first = self.first
        if first:
            row = {**self.common, **first, **values}
            if first.get("extra") and values.get("extra"):  # the step's extra and the row's
                row["extra"] = json.dumps(
                    {**json.loads(first["extra"]), **json.loads(values["extra"])},
                    ensure_ascii=False,
                )
            self.first = {}
        else:
            row = {**self.common, **values}
        return self.reader.row(row)


def _text(value: Any) -> str | None:
    """A message or content: a string, or (v1.6) a list of text / image parts."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and part.get("type") == "image":
                src = part.get("source") or {}
                parts.append(f"[image: {src.get('path', '?')}]")
            elif isinstance(part, dict):
                parts.append(str(part.get("text", "")))
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


def _flagged(result: Mapping[str, Any]) -> bool:
    """A result's own error flag: ``extra.is_error`` is ``true`` (never guessed from text)."""
    extra = result.get("extra")
    return isinstance(extra, dict) and extra.get("is_error") is True


def _usage(name: str, place: str, metrics: Any) -> dict[str, int | float | None]:
    """A step's ``metrics`` as the rows' usage columns (:data:`USAGE`): token counts are
    whole numbers, the cost a number; absent is null, never 0."""
    if metrics is None:
        metrics = {}
    if not isinstance(metrics, dict):
        raise LoadError(name, f"{place}.metrics", f"expected an object, got {metrics!r}")
    out: dict[str, int | float | None] = {}
    for key, column in USAGE:
        value = metrics.get(key)
        whole = column != "cost_usd"
        kind = type(value)  # the common cases first: absent, an int count, a float cost
        if value is None or (whole and kind is int and fits(value, INT64_MAX)):
            out[column] = value
            continue
        if not whole and kind is float and math.isfinite(value):
            out[column] = value
            continue
        if value is not None and (
            not is_number(value) or (whole and (value != int(value) or not fits(value, INT64_MAX)))
        ):
            what = "a whole number of tokens" if whole else "a number"
            raise LoadError(name, f"{place}.metrics.{key}", f"expected {what}, got {value!r}")
        out[column] = None if value is None else (int(value) if whole else float(value))
    return out


#: ``json.dumps(value, ensure_ascii=False, sort_keys=True)`` without building an encoder
#: per call (the same text).
_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


def _json(value: Any) -> str | None:
    return None if value is None else _ENCODE(value)


def _results(
    source: str, place: str, step: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]
) -> tuple[dict[int, list[Mapping[str, Any]]], list[Mapping[str, Any]]]:
    """The step's results by the index of the call each answers, and those of no call
    (sub-agent hand-offs, a parser error sent back): by ``source_call_id`` where given,
    else in order with the calls no result named."""
    obs = step.get("observation") or {}
    results = (obs.get("results") or []) if isinstance(obs, dict) else []
    if not results:  # a system or user step, a turn without tools
        return {}, []
    ids = {c.get("tool_call_id"): i for i, c in enumerate(calls) if c.get("tool_call_id")}
    paired: dict[int, list[Mapping[str, Any]]] = {}
    loose: list[Mapping[str, Any]] = []
    unnamed: list[Mapping[str, Any]] = []
    for j, result in enumerate(results):
        if not isinstance(result, dict):
            raise LoadError(source, f"{place}.observation.results[{j}]", "expected an object")
        call_id = result.get("source_call_id")
        if result.get("subagent_trajectory_ref"):
            loose.append(result)
        elif call_id is None:
            unnamed.append(result)
        elif call_id in ids:
            paired.setdefault(ids[call_id], []).append(result)
        else:
            raise LoadError(
                source,
                f"{place}.observation.results[{j}]",
                f"source_call_id {call_id!r} names no tool call of this step",
            )
    free = iter([i for i in range(len(calls)) if i not in paired])
    for result in unnamed:
        i = next(free, None)
        if i is None:
            loose.append(result)
        else:
            paired[i] = [result]
    return paired, loose


def _segments(
    r: _Reader, path: Path | None, doc: Mapping[str, Any], source: str
) -> Iterator[tuple[str, Path | None, Mapping[str, Any]]]:
    """The document and its continuation files, in order, each with the name it is read
    as and its file."""
    seen: set[Path] = set()
    name = source
    while True:
        yield name, path, doc
        ref = doc.get("continued_trajectory_ref")
        if not ref:
            return
        if path is None:
            raise LoadError(
                source,
                "continued_trajectory_ref",
                f"{ref!r}: an inline trajectory cannot continue in a file",
            )
        nxt = (path.parent / str(ref)).resolve()
        if nxt in seen or nxt == path.resolve():
            raise LoadError(
                path,
                "continued_trajectory_ref",
                f"{ref!r} continues a segment already read (a cycle)",
            )
        seen.add(nxt)
        if not nxt.is_file():
            raise LoadError(
                path, "continued_trajectory_ref", f"the continuation file {ref!r} is missing"
            )
        doc = _document(nxt)
        path, name = nxt, r.shown(nxt)


def _document(path: Path) -> Mapping[str, Any]:
    doc: dict[str, Any] = read_json_file(path, "an ATIF trajectory")
    if not is_atif(doc):
        raise LoadError(
            path,
            "schema_version",
            f"expected 'ATIF-v1.N', got {doc.get('schema_version') if isinstance(doc, dict) else type(doc).__name__!r}",
        )
    return doc


def _steps(
    r: _Reader,
    name: str,
    doc: Mapping[str, Any],
    *,
    here: Path | None,
    agent: str | None,
    parent: int | None,
    root: Mapping[str, Any],
    depth: int,
) -> None:
    """Write one segment's steps."""
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise LoadError(name, "steps", "expected an array of steps")
    default_model = (doc.get("agent") or {}).get("model_name")
    offset = r.turns
    for i, step in enumerate(steps):
        place = f"steps[{i}]"
        if not isinstance(step, dict):
            raise LoadError(name, place, "expected a step object")
        sid = step.get("step_id")
        if not is_int(sid) or sid != i + 1:
            raise LoadError(
                name,
                place,
                f"step_id {sid!r} out of sequence (expected {i + 1}: steps run 1..n without gaps)",
            )
        role = _SOURCES.get(step.get("source"))  # type: ignore[arg-type]
        if role is None:
            raise LoadError(
                name, place, f"unknown source {step.get('source')!r} (system, user or agent)"
            )
        turn = offset + sid
        r.turns = max(r.turns, turn)
        common = {
            "turn": turn,
            "agent": agent,
            "parent_step": parent,
            "model": step.get("model_name") or (default_model if role == "assistant" else None),
            "copied": bool(step.get("is_copied_context")),
            "started_at": parse_time(step.get("timestamp"), name, place, "timestamp"),
            "source_place": f"{name}, {place}",
        }
        usage = _usage(name, place, step.get("metrics"))
        extra = {k: step[k] for k in ("reasoning_effort", "llm_call_count", "extra") if k in step}
        first = {**usage, "extra": _json(extra or None)}
        calls = [c for c in (step.get("tool_calls") or []) if isinstance(c, dict)]
        paired, loose = _results(name, place, step, calls)

        emit = _Turn(r, common, first).emit

        if step.get("reasoning_content"):
            emit(role=role, kind="reasoning", content=_text(step["reasoning_content"]))
        message = _text(step.get("message"))
        if message or not (calls or loose or step.get("reasoning_content")):
            emit(role=role, kind="message", content=message or "")
        for j, call in enumerate(calls):
            tool = call.get("function_name")
            emit(
                role=role,
                kind="tool_call",
                tool=tool,
                call_id=call.get("tool_call_id"),
                arguments=_json(call.get("arguments", {})),
                content=None,
            )
            r.out.tool_calls += 1
            for result in paired.get(j, []):
                emit(
                    role="tool",
                    kind="tool_result",
                    tool=tool,
                    call_id=result.get("source_call_id"),
                    content=_text(result.get("content")),
                    is_error=_flagged(result),
                )
        for result in loose:
            refs = result.get("subagent_trajectory_ref") or []
            if not refs:
                emit(
                    role="environment",
                    kind="tool_result",
                    content=_text(result.get("content")),
                    is_error=_flagged(result),
                )
            for ref in refs:
                _subagent(r, name, place, ref, here=here, root=root, depth=depth, emit=emit)


def _subagent(
    r: _Reader,
    name: str,
    place: str,
    ref: Mapping[str, Any],
    *,
    here: Path | None,
    root: Mapping[str, Any],
    depth: int,
    emit: Callable[..., int],
) -> None:
    path_text, tid = ref.get("trajectory_path"), ref.get("trajectory_id")
    label = path_text or tid or ref.get("session_id") or "?"
    child_doc: Mapping[str, Any] | None = None
    child_path: Path | None = None
    if tid is not None:
        child_doc = next(
            (
                t
                for t in root.get("subagent_trajectories") or []
                if isinstance(t, dict) and t.get("trajectory_id") == tid
            ),
            None,
        )
    if child_doc is None and path_text and here is not None:
        candidate = here.parent / str(path_text)
        if candidate.is_file():
            child_path, child_doc = candidate, _document(candidate)
    summary = (
        (ref.get("extra") or {}).get("summary") if isinstance(ref.get("extra"), dict) else None
    )
    missing = child_doc is None
    n = emit(
        role="system",
        kind="subagent",
        content=(summary or f"sub-agent {label}")
        + (f" (trajectory not found: {label})" if missing else ""),
        extra=_json({"ref": dict(ref), **({"missing": True} if missing else {})}),
    )
    if missing:
        r.out.missing_subagents.append(str(label))
        return
    if depth >= _MAX_DEPTH:
        raise LoadError(name, place, f"sub-agents nested over {_MAX_DEPTH} deep (a cycle?)")
    assert child_doc is not None
    child_name = r.shown(child_path) if child_path else f"{name} {label}"
    agent = (child_doc.get("agent") or {}).get("name") or str(label)
    saved = r.turns
    r.turns = 0
    _steps(
        r,
        child_name,
        child_doc,
        here=child_path or here,
        agent=agent,
        parent=n,
        root=root,
        depth=depth + 1,
    )
    r.turns = saved


def read_atif(
    writer: StepSink,
    *,
    task: str,
    attempt: int,
    path: Path | None = None,
    doc: Mapping[str, Any] | None = None,
    source: str | None = None,
    relative_to: Path | None = None,
) -> AtifRead:
    """Write one attempt's ATIF trajectory (from ``path``, or the inline ``doc``) as steps.

    Errors and each row's ``source_place`` name a file by its name, or by its path
    relative to ``relative_to`` when given (a Harbor job folder: ``<trial>/agent/
    trajectory.json``); ``source`` names the first document instead.

    Returns what was read: rows, tool calls, the ``final_metrics`` the last segment states
    (Harbor's are the whole run's, sub-agents and replayed context included: the sums of
    the rows' usage), the sub-agents whose trajectories are missing.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(ws.con, job.id)
    >>> got = read_atif(w, task="A", attempt=1, path=Path(
    ...     "../shared/fixtures/trajectories/harbor-atif/terminus_2/hello-world-invalid-json.trajectory.json"))
    >>> (got.rows, got.tool_calls, got.final_metrics["total_prompt_tokens"])
    (16, 3, 2417)
    """
    if doc is None:
        if path is None:
            raise TypeError("read_atif needs path or doc")
        doc = _document(path)
    elif not is_atif(doc):
        raise LoadError(
            source or "trajectory", "schema_version", "expected an ATIF trajectory ('ATIF-v1.N')"
        )
    out = AtifRead(schema_version=str(doc.get("schema_version")))
    r = _Reader(writer, task, attempt, out, relative_to)
    name = source or (r.shown(path) if path else "trajectory")
    last: Mapping[str, Any] = doc
    for seg_name, here, seg in _segments(r, path, doc, name):
        _steps(r, seg_name, seg, here=here, agent=None, parent=None, root=seg, depth=0)
        last = seg
    fm = last.get("final_metrics")
    out.final_metrics = dict(fm) if isinstance(fm, dict) else None
    return out
