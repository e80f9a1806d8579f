"""Reference answers of an experiment's cases: filled from a dataset, saved as one.

Matching is the jobs' rule (:func:`envloop_nb._datasets.heldout.dataset_references_sql`):
the case's input text with surrounding whitespace stripped equals the dataset row's,
exactly (no similarity); with duplicate inputs the first row with a non-blank reference
wins; a case that has a reference keeps it. A ChatML input is matched by its last user
message (on both sides: a dataset row whose input is a ChatML list too).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb

from .._datasets.dataset import Dataset
from .._datasets.export import write_dataset
from .._datasets.heldout import dataset_references_sql, strip_sql
from .._store.ref import WorkspaceRef
from .edits import transaction

__all__ = ["ReferenceFillResult", "fill_case_references", "input_text_sql", "save_references"]


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
