"""The query layer of the Cases view: filter, sort and page a job's attempts or tasks in DuckDB.

A frozen :class:`CaseQuery` describes what the user asked for (view, filters, sort,
page); :func:`fetch_page` answers it with one page of rows and the total count, both
computed by DuckDB, so a page of a million-attempt job costs one top-N query and one
count. :class:`CaseSource` keeps what is worth keeping between pages of one job (the
per-task table for a policy/threshold, the bucket assignment, the dimension names).

Not a widget: the Cases tab (:mod:`envloop_nb._ui.cases_tab`) wires controls to it, the
HTML is built by the pure renderers of :mod:`envloop_nb._present.cases_html`, and the
detail of one attempt or task is read by :mod:`envloop_nb._ui.cases_detail`.

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> page = fetch_page(job.con, job.id, CaseQuery(status=("completed",), sort="reward"))
>>> page.total, list(page.frame["reward"])
(4, [0.0, 1.0, 1.0, 1.0])
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from .._present.cases_html import SNIPPET, is_missing, messages_snippet
from .._store.sql import ident
from .._types import Policy
from .cases_page import CasePage, CaseQuery, TextColumns, View, page_html
from .cases_search import match_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = [
    "ATTEMPT_SORTS",
    "TEXT_SORTS",
    "CasePage",
    "CaseQuery",
    "CaseSource",
    "View",
    "fetch_page",
    "page_html",
]

_ids = itertools.count(1)

#: Columns of the attempt view that sort directly (others: dimensions, ``bucket``).
ATTEMPT_SORTS: dict[str, str] = {
    "task": "x.position",
    "attempt": "x.attempt",
    "subset": "x.subset",
    "status": "x.status",
    "reward": "x.reward",
    "composite": "x.composite",
    "turns": "x.turns",
    "tokens": "x.tokens",
    "duration_s": "x.duration_s",
    "exit_code": "x.exit_code",
}
#: Text columns: sorting by them reads the attempts table itself (``messages`` is the
#: input of a ChatML job).
TEXT_SORTS = {"input": "input", "messages": "input", "output": "output", "error": "error"}


def _used(sql: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters ``sql`` names (DuckDB refuses extra named parameters)."""
    return {k: v for k, v in params.items() if f"${k}" in sql}


def _snippet(expr: str) -> str:
    return f"left(regexp_replace({expr}, '\\s+', ' ', 'g'), {SNIPPET + 1})"


