"""Inspect AI samples → rows, as pure functions (no DuckDB): the mapping of
:mod:`envloop_nb._loaders.inspect.job`, testable on a sample dict alone.

Examples
--------
>>> rows = Rows()
>>> rows.add(Path("x.json"), "samples[0]", {"id": 1, "epoch": 2, "scores": {"exact": {"value": "C"}}}, "exact")
>>> rows.attempts["task"], rows.attempts["attempt"], rows.attempts["reward"]
(['1'], [2], [1.0])
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..._errors import LoadError
from ..._store.source_numbers import SourceNumber
from ..common.values import INT32_MAX, parse_time

__all__ = ["STATUS", "Rows", "reward_name", "source_numbers", "value_to_float"]

STATUS = {
    "success": "completed",
    "error": "failed",
    "cancelled": "cancelled",
    "started": "running",
}
_ERROR_TYPE = re.compile(r"^([A-Za-z_][\w.]*)\(")
#: Inspect's reducers by logged name → (our reducer, k); ``pass_at_2`` etc. carry k.
_REDUCER = re.compile(r"^(pass_at|pass|at_least)_(\d+)$")
_METRIC_STATISTIC = {
    "accuracy": "mean",
    "mean": "mean",
    "stderr": "stderr",
    "std": "std",
    "var": "var",
}
_RULE = (
    "Inspect drops NaN scores and errored epochs; a sample's epochs are reduced "
    "(here: {reducer}), then the metric is taken over the samples that have a value"
)


def value_to_float(value: Any) -> float | None:
    """A score value as a number, by Inspect AI's rule; ``None`` for no value.

    Inspect's ``value_to_float()`` (``inspect_ai/scorer/_metric.py``), quoted::

        if isinstance(value, int | float | bool):
            return float(value)
        elif value == correct:            # "C"
            return 1.0
        elif value == partial:            # "P"
            return 0.5
        elif value == incorrect or value == noanswer:   # "I", "N"
            return 0
        elif isinstance(value, str):
            value = value.lower()
            if value in ["yes", "true"]:
                return 1.0
            elif value in ["no", "false"]:
                return 0.0
            elif is_finite_number(value):
                return float(value)
        # couldn't extract a value
        logger.warning(f"Unable to convert value to float: {value}")
        return 0.0

    Two differences, both on the side of not inventing numbers: NaN (Inspect's
    unscored sentinel, which its reducers and metrics skip) and ``None`` are no value,
    and a string it cannot read is no value rather than Inspect's warning and 0.

    Examples
    --------
    >>> [value_to_float(v) for v in ["C", "I", "P", "N", "yes", "False", "0.25", 1, True]]
    [1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.25, 1.0, 1.0]
    >>> value_to_float(float("nan")) is None, value_to_float("maybe") is None
    (True, True)
    """
    if isinstance(value, bool | int | float):
        number = float(value)
        return None if math.isnan(number) else number
    if not isinstance(value, str):
        return None
    if value == "C":
        return 1.0
    if value == "P":
        return 0.5
    if value in ("I", "N"):
        return 0.0
    lower = value.lower()
    if lower in ("yes", "true"):
        return 1.0
    if lower in ("no", "false"):
        return 0.0
    try:
        number = float(lower)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _flat_tags(metadata: Any, prefix: str = "") -> dict[str, str]:
    """Sample metadata as a flat string map (nested keys dotted, lists as JSON)."""
    out: dict[str, str] = {}
    if not isinstance(metadata, dict):
        return out
    for key, value in metadata.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat_tags(value, f"{name}."))
        elif value is None:
            continue
        elif isinstance(value, str):
            out[name] = value
        elif isinstance(value, bool):
            out[name] = "true" if value else "false"
        else:
            out[name] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return out


def _chat(messages: Any) -> str | None:
    """The conversation as ChatML JSON: Inspect's messages as they are (``role``,
    ``content``, tool fields, and Inspect's own ``id`` / ``source`` / ``model``)."""
    if not isinstance(messages, list) or not messages:
        return None
    return json.dumps(messages, ensure_ascii=False)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _completion(output: Any) -> str | None:
    """The output's ``completion``; in logs before 2025, which did not store it (it was
    a property), what the property gave: the first choice's message text (a string, or
    its text parts joined by newlines). No choice: no output.

    Examples
    --------
    >>> _completion({"choices": [{"message": {"content": [
    ...     {"type": "reasoning", "reasoning": "hm"}, {"type": "text", "text": "a"},
    ...     {"type": "text", "text": "b"}]}}]})
    'a\\nb'
    >>> _completion({"completion": "", "choices": []}), _completion({"choices": []})
    ('', None)
    """
    if not isinstance(output, dict):
        return None
    completion = output.get("completion")
    if completion is not None:
        return completion if isinstance(completion, str) else None
    choices = output.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return None


