"""Token consumption and cost of one job, per model and role.

The evaluated model's tokens are summed over the attempts that report them (never
invented: an attempt without usage adds nothing, and ``reported`` says how many did);
where the source keeps its own per-model accounting (an Inspect log's ``stats``, which
also counts a grader model's calls during scoring) the rows come from it, one per model,
with the role each model played (``eval.model_roles``). Cache tokens are the cached
input tokens read (Inspect's ``input_tokens_cache_read``).

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("sample_data/base.json")
>>> row = consumption(job.con, job.id).iloc[0]
>>> row["role"], row["where"], int(row["attempts"]), int(row["reported"])
('evaluated', 'attempts', 797, 787)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._store.ref import job_info, summarised

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = ["CONSUMPTION_COLUMNS", "consumption", "consumption_rows"]

#: The columns of :func:`consumption`, in order.
CONSUMPTION_COLUMNS = (
    "model", "role", "attempts", "reported", "input_tokens", "output_tokens",
    "cache_tokens", "cost_usd", "where",
)  # fmt: skip


def consumption(con: duckdb.DuckDBPyConnection, job_id: str) -> pd.DataFrame:
    """One row per (model, role): ``attempts`` recorded, ``reported`` (attempts that
    report any usage; ``None`` where the source's own accounting is used), input, output
    and cache tokens, ``cost_usd`` (``None`` when nothing reported a cost) and ``where``
    the numbers come from (``attempts``, ``log``, or ``not in the workspace`` for a
    summarised job).
    """
    import pandas as pd

    return pd.DataFrame(consumption_rows(con, job_id), columns=list(CONSUMPTION_COLUMNS))


def consumption_rows(con: duckdb.DuckDBPyConnection, job_id: str) -> list[dict[str, Any]]:
    """The rows of :func:`consumption` as dicts (for the panel and the report)."""
    info = job_info(con, job_id)
    model = info.get("model")
    extra = _map(info.get("extra"))
    inspect = _map(extra.get("inspect"))
    if summarised(con, job_id) is not None:
        nothing = (None,) * 6
        return [_row(model, "evaluated", *nothing, "not in the workspace")]
    row = con.execute(
        """SELECT count(*),
                  count(*) FILTER (WHERE input_tokens IS NOT NULL OR output_tokens IS NOT NULL
                                   OR cache_tokens IS NOT NULL OR cost_usd IS NOT NULL),
                  sum(input_tokens), sum(output_tokens), sum(cache_tokens), sum(cost_usd)
           FROM attempts WHERE job_id = ?""",
        [job_id],
    ).fetchone()
    assert row is not None
    attempts, reported, inp, out, cache, cost = row
    usage = inspect.get("model_usage")
    if isinstance(usage, Mapping) and usage:
        roles = _roles(inspect.get("model_roles"))
        rows = []
        for name in sorted(usage, key=lambda m: (m != model, m)):
            u = usage[name] if isinstance(usage[name], Mapping) else {}
            role = "evaluated" if name == model else ", ".join(roles.get(name, ())) or "other"
            tokens = [_int(u.get(key)) for key in _INSPECT_TOKENS]
            n = attempts if name == model else None
            rows.append(_row(name, role, n, None, *tokens, _float(u.get("total_cost")), "log"))
        return rows
    return [_row(model, "evaluated", attempts, reported, inp, out, cache, cost, "attempts")]


#: Inspect's ``ModelUsage`` fields behind input, output and cache tokens.
_INSPECT_TOKENS = ("input_tokens", "output_tokens", "input_tokens_cache_read")


def _row(*values: Any) -> dict[str, Any]:
    return dict(zip(CONSUMPTION_COLUMNS, values, strict=True))


def _roles(model_roles: Any) -> dict[str, list[str]]:
    """Inspect's ``eval.model_roles`` (role → ``{"model": name, ...}``) as model → roles."""
    out: dict[str, list[str]] = {}
    if isinstance(model_roles, Mapping):
        for role, spec in sorted(model_roles.items()):
            name = spec.get("model") if isinstance(spec, Mapping) else spec
            if isinstance(name, str):
                out.setdefault(name, []).append(str(role))
    return out


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}
