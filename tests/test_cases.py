"""The Cases query layer: filters, sort, paging, search, buckets, details and HTML escaping."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._present.cases_html import attempt_detail_html, chat_html, task_detail_html
from envloop_nb._ui.cases_detail import attempt_detail, task_detail
from envloop_nb._ui.cases_query import CasePage, CaseQuery, CaseSource, fetch_page, page_html

from .conftest import SAMPLE_DATA, THREE_TASKS


@pytest.fixture
def job(ws: enb.Workspace) -> enb.Job:
    return ws.load(THREE_TASKS)


@pytest.fixture
def base(ws: enb.Workspace) -> enb.Job:
    return ws.load(SAMPLE_DATA / "base.json")


def test_attempt_view_default_order_and_columns(job: enb.Job) -> None:
    page = fetch_page(job.con, job.id, CaseQuery())
    f = page.frame
    assert page.total == 6
    assert list(zip(f["task"], f["attempt"], strict=True)) == [
        ("A", 1), ("A", 2), ("B", 1), ("B", 2), ("C", 1), ("C", 2)
    ]  # fmt: skip
    assert list(f.columns[:5]) == ["task", "attempt", "subset", "status", "reward"]
    # ChatML inputs: a "messages" column (turns and the last user turn; whole on hover)
    assert {"composite", "style", "tests_passed", "tokens", "messages", "output"} <= set(f.columns)
    assert "input" not in f.columns
    assert f.loc[2, "style"] == 0.8 and pd.isna(f.loc[0, "style"])
    assert f.loc[0, "tokens"] == 1510 and pd.isna(f.loc[5, "tokens"])
    assert pd.isna(f.loc[5, "reward"])  # running: missing, not zero
    assert f.loc[0, "messages"] == "Compute 17*23."  # a plain prompt stays as it is
    assert f.loc[2, "messages"] == "1 turn · user: Fix the failing test in utils.py"
    assert page.titles["messages"][2] == "user: Fix the failing test in utils.py"


def test_status_subset_range_filters(job: enb.Job) -> None:
    src = CaseSource(job.con, job.id)
    q = CaseQuery()
    assert list(src.fetch(q.replace(status=("failed",))).frame["task"]) == ["A"]
    assert src.fetch(q.replace(status=("completed", "running"))).total == 5
    assert set(src.fetch(q.replace(tag_value="code")).frame["task"]) == {"B", "C"}
    ranged = src.fetch(q.replace(low=0.5, high=1.0))
    assert ranged.total == 3 and set(ranged.frame["reward"]) == {1.0}
    assert src.fetch(q.replace(low=0.0, high=0.0)).total == 2  # NULL reward never matches
    assert src.fetch(q.replace(tag_value="nope")).total == 0


def test_search_is_case_insensitive_and_literal(job: enb.Job) -> None:
    src = CaseSource(job.con, job.id)
    assert src.fetch(CaseQuery(search="PATCHED")).total == 2  # output
    assert src.fetch(CaseQuery(search="exited with")).total == 1  # error
    assert src.fetch(CaseQuery(search="--verbose")).total == 2  # input
    assert src.fetch(CaseQuery(search="%")).total == 0  # no LIKE wildcards
    assert src.fetch(CaseQuery(search="_")).total == 0
    assert src.fetch(CaseQuery(search="  ")).total == 6  # blank = no filter
    assert set(src.fetch(CaseQuery(view="task", search="patched")).frame["task"]) == {"B"}


def test_sorting_nulls_last_and_ties_in_task_order(job: enb.Job) -> None:
    src = CaseSource(job.con, job.id)
    up = src.fetch(CaseQuery(sort="reward"))
    assert list(up.frame["reward"].fillna(-1)) == [0.0, 0.0, 1.0, 1.0, 1.0, -1]
    assert list(up.frame["task"])[:2] == ["A", "C"]
    down = src.fetch(CaseQuery(sort="reward", descending=True))
    assert list(down.frame["reward"].fillna(-1)) == [1.0, 1.0, 1.0, 0.0, 0.0, -1]
    by_dim = src.fetch(CaseQuery(sort="style", descending=True))
    assert by_dim.frame.iloc[0]["task"] == "B" and by_dim.frame.iloc[0]["attempt"] == 1
    tasks = src.fetch(CaseQuery(view="task", sort="pass_rate", descending=True))
    assert list(tasks.frame["task"]) == ["B", "A", "C"]  # C's pass rate is "-": last
    with pytest.raises(ValueError, match="cannot sort"):
        src.fetch(CaseQuery(sort="drop table"))


def test_paging(base: enb.Job) -> None:
    src = CaseSource(base.con, base.id)
    q = CaseQuery(page_size=50)
    first = src.fetch(q)
    total = first.total
    assert (
        total
        == base.con.execute("SELECT count(*) FROM attempts WHERE job_id = 'job_base'").fetchone()[0]
    )
    assert first.pages == -(-total // 50) and first.describe().startswith("rows 1–50 of")
    seen = []
    for page_no in range(first.pages):
        page = src.fetch(q.replace(page=page_no))
        seen += list(zip(page.frame["task"], page.frame["attempt"], strict=True))
    assert len(seen) == total == len(set(seen))
    assert len(src.fetch(q.replace(page=first.pages - 1)).frame) == total - 50 * (first.pages - 1)
    assert src.fetch(q.replace(page=first.pages + 3)).frame.empty
    assert q.replace(search="x").page == 0 and q.replace(page=3).page == 3
    with pytest.raises(ValueError):
        src.fetch(q.replace(page=-1))


def test_sorted_paging_matches_pandas(base: enb.Job) -> None:
    """Brute-force check: SQL order and paging equal a pandas sort of the whole table."""
    src = CaseSource(base.con, base.id)
    whole = base.attempts()
    whole = whole[whole["status"] != "completed"]
    expected = list(whole.sort_values(["turns"], kind="stable", na_position="last")["turns"])
    q = CaseQuery(status=("failed", "cancelled", "running", "pending"), sort="turns", page_size=7)
    pages = src.fetch(q).pages
    got = []
    for page_no in range(pages):
        got += list(src.fetch(q.replace(page=page_no)).frame["turns"])
    assert len(got) == len(expected) > 7
    assert [x for x in got if pd.notna(x)] == [x for x in expected if pd.notna(x)]
    assert all(pd.isna(x) for x in got[len([x for x in expected if pd.notna(x)]) :])


def test_task_view_numbers_follow_policy(job: enb.Job) -> None:
    src = CaseSource(job.con, job.id)
    unknown = src.fetch(CaseQuery(view="task")).frame.set_index("task")
    failure = src.fetch(CaseQuery(view="task", policy="failure")).frame.set_index("task")
    assert list(unknown.columns[:5]) == ["subset", "n", "scored", "passes", "pass_rate"]
    assert pd.isna(unknown.loc["C", "pass_rate"]) and failure.loc["C", "pass_rate"] == 0.0
    assert unknown.loc["A", "pass@2"] == 1.0 and unknown.loc["A", "pass^2"] == 0.0
    assert src.fetch(CaseQuery(view="task", low=0.5, high=1.0)).total == 2
    assert set(src.fetch(CaseQuery(view="task", status=("running",))).frame["task"]) == {"C"}


def test_buckets_per_task_and_per_attempt(base: enb.Job) -> None:
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.25), enb.Bucket("easy", 0.25, 1.01)])
    result = base.buckets(rules)
    src = CaseSource(base.con, base.id)
    src.set_buckets(result.frame)
    hard = src.fetch(CaseQuery(view="task", bucket="hard", page_size=500))
    assert hard.total == result.count_of("hard")
    assert (hard.frame["pass_rate"] < 0.25).all()
    attempts = src.fetch(CaseQuery(bucket="hard", page_size=1000))
    assert attempts.total == int(hard.frame["n"].sum())
    assert "bucket" in src.columns("attempt")
    per_attempt = enb.BucketRules([enb.Bucket("zero", 0, 0.5)], metric="reward", level="attempt")
    src.set_buckets(base.buckets(per_attempt).frame[["task", "attempt", "bucket"]])
    zero = src.fetch(CaseQuery(bucket="zero", page_size=1000))
    assert (zero.frame["reward"] < 0.5).all() and zero.total > 0
    assert "bucket" not in src.columns("task")
    src.set_buckets(None)
    assert not src.has_buckets
    with pytest.raises(ValueError, match="bucket"):
        src.set_buckets(pd.DataFrame({"task": ["x"]}))


def test_dimension_columns_on_graded_job(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "graded.json")
    src = CaseSource(job.con, job.id)
    page = src.fetch(CaseQuery(sort="accuracy", descending=True, page_size=5))
    assert "accuracy" in page.frame.columns
    values = job.dimensions().query("name == 'accuracy'")["value"]
    assert page.frame["accuracy"].iloc[0] == values.max()


def test_attempt_detail_and_html(job: enb.Job) -> None:
    d = attempt_detail(job.con, job.id, "B", 1)
    out = attempt_detail_html(d)
    for text in ("All tests pass.", "diff.patch", "812 bytes", "tests_passed", "Fix the failing"):
        assert text in out
    assert "enb-turn enb-user" in out
    with pytest.raises(KeyError):
        attempt_detail(job.con, job.id, "B", 9)


def test_detail_html_escapes_everything() -> None:
    evil = "<img src=x onerror=alert(1)>"
    d = {
        "task": evil, "attempt": 1, "status": "failed", "reward": None, "error": evil,
        "input": json.dumps([{"role": "user", "content": evil},
                             {"role": "assistant", "content": [{"type": "text", "text": evil}]}]),
        "input_is_chat": True, "output": evil, "reference": evil, "judge_summary": evil,
        "artifacts": [{"name": evil, "uri": evil}], "dimensions": {evil: 1.0},
    }  # fmt: skip
    out = attempt_detail_html(d)
    assert "<img" not in out and out.count("&lt;img") >= 8
    assert "<img" not in chat_html("not json [", True)
    page = CasePage(pd.DataFrame({"task": [evil], "output": [evil]}), 1, CaseQuery(),
                    ("task", "output"))  # fmt: skip
    assert "<img" not in page_html(page)


def test_chat_html_variants() -> None:
    assert "<pre>plain</pre>" in chat_html("plain", False)
    assert "none" in chat_html(None)
    calls = chat_html(json.dumps([{"role": "assistant", "content": None,
                                   "tool_calls": [{"name": "ls"}]}]))  # fmt: skip
    assert "tool calls" in calls and "enb-assistant" in calls


def test_task_detail(job: enb.Job) -> None:
    d = task_detail(job.con, job.id, "C")
    assert d["tags"] == {"subset": "code"} and len(d["attempts"]) == 2
    out = task_detail_html(d)
    assert "pass@2" in out and "1/2" in out and "running" in out
    with pytest.raises(KeyError):
        task_detail(job.con, job.id, "Z")


def test_page_html_formats_numbers(job: enb.Job) -> None:
    page = fetch_page(job.con, job.id, CaseQuery(view="task"))
    out = page_html(page, selected=1)
    assert ">50.0%<" in out and ">100.0%<" in out and 'class="enb-selected"' in out
    assert 'class="num"' in out and "tabular-nums" in out
    empty = fetch_page(job.con, job.id, CaseQuery(search="zzz"))
    assert "no rows match" in page_html(empty) and empty.describe() == "no rows match"


def test_other_tag_filter_and_reload(ws: enb.Workspace) -> None:
    job = ws.load(SAMPLE_DATA / "base.json")
    src = CaseSource(job.con, job.id)
    hard = src.fetch(CaseQuery(tag_key="difficulty", tag_value="hard", page_size=1000))
    tags = job.con.execute(
        "SELECT count(*) FROM attempts a JOIN task_tags g USING (job_id, task) "
        "WHERE a.job_id = 'job_base' AND g.key = 'difficulty' AND g.value = 'hard'"
    ).fetchone()[0]
    assert hard.total == tags > 0
    before = src.fetch(CaseQuery()).total
    ws.load(SAMPLE_DATA / "base.json")  # reloaded: caches are rebuilt, nothing stale
    job.con.execute("DELETE FROM attempt_rows WHERE job_id = 'job_base' AND task = 'math-001'")
    job.con.execute("UPDATE jobs SET loaded_at = now() WHERE job_id = 'job_base'")
    assert src.fetch(CaseQuery()).total < before


_STATUSES = ("completed", "failed", "cancelled", "running", "pending")


@pytest.fixture(scope="module")
def base_module() -> enb.Job:
    return enb.open().load(SAMPLE_DATA / "base.json")


def _reference(frame: pd.DataFrame, q: CaseQuery) -> pd.DataFrame:
    """Brute force in pandas: the same filters and order as the SQL path."""
    f = frame
    if q.status:
        f = f[f["status"].isin(q.status)]
    if q.tag_value is not None:
        f = f[f["subset"] == q.tag_value]
    if q.low is not None:
        f = f[f["reward"] >= q.low]
    if q.high is not None:
        f = f[f["reward"] <= q.high]
    if q.search.strip():
        needle = q.search.strip().lower()
        hit = f["task"].str.lower().str.contains(needle, regex=False)
        for col in ("input", "output", "error"):
            hit |= f[col].fillna("").str.lower().str.contains(needle, regex=False)
        f = f[hit]
    keys = ["position", "attempt"]
    if q.sort is not None:
        f = f.assign(_null=f[q.sort].isna())
        f = f.sort_values(
            ["_null", q.sort, *keys], ascending=[True, not q.descending, True, True], kind="stable"
        )
    else:
        f = f.sort_values(keys, kind="stable")
    return f


def test_random_queries_match_pandas(base_module: enb.Job) -> None:
    """Property: any filter/sort/page combination equals a pandas brute force."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    job = base_module
    whole = (
        job.con.execute(
            """SELECT a.task, a.attempt, a.status, a.reward, a.turns, a.duration_s, a.input,
                  a.output, a.error, t.position, json_extract_string(t.tags, '$.subset') AS subset
           FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.task = a.task
           WHERE a.job_id = 'job_base'"""
        )
        .to_arrow_table()
        .to_pandas()
    )
    src = CaseSource(job.con, job.id)
    queries = st.builds(
        CaseQuery,
        status=st.lists(st.sampled_from(_STATUSES), max_size=2, unique=True).map(tuple),
        tag_value=st.none() | st.sampled_from(["math", "code", "writing"]),
        low=st.none() | st.sampled_from([0.0, 0.5]),
        high=st.none() | st.sampled_from([0.5, 1.0]),
        search=st.sampled_from(["", "timeout", "ORD-", "write", "zz"]),
        sort=st.none() | st.sampled_from(["reward", "turns", "duration_s", "status"]),
        descending=st.booleans(),
        page=st.integers(0, 3),
        page_size=st.sampled_from([7, 25]),
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(q=queries)
    def check(q: CaseQuery) -> None:
        page = src.fetch(q)
        expected = _reference(whole, q)
        assert page.total == len(expected)
        window = expected.iloc[q.page * q.page_size : (q.page + 1) * q.page_size]
        got = list(zip(page.frame["task"], page.frame["attempt"], strict=True))
        assert got == list(zip(window["task"], window["attempt"], strict=True))

    check()
