"""The Inspect mapping in DuckDB SQL: samples staged as JSON rows, mapped in one pass.

Python only takes the samples out of the log: an ``.eval`` member is decompressed (zstd)
and handed to DuckDB as text in chunks through Arrow; a ``.json`` log is read by DuckDB
itself (``read_text``, ``json_extract(doc, '$.samples[*]')``). Everything else — ids,
epochs, statuses, Inspect's ``value_to_float``, errors, ChatML, usage, tags, dimensions
— is SQL over the staged rows ``_el_insp(ord, place, j)``.

The pure Python mapping (:class:`envloop_nb._loaders.inspect_map.Rows`) is the
reference this path is tested against, field by field (``tests/test_loaders_inspect.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from .._errors import LoadError
from .._store.sql import literal
from ._read import decode_utf8, parse_json
from ._stage import stage_name
from .inspect_read import InspectLog, Member, mapped, member_bytes

__all__ = [
    "RAW",
    "check_samples",
    "epochs_seen",
    "insert_attempts",
    "insert_dimensions",
    "insert_tasks",
    "stage_raw",
    "value_to_float_sql",
]

#: The staged samples, one row each: ``ord`` (log order), ``place`` (member or
#: ``samples[i]``) and the fields the mapping reads, each taken out of the sample's JSON
#: in one parse (``json_extract`` with a list of paths); the JSON text itself is dropped.
RAW = "_el_insp"
#: (column, JSON path, how the column is kept: "json" or "text")
_FIELDS = (
    ("id", "$.id", "json"), ("epoch", "$.epoch", "json"), ("uuid", "$.uuid", "text"),
    ("error", "$.error", "json"), ("scores", "$.scores", "json"),
    ("usage", "$.model_usage", "json"), ("turn_count", "$.turn_count", "text"),
    ("messages", "$.messages", "json"), ("started_at", "$.started_at", "text"),
    ("completed_at", "$.completed_at", "text"), ("total_time", "$.total_time", "text"),
    ("working_time", "$.working_time", "json"), ("input", "$.input", "json"),
    ("target", "$.target", "json"), ("completion", "$.output.completion", "text"),
    ("metadata", "$.metadata", "json"), ("sample_limit", "$.limit", "json"),
    ("error_retries", "$.error_retries", "json"),
)  # fmt: skip
_CHUNK = 8192  # members per Arrow batch handed to DuckDB


def value_to_float_sql(v: str) -> str:
    """Inspect's ``value_to_float`` in SQL over a JSON value ``v`` (see
    :func:`envloop_nb._loaders.inspect_map.value_to_float`); NULL for no value.

    Examples
    --------
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> vals = ['"C"', '"P"', '"i"', '"YES"', '"0.25"', '1', 'true', 'NaN', '"x"', 'null']
    >>> [con.sql(f"SELECT {value_to_float_sql(repr(v) + '::JSON')}").fetchone()[0] for v in vals]
    [1.0, 0.5, None, 1.0, 0.25, 1.0, 1.0, None, None, None]
    """
    text = f"({v} ->> '$')"
    number = f"TRY_CAST({v} AS DOUBLE)"
    string = f"TRY_CAST({text} AS DOUBLE)"
    return f"""(CASE json_type({v})
        WHEN 'BOOLEAN' THEN CASE WHEN {v}::BOOLEAN THEN 1.0 ELSE 0.0 END
        WHEN 'BIGINT' THEN {number} WHEN 'UBIGINT' THEN {number}
        WHEN 'DOUBLE' THEN CASE WHEN isfinite({number}) THEN {number} END
        WHEN 'VARCHAR' THEN CASE
            WHEN {text} = 'C' THEN 1.0 WHEN {text} = 'P' THEN 0.5
            WHEN {text} IN ('I', 'N') THEN 0.0
            WHEN lower({text}) IN ('yes', 'true') THEN 1.0
            WHEN lower({text}) IN ('no', 'false') THEN 0.0
            WHEN isfinite({string}) THEN {string} END
        END)::DOUBLE"""


def stage_raw(con: duckdb.DuckDBPyConnection, log: InspectLog) -> int:
    """Stage the log's samples in ``_el_insp`` (their fields, see ``_FIELDS``); return
    how many."""
    cols = ", ".join(
        f"{name} {'JSON' if kind == 'json' else 'VARCHAR'}" for name, _p, kind in _FIELDS
    )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {RAW} (ord BIGINT, place VARCHAR, is_object BOOLEAN, {cols})"
    )
    return _stage_json(con, log.path) if log.form == "json" else _stage_eval(con, log)


def _extract_fields(
    con: duckdb.DuckDBPyConnection, path: Path, rows_sql: str, params: dict[str, Any]
) -> None:
    """Append to ``_el_insp`` the fields of the samples ``rows_sql`` gives (ord, place, t):
    each sample's JSON is parsed once (``json_extract`` with the list of paths)."""
    cols = ", ".join(
        f"f[{i}]" if kind == "json" else f"f[{i}] ->> '$'"
        for i, (_name, _path, kind) in enumerate(_FIELDS, start=1)
    )
    paths = [p for _name, p, _kind in _FIELDS]
    try:
        con.execute(
            f"""INSERT INTO {RAW}
                SELECT ord, place, starts_with(ltrim(t), '{{'), {cols}
                FROM (SELECT ord, place, json_extract(t, $paths::VARCHAR[]) AS f, t
                      FROM ({rows_sql}))""",
            {"paths": paths, **params},
        )
    except duckdb.OutOfMemoryException as err:
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
            rows = con.execute(f"SELECT place, t FROM ({rows_sql})", params).fetchall()
        except duckdb.Error:  # the transaction is aborted: the first error is the one to show
            raise err from None
        for place, text in rows:
            parse_json(f"{path} {place}", str(text), what="a JSON sample")
        raise


