"""The views of an lm-eval results file loaded without samples: the file's own numbers.

Such a job (:mod:`envloop_nb._loaders.lm_eval.results`) holds one row per number the file
states (``jobs.extra.lm_eval_results``: lm-eval task or group, ``metric[,filter]``,
value, stderr, docs ``n``, primary or not) and no doc at all. So:

* :func:`results_summary` — the score is the number of the run's one top-level task or
  group (its primary metric) when there is one; with several top-level tasks lm-eval
  states no number for the whole run and the score is None (the note says where the
  per-task numbers are). Docs scored are ``n`` where the file states them (k = 1: a doc
  is one attempt, as with samples), else unknown; pass, pass@k and pass^k are unknown
  (the file holds no per-doc value).
* :func:`results_groups` — ``groups(by="subset")``: one row per lm-eval task with its
  primary metric; ``"tag:group"``: per group; ``"dimension"``: every other metric of each
  task (columns ``dimension``, ``subset``). ``score`` is the file's number exactly, with
  ``metric``, ``stderr``, ``ci_low``, ``ci_high``; ``tasks`` / ``scored`` are the docs.
* the **interval** of a number is ``value ± z·stderr``, z = the normal quantile of the
  confidence (1.959964 at 95%): lm-eval's stderr is the standard error of a mean over
  docs, so this is the normal-approximation interval. It is **not clipped**: the file
  does not state a metric's range (perplexity and ``likelihood_difference`` exceed 1), so
  for a share near 0 or 1 the bounds may leave [0, 1]. No stderr (lm-eval's ``"N/A"``),
  no interval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._store.frames import to_frame
from .._store.ref import metrics_only
from .._types import FrameKind, Policy
from .summary import JobSummary
from .uncertainty import Interval

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "metric_direction",
    "results_groups",
    "results_intervals",
    "results_rows",
    "results_summary",
]

_SEE = "job.groups(by='subset')"
_SCHEMA = pa.schema(
    [("key", pa.string()), ("value", pa.string()), ("subset", pa.string()),
     ("metric", pa.string()), ("tasks", pa.int64()), ("total", pa.int64()),
     ("scored", pa.int64()), ("missing", pa.int64()), ("invalid", pa.int64()),
     ("coverage", pa.float64()), ("complete_members", pa.int64()), ("score", pa.float64()),
     ("stderr", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
     ("confidence", pa.float64()), ("pass", pa.float64()), ("pass@k", pa.float64()),
     ("pass^k", pa.float64()), ("k", pa.int64()), ("binary", pa.bool_()),
     ("bad_cases", pa.int64()), ("rated_tasks", pa.int64()), ("bad_below", pa.float64()),
     ("policy", pa.string()), ("threshold", pa.float64()), ("higher_is_better", pa.bool_())]
)  # fmt: skip


def results_rows(con: duckdb.DuckDBPyConnection, job_id: str) -> list[dict[str, Any]] | None:
    """The file's numbers of a results-only lm-eval job, or None for any other job."""
    info = metrics_only(con, job_id)
    if info is None or info.get("engine") != "lm-eval":
        return None
    row = con.execute(
        "SELECT extra->'lm_eval_results' FROM jobs WHERE job_id = ?", [job_id]
    ).fetchone()
    value = None if row is None or row[0] is None else json.loads(row[0])
    return list(value) if isinstance(value, list) else []


#: lm-eval's own direction of its registered metrics (``higher_is_better`` in its metric
#: registry), for files that do not state it (lm-eval 0.3 writes none).
_HIGHER = frozenset({"acc", "acc_norm", "acc_mutual_info", "exact_match", "em", "f1", "mcc",
                     "bleu", "chrf", "rouge1", "rouge2", "rougeL", "matthews_corrcoef"})  # fmt: skip
_LOWER = frozenset({"ppl", "perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte",
                    "ter", "brier_score"})  # fmt: skip


def metric_direction(metric: str, stated: bool | None = None) -> bool | None:
    """Whether a higher value of an lm-eval ``metric[,filter]`` is better: as the file
    states it (``higher_is_better``, lm-eval 0.4), else lm-eval's own for its registered
    metrics (``acc`` higher, ``ppl`` / ``*perplexity`` / ``bits_per_byte`` lower), else
    None (unknown: never guessed).

    Examples
    --------
    >>> metric_direction("acc,none"), metric_direction("ppl"), metric_direction("mystery")
    (True, False, None)
    >>> metric_direction("ppl", stated=True)
    True
    """
    if stated is not None:
        return bool(stated)
    name = metric.partition(",")[0]
    return True if name in _HIGHER else False if name in _LOWER else None


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _bounds(row: Mapping[str, Any], z: float) -> tuple[float | None, float | None]:
    value, err = row["value"], row["stderr"]
    if value is None or err is None:
        return None, None
    return value - z * err, value + z * err


def _refuse_threshold(job_id: str, threshold: Any) -> None:
    values = threshold.values() if isinstance(threshold, Mapping) else [threshold]
    if any(t is not None for t in values):
        raise ValueError(
            f"job {job_id!r} holds lm-eval's aggregates without samples: no per-doc value to "
            "apply a threshold to"
        )


