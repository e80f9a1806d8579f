"""The experiment document every experiment source becomes, checked field by field.

An experiment judges traces an agent already produced with one or more evaluators. Its
document is the EnvLoop export's own shape (``../shared/formats/envloop-experiment-result.md``):
``experiment`` (with ``evaluators``), ``cases``, ``results`` (one per case × evaluator ×
run) and ``corrections``. The EnvLoop reader passes it through; the Inspect and MLflow
readers build it (:mod:`..inspect.experiment`, :mod:`..mlflow.traces`); :func:`check_doc`
checks it before anything is written, so every loader refuses the same bad input with the
same words, naming the file and the place (``results[3].score``).

Checked: types and enums of every field; scores within the evaluator's scale; a case's
input/output a string, a ChatML list or null; a result's case and evaluator known; one
row per (trace, evaluator, run); a correction naming a known result, the run it
corrects, a score within scale, a non-empty reason, at most one live correction per
result, and only of a succeeded row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._errors import LoadError
from ..common.values import INT32_MAX, is_int, parse_time

__all__ = [
    "CASE_STATUSES",
    "EXPERIMENT_SCHEMA",
    "RESULT_STATUSES",
    "ExperimentDoc",
    "chat_text",
    "check_doc",
]

EXPERIMENT_SCHEMA = "envloop.experiment-result/v1"
RESULT_STATUSES = ("pending", "running", "succeeded", "failed")
CASE_STATUSES = ("success", "error", "running")
EXPERIMENT_STATUSES = ("draft", "running", "completed", "stopped")
ADDED_BY = ("selection", "listen", "append")


@dataclass(frozen=True)
class ExperimentDoc:
    """A checked experiment document: plain rows ready for the workspace tables.

    Times are aware datetimes (UTC), inputs and outputs text (a ChatML list as JSON
    text with ``input_is_chat``), tags and points JSON text.
    """

    experiment: dict[str, Any]
    evaluators: tuple[dict[str, Any], ...]
    cases: tuple[dict[str, Any], ...]
    results: tuple[dict[str, Any], ...]
    corrections: tuple[dict[str, Any], ...]


class _Checker:
    def __init__(self, source: object) -> None:
        self.source = source

    def fail(self, place: str, message: str) -> LoadError:
        return LoadError(self.source, place, message)

    def obj(self, value: Any, place: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(place, f"must be a JSON object, got {_kind(value)}")
        return value

    def text(
        self, row: Mapping[str, Any], key: str, place: str, *, required: bool = False
    ) -> str | None:
        value = row.get(key)
        if value is None:
            if required:
                raise self.fail(f"{place}.{key}", "is required (a non-empty string)")
            return None
        if not isinstance(value, str):
            raise self.fail(f"{place}.{key}", f"must be a string, got {_kind(value)} {value!r}")
        if required and not value.strip():
            raise self.fail(f"{place}.{key}", "must not be empty")
        return value

    def choice(
        self,
        row: Mapping[str, Any],
        key: str,
        place: str,
        allowed: Sequence[str],
        default: str | None = None,
    ) -> str | None:
        value = row.get(key, default)
        if value is None:
            return None
        if value not in allowed:
            raise self.fail(f"{place}.{key}", f"must be one of {', '.join(allowed)}; got {value!r}")
        return str(value)

    def number(self, value: Any, place: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(place, f"must be a number or null, got {_kind(value)} {value!r}")
        out = float(value)
        if not math.isfinite(out):
            raise self.fail(place, f"must be a finite number, got {value!r}")
        return out

    def time(self, row: Mapping[str, Any], key: str, place: str) -> Any:
        return parse_time(row.get(key), self.source, f"{place}.{key}", key)

    def flag(self, row: Mapping[str, Any], key: str, place: str, default: bool) -> bool:
        value = row.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"{place}.{key}", f"must be true or false, got {value!r}")
        return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def chat_text(value: Any) -> tuple[str | None, bool]:
    """``(text, is_chat)``: a string as it is, a ChatML list as JSON text.

    Examples
    --------
    >>> chat_text("hi"), chat_text([{"role": "user", "content": "hi"}])
    (('hi', False), ('[{"role": "user", "content": "hi"}]', True))
    """
    if value is None or isinstance(value, str):
        return value, False
    return json.dumps(value, ensure_ascii=False), True


def _check_chat(c: _Checker, value: Any, place: str) -> None:
    if value is None or isinstance(value, str):
        return
    if not isinstance(value, list):
        raise c.fail(place, f"must be a string, a ChatML list or null, got {_kind(value)}")
    for i, msg in enumerate(value):
        m = c.obj(msg, f"{place}[{i}]")
        if not isinstance(m.get("role"), str):
            raise c.fail(f"{place}[{i}].role", "a ChatML message needs a string role")


def _tags(c: _Checker, value: Any, place: str) -> str:
    if value is None:
        return "{}"
    tags = c.obj(value, place)
    for key, v in tags.items():
        if v is not None and not isinstance(v, str | int | float | bool):
            raise c.fail(f"{place}.{key}", f"a tag value must be a string, got {_kind(v)}")
    return json.dumps(
        {k: None if v is None else str(v) for k, v in tags.items()}, ensure_ascii=False
    )


def _evaluators(c: _Checker, value: Any) -> tuple[dict[str, Any], ...]:
    if value is None:
        value = []
    if not isinstance(value, list):
        raise c.fail("experiment.evaluators", f"must be an array, got {_kind(value)}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, raw in enumerate(value):
        place = f"experiment.evaluators[{i}]"
        ev = c.obj(raw, place)
        name = c.text(ev, "name", place, required=True)
        assert name is not None
        if name in seen:
            raise c.fail(f"{place}.name", f"evaluator {name!r} is listed twice")
        seen.add(name)
        scale = ev.get("scale") or {"min": 0, "max": 100}
        scale = c.obj(scale, f"{place}.scale")
        lo = c.number(scale.get("min", 0), f"{place}.scale.min")
        hi = c.number(scale.get("max", 100), f"{place}.scale.max")
        if lo is None or hi is None or not lo < hi:
            raise c.fail(f"{place}.scale", f"needs numbers min < max, got {dict(scale)!r}")
        version = ev.get("version")
        out.append(
            {
                "name": name,
                "position": i,
                "kind": c.text(ev, "kind", place),
                "needs_reference": c.flag(ev, "needs_reference", place, False),
                "version": None if version is None else str(version),
                "judge_model": c.text(ev, "judge_model", place),
                "scale_min": lo,
                "scale_max": hi,
            }
        )
    return tuple(out)


def _experiment(c: _Checker, doc: Mapping[str, Any]) -> dict[str, Any]:
    exp = c.obj(doc.get("experiment"), "experiment")
    eid = c.text(exp, "id", "experiment", required=True)
    listen = exp.get("listen") or {"enabled": False, "since": None, "stopped_at": None}
    listen = c.obj(listen, "experiment.listen")
    c.time(listen, "since", "experiment.listen")
    c.time(listen, "stopped_at", "experiment.listen")
    return {
        "experiment_id": eid,
        "name": c.text(exp, "name", "experiment") or eid,
        "agent": c.text(exp, "agent", "experiment"),
        "type": c.text(exp, "type", "experiment") or "single-group",
        "status": c.choice(exp, "status", "experiment", EXPERIMENT_STATUSES),
        "created_at": c.time(exp, "created_at", "experiment"),
        "started_at": c.time(exp, "started_at", "experiment"),
        "finished_at": c.time(exp, "finished_at", "experiment"),
        "listen": json.dumps(
            {
                "enabled": bool(listen.get("enabled")),
                "since": listen.get("since"),
                "stopped_at": listen.get("stopped_at"),
            }
        ),
    }


def _cases(c: _Checker, value: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise c.fail("cases", f"must be an array, got {_kind(value)}")
    out: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(value):
        case = c.obj(raw, f"cases[{i}]")
        place = str(case.get("_place") or f"cases[{i}]")  # a streamed line names its line
        tid = c.text(case, "trace_id", place, required=True)
        assert tid is not None
        if tid in out:
            raise c.fail(
                f"{place}.trace_id", f"trace {tid!r} is a case twice (also {out[tid]['place']})"
            )
        for key in ("input", "output"):
            _check_chat(c, case.get(key), f"{place}.{key}")
        inp, is_chat = chat_text(case.get("input"))
        out_text, _ = chat_text(case.get("output"))
        out[tid] = {
            "trace_id": tid,
            "agent": c.text(case, "agent", place),
            "parent_trace_id": c.text(case, "parent_trace_id", place),
            "status": c.choice(case, "status", place, CASE_STATUSES),
            "trace_started_at": c.time(case, "trace_started_at", place),
            "ingested_at": c.time(case, "ingested_at", place),
            "input": inp,
            "input_is_chat": is_chat,
            "output": out_text,
            "reference": c.text(case, "reference", place),
            "reference_source": c.choice(case, "reference_source", place, ("manual", "dataset")),
            "added_by": c.choice(case, "added_by", place, ADDED_BY, "selection"),
            "tags": _tags(c, case.get("tags"), f"{place}.tags"),
            "place": place,
        }
    return tuple(out.values())


def _in_scale(c: _Checker, score: float | None, ev: Mapping[str, Any], place: str) -> None:
    if score is not None and not ev["scale_min"] <= score <= ev["scale_max"]:
        raise c.fail(
            place,
            f"score {score:g} is outside evaluator {ev['name']!r}'s scale "
            f"{ev['scale_min']:g}-{ev['scale_max']:g}",
        )


def _results(
    c: _Checker, value: Any, cases: set[str], evaluators: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Any], ...]:
    if value is None:
        value = []
    if not isinstance(value, list):
        raise c.fail("results", f"must be an array, got {_kind(value)}")
    out: list[dict[str, Any]] = []
    keys: dict[tuple[str, str, int], str] = {}
    ids: dict[str, str] = {}
    for i, raw in enumerate(value):
        row = c.obj(raw, f"results[{i}]")
        place = str(row.get("_place") or f"results[{i}]")  # a streamed line names its line
        rid = c.text(row, "id", place, required=True)
        tid = c.text(row, "trace_id", place, required=True)
        name = c.text(row, "evaluator", place, required=True)
        assert rid is not None and tid is not None and name is not None
        if tid not in cases:
            raise c.fail(f"{place}.trace_id", f"unknown trace {tid!r}: no case has it")
        if name not in evaluators:
            raise c.fail(
                f"{place}.evaluator",
                f"unknown evaluator {name!r}; the experiment's evaluators: {sorted(evaluators)}",
            )
        run = row.get("run", 1)
        if not is_int(run) or not 1 <= run <= INT32_MAX:
            raise c.fail(f"{place}.run", f"must be an integer >= 1, got {run!r}")
        status = c.choice(row, "status", place, RESULT_STATUSES)
        if status is None:
            raise c.fail(f"{place}.status", f"is required: one of {', '.join(RESULT_STATUSES)}")
        score = c.number(row.get("score"), f"{place}.score")
        _in_scale(c, score, evaluators[name], f"{place}.score")
        if score is not None and status != "succeeded":
            raise c.fail(f"{place}.score", f"a {status} row has no score, got {score:g}")
        if rid in ids:
            raise c.fail(f"{place}.id", f"result id {rid!r} appears twice (also {ids[rid]})")
        if (tid, name, int(run)) in keys:
            raise c.fail(
                place,
                f"({tid!r}, {name!r}) run {run} appears twice (also {keys[tid, name, int(run)]})",
            )
        ids[rid] = keys[tid, name, int(run)] = place
        points = row.get("points") or []
        if not isinstance(points, list):
            raise c.fail(f"{place}.points", f"must be an array, got {_kind(points)}")
        out.append(
            {
                "result_id": rid,
                "trace_id": tid,
                "evaluator": name,
                "run": int(run),
                "status": status,
                "score": score,
                "reason": c.text(row, "reason", place),
                "points": json.dumps(points, ensure_ascii=False),
                "error": c.text(row, "error", place),
                "evaluated_at": c.time(row, "evaluated_at", place),
                "place": place,
            }
        )
    return tuple(out)


def _corrections(
    c: _Checker,
    value: Any,
    results: Mapping[str, Mapping[str, Any]],
    evaluators: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], ...]:
    if value is None:
        value = []
    if not isinstance(value, list):
        raise c.fail("corrections", f"must be an array, got {_kind(value)}")
    out: list[dict[str, Any]] = []
    live: dict[str, str] = {}
    for i, raw in enumerate(value):
        row = c.obj(raw, f"corrections[{i}]")
        place = str(row.get("_place") or f"corrections[{i}]")  # a streamed line names its line
        rid = c.text(row, "result_id", place, required=True)
        assert rid is not None
        if rid not in results:
            raise c.fail(f"{place}.result_id", f"unknown result {rid!r}: no result row has this id")
        res = results[rid]
        run = row.get("run", res["run"])
        if not is_int(run) or run != res["run"]:
            raise c.fail(
                f"{place}.run",
                f"result {rid!r} is run {res['run']}, the correction names run {run!r}",
            )
        if res["status"] != "succeeded":
            raise c.fail(
                place,
                f"corrects result {rid!r}, which is {res['status']}: only a succeeded row can be corrected",
            )
        score = c.number(row.get("score"), f"{place}.score")
        if score is None:
            raise c.fail(f"{place}.score", "a correction needs a score")
        _in_scale(c, score, evaluators[res["evaluator"]], f"{place}.score")
        reason = c.text(row, "reason", place, required=True)
        undone_at = c.time(row, "undone_at", place)
        undone_by = c.text(row, "undone_by", place)
        if undone_at is None and undone_by is None:
            if rid in live:
                raise c.fail(
                    place,
                    f"a second live correction of result {rid!r} (the first: {live[rid]}); undo one",
                )
            live[rid] = place
        out.append(
            {
                "result_id": rid,
                "trace_id": res["trace_id"],
                "evaluator": res["evaluator"],
                "run": res["run"],
                "score": score,
                "reason": reason,
                "by": c.text(row, "by", place),
                "at": c.time(row, "at", place),
                "undone_by": undone_by,
                "undone_at": undone_at,
            }
        )
    return tuple(out)


def check_doc(doc: Any, source: object) -> ExperimentDoc:
    """Check an experiment document; any problem is a :class:`LoadError` naming the place.

    Examples
    --------
    >>> import json
    >>> doc = json.load(open("../shared/formats/examples/experiment-two-evaluators.json"))
    >>> d = check_doc(doc, "example.json")
    >>> len(d.cases), len(d.results), len(d.corrections)
    (3, 7, 2)
    >>> doc["corrections"][0]["score"] = 120
    >>> check_doc(doc, "example.json")
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: example.json, corrections[0].score: score 120 is outside evaluator 'answer_quality''s scale 0-100
    """
    c = _Checker(source)
    top = c.obj(doc, "the document")
    schema = top.get("schema_version")
    if schema is not None and schema != EXPERIMENT_SCHEMA:
        raise c.fail(
            "schema_version",
            f"{schema!r} is not {EXPERIMENT_SCHEMA} (the version this envloop_nb reads)",
        )
    exp = _experiment(c, top)
    evaluators = _evaluators(c, c.obj(top.get("experiment"), "experiment").get("evaluators"))
    cases = _cases(c, top.get("cases") if top.get("cases") is not None else [])
    by_name = {e["name"]: e for e in evaluators}
    results = _results(c, top.get("results"), {r["trace_id"] for r in cases}, by_name)
    corrections = _corrections(
        c, top.get("corrections"), {r["result_id"]: r for r in results}, by_name
    )
    return ExperimentDoc(exp, evaluators, cases, results, corrections)
