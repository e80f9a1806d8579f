"""Deterministic generator of large synthetic evaluation jobs, written by DuckDB SQL.

Every attempt is a pure function of ``(task index, attempt index)`` through DuckDB's
``hash()``, so the same size always gives the same rows (for one DuckDB version: the
project pins 1.5.x). Nothing is built row by row in Python: ``range()`` makes the slots,
``COPY ... TO`` writes Parquet (one file, and a hive-partitioned folder by ``subset``)
and EnvLoop streaming JSONL.gz (header line, trial lines, metrics line).

Shares (of the ``tasks × k`` requested slots), realistic for agent evaluations:

- ~0.5% undispatched (no trial, no row; attempt 1 of every task is always dispatched
  so that every task appears in a table source),
- ~2% ``failed`` and ~0.5% ``cancelled`` trials (half of them without reward, the others
  with reward 0 — a failed trial may still carry a reward),
- ~1% ``completed`` without reward (invalid),
- ~5% non-binary rewards (0.25 / 0.5 / 0.75), the rest 0/1 from a per-task solve rate
  that depends on difficulty (10% of tasks never solved, 5% always).
- JSONL only: ~0.5% of dispatched slots were retried; the superseded trial (failed, no
  reward, earlier ``finished_at``) comes first in the file, so the attempt of record is
  the same row as in the Parquet files.

Because of the non-binary rewards, pass@k needs a threshold: the benchmark uses
``threshold=0.5`` (a pass is ``reward >= 0.5``) everywhere.
"""

from __future__ import annotations

import argparse
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

__all__ = ["DATA", "SIZES", "Shape", "ensure", "generate", "shape"]

DATA = Path(__file__).resolve().parent / "data"
THRESHOLD = 0.5
SUBSETS = ("math", "code", "reasoning", "tool-use", "writing")


@dataclass(frozen=True)
class Shape:
    """A job shape: ``tasks`` requested tasks with ``k`` attempts each."""

    name: str
    tasks: int
    k: int
    root: Path = DATA

    @property
    def slots(self) -> int:
        return self.tasks * self.k

    @property
    def folder(self) -> Path:
        return self.root / self.name

    @property
    def parquet(self) -> Path:
        return self.folder / "attempts.parquet"

    @property
    def hive(self) -> Path:
        return self.folder / "attempts_by_subset"

    @property
    def jsonl(self) -> Path:
        return self.folder / "job.jsonl.gz"

    @property
    def job_id(self) -> str:
        return f"bench_{self.name}"


SIZES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("10k", 313, 32),
        Shape("50k", 1_563, 32),
        Shape("100k", 3_125, 32),
        Shape("1M", 31_250, 32),
        Shape("10M", 312_500, 32),
        Shape("100M", 3_125_000, 32),  # written in chunks: see _write_parquet_chunked
        # few tasks, many attempts (RL-style rollouts)
        Shape("1Mx1000", 1_000, 1_000),
        # many tasks, few attempts: dataset exports write one row per task
        Shape("10kt", 10_000, 4),
        Shape("50kt", 50_000, 4),
        Shape("100kt", 100_000, 4),
        Shape("500kt", 500_000, 4),
    )
}


def shape(name: str) -> Shape:
    try:
        return SIZES[name]
    except KeyError:
        raise SystemExit(f"unknown size {name!r}; one of {', '.join(SIZES)}") from None


def _u(key: str, salt: int) -> str:
    """SQL for a uniform [0, 1) pseudo-random number from the integer ``key``.

    One integer argument per hash call: DuckDB combines several arguments weakly
    (correlated streams), but mixes a single integer well.
    """
    return f"((hash(({key}) * 64 + {salt}) >> 11)::DOUBLE / 9007199254740992.0)"


