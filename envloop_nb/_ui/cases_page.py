"""One page of the Cases view: what was asked (:class:`CaseQuery`), what came back
(:class:`CasePage`) and its HTML (:func:`page_html`).

:mod:`envloop_nb._ui.cases_query` answers a query in DuckDB; this module holds the
plain values both sides share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from .._present.cases_html import table_html
from .._types import Policy

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CasePage", "CaseQuery", "TextColumns", "View", "page_html"]

View = Literal["attempt", "task"]
#: Which text columns the attempt view shows: the input column switch.
TextColumns = Literal["both", "prompt", "completion"]


@dataclass(frozen=True)
class CaseQuery:
    """What the Cases view shows: one view, its filters, its order and one page.

    Attributes
    ----------
    view
        ``"attempt"`` (one row per attempt of record) or ``"task"`` (one row per task).
    status
        Keep attempts in these states (task view: tasks with such an attempt). Empty: all.
    tag_key, tag_value
        Keep tasks whose tag ``tag_key`` equals ``tag_value`` (``None``: no filter).
    bucket
        Keep rows in this bucket (needs a bucket assignment, see :class:`CaseSource`).
    low, high
        Inclusive range of reward (attempt view) or pass rate (task view); rows without
        that value are dropped while a bound is set.
    search
        Case-insensitive substring searched in task name, input, output and error; the
        attempt view then shows a ``match`` column: where it matched, in context.
    text
        The input column switch: ``"both"`` (prompt and completion), ``"prompt"`` or
        ``"completion"``.
    sort, descending
        Column to order by (``None``: task order, then attempt); nulls always last.
    page, page_size
        Zero-based page number and rows per page.
    policy, threshold
        Missing-value policy and pass threshold of the per-task numbers.
    """

    view: View = "attempt"
    status: tuple[str, ...] = ()
    tag_key: str = "subset"
    tag_value: str | None = None
    bucket: str | None = None
    low: float | None = None
    high: float | None = None
    search: str = ""
    text: TextColumns = "both"
    sort: str | None = None
    descending: bool = False
    page: int = 0
    page_size: int = 20
    policy: Policy = "unknown"
    threshold: float | None = None

    def replace(self, **changes: Any) -> CaseQuery:
        """A copy with ``changes``; any change other than ``page`` goes back to page 0."""
        if "page" not in changes:
            changes["page"] = 0
        return replace(self, **changes)


@dataclass(frozen=True)
class CasePage:
    """One page of the Cases view: its rows, the total count and where it sits."""

    frame: pd.DataFrame = field(repr=False)
    total: int
    query: CaseQuery
    columns: tuple[str, ...]
    #: Hover text per row of a column whose cells are shortened (``messages``).
    titles: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @property
    def pages(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, math.ceil(self.total / self.query.page_size))

    @property
    def first_row(self) -> int:
        """1-based number of the first row shown (0 when there is none)."""
        return 0 if self.total == 0 else self.query.page * self.query.page_size + 1

    @property
    def last_row(self) -> int:
        return self.query.page * self.query.page_size + len(self.frame)

    def describe(self) -> str:
        """``"rows 21–40 of 1,000 · page 2 of 50"``."""
        if self.total == 0:
            return "no rows match"
        return (
            f"rows {self.first_row:,}–{self.last_row:,} of {self.total:,} · "
            f"page {self.query.page + 1:,} of {self.pages:,}"
        )


def page_html(page: CasePage, *, selected: int | None = None) -> str:
    """The page as an HTML table (see :func:`envloop_nb._present.cases_html.table_html`).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"task": ["<b>x</b>"], "pass_rate": [0.5]})
    >>> p = CasePage(f, 1, CaseQuery(view="task"), ("task", "pass_rate"))
    >>> "&lt;b&gt;x&lt;/b&gt;" in page_html(p) and ">50.0%<" in page_html(p)
    True
    """
    return table_html(
        page.frame,
        first_row=page.first_row,
        selected=selected,
        highlight=page.query.search.strip() or None,
        row_link="attempts ›" if page.query.view == "task" else None,
        titles=page.titles,
    )
