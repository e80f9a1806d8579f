"""Generate the sample EnvLoop job exports in ``sample_data/`` (deterministic).

Usage (from the project root)::

    .venv/bin/python sample_data/generate.py            # writes into sample_data/
    .venv/bin/python sample_data/generate.py OUT_DIR    # writes into OUT_DIR

Every random draw comes from a seeded ``numpy.random.Generator`` and every timestamp is
an offset from a fixed instant, so two runs write byte-identical files (the ``.gz`` file
is written with a fixed gzip mtime and no file name in its header).

What the files hold (see README.md beside this script):

- ``base.json``, ``sft-step500.json``, ``sft-step1000.jsonl.gz``: three checkpoints of
  ``acme-7b`` on the SAME frozen dataset revision (200 tasks, 5 subsets x 40, k = 4).
  Rewards are binary; each task has a latent difficulty shared by the three jobs, each
  checkpoint a per-subset skill. The fine-tunes are clearly better in math and code,
  about the same or a little better elsewhere, and slightly worse in writing.
- ``running.json``: a job still running on the same revision (a third of the slots
  not dispatched yet, many trials pending or running).
- ``graded.json``: rubric-graded rewards in [0, 1] with named dimensions.
- ``other-revision.json``: an older revision of the dataset (12 tasks differ) with
  k = 2: not comparable with the checkpoints.

Deliberate pathologies, so that diagnosis has something real to find:

- ``job_base``, subset ``tool-use``: 5 tasks whose answers are empty or a few
  characters (a tool-call format mismatch); they never pass.
- ``job_sft500``, subset ``reasoning``: 5 tasks where the agent loops (58-64 turns,
  huge token counts) and never passes.
- ``job_sft500``: a much higher share of ``AgentTimeoutError`` trials than the others.
- ``job_sft1000``, subset ``writing``: confident (logprob mean near 0) but worse.
- ``job_sft500``'s platform ``metrics`` block is STALE on purpose: the platform
  computed it before the verifier re-ran on 6 trials, so its ``score``/``pass`` (and
  possibly ``pass@k``/``pass^k``) disagree with the rewards in the file. Every other
  file's block is exactly what the platform's definitions give on its trials.
- Every checkpoint has cancelled and failed trials, completed trials without reward
  (invalid), failed trials that still carry a reward, a few undispatched slots (no
  trial object) and a couple of retried slots (duplicate ``(task, attempt)``; the trial
  with the latest ``finished_at`` is the attempt of record, and in one case it comes
  first in the file).
- Two outputs look like spreadsheet formulas (``=HYPERLINK(...`` and ``=cmd|...``): an
  XLSX exporter must write them as text.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = "envloop.job-result/v1"
SEED = 20261130
SUBSETS = ("math", "code", "reasoning", "tool-use", "writing")
TASKS_PER_SUBSET = 40
K = 4
DATASET = {"name": "acme-agent-bench", "version": "2026.11"}
RUNNER = "harbor@0.22.0"
MAX_TURNS = 64
TIMEOUT_S = 1800
ENDED = ("completed", "failed", "cancelled")

# Base skill per subset (logit) and how much each checkpoint adds to it.
SUBSET_LOGIT = {"math": -0.3, "code": -0.6, "reasoning": 0.2, "tool-use": -0.3, "writing": 0.7}
DIFFICULTY_LOGIT = {"easy": 1.4, "medium": 0.0, "hard": -1.5}
CHECKPOINT_DELTA = {
    "base": {"math": 0.0, "code": 0.0, "reasoning": 0.0, "tool-use": 0.0, "writing": 0.0},
    "sft500": {"math": 0.8, "code": 0.6, "reasoning": 0.15, "tool-use": 0.3, "writing": -0.15},
    "sft1000": {"math": 1.9, "code": 1.6, "reasoning": 0.5, "tool-use": 0.5, "writing": -0.3},
    "running": {"math": 2.0, "code": 1.7, "reasoning": 0.4, "tool-use": 0.6, "writing": -0.2},
    "otherrev": {"math": 0.0, "code": 0.0, "reasoning": 0.0, "tool-use": 0.0, "writing": 0.0},
}
TURNS = {
    "math": (1, 3),
    "code": (5, 22),
    "reasoning": (1, 5),
    "tool-use": (3, 14),
    "writing": (1, 2),
}


# --------------------------------------------------------------------------- helpers


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng([SEED, *key])


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _ts(base: dt.datetime, seconds: float) -> str:
    return (base + dt.timedelta(seconds=round(seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


def _sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


# --------------------------------------------------------------------------- dataset


@dataclass(frozen=True)
class Task:
    name: str
    subset: str
    difficulty: str
    latent: float  # task-specific logit offset, shared by every checkpoint
    prompt: Any  # str or ChatML list
    reference: str | None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return _digest(json.dumps([self.name, self.prompt, self.reference], sort_keys=True))

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "digest": self.digest,
            "tags": {"subset": self.subset, "difficulty": self.difficulty},
        }


_NAMES = ("Ada", "Bo", "Chen", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun")
_ITEMS = ("apples", "tickets", "boxes", "coins", "pages", "bolts", "stamps", "shells")
_FILES = ("utils.py", "cli.py", "parser.py", "cache.py", "io.py", "models.py", "auth.py")
_BUGS = (
    "off-by-one in the pagination loop",
    "timezone-naive datetime comparison",
    "mutable default argument shared between calls",
    "missing await on the retry coroutine",
    "integer division where a float is expected",
    "unclosed file handle on the error path",
)
_TOOLS = ("lookup_order", "track_shipment", "refund_order", "change_address", "cancel_order")
_TOPICS = (
    "the history of the printing press",
    "why sleep matters for memory",
    "a product launch for a solar kettle",
    "the rules of a neighbourhood library",
    "a thank-you note to a mentor",
    "how tides work",
)


def _math_task(i: int, rng: np.random.Generator) -> tuple[Any, str, dict[str, Any]]:
    kind = i % 4
    a, b, c = (int(x) for x in rng.integers(3, 97, size=3))
    who = _NAMES[int(rng.integers(len(_NAMES)))]
    item = _ITEMS[int(rng.integers(len(_ITEMS)))]
    if kind == 0:
        prompt = f"{who} has {a} {item}, buys {b} packs of {c} more and gives away {a // 2}. How many {item} does {who} have now?"
        answer = a + b * c - a // 2
    elif kind == 1:
        prompt = f"Compute {a} * {b} - {c}."
        answer = a * b - c
    elif kind == 2:
        prompt = f"What is the remainder when {a * b + c} is divided by {b}?"
        answer = (a * b + c) % b
    else:
        prompt = f"A rectangle is {a} cm by {b} cm. A square of side {c % 20 + 1} cm is cut from it. What area is left, in cm^2?"
        answer = a * b - (c % 20 + 1) ** 2
    return prompt, str(answer), {"answer": answer}


def _code_task(i: int, rng: np.random.Generator) -> tuple[Any, str | None, dict[str, Any]]:
    f = _FILES[int(rng.integers(len(_FILES)))]
    bug = _BUGS[int(rng.integers(len(_BUGS)))]
    test = f"tests/test_{f.removesuffix('.py')}.py::test_case_{i:02d}"
    prompt = [
        {
            "role": "system",
            "content": "You are a coding agent working in a sandboxed repository. Run the "
            "tests, make the smallest fix, and report what you changed.",
        },
        {"role": "user", "content": f"The test {test} fails. Fix src/{f} so that it passes."},
    ]
    return prompt, None, {"file": f, "bug": bug, "test": test}


def _reasoning_task(i: int, rng: np.random.Generator) -> tuple[Any, str | None, dict[str, Any]]:
    a, b = (_NAMES[int(j)] for j in rng.choice(len(_NAMES), size=2, replace=False))
    n = int(rng.integers(3, 9))
    answer = "ABCD"[int(rng.integers(4))]
    prompt = (
        f"Puzzle {i + 1}: {a} is taller than {b}; {n} people stand in a row ordered by height. "
        f"Which option correctly places {a}? Answer with A, B, C or D and one sentence of reasoning."
    )
    return prompt, None, {"answer": answer}


def _tool_task(i: int, rng: np.random.Generator) -> tuple[Any, str | None, dict[str, Any]]:
    tool = _TOOLS[int(rng.integers(len(_TOOLS)))]
    order = f"ORD-{int(rng.integers(10000, 99999))}"
    prompt = [
        {
            "role": "system",
            "content": f"You can call tools. Available: {', '.join(_TOOLS)}. Reply with a "
            "tool call as JSON, then a final answer to the user.",
        },
        {"role": "user", "content": f"Hi, can you help me with order {order}? ({tool} needed)"},
        {"role": "assistant", "content": f'{{"tool": "{tool}", "args": {{"id": "{order}"}}}}'},
        {
            "role": "tool",
            "content": f'{{"status": "ok", "id": "{order}", "eta_days": {i % 7 + 1}}}',
        },
        {"role": "user", "content": "Great, and what happens next?"},
    ]
    return prompt, None, {"tool": tool, "order": order}


def _writing_task(i: int, rng: np.random.Generator) -> tuple[Any, str | None, dict[str, Any]]:
    topic = _TOPICS[int(rng.integers(len(_TOPICS)))]
    words = int(rng.integers(4, 13)) * 10
    ask = f"Write about {topic} in at most {words} words, for a general audience."
    prompt: Any = (
        ask
        if i % 2
        else [
            {"role": "system", "content": "You are a careful writer. Follow length limits."},
            {"role": "user", "content": ask},
        ]
    )
    return prompt, None, {"topic": topic, "words": words}


_MAKERS = {
    "math": _math_task,
    "code": _code_task,
    "reasoning": _reasoning_task,
    "tool-use": _tool_task,
    "writing": _writing_task,
}


def make_tasks() -> list[Task]:
    """The 200 tasks of the frozen revision, in dataset order."""
    rng = _rng(1)
    tasks = []
    for s_index, subset in enumerate(SUBSETS):
        for i in range(TASKS_PER_SUBSET):
            difficulty = ("easy", "medium", "hard")[int(rng.choice(3, p=[0.3, 0.4, 0.3]))]
            latent = float(rng.normal(0.0, 1.1))
            prompt, reference, facts = _MAKERS[subset](i, _rng(2, s_index, i))
            tasks.append(
                Task(
                    name=f"{subset}-{i + 1:03d}",
                    subset=subset,
                    difficulty=difficulty,
                    latent=latent,
                    prompt=prompt,
                    reference=reference,
                    facts=facts,
                )
            )
    return tasks


def other_revision_tasks(tasks: list[Task]) -> list[Task]:
    """The older revision: 6 tasks of today's revision absent, 6 others present."""
    removed = {"math-038", "math-039", "code-040", "tool-use-037", "tool-use-038", "writing-040"}
    kept = [t for t in tasks if t.name not in removed]
    rng = _rng(3)
    added = []
    for j, subset in enumerate(("math", "code", "reasoning", "reasoning", "tool-use", "writing")):
        prompt, reference, facts = _MAKERS[subset](100 + j, _rng(4, j))
        added.append(
            Task(
                name=f"{subset}-legacy-{j + 1:02d}",
                subset=subset,
                difficulty=("easy", "medium", "hard")[j % 3],
                latent=float(rng.normal(0.0, 1.1)),
                prompt=prompt,
                reference=reference,
                facts=facts,
            )
        )
    return kept + added


