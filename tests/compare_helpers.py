"""Hand-made EnvLoop jobs with known answers, for the comparison tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Rewards = Sequence[float | None]


def envloop_job(
    job_id: str,
    rewards: Mapping[str, Rewards],
    *,
    k: int | None = None,
    revision: str = "sha256:aa",
    runner: str = "harbor@0.22.0",
    model: str | None = None,
    status: str = "completed",
    tags: Mapping[str, Mapping[str, str]] | None = None,
    digests: Mapping[str, str] | None = None,
    dimensions: Mapping[str, Mapping[str, float]] | None = None,
    units: Mapping[str, str] | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    verifier_version: str | None = None,
) -> dict[str, Any]:
    """An EnvLoop document: ``rewards[task]`` lists attempt rewards (None = no reward).

    A shorter list than ``k`` leaves the remaining attempts undispatched.
    ``dimensions[task]`` gives the dimension values every attempt of that task reports.
    """
    k = k or max(len(v) for v in rewards.values())
    tasks = [
        {
            "name": t,
            "digest": (digests or {}).get(t, f"sha256:{t}"),
            "tags": dict((tags or {}).get(t, {})),
        }
        for t in rewards
    ]
    trials = []
    for t, rs in rewards.items():
        for i, r in enumerate(rs, start=1):
            metrics: dict[str, Any] | None = None
            if dimensions and t in dimensions:
                metrics = {"dimensions": dict(dimensions[t])}
                if units:
                    metrics["units"] = dict(units)
                if higher_is_better:
                    metrics["higher_is_better"] = dict(higher_is_better)
            if verifier_version:
                metrics = {**(metrics or {}), "verifier_version": verifier_version}
            trials.append(
                {
                    "id": f"{job_id}-{t}-{i}",
                    "task": t,
                    "attempt": i,
                    "status": "completed" if r is not None else "failed",
                    "reward": r,
                    "metrics": metrics,
                    "output": f"answer of {job_id} to {t} attempt {i}",
                }
            )
    return {
        "schema_version": "envloop.job-result/v1",
        "job": {
            "id": job_id,
            "status": status,
            "dataset": {"name": "hand", "version": "1", "revision": revision},
            "runner": runner,
            "profile": {"name": "team/eval", "version": "1"},
            "model": model,
            "attempts": k,
            "tasks": tasks,
        },
        "trials": trials,
    }


def write_job(folder: Path, doc: dict[str, Any]) -> Path:
    path = folder / f"{doc['job']['id']}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def fixing_pair(n_tasks: int = 60, failed: int = 40, fixed: int = 30) -> tuple[dict, dict]:
    """A base failing ``failed`` of ``n_tasks`` tasks, and a job that fixes ``fixed`` of them.

    Binary rewards, k = 2, both attempts agree; subsets alternate "math"/"code".
    """
    names = [f"t{i:03d}" for i in range(n_tasks)]
    tags = {t: {"subset": "math" if i % 2 else "code"} for i, t in enumerate(names)}
    base = {t: [0.0, 0.0] if i < failed else [1.0, 1.0] for i, t in enumerate(names)}
    new = {t: [1.0, 1.0] if i < fixed else base[t] for i, t in enumerate(names)}
    return (
        envloop_job("job_base", base, tags=tags, model="base"),
        envloop_job("job_new", new, tags=tags, model="new"),
    )
