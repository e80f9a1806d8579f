"""Opening a workspace file: DuckDB's refusals and a file that is not a workspace (or is
one from a newer envloop_nb) become a :class:`~envloop_nb._errors.WorkspaceError` that
names the file and says what to do, before anything is written to it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from .._errors import WorkspaceError
from .schema import SCHEMA_SQL, SCHEMA_VERSION, written_by

__all__ = ["check_schema_version", "connect"]


def connect(path: Path, *, read_only: bool, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` on a workspace file, its refusals told as a ``WorkspaceError``.

    Raises
    ------
    WorkspaceError
        Another process has the file (DuckDB lets one process write a file, or several
        read it); it is open in this process with other settings; it is not a DuckDB
        database (or one this DuckDB cannot read); ``read_only`` and it does not exist.
    """
    try:
        return duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.Error as err:
        raise _refusal(path, err, read_only=read_only) from err


def _refusal(path: Path, err: duckdb.Error, *, read_only: bool) -> WorkspaceError | duckdb.Error:
    said = str(err)
    if "Could not set lock" in said:
        pid = re.search(r"\(PID (\d+)\)", said)
        who = f"another process (PID {pid[1]})" if pid else "another process"
        return WorkspaceError(
            path,
            None,
            f"{who} has this workspace open{'' if read_only else ' for writing'}, and DuckDB "
            "lets one process at a time write a file: close it there (ws.close(), or shut "
            "down that notebook's kernel) and open it again; to read one file from several "
            "processes at once, open it with read_only=True in every one",
        )
    if "different configuration" in said:
        return WorkspaceError(
            path,
            None,
            "already open in this Python process with other settings (read_only, "
            "memory_limit or temp_directory): use that workspace, or ws.close() it first",
        )
    if read_only and not path.exists():
        return WorkspaceError(
            path, None, "no such workspace file (read_only=True opens an existing one)"
        )
    if isinstance(err, duckdb.IOException | duckdb.SerializationException) and path.is_file():
        return WorkspaceError(
            path,
            None,
            f"not a DuckDB database (DuckDB {duckdb.__version__}: {said}): give enb.open "
            "the path of a workspace file, or of a new file to make one",
        )
    return err  # not about the file (e.g. a bad memory_limit): DuckDB's own words


def _schema_tables() -> set[str]:
    return set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+) \(", SCHEMA_SQL))


def check_schema_version(
    con: duckdb.DuckDBPyConnection, path: str | None, *, have: set[str]
) -> int | None:
    """Refuse a file that is not a workspace, or whose schema is newer than this code
    knows; return the file's schema version (None for a new or empty file).

    ``have`` is the file's tables. A database with tables but no ``meta.schema_version``
    (every workspace has recorded one since the first) is not a workspace: it would be
    given the workspace's tables beside its own, and a table of its own named like one of
    ours would break the questions later; only a file holding nothing but our tables (a
    first open cut short) is taken as a new workspace. A newer file would have its
    ``schema_version`` "upgraded" back and tables of the old schema written into it. Either
    way the file is left exactly as it was.

    Raises
    ------
    WorkspaceError
        Naming the file and, for a newer one, ``meta.schema_version`` and which version
        wrote it.
    """
    where = path or ":memory:"
    meta: dict[str, Any] = {}
    if "meta" in have:
        meta = dict(
            con.execute(
                "SELECT key, value FROM meta WHERE key IN ('schema_version', 'written_by')"
            ).fetchall()
        )
    found = meta.get("schema_version")
    if found is None:
        if have - _schema_tables():
            raise WorkspaceError(
                where,
                None,
                "a DuckDB database but not an envloop_nb workspace (no meta.schema_version; "
                f"tables {', '.join(sorted(have))}): give enb.open a new file for a workspace "
                "(read this one with duckdb.connect(path, read_only=True))",
            )
        return None
    try:
        newer = int(found) > SCHEMA_VERSION
    except ValueError:
        raise WorkspaceError(
            where,
            "meta.schema_version",
            f"unreadable workspace schema version {found!r}: this envloop_nb "
            f"reads schema version {SCHEMA_VERSION}",
        ) from None
    if newer:
        by = meta.get("written_by") or "a newer envloop_nb"
        raise WorkspaceError(
            where,
            "meta.schema_version",
            f"written by {by} (workspace schema version {found}); {written_by()} reads "
            f"schema version {SCHEMA_VERSION} at most: upgrade envloop_nb to open it "
            "(the file was not changed)",
        )
    return int(found)
