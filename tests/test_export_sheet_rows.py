"""A Sheet's rows written as XML text (``_export/sheet_rows.py``) read back exactly like
the cells openpyxl writes for the same values (the path they replaced), whatever the
values: the text guarantees (never a formula, control characters escaped, long text
cut), numbers, booleans, datetimes, empty and missing cells, tall rows, overflow parts.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import load_workbook

from envloop_nb._export import cells as C

COLUMNS = [
    C.Column("text", 20, wrap=True),
    C.Column("plain", 12),
    C.Column("reward", 10, C.NUM),
    C.Column("rate", 10, C.PCT),
    C.Column("when", 20),
]
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " lead", "trail ", "=1+1", "+x", "-3", "@me", "a & b < c > d",
                     "line\r\nnext", "\x07bell", "\ud800", "x" * 40_000, "\tTab"]),
)  # fmt: skip
values = st.one_of(
    st.none(),
    texts,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.datetimes(
        min_value=dt.datetime(1901, 1, 1), max_value=dt.datetime(2100, 1, 1),
        timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=-5))]),
    ),
)  # fmt: skip
rows = st.lists(st.lists(values, min_size=5, max_size=5), min_size=1, max_size=12)


def _reference_lines(values: list[Any]) -> int:
    """Text lines the tallest wrapped cell of a row needs, column by column."""
    most = 1
    for v, c in zip(values, COLUMNS, strict=True):
        if c.wrap and isinstance(v, str) and v:
            per_line = max(int(c.width * 1.1), 1)
            n = 0
            for part in v[: per_line * C.MAX_ROW_LINES].split("\n"):
                n += max(1, -(-len(part) // per_line))
                if n >= C.MAX_ROW_LINES:
                    break
            most = max(most, min(n, C.MAX_ROW_LINES))
    return most


def _reference(path: Path, data: list[list[Any]]) -> tuple[C.CellWriter, Any]:
    """The replaced path: ready openpyxl cells appended row by row."""
    wb, cells, titles = C.new_workbook()
    ws = C.free_sheet(wb, "Rows", titles)
    ws.append([cells.header(ws, c.name) for c in COLUMNS])
    for i, row in enumerate(data, start=2):
        lines = _reference_lines(row)
        if lines > 1:
            ws.row_dimensions[i].height = 15 * lines
        ws.append([cells.value(ws, v, c.fmt, c.wrap) for v, c in zip(row, COLUMNS, strict=True)])
    C.save_workbook(wb, path)
    return cells, load_workbook(path)["Rows"]


def _fast(path: Path, data: list[list[Any]]) -> tuple[C.CellWriter, Any]:
    wb, cells, titles = C.new_workbook()
    sheet = C.Sheet(wb, "Rows", COLUMNS, cells, titles)
    for row in data:
        sheet.append(row)
    sheet.close()
    C.save_workbook(wb, path)
    return cells, load_workbook(path)["Rows"]


def _cells(ws: Any) -> list[tuple[Any, ...]]:
    out = []
    for row in ws.iter_rows(min_row=2):
        for c in row:
            if c.value is None and c.data_type == "n" and not c.has_style:
                continue
            out.append((c.coordinate, c.value, c.data_type, c.number_format,
                        c.alignment.wrap_text, c.quotePrefix, c.font.b))  # fmt: skip
    return out


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=rows)
def test_rows_read_back_as_openpyxls_own_cells(tmp_path: Path, data: list[list[Any]]) -> None:
    ref_cells, ref = _reference(tmp_path / "ref.xlsx", data)
    fast_cells, fast = _fast(tmp_path / "fast.xlsx", data)
    assert _cells(fast) == _cells(ref)
    heights = {i: d.height for i, d in ref.row_dimensions.items() if d.height}
    assert {i: d.height for i, d in fast.row_dimensions.items() if d.height} == heights
    assert (fast_cells.escaped, fast_cells.truncated) == (ref_cells.escaped, ref_cells.truncated)


def test_a_formula_is_text_and_overflow_parts_keep_their_rows(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(C, "_max_rows", lambda: 4)
    wb, cells, titles = C.new_workbook()
    sheet = C.Sheet(wb, "Rows", COLUMNS, cells, titles, note="⚠ a note")
    for i in range(5):
        sheet.append([f'=HYPERLINK("x{i}")', "p", i, 0.5, None])
    sheet.close()
    C.save_workbook(wb, tmp_path / "parts.xlsx")
    book = load_workbook(tmp_path / "parts.xlsx")
    assert sheet.counts == {"Rows": 2, "Rows (2)": 2, "Rows (3)": 1}
    first = book["Rows"]
    assert [c.value for c in first[1]][:1] == ["⚠ a note"]
    assert first["A3"].value == '=HYPERLINK("x0")' and first["A3"].data_type == "s"
    assert first["A3"].quotePrefix and first.auto_filter.ref == "A2:E4"
    assert [book["Rows (3)"]["C3"].value] == [4]
