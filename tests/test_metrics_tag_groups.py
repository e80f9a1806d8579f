"""``tag_group_ids``: a tag's group of each task, in the per-task counts' row order."""

from __future__ import annotations

import pandas as pd

import envloop_nb as enb
from envloop_nb._metrics.tag_groups import tag_group_ids


def _job(ws: enb.Workspace) -> None:
    rows = [
        {"task": t, "attempt": 1, "reward": 1.0, "subset": s}
        for t, s in [("b", "x"), ("a", "y"), ("d", None), ("c", "x"), ("e", "y")]
    ]
    ws.load(pd.DataFrame(rows), job_id="j", k=1)


def _brute(ws: enb.Workspace) -> list[str | None]:
    """Each task's tag value by (position, task), looked up one task at a time."""
    tasks = ws.sql("SELECT task FROM tasks WHERE job_id = 'j' ORDER BY position, task").fetchall()
    out = []
    for (task,) in tasks:
        row = ws.sql(
            "SELECT value FROM task_tags WHERE job_id = 'j' AND task = ? AND key = 'subset'",
            params=[task],
        ).fetchone()
        out.append(row[0] if row else None)
    return out


def _labels_of(ws: enb.Workspace) -> list[str | None]:
    labels, group = tag_group_ids(ws.con, "j", "subset")
    return [labels[g] for g in group]


def test_groups_follow_the_positions() -> None:
    with enb.open() as ws:
        _job(ws)
        labels, _ = tag_group_ids(ws.con, "j", "subset")
        assert labels == ["x", "y", None]
        assert _labels_of(ws) == _brute(ws) == ["x", "y", None, "x", "y"]


def test_tied_positions_are_ordered_by_name() -> None:
    with enb.open() as ws:
        _job(ws)
        ws.con.execute("UPDATE tasks SET position = position // 2 WHERE job_id = 'j'")
        # positions 0, 0, 1, 1, 2: b a d c e -> a b c d e by name within a position
        assert _labels_of(ws) == _brute(ws) == ["y", "x", "x", None, "y"]
