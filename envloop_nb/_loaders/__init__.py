"""Loaders: each knows one source format and writes one job into the workspace.

``load_source`` picks the loader and runs it inside one transaction
(:mod:`envloop_nb._loaders.common.stage`): the loader claims its job id (old rows deleted),
writes the rows straight into the tables, the workspace validates the job's new rows
with SQL and commits, or rolls back on any error, so a failed load leaves the
workspace exactly as it was. Nothing is copied twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from .._errors import LoadError
from .._store.sql import ident
from .common.read import check_path_name
from .common.stage import batch, commit_stage, stage_name, staging, validate_stage

__all__ = [
    "LOADERS",
    "PUBLIC_FORMATS",
    "check_format",
    "detect_format",
    "job_loads",
    "job_sources",
    "load_all_url",
    "load_source",
    "load_sources",
]

#: A loader writes one job read from ``source`` (see ``_stage``); it returns nothing.
Loader = Callable[..., None]


def _envloop(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .envloop.job import load_envloop

    load_envloop(con, source, **kw)


def _harbor(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .harbor.job import load_harbor

    load_harbor(con, source, **kw)


def _tau(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .taubench.job import load_tau_bench

    load_tau_bench(con, source, **kw)


def _tau2(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .taubench.job import load_tau2_bench

    load_tau2_bench(con, source, **kw)


def _inspect(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .inspect.job import load_inspect

    load_inspect(con, source, **kw)


def _terminal_bench(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .harbor.terminal_bench import load_terminal_bench

    load_terminal_bench(con, source, **kw)


def _lm_eval(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .lm_eval.job import load_lm_eval

    load_lm_eval(con, source, **kw)


def _table(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .tables.job import load_table

    load_table(con, source, **kw)


def _summary(con: duckdb.DuckDBPyConnection, source: Any, **kw: Any) -> None:
    from .tables.summary import load_summary

    load_summary(con, source, **kw)


LOADERS: dict[str, Loader] = {
    "envloop": _envloop,
    "harbor": _harbor,
    "tau-bench": _tau,
    "tau2-bench": _tau2,
    "terminal-bench": _terminal_bench,
    "inspect": _inspect,
    "lm-eval": _lm_eval,
    "table": _table,
    "summary": _summary,
}

#: The names ``ws.load(format=...)`` accepts. ``summary`` is not one: it loads a job
#: already reduced in memory (``ws.load_spark``, ``ws.load_mlflow_run``), never a path.
PUBLIC_FORMATS = (
    "envloop",
    "harbor",
    "inspect",
    "terminal-bench",
    "lm-eval",
    "tau-bench",
    "tau2-bench",
    "table",
    "dataset",
    "experiment",
)


def check_format(source: Any, fmt: str | None) -> None:
    """Refuse a ``format=`` that is not one of :data:`PUBLIC_FORMATS` (None: detect).

    Examples
    --------
    >>> check_format("run.json", "summary")
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: run.json: unknown format 'summary'; one of ['dataset', ...]
    """
    if fmt is not None and fmt not in PUBLIC_FORMATS:
        raise LoadError(source, None, f"unknown format {fmt!r}; one of {sorted(PUBLIC_FORMATS)}")


_LM_EVAL_KEYS = (b'"lm_eval_version"', b'"n-samples"', b'"configs"', b'"alias"', b'_stderr"',
                 b"_stderr,")  # fmt: skip


def _sniff(path: Path) -> bytes:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read(4096)


def detect_format(source: Any) -> str:
    """Name the format of ``source`` from its shape, not its extension alone.

    Examples
    --------
    >>> detect_format("../shared/formats/examples/three-tasks-two-attempts.json")
    'envloop'
    >>> detect_format("../shared/fixtures/harbor/2026-03-02__14-05-11")
    'harbor'
    """
    if not isinstance(source, str | Path):
        return "table"  # an in-memory frame
    text = str(source)
    path = Path(source)
    # A glob pattern, unless it names an existing file or folder (a name may hold "?").
    is_glob = any(ch in text for ch in "*?[") and not path.exists()
    if is_glob or text.startswith(("s3://", "http://", "https://")):
        return "table"
    if not path.exists():
        raise LoadError(path, None, "no such file or folder")
    if path.is_dir():
        fmt = _folder_format(path)
        if fmt is not None:
            return fmt
        inside = job_sources(path)
        if inside:
            shown = ", ".join(p.name for p in inside[:3]) + (", ..." if len(inside) > 3 else "")
            raise LoadError(
                path,
                None,
                f"the folder holds {len(inside)} jobs ({shown}): load them with ws.load_all(path), "
                "one job each",
            )
        if any(path.glob("**/*.parquet")):
            return "table"
        raise LoadError(
            path,
            None,
            "a folder must be a Harbor job (config.json + result.json) or hold Parquet files",
        )
    name = path.name.lower()
    if name.endswith((".parquet", ".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        return "table"
    if name.endswith(".eval"):
        return "inspect"  # a zip archive; the Inspect loader names what is wrong with it
    try:
        head = _sniff(path).lstrip()
    except (OSError, EOFError) as err:
        if name.endswith(".gz"):
            from .common.read import check_gzip

            check_gzip(path)  # says where the stream is cut or corrupt
        raise LoadError(path, None, f"cannot be read ({err})") from None
    if not head:
        raise LoadError(path, None, "empty file: nothing to load")
    if b'"schema_version"' in head and b"envloop.job-result" in head:
        return "envloop"
    from .envloop.experiment import is_experiment_head

    if is_experiment_head(head):
        return "experiment"  # not a job: ws.load hands it to ws.load_experiment
    from .inspect.read import is_inspect_json_head

    if is_inspect_json_head(head):
        return "inspect"
    if (  # Terminal-Bench 1: its accuracy and counts follow the trials, often past the head
        head.startswith(b"{")
        and b'"results"' in head
        and b'"trial_name"' in head
        and any(k in head for k in (b'"accuracy"', b'"n_resolved"', b'"is_resolved"', b'"task_id"'))
    ):
        return "terminal-bench"
    if (  # lm-eval results: version and configs often lie past the head; 0.3 (Pythia) has
        # results, versions and config only, its head shows the metrics' stderrs
        head.startswith(b"{") and b'"results"' in head and any(k in head for k in _LM_EVAL_KEYS)
    ):
        return "lm-eval"
    from .taubench.tau2_layout import is_submission_head, submission_alone

    if is_submission_head(head):  # τ²'s leaderboard numbers: no job by themselves
        raise submission_alone(path)
    if head.startswith(b"{") and (b'"simulations"' in head or b'"num_trials"' in head):
        return "tau2-bench"
    if head.startswith(b"[") and b'"task_id"' in head:
        return "tau-bench"
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".json")):
        return "table"
    raise LoadError(
        path,
        None,
        "unrecognised format; pass format='envloop'|'harbor'|'inspect'|'terminal-bench'|'lm-eval'|"
        "'tau-bench'|'tau2-bench'|'table'",
    )


#: Formats of which a file or folder is one job (``job_sources`` gathers them).
JOB_FORMATS = (
    "envloop",
    "harbor",
    "inspect",
    "terminal-bench",
    "lm-eval",
    "tau-bench",
    "tau2-bench",
)


def _sniff_format(path: Path) -> str | None:
    """``detect_format`` of one file or folder, or None when it is no job of its own."""
    try:
        fmt = detect_format(path)
    except LoadError:
        return None
    return fmt if fmt in JOB_FORMATS else None


def job_sources(source: str | Path, *, depth: int = 3) -> list[Path]:
    """The jobs a folder or glob holds, one path each, in name order.

    A file is a job when its format is a job format (an EnvLoop export, an Inspect log,
    a Terminal-Bench ``results.json``, τ-bench results); a folder is one job when it is a
    Harbor job, a Terminal-Bench run, a τ²-bench run in its dir form (``results.json`` +
    ``simulations/``) or an lm-eval output folder of one run (of several: each
    ``results_<time>.json`` is one), else its children are searched (``depth`` levels).
    Tables (Parquet, CSV) are not gathered: a folder of
    Parquet files is one table.

    Examples
    --------
    >>> [p.name for p in job_sources("../shared/fixtures/harbor")]
    ['2025-10-01__10-00-00-legacy', '2026-03-02__14-05-11', '2026-03-03__09-00-00-multikey']
    >>> [p.name for p in job_sources("../shared/fixtures/harbor/2026-03-02__14-05-11")]
    ['2026-03-02__14-05-11']
    """
    text = str(source)
    path = Path(source)
    if any(ch in text for ch in "*?[") and not path.exists():
        import glob

        found = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
        return [p for p in found if _sniff_format(p) is not None]
    if not path.is_dir():
        return [path] if _sniff_format(path) is not None else []
    if _is_one_job_folder(path):  # a Harbor job itself (its trials are not jobs), a run, ...
        return _runs(path)
    out: list[Path] = []
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            if _is_one_job_folder(child):
                out.extend(_runs(child))
            elif depth > 1:
                out.extend(job_sources(child, depth=depth - 1))
        elif _sniff_format(child) is not None:
            out.append(child)
    return out


def _folder_format(path: Path) -> str | None:
    """The format of a folder that is one thing of its own (a job, or a dataset), or None."""
    if (path / "manifest.json").is_file():
        return "dataset"  # written by job.export_dataset; ws.load hands it to load_dataset
    if (path / "config.json").exists() or (path / "result.json").exists():
        return "harbor"  # the Harbor loader names what is missing
    if any(path.glob("results_*.json")) or any(path.glob("*/results_*.json")):
        return "lm-eval"  # <output_path>[/<model>]/results_<time>.json
    if (path / "results.json").is_file() and _sniff_format(path / "results.json") == (
        "terminal-bench"
    ):
        return "terminal-bench"
    if (
        (path / "results.json").is_file()
        and (path / "simulations").is_dir()
        and _sniff_format(path / "results.json") == "tau2-bench"
    ):
        return "tau2-bench"  # τ²'s dir form: one run
    return None


def _is_one_job_folder(path: Path) -> bool:
    return _folder_format(path) not in (None, "dataset")


def _runs(path: Path) -> list[Path]:
    """A one-job folder, or the results files of an lm-eval folder of several runs."""
    if _folder_format(path) == "lm-eval":
        from .lm_eval.files import run_files

        found = run_files(path)
        if len(found) > 1:
            return found
    return [path]


def job_loads(source: str | Path, options: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """What ``ws.load_all`` loads: each of :func:`job_sources` with ``options``, and a
    Harbor job that ran several agents, models or datasets once per combination."""
    loads: list[tuple[Path, dict[str, Any]]] = []
    for path in job_sources(source):
        if path.is_dir() and (path / "config.json").is_file():
            from .harbor.job import harbor_splits

            splits = harbor_splits(path)
            if len(splits) > 1:
                loads.extend(
                    (path, {**options, "agent": a, "model": m, "dataset": d}) for a, m, d in splits
                )
                continue
        loads.append((path, dict(options)))
    return loads


def load_sources(
    con: duckdb.DuckDBPyConnection,
    sources: list[tuple[Any, dict[str, Any]]],
    *,
    lenient: bool = False,
) -> list[str]:
    """Load several sources (each with its own options) in one transaction; all land or
    none does. Returns the job ids in order."""
    ids: list[str] = []
    with batch(con):
        for source, options in sources:
            ids.append(load_source(con, source, lenient=lenient, **options))
    return ids


def load_all_url(
    con: duckdb.DuckDBPyConnection,
    url: str,
    options: dict[str, Any],
    *,
    lenient: bool,
    s3: Any,
) -> list[str]:
    """``ws.load_all`` over an ``s3://`` prefix: one job per log, run or job folder it
    holds, in one transaction (Parquet and CSV objects are tables, never gathered, so
    they are not fetched).

    Returns
    -------
    list of str
        The job ids, in the order of the objects' names; each job's ``source_path`` is
        its object's (or folder's) URL.
    """
    from .tables.object_store import fetch_prefix

    with fetch_prefix(url, s3) as fetched:
        local = fetched.local(url)
        loads = [(p, {**o, "shown": fetched.url(p)}) for p, o in job_loads(local, options)]
        if not loads:
            raise LoadError(url, None, "no job found (Inspect logs, Harbor jobs, runs, exports)")
        return load_sources(con, loads, lenient=lenient)


def load_source(
    con: duckdb.DuckDBPyConnection,
    source: Any,
    *,
    format: str | None = None,
    job_id: str | None = None,
    lenient: bool = False,
    s3: Any = None,
    shown: str | None = None,
    **options: Any,
) -> str:
    """Load ``source`` into the workspace on ``con``; return the job id.

    An ``s3://`` URL is read with the object storage settings ``s3``
    (:mod:`~envloop_nb._loaders.tables.object_store`); ``shown`` is the name the job records as
    its ``source_path`` and errors give (the URL of a fetched copy).
    """
    if shown is None and isinstance(source, str) and source.startswith("s3://"):
        from .tables.object_store import object_source

        with object_source(source, s3) as (local, fmt):
            return load_source(
                con, local, format=format or fmt, job_id=job_id, lenient=lenient, shown=source,
                **options,
            )  # fmt: skip
    if isinstance(source, str | Path):
        check_path_name(source)  # DuckDB cannot open a name that is not UTF-8
    fmt = format or detect_format(source)
    if fmt == "dataset":
        raise LoadError(source, None, "a dataset folder, not a job: use ws.load_dataset(path)")
    if fmt not in LOADERS:
        check_format(source, fmt)  # names the public formats
        raise LoadError(source, None, f"format {fmt!r} is not a job: use ws.load(path)")
    label = str(source) if isinstance(source, str | Path) else f"<{type(source).__name__}>"
    try:
        return _load_staged(
            con, source, fmt, shown or label, job_id=job_id, lenient=lenient, shown=shown,
            **options,
        )  # fmt: skip
    finally:
        _drop_scratch(con)


def _drop_scratch(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the loaders' temporary scratch tables and views, even after an error."""
    prefixes = ("_el_", "_tb_")
    for kind, catalog in (("VIEW", "duckdb_views()"), ("TABLE", "duckdb_tables()")):
        names = con.execute(
            f"SELECT view_name FROM {catalog} WHERE temporary"
            if kind == "VIEW"
            else f"SELECT table_name FROM {catalog} WHERE temporary"
        ).fetchall()
        for (name,) in names:
            if str(name).startswith(prefixes):
                con.execute(f"DROP {kind} IF EXISTS {ident(str(name))}")


def _load_staged(
    con: duckdb.DuckDBPyConnection,
    source: Any,
    fmt: str,
    label: str,
    *,
    job_id: str | None,
    lenient: bool,
    shown: str | None = None,
    **options: Any,
) -> str:
    with staging(con):
        try:
            LOADERS[fmt](con, source, job_id=job_id, lenient=lenient, **options)
        except duckdb.Error as err:  # never a bare traceback from deep inside a reader
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise LoadError(label, None, f"cannot be read as {fmt}: {first}") from err
        except TypeError as err:
            if "unexpected keyword argument" not in str(err):
                raise
            raise LoadError(label, "options", f"format {fmt!r} does not take {err}") from None
        if shown is not None:  # a copy fetched from object storage: record the URL
            con.execute(f"UPDATE {stage_name('jobs')} SET source_path = ?", [shown])
        staged_id = validate_stage(con, label)
        commit_stage(con, staged_id)
    return staged_id
