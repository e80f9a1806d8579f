"""lm-evaluation-harness output written with ``--log_samples``.

lm-eval writes ``results_<time>.json`` and one ``samples_<task>_<time>.jsonl`` per task
into ``<output_path>/<model_name_sanitized>/`` (``lm_eval/loggers/evaluation_tracker.py``).

**What a samples file holds, and so what an attempt is.** lm-eval sends each request
``repeats`` times (``cloned_reqs.extend([req] * req.repeats)`` in ``lm_eval/evaluator.py``),
then each filter of the task reduces a doc's repeats to one response (``take_first``,
``majority_vote``, ...) and ``task.process_results(doc, [req.filtered_resps[filter_key]
...])`` scores that one response. A samples line is one (doc, filter) pair with one value
per metric; the per-repeat responses are kept (``resps``) but not scored. Per-repeat
rewards cannot be recovered, so a doc is **one task with one attempt** (k = 1): the reward
is the doc's value of the task's primary metric under its first filter, and the repeats
stay in the attempt's ``extra`` (``resps``, ``repeats``).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError, LoadWarning
from ..._store.source_numbers import SourceNumber, Statistic
from ..common.read import decode_utf8, parse_json, read_bytes
from ..common.stage import begin_job, insert_rows
from ..common.values import check_k, is_number, read_json_file
from ..tables.summary import load_summary
from .files import (
    has_samples,
    orphan_samples,
    results_path,
    run_stamp,
    samples_path,
    stray_samples,
)
from .results import PLATFORM_KEYS, created_at, metric_name, read_results
from .text import doc_output, doc_prompt

__all__ = ["load_lm_eval", "source_numbers"]

_FORMAT = "lm-eval"


@dataclass
class _Spec:
    """One lm-eval task: its metrics in config order, aggregations, filters, samples."""

    name: str
    metrics: list[str]
    aggregation: dict[str, str]
    filters: list[str]
    group: str | None
    samples: Path
    reward: tuple[str, str] = ("", "")
    numeric: list[tuple[str, str]] = field(default_factory=list)  # (metric, filter)


def _specs(path: Path, doc: dict[str, Any]) -> list[_Spec]:
    configs = doc.get("configs")
    if not isinstance(configs, dict) or not configs:
        raise LoadError(path, "$.configs", "expected the per-task configs of an lm-eval run")
    parent: dict[str, str] = {}  # a task's innermost group
    for group, members in _obj(doc, "group_subtasks").items():
        for member in members if isinstance(members, list) else []:
            parent.setdefault(str(member), str(group))
    specs = []
    for name, config in configs.items():
        place = f"$.configs.{name}"
        if not isinstance(config, dict):
            raise LoadError(path, place, f"expected a task config object, got {config!r:.60}")
        entries = config.get("metric_list") or []
        if not isinstance(entries, list):
            raise LoadError(path, f"{place}.metric_list", "expected a list of metrics")
        metrics, aggregation = [], {}
        for entry in entries:
            metric = metric_name(entry)
            if metric is None:
                raise LoadError(path, f"{place}.metric_list", f"no metric name in {entry!r:.60}")
            metrics.append(metric)
            if isinstance(entry.get("aggregation"), str):
                aggregation[metric] = entry["aggregation"]
        filters = [
            str(f["name"])
            for f in config.get("filter_list") or []
            if isinstance(f, dict) and "name" in f
        ] or ["none"]
        samples = samples_path(path, str(name))
        if not samples.is_file():
            raise LoadError(
                path,
                place,
                f"no samples file {samples.name} beside the results "
                "(run lm_eval with --log_samples)",
            )
        specs.append(_Spec(str(name), metrics, aggregation, filters, parent.get(name), samples))
    return specs


@dataclass
class _Line:
    number: int
    row: dict[str, Any]


def _check_line(path: Path, place: str, row: Any) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise LoadError(path, place, f"expected a sample object, got {row!r:.60}")
    doc_id = row.get("doc_id")
    if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 0:
        raise LoadError(path, place, f"doc_id must be an integer >= 0, got {doc_id!r}")
    if not isinstance(row.get("filter"), str):
        raise LoadError(path, place, f"filter must be a string, got {row.get('filter')!r}")
    for key in ("resps", "filtered_resps"):
        if not isinstance(row.get(key), list):
            raise LoadError(path, place, f"{key} must be a list, got {row.get(key)!r:.60}")
    for key, value in row.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise LoadError(path, place, f"{key} must be a finite number or null, got {value}")
    return row


def _read_samples(spec: _Spec, lenient: bool, skipped: list[str]) -> dict[int, dict[str, _Line]]:
    """The task's lines by doc id and filter; bad lines raise (or, lenient, are skipped)."""
    path = spec.samples
    docs: dict[int, dict[str, _Line]] = {}
    text = decode_utf8(path, read_bytes(path))
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        place = f"line {number}"
        try:
            row = _check_line(path, place, parse_json(path, raw, line=number))
            lines = docs.setdefault(row["doc_id"], {})
            if row["filter"] in lines:
                again = f"doc {row['doc_id']} filter {row['filter']!r} appears twice"
                raise LoadError(
                    path, place, f"{again} (first at line {lines[row['filter']].number})"
                )
        except LoadError as err:
            if not lenient:
                raise
            skipped.append(str(err))
            continue
        lines[row["filter"]] = _Line(number, row)
    return docs


