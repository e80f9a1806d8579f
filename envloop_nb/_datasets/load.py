"""Loading a dataset folder (``ws.load_dataset``): its manifest and rows checked, the
dataset registered, the held-out guard run over it.

Apart from :mod:`.dataset` (the folder's format and the ``Dataset`` handle) because the
guard (:mod:`.heldout`) reads ``Dataset`` itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import EnvloopError
from .dataset import MANIFEST_SCHEMA, Dataset, content_hash, read_rows, register_dataset
from .heldout import warn_dataset_overlaps

if TYPE_CHECKING:
    from .._store.ref import WorkspaceRef

__all__ = ["load_dataset"]


def load_dataset(ws: WorkspaceRef, source: str | Path) -> Dataset:
    """Load a dataset folder: verify its content hash, register it, return its handle.

    A dataset marked ``purpose="train"`` whose inputs are task inputs of jobs in the
    workspace (or an eval dataset sharing inputs with a train dataset) warns
    :class:`envloop_nb.HeldOutWarning`, as its export did.
    """
    path = Path(source)
    folder = path.parent if path.name == "manifest.json" else path
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        raise EnvloopError(f"{folder}: not a dataset folder (no manifest.json)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise EnvloopError(f"{manifest_path}: not valid JSON ({err.msg})") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise EnvloopError(
            f"{manifest_path}: expected schema {MANIFEST_SCHEMA!r}, "
            f"got {manifest.get('schema') if isinstance(manifest, dict) else manifest!r}"
        )
    for key in ("name", "version", "content_hash", "row_count"):
        if key not in manifest:
            raise EnvloopError(f"{manifest_path}: missing {key!r}")
    rows = read_rows(folder, manifest)
    digest = content_hash(rows)
    if digest != manifest["content_hash"]:
        raise EnvloopError(
            f"{folder}: content hash {digest} does not match the manifest's "
            f"{manifest['content_hash']}: the rows changed after export"
        )
    if len(rows) != manifest["row_count"]:
        raise EnvloopError(
            f"{folder}: {len(rows)} rows, but the manifest says {manifest['row_count']}"
        )
    register_dataset(ws, manifest, rows, folder)
    ds = Dataset(
        name=manifest["name"],
        version=manifest["version"],
        path=folder,
        manifest=manifest,
        content_hash=digest,
        purpose=manifest.get("purpose"),
        row_count=len(rows),
        workspace=ws,
    )
    warn_dataset_overlaps(ws, ds)  # a train set over loaded jobs: HeldOutWarning
    return ds
