"""The typed view ``_tb_v`` over a staged source: the user's mapping resolved to
columns, every value cast to the workspace's type, and ``_problem`` naming what makes a
row unusable (NULL when it is usable). All checks are SQL ``CASE`` arms, in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from ..._errors import LoadError
from ..._store.sql import ident, literal
from ..._store.task_counts import reward_range_sql
from .columns import Source, check_name

__all__ = ["DEFAULT_MAPPING", "DEFAULT_TAGS", "STATUSES", "resolve_mapping", "typed_view"]

STATUSES = ("pending", "running", "completed", "failed", "cancelled")

#: Our column ← the source's column, by default (a missing optional column is fine).
DEFAULT_MAPPING: dict[str, str] = {
    "task": "task",
    "attempt": "attempt",
    "reward": "reward",
    "status": "status",
    "trial_id": "trial_id",
    "input": "input",
    "output": "output",
    "reference": "reference",
    "error": "error",
    "error_type": "error_type",
    "exit_code": "exit_code",
    "turns": "turns",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_tokens": "cache_tokens",
    "cost_usd": "cost_usd",
    "started_at": "started_at",
    "finished_at": "finished_at",
    "duration_s": "duration_s",
    "digest": "digest",
}
_INT_FIELDS = ("exit_code", "turns", "input_tokens", "output_tokens", "cache_tokens")
#: The workspace column type of each integer field, and its width in bits.
_INT_COLUMNS = {
    "exit_code": ("INTEGER", 32),
    "turns": ("INTEGER", 32),
    "input_tokens": ("BIGINT", 64),
    "output_tokens": ("BIGINT", 64),
    "cache_tokens": ("BIGINT", 64),
}
_DOUBLE_FIELDS = ("cost_usd", "duration_s")
_TEXT_FIELDS = ("trial_id", "output", "reference", "error", "error_type")
_TIME_FIELDS = ("started_at", "finished_at")
DEFAULT_TAGS = ("subset", "difficulty")  # tag columns taken without a mapping


def resolve_mapping(
    src: Source, mapping: Mapping[str, Any] | None
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Our field → source column (present ones only), tag key → column, dimension → column."""
    user = dict(mapping or {})
    tags_opt = user.pop("tags", None)
    dims_opt = user.pop("dimensions", None)
    unknown = sorted(set(user) - set(DEFAULT_MAPPING))
    if unknown:
        raise LoadError(
            src.label,
            "mapping",
            f"unknown field(s) {unknown}; map any of {sorted(DEFAULT_MAPPING)}, 'tags', 'dimensions'",
        )
    for col in src.columns:
        check_name(src.label, f"column {col!r}", col)
    present = set(src.columns)
    fields: dict[str, str] = {}
    for ours, default in DEFAULT_MAPPING.items():
        theirs = user.get(ours, default)
        if theirs is None:
            if ours in ("task", "reward"):
                raise LoadError(src.label, "mapping", f"the {ours} column is required")
            continue
        if theirs in present:
            fields[ours] = theirs
        elif ours in user or ours in ("task", "reward"):
            raise LoadError(
                src.label,
                f"column {theirs!r}",
                f"missing: the {ours} column was mapped to {theirs!r}; "
                f"the source has {sorted(present)}",
            )
    tags = _named_columns(src, tags_opt, "tags", list(DEFAULT_TAGS), "tag_")
    dims = _named_columns(src, dims_opt, "dimensions", [], "dim_")
    for what, names in (("tag", tags), ("dimension", dims)):
        for name in names:
            check_name(src.label, f"{what} {name!r}", name)
    return fields, tags, dims


def _named_columns(
    src: Source, option: Any, what: str, defaults: list[str], prefix: str
) -> dict[str, str]:
    present = set(src.columns)
    if option is None:
        out = {c: c for c in defaults if c in present}
        out.update(
            {
                c[len(prefix) :]: c
                for c in src.columns
                if c.startswith(prefix) and len(c) > len(prefix)
            }
        )
        return out
    pairs = dict(option) if isinstance(option, Mapping) else {c: c for c in option}
    for key, col in pairs.items():
        if col not in present:
            raise LoadError(src.label, f"column {col!r}", f"missing: {what} {key!r} maps to it")
    return {str(k): str(v) for k, v in pairs.items()}


