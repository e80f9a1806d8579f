"""Build small EnvLoop job-result documents for tests (written to files, loaded with ws.load)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import envloop_nb as enb


def trial(
    task: str,
    attempt: int,
    reward: float | None,
    *,
    status: str = "completed",
    **extra: Any,
) -> dict[str, Any]:
    """One trial object; ``extra`` adds fields such as usage, logprob, metrics, error."""
    t: dict[str, Any] = {"task": task, "attempt": attempt, "status": status, "reward": reward}
    t.update(extra)
    return t


def job_doc(
    trials: Sequence[Mapping[str, Any]],
    *,
    k: int,
    tasks: Sequence[str] | Mapping[str, Mapping[str, str]] | None = None,
    job_id: str = "job_test",
    status: str = "completed",
    metrics: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A document; ``tasks`` defaults to the tasks named by the trials (in order seen)."""
    if tasks is None:
        tasks = list(dict.fromkeys(t["task"] for t in trials))
    tags = tasks if isinstance(tasks, Mapping) else {name: {} for name in tasks}
    doc: dict[str, Any] = {
        "schema_version": "envloop.job-result/v1",
        "job": {
            "id": job_id,
            "status": status,
            "dataset": {"name": "unit", "version": "1", "revision": "sha256:0"},
            "model": "m",
            "attempts": k,
            "tasks": [{"name": n, "tags": dict(tg)} for n, tg in tags.items()],
        },
        "trials": [{"id": f"tr_{i}", **t} for i, t in enumerate(trials)],
    }
    if metrics is not None:
        doc["metrics"] = dict(metrics)
    return doc


def load(ws: enb.Workspace, folder: Path, doc: Mapping[str, Any], name: str = "job") -> enb.Job:
    """Write ``doc`` as ``folder/name.json`` and load it."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(doc))
    return ws.load(path)
