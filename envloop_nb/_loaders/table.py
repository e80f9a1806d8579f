"""Any table of attempts: Parquet (file, glob, hive-partitioned folder), CSV/TSV, JSONL
or a JSON array of records (optionally ``.gz``), or a pandas / polars / Arrow frame
already in memory.

Everything runs in DuckDB SQL: files are read by DuckDB directly (``read_parquet`` with
``hive_partitioning``, ``read_csv``, ``read_json_objects``), frames are registered
through Arrow; rows are validated, numbered and inserted with ``INSERT ... SELECT``.
Ten million rows never become Python objects.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from .._errors import LoadError, LoadWarning
from .._store.sql import ident, json_pointer, literal
from ._common import INT32_MAX, INT64_MAX, fits, physical_place
from ._read import (
    bad_path_name,
    check_gzip,
    decode_utf8,
    explain_bad_line,
    is_gzip,
    parse_json,
    read_bytes,
    shown_path,
)
from ._stage import begin_job, restart, stage_name

__all__ = ["DEFAULT_MAPPING", "load_table"]

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
_INT_FIELDS = ("exit_code", "turns", "input_tokens", "output_tokens", "cache_tokens")
#: The workspace column type of each integer field, and its width in bits.
_INT_COLUMNS = {
    "exit_code": ("INTEGER", 32),
    "turns": ("INTEGER", 32),
    "input_tokens": ("BIGINT", 64),
    "output_tokens": ("BIGINT", 64),
    "cache_tokens": ("BIGINT", 64),
}
_DOUBLE_FIELDS = ("cost_usd", "duration_s")
_TEXT_FIELDS = ("trial_id", "output", "reference", "error", "error_type")
_TIME_FIELDS = ("started_at", "finished_at")
_DEFAULT_TAGS = ("subset", "difficulty")
#: Columns every staged view ``_tb_src`` adds to the source's own.
_INTERNAL = ("_enb_ord", "_enb_place")
#: Names the reader adds while reading, per source kind (compared ignoring ASCII case,
#: as DuckDB compares column names): a source column of that name would be renamed,
#: dropped or taken for ours.
_RESERVED_FRAME = frozenset(_INTERNAL)
_RESERVED_CSV = _RESERVED_FRAME | {"ordinality"}  # WITH ORDINALITY
_RESERVED_PARQUET = _RESERVED_FRAME | {"_enb_file", "file_row_number"}


@dataclass
class _Source:
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


def _open_frame(con: duckdb.DuckDBPyConnection, source: Any) -> _Source:
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
        _check_name(label, f"column {col!r}", col)
    _refuse_name_clashes(label, [(None, table.column_names)], {}, _RESERVED_FRAME)
    table = table.append_column("_enb_ord", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    con.register("_tb_frame", table)
    con.execute(
        """CREATE OR REPLACE TEMP VIEW _tb_src AS
           SELECT *, 'row ' || _enb_ord AS _enb_place FROM _tb_frame"""
    )
    src = _Source(label, [], json=False)
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


def _describe(con: duckdb.DuckDBPyConnection, src: _Source) -> None:
    rows = con.execute("DESCRIBE SELECT * FROM _tb_src").fetchall()
    src.types = {str(r[0]): str(r[1]) for r in rows}
    src.columns = [c for c in src.types if c not in _INTERNAL]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fold(name: str) -> str:
    """``name`` as DuckDB compares column names: ASCII letters without case (``É`` and
    ``é`` stay two names, ``X`` and ``x`` are one)."""
    return name.translate(_ASCII_LOWER)


def _refuse_name_clashes(
    label: str,
    units: Sequence[tuple[str | None, Sequence[str]]],
    hive: Mapping[str, str],
    reserved: frozenset[str],
) -> None:
    """Refuse column names that DuckDB would rename, merge or replace without a word.

    DuckDB compares column names ignoring ASCII case: within one file or frame, of
    ``dim_X`` and ``dim_x`` (or ``a`` twice) it renames the second (``dim_x_1``), so a
    dimension would be stored under a made-up name; across Parquet files read by name it
    merges ``dim_X`` and ``dim_x`` into one column; a hive partition folder
    (``Task=9/``) replaces a file's column of that name (``task``); a column named like
    one the reader adds (``_reserved``) would be taken for it. ``units`` are
    ``(where, column names)``: ``where`` is None for the one source, else a file's name;
    ``hive`` maps each partition key to a folder that sets it.
    """
    for where, names in units:
        at = f" ({where})" if where else ""
        for name in names:
            if _fold(name) in reserved:
                raise LoadError(
                    label,
                    f"column {name!r}{at}",
                    f"the name is reserved: envloop_nb adds a column {_fold(name)!r} to read "
                    "the source (DuckDB column names ignore case); rename the column",
                )
    first: dict[str, tuple[str, str | None]] = {}  # folded name -> (name, where) first seen
    for where, names in units:
        mine: dict[str, str] = {}
        for name in names:
            folded = _fold(name)
            if folded in mine:
                at = f" ({where})" if where else ""
                if mine[folded] == name:
                    raise LoadError(
                        label,
                        f"column {name!r}{at}",
                        f"appears {list(names).count(name)} times: column names must be unique",
                    )
                raise LoadError(
                    label,
                    f"columns {mine[folded]!r} and {name!r}{at}",
                    "the names differ only in case: DuckDB column names ignore case, so it "
                    "would load one under a made-up name; rename one of them",
                )
            mine[folded] = name
            seen = first.setdefault(folded, (name, where))
            if seen[0] != name:
                raise LoadError(
                    label,
                    f"columns {seen[0]!r} ({seen[1]}) and {name!r} ({where})",
                    "the names differ only in case: DuckDB column names ignore case, so it "
                    "would merge them into one column; write the name one way",
                )
    for key, folder in hive.items():
        column = first.get(_fold(key))
        if column is not None:
            at = f" ({column[1]})" if column[1] else ""
            raise LoadError(
                label,
                f"column {column[0]!r}{at} and hive partition key {key!r} ({folder})",
                "the same name, ignoring case: DuckDB would replace the file's column with "
                "the folder's value; rename one of them",
            )
        first[_fold(key)] = (key, folder)


def _parquet_names(
    con: duckdb.DuckDBPyConnection, files: list[str], root: Path | None
) -> tuple[list[tuple[str | None, list[str]]], dict[str, str]]:
    """Each Parquet file's own top-level column names (``DESCRIBE`` shows DuckDB's,
    after renaming and merging), and the hive partition keys of the files' folders."""
    rows = con.execute(
        "SELECT file_name, name, num_children FROM parquet_schema($files)", {"files": files}
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


def _is_csv(source: Any) -> bool:
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


def _csv_rejects(con: duckdb.DuckDBPyConnection, path: Path) -> list[tuple[int, str]]:
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


def _open_path(
    con: duckdb.DuckDBPyConnection, source: str | Path, skip_bad_csv: bool = False
) -> _Source:
    text = str(source)
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
                for r in con.execute("SELECT file FROM glob(?) ORDER BY file", [pattern]).fetchall()
            ]
        except duckdb.InvalidInputException:
            _refuse_bad_file_name(source, pattern, path if path.is_dir() else None)
            raise
        if not files:
            raise LoadError(source, None, f"no Parquet file matches {pattern}")
        units, hive = _parquet_names(con, files, path if path.is_dir() else None)
        _refuse_name_clashes(text, units, hive, _RESERVED_PARQUET)
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
        src = _Source(text, [], json=False)
        _describe(con, src)
        return src
    if not path.is_file():
        raise LoadError(path, None, "no such file")
    if name.endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        # After skipping malformed lines the ordinal is no longer the line: say "row".
        place = "'row ' || ordinality" if skip_bad_csv else "'line ' || (ordinality + 1)"
        first = _csv_first_record(path)  # a column "ordinality" would break the view
        _refuse_name_clashes(str(path), [(None, first)], {}, _RESERVED_CSV)
        con.execute(
            f"""CREATE OR REPLACE TEMP VIEW _tb_src AS
                SELECT * EXCLUDE (ordinality), ordinality AS _enb_ord, {place} AS _enb_place
                FROM {_csv_read(path, skip_bad_csv)} WITH ORDINALITY"""
        )
        src = _Source(str(path), [], json=False)
        _describe(con, src)
        header = _csv_header(con, path, first, len(src.columns))
        if header is not first:
            _refuse_name_clashes(src.label, [(None, header)], {}, _RESERVED_CSV)
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
    return _Source(str(path), [str(r[0]) for r in keys], json=True)


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