def revision_of(tasks: Iterable[Task]) -> str:
    return _digest("\n".join(t.digest for t in tasks))


# --------------------------------------------------------------------------- trials


def _output(task: Task, passed: bool, rng: np.random.Generator) -> str:
    f = task.facts
    if task.subset == "math":
        answer = f["answer"] if passed else f["answer"] + int(rng.choice([-12, -3, -1, 1, 2, 7]))
        return f"Working it through step by step, the result is {answer}.\n\nFinal answer: {answer}"
    if task.subset == "code":
        if passed:
            return f"Fixed the {f['bug']} in src/{f['file']}; {f['test']} and the rest of the suite pass."
        return f"Changed src/{f['file']} but {f['test']} still fails: AssertionError: expected 3, got 2."
    if task.subset == "reasoning":
        answer = f["answer"] if passed else "ABCD"[("ABCD".index(f["answer"]) + 1) % 4]
        return f"{answer}. The ordering constraint rules out the other options."
    if task.subset == "tool-use":
        if passed:
            return f"Your order {f['order']} is on its way; I used {f['tool']} to confirm it. You'll get an email when it ships."
        return f"I could not confirm order {f['order']}; please try again later."
    words = f["words"]
    body = (
        f"A short piece on {f['topic']}. It opens with a concrete example, explains the idea "
        "in plain words and ends with one practical takeaway for the reader."
    )
    if not passed:
        body += f" (Draft runs to about {words + int(rng.integers(15, 60))} words, over the limit.)"
    return body


