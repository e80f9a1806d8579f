"""An experiment's numbers, as the platform defines them, computed in DuckDB.

* A *result row* is one (case × evaluator); of its runs only the highest counts (the
  *current* row). A pair with no row at all (a source that never judged it) is
  ``missing``: it counts in ``total`` and is never a 0.
* **Progress** counts current rows: ``completed`` (succeeded), ``failed``, ``pending``
  (pending + running), ``missing``.
* The *effective* score of a succeeded row is its live correction's score where one
  exists (a correction applies only to the run it names: a re-evaluation clears it),
  else its machine score. A row is **counted** when it succeeded with an effective
  number. Failed, pending, missing and succeeded-without-number rows are never counted
  as 0.
* **Per-evaluator mean** = mean of its counted rows, shown with ``counted/total``;
  **composite** = mean over the counted rows of all evaluators; a case's composite =
  mean of its counted rows. Sums run in a fixed order (case position, evaluator
  position) with ``fsum``, so every run and CPU gives the same bits.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import duckdb

from .._metrics.counts import scored_mean
from .._present.display import format_score

__all__ = [
    "ExperimentSummary",
    "case_table",
    "correction_history",
    "current_sql",
    "evaluator_names",
    "evaluator_table",
    "experiment_list_sql",
    "experiment_summary",
    "progress",
    "result_table",
]


def current_sql() -> str:
    """Every (case, evaluator) pair of experiment ``$e`` with its current row, live
    correction, effective score and whether it is counted (parameter ``$e``)."""
    return """
    WITH cur AS (
        SELECT * FROM exp_results WHERE experiment_id = $e
        QUALIFY row_number() OVER (PARTITION BY trace_id, evaluator ORDER BY run DESC) = 1
    ), live AS (
        SELECT result_id, run, score AS corrected_score, seq FROM exp_corrections
        WHERE experiment_id = $e AND undone_at IS NULL AND undone_by IS NULL
        QUALIFY row_number() OVER (PARTITION BY result_id, run ORDER BY seq DESC) = 1
    ), pairs AS (
        SELECT c.trace_id, c.position AS case_position, ev.name AS evaluator,
               ev.position AS evaluator_position, cur.result_id, cur.run,
               coalesce(cur.status, 'missing') AS status, cur.score AS machine_score,
               CASE WHEN cur.status = 'succeeded' THEN live.corrected_score END
                   AS corrected_score,
               cur.reason, cur.points, cur.error, cur.evaluated_at, cur.origin
        FROM exp_cases c
        JOIN exp_evaluators ev ON ev.experiment_id = c.experiment_id
        LEFT JOIN cur ON cur.trace_id = c.trace_id AND cur.evaluator = ev.name
        LEFT JOIN live ON live.result_id = cur.result_id AND live.run = cur.run
        WHERE c.experiment_id = $e
    )
    SELECT *,
           CASE WHEN status = 'succeeded' THEN coalesce(corrected_score, machine_score) END
               AS score,
           (status = 'succeeded' AND coalesce(corrected_score, machine_score) IS NOT NULL)
               AS counted
    FROM pairs
    """


_ORDER = "case_position, evaluator_position"


def evaluator_names(con: duckdb.DuckDBPyConnection, experiment_id: str) -> list[str]:
    """The experiment's evaluators, in their order."""
    rows = con.execute(
        "SELECT name FROM exp_evaluators WHERE experiment_id = ? ORDER BY position",
        [experiment_id],
    ).fetchall()
    return [str(r[0]) for r in rows]


def progress(con: duckdb.DuckDBPyConnection, experiment_id: str) -> dict[str, int]:
    """``completed`` / ``failed`` / ``pending`` / ``missing`` / ``total`` result rows.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> exp = enb.open().load("../shared/formats/examples/experiment-two-evaluators.json")
    >>> progress(exp.con, exp.id)
    {'completed': 5, 'failed': 0, 'pending': 1, 'missing': 0, 'total': 6}
    """
    row = con.execute(
        f"""SELECT count_if(status = 'succeeded'), count_if(status = 'failed'),
                   count_if(status IN ('pending', 'running')), count_if(status = 'missing'),
                   count(*)
            FROM ({current_sql()})""",
        {"e": experiment_id},
    ).fetchone()
    assert row is not None
    keys = ("completed", "failed", "pending", "missing", "total")
    return {k: int(v) for k, v in zip(keys, row, strict=True)}


