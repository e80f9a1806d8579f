"""Datasets exported from jobs: a folder ``<name>@<version>/`` with rows and a manifest.

The folder holds ``rows.jsonl`` or ``rows.parquet`` (one row per task) and
``manifest.json`` (provenance). The content hash is the sha256 of a canonical
serialization of the rows (one compact JSON object per row, keys sorted, joined by
newlines), so the same rows give the same hash whatever the file format or export time.
Loading a dataset folder (:func:`.load.load_dataset`) verifies the hash, registers the
dataset in the workspace (tables ``datasets`` and ``dataset_rows``) and returns a
:class:`Dataset` handle.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError, LoadError
from .._store.sql import ident
from .trajectory_export import BULK_KEYS, TRAJECTORY_FORMATS

if TYPE_CHECKING:
    from .._store.ref import WorkspaceRef

__all__ = [
    "MANIFEST_SCHEMA",
    "Dataset",
    "canonical_lines",
    "commit_registration",
    "content_hash",
    "is_dataset_folder",
    "read_rows",
    "register_dataset",
    "registration_table",
    "rows_path",
]

MANIFEST_SCHEMA = "envloop_nb.dataset/v1"
#: Row fields stored in ``dataset_rows`` columns; every other field goes to ``extra``.
_ROW_COLUMNS = ("task", "input", "reference", "tags")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def canonical_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One compact, key-sorted JSON text per row (the JSONL file's lines).

    Examples
    --------
    >>> canonical_lines([{"b": 1.0, "a": "x", "tags": {"z": "1", "a": "2"}}])
    ['{"a":"x","b":1.0,"tags":{"a":"2","z":"1"}}']
    """
    return [
        json.dumps(
            {k: _clean(v) for k, v in row.items()},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
        for row in rows
    ]


def content_hash(rows: Sequence[dict[str, Any]]) -> str:
    """``"sha256:<hex>"`` of the canonical serialization of ``rows``.

    Examples
    --------
    >>> content_hash([{"a": 1}]) == content_hash([{"a": 1}])
    True
    >>> content_hash([{"a": 1}])[:7]
    'sha256:'
    """
    digest = hashlib.sha256("\n".join(canonical_lines(rows)).encode("utf-8")).hexdigest()
    return f"sha256:{digest}"


def is_dataset_folder(source: Any) -> bool:
    """Whether ``source`` is a dataset folder (or its ``manifest.json``)."""
    if not isinstance(source, str | Path):
        return False
    path = Path(source)
    if path.is_dir():
        return (path / "manifest.json").is_file()
    return path.name == "manifest.json" and path.is_file()


def rows_path(folder: Path, manifest: dict[str, Any]) -> Path:
    """The rows file the manifest names, refused unless it lies inside ``folder``.

    An absolute path, a ``..`` that climbs out, or a symlink (of the file or of a folder
    on its way) that resolves outside the dataset folder raise :class:`LoadError`
    naming the manifest: a dataset folder never makes the toolkit read another file.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> rows_path(folder, {"file": "rows.jsonl"}) == folder.resolve() / "rows.jsonl"
    True
    >>> rows_path(folder, {"file": "../rows.jsonl"})
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: .../manifest.json, "file": the rows file '../rows.jsonl' is outside the dataset folder ...
    """
    name = manifest.get("file")
    manifest_path = folder / "manifest.json"
    if not isinstance(name, str) or not name.strip():
        raise LoadError(manifest_path, '"file"', f"must name the rows file, got {name!r}")
    root = folder.resolve()
    path = (root / name).resolve()  # follows every symlink on the way
    if Path(name).is_absolute() or not path.is_relative_to(root) or path == root:
        raise LoadError(
            manifest_path,
            '"file"',
            f"the rows file {name!r} is outside the dataset folder {root} (it resolves to "
            f"{path}); a manifest may only name a file inside its own folder",
        )
    return path


def read_rows(folder: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of a dataset folder, decoded to canonical Python values."""
    name = manifest.get("file")
    fmt = manifest.get("format")
    if fmt not in ("jsonl", "parquet", *TRAJECTORY_FORMATS) or not isinstance(name, str):
        raise EnvloopError(
            f"{folder / 'manifest.json'}: format must be 'jsonl', 'parquet', 'openai_chat' or "
            "'atif' with a file name"
        )
    path = rows_path(folder, manifest)
    if not path.is_file():
        raise EnvloopError(f"{path}: the manifest names this rows file but it is missing")
    rows: list[dict[str, Any]] = []
    if fmt != "parquet":  # JSON lines (a trajectory format's too)
        with path.open(encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise EnvloopError(f"{path}, line {i}: not valid JSON ({err.msg})") from None
        return rows
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    for row in rows:
        if isinstance(row.get("tags"), str):
            row["tags"] = json.loads(row["tags"])
    return rows


def registration_table(
    name: str, version: str, rows: Sequence[dict[str, Any]], start: int = 0
) -> Any:
    """``dataset_rows`` columns (an Arrow table) for ``rows`` numbered from ``start``
    (a trajectory line's ``messages`` / ``trajectory`` stay in the file, not here)."""
    import pyarrow as pa

    skip = (*_ROW_COLUMNS, *BULK_KEYS)
    extra = [
        json.dumps({k: _clean(v) for k, v in r.items() if k not in skip}, sort_keys=True)
        for r in rows
    ]
    return pa.table(
        {
            "dataset_name": pa.array([name] * len(rows), pa.string()),
            "dataset_version": pa.array([version] * len(rows), pa.string()),
            "row_index": pa.array(range(start, start + len(rows)), pa.int64()),
            "task": pa.array([r.get("task") for r in rows], pa.string()),
            "input": pa.array([r.get("input") for r in rows], pa.string()),
            "reference": pa.array([r.get("reference") for r in rows], pa.string()),
            "tags": pa.array(
                [json.dumps(r.get("tags") or {}, sort_keys=True) for r in rows], pa.string()
            ),
            "extra": pa.array(extra, pa.string()),
        }
    )


def register_dataset(
    ws: WorkspaceRef,
    manifest: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    path: Path,
) -> None:
    """Write (or replace) the dataset's rows in ``datasets`` and ``dataset_rows``, atomically."""
    con = ws.con
    con.register("_ds_rows", registration_table(manifest["name"], manifest["version"], rows))
    try:
        commit_registration(ws, manifest, "_ds_rows", path, len(rows))
    finally:
        con.unregister("_ds_rows")


def commit_registration(
    ws: WorkspaceRef,
    manifest: dict[str, Any],
    rows: str | Path | None,
    path: Path,
    row_count: int,
) -> None:
    """Replace the dataset's registration in one transaction.

    ``rows`` holds the registration rows (columns of :func:`registration_table`, in row
    order): the name of a relation registered on the connection, the path of a Parquet
    file of them (read by DuckDB, streamed into the table), or ``None`` when there are
    none.
    """
    name, version = manifest["name"], manifest["version"]
    created = manifest.get("created_at")
    con = ws.con
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM datasets WHERE name = ? AND version = ?", [name, version])
        con.execute(
            "DELETE FROM dataset_rows WHERE dataset_name = ? AND dataset_version = ?",
            [name, version],
        )
        con.execute(
            "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                name,
                version,
                manifest.get("purpose"),
                str(path),
                row_count,
                manifest["content_hash"],
                json.dumps(manifest),
                dt.datetime.fromisoformat(created) if created else None,
            ],
        )
        if rows is not None:
            source, params = (
                (ident(rows), []) if isinstance(rows, str) else ("read_parquet(?)", [str(rows)])
            )
            con.execute(
                f"""INSERT INTO dataset_rows
                   SELECT dataset_name, dataset_version, row_index, task, input, reference,
                          tags::JSON, extra::JSON FROM {source}""",
                params,
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


@dataclass(frozen=True, eq=False)
class Dataset:
    """A dataset registered in a workspace (exported by ``job.export_dataset`` or loaded).

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> ds = job.export_dataset(tempfile.mkdtemp(), name="tiny", version="1", allow_partial=True)
    >>> back = ws.load_dataset(ds.path)
    >>> (back.ref, back.row_count, back.content_hash == ds.content_hash)
    ('tiny@1', 3, True)
    """

    name: str
    version: str
    path: Path
    manifest: dict[str, Any] = field(repr=False)
    content_hash: str
    purpose: str | None
    row_count: int
    workspace: WorkspaceRef = field(repr=False)

    @property
    def ref(self) -> str:
        """``"name@version"``."""
        return f"{self.name}@{self.version}"

    @property
    def partial(self) -> bool:
        """Whether the source job was unfinished when the dataset was exported."""
        return bool(self.manifest.get("partial"))

    def rows(self, frame: str = "pandas") -> Any:
        """The rows as a frame (``tags`` as JSON text; a trajectory line's ``messages``,
        ``trajectory`` and ``notes`` too), read back from the rows file."""
        import pyarrow as pa

        rows = read_rows(self.path, self.manifest)
        flat = [{**r, "tags": json.dumps(r.get("tags") or {}, sort_keys=True)} for r in rows]
        for r in flat:  # a trajectory line's nested parts (and notes) as JSON text
            for key in (*BULK_KEYS, "notes"):
                if key in r:
                    r[key] = json.dumps(r[key], ensure_ascii=False, sort_keys=True)
        columns = self.manifest.get("columns") or (list(flat[0]) if flat else [])
        table = pa.Table.from_pylist(flat) if flat else pa.table({c: [] for c in columns})
        table = table.select([c for c in columns if c in table.column_names])
        if frame == "polars":
            import polars as pl

            return pl.from_arrow(table)
        if frame != "pandas":
            raise ValueError(f"frame must be 'pandas' or 'polars', got {frame!r}")
        return table.to_pandas()

    def __len__(self) -> int:
        return self.row_count

    def __repr__(self) -> str:
        purpose = f" · {self.purpose}" if self.purpose else ""
        partial = " · PARTIAL" if self.partial else ""
        return (
            f"<envloop_nb.Dataset {self.ref} · {self.row_count:,} rows{purpose}{partial} · "
            f"{self.content_hash[:19]}…>"
        )
