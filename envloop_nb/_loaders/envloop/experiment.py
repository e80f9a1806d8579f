"""EnvLoop experiment exports (``envloop.experiment-result/v1``): the single document
(``.json``) and the streaming form (``.jsonl``: a header line, then one ``case``,
``result`` or ``correction`` per line; a later line for the same case or the same
``(trace_id, evaluator, run)`` replaces the earlier one), read into an
:class:`~..experiments.doc.ExperimentDoc`.

:class:`StreamState` is the streaming form's reader, kept between calls so that a growing
file (``ws.watch``) is read from where it stopped: only complete lines are taken; a
half-written last line waits for its newline.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..common.read import decode_utf8, parse_json
from ..common.values import read_json_file
from ..experiments.doc import EXPERIMENT_SCHEMA, ExperimentDoc, check_doc

__all__ = ["StreamState", "complete_lines", "is_experiment_head", "read_experiment_export"]


def is_experiment_head(head: bytes) -> bool:
    """True for the first bytes of an experiment export (either form)."""
    return b'"schema_version"' in head and EXPERIMENT_SCHEMA.encode() in head


def complete_lines(
    path: Path, offset: int, line: int, *, data: bytes | None = None
) -> tuple[list[tuple[int, Any]], int, int]:
    """The complete lines of ``path`` after byte ``offset`` (which starts file line
    ``line + 1``), parsed: ``([(line number, object), ...], new offset, new line)``.

    A half-written last line (no newline yet) is left for the next call; blank lines are
    skipped; a line that is not a JSON object raises a :class:`LoadError` naming it.
    ``data``: the file's bytes from ``offset`` on, when the caller read them already.
    """
    if data is None:
        if not path.exists():
            return [], offset, line
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset, line
    chunk = data[: end + 1]
    out: list[tuple[int, Any]] = []
    for raw in chunk.split(b"\n")[:-1]:
        line += 1
        if not raw.strip():
            continue
        obj = parse_json(
            path, decode_utf8(path, raw, line=line), line=line, what="a JSON object per line"
        )
        if not isinstance(obj, dict):
            raise LoadError(path, f"line {line}", "each line must be a JSON object")
        out.append((line, obj))
    return out, offset + len(chunk), line


@dataclass
class StreamState:
    """The streaming form read so far: the header, cases by trace, results by
    ``(trace, evaluator, run)``, corrections by ``(result_id, at, by)``, and the byte
    offset of the first line not yet read."""

    path: Path
    offset: int = 0
    line: int = 0
    header: dict[str, Any] | None = None
    cases: dict[str, Any] = field(default_factory=dict)
    results: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    corrections: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def read_more(self) -> int:
        """Read the complete lines appended since the last call; the number read.

        A bad line raises a :class:`LoadError` naming it, and the state is left as it was
        before the call.
        """
        lines, offset, line = complete_lines(self.path, self.offset, self.line)
        staged = _Staged(self)
        for no, obj in lines:
            staged.add(obj, no)
        staged.apply()
        read = line - self.line
        self.offset, self.line = offset, line
        return read

    def document(self) -> dict[str, Any]:
        if self.header is None:
            raise LoadError(self.path, "line 1", f"no header line ({EXPERIMENT_SCHEMA})")
        return {
            "schema_version": self.header.get("schema_version"),
            "experiment": self.header.get("experiment"),
            "cases": list(self.cases.values()),
            "results": list(self.results.values()),
            "corrections": list(self.corrections.values()),
        }


class _Staged:
    """One call's lines, applied to the state only when every line was good."""

    def __init__(self, state: StreamState) -> None:
        self.state = state
        self.header = state.header
        self.cases: dict[str, Any] = {}
        self.results: dict[tuple[Any, ...], Any] = {}
        self.corrections: dict[tuple[Any, ...], Any] = {}

    def add(self, obj: Any, line: int) -> None:
        path, place = self.state.path, f"line {line}"
        if self.header is None:
            if obj.get("schema_version") != EXPERIMENT_SCHEMA:
                raise LoadError(
                    path, place, f"the first line must be the header ({EXPERIMENT_SCHEMA})"
                )
            self.header = obj
            return
        kind = obj.get("kind")
        body = {k: v for k, v in obj.items() if k != "kind"} | {"_place": place}
        if kind == "case":
            self.cases[str(obj.get("trace_id"))] = body
        elif kind == "result":
            key = (obj.get("trace_id"), obj.get("evaluator"), obj.get("run", 1))
            self.results[key] = body
        elif kind == "correction":
            key = (obj.get("result_id"), obj.get("at"), obj.get("by"))
            self.corrections[key] = body
        else:
            raise LoadError(path, place, f'"kind" must be case, result or correction; got {kind!r}')

    def apply(self) -> None:
        s = self.state
        s.header = self.header
        s.cases.update(self.cases)
        s.results.update(self.results)
        s.corrections.update(self.corrections)


def read_experiment_export(path: Path) -> ExperimentDoc:
    """Read and check an experiment export, either form.

    Examples
    --------
    >>> doc = read_experiment_export(Path("../shared/formats/examples/experiment-two-evaluators.json"))
    >>> doc.experiment["experiment_id"], [e["name"] for e in doc.evaluators]
    ('exp_5c1e02', ['answer_accuracy', 'answer_quality'])
    """
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        if name.endswith(".gz"):
            text = gzip.decompress(path.read_bytes())
            tmp = _GzState(path, text)
            return check_doc(tmp.document(), path)
        state = StreamState(path)
        state.read_more()
        return check_doc(state.document(), path)
    return check_doc(read_json_file(path, "an experiment export"), path)


class _GzState(StreamState):
    """The streaming form of a whole ``.jsonl.gz`` file (gzip cannot be tailed)."""

    def __init__(self, path: Path, data: bytes) -> None:
        super().__init__(path)
        staged = _Staged(self)
        for i, raw in enumerate(data.split(b"\n"), start=1):
            if raw.strip():
                obj = parse_json(
                    path, decode_utf8(path, raw, line=i), line=i, what="a JSON object per line"
                )
                if not isinstance(obj, dict):
                    raise LoadError(path, f"line {i}", "each line must be a JSON object")
                staged.add(obj, i)
        staged.apply()
