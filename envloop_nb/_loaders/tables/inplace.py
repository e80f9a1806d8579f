"""A Parquet table of attempts read in place (``ws.load(path, copy=False)``).

Nothing is copied: the job's attempts are the SELECT over its files (the same typed
view a copying load inserts from), recorded in ``attempt_sources`` and joined into the
``attempts`` view (:mod:`envloop_nb._store.attempt_sources`). What the workspace does
keep is small: the job, its tasks and tags, the score dimensions, and the per-task counts
(``task_counts_cache``), all made in **one** pass over the files that also runs every
check a copying load runs (unusable rows, attempt numbers out of range or repeated).
The exact reward sums come from that pass when it summed at the job's scales, are the
passes when every reward is 0 or 1, and take a second pass otherwise.

A copying load of a counted source (Parquet, a frame) makes its tasks and per-task counts
by the same pass, then inserts the rows: one read of the source more, instead of
counting the copied rows again.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb

from ..._store.attempt_sources import register
from ..._store.sql import literal, number
from ..._store.task_counts import (
    COUNT_NAMES,
    NULLABLE,
    count_columns_sql,
    pass_sql,
    reward_sums_sql,
    scales,
)
from ..common.stage import keep_counts, keep_counts_table
from .columns import Source

__all__ = [
    "ATTEMPT_COLUMNS",
    "InPlacePass",
    "attempts_select",
    "count_in_place",
    "register_in_place",
    "telling_the_pass",
]

#: Per connection, an event set when a load's pass starts there (:func:`telling_the_pass`).
_PASS_STARTS: weakref.WeakKeyDictionary[Any, threading.Event] = weakref.WeakKeyDictionary()


@contextmanager
def telling_the_pass(con: duckdb.DuckDBPyConnection, started: threading.Event) -> Iterator[None]:
    """``started`` is set when a load on ``con`` inside the block starts its checking
    pass (:func:`count_in_place`), and at the end of the block whatever happened.

    Up to its pass a load read in place binds no parameter (DuckDB imports pandas at the
    first one): the regression gate waits for both loads' passes, then imports pandas
    on its own thread while they run, instead of after them.

    Examples
    --------
    >>> import duckdb, threading
    >>> event = threading.Event()
    >>> with telling_the_pass(duckdb.connect(), event):
    ...     event.is_set()
    False
    >>> event.is_set()
    True
    """
    _PASS_STARTS[con] = started
    try:
        yield
    finally:
        _PASS_STARTS.pop(con, None)
        started.set()


@dataclass(frozen=True)
class InPlacePass:
    """The job's numbers from the one pass of :func:`count_in_place`."""

    #: highest attempt, open attempts, first start, last finish, reward stats (JSON):
    #: what a copying load's stats query gives
    stats: tuple[Any, ...]
    #: tasks' most and fewest attempts, tasks with fewer than the most, tasks: what a
    #: copying load counts to infer k
    counted: tuple[Any, ...]
    #: usable rows, and those with a reward neither 0 nor 1
    rows: int
    nonbinary: int
    #: the scales the pass summed the rewards at (None: it did not)
    summed_at: dict[str, float] | None


#: ``attempt_rows``' columns as a table load makes them from the numbered rows ``_tb_n``.
ATTEMPT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("task", "task"),
    ("attempt", "attempt"),
    ("trial_id", "trial_id"),
    ("status", "status"),
    ("exit_code", "exit_code::INTEGER"),
    ("error", "error"),
    ("error_type", "error_type"),
    ("reward", "reward"),
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_tokens", "cache_tokens"),
    ("turns", "turns::INTEGER"),
    ("cost_usd", "cost_usd"),
    ("started_at", "started_at"),
    ("finished_at", "finished_at"),
    ("duration_s", "coalesce(duration_s, epoch(finished_at) - epoch(started_at))"),
    ("input", "input"),
    ("input_is_chat", "input_is_chat"),
    ("output", "output"),
    ("reference", "reference"),
    ("extra", "extra"),
    ("n_trials", "1"),
    ("source_place", "_enb_place"),
)


def attempts_select(job: str, rows: str, *, row_number: str | None = None) -> str:
    """The SELECT list of a job's attempts (``job``: SQL of its id) over ``rows``;
    with ``row_number`` (:attr:`Source.row_number`) the place is kept as that number."""
    exprs = dict(ATTEMPT_COLUMNS)
    if row_number is not None:
        exprs.update(source_place="NULL::VARCHAR", source_row=row_number)
    cols = ", ".join(f"{expr} AS {name}" for name, expr in exprs.items())
    return f"SELECT {job} AS job_id, {cols} FROM {rows}"