def _number(value: Any) -> float | bool | None:
    """A metric value as a float, ``None`` for null, ``False`` when not a number."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    return float(value) if is_number(value) else False


def _choose_metrics(
    spec: _Spec, docs: dict[int, dict[str, _Line]], lenient: bool, nulled: list[str]
) -> None:
    """Set the reward (the first metric with a number per doc, under the first filter) and
    the numeric (metric, filter) pairs that become dimensions: those with a number in
    some doc. Another doc's value of such a pair must be a number or null (absent: null);
    anything else raises (lenient: becomes null, listed in ``nulled``)."""
    seen = list(spec.metrics)
    for lines in docs.values():
        spec.filters += [f for f in lines if f not in spec.filters]  # not in the config
        for line in lines.values():
            seen += [m for m in line.row.get("metrics") or [] if m not in seen]
    for filt in spec.filters:
        for metric in seen:
            found = [(d, ls[filt]) for d, ls in docs.items() if filt in ls]
            values = [_number(line.row.get(metric)) for _, line in found]
            if not any(isinstance(v, float) for v in values):
                continue  # no number in any doc (bleu's pairs): stays in extra
            for (doc_id, line), value in zip(found, values, strict=True):
                if value is not False:
                    continue
                problem = (
                    f"doc {doc_id}: {metric} under filter {filt!r} must be a finite number "
                    f"or null, got {line.row[metric]!r:.60}"
                )
                if not lenient:
                    raise LoadError(spec.samples, f"line {line.number}", problem)
                nulled.append(f"{spec.samples}, line {line.number}: {problem}")
                line.row[metric] = None
            spec.numeric.append((metric, filt))
    first = [pair for pair in spec.numeric if pair[1] == spec.filters[0]]
    if not first:
        problem = f"no metric has a number per doc under filter {spec.filters[0]!r}"
        raise LoadError(spec.samples, None, f"{problem}: nothing to use as the reward")
    spec.reward = first[0]


def _rows(
    jid: str, spec: _Spec, docs: dict[int, dict[str, _Line]], lenient: bool, unscored: list[str]
) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]], set[int]]:
    """Task ids, attempt rows, dimension rows and the repeat counts of one lm-eval task."""
    tasks, attempts, dims, repeats = [], [], [], set()
    first = spec.filters[0]
    for doc_id in sorted(docs):
        lines, task = docs[doc_id], f"{spec.name}/{doc_id}"
        tasks.append(task)
        if first not in lines:
            where = min(line.number for line in lines.values())
            problem = f"doc {doc_id} has no line for the task's first filter {first!r}"
            if not lenient:
                raise LoadError(spec.samples, f"line {where}", problem)
            unscored.append(f"{spec.samples}, line {where}: {problem}")
            continue
        head = lines[first]
        row = head.row
        resps = row["resps"]
        n_rep = len(resps[0]) if resps and isinstance(resps[0], list) else len(resps)
        repeats.add(n_rep)
        values: dict[str, dict[str, Any]] = {}
        for filt, line in lines.items():
            names = [m for m in line.row.get("metrics") or [] if m in line.row]
            values[filt] = {m: line.row[m] for m in names}
        for metric, filt in spec.numeric:
            if (metric, filt) == spec.reward or filt not in lines:
                continue
            value = _number(lines[filt].row.get(metric))
            dims.append(
                {
                    "job_id": jid,
                    "task": task,
                    "attempt": 1,
                    "name": f"{metric},{filt}",
                    "value": None if value is False else value,
                }
            )
        reward = _number(row.get(spec.reward[0]))
        extra: dict[str, Any] = {
            "lm_eval_task": spec.name,
            "doc_id": doc_id,
            "filter": first,
            "repeats": n_rep,
            "doc": row.get("doc"),
            "resps": resps,
            "filtered_resps": {f: line.row["filtered_resps"] for f, line in lines.items()},
            "metrics": values,
            "arguments": row.get("arguments"),
            "target": row.get("target"),
            **{k: row[k] for k in ("doc_hash", "prompt_hash", "target_hash") if k in row},
        }
        output, reference = doc_output(row)
        attempts.append(
            {
                "job_id": jid,
                "task": task,
                "attempt": 1,
                "status": "completed",
                "reward": None if reward is False else reward,
                "input": doc_prompt(row.get("arguments")),
                "input_is_chat": False,
                "output": output,
                "reference": reference,
                "extra": json.dumps(extra, ensure_ascii=False),
                "n_trials": 1,
                "source_place": f"{spec.samples.name}, line {head.number}",
            }
        )
    return tasks, attempts, dims, repeats


_TASK_RULE = (
    "lm-eval averages the metric over every doc of the task: one value per doc, scored on "
    "the one response that filter {filt!r} kept of the doc's {repeats} repeat(s)"
)
_GROUP_RULE = (
    "lm-eval's group number is the mean over all docs of its subtasks (weight_by_size, "
    "lm-eval's default; the results file does not record it, so the number is kept only "
    "where it equals the size-weighted mean of the subtasks' own numbers)"
)


def _role(spec: _Spec, metric: str, filt: str) -> str | None:
    """``of`` for a (metric, filter) recomputable as a plain mean, else None."""
    if (metric, filt) not in spec.numeric or spec.aggregation.get(metric) != "mean":
        return None
    return "reward" if (metric, filt) == spec.reward else f"dimension:{metric},{filt}"


def _pairs(entry: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """``(metric, filter, value)`` of a results entry's ``"<metric>,<filter>"`` keys."""
    split = [(key.partition(","), value) for key, value in entry.items()]
    return [(m, f, v) for (m, sep, f), v in split if sep and not m.endswith("_stderr")]


