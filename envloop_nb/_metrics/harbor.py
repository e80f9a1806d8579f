"""Which Harbor version wrote a job folder, which missing-reward rule its ``result.json``
follows, and whether Harbor's own numbers agree with the recomputed ones.

Harbor's job ``result.json`` holds, per ``stats.evals["<agent>__<model>__<dataset>"]``,
``metrics: [{"mean": x}]`` (``{key: x}`` per reward key when trials report several) and
``pass_at_k: {"2": .., "4": ..}`` (k = 2, 4, 8, ... and 5, 10, ... up to the fewest
trials of a task; only when every reward is a single 0/1 value). The two rules:

* **before 0.26** — a trial without a reward (``verifier_result`` null, e.g.
  ``RewardFileNotFoundError``) **counts as 0**: in the mean it is a 0 over all trials,
  in pass@k a failed trial of its task. ``policy="failure"`` reproduces this.
* **0.26 and later** — a trial without a valid reward is **skipped**: the mean is over
  the trials that have one, pass@k over each task's rewarded trials.
  ``policy="unknown"`` reproduces this.

The version: Harbor writes ``lock.json`` at the job root (its ``JobLock``:
``harbor: {version, git_commit_hash, is_editable}``); that version decides the rule.
Without it, only the older layouts date a folder: the ``sandboxes``-era trial reward
``verifier_result: {"reward": x}`` or a job ``stats`` rollup with ``n_trials`` (renamed
``n_completed_trials`` in Harbor 0.13) are both before 0.26, so they count as 0.
Otherwise the version, and with it the rule, is unknown; :func:`check` then reports which
policy, if any, reproduces the folder's ``result.json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._loaders.harbor.version import SKIPPED_FROM, detect_version, missing_rule, summary_note
from .._store.ref import job_info, job_k
from .._types import Policy
from .passk_views import curve
from .summary import job_summary

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = [
    "SKIPPED_FROM",
    "HarborCheck",
    "check",
    "detect_version",
    "missing_rule",
    "summary_note",
]

# -- agreement with Harbor's own numbers ---------------------------------------------------


@dataclass(frozen=True)
class HarborCheck:
    """Harbor's ``result.json`` numbers beside the recomputed ones under both policies.

    ``platform`` maps ``"mean"`` (or ``"mean[<key>]"`` per reward key) and ``"pass@<k>"``
    to Harbor's value; ``recomputed[policy]`` holds ours under that policy; ``matches``
    lists the policies under which every value agrees. ``policy`` is the policy of the
    detected version (None when the version's rule is unknown).
    """

    harbor: dict[str, Any]
    policy: Policy | None
    platform: dict[str, float]
    recomputed: dict[str, dict[str, float | None]] = field(default_factory=dict)
    matches: tuple[Policy, ...] = ()
    tol: float = 1e-9

    @property
    def checked(self) -> int:
        """How many of Harbor's values were compared."""
        return len(self.platform)

    @property
    def agrees(self) -> bool:
        """Harbor's numbers equal ours under the detected version's policy (or, when the
        rule is unknown, under some policy)."""
        if not self.platform:
            return True
        return self.policy in self.matches if self.policy else bool(self.matches)

    @property
    def compared_policy(self) -> Policy:
        """The version's policy; when unknown, the one that matches (else ``"failure"``)."""
        if self.policy:
            return self.policy
        return self.matches[0] if self.matches else "failure"

    def verdict(self) -> str:
        """One sentence: do Harbor's numbers agree, under which policy and why that one.

        Examples
        --------
        >>> c = HarborCheck({"version": "0.26.0", "missing_reward_rule": "skipped"},
        ...                 "unknown", {"mean": 0.5}, matches=("failure",))
        >>> c.agrees
        False
        >>> print(c.verdict())
        Harbor's result.json numbers disagree with the recomputed ones under policy='unknown' (Harbor 0.26.0: trials without a reward are skipped); they match policy='failure' instead
        """
        if not self.platform:
            return "Harbor's result.json carries no mean or pass@k to compare with"
        policy = self.compared_policy
        version = self.harbor.get("version")
        if self.policy == "unknown":
            why = f"Harbor {version}: trials without a reward are skipped"
        elif self.policy == "failure":
            who = f"Harbor {version}" if version else "Harbor before 0.26"
            why = f"{who}: trials without a reward count as 0"
        elif len(self.matches) == 2:
            why = "Harbor version unknown; no trial lacks a reward, so both policies agree"
        elif self.matches:
            era = "before 0.26" if policy == "failure" else "0.26 and later"
            why = f"Harbor version unknown; this is the rule of Harbor {era}"
        else:
            why = "Harbor version unknown; neither policy reproduces it"
        verb = "agree" if self.agrees else "disagree"
        text = (
            f"Harbor's result.json numbers {verb} with the recomputed ones under "
            f"policy='{policy}' ({why})"
        )
        other = [p for p in self.matches if p != policy]
        if not self.agrees and other:
            text += f"; they match policy='{other[0]}' instead"
        return text

    def diffs(self, policy: Policy) -> dict[str, tuple[float, float | None]]:
        """``{key: (harbor, recomputed)}`` for each value that differs under ``policy``."""
        ours = self.recomputed.get(policy, {})
        return {
            key: (theirs, ours.get(key))
            for key, theirs in self.platform.items()
            if not _same(theirs, ours.get(key), self.tol)
        }


def _same(theirs: float, mine: float | None, tol: float) -> bool:
    # Harbor sums floats in trial order and forms pass@k as a product, so its last
    # digits can differ from the correctly rounded values (0.7999999999999999 for 0.8).
    return mine is not None and math.isclose(theirs, mine, rel_tol=tol, abs_tol=tol)


def _platform_numbers(stats: Any, key: str | None = None) -> dict[str, float]:
    """Harbor's mean(s) and pass@k of the job's eval block, flat.

    ``key`` names the block (``"<agent>__<model>__<dataset>"``) of a job loaded as one
    combination of a several-agent folder; without it the job's one block (none when
    there are several).
    """
    evals = stats.get("evals") if isinstance(stats, dict) else None
    if not isinstance(evals, dict):
        return {}
    if key is not None:
        block = evals.get(key)
    elif len(evals) == 1:
        (block,) = evals.values()
    else:
        return {}
    if not isinstance(block, dict):
        return {}
    out: dict[str, float] = {}
    metrics = block.get("metrics") or []
    first = metrics[0] if isinstance(metrics, list) and metrics else None
    if isinstance(first, dict):
        if set(first) == {"mean"}:
            out["mean"] = first["mean"]
        else:  # one value per reward key
            out.update({f"mean[{key}]": value for key, value in first.items()})
    pass_at_k = block.get("pass_at_k") or {}
    if isinstance(pass_at_k, dict):
        for k, value in pass_at_k.items():
            if str(k).isdigit():
                out[f"pass@{int(k)}"] = value
    return {
        key: float(v)
        for key, v in out.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }


def _recompute(ref: JobRef, keys: list[str], policy: Policy) -> dict[str, float | None]:
    con, job_id = ref.con, ref.id
    out: dict[str, float | None] = {}
    if "mean" in keys:
        out["mean"] = job_summary(con, job_id, policy=policy).score
    dim_keys = [key[5:-1] for key in keys if key.startswith("mean[")]
    if dim_keys:
        row = con.execute("SELECT count(*) FROM tasks WHERE job_id = ?", [job_id]).fetchone()
        total = job_k(con, job_id) * int(row[0] if row else 0)
        for name in dim_keys:
            values = [
                float(v)
                for (v,) in con.execute(
                    """SELECT value FROM dimensions
                       WHERE job_id = ? AND name = ? AND value IS NOT NULL
                       ORDER BY task, attempt""",
                    [job_id, name],
                ).fetchall()
                if v == v  # NaN counts as missing, like pandas' dropna
            ]
            denominator = total if policy == "failure" else len(values)
            out[f"mean[{name}]"] = math.fsum(values) / denominator if denominator else None
    ks = sorted(int(key[5:]) for key in keys if key.startswith("pass@"))
    if ks:
        points = curve(con, job_id, ks=ks, policy=policy)
        for k, value in zip(points["k"].tolist(), points["pass@k"].tolist(), strict=True):
            out[f"pass@{int(k)}"] = None if value is None or value != value else float(value)
    return out


def check(job: JobRef, tol: float = 1e-9) -> HarborCheck | None:
    """Compare a Harbor job's ``result.json`` numbers with the recomputed ones.

    None for a job that is not a Harbor folder. A job loaded as one (agent, model,
    dataset) combination of a folder (``extra["split"]``) is compared with that
    combination's ``stats.evals`` entry only. Values agree within ``tol`` (relative
    and absolute). Under each policy the mean is the
    summary's score (a reward key's mean over the dimension values: over all k slots
    under ``"failure"``, over the trials with that key under ``"unknown"``), pass@k the
    curve's value at Harbor's k.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/fixtures/harbor/2026-03-02__14-05-11")
    >>> c = check(job)
    >>> c.policy, c.matches, c.checked   # no lock.json: the version is unknown
    (None, ('failure',), 4)
    >>> c.diffs("unknown")["mean"]
    (0.5, 0.5555555555555556)
    """
    info = job_info(job.con, job.id)
    if info.get("source_format") != "harbor":
        return None
    extra = info.get("extra") or {}
    harbor = extra.get("harbor") if isinstance(extra, dict) else None
    harbor = harbor if isinstance(harbor, dict) else {}
    policy = harbor.get("policy")
    split = extra.get("split") if isinstance(extra, dict) else None
    key = split.get("evals_key") if isinstance(split, dict) else None
    platform = _platform_numbers(
        info.get("platform_metrics"), key if isinstance(key, str) else None
    )
    keys = list(platform)
    recomputed: dict[str, dict[str, float | None]] = {}
    matches: list[Policy] = []
    if platform:
        policies: tuple[Policy, ...] = ("failure", "unknown")
        for pol in policies:
            recomputed[pol] = _recompute(job, keys, pol)
            if all(_same(v, recomputed[pol].get(key), tol) for key, v in platform.items()):
                matches.append(pol)
    return HarborCheck(
        harbor=harbor,
        policy=policy if policy in ("unknown", "failure") else None,
        platform=platform,
        recomputed=recomputed,
        matches=tuple(matches),
        tol=tol,
    )
