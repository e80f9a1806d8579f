"""Checkpoint comparison: guard, leaderboard, table, paired statistics, transitions, exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb._buckets.rules import Bucket, BucketRules
from envloop_nb._comparison import Comparison, Difference
from tests.compare_helpers import envloop_job, fixing_pair, write_job
from tests.conftest import SAMPLE_DATA, THREE_TASKS


def load(ws: enb.Workspace, tmp_path: Path, *docs: dict) -> list[enb.Job]:
    return [ws.load(write_job(tmp_path, d)) for d in docs]


# -- entry point ------------------------------------------------------------------------
def test_more_than_five_jobs_is_refused(ws: enb.Workspace, tmp_path: Path) -> None:
    jobs = load(ws, tmp_path, *[envloop_job(f"j{i}", {"a": [1.0]}) for i in range(6)])
    with pytest.raises(enb.EnvloopError, match=r"at most 5 jobs .* got 6"):
        ws.compare(jobs)


def test_one_job_is_its_summary(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)
    result = ws.compare([job])
    assert isinstance(result, enb.JobSummary)
    assert result == job.summary()


def test_a_single_id_is_refused_not_iterated(ws: enb.Workspace) -> None:
    """ws.compare("job_base") iterated the string ('no job 'j'...'): ask for a list."""
    job = ws.load(THREE_TASKS)
    msg = r"compare takes a list of jobs, got the single job id 'job_abc0001': pass a list"
    with pytest.raises(TypeError, match=msg):
        ws.compare("job_abc0001")
    with pytest.raises(TypeError, match=r"got a single job \('job_abc0001'\): pass a list"):
        ws.compare(job)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got int 3"):
        ws.compare(3)  # type: ignore[arg-type]
    assert ws.compare(("job_abc0001",)) == job.summary()  # any sequence of ids is fine


def test_duplicate_job_and_unknown_baseline(ws: enb.Workspace, tmp_path: Path) -> None:
    a, _ = load(ws, tmp_path, envloop_job("a", {"t": [1.0]}), envloop_job("b", {"t": [0.0]}))
    with pytest.raises(enb.EnvloopError, match="listed twice"):
        ws.compare([a, a])
    cmp = ws.compare(["b"], baseline="a")  # a baseline outside the list is put first
    assert isinstance(cmp, Comparison)
    assert cmp.job_ids == ["a", "b"] and cmp.baseline.id == "a"
    with pytest.raises(enb.EnvloopError, match="no job 'zz'"):
        ws.compare(["a", "zz"])


# -- known answers ------------------------------------------------------------------------
def test_identical_jobs_zero_difference_no_significance(ws: enb.Workspace, tmp_path: Path) -> None:
    base, _ = fixing_pair()
    twin = json.loads(json.dumps(base))
    twin["job"]["id"] = "job_twin"
    a, b = load(ws, tmp_path, base, twin)
    cmp = ws.compare([a, b])
    assert cmp.comparable and cmp.differences == []
    row = cmp.paired().iloc[0]
    assert row["score_diff"] == 0 and row["score_low"] == 0 and row["score_high"] == 0
    assert row["pass_diff"] == 0
    assert row["fixed"] == 0 and row["broken"] == 0 and row["mcnemar_p"] == 1.0
    assert row["verdict"].startswith("within noise")
    tr = cmp.transitions().set_index("transition")["count"]
    assert tr["fixed"] == 0 and tr["broken"] == 0
    assert tr["still failing"] == 40 and tr["still passing"] == 20
    assert cmp.strengths().empty  # equal everywhere: nobody is above anybody


def test_fixing_30_of_40_failed_tasks_is_significant(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    cmp = ws.compare([a, b], baseline=a)
    row = cmp.paired().iloc[0]
    assert row["shared_complete"] == 60 and row["shared_share"] == 1.0
    assert row["score_diff"] == pytest.approx(30 / 60)
    assert row["score_low"] > 0.3 and row["score_high"] < 0.7
    assert (row["fixed"], row["broken"]) == (30, 0)
    assert row["mcnemar_p"] == pytest.approx(2 * 0.5**30)
    assert row["verdict"] == "beyond noise: job_new is better than job_base"
    tr = cmp.transitions()
    fixed = tr[tr["transition"] == "fixed"].iloc[0]
    assert fixed["count"] == 30 and fixed["tasks"] == [f"t{i:03d}" for i in range(30)]
    assert tr[tr["transition"] == "not compared"]["count"].iloc[0] == 0
    # Against the other baseline the sign flips.
    back = cmp.with_baseline("job_new").paired().iloc[0]
    assert back["score_diff"] == pytest.approx(-0.5)
    assert (back["fixed"], back["broken"]) == (0, 30)
    assert back["verdict"].startswith("beyond noise: job_base is worse")


def test_few_discordant_tasks_are_within_noise(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair(n_tasks=60, failed=40, fixed=3))
    row = ws.compare([a, b]).paired().iloc[0]
    assert (row["fixed"], row["broken"]) == (3, 0)
    assert row["mcnemar_p"] == pytest.approx(0.25)
    assert not row["verdict"].startswith("beyond noise")


def test_paired_matches_brute_force(ws: enb.Workspace, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    names = [f"t{i}" for i in range(30)]
    base = {t: [float(x) for x in rng.integers(0, 2, 3)] for t in names}
    new = {t: [float(x) for x in rng.integers(0, 2, 3)] for t in names}
    new["t0"] = [1.0, None, 1.0]  # incomplete: left out of the pairing
    base["t1"] = [1.0, 0.0]  # one attempt undispatched: left out too
    a, b = load(ws, tmp_path, envloop_job("a", base, k=3), envloop_job("b", new, k=3))
    row = ws.compare([a, b]).paired().iloc[0]
    keep = [t for t in names if t not in ("t0", "t1")]
    diffs = [np.mean(new[t]) - np.mean(base[t]) for t in keep]
    assert row["shared_complete"] == 28
    assert row["score_diff"] == pytest.approx(np.mean(diffs))
    assert row["score_low"] <= row["score_diff"] <= row["score_high"]
    assert "2 shared task(s) not completely scored in both" in row["note"]
    solved_a = {t: np.mean(base[t]) >= 0.5 for t in keep}
    solved_b = {t: np.mean(new[t]) >= 0.5 for t in keep}
    assert row["fixed"] == sum(solved_b[t] and not solved_a[t] for t in keep)
    assert row["broken"] == sum(solved_a[t] and not solved_b[t] for t in keep)


def test_seeded_intervals_are_reproducible(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair(fixed=10))
    one = ws.compare([a, b]).paired()
    two = ws.compare([a, b]).paired()
    pd.testing.assert_frame_equal(one, two)


def _merged(base: pd.DataFrame, oth: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The pairing as ``_paired_row`` made it before ``_matched``: a merge and a union."""
    keys = ["task", "digest"]
    m = base.merge(oth, on=keys, how="inner", suffixes=("_b", "_o"))
    return m, len(pd.concat([base[keys], oth[keys]], ignore_index=True).drop_duplicates())


