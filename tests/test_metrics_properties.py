"""Random EnvLoop jobs against a brute-force reference of the platform's definitions.

Each example writes a job document (retries with ties in finished/started times,
undispatched slots, pending and running trials, failed trials with a reward, completed
ones without, binary or graded rewards) to a file, loads it with ``ws.load`` and compares
``summary``, ``samples``, ``curve``, ``groups`` and ``intervals`` with a pure-Python
reference that resolves the attempt of record itself and computes pass@k / pass^k by
enumerating every k-subset of attempts.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envloop_nb as enb

ENDED = ("completed", "failed", "cancelled")
TIMES = [None, "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"]
BINARY = [0.0, 1.0]
GRADED = [0.0, 0.25, 0.5, 1.0, 1.5, -0.5]


# -- random jobs ------------------------------------------------------------------------


@st.composite
def trials_for_slot(draw: st.DrawFn, task: str, attempt: int, values: list[float]) -> list[dict]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        status = draw(st.sampled_from(["pending", "running", *ENDED]))
        reward = None
        if status in ENDED:
            # completed without reward and failed with one both happen
            reward = draw(st.one_of(st.none(), st.sampled_from(values)))
        started = None if status == "pending" else draw(st.sampled_from(TIMES))
        finished = draw(st.sampled_from(TIMES)) if status in ENDED else None
        out.append(
            {
                "task": task,
                "attempt": attempt,
                "status": status,
                "reward": reward,
                "started_at": started,
                "finished_at": finished,
            }
        )
    return out


@st.composite
def random_jobs(draw: st.DrawFn) -> dict[str, Any]:
    k = draw(st.integers(1, 4))
    n_tasks = draw(st.integers(1, 5))
    values = BINARY if draw(st.booleans()) else GRADED
    tasks = [f"t{i}" for i in range(n_tasks)]
    tags = {
        t: ({"subset": draw(st.sampled_from(["x", "y"]))} if draw(st.integers(0, 4)) else {})
        for t in tasks
    }
    trials: list[dict] = []
    for t in tasks:
        for a in range(1, k + 1):
            if draw(st.integers(0, 5)) == 0:
                continue  # never dispatched
            trials += draw(trials_for_slot(t, a, values))
    trials = draw(st.permutations(trials))
    doc = {
        "schema_version": "envloop.job-result/v1",
        "job": {
            "id": "job_prop",
            "status": "running",
            "dataset": {"name": "prop", "version": "1"},
            "attempts": k,
            "tasks": [{"name": t, "tags": tags[t]} for t in tasks],
        },
        "trials": [{"id": f"tr{i}", **tr} for i, tr in enumerate(trials)],
    }
    threshold = draw(st.sampled_from([None, None, 0.5, 1.0, 0.0]))
    policy = draw(st.sampled_from(["unknown", "failure"]))
    return {"doc": doc, "threshold": threshold, "policy": policy}


# -- reference ------------------------------------------------------------------------------


@dataclass
class Slot:
    status: str | None  # None: never dispatched
    reward: float | None


def _record(trials: list[tuple[int, dict]]) -> dict:
    """Attempt of record: latest finished_at, then latest started_at, then later in file."""

    def key(item: tuple[int, dict]) -> tuple:
        i, t = item
        f, s = t["finished_at"], t["started_at"]
        return (f is not None, f or "", s is not None, s or "", i)

    return max(trials, key=key)[1]


def resolve(doc: dict) -> tuple[int, dict[str, list[Slot]]]:
    k = doc["job"]["attempts"]
    by_slot: dict[tuple[str, int], list[tuple[int, dict]]] = {}
    for i, t in enumerate(doc["trials"]):
        by_slot.setdefault((t["task"], t["attempt"]), []).append((i, t))
    out = {}
    for task in (t["name"] for t in doc["job"]["tasks"]):
        slots = []
        for a in range(1, k + 1):
            if (task, a) in by_slot:
                rec = _record(by_slot[(task, a)])
                slots.append(Slot(rec["status"], rec["reward"]))
            else:
                slots.append(Slot(None, None))
        out[task] = slots
    return k, out


def _passes(r: float | None, threshold: float | None) -> bool:
    if r is None:
        return False
    return r == 1 if threshold is None else r >= threshold


def _enumerate(outcomes: list[bool], j: int) -> tuple[float, float]:
    subsets = list(itertools.combinations(outcomes, j))
    return (
        sum(any(s) for s in subsets) / len(subsets),
        sum(all(s) for s in subsets) / len(subsets),
    )


def reference(k: int, tasks: dict[str, list[Slot]], policy: str, threshold: float | None) -> dict:
    rewards = [s.reward for slots in tasks.values() for s in slots if s.reward is not None]
    total = len(tasks) * k
    scored = len(rewards)
    binary = threshold is not None or all(r in (0, 1) for r in rewards)
    complete = {t for t, slots in tasks.items() if all(s.reward is not None for s in slots)}
    out: dict[str, Any] = {
        "k": k,
        "total": total,
        "scored": scored,
        "missing": total - scored,
        "invalid": sum(
            1 for sl in tasks.values() for s in sl if s.reward is None and s.status in ENDED
        ),
        "total_members": len(tasks),
        "complete_members": len(complete),
        "score": None,
        "pass": None,
        "pass@k": None,
        "pass^k": None,
    }
    den = total if policy == "failure" else scored
    if scored:
        out["score"] = sum(rewards) / den
        if binary:
            out["pass"] = sum(_passes(r, threshold) for r in rewards) / den
            members = list(tasks) if policy == "failure" else sorted(complete)
            if members:
                wins = [[_passes(s.reward, threshold) for s in tasks[t]] for t in members]
                out["pass@k"] = sum(any(w) for w in wins) / len(members)
                out["pass^k"] = sum(all(w) for w in wins) / len(members)
    # per task
    per_task = {}
    for t, slots in tasks.items():
        if policy == "failure":
            vals = [0.0 if s.reward is None else s.reward for s in slots]
            wins = [_passes(s.reward, threshold) for s in slots]
        else:
            vals = [s.reward for s in slots if s.reward is not None]
            wins = [_passes(r, threshold) for r in vals]
        n, c = len(vals), sum(wins)
        rated = (t in complete or policy == "failure") and n > 0
        row = {
            "n": k,
            "scored": sum(s.reward is not None for s in slots),
            "dispatched": sum(s.status is not None for s in slots),
            "invalid": sum(s.reward is None and s.status in ENDED for s in slots),
            "passes": c if binary else None,
            "pass_rate": c / n if rated and binary else None,
            "complete": t in complete,
            "reward_mean": statistics.mean(vals) if vals else None,
            "reward_min": min(vals) if vals else None,
            "reward_max": max(vals) if vals else None,
            "reward_std": statistics.stdev(vals) if n > 1 else None,
        }
        for j in range(1, k + 1):
            at, hat = _enumerate(wins, j) if (n >= j and binary) else (None, None)
            row[f"pass@{j}"], row[f"pass^{j}"] = at, hat
        per_task[t] = row
    out["per_task"] = per_task
    curve = []
    # the ks some task has attempts for, then k itself when beyond (no estimate there)
    top = max(
        (r["n"] if policy == "failure" else r["scored"] for r in per_task.values()), default=0
    )
    for j in [*range(1, min(k, top) + 1), *([k] if k > top else [])]:
        covered = [
            r for r in per_task.values() if (r["n"] if policy == "failure" else r["scored"]) >= j
        ]
        ok = covered and binary and scored > 0
        curve.append(
            {
                "k": j,
                "pass@k": statistics.mean(r[f"pass@{j}"] for r in covered) if ok else None,
                "pass^k": statistics.mean(r[f"pass^{j}"] for r in covered) if ok else None,
                "tasks": len(covered),
            }
        )
    out["curve"] = curve
    return out


def _same(got: Any, want: Any, what: str) -> None:
    if want is None:
        assert got is None or (isinstance(got, float) and math.isnan(got)), (what, got)
    elif isinstance(want, bool):
        assert bool(got) == want, (what, got, want)
    else:
        assert got == pytest.approx(want, abs=1e-9), (what, got, want)


# -- the property tests ----------------------------------------------------------------------


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(doc: dict) -> tuple[enb.Workspace, enb.Job]:
    ws = enb.open()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "job.json"
        path.write_text(json.dumps(doc))
        job = ws.load(path)
    return ws, job


@SETTINGS
@given(random_jobs())
def test_sql_path_matches_brute_force(case: dict) -> None:
    doc, policy, threshold = case["doc"], case["policy"], case["threshold"]
    k, tasks = resolve(doc)
    ref = reference(k, tasks, policy, threshold)
    ws, job = _load(doc)
    try:
        s = job.summary(policy=policy, threshold=threshold).to_dict()
        for key in ("score", "pass", "pass@k", "pass^k", "k", "total", "scored", "missing",
                    "invalid", "total_members", "complete_members"):  # fmt: skip
            _same(s[key], ref[key], key)

        ks = list(range(1, k + 1))
        rows = job.samples(ks=ks, policy=policy, threshold=threshold).to_dict("records")
        assert [r["task"] for r in rows] == list(tasks)
        for r in rows:
            want = ref["per_task"][r["task"]]
            for key, value in want.items():
                _same(r[key], value, f"{r['task']}.{key}")

        curve = job.curve(policy=policy, threshold=threshold).to_dict("records")
        for got, want in zip(curve, ref["curve"], strict=True):
            for key in ("k", "pass@k", "pass^k", "tasks"):
                _same(got[key], want[key], f"curve k={want['k']} {key}")
        # at the requested k under "unknown" the curve equals the job-level numbers
        if policy == "unknown":
            _same(curve[-1]["pass@k"], ref["pass@k"], "curve end = pass@k")
            _same(curve[-1]["pass^k"], ref["pass^k"], "curve end = pass^k")

        # groups by subset: each group is the reference restricted to its tasks
        subsets = {t["name"]: t["tags"].get("subset") for t in doc["job"]["tasks"]}
        if any(subsets.values()):
            groups = job.groups(policy=policy, threshold=threshold).to_dict("records")
            for g in groups:
                value = g["value"] if isinstance(g["value"], str) else None
                members = {t: sl for t, sl in tasks.items() if subsets[t] == value}
                sub = reference(k, members, policy, threshold)
                # binary-ness is decided on the whole job
                for key in ("total", "scored", "missing", "invalid", "complete_members", "score"):
                    _same(g[key], sub[key], f"group {value} {key}")
                if ref["pass"] is not None or not sub["scored"]:
                    for key in ("pass", "pass@k", "pass^k"):
                        _same(g[key], sub[key], f"group {value} {key}")

        ivs = job.intervals(policy=policy, threshold=threshold, resamples=20, frame=None)
        for key in ("score", "pass", "pass@k", "pass^k"):
            _same(ivs[key].estimate, ref[key], f"interval estimate {key}")
    finally:
        ws.close()


@settings(max_examples=60, deadline=None)
@given(random_jobs())
def test_per_task_invariants(case: dict) -> None:
    doc = case["doc"]
    ws, job = _load(doc)
    try:
        k = doc["job"]["attempts"]
        df = job.samples(ks=range(1, k + 1), policy=case["policy"], threshold=case["threshold"])
        for r in df.to_dict("records"):
            at = [r[f"pass@{j}"] for j in range(1, k + 1)]
            hat = [r[f"pass^{j}"] for j in range(1, k + 1)]
            defined = [j for j in range(k) if not math.isnan(at[j])]
            for j in defined:
                assert 0 <= at[j] <= 1 and 0 <= hat[j] <= 1
                assert hat[j] <= at[0] + 1e-12 <= at[j] + 2e-12
            for a, b in itertools.pairwise(defined):
                assert at[b] >= at[a] - 1e-12 and hat[b] <= hat[a] + 1e-12
            if defined:
                n = r["n"] if case["policy"] == "failure" else r["scored"]
                assert at[0] == pytest.approx(r["passes"] / n) == pytest.approx(hat[0])
        s = job.summary(policy=case["policy"], threshold=case["threshold"])
        for v in (s.pass_, s.pass_at_k, s.pass_hat_k):
            assert v is None or 0 <= v <= 1
        if s.pass_hat_k is not None and s.pass_at_k is not None:
            assert s.pass_hat_k <= s.pass_at_k
        assert s.scored + s.missing == s.total and s.invalid <= s.missing
    finally:
        ws.close()


@settings(max_examples=40, deadline=None)
@given(random_jobs())
def test_counts_do_not_depend_on_the_policy(case: dict) -> None:
    ws, job = _load(case["doc"])
    try:
        a = job.summary(policy="unknown", threshold=case["threshold"]).to_dict()
        b = job.summary(policy="failure", threshold=case["threshold"]).to_dict()
        for key in ("total", "scored", "missing", "invalid", "total_members", "complete_members"):
            assert a[key] == b[key]
        sa = job.samples(policy="unknown")
        sb = job.samples(policy="failure")
        for col in ("n", "dispatched", "scored", "missing", "invalid", "complete"):
            assert sa[col].tolist() == sb[col].tolist()
    finally:
        ws.close()


@settings(max_examples=60, deadline=None)
@given(random_jobs(), st.sampled_from([None, -1.0, 0.0, 0.3, 0.5, 1.0, 1.5]))
def test_counts_kept_by_the_load_equal_the_counts_of_the_attempts(
    case: dict, threshold: float | None
) -> None:
    """The counts the load keeps (and a threshold's passes beside them) are, bit for bit,
    the counts taken from the attempts."""
    from envloop_nb._metrics.counts import task_counts
    from envloop_nb._store.memo import clear_cache

    ws, job = _load(case["doc"])
    try:
        for t in (threshold, case["threshold"]):
            kept = task_counts(ws.con, job.id, t)
            ws.con.execute("CREATE OR REPLACE TEMP TABLE saved AS FROM task_counts_cache")
            ws.con.execute("DELETE FROM task_counts_cache")
            clear_cache(ws.con)
            assert kept.equals(task_counts(ws.con, job.id, t)), t
            ws.con.execute("INSERT INTO task_counts_cache FROM saved")
            clear_cache(ws.con)
    finally:
        ws.close()
