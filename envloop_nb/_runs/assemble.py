"""A run: the jobs of one training run, each at its step, checked as one eval over training.

A run is a list of jobs (checkpoints), each with a numeric *step*, ordered by it:

* :func:`named_jobs` — the jobs labelled ``agent_run = name``, their step the
  ``agent_round`` label (the platform's own labels, ``jobs.labels``);
* :func:`resolve_steps` — any jobs with a step from a label (``"agent_round"``,
  ``"label:<key>"`` or ``"tag:<key>"``: a job's labels are its tags), from the job's name
  (``"name"``: an lm-eval revision's ``step143000``, else a number in the job id or the
  model), or a list of numbers.

:func:`assemble` checks the run and returns its frozen :class:`RunState`:

* at least two jobs, each step a number, no two jobs on one step (the message names them);
* the comparison guard (:func:`envloop_nb._compare.guard.find_differences`) over all the
  jobs: a difference in the frozen work itself — ``dataset`` (name or version),
  ``dataset_revision``, ``runner``, ``attempts``, ``task_digests`` — is refused with the
  guard's sentence (a checkpoint on another dataset revision is another eval, not a later
  step); a difference in the task lists (``tasks``: tasks missing from some jobs, or a
  metrics-only job whose task list is unknown) is *marked* as the comparison marks it
  (:func:`mark`), and per-task statistics then use the tasks the two steps share. With
  ``strict=False`` nothing is refused, everything is marked.

Nothing here writes to the workspace.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._compare.guard import Difference, find_differences
from .._errors import EnvloopError
from .._metrics.counts import check_options
from .._types import Policy

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "FROZEN",
    "RUN_LABEL",
    "STEP_LABEL",
    "RunState",
    "Step",
    "assemble",
    "check_count",
    "mark",
    "named_jobs",
    "parse_step",
    "resolve_steps",
    "setup_difference",
    "step_index",
    "step_text",
]

#: The label naming a job's run, and the one giving its round (the platform page's).
RUN_LABEL = "agent_run"
STEP_LABEL = "agent_round"
#: The guard's fields that make two jobs different evals (refused in a strict run).
FROZEN = ("dataset", "dataset_revision", "runner", "attempts", "task_digests")

Step = int | float
_STEP_WORD = re.compile(r"(?:step|ckpt|checkpoint|iter|round)[-_]?(\d+)", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z]*(\d+)")  # a word ending in its number: r01, sft1000, 2500
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
#: The suffix ``ws.load_mlflow_run`` gives a job read back from MLflow (a run id's start).
_MLFLOW_SUFFIX = re.compile(r"@mlflow-[0-9a-f]{8}$")


@dataclass(frozen=True, eq=False)
class RunState:
    """A run of checkpoints; every ``_runs`` function takes one.

    ``job_ids`` and ``steps`` are in step order. ``differences`` are the guard's findings
    over all the jobs (none blocking in a strict run but ``tasks``). ``data`` memoizes
    what the views derive (per-task matrices, resampling weights).
    """

    con: duckdb.DuckDBPyConnection
    job_ids: tuple[str, ...]
    steps: tuple[Step, ...]
    step_from: str
    name: str | None = None
    differences: tuple[Difference, ...] = ()
    policy: Policy = "unknown"
    threshold: float | None = None
    solved_at: float = 0.5
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    data: dict[Any, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check_options(self.policy, self.threshold)
        if not 0 < self.solved_at <= 1:
            raise ValueError(f"solved_at must be in (0, 1], got {self.solved_at!r}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if self.resamples < 1:
            raise ValueError(f"resamples must be >= 1, got {self.resamples!r}")


def step_text(step: Step) -> str:
    """A step as text: ``6``, ``143000``, ``2.5``."""
    return f"{step:g}" if isinstance(step, float) else str(step)


def _number(value: Any) -> Step | None:
    """A step from a label value or a number: int when whole, else float; None if not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return _number(float(text))
        except ValueError:
            return None
    return None


def parse_step(name: str) -> Step | None:
    """The step a name states: ``step143000`` (also ``ckpt``, ``iter``, ``round``), else
    the number ending the last word that is letters then digits (``r07``, ``sft1000``,
    ``2500``; a hash such as ``2f97acd1`` is no step, nor the run id ending a job read back
    from MLflow, ``@mlflow-55013646``); None without one.

    Examples
    --------
    >>> parse_step("EleutherAI/pythia-160m@step143000"), parse_step("job_sft1000")
    (143000, 1000)
    >>> parse_step("job_rl0412_r01@mlflow-2f97acd1"), parse_step("base") is None
    (1, True)
    """
    name = _MLFLOW_SUFFIX.sub("", name)  # a run id's hex digits are no step
    found = _STEP_WORD.findall(name)
    if found:
        return int(found[-1])
    for word in reversed(_SEPARATORS.split(name)):
        last = _TOKEN.fullmatch(word)
        if last:
            return int(last[1])
    return None


