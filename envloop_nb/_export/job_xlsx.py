"""The job's XLSX workbook for reviewers: Summary, Tasks and Attempts (or per-bucket)
sheets, and for a job with steps a bounded Steps sheet of the exported attempts'
steps (:mod:`envloop_nb._export.steps_sheet`).

Written through the package's one safe cell writer (:mod:`envloop_nb._export.cells`):
text is never a formula, control characters are escaped, long text is cut with a
visible marker, sheets continue past Excel's row limit (``"Attempts (2)"``...). The
attempts are streamed from DuckDB in Arrow record batches, so memory stays flat in the
number of rows. Functions take a :class:`~envloop_nb._store.ref.JobRef`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._annotations.manual import annotation_frame, manual_dimensions
from .._buckets.apply import BucketResult, check_finished, job_buckets
from .._buckets.rules import EXCLUDED, BucketRules, parse_names
from .._files import output_file
from .._metrics.passk_views import samples
from .._metrics.scale import dimension_scales
from .._metrics.summary import job_summary
from .._present.cases_html import is_missing
from .._present.display import header
from .._store.ref import job_info, summarised
from .._store.sql import ident
from .._store.steps import has_tool_calls
from .cells import (
    NUM,
    PCT,
    CellWriter,
    Column,
    Sheet,
    free_sheet,
    new_workbook,
    plain,
    print_setup,
    save_workbook,
    unique_name,
)
from .steps_sheet import write_steps_sheet

if TYPE_CHECKING:
    from .._store.ref import JobRef
    from .._types import Policy

__all__ = ["BATCH_ROWS", "ExportResult", "export_xlsx", "render_chat_sql"]

#: Attempts fetched from DuckDB per Arrow batch.
BATCH_ROWS = 2_048


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_xlsx` wrote.

    ``rows_per_sheet`` counts data rows (header excluded) per sheet, in sheet order;
    ``truncated_cells`` counts cells cut at Excel's 32,767-character limit;
    ``escaped_cells`` counts cells whose XML-illegal control characters were escaped;
    ``partial`` is true when the job was still pending or running (with or without rules).
    """

    path: Path
    rows_per_sheet: dict[str, int]
    truncated_cells: int
    escaped_cells: int
    partial: bool
    buckets: tuple[str, ...] | None
    rules: BucketRules | None = field(default=None, repr=False)

    def __str__(self) -> str:
        sheets = ", ".join(f"{k} {v:,}" for k, v in self.rows_per_sheet.items())
        extra = ""
        if self.truncated_cells:
            extra += f" · {self.truncated_cells:,} cells truncated"
        if self.partial:
            extra += " · PARTIAL (job unfinished)"
        return f"wrote {self.path.name}: {sheets} rows{extra}"


# -- frames ---------------------------------------------------------------------------


def _tag_keys(job: JobRef) -> list[str]:
    rows = job.con.execute(
        """SELECT key FROM task_tags tt JOIN tasks t USING (job_id, task)
           WHERE tt.job_id = ? GROUP BY key
           ORDER BY key <> 'subset', min(t.position), key""",
        [job.id],
    ).fetchall()
    return [r[0] for r in rows]


def _dimension_names(job: JobRef) -> list[str]:
    rows = job.con.execute(
        "SELECT DISTINCT name FROM dimensions WHERE job_id = ? ORDER BY name", [job.id]
    ).fetchall()
    return [r[0] for r in rows]


_CHAT_SQL = """CASE WHEN a.input_is_chat AND json_valid(a.input) AND json_type(a.input::JSON) = 'ARRAY'
THEN array_to_string(list_transform(json_extract(a.input::JSON, '$[*]'),
       m -> coalesce(m->>'role', '?') || ': ' ||
            CASE WHEN json_type(m->'content') = 'ARRAY'
                 THEN array_to_string(list_transform(json_extract(m->'content', '$[*]'),
                        p -> coalesce(p->>'text', p::VARCHAR)), chr(10))
                 ELSE coalesce(m->>'content', '') END),
     chr(10) || chr(10))
ELSE a.input END"""


def render_chat_sql(column: str = "a.input", is_chat: str = "a.input_is_chat") -> str:
    """SQL rendering a ChatML message list as readable turns ``"user: ...\\n\\nassistant: ..."``."""
    return _CHAT_SQL.replace("a.input_is_chat", is_chat).replace("a.input", column)


# -- the export -----------------------------------------------------------------------