class CaseSource:
    """Per-job state reused across pages: per-task tables, bucket assignment, dimensions.

    Parameters
    ----------
    con, job_id
        The workspace connection and the job.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> src = CaseSource(job.con, job.id)
    >>> page = src.fetch(CaseQuery(view="task", sort="pass_rate", descending=True))
    >>> list(page.frame["task"]), page.frame["pass_rate"].tolist()[:2]
    (['B', 'A', 'C'], [1.0, 0.5])
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, job_id: str) -> None:
        self.con = con
        self.job_id = job_id
        self._uid = next(_ids)
        self._task_tables: dict[tuple[str, float | None], str] = {}
        self._bucket_table: str | None = None
        self._bucket_per_attempt = False
        self._attempt_table: str | None = None
        self._counts: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._loaded_at: Any = None
        self.k = int(
            con.execute("SELECT attempts FROM jobs WHERE job_id = ?", [job_id]).fetchone()[0]  # type: ignore[index]
        )
        self.dimensions: tuple[str, ...] = ()
        self.reload_dimensions()
        has_composite = con.execute(
            "SELECT count(composite) > 0 FROM attempts WHERE job_id = ?", [job_id]
        ).fetchone()
        self.has_composite = bool(has_composite and has_composite[0])
        has_chat = con.execute(
            "SELECT count(*) > 0 FROM (SELECT 1 FROM attempts WHERE job_id = ? AND input_is_chat"
            " LIMIT 1)",
            [job_id],
        ).fetchone()
        #: ChatML inputs: the input column is ``messages`` (the whole conversation).
        self.has_chat = bool(has_chat and has_chat[0])

    def reload_dimensions(self) -> None:
        """Read the job's dimension names again (a manual dimension was added)."""
        self.dimensions = tuple(
            r[0]
            for r in self.con.execute(
                """SELECT name FROM dimensions WHERE job_id = $j
                   UNION SELECT name FROM manual_dimensions WHERE job_id = $j ORDER BY name""",
                {"j": self.job_id},
            ).fetchall()
        )

    def close(self) -> None:
        """Drop this source's temp tables (they also vanish with the connection)."""
        names = [*self._task_tables.values(), self._attempt_table, self._bucket_table]
        for name in names:
            if name is not None:
                self.con.execute(f"DROP TABLE IF EXISTS {name}")
        self._task_tables.clear()
        self._attempt_table = self._bucket_table = None
        self._counts.clear()

    # -- state -------------------------------------------------------------------------
    def task_table(self, policy: Policy = "unknown", threshold: float | None = None) -> str:
        """Name of a temp table with the per-task numbers under ``policy``/``threshold``."""
        key = (policy, threshold)
        if key not in self._task_tables:
            from .._metrics.passk_views import samples

            frame = samples(
                self.con, self.job_id, ks=[self.k], policy=policy, threshold=threshold,
                frame="polars",
            ).to_arrow()  # fmt: skip
            name = f"_enb_cases_tasks_{self._uid}_{len(self._task_tables)}"
            self.con.register("_enb_cases_samples", frame)
            try:
                self.con.execute(
                    f"""CREATE OR REPLACE TEMP TABLE {name} AS
                        SELECT t.position, s.*, json_extract_string(s.tags, '$.subset') AS subset
                        FROM _enb_cases_samples s JOIN tasks t
                          ON t.job_id = $job_id AND t.task = s.task""",
                    {"job_id": self.job_id},
                )
            finally:
                self.con.unregister("_enb_cases_samples")
            self._task_tables[key] = name
        return self._task_tables[key]

    def set_buckets(self, frame: Any | None) -> None:
        """Use the ``bucket`` column of a bucketed per-task (or per-attempt) frame.

        ``frame`` is what ``BucketRules.apply`` returns: it has ``task`` (and
        ``attempt`` for per-attempt rules) and ``bucket``. ``None`` removes buckets.
        """
        self._counts.clear()
        if frame is None:
            self._bucket_table = None
            return
        cols = list(frame.columns)
        if "task" not in cols or "bucket" not in cols:
            raise ValueError("a bucket assignment needs 'task' and 'bucket' columns")
        per_attempt = "attempt" in cols
        keys = "task, attempt" if per_attempt else "task"
        name = f"_enb_cases_buckets_{self._uid}"
        self.con.register("_enb_cases_bucket_frame", frame)
        try:
            self.con.execute(
                f"""CREATE OR REPLACE TEMP TABLE {name} AS
                    SELECT {keys}, bucket::VARCHAR AS bucket FROM _enb_cases_bucket_frame"""
            )
        finally:
            self.con.unregister("_enb_cases_bucket_frame")
        self._bucket_table = name
        self._bucket_per_attempt = per_attempt

    @property
    def has_buckets(self) -> bool:
        return self._bucket_table is not None

    def bucket_names(self) -> list[str]:
        """Buckets present in the current assignment, in order of first appearance."""
        if self._bucket_table is None:
            return []
        rows = self.con.execute(
            f"SELECT bucket FROM {self._bucket_table} WHERE bucket IS NOT NULL "
            "GROUP BY bucket ORDER BY min(rowid)"
        ).fetchall()
        return [r[0] for r in rows]

    def tag_values(self, key: str = "subset") -> list[str]:
        """Distinct values of one task tag (for a filter dropdown)."""
        rows = self.con.execute(
            "SELECT DISTINCT value FROM task_tags WHERE job_id = ? AND key = ? "
            "AND value IS NOT NULL ORDER BY value",
            [self.job_id, key],
        ).fetchall()
        return [r[0] for r in rows]

    def columns(
        self, view: View, *, text: TextColumns = "both", search: bool = False
    ) -> tuple[str, ...]:
        """Columns a page of ``view`` has, in display order (``text``: the input column
        switch; ``search``: a search is on, the attempt view shows where it matched)."""
        if view == "task":
            cols = ["task", "subset", "n", "scored", "passes", "pass_rate"]
            cols += [f"pass@{self.k}", f"pass^{self.k}", "reward_mean"]
        else:
            cols = ["task", "attempt", "subset", "status"]
            cols += ["match"] if search else []
            cols += ["reward"]
            cols += ["composite"] if self.has_composite else []
            cols += list(self.dimensions)
        if self.has_buckets and not (view == "task" and self._bucket_per_attempt):
            cols.append("bucket")
        if view == "attempt":
            cols += ["turns", "tokens", "duration_s"]
            cols += [] if text == "completion" else ["messages" if self.has_chat else "input"]
            cols += [] if text == "prompt" else ["output"]
            cols += ["error"]
        return tuple(cols)

    def sortable(self, view: View) -> tuple[str, ...]:
        """Columns ``CaseQuery.sort`` accepts for ``view`` (shown or not)."""
        return tuple(c for c in self.columns(view) if c != "match")

    # -- queries -----------------------------------------------------------------------
    def _bucket_join(self, view: View, alias: str) -> tuple[str, str]:
        if self._bucket_table is None or (view == "task" and self._bucket_per_attempt):
            return "", "NULL::VARCHAR"
        on = f"b.task = {alias}.task"
        if self._bucket_per_attempt:
            on += f" AND b.attempt = {alias}.attempt"
        return f"LEFT JOIN {self._bucket_table} b ON {on}", "b.bucket"

    def _filters(self, q: CaseQuery, params: dict[str, Any], alias: str, bucket: str) -> list[str]:
        """WHERE conditions; ``alias`` is ``s`` (per-task table) or ``x`` (attempt index)."""
        where: list[str] = []
        task_view = q.view == "task"
        if q.status:
            params["status"] = list(q.status)
            if task_view:
                where.append(
                    f"{alias}.task IN (SELECT y.task FROM attempts y WHERE y.job_id = $job_id "
                    "AND list_contains($status, y.status))"
                )
            else:
                where.append(f"list_contains($status, {alias}.status)")
        if q.tag_value is not None:
            params["tag_value"] = q.tag_value
            if q.tag_key == "subset":
                where.append(f"{alias}.subset = $tag_value")
            else:
                params["tag_key"] = q.tag_key
                where.append(
                    f"{alias}.task IN (SELECT g.task FROM task_tags g WHERE g.job_id = $job_id "
                    "AND g.key = $tag_key AND g.value = $tag_value)"
                )
        if q.bucket is not None:
            params["bucket"] = q.bucket
            where.append(f"{bucket} = $bucket")
        value = f"{alias}.pass_rate" if task_view else f"{alias}.reward"
        if q.low is not None:
            params["low"] = float(q.low)
            where.append(f"{value} >= $low")
        if q.high is not None:
            params["high"] = float(q.high)
            where.append(f"{value} <= $high")
        if q.search.strip():
            params["needle"] = q.search.strip().lower()
            text = " OR ".join(
                f"contains(lower(m.{c}), $needle)" for c in ("input", "output", "error")
            )
            task_match = f"contains(lower({alias}.task), $needle)"
            if task_view:
                where.append(
                    f"({task_match} OR {alias}.task IN (SELECT m.task FROM attempts m "
                    f"WHERE m.job_id = $job_id AND ({text})))"
                )
            else:
                where.append(
                    f"({alias}.task, {alias}.attempt) IN (SELECT m.task, m.attempt FROM attempts m "
                    f"WHERE m.job_id = $job_id AND (contains(lower(m.task), $needle) OR {text}))"
                )
        return where

    def _order(
        self, q: CaseQuery, cols: tuple[str, ...], bucket: str, params: dict[str, Any]
    ) -> tuple[str, str]:
        """ORDER BY clause and any extra join the sort column needs."""
        tiebreak = "x.position, x.attempt" if q.view == "attempt" else "s.position"
        if q.sort is None:
            return tiebreak, ""
        sortable = self.sortable(q.view)
        if q.sort not in sortable:
            raise ValueError(
                f"cannot sort the {q.view} view by {q.sort!r}; one of {list(sortable)}"
            )
        direction = "DESC" if q.descending else "ASC"
        join = ""
        if q.sort == "bucket":
            expr = bucket
        elif q.view == "task":
            expr = "s.task" if q.sort == "task" else f"s.{ident(q.sort)}"
        elif q.sort in ATTEMPT_SORTS:
            expr = ATTEMPT_SORTS[q.sort]
        elif q.sort in TEXT_SORTS:
            join = (
                "JOIN attempts a ON a.job_id = $job_id AND a.task = x.task "
                "AND a.attempt = x.attempt"
            )
            expr = f"a.{TEXT_SORTS[q.sort]}"
        else:  # a score dimension
            params["sort_dim"] = q.sort
            join = (
                "LEFT JOIN (SELECT task, attempt, value FROM dimensions WHERE job_id = $job_id "
                "AND name = $sort_dim) d ON d.task = x.task AND d.attempt = x.attempt"
            )
            expr = "d.value"
        return f"{expr} {direction} NULLS LAST, {tiebreak}", join

    def _check_fresh(self) -> None:
        """Drop cached tables when the job was reloaded since they were built."""
        row = self.con.execute(
            "SELECT loaded_at FROM jobs WHERE job_id = ?", [self.job_id]
        ).fetchone()
        if row is None:
            raise KeyError(f"job {self.job_id!r} is no longer in the workspace")
        if row[0] != self._loaded_at:
            self._loaded_at = row[0]
            self._task_tables.clear()
            self._attempt_table = None
            self._counts.clear()

    def attempt_table(self) -> str:
        """Name of a narrow temp table indexing the job's attempts (built once).

        One row per attempt with the columns filters and sorts need (position, subset,
        status, reward, tokens...), but none of the long texts, so counts and top-N
        scans read a few narrow columns instead of joining ``tasks`` every time.
        """
        if self._attempt_table is None:
            name = f"_enb_cases_attempts_{self._uid}"
            self.con.execute(
                f"""CREATE OR REPLACE TEMP TABLE {name} AS
                    SELECT a.task, a.attempt, t.position,
                           json_extract_string(t.tags, '$.subset') AS subset, a.status,
                           a.reward, a.composite, a.turns,
                           CASE WHEN a.input_tokens IS NULL AND a.output_tokens IS NULL THEN NULL
                                ELSE coalesce(a.input_tokens, 0) + coalesce(a.output_tokens, 0)
                           END AS tokens,
                           a.duration_s, a.exit_code
                    FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
                    WHERE a.job_id = $job_id
                    ORDER BY t.position, a.attempt""",
                {"job_id": self.job_id},
            )
            self._attempt_table = name
        return self._attempt_table

    def _count(self, sql: str, params: dict[str, Any]) -> int:
        """Row count of a filter set, cached (paging and sorting never change it)."""
        used = _used(sql, params)
        key = (sql, tuple(sorted((k, repr(v)) for k, v in used.items())))
        if key not in self._counts:
            row = self.con.execute(sql, used).fetchone()
            self._counts[key] = int(row[0]) if row else 0
        return self._counts[key]

    def fetch(self, q: CaseQuery) -> CasePage:
        """Answer ``q`` with one page of rows and the total count (all in DuckDB)."""
        if q.page < 0 or q.page_size < 1:
            raise ValueError("page must be >= 0 and page_size >= 1")
        if q.view not in ("attempt", "task"):
            raise ValueError(f"view must be 'attempt' or 'task', got {q.view!r}")
        self._check_fresh()
        cols = self.columns(q.view, text=q.text, search=bool(q.search.strip()))
        params: dict[str, Any] = {"job_id": self.job_id}
        if q.view == "task":
            table = self.task_table(q.policy, q.threshold)
            join, bucket = self._bucket_join("task", "s")
            base = f"FROM {table} s {join}"
            where = self._filters(q, params, "s", bucket)
            at, hat = f"pass@{self.k}", f"pass^{self.k}"
            select = (
                f"s.task, s.subset, s.n, s.scored, s.passes, s.pass_rate, s.{ident(at)}, "
                f"s.{ident(hat)}, s.reward_mean, {bucket} AS bucket"
            )
        else:
            return self._fetch_attempts(q, cols, params)
        where_sql = " AND ".join(where) if where else "true"
        total = self._count(f"SELECT count(*) {base} WHERE {where_sql}", params)
        order, _ = self._order(q, cols, bucket, params)
        params["limit"], params["offset"] = q.page_size, q.page * q.page_size
        sql = (
            f"SELECT {select} {base} WHERE {where_sql} ORDER BY {order} LIMIT $limit OFFSET $offset"
        )
        frame = self.con.execute(sql, _used(sql, params)).df()
        frame = frame[[c for c in cols if c in frame.columns]]
        return CasePage(frame=frame, total=total, query=q, columns=cols)

    def _fetch_attempts(
        self, q: CaseQuery, cols: tuple[str, ...], params: dict[str, Any]
    ) -> CasePage:
        """Attempt view in two steps: keys of the page (top-N), then its display columns.

        The count and the top-N touch only the columns the filters and the order need;
        text snippets are cut for the page's rows alone.
        """
        index = self.attempt_table()
        join, bucket = self._bucket_join("attempt", "x")
        where = self._filters(q, params, "x", bucket)
        where_sql = " AND ".join(where) if where else "true"
        total = self._count(f"SELECT count(*) FROM {index} x {join} WHERE {where_sql}", params)
        order, sort_join = self._order(q, cols, bucket, params)
        params["limit"], params["offset"] = q.page_size, q.page * q.page_size
        keys_sql = (
            f"SELECT x.task, x.attempt FROM {index} x {join} {sort_join} WHERE {where_sql} "
            f"ORDER BY {order} LIMIT $limit OFFSET $offset"
        )
        import pyarrow as pa

        keys = self.con.execute(keys_sql, _used(keys_sql, params)).to_arrow_table()
        keys = keys.append_column("_rn", pa.array(range(keys.num_rows), pa.int64()))
        join, bucket = self._bucket_join("attempt", "a")
        select = (
            "a.task, a.attempt, json_extract_string(t.tags, '$.subset') AS subset, a.status, "
            f"a.reward, a.composite, {bucket} AS bucket, a.turns, "
            "CASE WHEN a.input_tokens IS NULL AND a.output_tokens IS NULL THEN NULL ELSE "
            "coalesce(a.input_tokens, 0) + coalesce(a.output_tokens, 0) END AS tokens, "
            f"a.duration_s, {_snippet('a.input')} AS input, {_snippet('a.output')} AS output, "
            f"{_snippet('a.error')} AS error, "
            "CASE WHEN a.input_is_chat THEN a.input END AS _chat"
        )
        match_params: dict[str, Any] = {}
        if "match" in cols:
            select += f", {match_sql('a', match_params, q.search)} AS match"
        self.con.register("_enb_cases_keys", keys)
        try:
            frame = self.con.execute(
                f"""SELECT {select} FROM _enb_cases_keys p
                    JOIN attempts a ON a.job_id = $job_id AND a.task = p.task
                                   AND a.attempt = p.attempt
                    JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
                    {join} ORDER BY p._rn""",
                {"job_id": self.job_id, **match_params},
            ).df()
        finally:
            self.con.unregister("_enb_cases_keys")
        chat = frame.pop("_chat")
        titles: dict[str, list[str]] = {}
        if self.has_chat:  # conversations: turns and the last user turn, whole on hover
            cells = [
                (s, s) if is_missing(c) else messages_snippet(c)
                for s, c in zip(frame["input"], chat, strict=True)
            ]
            frame["messages"] = [c for c, _ in cells]
            titles["messages"] = [t for _, t in cells]
        if self.dimensions:
            frame = self._with_dimensions(frame)
        frame = frame[[c for c in cols if c in frame.columns]]
        return CasePage(frame=frame, total=total, query=q, columns=cols, titles=titles)

    def _with_dimensions(self, frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty:
            for name in self.dimensions:
                frame[name] = []
            return frame
        dims = self.con.execute(
            """SELECT task, attempt, name, value FROM dimensions
               WHERE job_id = $job_id AND list_contains($tasks, task)""",
            {"job_id": self.job_id, "tasks": sorted(set(frame["task"]))},
        ).df()
        wide = dims.pivot_table(index=["task", "attempt"], columns="name", values="value")
        wide = wide.reindex(columns=list(self.dimensions)).reset_index()
        wide.columns.name = None
        return frame.merge(wide, on=["task", "attempt"], how="left")


def fetch_page(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    query: CaseQuery,
    *,
    buckets: Any | None = None,
) -> CasePage:
    """One page of the Cases view of a job and the total number of matching rows.

    ``buckets`` is an optional bucketed frame (``task`` [, ``attempt``], ``bucket``).
    For repeated calls keep a :class:`CaseSource` instead: it caches per-task tables.
    """
    source = CaseSource(con, job_id)
    source.set_buckets(buckets)
    return source.fetch(query)
