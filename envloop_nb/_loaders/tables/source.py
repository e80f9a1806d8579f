"""Opening a table source as a staged view ``_tb_src``: a frame in memory (through
Arrow), Parquet (file, glob, hive folder), CSV/TSV, JSONL or a JSON array.

Each opener adds ``_enb_ord`` (source order) and ``_enb_place`` (the place a message
names) and refuses column names DuckDB would rename or merge, by place.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError
from ..._store.sql import literal
from ..common.read import (
    bad_path_name,
    decode_utf8,
    parse_json,
    read_bytes,
    shown_path,
)
from ..common.values import INT64_MAX, fits
from .columns import (
    INTERNAL,
    RESERVED_CSV,
    RESERVED_FRAME,
    RESERVED_PARQUET,
    Source,
    check_name,
    refuse_name_clashes,
)

__all__ = [
    "cleanup",
    "csv_rejects",
    "explain_json_array",
    "is_csv",
    "open_frame",
    "open_path",
]


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
    for col in table.column_names:  # DuckDB would cut a name at a NUL: refuse it here
        check_name(label, f"column {col!r}", col)
    refuse_name_clashes(label, [(None, table.column_names)], {}, RESERVED_FRAME)
    table = table.append_column("_enb_ord", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    con.register("_tb_frame", table)
    con.execute(
        """CREATE OR REPLACE TEMP VIEW _tb_src AS
           SELECT *, 'row ' || _enb_ord AS _enb_place FROM _tb_frame"""
    )
    src = Source(label, [], json=False, counted=True, row_number="_enb_ord")
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
        with warnings.catch_warnings():  # pyarrow reads a time zone's column through
            # Series.values, which pandas 3.1 deprecates; the values it takes are exact
            warnings.filterwarnings("ignore", "Series.values returning an ndarray that drops")
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
    src.columns = [c for c in src.types if c not in INTERNAL]


def _parquet_names(
    con: duckdb.DuckDBPyConnection, files: list[str], root: Path | None
) -> tuple[list[tuple[str | None, list[str]]], dict[str, str]]:
    """Each Parquet file's own top-level column names (``DESCRIBE`` shows DuckDB's,
    after renaming and merging), and the hive partition keys of the files' folders."""
    listed = ", ".join(literal(f) for f in files)
    rows = con.execute(
        f"SELECT file_name, name, num_children FROM parquet_schema([{listed}])"
    ).fetchall()
    schemas: dict[str, list[tuple[str, int]]] = {}
    for file, name, children in rows:
        schemas.setdefault(str(file), []).append((str(name), int(children or 0)))

    def shown(file: str) -> str | None:
        if len(files) == 1:
            return None  # the error already names the file
        if root is not None and file.startswith(str(root)):
            return file[len(str(root)) :].lstrip("/\\")
        return file

    units: list[tuple[str | None, list[str]]] = []
    for file, schema in schemas.items():
        names, i = [], 1  # schema[0] is the root; each top-level field is one subtree
        while i < len(schema):
            names.append(schema[i][0])
            pending = 1
            while pending:
                pending += schema[i][1] - 1
                i += 1
        units.append((shown(file), names))
    hive: dict[str, str] = {}
    for file in files:
        for part in re.split(r"[/\\]", file)[:-1]:
            if "=" in part:
                hive.setdefault(part.split("=", 1)[0], part)
    return units, hive


def _parquet_view(
    con: duckdb.DuckDBPyConnection,
    files: list[str],
    units: list[tuple[str | None, list[str]]],
    hive: dict[str, str],
) -> str | None:
    """``_tb_src`` over the Parquet ``files`` (in this order: the ordinal follows it);
    return its SELECT when it stands alone (None when it joins a temporary table).

    The file's position is DuckDB's ``file_index`` column, read with the rows, unless a
    file (or a hive key) has a column of that name, which would shadow it; then the
    position comes from joining the file names, which costs a hash join per row. One
    file: ``row N`` (the error already names the file); several: ``<file> row N``.
    """
    names = {n.lower() for _, cols in units for n in cols} | {h.lower() for h in hive}
    listed = "[" + ", ".join(literal(f) for f in files) + "]"
    read = (
        f"read_parquet({listed if len(files) > 1 else literal(files[0])}, "
        "hive_partitioning = true, union_by_name = true, file_row_number = true"
    )
    place = (
        "p._enb_file || ' row ' " if len(files) > 1 else "'row ' "
    ) + "|| (p.file_row_number + 1)"
    if len(files) == 1:
        exclude, ordinal, rows = "file_row_number", "p.file_row_number", f"{read}) p"
    else:
        exclude, rows = "_enb_file, file_row_number", f"{read}, filename = '_enb_file') p"
        ordinal = "(p.file_index::BIGINT << 40) + p.file_row_number"
        if "file_index" in names:
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _tb_files AS "
                "SELECT unnest($files) AS _enb_file, generate_subscripts($files, 1) AS _enb_idx",
                {"files": files},
            )
            ordinal = "(f._enb_idx::BIGINT << 40) + p.file_row_number"
            rows += " JOIN _tb_files f USING (_enb_file)"
    select = f"""SELECT p.* EXCLUDE ({exclude}), {ordinal} AS _enb_ord, {place} AS _enb_place
                 FROM {rows}"""
    con.execute(f"CREATE OR REPLACE TEMP VIEW _tb_src AS {select}")
    return None if "_tb_files" in rows else select


