"""The tasks, tags and dimensions of an Inspect log, from what the chunks kept
(:mod:`envloop_nb._loaders.inspect.sql`: each id's first sample)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ..common.stage import stage_name
from .sql import FIRSTS, append_arrow

__all__ = ["insert_dimension_meta", "insert_tasks"]


def insert_dimension_meta(con: duckdb.DuckDBPyConnection, jid: str) -> list[str]:
    """Record the job's dimensions (every name a value was written under); return them,
    sorted."""
    names = con.execute(
        "SELECT DISTINCT name FROM dimensions WHERE job_id = $jid ORDER BY name", {"jid": jid}
    ).fetchall()
    dims = [str(n) for (n,) in names]
    if dims:
        con.execute(
            f"""INSERT INTO {stage_name("dimension_meta")} BY NAME
                SELECT $jid AS job_id, unnest($names::VARCHAR[]) AS name""",
            {"jid": jid, "names": dims},
        )
    return dims


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
