"""An XLSX workbook for reviewers: Summary, Tasks and Attempts sheets (openpyxl).

The workbook is written in openpyxl's write-only (streaming) mode and attempts are
streamed from DuckDB in Arrow record batches, so memory stays flat in the number of
rows. Everything that came from a model, a user or a file is written as a text cell
(``data_type "s"`` plus Excel's quote prefix when it starts with ``= + - @``), never as
a formula. Excel's limits are handled, not hit: a sheet that would pass 1,048,576 rows
continues on ``"Attempts (2)"``, ``"Attempts (3)"``...; a cell over 32,767 characters
(counted as Excel does, in UTF-16 code units) is cut with a visible ``"… [truncated N
chars]"`` marker, never inside a character; XML-illegal control characters and lone
surrogates are shown as ``\\x07``-style escapes.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._buckets.rules import (
    EXCLUDED,
    BucketResult,
    BucketRules,
    check_finished,
    job_buckets,
    parse_names,
)
from .._store.sql import ident

if TYPE_CHECKING:
    from .._job import Job
    from .._types import Policy

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_ROWS",
    "ExportResult",
    "export_xlsx",
    "new_workbook",
    "save_workbook",
    "truncate_text",
    "utf16_len",
    "write_frame",
]

#: Excel's hard limit of rows per sheet (the header row included).
MAX_ROWS = 1_048_576
#: Excel's hard limit of characters per cell, counted in UTF-16 code units (an emoji or
#: any other character beyond U+FFFF takes two).
MAX_CELL_CHARS = 32_767
#: Attempts fetched from DuckDB per Arrow batch.
BATCH_ROWS = 2_048

# XML 1.0 forbids these characters (C0 controls other than tab/newline/CR, U+FFFE, U+FFFF)
# and lone surrogates (U+D800-U+DFFF as code points of a str: not encodable as UTF-8).
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PCT = "0.0%"
_NUM = "0.###"


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_xlsx` wrote.

    ``rows_per_sheet`` counts data rows (header excluded) per sheet, in sheet order;
    ``truncated_cells`` counts cells cut at Excel's 32,767-character limit;
    ``escaped_cells`` counts cells whose XML-illegal control characters were escaped;
    ``partial`` is true when the job was still pending or running (with or without rules).
    """

    path: Path
    rows_per_sheet: dict[str, int]
    truncated_cells: int
    escaped_cells: int
    partial: bool
    buckets: tuple[str, ...] | None
    rules: BucketRules | None = field(default=None, repr=False)

    def __str__(self) -> str:
        sheets = ", ".join(f"{k} {v:,}" for k, v in self.rows_per_sheet.items())
        extra = ""
        if self.truncated_cells:
            extra += f" · {self.truncated_cells:,} cells truncated"
        if self.partial:
            extra += " · PARTIAL (job unfinished)"
        return f"wrote {self.path.name}: {sheets} rows{extra}"