@dataclass(frozen=True)
class ExperimentSummary:
    """An experiment's headline: composite mean with how many rows it counts.

    ``composite`` is ``None`` when no row is counted (shown ``-``, never 0).
    """

    experiment_id: str
    name: str | None
    agent: str | None
    composite: float | None
    counted: int
    total: int
    completed: int
    failed: int
    pending: int
    missing: int
    cases: int
    evaluators: tuple[str, ...]
    live_corrections: int
    scale_max: float = 100.0
    mixed_scales: bool = False

    @property
    def digits(self) -> int:
        """Decimals shown: 1 on a 0-100 scale, 3 on a 0-1 scale (Inspect's)."""
        return 1 if self.scale_max > 1 else 3

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["evaluators"] = list(self.evaluators)
        return out

    def __str__(self) -> str:
        parts = [
            f"composite {format_score(self.composite, self.digits)}",
            f"{self.counted:,}/{self.total:,} rows counted",
        ]
        for label, n in (
            ("failed", self.failed),
            ("pending", self.pending),
            ("missing", self.missing),
        ):
            if n:
                parts.append(f"{n:,} {label}")
        if self.mixed_scales:
            parts.append("evaluators on different scales: read them one by one")
        return " · ".join(parts)

    def _repr_html_(self) -> str:
        from .._present.experiment_html import summary_card_html

        return summary_card_html(self.to_dict())


def experiment_summary(con: duckdb.DuckDBPyConnection, experiment_id: str) -> ExperimentSummary:
    """The summary of one experiment (see the module docstring).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> exp = enb.open().load("../shared/formats/examples/experiment-two-evaluators.json")
    >>> print(experiment_summary(exp.con, exp.id))
    composite 76.3 · 4/6 rows counted · 1 pending
    """
    p = {"e": experiment_id}
    row = con.execute(
        f"""SELECT {scored_mean("CASE WHEN counted THEN score END", _ORDER)},
                   coalesce(count_if(counted), 0), count(*),
                   coalesce(count_if(status = 'succeeded'), 0),
                   coalesce(count_if(status = 'failed'), 0),
                   coalesce(count_if(status IN ('pending', 'running')), 0),
                   coalesce(count_if(status = 'missing'), 0),
                   count(DISTINCT trace_id), count(corrected_score)
            FROM ({current_sql()})""",
        p,
    ).fetchone()
    info = con.execute("SELECT name, agent FROM experiments WHERE experiment_id = $e", p).fetchone()
    n_cases = con.execute(
        "SELECT count(*), (SELECT max(scale_max) FROM exp_evaluators WHERE experiment_id = $e),"
        " (SELECT count(DISTINCT (scale_min, scale_max)) > 1 FROM exp_evaluators"
        "  WHERE experiment_id = $e)"
        " FROM exp_cases WHERE experiment_id = $e",
        p,
    ).fetchone()
    assert row is not None and n_cases is not None
    name, agent = info if info is not None else (None, None)
    return ExperimentSummary(
        experiment_id=experiment_id,
        name=name,
        agent=agent,
        composite=None if row[0] is None else float(row[0]),
        counted=int(row[1]),
        total=int(row[2]),
        completed=int(row[3]),
        failed=int(row[4]),
        pending=int(row[5]),
        missing=int(row[6]),
        cases=int(n_cases[0]),
        evaluators=tuple(evaluator_names(con, experiment_id)),
        live_corrections=int(row[8]),
        scale_max=100.0 if n_cases[1] is None else float(n_cases[1]),
        mixed_scales=bool(n_cases[2]),
    )


def evaluator_table(con: duckdb.DuckDBPyConnection, experiment_id: str) -> duckdb.DuckDBPyRelation:
    """One row per evaluator: ``evaluator``, ``mean``, ``counted``, ``total``,
    ``succeeded_without_score``, ``failed``, ``pending``, ``missing``, ``needs_reference``,
    ``kind``, ``corrected`` (rows under a live correction)."""
    return con.sql(
        f"""SELECT p.evaluator,
                   {scored_mean("CASE WHEN counted THEN score END", _ORDER)} AS mean,
                   count_if(counted)::BIGINT AS counted, count(*) AS total,
                   count_if(status = 'succeeded' AND score IS NULL)::BIGINT AS succeeded_without_score,
                   count_if(status = 'failed')::BIGINT AS failed,
                   count_if(status IN ('pending', 'running'))::BIGINT AS pending,
                   count_if(status = 'missing')::BIGINT AS missing,
                   any_value(ev.needs_reference) AS needs_reference,
                   any_value(ev.kind) AS kind,
                   any_value(ev.scale_max) AS scale_max,
                   count(corrected_score) AS corrected
            FROM ({current_sql()}) p
            JOIN exp_evaluators ev ON ev.experiment_id = $e AND ev.name = p.evaluator
            GROUP BY p.evaluator, p.evaluator_position
            ORDER BY p.evaluator_position""",
        params={"e": experiment_id},
    )


def result_table(con: duckdb.DuckDBPyConnection, experiment_id: str) -> duckdb.DuckDBPyRelation:
    """One row per current (case, evaluator): ``trace_id``, ``evaluator``, ``run``,
    ``status``, ``machine_score``, ``corrected_score``, ``score`` (the effective one),
    ``counted``, ``reason``, ``error``, ``points``, ``evaluated_at``, ``result_id``."""
    return con.sql(
        f"""SELECT trace_id, evaluator, run, status, machine_score, corrected_score, score,
                   counted, reason, error, points, evaluated_at, result_id
            FROM ({current_sql()}) ORDER BY {_ORDER}""",
        params={"e": experiment_id},
    )


