"""The comparison workbook: guard, leaderboard, tables, paired stats, transitions.

Built on the one safe cell writer (:mod:`envloop_nb._export.cells`) the job export
uses: text stays text (never a formula), long text is cut at Excel's limit with a
visible marker, control characters are escaped; a sheet's incomparability mark is a
bold red first row.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._compare.guard import comparable, differences, mark
from .._compare.leaderboard import leaderboard
from .._compare.paired import paired, transitions
from .._compare.state import CompareState, others
from .._compare.tables import strengths, table
from .._files import output_file
from .cells import DIFF, new_workbook, save_workbook, write_frame

if TYPE_CHECKING:
    import os

    import pandas as pd

__all__ = ["export_compare_xlsx"]


def export_compare_xlsx(
    state: CompareState, path: str | os.PathLike[str], *, rules: Any = None
) -> Path:
    """Write the comparison of ``state`` to an XLSX file; returns its path.

    With ``rules`` (a per-task :class:`envloop_nb.BucketRules`), one bucket transition
    sheet per other job is added.
    """
    import pandas as pd

    out = output_file(path)  # refused before the work, not after
    wb, cells, titles = new_workbook()
    guard = pd.DataFrame(
        [
            {
                "field": d.field,
                "jobs": ", ".join(d.jobs),
                "detail": d.detail,
                "blocking": d.blocking,
            }
            for d in differences(state)
        ],
        columns=["field", "jobs", "detail", "blocking"],
    )
    note = mark(state)
    head = "comparable" if comparable(state) else "NOT comparable"
    sheets: list[tuple[str, pd.DataFrame, str]] = [
        ("Guard", guard, f"{head} · baseline {state.baseline} · policy {state.policy}"),
        ("Leaderboard", leaderboard(state), note),
        ("By subset", table(state, "subset"), note),
    ]
    dims = table(state, "dimension")
    if len(dims):
        sheets.append(("By dimension", dims, note))
    sheets += [
        ("Strengths", strengths(state, "subset"), note),
        ("Paired", paired(state), note),
        ("Transitions", transitions(state), note),
    ]
    if rules is not None:
        for other in others(state):
            long = transitions(state, other, rules, shape="long")
            sheets.append((f"Buckets {other}", long, note))
    # job ids and dimension names are data: their columns keep them (job_base, format_pct)
    keep = {*state.job_ids, *(f"{j} coverage" for j in state.job_ids)}
    keep |= {str(d) for d in dims["dimension"]} if len(dims) else set()
    for title, frame, text in sheets:
        # people's headers and number formats; the strengths' interval is of a difference
        formats = {"low": DIFF, "high": DIFF} if title == "Strengths" else None
        write_frame(wb, cells, titles, title, frame, text, human=True, keep=keep, formats=formats)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_workbook(wb, out)
    return out
