"""The comparison's leaderboard, and the workspace leaderboard of saved snapshots.

``leaderboard(state)`` ranks the compared jobs; ``save_snapshot`` stores a job's headline
numbers in the workspace's ``leaderboard`` table (keyed by an attempts fingerprint, so
the same job is never saved twice) and ``saved_leaderboard`` ranks what was saved.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._metrics.facts import noted_summary
from .._metrics.passk_views import curve
from .._metrics.summary import job_summary
from .._present.display import format_metric
from .._store.frames import to_frame
from .._store.ref import job_info, metrics_only
from .._types import Policy
from .guard import mark, pair_differences
from .state import CompareState
from .tables import coverage_text, groups, none_or_float

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from .._metrics.summary import JobSummary
else:
    from .state import pandas as pd

__all__ = ["LeaderboardSnapshot", "leaderboard", "save_snapshot", "saved_leaderboard"]


def summaries(state: CompareState) -> dict[str, JobSummary]:
    """Each compared job's summary under the comparison's policy and threshold (memoized)."""
    if "summaries" not in state.data:
        state.data["summaries"] = {
            j: job_summary(state.con, j, policy=state.policy, threshold=state.threshold)
            for j in state.job_ids
        }
    found: dict[str, JobSummary] = state.data["summaries"]
    return found


def leaderboard(state: CompareState) -> pd.DataFrame:
    """One row per job, ranked by score (see ``Comparison.leaderboard``)."""
    con = state.con
    infos = {j: job_info(con, j) for j in state.job_ids}
    k_shared = min(int(infos[j]["attempts"]) for j in state.job_ids)
    dims = groups(state, "dimension")
    sums = summaries(state)
    rows = []
    for job_id in state.job_ids:
        s = sums[job_id]
        info = infos[job_id]
        if metrics_only(con, job_id) is None:
            point = curve(
                con, job_id, ks=[k_shared], policy=state.policy, threshold=state.threshold
            )
        else:  # the run's own pass@k, at its own k only (no per-task counts to recompute)
            same = k_shared == s.k
            point = pd.DataFrame({"pass@k": [s.pass_at_k if same else None],
                                  "pass^k": [s.pass_hat_k if same else None]})  # fmt: skip
        row: dict[str, Any] = {
            "job": job_id,
            "model": info["model"] or job_id,
            "status": info["status"],
            "score": s.score,
            "pass": s.pass_,
            f"pass@{k_shared}": none_or_float(point["pass@k"].iloc[0]),
            f"pass^{k_shared}": none_or_float(point["pass^k"].iloc[0]),
            "scored": s.scored,
            "missing": s.missing,
            "total": s.total,
            "complete_members": s.complete_members,
            "total_members": s.total_members,
        }
        for _, d in dims[dims["job"] == job_id].iterrows():
            row[str(d["group"])] = d["value"]
        row["coverage"] = (
            "coverage unknown" if s.scored is None else coverage_text(s.scored, s.total)
        )
        warnings = []
        if s.missing:
            warnings.append(f"⚠ {s.missing:,} missing")
        if info["status"] != "completed":
            warnings.append(f"⚠ job {info['status']}")
        comparable = job_id == state.baseline or not pair_differences(state, job_id)
        if not comparable:
            warnings.append("⚠ not comparable to baseline")
        row["warning"] = " · ".join(warnings)
        row["comparable"] = comparable
        rows.append(row)
    frame = pd.DataFrame(rows)
    # Jobs comparable with the baseline rank first by score; the others after them (their
    # scores are over other work), marked in ``comparable`` and ``warning``.
    score = pd.to_numeric(frame["score"], errors="coerce").tolist()
    keys = [
        (not ok, -s if s == s else math.inf)
        for ok, s in zip(frame["comparable"], score, strict=True)
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)  # stable: ties keep the job order
    ranks: dict[int, int] = {}
    for pos, i in enumerate(order):  # the same group and score: the same rank
        ranks[i] = next((ranks[j] for j in order[:pos] if keys[j] == keys[i]), pos + 1)
    frame.insert(0, "rank", [ranks[i] for i in range(len(frame))])
    frame = frame.iloc[order].reset_index(drop=True)
    frame.attrs["mark"] = mark(state)
    return frame


@dataclass(frozen=True)
class LeaderboardSnapshot:
    """A job's headline numbers saved in the workspace leaderboard.

    ``new`` is False when the same job (same id, same attempts fingerprint, same policy
    and threshold) had been saved before and the earlier snapshot was returned.
    """

    snapshot_id: str
    job_id: str
    fingerprint: str
    saved_at: Any
    score: float | None
    scored: int | None
    missing: int | None
    total: int
    new: bool

    def __str__(self) -> str:
        state = "saved" if self.new else "already saved"
        return f"{self.job_id} {state} as {self.snapshot_id}: score {format_metric(self.score)}" + (
            f" · {self.scored:,}/{self.total:,} scored, {self.missing:,} missing"
            if self.scored is not None and self.missing is not None
            else f" · coverage of {self.total:,} attempts unknown"
        )


_FINGERPRINT_SQL = """
SELECT sha256(coalesce(string_agg(
           concat_ws('|', task, attempt, status, coalesce(reward::VARCHAR, 'null')),
           chr(10) ORDER BY task, attempt), '')
           || '#' || (SELECT attempts FROM jobs WHERE job_id = $job)
           || '#' || coalesce((SELECT string_agg(task || '=' || coalesce(digest, ''), ','
                                                 ORDER BY task)
                               FROM tasks WHERE job_id = $job), '')
           || coalesce('#' || (SELECT platform_metrics::VARCHAR FROM jobs  -- metrics-only
                               WHERE job_id = $job
                                 AND json_extract_string(extra, '$.summarised.metrics_only') = 'true'), '')
           || coalesce('#' || (SELECT string_agg(concat_ws('|', task, coalesce(threshold::VARCHAR, 'null'),
                                   dispatched, scored, invalid, passes, nonbinary, reward_sum,
                                   reward_sumsq, reward_min, reward_max), chr(10)
                                   ORDER BY task, threshold NULLS FIRST)
                               FROM task_summaries WHERE job_id = $job), ''))
