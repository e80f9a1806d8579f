"""The one safe XLSX cell writer: every workbook of the package is written through it.

Workbooks are written in openpyxl's write-only (streaming) mode, so memory stays flat in
the number of rows. The guarantees, for any workbook built on this module:

* **Text is never a formula.** Everything that came from a model, a user or a file is
  a text cell (``data_type "s"``), with Excel's quote prefix when it starts with
  ``= + - @`` (it stays text even when a reviewer edits the cell).
* **Control characters are escaped.** XML-illegal control characters and lone
  surrogates are shown as ``\\x07``-style escapes (counted in ``CellWriter.escaped``).
* **Long text is cut visibly.** A cell over 32,767 characters (counted as Excel does,
  in UTF-16 code units) is cut with a ``"… [truncated N chars]"`` marker, never inside
  a character (counted in ``CellWriter.truncated``).
* **Sheet titles never collide.** :func:`sheet_title` makes Excel-legal, unique titles.
* **Rows never overflow.** A :class:`Sheet` that would pass 1,048,576 rows continues on
  ``"Title (2)"``, ``"Title (3)"``...

The pieces, low to high:

* :class:`CellWriter` makes ready cells (``text``, ``value``, ``header``, ``note``).
* :class:`Column` and :class:`Sheet`: a logical sheet of typed columns, streamed row by
  row, with frozen header, auto-filter, print setup and row-overflow parts.
* :func:`free_sheet`: a sheet for hand-laid rows of ready cells (e.g. a summary).
* :func:`new_workbook`, :func:`write_frame`, :func:`save_workbook`: a whole workbook of
  pandas frames in three calls (the comparison workbook is written this way).

Examples
--------
>>> import pandas as pd, tempfile
>>> from pathlib import Path
>>> wb, cells, titles = new_workbook()
>>> write_frame(wb, cells, titles, "Data", pd.DataFrame({"text": ["=1+1", "ok\\x07"]}))
{'Data': 2}
>>> path = Path(tempfile.mkdtemp()) / "out.xlsx"
>>> save_workbook(wb, path)
>>> from openpyxl import load_workbook
>>> [c.value for c in load_workbook(path)["Data"]["A"]]
['text', '=1+1', 'ok\\\\x07']
>>> cells.escaped, cells.truncated
(1, 0)
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import math
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._files import written_whole
from .formats import COUNT, DIFF, NUM, PCT, number_format
from .sheet_rows import FORMULA_START as _FORMULA_START
from .sheet_rows import RowFile, splice

__all__ = [
    "COUNT",
    "DIFF",
    "MAX_CELL_CHARS",
    "MAX_ROWS",
    "MAX_ROW_LINES",
    "NUM",
    "PCT",
    "RESERVED_TITLES",
    "CellWriter",
    "Column",
    "Sheet",
    "frame_value",
    "free_sheet",
    "new_workbook",
    "number_format",
    "plain",
    "print_setup",
    "save_workbook",
    "sheet_title",
    "truncate_text",
    "unique_name",
    "utf16_len",
    "write_frame",
]

#: Excel's hard limit of rows per sheet (the header row included).
MAX_ROWS = 1_048_576
#: Excel's hard limit of characters per cell, counted in UTF-16 code units (an emoji or
#: any other character beyond U+FFFF takes two).
MAX_CELL_CHARS = 32_767

# XML 1.0 forbids these characters (C0 controls other than tab/newline/CR, U+FFFE, U+FFFF)
# and lone surrogates (U+D800-U+DFFF as code points of a str: not encodable as UTF-8).
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: Most text lines a streamed row is made tall enough to show.
MAX_ROW_LINES = 8


class CellWriter:
    """Makes write-only cells: text always as text, numbers with their formats.

    One writer serves a whole workbook (several sheets); ``truncated`` and ``escaped``
    count the cells it cut at Excel's limit and the cells whose control characters it
    escaped. Its cells go into a sheet from :class:`Sheet` or :func:`free_sheet` (their
    rows take ready cells), with ``ws.append([...])``.

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
        """A text cell of sheet ``ws``: cleaned (:meth:`clean`), never a formula."""
        value = self.clean(value)
        # data type "s": never a formula, whatever the first character
        return self._make(ws, value, "s", None, wrap, value.startswith(_FORMULA_START), bold)

    def value(
        self, ws: Any, value: Any, fmt: str | None = None, wrap: bool = False, bold: bool = False
    ) -> Any:
        """A cell for any value: text as :meth:`text`, numbers with number format ``fmt``,
        booleans, datetimes (as UTC). ``None`` and NaN give no cell (``None``); an
        infinite float is written as text; other objects as their ``str``."""
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
        """A bold text cell (a column header)."""
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

    class _FastCell(Cell):  # type: ignore[misc]  # openpyxl ships no types
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
class Column:
    """One column of a :class:`Sheet`: header text, width (Excel character units),
    number format of its numbers (e.g. :data:`PCT`) and whether its text wraps."""

    name: str
    width: float
    fmt: str | None = None
    wrap: bool = False