def _json_safe(value: Any) -> Any:
    """A score value for JSON: NaN / infinity (Inspect's unscored sentinel) as ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _scores(sample: Mapping[str, Any]) -> Mapping[str, Any]:
    scores = sample.get("scores")
    return scores if isinstance(scores, dict) else {}


def _score_values(scorer: str, score: Any) -> Iterator[tuple[str, float | None]]:
    """``(name, value)`` for a scorer's score: one for a scalar, one per key of a dict."""
    value = score.get("value") if isinstance(score, dict) else None
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{scorer}.{key}", value_to_float(item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield f"{scorer}[{i}]", value_to_float(item)
    else:
        yield scorer, value_to_float(value)


def reward_name(header: Mapping[str, Any]) -> str | None:
    """The headline score's name (``results.headline``), else the first scorer's."""
    results = header.get("results") or {}
    headline = results.get("headline") if isinstance(results, dict) else None
    if isinstance(headline, dict) and headline.get("scorer"):
        scorer, score = str(headline["scorer"]), str(headline.get("score") or headline["scorer"])
        return scorer if score == scorer else f"{scorer}.{score}"
    scorers = (header.get("eval") or {}).get("scorers") or []
    if scorers and isinstance(scorers[0], dict) and scorers[0].get("name"):
        return str(scorers[0]["name"])
    scores = results.get("scores") if isinstance(results, dict) else None
    if scores and isinstance(scores[0], dict):
        return str(scores[0].get("scorer") or scores[0].get("name"))
    return None


def _error(sample: Mapping[str, Any]) -> tuple[str | None, str | None]:
    err = sample.get("error")
    if not isinstance(err, dict):
        return None, None
    message = err.get("message") or None
    match = _ERROR_TYPE.match(message) if isinstance(message, str) else None
    return message, match.group(1) if match else "error"


def _usage(sample: Mapping[str, Any]) -> tuple[int | None, int | None, int | None, float | None]:
    usage = sample.get("model_usage")
    if not isinstance(usage, dict) or not usage:
        return None, None, None, None
    inp = out = cache = 0
    cost: float | None = None
    for u in usage.values():
        if not isinstance(u, dict):
            continue
        inp += int(u.get("input_tokens") or 0)
        out += int(u.get("output_tokens") or 0)
        cache += int(u.get("input_tokens_cache_read") or 0)
        if u.get("total_cost") is not None:
            cost = (cost or 0.0) + float(u["total_cost"])
    return inp, out, cache, cost


class Rows:
    """Columns of the attempts and dimensions being built (one list per column)."""

    ATTEMPT_COLUMNS = (
        "task", "attempt", "trial_id", "status", "error", "error_type", "reward",
        "judge_summary", "input_tokens", "output_tokens", "cache_tokens", "turns",
        "cost_usd", "started_at", "finished_at", "duration_s", "input", "input_is_chat",
        "output", "reference", "extra", "source_place",
    )  # fmt: skip

    def __init__(self) -> None:
        self.attempts: dict[str, list[Any]] = {c: [] for c in self.ATTEMPT_COLUMNS}
        self.dims: dict[str, list[Any]] = {"task": [], "attempt": [], "name": [], "value": []}
        self.tags: dict[str, dict[str, str]] = {}
        self.digests: dict[str, str] = {}
        self.seen: dict[tuple[str, int], str] = {}
        self.dim_names: list[str] = []

    def add(
        self, path: Path, place: str, sample: Mapping[str, Any], reward_name: str | None
    ) -> None:
        sid, epoch = sample.get("id"), sample.get("epoch", 1)
        if not isinstance(sid, str | int) or isinstance(sid, bool):
            raise LoadError(path, place, f"sample id must be a string or integer, got {sid!r}")
        if not isinstance(epoch, int) or isinstance(epoch, bool) or not 1 <= epoch <= INT32_MAX:
            raise LoadError(path, place, f"epoch must be an integer >= 1, got {epoch!r}")
        task = str(sid)
        if (task, epoch) in self.seen:
            raise LoadError(
                path,
                place,
                f"sample {task!r} epoch {epoch} appears twice (also at {self.seen[task, epoch]})",
            )
        self.seen[task, epoch] = place
        values = dict(v for name, s in _scores(sample).items() for v in _score_values(name, s))
        reward = values.pop(reward_name, None) if reward_name else None
        message, error_type = _error(sample)
        scores = _scores(sample)
        reward_scorer = reward_name.split(".")[0] if reward_name else None
        judged = scores.get(reward_scorer) if reward_scorer else None
        explanation = judged.get("explanation") if isinstance(judged, dict) else None
        inp, out, cache, cost = _usage(sample)
        started = parse_time(sample.get("started_at"), path, place, "started_at")
        finished = parse_time(sample.get("completed_at"), path, place, "completed_at")
        completion = _completion(sample.get("output"))
        messages = sample.get("messages")
        turns = sample.get("turn_count")
        if not isinstance(turns, int) and isinstance(messages, list):
            turns = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        extra: dict[str, Any] = {
            "working_time": sample.get("working_time"),
            "scores": {
                n: _json_safe(s.get("value")) for n, s in scores.items() if isinstance(s, dict)
            },
        }
        answers = {
            n: s.get("answer") for n, s in scores.items() if isinstance(s, dict) and s.get("answer")
        }
        if answers:
            extra["answers"] = answers
        for key in ("limit", "error_retries"):
            if sample.get(key):
                extra[key] = sample[key]
        edits = {
            n: len(s["history"])
            for n, s in scores.items()
            if isinstance(s, dict) and s.get("history")
        }
        if edits:
            extra["score_edits"] = edits
        target = sample.get("target")
        a = self.attempts
        a["task"].append(task)
        a["attempt"].append(epoch)
        a["trial_id"].append(sample.get("uuid"))
        a["status"].append("failed" if sample.get("error") else "completed")
        a["error"].append(message)
        a["error_type"].append(error_type)
        a["reward"].append(reward)
        a["judge_summary"].append(explanation if isinstance(explanation, str) else None)
        a["input_tokens"].append(inp)
        a["output_tokens"].append(out)
        a["cache_tokens"].append(cache)
        a["turns"].append(turns if isinstance(turns, int) else None)
        a["cost_usd"].append(cost)
        a["started_at"].append(started)
        a["finished_at"].append(finished)
        total = sample.get("total_time")
        a["duration_s"].append(float(total) if isinstance(total, int | float) else None)
        chat = _chat(messages)
        a["input"].append(chat if chat is not None else _text(sample.get("input")))
        a["input_is_chat"].append(chat is not None or isinstance(sample.get("input"), list))
        a["output"].append(completion)
        a["reference"].append(_text(target))
        a["extra"].append(json.dumps(extra, ensure_ascii=False, allow_nan=False, default=str))
        a["source_place"].append(place)
        for name, value in values.items():
            if name not in self.dim_names:
                self.dim_names.append(name)
            d = self.dims
            d["task"].append(task)
            d["attempt"].append(epoch)
            d["name"].append(name)
            d["value"].append(value)
        if task not in self.tags:
            self.tags[task] = _flat_tags(sample.get("metadata"))
            blob = json.dumps([sample.get("input"), target], sort_keys=True, default=str)
            self.digests[task] = hashlib.sha256(blob.encode()).hexdigest()[:16]


