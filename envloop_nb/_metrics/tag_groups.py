"""A tag's groups of a job's tasks, in the per-task counts' row order (for ``groups``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._store.memory import release_after

if TYPE_CHECKING:
    import duckdb

__all__ = ["tag_group_ids"]


def tag_group_ids(
    con: duckdb.DuckDBPyConnection, job_id: str, key: str
) -> tuple[list[str | None], np.ndarray]:
    """Group labels (sorted, a task without the tag last as None) and each task's group,
    in the per-task counts' row order (by position, then name), the tag's values joined
    to the tasks in DuckDB (no table of task names in Python to look them up in) and put
    in order by their positions in numpy (DuckDB's sort would hold the values too); by
    name in SQL only where positions tie."""
    joined = """SELECT t.position, g.value FROM tasks t LEFT JOIN task_tags g
               ON g.job_id = t.job_id AND g.task = t.task AND g.key = $key
           WHERE t.job_id = $job_id"""
    found = con.execute(joined, {"job_id": job_id, "key": key}).to_arrow_table()
    release_after(con, found.num_rows)
    position = found.column(0).to_numpy()
    by_position = np.argsort(position, kind="stable")
    found = found.take(by_position)
    if (np.diff(position[by_position]) == 0).any():
        found = con.execute(
            f"{joined} ORDER BY t.position, t.task", {"job_id": job_id, "key": key}
        ).to_arrow_table()
    values = found.column(1).combine_chunks().dictionary_encode()
    names = values.dictionary.to_pylist()
    order = sorted(range(len(names)), key=lambda i: names[i])
    rank = np.empty(len(names) + 1, dtype=np.int64)
    rank[order] = np.arange(len(names))
    rank[len(names)] = len(names)  # no tag (or a null value): the last group
    index = values.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
    group = rank[np.asarray(index, dtype=np.int64)]
    labels: list[str | None] = [names[i] for i in order]
    if values.null_count:
        labels.append(None)
    return labels, group