def export_xlsx(
    job: JobRef,
    path: str | Path,
    *,
    rules: BucketRules | None = None,
    buckets: Sequence[str] | str | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    sheet_per_bucket: bool = False,
    allow_partial: bool = False,
) -> ExportResult:
    """Write a workbook for reviewers: Summary, Tasks and Attempts sheets.

    Parameters
    ----------
    job
        The job to export.
    path
        The ``.xlsx`` file to write (replaced if it exists).
    rules
        Bucket rules (:class:`envloop_nb.BucketRules`). Without rules the whole job is
        exported and there is no bucket column.
    buckets
        Export only these buckets' tasks and attempts (needs ``rules``). ``None``
        exports everything, including tasks whose metric is undefined (blank bucket).
    policy, threshold
        Metric options, as in :meth:`envloop_nb.Job.summary`.
    sheet_per_bucket
        Write each bucket's attempts on its own sheet (named after the bucket) instead
        of one Attempts sheet (needs ``rules``).
    allow_partial
        Bucket a pending/running job anyway; the workbook is then marked PARTIAL.
        Without ``rules`` nothing is bucketed, so an unfinished job is exported without
        it, and marked PARTIAL all the same.

    Returns
    -------
    ExportResult
        Rows per sheet, truncated-cell count, partial flag.

    Examples
    --------
    >>> import tempfile, envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> out = job.export_xlsx(tempfile.mkdtemp() + "/review.xlsx")
    >>> out.rows_per_sheet["Tasks"], out.rows_per_sheet["Attempts"]
    (3, 6)
    """
    if rules is None and buckets is not None:
        raise ValueError(
            "buckets=... needs rules=...: without bucketing only 'export everything' is possible"
        )
    if rules is None and sheet_per_bucket:
        raise ValueError("sheet_per_bucket=True needs rules=... to know the buckets")
    if rules is not None and not isinstance(rules, BucketRules):
        raise TypeError(f"rules must be a BucketRules, got {type(rules).__name__}")
    chosen = parse_names(rules, buckets) if rules is not None else None
    path = output_file(path)  # refused before the work, not after
    if path.suffix.lower() != ".xlsx":
        raise ValueError(f"{path}: the workbook file name must end in .xlsx")
    if path.parent and not path.parent.exists():
        raise FileNotFoundError(f"{path.parent}: no such folder to write the workbook into")

    result: BucketResult | None = None
    if rules is not None:
        result = job_buckets(
            job, rules, policy=policy, threshold=threshold, allow_partial=allow_partial
        )
        partial = result.partial
    else:  # nothing is bucketed, so nothing to refuse; an unfinished job is still partial
        partial, _ = check_finished(job, allow_partial=True)
    summary = job_summary(job.con, job.id, policy=policy, threshold=threshold)
    tasks = (
        result.frame
        if result is not None and rules is not None and rules.level == "task"
        else samples(job.con, job.id, policy=policy, threshold=threshold)
    )

    wb, cells, titles = new_workbook()  # titles: every sheet title, lower case
    counts: dict[str, int] = {}
    summary_ws = free_sheet(wb, "Summary", titles)  # filled last, shown first

    # -- Tasks ---------------------------------------------------------------------
    tasks_sheet = _write_tasks(job, wb, cells, tasks, result, chosen, titles)
    counts.update(tasks_sheet.counts)

    # -- Attempts ------------------------------------------------------------------
    dims = _dimension_names(job)
    if sheet_per_bucket and rules is not None:
        names = chosen or rules.names
        groups: list[tuple[str, list[str | None]]] = [(n, [n]) for n in names]
        if chosen is None and result is not None and result.excluded:
            groups.append((EXCLUDED, [None]))
        for name, group in groups:
            sheet = _write_attempts(job, wb, cells, name, rules, result, group, dims, titles)
            counts.update(sheet.counts)
    else:
        group_all: list[str | None] | None = list(chosen) if chosen is not None else None
        sheet = _write_attempts(job, wb, cells, "Attempts", rules, result, group_all, dims, titles)
        counts.update(sheet.counts)

    # -- Steps: the exported attempts' steps, bounded (a job whose steps are only its
    # prompts and answers has them on the Attempts sheet already) ---------------------
    if has_tool_calls(job.con, job.id) and summarised(job.con, job.id) is None:
        kept: list[str | None] | None = list(chosen) if chosen is not None else None
        with _selected(job, rules, result, kept, dims) as (attempts, params):
            counts.update(write_steps_sheet(job, wb, cells, titles, attempts, params).counts)

    # -- Annotations: every human annotation, with who, when and why ---------------
    if manual_dimensions(job.con, job.id):
        counts.update(_write_annotations(job, wb, cells, titles).counts)

    exported_at = dt.datetime.now(dt.UTC)
    summary_rows = _write_summary(
        job,
        summary_ws,
        cells,
        summary,
        result,
        chosen,
        counts,
        exported_at,
        policy,
        threshold,
        partial,
    )
    counts = {"Summary": summary_rows, **counts}
    save_workbook(wb, path)
    return ExportResult(
        path=path,
        rows_per_sheet=counts,
        truncated_cells=cells.truncated,
        escaped_cells=cells.escaped,
        partial=partial,
        buckets=tuple(chosen) if chosen is not None else None,
        rules=rules,
    )