def _typed_rows(con: duckdb.DuckDBPyConnection, jid: str, rows: str) -> str:
    """``rows`` (the job's attempts) in the ``attempts`` view's columns, order and types
    (``attempt_rows``' but ``source_row``: the place is made in the SELECT)."""
    described = [c for c in con.execute("DESCRIBE attempt_rows").fetchall() if c[0] != "source_row"]
    ours = {"job_id", *(name for name, _ in ATTEMPT_COLUMNS)}
    cols = ", ".join(
        f"CAST({name if name in ours else 'NULL'} AS {kind}) AS {name}"
        for name, kind, *_ in described
    )
    return f"SELECT {cols} FROM ({attempts_select(literal(jid), rows)})"


def _distinct(top: int) -> str:
    """Of a task whose attempts are in 1..top, a number equal to its count of rows
    exactly when no attempt number repeats (the load's check): the distinct attempt
    numbers, or, up to 63, the set bits of the sum of ``2^(attempt - 1)``.

    A sum of n powers of two has n set bits exactly when no two are equal (adding a
    power whose bit is set carries, and a carry never adds a bit), and DuckDB sums
    integers several times faster than it ORs them.
    """
    if top <= 63:  # powers of two up to 2^62, summed exactly in a 128-bit integer
        return "bit_count(sum(1::BIGINT << (attempt - 1)))"
    if top <= 4096:
        return f"bit_count(bitstring_agg(attempt, 1, {top}))"
    return "count(DISTINCT attempt)"


def _guessed_sums(guess: dict[str, float]) -> str:
    """:func:`~envloop_nb._store.task_counts.reward_sums_sql` at the guessed scales, but
    NULL where a value or a task's sum does not fit 64 bits (a reward beyond 1, repeated
    attempts: the guess was wrong and the sums are not used) instead of an error.

    The scales are written as numbers, not bound: the pass binds no parameter (see
    :func:`count_in_place`)."""
    out = []
    for name, value, scale in (("reward_sum", "reward", number(guess["rscale"])),
                               ("reward_sumsq", "reward * reward", number(guess["qscale"]))):  # fmt: skip
        fixed = f"TRY_CAST(sum(TRY_CAST({value} * {scale} AS BIGINT)) AS BIGINT)"
        out.append(
            f"CASE WHEN count(reward) = 0 THEN 0 ELSE {fixed}::DOUBLE / {scale} END AS {name}"
        )
    return ", ".join(out)


def count_in_place(
    con: duckdb.DuckDBPyConnection,
    *,
    given_attempt: bool,
    has_digest: bool,
    n_tags: int,
    k: int | None,
    total: int,
) -> InPlacePass:
    """The one pass over ``_tb_n``: table ``_tb_tasks`` (as a copying load makes it, plus
    the per-task counts and checks' numbers), and the job's numbers from it.

    The pass is one hash aggregate whose cost grows with its width, so it holds only
    what is per task: every attempt is dispatched (``count(*)``, once); with ``k`` the
    typed view already refused attempts outside 1..k; job-wide numbers come from its
    rows (the largest ``reward²`` is the square of the largest ``|reward|``: squaring is
    monotone) or from ungrouped queries of their own (the open attempts, the first start
    and last finish: ``total`` is the source's rows, to know whether all are usable);
    repeats are found by a sum of powers of two when ``k <= 63`` (:func:`_distinct`).
    With ``k``, or without it the highest attempt number (the k a load without repeated
    attempts infers), the rewards are summed at the scales of a largest reward of 1
    (:func:`register_in_place` uses the sums when the job's scales are those; else a
    second pass sums them).
    """
    # the attempts' range: with k the typed view refused every attempt outside 1..k
    # (numbered attempts are not checked there: a task may have more rows than k)
    bounds = "min(attempt) AS lo, max(attempt) AS hi"
    if given_attempt and k is not None:
        bounds = f"1 AS lo, {k} AS hi"
    guess_k = k  # the k whose scales the pass sums the rewards at (None: it does not)
    if not given_attempt:
        distinct = "count(*)"  # numbered 1..n in file order: none repeated
    elif k is not None:
        distinct = _distinct(k)
    else:  # the bound of the set of attempt numbers: a look at one column
        row = con.execute("SELECT max(attempt_given) FROM _tb_v").fetchone()
        guess_k = max(int(row[0]) if row and row[0] is not None else 1, 1)
        distinct = _distinct(guess_k)
    # any_value is the first value that is not null (a FILTER on it was ~0.01 s of a 1M pass)
    tags = "".join(f", any_value(_tag{i}) AS _tag{i}" for i in range(n_tags))
    digest = "any_value(digest)" if has_digest else "NULL"
    guess = scales(guess_k, 1.0, 1.0) if guess_k is not None else None
    sums = ", NULL AS reward_sum, NULL AS reward_sumsq"
    if guess is not None:
        sums = ", " + _guessed_sums(guess)
    started = _PASS_STARTS.get(con)
    if started is not None:
        started.set()
    con.execute(  # no parameter (see telling_the_pass)
        f"""CREATE OR REPLACE TEMP TABLE _tb_tasks AS
            SELECT task, min(_enb_ord) AS first, {digest}::VARCHAR AS digest {tags},
                   count(*) AS n, {bounds}, {distinct} AS d,
                   {count_columns_sql("reward", "status", pass_sql(None), attempt="*")},
                   min(reward) AS reward_min, max(reward) AS reward_max
                   {sums}
            FROM _tb_n GROUP BY task"""
    )
    row = con.execute(
        """WITH m AS (SELECT max(n) AS most FROM _tb_tasks),
                a AS (SELECT max(greatest(abs(reward_min), abs(reward_max))) AS top FROM _tb_tasks)
           SELECT max(hi), json_object('max_abs', (SELECT top FROM a),
                                       'max_sq', (SELECT top * top FROM a)),
                  coalesce(max(n), 0), coalesce(min(n), 0),
                  count(*) FILTER (WHERE n < (SELECT most FROM m)), count(*),
                  coalesce(sum(n), 0), coalesce(sum(nonbinary), 0),
                  count(*) FILTER (WHERE scored > 0 AND (reward_sum IS NULL OR reward_sumsq IS NULL))
           FROM _tb_tasks"""
    ).fetchone()
    assert row is not None
    # job-wide, each alone: the first start and last finish of Parquet columns come from
    # the footers' statistics when every row is usable (else from the usable rows)
    rows = "_tb_w" if int(row[6]) == total else "_tb_n"
    wide = con.execute(
        f"""SELECT (SELECT count_if(list_contains(['pending', 'running'], status)) FROM {rows}),
                   (SELECT min(started_at) FROM {rows})::TIMESTAMPTZ,
                   (SELECT max(finished_at) FROM {rows})::TIMESTAMPTZ"""
    ).fetchone()
    assert wide is not None
    return InPlacePass(
        stats=(row[0], *wide, row[1]), counted=tuple(row[2:6]), rows=int(row[6]),
        nonbinary=int(row[7]), summed_at=None if row[8] else guess,
    )  # fmt: skip


