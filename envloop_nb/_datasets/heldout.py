"""The held-out guard and reference filling: stripped-exact input matches, in SQL.

Evaluating on prompts that were trained on inflates scores. Two inputs match when they
are equal after stripping surrounding whitespace (``[[:space:]]``: space, tab, newline,
CR, VT, FF); nothing fuzzier. ChatML inputs compare as their stored JSON text.

* :func:`check_heldout` — a job's task inputs against every dataset in the workspace
  marked ``purpose="train"``; warns :class:`HeldOutWarning` when any overlap.
* :func:`dataset_overlaps` — a train dataset against every job, an eval dataset against
  every train dataset.
* :func:`fill_references` — fill a job's missing reference answers from a dataset; with
  duplicate inputs in the dataset the first valid (non-empty) reference wins.

The guard fires on its own, not only when asked: loading a job into a workspace that
holds a training dataset runs :func:`check_heldout` on it (:func:`warn_job_overlaps`),
and registering a dataset (exported with ``job.export_dataset`` or loaded from its
folder) runs :func:`dataset_overlaps` (:func:`warn_dataset_overlaps`). Each warns one
:class:`HeldOutWarning` that names the dataset, the job and how many tasks overlap.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError
from .._store.attempt_sources import in_place
from .dataset import Dataset

if TYPE_CHECKING:
    from .._store.ref import JobRef, WorkspaceRef

__all__ = [
    "HeldOutResult",
    "HeldOutWarning",
    "ReferenceFill",
    "check_heldout",
    "dataset_key",
    "dataset_overlaps",
    "dataset_references_sql",
    "fill_references",
    "strip_sql",
    "warn_dataset_overlaps",
    "warn_job_overlaps",
]


class HeldOutWarning(UserWarning):
    """A job's task inputs overlap a dataset marked for training (or the reverse)."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # envloop_nb/


