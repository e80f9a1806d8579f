"""An Inspect AI log (``.eval`` or ``.json``) as an EnvLoop experiment document
(``envloop.experiment-result/v1``), by a pure function: nothing is written anywhere.

Each sample × epoch is a case, each scorer an evaluator, each (sample-epoch, scorer)
score a result row, and the score edits made with ``inspect_ai.log.edit_score`` the
``corrections[]``.

How Inspect stores an edited score (the same in both forms: a ``.json`` log's
``samples[i].scores`` and an ``.eval`` archive's ``samples/<id>_epoch_<n>.json`` hold the
pydantic dump of ``Score``): ``value`` / ``explanation`` are the *current* (last edited)
state, and ``history`` is empty until the first edit. ``edit_score`` then appends the
original as ``history[0]`` — a ``ScoreEdit`` without ``provenance`` (the key is absent or
null; its ``None`` fields are left out, so a missing ``explanation`` there means none) —
followed by one ``ScoreEdit`` per edit, each with ``provenance`` ``{timestamp, author,
reason, metadata}`` and ``"UNCHANGED"`` in the fields it kept. A score that an edit
*created* has no original: its ``history[0]`` already carries provenance. Both forms
write NaN as a bare ``NaN`` (read as ``nan``). The ``ScoreEditEvent`` that ``edit_score``
also adds to the sample's events repeats the edit and is not read.

Mapping decisions
-----------------
* The machine score of a row is the ORIGINAL value (``history[0].value`` when the history
  starts with the original, else ``value``), read with :func:`value_to_float` and kept on
  Inspect's own scale (not multiplied by 100). Its ``reason`` is the original
  explanation. A score created by an edit has no machine score: succeeded, ``None``.
* A dict value is one evaluator per key (``<scorer>.<key>``), a list one per item
  (``<scorer>[i]``), as :mod:`envloop_nb._loaders.inspect.map` names them.
* Evaluators follow ``eval.scorers``, then scorers seen only in samples; all are
  ``custom``, ``needs_reference`` false, ``scale`` ``{min: 0, max: 1}``.
* A row is ``succeeded`` when the sample has that score (NaN: score ``None``), ``failed``
  with the sample's error message when it has no score and an error, else ``succeeded``
  with score ``None`` — never a 0.
* Every edit with provenance is one correction per evaluator it covers; ``UNCHANGED``
  carries the value then in effect (an edit of only the explanation re-states it), an
  edit back to the original value is still a correction, an empty reason is
  ``"edited in Inspect"``. A later edit of the same score undoes the earlier correction
  (``undone_by`` / ``undone_at`` = the later edit's author and timestamp), so only the
  latest is live. An edit to no number (NaN) cannot be a correction (the format wants a
  number): it only undoes the earlier one, and the machine score counts again.
* ``corrections[]`` is in the order the edits were made (by timestamp; ties keep the log's
  order). Times are kept as Inspect wrote them (RFC 3339 strings).

Examples
--------
>>> from pathlib import Path
>>> doc = inspect_experiment_doc(Path("tests/data/inspect_edits/capitals_edits.eval"))
>>> [e["name"] for e in doc["experiment"]["evaluators"]], len(doc["cases"]), len(doc["results"])
(['exact', 'brevity'], 21, 42)
>>> [(c["result_id"], c["score"], c["by"], c["undone_by"]) for c in doc["corrections"]]
[('c00#1/exact', 1.0, 'alice', 'carol'), ('c09#1/exact', 0.0, 'bob', None), ('c00#1/exact', 0.0, 'carol', None)]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..common.values import parse_time
from .map import value_to_float
from .read import open_inspect_log

__all__ = ["inspect_experiment_doc"]

SCHEMA = "envloop.experiment-result/v1"
_UNCHANGED = "UNCHANGED"
_NO_REASON = "edited in Inspect"
_KEPT = ("id", "epoch", "input", "target", "scores", "error", "metadata", "started_at", "completed_at")  # fmt: skip


def inspect_experiment_doc(path: Path) -> dict[str, Any]:
    """The experiment document (``envloop.experiment-result/v1``) of one Inspect log.

    Parameters
    ----------
    path
        An Inspect AI log, ``.eval`` or ``.json``.

    Returns
    -------
    dict
        ``{schema_version, experiment, cases, results, corrections}``; see the module
        docstring for the mapping.

    Raises
    ------
    LoadError
        The file is not a readable Inspect log, or a sample (named by its place:
        ``samples/c00_epoch_1.json`` or ``samples[3]``) is malformed.

    Examples
    --------
    >>> from pathlib import Path
    >>> doc = inspect_experiment_doc(Path("tests/data/inspect_edits/capitals_edits.json"))
    >>> row = next(r for r in doc["results"] if r["id"] == "c00#1/exact")
    >>> row["status"], row["score"], doc["experiment"]["status"]
    ('succeeded', 0.0, 'completed')
    """
    log = open_inspect_log(path)
    ev: dict[str, Any] = log.header["eval"]
    samples: list[tuple[str, dict[str, Any], str]] = []
    seen: dict[str, str] = {}
    names: dict[str, list[str]] = {}  # scorer -> its evaluator names, first seen first
    for place, sample in log.samples():
        if not isinstance(sample, dict):
            raise LoadError(path, place, f"a sample must be an object, got {type(sample).__name__}")
        trace_id = _trace_id(path, place, sample)
        if trace_id in seen:
            raise LoadError(path, place, f"{trace_id} appears twice (also at {seen[trace_id]})")
        seen[trace_id] = place
        for scorer, entry in _scores(path, place, sample).items():
            known = names.setdefault(scorer, [])
            known.extend(n for n, _ in _split(scorer, entry.get("value")) if n not in known)
        output = sample.get("output")  # keep what is mapped, not the events and messages
        slim = {k: sample.get(k) for k in _KEPT}
        slim["completion"] = output.get("completion") if isinstance(output, dict) else None
        samples.append((place, slim, trace_id))
    scorers = [
        str(s["name"]) for s in ev.get("scorers") or [] if isinstance(s, dict) and s.get("name")
    ]
    scorers += [s for s in names if s not in scorers]
    for scorer in scorers:
        if not names.get(scorer):
            names[scorer] = [scorer]  # no sample has it: one evaluator, no numbers
    doc: dict[str, Any] = {
        "schema_version": SCHEMA,
        "experiment": _experiment(log.header, [n for s in scorers for n in names[s]]),
        "cases": [],
        "results": [],
        "corrections": [],
    }
    for place, sample, trace_id in samples:
        doc["cases"].append(_case(sample, trace_id, str(ev.get("model")), ev))
        scores = _scores(path, place, sample)
        err = sample.get("error")
        message = str(err.get("message") or err) if isinstance(err, dict) else err and str(err)
        for scorer in scorers:
            score = scores.get(scorer)
            history = _history(path, place, scorer, score) if score is not None else []
            original = history[0] if history and history[0].get("provenance") is None else None
            machine = (original or {}) if history else (score or {})
            values = dict(_split(scorer, machine.get("value")))
            explanation = machine.get("explanation")
            for name in names[scorer]:
                result_id = f"{trace_id}/{name}"
                doc["results"].append({
                    "id": result_id, "trace_id": trace_id, "evaluator": name,
                    "status": "failed" if score is None and message else "succeeded",
                    "score": values.get(name),
                    "reason": explanation if isinstance(explanation, str) else None,
                    "points": [], "error": message if score is None else None,
                    "evaluated_at": sample.get("completed_at"), "run": 1,
                })  # fmt: skip
                doc["corrections"] += _corrections(path, place, scorer, name, result_id, history)
    doc["corrections"].sort(key=lambda c: c.pop("_when"))
    return doc


def _experiment(header: dict[str, Any], evaluators: list[str]) -> dict[str, Any]:
    ev, stats = header["eval"], header.get("stats") or {}
    status = {"success": "completed", "started": "running"}.get(str(header.get("status")))
    return {
        "id": f"inspect:{ev.get('eval_id')}", "name": ev.get("task"),
        "agent": str(ev.get("model")), "type": "single-group", "status": status or "stopped",
        "created_at": ev.get("created"), "started_at": stats.get("started_at") or None,
        "finished_at": stats.get("completed_at") or None,
        "listen": {"enabled": False, "since": None, "stopped_at": None},
        "evaluators": [
            {"name": n, "kind": "custom", "needs_reference": False, "version": None,
             "judge_model": None, "scale": {"min": 0, "max": 1}}
            for n in evaluators
        ],
    }  # fmt: skip


def _trace_id(path: Path, place: str, sample: dict[str, Any]) -> str:
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    if not isinstance(sid, str | int) or isinstance(sid, bool):
        raise LoadError(path, place, f"sample id must be a string or integer, got {sid!r}")
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        raise LoadError(path, place, f"epoch must be an integer >= 1, got {epoch!r}")
    return f"{sid}#{epoch}"


def _scores(path: Path, place: str, sample: dict[str, Any]) -> dict[str, dict[str, Any]]:
    scores = sample.get("scores") or {}
    if not isinstance(scores, dict):
        raise LoadError(path, place, f"scores must be an object, got {type(scores).__name__}")
    for name, score in scores.items():
        if not isinstance(score, dict):
            raise LoadError(path, place, f"scores[{name!r}] must be an object, got {score!r}")
    return scores


def _split(scorer: str, value: Any) -> list[tuple[str, float | None]]:
    """``(evaluator, number)`` for one score value: one for a scalar, one per key / item."""
    if isinstance(value, dict):
        return [(f"{scorer}.{k}", value_to_float(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [(f"{scorer}[{i}]", value_to_float(v)) for i, v in enumerate(value)]
    return [(scorer, value_to_float(value))]


def _history(path: Path, place: str, scorer: str, score: dict[str, Any]) -> list[dict[str, Any]]:
    history = score.get("history") or []
    where = f"scores[{scorer!r}].history"
    if not isinstance(history, list):
        raise LoadError(path, place, f"{where} must be a list, got {type(history).__name__}")
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise LoadError(path, place, f"{where}[{i}] must be an object, got {entry!r}")
        provenance = entry.get("provenance")
        if provenance is None:
            if i:
                raise LoadError(path, place, f"{where}[{i}]: an edit without provenance")
            continue
        if not isinstance(provenance, dict) or not isinstance(provenance.get("author"), str):
            raise LoadError(
                path, place, f"{where}[{i}].provenance must be an object with an author string"
            )
        if provenance.get("timestamp") is None:
            raise LoadError(path, place, f"{where}[{i}].provenance has no timestamp")
        parse_time(provenance["timestamp"], path, place, f"{where}[{i}].provenance.timestamp")
        reason = provenance.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise LoadError(path, place, f"{where}[{i}].provenance.reason must be a string")
    return history


def _corrections(
    path: Path, place: str, scorer: str, name: str, result_id: str, history: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The corrections of one row, in edit order; each later edit undoes the one before."""
    out: list[dict[str, Any]] = []
    value: Any = None
    live: dict[str, Any] | None = None
    for entry in history:
        if entry.get("value", _UNCHANGED) != _UNCHANGED:
            value = entry["value"]
        provenance = entry.get("provenance")
        if provenance is None:
            continue
        author, at = provenance["author"], provenance["timestamp"]
        if live is not None:
            live["undone_by"], live["undone_at"] = author, at
            live = None
        score = dict(_split(scorer, value)).get(name)
        if score is None:
            continue  # an edit to no number: it only withdraws the earlier correction
        live = {
            "result_id": result_id, "run": 1, "score": score,
            "reason": provenance.get("reason") or _NO_REASON, "by": author, "at": at,
            "undone_by": None, "undone_at": None,
            "_when": parse_time(at, path, place, "provenance.timestamp"),
        }  # fmt: skip
        out.append(live)
    return out