def register_in_place(
    con: duckdb.DuckDBPyConnection,
    src: Source,
    jid: str,
    *,
    typed: str,
    attempt: str,
    where: str,
    k: int,
    numbers: InPlacePass,
    copy: bool = False,
) -> None:
    """Keep the job's per-task counts from ``_tb_tasks`` (which is then gone) and, unless
    the load copied the rows (``copy``), record its attempts as the SELECT over its files,
    inside the load's transaction.

    The exact reward sums are the pass's when it summed at the job's scales (the table is
    then kept as it is: renamed, not copied); otherwise, when every reward is 0 or 1, the
    passes; otherwise a second pass sums them.
    """
    reward = json.loads(numbers.stats[4])
    sc = scales(k, reward.get("max_abs"), reward.get("max_sq"))
    sums = {n: f"coalesce(t.{n}, 0)" for n in ("reward_sum", "reward_sumsq")}
    source, params = "_tb_tasks t", {}
    if numbers.summed_at == sc:  # the pass summed at the job's scales: its table, kept
        keep_counts_table(con, "_tb_tasks")
    elif numbers.nonbinary:  # some reward is neither 0 nor 1: the exact sums take a pass
        source = f"""_tb_tasks t JOIN (
            SELECT task, {reward_sums_sql("$rscale", "$qscale", unchecked=True)}
            FROM _tb_n GROUP BY task) s USING (task)"""  # a repeat: refused by the checks
        sums = {n: f"s.{n}" for n in sums}
        params = sc
    else:  # a reward of 0 or 1 adds 1 to a sum exactly when it passes
        sums = {n: "coalesce(t.passes, 0)::DOUBLE" for n in sums}
    cols = ", ".join(
        sums.get(n, f"t.{n}" if n in NULLABLE else f"coalesce(t.{n}, 0)") + f" AS {n}"
        for n in COUNT_NAMES
    )
    if numbers.summed_at != sc:
        keep_counts(con, f"SELECT t.task, t.n, t.lo, t.hi, t.d, {cols} FROM {source}", params)
        con.execute("DROP TABLE _tb_tasks")
    if copy:
        return
    assert src.select_sql is not None  # load_table refuses a source without one first
    rows = f"(SELECT *, {attempt} AS attempt FROM ({typed} ({src.select_sql}) _tb_src) _tb_v {where}) _tb_n"
    register(con, jid, _typed_rows(con, jid, rows), src.files)