def _user_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` in the caller that points at user code.

    Counts the frames from the caller up to the first one outside envloop_nb, so the
    warning names the user's line (``ws.load(...)``) whatever path led to it.
    """
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _PACKAGE + os.sep
    ):
        frame = frame.f_back
        level += 1
    return level


def strip_sql(column: str) -> str:
    """SQL for ``column`` with surrounding whitespace stripped."""
    return f"regexp_replace({column}, '^[[:space:]]+|[[:space:]]+$', '', 'g')"


@dataclass(frozen=True)
class HeldOutResult:
    """Overlap of a job's task inputs with training datasets.

    ``overlaps`` lists ``(task, dataset)`` pairs (``dataset`` as ``name@version``) in
    task order; ``per_dataset`` counts overlapping tasks per dataset.
    """

    job_id: str
    tasks_checked: int
    overlaps: tuple[tuple[str, str], ...]
    per_dataset: dict[str, int]
    train_datasets: tuple[str, ...]

    @property
    def tasks(self) -> list[str]:
        """Overlapping task names, in task order, each once."""
        return list(dict.fromkeys(t for t, _ in self.overlaps))

    @property
    def n_overlapping(self) -> int:
        return len(self.tasks)

    @property
    def ok(self) -> bool:
        """True when no task input was found in a training dataset."""
        return not self.overlaps

    def frame(self, frame: str = "pandas") -> Any:
        """The overlaps as a frame with columns ``task, dataset``."""
        import pandas as pd

        out = pd.DataFrame(list(self.overlaps), columns=["task", "dataset"])
        if frame == "polars":
            import polars as pl

            return pl.from_pandas(out)
        return out

    def __str__(self) -> str:
        if not self.train_datasets:
            return f"held-out check of {self.job_id}: no training dataset in the workspace"
        if self.ok:
            return (
                f"held-out check of {self.job_id}: OK, none of {self.tasks_checked:,} task "
                f"inputs is in a training dataset ({', '.join(self.train_datasets)})"
            )
        parts = ", ".join(f"{d} ({n:,} tasks)" for d, n in self.per_dataset.items())
        shown = ", ".join(self.tasks[:5]) + (" …" if self.n_overlapping > 5 else "")
        return (
            f"HELD-OUT VIOLATION: {self.n_overlapping:,} of {self.tasks_checked:,} task inputs "
            f"of job {self.job_id} are in training data: {parts}. Scores on these tasks are "
            f"inflated. Tasks: {shown}"
        )


def _train_datasets(ws: WorkspaceRef) -> list[str]:
    rows = ws.con.execute(
        "SELECT name || '@' || version FROM datasets WHERE purpose = 'train' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def check_heldout(ws: WorkspaceRef, job: JobRef | str, *, warn: bool = True) -> HeldOutResult:
    """Find the tasks of ``job`` whose input is in a dataset marked ``purpose="train"``.

    Warns :class:`HeldOutWarning` (unless ``warn=False``) when any task overlaps.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> print(ws.check_heldout(job))
    held-out check of job_abc0001: no training dataset in the workspace
    """
    job_id = job if isinstance(job, str) else job.id
    strip_a, strip_r = strip_sql("a.input"), strip_sql("r.input")
    rows = ws.con.execute(
        f"""
        WITH ji AS (
            SELECT DISTINCT a.task, {strip_a} AS key FROM attempts a
            WHERE a.job_id = $job AND a.input IS NOT NULL AND {strip_a} <> ''
        ),
        tr AS (
            SELECT DISTINCT r.dataset_name || '@' || r.dataset_version AS dataset,
                   {strip_r} AS key
            FROM dataset_rows r JOIN datasets d
              ON d.name = r.dataset_name AND d.version = r.dataset_version
            WHERE d.purpose = 'train' AND r.input IS NOT NULL
        )
        SELECT ji.task, tr.dataset
        FROM ji JOIN tr USING (key)
        JOIN tasks t ON t.job_id = $job AND t.task = ji.task
        GROUP BY ji.task, tr.dataset, t.position
        ORDER BY t.position, tr.dataset
        """,
        {"job": job_id},
    ).fetchall()
    checked = ws.con.execute(
        "SELECT count(DISTINCT task) FROM attempts WHERE job_id = ? AND input IS NOT NULL",
        [job_id],
    ).fetchone()
    per: dict[str, int] = {}
    for _, ds in rows:
        per[ds] = per.get(ds, 0) + 1
    result = HeldOutResult(
        job_id=job_id,
        tasks_checked=int(checked[0]) if checked else 0,
        overlaps=tuple((str(t), str(d)) for t, d in rows),
        per_dataset=per,
        train_datasets=tuple(_train_datasets(ws)),
    )
    if warn and not result.ok:
        warnings.warn(str(result), HeldOutWarning, stacklevel=_user_stacklevel())
    return result


def warn_job_overlaps(ws: WorkspaceRef, job_id: str) -> HeldOutResult | None:
    """Run the held-out guard on a job just loaded (nothing to do without train datasets).

    Warns :class:`HeldOutWarning` (the message of :class:`HeldOutResult`: which job,
    how many of its tasks, in which training dataset) when any task input overlaps.
    """
    if not _train_datasets(ws):
        return None
    return check_heldout(ws, job_id, warn=True)


def warn_dataset_overlaps(ws: WorkspaceRef, ds: Dataset) -> str:
    """Run the held-out guard on a dataset just registered; warn when it overlaps.

    Returns the message (``""`` when there is no overlap); see :func:`dataset_overlaps`.
    """
    report = dataset_overlaps(ws, ds) if ds.purpose is not None else ""
    if report:
        warnings.warn(report, HeldOutWarning, stacklevel=_user_stacklevel())
    return report


def dataset_overlaps(ws: WorkspaceRef, ds: Dataset) -> str:
    """A loud message when a newly exported dataset overlaps (``""`` when it does not).

    A train dataset is checked against every job's task inputs; an eval dataset against
    every other train dataset.
    """
    strip_a, strip_r, strip_o = strip_sql("a.input"), strip_sql("r.input"), strip_sql("o.input")
    params = {"name": ds.name, "version": ds.version}
    mine = f"""SELECT DISTINCT {strip_r} AS key FROM dataset_rows r
               WHERE r.dataset_name = $name AND r.dataset_version = $version
                 AND r.input IS NOT NULL AND {strip_r} <> ''"""
    if ds.purpose == "train":
        rows = ws.con.execute(
            f"""WITH mine AS ({mine})
                SELECT a.job_id, count(DISTINCT a.task) FROM attempts a
                JOIN mine ON mine.key = {strip_a}
                WHERE a.input IS NOT NULL
                GROUP BY a.job_id ORDER BY a.job_id""",
            params,
        ).fetchall()
        if not rows:
            return ""
        jobs = ", ".join(f"{j} ({n:,} tasks)" for j, n in rows)
        return (
            f"HELD-OUT: training dataset {ds.ref} contains task inputs of jobs in this "
            f"workspace: {jobs}. A model trained on it must not be evaluated on these tasks "
            "(scores would be inflated); jobs loaded later are checked as they load."
        )
    if ds.purpose == "eval":
        rows = ws.con.execute(
            f"""WITH mine AS ({mine})
                SELECT o.dataset_name || '@' || o.dataset_version, count(DISTINCT mine.key)
                FROM dataset_rows o JOIN datasets d
                  ON d.name = o.dataset_name AND d.version = o.dataset_version
                JOIN mine ON mine.key = {strip_o}
                WHERE d.purpose = 'train'
                  AND NOT (o.dataset_name = $name AND o.dataset_version = $version)
                GROUP BY 1 ORDER BY 1""",
            params,
        ).fetchall()
        if not rows:
            return ""
        sets = ", ".join(f"{d} ({n:,} inputs)" for d, n in rows)
        return (
            f"HELD-OUT: evaluation dataset {ds.ref} shares inputs with training data: {sets}. "
            "Scores on these rows would be inflated."
        )
    return ""


@dataclass(frozen=True)
class ReferenceFill:
    """What :func:`fill_references` did: attempts missing a reference before and after."""

    job_id: str
    dataset: str
    missing_before: int
    filled: int
    tasks_filled: int

    @property
    def missing_after(self) -> int:
        return self.missing_before - self.filled

    def __str__(self) -> str:
        return (
            f"filled {self.filled:,} of {self.missing_before:,} missing references "
            f"({self.tasks_filled:,} tasks) in {self.job_id} from {self.dataset}"
        )


def _dataset_key(ws: WorkspaceRef, dataset: Any) -> tuple[str, str]:
    if isinstance(dataset, Dataset):
        name, version = dataset.name, dataset.version
    elif isinstance(dataset, str) and "@" in dataset:
        name, _, version = dataset.rpartition("@")
    else:
        raise TypeError(f"dataset must be a Dataset or 'name@version', got {dataset!r}")
    row = ws.con.execute(
        "SELECT 1 FROM datasets WHERE name = ? AND version = ?", [name, version]
    ).fetchone()
    if row is None:
        known = [
            r[0] for r in ws.con.execute("SELECT name || '@' || version FROM datasets").fetchall()
        ]
        raise EnvloopError(f"no dataset {name}@{version} in this workspace; datasets: {known}")
    return name, version


def dataset_references_sql(key: str = "input") -> str:
    """The reference answers of dataset ``$name@$version`` by stripped input: one row per
    ``key`` (``key`` is SQL over a ``dataset_rows`` row, stripped here), the first row in
    dataset order with a non-blank reference winning — the one matching rule of
    ``job.fill_references`` and ``exp.fill_references``."""
    k = strip_sql(key)
    return f"""SELECT {k} AS key, arg_min(reference, row_index) AS reference
               FROM dataset_rows
               WHERE dataset_name = $name AND dataset_version = $version
                 AND {key} IS NOT NULL AND {k} <> ''
                 AND reference IS NOT NULL AND {strip_sql("reference")} <> ''
               GROUP BY key"""


def dataset_key(ref: WorkspaceRef, dataset: Any) -> tuple[str, str]:
    """``(name, version)`` of a registered dataset given as a ``Dataset`` or ``"name@version"``."""
    return _dataset_key(ref, dataset)


def fill_references(job: JobRef, dataset: Any) -> ReferenceFill:
    """Fill the job's missing reference answers from ``dataset`` (stripped-exact input match).

    An attempt's reference is missing when it is null or blank. With duplicate inputs in
    the dataset, the first row (in dataset order) with a non-blank reference wins. One
    transaction: either every match is filled or nothing changes. The change lives in
    the workspace; reloading the job from its file resets it.

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> ds = job.export_dataset(tempfile.mkdtemp(), name="t", version="1", allow_partial=True)
    >>> print(job.fill_references(ds))
    filled 0 of 4 missing references (0 tasks) in job_abc0001 from t@1
    """
    name, version = _dataset_key(job, dataset)  # a JobRef has the workspace's connection
    con = job.con
    if in_place(con, job.id):
        raise EnvloopError(
            f"job {job.id!r} reads its attempts in place (loaded with copy=False): its "
            "references cannot be filled there; load it with copy=True first"
        )
    strip_a = strip_sql("a.input")
    blank = f"(a.reference IS NULL OR {strip_sql('a.reference')} = '')"
    params = {"job": job.id, "name": name, "version": version}
    src = dataset_references_sql()
    con.execute("BEGIN TRANSACTION")
    try:
        before = con.execute(
            f"SELECT count(*) FROM attempts a WHERE a.job_id = $job AND {blank}", {"job": job.id}
        ).fetchone()
        matched = con.execute(
            f"""WITH src AS ({src})
                SELECT count(*), count(DISTINCT a.task) FROM attempts a
                JOIN src ON src.key = {strip_a}
                WHERE a.job_id = $job AND a.input IS NOT NULL AND {blank}""",
            params,
        ).fetchone()
        con.execute(
            f"""WITH src AS ({src})
                UPDATE attempt_rows a SET reference = src.reference FROM src
                WHERE a.job_id = $job AND a.input IS NOT NULL AND {blank}
                  AND {strip_a} = src.key""",
            params,
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    assert before is not None and matched is not None
    return ReferenceFill(
        job_id=job.id,
        dataset=f"{name}@{version}",
        missing_before=int(before[0]),
        filled=int(matched[0]),
        tasks_filled=int(matched[1]),
    )