def _write_annotations(job: JobRef, wb: Any, cells: CellWriter, titles: set[str]) -> Sheet:
    """Every annotation ever made (current ones marked), oldest first per attempt."""
    cols = [
        Column("Dimension", 16), Column("Task", 28), Column("Attempt", 9), Column("Label", 14),
        Column("Value", 9), Column("Reason", 48, wrap=True), Column("Annotator", 16),
        Column("Annotated at (UTC)", 22), Column("State", 24),
    ]  # fmt: skip
    sheet = Sheet(wb, "Annotations", cols, cells, titles)
    frame = annotation_frame(job.con, job.id, history=True)
    for r in frame.to_dict("records"):
        replaced = None if is_missing(r["replaced_at"]) else r["replaced_at"]
        state = "current" if replaced is None else f"replaced {_utc(replaced)}"
        if replaced is None and is_missing(r["value"]):
            state = "cleared"
        sheet.append(
            [r["name"], r["task"], int(r["attempt"]), plain(r["label"]), plain(r["value"]),
             plain(r["reason"]), r["annotator"], _utc(r["annotated_at"]), state]
        )  # fmt: skip
    sheet.close()
    return sheet


def _utc(value: Any) -> str:
    return str(value.tz_convert("UTC") if hasattr(value, "tz_convert") else value)[:19]


def _write_tasks(
    job: JobRef,
    wb: Any,
    cells: CellWriter,
    tasks: Any,
    result: BucketResult | None,
    chosen: list[str] | None,
    titles: set[str],
) -> Sheet:
    import pandas as pd

    frame = tasks
    if result is not None and result.rules.level == "attempt" and chosen is not None:
        # per-attempt buckets: keep tasks that have an attempt in a chosen bucket
        keep = set(result.frame.loc[result.frame["bucket"].isin(chosen), "task"])
        frame = frame[frame["task"].isin(keep)]
    elif result is not None and chosen is not None:
        frame = frame[frame["bucket"].isin(chosen)]
    tag_keys = _tag_keys(job)
    tag_rows = job.con.execute(
        "SELECT task, key, value FROM task_tags WHERE job_id = ?", [job.id]
    ).df()
    tags = (
        tag_rows.pivot(index="task", columns="key", values="value")
        if len(tag_rows)
        else pd.DataFrame(index=pd.Index([], name="task"))
    )
    taken: set[str] = set()
    cols: list[tuple[str, Column]] = []  # (source column, sheet column)
    bucketed = result is not None and result.rules.level == "task"
    if bucketed:
        cols.append(("bucket", Column(unique_name(header("bucket"), taken, ""), 18)))
    cols.append(("task", Column(unique_name(header("task"), taken, ""), 28)))
    tag_cols = [(f"tag:{k}", Column(unique_name(k, taken, "tag: "), 14)) for k in tag_keys]
    cols.extend(tag_cols)
    pct = {"pass_rate"} | {c for c in frame.columns if c.startswith(("pass@", "pass^"))}
    skip = {"bucket", "task", "tags", "complete", *tag_keys}  # tags have their own columns
    for c in frame.columns:
        if c in skip:
            continue
        fmt = PCT if c in pct else (NUM if c.startswith(("reward", "composite")) else None)
        if result is not None and c == result.metric and c not in pct:
            fmt = NUM
        name = header(c)  # people's headers (Pass rate, Reward mean), as every table shows
        cols.append((c, Column(unique_name(name, taken, "metric: "), max(10, len(name) + 3), fmt)))
    sheet = Sheet(wb, "Tasks", [c for _, c in cols], cells, titles)
    records = frame.merge(
        tags.rename(columns={k: f"tag:{k}" for k in tags.columns}),
        how="left",
        left_on="task",
        right_index=True,
    )
    src = [s for s, _ in cols]
    for row in records[src].itertuples(index=False, name=None):
        sheet.append([plain(v) for v in row])
    sheet.close()
    return sheet