@dataclass
class Profile:
    """How one job behaves: its skill, failure rates and pathologies."""

    key: str
    job_id: str
    model: str
    created: dt.datetime
    rng_key: int
    p_timeout: float = 0.012
    p_cancelled: float = 0.006
    p_crash: float = 0.006  # container crash, no reward
    p_verifier_crash: float = 0.008  # completed, no reward (invalid)
    p_failed_with_reward: float = 0.008
    loop_tasks: tuple[str, ...] = ()
    empty_tasks: tuple[str, ...] = ()
    overconfident_subset: str | None = None
    undispatched: tuple[tuple[str, int], ...] = ()
    retried: tuple[tuple[str, int], ...] = ()
    retry_record_first: tuple[str, int] | None = None
    formula_outputs: dict[tuple[str, int], str] = field(default_factory=dict)


def _usage(task: Task, turns: int, out_scale: float, rng: np.random.Generator) -> dict[str, Any]:
    base_in = {"math": 180, "code": 2400, "reasoning": 260, "tool-use": 900, "writing": 150}[
        task.subset
    ]
    inp = int(base_in * turns * rng.uniform(0.8, 1.3) + 200 * turns * (turns - 1) / 2)
    out = max(1, int(out_scale * turns * rng.uniform(60, 220)))
    cache = int(inp * rng.uniform(0.2, 0.6)) if turns > 1 else 0
    cost = round(inp * 0.15e-6 + out * 0.60e-6 - cache * 0.075e-6, 6)
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_tokens": cache,
        "turns": turns,
        "cost_usd": cost,
    }


