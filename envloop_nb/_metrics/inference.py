"""How a job ran its model: the system prompt and the generation parameters.

Read from what each source records — an EnvLoop profile's ``params``, an Inspect log's
generate config, plan and task arguments, lm-evaluation-harness's ``config`` and each
task's ``generation_kwargs``, a Harbor agent's configured settings — and, for ChatML
inputs, the system message the conversations open with. Parameters are flattened to
dotted keys with their values as the source wrote them (JSON text for lists and
objects); a key that looks like a credential is shown as ``•••``.

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("sample_data/base.json")
>>> cfg = inference_config(job.con, job.id)
>>> cfg.model, cfg.params["TEMPERATURE"], cfg.where
('acme-7b@base', '0.7', 'profile team/eval v1 params')
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._store.ref import job_info, summarised

if TYPE_CHECKING:
    import duckdb

__all__ = ["InferenceConfig", "flatten_params", "inference_config"]

#: Parameter names that hold a system prompt rather than a generation parameter.
_SYSTEM_KEYS = frozenset({"system_prompt", "system", "system_message", "system_instruction"})
#: Parameter names that look like credentials (never shown).
_SECRET = re.compile(r"(api[_-]?key|secret|token|password|credential)", re.IGNORECASE)
#: Token-limit parameters are numbers, not credentials.
_NOT_SECRET = re.compile(r"max_?(new_)?tokens|tokens?_limit|max_tokens", re.IGNORECASE)


@dataclass(frozen=True)
class InferenceConfig:
    """The system prompt and generation parameters of one job.

    Attributes
    ----------
    model
        The evaluated model as the source names it.
    method
        How it was evaluated: the runner or harness (``inspect_ai 0.3.285``, ``harbor``).
    system_prompt
        The configured system prompt; else the system message the job's ChatML inputs
        open with most often; ``None`` when neither exists.
    system_prompt_from
        ``"configured"``, ``"inputs"`` or ``None``.
    system_prompts_seen
        Distinct system messages opening the job's ChatML inputs (0: none; more than one:
        the inputs do not share one system prompt).
    params
        Generation and run parameters, dotted keys → the source's value as text.
    concurrency
        Attempts run at once, where the source says.
    where
        Where in the source the parameters were read.
    """

    model: str | None
    method: str | None
    system_prompt: str | None
    system_prompt_from: str | None
    system_prompts_seen: int
    params: Mapping[str, str] = field(default_factory=dict)
    concurrency: int | None = None
    where: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain values (``params`` as a dict)."""
        return {
            "model": self.model, "method": self.method, "system_prompt": self.system_prompt,
            "system_prompt_from": self.system_prompt_from,
            "system_prompts_seen": self.system_prompts_seen, "params": dict(self.params),
            "concurrency": self.concurrency, "where": self.where,
        }  # fmt: skip

    def _repr_html_(self) -> str:
        from .._present.job_details import inference_html
        from .._present.panel_html import PANEL_CSS

        return f'{PANEL_CSS}<div class="enb-panel">{inference_html(self.to_dict())}</div>'


def flatten_params(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested mappings to dotted keys; scalars as text, lists as JSON; credentials hidden.

    Examples
    --------
    >>> flatten_params({"temperature": 0.7, "model_args": {"api_key": "sk-1", "n": [1, 2]}})
    {'temperature': '0.7', 'model_args.api_key': '•••', 'model_args.n': '[1, 2]'}
    """
    out: dict[str, str] = {}
    if isinstance(value, Mapping):
        for key, v in value.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(v, Mapping) and v:
                out.update(flatten_params(v, name))
            elif v is None or (isinstance(v, Mapping | list) and not v):
                continue
            elif _SECRET.search(str(key)) and not _NOT_SECRET.search(str(key)):
                out[name] = "•••"
            elif isinstance(v, str):
                out[name] = v
            else:
                out[name] = json.dumps(v, ensure_ascii=False, default=str)
    return out


def inference_config(
    con: duckdb.DuckDBPyConnection, job_id: str, *, inputs: bool = True
) -> InferenceConfig:
    """The job's :class:`InferenceConfig` (what the source says; nothing invented).

    ``inputs=False`` skips looking for the system message the ChatML inputs open with
    (a scan of the inputs; the panel's facts line does without it).
    """
    info = job_info(con, job_id)
    fmt = info.get("source_format")
    raw = _map(info.get("profile_params"))
    extra = _map(info.get("extra"))
    system: str | None = None
    concurrency: int | None = None
    params: dict[str, Any] = {}
    where: str | None = None
    if fmt == "inspect":
        plan = _map(raw.get("plan"))
        steps = [s for s in plan.get("steps") or [] if isinstance(s, Mapping)]
        for s in steps:
            template = (s.get("params") or {}).get("template") if s.get("solver") else None
            if s.get("solver") == "system_message" and isinstance(template, str):
                system = template
        params = {
            "generate": dict(raw.get("generate_config") or {}) | dict(plan.get("config") or {}),
            "solvers": ", ".join(str(s.get("solver")) for s in steps) or None,
            "task_args": raw.get("task_args") or {},
        }
        inspect = _map(extra.get("inspect"))
        concurrency = _int(inspect.get("max_samples"))
        where = "the log's eval.model_generate_config, plan and task_args"
    elif fmt == "lm-eval":
        params = {k: v for k, v in raw.items() if k != "system_instruction"}
        system = (
            raw.get("system_instruction")
            if isinstance(raw.get("system_instruction"), str)
            else None
        )
        where = "results.json config, configs[task].generation_kwargs and n-shot"
    elif fmt == "harbor":
        concurrency = _int(raw.get("n_concurrent_trials"))
        params = {k: v for k, v in raw.items() if k != "n_concurrent_trials"}
        where = "config.json agents[] settings"
    elif raw:
        for key, v in raw.items():
            if str(key).lower() in _SYSTEM_KEYS and isinstance(v, str):
                system = v
            else:
                params[key] = v
        profile = info.get("profile_name")
        version = f" v{info['profile_version']}" if info.get("profile_version") else ""
        where = f"profile {profile}{version} params" if profile else "the source's parameters"
    seen, common = _input_system_prompts(con, job_id) if inputs else (0, None)
    system_from = "configured" if system is not None else ("inputs" if common else None)
    return InferenceConfig(
        model=info.get("model"),
        method=info.get("runner") or fmt,
        system_prompt=system if system is not None else common,
        system_prompt_from=system_from,
        system_prompts_seen=seen,
        params=flatten_params(params),
        concurrency=concurrency,
        where=where,
    )


def _input_system_prompts(con: duckdb.DuckDBPyConnection, job_id: str) -> tuple[int, str | None]:
    """(distinct system messages opening the ChatML inputs, the most common one)."""
    if summarised(con, job_id) is not None:
        return 0, None
    # a substring test first: only inputs that name a system role are parsed
    rows = con.execute(
        """WITH firsts AS (
              SELECT json_extract(input, '$[0]') AS m FROM attempts
              WHERE job_id = ? AND input_is_chat AND contains(input, '"system"')
            ), prompts AS (
              SELECT CASE WHEN json_type(m, '$.content') = 'VARCHAR'
                          THEN m->>'$.content' ELSE json_extract(m, '$.content')::VARCHAR
                     END AS s
              FROM firsts WHERE m->>'$.role' = 'system'
            )
            SELECT s, count(*) AS n, count(*) OVER () AS seen
            FROM prompts GROUP BY s ORDER BY n DESC, s LIMIT 1""",
        [job_id],
    ).fetchone()
    if rows is None:
        return 0, None
    return int(rows[2]), rows[0]


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}