def attempts_sql(s: Shape, first: int = 0, stop: int | None = None) -> str:
    """SQL of the dispatched attempts of record (one row per attempt), ordered: tasks
    ``first`` up to ``stop`` (default all of them)."""
    subsets = "[" + ", ".join(f"'{x}'" for x in SUBSETS) + "]"
    slot = f"tp.t * {s.k + 1} + a.range"
    return f"""
    WITH task AS (
        SELECT range AS t,
               'task-' || lpad(range::VARCHAR, 7, '0') AS task,
               {subsets}[1 + floor({_u("-1 - range", 1)} * 5)::INTEGER] AS subset,
               ['easy', 'medium', 'hard'][1 + floor({_u("-1 - range", 2)} * 3)::INTEGER]
                   AS difficulty,
               {_u("-1 - range", 3)} AS up, {_u("-1 - range", 4)} AS uj
        FROM range({first}, {s.tasks if stop is None else stop})
    ), task_p AS (
        SELECT *, CASE WHEN up < 0.10 THEN 0.0 WHEN up < 0.15 THEN 1.0
                       ELSE greatest(0.0, least(1.0,
                            CASE difficulty WHEN 'easy' THEN 0.8 WHEN 'medium' THEN 0.5
                                 ELSE 0.15 END + (uj - 0.5) * 0.6)) END AS p
        FROM task
    ), slot AS (
        SELECT tp.*, a.range AS attempt,
               {_u(slot, 1)} AS u1, {_u(slot, 2)} AS u2, {_u(slot, 3)} AS u3,
               {_u(slot, 4)} AS u4, {_u(slot, 5)} AS u5, {_u(slot, 6)} AS u6,
               {_u(slot, 8)} AS u8, hash(({slot}) * 64 + 7) AS h7
        FROM task_p tp, range(1, {s.k + 1}) a
    ), trial AS (
        SELECT *, CASE WHEN u2 < 0.02 THEN 'failed' WHEN u2 < 0.025 THEN 'cancelled'
                       ELSE 'completed' END AS status
        FROM slot WHERE attempt = 1 OR u1 >= 0.005
    )
    SELECT task, attempt::INTEGER AS attempt,
           'tr-' || t::VARCHAR || '-' || attempt::VARCHAR AS trial_id,
           status,
           CASE status WHEN 'completed' THEN 0 WHEN 'failed' THEN 1 END::INTEGER AS exit_code,
           CASE status WHEN 'failed' THEN 'RuntimeError: agent process exited with code 1'
                       WHEN 'cancelled' THEN 'cancelled: job time budget exhausted' END
               AS error,
           CASE WHEN status <> 'completed'
                    THEN (CASE WHEN u3 < 0.5 THEN NULL ELSE 0.0::DOUBLE END)
                WHEN u3 < 0.01 THEN NULL
                WHEN u5 < 0.05 THEN (1 + floor(u6 * 3)) / 4
                ELSE (u4 < p)::INTEGER::DOUBLE END AS reward,
           (400 + h7 % 3000)::BIGINT AS input_tokens,
           (50 + (h7 >> 16) % 2000)::BIGINT AS output_tokens,
           (1 + (h7 >> 32) % 12)::INTEGER AS turns,
           round(((400 + h7 % 3000) * 0.5 + (50 + (h7 >> 16) % 2000) * 2.0) * 1e-6, 6)
               AS cost_usd,
           TIMESTAMPTZ '2026-03-01 00:00:00+00'
               + to_milliseconds((t * {s.k} + attempt) * 20) AS started_at,
           TIMESTAMPTZ '2026-03-01 00:00:00+00'
               + to_milliseconds((t * {s.k} + attempt) * 20 + 5000 + (h7 >> 40) % 300000)
               AS finished_at,
           'Problem ' || t::VARCHAR || ' (' || subset || ', ' || difficulty
               || '): compute the answer and explain briefly.' AS input,
           'The answer is ' || ((h7 >> 20) % 1000)::VARCHAR || '.' AS output,
           'The answer is ' || (t % 1000)::VARCHAR || '.' AS reference,
           subset, difficulty, u8 < 0.005 AS retried
    FROM trial
    ORDER BY t, attempt
    """