class Sheet:
    """A logical sheet that continues on "Title (2)"... past Excel's row limit.

    ``Sheet(wb, title, columns, cells, taken)`` creates the first part with its header
    row (frozen, printed on every page); :meth:`append` writes one row of plain values
    (one per column, through ``cells``: text stays text); :meth:`close` sets the last
    part's auto-filter. ``counts`` holds the data rows of each part, by sheet title.

    Every part's title comes from :func:`sheet_title` with the workbook's ``taken``
    titles, so no part ever takes a name another sheet has (or will want). A ``note``
    (e.g. "⚠ not comparable") is a bold red first row on every part, above the header.
    """

    def __init__(
        self,
        wb: Any,
        title: str,
        columns: list[Column],
        cells: CellWriter,
        taken: set[str],
        note: str = "",
    ) -> None:
        self.wb, self.title, self.columns, self.cells = wb, title, columns, cells
        self.formats = [(c.fmt, c.wrap) for c in columns]
        self._wrapped = _wrapped_columns(columns)
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
        print_setup(ws, self.header_row)
        if self.note:
            ws.append([self.cells.note(ws, self.note)])
        ws.append([self.cells.header(ws, c.name) for c in self.columns])
        # the data rows: XML text spliced in when the workbook is saved (save_workbook)
        self.rows = RowFile(
            ws,
            [get_column_letter(i) for i in range(1, len(self.columns) + 1)],
            self.formats,
            functools.partial(self._style, ws),
            self.cells.clean,
        )
        self.ws = ws
        self.rows_in_part = 0
        self.counts[name] = 0

    def _style(self, ws: Any, fmt: str | None, wrap: bool, quote: bool) -> int:
        return self.cells._template(ws, fmt, wrap, quote, False)[1]

    def _close_part(self) -> None:
        from openpyxl.utils import get_column_letter

        last = get_column_letter(max(len(self.columns), 1))
        top = self.header_row
        self.ws.auto_filter.ref = f"A{top}:{last}{self.rows_in_part + top}"

    def append(self, values: Sequence[Any]) -> None:
        """Write one row (a value per column), on a new part when this one is full."""
        # MAX_ROWS is read at call time so tests can patch it small.
        if self.rows_in_part + self.header_row >= _max_rows():
            self._new_part()
        lines = _wrapped_lines(values, self._wrapped)
        row_idx = self.rows_in_part + self.header_row + 1
        # streamed rows are not auto-fitted: give wrapped text room
        self.rows.append(row_idx, values, 15 * lines if lines > 1 else None)
        self.rows_in_part += 1
        self.counts[self.ws.title] += 1

    def close(self) -> None:
        """Finish the last part (its auto-filter); call once, after the last row."""
        self._close_part()


def free_sheet(wb: Any, title: str, taken: set[str]) -> Any:
    """A sheet of ``wb`` for rows laid out by hand: ``ws.append([cells.value(ws, v), ...])``.

    Its title comes from :func:`sheet_title` (unique in ``taken``); its rows take ready
    cells of a :class:`CellWriter` (``None`` leaves a cell empty). Unlike :class:`Sheet`
    it has no columns, header or row-overflow parts: for short sheets such as a summary.
    """
    ws = wb.create_sheet(sheet_title(title, taken))
    ws._values_to_row = _cells_as_given  # rows are appended as ready cells
    return ws


