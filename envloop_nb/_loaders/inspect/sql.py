"""The Inspect mapping in DuckDB SQL: samples handed to DuckDB as JSON text in chunks,
each chunk mapped and written to the workspace before the next is read.

Python only takes the samples out of the log: an ``.eval`` member is decompressed (zstd)
and a pretty-printed ``.json`` log is split at its sample boundaries
(:func:`~.read.json_sample_chunks`), and each chunk goes to DuckDB as one Arrow
string column; any other ``.json`` log is read whole by DuckDB (``read_text``,
``json_extract(doc, '$.samples[*]')``). Everything else — ids, epochs, statuses,
Inspect's ``value_to_float``, errors, ChatML, usage, tags, dimensions — is SQL over the
chunk's fields ``_el_insp`` (each sample's JSON parsed once, for a list of paths).
The chunks are mapped on a scratch
cursor and their rows written into the load's transaction on a writer thread while
the next chunk is mapped (see :func:`stage_samples` for why); that thread then parses
the chunk's texts in Python, once, for the samples' steps (:mod:`.load_steps`). A chunk
is at most ``_CHUNK`` samples and ``_CHUNK_BYTES`` of their text.

Only a few small columns of every sample outlive its chunk (``_el_insp_keys``: place,
id, epoch; ``_el_insp_firsts``: each id's first input, target and metadata), for the
checks that need the whole log (a (sample, epoch) seen twice, k) and the tasks table.
Memory is therefore bounded by a chunk, not the log: at 100,000 samples × 5 epochs
the whole log staged at once spilled past the memory limit and took twice as long.

The pure Python mapping (:class:`envloop_nb._loaders.inspect.map.Rows`) is the
reference this path is tested against, field by field (``tests/test_loaders_inspect.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import NamedTuple

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ..._errors import LoadError
from ..._store.memory import release_heap
from ..._store.sql import literal
from ..common.read import parse_json
from ..common.stage import stage_name
from .load_steps import LogSteps
from .read import InspectLog, json_sample_chunks
from .scores_sql import RAW, SCORES_MAP, dimensions_sql, kinds, value_to_float_sql
from .spans import chunk_spans
from .zip import sample_chunks

__all__ = [
    "FIRSTS",
    "append_arrow",
    "check_duplicates",
    "epochs_seen",
    "stage_samples",
]

KEYS = "_el_insp_keys"
FIRSTS = "_el_insp_firsts"
#: Per dimension: its values and how many were Inspect's correctness letters (C, I, P, N)
KINDS = "_el_insp_kinds"
#: (column, JSON path, how the column is kept: "json" or "text")
_FIELDS = (
    ("id", "$.id", "json"), ("epoch", "$.epoch", "json"), ("uuid", "$.uuid", "text"),
    ("error", "$.error", "json"), ("scores", "$.scores", "json"),
    ("usage", "$.model_usage", "json"), ("turn_count", "$.turn_count", "text"),
    ("messages", "$.messages", "json"), ("started_at", "$.started_at", "text"),
    ("completed_at", "$.completed_at", "text"), ("total_time", "$.total_time", "text"),
    ("working_time", "$.working_time", "json"), ("input", "$.input", "json"),
    ("target", "$.target", "json"), ("completion", "$.output.completion", "text"),
    ("choice", "$.output.choices[0].message.content", "json"),
    ("metadata", "$.metadata", "json"), ("sample_limit", "$.limit", "json"),
    ("error_retries", "$.error_retries", "json"),
)  # fmt: skip
_CHUNK = 8192  # samples per Arrow batch handed to DuckDB (two are mapped at once)
#: ... and bytes of sample JSON per batch, at most: agent samples of 80 kB each made a
#: chunk of 8,192 samples 650 MB of text, past the default memory limit once parsed
_CHUNK_BYTES = 32 << 20
_SCAN_BATCH = 2048  # samples per record batch of a chunk
_SCAN_BYTES = 1 << 20  # ... and bytes of their text (see _scan_batches)
#: Writes a chunk's rows into the load's transaction while the next chunk is mapped.
_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envloop-inspect-writer")
#: Chunks mapped at once, each on its own cursor and thread (see :class:`_Mapping`).
_MAPPING_CURSORS = 2
_MAPPERS = ThreadPoolExecutor(
    max_workers=_MAPPING_CURSORS, thread_name_prefix="envloop-inspect-mapper"
)


def _pointer(*keys: str) -> str:
    """A JSON pointer to ``keys`` (RFC 6901: ``~`` → ``~0``, ``/`` → ``~1``), so a
    scorer's name is a key whatever characters it holds."""
    return "".join("/" + k.replace("~", "~0").replace("/", "~1") for k in keys)