def _headline(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The primary row of the run's one top-level task or group, if it has one."""
    top = {r["task"] for r in rows if r["group"] is None}
    if len(top) != 1:
        return None
    return next((r for r in rows if r["task"] in top and r["primary"]), None)


def _k(con: duckdb.DuckDBPyConnection, job_id: str) -> tuple[int, str]:
    row = con.execute(
        "SELECT attempts, extra->>'$.summarised.where' FROM jobs WHERE job_id = ?", [job_id]
    ).fetchone()
    if row is None:
        raise ValueError(f"no job {job_id!r} in this workspace")
    return int(row[0]), str(row[1] or "an lm-eval results file")


def results_summary(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    rows: list[dict[str, Any]],
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> JobSummary:
    """The summary the file states (see the module docstring)."""
    _refuse_threshold(job_id, threshold)
    k, where = _k(con, job_id)
    head = _headline(rows)
    leaves = [r for r in rows if r["kind"] == "task" and r["primary"]]
    if head is not None:
        docs = head["n"]
        said = f"the score is {head['task']}'s {head['metric']}"
    else:
        n = [r["n"] for r in leaves]
        docs = sum(n) if n and None not in n else None
        tasks = len({r["task"] for r in rows if r["group"] is None})
        said = f"{tasks} lm-eval tasks and no number for the whole run: see {_SEE}"
    unknown = "" if docs is not None else "; the file does not state how many docs were scored"
    note = (
        f"From {where}: lm-eval's own numbers, no samples (pass, pass@k and per-doc views "
        f"need lm_eval --log_samples); {said}; policy={policy!r} cannot change them{unknown}."
    )
    return JobSummary(
        job_id=job_id,
        k=k,
        total=(docs or 0) * k,
        scored=docs,
        missing=None if docs is None else docs * k - docs,
        invalid=None,
        total_members=docs or 0,
        complete_members=docs if k == 1 else None,
        score=None if head is None else head["value"],
        pass_=None,
        pass_at_k=None,
        pass_hat_k=None,
        binary=False,
        policy=policy,
        threshold=threshold,
        note=note,
    )


def results_intervals(
    con: duckdb.DuckDBPyConnection, job_id: str, rows: list[dict[str, Any]], *, confidence: float
) -> dict[str, Interval]:
    """``{"score": value ± z·stderr}`` of the run's number; none without one."""
    z = _z(confidence)
    head = _headline(rows)
    if head is None:
        method = f"lm-eval states no number for the whole run: per-task intervals in {_SEE}"
        return {"score": Interval(None, None, None, method, confidence, 0)}
    low, high = _bounds(head, z)
    method = (
        f"lm-eval's stderr of {head['task']} {head['metric']}: value ± {z:.6g}·stderr "
        "(normal approximation, not clipped)"
        if low is not None
        else "lm-eval reported no stderr for this number: no interval"
    )
    return {"score": Interval(head["value"], low, high, method, confidence, head["n"] or 0)}


def results_groups(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    rows: list[dict[str, Any]],
    *,
    by: str = "subset",
    policy: Policy = "unknown",
    threshold: Any = None,
    bad_below: Any = 0.5,
    confidence: float = 0.95,
    frame: FrameKind = "pandas",
) -> Any:
    """The file's numbers by lm-eval task, group or other metric (module docstring)."""
    _refuse_threshold(job_id, threshold)
    k, _ = _k(con, job_id)
    z = _z(confidence)
    if by == "dimension":
        key, chosen = "dimension", [r for r in rows if r["kind"] == "task" and not r["primary"]]
    elif by in ("subset", "tag:subset", "tag:group"):
        key = by.removeprefix("tag:")
        kind = "task" if key == "subset" else "group"
        chosen = [r for r in rows if r["kind"] == kind and r["primary"]]
        if not chosen:
            raise ValueError(f"job {job_id!r}: the lm-eval results name no {kind}")
    else:
        raise ValueError(
            f"job {job_id!r} holds lm-eval results without samples: by='subset' (lm-eval "
            f"tasks), 'tag:group' or 'dimension' (their other metrics), not {by!r}"
        )
    out = []
    for r in chosen:
        n = r["n"]
        low, high = _bounds(r, z)
        out.append(
            {
                "key": key,
                "value": r["metric"] if key == "dimension" else r["task"],
                "subset": r["task"],
                "metric": r["metric"],
                "tasks": n,
                "total": None if n is None else n * k,
                "scored": n,
                "missing": None if n is None else n * k - n,
                "invalid": None,
                "coverage": None if n is None else 1 / k,
                "complete_members": n if k == 1 else None,
                "score": r["value"],
                "stderr": r["stderr"],
                "ci_low": low,
                "ci_high": high,
                "confidence": confidence,
                "k": k,
                "binary": False,
                "bad_below": bad_below if isinstance(bad_below, int | float) else None,
                "policy": policy,
                "threshold": None,
                "higher_is_better": r["higher_is_better"],
            }
        )
    schema = _SCHEMA
    if key == "dimension":  # dimension_groups' columns: dimension, unit, higher_is_better...
        lead = [pa.field("dimension", pa.string()), pa.field("unit", pa.string()),
                _SCHEMA.field("higher_is_better")]  # fmt: skip
        rest = [f for f in _SCHEMA if f.name not in ("key", "value", "higher_is_better")]
        schema = pa.schema([*lead, *rest])
        out = [{"dimension": r["value"], "unit": None, **r} for r in out]
    table = pa.Table.from_pylist(out, schema=schema)
    return to_frame(con.from_arrow(table), frame)