def _explain_json_array(path: Path) -> None:
    """Raise a LoadError naming the place when ``path`` is a JSON array file that is not
    valid UTF-8 or JSON (a lone surrogate, nesting too deep, ...); else return."""
    if not path.is_file() or _is_csv(path) or path.name.lower().endswith(".parquet"):
        return
    with _open_bytes(path) as f:
        if not f.read(64).lstrip().startswith(b"["):
            return  # JSON lines: DuckDB's reader already skips bad lines by place
    parse_json(path, decode_utf8(path, read_bytes(path)))


def _open_bytes(path: Path) -> Any:
    import gzip

    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb")


def _resolve_mapping(
    src: _Source, mapping: Mapping[str, Any] | None
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Our field → source column (present ones only), tag key → column, dimension → column."""
    user = dict(mapping or {})
    tags_opt = user.pop("tags", None)
    dims_opt = user.pop("dimensions", None)
    unknown = sorted(set(user) - set(DEFAULT_MAPPING))
    if unknown:
        raise LoadError(
            src.label,
            "mapping",
            f"unknown field(s) {unknown}; map any of {sorted(DEFAULT_MAPPING)}, 'tags', 'dimensions'",
        )
    for col in src.columns:
        _check_name(src.label, f"column {col!r}", col)
    present = set(src.columns)
    fields: dict[str, str] = {}
    for ours, default in DEFAULT_MAPPING.items():
        theirs = user.get(ours, default)
        if theirs is None:
            if ours in ("task", "reward"):
                raise LoadError(src.label, "mapping", f"the {ours} column is required")
            continue
        if theirs in present:
            fields[ours] = theirs
        elif ours in user or ours in ("task", "reward"):
            raise LoadError(
                src.label,
                f"column {theirs!r}",
                f"missing: the {ours} column was mapped to {theirs!r}; "
                f"the source has {sorted(present)}",
            )
    tags = _named_columns(src, tags_opt, "tags", list(_DEFAULT_TAGS), "tag_")
    dims = _named_columns(src, dims_opt, "dimensions", [], "dim_")
    for what, names in (("tag", tags), ("dimension", dims)):
        for name in names:
            _check_name(src.label, f"{what} {name!r}", name)
    return fields, tags, dims


def _check_name(label: str, place: str, name: str) -> None:
    """Refuse a name SQL text cannot hold (NUL, lone surrogate); any other is kept as is."""
    try:
        literal(name)
    except ValueError as err:
        raise LoadError(label, place, f"unusable name: {err}") from None


def _named_columns(
    src: _Source, option: Any, what: str, defaults: list[str], prefix: str
) -> dict[str, str]:
    present = set(src.columns)
    if option is None:
        out = {c: c for c in defaults if c in present}
        out.update(
            {
                c[len(prefix) :]: c
                for c in src.columns
                if c.startswith(prefix) and len(c) > len(prefix)
            }
        )
        return out
    pairs = dict(option) if isinstance(option, Mapping) else {c: c for c in option}
    for key, col in pairs.items():
        if col not in present:
            raise LoadError(src.label, f"column {col!r}", f"missing: {what} {key!r} maps to it")
    return {str(k): str(v) for k, v in pairs.items()}


def _typed_view(
    con: duckdb.DuckDBPyConnection,
    src: _Source,
    fields: dict[str, str],
    tags: dict[str, str],
    dims: dict[str, str],
    k: int | None,
) -> None:
    """View ``_tb_v``: one typed row per source row plus ``_problem`` (NULL when usable)."""
    sel: list[str] = ["_enb_ord", "_enb_place"]
    checks: list[str] = []
    if src.json:
        checks.append("WHEN j IS NULL THEN 'not valid JSON'")
        checks.append(
            "WHEN json_type(j) <> 'OBJECT' THEN 'expected a JSON object, got ' || json_type(j)"
        )

    def text_expr(ours: str) -> str:
        return src.text(fields[ours]) if ours in fields else "NULL::VARCHAR"

    sel.append(f"{text_expr('task')} AS task")
    # JSON rows: task 1 and task "1" read the same as text; _load refuses the pair.
    sel.append(
        f"{src.json_type(fields['task'])} AS _task_type" if src.json else "NULL AS _task_type"
    )
    missing = literal(f"task is missing ({fields['task']})")
    checks.append(f"WHEN {text_expr('task')} IS NULL THEN {missing}")
    if "attempt" in fields:
        col = fields["attempt"]
        num = src.number(col)
        sel.append(f"TRY_CAST({num} AS BIGINT) AS attempt_given")
        checks.append(
            f"WHEN {num} IS NULL OR NOT ({src.number_ok(col)}) OR {num} <> floor({num}) "
            f"THEN 'attempt must be an integer, got ' || {src.shown(col)}"
        )
        checks.append(
            f"WHEN {num} < 1 THEN 'attempt ' || {src.text(col)} || ' is out of range: attempts are numbered from 1'"
        )
        checks.append(
            f"WHEN TRY_CAST({num} AS INTEGER) IS NULL THEN 'attempt ' || {src.text(col)} "
            "|| ' is out of range: it must fit a 32-bit integer'"
        )
        if k is not None:
            checks.append(
                f"WHEN {num} > {int(k)} THEN 'attempt ' || {src.text(col)} "
                f"|| ' is out of range: the job requested 1..{int(k)} per task'"
            )
    else:
        sel.append("NULL::BIGINT AS attempt_given")
    rcol = fields["reward"]
    rnum = src.number(rcol)
    sel.append(f"CASE WHEN isnan({rnum}) THEN NULL ELSE {rnum} END AS reward")
    checks.append(
        f"WHEN NOT ({src.number_ok(rcol)}) THEN 'reward must be a number or empty, got ' "
        f"|| {src.shown(rcol)}"
    )
    checks.append(f"WHEN isinf({rnum}) THEN 'reward must be finite, got ' || {src.text(rcol)}")
    if "status" in fields:
        st = src.text(fields["status"])
        sel.append(f"coalesce({st}, 'completed') AS status")
        checks.append(
            f"WHEN {st} IS NOT NULL AND {st} NOT IN {STATUSES!r} "
            f"THEN 'status must be one of {', '.join(STATUSES)}, got ' || {st}"
        )
    else:
        sel.append("'completed' AS status")
    for ours in _INT_FIELDS:
        if ours in fields:
            col = fields[ours]
            num = src.number(col)
            sel.append(f"TRY_CAST({num} AS BIGINT) AS {ours}")
            checks.append(
                f"WHEN NOT ({src.number_ok(col)}) OR {num} <> floor({num}) "
                f"THEN '{ours} must be an integer, got ' || {src.shown(col)}"
            )
            sql_type, bits = _INT_COLUMNS[ours]
            checks.append(
                f"WHEN {num} IS NOT NULL AND TRY_CAST({num} AS {sql_type}) IS NULL "
                f"THEN '{ours} ' || {src.text(col)} || ' is out of range: it must fit a {bits}-bit integer'"
            )
        else:
            sel.append(f"NULL::BIGINT AS {ours}")
    for ours in _DOUBLE_FIELDS:  # NaN is not recorded, as for the reward; infinity is refused
        if ours in fields:
            col = fields[ours]
            num = src.number(col)
            sel.append(f"CASE WHEN isnan({num}) THEN NULL ELSE {num} END AS {ours}")
            checks.append(
                f"WHEN NOT ({src.number_ok(col)}) THEN '{ours} must be a number, got ' || {src.shown(col)}"
            )
            checks.append(
                f"WHEN isinf({num}) THEN '{ours} must be finite, got ' || {src.text(col)}"
            )
        else:
            sel.append(f"NULL::DOUBLE AS {ours}")
    for ours in _TIME_FIELDS:
        if ours in fields:
            col = fields[ours]
            sel.append(f"{src.time(col)} AS {ours}")
            checks.append(
                f"WHEN {src.text(col)} IS NOT NULL AND {src.time(col)} IS NULL "
                f"THEN '{ours} is not an RFC 3339 time: ' || {src.shown(col)}"
            )
        else:
            sel.append(f"NULL::TIMESTAMPTZ AS {ours}")
    for ours in (*_TEXT_FIELDS, "digest"):
        sel.append(f"{text_expr(ours)} AS {ours}")
    if "input" in fields:
        col = fields["input"]
        if src.json:
            jt = src.json_type(col)
            sel.append(
                f"CASE {jt} WHEN 'VARCHAR' THEN {src.text(col)} WHEN 'NULL' THEN NULL "
                f"ELSE {src.raw(col)}::VARCHAR END AS input"
            )
            sel.append(f"coalesce({jt} = 'ARRAY', false) AS input_is_chat")
        elif src.types.get(col, "VARCHAR") == "VARCHAR":
            c = ident(col)
            sel.append(f"{c} AS input")
            sel.append(
                f"coalesce(starts_with(ltrim({c}), '[') AND json_valid({c}) "
                f"AND json_type(TRY_CAST({c} AS JSON)) = 'ARRAY', false) AS input_is_chat"
            )
        else:
            c = ident(col)
            sel.append(f"to_json({c})::VARCHAR AS input")
            sel.append(f"({c} IS NOT NULL) AS input_is_chat")
    else:
        sel.append("NULL::VARCHAR AS input")
        sel.append("NULL::BOOLEAN AS input_is_chat")
    for i, (_key, col) in enumerate(tags.items()):
        sel.append(f"{src.text(col)} AS _tag{i}")
    for i, (name, col) in enumerate(dims.items()):
        sel.append(
            f"CASE WHEN isnan({src.number(col)}) THEN NULL ELSE {src.number(col)} END AS _dim{i}"
        )
        checks.append(
            f"WHEN NOT ({src.number_ok(col)}) "
            f"THEN {literal(f'dimension {name} must be a number, got ')} || {src.shown(col)}"
        )
        checks.append(
            f"WHEN isinf({src.number(col)}) "
            f"THEN {literal(f'dimension {name} must be finite, got ')} || {src.text(col)}"
        )
    used = set(fields.values()) | set(tags.values()) | set(dims.values())
    rest = [c for c in src.columns if c not in used]
    if rest:
        pairs = ", ".join(f"{literal(c)}, {src.raw(c)}" for c in rest)
        sel.append(f"json_object({pairs}) AS extra")
    else:
        sel.append("NULL::JSON AS extra")
    problem = "CASE " + " ".join(checks) + " ELSE NULL END"
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW _tb_v AS
            SELECT {", ".join(sel)}, {problem} AS _problem FROM _tb_src"""
    )