def typed_view(
    con: duckdb.DuckDBPyConnection,
    src: Source,
    fields: dict[str, str],
    tags: dict[str, str],
    dims: dict[str, str],
    k: int | None,
) -> str:
    """View ``_tb_v``: one typed row per source row plus ``_problem`` (NULL when usable),
    and ``_tb_w``: its status and times alone; return ``_tb_v``'s SELECT up to the name
    of the rows it reads (``... FROM ``)."""
    sel: list[str] = ["_enb_ord", "_enb_place"]
    checks: list[str] = []
    if src.json:
        checks.append("WHEN j IS NULL THEN 'not valid JSON'")
        checks.append(
            "WHEN json_type(j) <> 'OBJECT' THEN 'expected a JSON object, got ' || json_type(j)"
        )

    def text_expr(ours: str) -> str:
        return src.text(fields[ours]) if ours in fields else "NULL::VARCHAR"

    sel.append(f"{text_expr('task')} AS task")
    # JSON rows: task 1 and task "1" read the same as text; _load refuses the pair.
    sel.append(
        f"{src.json_type(fields['task'])} AS _task_type" if src.json else "NULL AS _task_type"
    )
    missing = literal(f"task is missing ({fields['task']})")
    checks.append(f"WHEN {text_expr('task')} IS NULL THEN {missing}")
    if "attempt" in fields and src.integer(fields["attempt"]):
        c = ident(fields["attempt"])  # typed: only the range can be wrong (exactly)
        sel.append(f"{c}::BIGINT AS attempt_given")
        checks.append(f"WHEN {c} IS NULL THEN 'attempt must be an integer, got nothing'")
        checks.append(
            f"WHEN {c} < 1 THEN 'attempt ' || {c} || ' is out of range: attempts are numbered from 1'"
        )
        checks.append(
            f"WHEN {c} > 2147483647 THEN 'attempt ' || {c} "
            "|| ' is out of range: it must fit a 32-bit integer'"
        )
        if k is not None:
            checks.append(
                f"WHEN {c} > {int(k)} THEN 'attempt ' || {c} "
                f"|| ' is out of range: the job requested 1..{int(k)} per task'"
            )
    elif "attempt" in fields:
        col = fields["attempt"]
        num = src.number(col)
        sel.append(f"TRY_CAST({num} AS BIGINT) AS attempt_given")
        checks.append(
            f"WHEN {num} IS NULL OR NOT ({src.number_ok(col)}) OR {num} <> floor({num}) "
            f"THEN 'attempt must be an integer, got ' || {src.shown(col)}"
        )
        checks.append(
            f"WHEN {num} < 1 THEN 'attempt ' || {src.text(col)} || ' is out of range: attempts are numbered from 1'"
        )
        checks.append(
            f"WHEN TRY_CAST({num} AS INTEGER) IS NULL THEN 'attempt ' || {src.text(col)} "
            "|| ' is out of range: it must fit a 32-bit integer'"
        )
        if k is not None:
            checks.append(
                f"WHEN {num} > {int(k)} THEN 'attempt ' || {src.text(col)} "
                f"|| ' is out of range: the job requested 1..{int(k)} per task'"
            )
    else:
        sel.append("NULL::BIGINT AS attempt_given")
    rcol = fields["reward"]
    rnum = src.number(rcol)
    sel.append(f"CASE WHEN isnan({rnum}) THEN NULL ELSE {rnum} END AS reward")
    checks.append(
        f"WHEN NOT ({src.number_ok(rcol)}) THEN 'reward must be a number or empty, got ' "
        f"|| {src.shown(rcol)}"
    )
    checks.append(f"WHEN isinf({rnum}) THEN 'reward must be finite, got ' || {src.text(rcol)}")
    checks.append(reward_range_sql(rnum, src.text(rcol)))
    if "status" in fields:  # list_contains, not NOT IN: DuckDB makes a list of 5 constants
        # a join (mark join) per chunk of rows, ~0.01 s of a 1M-row pass; the same answers
        st = src.text(fields["status"])
        sel.append(f"coalesce({st}, 'completed') AS status")
        checks.append(
            f"WHEN {st} IS NOT NULL AND NOT list_contains({list(STATUSES)!r}, {st}) "
            f"THEN 'status must be one of {', '.join(STATUSES)}, got ' || {st}"
        )
    else:
        sel.append("'completed' AS status")
    for ours in _INT_FIELDS:
        sql_type, bits = _INT_COLUMNS[ours]
        if ours in fields and src.integer(fields[ours]):
            c = ident(fields[ours])  # typed: exact, no round trip through DOUBLE
            sel.append(f"{c}::BIGINT AS {ours}")
            if bits == 32:
                checks.append(
                    f"WHEN {c} NOT BETWEEN -2147483648 AND 2147483647 THEN '{ours} ' || {c} "
                    f"|| ' is out of range: it must fit a 32-bit integer'"
                )
        elif ours in fields:
            col = fields[ours]
            num = src.number(col)
            sel.append(f"TRY_CAST({num} AS BIGINT) AS {ours}")
            checks.append(
                f"WHEN NOT ({src.number_ok(col)}) OR {num} <> floor({num}) "
                f"THEN '{ours} must be an integer, got ' || {src.shown(col)}"
            )
            checks.append(
                f"WHEN {num} IS NOT NULL AND TRY_CAST({num} AS {sql_type}) IS NULL "
                f"THEN '{ours} ' || {src.text(col)} || ' is out of range: it must fit a {bits}-bit integer'"
            )
        else:
            sel.append(f"NULL::BIGINT AS {ours}")
    for ours in _DOUBLE_FIELDS:  # NaN is not recorded, as for the reward; infinity is refused
        if ours in fields:
            col = fields[ours]
            num = src.number(col)
            if src.integer(col):
                sel.append(f"{num} AS {ours}")
                continue
            sel.append(f"CASE WHEN isnan({num}) THEN NULL ELSE {num} END AS {ours}")
            if not src.floating(col):
                checks.append(
                    f"WHEN NOT ({src.number_ok(col)}) THEN '{ours} must be a number, got ' || {src.shown(col)}"
                )
            checks.append(
                f"WHEN isinf({num}) THEN '{ours} must be finite, got ' || {src.text(col)}"
            )
        else:
            sel.append(f"NULL::DOUBLE AS {ours}")
    for ours in _TIME_FIELDS:
        if ours in fields:
            col = fields[ours]
            sel.append(f"{src.time(col)} AS {ours}")
            if src.time(col) == ident(col):
                continue  # already a time: nothing to check
            checks.append(
                f"WHEN {src.text(col)} IS NOT NULL AND {src.time(col)} IS NULL "
                f"THEN '{ours} is not an RFC 3339 time: ' || {src.shown(col)}"
            )
        else:
            sel.append(f"NULL::TIMESTAMPTZ AS {ours}")
    for ours in (*_TEXT_FIELDS, "digest"):
        sel.append(f"{text_expr(ours)} AS {ours}")
    if "input" in fields:
        col = fields["input"]
        if src.json:
            jt = src.json_type(col)
            sel.append(
                f"CASE {jt} WHEN 'VARCHAR' THEN {src.text(col)} WHEN 'NULL' THEN NULL "
                f"ELSE {src.raw(col)}::VARCHAR END AS input"
            )
            sel.append(f"coalesce({jt} = 'ARRAY', false) AS input_is_chat")
        elif src.types.get(col, "VARCHAR") == "VARCHAR":
            c = ident(col)
            sel.append(f"{c} AS input")
            sel.append(
                f"coalesce(starts_with(ltrim({c}), '[') AND json_valid({c}) "
                f"AND json_type(TRY_CAST({c} AS JSON)) = 'ARRAY', false) AS input_is_chat"
            )
        else:
            c = ident(col)
            sel.append(f"to_json({c})::VARCHAR AS input")
            sel.append(f"({c} IS NOT NULL) AS input_is_chat")
    else:
        sel.append("NULL::VARCHAR AS input")
        sel.append("NULL::BOOLEAN AS input_is_chat")
    for i, (_key, col) in enumerate(tags.items()):
        sel.append(f"{src.text(col)} AS _tag{i}")
    for i, (name, col) in enumerate(dims.items()):
        sel.append(
            f"CASE WHEN isnan({src.number(col)}) THEN NULL ELSE {src.number(col)} END AS _dim{i}"
        )
        checks.append(
            f"WHEN NOT ({src.number_ok(col)}) "
            f"THEN {literal(f'dimension {name} must be a number, got ')} || {src.shown(col)}"
        )
        checks.append(
            f"WHEN isinf({src.number(col)}) "
            f"THEN {literal(f'dimension {name} must be finite, got ')} || {src.text(col)}"
        )
    used = set(fields.values()) | set(tags.values()) | set(dims.values())
    rest = [c for c in src.columns if c not in used]
    if rest:
        pairs = ", ".join(f"{literal(c)}, {src.raw(c)}" for c in rest)
        sel.append(f"json_object({pairs}) AS extra")
    else:
        sel.append("NULL::JSON AS extra")
    problem = "CASE " + " ".join(checks) + " ELSE NULL END"
    select = f"SELECT {', '.join(sel)}, {problem} AS _problem FROM "
    con.execute(f"CREATE OR REPLACE TEMP VIEW _tb_v AS {select} _tb_src")
    # the job-wide columns alone: a first start or last finish of Parquet columns is
    # then read from the footers' statistics (DuckDB does), not from every row
    wide = [s for s in sel if s.endswith((" AS status", " AS started_at", " AS finished_at"))]
    con.execute(f"CREATE OR REPLACE TEMP VIEW _tb_w AS SELECT {', '.join(wide)} FROM _tb_src")
    return select
