"""The tasks, tags and dimensions of an Inspect log, from what the chunks kept
(:mod:`envloop_nb._loaders.inspect.sql`: each id's first sample)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa

from ..common.stage import stage_name
from .sql import FIRSTS, KINDS, append_arrow

__all__ = ["insert_dimension_meta", "insert_tasks", "scorer_scale"]


def insert_dimension_meta(
    con: duckdb.DuckDBPyConnection,
    scratch: duckdb.DuckDBPyConnection,
    jid: str,
    scorers: Any,
) -> list[str]:
    """Record the job's dimensions (every name a value was written under) with the scale
    the log states (:func:`scorer_scale`); return them, sorted. ``scorers`` is the log's
    ``eval.scorers``; ``scratch`` holds the letter counts the mapping kept (``KINDS``)."""
    names = con.execute(
        "SELECT DISTINCT name FROM dimensions WHERE job_id = $jid ORDER BY name", {"jid": jid}
    ).fetchall()
    dims = [str(n) for (n,) in names]
    kinds = {
        str(n): (int(v), int(lt))
        for n, v, lt in scratch.execute(
            f"SELECT name, sum(n), sum(letters) FROM {KINDS} GROUP BY name"
        ).fetchall()
    }
    meta = {
        str(s["name"]): s.get("metadata")
        for s in (scorers if isinstance(scorers, list) else [])
        if isinstance(s, Mapping) and s.get("name")
    }
    rows = []
    for name in dims:
        scorer = re.split(r"[.\[]", name, maxsplit=1)[0]  # exact.key, exact[0]: exact's
        unit, hib = scorer_scale(meta.get(scorer), kinds.get(name, (0, 0)))
        rows.append({"job_id": jid, "name": name, "unit": unit, "higher_is_better": hib})
    if rows:
        _el_dim_meta = pa.Table.from_pylist(rows, schema=_META)  # read by a replacement scan
        con.execute(
            f"INSERT INTO {stage_name('dimension_meta')} BY NAME SELECT * FROM _el_dim_meta"
        )
    return dims


_META = pa.schema(
    [("job_id", pa.string()), ("name", pa.string()), ("unit", pa.string()),
     ("higher_is_better", pa.bool_())]
)  # fmt: skip


def scorer_scale(metadata: Any, kinds: tuple[int, int]) -> tuple[str | None, bool | None]:
    """The unit and direction an Inspect log states for a scorer's values; ``None`` where
    it states nothing (never guessed).

    Inspect has no field for a scorer's scale. What a log does state: a scorer's own
    ``metadata`` (``@scorer(metrics=..., unit="pct", higher_is_better=True)``), read under
    the names EnvLoop uses; and its values. Values that are all Inspect's correctness
    letters (``C`` / ``P`` / ``I`` / ``N``, read as 1 / 0.5 / 0 / 0, so their ``accuracy``
    or ``mean`` is the share correct) are a 0–1 ``rate`` where higher is better. A
    number a scorer returns says neither its range nor its direction.

    ``kinds`` is ``(values, of them letters)``.

    Examples
    --------
    >>> scorer_scale({}, (60, 60)), scorer_scale({}, (60, 0)), scorer_scale({}, (0, 0))
    (('rate', True), (None, None), (None, None))
    >>> scorer_scale({"unit": "pct", "higher_is_better": False}, (60, 0))
    ('pct', False)
    """
    said = metadata if isinstance(metadata, Mapping) else {}
    unit = said.get("unit") if isinstance(said.get("unit"), str) else None
    hib = said.get("higher_is_better") if isinstance(said.get("higher_is_better"), bool) else None
    values, letters = kinds
    if values and letters == values:  # correctness letters: the share correct
        return unit or "rate", True if hib is None else hib
    return unit, hib


def insert_tasks(
    con: duckdb.DuckDBPyConnection,
    scratch: duckdb.DuckDBPyConnection,
    jid: str,
    listed: list[str],
) -> None:
    """The requested tasks (``listed`` first, then any other id seen), their digests
    and tags (metadata leaves, nested keys dotted, lists as JSON text): worked out on
    ``scratch`` from each id's first sample, written on ``con``."""
    # the listed ids as an Arrow column (a list parameter of 100,000 ids took ~0.4 s)
    _el_listed = pa.table(
        {"task": pa.array(listed, pa.string()), "pos": pa.array(range(len(listed)), pa.int64())}
    )
    scratch.execute(
        f"""CREATE OR REPLACE TEMP TABLE _el_insp_tasks AS
        WITH firsts AS (SELECT task, input, target, metadata, ord AS first FROM {FIRSTS}),
        listed AS (SELECT task, pos FROM _el_listed)
        SELECT coalesce(l.task, f.task) AS task,
               row_number() OVER (ORDER BY l.pos NULLS LAST, f.first) - 1 AS position,
               left(sha256(to_json([f.input, f.target])::VARCHAR), 16) AS digest,
               f.metadata AS metadata
        FROM listed l FULL JOIN firsts f ON f.task = l.task"""
    )
    scratch.execute(
        """CREATE OR REPLACE TEMP TABLE _el_insp_tags AS
        SELECT t.task, e.fullkey[3:] AS key,  -- DuckDB writes the keys unquoted: a.b
               CASE e.type WHEN 'VARCHAR' THEN e.value->>'$' ELSE e.value::VARCHAR END AS value
        FROM _el_insp_tasks t, json_tree(t.metadata) e
        WHERE json_type(t.metadata) = 'OBJECT' AND e.type NOT IN ('OBJECT', 'NULL')
          AND NOT contains(e.fullkey, '[')  -- a list's items stay in the list's JSON text"""
    )
    tags = scratch.execute(
        "SELECT $jid AS job_id, task, key, value FROM _el_insp_tags", {"jid": jid}
    ).to_arrow_table()
    tasks = scratch.execute(
        """SELECT $jid AS job_id, t.task, t.position::INTEGER AS position, t.digest,
                  coalesce(g.tags, '{}')::VARCHAR AS tags
           FROM _el_insp_tasks t
           LEFT JOIN (SELECT task, json_group_object(key, value) AS tags
                      FROM _el_insp_tags GROUP BY task) g ON g.task = t.task
           ORDER BY t.position""",
        {"jid": jid},
    ).to_arrow_table()
    scratch.execute("DROP TABLE _el_insp_tasks")
    scratch.execute("DROP TABLE _el_insp_tags")
    append_arrow(con, "task_tags", tags)
    append_arrow(con, "tasks", tasks)
