"""Writes an Inspect AI ``.json`` log in the shape Inspect wrote in 2024 (inspect_ai
0.3.54, December 2024: log schema version 2, before ``eval_id`` existed), from a real
log made by inspect_ai's mockllm model (/work/shared/fixtures/inspect/make_inspect_fixtures.py).

Run from anywhere with the project's venv::

    /work/main/.venv/bin/python tests/data/inspect_2024/make_fixture.py

The fields are those of ``inspect_ai/log/_log.py`` at commit ccd6a9d48 (2024-12-22);
every field added since is dropped, the samples and their scores are kept as they are
(so ``results`` still states the numbers the samples give):

* ``eval``: no ``eval_id`` (added 2025-05), ``scorers`` (2025-02), ``task_display_name``,
  ``task_args_passed``, ``solver_args_passed``, ``model_generate_config``; ``config``
  keeps the 2024 ``EvalConfig`` fields only;
* top level: no ``invalidated``, ``tags``, ``metadata``; ``stats`` without
  ``role_usage`` and ``connection_limit_history``;
* ``results``: no ``headline``; each score without ``scored_samples`` /
  ``unscored_samples`` (2025-07); a metric's ``params`` was ``options``;
* a sample: no ``uuid``, ``total_time``, ``working_time``, ``started_at``,
  ``completed_at``, ``role_usage``, ``error_retries``, ``turn_count``; a score without
  ``history``; a message without ``id`` / ``model``; the output without the serialised
  ``completion`` (a property then) and ``input_context_tokens``; ``events`` empty (its
  2024 event shapes differ and nothing here reads them).

The file name is the 2024 pattern ``<created>_<task>_<task_id>.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = Path(
    "/work/shared/fixtures/inspect/json/"
    "2026-12-01T07-28-03-00-00_capitals_WfHWhh9mCufEDm9cJmDtKv.json"
)
CONFIG_2024 = (
    "limit", "sample_id", "epochs", "epochs_reducer", "trace", "approval", "fail_on_error",
    "message_limit", "token_limit", "time_limit", "max_samples", "max_tasks",
    "max_subprocesses", "max_sandboxes", "sandbox_cleanup", "log_samples", "log_images",
    "log_buffer", "score_display",
)  # fmt: skip
EVAL_DROP = (
    "eval_id", "scorers", "task_display_name", "task_args_passed", "solver_args_passed",
    "model_generate_config", "task_registry_name", "model_roles",
)  # fmt: skip
SAMPLE_DROP = (
    "uuid", "total_time", "working_time", "started_at", "completed_at", "role_usage",
    "error_retries", "turn_count",
)  # fmt: skip


def _message(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in m.items() if k not in ("id", "model")}


def _sample(s: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in s.items() if k not in SAMPLE_DROP}
    out["messages"] = [_message(m) for m in s["messages"]]
    output = {
        k: v for k, v in s["output"].items() if k not in ("completion", "input_context_tokens")
    }
    output["choices"] = [
        {**c, "message": _message(c["message"])} for c in output.get("choices") or []
    ]
    out["output"] = output
    if s.get("scores"):
        out["scores"] = {
            name: {k: v for k, v in score.items() if k != "history"}
            for name, score in s["scores"].items()
        }
    if s.get("error"):
        out["error"] = {k: str(v)[:200] for k, v in s["error"].items()}
    out["events"] = []
    out["attachments"] = {}
    return out


def main() -> None:
    doc = json.loads(SOURCE.read_text())
    ev = {k: v for k, v in doc["eval"].items() if k not in EVAL_DROP}
    ev["config"] = {k: v for k, v in ev["config"].items() if k in CONFIG_2024}
    ev["packages"] = {"inspect_ai": "0.3.54"}
    ev["created"] = ev["created"].replace("2026-", "2024-")
    results = {k: v for k, v in doc["results"].items() if k != "headline"}
    results["scores"] = [
        {
            **{k: v for k, v in s.items() if k not in ("scored_samples", "unscored_samples")},
            "metrics": {
                name: {"name": m["name"], "value": m["value"], "options": m.get("params") or {}}
                for name, m in s["metrics"].items()
            },
        }
        for s in results["scores"]
    ]
    stats = {k: doc["stats"][k] for k in ("started_at", "completed_at", "model_usage")}
    stats = {k: v.replace("2026-", "2024-") if isinstance(v, str) else v for k, v in stats.items()}
    reductions = [
        {**r, "samples": [{k: v for k, v in x.items() if k != "history"} for x in r["samples"]]}
        for r in doc["reductions"]
    ]
    log = {
        "version": 2,
        "status": doc["status"],
        "eval": ev,
        "plan": doc["plan"],
        "results": results,
        "stats": stats,
        "samples": [_sample(s) for s in doc["samples"]],
        "reductions": reductions,
    }
    name = f"{ev['created'][:19].replace(':', '-')}+00-00_{ev['task']}_{ev['task_id']}.json"
    (HERE / name).write_text(json.dumps(log, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
