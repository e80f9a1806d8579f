"""The SQL that reads an Inspect log's score values (:mod:`.sql` maps the chunks with it):
Inspect's ``value_to_float``, and a chunk's dimension values with whether each was one of
Inspect's correctness letters (what :func:`.tasks.scorer_scale` reads a scorer's scale
from)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["RAW", "SCORES_MAP", "dimensions_sql", "kinds", "value_to_float_sql"]

#: One chunk's samples, one row each: ``ord`` (log order), ``place`` (member or
#: ``samples[i]``) and the fields the mapping reads, each taken out of the sample's JSON
#: in one parse (``json_extract`` with a list of paths); the JSON text itself is dropped.
RAW = "_el_insp"
SCORES_MAP = '"MAP(VARCHAR, STRUCT(value JSON))"'  # json_transform's type for ``scores``


def value_to_float_sql(v: str) -> str:
    """Inspect's ``value_to_float`` in SQL over a JSON value ``v`` (see
    :func:`envloop_nb._loaders.inspect.map.value_to_float`); NULL for no value.

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


def dimensions_sql() -> str:
    """Every score value of the chunk but the reward as a dimension value (a dict
    score: one per key, ``scorer.key``; a list: ``scorer[i]``), and whether it was one
    of Inspect's correctness letters (``letter``: ``C``, ``I``, ``P``, ``N``, which its
    ``value_to_float`` reads as 1, 0, 0.5 and 0); parameters ``$jid``, ``$reward`` and
    ``$map`` (:data:`SCORES_MAP`)."""

    def letter(v: str) -> str:
        # the JSON text itself: a string "C" is '"C"' (cheaper than typing and unquoting it)
        return f"""coalesce({v}::VARCHAR IN ('"C"', '"I"', '"P"', '"N"'), false)"""

    return f"""
        WITH e AS (  -- a scorer's entries in one parse (json_each is ~5x slower)
            SELECT id->>'$' AS task, coalesce(TRY_CAST(epoch AS INTEGER), 1) AS attempt,
                   unnest(map_entries(json_transform(scores, $map))) AS e
            FROM {RAW} WHERE json_type(scores) = 'OBJECT'),
        s AS (SELECT task, attempt, e.key AS scorer, e.value.value AS v FROM e),
        d AS (
            SELECT task, attempt, scorer AS name, {value_to_float_sql("v")} AS value,
                   {letter("v")} AS letter FROM s
            WHERE coalesce(json_type(v), 'NULL') NOT IN ('OBJECT', 'ARRAY')
            UNION ALL
            SELECT task, attempt, scorer || '.' || d.key, {value_to_float_sql("d.value")},
                   {letter("d.value")}
            FROM s, json_each(v) d WHERE json_type(v) = 'OBJECT'
            UNION ALL
            SELECT task, attempt, scorer || '[' || d.key || ']', {value_to_float_sql("d.value")},
                   {letter("d.value")}
            FROM s, json_each(v) d WHERE json_type(v) = 'ARRAY')
        SELECT $jid AS job_id, task, attempt, name, value, letter FROM d
        WHERE name IS DISTINCT FROM $reward"""


def kinds(dimensions: pa.Table) -> pa.Table:
    """Per dimension name of a chunk: its values (``n``) and how many of them were
    Inspect's correctness letters (``letters``)."""
    valued = dimensions.filter(pc.is_valid(dimensions["value"]))
    letter = pc.cast(valued["letter"], pa.int64())
    counted = pa.table({"name": valued["name"], "letter": letter})
    out = counted.group_by("name").aggregate([("letter", "count"), ("letter", "sum")])
    return out.rename_columns({"letter_count": "n", "letter_sum": "letters"}).select(
        ["name", "n", "letters"]
    )
