"""Per tool: how often it is called, how often it fails, and how attempts using it fare.

For each tool name (``steps.tool`` of the tool calls; replayed context left out):

``calls``
    Its tool calls.
``attempts``
    Attempts with at least one call of it; ``calls_per_attempt`` = calls / attempts.
``results``, ``errors``, ``error_rate``
    Its tool results (a result without a tool name takes the name of the call its
    ``call_id`` answers; a result naming neither is *unattributed*, counted in
    :attr:`ToolStats.unattributed_results`) and those with ``is_error``; the rate is
    errors / results (null without results).
``pass_with`` / ``pass_without``
    The pass rate of scored attempts with steps that used the tool / that did not
    (passes / scored attempts; unscored attempts in neither).
Each rate has ``_low`` / ``_high``: the task bootstrap (see :mod:`.base`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._store.memo import cached
from .base import Basis, basis, interval_columns
from .summary import attempt_steps, outcomes, tool_steps

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

__all__ = ["TOOL_COLUMNS", "ToolStats", "tool_stats"]

#: The columns of :attr:`ToolStats.tools`, in order.
TOOL_COLUMNS = (
    "tool", "calls", "attempts", "calls_per_attempt", "results", "errors", "error_rate",
    "error_rate_low", "error_rate_high", "passed_with", "scored_with", "pass_with",
    "pass_with_low", "pass_with_high", "passed_without", "scored_without", "pass_without",
    "pass_without_low", "pass_without_high",
)  # fmt: skip

_RATES = (
    ("error_rate", "errors", "results"),
    ("pass_with", "passed_with", "scored_with"),
    ("pass_without", "passed_without", "scored_without"),
)


@dataclass(frozen=True)
class ToolStats:
    """Per-tool statistics of one job (see the module docstring).

    Attributes
    ----------
    tools
        One row per tool, most called first (:data:`TOOL_COLUMNS`); empty without steps.
    basis
        The attempts counted (:class:`~envloop_nb._behaviour.base.Basis`).
    unattributed_results
        Tool results that name no tool and answer no known call (in no tool's rate).
    method
        How the intervals were made.
    """

    tools: pd.DataFrame
    basis: Basis
    unattributed_results: int
    method: str

    def _repr_html_(self) -> str:
        from .._present.behaviour_html import tool_table_html

        return tool_table_html(self.tools, note=html.escape(str(self.basis)))


@dataclass(frozen=True)
class _Codes:
    """The job's tool rows as arrays (threshold-free; memoized): ``tasks`` (the task
    names of the attempts with steps, sorted: ``attempt_steps``' ``t`` indexes them),
    ``tools`` (the tool names, sorted); per tool row its attempt row ``at`` (``i``), its
    cell ``tool index x tasks + task index`` and its counts; ``unattributed`` results."""

    tasks: list[str]
    tools: list[str]
    at: NDArray[np.int64]
    cell: NDArray[np.int64]
    calls: NDArray[np.int64]
    results: NDArray[np.int64]
    errors: NDArray[np.int64]
    unattributed: int


def _codes(con: duckdb.DuckDBPyConnection, job_id: str) -> _Codes:
    import numpy as np
    import pandas as pd
    import pyarrow.compute as pc

    def compute() -> _Codes:
        att = attempt_steps(con, job_id)
        tasks = sorted(pc.unique(att.column("task")).to_pylist())
        # both read by DuckDB's replacement scan, by name
        found = tool_steps(con, job_id)
        _el_attempt_steps, _el_tools = att, found.tools
        rows = con.execute(
            """SELECT s.i, s.t, t.tool, t.calls, t.results, t.errors
               FROM _el_tools t JOIN _el_attempt_steps s USING (task, attempt)"""
        ).fetchnumpy()
        tool, tools = pd.factorize(pd.Series(rows["tool"], dtype=object), sort=True)
        cell = tool.astype(np.int64) * len(tasks) + np.asarray(rows["t"], dtype=np.int64)

        def ints(x: Any) -> NDArray[np.int64]:
            return np.asarray(x, dtype=np.int64)

        return _Codes(
            tasks=tasks, tools=[str(t) for t in tools], at=ints(rows["i"]), cell=ints(cell),
            calls=ints(rows["calls"]), results=ints(rows["results"]),
            errors=ints(rows["errors"]), unattributed=found.unattributed,
        )  # fmt: skip

    found: _Codes = cached(con, job_id, ("tool_codes",), compute)
    return found


def _per_task(
    con: duckdb.DuckDBPyConnection, job_id: str, threshold: float | None
) -> tuple[list[str], list[str], dict[str, NDArray[np.int64]]]:
    """Per (tool, task) counts: ``(tools, tasks, {count: tools x tasks array})``.

    The tasks are those with an attempt of record with steps; the tools those with a
    row in such an attempt. ``calls``, ``results``, ``errors``: the tool's rows summed;
    ``attempts``: attempts that called it; ``passed_with`` / ``scored_with``: of those,
    passes / attempts with a reward; ``passed_without`` / ``scored_without``: the same of
    the task's other attempts with steps.
    """
    import numpy as np

    c = _codes(con, job_id)
    passed = outcomes(con, job_id, threshold).passed
    task_of = attempt_steps(con, job_id).column("t").to_numpy()
    present = passed >= -1
    wins, scored = passed == 1, passed >= 0
    n_tasks, n_tools = len(c.tasks), len(c.tools)
    keep_tasks = np.flatnonzero(np.bincount(task_of[present], minlength=n_tasks))
    keep = present[c.at]
    used = keep & (c.calls > 0)
    size = n_tools * n_tasks
    keep_tools = np.flatnonzero(np.bincount(c.cell[keep] // max(n_tasks, 1), minlength=n_tools))

    def grid(where: NDArray[np.bool_], weights: NDArray[np.int64] | None = None) -> Any:
        w = None if weights is None else weights[where]
        counts = np.bincount(c.cell[where], weights=w, minlength=size)
        full = np.rint(counts).astype(np.int64).reshape(n_tools, n_tasks)
        return full[np.ix_(keep_tools, keep_tasks)]

    def per_task(where: NDArray[np.bool_]) -> NDArray[np.int64]:
        counts = np.bincount(task_of[where], minlength=n_tasks).astype(np.int64)
        return counts[keep_tasks]

    out = {
        "calls": grid(keep, c.calls),
        "attempts": grid(used),
        "results": grid(keep, c.results),
        "errors": grid(keep, c.errors),
        "passed_with": grid(used & wins[c.at]),
        "scored_with": grid(used & scored[c.at]),
    }
    out["passed_without"] = per_task(wins)[None, :] - out["passed_with"]
    out["scored_without"] = per_task(scored)[None, :] - out["scored_with"]
    return [c.tools[i] for i in keep_tools], [c.tasks[i] for i in keep_tasks], out


def tool_stats(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    threshold: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ToolStats:
    """Per-tool calls, errors and pass rates with and without the tool (module docstring).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> from envloop_nb._store.steps import StepWriter
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> w = StepWriter(job.con, job.id)
    >>> w.add({"task": "A", "attempt": 1, "step": 1, "role": "assistant", "kind": "tool_call",
    ...        "tool": "ls", "call_id": "c"})
    >>> w.add({"task": "A", "attempt": 1, "step": 2, "role": "tool", "kind": "tool_result",
    ...        "call_id": "c", "is_error": True})
    >>> w.close()
    2
    >>> t = tool_stats(job.con, job.id, resamples=100).tools
    >>> t[["tool", "calls", "attempts", "results", "errors", "error_rate"]].values.tolist()
    [['ls', 1, 1, 1, 1, 1.0]]
    """
    import numpy as np
    import pandas as pd

    from .._metrics.uncertainty import bootstrap_ratio_cis

    base = basis(con, job_id, threshold)
    unattributed = _codes(con, job_id).unattributed
    tools, tasks, grid = _per_task(con, job_id, threshold)
    if not tools:
        tasks = []
    method = (
        f"percentile task bootstrap ({resamples:,} resamples of the {len(tasks):,} tasks with "
        f"replacement, attempts and their steps staying with their task, seed {seed}), "
        f"{confidence:.0%} intervals"
    )
    if not tools or not tasks:
        empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "tool" else "float64")
                              for c in TOOL_COLUMNS})  # fmt: skip
        return ToolStats(empty, base, unattributed, method)
    counts = ["calls", "attempts", "results", "errors", "passed_with", "scored_with",
              "passed_without", "scored_without"]  # fmt: skip
    totals = pd.DataFrame({"tool": tools} | {c: grid[c].sum(axis=1) for c in counts})
    # the task bootstrap of every tool's rates, one set of draws (as base.task_intervals)
    pairs = [(grid[num][g].astype(np.float64), grid[den][g].astype(np.float64), name)
             for g in range(len(tools)) for name, num, den in _RATES]  # fmt: skip
    found = bootstrap_ratio_cis(pairs, resamples=resamples, seed=seed, confidence=confidence)
    ivs = dict(zip([(t, name) for t in tools for name, _, _ in _RATES], found, strict=True))
    for name, _, _ in _RATES:
        totals = interval_columns(totals, ivs, key="tool", name=name)
    totals["calls_per_attempt"] = totals["calls"] / totals["attempts"].where(totals["attempts"] > 0)
    totals = totals.sort_values(["calls", "tool"], ascending=[False, True], kind="stable")
    frame = totals[list(TOOL_COLUMNS)].reset_index(drop=True)
    return ToolStats(frame.astype({c: "int64" for c in counts}), base, unattributed, method)
