"""The handle of one experiment in a workspace: traces judged by evaluators."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ._errors import EnvloopError
from ._experiments import create, edits, references, stats
from ._experiments.listen import Tail, eligible
from ._experiments.runner import EvalCase, Evaluator, run_rows
from ._options import options
from ._store.frames import to_frame
from ._store.transaction import transaction
from ._types import FrameKind

if TYPE_CHECKING:
    import duckdb

    from ._datasets.dataset import Dataset
    from ._experiments.session import Session
    from ._export.experiment_xlsx import ExperimentExport
    from ._export.html_report import HtmlReport
    from ._present.transcript_html import Transcript
    from ._ui.experiment_panel import ExperimentPanel

__all__ = ["Experiment"]


class ExperimentHost(Protocol):
    """What an experiment needs of its workspace: the connection and the session state."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection: ...

    @property
    def session(self) -> Session: ...


class Experiment:
    """One experiment in a workspace: cases (traces) × evaluators = result rows.

    Get one with ``ws.load(export)``, ``ws.experiment(id)`` or ``ws.new_experiment(...)``.
    Cheap to create: it holds only the workspace and the id; corrections and runs live in
    the workspace (they survive reopening a workspace file).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> exp = enb.open().load("../shared/formats/examples/experiment-two-evaluators.json")
    >>> print(exp.summary())
    composite 76.3 · 4/6 rows counted · 1 pending
    >>> exp.evaluators()[["evaluator", "mean", "counted", "total"]].values.tolist()
    [['answer_accuracy', 82.5, 2, 3], ['answer_quality', 70.0, 2, 3]]
    """

    def __init__(self, workspace: ExperimentHost, experiment_id: str) -> None:
        self.workspace = workspace
        self.id = experiment_id

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The workspace's DuckDB connection."""
        return self.workspace.con

    @property
    def info(self) -> dict[str, Any]:
        """The experiment's row (``name``, ``agent``, ``status``, ``listen``, source …)."""
        cur = self.con.execute("SELECT * FROM experiments WHERE experiment_id = ?", [self.id])
        names = [d[0] for d in cur.description or ()]
        row = cur.fetchone()
        if row is None:
            raise EnvloopError(f"experiment {self.id!r} is no longer in the workspace")
        info = dict(zip(names, row, strict=True))
        for key in ("listen", "extra"):
            if isinstance(info.get(key), str):
                info[key] = json.loads(info[key])
        return info

    def __repr__(self) -> str:
        s = self.summary()
        return f"<envloop_nb.Experiment {self.id} · {s.name} · {s.cases} cases × {len(s.evaluators)} evaluators>"

    # -- numbers ---------------------------------------------------------------
    def progress(self) -> dict[str, int]:
        """Result rows (case × evaluator): ``completed``, ``failed``, ``pending``,
        ``missing`` (never judged by the source) and ``total``."""
        return stats.progress(self.con, self.id)

    def summary(self) -> stats.ExperimentSummary:
        """Composite mean with ``counted/total`` rows (see :mod:`envloop_nb._experiments.stats`)."""
        return stats.experiment_summary(self.con, self.id)

    def evaluators(self, frame: FrameKind = "pandas") -> Any:
        """One row per evaluator: ``mean`` of its counted rows, ``counted``, ``total``,
        ``succeeded_without_score``, ``failed``, ``pending``, ``missing``, ``needs_reference``."""
        return to_frame(stats.evaluator_table(self.con, self.id), frame)

    def cases(self, frame: FrameKind = "pandas") -> Any:
        """One row per case: ``composite`` (NaN when nothing counted), ``counted``,
        ``total``, each evaluator's effective score and ``<evaluator> status``, input …"""
        return to_frame(stats.case_table(self.con, self.id), frame)

    def results(self, frame: FrameKind = "pandas") -> Any:
        """One row per current (case, evaluator): ``run``, ``status``, ``machine_score``,
        ``corrected_score``, ``score`` (effective), ``counted``, ``reason``, ``error`` …"""
        return to_frame(stats.result_table(self.con, self.id), frame)

    def steps(self, case: str | None = None, *, frame: FrameKind = "pandas") -> Any:
        """What the agent did in a case (or in every case): one row per step, in order,
        with the columns of ``job.steps()`` (``task`` is the case's trace id, ``attempt``
        0). An MLflow experiment's traces give them (``ws.load_mlflow``: LLM, TOOL and
        AGENT spans); a source without steps gives no rows."""
        from ._store.steps import steps_relation

        return to_frame(steps_relation(self.con, self.id, task=case, table="exp_steps"), frame)

    def transcript(self, case: str, *, page_size: int = 200) -> Transcript:
        """A case's steps as a transcript people can read (as ``job.transcript``: tool
        calls as cards with their results, errors in red, search, timeline, "jump to
        first error"); a case without steps says so. ``KeyError`` for a case the
        experiment lacks."""
        from ._ui.steps_view import case_transcript_of

        return case_transcript_of(self.con, self.id, case, page_size=page_size)

    def corrections(self, frame: FrameKind = "pandas") -> Any:
        """Every correction ever made, in order, with ``state`` (``live``, ``undone``,
        ``cleared`` by a re-evaluation, ``replaced``), who and when."""
        return to_frame(stats.correction_history(self.con, self.id), frame)

    # -- corrections -----------------------------------------------------------
    def correct(
        self,
        trace_id: str,
        evaluator: str,
        score: float,
        reason: str,
        *,
        by: str | None = None,
        run: int | None = None,
    ) -> None:
        """Correct a succeeded row's score (on the evaluator's scale, 0-100 by default)
        with a required reason; the machine score is kept. ``by`` defaults to
        ``enb.options.reviewer``, else the OS user. ``run`` (optional) names the run you
        read: a run superseded by a re-evaluation is refused.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> exp = enb.open().load("../shared/formats/examples/experiment-two-evaluators.json")
        >>> exp.correct("tr_001", "answer_accuracy", 100, "exact match", by="li.wei")
        >>> exp.evaluators().set_index("evaluator").loc["answer_accuracy", "mean"]
        np.float64(85.0)
        >>> exp.correct("tr_002", "answer_accuracy", 50, "x", run=1)
        Traceback (most recent call last):
        ...
        envloop_nb._errors.EnvloopError: ('tr_002', 'answer_accuracy') run 1 is superseded by run 2: only the current run can be corrected
        """
        edits.correct(self.con, self.id, trace_id, evaluator, score, reason, by, run)

    def undo_correction(self, trace_id: str, evaluator: str, *, by: str | None = None) -> None:
        """Undo the live correction of a row: the machine score counts again."""
        edits.undo_correction(self.con, self.id, trace_id, evaluator, by)

    # -- evaluating in the notebook ---------------------------------------------
    def use(self, *evaluators: Evaluator) -> Experiment:
        """Bind notebook functions to evaluator names this experiment has (to run or
        re-evaluate them here; bindings last for this Python session)."""
        known = set(stats.evaluator_names(self.con, self.id))
        for ev in evaluators:
            if ev.name not in known:
                raise EnvloopError(
                    f"{self.id!r} has no evaluator {ev.name!r} (evaluators: {sorted(known)}); "
                    "add a new one with exp.add_evaluator"
                )
            self.workspace.session.bound(self.id)[ev.name] = ev
        return self

    def add_evaluator(
        self, evaluator: Evaluator, *, run: bool = True, concurrency: int = 8
    ) -> None:
        """Add a notebook evaluator: a row per case, evaluated now unless ``run=False``.
        A reference-based one is refused while any case lacks a reference."""
        create.add_evaluators(self.con, self.id, [evaluator])
        self.workspace.session.bound(self.id)[evaluator.name] = evaluator
        if run:
            self.run(concurrency=concurrency)

    def _cases_by_id(
        self, con: duckdb.DuckDBPyConnection, traces: Sequence[str]
    ) -> dict[str, EvalCase]:
        cur = con.execute(
            """SELECT trace_id, input, input_is_chat, output, reference, tags FROM exp_cases
               WHERE experiment_id = ? AND list_contains(?, trace_id)""",
            [self.id, list(traces)],
        )
        names = [d[0] for d in cur.description or ()]
        out = {}
        for row in cur.fetchall():
            d = edits.case_dict(dict(zip(names, row, strict=True)))
            out[d["trace_id"]] = EvalCase(
                d["trace_id"], d["input"], d["output"], d["reference"], d["tags"]
            )
        return out

    def _run_pending(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        concurrency: int,
        timeout: float | None,
        progress: bool,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> dict[str, int]:
        bound = dict(self.workspace.session.bound(self.id))
        runnable = [r for r in rows if r["evaluator"] in bound]
        c = con or self.con
        cases = self._cases_by_id(c, sorted({r["trace_id"] for r in runnable}))
        work = [(r["result_id"], bound[r["evaluator"]], cases[r["trace_id"]]) for r in runnable]
        from ._ui.progress import progress_reporter

        report = progress_reporter(len(work), "rows", show=progress)
        return run_rows(
            c,
            self.id,
            work,
            concurrency=concurrency,
            timeout=options.evaluator_timeout if timeout is None else timeout,
            on_done=report,
        )

    def run(
        self, *, concurrency: int = 8, timeout: float | None = None, progress: bool = True
    ) -> dict[str, int]:
        """Evaluate the pending rows whose evaluator has a notebook function; returns
        ``{"succeeded": n, "failed": m}``. An exception or a timeout makes a failed row
        with its message, never a 0."""
        rows = self.con.execute(
            """SELECT result_id, trace_id, evaluator FROM exp_results r
               WHERE experiment_id = $e AND status = 'pending'
                 AND run = (SELECT max(run) FROM exp_results m WHERE m.experiment_id = $e
                            AND m.trace_id = r.trace_id AND m.evaluator = r.evaluator)""",
            {"e": self.id},
        ).fetchall()
        pending = [{"result_id": a, "trace_id": b, "evaluator": c} for a, b, c in rows]
        return self._run_pending(
            pending, concurrency=concurrency, timeout=timeout, progress=progress
        )

    def reevaluate(
        self,
        *,
        failed: bool = False,
        evaluator: str | Sequence[str] | None = None,
        trace_id: str | Sequence[str] | None = None,
        concurrency: int = 8,
        timeout: float | None = None,
        progress: bool = True,
    ) -> dict[str, int]:
        """Evaluate chosen pairs again as a new run (which clears their corrections):
        ``failed=True`` takes the failed rows, ``evaluator=`` / ``trace_id=`` narrow the
        choice (all three may combine). Each chosen evaluator needs a notebook function
        (``exp.use``)."""
        if not failed and evaluator is None and trace_id is None:
            raise ValueError(
                "choose what to re-evaluate: failed=True, evaluator=... and/or trace_id=..."
            )
        evs = [evaluator] if isinstance(evaluator, str) else evaluator
        traces = [trace_id] if isinstance(trace_id, str) else trace_id
        res = stats.result_table(self.con, self.id).fetchall()
        known_ev = set(stats.evaluator_names(self.con, self.id))
        for name in evs or ():
            if name not in known_ev:
                raise EnvloopError(
                    f"{self.id!r} has no evaluator {name!r}; evaluators: {sorted(known_ev)}"
                )
        known_tr = {r[0] for r in res}
        for t in traces or ():
            if t not in known_tr:
                raise EnvloopError(f"{self.id!r} has no case {t!r}")
        chosen = [
            (r[0], r[1])
            for r in res
            if (not failed or r[3] == "failed")
            and (evs is None or r[1] in evs)
            and (traces is None or r[0] in traces)
        ]
        bound = self.workspace.session.bound(self.id)
        unbound = sorted({e for _, e in chosen} - set(bound))
        if unbound:
            raise EnvloopError(
                f"no notebook function for {unbound}: bind one with "
                f"exp.use(enb.Evaluator({unbound[0]!r}, fn)) to re-evaluate here"
            )
        rows = edits.new_runs(self.con, self.id, chosen)
        return self._run_pending(rows, concurrency=concurrency, timeout=timeout, progress=progress)

    def add_cases(
        self,
        traces: Sequence[Mapping[str, Any]] | Any,
        *,
        run: bool = True,
        concurrency: int = 8,
        progress: bool = True,
    ) -> list[str]:
        """Append traces (dicts with the export's case fields, or a frame of them) as
        cases and evaluate them with the experiment's notebook evaluators; a case without
        a reference gets an uncounted row from a reference-based evaluator.

        Examples
        --------
        >>> import envloop_nb as enb
        >>> exp = enb.open().new_experiment("demo", evaluators=[enb.Evaluator("len", lambda c: len(c.output))],
        ...                                 cases=[])
        >>> exp.add_cases([{"trace_id": "t1", "input": "hi", "output": "hello"}], progress=False)
        ['t1']
        >>> exp.results()[["trace_id", "score"]].values.tolist()
        [['t1', 5.0]]
        """
        if hasattr(traces, "to_dict"):  # a pandas frame
            traces = traces.to_dict("records")
        elif hasattr(traces, "to_dicts"):  # a polars frame
            traces = traces.to_dicts()
        return self._add_cases(
            list(traces),
            run=run,
            concurrency=concurrency,
            progress=progress,
            added_by="append",
            con=self.con,
        )

    def _add_cases(
        self,
        traces: list[Mapping[str, Any]],
        *,
        run: bool,
        concurrency: int,
        progress: bool,
        added_by: str,
        con: duckdb.DuckDBPyConnection,
    ) -> list[str]:
        ids = edits.add_cases(con, self.id, traces, added_by=added_by)
        with transaction(con):
            rows = create.pending_rows(con, self.id, ids, stats.evaluator_names(con, self.id))
        if run:
            self._run_pending(
                rows, concurrency=concurrency, timeout=None, progress=progress, con=con
            )
        return ids

    # -- listen mode -------------------------------------------------------------
    def listen(
        self,
        feed: str | Path,
        *,
        since: dt.datetime | None = None,
        interval: float = 0.5,
        concurrency: int = 8,
    ) -> None:
        """Tail a trace feed (a growing JSONL file of traces) in the background: every
        new main trace of the agent that succeeded and started at or after ``since``
        (default: now) is added as a case and evaluated. See
        :mod:`envloop_nb._experiments.listen`."""
        session = self.workspace.session
        if self.id in session.listeners and session.listeners[self.id].running:
            raise EnvloopError(f"{self.id!r} is already listening; exp.stop_listening() first")
        needs = [e for e in self.evaluators().itertuples() if e.needs_reference]
        if needs:
            raise EnvloopError(
                f"listen mode cannot use reference-based evaluators ({', '.join(e.evaluator for e in needs)}): "
                "new traces have no reference answer"
            )
        start = since or dt.datetime.now(dt.UTC)
        if start.tzinfo is None:
            start = start.replace(tzinfo=dt.UTC)
        agent = self.info.get("agent")
        cur = self.con.cursor()
        added: list[str] = []

        def on_lines(lines: list[tuple[int, Any]]) -> None:
            now = dt.datetime.now(dt.UTC)
            have = {
                r[0] for r in cur.execute(
                    "SELECT trace_id FROM exp_cases WHERE experiment_id = ?", [self.id]
                ).fetchall()
            }  # fmt: skip
            new: dict[str, Any] = {}
            for _, t in lines:
                tid = t.get("trace_id")
                if (
                    isinstance(tid, str)
                    and tid not in have
                    and eligible(t, agent=agent, since=start, seen_at=now)
                ):
                    keep = {
                        k: v
                        for k, v in t.items()
                        if k not in ("reference", "reference_source", "added_by")
                    }
                    new[tid] = keep
            if new:
                ids = self._add_cases(
                    list(new.values()), run=True, added_by="listen", progress=False,
                    concurrency=concurrency, con=cur,
                )  # fmt: skip
                added.extend(ids)

        feed_path = Path(feed)
        tail = Tail(feed_path, on_lines, interval=interval, name=f"envloop-listen-{self.id}")
        self._set_listen(True, start, None)
        session.listeners[self.id] = tail
        session.listen_info[self.id] = {"feed": str(feed_path), "since": start, "added": added}
        tail.start()

    @property
    def listening(self) -> bool:
        """True while a listener of this experiment runs in this session."""
        tail = self.workspace.session.listeners.get(self.id)
        return tail is not None and tail.running

    def listen_status(self) -> dict[str, Any]:
        """The listener's feed, start, cases added so far, polls, restarts (times the feed
        was truncated or rotated and read again from its start) and error (if it stopped
        on one)."""
        session = self.workspace.session
        tail = session.listeners.get(self.id)
        info = dict(session.listen_info.get(self.id, {}))
        info["listening"] = self.listening
        info["added"] = list(info.get("added", []))
        info["polls"] = tail.polls if tail else 0
        info["restarts"] = tail.restarts if tail else 0  # the feed truncated or rotated
        info["error"] = None if tail is None or tail.error is None else str(tail.error)
        return info

    def stop_listening(self) -> None:
        """Stop adding traces; evaluations already started finish, results are kept.
        Re-raises the error that stopped the listener, if one did (after stopping)."""
        tail = self.workspace.session.listeners.pop(self.id, None)
        if tail is None:
            raise EnvloopError(f"{self.id!r} is not listening")
        tail.stop()
        info = self.workspace.session.listen_info.get(self.id, {})
        self._set_listen(False, info.get("since"), dt.datetime.now(dt.UTC))
        if tail.error is not None:
            raise tail.error

    def _set_listen(
        self, enabled: bool, since: dt.datetime | None, stopped: dt.datetime | None
    ) -> None:
        self.con.execute(
            "UPDATE experiments SET listen = ? WHERE experiment_id = ?",
            [create.listen_json(enabled, since, stopped), self.id],
        )

    # -- references and datasets ---------------------------------------------------
    def fill_references(self, dataset: Any) -> references.ReferenceFillResult:
        """Fill missing references from a registered dataset (``Dataset`` or
        ``"name@version"``): stripped-exact input match, first valid reference wins,
        existing references kept."""
        from ._datasets.heldout import dataset_key

        name, version = dataset_key(self.workspace, dataset)
        return references.fill_case_references(self.con, self.id, name, version)

    def save_references(
        self, folder: str | Path, *, name: str, version: str, overwrite: bool = False
    ) -> Dataset:
        """Save the annotated cases that have an input as a dataset (with provenance)."""
        return references.save_references(
            self.workspace, self.id, folder, name=name, version=version, overwrite=overwrite
        )

    def export_dataset(
        self,
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
        """Cases with an input — all, the chosen ``traces``, and/or those whose composite
        is ``below`` a score (the hard cases) — as a new dataset for retraining or
        evaluation: input, reference, output, composite with ``counted/total``, and the
        experiment as provenance (see :meth:`save_references` for annotated cases only)."""
        return references.export_cases(
            self.workspace, self.id, folder, name=name, version=version, traces=traces,
            below=below, format=format, purpose=purpose, overwrite=overwrite,
        )  # fmt: skip

    # -- presentation -----------------------------------------------------------------
    def panel(self) -> ExperimentPanel:
        """The interactive panel: progress, cards, case list, detail, corrections."""
        from ._ui.experiment_panel import ExperimentPanel

        panel = ExperimentPanel(self)
        self.workspace.session.on_close(panel.stop_polling)  # ws.close() stops its poll
        return panel

    def export_xlsx(self, path: str | Path) -> ExperimentExport:
        """A workbook with Summary, Cases, Results and Corrections sheets."""
        from ._export.experiment_xlsx import export_experiment_xlsx

        return export_experiment_xlsx(self, Path(path))

    def export_html(self, path: str | Path, *, cases: int = 500) -> HtmlReport:
        """Write a standalone HTML report: progress, composite and evaluator cards with
        ``counted/total``, the case list (the first ``cases``) and the correction history."""
        from ._export.html_report import export_experiment_html

        return export_experiment_html(self, path, cases=cases)

    def _repr_html_(self) -> str:
        from ._present.experiment_html import summary_card_html

        rows = stats.evaluator_table(self.con, self.id)
        evaluators = [dict(zip(rows.columns, r, strict=True)) for r in rows.fetchall()]
        return summary_card_html(self.summary().to_dict(), evaluators)