class _Cells:
    """Makes write-only cells: text always as text, numbers with their formats.

    Each combination of formatting (number format, wrap, quote prefix, bold) is built
    once as an openpyxl ``StyleArray`` and registered with the workbook once; a cell
    then only gets a copy of that array and the registered style id (see
    :class:`_FastCell`), so no style object is built or hashed per cell. Values are
    bound directly (``_value`` and ``data_type``) instead of through openpyxl's type
    sniffing: text is always ``"s"`` (a string starting with ``=`` is never a formula),
    numbers ``"n"``, booleans ``"b"``, datetimes ``"d"``.
    """

    def __init__(self) -> None:
        from openpyxl.styles import Alignment, Font

        self.truncated = 0
        self.escaped = 0
        self.wrap = Alignment(wrap_text=True, vertical="top")
        self.top = Alignment(vertical="top")
        self.bold = Font(bold=True)
        self.red = Font(bold=True, color="C00000")
        self._styles: dict[tuple[int, str | None, bool, bool, bool, bool], tuple[Any, int]] = {}

    def _template(
        self, ws: Any, fmt: str | None, wrap: bool, quote: bool, bold: bool, red: bool = False
    ) -> tuple[Any, int]:
        """The StyleArray and workbook style id for one formatting combination."""
        key = (id(ws.parent), fmt, wrap, quote, bold, red)
        found = self._styles.get(key)
        if found is None:
            from openpyxl.cell import WriteOnlyCell

            cell = WriteOnlyCell(ws)
            cell.alignment = self.wrap if wrap else self.top
            if fmt:
                cell.number_format = fmt
            if quote:
                cell.quotePrefix = True  # stays text even when a reviewer edits the cell
            if bold or red:
                cell.font = self.red if red else self.bold
            found = (copy.copy(cell._style), cell.style_id)
            self._styles[key] = found
        return found

    def _make(
        self,
        ws: Any,
        value: Any,
        data_type: str,
        fmt: str | None = None,
        wrap: bool = False,
        quote: bool = False,
        bold: bool = False,
        red: bool = False,
    ) -> Any:
        style, sid = self._template(ws, fmt, wrap, quote, bold, red)
        cell = _fast_cell_class()(ws, style_array=style)
        cell._value = value
        cell.data_type = data_type
        cell.sid = sid
        return cell

    def clean(self, value: str) -> str:
        """Escape XML-illegal characters and cut at Excel's cell limit (counted)."""
        if _ILLEGAL.search(value):
            value = _ILLEGAL.sub(_escape, value)
            self.escaped += 1
        # at most 2 UTF-16 units per character: shorter text is never measured
        if len(value) > MAX_CELL_CHARS // 2 and utf16_len(value) > MAX_CELL_CHARS:
            value = truncate_text(value)
            self.truncated += 1
        return value

    def text(self, ws: Any, value: str, wrap: bool = False, bold: bool = False) -> Any:
        value = self.clean(value)
        # data type "s": never a formula, whatever the first character
        return self._make(ws, value, "s", None, wrap, value.startswith(_FORMULA_START), bold)

    def value(
        self, ws: Any, value: Any, fmt: str | None = None, wrap: bool = False, bold: bool = False
    ) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            return self.text(ws, value, wrap, bold)
        if isinstance(value, bool):
            return self._make(ws, value, "b", bold=bold)
        if isinstance(value, int | float):
            if isinstance(value, float) and not math.isfinite(value):
                return None if math.isnan(value) else self.text(ws, str(value), bold=bold)
            return self._make(ws, value, "n", fmt, bold=bold)
        if isinstance(value, dt.datetime):
            naive = value.astimezone(dt.UTC).replace(tzinfo=None)
            return self._make(ws, naive, "d", "yyyy-mm-dd hh:mm:ss", bold=bold)
        return self.text(ws, str(value), wrap, bold)

    def header(self, ws: Any, value: str) -> Any:
        return self.text(ws, value, bold=True)

    def note(self, ws: Any, value: str) -> Any:
        """A bold dark-red text cell (a sheet's warning line above its header)."""
        value = self.clean(value)
        return self._make(ws, value, "s", None, False, value.startswith(_FORMULA_START), red=True)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@functools.cache
def _fast_cell_class() -> Any:
    """An openpyxl ``Cell`` whose style id was registered once for its whole style."""
    from openpyxl.cell.cell import Cell

    class _FastCell(Cell):
        __slots__ = ("sid",)

        @property
        def style_id(self) -> int:
            return int(self.sid)

    return _FastCell


def _cells_as_given(values: Sequence[Any], row_idx: int) -> Iterator[Any]:
    """Stand-in for openpyxl's ``_values_to_row`` when every value is a ready cell.

    openpyxl's version first tries to bind each cell *as a value* (raising and catching
    a ValueError, formatting the cell's repr) and builds a spare cell after each styled
    one; our cells are complete, so they only get their coordinates.
    """
    for col_idx, cell in enumerate(values, 1):
        if cell is None:
            continue
        cell.column = col_idx
        cell.row = row_idx
        yield cell


