"""Harbor versions (issue 10, item 7): the version is read from the job folder, its
missing-reward rule is stored and stated, and the matching policy reproduces Harbor's
own ``result.json``.

Harbor's rule: before 0.26 a trial without a reward counts as 0 in ``mean`` and
``pass_at_k``; from 0.26 it is skipped. The shared fixtures carry no ``lock.json``, so
each version's folder is built here from ``2026-03-02__14-05-11`` (3 of its 30 trials
have no reward). :func:`harbor_numbers` is an independent re-implementation of Harbor's
aggregation (mean over trial results; pass@k averaged over tasks with the unbiased
per-task estimator as a float product; k = 2, 4, 8, ... and 5, 10, ... up to the fewest
trials of a task), with the skip rule as a switch. Without the switch it reproduces the
fixture's stored ``result.json`` bit for bit, which is what makes the 0.26 numbers it
writes for the 0.26 folders trustworthy.
"""

from __future__ import annotations

import json
import math
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders.harbor.version import missing_rule, summary_note
from envloop_nb._metrics.harbor import check
from envloop_nb._ui.overview import harbor_agreement_html
from tests.conftest import HARBOR, THREE_TASKS
from tests.test_loaders_envloop import load_job

CURRENT = HARBOR / "2026-03-02__14-05-11"
MULTIKEY = HARBOR / "2026-03-03__09-00-00-multikey"
LEGACY = HARBOR / "2025-10-01__10-00-00-legacy"


# -- Harbor's aggregation, re-implemented -----------------------------------------------


def _trial_rewards(folder: Path) -> list[tuple[str, dict[str, float] | None]]:
    out = []
    for sub in sorted(p for p in folder.iterdir() if (p / "result.json").is_file()):
        trial = json.loads((sub / "result.json").read_text())
        vr = trial["verifier_result"]
        if vr is None:
            rewards = None
        elif "rewards" in vr:
            rewards = vr["rewards"]
        else:  # sandboxes layout
            rewards = None if vr["reward"] is None else {"reward": vr["reward"]}
        out.append((trial["task_name"], rewards))
    return out


def _ks(fewest: int) -> list[int]:
    ks = {k for k in (2**i for i in range(1, 12)) if k <= fewest}
    ks |= set(range(5, fewest + 1, 5))
    return sorted(ks)


def _task_pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product


def _exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def harbor_numbers(folder: Path, *, skip: bool) -> dict[str, Any]:
    """``metrics`` and ``pass_at_k`` as Harbor writes them (``skip``: the 0.26 rule), and
    the exact rational pass@k beside them."""
    trials = _trial_rewards(folder)
    kept = [(t, r) for t, r in trials if r is not None] if skip else trials
    keys = sorted({key for _, r in kept if r for key in r})
    if len(keys) <= 1:
        values = [0 if r is None else next(iter(r.values())) for _, r in kept]
        metrics = {"mean": sum(values) / len(values)}
    else:
        metrics = {
            key: sum(0 if r is None else r.get(key, 0) for _, r in kept) / len(kept) for key in keys
        }
    successes: dict[str, list[int]] = {}
    binary = True
    for task, r in kept:
        if r is not None and (len(r) != 1 or next(iter(r.values())) not in (0, 1)):
            binary = False
        successes.setdefault(task, []).append(0 if r is None else int(next(iter(r.values()))))
    pass_at_k: dict[str, float] = {}
    exact: dict[int, Fraction] = {}
    if binary:
        for k in _ks(min(len(s) for s in successes.values())):
            per_task = [(len(s), sum(s)) for s in successes.values()]
            pass_at_k[str(k)] = sum(_task_pass_at_k(n, c, k) for n, c in per_task) / len(per_task)
            exact[k] = sum((_exact_pass_at_k(n, c, k) for n, c in per_task), Fraction(0)) / len(
                per_task
            )
    return {"metrics": metrics, "pass_at_k": pass_at_k, "exact": exact}


def _eval_block(folder: Path) -> dict[str, Any]:
    (block,) = json.loads((folder / "result.json").read_text())["stats"]["evals"].values()
    return block


