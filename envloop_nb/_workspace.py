"""The workspace: one DuckDB database holding every loaded job."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import duckdb

from ._errors import EnvloopError, LoadError
from ._experiments.session import Session
from ._job import Job
from ._metrics.counts import job_list_sql
from ._store import attempt_sources
from ._store.frames import to_frame
from ._store.migrate import migrate, read_only_shims
from ._store.schema import (
    ANNOTATION_TABLES,
    EXPERIMENT_TABLES,
    JOB_TABLES,
    SCHEMA_SQL,
    SCHEMA_VERSION,
    missing_tables_sql,
    written_by,
)
from ._store.workspace_file import check_schema_version, connect
from ._types import FrameKind, Policy

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ._baseline import BaselineReport
    from ._datasets.dataset import Dataset
    from ._datasets.heldout import HeldOutResult
    from ._experiment import Experiment
    from ._experiments.runner import Evaluator
    from ._experiments.watch import Watch
    from ._loaders.tables.object_store import S3Options
    from ._run import Run

__all__ = ["Workspace", "open"]


class Workspace:
    """A DuckDB database of evaluation jobs.

    Use :func:`envloop_nb.open` to get one. ``ws.con`` is the DuckDB connection, free
    for your own SQL over the tables documented in ``envloop_nb._store.schema``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> len(ws.jobs())
    0
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        path: str | None,
        *,
        read_only: bool = False,
        s3: S3Options | None = None,
    ) -> None:
        self.con = con
        self.path = path
        self._s3 = s3  # object storage settings: in memory only, never written
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.session = Session()  # notebook evaluators, listeners, watchers (in memory)
        con.execute("SET TimeZone = 'UTC'")
        have = {
            str(r[0])
            for r in con.execute(
                """SELECT table_name FROM duckdb_tables()
                   WHERE database_name = current_database() AND schema_name = 'main'"""
            ).fetchall()
        }
        # before anything is written to the file
        found = check_schema_version(con, path, have=have)
        if read_only:  # tables newer than the file: empty, for this session only
            for statement in missing_tables_sql(have):
                con.execute(statement)
            if found is None or found < SCHEMA_VERSION:  # a version-1 file's view of it
                read_only_shims(con)
        else:
            if have and found != SCHEMA_VERSION:  # an older file: brought to this schema
                migrate(con)
            con.execute(SCHEMA_SQL)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), ('written_by', ?)",
                [str(SCHEMA_VERSION), written_by()],
            )
        attempt_sources.refresh(con, read_only=read_only)  # a source file went or came back

    def __repr__(self) -> str:
        n = self.con.execute("SELECT count(*) FROM jobs").fetchone()
        where = self.path or ":memory:"
        return f"<envloop_nb.Workspace {where} · {n[0] if n else 0} jobs>"

    # -- reading -------------------------------------------------------------
    def sql(self, query: str, params: Sequence[Any] | None = None) -> duckdb.DuckDBPyRelation:
        """Run SQL on the workspace; returns a DuckDB relation (``.df()``, ``.pl()``)."""
        return self.con.sql(query, params=params)

    def jobs(self, frame: FrameKind = "pandas") -> Any:
        """One row per job, with its dataset, model, k and attempt counts.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> list(enb.open().jobs().columns)[:4]
        ['job_id', 'source_format', 'status', 'model']
        """
        rel = self.con.sql(job_list_sql())
        return to_frame(rel, frame)

    def job(self, job_id: str) -> Job:
        """The handle of a job already in the workspace."""
        row = self.con.execute("SELECT 1 FROM jobs WHERE job_id = ?", [job_id]).fetchone()
        if row is None:
            known = [r[0] for r in self.con.execute("SELECT job_id FROM jobs").fetchall()]
            raise EnvloopError(f"no job {job_id!r} in this workspace; jobs: {known}")
        attempt_sources.check(self.con, job_id)  # read in place: its files must be as they were
        return Job(self, job_id)

    # -- writing -------------------------------------------------------------
    @overload
    def load(
        self,
        source: Any,
        *,
        format: Literal["dataset"],
        job_id: str | None = None,
        lenient: bool = False,
        **options: Any,
    ) -> Dataset: ...
    @overload
    def load(
        self,
        source: Any,
        *,
        format: Literal["experiment"],
        job_id: str | None = None,
        lenient: bool = False,
        **options: Any,
    ) -> Experiment: ...
    @overload
    def load(
        self,
        source: Any,
        *,
        format: str | None = None,
        job_id: str | None = None,
        lenient: bool = False,
        **options: Any,
    ) -> Job: ...
    def load(
        self,
        source: Any,
        *,
        format: str | None = None,
        job_id: str | None = None,
        lenient: bool = False,
        **options: Any,
    ) -> Job | Dataset | Experiment:
        """Load a job from a file, folder or in-memory frame; replace it if already there.

        The format is detected (EnvLoop ``.json``/``.jsonl``/``.jsonl.gz``, a Harbor job
        folder, τ-bench or τ²-bench results, or a table: Parquet, CSV, JSONL, a pandas,
        polars or Arrow frame) unless ``format`` names it. A load either succeeds whole
        or leaves the workspace exactly as it was. ``lenient=True`` skips unusable rows
        where the format allows it and warns how many. A dataset folder (one holding
        ``manifest.json``, written by ``job.export_dataset``) is not a job: it is handed to
        :meth:`load_dataset`, which registers it and returns a ``Dataset`` (typed as
        such with ``format="dataset"``; type checkers see a ``Job`` otherwise). An
        experiment export (``envloop.experiment-result/v1``) is not a job either: it goes to
        :meth:`load_experiment` and an :class:`envloop_nb.Experiment` comes back (typed as
        such with ``format="experiment"``, or call ``load_experiment`` directly).

        The held-out guard runs on its own: when the workspace holds a dataset marked
        ``purpose="train"`` and task inputs of the loaded job are in it, the load warns
        :class:`envloop_nb.HeldOutWarning` naming the dataset, the job and how many
        tasks overlap (see :meth:`check_heldout`); registering a training dataset while
        overlapping jobs are loaded warns the same way.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> job.id, len(job.attempts())
        ('job_abc0001', 6)
        """
        from ._datasets.dataset import is_dataset_folder
        from ._loaders import check_format

        check_format(source, format)  # an internal loader's name is no format of a file
        if format == "dataset" or (format is None and is_dataset_folder(source)):
            return self.load_dataset(source)
        if format == "experiment" or (
            format is None and isinstance(source, str | os.PathLike) and _is_experiment(source)
        ):
            return self.load_experiment(source)
        from ._loaders import load_source

        loaded_id = load_source(
            self.con, source, format=format, job_id=job_id, lenient=lenient, s3=self._s3, **options
        )
        from ._datasets.heldout import warn_job_overlaps

        warn_job_overlaps(self, loaded_id)  # task inputs in a training dataset: warns
        return Job(self, loaded_id)

    def load_all(
        self, source: str | os.PathLike[str], *, lenient: bool = False, k: int | None = None
    ) -> list[Job]:
        """Load every job a folder or glob holds: one job per log, run or job folder.

        Inspect logs (``.eval``/``.json``), Terminal-Bench run folders, Harbor job folders
        (a folder of ``jobs/``), lm-eval output folders, EnvLoop exports and τ-bench files
        are gathered (:func:`envloop_nb._loaders.job_sources`), never merged: each is its
        own job, with its own model; a Harbor job that ran several agents, models or
        datasets becomes one job per combination. All of them load in one transaction, so a bad file
        leaves the workspace exactly as it was; two sources with one job id are refused.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> jobs = enb.open().load_all("../shared/fixtures/inspect/eval")
        >>> [j.info["model"] for j in jobs]
        ['mockllm/ckpt-a', 'mockllm/ckpt-b']
        """
        options: dict[str, Any] = {} if k is None else {"k": k}
        if isinstance(source, str) and source.startswith("s3://"):  # one job per log there
            from ._loaders import load_all_url

            ids = load_all_url(self.con, source, options, lenient=lenient, s3=self._s3)
        else:
            from ._loaders import job_loads, load_sources

            loads = job_loads(os.fspath(source), options)
            if not loads:
                raise LoadError(
                    source, None, "no job found (Inspect logs, Harbor jobs, runs, exports)"
                )
            ids = load_sources(self.con, loads, lenient=lenient)
        from ._datasets.heldout import warn_job_overlaps

        for job_id in ids:
            warn_job_overlaps(self, job_id)
        return [Job(self, job_id) for job_id in ids]

    def load_spark(
        self,
        df: Any,
        *,
        job_id: str | None = None,
        mapping: Mapping[str, Any] | None = None,
        k: int | None = None,
        thresholds: Sequence[float] = (),
        source: str | None = None,
        dataset: str | None = None,
        dataset_version: str | None = None,
        dataset_revision: str | None = None,
        runner: str | None = None,
    ) -> list[Job]:
        """Reduce a Spark DataFrame of attempts on Spark; bring in one *summarised* job
        per job id (its per-task counts only; the attempts stay in Spark).

        The attempt-of-record resolution and the per-task counts run on Spark with
        native functions (:mod:`envloop_nb._loaders.tables.spark`); summary, samples, curve,
        groups by tag, intervals, buckets by task and comparisons of the job are exactly
        those of the same attempts loaded with :meth:`load`, for ``reward = 1`` and each
        of ``thresholds``. Attempt-level views say that the attempts stayed in Spark.
        All jobs land in one transaction, or none does. Needs ``pip install
        envloop_nb[spark]``.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> from pyspark.sql import SparkSession  # doctest: +SKIP
        >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
        >>> df = spark.read.parquet("s3a://bucket/attempts/")  # doctest: +SKIP
        >>> jobs = enb.open().load_spark(df, mapping={"job_id": "run"})  # doctest: +SKIP
        """
        from ._loaders import load_sources
        from ._loaders.tables.spark import reduce_spark

        reduced = reduce_spark(
            df,
            job_id=job_id,
            mapping=mapping,
            k=k,
            thresholds=thresholds,
            source=source,
            dataset=dataset,
            dataset_version=dataset_version,
            dataset_revision=dataset_revision,
            runner=runner,
        )
        ids = load_sources(self.con, [(one, {"format": "summary"}) for one in reduced])
        return [Job(self, job_id) for job_id in ids]

    def load_mlflow_run(
        self, run: Any, *, tracking_uri: str | None = None, job_id: str | None = None
    ) -> Job:
        """Read an MLflow run back as a *summarised* job (no attempts, engine ``mlflow``).

        A run written by :meth:`envloop_nb.Job.log_mlflow` brings its exact per-task
        counts (artifact ``task_counts.parquet``, downloaded into a temporary folder and
        removed after): summary, samples, curve, groups by tag, intervals, buckets and
        comparisons equal the original job's, for ``reward = 1`` and the threshold it
        was logged with. Any other run with SageMaker's evaluation metrics
        (``eval/reward/mean``, ``num_prompts``, ``rollouts_per_prompt``, ...) becomes a
        *metrics-only* job: its summary is the run's own numbers (unknown counts are
        None), its metrics are kept verbatim in ``info["platform_metrics"]``, per-task
        views refuse it and comparisons mark it not comparable on its tasks.

        Parameters
        ----------
        run
            A run id, or an ``mlflow.entities.Run``.
        tracking_uri
            Where the run is; None: MLflow's default (``MLFLOW_TRACKING_URI``...).
        job_id
            The job's id; default ``<original job id or run name>@mlflow-<run id[:8]>``
            (:mod:`envloop_nb._loaders.mlflow.run`). Loading the run again replaces it.

        Examples
        --------
        >>> import os, tempfile, envloop_nb as enb
        >>> _ = os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no usage data sent
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> uri = f"sqlite:///{tempfile.mkdtemp()}/mlflow.db"
        >>> run_id = job.log_mlflow(experiment="tiny-agent", tracking_uri=uri)
        >>> back = enb.open().load_mlflow_run(run_id, tracking_uri=uri)
        >>> back.id == f"job_abc0001@mlflow-{run_id[:8]}", str(back.summary()) == str(job.summary())
        (True, True)
        """
        from ._loaders import load_sources
        from ._loaders.mlflow.run import read_run

        reduced = read_run(run, tracking_uri=tracking_uri, job_id=job_id)
        [loaded] = load_sources(self.con, [(reduced, {"format": "summary"})])
        return Job(self, loaded)

    def load_mlflow_steps(self, run: Any, *, tracking_uri: str | None = None) -> list[Job]:
        """Read an MLflow run whose metric history has a step axis (``eval/reward/*`` logged
        during training, as SageMaker does) as one *metrics-only* job per step of
        ``eval/reward/mean``: ``<run name>@step<N>``, labelled ``agent_run = <run name>``,
        ``agent_round = <N>``, so ``ws.run(<run name>)`` is the run over training. All in
        one transaction (:func:`envloop_nb._loaders.mlflow.run.read_run_steps`)."""
        from ._loaders import load_sources
        from ._loaders.mlflow.run import read_run_steps

        steps = read_run_steps(run, tracking_uri=tracking_uri)
        ids = load_sources(self.con, [(one, {"format": "summary"}) for one in steps])
        return [Job(self, job_id) for job_id in ids]

    # -- experiments -------------------------------------------------------------
    def experiments(self, frame: FrameKind = "pandas") -> Any:
        """One row per experiment: id, name, agent, status, source, cases, evaluators,
        result rows and how many are counted.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> _ = ws.load("../shared/formats/examples/experiment-two-evaluators.json")
        >>> ws.experiments()[["experiment_id", "cases", "evaluators"]].values.tolist()
        [['exp_5c1e02', 3, 2]]
        """
        from ._experiments.stats import experiment_list_sql

        return to_frame(self.con.sql(experiment_list_sql()), frame)

    def experiment(self, experiment_id: str, *, evaluators: Sequence[Evaluator] = ()) -> Experiment:
        """The handle of an experiment in the workspace; ``evaluators`` binds notebook
        functions to its evaluator names (see :meth:`Experiment.use`)."""
        row = self.con.execute(
            "SELECT 1 FROM experiments WHERE experiment_id = ?", [experiment_id]
        ).fetchone()
        if row is None:
            known = [
                r[0] for r in self.con.execute("SELECT experiment_id FROM experiments").fetchall()
            ]
            raise EnvloopError(
                f"no experiment {experiment_id!r} in this workspace; experiments: {known}"
            )
        from ._experiment import Experiment

        exp = Experiment(self, experiment_id)
        return exp.use(*evaluators) if evaluators else exp

    def load_experiment(
        self,
        source: Any,
        *,
        format: str | None = None,
        experiment_id: str | None = None,
        name: str | None = None,
        agent: str | None = None,
        mapping: Mapping[str, str] | None = None,
        scale: tuple[float, float] = (0.0, 100.0),
    ) -> Experiment:
        """Load an experiment: an EnvLoop experiment export (``.json`` or the streaming
        ``.jsonl``), an Inspect AI log read as one (samples × epochs are cases, scorers
        are evaluators, Inspect's score edits are corrections), or any long results table
        (a file or frame with one row per trace × evaluator; ``mapping`` names its
        columns, see :mod:`envloop_nb._loaders.experiments.table`). Reloading a newer export
        merges: rows are replaced by (trace, evaluator, run), corrections made here are
        kept. One transaction: a bad file changes nothing.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> exp = enb.open().load_experiment("../shared/formats/examples/experiment-two-evaluators.json")
        >>> exp.progress()["completed"]
        5
        """
        from ._experiment import Experiment
        from ._loaders import detect_format
        from ._loaders.experiments.store import write_experiment

        is_path = isinstance(source, str | os.PathLike)
        fmt = format or (detect_format(Path(source)) if is_path else "table")
        if fmt == "table":
            from ._loaders.experiments.doc import check_doc
            from ._loaders.experiments.table import table_experiment_doc

            label = str(source) if is_path else f"<{type(source).__name__}>"
            eid = experiment_id or (f"table:{Path(source).stem}" if is_path else None)
            if eid is None:
                raise ValueError("a frame needs experiment_id=... (its experiment's id)")
            raw = table_experiment_doc(
                self.con,
                source,
                experiment_id=eid,
                name=name,
                agent=agent,
                mapping=mapping,
                scale=scale,
            )
            doc = check_doc(raw, label)
            eid = write_experiment(
                self.con, doc, source_format="table", source_path=label if is_path else None
            )
            return Experiment(self, eid)
        path = Path(source)
        if fmt == "experiment":
            from ._loaders.envloop.experiment import read_experiment_export

            doc = read_experiment_export(path)
            src = "envloop"
        elif fmt == "inspect":
            from ._loaders.experiments.doc import check_doc
            from ._loaders.inspect.experiment import inspect_experiment_doc

            doc = check_doc(inspect_experiment_doc(path), path)
            src = "inspect"
        else:
            raise LoadError(
                path, None, f"a {fmt} file is a job, not an experiment: load it with ws.load"
            )
        eid = write_experiment(self.con, doc, source_format=src, source_path=str(path))
        return Experiment(self, eid)

    def load_mlflow(
        self, *, experiment: str, tracking_uri: str, max_traces: int | None = None
    ) -> Experiment:
        """Load an MLflow 3 experiment's traces and their feedback assessments as an
        experiment (traces are cases, feedback names evaluators, ``override_feedback``
        chains corrections with the overridden score kept). Needs ``mlflow``."""
        from ._experiment import Experiment
        from ._loaders.experiments.doc import check_doc
        from ._loaders.experiments.store import write_experiment
        from ._loaders.mlflow.traces import mlflow_experiment_doc

        raw = mlflow_experiment_doc(
            experiment=experiment, tracking_uri=tracking_uri, max_traces=max_traces
        )
        doc = check_doc(raw, tracking_uri)
        eid = write_experiment(self.con, doc, source_format="mlflow", source_path=tracking_uri)
        return Experiment(self, eid)

    def new_experiment(
        self,
        name: str,
        *,
        agent: str | None = None,
        evaluators: Sequence[Evaluator],
        cases: Sequence[Mapping[str, Any]] | Any,
        experiment_id: str | None = None,
    ) -> Experiment:
        """Create an experiment here: ``cases`` (dicts or a frame with ``trace_id``,
        ``input``, ``output``, optional ``reference``, ``tags``) × ``evaluators``
        (:class:`envloop_nb.Evaluator`); every row starts pending: ``exp.run()``
        evaluates them.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> exact = enb.Evaluator("exact", lambda c: 100 if c.output == c.reference else 0)
        >>> exp = ws.new_experiment("demo", agent="bot", evaluators=[exact],
        ...     cases=[{"trace_id": "t1", "input": "2+2?", "output": "4", "reference": "4"}])
        >>> exp.run(progress=False)
        {'succeeded': 1, 'failed': 0}
        >>> print(exp.summary())
        composite 100 · 1/1 rows counted
        """
        from ._experiment import Experiment
        from ._experiments.create import create_experiment

        if hasattr(cases, "to_dict"):
            cases = cases.to_dict("records")
        elif hasattr(cases, "to_dicts"):
            cases = cases.to_dicts()
        eid = create_experiment(
            self.con, name=name, agent=agent, evaluators=list(evaluators), cases=list(cases),
            experiment_id=experiment_id,
        )  # fmt: skip
        return Experiment(self, eid).use(*evaluators)

    def watch(self, path: str | os.PathLike[str], *, interval: float = 0.5) -> Watch:
        """Follow a growing export in the background: an EnvLoop job export (``.jsonl``;
        the job is loaded now and again whenever complete new trial lines arrive, in one
        transaction each) or an experiment's streaming export (only the new lines are
        read, then merged). A running job's or experiment's panel updates from it.
        ``ws.unwatch(path)`` stops it; ``.error`` holds what stopped it, if anything.
        """
        from ._experiments.watch import Watch
        from ._loaders import detect_format, load_source

        p = Path(path)
        key = str(p.resolve())
        old = self.session.watchers.pop(key, None)
        if old is not None:
            old.stop()
        fmt = detect_format(p)
        if fmt == "experiment":
            from ._loaders.envloop.experiment import StreamState
            from ._loaders.experiments.doc import check_doc
            from ._loaders.experiments.store import write_experiment

            if not p.name.lower().endswith((".jsonl", ".ndjson")):
                raise LoadError(
                    p, None, "only the streaming (.jsonl) form of an export can be watched"
                )
            state = StreamState(p)
            cur = self.con.cursor()
            ids: dict[str, str | None] = {"job_id": None}

            def update() -> None:
                if state.read_more():
                    doc = check_doc(state.document(), p)
                    ids["experiment_id"] = write_experiment(
                        cur, doc, source_format="envloop", source_path=str(p)
                    )

            update()
        elif fmt == "envloop":
            job_id = self.load(p).id
            cur = self.con.cursor()
            ids = {"job_id": job_id}

            def update() -> None:
                load_source(cur, p, format="envloop", job_id=job_id)

        else:
            raise LoadError(
                p,
                None,
                f"a {fmt} source cannot be watched: watch an EnvLoop job or experiment export",
            )
        watch = Watch(
            p,
            update,
            interval=interval,
            job_id=ids.get("job_id"),
            experiment_id=ids.get("experiment_id"),
        ).start()
        self.session.watchers[key] = watch
        return watch

    def unwatch(self, path: str | os.PathLike[str]) -> None:
        """Stop watching ``path``."""
        watch = self.session.watchers.pop(str(Path(path).resolve()), None)
        if watch is None:
            raise EnvloopError(f"{path} is not being watched")
        watch.stop()

    def remove_experiment(self, experiment: Experiment | str) -> None:
        """Delete an experiment with its cases, results and corrections."""
        from ._experiment import Experiment

        eid = experiment.id if isinstance(experiment, Experiment) else experiment
        tail = self.session.listeners.pop(eid, None)
        if tail is not None:
            tail.stop()
        self.con.execute("BEGIN TRANSACTION")
        try:
            for table in EXPERIMENT_TABLES:
                self.con.execute(f"DELETE FROM {table} WHERE experiment_id = ?", [eid])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def load_dataset(self, path: str | os.PathLike[str]) -> Dataset:
        """Load a dataset folder ``<name>@<version>/``: verify its content hash, register it.

        See :func:`envloop_nb.export_dataset`; returns a :class:`envloop_nb.Dataset`.
        """
        from ._datasets.load import load_dataset

        return load_dataset(self, Path(path))

    def check_heldout(self, job: Job | str, *, warn: bool = True) -> HeldOutResult:
        """Overlap of a job's task inputs with datasets marked for training (loud warning)."""
        from ._datasets.heldout import check_heldout

        return check_heldout(self, job, warn=warn)

    def remove(self, job: Job | str) -> None:
        """Delete a job and everything that belongs to it (its display name too), in one
        transaction."""
        job_id = job.id if isinstance(job, Job) else job
        self.con.execute("BEGIN TRANSACTION")
        try:
            was_in_place = attempt_sources.in_place(self.con, job_id)
            for table in (*JOB_TABLES, *ANNOTATION_TABLES, "job_names"):
                self.con.execute(f"DELETE FROM {table} WHERE job_id = ?", [job_id])
            if was_in_place:  # its files leave the attempts view
                attempt_sources.rebuild(self.con)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def rename(self, job: Job | str, name: str) -> None:
        """Give a job a display name (the workspace panel and its list show it; a reload
        of the job keeps it). The job id does not change.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> ws.rename(job, "tiny agent, ckpt 1")
        >>> ws.sql("SELECT name FROM job_names").fetchall()
        [('tiny agent, ckpt 1',)]

        A name another job already shows (its own name, or its id) is refused.
        """
        job_id = job.id if isinstance(job, Job) else job
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a job's name must be non-empty text, got {name!r}")
        if self.con.execute("SELECT 1 FROM jobs WHERE job_id = ?", [job_id]).fetchone() is None:
            raise KeyError(f"no job {job_id!r} in this workspace")
        taken = self.con.execute(
            """SELECT j.job_id FROM jobs j LEFT JOIN job_names n USING (job_id)
               WHERE j.job_id <> $id AND coalesce(n.name, j.job_id) = $name LIMIT 1""",
            {"id": job_id, "name": name.strip()},
        ).fetchone()
        if taken is not None:  # two jobs of one name could not be told apart in a list
            raise ValueError(f"the name {name.strip()!r} is already job {taken[0]!r}'s")
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM job_names WHERE job_id = ?", [job_id])
            self.con.execute("INSERT INTO job_names VALUES (?, ?, now())", [job_id, name.strip()])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def panel(self, *, report_dir: str | os.PathLike[str] = "reports") -> Any:
        """The workspace panel: every job in one list (name, model, method, status, score
        with coverage, k, created), searchable and filterable; per row open the job
        panel, rename, download the HTML report (written into ``report_dir``) or delete
        (after a confirmation); tick 2-5 rows to open their comparison panel.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> _ = ws.load_all("sample_data/inspect")
        >>> [r.status_label for r in ws.panel().rows]
        ['completed', 'completed']
        """
        from ._ui.workspace_panel import WorkspaceActions, WorkspacePanel

        def report(job_id: str, path: Path) -> Path:
            path.parent.mkdir(parents=True, exist_ok=True)
            return Path(Job(self, job_id).export_html(path).path)

        actions = WorkspaceActions(
            open_job=lambda job_id: Job(self, job_id).panel().widget,
            compare=lambda ids: self.compare(list(ids)).panel(),
            rename=lambda job_id, name: self.rename(job_id, name),
            remove=lambda job_id: self.remove(job_id),
            report=report,
        )
        return WorkspacePanel(self.con, actions, report_dir=report_dir)

    def compare(
        self, jobs: Sequence[Job | str], baseline: Job | str | None = None, **options: Any
    ) -> Any:
        """Compare 2-5 jobs, given as a list (see :class:`envloop_nb.Comparison`; options:
        ``policy``, ``threshold``, ``solved_at``, ``resamples``, ``seed``).

        ``jobs`` is a list of jobs or ids; one id on its own is a ``TypeError`` (a list
        of one job gives its summary)."""
        from ._comparison import compare

        return compare(self, jobs, baseline=baseline, **options)

    def run(
        self,
        name_or_jobs: str | Sequence[Job | str],
        *,
        step: str | Sequence[int | float] | None = None,
        strict: bool = True,
        policy: Policy = "unknown",
        threshold: float | None = None,
        solved_at: float = 0.5,
        resamples: int = 1000,
        seed: int = 0,
        confidence: float = 0.95,
    ) -> Run:
        """A training run: see :class:`envloop_nb.Run`.

        ``ws.run("rl-0412")`` gathers the jobs labelled ``agent_run = "rl-0412"``, ordered by
        their ``agent_round`` label; ``ws.run([jobs...], step=...)`` takes any jobs, their
        step from a label (``"agent_round"``, ``"label:<key>"``), from the name
        (``"name"``: ``step143000`` in an lm-eval revision, the job id or the model) or a
        list of numbers (``step=None``: ``agent_round``, else the lm-eval revision's step).
        Two jobs on one step, a step that is not a number, a run of one job and (``strict``)
        jobs of different frozen work (dataset, revision, runner, attempts, task digests)
        are refused naming the jobs; task lists that differ are marked, as a comparison
        marks them. Nothing in the workspace changes.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> _ = ws.load_all("sample_data/training_run")
        >>> ws.run("rl-0412").steps
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        """
        from ._run import run

        return run(
            self, name_or_jobs, step=step, strict=strict, policy=policy, threshold=threshold,
            solved_at=solved_at, resamples=resamples, seed=seed, confidence=confidence,
        )  # fmt: skip

    def baseline_report(
        self,
        jobs: Sequence[Job | str],
        *,
        name: str | None = None,
        split_by: Literal["auto", "subset"] | None = "auto",
        policy: Policy = "unknown",
        threshold: float | None = None,
        bad_below: float = 0.5,
    ) -> BaselineReport:
        """One model on several benchmarks: see :class:`envloop_nb.BaselineReport`.

        ``jobs`` are jobs or ids of one model (jobs of different models are refused,
        naming them); each is a benchmark named by its dataset (its job id when two
        share one), except a job that ran several tasks: ``split_by="auto"`` makes an
        lm-eval run whose tasks have more than one ``subset`` value one benchmark per
        lm-eval task (named by it), ``"subset"`` splits any job so, None none. ``policy`` / ``threshold`` as in ``job.summary``; a task scoring
        below ``bad_below`` is a bad case (as ``job.groups`` counts them).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> ws.baseline_report([job]).table()[["benchmark", "samples", "score"]].values.tolist()
        [['tiny-agent', '2/3', 0.6]]
        """
        from ._baseline import baseline_report

        return baseline_report(
            self, jobs, name=name, split_by=split_by, policy=policy, threshold=threshold,
            bad_below=bad_below,
        )  # fmt: skip

    def save_to_leaderboard(self, job: Job | str, **options: Any) -> Any:
        """Save a job's snapshot in the workspace leaderboard; the same job again returns it.

        See :func:`envloop_nb._comparison.save_snapshot` (key: job id + attempts fingerprint).

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> ws.save_to_leaderboard(job).new, ws.save_to_leaderboard(job).new
        (True, False)
        """
        from ._comparison import save_snapshot

        return save_snapshot(self, job, **options)

    def leaderboard(self) -> Any:
        """The saved snapshots, ranked by score within each dataset revision.

        See :func:`envloop_nb._comparison.saved_leaderboard`.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> ws = enb.open()
        >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json")
        >>> _ = ws.save_to_leaderboard(job)
        >>> ws.leaderboard()[["rank", "job", "score", "coverage"]].values.tolist()
        [[1, 'job_abc0001', 0.6, '5/6 scored, 1 missing']]
        """
        from ._comparison import saved_leaderboard

        return saved_leaderboard(self)

    def close(self) -> None:
        """Close the DuckDB connection (a persistent workspace keeps its file).

        An in-memory workspace's private spill folder is removed with it.
        """
        self.session.stop_all()
        if self._finalizer is not None:
            self._finalizer()  # closes the connection, then removes the folder
        else:
            self.con.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Default cap on DuckDB's memory (buffer manager) for a workspace; beyond it DuckDB spills