def _reward_fields(reward: str | None) -> tuple[tuple[str, str, str], ...]:
    """The reward's value and explanation, taken in the same parse as the other fields."""
    scorer, key = _score_path(reward)
    if scorer is None:
        return ()
    value = _pointer("scores", scorer, "value") + ("" if key is None else _pointer(key))
    return (
        ("reward_value", value, "json"),
        ("reward_explanation", _pointer("scores", scorer, "explanation"), "json"),
    )


#: A log's samples in chunks: ``(places, texts)`` (places as a list or an Arrow array).
_Chunks = Iterator[tuple[list[str], pa.Array]] | Iterator[tuple[pa.Array, pa.Array]]


def stage_samples(
    con: duckdb.DuckDBPyConnection,
    log: InspectLog,
    *,
    jid: str,
    reward: str | None,
    steps: LogSteps | None = None,
) -> duckdb.DuckDBPyConnection:
    """Map every sample of the log into the workspace's ``attempts`` and ``dimensions``
    rows of job ``jid``, chunk by chunk (each checked first: see :func:`_check_chunk`),
    and, given ``steps``, each sample's steps: a chunk's JSON texts are parsed in Python
    on the writer thread, after its attempts are written, while the next chunks are
    mapped (the rows are written by the ``steps`` writer, on ``con``, so never while
    another thread writes on it).

    The chunks are mapped on a scratch connection (a cursor of the same database, in its
    own transactions): a table replaced inside the load's transaction keeps its old rows
    until the commit, so a chunk table replaced on ``con`` held the whole log in memory
    by the end. Only the mapped rows cross into the load's transaction, as Arrow.
    Returns the scratch connection, holding each sample's keys (``_el_insp_keys``) and
    each id's first fields (``_el_insp_firsts``) for :func:`check_duplicates`,
    :func:`epochs_seen` and :func:`insert_tasks`, and per dimension how many of its values
    were correctness letters (``_el_insp_kinds``, for ``insert_dimension_meta``); the
    caller closes it.
    """
    scratch = con.cursor()
    scratch.execute(
        f"CREATE TEMP TABLE {KEYS} (ord BIGINT, place VARCHAR, task VARCHAR, epoch INTEGER)"
    )
    scratch.execute(
        f"CREATE TEMP TABLE {FIRSTS} "
        "(task VARCHAR, ord BIGINT, input JSON, target JSON, metadata JSON)"
    )
    scratch.execute(f"CREATE TEMP TABLE {KINDS} (name VARCHAR, n BIGINT, letters BIGINT)")
    path = log.path
    fields = _FIELDS + _reward_fields(reward)
    mapping = _Mapping(con, scratch, path, fields, jid, reward, steps)
    chunks: _Chunks | None
    if log.form == "eval":
        assert log.directory is not None  # an .eval log always has its directory
        chunks = sample_chunks(path, log.directory, _CHUNK, _CHUNK_BYTES)
    else:
        chunks = json_sample_chunks(path, _CHUNK, _CHUNK_BYTES)
    try:
        if chunks is None:  # a .json log not laid out as Inspect writes it: read it whole
            mapping.chunk(
                f"""SELECT i AS ord, 'samples[' || i || ']' AS place, s::VARCHAR AS t
                FROM (SELECT unnest(samples) AS s, unnest(range(len(samples))) AS i
                      FROM (SELECT json_extract(content, '$.samples[*]') AS samples
                            FROM read_text({literal(str(path))})))""",
                whole=True,
            )
            mapping.finish()
            if steps is not None:  # parsed in Python for their steps, one by one
                steps.samples(log.samples())
        else:
            _map_chunks(mapping, chunks)
            mapping.finish()
    except BaseException:
        mapping.abandon()  # the first error is the one to show
        raise
    finally:
        mapping.close()
    return scratch


def _map_chunks(mapping: _Mapping, chunks: _Chunks) -> None:
    first = 0
    for places, texts in chunks:
        n = len(places)
        if not isinstance(places, pa.Array):
            places = pa.array(places, pa.large_string())
        batch = pa.table(
            {"ord": pa.array(range(first, first + n), pa.int64()), "place": places, "t": texts}
        )
        mapping.chunk("SELECT ord, place, t FROM _el_insp_batch", batch=_scan_batches(batch))
        first += n