def source_numbers(
    header: Mapping[str, Any], reward_name: str | None, dims: list[str]
) -> list[dict[str, Any]]:
    """Inspect's ``results.scores`` as source numbers (one per metric, plus counts)."""
    results = header.get("results")
    scores = results.get("scores") if isinstance(results, dict) else None
    out: list[dict[str, Any]] = []
    for entry in scores or []:
        if not isinstance(entry, dict):
            continue
        scorer, name = str(entry.get("scorer") or entry.get("name")), str(entry.get("name"))
        value_name = scorer if name == scorer else f"{scorer}.{name}"
        if value_name == reward_name:
            of = "reward"
        elif value_name in dims:
            of = f"dimension:{value_name}"
        else:
            continue  # a score this log's samples do not carry
        logged = str(entry.get("reducer") or "mean")
        match = _REDUCER.match(logged)
        if match:
            reducer = {"pass_at": "pass_at", "pass": "pass_k", "at_least": "at_least"}[match[1]]
            k: int | None = int(match[2])
        elif logged in ("mean", "median", "mode", "max"):
            reducer, k = logged, None
        else:
            continue  # a custom reducer: nothing to recompute it with
        threshold = 1.0 if k is not None else None
        params = entry.get("params")
        if isinstance(params, dict) and isinstance(params.get("value"), int | float):
            threshold = float(params["value"])
        rule = _RULE.format(reducer=logged) + (
            f"; a pass is a value >= {threshold:g}" if threshold is not None else ""
        )
        base = {
            "of": of,
            "reducer": reducer,
            "k": k,
            "threshold": threshold,
            "policy": "unknown",
            "rule": rule,
        }
        label = f"{name} · {logged}"
        for metric in (entry.get("metrics") or {}).values():
            if not isinstance(metric, dict):
                continue
            statistic = _METRIC_STATISTIC.get(str(metric.get("name")))
            value = metric.get("value")
            if statistic is None or not isinstance(value, int | float):
                continue
            out.append(
                {
                    **base,
                    "metric": f"{label} · {metric.get('name')}",
                    "source": value,
                    "statistic": statistic,
                }
            )
        for key in ("scored_samples", "unscored_samples"):
            if isinstance(entry.get(key), int):
                statistic = "scored" if key == "scored_samples" else "unscored"
                out.append(
                    {
                        **base,
                        "metric": f"{label} · {key}",
                        "source": entry[key],
                        "statistic": statistic,
                    }
                )
    return [SourceNumber.from_dict(d).as_dict() for d in out]
