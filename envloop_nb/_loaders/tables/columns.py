"""A table source's columns: the staged view ``Source`` every opener returns (its SQL for a
column's value, text, number, time) and the column names refused before reading
(names DuckDB would rename, merge or replace; names SQL text cannot hold).

Shared by the local openers (:mod:`.source`) and object storage (:mod:`.object_store`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..._errors import LoadError
from ..._store.sql import ident, json_pointer, literal

__all__ = [
    "INTERNAL",
    "RESERVED_CSV",
    "RESERVED_FRAME",
    "RESERVED_PARQUET",
    "Source",
    "check_name",
    "check_parquet_names",
    "refuse_name_clashes",
]

#: Integer column types whose every value fits a BIGINT.
INT64_TYPES = frozenset(
    ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")
)
#: Columns every staged view ``_tb_src`` adds to the source's own.
INTERNAL = ("_enb_ord", "_enb_place")
#: Names the reader adds while reading, per source kind (compared ignoring ASCII case,
#: as DuckDB compares column names): a source column of that name would be renamed,
#: dropped or taken for ours.
RESERVED_FRAME = frozenset(INTERNAL)
RESERVED_CSV = RESERVED_FRAME | {"ordinality"}  # WITH ORDINALITY
RESERVED_PARQUET = RESERVED_FRAME | {"_enb_file", "file_row_number"}


@dataclass
class Source:
    """A staged view ``_tb_src`` over the input with ``_enb_ord`` and ``_enb_place``."""

    label: str
    columns: list[str]
    json: bool  # rows are JSON objects in column ``j`` (JSONL / JSON array)
    types: dict[str, str] = field(default_factory=dict)
    registered: list[str] = field(default_factory=list)
    #: ``count(*)`` over ``_tb_src`` answers without reading the rows (Parquet footers,
    #: a frame's length): the loader then checks the rows in the same pass it inserts.
    counted: bool = False
    #: Parquet: the files, and the SELECT of ``_tb_src`` standing alone (no temporary
    #: object in it, None when it needs one) that a job read in place keeps.
    files: list[str] = field(default_factory=list)
    select_sql: str | None = None
    #: SQL over ``_enb_ord`` of the N of a place ``row N`` (a copying load keeps the
    #: number, not the text: ``attempt_rows.source_row``); None: another kind of place
    row_number: str | None = None

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

    def integer(self, col: str) -> bool:
        """The column is typed as an integer that fits 64 bits (Parquet, a frame)."""
        return not self.json and self.types.get(col) in INT64_TYPES

    def floating(self, col: str) -> bool:
        """The column is typed as a binary float (``FLOAT``, ``DOUBLE``)."""
        return not self.json and self.types.get(col) in ("FLOAT", "DOUBLE")

    def number_ok(self, col: str) -> str:
        """SQL true when the value is NULL or a number."""
        if self.json:
            return f"coalesce({self.json_type(col)}, 'NULL') IN ('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE')"
        if self.integer(col) or self.floating(col):
            return "true"  # typed by the source: no per-row check
        return f"({ident(col)} IS NULL OR TRY_CAST({ident(col)} AS DOUBLE) IS NOT NULL)"

    def number(self, col: str) -> str:
        if self.json:
            return f"TRY_CAST({self.raw(col)} AS DOUBLE)"
        if self.types.get(col) == "DOUBLE":
            return ident(col)
        if self.integer(col) or self.floating(col):
            return f"{ident(col)}::DOUBLE"
        return f"TRY_CAST({ident(col)} AS DOUBLE)"

    def time(self, col: str) -> str:
        if not self.json and self.types.get(col) == "TIMESTAMP WITH TIME ZONE":
            return ident(col)
        if self.json or self.types.get(col, "").startswith(("VARCHAR", "JSON")):
            return f"TRY_CAST({self.text(col)} AS TIMESTAMPTZ)"
        return f"TRY_CAST({ident(col)} AS TIMESTAMPTZ)"


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fold(name: str) -> str:
    """``name`` as DuckDB compares column names: ASCII letters without case (``É`` and
    ``é`` stay two names, ``X`` and ``x`` are one)."""
    return name.translate(_ASCII_LOWER)


def refuse_name_clashes(
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


def check_parquet_names(
    label: str, units: Sequence[tuple[str | None, Sequence[str]]], hive: Mapping[str, str]
) -> None:
    """Refuse Parquet column names DuckDB would rename, merge or replace (see
    ``refuse_name_clashes``); for Parquet read some other way (object storage)."""
    refuse_name_clashes(label, units, hive, RESERVED_PARQUET)


def check_name(label: str, place: str, name: str) -> None:
    """Refuse a name SQL text cannot hold (NUL, lone surrogate); any other is kept as is."""
    try:
        literal(name)
    except ValueError as err:
        raise LoadError(label, place, f"unusable name: {err}") from None