def _obj(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """``doc[key]`` when it is an object, else an empty one."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _num(
    name: str, value: float, of: str, statistic: Statistic, rule: str, tag: tuple[str, str]
) -> SourceNumber:
    """A number lm-eval computed over docs: each doc (task) is one observation."""
    return SourceNumber(
        name,
        value,
        of=of,
        reducer="mean",  # a doc has one attempt: its value
        statistic=statistic,
        policy="unknown",
        rule=rule,
        tasks_tag=tag,
    )


def source_numbers(
    doc: dict[str, Any], specs: list[_Spec], repeats: dict[str, int | None]
) -> list[dict[str, Any]]:
    """lm-eval's per-task means and stderrs, docs counted, and size-weighted group means,
    as ``SourceNumber`` dicts; only numbers that are plain means of per-doc values."""
    results, n_samples = _obj(doc, "results"), _obj(doc, "n-samples")
    nums: list[SourceNumber] = []
    by_name = {s.name: s for s in specs}
    sizes: dict[str, int] = {}
    for spec in specs:
        entry = _obj(results, spec.name)
        tag = ("subset", spec.name)
        for metric, filt, value in _pairs(entry):
            of = _role(spec, metric, filt)
            if of is None or not is_number(value):
                continue
            rule = _TASK_RULE.format(filt=filt, repeats=repeats.get(spec.name) or "?")
            nums.append(_num(f"{spec.name} · {metric},{filt}", value, of, "mean", rule, tag))
            err = entry.get(f"{metric}_stderr,{filt}")
            if is_number(err):
                name = f"{spec.name} · {metric}_stderr,{filt}"
                nums.append(_num(name, err, of, "stderr", rule, tag))
        effective = _obj(n_samples, spec.name).get("effective")
        if isinstance(effective, int) and not isinstance(effective, bool):
            sizes[spec.name] = effective
            rule = f"lm-eval scored {effective} doc(s) of task {spec.name!r}"
            name = f"{spec.name} · n-samples effective"
            nums.append(_num(name, effective, "reward", "scored", rule, tag))
    for group, members in _obj(doc, "group_subtasks").items():
        entry = _obj(results, group)
        if not isinstance(members, list) or not members:
            continue
        if not all(m in by_name and sizes.get(m, 0) > 0 for m in members):
            continue  # a nested group, or a subtask not loaded: not one tag to select by
        for metric, filt, value in _pairs(entry):
            roles = {_role(by_name[m], metric, filt) for m in members}
            subs = [_obj(results, m).get(f"{metric},{filt}") for m in members]
            vals = [float(v) for v in subs if is_number(v)]
            of = roles.pop() if len(roles) == 1 else None
            if of is None or not is_number(value) or len(vals) != len(members):
                continue
            total = sum(sizes[m] for m in members)
            weighted = math.fsum(v * sizes[m] for v, m in zip(vals, members, strict=True))
            weighted /= total
            if not math.isclose(weighted, value, rel_tol=1e-9, abs_tol=1e-12):
                continue  # weight_by_size false (or another aggregation): not a doc mean
            tag = ("group", str(group))
            nums.append(_num(f"{group} · {metric},{filt}", value, of, "mean", _GROUP_RULE, tag))
    return [n.as_dict() for n in nums]


def _warn(message: str) -> None:
    warnings.warn(message, LoadWarning, stacklevel=7)  # at the user's ws.load(...)


def _higher(doc: dict[str, Any], specs: list[_Spec], name: str) -> bool | None:
    metric = name.split(",", 1)[0]
    table = _obj(doc, "higher_is_better")
    seen = {
        table[s.name].get(metric)
        for s in specs
        if isinstance(table.get(s.name), dict) and (metric, name.split(",", 1)[1]) in s.numeric
    }
    return seen.pop() if len(seen) == 1 and isinstance(next(iter(seen)), bool) else None


def load_lm_eval(
    con: duckdb.DuckDBPyConnection,
    source: str | Path,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    k: int | None = None,
    model: str | None = None,
) -> None:
    """Stage an lm-eval run: ``results_<time>.json`` and its ``samples_<task>_<time>.jsonl``.

    ``source`` is the results JSON, or the folder holding it (or its ``<output_path>``
    with one model folder below); a folder of several runs is refused naming them
    (``ws.load_all`` loads one job each). A run's samples are the files named with its
    time (:mod:`envloop_nb._loaders.lm_eval.files`). Results without any samples file of
    their run (lm-eval 0.3, as Pythia's published evaluations; 0.4 without
    ``--log_samples``) load as a summary-only job of the file's own numbers
    (:mod:`envloop_nb._loaders.lm_eval.results`); samples for some tasks only, a samples
    file of the run for a task the results do not configure, or one whose time is no
    run's in the folder, are refused.

    * task: ``"<lm-eval task>/<doc_id>"`` per doc; tags ``subset`` = the lm-eval task,
      ``group`` = the group it belongs to (``group_subtasks``), when it has one.
    * k = 1 (see the module docstring: lm-eval scores one filtered response per doc, so
      the repeats are not attempts) unless ``k`` is given; the repeats go to the
      attempt's ``extra`` (``resps``, ``repeats``); repeats that differ between docs
      warn (:class:`~envloop_nb.LoadWarning`).
    * reward: the doc's value of the task's primary metric (the first of
      ``configs[task].metric_list`` with a number per doc) under the task's first filter;
      every other metric with a number per doc, under every filter, is a dimension
      ``"<metric>,<filter>"`` (``higher_is_better`` from the results). A metric with no
      number in any doc (``bleu``'s ``[reference, prediction]`` pairs) stays in ``extra``;
      one with numbers must be a number or null in every doc (absent: null), else the
      line is refused naming the doc and metric.
    * input: the prompt (``arguments.gen_args_0.arg_0``); output: the filtered response,
      reference: ``target`` (multiple choice: the choice with the highest loglikelihood,
      and the gold choice when ``target`` is its index); model: ``model``, else
      ``model_name``, else ``config.model``; created at: ``date``; job id
      ``"lm-eval:<model>@<time>"`` unless given.
    * ``platform_metrics``: ``results``, ``groups``, ``group_subtasks``, ``n-samples``,
      ``versions``, ``config``, ``higher_is_better``; ``extra["source_numbers"]``: every
      per-task (and size-weighted group) mean and stderr that is a plain mean of per-doc
      values (``job.source_agreement()``).
    * ``lenient``: skip unusable sample lines (a metric value that is no number becomes
      null, a samples file of an unconfigured task or of no run here is not loaded) and
      warn how many.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("tests/data/lm_eval/run", format="lm-eval")
    >>> job.k, len(job.tasks()), job.summary().score
    (1, 12, 0.5)
    >>> job.groups(by="subset")[["value", "score"]].values.tolist()
    [['envloop_alpha', 0.5], ['envloop_beta', 0.5]]
    """
    path = results_path(source)
    check_k(path, k)
    doc = read_json_file(path, "an lm-eval results JSON")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise LoadError(path, "$.results", "expected an lm-eval results object with 'results'")
    orphans = orphan_samples(path, lenient)  # samples of no run here: never read as this one's
    orphaned = f"{len(orphans)} samples file(s) of no run here not loaded"
    if not has_samples(path, doc):  # 0.3, or 0.4 without --log_samples: a summary only
        load_summary(con, read_results(path, doc, job_id=job_id, k=k, model=model))
        if orphans:
            _warn(f"{path}: {orphaned}; first: {orphans[0]}")
        return
    config = _obj(doc, "config")
    model = model or doc.get("model_name") or config.get("model") or None
    specs = _specs(path, doc)
    stray = stray_samples(path, {s.samples for s in specs}, lenient)
    stamp = run_stamp(path)
    jid = job_id or f"lm-eval:{doc.get('model_name_sanitized') or path.parent.name}@{stamp}"
    skipped: list[str] = []
    unscored: list[str] = []  # lenient: docs without a line under their first filter
    nulled: list[str] = []  # lenient: metric values that are no number, set to null
    attempts: list[dict[str, Any]] = []
    dims: list[dict[str, Any]] = []
    tags: dict[str, dict[str, str]] = {}
    repeats: dict[str, int | None] = {}
    all_repeats: dict[str, set[int]] = {}
    n_samples = _obj(doc, "n-samples")
    for spec in specs:
        docs = _read_samples(spec, lenient, skipped)
        _choose_metrics(spec, docs, lenient, nulled)
        names, rows, dim_rows, reps = _rows(jid, spec, docs, lenient, unscored)
        counts = n_samples.get(spec.name)
        effective = counts.get("effective") if isinstance(counts, dict) else None
        if isinstance(effective, int) and effective != len(names) and not skipped:
            raise LoadError(
                path,
                f"$.n-samples.{spec.name}.effective",
                f"the results count {effective} docs, {spec.samples.name} holds {len(names)}",
            )
        attempts += rows
        dims += dim_rows
        all_repeats[spec.name] = reps
        repeats[spec.name] = next(iter(reps)) if len(reps) == 1 else None
        tag = {"subset": spec.name, **({"group": spec.group} if spec.group else {})}
        tags.update({name: tag for name in names})
    if skipped or unscored or nulled or stray or orphans:
        told = [f"skipped {len(skipped)} unusable sample line(s)"] if skipped else []
        if stray:
            told.append(f"{len(stray)} samples file(s) of tasks not in the results not loaded")
        if orphans:
            told.append(orphaned)
        if unscored:
            told.append(f"{len(unscored)} doc(s) have no line under the first filter: no reward")
        if nulled:
            told.append(f"{len(nulled)} metric value(s) that are not numbers set to null")
        first = (skipped or unscored or nulled or stray or orphans)[0]
        _warn(f"{path}: {'; '.join(told)}; first: {first}")
    if len(set().union(*all_repeats.values())) > 1:
        shown = "; ".join(f"{n}: {', '.join(map(str, sorted(r)))}" for n, r in all_repeats.items())
        _warn(f"{path}: docs were sent different numbers of repeats ({shown})")
    extra = {
        "lm_eval_version": doc.get("lm_eval_version"),
        "results_file": path.name,
        "samples_files": {s.name: s.samples.name for s in specs},
        "repeats": repeats,
        "reward": {s.name: ",".join(s.reward) for s in specs},
        "source_numbers": source_numbers(doc, specs, repeats),
    }
    job = {
        "job_id": jid,
        "source_format": _FORMAT,
        "source_path": str(path),
        "status": "completed",
        "created_at": created_at(path, doc.get("date")),
        "dataset_name": "+".join(sorted({s.group or s.name for s in specs})),
        "runner": _FORMAT,
        "model": None if model is None else str(model),
        "attempts": k or 1,
        "profile_params": json.dumps(_inference(doc, specs), ensure_ascii=False, default=str),
        "platform_metrics": json.dumps(
            {key: doc[key] for key in PLATFORM_KEYS if key in doc}, ensure_ascii=False, default=str
        ),
        "extra": json.dumps(extra, ensure_ascii=False),
    }
    meta = [
        {"job_id": jid, "name": n, "higher_is_better": _higher(doc, specs, n)}
        for n in sorted({d["name"] for d in dims})
    ]
    _stage(con, job, tags, attempts, dims, meta)


def _inference(doc: dict[str, Any], specs: list[_Spec]) -> dict[str, Any]:
    """How the harness ran the model: ``config`` (model, ``model_args``, ``gen_kwargs``),
    each task's ``generation_kwargs`` and shots, and the chat settings."""
    configs, shots = _obj(doc, "configs"), _obj(doc, "n-shot")
    out: dict[str, Any] = {"config": _obj(doc, "config")}
    out["generation_kwargs"] = {
        s.name: _obj(configs, s.name).get("generation_kwargs") for s in specs
    }
    out["num_fewshot"] = {s.name: shots.get(s.name) for s in specs}
    keys = ("system_instruction", "chat_template_sha", "fewshot_as_multiturn")
    return out | {key: doc[key] for key in keys if doc.get(key) is not None}


def _stage(
    con: duckdb.DuckDBPyConnection,
    job: dict[str, Any],
    tags: dict[str, dict[str, str]],
    attempts: list[dict[str, Any]],
    dims: list[dict[str, Any]],
    meta: list[dict[str, Any]],
) -> None:
    """Write the built rows (tasks in ``tags`` order) into the load transaction."""
    jid = job["job_id"]
    begin_job(con, jid)
    insert_rows(con, "jobs", [job])
    rows = [
        {"job_id": jid, "task": t, "position": i, "tags": json.dumps(g)}
        for i, (t, g) in enumerate(tags.items())
    ]
    insert_rows(con, "tasks", rows)
    rows = [
        {"job_id": jid, "task": t, "key": a, "value": b}
        for t, g in tags.items()
        for a, b in g.items()
    ]
    insert_rows(con, "task_tags", rows)
    insert_rows(con, "attempts", attempts)
    insert_rows(con, "dimensions", dims)
    insert_rows(con, "dimension_meta", meta)
