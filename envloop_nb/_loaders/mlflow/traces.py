"""MLflow 3 traces and their assessments as an EnvLoop experiment document.

An MLflow experiment that holds traces of an agent and feedback on them (from an LLM
judge, code or a human) is what an EnvLoop *experiment* is: traces already produced,
scored by evaluators. :func:`mlflow_experiment_doc` reads it through ``MlflowClient``
and returns an ``envloop.experiment-result/v1`` document (a plain dict, see
``formats/envloop-experiment-result.md``). The mapping itself,
:func:`experiment_doc_from_dicts`, is pure: it takes MLflow's own JSON forms
(``TraceInfo.to_dict()``, whose ``assessments`` are ``Assessment.to_dictionary()``),
so it runs and is tested on plain dicts (its doctest needs no MLflow).

Notes
-----
**Reading.** A ``MlflowClient`` bound to ``tracking_uri`` (MLflow's global tracking URI
and active experiment are left alone) finds the experiment by name and pages through
``search_traces`` oldest first, spans included; ``max_traces`` keeps the oldest ones.
A ``sqlite:`` URI naming a missing file is refused before MLflow would create an empty
database there.

**Cases.** One per trace of the experiment, oldest first (``request_time``, then
``trace_id``). MLflow has no sub-traces: a nested ``@mlflow.trace`` call or
``mlflow.start_span`` inside a trace is a child *span* of the same trace (``parent_id``),
and ``mlflow.add_trace`` merges a trace into its parent's span tree. So every trace is a
main trace and ``parent_trace_id`` is always null. ``agent`` is the trace's
``mlflow.traceName`` tag (the root span's name), or the experiment's agent.
``status``: state ``OK`` → ``success``, ``IN_PROGRESS`` → ``running``, anything else
(``ERROR``, ``STATE_UNSPECIFIED``) → ``error``. ``trace_started_at`` and ``ingested_at``
are both ``request_time`` (MLflow keeps no separate ingestion time), as RFC 3339 UTC
with milliseconds. ``input`` / ``output`` are the root span's full inputs / outputs
(the ``request_preview`` / ``response_preview``, which MLflow cuts to 1000 characters
and reduces to the last chat message, only when the spans are missing), parsed as JSON:
a string stays a string; a chat message list (also under ``"messages"``, or one
``choices[0].message``) becomes ``[{role, content}]``; a call with one argument given,
such as ``{"question": "...", "user": null}`` (MLflow records defaulted arguments too),
becomes that argument's string (or message list); anything else is
kept as the JSON text MLflow stored. ``reference`` is the latest valid ``Expectation``
named ``expected_response``, else ``expected_facts`` (a list of facts is joined with
newlines, other values are JSON text), with ``reference_source`` ``"dataset"``; other
expectation names are ignored. ``tags`` are the trace tags without MLflow's own
``mlflow.*`` keys. ``added_by`` is ``"selection"``.

**Results.** One per *original* feedback (a ``Feedback`` whose ``overrides`` is empty):
``id`` is its ``assessment_id``, ``evaluator`` its name, ``evaluated_at`` its
``create_time``, ``reason`` its rationale. Several originals with the same name on one
trace (an evaluation run again) are runs 1, 2, … of that pair in creation order, as the
format numbers re-evaluations. A feedback with an ``error`` is ``failed`` with no score
(``error`` = ``"CODE: message"``), even if it also carries a value. Otherwise it is
``succeeded`` and ``score`` follows MLflow's own cast to a number
(``mlflow.genai.scorers.aggregation._cast_assessment_value_to_float``): bool → 1.0 /
0.0, int and float as they are, ``"yes"`` / ``"no"`` (any case) → 1.0 / 0.0; any other
value (other strings, lists, dicts, null) gives a succeeded row without a number.
``points`` is always empty. A (case, evaluator) pair with no feedback at all gets **no
row**: MLflow has no notion of a pending evaluation, so nothing says one is expected.
Issue references are not feedback and are ignored.

**Corrections.** ``mlflow.override_feedback`` logs a *new* feedback whose ``overrides``
names the one it replaces, and sets ``valid = False`` on the replaced one (deleting an
override sets it back to ``True``). Overriding an override makes a chain
``judge ← human 1 ← human 2``: only the newest link is valid. Each override, followed
back through ``overrides`` to its original, is one correction of that original's row
(``result_id`` / ``run``), in creation order: ``score`` as above, ``reason`` its
rationale or ``"override in MLflow"``, ``by`` its ``source_id`` (or source type),
``at`` its ``create_time``. At most one correction of a row is live: the newest
override that is still ``valid``. Every other one is undone by the override that
replaced it — the one that overrides it directly, else the next newer override of the
row — whose ``source_id`` and ``create_time`` become ``undone_by`` / ``undone_at``; an
invalid override that nothing visible replaced is undone by ``"mlflow"`` at its
``last_update_time``. An override whose chain is broken (a link was deleted) is a
correction of the newest same-name original created before it, or dropped if there is
none. Two kinds of override are left out, because the format has no place for them (a
correction needs a number and corrects a succeeded row): an override whose value has no
numeric reading, and every override of a *failed* feedback (MLflow lets a human fill in
the score a judge could not give; the row stays failed). They still take part in the
chain: a correction such an override replaced is undone by it.

**Experiment.** ``id`` ``mlflow:<experiment_id>``; ``agent`` the most common
``mlflow.traceName`` (first seen wins a tie) or the experiment name; ``type``
``single-group``; ``status`` ``completed``; ``created_at`` the experiment's creation
time; ``started_at`` / ``finished_at`` the first / last original feedback's time (null
without feedback); ``listen`` disabled. ``evaluators``: one per feedback name, in order
of first appearance; ``kind`` ``preset`` when any original of that name comes from an
``LLM_JUDGE`` source (whose ``source_id`` is the ``judge_model``), else ``custom``;
``needs_reference`` false; ``version`` null. Scores are kept as MLflow holds them (not
rescaled), so ``scale`` says which scale they are on: ``{min: 0, max: 1}`` when every
score and correction score of the evaluator lies in 0–1 (MLflow's judges and bool /
yes-no feedback), ``max: 100`` when they lie in 0–100, else the highest score; ``min``
is 0 or the lowest score if that is negative.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..._errors import LoadError

__all__ = ["experiment_doc_from_dicts", "mlflow_experiment_doc", "read_mlflow_traces"]

SCHEMA_VERSION = "envloop.experiment-result/v1"
#: Expectation names read as the case's reference, in order of preference.
REFERENCE_NAMES = ("expected_response", "expected_facts")
_PAGE = 100  # MLflow's default page of search_traces
_OVERRIDE_REASON = "override in MLflow"
_STATUS = {"OK": "success", "IN_PROGRESS": "running"}
_TEXT_PARTS = ("text", "input_text", "output_text")


def mlflow_experiment_doc(
    *, experiment: str, tracking_uri: str, max_traces: int | None = None
) -> dict[str, Any]:
    """The traces of an MLflow experiment and their feedback, as an experiment document.

    Parameters
    ----------
    experiment
        The MLflow experiment's name.
    tracking_uri
        Where MLflow keeps it: ``"sqlite:///path/mlflow.db"``, a server URL, ...
        A ``sqlite:`` file that does not exist is refused (MLflow would create it).
    max_traces
        Read only the oldest ``max_traces`` traces; all of them by default.

    Returns
    -------
    dict
        An ``envloop.experiment-result/v1`` document; the module docstring gives the
        mapping.

    Raises
    ------
    ImportError
        MLflow is not installed.
    LoadError
        No such experiment (the message lists the experiments there), or no such file.

    Examples
    --------
    >>> doc = mlflow_experiment_doc(  # doctest: +SKIP
    ...     experiment="support-agent", tracking_uri="sqlite:///mlflow.db"
    ... )
    >>> [e["name"] for e in doc["experiment"]["evaluators"]]  # doctest: +SKIP
    ['correctness', 'is_polite']
    """
    return experiment_doc_from_dicts(
        *read_mlflow_traces(experiment=experiment, tracking_uri=tracking_uri, max_traces=max_traces)
    )


def read_mlflow_traces(
    *, experiment: str, tracking_uri: str, max_traces: int | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The MLflow experiment's record and its traces, oldest first, as
    :func:`experiment_doc_from_dicts` takes them; each trace also holds its ``"spans"``
    (``Span.to_dict()`` each, what :mod:`.steps` reads as the case's steps). Parameters
    and errors: :func:`mlflow_experiment_doc`'s."""
    try:
        from mlflow import MlflowClient
    except ImportError as e:
        raise ImportError(
            "reading MLflow traces needs MLflow 3: pip install 'envloop_nb[mlflow]'"
        ) from e
    if max_traces is not None and (
        isinstance(max_traces, bool) or not isinstance(max_traces, int) or max_traces < 1
    ):
        raise ValueError(f"max_traces must be a positive integer or None, got {max_traces!r}")
    _check_sqlite_file(tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        names = sorted(e.name for e in client.search_experiments())
        raise LoadError(
            tracking_uri,
            f"experiment {experiment!r}",
            f"no such MLflow experiment; experiments: {names}",
        )
    where = (
        {"locations": [found.experiment_id]}
        if "locations" in inspect.signature(client.search_traces).parameters
        else {"experiment_ids": [found.experiment_id]}
    )
    traces: list[dict[str, Any]] = []
    token: str | None = None
    while max_traces is None or len(traces) < max_traces:
        want = _PAGE if max_traces is None else min(_PAGE, max_traces - len(traces))
        page = client.search_traces(
            **where,
            max_results=want,
            order_by=["timestamp_ms ASC", "request_id ASC"],
            page_token=token,
        )
        for trace in page:
            info = trace.info.to_dict()
            info["request"] = trace.data.request
            info["response"] = trace.data.response
            info["spans"] = [span.to_dict() for span in trace.data.spans]
            traces.append(info)
        token = page.token
        if not token or not page:
            break
    record = {
        "experiment_id": found.experiment_id,
        "name": found.name,
        "creation_time": found.creation_time,
    }
    return record, traces


def _check_sqlite_file(tracking_uri: str) -> None:
    """Refuse a ``sqlite:///file`` that does not exist, which MLflow would create empty."""
    parsed = urlparse(tracking_uri)
    # SQLAlchemy: sqlite:///relative.db, sqlite:////absolute.db, sqlite:// (in memory)
    name = unquote(parsed.path[1:])
    if parsed.scheme != "sqlite" or name in ("", ":memory:"):
        return
    if not Path(name).is_file():
        raise LoadError(tracking_uri, None, f"no such MLflow database file: {name}")


def experiment_doc_from_dicts(
    experiment: Mapping[str, Any], traces: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The experiment document from MLflow's JSON forms (the pure part of the mapping).

    Parameters
    ----------
    experiment
        ``{"experiment_id", "name", "creation_time"}`` (creation time in epoch ms).
    traces
        ``TraceInfo.to_dict()`` of each trace, with ``"request"`` / ``"response"`` added:
        the root span's inputs / outputs as MLflow serialised them (JSON text).

    Examples
    --------
    >>> judge = {"source_type": "LLM_JUDGE", "source_id": "gpt-4o"}
    >>> trace = {"trace_id": "tr-1", "state": "OK", "request_time": "2026-01-02T03:04:05Z",
    ...          "tags": {"mlflow.traceName": "bot", "team": "a"},
    ...          "request": '{"question": "2+2?"}', "response": '"4"',
    ...          "assessments": [{"assessment_id": "a-1", "assessment_name": "correct",
    ...                           "source": judge, "create_time": "2026-01-02T03:05:00Z",
    ...                           "feedback": {"value": "yes"}, "valid": True}]}
    >>> doc = experiment_doc_from_dicts(
    ...     {"experiment_id": "7", "name": "math", "creation_time": 0}, [trace])
    >>> doc["experiment"]["agent"], doc["cases"][0]["input"], doc["cases"][0]["tags"]
    ('bot', '2+2?', {'team': 'a'})
    >>> {k: doc["results"][0][k] for k in ("evaluator", "status", "score")}
    {'evaluator': 'correct', 'status': 'succeeded', 'score': 1.0}
    """
    ordered = sorted(traces, key=lambda t: (_ms(t.get("request_time")), str(t["trace_id"])))
    names = Counter(
        str(tags["mlflow.traceName"])
        for tags in (t.get("tags") or {} for t in ordered)
        if "mlflow.traceName" in tags
    )
    agent = names.most_common(1)[0][0] if names else str(experiment["name"])
    cases: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    corrections: list[dict[str, Any]] = []
    for trace in ordered:
        cases.append(_case(trace, agent))
        rows, fixes = _rows(trace)
        results.extend(rows)
        corrections.extend(fixes)
    corrections.sort(key=lambda c: (c["at"] or "", c["result_id"]))
    evaluated = [r["evaluated_at"] for r in results if r["evaluated_at"] is not None]
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": {
            "id": f"mlflow:{experiment['experiment_id']}",
            "name": str(experiment["name"]),
            "agent": agent,
            "type": "single-group",
            "status": "completed",
            "created_at": _rfc3339(experiment.get("creation_time")),
            "started_at": min(evaluated, default=None),
            "finished_at": max(evaluated, default=None),
            "listen": {"enabled": False, "since": None, "stopped_at": None},
            "evaluators": _evaluators(ordered, results, corrections),
        },
        "cases": cases,
        "results": results,
        "corrections": corrections,
    }


def _case(trace: Mapping[str, Any], agent: str) -> dict[str, Any]:
    tags = trace.get("tags") or {}
    started = _rfc3339(trace.get("request_time"))
    request = trace.get("request")
    response = trace.get("response")
    reference = _reference(trace.get("assessments") or [])
    return {
        "trace_id": str(trace["trace_id"]),
        "agent": str(tags.get("mlflow.traceName") or agent),
        "parent_trace_id": None,
        "status": _STATUS.get(str(trace.get("state")), "error"),
        "trace_started_at": started,
        "ingested_at": started,
        "input": _content(request if request is not None else trace.get("request_preview")),
        "output": _content(response if response is not None else trace.get("response_preview")),
        "reference": reference,
        "reference_source": "dataset" if reference is not None else None,
        "added_by": "selection",
        "tags": {str(k): str(v) for k, v in tags.items() if not str(k).startswith("mlflow.")},
    }


def _rows(trace: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The result rows and corrections of one trace."""
    trace_id = str(trace["trace_id"])
    feedback = sorted(
        (a for a in trace.get("assessments") or [] if "feedback" in a),
        key=lambda a: (_ms(a.get("create_time")), str(a.get("assessment_id"))),
    )
    by_id = {str(a["assessment_id"]): a for a in feedback}
    originals = [a for a in feedback if not a.get("overrides")]
    runs: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    row_of: dict[str, dict[str, Any]] = {}
    for a in originals:
        name = str(a["assessment_name"])
        runs[name] += 1
        row = _result(trace_id, a, runs[name])
        rows.append(row)
        row_of[row["id"]] = row
    chains: dict[str, list[Mapping[str, Any]]] = {}
    for a in feedback:
        if a.get("overrides"):
            root = _root(a, by_id, originals)
            if root is not None:
                chains.setdefault(root, []).append(a)
    fixes: list[dict[str, Any]] = []
    for root, chain in chains.items():
        if row_of[root]["status"] == "succeeded":  # the format corrects succeeded rows only
            fixes.extend(c for c in _corrections(row_of[root], chain) if c["score"] is not None)
    return rows, fixes


def _result(trace_id: str, a: Mapping[str, Any], run: int) -> dict[str, Any]:
    value = a["feedback"]
    error = value.get("error")
    return {
        "id": str(a["assessment_id"]),
        "trace_id": trace_id,
        "evaluator": str(a["assessment_name"]),
        "status": "failed" if error else "succeeded",
        "score": None if error else _score(value.get("value")),
        "reason": a.get("rationale") or None,
        "points": [],
        "error": _error_text(error) if error else None,
        "evaluated_at": _rfc3339(a.get("create_time")),
        "run": run,
    }


def _root(
    a: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]], originals: list[Mapping[str, Any]]
) -> str | None:
    """The id of the original feedback an override corrects, followed back through
    ``overrides``; a broken chain falls back to the newest same-name original before it."""
    seen: set[str] = set()
    here = a
    while here.get("overrides"):
        target = str(here["overrides"])
        if target in seen or target not in by_id:
            break
        seen.add(target)
        here = by_id[target]
    else:
        return str(here["assessment_id"])
    at = _ms(a.get("create_time"))
    before = [
        o
        for o in originals
        if o["assessment_name"] == a["assessment_name"] and _ms(o.get("create_time")) <= at
    ]
    return str(before[-1]["assessment_id"]) if before else None