FROM attempts WHERE job_id = $job
"""  # a summarised job (no attempts here) is fingerprinted by its per-task counts


def save_snapshot(
    con: duckdb.DuckDBPyConnection,
    job_id: str,
    *,
    policy: Policy = "unknown",
    threshold: float | None = None,
) -> LeaderboardSnapshot:
    """Save a job's headline numbers in the workspace leaderboard (no duplicates).

    The key is the job id plus a fingerprint of its attempts of record (task, attempt,
    status, reward), its requested tasks and digests and k, plus the policy and
    threshold. Saving the same job again returns the saved snapshot (``new=False``);
    a job reloaded with different attempts gets a new snapshot. The stored summary
    carries the source's note (:func:`envloop_nb._metrics.facts.noted_summary`).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("sample_data/base.json")
    >>> first = save_snapshot(ws.con, a.id)
    >>> first.new, first.job_id, round(first.score, 3), first.missing
    (True, 'job_base', 0.501, 33)
    >>> again = save_snapshot(ws.con, a.id)  # same job, same attempts: the saved snapshot
    >>> again.new, again.snapshot_id == first.snapshot_id
    (False, True)
    >>> save_snapshot(ws.con, a.id, policy="failure").new  # another policy: its own snapshot
    True
    """
    row = con.execute(_FINGERPRINT_SQL, {"job": job_id}).fetchone()
    fingerprint = str(row[0]) if row else ""
    found = con.execute(
        """SELECT snapshot_id, saved_at, score, scored, missing, total FROM leaderboard
           WHERE job_id = ? AND fingerprint = ? AND policy = ?
                 AND threshold IS NOT DISTINCT FROM ?""",
        [job_id, fingerprint, policy, threshold],
    ).fetchone()
    if found:
        return LeaderboardSnapshot(
            found[0],
            job_id,
            fingerprint,
            found[1],
            found[2],
            found[3],
            found[4],
            found[5],
            False,
        )
    s = noted_summary(con, job_id, policy=policy, threshold=threshold)
    info = job_info(con, job_id)
    snapshot_id = f"{job_id}@{fingerprint[:12]}"
    if policy != "unknown" or threshold is not None:
        snapshot_id += f"/{policy}" + ("" if threshold is None else f"/t{threshold:g}")
    con.execute(
        """INSERT INTO leaderboard VALUES
           (?, ?, ?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            snapshot_id,
            job_id,
            fingerprint,
            info["model"],
            info["status"],
            info["dataset_name"],
            info["dataset_version"],
            info["dataset_revision"],
            info["runner"],
            s.k,
            policy,
            threshold,
            s.score,
            s.pass_,
            s.pass_at_k,
            s.pass_hat_k,
            s.total,
            s.scored,
            s.missing,
            s.complete_members,
            s.total_members,
            json.dumps(s.to_dict()),
        ],
    )
    saved = con.execute(
        "SELECT saved_at FROM leaderboard WHERE snapshot_id = ?", [snapshot_id]
    ).fetchone()
    return LeaderboardSnapshot(
        snapshot_id,
        job_id,
        fingerprint,
        saved[0] if saved else None,
        s.score,
        s.scored,
        s.missing,
        s.total,
        True,
    )


def saved_leaderboard(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The saved snapshots ranked by score within each dataset revision (best first).

    Snapshots of different dataset revisions are not comparable, so each
    ``(dataset_name, dataset_version, dataset_revision)`` has its own ranking.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> a = ws.load("sample_data/base.json")
    >>> b = ws.load("sample_data/sft-step1000.jsonl.gz")
    >>> _ = save_snapshot(ws.con, a.id), save_snapshot(ws.con, b.id)
    >>> board = saved_leaderboard(ws.con)
    >>> board[["rank", "job", "k"]].values.tolist()
    [[1, 'job_sft1000', 4], [2, 'job_base', 4]]
    >>> board["score"].round(3).tolist()
    [0.61, 0.501]
    """
    rel = con.sql(
        """SELECT rank() OVER (PARTITION BY dataset_name, dataset_version, dataset_revision
                               ORDER BY score DESC NULLS LAST) AS rank,
                  snapshot_id, job_id AS job, coalesce(model, job_id) AS model, status,
                  dataset_name, dataset_version, dataset_revision, k, policy, threshold,
                  score, pass, pass_at_k AS "pass@k", pass_hat_k AS "pass^k",
                  scored, missing, total, complete_members, total_members,
                  format('{:,}/{:,} scored', scored, total)
                      || CASE WHEN missing > 0 THEN format(', {:,} missing', missing) ELSE '' END
                      AS coverage,
                  CASE WHEN missing > 0 THEN '⚠ ' || missing || ' missing' ELSE '' END AS warning,
                  saved_at
           FROM leaderboard
           ORDER BY dataset_name, dataset_version, dataset_revision, rank, saved_at"""
    )
    frame: pd.DataFrame = to_frame(rel, "pandas")
    return frame