def load_table(
    con: duckdb.DuckDBPyConnection,
    source: Any,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    mapping: Mapping[str, Any] | None = None,
    k: int | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    dataset_revision: str | None = None,
    model: str | None = None,
    runner: str | None = None,
) -> None:
    """Stage a table of attempts, one row per attempt.

    Parameters
    ----------
    source
        A Parquet file, glob (``runs/*.parquet``) or hive-partitioned folder; a CSV/TSV
        file; a JSONL file or JSON array of records (``.gz`` too); or a pandas, polars or
        Arrow frame in memory.
    mapping
        Our column → the source's column. Defaults: each field under its own name
        (``task``, ``attempt``, ``reward``, ``status``, ``trial_id``, ``input``, ``output``,
        ``reference``, ``error``, ``error_type``, ``exit_code``, ``turns``,
        ``input_tokens``, ``output_tokens``, ``cache_tokens``, ``cost_usd``,
        ``started_at``, ``finished_at``, ``duration_s``, ``digest``). ``task`` and
        ``reward`` must exist; a field mapped explicitly must exist; map a field to
        ``None`` to ignore a column. ``"tags"``: a list of columns (or ``{tag: column}``)
        that become task tags (default: ``subset``, ``difficulty`` and ``tag_*``
        columns); ``"dimensions"``: columns that become score dimensions (default:
        ``dim_*`` columns). Other columns are kept in the attempt's ``extra`` JSON.
    k
        Attempts requested per task; default the highest attempt found.
    job_id
        Default ``"table:<file stem>"``; required for an in-memory frame.

    Rules: an empty reward (or NaN) is no reward, never 0; so is a NaN cost or duration
    (infinity is refused). Column names that differ only in case (``dim_X`` and
    ``dim_x``), or that a hive folder (``Task=9/``) would overwrite, are refused naming
    both: DuckDB compares column names ignoring ASCII case and would rename, merge or
    replace one quietly (JSON keys are never renamed: JSONL is not refused). Without a status column every
    row is ``completed`` (an empty status too). Without an attempt column, a task's rows
    are its attempts 1, 2, ... in the order they appear (file order; for Parquet, files
    in name order, then row order). The requested tasks are the distinct task values, in
    order of first appearance. Two rows for the same (task, attempt) are an error.
    ``lenient=True`` skips unusable rows (bad JSON line, non-numeric reward, ragged CSV
    line, ...) and warns with :class:`~envloop_nb.LoadWarning` how many. Places in
    messages and ``source_place``: ``line N`` (CSV, JSONL), ``[i]`` (JSON array),
    ``row N`` (Parquet row, frame row from 0, or CSV data row once ragged lines were
    skipped), ``<file> row N`` for several Parquet files.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> import pandas as pd
    >>> df = pd.DataFrame({"question": ["q1", "q1", "q2", "q2"], "correct": [1, 0, 1, None]})
    >>> job = enb.open().load(df, job_id="mine", mapping={"task": "question", "reward": "correct"})
    >>> job.k, job.summary().scored, job.attempts()["attempt"].tolist()
    (2, 3, [1, 2, 1, 2])
    """
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise LoadError(str(source), "k", f"expected an integer >= 1, got {k!r}")
    if k is not None and k > INT32_MAX:
        raise LoadError(str(source), "k", f"k {k} is out of range: it must fit a 32-bit integer")
    options = (mapping, k, dataset, dataset_version, dataset_revision, model, runner)
    if not isinstance(source, str | Path):
        src = _open_frame(con, source)
        if not job_id:
            _cleanup(con, src)
            raise LoadError(src.label, None, "pass job_id=... to load an in-memory frame")
        _run(con, src, job_id, lenient, options, source)
        return
    stem = Path(str(source).rstrip("/")).name
    for suffix in (".gz", ".parquet", ".csv", ".tsv", ".jsonl", ".ndjson", ".json"):
        stem = stem.removesuffix(suffix)
    jid = job_id or f"table:{stem}"
    path = Path(str(source))
    if is_gzip(path) and path.is_file():
        check_gzip(path)  # DuckDB would read a cut stream up to the cut, quietly
    try:
        _run(con, _open_path(con, source), jid, lenient, options, source)
        return
    except duckdb.Error:
        restart(con, jid)  # the error aborted the transaction
        rejects = _csv_rejects(con, Path(source)) if _is_csv(source) else []
        if not rejects:
            _explain_json_array(path)  # DuckDB says what, not where: find the place
            raise
    line, problem = rejects[0]
    more = f" ({len(rejects) - 1} more malformed lines)" if len(rejects) > 1 else ""
    if not lenient:
        raise LoadError(source, f"line {line}", f"malformed CSV row: {problem}{more}") from None
    warnings.warn(
        f"{source}: skipped {len(rejects)} malformed CSV line(s); first at line {line}: {problem}",
        LoadWarning,
        stacklevel=4,
    )
    restart(con, jid)  # start the load over, skipping the malformed lines
    _run(con, _open_path(con, source, skip_bad_csv=True), jid, lenient, options, source)