def case_table(con: duckdb.DuckDBPyConnection, experiment_id: str) -> duckdb.DuckDBPyRelation:
    """One row per case: ``trace_id``, ``composite`` (NULL when nothing counted),
    ``counted``, ``total``, then for each evaluator ``<name>`` (its effective score),
    ``<name> status`` and ``<name> corrected`` (a live correction is in force), then ``input``, ``output``, ``reference``, ``added_by``, ``tags``.
    Every case is a row, also one no evaluator has a row for (an experiment of MLflow traces
    not judged yet: ``counted`` and ``total`` 0)."""
    from .._store.sql import ident

    names = evaluator_names(con, experiment_id)
    params: dict[str, Any] = {"e": experiment_id}
    cols = []
    for i, name in enumerate(names):
        params[f"ev{i}"] = name
        cols.append(f"any_value(score) FILTER (WHERE evaluator = $ev{i}) AS {ident(name)}")
        cols.append(
            f"any_value(status) FILTER (WHERE evaluator = $ev{i}) AS {ident(name + ' status')}"
        )
        cols.append(
            f"coalesce(bool_or(corrected_score IS NOT NULL) FILTER (WHERE evaluator = $ev{i}), false)"
            f" AS {ident(name + ' corrected')}"
        )
    per_eval = "".join(f", {c}" for c in cols)
    return con.sql(
        f"""WITH p AS ({current_sql()}),
                 agg AS (
                    SELECT trace_id, any_value(case_position) AS case_position,
                           {scored_mean("CASE WHEN counted THEN score END", "evaluator_position")}
                               AS composite,
                           count_if(counted)::BIGINT AS counted, count(*) AS total{per_eval}
                    FROM p GROUP BY trace_id)
            SELECT c.trace_id, agg.composite, coalesce(agg.counted, 0) AS counted,
                   coalesce(agg.total, 0) AS total,
                   agg.* EXCLUDE (trace_id, case_position, composite, counted, total),
                   c.input, c.input_is_chat, c.output,
                   c.reference, c.reference_source, c.added_by, c.status AS trace_status,
                   c.tags
            FROM exp_cases c LEFT JOIN agg ON agg.trace_id = c.trace_id
            WHERE c.experiment_id = $e
            ORDER BY c.position""",
        params=params,
    )


def correction_history(
    con: duckdb.DuckDBPyConnection, experiment_id: str
) -> duckdb.DuckDBPyRelation:
    """Every correction ever made, in order, with its ``state``: ``live``, ``undone``,
    ``cleared`` (a later run of the pair — a re-evaluation — cleared it; ``cleared_at``
    is that run's evaluation time) or ``replaced`` (a later live correction of the same
    run won); with the machine score of the run it corrected."""
    return con.sql(
        """WITH latest AS (
               SELECT trace_id, evaluator, max(run) AS run FROM exp_results
               WHERE experiment_id = $e GROUP BY ALL
           ), winner AS (
               SELECT result_id, run, max(seq) AS seq FROM exp_corrections
               WHERE experiment_id = $e AND undone_at IS NULL AND undone_by IS NULL
               GROUP BY ALL
           )
           SELECT k.seq, k.trace_id, k.evaluator, k.run, r.score AS machine_score,
                  k.score, k.reason, k."by", k."at",
                  CASE WHEN k.undone_at IS NOT NULL OR k.undone_by IS NOT NULL THEN 'undone'
                       WHEN l.run > k.run THEN 'cleared'
                       WHEN w.seq IS DISTINCT FROM k.seq THEN 'replaced'
                       ELSE 'live' END AS state,
                  k.undone_by, k.undone_at,
                  CASE WHEN k.undone_at IS NULL AND k.undone_by IS NULL AND l.run > k.run
                       THEN (SELECT min(evaluated_at) FROM exp_results n
                             WHERE n.experiment_id = $e AND n.trace_id = k.trace_id
                               AND n.evaluator = k.evaluator AND n.run > k.run) END
                      AS cleared_at,
                  k.origin, k.result_id
           FROM exp_corrections k
           LEFT JOIN exp_results r ON r.experiment_id = $e AND r.result_id = k.result_id
           LEFT JOIN latest l ON l.trace_id = k.trace_id AND l.evaluator = k.evaluator
           LEFT JOIN winner w ON w.result_id = k.result_id AND w.run = k.run
           WHERE k.experiment_id = $e
           ORDER BY k.seq""",
        params={"e": experiment_id},
    )


def experiment_list_sql() -> str:
    """One row per experiment of the workspace (``ws.experiments()``)."""
    return """
    SELECT e.experiment_id, e.name, e.agent, e.status, e.source_format,
           (SELECT count(*) FROM exp_cases c WHERE c.experiment_id = e.experiment_id) AS cases,
           (SELECT count(*) FROM exp_evaluators v WHERE v.experiment_id = e.experiment_id)
               AS evaluators,
           e.created_at, e.loaded_at, e.source_path
    FROM experiments e ORDER BY e.loaded_at, e.experiment_id
    """
