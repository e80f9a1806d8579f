"""Any table of attempts: Parquet (file, glob, hive-partitioned folder), CSV/TSV, JSONL
or a JSON array of records (optionally ``.gz``), or a pandas / polars / Arrow frame
already in memory.

Everything runs in DuckDB SQL: files are read by DuckDB directly (``read_parquet`` with
``hive_partitioning``, ``read_csv``, ``read_json_objects``), frames are registered
through Arrow; rows are validated, numbered and inserted with ``INSERT ... SELECT``.
Ten million rows never become Python objects.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from ..._errors import LoadError, LoadWarning
from ..common.read import (
    check_gzip,
    explain_bad_line,
    is_gzip,
)
from ..common.stage import REWARD_STATS, begin_job, restart, stage_name
from ..common.values import K_FLOOR, check_claimed_k, check_k, infer_k_counted, physical_place
from .columns import Source
from .inplace import InPlacePass, attempts_select, count_in_place, register_in_place
from .source import (
    cleanup,
    csv_rejects,
    explain_json_array,
    is_csv,
    open_frame,
    open_path,
)
from .view import DEFAULT_MAPPING, resolve_mapping, typed_view

__all__ = ["DEFAULT_MAPPING", "load_table"]

_NOT_IN_PLACE = (
    "copy=False reads Parquet files on this machine in place; "
    "this source is copied (load it with copy=True)"
)


def load_table(
    con: duckdb.DuckDBPyConnection,
    source: Any,
    *,
    job_id: str | None = None,
    lenient: bool = False,
    mapping: Mapping[str, Any] | None = None,
    k: int | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    dataset_revision: str | None = None,
    model: str | None = None,
    runner: str | None = None,
    copy: bool = True,
) -> None:
    """Stage a table of attempts, one row per attempt.

    Parameters
    ----------
    source
        A Parquet file, glob (``runs/*.parquet``) or hive-partitioned folder; a CSV/TSV
        file; a JSONL file or JSON array of records (``.gz`` too); or a pandas, polars or
        Arrow frame in memory.
    mapping
        Our column → the source's column. Defaults: each field under its own name
        (``task``, ``attempt``, ``reward``, ``status``, ``trial_id``, ``input``, ``output``,
        ``reference``, ``error``, ``error_type``, ``exit_code``, ``turns``,
        ``input_tokens``, ``output_tokens``, ``cache_tokens``, ``cost_usd``,
        ``started_at``, ``finished_at``, ``duration_s``, ``digest``). ``task`` and
        ``reward`` must exist; a field mapped explicitly must exist; map a field to
        ``None`` to ignore a column. ``"tags"``: a list of columns (or ``{tag: column}``)
        that become task tags (default: ``subset``, ``difficulty`` and ``tag_*``
        columns); ``"dimensions"``: columns that become score dimensions (default:
        ``dim_*`` columns). Other columns are kept in the attempt's ``extra`` JSON.
    k
        Attempts requested per task; default the highest attempt found. A k beyond
        ``max(10000, 100 × the highest attempt found)`` is refused
        (:func:`~envloop_nb._loaders.common.values.check_claimed_k`).
    job_id
        Default ``"table:<file stem>"``; required for an in-memory frame.
    copy
        ``False`` (Parquet files, globs and hive folders on this machine): read the
        attempts where they are instead of copying them into the workspace. The load is
        then one pass over the files (every check included) that keeps only the job, its
        tasks and per-task counts; every question reads the files again (a changed or
        missing file is refused, naming it). Copy when the files may change or move, or
        when many questions will each read every attempt.

    Rules: an empty reward (or NaN) is no reward, never 0; so is a NaN cost or duration
    (infinity is refused, and so is a reward beyond 2^496 in magnitude: the exact
    per-task sums cannot hold it). Column names that differ only in case (``dim_X`` and
    ``dim_x``), or that a hive folder (``Task=9/``) would overwrite, are refused naming
    both: DuckDB compares column names ignoring ASCII case and would rename, merge or
    replace one quietly (JSON keys are never renamed: JSONL is not refused). Without a status column every
    row is ``completed`` (an empty status too). Without an attempt column, a task's rows
    are its attempts 1, 2, ... in the order they appear (file order; for Parquet, files
    in name order, then row order). The requested tasks are the distinct task values, in
    order of first appearance. Two rows for the same (task, attempt) are an error.
    ``lenient=True`` skips unusable rows (bad JSON line, non-numeric reward, ragged CSV
    line, ...) and warns with :class:`~envloop_nb.LoadWarning` how many. Places in
    messages and ``source_place``: ``line N`` (CSV, JSONL), ``[i]`` (JSON array),
    ``row N`` (Parquet row, frame row from 0, or CSV data row once ragged lines were
    skipped), ``<file> row N`` for several Parquet files.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> import pandas as pd
    >>> df = pd.DataFrame({"question": ["q1", "q1", "q2", "q2"], "correct": [1, 0, 1, None]})
    >>> job = enb.open().load(df, job_id="mine", mapping={"task": "question", "reward": "correct"})
    >>> job.k, job.summary().scored, job.attempts()["attempt"].tolist()
    (2, 3, [1, 2, 1, 2])
    """
    check_k(str(source), k)
    options = (mapping, k, dataset, dataset_version, dataset_revision, model, runner, copy)
    if not isinstance(source, str | Path):
        if not copy:
            raise LoadError(f"<{type(source).__name__}>", "copy", _NOT_IN_PLACE)
        src = open_frame(con, source)
        if not job_id:
            cleanup(con, src)
            raise LoadError(src.label, None, "pass job_id=... to load an in-memory frame")
        _run(con, src, job_id, lenient, options, source)
        return
    stem = Path(str(source).rstrip("/")).name
    for suffix in (".gz", ".parquet", ".csv", ".tsv", ".jsonl", ".ndjson", ".json"):
        stem = stem.removesuffix(suffix)
    jid = job_id or f"table:{stem}"
    path = Path(str(source))
    if is_gzip(path) and path.is_file():
        check_gzip(path)  # DuckDB would read a cut stream up to the cut, quietly
    try:
        _run(con, open_path(con, source), jid, lenient, options, source)
        return
    except duckdb.Error:
        restart(con, jid)  # the error aborted the transaction
        rejects = csv_rejects(con, Path(source)) if is_csv(source) else []
        if not rejects:
            explain_json_array(path)  # DuckDB says what, not where: find the place
            raise
    line, problem = rejects[0]
    more = f" ({len(rejects) - 1} more malformed lines)" if len(rejects) > 1 else ""
    if not lenient:
        raise LoadError(source, f"line {line}", f"malformed CSV row: {problem}{more}") from None
    warnings.warn(
        f"{source}: skipped {len(rejects)} malformed CSV line(s); first at line {line}: {problem}",
        LoadWarning,
        stacklevel=4,
    )
    restart(con, jid)  # start the load over, skipping the malformed lines
    _run(con, open_path(con, source, skip_bad_csv=True), jid, lenient, options, source)


def _run(
    con: duckdb.DuckDBPyConnection,
    src: Source,
    jid: str,
    lenient: bool,
    options: tuple[Any, ...],
    source: Any,
) -> None:
    mapping, k, dataset, dataset_version, dataset_revision, model, runner, copy = options
    if not copy and src.select_sql is None:
        cleanup(con, src)
        raise LoadError(src.label, "copy", _NOT_IN_PLACE)
    try:
        _load(
            con,
            src,
            jid,
            lenient,
            mapping,
            k,
            dataset,
            dataset_version,
            dataset_revision,
            model,
            runner,
            source,
            copy,
        )
    except duckdb.Error:
        restart(con, jid)  # the error aborted the transaction; the caller may retry
        raise
    finally:
        cleanup(con, src)


def _load(
    con: duckdb.DuckDBPyConnection,
    src: Source,
    jid: str,
    lenient: bool,
    mapping: Mapping[str, Any] | None,
    k: int | None,
    dataset: str | None,
    dataset_version: str | None,
    dataset_revision: str | None,
    model: str | None,
    runner: str | None,
    source: Any,
    copy: bool = True,
) -> None:
    fields, tags, dims = resolve_mapping(src, mapping)
    typed = typed_view(con, src, fields, tags, dims, k)
    attempt = (
        "attempt_given::INTEGER"
        if "attempt" in fields
        else "row_number() OVER (PARTITION BY task ORDER BY _enb_ord)::INTEGER"
    )
    usable = "WHERE _problem IS NULL"
    in_place: InPlacePass | None = None  # the numbers of the one pass (counted sources)
    assert copy or src.counted  # read in place: Parquet, counted from its footers
    if src.counted:  # check the rows in the pass that counts them; explain only if short
        rows = _count(con, "SELECT count(*) FROM _tb_src")
        _numbered(con, attempt, usable)
        in_place = count_in_place(
            con, given_attempt="attempt" in fields, has_digest="digest" in fields,
            n_tags=len(tags), k=k, total=rows,
        )  # fmt: skip
        n_bad = rows - in_place.rows
    else:
        n_bad = _count(con, "SELECT count(*) FROM _tb_v WHERE _problem IS NOT NULL")
    if n_bad:
        _unusable(con, src, lenient, n_bad)
    # the job's id claimed (its old rows deleted) before the first write, after the rows'
    # check: up to the pass a load read in place binds no parameter (see count_in_place)
    begin_job(con, jid)
    # the later passes over _tb_v skip what was skipped; with every row usable they need
    # not evaluate the checks again
    where = usable if n_bad else ""
    _numbered(con, attempt, where)
    if copy:  # a counted source's counts are the pass's; the insert reads it once more
        _insert_attempts(con, src, jid)
    if dims:
        values = ", ".join(f"_dim{i}" for i in range(len(dims)))
        con.execute(
            f"""INSERT INTO {stage_name("dimensions")} BY NAME
                SELECT $jid AS job_id, task, attempt,
                       unnest($names::VARCHAR[]) AS name, unnest([{values}]) AS value
                FROM _tb_n""",
            {"jid": jid, "names": list(dims)},
        )
        con.execute(
            f"""INSERT INTO {stage_name("dimension_meta")} BY NAME
                SELECT $jid AS job_id, unnest($names) AS name""",
            {"jid": jid, "names": list(dims)},
        )
    tag_cols = "".join(
        f", any_value(_tag{i}) AS _tag{i}"  # any_value: the first value not null
        for i in range(len(tags))
    )
    if src.json:  # where each task id is first written as a string, and as anything else
        tag_cols += (
            ", min(_enb_ord) FILTER (WHERE _task_type = 'VARCHAR') AS _text_ord"
            ", min(_enb_ord) FILTER (WHERE _task_type <> 'VARCHAR') AS _other_ord"
        )
    if in_place is None:  # copy=False made _tb_tasks in its one pass
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE _tb_tasks AS
                SELECT task, min(_enb_ord) AS first, any_value(digest) AS digest
                       {tag_cols}
                FROM _tb_v {where} GROUP BY task"""
        )
    try:
        if src.json:
            _refuse_merged_task_ids(con, src, fields["task"])
        _write_tasks(con, jid, list(tags))
    finally:
        if in_place is None:
            con.execute("DROP TABLE IF EXISTS _tb_tasks")
    stats = in_place.stats if in_place else con.execute(
        f"""SELECT max(attempt), count(*) FILTER (WHERE status IN ('pending', 'running')),
                   min(started_at), max(finished_at), {REWARD_STATS}
            FROM {stage_name("attempts")} WHERE job_id = $jid""",
        {"jid": jid},
    ).fetchone()  # fmt: skip
    assert stats is not None
    if k is not None:
        job_k = k
        if k > K_FLOOR:  # a k that may be far beyond the attempts: look at the highest
            top = _count(con, "SELECT coalesce(max(attempt), 0) FROM _tb_n")
            check_claimed_k(src.label, "k", k, top, name="k")
    else:  # how many attempts tasks have, not the highest attempt number (see infer_k)
        counted = in_place.counted if in_place else con.execute(
            f"""WITH c AS (SELECT task, count(*) AS n FROM {stage_name("attempts")}
                           WHERE job_id = $jid GROUP BY task),
                     m AS (SELECT max(n) AS most FROM c)
                SELECT coalesce(max(n), 0), coalesce(min(n), 0),
                       count(*) FILTER (WHERE n < (SELECT most FROM m)), count(*)
                FROM c""",
            {"jid": jid},
        ).fetchone()  # fmt: skip
        assert counted is not None
        job_k = infer_k_counted(
            src.label, most=int(counted[0]), fewest=int(counted[1]), short=int(counted[2]),
            tasks=int(counted[3]), top_index=int(stats[0] or 1), stacklevel=6, uneven=False,
        )  # fmt: skip
    if in_place is not None:
        register_in_place(
            con, src, jid, typed=typed, attempt=attempt, where=where, k=job_k,
            numbers=in_place, copy=copy,
        )  # fmt: skip
    con.execute(
        f"""INSERT INTO {stage_name("jobs")} BY NAME
            SELECT $jid AS job_id, 'table' AS source_format, $path AS source_path,
                   $status AS status, $created::TIMESTAMPTZ AS created_at,
                   $finished::TIMESTAMPTZ AS finished_at, $dataset AS dataset_name,
                   $version AS dataset_version, $revision AS dataset_revision,
                   $runner AS runner, $model AS model, $k AS attempts,
                   $extra::JSON AS extra, now() AS loaded_at""",
        {
            "jid": jid,
            "path": str(source) if isinstance(source, str | Path) else None,
            "status": "running" if stats[1] else "completed",
            "created": stats[2],
            "finished": None if stats[1] else stats[3],
            "dataset": dataset,
            "version": dataset_version,
            "revision": dataset_revision,
            "runner": runner,
            "model": model,
            "k": job_k,
            "extra": json.dumps(
                {
                    "mapping": fields,
                    "tags": tags,
                    "dimensions": dims,
                    "skipped_rows": n_bad,
                    "in_place": not copy,
                    "reward_stats": json.loads(stats[4]),  # one scan for these and the above
                }
            ),
        },
    )


def _write_tasks(con: duckdb.DuckDBPyConnection, jid: str, keys: list[str]) -> None:
    """The job's ``tasks`` (in order of first appearance, each with its tags as JSON,
    keys in tag order, absent tags left out) and ``task_tags``, from ``_tb_tasks``."""
    if keys:  # one SELECT per tag: 0.16 s at 10M, against 0.21 s unnesting a list per task
        each = " UNION ALL ".join(
            f"SELECT $jid AS job_id, task, $k{i}::VARCHAR AS key, _tag{i}::VARCHAR AS value "
            f"FROM _tb_tasks WHERE _tag{i} IS NOT NULL"
            for i in range(len(keys))
        )
        con.execute(
            f"INSERT INTO {stage_name('task_tags')} BY NAME {each}",
            {"jid": jid, **{f"k{i}": key for i, key in enumerate(keys)}},
        )
    # {"key": value, ...} of the present tags, written as text: the same JSON as
    # to_json(map_from_entries(...)) of the pairs, several times faster
    members = ", ".join(
        f"CASE WHEN _tag{i} IS NOT NULL THEN to_json($k{i}::VARCHAR) || ':' || to_json(_tag{i}) END"
        for i in range(len(keys))
    )
    tags = f"('{{' || concat_ws(',', {members}) || '}}')::JSON" if keys else "'{}'::JSON"
    con.execute(
        f"""INSERT INTO {stage_name("tasks")} BY NAME
            SELECT $jid AS job_id, task,
                   (row_number() OVER (ORDER BY first) - 1)::INTEGER AS position,
                   digest, {tags} AS tags
            FROM _tb_tasks ORDER BY first""",
        {"jid": jid, **{f"k{i}": key for i, key in enumerate(keys)}},
    )


def _count(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None
) -> int:
    row = con.execute(sql, params).fetchone()
    assert row is not None
    return int(row[0])


def _numbered(con: duckdb.DuckDBPyConnection, attempt: str, where: str) -> None:
    """View ``_tb_n``: the rows of ``_tb_v`` that ``where`` keeps, with their attempt."""
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW _tb_n AS SELECT *, {attempt} AS attempt FROM _tb_v {where}"
    )


def _insert_attempts(con: duckdb.DuckDBPyConnection, src: Source, jid: str) -> int:
    """Insert the rows of ``_tb_n``; return how many."""
    rows = attempts_select("$jid", "_tb_n", row_number=src.row_number)
    return _count(con, f"INSERT INTO {stage_name('attempts')} BY NAME {rows}", {"jid": jid})


def _unusable(con: duckdb.DuckDBPyConnection, src: Source, lenient: bool, n_bad: int) -> None:
    """Raise for the first of ``n_bad`` unusable rows, or warn how many are skipped."""
    bad = con.execute(
        "SELECT arg_min(_enb_place, _enb_ord), arg_min(_problem, _enb_ord) "
        "FROM _tb_v WHERE _problem IS NOT NULL"
    ).fetchone()
    assert bad is not None
    place, problem = str(bad[0]), str(bad[1])
    if src.json:
        place = physical_place(Path(src.label), place)
    if problem == "not valid JSON" and place.startswith("line "):
        problem = explain_bad_line(Path(src.label), int(place.removeprefix("line ")))
    if not lenient:
        more = f" ({n_bad - 1} more unusable rows)" if n_bad > 1 else ""
        raise LoadError(src.label, place, problem + more)
    warnings.warn(
        f"{src.label}: skipped {n_bad} unusable row(s); first at {place}: {problem}",
        LoadWarning,
        stacklevel=6,
    )


_JSON_KINDS = {
    "VARCHAR": "a string",
    "BIGINT": "a number",
    "UBIGINT": "a number",
    "DOUBLE": "a number",
    "BOOLEAN": "a boolean",
    "OBJECT": "an object",
    "ARRAY": "an array",
}


def _refuse_merged_task_ids(con: duckdb.DuckDBPyConnection, src: Source, col: str) -> None:
    """Refuse two task ids that differ in the file but read the same (``1`` and ``"1"``)."""
    pair = con.execute(
        """SELECT t.task, t._text_ord, t._other_ord FROM _tb_tasks t
           WHERE t._text_ord IS NOT NULL AND t._other_ord IS NOT NULL
           ORDER BY t.first LIMIT 1"""
    ).fetchone()
    if pair is None:
        return
    task, ords = str(pair[0]), sorted([int(pair[1]), int(pair[2])])
    rows = con.execute(
        f"SELECT _enb_place, {src.raw(col)}, {src.json_type(col)} FROM _tb_src "
        "WHERE _enb_ord IN (?, ?) ORDER BY _enb_ord",
        ords,
    ).fetchall()
    path = Path(src.label)
    places = [physical_place(path, str(r[0])) for r in rows]

    def shown(value: Any, kind: Any) -> str:
        return f"{value} ({_JSON_KINDS.get(str(kind), str(kind).lower())})"

    a, b = (shown(r[1], r[2]) for r in rows)
    raise LoadError(
        src.label,
        " and ".join(places),
        f"task {a} and task {b} would be merged into one task {task!r}: "
        "write every task id the same way",
    )