def _copy_lines(con: duckdb.DuckDBPyConnection, select: str, path: Path) -> None:
    """Write a one-column (VARCHAR) query as text lines, gzip-compressed, verbatim."""
    con.execute(
        f"""COPY ({select}) TO '{path}'
            (FORMAT CSV, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01',
             COMPRESSION gzip)"""
    )


def _write_jsonl(con: duckdb.DuckDBPyConnection, s: Shape, path: Path) -> None:
    header = f"""
    SELECT 0 AS sec, '' AS t, 0 AS attempt, 0 AS r, json_object(
        'schema_version', 'envloop.job-result/v1',
        'job', json_object(
            'id', '{s.job_id}', 'status', 'completed',
            'created_at', '2026-03-01T00:00:00Z', 'finished_at', '2026-03-02T06:00:00Z',
            'dataset', json_object('name', 'bench-synth', 'version', '1',
                                   'revision', 'sha256:{s.name}'),
            'runner', 'harbor@0.22.0',
            'profile', json_object('name', 'team/eval', 'version', '1',
                                   'params', json_object('MODEL_NAME', 'bench-model')),
            'model', 'bench-model@1', 'request_id', 'req-{s.name}',
            'attempts', {s.k},
            'tasks', (SELECT json_group_array(json_object(
                          'name', task, 'digest', 'sha256:' || md5(task),
                          'tags', json_object('subset', subset, 'difficulty', difficulty)))
                      FROM (SELECT DISTINCT task, subset, difficulty FROM bench_attempts
                            ORDER BY task))
        ))::VARCHAR AS line
    """
    trial = """
        json_object(
            'id', trial_id, 'task', task, 'attempt', attempt, 'status', status,
            'exit_code', exit_code, 'error', error, 'reward', reward,
            'metrics', json_object('composite', reward, 'verifier_version', 'v1'),
            'usage', json_object('input_tokens', input_tokens, 'output_tokens',
                                 output_tokens, 'turns', turns, 'cost_usd', cost_usd),
            'started_at', strftime(started_at, '%Y-%m-%dT%H:%M:%S.%gZ'),
            'finished_at', strftime(finished_at, '%Y-%m-%dT%H:%M:%S.%gZ'),
            'input', input, 'output', output, 'reference', reference,
            'artifacts', json('[]'))::VARCHAR"""
    retried = """
        json_object(
            'id', trial_id || '-r0', 'task', task, 'attempt', attempt, 'status', 'failed',
            'exit_code', 137, 'error', 'worker lost (retried)', 'reward', NULL,
            'started_at', strftime(started_at - INTERVAL 1 HOUR, '%Y-%m-%dT%H:%M:%S.%gZ'),
            'finished_at', strftime(started_at - INTERVAL 50 MINUTE, '%Y-%m-%dT%H:%M:%S.%gZ'),
            'input', input, 'output', NULL, 'reference', reference,
            'artifacts', json('[]'))::VARCHAR"""
    metrics = f"""
    SELECT 2, '', 0, 0, json_object('metrics', json_object(
        'score', sum(reward) / count(reward), 'pass', NULL, 'pass@k', NULL, 'pass^k', NULL,
        'k', any_value(k), 'score_counts', json_object(
            'total', any_value(total), 'scored', count(reward),
            'missing', any_value(total) - count(reward),
            'invalid', count(*) FILTER (WHERE reward IS NULL),
            'total_members', any_value(members),
            'complete_members', NULL)))::VARCHAR
    FROM bench_attempts, (SELECT {s.k} AS k, {s.slots} AS total, {s.tasks} AS members)
    """
    select = f"""
        SELECT line FROM (
            {header}
            UNION ALL
            SELECT 1, task, attempt, 0, {retried} FROM bench_attempts
            WHERE retried
            UNION ALL
            SELECT 1, task, attempt, 1, {trial} FROM bench_attempts
            UNION ALL
            {metrics}
        ) ORDER BY sec, t, attempt, r"""
    _copy_lines(con, select, path)