def utf16_len(value: str) -> int:
    """Length of ``value`` in UTF-16 code units, as Excel counts a cell's characters.

    Examples
    --------
    >>> len("a😀"), utf16_len("a😀")
    (2, 3)
    """
    return len(value.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_prefix(value: str, units: int) -> str:
    """The longest start of ``value`` of at most ``units`` UTF-16 units (pairs kept whole)."""
    data = value.encode("utf-16-le", "surrogatepass")[: 2 * units]
    if len(data) >= 2 and 0xD8 <= data[-1] <= 0xDB:  # a high surrogate without its pair
        data = data[:-2]
    return data.decode("utf-16-le", "surrogatepass")


def truncate_text(value: str, limit: int | None = None) -> str:
    """Cut ``value`` to ``limit`` UTF-16 units with a visible marker saying how much went.

    Excel counts a cell's 32,767 characters in UTF-16 code units: a character beyond
    U+FFFF (an emoji) takes two. The result, marker included, is at most ``limit``
    units and never splits such a character; the marker counts the characters cut.

    Examples
    --------
    >>> truncate_text("x" * 50, limit=30)
    'xxxxxxxx… [truncated 42 chars]'
    >>> cut = truncate_text("😀" * 40, limit=30)
    >>> cut, utf16_len(cut)
    ('😀😀😀😀… [truncated 36 chars]', 30)
    """
    limit = MAX_CELL_CHARS if limit is None else limit
    total = utf16_len(value)
    if total <= limit:
        return value
    keep = limit  # UTF-16 units of the text kept
    while True:
        head = _utf16_prefix(value, keep)
        marker = f"… [truncated {len(value) - len(head)} chars]"
        room = limit - len(marker)  # the marker is ASCII and "…": one unit per character
        if utf16_len(head) <= room or keep == 0:
            return (head + marker)[:limit] if keep == 0 else head + marker
        keep = max(room, 0)


@dataclass
class _Column:
    name: str
    width: float
    fmt: str | None = None
    wrap: bool = False


class _Sheet:
    """A logical sheet that continues on "Title (2)"... past Excel's row limit.

    Every part's title comes from :func:`sheet_title` with the workbook's ``taken``
    titles, so no part ever takes a name another sheet has (or will want). A ``note``
    (e.g. "⚠ not comparable") is a bold red first row on every part, above the header.
    """

    def __init__(
        self,
        wb: Any,
        title: str,
        columns: list[_Column],
        cells: _Cells,
        taken: set[str],
        note: str = "",
    ) -> None:
        self.wb, self.title, self.columns, self.cells = wb, title, columns, cells
        self.taken = taken
        self.note = note
        self.header_row = 2 if note else 1
        self.part = 0
        self.rows_in_part = 0
        self.counts: dict[str, int] = {}
        self.ws: Any = None
        self._new_part()

    def _new_part(self) -> None:
        from openpyxl.utils import get_column_letter

        if self.ws is not None:
            self._close_part()
        self.part += 1
        name = sheet_title(self.title, self.taken, self.part)
        ws = self.wb.create_sheet(name)
        assert ws.title == name  # openpyxl renames a duplicate: sheet_title never makes one
        ws._values_to_row = _cells_as_given  # rows are appended as ready cells
        for i, col in enumerate(self.columns, 1):
            ws.column_dimensions[get_column_letter(i)].width = col.width
        ws.freeze_panes = f"A{self.header_row + 1}"
        _print_setup(ws, self.header_row)
        if self.note:
            ws.append([self.cells.note(ws, self.note)])
        ws.append([self.cells.header(ws, c.name) for c in self.columns])
        self.ws = ws
        self.rows_in_part = 0
        self.counts[name] = 0

    def _close_part(self) -> None:
        from openpyxl.utils import get_column_letter

        last = get_column_letter(max(len(self.columns), 1))
        top = self.header_row
        self.ws.auto_filter.ref = f"A{top}:{last}{self.rows_in_part + top}"

    def append(self, values: Sequence[Any]) -> None:
        # MAX_ROWS is read at call time so tests can patch it small.
        if self.rows_in_part + self.header_row >= _max_rows():
            self._new_part()
        ws = self.ws
        cells = self.cells
        lines = _row_lines(values, self.columns)
        row_idx = self.rows_in_part + self.header_row + 1
        if lines > 1:  # streamed rows are not auto-fitted: give wrapped text room
            ws.row_dimensions[row_idx].height = 15 * lines
        ws.append(
            [cells.value(ws, v, c.fmt, c.wrap) for v, c in zip(values, self.columns, strict=True)]
        )
        if lines > 1:
            del ws.row_dimensions[row_idx]  # written already; keep memory flat
        self.rows_in_part += 1
        self.counts[ws.title] += 1

    def close(self) -> None:
        self._close_part()


#: Most text lines a streamed row is made tall enough to show.
MAX_ROW_LINES = 8


def _row_lines(values: Sequence[Any], columns: Sequence[_Column]) -> int:
    """Text lines the tallest wrapped cell of a row needs (1..MAX_ROW_LINES)."""
    most = 1
    for v, c in zip(values, columns, strict=True):
        if c.wrap and isinstance(v, str) and v:
            per_line = max(int(c.width * 1.1), 1)
            n = 0
            for part in v[: per_line * MAX_ROW_LINES].split("\n"):
                n += max(1, -(-len(part) // per_line))
                if n >= MAX_ROW_LINES:
                    break
            most = max(most, min(n, MAX_ROW_LINES))
    return most


def _print_setup(ws: Any, header_row: int = 1) -> None:
    """Landscape, all columns on one page width, header row repeated on every page."""
    ws.page_setup.orientation = "landscape"
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.print_title_rows = f"1:{header_row}"


def _max_rows() -> int:
    return MAX_ROWS


def _suffix_title(title: str, suffix: str) -> str:
    return title[: 31 - len(suffix)] + suffix


_BAD_TITLE = re.compile(r"[\[\]:*?/\\]")
#: Titles Excel refuses for a sheet of its own (compared ignoring case).
RESERVED_TITLES = frozenset({"history"})


def sheet_title(name: str, taken: set[str], part: int = 1) -> str:
    """An Excel sheet title for part ``part`` of the logical sheet ``name``, unused in ``taken``.

    ``taken`` holds the workbook's titles in lower case (Excel compares them ignoring
    case); the title returned is added to it. Part 1 is ``name`` itself, part n > 1
    (past 1,048,576 rows) is ``"name (n)"``; characters Excel forbids become ``_`` and
    titles are cut to 31 characters. When that title is taken — a bucket named like an
    overflow sheet, an overflow sheet named like a bucket, two names equal once cut — it
    gets a further ``" (2)"``, ``" (3)"``... until it is free: titles never collide.

    Examples
    --------
    >>> taken = set()
    >>> [sheet_title(n, taken, p) for n, p in [("hard", 1), ("hard", 2), ("hard (2)", 1)]]
    ['hard', 'hard (2)', 'hard (2) (2)']
    >>> taken = set()
    >>> [sheet_title(n, taken, p) for n, p in [("hard (2)", 1), ("hard", 1), ("hard", 2)]]
    ['hard (2)', 'hard', 'hard (2) (2)']
    >>> sheet_title("a/b:c" + "x" * 40, set(), 3)
    'a_b_cxxxxxxxxxxxxxxxxxxxxxx (3)'
    """
    base = _BAD_TITLE.sub("_", name).strip("'") or "sheet"
    title = (base[:31].rstrip("'") or "sheet") if part == 1 else _suffix_title(base, f" ({part})")
    first, i = title, 2
    while title.lower() in taken or title.lower() in RESERVED_TITLES:
        title = _suffix_title(first, f" ({i})")
        i += 1
    taken.add(title.lower())
    return title


# -- the one writer for any workbook of frames (also the comparison export) ---------


def new_workbook() -> tuple[Any, _Cells, set[str]]:
    """A streaming workbook, its safe cell writer and its set of sheet titles."""
    from openpyxl import Workbook

    return Workbook(write_only=True), _Cells(), set()


def _frame_value(value: Any) -> Any:
    """A frame value as a cell value: lists joined, numpy/pandas scalars plain, missing None."""
    import numpy as np

    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(map(str, value))
    return _plain(value)


def write_frame(
    wb: Any, cells: _Cells, titles: set[str], title: str, frame: Any, note: str = ""
) -> dict[str, int]:
    """Write a pandas frame on sheet ``title`` (continued past Excel's row limit).

    The same cells as the job workbook: text always text (never a formula), cut at
    Excel's limit with a visible marker, XML-illegal characters escaped; ``note`` is a
    bold red first row. Returns the data rows per sheet part.
    """
    widths = []
    for i, name in enumerate(frame.columns):
        longest = max((min(len(str(v)), 60) for v in frame.iloc[:, i]), default=0)
        widths.append(min(max(len(str(name)), longest, 6) + 2, 62))
    columns = [_Column(str(c), w) for c, w in zip(frame.columns, widths, strict=True)]
    sheet = _Sheet(wb, title, columns, cells, titles, note=note)
    for row in frame.itertuples(index=False, name=None):
        sheet.append([_frame_value(v) for v in row])
    sheet.close()
    return sheet.counts


def save_workbook(wb: Any, path: Path) -> None:
    """Save ``wb`` to ``path`` atomically: a reader never sees a half-written file."""
    tmp = path.with_name(path.name + ".partial-write")
    try:
        wb.save(tmp)
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()


# -- frames ---------------------------------------------------------------------------


def _tag_keys(job: Job) -> list[str]:
    rows = job.con.execute(
        """SELECT key FROM task_tags tt JOIN tasks t USING (job_id, task)
           WHERE tt.job_id = ? GROUP BY key
           ORDER BY key <> 'subset', min(t.position), key""",
        [job.id],
    ).fetchall()
    return [r[0] for r in rows]


def _dimension_names(job: Job) -> list[str]:
    rows = job.con.execute(
        "SELECT DISTINCT name FROM dimensions WHERE job_id = ? ORDER BY name", [job.id]
    ).fetchall()
    return [r[0] for r in rows]


def _unique(name: str, taken: set[str], prefix: str) -> str:
    out = name if name not in taken else f"{prefix}{name}"
    taken.add(out)
    return out


_CHAT_SQL = """CASE WHEN a.input_is_chat AND json_valid(a.input) AND json_type(a.input::JSON) = 'ARRAY'
THEN array_to_string(list_transform(json_extract(a.input::JSON, '$[*]'),
       m -> coalesce(m->>'role', '?') || ': ' ||
            CASE WHEN json_type(m->'content') = 'ARRAY'
                 THEN array_to_string(list_transform(json_extract(m->'content', '$[*]'),
                        p -> coalesce(p->>'text', p::VARCHAR)), chr(10))
                 ELSE coalesce(m->>'content', '') END),
     chr(10) || chr(10))
ELSE a.input END"""


def render_chat_sql(column: str = "a.input", is_chat: str = "a.input_is_chat") -> str:
    """SQL rendering a ChatML message list as readable turns ``"user: ...\\n\\nassistant: ..."``."""
    return _CHAT_SQL.replace("a.input_is_chat", is_chat).replace("a.input", column)


# -- the export -----------------------------------------------------------------------


def export_xlsx(
    job: Job,
    path: str | Path,
    *,
    rules: BucketRules | None = None,
    buckets: Sequence[str] | str | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    sheet_per_bucket: bool = False,
    allow_partial: bool = False,
) -> ExportResult:
    """Write a workbook for reviewers: Summary, Tasks and Attempts sheets.

    Parameters
    ----------
    job
        The job to export.
    path
        The ``.xlsx`` file to write (replaced if it exists).
    rules
        Bucket rules (:class:`envloop_nb.BucketRules`). Without rules the whole job is
        exported and there is no bucket column.
    buckets
        Export only these buckets' tasks and attempts (needs ``rules``). ``None``
        exports everything, including tasks whose metric is undefined (blank bucket).
    policy, threshold
        Metric options, as in :meth:`envloop_nb.Job.summary`.
    sheet_per_bucket
        Write each bucket's attempts on its own sheet (named after the bucket) instead
        of one Attempts sheet (needs ``rules``).
    allow_partial
        Bucket a pending/running job anyway; the workbook is then marked PARTIAL.
        Without ``rules`` nothing is bucketed, so an unfinished job is exported without
        it, and marked PARTIAL all the same.

    Returns
    -------
    ExportResult
        Rows per sheet, truncated-cell count, partial flag.

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> out = job.export_xlsx(tempfile.mkdtemp() + "/review.xlsx")
    >>> out.rows_per_sheet["Tasks"], out.rows_per_sheet["Attempts"]
    (3, 6)
    """
    from openpyxl import Workbook

    if rules is None and buckets is not None:
        raise ValueError(
            "buckets=... needs rules=...: without bucketing only 'export everything' is possible"
        )
    if rules is None and sheet_per_bucket:
        raise ValueError("sheet_per_bucket=True needs rules=... to know the buckets")
    if rules is not None and not isinstance(rules, BucketRules):
        raise TypeError(f"rules must be a BucketRules, got {type(rules).__name__}")
    chosen = parse_names(rules, buckets) if rules is not None else None
    path = Path(path)
    if path.suffix.lower() != ".xlsx":
        raise ValueError(f"{path}: the workbook file name must end in .xlsx")
    if path.parent and not path.parent.exists():
        raise FileNotFoundError(f"{path.parent}: no such folder to write the workbook into")

    result: BucketResult | None = None
    if rules is not None:
        result = job_buckets(
            job, rules, policy=policy, threshold=threshold, allow_partial=allow_partial
        )
        partial = result.partial
    else:  # nothing is bucketed, so nothing to refuse; an unfinished job is still partial
        partial, _ = check_finished(job, allow_partial=True)
    from .._metrics.counts import samples

    summary = job.summary(policy=policy, threshold=threshold)
    tasks = (
        result.frame
        if result is not None and rules is not None and rules.level == "task"
        else samples(job.con, job.id, policy=policy, threshold=threshold)
    )

    wb = Workbook(write_only=True)
    cells = _Cells()
    counts: dict[str, int] = {}
    titles: set[str] = set()  # every sheet title, lower case: see sheet_title
    summary_ws = wb.create_sheet(sheet_title("Summary", titles))  # filled last, shown first
    summary_ws._values_to_row = _cells_as_given  # rows are appended as ready cells

    # -- Tasks ---------------------------------------------------------------------
    tasks_sheet = _write_tasks(job, wb, cells, tasks, result, chosen, titles)
    counts.update(tasks_sheet.counts)

    # -- Attempts ------------------------------------------------------------------
    dims = _dimension_names(job)
    if sheet_per_bucket and rules is not None:
        names = chosen or rules.names
        groups: list[tuple[str, list[str | None]]] = [(n, [n]) for n in names]
        if chosen is None and result is not None and result.excluded:
            groups.append((EXCLUDED, [None]))
        for name, group in groups:
            sheet = _write_attempts(job, wb, cells, name, rules, result, group, dims, titles)
            counts.update(sheet.counts)
    else:
        group_all: list[str | None] | None = list(chosen) if chosen is not None else None
        sheet = _write_attempts(job, wb, cells, "Attempts", rules, result, group_all, dims, titles)
        counts.update(sheet.counts)

    exported_at = dt.datetime.now(dt.UTC)
    summary_rows = _write_summary(
        job,
        summary_ws,
        cells,
        summary,
        result,
        chosen,
        counts,
        exported_at,
        policy,
        threshold,
        partial,
    )
    counts = {"Summary": summary_rows, **counts}
    save_workbook(wb, path)
    return ExportResult(
        path=path,
        rows_per_sheet=counts,
        truncated_cells=cells.truncated,
        escaped_cells=cells.escaped,
        partial=partial,
        buckets=tuple(chosen) if chosen is not None else None,
        rules=rules,
    )


def _write_tasks(
    job: Job,
    wb: Any,
    cells: _Cells,
    tasks: Any,
    result: BucketResult | None,
    chosen: list[str] | None,
    titles: set[str],
) -> _Sheet:
    import pandas as pd

    frame = tasks
    if result is not None and result.rules.level == "attempt" and chosen is not None:
        # per-attempt buckets: keep tasks that have an attempt in a chosen bucket
        keep = set(result.frame.loc[result.frame["bucket"].isin(chosen), "task"])
        frame = frame[frame["task"].isin(keep)]
    elif result is not None and chosen is not None:
        frame = frame[frame["bucket"].isin(chosen)]
    tag_keys = _tag_keys(job)
    tag_rows = job.con.execute(
        "SELECT task, key, value FROM task_tags WHERE job_id = ?", [job.id]
    ).df()
    tags = (
        tag_rows.pivot(index="task", columns="key", values="value")
        if len(tag_rows)
        else pd.DataFrame(index=pd.Index([], name="task"))
    )
    taken: set[str] = set()
    cols: list[tuple[str, _Column]] = []  # (source column, sheet column)
    bucketed = result is not None and result.rules.level == "task"
    if bucketed:
        cols.append(("bucket", _Column(_unique("bucket", taken, ""), 18)))
    cols.append(("task", _Column(_unique("task", taken, ""), 28)))
    tag_cols = [(f"tag:{k}", _Column(_unique(k, taken, "tag: "), 14)) for k in tag_keys]
    cols.extend(tag_cols)
    pct = {"pass_rate"} | {c for c in frame.columns if c.startswith(("pass@", "pass^"))}
    skip = {"bucket", "task", "tags", "complete", *tag_keys}  # tags have their own columns
    for c in frame.columns:
        if c in skip:
            continue
        fmt = _PCT if c in pct else (_NUM if c.startswith(("reward", "composite")) else None)
        if result is not None and c == result.metric and c not in pct:
            fmt = _NUM
        width = max(10, len(c) + 3)
        cols.append((c, _Column(_unique(c, taken, "metric: "), width, fmt)))
    sheet = _Sheet(wb, "Tasks", [c for _, c in cols], cells, titles)
    records = frame.merge(
        tags.rename(columns={k: f"tag:{k}" for k in tags.columns}),
        how="left",
        left_on="task",
        right_index=True,
    )
    src = [s for s, _ in cols]
    for row in records[src].itertuples(index=False, name=None):
        sheet.append([_plain(v) for v in row])
    sheet.close()
    return sheet


def _plain(v: Any) -> Any:
    """numpy / pandas scalars to Python values; missing to None."""
    if v is None:
        return None
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(v, "item"):
        return v.item()
    return v


def _attempt_columns(
    rules: BucketRules | None, result: BucketResult | None, dims: list[str]
) -> tuple[list[_Column], list[str]]:
    taken: set[str] = set()
    cols: list[_Column] = []
    exprs: list[str] = []

    def add(expr: str, name: str, width: float, fmt: str | None = None, wrap: bool = False) -> None:
        cols.append(_Column(_unique(name, taken, "dim: "), width, fmt, wrap))
        exprs.append(expr)

    add("a.task", "task", 28)
    add("a.attempt", "attempt", 9)
    if rules is not None:
        add("bucket", "bucket", 18)
    add("a.status", "status", 11)
    add("a.reward", "reward", 9, _NUM)
    add("a.composite", "composite", 11, _NUM)
    for i, d in enumerate(dims):
        add(f"a._d{i}", d, max(10, min(len(d) + 2, 20)), _NUM)
    add("a.error", "error", 40, wrap=True)
    add(render_chat_sql(), "input", 60, wrap=True)
    add("a.output", "output", 60, wrap=True)
    add("a.reference", "reference", 30, wrap=True)
    add("a.input_tokens", "input tokens", 12)
    add("a.output_tokens", "output tokens", 13)
    add("a.turns", "turns", 8)
    add("a.duration_s", "duration (s)", 12, "0.0")
    return cols, exprs


def _write_attempts(
    job: Job,
    wb: Any,
    cells: _Cells,
    title: str,
    rules: BucketRules | None,
    result: BucketResult | None,
    group: list[str | None] | None,
    dims: list[str],
    titles: set[str],
) -> _Sheet:
    cols, exprs = _attempt_columns(rules, result, dims)
    sheet = _Sheet(wb, title, cols, cells, titles)
    for batch in _attempt_batches(job, rules, result, group, dims, exprs):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for row in zip(*columns, strict=True):
            sheet.append(row)
    sheet.close()
    return sheet


def _attempt_batches(
    job: Job,
    rules: BucketRules | None,
    result: BucketResult | None,
    group: list[str | None] | None,
    dims: list[str],
    exprs: list[str],
) -> Iterator[Any]:
    """Arrow record batches of the attempts to export, in task order then attempt."""
    import pyarrow as pa

    con = job.con
    params: dict[str, Any] = {"job_id": job.id}
    # Dimension i is column _d{i}: names are data, and DuckDB identifiers ignore case.
    params.update({f"dim{i}": d for i, d in enumerate(dims)})
    pivot = ", ".join(
        f"max(value) FILTER (WHERE name = $dim{i}) AS _d{i}" for i in range(len(dims))
    )
    dim_join = (
        f"""LEFT JOIN (SELECT task, attempt, {pivot} FROM dimensions WHERE job_id = $job_id
                     GROUP BY task, attempt) d ON d.task = a.task AND d.attempt = a.attempt"""
        if dims
        else ""
    )
    bucket_join = ""
    bucket_expr = "NULL"
    registered = False
    if rules is not None and result is not None:
        if rules.level == "task":
            frame = result.frame[["task", "bucket"]]
            con.register("_xl_task_bucket", pa.Table.from_pandas(frame, preserve_index=False))
            registered = True
            bucket_join = "LEFT JOIN _xl_task_bucket tb ON tb.task = a.task"
            bucket_expr = "tb.bucket"
        else:
            metric = rules.metric
            col = (
                f"a.{ident(metric)}"
                if metric in ("reward", "composite")
                else f"d._d{dims.index(metric)}"
            )
            bucket_expr = rules.sql_case(col)
    where = ""
    if group is not None:
        named = [g for g in group if g is not None]
        conds = []
        if named:
            params["groups"] = named
            conds.append("list_contains($groups, bucket)")
        if None in group:
            conds.append("bucket IS NULL")
        where = "WHERE " + " OR ".join(conds)
    select = ", ".join(
        ("bucket" if e == "bucket" else e) + f" AS c{i}" for i, e in enumerate(exprs)
    )
    # The dimensions are joined inside, beside the attempt: a per-attempt bucket rule on a
    # dimension reads d._d{i} there; the outer query sees them as a._d{i}.
    dim_cols = "".join(f"d._d{i}, " for i in range(len(dims)))
    sql = f"""
        SELECT {select} FROM (
            SELECT a.*, t.position, {dim_cols}{bucket_expr} AS bucket
            FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
            {bucket_join}
            {dim_join}
            WHERE a.job_id = $job_id
        ) a
        {where}
        ORDER BY a.position, a.attempt
    """
    # The stream stays open while Python writes cells; DuckDB would draw a progress bar.
    bar = con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    con.execute("SET enable_progress_bar = false")
    try:
        reader = con.execute(sql, params).to_arrow_reader(BATCH_ROWS)
        yield from reader
    finally:
        if bar is not None:
            con.execute(f"SET enable_progress_bar = {bool(bar[0])}")
        if registered:
            con.unregister("_xl_task_bucket")


def _write_summary(
    job: Job,
    ws: Any,
    cells: _Cells,
    summary: Any,
    result: BucketResult | None,
    chosen: list[str] | None,
    counts: dict[str, int],
    exported_at: dt.datetime,
    policy: str,
    threshold: float | None,
    partial: bool,
) -> int:
    info = job.info
    ws.column_dimensions["A"].width = 26
    ws.column_dimensions["B"].width = 56
    ws.column_dimensions["C"].width = 16
    ws.column_dimensions["D"].width = 12
    ws.column_dimensions["E"].width = 60
    rows = 0
    _print_setup(ws)

    def put(
        *values: Any,
        fmt: str | None = None,
        fmts: Sequence[str | None] | None = None,
        bold: bool = False,
    ) -> None:
        nonlocal rows
        out = []
        for i, v in enumerate(values):
            out.append(cells.value(ws, v, fmts[i] if fmts else (fmt if i > 0 else None), bold=bold))
        ws.append(out)
        rows += 1

    put("envloop_nb review workbook", bold=True)
    if partial:
        changing = "buckets and pass rates" if result is not None else "attempts and pass rates"
        put(
            "PARTIAL",
            f"job was {info.get('status')} when exported: {changing} will change as "
            "attempts finish",
            bold=True,
        )
    put("job", job.id)
    put("status", info.get("status"))
    put("model", info.get("model"))
    put("dataset", f"{info.get('dataset_name')}@{info.get('dataset_version')}")
    put("revision", info.get("dataset_revision"))
    put("source", info.get("source_path"))
    put("policy", policy)
    put("threshold", "reward = 1 passes" if threshold is None else f"reward >= {threshold:g}")
    put("coverage", summary.coverage_text)
    k = summary.k
    metric_fmt = _PCT if summary.binary else _NUM
    put("score", summary.score, fmt=metric_fmt)
    put("pass", summary.pass_, fmt=_PCT)
    put(f"pass@{k}", summary.pass_at_k, fmt=_PCT)
    put(f"pass^{k}", summary.pass_hat_k, fmt=_PCT)
    put("partial", "yes" if partial else "no")
    put("exported at (UTC)", exported_at.strftime("%Y-%m-%d %H:%M:%S"))
    put(
        "exported",
        "everything" if chosen is None else "buckets: " + ", ".join(chosen),
    )
    put("rows per sheet", ", ".join(f"{n}: {c:,}" for n, c in counts.items()))
    put()
    if result is None:
        put("rules", "none: no bucketing, everything exported")
        return rows
    rules = result.rules
    for i, line in enumerate(str(rules).splitlines()):
        put("rules" if i == 0 else None, line)
    put("rules (JSON)", rules.to_json(indent=None))
    put()
    put("bucket", "range", "count", "share", "note", bold=True)
    frame = result.counts
    for name, rng, count, share, note in zip(
        frame["bucket"], frame["range"], frame["count"], frame["share"], frame["note"], strict=True
    ):
        put(
            name,
            rng,
            _plain(count),
            _plain(share),
            note or None,
            fmts=(None, None, None, _PCT, None),
        )
    if result.warnings:
        put()
        for w in result.warnings:
            put("warning", w)
    return rows