def _corrections(row: Mapping[str, Any], chain: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One correction per override of a row, in creation order; only the newest valid
    override stays live, every other one is undone by the override that replaced it."""
    valid = [a for a in chain if a.get("valid", True) is not False]
    live = valid[-1]["assessment_id"] if valid else None
    out = []
    for i, a in enumerate(chain):
        undone_by: str | None = None
        undone_at: str | None = None
        if a["assessment_id"] != live:
            direct = [b for b in chain if b.get("overrides") == a["assessment_id"]]
            later = direct or chain[i + 1 :]
            if later:
                undone_by, undone_at = _who(later[0]), _rfc3339(later[0].get("create_time"))
            else:
                undone_by, undone_at = "mlflow", _rfc3339(a.get("last_update_time"))
        out.append(
            {
                "result_id": row["id"],
                "run": row["run"],
                "score": _score(a["feedback"].get("value")),
                "reason": a.get("rationale") or _OVERRIDE_REASON,
                "by": _who(a),
                "at": _rfc3339(a.get("create_time")),
                "undone_by": undone_by,
                "undone_at": undone_at,
            }
        )
    return out


def _evaluators(
    traces: Sequence[Mapping[str, Any]],
    results: list[dict[str, Any]],
    corrections: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    judge: dict[str, str | None] = {}
    kinds: dict[str, str] = {}
    for trace in traces:
        for a in trace.get("assessments") or []:
            if "feedback" not in a or a.get("overrides"):
                continue
            name = str(a["assessment_name"])
            source = a.get("source") or {}
            kinds.setdefault(name, "custom")
            if source.get("source_type") == "LLM_JUDGE" and kinds[name] == "custom":
                kinds[name] = "preset"
                judge[name] = source.get("source_id")
    evaluator_of = {r["id"]: r["evaluator"] for r in results}
    scores: dict[str, list[float]] = {}
    for r in results:
        scores.setdefault(r["evaluator"], [])
        if r["score"] is not None:
            scores[r["evaluator"]].append(r["score"])
    for c in corrections:
        if c["score"] is not None:
            scores[evaluator_of[c["result_id"]]].append(c["score"])
    order = list(dict.fromkeys(r["evaluator"] for r in results))
    return [
        {
            "name": name,
            "kind": kinds.get(name, "custom"),
            "needs_reference": False,
            "version": None,
            "judge_model": judge.get(name),
            "scale": _scale(scores[name]),
        }
        for name in order
    ]


def _scale(scores: list[float]) -> dict[str, float]:
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    top = 1 if high <= 1 else 100 if high <= 100 else high
    return {"min": min(0, low), "max": top}


def _score(value: Any) -> float | None:
    """MLflow's own cast of a feedback value to a number (bool, int, float, yes / no)."""
    if isinstance(value, bool | int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return 1.0 if value.strip().lower() == "yes" else 0.0
    return None


def _error_text(error: Mapping[str, Any]) -> str:
    code, message = error.get("error_code"), error.get("error_message")
    parts = [str(p) for p in (code, message) if p]
    return ": ".join(parts) or "error"


def _who(a: Mapping[str, Any]) -> str:
    source = a.get("source") or {}
    return str(source.get("source_id") or source.get("source_type") or "unknown")


def _reference(assessments: Sequence[Mapping[str, Any]]) -> str | None:
    expectations = sorted(
        (a for a in assessments if "expectation" in a and a.get("valid", True) is not False),
        key=lambda a: _ms(a.get("create_time")),
    )
    for name in REFERENCE_NAMES:
        named = [a for a in expectations if a.get("assessment_name") == name]
        if named:
            return _expected_text(named[-1]["expectation"])
    return None


def _expected_text(expectation: Mapping[str, Any]) -> str:
    if "serialized_value" in expectation:
        value = json.loads(expectation["serialized_value"]["value"])
    else:
        value = expectation.get("value")
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return json.dumps(value, ensure_ascii=False)


def _content(raw: Any) -> str | list[dict[str, Any]] | None:
    """A request or response: a string, a ``[{role, content}]`` chat list, or JSON text."""
    if raw is None or raw == "":
        return None
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if value is None:
        return None
    if isinstance(value, str):
        return value
    shaped = _messages(value)
    given = [v for v in value.values() if v is not None] if isinstance(value, dict) else []
    if shaped is None and len(given) == 1:
        (inner,) = given
        shaped = inner if isinstance(inner, str) else _messages(inner)
    return shaped if shaped is not None else text


def _messages(value: Any) -> str | list[dict[str, Any]] | None:
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            return _messages(value["messages"])
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict) and "content" in message:
                return _text(message["content"])
        return None
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    ):
        return [{"role": str(m["role"]), "content": _text(m["content"])} for m in value]
    return None


def _text(content: Any) -> str:
    """A message's content as text (the text parts of a content-part list, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
                parts.append(str(part.get("text", "")))
        return "".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _ms(value: Any) -> int:
    """Epoch milliseconds of an MLflow time: epoch ms, or a protobuf JSON timestamp."""
    if value is None:
        return 0
    if isinstance(value, int | float):
        return int(value)
    text = str(value).replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # protobuf writes 0, 3, 6 or 9 fraction digits; Python reads at most 6
        digits = "".join(c for c in rest if c.isdigit())
        text = f"{head}.{digits[:6]}{rest[len(digits) :]}"
    parsed = dt.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return round(parsed.timestamp() * 1000)


def _rfc3339(value: Any) -> str | None:
    """An MLflow time as RFC 3339 UTC with milliseconds, ``2026-01-02T03:04:05.000Z``."""
    if value is None:
        return None
    moment = dt.datetime.fromtimestamp(_ms(value) / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