def _attempt_columns(
    rules: BucketRules | None, result: BucketResult | None, dims: list[str]
) -> tuple[list[Column], list[str]]:
    taken: set[str] = set()
    cols: list[Column] = []
    exprs: list[str] = []

    def add(expr: str, name: str, width: float, fmt: str | None = None, wrap: bool = False) -> None:
        cols.append(Column(unique_name(name, taken, "dim: "), width, fmt, wrap))
        exprs.append(expr)

    # people's headers (Task, Input tokens), as every table shows; dimensions keep their names
    add("a.task", header("task"), 28)
    add("a.attempt", header("attempt"), 9)
    if rules is not None:
        add("bucket", header("bucket"), 18)
    add("a.status", header("status"), 11)
    add("a.reward", header("reward"), 11, NUM)
    add("a.composite", header("composite"), 11, NUM)
    for i, d in enumerate(dims):
        add(f"a._d{i}", d, max(10, min(len(d) + 2, 20)), NUM)
    add("a.error", header("error"), 40, wrap=True)
    add(render_chat_sql(), header("input"), 60, wrap=True)
    add("a.output", header("output"), 60, wrap=True)
    add("a.reference", header("reference"), 30, wrap=True)
    add("a.input_tokens", header("input_tokens"), 13)
    add("a.output_tokens", header("output_tokens"), 14)
    add("a.turns", header("turns"), 8)
    add("a.duration_s", f"{header('duration_s')} (s)", 13, "0.0")  # seconds, as numbers
    return cols, exprs


def _write_attempts(
    job: JobRef,
    wb: Any,
    cells: CellWriter,
    title: str,
    rules: BucketRules | None,
    result: BucketResult | None,
    group: list[str | None] | None,
    dims: list[str],
    titles: set[str],
) -> Sheet:
    cols, exprs = _attempt_columns(rules, result, dims)
    reduced = summarised(job.con, job.id)
    if reduced is not None:  # no attempt here to write: say where they are
        where = reduced.get("where") or reduced.get("engine")
        note = (f"The attempts stayed in {where}: this job is summarised, only its per-task "
                "counts are in the workspace (the Tasks sheet).")  # fmt: skip
        sheet = Sheet(wb, title, cols, cells, titles, note=note)
        sheet.close()
        return sheet
    sheet = Sheet(wb, title, cols, cells, titles)
    for batch in _attempt_batches(job, rules, result, group, dims, exprs):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for row in zip(*columns, strict=True):
            sheet.append(row)
    sheet.close()
    return sheet


def _attempt_batches(
    job: JobRef,
    rules: BucketRules | None,
    result: BucketResult | None,
    group: list[str | None] | None,
    dims: list[str],
    exprs: list[str],
) -> Iterator[Any]:
    """Arrow record batches of the attempts to export, in task order then attempt."""
    select = ", ".join(
        ("bucket" if e == "bucket" else e) + f" AS c{i}" for i, e in enumerate(exprs)
    )
    with _selected(job, rules, result, group, dims) as (attempts, params):
        sql = f"SELECT {select} FROM {attempts} a ORDER BY a.position, a.attempt"
        yield from job.con.execute(sql, params).to_arrow_reader(BATCH_ROWS)