def generate(s: Shape, formats: tuple[str, ...] = ("parquet", "hive", "jsonl")) -> dict[str, float]:
    """Write the job of shape ``s`` in the requested formats; return seconds per format."""
    s.folder.mkdir(parents=True, exist_ok=True)
    if s.slots > 20_000_000:  # too many rows to hold in memory: Parquet only, in chunks
        if set(formats) != {"parquet"}:
            raise SystemExit(f"{s.name}: only the Parquet file is generated at this size")
        t0 = time.perf_counter()
        _write_parquet_chunked(s)
        return {"parquet": time.perf_counter() - t0}
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    took: dict[str, float] = {}
    t0 = time.perf_counter()
    con.execute(f"CREATE TEMP TABLE bench_attempts AS {attempts_sql(s)}")
    took["rows"] = time.perf_counter() - t0
    if "parquet" in formats:
        t0 = time.perf_counter()
        con.execute(
            f"COPY (SELECT * EXCLUDE (retried) FROM bench_attempts) TO '{s.parquet}' (FORMAT PARQUET, COMPRESSION zstd, "
            "ROW_GROUP_SIZE 122880)"
        )
        took["parquet"] = time.perf_counter() - t0
    if "hive" in formats:
        t0 = time.perf_counter()
        if s.hive.exists():
            shutil.rmtree(s.hive)
        con.execute(
            f"COPY (SELECT * EXCLUDE (retried) FROM bench_attempts) TO '{s.hive}' (FORMAT PARQUET, COMPRESSION zstd, "
            "PARTITION_BY (subset))"
        )
        took["hive"] = time.perf_counter() - t0
    if "jsonl" in formats:
        t0 = time.perf_counter()
        _write_jsonl(con, s, s.jsonl)
        took["jsonl"] = time.perf_counter() - t0
    con.close()
    return took


def _write_parquet_chunked(s: Shape, tasks_per_chunk: int = 250_000) -> None:
    """One Parquet file of ``s`` written chunk by chunk of tasks (bounded memory), the
    same rows and row groups as the one-shot writer would give."""
    import pyarrow.parquet as pq

    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    part = s.parquet.with_suffix(".parquet.part")
    writer = None
    try:
        for first in range(0, s.tasks, tasks_per_chunk):
            stop = min(s.tasks, first + tasks_per_chunk)
            sql = f"SELECT * EXCLUDE (retried) FROM ({attempts_sql(s, first, stop)})"
            table = con.execute(sql).to_arrow_table()
            if writer is None:
                writer = pq.ParquetWriter(part, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=122_880)
    finally:
        if writer is not None:
            writer.close()
        con.close()
    part.replace(s.parquet)


def ensure(s: Shape, formats: tuple[str, ...] = ("parquet",)) -> None:
    """Generate the files of ``s`` that are not there yet."""
    have = {"parquet": s.parquet.exists(), "hive": s.hive.exists(), "jsonl": s.jsonl.exists()}
    missing = tuple(f for f in formats if not have[f])
    if missing:
        generate(s, missing)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks generate")
    parser.add_argument("--sizes", default="100k,1M,10M,1Mx1000")
    parser.add_argument("--formats", default="parquet,hive,jsonl")
    args = parser.parse_args(argv)
    for name in args.sizes.split(","):
        s = shape(name)
        took = generate(s, tuple(args.formats.split(",")))
        parts = ", ".join(f"{k} {v:.1f}s" for k, v in took.items())
        print(f"{s.name}: {s.tasks} tasks x {s.k} attempts -> {s.folder} ({parts})")
