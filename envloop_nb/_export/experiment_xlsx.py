"""The experiment workbook: Summary, Evaluators, Cases, Results and Corrections sheets.

Built on the one safe cell writer (:mod:`envloop_nb._export.cells`): text stays text
(an output starting with ``=`` is never a formula), long text is cut at Excel's limit
with a visible marker, control characters are escaped. Scores not counted are empty
cells, never 0; the Summary's first row says how many rows the means count.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from .._experiments import stats
from .._files import output_file
from .._store.frames import to_frame
from .._store.ref import JobRef
from .cells import new_workbook, save_workbook, write_frame

__all__ = ["ExperimentExport", "export_experiment_xlsx"]


@dataclass(frozen=True)
class ExperimentExport:
    """What :func:`export_experiment_xlsx` wrote: the file and data rows per sheet."""

    path: Path
    rows_per_sheet: dict[str, int]
    truncated_cells: int
    escaped_cells: int

    def __str__(self) -> str:
        sheets = ", ".join(f"{k} {v:,}" for k, v in self.rows_per_sheet.items())
        return f"wrote {self.path} ({sheets})"


def _frame(rel: duckdb.DuckDBPyRelation, drop: tuple[str, ...] = ()) -> Any:
    frame = to_frame(rel)
    return frame[[c for c in frame.columns if c not in drop]]


def export_experiment_xlsx(exp: JobRef, path: Path) -> ExperimentExport:
    """Write ``exp`` (anything with ``.con`` and ``.id``) to an XLSX workbook."""
    import pandas as pd

    path = output_file(path)  # refused before the work, not after
    con, eid = exp.con, exp.id
    summary = stats.experiment_summary(con, eid)
    prog = stats.progress(con, eid)
    items = [
        ("experiment", eid),
        ("name", summary.name),
        ("agent", summary.agent),
        ("composite mean", summary.composite),
        ("rows counted", summary.counted),
        ("result rows", summary.total),
        ("completed", prog["completed"]),
        ("failed", prog["failed"]),
        ("pending", prog["pending"]),
        ("never judged", prog["missing"]),
        ("cases", summary.cases),
        ("live corrections", summary.live_corrections),
    ]
    head = pd.DataFrame(items, columns=["field", "value"])
    head["value"] = head["value"].astype(object)
    note = f"{summary} — failed, pending and unscored rows are not counted (never as 0)"
    wb, cells, titles = new_workbook()
    sheets = [
        ("Summary", head, note),
        ("Evaluators", _frame(stats.evaluator_table(con, eid)), ""),
        ("Cases", _frame(stats.case_table(con, eid), ("input_is_chat",)), ""),
        ("Results", _frame(stats.result_table(con, eid)), ""),
        ("Corrections", _frame(stats.correction_history(con, eid)), ""),
    ]
    # people's headers; an evaluator's name (and its status / corrected columns) is data and
    # keeps its spelling; ``total`` counts result rows here, not a job's attempts
    names = [str(n) for n in stats.evaluator_table(con, eid).df()["evaluator"]]
    keep = {*names, *(f"{n} status" for n in names), *(f"{n} corrected" for n in names)}
    counts: dict[str, int] = {}
    for title, frame, text in sheets:
        frame = frame.rename(columns={"total": "rows"})
        for name, n in write_frame(
            wb, cells, titles, title, frame, text, human=True, keep=keep
        ).items():
            counts[name] = n
    save_workbook(wb, path)
    return ExperimentExport(path, counts, cells.truncated, cells.escaped)