def build(tmp: Path, source: Path, version: str | None, *, rule: str) -> Path:
    """A copy of ``source`` written by Harbor ``version`` (a ``lock.json`` unless None),
    its ``result.json`` numbers following ``rule`` ("skipped" or "counted as 0")."""
    folder = tmp / f"{source.name}-{version or 'nolock'}-{rule.replace(' ', '')}"
    shutil.copytree(source, folder)
    if version is not None:
        lock = {
            "schema_version": 3,
            "created_at": "2026-03-02T14:05:11Z",
            "harbor": {"version": version, "git_commit_hash": None, "is_editable": False},
            "n_concurrent_trials": 8,
            "retry": {"max_retries": 0},
            "trials": [],
        }
        (folder / "lock.json").write_text(json.dumps(lock))
    result = json.loads((folder / "result.json").read_text())
    (block,) = result["stats"]["evals"].values()
    numbers = harbor_numbers(folder, skip=rule == "skipped")
    block["metrics"] = [numbers["metrics"]]
    block["pass_at_k"] = numbers["pass_at_k"]
    (folder / "result.json").write_text(json.dumps(result, indent=4))
    return folder


# -- the re-implementation is Harbor's ---------------------------------------------------


@pytest.mark.parametrize("folder", [CURRENT, MULTIKEY, LEGACY], ids=lambda p: p.name)
def test_reimplementation_reproduces_the_stored_result_json_bit_for_bit(folder: Path) -> None:
    block = _eval_block(folder)
    numbers = harbor_numbers(folder, skip=False)
    assert [numbers["metrics"]] == block["metrics"]
    if folder != LEGACY:  # the sandboxes-era result.json predates pass_at_k
        assert numbers["pass_at_k"] == block["pass_at_k"]


# -- one folder per version --------------------------------------------------------------

VERSIONS = [
    # version, rule its result.json follows, the policy that reproduces it
    ("0.22.0", "counted as 0", "failure"),
    ("0.25.4", "counted as 0", "failure"),
    ("0.26.0", "skipped", "unknown"),
    ("0.27.1", "skipped", "unknown"),
]


@pytest.mark.parametrize(("version", "rule", "policy"), VERSIONS)
def test_version_is_detected_and_its_policy_reproduces_result_json(
    ws: enb.Workspace, tmp_path: Path, version: str, rule: str, policy: str
) -> None:
    folder = build(tmp_path, CURRENT, version, rule=rule)
    job = load_job(ws, folder)
    assert job.info["extra"]["harbor"] == {
        "version": version,
        "version_source": "lock.json",
        "git_commit_hash": None,
        "is_editable": False,
        "missing_reward_rule": rule,
        "policy": policy,
    }
    block = _eval_block(folder)
    exact = harbor_numbers(folder, skip=rule == "skipped")["exact"]

    s = job.summary(policy=policy)
    assert s.score == block["metrics"][0]["mean"]  # bit for bit
    ks = [int(k) for k in block["pass_at_k"]]
    assert ks == ([2, 4] if rule == "skipped" else [2, 4, 5])  # 4 rewarded trials at least
    curve = job.curve(ks=ks, policy=policy)
    for k, ours in zip(curve["k"].tolist(), curve["pass@k"].tolist(), strict=True):
        theirs = block["pass_at_k"][str(k)]
        # Harbor's float product can miss the exact value by an ulp (0.7999999999999999
        # for 4/5); ours is the exact rational rounded once.
        assert abs(ours - float(exact[k])) <= 1e-15 and abs(ours - theirs) <= 1e-15

    other = "unknown" if policy == "failure" else "failure"
    assert job.summary(policy=other).score != block["metrics"][0]["mean"]

    c = check(job)
    assert c is not None and c.policy == policy and c.matches == (policy,) and c.agrees
    assert c.checked == 1 + len(ks)
    assert c.verdict().startswith(
        f"Harbor's result.json numbers agree with the recomputed ones under policy='{policy}' "
        f"(Harbor {version}: trials without a reward "
    )
    assert "platform-mismatch" not in job.diagnose().codes()
    html = harbor_agreement_html(c)
    assert "✓" in html and f"policy=&#x27;{policy}&#x27;" in html