@contextlib.contextmanager
def _selected(
    job: JobRef,
    rules: BucketRules | None,
    result: BucketResult | None,
    group: list[str | None] | None,
    dims: list[str],
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The attempts the workbook exports (``group``'s buckets; ``None``: all), as a SQL
    subquery with its parameters: each attempt's columns, its task's ``position``, its
    ``bucket`` and dimensions ``_d{i}``. DuckDB's progress bar is off meanwhile (a
    stream stays open while Python writes cells)."""
    import pyarrow as pa

    con = job.con
    params: dict[str, Any] = {"job_id": job.id}
    # Dimension i is column _d{i}: names are data, and DuckDB identifiers ignore case.
    params.update({f"dim{i}": d for i, d in enumerate(dims)})
    pivot = ", ".join(
        f"max(value) FILTER (WHERE name = $dim{i}) AS _d{i}" for i in range(len(dims))
    )
    dim_join = (
        f"""LEFT JOIN (SELECT task, attempt, {pivot} FROM dimensions WHERE job_id = $job_id
                     GROUP BY task, attempt) d ON d.task = a.task AND d.attempt = a.attempt"""
        if dims
        else ""
    )
    bucket_join = ""
    bucket_expr = "NULL"
    registered = False
    if rules is not None and result is not None:
        if rules.level == "task":
            frame = result.frame[["task", "bucket"]]
            con.register("_xl_task_bucket", pa.Table.from_pandas(frame, preserve_index=False))
            registered = True
            bucket_join = "LEFT JOIN _xl_task_bucket tb ON tb.task = a.task"
            bucket_expr = "tb.bucket"
        else:
            metric = rules.metric
            col = (
                f"a.{ident(metric)}"
                if metric in ("reward", "composite")
                else f"d._d{dims.index(metric)}"
            )
            bucket_expr = rules.sql_case(col)
    where = ""
    if group is not None:
        named = [g for g in group if g is not None]
        conds = []
        if named:
            params["groups"] = named
            conds.append("list_contains($groups, bucket)")
        if None in group:
            conds.append("bucket IS NULL")
        where = "WHERE " + " OR ".join(conds)
    # The dimensions are joined inside, beside the attempt: a per-attempt bucket rule on a
    # dimension reads d._d{i} there; the outer query sees them as a._d{i}.
    dim_cols = "".join(f"d._d{i}, " for i in range(len(dims)))
    sql = f"""(
        SELECT * FROM (
            SELECT a.*, t.position, {dim_cols}{bucket_expr} AS bucket
            FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
            {bucket_join}
            {dim_join}
            WHERE a.job_id = $job_id
        ) a
        {where})"""
    # The stream stays open while Python writes cells; DuckDB would draw a progress bar.
    bar = con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    con.execute("SET enable_progress_bar = false")
    try:
        yield sql, params
    finally:
        if bar is not None:
            con.execute(f"SET enable_progress_bar = {bool(bar[0])}")
        if registered:
            con.unregister("_xl_task_bucket")


def _write_summary(
    job: JobRef,
    ws: Any,
    cells: CellWriter,
    summary: Any,
    result: BucketResult | None,
    chosen: list[str] | None,
    counts: dict[str, int],
    exported_at: dt.datetime,
    policy: str,
    threshold: float | None,
    partial: bool,
) -> int:
    info = job_info(job.con, job.id)
    ws.column_dimensions["A"].width = 26
    ws.column_dimensions["B"].width = 56
    ws.column_dimensions["C"].width = 16
    ws.column_dimensions["D"].width = 12
    ws.column_dimensions["E"].width = 60
    rows = 0
    print_setup(ws)

    def put(
        *values: Any,
        fmt: str | None = None,
        fmts: Sequence[str | None] | None = None,
        bold: bool = False,
    ) -> None:
        nonlocal rows
        out = []
        for i, v in enumerate(values):
            out.append(cells.value(ws, v, fmts[i] if fmts else (fmt if i > 0 else None), bold=bold))
        ws.append(out)
        rows += 1

    put("envloop_nb review workbook", bold=True)
    if partial:
        changing = "buckets and pass rates" if result is not None else "attempts and pass rates"
        put(
            "PARTIAL",
            f"job was {info.get('status')} when exported: {changing} will change as "
            "attempts finish",
            bold=True,
        )
    put("job", job.id)
    put("status", info.get("status"))
    put("model", info.get("model"))
    put("dataset", f"{info.get('dataset_name')}@{info.get('dataset_version')}")
    put("revision", info.get("dataset_revision"))
    put("source", info.get("source_path"))
    put("policy", policy)
    put("threshold", "reward = 1 passes" if threshold is None else f"reward >= {threshold:g}")
    put("coverage", summary.coverage_text)
    for name, scale in dimension_scales(job.con, job.id).items():  # each on its own scale
        put(f"dimension {name}", scale.describe())
    k = summary.k
    metric_fmt = PCT if summary.binary else NUM
    put("score", summary.score, fmt=metric_fmt)
    put("pass", summary.pass_, fmt=PCT)
    put(f"pass@{k}", summary.pass_at_k, fmt=PCT)
    put(f"pass^{k}", summary.pass_hat_k, fmt=PCT)
    put("partial", "yes" if partial else "no")
    put("exported at (UTC)", exported_at.strftime("%Y-%m-%d %H:%M:%S"))
    put(
        "exported",
        "everything" if chosen is None else "buckets: " + ", ".join(chosen),
    )
    put("rows per sheet", ", ".join(f"{n}: {c:,}" for n, c in counts.items()))
    put()
    if result is None:
        put("rules", "none: no bucketing, everything exported")
        return rows
    rules = result.rules
    for i, line in enumerate(str(rules).splitlines()):
        put("rules" if i == 0 else None, line)
    put("rules (JSON)", rules.to_json(indent=None))
    put()
    put("bucket", "range", "count", "share", "note", bold=True)
    frame = result.counts
    for name, rng, count, share, note in zip(
        frame["bucket"], frame["range"], frame["count"], frame["share"], frame["note"], strict=True
    ):
        put(
            name,
            rng,
            plain(count),
            plain(share),
            note or None,
            fmts=(None, None, None, PCT, None),
        )
    if result.warnings:
        put()
        for w in result.warnings:
            put("warning", w)
    return rows