def _rows(con: duckdb.DuckDBPyConnection, job_ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    rows = con.execute(
        """SELECT job_id, labels, model, extra->'lm_eval_model'->>'step' AS lm_step
           FROM jobs WHERE list_contains($jobs, job_id)""",
        {"jobs": list(job_ids)},
    ).fetchall()
    out = {
        r[0]: (json.loads(r[1]) if isinstance(r[1], str) else r[1] or {}, r[2], r[3]) for r in rows
    }
    missing = [j for j in job_ids if j not in out]
    if missing:
        raise EnvloopError(f"no job {', '.join(map(repr, missing))} in this workspace")
    return out


def named_jobs(con: duckdb.DuckDBPyConnection, name: str) -> tuple[list[str], list[Step]]:
    """The jobs labelled ``agent_run = name`` and their ``agent_round`` (unordered).

    Raises
    ------
    EnvloopError
        No job carries that run label (the message lists the runs the workspace has), or
        a job's ``agent_round`` is missing or not a number (naming the job).
    """
    rows = con.execute(
        f"""SELECT job_id, labels->>'{STEP_LABEL}' FROM jobs
            WHERE labels->>'{RUN_LABEL}' = ? ORDER BY job_id""",
        [name],
    ).fetchall()
    if not rows:
        runs = [
            r[0]
            for r in con.execute(
                f"""SELECT DISTINCT labels->>'{RUN_LABEL}' AS run FROM jobs
                    WHERE run IS NOT NULL ORDER BY run"""
            ).fetchall()
        ]
        known = f"runs in this workspace: {runs}" if runs else "no job has that label"
        raise EnvloopError(f"no job is labelled {RUN_LABEL}={name!r}; {known}")
    steps: list[Step] = []
    for job_id, value in rows:
        step = _number(value)
        if step is None:
            raise EnvloopError(
                f"job {job_id!r} of run {name!r}: its {STEP_LABEL} label is "
                f"{'missing' if value is None else repr(value)}, not a number"
            )
        steps.append(step)
    return [r[0] for r in rows], steps


def resolve_steps(
    con: duckdb.DuckDBPyConnection, job_ids: Sequence[str], step: str | Sequence[Step] | None
) -> tuple[list[Step], str]:
    """Each job's step and where it came from (see the module docstring).

    ``step=None``: the ``agent_round`` label when every job has one, else the step of an
    lm-eval revision when every job has one, else refused (say ``step=...``).

    Raises
    ------
    EnvloopError
        A job has no such label or its value is not a number, a name holds no number, or a
        list of steps does not have one number per job (each naming the job).
    """
    info = _rows(con, job_ids)
    if step is not None and not isinstance(step, str):
        given = list(step)
        if len(given) != len(job_ids):
            raise EnvloopError(
                f"{len(given)} steps given for {len(job_ids)} jobs: one step per job"
            )
        out: list[Step] = []
        for job_id, value in zip(job_ids, given, strict=True):
            number = _number(value)
            if number is None or isinstance(value, str):
                raise EnvloopError(f"the step given for job {job_id!r} is {value!r}, not a number")
            out.append(number)
        return out, "given"
    if step is None:
        if all(STEP_LABEL in info[j][0] for j in job_ids):
            return resolve_steps(con, job_ids, STEP_LABEL)
        if all(info[j][2] is not None for j in job_ids):
            return [int(info[j][2]) for j in job_ids], "lm-eval revision"
        lacking = [j for j in job_ids if STEP_LABEL not in info[j][0]]
        raise EnvloopError(
            f"job(s) {', '.join(map(repr, lacking))} have no {STEP_LABEL} label: say where the "
            "step is, step='name' (a number in the name), step='<label>' or a list of numbers"
        )
    if step == "name":
        out = []
        for job_id in job_ids:
            labels, model, lm_step = info[job_id]
            number = int(lm_step) if lm_step is not None else parse_step(job_id)
            if number is None and model:
                number = parse_step(str(model))
            if number is None:
                raise EnvloopError(
                    f"job {job_id!r}: no step in its name (nor its model {model!r}): "
                    "step='name' needs a number such as step143000"
                )
            out.append(number)
        return out, "name"
    key = step.removeprefix("label:").removeprefix("tag:")
    out = []
    for job_id in job_ids:
        labels = info[job_id][0]
        if key not in labels:
            raise EnvloopError(
                f"job {job_id!r} has no label {key!r} (its labels: {sorted(labels)})"
            )
        number = _number(labels[key])
        if number is None:
            raise EnvloopError(
                f"job {job_id!r}: label {key}={labels[key]!r} is not a number (a step must be one)"
            )
        out.append(number)
    return out, f"label {key}"


def check_count(job_ids: Sequence[str]) -> None:
    """Refuse a run of fewer than two jobs (naming the one there is)."""
    if len(job_ids) < 2:
        raise EnvloopError(
            f"a run needs at least two jobs (checkpoints) to follow over training, got "
            f"{len(job_ids)}{': ' + repr(job_ids[0]) if job_ids else ''}; one job: use its summary"
        )


def assemble(
    con: duckdb.DuckDBPyConnection,
    job_ids: Sequence[str],
    steps: Sequence[Step],
    *,
    step_from: str,
    name: str | None = None,
    strict: bool = True,
    policy: Policy = "unknown",
    threshold: float | None = None,
    solved_at: float = 0.5,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> RunState:
    """The checked, step-ordered run of these jobs (see the module docstring).

    Raises
    ------
    EnvloopError
        Fewer than two jobs, a job twice, two jobs on one step, or (``strict``) jobs that
        did not run the same frozen work — each message names the jobs.
    """
    ids = [str(j) for j in job_ids]
    check_count(ids)
    twice = sorted({j for j in ids if ids.count(j) > 1})
    if twice:
        raise EnvloopError(f"job(s) {', '.join(map(repr, twice))} given more than once")
    by_step: dict[Step, list[str]] = {}
    for job_id, step in zip(ids, steps, strict=True):
        by_step.setdefault(step, []).append(job_id)
    clashes = {s: js for s, js in by_step.items() if len(js) > 1}
    if clashes:
        said = "; ".join(f"{', '.join(map(repr, js))} all claim step {step_text(s)}"
                         for s, js in clashes.items())  # fmt: skip
        raise EnvloopError(f"two jobs on one step: {said} (one job per checkpoint)")
    order = sorted(range(len(ids)), key=lambda i: steps[i])
    ids = [ids[i] for i in order]
    ordered = tuple(steps[i] for i in order)
    found = find_differences(con, ids)
    if strict:
        frozen = [d for d in found if d.blocking and d.field in FROZEN]
        if frozen:
            raise EnvloopError(
                "these jobs did not run the same frozen work, so they are not one run: "
                + "; ".join(d.detail for d in frozen)
                + " (strict=False marks them instead)"
            )
    return RunState(
        con=con,
        job_ids=tuple(ids),
        steps=ordered,
        step_from=step_from,
        name=name,
        differences=tuple(found),
        policy=policy,
        threshold=threshold,
        solved_at=solved_at,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )


def mark(state: RunState) -> str:
    """The short mark every view of a run with blocking differences carries ('' if none)."""
    blocking = [d for d in state.differences if d.blocking]
    if not blocking:
        return ""
    more = len(blocking) - 1
    return f"⚠ not comparable: {blocking[0].detail}" + (f" (+{more} more)" if more else "")


def step_index(state: RunState, step: Step) -> int:
    """The position of ``step`` in the run, or an error naming the run's steps."""
    for i, s in enumerate(state.steps):
        if s == step:
            return i
    shown = ", ".join(step_text(s) for s in state.steps)
    raise EnvloopError(f"step {step!r} is not in this run (steps: {shown})")


def _setup(state: RunState, j: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """An lm-eval step's task versions and few-shot counts (its file's ``versions`` and
    ``n-shot`` / ``num_fewshot``), memoized on the state."""
    key = ("lm_eval_setup", j)
    if key not in state.data:
        row = state.con.execute(
            "SELECT platform_metrics, profile_params FROM jobs WHERE job_id = ?",
            [state.job_ids[j]],
        ).fetchone()
        found = [json.loads(v) if isinstance(v, str) else v or {} for v in row or (None, None)]
        versions, shots = found[0].get("versions"), found[1].get("num_fewshot")
        state.data[key] = (
            versions if isinstance(versions, dict) else {},
            shots if isinstance(shots, dict) else {},
        )
    setup: tuple[dict[str, Any], dict[str, Any]] = state.data[key]
    return setup


def setup_difference(state: RunState, a: int, b: int, group: str) -> str:
    """Why two results-only steps did not run the same lm-eval task ``group`` — its version
    or its number of few-shot examples differ, where both files state it — else ''."""
    (va, sa), (vb, sb) = _setup(state, a), _setup(state, b)
    said = []
    if group in va and group in vb and va[group] != vb[group]:
        said.append(f"version {va[group]!r} vs {vb[group]!r}")
    shot_a, shot_b = sa.get(group, sa.get("*")), sb.get(group, sb.get("*"))
    if shot_a is not None and shot_b is not None and shot_a != shot_b:
        said.append(f"{shot_a!r} vs {shot_b!r} few-shot examples")
    if not said:
        return ""
    steps = f"steps {step_text(state.steps[a])} and {step_text(state.steps[b])}"
    return f"{group} is not the same lm-eval task at {steps} ({', '.join(said)})"
