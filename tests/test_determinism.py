"""The same job gives bit-identical numbers in every run and on every CPU: parallel float
sums, numpy's SIMD kernels and the estimators' math never change a bit."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from typing import Any

import pytest

import envloop_nb as enb
from tests.conftest import ROOT, SAMPLE_DATA

#: Computes every number the sample jobs produce and prints them (floats as hex).
_SCRIPT = r"""
import json, math, sys
import envloop_nb as enb

def enc(x):
    if isinstance(x, float):
        return "nan" if math.isnan(x) else x.hex()
    if isinstance(x, dict):
        return {str(k): enc(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [enc(v) for v in x]
    if hasattr(x, "item"):
        return enc(x.item())
    return x

def rows(df):
    return enc(df.astype(object).where(df.notna(), None).values.tolist())

out = {}
sample = sys.argv[1]
with enb.open() as ws:
    jobs = {}
    for name in ["base.json", "sft-step500.json", "sft-step1000.jsonl.gz", "running.json",
                 "graded.json", "other-revision.json"]:
        job = ws.load(f"{sample}/{name}")
        jobs[name] = job
        for policy in ("unknown", "failure"):
            key = f"{name}/{policy}"
            out[key + "/summary"] = enc(job.summary(policy=policy).to_dict())
            out[key + "/curve"] = rows(job.curve(policy=policy))
            out[key + "/samples"] = rows(job.samples(ks=[1, 2, job.k], policy=policy).drop(columns=["tags"]))
            out[key + "/groups"] = rows(job.groups(by="subset", policy=policy))
            out[key + "/intervals"] = rows(job.intervals(policy=policy, resamples=300, ks=[1, 2]))
        out[name + "/dimensions"] = rows(job.groups(by="dimension"))
        out[name + "/threshold"] = enc(job.summary(threshold=0.5).to_dict())
    cmp = ws.compare([jobs["base.json"].id, jobs["sft-step500.json"].id,
                      jobs["sft-step1000.jsonl.gz"].id], baseline=jobs["base.json"].id)
    out["compare/leaderboard"] = rows(cmp.leaderboard())
    out["compare/paired"] = rows(cmp.paired())
print(json.dumps(out, sort_keys=True))
"""


def _non_baseline_features() -> list[str]:
    """The SIMD targets numpy dispatches to on this machine beyond its baseline."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    found = umath.__cpu_features__
    return [f for f in umath.__cpu_dispatch__ if found.get(f)]


def _numbers(env_extra: dict[str, str]) -> dict[str, Any]:
    env = {**os.environ, **env_extra}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SAMPLE_DATA)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.slow
def test_numbers_are_bit_identical_with_numpy_simd_reduced() -> None:
    features = _non_baseline_features()
    plain = _numbers({})
    reduced = _numbers({"NPY_DISABLE_CPU_FEATURES": " ".join(features)} if features else {})
    assert plain.keys() == reduced.keys()
    differ = [key for key in plain if plain[key] != reduced[key]]
    assert not differ, f"numbers differ with {features} disabled: {differ}"
    # The run really computed something for every job and view.
    assert len(plain) == 6 * 2 * 5 + 6 * 2 + 2


def test_graded_job_numbers_are_bit_identical_across_workspaces() -> None:
    seen = set()
    for _ in range(8):
        with enb.open() as ws:
            job = ws.load(SAMPLE_DATA / "graded.json")
            s = job.summary()
            per_task = job.samples()["reward_mean"].tolist()
            groups = job.groups(by="dimension")["score"].tolist()
            seen.add((s.score, tuple(per_task), tuple(groups)))
    assert len(seen) == 1


@pytest.mark.parametrize(
    "name", ["base.json", "sft-step500.json", "sft-step1000.jsonl.gz", "other-revision.json"]
)
def test_pass_at_1_equals_pass_hat_1_bit_for_bit(ws: enb.Workspace, name: str) -> None:
    job = ws.load(SAMPLE_DATA / name)
    for policy in ("unknown", "failure"):
        curve = job.curve(policy=policy)
        assert curve["pass@k"].iloc[0] == curve["pass^k"].iloc[0]
        per_task = job.samples(ks=[1], policy=policy)
        both = per_task[["pass@1", "pass^1"]].dropna()
        assert (both["pass@1"] == both["pass^1"]).all()
        # pass@1 of a task is c / n exactly.
        rated = per_task.dropna(subset=["pass@1"])
        n = rated["n"] if policy == "failure" else rated["scored"]
        assert (rated["pass@1"] == rated["passes"] / n).all()
        assert not math.isnan(float(curve["pass@k"].iloc[0]))
