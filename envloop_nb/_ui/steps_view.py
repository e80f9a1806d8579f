"""An attempt's steps for the eye: its transcript, or two attempts side by side.

Reads the rows (``steps`` and the attempt's row) and hands them to the pure renderers
(:mod:`envloop_nb._present.transcript_html`, :mod:`envloop_nb._present.side_by_side_html`),
with the alignment of :mod:`envloop_nb._metrics.step_alignment`. Used by ``job.transcript``,
``job.compare_attempts``, ``comparison.side_by_side``, the Cases tab's detail and the
comparison panel's transitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._metrics.step_alignment import align_actions
from .._present.cases_html import attempt_detail_html
from .._present.side_by_side_html import SideBySide, side_by_side_html
from .._present.transcript_html import Transcript, transcript_html
from .._store.steps import steps_relation
from .cases_detail import attempt_detail

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "attempt_steps", "attempt_view_html", "case_transcript_of", "side_by_side_of",
    "transcript_of",
]  # fmt: skip


def attempt_steps(
    con: duckdb.DuckDBPyConnection, job_id: str, task: str, attempt: int
) -> list[dict[str, Any]]:
    """One attempt's step rows in order, as plain dicts (no frame library needed)."""
    rel = steps_relation(con, job_id, task=task, attempt=int(attempt))
    names = rel.columns
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


def transcript_of(
    con: duckdb.DuckDBPyConnection, job_id: str, task: str, attempt: int, *, page_size: int = 200
) -> Transcript:
    """The transcript of one attempt (``KeyError`` when the job has no such attempt).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> transcript_of(job.con, job.id, "A", 1)
    <Transcript task 'A' · attempt 1 · 0 steps · 0 pages>
    """
    detail = attempt_detail(con, job_id, task, attempt)
    rows = attempt_steps(con, job_id, task, attempt)
    return transcript_html(rows, detail, page_size=page_size)


def case_transcript_of(
    con: duckdb.DuckDBPyConnection, experiment_id: str, case: str, *, page_size: int = 200
) -> Transcript:
    """The transcript of an experiment's case (its trace's steps, ``exp_steps``), with
    the case's run status beside it (``KeyError`` when the experiment has no such case).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> exp = enb.open().load("../shared/formats/examples/experiment-two-evaluators.json")
    >>> case_transcript_of(exp.con, exp.id, exp.cases()["trace_id"].iloc[0])
    <Transcript task 'tr_001' · attempt 0 · 0 steps · 0 pages>
    """
    row = con.execute(
        "SELECT status FROM exp_cases WHERE experiment_id = ? AND trace_id = ?",
        [experiment_id, case],
    ).fetchone()
    if row is None:
        raise KeyError(f"experiment {experiment_id!r} has no case {case!r}")
    rel = steps_relation(con, experiment_id, task=case, table="exp_steps")
    rows = [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]
    info = {"task": case, "attempt": 0, "status": row[0], "label": f"case {case}"}
    return transcript_html(rows, info, page_size=page_size)


def attempt_view_html(con: duckdb.DuckDBPyConnection, job_id: str, task: str, attempt: int) -> str:
    """The Cases tab's detail of one attempt: its transcript when its steps are more than
    messages (tool calls, results, reasoning, errors; with the attempt's figures, input,
    output and reference folded below it), else the attempt's detail as it always was
    (a ChatML prompt and answer read best there)."""
    detail = attempt_detail(con, job_id, task, attempt)
    rows = attempt_steps(con, job_id, task, attempt)
    if all(row["kind"] == "message" for row in rows):
        return attempt_detail_html(detail)
    shown = transcript_html(rows, detail).html
    return (
        f'<div class="enb-detail enb-detail-steps">{shown}<details><summary>the attempt\'s '
        f"figures, input, output and reference</summary>{attempt_detail_html(detail)}"
        "</details></div>"
    )


def side_by_side_of(
    con: duckdb.DuckDBPyConnection,
    a: tuple[str, str, int],
    b: tuple[str, str, int],
    *,
    page_size: int = 200,
) -> SideBySide:
    """Two attempts, each ``(job id, task, attempt)``, aligned step by step."""
    details = [attempt_detail(con, *side) for side in (a, b)]
    rows = [attempt_steps(con, *side) for side in (a, b)]
    alignment = align_actions(rows[0], rows[1])
    labels = [f"{job} · {task} · attempt {n}" for job, task, n in (a, b)]
    return side_by_side_html(
        rows[0],
        rows[1],
        pairs=alignment.pairs,
        same=alignment.same,
        first_divergence=alignment.first_divergence,
        attempt_a=details[0],
        attempt_b=details[1],
        label_a=labels[0],
        label_b=labels[1],
        page_size=page_size,
    )