def _scan_batches(batch: pa.Table) -> pa.Table:
    """The chunk as record batches (zero-copy slices) of at most ``_SCAN_BATCH`` samples
    and ``_SCAN_BYTES`` of text: several, so DuckDB parses them on every thread (one
    batch is one scan task), and small: DuckDB holds a batch's parsed samples until it is
    done (2,048 samples of 80 kB held ~250 MB per mapping thread; at 1 MB, a 4,000-sample
    log loaded at 0.51 GB without its steps, was 0.74 GB)."""
    sizes = pc.binary_length(batch.column("t")).fill_null(0).to_numpy()
    spans = chunk_spans(sizes, _SCAN_BATCH, _SCAN_BYTES)
    parts = [b for start, stop in spans for b in batch.slice(start, stop - start).to_batches()]
    return pa.Table.from_batches(parts, schema=batch.schema)


class _Mapped(NamedTuple):
    """One chunk, mapped: its rows for the workspace, and what the whole-log checks keep."""

    attempts: pa.Table
    dimensions: pa.Table
    kinds: pa.Table  # name, n (values), letters (of them Inspect's C / I / P / N)
    keys: pa.Table  # ord, place, task, epoch
    firsts: pa.Table  # each task's first sample in the chunk: task, ord, input, target, metadata
    samples: pa.Table | None  # for the steps: place, t (the JSON text) and refs


class _Mapping:
    """One log's chunks: mapped on two cursors at once, written on ``con`` in order.

    Each chunk is extracted and mapped on a mapping cursor (a connection of the same
    database, in its own transactions: nothing of a chunk outlives it), two chunks at a
    time on two threads, since one statement over a chunk keeps only about one core busy.
    The mapped chunks are then taken in log order: their rows written on the writer
    thread, their keys and firsts kept on ``scratch``. An error is the first chunk's, in
    log order.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        scratch: duckdb.DuckDBPyConnection,
        path: Path,
        fields: tuple[tuple[str, str, str], ...],
        jid: str,
        reward: str | None,
        steps: LogSteps | None,
    ) -> None:
        self.con, self.scratch, self.path, self.fields = con, scratch, path, fields
        self.jid, self.reward, self.steps = jid, reward, steps
        self.attempts_sql = _attempts_sql(reward)
        self.dimensions_sql = dimensions_sql()
        self.writing: Future[None] | None = None  # the previous chunk's rows, being written
        self.cursors = [con.cursor() for _ in range(_MAPPING_CURSORS)]
        self.mapped: deque[Future[_Mapped]] = deque()  # chunks being mapped, in log order
        self.count = 0

    def wait(self) -> None:
        """Wait for the previous chunk's rows to be written (raising its error, if any)."""
        if self.writing is not None:
            writing, self.writing = self.writing, None
            writing.result()

    def chunk(self, rows_sql: str, *, batch: pa.Table | None = None, whole: bool = False) -> None:
        """Map the samples ``rows_sql`` gives (ord, place, t; over ``batch``, registered
        as ``_el_insp_batch``, when given) in the background: fields extracted, checked,
        attempts and dimension values made, keys and firsts kept."""
        if len(self.mapped) == len(self.cursors):
            self._take()  # a cursor is free again
        cursor = self.cursors[self.count % len(self.cursors)]
        self.count += 1
        self.mapped.append(_MAPPERS.submit(self._map, cursor, rows_sql, batch, whole))

    def finish(self) -> None:
        """Take every chunk still being mapped and wait for the last one's rows."""
        while self.mapped:
            self._take()
        with self._memory():
            self.wait()

    def abandon(self) -> None:
        """After an error: let every thread finish (never roll back while one works)."""
        for future in self.mapped:
            with suppress(BaseException):
                future.result()
        self.mapped.clear()
        with suppress(BaseException):
            self.wait()

    def close(self) -> None:
        for cursor in self.cursors:
            cursor.close()

    @contextmanager
    def _memory(self) -> Iterator[None]:
        try:
            yield
        except duckdb.OutOfMemoryException as err:
            raise LoadError(
                self.path,
                None,
                "a chunk of its samples does not fit the workspace's memory limit "
                f"({str(err).splitlines()[0]}): open the workspace with a larger "
                "memory_limit (enb.open(memory_limit='4GB'))",
            ) from err

    def _map(
        self, cur: duckdb.DuckDBPyConnection, rows_sql: str, batch: pa.Table | None, whole: bool
    ) -> _Mapped:
        if batch is not None:
            cur.register("_el_insp_batch", batch)
        try:
            _extract_fields(cur, self.path, rows_sql, self.fields, whole=whole)
        finally:
            if batch is not None:
                cur.unregister("_el_insp_batch")
        _check_chunk(cur, self.path)
        jid = {"jid": self.jid}
        dims = {"jid": self.jid, "reward": self.reward, "map": SCORES_MAP}
        dimensions = cur.execute(self.dimensions_sql, dims).to_arrow_table()
        mapped = _Mapped(
            attempts=cur.execute(self.attempts_sql, jid).to_arrow_table(),
            dimensions=dimensions.drop_columns(["letter"]),
            kinds=kinds(dimensions),
            keys=cur.execute(
                f"""SELECT ord, place, id->>'$' AS task,
                           coalesce(TRY_CAST(epoch AS INTEGER), 1) AS epoch
                    FROM {RAW}"""
            ).to_arrow_table(),
            firsts=cur.execute(
                f"""SELECT id->>'$' AS task, min(ord) AS ord, arg_min(input, ord) AS input,
                           arg_min(target, ord) AS target, arg_min(metadata, ord) AS metadata
                    FROM {RAW} GROUP BY task"""
            ).to_arrow_table(),
            samples=None if batch is None or self.steps is None else _step_samples(cur, batch),
        )
        cur.execute(f"DROP TABLE {RAW}")  # its memory back before the next chunk is read
        return mapped

    def _take(self) -> None:
        """The oldest chunk being mapped: its rows to the writer, its keys and firsts kept."""
        with self._memory():
            self.wait()  # one chunk in the workspace's transaction at a time, in order
            mapped = self.mapped.popleft().result()
        self.writing = _WRITER.submit(
            _append_rows, self.con, mapped.attempts, mapped.dimensions, self.steps, mapped.samples
        )
        _el_keys, _el_firsts = mapped.keys, mapped.firsts  # read by replacement scans
        _el_kinds = mapped.kinds
        self.scratch.execute(f"INSERT INTO {KEYS} SELECT * FROM _el_keys")
        self.scratch.execute(f"INSERT INTO {KINDS} SELECT name, n, letters FROM _el_kinds")
        # chunks are taken in log order: a task's first sample is in the first chunk with it
        self.scratch.execute(
            f"""INSERT INTO {FIRSTS}
                SELECT * FROM _el_firsts WHERE task NOT IN (SELECT task FROM {FIRSTS})"""
        )


