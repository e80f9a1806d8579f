"""Reading and staging the sources of :func:`envloop_nb._loaders.table.load_table`: the
field constants, opening a Parquet/CSV/JSON path or an in-memory frame as a DuckDB
relation, and explaining a source DuckDB could not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from .._errors import LoadError
from .._store.sql import ident, json_pointer, literal
from ._common import INT64_MAX, fits
from ._read import decode_utf8, parse_json, read_bytes

__all__ = [
    "DEFAULT_MAPPING",
    "DEFAULT_TAGS",
    "DOUBLE_FIELDS",
    "INTERNAL",
    "INT_COLUMNS",
    "INT_FIELDS",
    "STATUSES",
    "TEXT_FIELDS",
    "TIME_FIELDS",
    "Source",
    "check_name",
    "csv_rejects",
    "explain_json_array",
    "is_csv",
    "open_frame",
    "open_path",
]

STATUSES = ("pending", "running", "completed", "failed", "cancelled")

#: Our column ← the source's column, by default (a missing optional column is fine).
DEFAULT_MAPPING: dict[str, str] = {
    "task": "task",
    "attempt": "attempt",
    "reward": "reward",
    "status": "status",
    "trial_id": "trial_id",
    "input": "input",
    "output": "output",
    "reference": "reference",
    "error": "error",
    "error_type": "error_type",
    "exit_code": "exit_code",
    "turns": "turns",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_tokens": "cache_tokens",
    "cost_usd": "cost_usd",
    "started_at": "started_at",
    "finished_at": "finished_at",
    "duration_s": "duration_s",
    "digest": "digest",
}
INT_FIELDS = ("exit_code", "turns", "input_tokens", "output_tokens", "cache_tokens")
#: The workspace column type of each integer field, and its width in bits.
INT_COLUMNS = {
    "exit_code": ("INTEGER", 32),
    "turns": ("INTEGER", 32),
    "input_tokens": ("BIGINT", 64),
    "output_tokens": ("BIGINT", 64),
    "cache_tokens": ("BIGINT", 64),
}
DOUBLE_FIELDS = ("cost_usd", "duration_s")
TEXT_FIELDS = ("trial_id", "output", "reference", "error", "error_type")
TIME_FIELDS = ("started_at", "finished_at")
DEFAULT_TAGS = ("subset", "difficulty")
INTERNAL = ("_enb_ord", "_enb_file", "file_row_number")


@dataclass
class Source:
    """A staged view ``_tb_src`` over the input with ``_enb_ord`` and ``_enb_place``."""

    label: str
    columns: list[str]
    json: bool  # rows are JSON objects in column ``j`` (JSONL / JSON array)
    types: dict[str, str] = field(default_factory=dict)
    registered: list[str] = field(default_factory=list)

    def key(self, col: str) -> str:
        """SQL naming the column: its JSON pointer (JSON rows) or its identifier."""
        return literal(json_pointer(col)) if self.json else ident(col)

    def raw(self, col: str) -> str:
        """The column's value (JSON for JSON rows)."""
        if self.json:
            return f"(j->{self.key(col)})"
        return ident(col)

    def json_type(self, col: str) -> str:
        """JSON rows: the value's JSON type (NULL when the key is absent)."""
        return f"json_type(j, {self.key(col)})"

    def text(self, col: str) -> str:
        """The value as text (NULL stays NULL)."""
        if self.json:
            return f"(j->>{self.key(col)})"
        return f"{ident(col)}::VARCHAR"

    def shown(self, col: str) -> str:
        """The value as it reads in the source, for messages (``'high'``, ``"x"``)."""
        if self.json:
            return f"coalesce({self.raw(col)}::VARCHAR, 'nothing')"
        return f"coalesce('''' || {ident(col)}::VARCHAR || '''', 'nothing')"

    def number_ok(self, col: str) -> str:
        """SQL true when the value is NULL or a number."""
        if self.json:
            return f"coalesce({self.json_type(col)}, 'NULL') IN ('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE')"
        return f"({ident(col)} IS NULL OR TRY_CAST({ident(col)} AS DOUBLE) IS NOT NULL)"

    def number(self, col: str) -> str:
        if self.json:
            return f"TRY_CAST({self.raw(col)} AS DOUBLE)"
        return f"TRY_CAST({ident(col)} AS DOUBLE)"

    def time(self, col: str) -> str:
        if self.json or self.types.get(col, "").startswith(("VARCHAR", "JSON")):
            return f"TRY_CAST({self.text(col)} AS TIMESTAMPTZ)"
        return f"TRY_CAST({ident(col)} AS TIMESTAMPTZ)"