@pytest.mark.parametrize(("version", "rule", "policy"), VERSIONS)
def test_summary_states_the_rule(
    ws: enb.Workspace, tmp_path: Path, version: str, rule: str, policy: str
) -> None:
    job = load_job(ws, build(tmp_path, CURRENT, version, rule=rule))
    if rule == "skipped":
        note = (
            f"Harbor {version} (0.26+): trials without a reward are skipped, not counted as 0 "
            "(policy='unknown' reproduces its result.json)"
        )
    else:
        note = (
            f"Harbor {version}: trials without a reward count as 0 "
            "(policy='failure' reproduces its result.json)"
        )
    for p in ("unknown", "failure"):  # the note is about Harbor's rule, whatever the policy
        s = job.summary(policy=p)
        assert s.note == note
        assert s.to_dict()["note"] == note
        assert str(s) == f"score {s.score * 100:.1f}% · {s.coverage_text}\n{note}"
        assert note.replace("'", "&#x27;") in s._repr_html_()


def test_multikey_rewards_under_both_rules(ws: enb.Workspace, tmp_path: Path) -> None:
    old = load_job(ws, build(tmp_path, MULTIKEY, "0.24.0", rule="counted as 0"), job_id="old")
    new = load_job(ws, build(tmp_path, MULTIKEY, "0.26.2", rule="skipped"), job_id="new")
    assert _eval_block(Path(old.info["source_path"]))["metrics"] == [
        {"reward": 0.75, "style": 0.5416666666666666}
    ]
    assert _eval_block(Path(new.info["source_path"]))["metrics"] == [{"reward": 0.9, "style": 0.65}]
    for job, policy in ((old, "failure"), (new, "unknown")):
        c = check(job)
        assert c is not None
        assert set(c.platform) == {"mean[reward]", "mean[style]"}  # no pass@k: non-binary
        assert c.matches == (policy,) and c.agrees
        assert c.recomputed[policy]["mean[reward]"] == job.summary(policy=policy).score