@pytest.mark.parametrize(
    ("tasks_b", "tasks_o", "digests_o"),
    [
        (["a", "b", "c"], ["a", "b", "c"], ["1", "2", "3"]),  # same order: side by side
        (["a", "b", "c"], ["c", "a", "b"], ["3", "1", "2"]),  # another order: merged
        (["a", "b", "c"], ["a", "b", "c"], ["1", "9", "3"]),  # a digest differs
        (["a", "b", "c"], ["a", "b"], ["1", "2"]),  # a task fewer
        (["a", "a", "c"], ["a", "a", "c"], ["1", "1", "3"]),  # a repeat: merged
    ],
)
def test_matched_is_the_inner_merge(
    tasks_b: list[str], tasks_o: list[str], digests_o: list[str]
) -> None:
    """The pairing of two jobs' task rows is the inner merge on (task, digest) in the
    baseline's order, with its suffixes, and the union the distinct pairs of either, row
    by row and type by type, whether matched side by side or merged."""
    from envloop_nb._compare.paired import _matched

    def frame(job: str, tasks: list[str], digests: list[str], at: int) -> pd.DataFrame:
        n = len(tasks)
        return pd.DataFrame(
            {
                "job_id": [job] * n,
                "task": tasks,
                "position": np.arange(n, dtype="int32"),
                "digest": digests,
                "n": np.arange(n) + 3,
                "complete": [True] * n,
                "task_score": np.linspace(0, 1, n),
            },
            index=np.arange(n) + at,  # as filtered out of the task frame
        )

    base = frame("b", tasks_b, ["1", "2", "3"][: len(tasks_b)], 0)
    oth = frame("o", tasks_o, digests_o, len(tasks_b))
    m, union = _matched(base, oth)
    want, want_union = _merged(base, oth)
    pd.testing.assert_frame_equal(m, want, check_exact=True)
    assert union == want_union


def test_task_frame_is_the_counts_merged_with_the_tasks(ws: enb.Workspace, tmp_path: Path) -> None:
    """Each job's counts with its tasks' digest and group beside them (the left merge on
    job and task), whether the jobs list their tasks in one order or not."""
    from envloop_nb._compare.tasks import task_frame
    from envloop_nb._metrics.counts import task_counts

    tags = {"t0": {"subset": "x"}, "t2": {"subset": "y"}}
    docs = [
        envloop_job("a", {"t0": [1.0, 0.0], "t1": [0.5, None], "t2": [1.0, 1.0]}, tags=tags),
        envloop_job("b", {"t2": [0.0, 0.0], "t0": [1.0, 1.0], "t1": [0.0]}, k=2, tags=tags),
        envloop_job("c", {"t0": [1.0, 1.0], "t1": [0.0, 0.0], "t2": [1.0, 0.0]}),
    ]
    jobs = load(ws, tmp_path, *docs)
    binary = task_frame(ws.compare([jobs[0], jobs[1]]).state)["binary"]
    assert list(binary) == [False] * 3 + [True] * 3  # a has a reward of 0.5, b none
    for pair in ([jobs[0], jobs[1]], [jobs[0], jobs[2]], "a tag twice"):
        if pair == "a tag twice":  # a task's rows repeated by the join: merged, as before
            ws.con.execute("INSERT INTO task_tags SELECT * FROM task_tags WHERE job_id = 'a'")
            pair = [jobs[0], jobs[2]]
        cmp = ws.compare(pair)
        got = task_frame(cmp.state)
        meta = ws.con.execute(
            """SELECT t.job_id, t.task, coalesce(t.digest, '') AS digest,
                      coalesce(tt.value, '(no subset)') AS grp
               FROM tasks t LEFT JOIN task_tags tt
                 ON tt.job_id = t.job_id AND tt.task = t.task AND tt.key = 'subset'
               WHERE list_contains($jobs, t.job_id)""",
            {"jobs": [j.id for j in pair]},
        ).df()
        cols = ["task", "position", "k", "dispatched", "scored", "passes", "nonbinary"]
        parts = []
        for job in sorted(j.id for j in pair):
            part = task_counts(ws.con, job).select([*cols, "reward_sum"]).to_pandas()
            part.insert(0, "job_id", job)
            parts.append(part)
        want = pd.concat(parts, ignore_index=True).merge(meta, on=["job_id", "task"], how="left")
        want = want.sort_values(["job_id", "position"], kind="stable").reset_index(drop=True)
        want["binary"] = want.groupby("job_id")["nonbinary"].transform("sum") == 0
        shown = ["job_id", "task", "position", "digest", "k", "grp", *cols[3:], "reward_sum"]
        pd.testing.assert_frame_equal(
            got[[*shown, "binary"]], want[[*shown, "binary"]], check_exact=True
        )


