"""A Harbor job folder that ran several agents: one envloop_nb job per combination.

Fixture: ``tests/data/harbor_multi/`` (written by its ``make_fixture.py``): 2 agents x
1 dataset, 3 tasks x 2 attempts each.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._loaders.harbor.job import evals_key, harbor_splits
from envloop_nb._metrics.harbor import check
from tests.conftest import HARBOR
from tests.test_loaders_envloop import load_job

MULTI = Path(__file__).resolve().parent / "data" / "harbor_multi" / "2026-03-04__10-00-00"
SINGLE = HARBOR / "2026-03-02__14-05-11"
CLAUDE = ("claude-code", "anthropic/claude-sonnet-4-5", "terminal-bench")
TERMINUS = ("terminus-2", "openai/gpt-5", "terminal-bench")


def _result() -> dict:
    return json.loads((MULTI / "result.json").read_text())


def _trials_of(agent: str) -> set[str]:
    return {
        p.name
        for p in MULTI.iterdir()
        if p.is_dir() and json.loads((p / "result.json").read_text())["agent_info"]["name"] == agent
    }


def test_splits_of_a_several_agent_folder_and_of_a_single_one() -> None:
    assert harbor_splits(MULTI) == [CLAUDE, TERMINUS]
    assert harbor_splits(SINGLE) == [
        ("claude-code", "anthropic/claude-sonnet-4-5", "terminal-bench")
    ]


def test_splits_cross_agents_with_datasets_and_drop_repeats(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    config = {
        "job_name": "job",
        "n_attempts": 1,
        "agents": [
            {"name": "a", "model_name": "p/m"},
            {"name": "b", "model_name": None},
            {"name": "a", "model_name": "p/m"},  # the same agent twice: one job
        ],
        "datasets": [{"name": "d1", "version": "1"}, {"path": "tasks/local-set"}],
    }
    (folder / "config.json").write_text(json.dumps(config))
    assert harbor_splits(folder) == [
        ("a", "p/m", "d1"),
        ("a", "p/m", "local-set"),
        ("b", None, "d1"),
        ("b", None, "local-set"),
    ]
    del config["datasets"]  # tasks without a dataset
    (folder / "config.json").write_text(json.dumps(config))
    assert harbor_splits(folder) == [("a", "p/m", None), ("b", None, None)]


def test_evals_key_is_harbors() -> None:
    assert evals_key(*CLAUDE) == "claude-code__claude-sonnet-4-5__terminal-bench"
    assert evals_key("oracle", None, None) == "oracle__adhoc"
    assert set(_result()["stats"]["evals"]) == {evals_key(*CLAUDE), evals_key(*TERMINUS)}


def test_several_combinations_refused_naming_them_and_load_all(ws: enb.Workspace) -> None:
    with pytest.raises(enb.LoadError) as info:
        ws.load(MULTI)
    message = str(info.value)
    assert "ws.load_all(path)" in message
    assert "agent=" in message
    for agent, model, _ in (CLAUDE, TERMINUS):
        assert repr(agent) in message and repr(model) in message
    assert ws.con.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


def test_a_choice_that_matches_nothing_is_refused(ws: enb.Workspace) -> None:
    with pytest.raises(enb.LoadError, match="matches none"):
        ws.load(MULTI, agent="codex")
    with pytest.raises(enb.LoadError, match="matches 2"):
        ws.load(MULTI, dataset="terminal-bench")


@pytest.mark.parametrize("split", [CLAUDE, TERMINUS], ids=lambda s: s[0])
def test_each_agent_loads_as_its_own_job(ws: enb.Workspace, split: tuple) -> None:
    agent, model, dataset = split
    result = _result()
    job = load_job(ws, MULTI, agent=agent)
    assert job.id == f"{result['id']}/{agent}/{model}/{dataset}"
    assert job.k == 2
    info = job.info
    assert info["model"] == model
    assert info["dataset_name"] == dataset
    assert info["dataset_version"] == "2.0"
    assert info["extra"]["agent"]["name"] == agent
    key = evals_key(*split)
    assert info["extra"]["split"] == {
        "agent": agent,
        "model": model,
        "dataset": dataset,
        "evals_key": key,
        "combinations": 2,
    }
    stats = result["stats"]
    assert info["platform_metrics"] == stats | {"evals": {key: stats["evals"][key]}}
    attempts = job.attempts()
    assert set(attempts["source_place"]) == _trials_of(agent)
    assert len(attempts) == 6
    assert sorted(job.tasks()["task"]) == ["fix-git", "hello-world", "regex-log"]
    block = stats["evals"][key]
    assert job.summary(policy="failure").score == pytest.approx(block["metrics"][0]["mean"])
    curve = job.curve(ks=[2], policy="failure")
    assert curve["pass@k"].tolist() == pytest.approx([block["pass_at_k"]["2"]])
    harbor = check(job)
    assert harbor is not None
    assert harbor.platform == {
        "mean": block["metrics"][0]["mean"],
        "pass@2": block["pass_at_k"]["2"],
    }
    assert "failure" in harbor.matches and harbor.agrees


def test_both_agents_side_by_side_and_by_model(ws: enb.Workspace) -> None:
    claude = load_job(ws, MULTI, agent="claude-code")
    terminus = load_job(ws, MULTI, model="gpt-5")  # the model without its provider
    assert claude.id != terminus.id
    assert terminus.info["model"] == "openai/gpt-5"
    assert claude.summary(policy="failure").score == pytest.approx(0.5)
    assert terminus.summary(policy="failure").score == pytest.approx(1 / 3)
    # the missing reward is terminus-2's: only its check tells the policies apart
    tc, cc = check(terminus), check(claude)
    assert tc is not None and cc is not None
    assert tc.matches == ("failure",)
    assert cc.matches == ("failure", "unknown")
    assert {r[0] for r in ws.con.execute("SELECT job_id FROM jobs").fetchall()} == {
        claude.id,
        terminus.id,
    }


def test_explicit_job_id_and_a_job_without_result_json(ws: enb.Workspace, tmp_path: Path) -> None:
    job = load_job(ws, MULTI, agent="terminus-2", job_id="mine")
    assert job.id == "mine"
    folder = tmp_path / "2026-03-04__10-00-00"
    shutil.copytree(MULTI, folder)
    (folder / "result.json").unlink()
    job = load_job(ws, folder, agent="claude-code", model="anthropic/claude-sonnet-4-5")
    assert job.id == "2026-03-04__10-00-00/claude-code/anthropic/claude-sonnet-4-5/terminal-bench"
    assert job.info["platform_metrics"] is None
    harbor = check(job)
    assert harbor is not None and harbor.platform == {}


def test_a_running_trial_is_matched_by_its_trial_config(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(MULTI, folder)
    running = sorted(_trials_of("terminus-2"))[0]
    (folder / running / "result.json").unlink()
    job = load_job(ws, folder, agent="terminus-2")
    attempts = job.attempts().set_index("source_place")
    assert attempts.loc[running, "status"] == "running"
    assert len(attempts) == 6
    other = load_job(ws, folder, agent="claude-code")
    assert running not in set(other.attempts()["source_place"])


def test_one_combination_folder_loads_as_before_with_or_without_the_choice(
    ws: enb.Workspace,
) -> None:
    whole = load_job(ws, SINGLE)
    result = json.loads((SINGLE / "result.json").read_text())
    assert whole.id == result["id"]
    assert "split" not in whole.info["extra"]
    chosen = load_job(ws, SINGLE, agent="claude-code")
    assert chosen.id == f"{result['id']}/claude-code/anthropic/claude-sonnet-4-5/terminal-bench"
    assert len(chosen.attempts()) == len(whole.attempts()) == 30
    assert chosen.summary(policy="failure").score == whole.summary(policy="failure").score
    c = check(chosen)
    assert c is not None and c.checked == 4
