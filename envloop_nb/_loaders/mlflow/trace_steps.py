"""An MLflow experiment's traces as its cases' steps (``exp_steps``).

Each trace read by :func:`.traces.read_mlflow_traces` carries its spans; this module
writes them, through :func:`.steps.read_mlflow_steps`, as the steps of the case the trace
became (``task``: the trace id, ``attempt``: 0), inside the transaction that writes the
experiment (:func:`envloop_nb._loaders.experiments.store.write_experiment`'s ``also``).
A reload replaces the steps of the cases it reads and keeps the others, as it does the
cases. A trace without spans gets no steps (none invented); the experiment's
``extra["steps"]`` says how many cases have them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._store.steps import StepWriter, check_steps
from .steps import read_mlflow_steps

if TYPE_CHECKING:
    import duckdb

__all__ = ["steps_info", "trace_steps_writer"]

SOURCE = "MLflow trace spans (LLM, TOOL and AGENT spans as steps)"


def steps_info(traces: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the experiment's ``extra["steps"]`` says: where its steps come from, and how
    many cases have them (a trace with no span has none).

    Examples
    --------
    >>> steps_info([{"trace_id": "a", "spans": [{}]}, {"trace_id": "b", "spans": []}])
    {'source': 'MLflow trace spans (LLM, TOOL and AGENT spans as steps)', 'cases_with_steps': 1, 'cases_without': 1}
    """
    with_spans = sum(1 for t in traces if t.get("spans"))
    return {
        "source": SOURCE,
        "cases_with_steps": with_spans,
        "cases_without": len(traces) - with_spans,
    }


def trace_steps_writer(
    traces: Sequence[Mapping[str, Any]], source: str
) -> Callable[[duckdb.DuckDBPyConnection, str], None]:
    """A function ``(con, experiment_id)`` writing each trace's spans as its case's steps,
    then checking them (a bad span is a :class:`~envloop_nb._errors.LoadError` naming the
    trace and the span; the experiment's load then leaves the workspace unchanged)."""

    def write(con: duckdb.DuckDBPyConnection, experiment_id: str) -> None:
        ids = [str(t["trace_id"]) for t in traces]
        con.execute(
            "DELETE FROM exp_steps WHERE experiment_id = ? AND list_contains(?, task)",
            [experiment_id, ids],
        )
        writer = StepWriter(con, experiment_id, table="exp_steps")
        for trace_id, trace in zip(ids, traces, strict=True):
            spans = trace.get("spans") or []
            if spans:
                read_mlflow_steps(
                    writer, task=trace_id, attempt=0, spans=spans,
                    source=f"{source}, trace {trace_id}",
                )  # fmt: skip
        writer.close()
        check_steps(con, experiment_id, source, table="exp_steps")

    return write