def _step_samples(cur: duckdb.DuckDBPyConnection, batch: pa.Table) -> pa.Table:
    """A chunk's samples for their steps: place, JSON text, and whether the messages'
    text holds an ``attachment://`` reference (most hold none: only those are walked)."""
    refs = cur.execute(
        f"""SELECT coalesce(contains(messages::VARCHAR, 'attachment://'), true) AS refs
            FROM {RAW} ORDER BY ord"""
    ).to_arrow_table()
    return batch.select(["place", "t"]).append_column("refs", refs["refs"])


def _append_rows(
    con: duckdb.DuckDBPyConnection,
    attempts: pa.Table,
    dimensions: pa.Table,
    steps: LogSteps | None,
    samples: pa.Table | None,
) -> None:
    """Write one chunk's rows, then read and write its samples' steps (on the writer
    thread, while the next chunk is mapped: DuckDB releases the GIL, so the two
    connections work at once)."""
    append_arrow(con, "attempts", attempts)
    append_arrow(con, "dimensions", dimensions)
    if steps is not None and samples is not None:
        steps.texts(samples["place"], samples["t"], samples["refs"])
    release_heap()  # the chunks freed so far, back from malloc's heaps (see release_heap)


def append_arrow(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    """Insert ``rows`` into ``table`` inside the load's transaction.

    Through a replacement scan of a local name, not ``con.register``: a view dropped
    inside a transaction stays in the catalog until the commit, and with it the Arrow
    table it holds, so registering each chunk kept every chunk in memory to the end.
    """
    _el_insp_rows = rows  # read by DuckDB's replacement scan, by name
    con.execute(f"INSERT INTO {stage_name(table)} BY NAME SELECT * FROM _el_insp_rows")


def _extract_fields(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    rows_sql: str,
    fields: tuple[tuple[str, str, str], ...],
    *,
    whole: bool,
) -> None:
    """Make ``_el_insp`` the fields of the samples ``rows_sql`` gives (ord, place, t):
    each sample's JSON is parsed once (``json_extract`` with the list of paths)."""
    cols = ", ".join(
        f"f[{i}] AS {name}" if kind == "json" else f"f[{i}] ->> '$' AS {name}"
        for i, (name, _path, kind) in enumerate(fields, start=1)
    )
    paths = [p for _name, p, _kind in fields]
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {RAW} AS
                SELECT ord, place, starts_with(ltrim(t), '{{') AS is_object, {cols}
                FROM (SELECT ord, place, json_extract(t, $paths::VARCHAR[]) AS f, t
                      FROM ({rows_sql}))""",
            {"paths": paths},
        )
    except duckdb.OutOfMemoryException as err:
        if not whole:
            raise
        raise LoadError(
            path,
            None,
            "too large for the workspace's memory limit when read whole "
            f"({str(err).splitlines()[0]}): open the workspace with a larger memory_limit "
            "(enb.open(memory_limit='4GB')), or load the log's .eval form, which is read "
            "member by member",
        ) from err
    except duckdb.Error as err:  # a sample that is not JSON: Python's parser says where
        try:
            rows = con.execute(f"SELECT place, t FROM ({rows_sql})").fetchall()
        except duckdb.Error:  # the transaction is aborted: the first error is the one to show
            raise err from None
        for place, text in rows:
            parse_json(f"{path} {place}", str(text), what="a JSON sample")
        raise


def _check_chunk(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a sample without a usable id or epoch, or with a time that is not one."""
    bad = con.execute(
        f"""SELECT place, CASE
              WHEN NOT is_object THEN 'expected a sample object'
              WHEN coalesce(json_type(id), 'NULL') NOT IN ('VARCHAR', 'BIGINT', 'UBIGINT')
                THEN 'sample id must be a string or integer, got ' || coalesce(id::VARCHAR, 'nothing')
              WHEN epoch IS NOT NULL
                   AND (json_type(epoch) NOT IN ('BIGINT', 'UBIGINT')
                        OR TRY_CAST(epoch AS INTEGER) IS NULL OR TRY_CAST(epoch AS INTEGER) < 1)
                THEN 'epoch must be an integer >= 1, got ' || epoch::VARCHAR
              WHEN started_at IS NOT NULL AND TRY_CAST(started_at AS TIMESTAMPTZ) IS NULL
                THEN 'started_at is not an RFC 3339 time: ' || started_at
              WHEN completed_at IS NOT NULL AND TRY_CAST(completed_at AS TIMESTAMPTZ) IS NULL
                THEN 'completed_at is not an RFC 3339 time: ' || completed_at
            END AS problem
            FROM {RAW} WHERE problem IS NOT NULL ORDER BY ord LIMIT 1"""
    ).fetchone()
    if bad is not None:
        raise LoadError(path, str(bad[0]), str(bad[1]))


def check_duplicates(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a (sample, epoch) seen twice in the log."""
    dup = con.execute(
        f"""SELECT task, epoch, arg_max(place, ord), arg_min(place, ord)
            FROM {KEYS} GROUP BY ALL HAVING count(*) > 1 ORDER BY min(ord) LIMIT 1"""
    ).fetchone()
    if dup is not None:
        raise LoadError(
            path,
            str(dup[2]),
            f"sample {dup[0]!r} epoch {dup[1]} appears twice (also at {dup[3]})",
        )


def epochs_seen(con: duckdb.DuckDBPyConnection) -> tuple[int, list[tuple[str, int]]]:
    """The highest epoch, and each task with its number of epochs (in log order)."""
    top = con.execute(f"SELECT coalesce(max(epoch), 1) FROM {KEYS}").fetchone()
    counts = con.execute(
        f"SELECT task, count(*) FROM {KEYS} GROUP BY task ORDER BY min(ord)"
    ).fetchall()
    return int(top[0]) if top else 1, [(str(t), int(n)) for t, n in counts]


def _score_path(reward: str | None) -> tuple[str | None, str | None]:
    """The reward's scorer and, for a dict-valued score, its key."""
    if reward is None:
        return None, None
    scorer, _, key = reward.partition(".")
    return scorer, key or None


def _attempts_sql(reward: str | None) -> str:
    """One attempt row per sample of the chunk (columns as :class:`~.map.Rows`);
    parameter ``$jid``."""
    if reward is None:
        reward_value = "NULL::DOUBLE"
        judge = "NULL::VARCHAR"
    else:  # taken out of the sample in the one parse (``_reward_fields``)
        reward_value = value_to_float_sql("reward_value")
        judge = "(reward_explanation ->> '$')"
    usage = "usage_list"

    def usage_sum(name: str, kind: str = "BIGINT") -> str:
        return (
            f"CASE WHEN len({usage}) > 0 THEN coalesce(list_sum(list_transform({usage}, "
            f"lambda u: TRY_CAST(u->>'{name}' AS {kind}))), 0)::{kind} END"
        )

    message = "nullif(error->>'message', '')"
    failed = "(error IS NOT NULL AND json_type(error) <> 'NULL')"
    # json_extract writes compact JSON, so the text says an array and an empty one
    chat = "CASE WHEN msg_array AND messages::VARCHAR <> '[]' THEN messages::VARCHAR END"
    text_or_json = (
        "CASE json_type({0}) WHEN 'VARCHAR' THEN {0}->>'$' WHEN 'NULL' THEN NULL "
        "ELSE {0}::VARCHAR END"
    )

    # logs before 2025 have no output.completion (a property then): what it gave, the
    # first choice's text (a string, or its text parts joined by newlines)
    choice_text = """CASE json_type(choice) WHEN 'VARCHAR' THEN choice->>'$'
        WHEN 'ARRAY' THEN array_to_string(list_transform(
            list_filter(json_extract(choice, '$[*]'), lambda p: (p->>'type') = 'text'),
            lambda p: coalesce(p->>'text', '')), chr(10)) END"""

    # the fields are compact JSON texts (json_extract writes them so): the object is
    # joined as text, a key left out when its value is missing or null, instead of
    # json_object + json_merge_patch, which parsed and re-wrote every score object
    # (half of this query's time)
    def member(key: str, column: str) -> str:
        return f"""CASE WHEN {column}::VARCHAR <> 'null' THEN '"{key}":' || {column} END"""

    extra = f"""'{{' || concat_ws(',', {member("working_time", "working_time")},
        {member("scores", "scores")}, {member("limit", "sample_limit")},
        CASE WHEN error_retries::VARCHAR NOT IN ('null', '[]')
             AND starts_with(error_retries::VARCHAR, '[')
             THEN '"error_retries":' || error_retries END) || '}}'"""
    return f"""
        SELECT $jid AS job_id, id->>'$' AS task,
               coalesce(TRY_CAST(epoch AS INTEGER), 1) AS attempt,
               uuid AS trial_id,
               CASE WHEN {failed} THEN 'failed' ELSE 'completed' END AS status,
               CASE WHEN {failed} THEN {message} END AS error,
               CASE WHEN {failed} THEN coalesce(
                   nullif(regexp_extract({message}, '^([A-Za-z_][\\w.]*)\\(', 1), ''), 'error')
               END AS error_type,
               {reward_value} AS reward,
               {judge} AS judge_summary,
               {usage_sum("input_tokens")} AS input_tokens,
               {usage_sum("output_tokens")} AS output_tokens,
               {usage_sum("input_tokens_cache_read")} AS cache_tokens,
               coalesce(TRY_CAST(turn_count AS INTEGER),
                        CASE WHEN msg_array THEN len(list_filter(
                            json_extract(messages, '$[*].role'), lambda r: (r->>'$') = 'assistant'
                        ))::INTEGER END) AS turns,
               list_sum(list_transform({usage}, lambda u: TRY_CAST(u->>'total_cost' AS DOUBLE)))
                   AS cost_usd,
               TRY_CAST(started_at AS TIMESTAMPTZ) AS started_at,
               TRY_CAST(completed_at AS TIMESTAMPTZ) AS finished_at,
               TRY_CAST(total_time AS DOUBLE) AS duration_s,
               coalesce({chat}, {text_or_json.format("input")}) AS input,
               ({chat}) IS NOT NULL OR json_type(input) = 'ARRAY' AS input_is_chat,
               coalesce(completion, {choice_text}) AS output,
               {text_or_json.format("target")} AS reference,
               {extra} AS extra,
               1 AS n_trials, place AS source_place
        FROM (SELECT *, json_extract(usage, '$.*') AS usage_list,
                     starts_with(messages::VARCHAR, '[') AS msg_array FROM {RAW})"""