#: to its temp directory. Keeps a 10M-attempt ingest under ~1.5 GB peak RSS on a laptop.
DEFAULT_MEMORY_LIMIT = "1GB"


def open(
    path: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    memory_limit: str | None = DEFAULT_MEMORY_LIMIT,
    temp_directory: str | os.PathLike[str] | None = None,
    s3: Mapping[str, str] | None = None,
) -> Workspace:
    """Open a workspace: in memory by default, or a DuckDB file that keeps every job.

    Parameters
    ----------
    path
        A ``.duckdb`` file, created if missing. ``None`` for an in-memory workspace.
    read_only
        Open an existing file without the right to change it.
    memory_limit
        Most memory DuckDB may use for its data (DuckDB syntax: ``"1GB"``, ``"500MB"``);
        larger loads and queries spill to ``temp_directory`` instead of growing. The
        default ``"1GB"`` keeps ingesting and analysing 10 million attempts under about
        1.5 GB of process memory at a small cost in speed. ``None`` leaves DuckDB's own
        default (80% of the machine's RAM). Frames fetched into Python (``job.attempts()``
        of a huge job) are not bounded by it. What DuckDB frees goes back to the system
        in the background (its ``allocator_background_threads``), not kept for later.
    temp_directory
        Where DuckDB spills. Default: beside a workspace file (DuckDB's ``<file>.tmp``);
        for an in-memory workspace a fresh folder under the system temp directory, removed
        by :meth:`Workspace.close` (or when the workspace is garbage-collected), so
        spilling never litters the notebook's folder.
    s3
        Object storage for ``ws.load("s3://bucket/...")``: ``endpoint_url`` (an
        ``http://`` endpoint is reached over HTTP), ``access_key_id``,
        ``secret_access_key``, ``session_token``, ``region``, ``profile`` (in
        ``~/.aws/credentials`` / ``~/.aws/config``). Unset ones come from the ``AWS_*``
        environment variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
        ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_PROFILE``) and profiles. Kept in
        memory only: never written into the workspace or an export.

    Raises
    ------
    WorkspaceError
        The file cannot be a workspace here: another process has it open (DuckDB lets one
        process write a file), it is not a DuckDB database, it is a DuckDB database of
        other tables, or a newer envloop_nb wrote it (its ``meta.schema_version`` is newer
        than this code knows). The message names the file and says what to do; the file
        is left unchanged. (A :class:`LoadError`, what a newer file raised before.)

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> ws
    <envloop_nb.Workspace :memory: · 0 jobs>
    >>> ws.sql("SELECT current_setting('memory_limit')").fetchone()[0]
    '953.6 MiB'
    >>> ws.sql("SELECT current_setting('allocator_background_threads')").fetchone()[0]
    True
    >>> ws.close()
    >>> ws = enb.open(memory_limit="2GB")
    >>> ws.sql("SELECT current_setting('memory_limit')").fetchone()[0]
    '1.8 GiB'
    >>> ws.close()
    """
    s3_settings = None
    if s3 is not None:
        from ._loaders.tables.object_store import s3_options

        s3_settings = s3_options(s3)  # an unknown key is refused before anything opens
    # DuckDB's allocator keeps what a query freed until it is purged; its background
    # threads purge it, so the frames fetched after a big load or pass do not stack on
    # memory DuckDB no longer uses (100M attempts: the RSS after an in-place load
    # 1.13 GB -> 0.78 GB, the load + answers' peak 2.10 -> 1.68 GB; benchmarks/FINDINGS.md)
    config: dict[str, Any] = {"allocator_background_threads": True}
    if memory_limit is not None:
        config["memory_limit"] = str(memory_limit)
    scratch: str | None = None
    if temp_directory is not None:
        config["temp_directory"] = str(temp_directory)
    elif path is None:
        scratch = tempfile.mkdtemp(prefix="envloop_nb-")
        config["temp_directory"] = scratch
    try:
        if path is None:
            con = duckdb.connect(config=config)
        else:
            p = Path(path)
            p.parent.mkdir(parents=True, exist_ok=True)
            con = connect(p, read_only=read_only, config=config)
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        ws = Workspace(
            con, None if path is None else str(Path(path)), read_only=read_only, s3=s3_settings
        )
    except BaseException:  # e.g. a file written by a newer envloop_nb: leave it as it is
        con.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    if scratch is not None:
        ws._finalizer = weakref.finalize(ws, _close_and_remove, con, scratch)
    return ws


def _is_experiment(source: str | os.PathLike[str]) -> bool:
    """True when ``source`` is an experiment export file (by its first bytes)."""
    path = Path(source)
    if not path.is_file():
        return False
    try:
        from ._loaders import detect_format

        return detect_format(path) == "experiment"
    except LoadError:
        return False


def _close_and_remove(con: duckdb.DuckDBPyConnection, folder: str) -> None:
    """Close ``con`` and remove its private spill folder (idempotent)."""
    con.close()
    shutil.rmtree(folder, ignore_errors=True)
