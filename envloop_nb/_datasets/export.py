"""A new dataset from chosen buckets of a job, for later training or evaluation.

``export_dataset`` writes ``<folder>/<name>@<version>/`` with ``rows.jsonl`` or
``rows.parquet`` (one row per task: task, input, input_is_chat, reference, tags, bucket,
pass_rate and the source metrics) and ``manifest.json`` (provenance: source job,
dataset name@revision, rules, policy, row count, content hash, created time, partial
flag, purpose), then registers it in the workspace. The per-task rows are built in
DuckDB, ``CHUNK_TASKS`` tasks per query (the first recorded input of each task, and its
first valid reference, from that chunk's attempts), and streamed in Arrow record batches:
the file is written, the content hash updated and the registration rows staged in a
Parquet file one batch at a time (DuckDB inserts them from it at the end). What grows
with the row count is the per-task metrics table the rows are chosen by (numbers, and
text shared with the job's kept per-task counts) and DuckDB's buffers of the registered
rows (evictable up to the workspace's memory limit), not the rows' text in Python.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._buckets.apply import check_finished, job_buckets
from .._buckets.rules import BucketRules, parse_names
from .._errors import EnvloopError
from .._files import output_folder
from .._metrics.passk_views import sample_table
from .._store.ref import job_info
from .._store.sql import ident
from .dataset import (
    MANIFEST_SCHEMA,
    Dataset,
    canonical_lines,
    commit_registration,
    registration_table,
)
from .trajectory_export import TRAJECTORY_FORMATS, TrajectoryCounts, trajectory_lines

if TYPE_CHECKING:
    from .._store.ref import JobRef, WorkspaceRef
    from .._types import Policy

__all__ = ["check_new_dataset", "export_dataset", "write_dataset"]

#: Rows fetched from DuckDB per Arrow batch (memory is one batch, not the dataset).
BATCH_ROWS = 4_096
#: Tasks per query of the rows (DuckDB's memory for the first inputs is one chunk's).
CHUNK_TASKS = 131_072

_NAME = re.compile(r"^[^/\\@\x00-\x1f]+$")


def _check_label(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or not _NAME.match(value):
        raise ValueError(
            f"dataset {what} must be a non-empty string without '/', '\\\\' or '@', got {value!r}"
        )
    if value in (".", ".."):
        raise ValueError(f"dataset {what} cannot be {value!r}")
    return value


def _task_batches(
    job: JobRef,
    tasks: Any,
    rules: BucketRules | None,
    chosen: list[str] | None,
) -> Generator[Any, None, None]:
    """Arrow record batches of the rows: one per task, in task order, built by DuckDB.

    The query runs on a cursor of the workspace (its own connection to the same
    database), so the workspace connection stays free while the batches stream.
    """
    import pyarrow as pa

    con = job.con.cursor()
    columns = list(tasks.column_names if isinstance(tasks, pa.Table) else tasks.columns)
    metric_cols = [
        c
        for c in columns
        if c in ("n", "scored", "passes", "reward_mean")
        or c.startswith(("pass@", "pass^"))
        or (rules is not None and c == rules.metric)
    ]
    keep = ["task", "pass_rate", *metric_cols] + (["bucket"] if "bucket" in columns else [])
    keep = list(dict.fromkeys(keep))
    frame = tasks.select(keep) if isinstance(tasks, pa.Table) else tasks[keep]
    params: dict[str, Any] = {"job": job.id}
    and_bucket = ""
    if chosen is not None:
        params["chosen"] = list(chosen)
        and_bucket = "AND list_contains($chosen::VARCHAR[], b.bucket)"
    extra_cols = "".join(
        f", b.{ident(c)}" for c in metric_cols if c != "pass_rate"
    )  # pass_rate is selected already (it is also the metric of pass-rate rules)
    bucket = "b.bucket" if "bucket" in keep else "NULL::VARCHAR"
    # the task's current human annotations travel with it (only when the job has any)
    annotated = con.execute(
        "SELECT count(*) > 0 FROM manual_dimensions WHERE job_id = ?", [job.id]
    ).fetchone()
    notes = ""
    if annotated and annotated[0]:
        notes = """, coalesce((SELECT list({'dimension': a.name, 'attempt': a.attempt,
                       'label': a.label, 'value': a.value, 'reason': a.reason,
                       'annotator': a.annotator,
                       'annotated_at': strftime(a.annotated_at AT TIME ZONE 'UTC',
                                                '%Y-%m-%dT%H:%M:%SZ')}
                       ORDER BY a.name, a.attempt)
                   FROM annotations a WHERE a.job_id = $job AND a.task = t.task
                     AND a.replaced_at IS NULL AND a.value IS NOT NULL), []) AS annotations"""
    # The per-task frame is in task order (the per-task counts are kept at each task's
    # position); it is queried a chunk of tasks at a time, each chunk's attempts only,
    # so DuckDB's aggregate of the first inputs and its sort hold one chunk, not the job.
    chunks = range(0, max(len(frame), 1), CHUNK_TASKS)  # an empty job: one (empty) query
    own_attempts = "AND task IN (SELECT task FROM _ds_tasks)" if len(frame) > CHUNK_TASKS else ""
    query = f"""
            WITH first AS (
                SELECT task,
                       arg_min(input, attempt) FILTER (WHERE input IS NOT NULL) AS input,
                       arg_min(input_is_chat, attempt) FILTER (WHERE input IS NOT NULL)
                           AS input_is_chat,
                       arg_min(reference, attempt)
                           FILTER (WHERE reference IS NOT NULL AND trim(reference) <> '')
                           AS reference
                FROM attempts WHERE job_id = $job {own_attempts} GROUP BY task
            )
            SELECT t.task, f.input, f.input_is_chat, f.reference, t.tags,
                   {bucket} AS bucket, b.pass_rate{extra_cols}, $job AS source_job{notes}
            FROM tasks t
            JOIN _ds_tasks b ON b.task = t.task
            LEFT JOIN first f ON f.task = t.task
            WHERE t.job_id = $job {and_bucket}
            ORDER BY t.position
            """
    try:
        for start in chunks:
            part = (
                frame.slice(start, CHUNK_TASKS)
                if isinstance(frame, pa.Table)
                else pa.Table.from_pandas(
                    frame.iloc[start : start + CHUNK_TASKS], preserve_index=False
                )
            )
            con.register("_ds_tasks", part)
            try:
                yield from con.execute(query, params).to_arrow_reader(BATCH_ROWS)
            finally:
                con.unregister("_ds_tasks")
    finally:
        con.close()


def _workspace_of(job: WorkspaceRef) -> WorkspaceRef:
    """The workspace a dataset exported from ``job`` belongs to (``Dataset.workspace``).

    The ``Job`` facade knows its workspace; a bare ref stands for it (it has the
    connection, which is all a :class:`~envloop_nb._store.ref.WorkspaceRef` needs).
    """
    workspace: WorkspaceRef = getattr(job, "workspace", job)
    return workspace


def _rows_of(batch: Any) -> list[dict[str, Any]]:
    """A batch as Python rows, tags decoded (the canonical row values)."""
    rows: list[dict[str, Any]] = batch.to_pylist()
    for row in rows:
        row["tags"] = json.loads(row["tags"]) if row.get("tags") else {}
    return rows


def export_dataset(
    job: JobRef,
    folder: str | Path,
    *,
    name: str,
    version: str,
    rules: BucketRules | None = None,
    buckets: Sequence[str] | str | None = None,
    format: Literal["jsonl", "parquet", "openai_chat", "atif"] = "jsonl",
    purpose: Literal["train", "eval"] | None = None,
    overwrite: bool = False,
    policy: Policy = "unknown",
    threshold: float | None = None,
    allow_partial: bool = False,
) -> Dataset:
    """Write a new dataset from ``job`` (optionally only chosen buckets) and register it.

    Parameters
    ----------
    job
        The source job.
    folder
        Where to create ``<name>@<version>/``.
    name, version
        The new dataset's name and version (no ``/``, ``\\`` or ``@``).
    rules, buckets
        Bucket rules (per task) and the buckets to keep; ``buckets`` needs ``rules``.
        Without ``buckets`` every task is exported.
    format
        ``"jsonl"`` (``rows.jsonl``, the canonical lines) or ``"parquet"``: one row per
        task. ``"openai_chat"`` or ``"atif"``: one line per attempt of the chosen tasks
        (in ``rows.jsonl``) with its whole trajectory — OpenAI chat ``messages`` with tool
        calls, ready for SFT, or an ``ATIF-v1.7`` ``trajectory`` — and the attempt's task,
        number, job, reward, status and input. An attempt without steps is written from
        its ChatML input and output when it has an output, else skipped: counted in the
        manifest's ``trajectories`` and warned (``UserWarning``). What each format keeps,
        drops and makes up: :mod:`envloop_nb._datasets.trajectories`.
    purpose
        ``"train"``, ``"eval"`` or ``None``. A train dataset is checked against every
        job in the workspace, an eval dataset against every train dataset; overlaps
        warn loudly (:class:`envloop_nb.HeldOutWarning`).
    overwrite
        Replace an existing ``name@version`` (folder or registration).
    policy, threshold
        Metric options for pass rates, as in :meth:`envloop_nb.Job.summary`.
    allow_partial
        Export from a pending/running job anyway; the manifest says ``partial: true``.

    Returns
    -------
    Dataset
        The registered dataset (``ds.rows()``, ``ds.manifest``, ``ds.content_hash``).

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> ds = job.export_dataset(tempfile.mkdtemp(), name="tiny", version="1", allow_partial=True)
    >>> ds.row_count, ds.manifest["source"]["jobs"], ds.partial
    (3, ['job_abc0001'], True)
    """
    check_new_dataset(
        job, folder, name, version, overwrite=overwrite, format=format, purpose=purpose
    )
    if rules is None and buckets is not None:
        raise ValueError("buckets=... needs rules=...: without bucketing every task is exported")
    if rules is not None and rules.level != "task":
        raise ValueError("dataset rows are per task: use rules with level='task'")
    chosen = parse_names(rules, buckets) if rules is not None else None

    if rules is not None:
        result = job_buckets(
            job, rules, policy=policy, threshold=threshold, allow_partial=allow_partial
        )
        tasks, partial, status = result.frame, result.partial, result.status
    else:
        partial, status = check_finished(job, allow_partial, "exporting a dataset")
        tasks = sample_table(job.con, job.id, policy=policy, threshold=threshold)
    info = job_info(job.con, job.id)
    counts = TrajectoryCounts()
    provenance: dict[str, Any] = {
        "partial": partial,
        "source": {
            "jobs": [job.id],
            "job_status": status,
            "model": info.get("model"),
            "dataset": {
                "name": info.get("dataset_name"),
                "version": info.get("dataset_version"),
                "revision": info.get("dataset_revision"),
            },
        },
        "rules": rules.to_dict() if rules is not None else None,
        "buckets": chosen,
        "policy": policy,
        "threshold": threshold,
    }
    trajectories = format in TRAJECTORY_FORMATS
    ds = write_dataset(
        job,
        folder,
        name=name,
        version=version,
        batches=trajectory_lines(job, tasks, chosen, format, counts)
        if trajectories
        else _task_batches(job, tasks, rules, chosen),
        format=format,
        purpose=purpose,
        overwrite=True,  # checked above, before the buckets were computed
        provenance=provenance,
        counts=counts if trajectories else None,
    )
    if counts.skipped:
        import warnings

        warnings.warn(
            f"{ds.ref}: {counts.skipped:,} of {counts.attempts:,} attempts were skipped: they "
            "have no steps and no output to write (first: "
            f"{', '.join(counts.skipped_attempts[:5])}); the manifest's 'trajectories' "
            "counts them",
            UserWarning,
            stacklevel=2,
        )
    return ds


def check_new_dataset(
    ref: WorkspaceRef,
    folder: str | Path,
    name: str,
    version: str,
    *,
    overwrite: bool,
    format: str = "jsonl",
    purpose: str | None = None,
) -> None:
    """Check the name, version, format and purpose of a new dataset, and refuse to write
    ``name@version`` over an existing folder or registration."""
    _check_label(name, "name")
    _check_label(version, "version")
    if format not in ("jsonl", "parquet", *TRAJECTORY_FORMATS):
        raise ValueError(
            f"format must be 'jsonl', 'parquet', 'openai_chat' or 'atif', got {format!r}"
        )
    if purpose not in ("train", "eval", None):
        raise ValueError(f"purpose must be 'train', 'eval' or None, got {purpose!r}")
    root = output_folder(folder)
    target = root / f"{name}@{version}"
    registered = ref.con.execute(
        "SELECT path FROM datasets WHERE name = ? AND version = ?", [name, version]
    ).fetchone()
    if not overwrite:
        if target.exists():
            raise EnvloopError(
                f"{target} already exists: a dataset version is immutable; choose a new "
                "version or pass overwrite=True"
            )
        if registered is not None:
            raise EnvloopError(
                f"dataset {name}@{version} is already registered in this workspace (at "
                f"{registered[0]}); choose a new version or pass overwrite=True"
            )


def write_dataset(
    ref: WorkspaceRef,
    folder: str | Path,
    *,
    name: str,
    version: str,
    batches: Generator[Any, None, None],
    format: Literal["jsonl", "parquet", "openai_chat", "atif"] = "jsonl",
    purpose: Literal["train", "eval"] | None = None,
    overwrite: bool = False,
    provenance: dict[str, Any],
    counts: TrajectoryCounts | None = None,
) -> Dataset:
    """Write ``<folder>/<name>@<version>/`` from Arrow ``batches`` of rows (``task``,
    ``input``, ``input_is_chat``, ``reference``, ``tags`` as JSON text, any other columns
    kept) with its manifest (``provenance`` merged in: ``source``, ``partial`` …) and
    register it; the folder appears whole or not at all. Shared by jobs' and
    experiments' dataset exports. A trajectory format's ``batches`` are lists of lines
    (dicts, ``tags`` decoded), and ``counts`` (filled as they stream) goes to the
    manifest's ``trajectories``."""
    import pyarrow.parquet as pq

    from .heldout import warn_dataset_overlaps

    check_new_dataset(
        ref, folder, name, version, overwrite=overwrite, format=format, purpose=purpose
    )
    if (format in TRAJECTORY_FORMATS) != (counts is not None):
        batches.close()
        raise ValueError(
            f"format {format!r} writes attempts' trajectories: only a job's export_dataset "
            "has them (an experiment's rows are 'jsonl' or 'parquet')"
            if counts is None
            else f"trajectory lines need format 'openai_chat' or 'atif', got {format!r}"
        )
    root = Path(folder)
    target = root / f"{name}@{version}"
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}@{version}.", dir=root))
    # The registration's rows are staged in a Parquet file beside the new folder, one
    # batch at a time, and inserted from it at the end: no table of every row in memory.
    register = staging.with_name(staging.name + ".registration.parquet")
    writer: Any = None

    def stage_rows(rows: list[dict[str, Any]], start: int) -> None:
        nonlocal writer
        table = registration_table(name, version, rows, start)
        if writer is None:
            writer = pq.ParquetWriter(register, table.schema)
        writer.write_table(table)

    try:
        try:
            file = "rows.parquet" if format == "parquet" else "rows.jsonl"
            written = _write_rows(staging / file, format, batches, stage_rows)
            if writer is not None:
                writer.close()
                writer = None
            digest = written.digest
            manifest: dict[str, Any] = {
                "schema": MANIFEST_SCHEMA,
                "name": name,
                "version": version,
                "purpose": purpose,
                "format": format,
                "file": file,
                "row_count": written.row_count,
                "rows_without_input": written.without_input,
                "content_hash": digest,
                "columns": written.columns,
                "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "partial": False,
                "source": None,
                "rules": None,
                "buckets": None,
                "bucket_counts": written.counts,
                "policy": None,
                "threshold": None,
            } | provenance
            if counts is not None:
                manifest["trajectories"] = counts.to_dict()
            (staging / "manifest.json").write_text(
                json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        staged = register if written.row_count else None
        commit_registration(ref, manifest, staged, target, written.row_count)
    finally:
        if writer is not None:
            writer.close()
        register.unlink(missing_ok=True)
    ds = Dataset(
        name=name,
        version=version,
        path=target,
        manifest=manifest,
        content_hash=digest,
        purpose=purpose,
        row_count=written.row_count,
        workspace=_workspace_of(ref),
    )
    warn_dataset_overlaps(ref, ds)
    return ds


@dataclass
class _Written:
    """What streaming the rows found: count, canonical hash, columns, bucket counts."""

    row_count: int = 0
    without_input: int = 0
    digest: str = ""
    columns: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _write_rows(
    path: Path,
    fmt: str,
    batches: Generator[Any, None, None],
    stage_rows: Callable[[list[dict[str, Any]], int], None],
) -> _Written:
    """Write the rows file batch by batch; hash the canonical lines as they go.

    The hash is the same as :func:`envloop_nb._datasets.dataset.content_hash` of all rows at
    once: sha256 of the canonical lines joined by newlines, fed one line at a time.
    Each batch's rows are also handed to ``stage_rows`` (with the index of its first
    row) for the workspace registration. Memory is one batch, whatever the row count.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = _Written()
    sha = hashlib.sha256()
    text = path.open("w", encoding="utf-8") if fmt != "parquet" else None
    writer: Any = None
    try:
        for batch in batches:
            rows = batch if isinstance(batch, list) else _rows_of(batch)  # lines: ready
            if not rows:
                continue
            lines = canonical_lines(rows)
            for line in lines:
                if out.row_count:
                    sha.update(b"\n")
                sha.update(line.encode("utf-8"))
                out.row_count += 1
            if not out.columns:
                out.columns = list(rows[0])
            for r in rows:
                key = r.get("bucket") or "(none)"
                out.counts[key] = out.counts.get(key, 0) + 1
                out.without_input += r.get("input") is None
            if text is not None:
                text.write("".join(line + "\n" for line in lines))
            else:
                table = pa.Table.from_batches([batch])
                tags = pa.array([json.dumps(r["tags"], sort_keys=True) for r in rows], pa.string())
                table = table.set_column(table.schema.get_field_index("tags"), "tags", tags)
                if writer is None:
                    writer = pq.ParquetWriter(path, table.schema)
                writer.write_table(table)
            stage_rows(rows, out.row_count - len(rows))
        if not out.columns:
            out.columns = ["task", "input", "input_is_chat", "reference", "tags"]
            if text is None:
                empty = pa.table({c: pa.array([], pa.string()) for c in out.columns})
                pq.write_table(empty, path)
    finally:
        batches.close()  # ends the DuckDB stream and closes its cursor, also on errors
        if text is not None:
            text.close()
        if writer is not None:
            writer.close()
    out.digest = f"sha256:{sha.hexdigest()}"
    return out