def _cleanup(con: duckdb.DuckDBPyConnection, src: _Source | None) -> None:
    for name in src.registered if src else []:
        con.unregister(name)
    for view in ("_tb_n", "_tb_v", "_tb_src"):
        con.execute(f"DROP VIEW IF EXISTS {view}")
    for table in ("_tb_files", "_tb_rej", "_tb_rejscan"):
        con.execute(f"DROP TABLE IF EXISTS {table}")


def _run(
    con: duckdb.DuckDBPyConnection,
    src: _Source,
    jid: str,
    lenient: bool,
    options: tuple[Any, ...],
    source: Any,
) -> None:
    mapping, k, dataset, dataset_version, dataset_revision, model, runner = options
    begin_job(con, jid)
    try:
        _load(
            con,
            src,
            jid,
            lenient,
            mapping,
            k,
            dataset,
            dataset_version,
            dataset_revision,
            model,
            runner,
            source,
        )
    except duckdb.Error:
        restart(con, jid)  # the error aborted the transaction; the caller may retry
        raise
    finally:
        _cleanup(con, src)


def _load(
    con: duckdb.DuckDBPyConnection,
    src: _Source,
    jid: str,
    lenient: bool,
    mapping: Mapping[str, Any] | None,
    k: int | None,
    dataset: str | None,
    dataset_version: str | None,
    dataset_revision: str | None,
    model: str | None,
    runner: str | None,
    source: Any,
) -> None:
    fields, tags, dims = _resolve_mapping(src, mapping)
    _typed_view(con, src, fields, tags, dims, k)
    bad = con.execute(
        "SELECT count(*), arg_min(_enb_place, _enb_ord), arg_min(_problem, _enb_ord) "
        "FROM _tb_v WHERE _problem IS NOT NULL"
    ).fetchone()
    assert bad is not None
    n_bad = int(bad[0])
    where = ""
    if n_bad:
        place, problem = str(bad[1]), str(bad[2])
        if src.json:
            place = physical_place(Path(src.label), place)
        if problem == "not valid JSON" and place.startswith("line "):
            problem = explain_bad_line(Path(src.label), int(place.removeprefix("line ")))
        if not lenient:
            more = f" ({n_bad - 1} more unusable rows)" if n_bad > 1 else ""
            raise LoadError(src.label, place, problem + more)
        warnings.warn(
            f"{src.label}: skipped {n_bad} unusable row(s); first at {place}: {problem}",
            LoadWarning,
            stacklevel=5,
        )
        where = "WHERE _problem IS NULL"
    attempt = (
        "attempt_given::INTEGER"
        if "attempt" in fields
        else "row_number() OVER (PARTITION BY task ORDER BY _enb_ord)::INTEGER"
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW _tb_n AS SELECT *, {attempt} AS attempt FROM _tb_v {where}"
    )
    con.execute(
        f"""INSERT INTO {stage_name("attempts")} BY NAME
            SELECT $jid AS job_id, task, attempt, trial_id, status,
                   exit_code::INTEGER AS exit_code, error, error_type, reward,
                   input_tokens, output_tokens, cache_tokens, turns::INTEGER AS turns,
                   cost_usd, started_at, finished_at,
                   coalesce(duration_s, epoch(finished_at) - epoch(started_at)) AS duration_s,
                   input, input_is_chat, output, reference, extra,
                   1 AS n_trials, _enb_place AS source_place
            FROM _tb_n""",
        {"jid": jid},
    )
    if dims:
        values = ", ".join(f"_dim{i}" for i in range(len(dims)))
        con.execute(
            f"""INSERT INTO {stage_name("dimensions")} BY NAME
                SELECT $jid AS job_id, task, attempt,
                       unnest($names::VARCHAR[]) AS name, unnest([{values}]) AS value
                FROM _tb_n""",
            {"jid": jid, "names": list(dims)},
        )
        con.execute(
            f"""INSERT INTO {stage_name("dimension_meta")} BY NAME
                SELECT $jid AS job_id, unnest($names) AS name""",
            {"jid": jid, "names": list(dims)},
        )
    tag_cols = "".join(
        f", any_value(_tag{i}) FILTER (WHERE _tag{i} IS NOT NULL) AS _tag{i}"
        for i in range(len(tags))
    )
    if src.json:  # where each task id is first written as a string, and as anything else
        tag_cols += (
            ", min(_enb_ord) FILTER (WHERE _task_type = 'VARCHAR') AS _text_ord"
            ", min(_enb_ord) FILTER (WHERE _task_type <> 'VARCHAR') AS _other_ord"
        )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _tb_tasks AS
            SELECT task, min(_enb_ord) AS first, any_value(digest) FILTER (WHERE digest IS NOT NULL) AS digest
                   {tag_cols}
            FROM _tb_v {where} GROUP BY task"""
    )
    try:
        if src.json:
            _refuse_merged_task_ids(con, src, fields["task"])
        for i, key in enumerate(tags):
            con.execute(
                f"""INSERT INTO {stage_name("task_tags")} BY NAME
                    SELECT $jid AS job_id, task, $key AS key, _tag{i} AS value
                    FROM _tb_tasks WHERE _tag{i} IS NOT NULL""",
                {"jid": jid, "key": key},
            )
        con.execute(
            f"""INSERT INTO {stage_name("tasks")} BY NAME
                SELECT $jid AS job_id, t.task,
                       (row_number() OVER (ORDER BY t.first) - 1)::INTEGER AS position,
                       t.digest,
                       coalesce((SELECT json_group_object(g.key, g.value)
                                 FROM {stage_name("task_tags")} g
                                 WHERE g.job_id = $jid AND g.task = t.task),
                                '{{}}')::JSON AS tags
                FROM _tb_tasks t ORDER BY t.first""",
            {"jid": jid},
        )
    finally:
        con.execute("DROP TABLE IF EXISTS _tb_tasks")
    stats = con.execute(
        f"""SELECT max(attempt), count(*) FILTER (WHERE status IN ('pending', 'running')),
                   min(started_at), max(finished_at)
            FROM {stage_name("attempts")} WHERE job_id = $jid""",
        {"jid": jid},
    ).fetchone()
    assert stats is not None
    job_k = k if k is not None else int(stats[0] or 1)
    con.execute(
        f"""INSERT INTO {stage_name("jobs")} BY NAME
            SELECT $jid AS job_id, 'table' AS source_format, $path AS source_path,
                   $status AS status, $created::TIMESTAMPTZ AS created_at,
                   $finished::TIMESTAMPTZ AS finished_at, $dataset AS dataset_name,
                   $version AS dataset_version, $revision AS dataset_revision,
                   $runner AS runner, $model AS model, $k AS attempts,
                   $extra::JSON AS extra, now() AS loaded_at""",
        {
            "jid": jid,
            "path": str(source) if isinstance(source, str | Path) else None,
            "status": "running" if stats[1] else "completed",
            "created": stats[2],
            "finished": None if stats[1] else stats[3],
            "dataset": dataset,
            "version": dataset_version,
            "revision": dataset_revision,
            "runner": runner,
            "model": model,
            "k": job_k,
            "extra": json.dumps(
                {"mapping": fields, "tags": tags, "dimensions": dims, "skipped_rows": n_bad}
            ),
        },
    )


_JSON_KINDS = {
    "VARCHAR": "a string",
    "BIGINT": "a number",
    "UBIGINT": "a number",
    "DOUBLE": "a number",
    "BOOLEAN": "a boolean",
    "OBJECT": "an object",
    "ARRAY": "an array",
}


def _refuse_merged_task_ids(con: duckdb.DuckDBPyConnection, src: _Source, col: str) -> None:
    """Refuse two task ids that differ in the file but read the same (``1`` and ``"1"``)."""
    pair = con.execute(
        """SELECT t.task, t._text_ord, t._other_ord FROM _tb_tasks t
           WHERE t._text_ord IS NOT NULL AND t._other_ord IS NOT NULL
           ORDER BY t.first LIMIT 1"""
    ).fetchone()
    if pair is None:
        return
    task, ords = str(pair[0]), sorted([int(pair[1]), int(pair[2])])
    rows = con.execute(
        f"SELECT _enb_place, {src.raw(col)}, {src.json_type(col)} FROM _tb_src "
        "WHERE _enb_ord IN (?, ?) ORDER BY _enb_ord",
        ords,
    ).fetchall()
    path = Path(src.label)
    places = [physical_place(path, str(r[0])) for r in rows]

    def shown(value: Any, kind: Any) -> str:
        return f"{value} ({_JSON_KINDS.get(str(kind), str(kind).lower())})"

    a, b = (shown(r[1], r[2]) for r in rows)
    raise LoadError(
        src.label,
        " and ".join(places),
        f"task {a} and task {b} would be merged into one task {task!r}: "
        "write every task id the same way",
    )