def _case(sample: dict[str, Any], trace_id: str, model: str, ev: dict[str, Any]) -> dict[str, Any]:
    completion = sample.get("completion")
    target = sample.get("target")
    if isinstance(target, list):
        target = "\n".join(str(t) for t in target)
    reference = target if isinstance(target, str) and target else None
    tags = _flat(sample.get("metadata"))  # the id and epoch win over metadata keys
    tags.update(sample_id=str(sample.get("id")), epoch=str(sample.get("epoch", 1)))
    return {
        "trace_id": trace_id, "agent": model, "parent_trace_id": None,
        "status": "error" if sample.get("error") else "success",
        "trace_started_at": sample.get("started_at") or None,
        "ingested_at": sample.get("completed_at") or ev.get("created"),
        "input": _input(sample.get("input")),
        "output": completion if isinstance(completion, str) else None,
        "reference": reference, "reference_source": "dataset" if reference else None,
        "added_by": "selection", "tags": tags,
    }  # fmt: skip


def _input(value: Any) -> str | list[dict[str, str]] | None:
    if isinstance(value, list):
        return [
            {"role": str(m.get("role")), "content": _text(m.get("content"))}
            for m in value
            if isinstance(m, dict)
        ]
    return value if isinstance(value, str) else None


def _text(content: Any) -> str:
    """A message's text, as Inspect's ``ChatMessage.text``: text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text")) for c in content if isinstance(c, dict) and c.get("type") == "text"
        )
    return ""


def _flat(metadata: Any, prefix: str = "") -> dict[str, str]:
    """Metadata as a flat string map: nested keys dotted, other values as JSON."""
    out: dict[str, str] = {}
    for key, value in (metadata or {}).items() if isinstance(metadata, dict) else ():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        elif value is not None:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out[f"{prefix}{key}"] = text
    return out