def test_result_json_that_breaks_its_versions_rule_is_flagged(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    # lock.json says 0.26.0, but the numbers count the missing rewards as 0.
    folder = build(tmp_path, CURRENT, "0.26.0", rule="counted as 0")
    job = load_job(ws, folder)
    c = check(job)
    assert c is not None and c.policy == "unknown" and c.matches == ("failure",)
    assert not c.agrees
    assert c.diffs("unknown")["mean"] == (0.5, 15 / 27)
    (finding,) = [f for f in job.diagnose() if f.code == "platform-mismatch"]
    assert finding.severity == "error"
    assert finding.numbers["policy"] == "unknown" and finding.numbers["matches"] == ["failure"]
    assert finding.evidence.startswith(
        "Harbor's result.json numbers disagree with the recomputed ones under "
        "policy='unknown' (Harbor 0.26.0: trials without a reward are skipped); they match "
        "policy='failure' instead. 4 value(s) differ: mean: Harbor 0.5 vs recomputed 0.555556;"
    )
    html = harbor_agreement_html(c)
    assert "✗" in html and "mean: Harbor 0.5, recomputed 0.5555555555555556" in html


# -- folders that do not say their version -----------------------------------------------


def test_no_lock_json_means_the_version_is_unknown(ws: enb.Workspace) -> None:
    job = load_job(ws, CURRENT)
    harbor = job.info["extra"]["harbor"]
    assert harbor == {
        "version": None,
        "version_source": None,
        "missing_reward_rule": "unknown",
        "policy": None,
    }
    assert job.summary().note == (
        "Harbor version unknown: before 0.26 its result.json counts a trial without a "
        "reward as 0 (policy='failure' reproduces it), from 0.26 it skips them "
        "(policy='unknown')"
    )
    c = check(job)
    assert c is not None and c.policy is None and c.matches == ("failure",) and c.agrees
    assert c.verdict() == (
        "Harbor's result.json numbers agree with the recomputed ones under policy='failure' "
        "(Harbor version unknown; this is the rule of Harbor before 0.26)"
    )
    # Neither rule reproduces an edited file: then it is flagged.
    assert "platform-mismatch" not in job.diagnose().codes()


def test_unknown_version_and_edited_numbers_are_flagged(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(CURRENT, folder)
    result = json.loads((folder / "result.json").read_text())
    (block,) = result["stats"]["evals"].values()
    block["metrics"] = [{"mean": 0.9}]
    (folder / "result.json").write_text(json.dumps(result))
    job = load_job(ws, folder)
    c = check(job)
    assert c is not None and c.matches == () and not c.agrees
    assert "neither policy reproduces it" in c.verdict()
    assert "platform-mismatch" in job.diagnose().codes()


def test_legacy_layouts_date_the_folder_before_026(ws: enb.Workspace, tmp_path: Path) -> None:
    job = load_job(ws, LEGACY)
    harbor = job.info["extra"]["harbor"]
    assert harbor == {
        "version": None,
        "version_source": "sandboxes layout: verifier_result.reward",
        "missing_reward_rule": "counted as 0",
        "policy": "failure",
    }
    assert job.summary().note == (
        "Harbor before 0.26 (sandboxes layout: verifier_result.reward): trials without a "
        "reward count as 0 (policy='failure' reproduces its result.json)"
    )
    c = check(job)
    assert c is not None and c.agrees and c.matches == ("failure", "unknown")  # none missing

    # The current trial layout with the old stats rollup (n_trials / n_errors).
    folder = tmp_path / "old-stats"
    shutil.copytree(CURRENT, folder)
    result = json.loads((folder / "result.json").read_text())
    stats = result["stats"]
    stats["n_trials"] = stats.pop("n_completed_trials")
    stats["n_errors"] = stats.pop("n_errored_trials")
    (folder / "result.json").write_text(json.dumps(result))
    harbor = load_job(ws, folder).info["extra"]["harbor"]
    assert harbor["version_source"] == "stats layout: stats.n_trials, before 0.13"
    assert (harbor["missing_reward_rule"], harbor["policy"]) == ("counted as 0", "failure")


def test_lock_json_wins_over_the_layout(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(LEGACY, folder)
    (folder / "lock.json").write_text(json.dumps({"harbor": {"version": "0.26.0"}}))
    harbor = load_job(ws, folder).info["extra"]["harbor"]
    assert (harbor["version"], harbor["version_source"], harbor["policy"]) == (
        "0.26.0",
        "lock.json",
        "unknown",
    )


def test_lock_json_without_a_version(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(CURRENT, folder)
    (folder / "lock.json").write_text(json.dumps({"schema_version": 3, "trials": []}))
    harbor = load_job(ws, folder).info["extra"]["harbor"]
    assert (harbor["version"], harbor["missing_reward_rule"]) == (None, "unknown")


def test_unreadable_lock_json_is_refused(ws: enb.Workspace, tmp_path: Path) -> None:
    load_job(ws, THREE_TASKS)
    before = ws.jobs()["job_id"].tolist()
    folder = tmp_path / "job"
    shutil.copytree(CURRENT, folder)
    (folder / "lock.json").write_text('{"harbor": {"version": "0.26')
    with pytest.raises(
        enb.LoadError, match=r"lock\.json, line 1: not valid JSON .*expected Harbor's JobLock"
    ):
        ws.load(folder)
    assert ws.jobs()["job_id"].tolist() == before


def test_other_formats_carry_no_note(ws: enb.Workspace) -> None:
    job = load_job(ws, THREE_TASKS)
    assert job.summary().note is None and job.summary().to_dict()["note"] is None
    assert check(job) is None


@pytest.mark.parametrize(
    ("version", "rule"),
    [
        ("0.26.0", "skipped"),
        ("0.26.3", "skipped"),
        ("v0.26.0", "skipped"),
        ("1.2.0", "skipped"),
        ("0.25.9", "counted as 0"),
        ("0.22.0", "counted as 0"),
        ("0.13.1", "counted as 0"),
        ("0.26.0rc1", "unknown"),  # a pre-release of 0.26.0 may predate the change
        ("0.26.0.dev3", "unknown"),
        ("0.26.1.dev1", "skipped"),
        ("0.25.0rc1", "counted as 0"),
        ("nightly", "unknown"),
        (None, "unknown"),
    ],
)
def test_missing_rule_by_version(version: str | None, rule: str) -> None:
    assert missing_rule(version) == rule
    note = summary_note({"version": version, "missing_reward_rule": rule})
    assert ("skipped, not counted as 0" in note) == (rule == "skipped")