# -- guard ---------------------------------------------------------------------------------
def test_incomparable_jobs_are_listed_and_paired_uses_shared_tasks(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    base = {f"t{i:02d}": [1.0, 0.0] for i in range(40)}
    other = {f"t{i:02d}": [1.0, 1.0, 1.0, 1.0] for i in range(12, 40)}
    other.update({f"x{i:02d}": [1.0] * 4 for i in range(12)})
    a, b = load(
        ws,
        tmp_path,
        envloop_job("job_a", base, revision="sha256:aa"),
        envloop_job("job_otherrev", other, revision="sha256:bb", runner="harbor@0.23.0"),
    )
    cmp = ws.compare([a, b])
    assert not cmp.comparable
    details = [d.detail for d in cmp.differences]
    assert "12 tasks only in job_otherrev" in details
    assert "12 tasks only in job_a" in details
    assert "attempts 2 (job_a) vs 4 (job_otherrev)" in details
    assert "dataset revision sha256:aa (job_a) vs sha256:bb (job_otherrev)" in details
    assert "runner harbor@0.22.0 (job_a) vs harbor@0.23.0 (job_otherrev)" in details
    assert all(isinstance(d, Difference) and d.blocking for d in cmp.differences)
    with pytest.raises(AttributeError):
        cmp.differences[0].detail = "x"  # type: ignore[misc]
    row = cmp.paired().iloc[0]
    assert row["shared_complete"] == 28 and row["tasks_union"] == 52
    assert "shared tasks only: 28 of 52 tasks are in both jobs" in row["note"]
    assert row["verdict"].startswith("not assessed: not comparable")
    # every view is marked
    assert cmp.mark.startswith("⚠ not comparable")
    for frame in (cmp.leaderboard(), cmp.table(), cmp.paired(), cmp.transitions()):
        assert frame.attrs["mark"] == cmp.mark
    lb = cmp.leaderboard().set_index("job")
    assert "not comparable to baseline" in lb.loc["job_otherrev", "warning"]
    assert not lb.loc["job_otherrev", "comparable"] and lb.loc["job_a", "comparable"]
    assert "NOT comparable" in cmp._repr_html_()
    strengths = cmp.strengths()
    assert strengths.empty or strengths["noise"].eq("not assessed").all()


def test_incomparable_job_ranks_after_comparable_ones(ws: enb.Workspace, tmp_path: Path) -> None:
    """Issue 37: an incomparable job with the higher score ranked #1 above the baseline."""
    base, new = fixing_pair()
    other = envloop_job("job_other", {f"x{i}": [1.0, 1.0] for i in range(10)}, model="other")
    a, b, c = load(ws, tmp_path, base, new, other)
    lb = ws.compare([a, b, c]).leaderboard()
    assert lb["job"].tolist() == ["job_new", "job_base", "job_other"]
    assert lb["rank"].tolist() == [1, 2, 3]
    assert lb["comparable"].tolist() == [True, True, False]


def test_two_jobs_find_their_differences_once(
    ws: enb.Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two jobs: the paired row's blockers are the comparison's own differences (one
    look at the jobs and tasks, not a second one for the pair); three jobs still look
    at each pair alone."""
    import envloop_nb._compare.guard as guard

    calls: list[list[str]] = []
    find = guard.find_differences

    def counted(con: object, job_ids: list[str]) -> list[Difference]:
        calls.append(list(job_ids))
        return find(con, job_ids)  # type: ignore[arg-type]

    monkeypatch.setattr(guard, "find_differences", counted)
    base = {f"t{i:02d}": [1.0, 0.0] for i in range(40)}
    other = {f"t{i:02d}": [1.0, 1.0, 1.0, 1.0] for i in range(12, 40)}
    a, b = load(
        ws,
        tmp_path,
        envloop_job("job_a", base, revision="sha256:aa"),
        envloop_job("job_b", other, revision="sha256:bb"),
    )
    cmp = ws.compare([a, b])
    blockers = [d.detail for d in cmp.differences if d.blocking]
    verdict = cmp.paired().iloc[0]["verdict"]
    assert verdict == "not assessed: not comparable (" + "; ".join(blockers) + ")"
    assert calls == [["job_a", "job_b"]]
    c = load(ws, tmp_path, envloop_job("job_c", base))[0]
    calls.clear()
    ws.compare([a, b, c]).paired()
    assert ["job_a", "job_b"] in calls and ["job_a", "job_c"] in calls


def test_digest_and_three_job_task_differences(ws: enb.Workspace, tmp_path: Path) -> None:
    tasks = {t: [1.0] for t in "abcd"}
    a, b, c = load(
        ws,
        tmp_path,
        envloop_job("a", tasks),
        envloop_job("b", tasks, digests={"a": "sha256:changed"}),
        envloop_job("c", {t: [1.0] for t in "abc"}),
    )
    cmp = ws.compare([a, b, c])
    details = [d.detail for d in cmp.differences]
    assert "1 tasks of a are missing from c" in details
    assert "1 tasks of b are missing from c" in details
    assert any("1 tasks have the same name but a different digest" in d for d in details)
    # a task whose digest differs is not paired
    assert cmp.paired().set_index("job").loc["b", "shared_complete"] == 3


def test_mostly_missing_is_not_assessed(ws: enb.Workspace, tmp_path: Path) -> None:
    names = [f"t{i}" for i in range(20)]
    base = {t: [1.0, 1.0] for t in names}
    new = {t: ([0.0, 0.0] if i < 8 else [0.0]) for i, t in enumerate(names)}  # 12 incomplete
    a, b = load(ws, tmp_path, envloop_job("a", base), envloop_job("b", new, k=2))
    cmp = ws.compare([a, b])
    assert cmp.comparable
    row = cmp.paired().iloc[0]
    assert row["shared_complete"] == 8
    assert row["verdict"].startswith("not assessed: only 8 of 20 tasks (40.0%)")
    lb = cmp.leaderboard().set_index("job")
    assert lb.loc["b", "coverage"] == "28/40 scored, 12 missing"
    assert lb.loc["b", "warning"].startswith("⚠ 12 missing")


def test_dimensions_with_other_units_or_directions_stay_apart(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    tasks = {"a": [1.0], "b": [0.0]}
    dims_a = {"a": {"accuracy": 0.9, "latency": 2.0}, "b": {"accuracy": 0.5, "latency": 4.0}}
    dims_b = {"a": {"accuracy": 80.0, "latency": 1.0}, "b": {"accuracy": 60.0, "latency": 3.0}}
    a, b = load(
        ws,
        tmp_path,
        envloop_job(
            "a",
            tasks,
            dimensions=dims_a,
            units={"accuracy": "ratio", "latency": "s"},
            higher_is_better={"accuracy": True, "latency": False},
            verifier_version="v1",
        ),
        envloop_job(
            "b",
            tasks,
            dimensions=dims_b,
            units={"accuracy": "pct", "latency": "s"},
            higher_is_better={"accuracy": True, "latency": False},
            verifier_version="v2",
        ),
    )
    cmp = ws.compare([a, b])
    assert cmp.comparable  # units and verifiers do not break comparability...
    details = [d.detail for d in cmp.differences]
    assert any(d.startswith("unit of dimension accuracy differs (ratio vs pct)") for d in details)
    assert "verifier version differs on dimension accuracy (v1 (a) vs v2 (b))" in details
    assert all(not d.blocking for d in cmp.differences)
    table = cmp.table("dimension").set_index("dimension")
    # ...but the dimension is split: no row holds both jobs' accuracy
    assert {"accuracy [ratio]", "accuracy [pct]", "latency"} <= set(table.index)
    assert pd.isna(table.loc["accuracy [ratio]", "b"]) and table.loc["accuracy [ratio]", "a"] == 0.7
    assert table.loc["accuracy [pct]", "b"] == 70.0
    # lower latency is better
    assert table.loc["latency", "best"] == "b"
    lb = cmp.leaderboard().set_index("job")
    assert lb.loc["a", "latency"] == 3.0 and pd.isna(lb.loc["a", "accuracy [pct]"])
    # issue 37: each dimension's scale once, and why the split rows are not compared
    assert table.loc["accuracy [pct]", "scale"] == "0–100 pct, higher is better"
    assert table.loc["accuracy [ratio]", "scale"] == "0–1 ratio, higher is better"
    assert table.loc["latency", "scale"] == "s, range not stated, lower is better"
    note = table.loc["accuracy [ratio]", "note"]
    assert note == table.loc["accuracy [pct]", "note"] and table.loc["latency", "note"] == ""
    assert pd.isna(table.loc["accuracy [ratio]", "best"])  # one job per split row: no best
    assert note.startswith("the jobs disagree on accuracy's scale (a: accuracy [ratio] vs ")
    assert "no difference is computed across different scales" in note
    html = cmp.table_html("dimension")
    assert "0–100 pct, higher is better" in html and "disagree on accuracy&#x27;s scale" in html


def test_dimension_values_on_different_scales_are_not_compared(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    """Neither job states a scale for ``quality``; a's values lie in 0–1, b's run to 9:
    the table showed a gap of "+7.3" and b as best, across two scales. Now each job's
    scale is shown, no gap, no best and no strength, and the row says why."""
    names = [f"t{i}" for i in range(6)]
    a, b = load(
        ws,
        tmp_path,
        envloop_job("a", {t: [1.0] for t in names},
                    dimensions={t: {"quality": 0.5 + i / 20} for i, t in enumerate(names)}),
        envloop_job("b", {t: [1.0] for t in names},
                    dimensions={t: {"quality": 7.0 + i / 3} for i, t in enumerate(names)}),
    )  # fmt: skip
    cmp = ws.compare([a, b])
    row = cmp.table("dimension").set_index("dimension").loc["quality"]
    assert row["scale"] == (
        "a: range not stated (values within 0–1), direction not stated | "
        "b: range not stated, direction not stated"
    )
    assert row["best"] is None and row["note"].startswith("the jobs' values of quality lie on")
    html = cmp.table_html("dimension")
    quality = html[html.index(">quality<") : html.index("</tr>", html.index(">quality<"))]
    assert "(+" not in quality and "enb-best" not in quality  # no gap, no best
    assert "no difference computed" in quality
    assert "quality" not in set(cmp.strengths("dimension")["group"])


# -- leaderboard -------------------------------------------------------------------------------
def test_leaderboard_ranks_and_shows_coverage(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    c_doc = envloop_job("job_partial", {f"t{i:03d}": [1.0] for i in range(60)}, k=2)
    (c,) = load(ws, tmp_path, c_doc)
    lb = ws.compare([a, b, c]).leaderboard()
    assert lb["job"].tolist() == ["job_partial", "job_new", "job_base"]
    assert lb["rank"].tolist() == [1, 2, 3]
    top = lb.iloc[0]
    assert top["model"] == "job_partial"  # no model: the job id stands in
    assert top["coverage"] == "60/120 scored, 60 missing"
    assert top["warning"] == "⚠ 60 missing"
    assert top["missing"] == 60 and top["complete_members"] == 0
    assert pd.isna(top["pass@2"])  # no complete task: pass@k undefined, not 0
    assert {"pass@2", "pass^2", "scored", "total_members"} <= set(lb.columns)


def test_leaderboard_shared_k_is_the_smallest(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(
        ws,
        tmp_path,
        envloop_job("a", {"t": [1.0, 0.0, 0.0, 0.0]}),
        envloop_job("b", {"t": [1.0, 0.0]}),
    )
    lb = ws.compare([a, b]).leaderboard().set_index("job")
    assert lb.loc["a", "pass@2"] == pytest.approx(enb.pass_at_k(4, 1, 2))
    assert lb.loc["b", "pass@2"] == 1.0


def test_saved_leaderboard_snapshots_do_not_duplicate(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    first = ws.save_to_leaderboard(a)
    again = ws.save_to_leaderboard("job_base")
    assert first.new and not again.new
    assert again.snapshot_id == first.snapshot_id
    ws.save_to_leaderboard(b)
    lb = ws.leaderboard()
    assert lb["job"].tolist() == ["job_new", "job_base"] and lb["rank"].tolist() == [1, 2]
    # the same job reloaded with different attempts is a new snapshot
    doc = fixing_pair()[0]
    doc["trials"][0]["reward"] = 1.0
    ws.load(write_job(tmp_path, doc))
    changed = ws.save_to_leaderboard("job_base")
    assert changed.new and changed.snapshot_id != first.snapshot_id
    assert len(ws.leaderboard()) == 3
    # another policy is its own snapshot
    assert ws.save_to_leaderboard("job_new", policy="failure").new
    assert "saved" in str(first)


def test_saved_leaderboard_persists(tmp_path: Path) -> None:
    path = tmp_path / "ws.duckdb"
    with enb.open(path) as ws:
        ws.save_to_leaderboard(ws.load(THREE_TASKS))
    with enb.open(path) as ws:
        lb = ws.leaderboard()
        assert lb["job"].tolist() == ["job_abc0001"]
        assert lb["coverage"].iloc[0] == "5/6 scored, 1 missing"
        assert not ws.save_to_leaderboard("job_abc0001").new


# -- table and strengths --------------------------------------------------------------------
def test_subset_table_matches_attempts(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair(fixed=12))
    cmp = ws.compare([a, b])
    table = cmp.table().set_index("subset")
    for job in (a, b):
        att = job.attempts().merge(job.tasks(), on="task")
        att["subset"] = att["tags"].map(lambda t: json.loads(t)["subset"])
        expected = att.groupby("subset")["reward"].mean()
        for subset, value in expected.items():
            assert table.loc[subset, job.id] == pytest.approx(value)
            assert table.loc[subset, f"{job.id} coverage"] == "60/60 scored"
    assert set(table["best"]) == {"job_new"}
    html = cmp.table_html()
    assert html.count("enb-best") == 2 and "60/60 scored" in html


def test_groups_have_intervals(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    g = ws.compare([a, b]).groups("subset")
    assert len(g) == 4 and set(g["group"]) == {"math", "code"}
    assert ((g["low"] <= g["value"]) & (g["value"] <= g["high"])).all()


def test_strengths_in_words(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    s = ws.compare([a, b]).strengths()
    strengths = s[s["kind"] == "strength"]
    assert set(strengths["job"]) == {"job_new"} and set(strengths["group"]) == {"code", "math"}
    sentence = strengths.set_index("group").loc["math", "sentence"]
    assert sentence.startswith("job_new is above the others on math by 50.0 pts (beyond noise:")
    assert "paired 95% CI [+" in sentence
    weak = s[s["kind"] == "weakness"].set_index("group")
    assert weak.loc["code", "sentence"].startswith("job_base is below the others on code by")


def test_strengths_sentence_has_no_double_sign(ws: enb.Workspace, tmp_path: Path) -> None:
    """Issue 37: "below the others … by -11.2 pts" said the sign twice. The words carry
    the direction, the size is unsigned; the interval keeps its signs with a real minus."""
    a, b = load(ws, tmp_path, *fixing_pair())
    s = ws.compare([a, b]).strengths()
    for sentence in s["sentence"]:
        size = sentence.split(" by ", 1)[1].split(" ", 1)[0]
        assert size[0].isdigit(), sentence
    weak = s[s["kind"] == "weakness"]["sentence"].iloc[0]
    assert "−" in weak and "[-" not in weak and ", -" not in weak


def test_strengths_on_a_lower_is_better_dimension(ws: enb.Workspace, tmp_path: Path) -> None:
    """The words, the gap and the interval share one sign (the sentence said "+3")."""
    names = [f"t{i}" for i in range(20)]

    def job(job_id: str, latency: float) -> dict:
        return envloop_job(
            job_id,
            {t: [1.0] for t in names},
            dimensions={t: {"latency": latency + i % 3} for i, t in enumerate(names)},
            units={"latency": "s"},
            higher_is_better={"latency": False},
        )

    fast, slow = load(ws, tmp_path, job("fast", 2.0), job("slow", 5.0))
    s = ws.compare([fast, slow]).strengths("dimension").set_index("kind")
    strength, weakness = s.loc["strength"], s.loc["weakness"]
    assert strength["job"] == "fast" and weakness["job"] == "slow"
    assert strength["gap"] == pytest.approx(-3) and strength["high"] < 0
    assert strength["sentence"].startswith(
        "fast is below the others on latency by 3, and lower is better (beyond noise: "
        "paired 95% CI [−3, −3]"
    )
    assert weakness["gap"] == pytest.approx(3) and weakness["low"] > 0
    assert weakness["sentence"].startswith(
        "slow is above the others on latency by 3, and lower is better (beyond noise: "
        "paired 95% CI [+3, +3]"
    )


# -- transitions with buckets ------------------------------------------------------------------
def test_bucket_transition_matrix(ws: enb.Workspace, tmp_path: Path) -> None:
    names = [f"t{i}" for i in range(8)]
    base = {t: [0.0, 0.0] if i < 6 else [1.0, 1.0] for i, t in enumerate(names)}
    new = {
        t: [1.0, 1.0] if i < 3 else ([1.0, 0.0] if i < 5 else base[t]) for i, t in enumerate(names)
    }
    new["t7"] = [1.0]  # incomplete: pass rate undefined, in no bucket
    a, b = load(ws, tmp_path, envloop_job("a", base), envloop_job("b", new, k=2))
    rules = BucketRules(
        [
            Bucket("hard", 0, 0.25),
            Bucket("medium", 0.25, 0.75),
            Bucket("easy", 0.75, 1.01),
        ]
    )
    cmp = ws.compare([a, b])
    m = cmp.transitions("b", rules)
    assert list(m.index)[:3] == ["hard", "medium", "easy"]
    assert (
        m.loc["hard", "easy"] == 3 and m.loc["hard", "medium"] == 2 and m.loc["hard", "hard"] == 1
    )
    assert m.loc["easy", "easy"] == 1
    assert m.loc["easy", "(no bucket: metric undefined)"] == 1
    assert int(m.to_numpy().sum()) == 8
    assert m.attrs["tasks"][("hard", "easy")] == ["t0", "t1", "t2"]
    long = cmp.transitions("b", rules, shape="long")
    assert long["count"].sum() == 8 and long.iloc[0]["tasks"] == ["t5"]
    with pytest.raises(enb.EnvloopError, match="is the baseline"):
        cmp.transitions("a", rules)


def test_bucket_matrix_needs_one_other(ws: enb.Workspace, tmp_path: Path) -> None:
    docs = [envloop_job(j, {"t": [1.0]}) for j in "abc"]
    cmp = ws.compare(load(ws, tmp_path, *docs))
    with pytest.raises(enb.EnvloopError, match="pass other="):
        cmp.transitions(rules=BucketRules([Bucket("x", 0, 1.01)]))
    assert set(cmp.transitions()["job"]) == {"b", "c"}


def test_attempts_of_tasks_in_every_job(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    frame = ws.compare([a, b]).attempts_of(["t000"])
    assert frame[["job", "attempt", "reward"]].values.tolist() == [
        ["job_base", 1, 0.0],
        ["job_base", 2, 0.0],
        ["job_new", 1, 1.0],
        ["job_new", 2, 1.0],
    ]
    assert list(frame.columns) == ["task", "job", "attempt", "status", "reward", "output"]


# -- export -----------------------------------------------------------------------------------
def test_export_xlsx_text_stays_text(ws: enb.Workspace, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    evil = '=HYPERLINK("http://x")'
    base = {evil: [0.0], "b": [1.0]}
    new = {evil: [1.0], "b": [1.0]}
    a, b = load(ws, tmp_path, envloop_job("a", base), envloop_job("b", new))
    rules = BucketRules([Bucket("hard", 0, 0.5), Bucket("easy", 0.5, 1.01)])
    out = ws.compare([a, b]).export_xlsx(tmp_path / "cmp.xlsx", rules=rules)
    wb = load_workbook(out)
    assert wb.sheetnames[:3] == ["Guard", "Leaderboard", "By subset"]
    assert "Transitions" in wb.sheetnames and "Buckets b" in wb.sheetnames
    cells = [c for row in wb["Transitions"].iter_rows() for c in row if c.value == evil]
    assert cells and all(c.data_type == "s" for c in cells)
    lb = wb["Leaderboard"]
    header = [c.value for c in lb[1]]
    assert header[:3] == ["#", "Job", "Model"]
    score = lb.cell(row=2, column=header.index("Score") + 1)
    assert score.data_type == "n" and score.value == 1


def test_comparison_workbook_headers_and_number_formats(ws: enb.Workspace, tmp_path: Path) -> None:
    """Issue 37: the comparison workbook's headers were column names (``complete_members``)
    and its numbers had no format (a rate read 0.6101694915, a difference -0.0227); now
    people's headers, and formats on cells whose values stay numbers."""
    import re

    from openpyxl import load_workbook

    a, b = load(ws, tmp_path, *fixing_pair())
    wb = load_workbook(ws.compare([a, b]).export_xlsx(tmp_path / "cmp.xlsx"))
    for name in ("Leaderboard", "Paired", "Strengths"):
        heads = [c.value for c in wb[name][1] if c.value]
        assert heads and not [h for h in heads if re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", h)]
    paired = wb["Paired"]
    heads = [c.value for c in paired[1]]
    diff = paired.cell(row=2, column=heads.index("Δ score") + 1)
    low = paired.cell(row=2, column=heads.index("Δ score low") + 1)
    assert diff.data_type == "n" and diff.number_format == "+0.0%;−0.0%;0.0%"
    assert low.number_format == diff.number_format
    lb = wb["Leaderboard"]
    heads = [c.value for c in lb[1]]
    assert lb.cell(row=2, column=heads.index("Score") + 1).number_format == "0.0%"
    assert lb.cell(row=2, column=heads.index("Scored") + 1).number_format == "#,##0"


def test_comparison_workbook_keeps_job_ids_and_dimension_names(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    """People's headers are for the toolkit's own columns: a job id or a dimension's name
    is data and keeps its spelling (``job_base`` read ``Job base``, ``format_pct``
    ``Format pct``)."""
    from openpyxl import load_workbook

    base = ws.load(SAMPLE_DATA / "base.json")
    graded = ws.load(SAMPLE_DATA / "graded.json")
    wb = load_workbook(ws.compare([base, graded]).export_xlsx(tmp_path / "cmp.xlsx"))

    def heads(name: str) -> list[str]:
        sheet = wb[name]
        marked = sheet.cell(2, 1).value is not None and sheet.cell(1, 2).value is None  # a note row
        return [c.value for c in sheet[2 if marked else 1]]

    jobs = ["job_base", "job_base coverage", "job_graded", "job_graded coverage"]
    assert heads("By subset")[1:] == [*jobs, "Best"]
    assert heads("By dimension") == ["Dimension", "Scale", *jobs, "Best", "Note"]
    lb = heads("Leaderboard")
    assert {"format_pct", "accuracy", "Comparable"} <= set(lb) and "Format pct" not in lb
    assert heads("Guard")[:4] == ["Field", "Jobs", "Detail", "Blocking"]


def test_export_xlsx_uses_the_safe_cell_writer(ws: enb.Workspace, tmp_path: Path) -> None:
    """Long cells end with a visible marker, control characters are escaped (they raised)."""
    from openpyxl import load_workbook

    import envloop_nb._export.cells as xl

    names = [f"task-{i:04d}-" + "x" * 40 + ("\x07bell" if i == 0 else "") for i in range(900)]
    a, b = load(
        ws,
        tmp_path,
        envloop_job("a", {t: [0.0] for t in names}),
        envloop_job("b", {t: [1.0] for t in names}, revision="sha256:other"),
    )
    out = ws.compare([a, b]).export_xlsx(tmp_path / "cmp.xlsx")
    wb = load_workbook(out)
    sheet = wb["Transitions"]
    note = sheet.cell(1, 1)  # not comparable: the mark is a bold red row above the header
    assert (
        note.value.startswith("⚠ not comparable")
        and note.font.b
        and note.font.color.rgb.endswith("C00000")
    )
    header = [c.value for c in sheet[2]]
    assert header[:4] == ["Job", "Transition", "Count", "Tasks"] and sheet.freeze_panes == "A3"
    fixed = next(r for r in sheet.iter_rows(min_row=3, values_only=True) if r[1] == "fixed")
    full = ", ".join(names)  # 46,803 characters
    tasks = fixed[header.index("Tasks")]
    assert xl.utf16_len(tasks) <= xl.MAX_CELL_CHARS
    head, marker = tasks.rsplit("… [truncated ", 1)
    assert head.startswith("task-0000-" + "x" * 40 + "\\x07bell, task-0001")  # escaped
    assert marker.endswith(" chars]") and int(marker.split()[0]) > 0
    assert full.replace("\x07", "\\x07").startswith(head)


# -- sample data ---------------------------------------------------------------------------------
needs_samples = pytest.mark.skipif(
    not (SAMPLE_DATA / "other-revision.json").exists(), reason="sample data not generated"
)


@pytest.fixture(scope="module")
def sample_ws() -> enb.Workspace:
    ws = enb.open()
    for name in ("base.json", "sft-step500.json", "sft-step1000.jsonl.gz", "other-revision.json"):
        ws.load(SAMPLE_DATA / name)
    yield ws
    ws.close()


@needs_samples
def test_sample_checkpoints(sample_ws: enb.Workspace) -> None:
    cmp = sample_ws.compare(["job_base", "job_sft500", "job_sft1000"], baseline="job_base")
    assert cmp.comparable
    paired = cmp.paired().set_index("job")
    assert paired.loc["job_sft1000", "verdict"].startswith("beyond noise: job_sft1000 is better")
    assert paired.loc["job_sft1000", "score_low"] > 0
    table = cmp.table().set_index("subset")
    assert table.loc["math", "best"] == "job_sft1000" and table.loc["writing", "best"] == "job_base"
    lb = cmp.leaderboard()
    assert lb["job"].iloc[0] == "job_sft1000"
    assert (lb["missing"] > 0).all() and lb["warning"].str.contains("missing").all()
    tr = cmp.transitions("job_sft1000").set_index("transition")["count"]
    assert tr["fixed"] > tr["broken"]
    assert tr.sum() == 200


@needs_samples
def test_sample_other_revision_is_not_comparable(sample_ws: enb.Workspace) -> None:
    cmp = sample_ws.compare(["job_base", "job_otherrev"])
    assert not cmp.comparable
    fields = {d.field for d in cmp.differences if d.blocking}
    assert {"dataset_revision", "attempts", "tasks"} <= fields
    details = " | ".join(d.detail for d in cmp.differences)
    assert "tasks only in job_otherrev" in details and "attempts 4 (job_base) vs 2" in details
    row = cmp.paired().iloc[0]
    assert row["verdict"].startswith("not assessed") and "shared tasks only" in row["note"]


# -- policy and properties ---------------------------------------------------------------------
def test_policy_failure_pairs_every_task(ws: enb.Workspace, tmp_path: Path) -> None:
    names = [f"t{i}" for i in range(10)]
    base = {t: [1.0, 1.0] for t in names}
    new = {t: ([1.0, 1.0] if i < 5 else [1.0]) for i, t in enumerate(names)}
    a, b = load(ws, tmp_path, envloop_job("a", base), envloop_job("b", new, k=2))
    unknown = ws.compare([a, b]).paired().iloc[0]
    failure = ws.compare([a, b], policy="failure").paired().iloc[0]
    assert unknown["shared_complete"] == 5 and unknown["score_diff"] == 0
    assert failure["shared_complete"] == 10
    assert failure["score_diff"] == pytest.approx(-0.25)  # a missing attempt counts as 0
    lb = ws.compare([a, b], policy="failure").leaderboard().set_index("job")
    assert lb.loc["b", "score"] == pytest.approx(15 / 20)


job_rewards = st.dictionaries(
    st.sampled_from([f"t{i}" for i in range(12)]),
    st.lists(st.one_of(st.none(), st.sampled_from([0.0, 1.0])), min_size=1, max_size=3),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(base=job_rewards, new=job_rewards)
def test_paired_and_transitions_match_brute_force(
    tmp_path: Path, base: dict[str, list[float | None]], new: dict[str, list[float | None]]
) -> None:
    with enb.open() as ws:
        a, b = load(ws, tmp_path, envloop_job("a", base, k=3), envloop_job("b", new, k=3))
        cmp = ws.compare([a, b], resamples=200)

        def complete(rs: list[float | None]) -> bool:
            return len(rs) == 3 and all(r is not None for r in rs)

        shared = [t for t in base if t in new and complete(base[t]) and complete(new[t])]
        row = cmp.paired().iloc[0]
        assert row["shared_complete"] == len(shared)
        assert row["tasks_union"] == len(set(base) | set(new))
        if shared:
            expected = np.mean([np.mean(new[t]) - np.mean(base[t]) for t in shared])  # type: ignore[arg-type]
            assert row["score_diff"] == pytest.approx(expected)
            assert row["score_low"] <= row["score_diff"] + 1e-12 <= row["score_high"] + 2e-12
        tr = cmp.transitions().set_index("transition")
        assert tr["count"].sum() == len(set(base) | set(new))
        solved = {t: (np.mean(base[t]) >= 0.5, np.mean(new[t]) >= 0.5) for t in shared}  # type: ignore[arg-type]
        assert tr.loc["fixed", "count"] == sum(not x and y for x, y in solved.values())
        assert tr.loc["broken", "count"] == sum(x and not y for x, y in solved.values())
        assert sorted(tr.loc["not compared", "tasks"]) == sorted(
            (set(base) | set(new)) - set(shared)
        )
        # the subset table agrees with the job summaries (no subset tags: one row)
        table = cmp.table()
        for job in (a, b):
            score = job.summary().score
            value = table[job.id].iloc[0]
            assert pd.isna(value) if score is None else value == pytest.approx(score)


def test_with_baseline_equals_a_fresh_comparison(ws: enb.Workspace, tmp_path: Path) -> None:
    a, b = load(ws, tmp_path, *fixing_pair(fixed=12))
    first = ws.compare([a, b])
    first.table(), first.paired()  # fill the caches
    switched = first.with_baseline("job_new")
    fresh = ws.compare([a, b], baseline="job_new")
    pd.testing.assert_frame_equal(switched.paired(), fresh.paired())
    pd.testing.assert_frame_equal(switched.strengths(), fresh.strengths())
    pd.testing.assert_frame_equal(switched.leaderboard(), fresh.leaderboard())
    with pytest.raises(enb.EnvloopError, match="not one of the compared jobs"):
        first.with_baseline("nope")


def test_export_sheet_names_are_safe(ws: enb.Workspace, tmp_path: Path) -> None:
    from openpyxl import load_workbook

    (a,) = load(ws, tmp_path, envloop_job("a", {"t": [1.0]}))
    b2 = ws.load(write_job(tmp_path, envloop_job("b", {"t": [0.0]})), job_id="team/run:2")
    rules = BucketRules([Bucket("all", 0, 1.01)])
    out = ws.compare([a, b2]).export_xlsx(tmp_path / "x.xlsx", rules=rules)
    assert "Buckets team_run_2" in load_workbook(out).sheetnames


def test_jobs_of_another_workspace_are_refused(ws: enb.Workspace, tmp_path: Path) -> None:
    (a,) = load(ws, tmp_path, envloop_job("a", {"t": [1.0]}))
    with enb.open() as other:
        (b,) = load(other, tmp_path, envloop_job("b", {"t": [1.0]}))
        with pytest.raises(enb.EnvloopError, match="another workspace"):
            ws.compare([a, b])


def test_frames_in_pandas_or_polars(ws: enb.Workspace, tmp_path: Path, frame_kind: str) -> None:
    a, b = load(ws, tmp_path, *fixing_pair())
    cmp = ws.compare([a, b])
    rules = BucketRules([Bucket("hard", 0, 0.5), Bucket("easy", 0.5, 1.01)])
    results = [
        cmp.leaderboard(frame=frame_kind),
        cmp.table(frame=frame_kind),
        cmp.strengths(frame=frame_kind),
        cmp.paired(frame=frame_kind),
        cmp.transitions(frame=frame_kind),
        cmp.transitions("job_new", rules, frame=frame_kind),
        cmp.groups(frame=frame_kind),
        cmp.curve_frame(frame=frame_kind),
        cmp.attempts_of(["t000"], frame=frame_kind),
    ]
    module = "pandas" if frame_kind == "pandas" else "polars"
    assert all(type(r).__module__.startswith(module) for r in results)
    lb = results[0]
    assert list(lb["job"]) == ["job_new", "job_base"]
    fixed = results[4]
    assert list(fixed["count"])[:2] == [30, 0]
    with pytest.raises(ValueError, match="frame must be"):
        cmp.paired(frame="arrow")