def _csv_first_record(path: Path) -> list[str]:
    """The CSV file's first record, read in Python (microseconds; DuckDB would sniff the
    file again): its header, unless DuckDB skips lines before the header."""
    import csv
    import io

    try:
        with _open_bytes(path) as f:
            text = io.TextIOWrapper(f, encoding="utf-8-sig", errors="replace", newline="")
            return next(csv.reader(text, delimiter=_csv_delim(path)), [])
    except (OSError, EOFError, csv.Error):
        return []


def _csv_header(con: duckdb.DuckDBPyConnection, path: Path, first: list[str], n: int) -> list[str]:
    """The CSV file's own header names (``DESCRIBE`` shows DuckDB's, after renaming):
    its ``first`` record when that holds DuckDB's ``n`` fields, else (DuckDB skipped
    lines before the header) DuckDB's own first row, read without a header."""
    if len(first) == n:
        return first
    delim = _csv_delim(path)
    row = con.execute(
        f"""SELECT * FROM read_csv({literal(str(path))}, header = false,
                                   delim = {literal(delim)}, all_varchar = true) LIMIT 1"""
    ).fetchone()
    return ["" if v is None else str(v) for v in row or ()]


def is_csv(source: Any) -> bool:
    return isinstance(source, str | Path) and str(source).lower().endswith(
        (".csv", ".tsv", ".csv.gz", ".tsv.gz")
    )


def _csv_delim(path: Path) -> str:
    return "\t" if ".tsv" in path.name.lower() else ","


def _csv_read(path: Path, skip_bad: bool) -> str:
    delim = _csv_delim(path)
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
    if text.startswith("s3://"):  # object storage: Parquet read in place through Arrow
        from .object_store import open_parquet_url

        return open_parquet_url(con, text)
    path = Path(text)
    is_glob = any(ch in text for ch in "*?[") and not path.exists()
    name = path.name.lower()
    if is_glob or path.is_dir() or name.endswith(".parquet"):
        pattern = text
        if not is_glob and path.is_dir():
            pattern = str(path / "**" / "*.parquet")
        try:
            files = [
                r[0]
                for r in con.execute(
                    f"SELECT file FROM glob({literal(pattern)}) ORDER BY file"
                ).fetchall()
            ]
        except duckdb.InvalidInputException:
            _refuse_bad_file_name(source, pattern, path if path.is_dir() else None)
            raise
        if not files:
            raise LoadError(source, None, f"no Parquet file matches {pattern}")
        units, hive = _parquet_names(con, files, path if path.is_dir() else None)
        refuse_name_clashes(text, units, hive, RESERVED_PARQUET)
        select = _parquet_view(con, files, units, hive)
        src = Source(
            text, [], json=False, counted=True, files=files, select_sql=select,
            row_number="_enb_ord + 1" if len(files) == 1 else None,
        )  # fmt: skip
        _describe(con, src)
        return src
    if not path.is_file():
        raise LoadError(path, None, "no such file")
    if name.endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        # After skipping malformed lines the ordinal is no longer the line: say "row".
        place = "'row ' || ordinality" if skip_bad_csv else "'line ' || (ordinality + 1)"
        first = _csv_first_record(path)  # a column "ordinality" would break the view
        refuse_name_clashes(str(path), [(None, first)], {}, RESERVED_CSV)
        con.execute(
            f"""CREATE OR REPLACE TEMP VIEW _tb_src AS
                SELECT * EXCLUDE (ordinality), ordinality AS _enb_ord, {place} AS _enb_place
                FROM {_csv_read(path, skip_bad_csv)} WITH ORDINALITY"""
        )
        src = Source(str(path), [], json=False)
        _describe(con, src)
        header = _csv_header(con, path, first, len(src.columns))
        if header is not first:
            refuse_name_clashes(src.label, [(None, header)], {}, RESERVED_CSV)
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


def _refuse_bad_file_name(source: Any, pattern: str, root: Path | None) -> None:
    """Raise a LoadError naming a file that matches ``pattern`` and whose path is not
    UTF-8 (DuckDB's glob only says "Invalid unicode"); else return. ``root``: the folder
    the source names, which the file is named relative to."""
    import glob

    for found in sorted(glob.glob(os.fsencode(pattern), recursive=True)):
        name = os.fsdecode(found)
        problem = bad_path_name(name)
        if problem is not None:
            if root is not None:
                name = os.path.relpath(name, root)
            raise LoadError(
                shown_path(source),
                f"file {shown_path(name)}",
                f"the path is {problem}: DuckDB cannot open it; rename it",
            )


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


def cleanup(con: duckdb.DuckDBPyConnection, src: Source | None) -> None:
    for name in src.registered if src else []:
        con.unregister(name)
    for view in ("_tb_n", "_tb_w", "_tb_v", "_tb_src"):
        con.execute(f"DROP VIEW IF EXISTS {view}")
    for table in ("_tb_files", "_tb_rej", "_tb_rejscan"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