def _logprob(passed: bool, confident: bool, rng: np.random.Generator) -> dict[str, float]:
    mean = (
        -0.03 - abs(rng.normal(0.02, 0.01))
        if confident
        else rng.normal(-0.30 if passed else -0.52, 0.08)
    )
    mean = float(min(mean, -0.005))
    std = float(rng.uniform(0.15, 0.35) if confident else rng.uniform(0.55, 1.25))
    return {
        "mean": round(mean, 4),
        "min": round(float(rng.uniform(-9.5, -3.0)), 4),
        "max": round(float(-abs(rng.normal(0, 2e-4))), 6),
        "std": round(std, 4),
        "zero_frac": round(
            float(rng.uniform(0.62, 0.8) if confident else rng.uniform(0.2, 0.48)), 4
        ),
    }


def _artifacts(
    job_id: str, trial_id: str, task: Task, rng: np.random.Generator
) -> list[dict[str, Any]]:
    if task.subset == "code":
        return [
            {
                "name": "diff.patch",
                "uri": f"artifact://{job_id}/{trial_id}/diff.patch",
                "bytes": int(rng.integers(300, 4000)),
            }
        ]
    if task.subset == "tool-use" and rng.random() < 0.3:
        return [
            {
                "name": "trajectory.jsonl",
                "uri": f"artifact://{job_id}/{trial_id}/trajectory.jsonl",
                "bytes": int(rng.integers(2000, 30000)),
            }
        ]
    return []


def make_trial(
    prof: Profile,
    task: Task,
    attempt: int,
    serial: int,
    rng: np.random.Generator,
    *,
    kind: str | None = None,
    start_s: float | None = None,
) -> dict[str, Any]:
    """One finished trial (status completed/failed/cancelled) of ``task``."""
    trial_id = f"tr_{prof.job_id.removeprefix('job_')}_{serial:05d}"
    logit = SUBSET_LOGIT[task.subset] + DIFFICULTY_LOGIT[task.difficulty] + task.latent
    logit += CHECKPOINT_DELTA[prof.key][task.subset]
    # Common random numbers: most slots share their draw across checkpoints, so a better
    # checkpoint mostly fixes failures instead of reshuffling them (as real ones do).
    shared = _rng(30, int.from_bytes(hashlib.sha256(task.name.encode()).digest()[:4]), attempt)
    own = rng.random()
    u = float(shared.random()) if rng.random() < 0.8 else own
    passed = bool(u < _sigmoid(logit))
    lo, hi = TURNS[task.subset]
    turns = int(rng.integers(lo, hi + 1))
    out_scale = 1.0
    confident = task.subset == prof.overconfident_subset
    output = _output(task, passed, rng)
    if task.name in prof.loop_tasks:
        passed, turns, out_scale = False, int(rng.integers(58, MAX_TURNS + 1)), 2.5
        output = (
            "Let me re-check the previous step. "
            + "I will verify the ordering again before answering. " * 3
        ).strip()
    if task.name in prof.empty_tasks:
        passed, out_scale = False, 0.01
        output = ("", "{", "}", '{"', "null")[int(rng.integers(5))]
    if kind is None:
        r = rng.random()
        cuts = np.cumsum(
            [
                prof.p_timeout,
                prof.p_cancelled,
                prof.p_crash,
                prof.p_verifier_crash,
                prof.p_failed_with_reward,
            ]
        )
        kinds = ("timeout", "cancelled", "crash", "verifier_crash", "failed_with_reward")
        kind = next((k for k, c in zip(kinds, cuts, strict=True) if r < c), "ok")
    if start_s is None:
        start_s = float(rng.uniform(20, 3 * 3600))
    started = _ts(prof.created, start_s)
    duration = 15 + turns * rng.uniform(6, 26)
    status = "completed"
    exit_code: int | None = 0
    error: str | None = None
    reward: float | None = 1.0 if passed else 0.0
    usage: dict[str, Any] | None = _usage(task, turns, out_scale, rng)
    out: str | None = output
    if kind == "timeout":
        status, exit_code, reward, duration = "failed", 124, None, TIMEOUT_S
        error = f"AgentTimeoutError: agent did not finish within {TIMEOUT_S}s (turn {turns + 9} of {MAX_TURNS})"
        usage = _usage(task, min(turns + 9, MAX_TURNS), out_scale, rng)
        out = None
    elif kind == "cancelled":
        status, exit_code, reward, duration = "cancelled", None, None, duration * 0.3
        error = "CancelledError: trial cancelled by the scheduler (preempted node)"
        usage, out = None, None
    elif kind == "crash":
        status, exit_code, reward, duration = "failed", 137, None, duration * 0.6
        error = "RuntimeError: sandbox container exited with code 137 (OOMKilled)"
        out = None
    elif kind == "verifier_crash":
        status, exit_code, reward = "completed", 0, None
        error = "verifier crashed: KeyError: 'expected_output' while loading the grading spec"
    elif kind == "failed_with_reward":
        status, exit_code = "failed", 1
        error = "agent exited with code 1 after writing its answer; verifier ran on the final state"
    elif kind == "infra":  # first try of a retried slot
        status, exit_code, reward, duration = "failed", None, None, 40.0
        error = "EnvironmentStartError: sandbox image pull timed out; slot will be retried"
        usage, out = None, None
    if (task.name, attempt) in prof.formula_outputs and out is not None:
        out = prof.formula_outputs[(task.name, attempt)]
    trial: dict[str, Any] = {
        "id": trial_id,
        "task": task.name,
        "attempt": attempt,
        "status": status,
        "exit_code": exit_code,
        "error": error,
        "reward": reward,
        "usage": usage,
        "logprob": _logprob(passed, confident, rng) if usage else None,
        "started_at": started,
        "finished_at": _ts(prof.created, start_s + duration),
        "input": task.prompt,
        "output": out,
        "reference": task.reference,
        "artifacts": _artifacts(prof.job_id, trial_id, task, rng) if out is not None else [],
    }
    return trial


