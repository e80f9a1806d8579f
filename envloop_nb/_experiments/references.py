"""Reference answers of an experiment's cases: filled from a dataset, saved as one.

Matching is the jobs' rule (:func:`envloop_nb._datasets.heldout.dataset_references_sql`):
the case's input text with surrounding whitespace stripped equals the dataset row's,
exactly (no similarity); with duplicate inputs the first row with a non-blank reference
wins; a case that has a reference keeps it. A ChatML input is matched by its last user
message (on both sides: a dataset row whose input is a ChatML list too).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb

from .._datasets.dataset import Dataset
from .._datasets.export import write_dataset
from .._datasets.heldout import dataset_references_sql, strip_sql
from .._errors import EnvloopError
from .._metrics.counts import scored_mean
from .._store.ref import WorkspaceRef
from .._store.transaction import transaction

__all__ = [
    "ReferenceFillResult",
    "export_cases",
    "fill_case_references",
    "input_text_sql",
    "save_references",
]


def input_text_sql(column: str) -> str:
    """SQL for the text an input is matched by: the string itself, or the content of the
    last ``user`` message of a ChatML list (JSON text).

    Examples
    --------
    >>> import duckdb
    >>> sql = input_text_sql("x")
    >>> duckdb.sql(f'''SELECT {sql} FROM (VALUES ('[{{"role": "user", "content": " a "}}]'),
    ...                ('plain')) t(x)''').fetchall()
    [(' a ',), ('plain',)]
    """
    chat = f"(json_valid({column}) AND json_type({column}) = 'ARRAY')"
    last_user = (
        f'list_filter(from_json({column}, \'[{{"role": "VARCHAR", "content": "VARCHAR"}}]\'), '
        "lambda m: m.role = 'user')[-1].content"
    )
    return f"CASE WHEN {chat} THEN {last_user} ELSE {column} END"


@dataclass(frozen=True)
class ReferenceFillResult:
    """What :func:`fill_case_references` did."""

    experiment_id: str
    dataset: str
    missing_before: int
    filled: int

    def __str__(self) -> str:
        return (
            f"filled {self.filled} of {self.missing_before} missing references in "
            f"{self.experiment_id} from {self.dataset}"
        )


def fill_case_references(
    con: duckdb.DuckDBPyConnection, eid: str, name: str, version: str
) -> ReferenceFillResult:
    """Fill the missing references of experiment ``eid`` from dataset ``name@version``
    (one transaction; filled references are marked ``reference_source = 'dataset'``)."""
    blank = f"(c.reference IS NULL OR {strip_sql('c.reference')} = '')"
    key = strip_sql(input_text_sql("c.input"))
    src = dataset_references_sql(input_text_sql("input"))
    p = {"e": eid, "name": name, "version": version}
    with transaction(con):
        before = con.execute(
            f"SELECT count(*) FROM exp_cases c WHERE c.experiment_id = $e AND {blank}", {"e": eid}
        ).fetchone()
        matched = con.execute(
            f"""WITH src AS ({src}) SELECT count(*) FROM exp_cases c JOIN src ON src.key = {key}
                WHERE c.experiment_id = $e AND c.input IS NOT NULL AND {blank}""",
            p,
        ).fetchone()
        con.execute(
            f"""WITH src AS ({src})
                UPDATE exp_cases c SET reference = src.reference, reference_source = 'dataset'
                FROM src WHERE c.experiment_id = $e AND c.input IS NOT NULL AND {blank}
                  AND {key} = src.key""",
            p,
        )
    assert before is not None and matched is not None
    return ReferenceFillResult(eid, f"{name}@{version}", int(before[0]), int(matched[0]))


def _case_batches(con: duckdb.DuckDBPyConnection, eid: str) -> Generator[Any, None, None]:
    cur = con.cursor()
    try:
        reader = cur.execute(
            f"""SELECT trace_id AS task, input, input_is_chat, reference, tags,
                       reference_source, $e AS source_experiment
                FROM exp_cases
                WHERE experiment_id = $e AND input IS NOT NULL
                  AND reference IS NOT NULL AND {strip_sql("reference")} <> ''
                ORDER BY position""",
            {"e": eid},
        ).to_arrow_reader(4096)
        yield from reader
    finally:
        cur.close()


def save_references(
    ref: WorkspaceRef,
    eid: str,
    folder: str | Path,
    *,
    name: str,
    version: str,
    format: Literal["jsonl", "parquet"] = "jsonl",
    overwrite: bool = False,
) -> Dataset:
    """The annotated cases that have an input, as a new dataset (one row per case:
    ``task`` = trace id, input, reference, tags) with the experiment as provenance."""
    con = ref.con
    info = con.execute(
        "SELECT name, agent FROM experiments WHERE experiment_id = ?", [eid]
    ).fetchone()
    provenance = {
        "source": {
            "experiment": eid,
            "experiment_name": info[0] if info else None,
            "agent": info[1] if info else None,
            "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        },
    }
    return write_dataset(
        ref,
        folder,
        name=name,
        version=version,
        batches=_case_batches(con, eid),
        format=format,
        overwrite=overwrite,
        provenance=provenance,
    )


def _chosen_batches(
    con: duckdb.DuckDBPyConnection,
    eid: str,
    traces: Sequence[str] | None,
    below: float | None,
) -> Generator[Any, None, None]:
    from .stats import current_sql

    params: dict[str, Any] = {"e": eid}
    where = ""
    if traces is not None:
        params["traces"] = list(traces)
        where += " AND list_contains($traces::VARCHAR[], c.trace_id)"
    if below is not None:
        params["below"] = float(below)
        where += " AND agg.composite < $below"
    cur = con.cursor()
    try:
        reader = cur.execute(
            f"""WITH p AS ({current_sql()}),
                     agg AS (SELECT trace_id,
                                    {scored_mean("CASE WHEN counted THEN score END", "evaluator_position")}
                                        AS composite,
                                    count_if(counted)::BIGINT AS counted, count(*) AS total
                             FROM p GROUP BY trace_id)
                SELECT c.trace_id AS task, c.input, c.input_is_chat, c.reference, c.tags, c.output,
                       agg.composite, agg.counted, agg.total, $e AS source_experiment
                FROM exp_cases c JOIN agg ON agg.trace_id = c.trace_id
                WHERE c.experiment_id = $e AND c.input IS NOT NULL{where}
                ORDER BY c.position""",
            params,
        ).to_arrow_reader(4096)
        yield from reader
    finally:
        cur.close()


def export_cases(
    ref: WorkspaceRef,
    eid: str,
    folder: str | Path,
    *,
    name: str,
    version: str,
    traces: Sequence[str] | None = None,
    below: float | None = None,
    format: Literal["jsonl", "parquet"] = "jsonl",
    purpose: Literal["train", "eval"] | None = None,
    overwrite: bool = False,
) -> Dataset:
    """Chosen cases with an input (all, ``traces``, and/or those whose composite is
    ``below`` a score — a case with nothing counted has no composite and is not below
    anything) as a new dataset: input, reference, output, composite with its
    ``counted/total``, the experiment as provenance."""
    known = {
        r[0]
        for r in ref.con.execute(
            "SELECT trace_id FROM exp_cases WHERE experiment_id = ?", [eid]
        ).fetchall()
    }
    unknown = sorted(set(traces or ()) - known)
    if unknown:
        raise EnvloopError(f"experiment {eid!r} has no case(s) {unknown}")
    provenance = {
        "source": {"experiment": eid, "traces": None if traces is None else list(traces)},
        "threshold": below,
    }
    return write_dataset(
        ref,
        folder,
        name=name,
        version=version,
        batches=_chosen_batches(ref.con, eid, traces, below),
        format=format,
        purpose=purpose,
        overwrite=overwrite,
        provenance=provenance,
    )