def _stage_eval(con: duckdb.DuckDBPyConnection, log: InspectLog) -> int:
    """Decompress the sample members (zstd releases the GIL: two threads), check each
    CRC-32, and hand DuckDB each chunk as one Arrow string column built from buffers."""
    from concurrent.futures import ThreadPoolExecutor

    members = log.members
    path = log.path
    n = 0
    with mapped(path) as data, ThreadPoolExecutor(max_workers=2) as pool:
        chunks = [members[i : i + _CHUNK] for i in range(0, len(members), _CHUNK)]
        for texts in pool.map(lambda chunk: _inflate(path, data, chunk), chunks):
            chunk = members[n : n + len(texts)]
            _append(con, path, n, [m.filename for m in chunk], texts)
            n += len(texts)
    return n


def _inflate(path: Path, data: Any, members: list[Member]) -> list[bytes]:
    import zstandard

    zstd = zstandard.ZstdDecompressor()  # one per thread: it is not shared across threads
    return [member_bytes(path, data, info, zstd) for info in members]


def _append(
    con: duckdb.DuckDBPyConnection, path: Path, first: int, places: list[str], blobs: list[bytes]
) -> None:
    import numpy as np

    joined = b"".join(blobs)
    try:
        joined.decode("utf-8")  # one check for the chunk; the member is found on failure
    except UnicodeDecodeError:
        for place, blob in zip(places, blobs, strict=True):
            decode_utf8(f"{path} member {place}", blob)
        raise
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    texts = pa.Array.from_buffers(
        pa.large_string(), len(blobs), [None, pa.py_buffer(offsets), pa.py_buffer(joined)]
    )
    batch = pa.table({"place": pa.array(places, pa.string()), "t": texts})
    con.register("_el_insp_batch", batch)
    try:
        _extract_fields(
            con,
            path,
            """SELECT $first + row_number() OVER () - 1 AS ord, place, t
                FROM _el_insp_batch""",
            {"first": first},
        )
    finally:
        con.unregister("_el_insp_batch")


