"""Which Harbor version wrote a job folder and which missing-reward rule its
``result.json`` follows: pure functions of the parsed ``lock.json``, job result and trials
(no DuckDB), used by the loader to store ``jobs.extra["harbor"]``.

The version: Harbor writes ``lock.json`` at the job root (its ``JobLock``:
``harbor: {version, git_commit_hash, is_editable}``); that version decides the rule.
Without it, only the older layouts date a folder: the ``sandboxes``-era trial reward
``verifier_result: {"reward": x}`` or a job ``stats`` rollup with ``n_trials`` (renamed
``n_completed_trials`` in Harbor 0.13) are both before 0.26, so they count as 0.
Otherwise the version, and with it the rule, is unknown. The check of Harbor's own numbers
against the recomputed ones is :mod:`envloop_nb._metrics.harbor`.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "POLICY_OF_RULE",
    "RULE_SKIPPED",
    "RULE_UNKNOWN",
    "RULE_ZERO",
    "SKIPPED_FROM",
    "detect_version",
    "missing_rule",
    "summary_note",
]

#: The first Harbor release whose ``result.json`` skips trials without a reward.
SKIPPED_FROM = (0, 26)

RULE_SKIPPED = "skipped"
RULE_ZERO = "counted as 0"
RULE_UNKNOWN = "unknown"
#: The policy that reproduces a rule's result.json.
POLICY_OF_RULE = {RULE_SKIPPED: "unknown", RULE_ZERO: "failure"}

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?(.*)$")


def missing_rule(version: str | None) -> str:
    """The missing-reward rule of a Harbor version string.

    A pre-release of 0.26.0 itself (``0.26.0rc1``, ``0.26.0.dev2``) may predate the
    change, so its rule is unknown.

    Examples
    --------
    >>> missing_rule("0.26.0"), missing_rule("0.25.3"), missing_rule("1.0.0")
    ('skipped', 'counted as 0', 'skipped')
    >>> missing_rule("0.26.0rc1"), missing_rule(None), missing_rule("main")
    ('unknown', 'unknown', 'unknown')
    """
    if version is None:
        return RULE_UNKNOWN
    m = _VERSION.match(version)
    if m is None:
        return RULE_UNKNOWN
    minor = (int(m.group(1)), int(m.group(2)))
    patch = int(m.group(3) or 0)
    suffix = m.group(4).strip().lower()
    if minor == SKIPPED_FROM and patch == 0 and re.search(r"(a|b|rc|dev|pre)\d*", suffix):
        return RULE_UNKNOWN
    return RULE_SKIPPED if minor >= SKIPPED_FROM else RULE_ZERO


def _lock_info(lock: Any) -> dict[str, Any]:
    harbor = lock.get("harbor") if isinstance(lock, dict) else None
    if not isinstance(harbor, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(harbor.get("version"), str) and harbor["version"].strip():
        out["version"] = harbor["version"].strip()
    for key in ("git_commit_hash", "is_editable"):
        if key in harbor:
            out[key] = harbor[key]
    return out


def detect_version(
    lock: Any, job_result: dict[str, Any] | None, *, legacy_reward: bool
) -> dict[str, Any]:
    """The job's Harbor version facts, stored in ``jobs.extra["harbor"]``.

    ``lock`` is the parsed ``lock.json`` (None when the folder has none);
    ``legacy_reward``: whether a finished trial has the ``sandboxes``-era reward
    ``verifier_result: {"reward": x}`` (without ``rewards``). Keys:
    ``version`` (or None), ``version_source`` (where it comes from: ``"lock.json"``,
    a legacy layout, or None), ``missing_reward_rule`` (``"skipped"``, ``"counted as
    0"`` or ``"unknown"``) and ``policy`` (the policy that reproduces ``result.json``:
    ``"unknown"``, ``"failure"`` or None when the rule is unknown); ``git_commit_hash``
    and ``is_editable`` when ``lock.json`` has them.

    Examples
    --------
    >>> detect_version({"harbor": {"version": "0.26.1"}}, None, legacy_reward=False)["policy"]
    'unknown'
    >>> info = detect_version(None, None, legacy_reward=True)
    >>> info["missing_reward_rule"], info["policy"], info["version"]
    ('counted as 0', 'failure', None)
    >>> detect_version(None, None, legacy_reward=False)["missing_reward_rule"]
    'unknown'
    """
    info: dict[str, Any] = {"version": None, "version_source": None}
    from_lock = _lock_info(lock)
    if from_lock.get("version"):
        info.update(from_lock, version_source="lock.json")
        rule = missing_rule(info["version"])
    else:
        info.update({k: v for k, v in from_lock.items() if k != "version"})
        rule = RULE_UNKNOWN
        stats = (job_result or {}).get("stats")
        if legacy_reward:
            info["version_source"] = "sandboxes layout: verifier_result.reward"
            rule = RULE_ZERO
        elif isinstance(stats, dict) and "n_trials" in stats and "n_completed_trials" not in stats:
            info["version_source"] = "stats layout: stats.n_trials, before 0.13"
            rule = RULE_ZERO
    info["missing_reward_rule"] = rule
    info["policy"] = POLICY_OF_RULE.get(rule)
    return info


def summary_note(harbor: dict[str, Any] | None) -> str:
    """The sentence ``job.summary()`` of a Harbor job carries (``JobSummary.note``).

    Examples
    --------
    >>> summary_note({"version": "0.26.1", "version_source": "lock.json",
    ...               "missing_reward_rule": "skipped", "policy": "unknown"})
    "Harbor 0.26.1 (0.26+): trials without a reward are skipped, not counted as 0 (policy='unknown' reproduces its result.json)"
    >>> print(summary_note(None))
    Harbor version unknown: before 0.26 its result.json counts a trial without a reward as 0 (policy='failure' reproduces it), from 0.26 it skips them (policy='unknown')
    """
    harbor = harbor or {}
    rule = harbor.get("missing_reward_rule", RULE_UNKNOWN)
    version = harbor.get("version")
    if rule == RULE_SKIPPED:
        return (
            f"Harbor {version} (0.26+): trials without a reward are skipped, not counted "
            "as 0 (policy='unknown' reproduces its result.json)"
        )
    if rule == RULE_ZERO:
        where = (
            f"Harbor {version}" if version else f"Harbor before 0.26 ({harbor['version_source']})"
        )
        return (
            f"{where}: trials without a reward count as 0 (policy='failure' reproduces "
            "its result.json)"
        )
    what = f"Harbor {version}, rule unknown" if version else "Harbor version unknown"
    return (
        f"{what}: before 0.26 its result.json counts a trial without a reward as 0 "
        "(policy='failure' reproduces it), from 0.26 it skips them (policy='unknown')"
    )
