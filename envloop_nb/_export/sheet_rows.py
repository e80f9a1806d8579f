"""A sheet's data rows written as XML text, spliced into the workbook openpyxl saved.

openpyxl's write-only mode streams, but every cell is a Python object written through
lxml element by element: ~5,000 rows/s for the attempts sheet (eleven cells a row), with
~75% of the time in openpyxl's per-cell writer and our cell objects. A :class:`RowFile`
writes a row as one string instead — exactly the XML openpyxl writes for the same cell
(``<c r= s= t="inlineStr"><is><t>…</t></is></c>``, numbers as ``"%.16g"``, datetimes as
Excel serials, the same registered style ids) — into a temporary file, so memory stays
flat in rows. openpyxl still writes everything else of the sheet (columns, frozen
panes, auto-filter, print setup, the note and header rows); :func:`splice` then copies
the saved workbook, inserting each sheet's rows before its ``</sheetData>``.

The cells' guarantees are :class:`~envloop_nb._export.cells.CellWriter`'s: text always
text (quote prefix before ``= + - @``), control characters escaped, long text cut at
Excel's limit — the same ``clean`` and the same styles.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
import tempfile
import weakref
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["FORMULA_START", "RowFile", "splice"]

#: Workbook -> its sheets' row files (a sheet's XML member is known once it is saved).
_PENDING: weakref.WeakKeyDictionary[Any, list[RowFile]] = weakref.WeakKeyDictionary()
#: A text starting with one of these gets Excel's quote prefix (it stays text).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FLUSH = 512  # rows kept as strings before they go to the file


class RowFile:
    """The data rows of one worksheet ``ws`` of a write-only workbook, as XML text.

    ``formats`` holds each column's ``(number format, wrap)``; ``style(fmt, wrap,
    quote)`` gives the workbook's style id of a cell format (registered once, as openpyxl
    registers it); ``clean`` makes text safe
    (:meth:`~envloop_nb._export.cells.CellWriter.clean`).
    """

    def __init__(
        self,
        ws: Any,
        letters: Sequence[str],
        formats: Sequence[tuple[str | None, bool]],
        style: Callable[[str | None, bool, bool], int],
        clean: Callable[[str], str],
    ) -> None:
        self.ws, self.letters, self.clean = ws, list(letters), clean
        self._style, self._sids = style, dict[tuple[str | None, bool, bool], int]()
        # per column: [letter, format, wrap, and the style ids of a number, a text and a
        # quoted text in it], an id -1 until a cell of that kind comes (a style is
        # registered when first used, in the order openpyxl would)
        self._columns: list[list[Any]] = [
            [letter, fmt, wrap, -1, -1, -1]
            for letter, (fmt, wrap) in zip(self.letters, formats, strict=True)
        ]
        # open until splice() has copied it into the saved workbook (or the workbook is gone)
        self.file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.rows: list[str] = []
        _PENDING.setdefault(ws.parent, []).append(self)

    def append(self, row_idx: int, values: Sequence[Any], height: float | None = None) -> None:
        """Row ``row_idx``: one value per column."""
        head = f'<row r="{row_idx}"'
        if height is not None:
            head += f' ht="{height:g}" customHeight="1"'
        parts = [head + ">"]
        r = str(row_idx)
        clean, style = self.clean, self.style
        for col, value in zip(self._columns, values, strict=True):
            letter, fmt, wrap = col[0], col[1], col[2]
            kind = type(value)  # the common exact types inline; the rest as _cell says
            if kind is str:
                value = clean(value)
                quote = value.startswith(FORMULA_START)
                sid = col[4 + quote]
                if sid < 0:  # the column's first such text: its style, registered now
                    sid = col[4 + quote] = style(None, wrap, quote)
                parts.append(_text_cell(letter + r, value, sid))
            elif kind is int or (kind is float and math.isfinite(value)):
                sid = col[3]
                if sid < 0:
                    sid = col[3] = style(fmt, False, False)
                parts.append(f'<c r="{letter}{r}" s="{sid}" t="n"><v>{value:.16g}</v></c>')
            elif value is not None:
                cell = self._cell(letter + r, value, fmt, wrap)
                if cell:
                    parts.append(cell)
        parts.append("</row>")
        self.rows.append("".join(parts))
        if len(self.rows) >= _FLUSH:
            self.flush()

    def _cell(self, ref: str, value: Any, fmt: str | None, wrap: bool) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return f'<c r="{ref}" s="{self.style(None, False, False)}" t="b"><v>{value:d}</v></c>'
        if isinstance(value, int | float):  # a bool is taken above
            if isinstance(value, float) and not math.isfinite(value):
                if math.isnan(value):
                    return ""
                return self._text(ref, str(value), False)
            return f'<c r="{ref}" s="{self.style(fmt, False, False)}" t="n"><v>{value:.16g}</v></c>'
        if isinstance(value, dt.datetime):
            from openpyxl.utils.datetime import to_excel

            naive = value.astimezone(dt.UTC).replace(tzinfo=None)
            style = self.style("yyyy-mm-dd hh:mm:ss", False, False)
            return f'<c r="{ref}" s="{style}" t="n"><v>{to_excel(naive):.16g}</v></c>'
        return self._text(ref, value if isinstance(value, str) else str(value), wrap)

    def _text(self, ref: str, value: str, wrap: bool) -> str:
        value = self.clean(value)
        return _text_cell(ref, value, self.style(None, wrap, value.startswith(FORMULA_START)))

    def style(self, fmt: str | None, wrap: bool, quote: bool) -> int:
        """The style id of a cell format (asked of the workbook once per format)."""
        key = (fmt, wrap, quote)
        sid = self._sids.get(key)
        if sid is None:
            sid = self._sids[key] = self._style(fmt, wrap, quote)
        return sid

    def flush(self) -> None:
        if self.rows:
            self.file.write("".join(self.rows).encode("utf-8"))
            self.rows.clear()


def _text_cell(ref: str, value: str, sid: int) -> str:
    """The inline-string cell of an already cleaned text, as openpyxl writes it."""
    if value == "":
        return f'<c r="{ref}" s="{sid}" t="inlineStr"/>'
    space = ' xml:space="preserve"' if value != value.strip() else ""
    # four replaces (in this order: "&" first) are ~4x faster than one str.translate
    text = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("\r", "&#13;")
    return f'<c r="{ref}" s="{sid}" t="inlineStr"><is><t{space}>{text}</t></is></c>'


def splice(wb: Any, saved: Path) -> None:
    """Insert every pending sheet's rows into the workbook file ``saved`` (in place).

    Members are copied as they are but the sheets with rows, whose XML (openpyxl's:
    header rows only, small) gets the rows before ``</sheetData>``.
    """
    pending = _PENDING.pop(wb, [])
    if not pending:
        return
    by_member: dict[str, RowFile] = {}
    for rows in pending:
        rows.flush()
        by_member[rows.ws.path.lstrip("/")] = rows
    out = saved.with_name(saved.name + ".rows")
    try:
        with zipfile.ZipFile(saved) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                found = by_member.get(info.filename)
                if found is None:
                    with src.open(info) as a, dst.open(info, "w", force_zip64=True) as b:
                        shutil.copyfileobj(a, b, 1 << 20)
                    continue
                xml = src.read(info)
                end = xml.rfind(b"</sheetData>")
                if end < 0:  # openpyxl wrote <sheetData/>: no row of its own
                    end = xml.rfind(b"<sheetData/>")
                    head, tail = xml[:end] + b"<sheetData>", b"</sheetData>" + xml[end + 12 :]
                else:
                    head, tail = xml[:end], xml[end:]
                with dst.open(info.filename, "w", force_zip64=True) as b:
                    b.write(head)
                    found.file.seek(0)
                    shutil.copyfileobj(found.file, b, 1 << 20)
                    b.write(tail)
        out.replace(saved)
    finally:
        out.unlink(missing_ok=True)
        for rows in pending:
            rows.file.close()