def _wrapped_columns(columns: Sequence[Column]) -> list[tuple[int, int]]:
    """``(index, characters per line)`` of each wrapped column."""
    return [(i, max(int(c.width * 1.1), 1)) for i, c in enumerate(columns) if c.wrap]


def _wrapped_lines(values: Sequence[Any], wrapped: Sequence[tuple[int, int]]) -> int:
    """Text lines the tallest wrapped cell of a row needs (1..MAX_ROW_LINES)."""
    most = 1
    for i, per_line in wrapped:
        v = values[i]
        if isinstance(v, str) and v:
            n = 0
            for part in v[: per_line * MAX_ROW_LINES].split("\n"):
                n += max(1, -(-len(part) // per_line))
                if n >= MAX_ROW_LINES:
                    break
            most = max(most, min(n, MAX_ROW_LINES))
    return most


def print_setup(ws: Any, header_row: int = 1) -> None:
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


# -- a workbook of frames ---------------------------------------------------------------


def new_workbook() -> tuple[Any, CellWriter, set[str]]:
    """A streaming workbook, its safe cell writer and its set of sheet titles.

    Pass all three to :func:`write_frame` (or :class:`Sheet` / :func:`free_sheet`) for
    every sheet, then :func:`save_workbook`; the titles keep sheet names unique.
    """
    from openpyxl import Workbook

    return Workbook(write_only=True), CellWriter(), set()


def frame_value(value: Any) -> Any:
    """A frame value as a cell value: lists joined, numpy/pandas scalars plain, missing None."""
    import numpy as np

    if isinstance(value, list | tuple | np.ndarray):
        return ", ".join(map(str, value))
    return plain(value)


def write_frame(
    wb: Any,
    cells: CellWriter,
    titles: set[str],
    title: str,
    frame: Any,
    note: str = "",
    *,
    human: bool = False,
    keep: Collection[str] = (),
    formats: dict[str, str] | None = None,
) -> dict[str, int]:
    """Write a pandas frame on sheet ``title`` (continued past Excel's row limit).

    The same cells as the job workbook: text always text (never a formula), cut at
    Excel's limit with a visible marker, XML-illegal characters escaped; ``note`` is a
    bold red first row. Numbers stay numbers with a number format from
    :func:`number_format` (``formats`` overrides it per column); ``human`` writes the
    headers people read (:func:`envloop_nb._present.display.header`) instead of the
    column names, but a column in ``keep`` (a job id, a dimension's name: data, not a
    word) keeps its name. Returns the data rows per sheet part.
    """
    from .._present.display import header

    widths = []
    names: list[str] = []
    for c in frame.columns:
        name = header(c) if human and str(c) not in keep else str(c)
        if name in names:  # two columns under one header (tasks, total_members: Tasks)
            name = header(str(c).replace("_", " "))  # the column's own words
        names.append(name)
    for i, name in enumerate(names):
        longest = max((min(len(str(v)), 60) for v in frame.iloc[:, i]), default=0)
        widths.append(min(max(len(name), longest, 6) + 2, 62))
    fmts = [
        (formats or {}).get(str(c)) or number_format(str(c), frame.iloc[:, i].tolist())
        for i, c in enumerate(frame.columns)
    ]
    columns = [Column(n, w, f) for n, w, f in zip(names, widths, fmts, strict=True)]
    sheet = Sheet(wb, title, columns, cells, titles, note=note)
    for row in frame.itertuples(index=False, name=None):
        sheet.append([frame_value(v) for v in row])
    sheet.close()
    return sheet.counts


def save_workbook(wb: Any, path: Path) -> None:
    """Save ``wb`` to ``path`` atomically: a reader never sees a half-written file, and
    a failed save leaves no partial file (:func:`envloop_nb._files.written_whole`)."""
    with written_whole(path) as tmp:
        wb.save(tmp)
        splice(wb, tmp)  # the Sheets' data rows


def plain(v: Any) -> Any:
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


def unique_name(name: str, taken: set[str], prefix: str) -> str:
    """``name``, or ``prefix + name`` when a column of the sheet has it already (``taken``).

    Examples
    --------
    >>> taken = set()
    >>> unique_name("reward", taken, "dim: "), unique_name("reward", taken, "dim: ")
    ('reward', 'dim: reward')
    """
    out = name if name not in taken else f"{prefix}{name}"
    taken.add(out)
    return out
