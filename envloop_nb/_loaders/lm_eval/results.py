"""lm-evaluation-harness results written without samples: a *summary-only* job.

Two shapes, both a JSON object with ``results`` {task: {metric: value}}:

* **lm-eval 0.3** (EleutherAI's published Pythia evaluations): ``results`` {task:
  {metric: v, metric_stderr: v}}, ``versions``, ``config`` (``model``, ``model_args`` as
  ``"pretrained=...,revision=..."``, ``num_fewshot``, ...). The metrics in each task's
  order are lm-eval 0.3's own (``make_table`` prints them so).
* **lm-eval 0.4** ``results_<time>.json`` without ``--log_samples``: ``results`` {task or
  group: {"metric,filter": v, "metric_stderr,filter": v or "N/A", "alias", ...}},
  ``groups``, ``group_subtasks``, ``configs``, ``versions``, ``n-shot``,
  ``higher_is_better``, ``n-samples``, ``config``, ``model_name``, ``date``...

The file holds per-task aggregates only, so the job is a *metrics-only* summarised job
(:mod:`envloop_nb._loaders.tables.summary`, as an MLflow run's metrics): no task table, no
attempt. Every number the file states is one row of ``extra["lm_eval_results"]``
(``task, kind, group, metric, value, stderr, n, primary, higher_is_better``), read by
:mod:`envloop_nb._metrics.lm_eval_results` (the summary, ``groups``, ``intervals``).

* a task's **primary** metric: 0.4, the first of ``configs[task].metric_list`` with a
  number under the task's first filter (the samples loader's reward); else, and in 0.3,
  the first metric of the entry;
* ``n``: ``n-samples[task].effective`` (0.4), else the entry's ``sample_len``; 0.3
  states none (unknown, never 0);
* a stderr of ``"N/A"`` (lm-eval did not compute one) is null.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..._errors import LoadError, LoadWarning
from ..common.values import is_int, is_number, parse_time
from ..tables.summary import COUNT_COLUMNS, Summarised

__all__ = [
    "PLATFORM_KEYS",
    "created_at",
    "metric_name",
    "model_facts",
    "read_results",
]

_FORMAT = "lm-eval"
_DEF = re.compile(r"\s*def\s+(\w+)\s*\(")  # a function metric, dumped as its source
#: The results' fields kept verbatim in ``jobs.platform_metrics`` (both loaders).
PLATFORM_KEYS = (
    *("results", "groups", "group_subtasks", "n-samples", "versions", "config"),
    "higher_is_better",
)
_STEP = re.compile(r"(?:^|[^0-9a-z])step[-_]?(\d+)$", re.IGNORECASE)


def _obj(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def model_facts(config: dict[str, Any], model_name: Any = None) -> dict[str, Any]:
    """The model of a run: ``config.model``, ``config.model_args`` as a dict (0.3 and the
    CLI write ``"k=v,k=v"``), the ``pretrained`` name, the ``revision`` and, when the
    revision names a training step (Pythia's ``step143000``), that step.

    Examples
    --------
    >>> model_facts({"model": "hf-causal",
    ...              "model_args": "pretrained=EleutherAI/pythia-160m,revision=step143000"})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'model': 'hf-causal', 'model_args': {'pretrained': 'EleutherAI/pythia-160m',
     'revision': 'step143000'}, 'pretrained': 'EleutherAI/pythia-160m',
     'revision': 'step143000', 'step': 143000}
    """
    raw = config.get("model_args")
    args: dict[str, Any] = {}
    if isinstance(raw, dict):
        args = dict(raw)
    elif isinstance(raw, str):
        for part in raw.split(","):
            key, sep, value = part.partition("=")
            if sep and key.strip():
                args[key.strip()] = value.strip()
    pretrained = args.get("pretrained") or model_name
    revision = args.get("revision")
    step = _STEP.search(revision) if isinstance(revision, str) else None
    return {
        "model": config.get("model"),
        "model_args": args if args or raw is None else raw,
        "pretrained": None if pretrained is None else str(pretrained),
        "revision": revision,
        "step": int(step[1]) if step else None,
    }


def metric_name(entry: Any) -> str | None:
    """A ``metric_list`` entry's metric name (a function metric is dumped as its source)."""
    name = entry.get("metric") if isinstance(entry, dict) else None
    if not isinstance(name, str):
        return None
    match = _DEF.match(name)
    return match[1] if match else name


def _first_metric(doc: dict[str, Any], task: str, values: dict[str, float | None]) -> str | None:
    """The task's primary ``metric[,filter]`` (see the module docstring)."""
    config = _obj(_obj(doc, "configs"), task)
    filters = [f.get("name") for f in config.get("filter_list") or [] if isinstance(f, dict)]
    first = str(filters[0]) if filters and filters[0] is not None else "none"
    for entry in config.get("metric_list") or []:
        name = f"{metric_name(entry)},{first}"
        if values.get(name) is not None:
            return name
    return next((m for m, v in values.items() if v is not None), None)


def _check(path: Path, place: str, value: Any, *, stderr: bool) -> float | None:
    if value is None or (stderr and value == "N/A"):
        return None
    if is_number(value):
        return float(value)
    allowed = "a finite number, 'N/A' or null" if stderr else "a finite number or null"
    raise LoadError(path, place, f"expected {allowed}, got {value!r:.60}")