def _stage_json(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    _extract_fields(
        con,
        path,
        f"""SELECT i AS ord, 'samples[' || i || ']' AS place, s::VARCHAR AS t
            FROM (SELECT unnest(samples) AS s, unnest(range(len(samples))) AS i
                  FROM (SELECT json_extract(content, '$.samples[*]') AS samples
                        FROM read_text({literal(str(path))})))""",
        {},
    )
    row = con.execute(f"SELECT count(*) FROM {RAW}").fetchone()
    return int(row[0]) if row else 0


def check_samples(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a sample without a usable id or epoch, and a (sample, epoch) seen twice."""
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
    dup = con.execute(
        f"""SELECT id->>'$', coalesce(TRY_CAST(epoch AS INTEGER), 1) AS e,
                   arg_max(place, ord), arg_min(place, ord)
            FROM {RAW} GROUP BY ALL HAVING count(*) > 1 ORDER BY min(ord) LIMIT 1"""
    ).fetchone()
    if dup is not None:
        raise LoadError(
            path,
            str(dup[2]),
            f"sample {dup[0]!r} epoch {dup[1]} appears twice (also at {dup[3]})",
        )


def epochs_seen(con: duckdb.DuckDBPyConnection) -> tuple[int, list[tuple[str, int]]]:
    """The highest epoch, and each task with its number of epochs (in log order)."""
    top = con.execute(f"SELECT coalesce(max(TRY_CAST(epoch AS INTEGER)), 1) FROM {RAW}").fetchone()
    counts = con.execute(
        f"SELECT id->>'$' AS task, count(*) FROM {RAW} GROUP BY task ORDER BY min(ord)"
    ).fetchall()
    return int(top[0]) if top else 1, [(str(t), int(n)) for t, n in counts]


def _score_path(reward: str | None) -> tuple[str | None, str | None]:
    """The reward's scorer and, for a dict-valued score, its key."""
    if reward is None:
        return None, None
    scorer, _, key = reward.partition(".")
    return scorer, key or None


def insert_attempts(con: duckdb.DuckDBPyConnection, jid: str, reward: str | None) -> None:
    """One attempt row per staged sample (columns as :class:`~.inspect_map.Rows`)."""
    scorer, key = _score_path(reward)
    if scorer is None:
        reward_value = "NULL::DOUBLE"
        judge = "NULL::VARCHAR"
    else:
        score = f"(scores->{literal(scorer)})"
        value = f"({score}->'value')" if key is None else f"({score}->'value'->{literal(key)})"
        reward_value = value_to_float_sql(value)
        judge = f"({score}->>'explanation')"
    usage = "json_extract(usage, '$.*')"

    def usage_sum(name: str, kind: str = "BIGINT") -> str:
        return (
            f"CASE WHEN len({usage}) > 0 THEN coalesce(list_sum(list_transform({usage}, "
            f"lambda u: TRY_CAST(u->>'{name}' AS {kind}))), 0) END"
        )

    message = "nullif(error->>'message', '')"
    failed = "(error IS NOT NULL AND json_type(error) <> 'NULL')"
    messages = "json_extract(messages, '$[*]')"
    chat = """CASE WHEN json_type(messages) = 'ARRAY' AND json_array_length(messages) > 0
        THEN messages::VARCHAR END"""
    text_or_json = (
        "CASE json_type({0}) WHEN 'VARCHAR' THEN {0}->>'$' WHEN 'NULL' THEN NULL "
        "ELSE {0}::VARCHAR END"
    )
    extra = """json_merge_patch('{}', json_object(
        'working_time', working_time, 'scores', scores, 'limit', sample_limit,
        'error_retries', CASE WHEN json_array_length(error_retries) > 0 THEN error_retries END))"""
    con.execute(
        f"""INSERT INTO {stage_name("attempts")} BY NAME
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
                        CASE WHEN json_type(messages) = 'ARRAY' THEN
                            len(list_filter({messages}, lambda m: (m->>'role') = 'assistant'))::INTEGER
                        END) AS turns,
               list_sum(list_transform({usage}, lambda u: TRY_CAST(u->>'total_cost' AS DOUBLE)))
                   AS cost_usd,
               TRY_CAST(started_at AS TIMESTAMPTZ) AS started_at,
               TRY_CAST(completed_at AS TIMESTAMPTZ) AS finished_at,
               TRY_CAST(total_time AS DOUBLE) AS duration_s,
               coalesce({chat}, {text_or_json.format("input")}) AS input,
               ({chat}) IS NOT NULL OR json_type(input) = 'ARRAY' AS input_is_chat,
               completion AS output,
               {text_or_json.format("target")} AS reference,
               {extra} AS extra,
               1 AS n_trials, place AS source_place
        FROM {RAW}""",
        {"jid": jid},
    )


def insert_dimensions(con: duckdb.DuckDBPyConnection, jid: str, reward: str | None) -> list[str]:
    """Every score value but the reward as a dimension (a dict score: one per key);
    returns the dimension names, sorted."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _el_insp_dims AS
        WITH s AS (
            SELECT r.id->>'$' AS task, coalesce(TRY_CAST(r.epoch AS INTEGER), 1) AS attempt,
                   e.key AS scorer, e.value->'value' AS v
            FROM {RAW} r, json_each(r.scores) e)
        SELECT task, attempt, scorer AS name, {value_to_float_sql("v")} AS value FROM s
        WHERE json_type(v) NOT IN ('OBJECT', 'ARRAY')
        UNION ALL
        SELECT task, attempt, scorer || '.' || d.key, {value_to_float_sql("d.value")}
        FROM s, json_each(v) d WHERE json_type(v) = 'OBJECT'
        UNION ALL
        SELECT task, attempt, scorer || '[' || d.key || ']', {value_to_float_sql("d.value")}
        FROM s, json_each(v) d WHERE json_type(v) = 'ARRAY'"""
    )
    try:
        con.execute(
            f"""INSERT INTO {stage_name("dimensions")} BY NAME
                SELECT $jid AS job_id, task, attempt, name, value FROM _el_insp_dims
                WHERE name IS DISTINCT FROM $reward""",
            {"jid": jid, "reward": reward},
        )
        names = con.execute(
            """SELECT DISTINCT name FROM _el_insp_dims WHERE name IS DISTINCT FROM $reward
               ORDER BY name""",
            {"reward": reward},
        ).fetchall()
    finally:
        con.execute("DROP TABLE IF EXISTS _el_insp_dims")
    dims = [str(n) for (n,) in names]
    if dims:
        con.execute(
            f"""INSERT INTO {stage_name("dimension_meta")} BY NAME
                SELECT $jid AS job_id, unnest($names::VARCHAR[]) AS name""",
            {"jid": jid, "names": dims},
        )
    return dims


def insert_tasks(con: duckdb.DuckDBPyConnection, jid: str, listed: list[str]) -> None:
    """The requested tasks (``listed`` first, then any other id seen), their digests
    and tags (metadata leaves, nested keys dotted, lists as JSON text)."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _el_insp_tasks AS
        WITH firsts AS (
            SELECT id->>'$' AS task, arg_min(input, ord) AS input, arg_min(target, ord) AS target,
                   arg_min(metadata, ord) AS metadata, min(ord) AS first
            FROM {RAW} GROUP BY task),
        listed AS (SELECT unnest($listed::VARCHAR[]) AS task,
                          generate_subscripts($listed::VARCHAR[], 1) AS pos)
        SELECT coalesce(l.task, f.task) AS task,
               row_number() OVER (ORDER BY l.pos NULLS LAST, f.first) - 1 AS position,
               left(sha256(to_json([f.input, f.target])::VARCHAR), 16) AS digest,
               f.metadata AS metadata
        FROM listed l FULL JOIN firsts f ON f.task = l.task""",
        {"listed": listed},
    )
    try:
        con.execute(
            f"""INSERT INTO {stage_name("task_tags")} BY NAME
            SELECT $jid AS job_id, t.task,
                   regexp_replace(e.fullkey[3:], '"', '', 'g') AS key,
                   CASE e.type WHEN 'VARCHAR' THEN e.value->>'$' ELSE e.value::VARCHAR END
                       AS value
            FROM _el_insp_tasks t, json_tree(t.metadata) e
            WHERE json_type(t.metadata) = 'OBJECT' AND e.type NOT IN ('OBJECT', 'NULL')
              AND NOT contains(e.fullkey, '[')  -- a list's items stay in the list's JSON text""",
            {"jid": jid},
        )
        con.execute(
            f"""INSERT INTO {stage_name("tasks")} BY NAME
            SELECT $jid AS job_id, t.task, t.position::INTEGER AS position, t.digest,
                   coalesce((SELECT json_group_object(g.key, g.value) FROM task_tags g
                             WHERE g.job_id = $jid AND g.task = t.task), '{{}}')::JSON AS tags
            FROM _el_insp_tasks t ORDER BY t.position""",
            {"jid": jid},
        )
    finally:
        con.execute("DROP TABLE IF EXISTS _el_insp_tasks")