def open_frame(con: duckdb.DuckDBPyConnection, source: Any) -> Source:
    import numpy as np
    import pyarrow as pa

    module = type(source).__module__.split(".")[0]
    label = f"<{module} {type(source).__name__}>"
    if module == "pandas":
        table = _pandas_to_arrow(source, label)
    elif module == "polars":
        table = source.to_arrow()
    elif isinstance(source, pa.Table):
        table = source
    elif isinstance(source, pa.RecordBatch):
        table = pa.Table.from_batches([source])
    elif hasattr(source, "__arrow_c_stream__"):
        table = pa.table(source)
    else:
        raise LoadError(
            f"<{type(source).__name__}>",
            None,
            "expected a file path, a pandas/polars DataFrame or an Arrow table",
        )
    names = table.column_names
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise LoadError(
            label,
            f"column {twice!r}",
            f"appears {names.count(twice)} times: column names must be unique",
        )
    if "_enb_ord" in table.column_names:
        raise LoadError(label, None, "column name _enb_ord is reserved")
    for col in table.column_names:  # DuckDB would cut a name at a NUL: refuse it here
        check_name(label, f"column {col!r}", col)
    table = table.append_column("_enb_ord", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    con.register("_tb_frame", table)
    con.execute(
        """CREATE OR REPLACE TEMP VIEW _tb_src AS
           SELECT *, 'row ' || _enb_ord AS _enb_place FROM _tb_frame"""
    )
    src = Source(label, [], json=False)
    src.registered.append("_tb_frame")
    _describe(con, src)
    return src


def _pandas_to_arrow(df: Any, label: str) -> Any:
    """``df`` as an Arrow table; duplicated column names, or an object column Arrow
    cannot convert (mixed types, an integer beyond 64 bits, a lone surrogate), are
    refused naming the column and the first offending row."""
    import pyarrow as pa

    twice = df.columns[df.columns.duplicated()]
    if len(twice):
        n = int((df.columns == twice[0]).sum())
        raise LoadError(
            label, f"column {twice[0]!r}", f"appears {n} times: column names must be unique"
        )
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as err:
        for position, col in enumerate(df.columns):
            found = _object_column_problem(df.iloc[:, position])
            if found is not None:
                raise LoadError(label, f"row {found[0]}, column {col!r}", found[1]) from None
        raise LoadError(label, None, f"cannot be converted to Arrow ({err})") from None


def _object_column_problem(column: Any) -> tuple[int, str] | None:
    """The first row of an object column Arrow cannot convert, and why (error path only)."""
    import math

    if column.dtype != object:
        return None
    first: dict[str, tuple[int, str]] = {}  # kind -> (row, type name) where first seen
    for row, value in enumerate(column.tolist()):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return row, f"lone surrogate in {value!r}: not valid Unicode text"
        if isinstance(value, int) and not isinstance(value, bool) and not fits(value, INT64_MAX):
            return row, f"{value} is out of range: it must fit a 64-bit integer"
        number = isinstance(value, int | float) and not isinstance(value, bool)
        kind = "number" if number else type(value).__name__
        first.setdefault(kind, (row, type(value).__name__))
        if len(first) > 1:
            (row0, name0), (_, name) = next(iter(first.values())), first[kind]
            return row, (
                f"mixed types in one column: {name0} at row {row0}, {name} at row {row}; "
                "give the column one type (e.g. .astype(str))"
            )
    return None


def _describe(con: duckdb.DuckDBPyConnection, src: Source) -> None:
    rows = con.execute("DESCRIBE SELECT * FROM _tb_src").fetchall()
    src.types = {str(r[0]): str(r[1]) for r in rows}
    src.columns = [c for c in src.types if c not in (*INTERNAL, "_enb_place")]


def is_csv(source: Any) -> bool:
    return isinstance(source, str | Path) and str(source).lower().endswith(
        (".csv", ".tsv", ".csv.gz", ".tsv.gz")
    )


def _csv_read(path: Path, skip_bad: bool) -> str:
    delim = "\t" if ".tsv" in path.name.lower() else ","
    rejects = (
        ", store_rejects = true, rejects_table = '_tb_rej', rejects_scan = '_tb_rejscan'"
        if skip_bad
        else ""
    )
    return f"read_csv({literal(str(path))}, header = true, delim = {literal(delim)}{rejects})"


def csv_rejects(con: duckdb.DuckDBPyConnection, path: Path) -> list[tuple[int, str]]:
    """Lines DuckDB's CSV reader cannot parse (ragged rows, bad quoting), in file order."""
    con.execute("DROP TABLE IF EXISTS _tb_rej")
    con.execute("DROP TABLE IF EXISTS _tb_rejscan")
    try:
        # touch every column so that each is parsed (count(*) alone is not)
        con.execute(
            f"SELECT max(length(COLUMNS(*)::VARCHAR)) FROM {_csv_read(path, True)}"
        ).fetchall()
        rows = con.execute(
            "SELECT line, any_value(error_message) FROM _tb_rej GROUP BY line ORDER BY line"
        ).fetchall()
    except duckdb.Error:
        return []
    return [(int(r[0]), str(r[1])) for r in rows]


def open_path(
    con: duckdb.DuckDBPyConnection, source: str | Path, skip_bad_csv: bool = False
) -> Source:
    text = str(source)
    path = Path(text)
    is_glob = any(ch in text for ch in "*?[") and not path.exists()
    name = path.name.lower()
    if is_glob or path.is_dir() or name.endswith(".parquet"):
        pattern = text
        if not is_glob and path.is_dir():
            pattern = str(path / "**" / "*.parquet")
        files = [
            r[0]
            for r in con.execute("SELECT file FROM glob(?) ORDER BY file", [pattern]).fetchall()
        ]
        if not files:
            raise LoadError(source, None, f"no Parquet file matches {pattern}")
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _tb_files AS "
            "SELECT unnest($files) AS _enb_file, generate_subscripts($files, 1) AS _enb_idx",
            {"files": files},
        )
        # One file: "row N" (the error already names the file); several: "<file> row N".
        place = "'row ' || (p.file_row_number + 1)"
        if len(files) > 1:
            place = "p._enb_file || ' row ' || (p.file_row_number + 1)"
        con.execute(
            f"""CREATE OR REPLACE TEMP VIEW _tb_src AS
                SELECT p.* EXCLUDE (_enb_file, file_row_number),
                       (f._enb_idx::BIGINT << 40) + p.file_row_number AS _enb_ord,
                       {place} AS _enb_place
                FROM read_parquet({literal(pattern)}, hive_partitioning = true,
                                  union_by_name = true, filename = '_enb_file',
                                  file_row_number = true) p
                JOIN _tb_files f USING (_enb_file)"""
        )
        src = Source(text, [], json=False)
        _describe(con, src)
        return src
    if not path.is_file():
        raise LoadError(path, None, "no such file")
    if name.endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        # After skipping malformed lines the ordinal is no longer the line: say "row".
        place = "'row ' || ordinality" if skip_bad_csv else "'line ' || (ordinality + 1)"
        con.execute(
            f"""CREATE OR REPLACE TEMP VIEW _tb_src AS
                SELECT * EXCLUDE (ordinality), ordinality AS _enb_ord, {place} AS _enb_place
                FROM {_csv_read(path, skip_bad_csv)} WITH ORDINALITY"""
        )
        src = Source(str(path), [], json=False)
        _describe(con, src)
        return src
    # JSON lines (or a JSON array of records): one JSON object per row.
    fmt = "newline_delimited"
    with _open_bytes(path) as f:
        head = f.read(64).lstrip()
    if head.startswith(b"["):
        fmt = "array"
    place = (
        "'line ' || ordinality" if fmt == "newline_delimited" else "'[' || (ordinality - 1) || ']'"
    )
    errors = ", ignore_errors = true" if fmt == "newline_delimited" else ""
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW _tb_src AS
            SELECT json AS j, ordinality AS _enb_ord, {place} AS _enb_place
            FROM read_json_objects({literal(str(path))}, format = {literal(fmt)}{errors})
                 WITH ORDINALITY"""
    )
    keys = con.execute(
        """SELECT k, min(_enb_ord) AS first
           FROM (SELECT unnest(json_keys(j)) AS k, _enb_ord FROM _tb_src
                 WHERE json_type(j) = 'OBJECT')
           GROUP BY k ORDER BY first"""
    ).fetchall()
    return Source(str(path), [str(r[0]) for r in keys], json=True)


def explain_json_array(path: Path) -> None:
    """Raise a LoadError naming the place when ``path`` is a JSON array file that is not
    valid UTF-8 or JSON (a lone surrogate, nesting too deep, ...); else return."""
    if not path.is_file() or is_csv(path) or path.name.lower().endswith(".parquet"):
        return
    with _open_bytes(path) as f:
        if not f.read(64).lstrip().startswith(b"["):
            return  # JSON lines: DuckDB's reader already skips bad lines by place
    parse_json(path, decode_utf8(path, read_bytes(path)))


def _open_bytes(path: Path) -> Any:
    import gzip

    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")


def check_name(label: str, place: str, name: str) -> None:
    """Refuse a name SQL text cannot hold (NUL, lone surrogate); any other is kept as is."""
    try:
        literal(name)
    except ValueError as err:
        raise LoadError(label, place, f"unusable name: {err}") from None