def _entry_rows(
    path: Path, task: str, entry: dict[str, Any], new: bool
) -> dict[str, tuple[float | None, float | None]]:
    """``{metric[,filter]: (value, stderr)}`` of one results entry, in its order."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for key, value in entry.items():
        metric, sep, filt = str(key).partition(",")
        if (new and not sep) or metric.endswith("_stderr"):
            continue  # alias, name, sample_len, sample_count; a stderr goes with its metric
        err_key = f"{metric}_stderr{sep}{filt}"
        place = f"$.results.{task}"
        number = _check(path, f"{place}.{key}", value, stderr=False)
        err = _check(path, f"{place}.{err_key}", entry.get(err_key), stderr=True)
        out[str(key)] = (number, err)
    return out


def read_results(
    path: Path,
    doc: dict[str, Any],
    *,
    job_id: str | None = None,
    k: int | None = None,
    model: str | None = None,
) -> Summarised:
    """The summary-only job of an lm-eval results file without samples (pure).

    Raises
    ------
    LoadError
        ``results`` is not an object of objects; a metric is not a finite number or
        null, or a stderr not a finite number, ``"N/A"`` or null (naming the key).
    """
    results = doc.get("results")
    if not isinstance(results, dict) or not results:
        raise LoadError(path, "$.results", "expected an lm-eval results object of tasks")
    new = "configs" in doc or any("," in str(m) for e in results.values()
                                  if isinstance(e, dict) for m in e)  # fmt: skip
    parent: dict[str, str] = {}
    for group, members in _obj(doc, "group_subtasks").items():
        for member in members if isinstance(members, list) else []:
            parent.setdefault(str(member), str(group))
    groups = set(_obj(doc, "group_subtasks")) | set(_obj(doc, "groups"))
    n_samples, better = _obj(doc, "n-samples"), _obj(doc, "higher_is_better")
    rows: list[dict[str, Any]] = []
    for task, entry in results.items():
        if not isinstance(entry, dict):
            raise LoadError(path, f"$.results.{task}", f"expected an object, got {entry!r:.60}")
        values = _entry_rows(path, str(task), entry, new)
        primary = _first_metric(doc, str(task), {m: v for m, (v, _) in values.items()})
        effective = _obj(n_samples, str(task)).get("effective")
        n = effective if is_int(effective) else entry.get("sample_len")
        for metric, (value, err) in values.items():
            hib = _obj(better, str(task)).get(metric.partition(",")[0])
            rows.append(
                {
                    "task": str(task),
                    "kind": "group" if task in groups else "task",
                    "group": parent.get(str(task)),
                    "metric": metric,
                    "value": value,
                    "stderr": err,
                    "n": n if is_int(n) and n >= 0 else None,
                    "primary": metric == primary,
                    "higher_is_better": hib if isinstance(hib, bool) else None,
                }
            )
    config = _obj(doc, "config")
    facts = model_facts(config, doc.get("model_name"))
    model = model or facts["pretrained"] or config.get("model") or None
    stamp = path.stem.removeprefix("results_") if path.stem.startswith("results_") else path.stem
    base = doc.get("model_name_sanitized") or model or path.parent.name
    jid = job_id or f"lm-eval:{base}@{stamp}"
    if _obj(doc, "task_hashes"):  # lm-eval wrote samples, they are not beside the file
        warnings.warn(
            f"{path}: lm-eval logged samples for this run (task_hashes) but no samples file is "
            "beside it: loaded as results only",
            LoadWarning,
            stacklevel=6,
        )
    top = sorted({str(t) for t in results if str(t) not in parent})
    extra = {
        "lm_eval_version": doc.get("lm_eval_version"),
        "results_file": path.name,
        "results_only": True,
        "lm_eval_model": facts,
        "lm_eval_results": rows,
    }
    shots = _obj(doc, "n-shot") or {"*": config.get("num_fewshot")}
    inference = {"config": config, "num_fewshot": shots}
    return Summarised(
        job_id=jid,
        k=k or 1,
        tasks=pa.table({"task": pa.array([], pa.string()), "position": pa.array([], pa.int32()),
                        "tags": pa.array([], pa.string())}),
        counts=pa.table(
            {"task": pa.array([], pa.string()), "threshold": pa.array([], pa.float64()),
             **{c: pa.array([], pa.float64() if c.startswith("reward") else pa.int32())
                for c in COUNT_COLUMNS}}
        ),
        thresholds=[None],
        reward_stats={"max_abs": None, "max_sq": None},
        engine=_FORMAT,
        where=f"{path.name} (lm-eval results without samples)",
        facts={
            "source_format": _FORMAT,
            "runner": _FORMAT,
            "source_path": str(path),
            "status": "completed",
            "created_at": created_at(path, doc.get("date")),
            "dataset_name": "+".join(top),
            "model": None if model is None else str(model),
            "profile_params": json.dumps(inference, ensure_ascii=False, default=str),
            "platform_metrics": json.dumps(
                {key: doc[key] for key in PLATFORM_KEYS if key in doc}, ensure_ascii=False,
                default=str,
            ),
            "extra": extra,
        },
        metrics_only=True,
    )  # fmt: skip


def created_at(path: Path, value: Any) -> dt.datetime | None:
    """``date``: a POSIX time (0.4) or an RFC 3339 string."""
    if is_number(value):
        return dt.datetime.fromtimestamp(float(value), dt.UTC)
    return parse_time(value, path, "$.date", "date")
