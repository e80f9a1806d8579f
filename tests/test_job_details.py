"""``job.consumption()`` and ``job.inference_config()``: what each source records about
tokens, cost, the system prompt and the generation parameters — never invented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import envloop_nb as enb
from envloop_nb._present.job_details import consumption_html, inference_html

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
EXAMPLE = SHARED / "formats" / "examples" / "three-tasks-two-attempts.json"
INSPECT_JSON = sorted((SHARED / "fixtures" / "inspect" / "json").glob("*.json"))[0]


def _envloop(tmp_path: Path, params: dict[str, object]) -> Path:
    doc = json.loads(EXAMPLE.read_text())
    doc["job"]["profile"]["params"] = params
    out = tmp_path / "job.json"
    out.write_text(json.dumps(doc))
    return out


def test_consumption_sums_what_attempts_report_and_says_how_many_did() -> None:
    job = enb.open().load(EXAMPLE)
    row = job.consumption().iloc[0]
    attempts = job.attempts()
    assert row["model"] == "my-endpoint/sft" and row["role"] == "evaluated"
    assert int(row["attempts"]) == len(attempts)
    assert int(row["reported"]) == int(attempts["input_tokens"].notna().sum())
    assert int(row["input_tokens"]) == int(attempts["input_tokens"].sum())
    assert int(row["output_tokens"]) == int(attempts["output_tokens"].sum())
    # nothing reported cache tokens or cost: missing, not 0
    assert attempts["cache_tokens"].isna().all() and row["cache_tokens"] is None
    assert row["cost_usd"] is None
    assert job.consumption(frame="polars").height == 1


def test_a_source_without_usage_reports_none_of_it() -> None:
    job = enb.open().load(ROOT / "tests" / "data" / "lm_eval" / "run")
    row = job.consumption().to_dict("records")[0]
    assert row["reported"] == 0 and row["attempts"] == len(job.attempts())
    assert row["input_tokens"] is None and row["output_tokens"] is None
    assert "not reported" in consumption_html([row])


def test_inspect_usage_per_model_and_role_from_the_log(tmp_path: Path) -> None:
    """A grader model's tokens are the log's own per-model accounting, under its role."""
    doc = json.loads(INSPECT_JSON.read_text())
    doc["stats"]["model_usage"]["mockllm/judge"] = {
        "input_tokens": 900, "output_tokens": 60, "total_tokens": 960,
        "input_tokens_cache_read": 100, "total_cost": 0.25,
    }  # fmt: skip
    doc["eval"]["model_roles"] = {"grader": {"model": "mockllm/judge", "config": {}}}
    doc["plan"]["steps"].insert(
        0, {"solver": "system_message", "params": {"template": "Answer with one word."}}
    )
    doc["plan"]["config"] = {"temperature": 0.2, "max_tokens": 64}
    log = tmp_path / INSPECT_JSON.name
    log.write_text(json.dumps(doc))
    job = enb.open().load(log)
    rows = job.consumption().set_index("model")
    evaluated = rows.loc[doc["eval"]["model"]]
    assert evaluated["role"] == "evaluated" and evaluated["where"] == "log"
    assert (
        int(evaluated["input_tokens"])
        == doc["stats"]["model_usage"][doc["eval"]["model"]]["input_tokens"]
    )
    judge = rows.loc["mockllm/judge"]
    assert judge["role"] == "grader" and int(judge["input_tokens"]) == 900
    assert int(judge["cache_tokens"]) == 100 and judge["cost_usd"] == pytest.approx(0.25)
    assert next(iter(rows.index)) == doc["eval"]["model"]  # the evaluated model first
    cfg = job.inference_config()
    assert cfg.system_prompt == "Answer with one word." and cfg.system_prompt_from == "configured"
    assert cfg.params["generate.temperature"] == "0.2"
    assert cfg.params["generate.max_tokens"] == "64"  # a token limit is not a credential
    assert cfg.params["solvers"] == "system_message, generate"


def test_envloop_profile_params_system_prompt_and_credentials(tmp_path: Path) -> None:
    params = {"MODEL_NAME": "m", "TEMPERATURE": "0.7", "SYSTEM_PROMPT": "Be terse.",
              "OPENAI_API_KEY": "sk-live-123", "MAX_TOKENS": "512"}  # fmt: skip
    job = enb.open().load(_envloop(tmp_path, params))
    cfg = job.inference_config()
    assert cfg.system_prompt == "Be terse." and cfg.system_prompt_from == "configured"
    assert cfg.params == {
        "MODEL_NAME": "m", "TEMPERATURE": "0.7", "OPENAI_API_KEY": "•••", "MAX_TOKENS": "512"
    }  # fmt: skip
    assert cfg.where == "profile team/eval v1 params"
    assert "sk-live" not in inference_html(cfg.to_dict())
    assert "sk-live" not in cfg._repr_html_()


def test_the_system_prompt_the_chat_inputs_open_with() -> None:
    """No configured prompt: the inputs' most common opening system message, and how many
    different ones there are."""
    job = enb.open().load(ROOT / "sample_data" / "base.json")
    cfg = job.inference_config()
    firsts = [json.loads(s)[0] for s in job.attempts()["input"] if s and s.startswith("[")]
    systems = [m["content"] for m in firsts if m.get("role") == "system"]
    assert cfg.system_prompt_from == "inputs"
    assert cfg.system_prompts_seen == len(set(systems))
    assert cfg.system_prompt == max(sorted(set(systems)), key=systems.count)
    html = inference_html(cfg.to_dict())
    assert f"they open with {len(set(systems))} different system messages" in html


def test_sources_that_record_nothing_say_so() -> None:
    job = enb.open().load(SHARED / "fixtures" / "tau-bench" / "gpt-4o-airline.json")
    cfg = job.inference_config()
    assert cfg.params == {} and cfg.where is None
    # its conversations open with the airline policy as the system message
    assert cfg.system_prompt_from == "inputs" and cfg.system_prompt is not None
    assert cfg.system_prompt.startswith("# Airline Agent Policy")


def test_harbor_and_lm_eval_parameters() -> None:
    ws = enb.open()
    harbor = ws.load(SHARED / "fixtures" / "harbor" / "2026-03-02__14-05-11")
    cfg = harbor.inference_config()
    assert cfg.concurrency == 8 and cfg.model == "anthropic/claude-sonnet-4-5"
    lm = ws.load(ROOT / "tests" / "data" / "lm_eval" / "run").inference_config()
    assert lm.params["config.model"] == "dummy"
    assert lm.params["generation_kwargs.envloop_alpha.until"] == '["\\n"]'
    assert lm.params["num_fewshot.envloop_beta"] == "0"
    assert lm.system_prompt is None and lm.system_prompt_from is None