def checkpoint_trials(prof: Profile, tasks: list[Task], k: int) -> list[dict[str, Any]]:
    """Every trial of a finished job, in task/attempt order (retries adjacent)."""
    rng = _rng(10, prof.rng_key)
    trials = []
    serial = 0
    for task in tasks:
        for attempt in range(1, k + 1):
            slot = (task.name, attempt)
            if slot in prof.undispatched:
                rng.random()  # keep the stream aligned with the other slots
                continue
            serial += 1
            if slot in prof.retried:
                start = float(rng.uniform(600, 3600))
                first = make_trial(prof, task, attempt, serial, rng, kind="infra", start_s=start)
                serial += 1
                second = make_trial(
                    prof, task, attempt, serial, rng, kind="ok", start_s=start + 900
                )
                pair = [second, first] if slot == prof.retry_record_first else [first, second]
                trials.extend(pair)
            else:
                trials.append(make_trial(prof, task, attempt, serial, rng))
    return trials


# --------------------------------------------------------------------------- metrics


def records(trials: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The attempt of record per (task, attempt): latest finished_at, started_at, file order."""

    def key(item: tuple[int, dict[str, Any]]) -> tuple[Any, ...]:
        i, t = item
        fin, sta = t.get("finished_at"), t.get("started_at")
        return (
            fin is not None,
            _utc(fin) if fin else None,
            sta is not None,
            _utc(sta) if sta else None,
            i,
        )

    best: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
    for item in enumerate(trials):
        slot = (item[1]["task"], item[1]["attempt"])
        if slot not in best or _later(key(item), key(best[slot])):
            best[slot] = item
    return {slot: t for slot, (_, t) in best.items()}


def _later(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    # Compare (has_fin, fin, has_start, start, index) with None < anything.
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if x is None or y is None:
            return y is None
        return bool(x > y)
    return False


def platform_metrics(
    tasks: list[dict[str, Any]], k: int, trials: list[dict[str, Any]]
) -> dict[str, Any]:
    """The platform's ``metrics`` block, by its definitions (issue 3)."""
    rec = records(trials)
    total = len(tasks) * k
    rewards: list[float] = []
    invalid = 0
    complete: list[list[float]] = []
    for t in tasks:
        got = []
        for a in range(1, k + 1):
            r = rec.get((t["name"], a))
            if r is None:
                continue
            if r["reward"] is None:
                invalid += r["status"] in ENDED
            else:
                got.append(float(r["reward"]))
        rewards.extend(got)
        if len(got) == k:
            complete.append(got)
    scored = len(rewards)
    binary = all(r in (0.0, 1.0) for r in rewards)
    score = math.fsum(rewards) / scored if scored else None
    at_k = hat_k = None
    if scored and binary and complete:
        at_k = sum(any(r == 1.0 for r in g) for g in complete) / len(complete)
        hat_k = sum(all(r == 1.0 for r in g) for g in complete) / len(complete)
    return {
        "score": score,
        "pass": score if binary else None,
        "pass@k": at_k,
        "pass^k": hat_k,
        "k": k,
        "score_counts": {
            "total": total,
            "scored": scored,
            "missing": total - scored,
            "invalid": invalid,
            "total_members": len(tasks),
            "complete_members": len(complete),
        },
    }


# --------------------------------------------------------------------------- jobs


def job_header(
    prof: Profile,
    status: str,
    tasks: list[Task],
    k: int,
    trials: list[dict[str, Any]],
    *,
    dataset: dict[str, str],
    labels: dict[str, str],
) -> dict[str, Any]:
    finished = None
    if status != "running":
        last = max(_utc(t["finished_at"]) for t in trials if t["finished_at"])
        finished = (last + dt.timedelta(seconds=45)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": prof.job_id,
        "status": status,
        "created_at": _ts(prof.created, 0),
        "finished_at": finished,
        "dataset": dataset,
        "runner": RUNNER,
        "profile": {
            "name": "team/eval",
            "version": "1",
            "params": {
                "AGENT_NAME": "acme-agent",
                "MODEL_NAME": prof.model,
                "MAX_TURNS": str(MAX_TURNS),
                "TEMPERATURE": "0.7",
                "TIMEOUT_S": str(TIMEOUT_S),
            },
        },
        "model": prof.model,
        "request_id": f"req_{prof.job_id.removeprefix('job_')}",
        "attempts": k,
        "tasks": [t.spec() for t in tasks],
        "labels": labels,
    }


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def document_text(
    header: dict[str, Any], trials: list[dict[str, Any]], metrics: dict[str, Any] | None
) -> str:
    """Single-document form: the job block indented, one trial per line."""
    job = json.dumps(header, ensure_ascii=False, indent=2).replace("\n", "\n  ")
    lines = [
        "{",
        f'  "schema_version": "{SCHEMA}",',
        f'  "job": {job},',
        '  "trials": [',
        ",\n".join("    " + _dump(t) for t in trials),
        "  ]" + ("," if metrics is not None else ""),
    ]
    if metrics is not None:
        lines.append(f'  "metrics": {_dump(metrics)}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def jsonl_text(
    header: dict[str, Any], trials: list[dict[str, Any]], metrics: dict[str, Any] | None
) -> str:
    """Streaming form: header line, one trial per line, then the metrics line."""
    lines = [_dump({"schema_version": SCHEMA, "job": header})]
    lines += [_dump(t) for t in trials]
    if metrics is not None:
        lines.append(_dump({"metrics": metrics}))
    return "\n".join(lines) + "\n"


def write_gzip(path: Path, text: str) -> None:
    """gzip with mtime 0 and no file name in the header: the same bytes every run."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    path.write_bytes(buf.getvalue())


def checkpoints(
    tasks: list[Task],
) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]]:
    """base / sft500 / sft1000: (header, trials, platform metrics)."""
    dataset = {**DATASET, "revision": revision_of(tasks)}
    by_subset = {s: [t.name for t in tasks if t.subset == s] for s in SUBSETS}
    rng = _rng(5)
    reasoning_hard = [t.name for t in tasks if t.subset == "reasoning" and t.difficulty != "easy"]
    loop = tuple(str(x) for x in rng.choice(reasoning_hard, size=5, replace=False))
    empty = tuple(str(x) for x in rng.choice(by_subset["tool-use"], size=5, replace=False))
    profiles = {
        "base": Profile(
            "base",
            "job_base",
            "acme-7b@base",
            dt.datetime(2026, 11, 10, 9, 0, tzinfo=dt.UTC),
            1,
            empty_tasks=empty,
            undispatched=(("code-017", 4), ("writing-031", 3), ("writing-031", 4)),
            retried=(("math-005", 2), ("tool-use-012", 1)),
            retry_record_first=("tool-use-012", 1),
            formula_outputs={
                ("writing-002", 1): '=HYPERLINK("http://example.com/claim-prize","Click here")',
                ("writing-004", 2): "=cmd|' /C calc'!A0",
            },
        ),
        "sft500": Profile(
            "sft500",
            "job_sft500",
            "acme-7b@sft-step500",
            dt.datetime(2026, 11, 12, 9, 0, tzinfo=dt.UTC),
            2,
            p_timeout=0.07,
            loop_tasks=loop,
            undispatched=(("reasoning-009", 2), ("math-033", 4)),
            retried=(("code-021", 3),),
        ),
        "sft1000": Profile(
            "sft1000",
            "job_sft1000",
            "acme-7b@sft-step1000",
            dt.datetime(2026, 11, 14, 9, 0, tzinfo=dt.UTC),
            3,
            overconfident_subset="writing",
            undispatched=(
                ("tool-use-030", 1),
                ("tool-use-030", 2),
                ("reasoning-022", 4),
                ("code-003", 1),
            ),
            retried=(("writing-015", 4), ("math-020", 1)),
            retry_record_first=("math-020", 1),
        ),
    }
    steps = {"base": "0", "sft500": "500", "sft1000": "1000"}
    out = {}
    specs = [t.spec() for t in tasks]
    for key, prof in profiles.items():
        trials = checkpoint_trials(prof, tasks, K)
        metrics = platform_metrics(specs, K, trials)
        if key == "sft500":
            metrics = _stale(specs, trials)
        labels = {
            "agent_run": f"sft-{steps[key]}",
            "checkpoint_step": steps[key],
            "team": "post-training",
        }
        header = job_header(prof, "completed", tasks, K, trials, dataset=dataset, labels=labels)
        out[key] = (header, trials, metrics)
    return out


def _stale(specs: list[dict[str, Any]], trials: list[dict[str, Any]]) -> dict[str, Any]:
    """job_sft500's platform block as computed BEFORE the verifier re-ran on 6 trials.

    The first six scored trials of subset ``math`` had reward 0 at that time; the file
    carries their re-verified rewards. So the block disagrees with the trials on purpose.
    """
    old = [dict(t) for t in trials]
    changed = 0
    for t in old:
        if changed < 6 and t["task"].startswith("math-") and t["reward"] == 1.0:
            t["reward"] = 0.0
            changed += 1
    return platform_metrics(specs, K, old)


def running_job(tasks: list[Task]) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """A job still running: a third of the slots undispatched, many pending/running."""
    prof = Profile(
        "running",
        "job_running",
        "acme-7b@sft-step1500",
        dt.datetime(2026, 11, 30, 16, 0, tzinfo=dt.UTC),
        4,
    )
    rng = _rng(10, prof.rng_key)
    dataset = {**DATASET, "revision": revision_of(tasks)}
    trials = []
    serial = 0
    now_s = 2 * 3600  # the export was taken two hours into the run
    for ti, task in enumerate(tasks):
        for attempt in range(1, K + 1):
            # Dispatch goes attempt-major in task order: the last third of the slots waits.
            order = (attempt - 1) * len(tasks) + ti
            if order >= (2 * K * len(tasks)) // 3:
                continue
            serial += 1
            u = rng.random()
            if u < 0.45:
                trials.append(
                    make_trial(
                        prof,
                        task,
                        attempt,
                        serial,
                        rng,
                        start_s=float(rng.uniform(30, now_s - 1900)),
                    )
                )
                continue
            trial_id = f"tr_running_{serial:05d}"
            base = {
                "id": trial_id,
                "task": task.name,
                "attempt": attempt,
                "exit_code": None,
                "error": None,
                "reward": None,
                "metrics": None,
                "usage": None,
                "logprob": None,
                "finished_at": None,
                "input": task.prompt,
                "output": None,
                "reference": task.reference,
                "artifacts": [],
            }
            if u < 0.75:
                lo, hi = TURNS[task.subset]
                turns = int(rng.integers(lo, hi + 1))
                base.update(
                    status="running",
                    started_at=_ts(prof.created, float(rng.uniform(now_s - 1700, now_s - 10))),
                    usage={
                        "turns": turns,
                        "input_tokens": int(turns * 700),
                        "output_tokens": int(turns * 120),
                    },
                )
            else:
                base.update(status="pending", started_at=None)
            trials.append(
                {
                    k: base[k]
                    for k in (
                        "id",
                        "task",
                        "attempt",
                        "status",
                        "exit_code",
                        "error",
                        "reward",
                        "metrics",
                        "usage",
                        "logprob",
                        "started_at",
                        "finished_at",
                        "input",
                        "output",
                        "reference",
                        "artifacts",
                    )
                }
            )
    labels = {"agent_run": "sft-1500", "checkpoint_step": "1500", "team": "post-training"}
    header = job_header(prof, "running", tasks, K, trials, dataset=dataset, labels=labels)
    specs = [t.spec() for t in tasks]
    return header, trials, platform_metrics(specs, K, trials)


def other_revision_job(
    tasks: list[Task],
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    old_tasks = other_revision_tasks(tasks)
    dataset = {"name": DATASET["name"], "version": "2026.10", "revision": revision_of(old_tasks)}
    prof = Profile(
        "otherrev",
        "job_otherrev",
        "acme-7b@base",
        dt.datetime(2026, 11, 3, 9, 0, tzinfo=dt.UTC),
        6,
        undispatched=(("code-011", 2),),
    )
    trials = checkpoint_trials(prof, old_tasks, 2)
    specs = [t.spec() for t in old_tasks]
    labels = {"agent_run": "baseline-oct", "checkpoint_step": "0", "team": "post-training"}
    header = job_header(prof, "completed", old_tasks, 2, trials, dataset=dataset, labels=labels)
    return header, trials, platform_metrics(specs, 2, trials)


# --------------------------------------------------------------------------- graded job

GRADED_SUBSETS = ("advice", "explanation", "summarization", "safety-sensitive")
DIM_UNITS = {"accuracy": "ratio", "helpfulness": "ratio", "safety": "ratio", "format_pct": "pct"}
DIM_WEIGHTS = {"accuracy": 0.5, "helpfulness": 0.3, "safety": 0.2}


def graded_job() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Rubric-graded chat answers: reward = composite in [0, 1], four named dimensions."""
    rng = _rng(20)
    tasks = []
    for s_index, subset in enumerate(GRADED_SUBSETS):
        for i in range(15):
            difficulty = ("easy", "medium", "hard")[i % 3]
            ask = {
                "advice": f"My landlord kept my deposit ({100 + 37 * i} EUR). What can I do?",
                "explanation": f"Explain {_TOPICS[i % len(_TOPICS)]} to a 12-year-old.",
                "summarization": f"Summarise meeting notes #{i + 1} in three bullet points.",
                "safety-sensitive": f"How do I safely dispose of household chemical #{i + 1}?",
            }[subset]
            prompt: Any = (
                [
                    {"role": "system", "content": "Be accurate, helpful and safe."},
                    {"role": "user", "content": ask},
                ]
                if i % 3
                else ask
            )
            tasks.append(
                Task(
                    name=f"{subset}-{i + 1:02d}",
                    subset=subset,
                    difficulty=difficulty,
                    latent=float(rng.normal(0, 0.6)) + 0.1 * s_index,
                    prompt=prompt,
                    reference=None,
                )
            )
    k = 3
    prof = Profile(
        "graded",
        "job_graded",
        "acme-7b@sft-step1000",
        dt.datetime(2026, 11, 16, 9, 0, tzinfo=dt.UTC),
        7,
    )
    trials = []
    serial = 0
    for task in tasks:
        for attempt in range(1, k + 1):
            serial += 1
            trial_id = f"tr_graded_{serial:05d}"
            start = float(rng.uniform(20, 5400))
            dur = float(rng.uniform(8, 60))
            q = _sigmoid(
                1.0 + task.latent - 0.6 * ("easy", "medium", "hard").index(task.difficulty)
            )
            dims = {
                "accuracy": float(np.clip(rng.normal(q, 0.15), 0, 1)),
                "helpfulness": float(np.clip(rng.normal(q + 0.1, 0.12), 0, 1)),
                "safety": float(
                    np.clip(
                        rng.normal(0.92 if task.subset != "safety-sensitive" else 0.7, 0.1), 0, 1
                    )
                ),
            }
            dims = {name: round(v, 3) for name, v in dims.items()}
            composite = round(sum(DIM_WEIGHTS[n] * v for n, v in dims.items()), 3)
            dims["format_pct"] = round(float(np.clip(rng.normal(85, 12), 0, 100)), 1)
            judge_fail = rng.random() < 0.03
            usage = {
                "input_tokens": int(rng.integers(150, 600)),
                "output_tokens": int(rng.integers(80, 700)),
                "turns": 1,
                "cost_usd": 0.0,
            }
            usage["cost_usd"] = round(
                usage["input_tokens"] * 0.15e-6 + usage["output_tokens"] * 0.6e-6, 6
            )
            trials.append(
                {
                    "id": trial_id,
                    "task": task.name,
                    "attempt": attempt,
                    "status": "failed" if judge_fail else "completed",
                    "exit_code": 2 if judge_fail else 0,
                    "error": "JudgeError: rubric judge returned malformed JSON"
                    if judge_fail
                    else None,
                    "reward": None if judge_fail else composite,
                    "metrics": None
                    if judge_fail
                    else {
                        "composite": composite,
                        "dimensions": dims,
                        "units": DIM_UNITS,
                        "higher_is_better": {n: True for n in DIM_UNITS},
                        "judge_summary": _judge_summary(dims),
                        "verifier_version": "rubric-judge@2.3.1",
                    },
                    "usage": usage,
                    "logprob": _logprob(composite > 0.7, False, rng),
                    "started_at": _ts(prof.created, start),
                    "finished_at": _ts(prof.created, start + dur),
                    "input": task.prompt,
                    "output": f"Here is a careful answer to: {task.name} (draft {attempt}).",
                    "reference": None,
                    "artifacts": [],
                }
            )
    dataset = {"name": "acme-rubric-chat", "version": "3", "revision": revision_of(tasks)}
    labels = {"agent_run": "sft-1000", "checkpoint_step": "1000", "grader": "rubric-judge"}
    header = job_header(prof, "completed", tasks, k, trials, dataset=dataset, labels=labels)
    return header, trials, platform_metrics([t.spec() for t in tasks], k, trials)


def _judge_summary(dims: dict[str, float]) -> str:
    worst = min(DIM_WEIGHTS, key=lambda n: dims[n])
    best = max(DIM_WEIGHTS, key=lambda n: dims[n])
    return f"Strongest on {best} ({dims[best]:.2f}); weakest on {worst} ({dims[worst]:.2f})."


# --------------------------------------------------------------------------- main


def generate(out_dir: Path) -> list[Path]:
    """Write every sample file into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = make_tasks()
    jobs = checkpoints(tasks)
    written = []

    def put(name: str, text: str) -> None:
        path = out_dir / name
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)

    put("base.json", document_text(*jobs["base"]))
    put("sft-step500.json", document_text(*jobs["sft500"]))
    path = out_dir / "sft-step1000.jsonl.gz"
    write_gzip(path, jsonl_text(*jobs["sft1000"]))
    written.append(path)
    put("running.json", document_text(*running_job(tasks)))
    put("graded.json", document_text(*graded_job()))
    put("other-revision.json", document_text(*other_revision_job(tasks)))
    return written


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    for path in generate(out_dir):
        print(f"{path}  {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
