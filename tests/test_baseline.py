"""Baseline reports (one model on several benchmarks) and their comparison: the numbers
against ``job.summary()`` / ``job.groups()``, the refusals, the marks, the standalone
HTML and the panel driven from Python. Real fixtures: lm-eval, Inspect, EnvLoop."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import altair as alt
import pytest

import envloop_nb as enb
from envloop_nb._errors import EnvloopError

from .conftest import FIXTURES, ROOT, THREE_TASKS

LM_EVAL = ROOT / "tests" / "data" / "lm_eval" / "run"
INSPECT = sorted((FIXTURES / "inspect" / "eval").glob("*.eval"))


def envloop_job(
    tmp: Path,
    job_id: str,
    dataset: str,
    model: str | None,
    rewards: list[float | None],
    *,
    revision: str = "sha256:3b1f0c",
    level: bool = False,
) -> Path:
    """The six-trial example with its id, dataset, model and rewards changed (a reward
    for the running trial completes it). ``level`` adds a ``level`` tag to the tasks."""
    doc: dict[str, Any] = json.loads(THREE_TASKS.read_text())
    doc = copy.deepcopy(doc)
    doc["job"].update(id=job_id, model=model, status="completed")
    doc["job"]["dataset"].update(name=dataset, revision=revision)
    doc["job"]["profile"]["params"]["MODEL_NAME"] = model
    if level:
        for task, lv in zip(doc["job"]["tasks"], ("easy", "hard", "hard"), strict=True):
            task["tags"]["level"] = lv
    for trial, reward in zip(doc["trials"], rewards, strict=True):
        trial["reward"] = reward
        if reward is not None and trial["status"] == "running":
            trial.update(status="completed", finished_at="2026-11-20T08:10:00Z")
    doc.pop("metrics")  # the platform block would no longer match the rewards
    path = tmp / f"{job_id}.json"
    path.write_text(json.dumps(doc))
    return path


M1 = {"math-bench": [1, 0, 1, 1, 0, None], "code-bench": [1, 1, 0, 0, 1, 1],
      "agent-bench": [0, 0, 1, 0, 0, 1]}  # fmt: skip
M2 = {"math-bench": [1, 1, 1, 1, 1, 1], "code-bench": [0, 0, 0, 0, 1, None]}


@pytest.fixture
def two_models(ws: enb.Workspace, tmp_path: Path) -> tuple[list[enb.Job], list[enb.Job]]:
    """acme/m1 on three benchmarks, acme/m2 on two of them."""
    m1 = [ws.load(envloop_job(tmp_path, f"m1_{b}", b, "acme/m1", r, level=True))
          for b, r in M1.items()]  # fmt: skip
    m2 = [ws.load(envloop_job(tmp_path, f"m2_{b}", b, "acme/m2", r)) for b, r in M2.items()]
    return m1, m2


# -- one report --------------------------------------------------------------------------
def test_table_matches_summary_and_groups(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]
) -> None:
    m1, _ = two_models
    report = ws.baseline_report(m1)
    assert isinstance(report, enb.BaselineReport)
    table = report.table()
    assert table["benchmark"].tolist() == ["math-bench", "code-bench", "agent-bench"]
    for row, job in zip(table.to_dict("records"), m1, strict=True):
        s = job.summary()
        assert row["job_id"] == job.id
        assert (row["completed"], row["total"]) == (s.complete_members, s.total_members)
        assert row["samples"] == f"{s.complete_members}/{s.total_members}"
        assert row["score"] == s.score and row["pass@k"] == s.pass_at_k
        assert row["pass^k"] == s.pass_hat_k and row["k"] == s.k
        assert (row["scored"], row["attempts"]) == (s.scored, s.total)
        subsets = job.groups("subset")
        assert row["bad_cases"] == int(subsets["bad_cases"].sum())
        reward = job.groups("dimension").set_index("dimension").loc["reward"]
        assert row["bad_cases"] == int(reward["bad_cases"])
    assert table["coverage"].tolist() == ["5/6 scored, 1 missing", "6/6 scored", "6/6 scored"]
    assert table["bad_cases"].tolist() == [0, 1, 1]
    # bad_below moves the bad-case count exactly as job.groups does
    strict = ws.baseline_report(m1, bad_below=0.9).table()
    assert strict["bad_cases"].tolist() == [
        int(j.groups("subset", bad_below=0.9)["bad_cases"].sum()) for j in m1
    ]
    # policy and threshold reach the summary
    failure = ws.baseline_report(m1, policy="failure").table()
    assert failure["score"].tolist() == [j.summary("failure").score for j in m1]


def test_overview(ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]) -> None:
    m1, _ = two_models
    info = ws.baseline_report([j.id for j in m1]).overview()  # ids work as well as jobs
    assert info["model"] == info["name"] == "acme/m1"
    assert info["method"] == "harbor@0.22.0"
    assert info["benchmarks"] == ["math-bench", "code-bench", "agent-bench"]
    scored = sum(int(j.summary().scored or 0) for j in m1)
    total = sum(j.summary().total for j in m1)
    assert (info["scored"], info["attempts"]) == (scored, total) == (17, 18)
    assert info["progress"] == "17/18 attempts scored (94.4%)"
    assert info["created"] == "2026-11-20 08:00:00" and info["status"] == "completed"
    assert info["inference"]["math-bench"]["MODEL_NAME"] == "acme/m1"


def test_radar_and_drilldowns(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]
) -> None:
    m1, _ = two_models
    report = ws.baseline_report(m1, name="m1 baseline")
    spec = report.radar().to_dict()
    points = next(v for v in spec["datasets"].values() if v and "text" in v[0] and "job" in v[0])
    assert {p["group"]: p["value"] for p in points} == {
        b: j.summary().score for b, j in zip(report.benchmarks, m1, strict=True)
    }
    assert {p["job"] for p in points} == {"m1 baseline"}
    assert report.dimensions("math-bench") == ["subset", "tag:level", "dimension"]
    for by in ("subset", "tag:level", "dimension"):
        frame = report.drilldown("code-bench", by)
        groups = m1[1].groups(by)
        name = "dimension" if by == "dimension" else "value"
        assert frame["value"].tolist() == groups[name].astype(str).tolist()
        assert frame["score"].tolist() == groups["score"].tolist()
        assert frame["bad_cases"].tolist() == groups["bad_cases"].tolist()
        assert frame["tasks"].tolist() == groups["tasks"].tolist()
    level = report.drilldown("code-bench", "tag:level")
    assert level[["value", "samples"]].values.tolist() == [["easy", "1/1"], ["hard", "2/2"]]
    bars = report.drilldown_chart("m1_code-bench", "subset").to_dict()  # a job id works too
    assert bars["encoding"]["y"]["field"] == "subset"
    assert bars["title"] == "code-bench: score by subset"
    with pytest.raises(EnvloopError, match="no benchmark 'nope'"):
        report.drilldown("nope")


def test_lm_eval_run_unsplit_is_one_benchmark_with_subsets(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    """With ``split_by=None`` lm-eval's run is one benchmark (its tasks are subsets); with
    two EnvLoop jobs of the same model it makes a three-benchmark report."""
    lm = ws.load(LM_EVAL)
    model = lm.info["model"]
    others = [ws.load(envloop_job(tmp_path, f"d_{b}", b, model, r)) for b, r in M1.items()][:2]
    report = ws.baseline_report([lm, *others], split_by=None)
    assert report.benchmarks == ["envloop_group", "math-bench", "code-bench"]
    row = report.table().iloc[0]
    s = lm.summary()
    assert (row["score"], row["completed"], row["total"]) == (
        s.score,
        s.complete_members,
        s.total_members,
    )
    assert report.dimensions("envloop_group") == ["subset", "tag:group", "dimension"]
    sub = report.drilldown("envloop_group")
    assert sub["value"].tolist() == ["envloop_alpha", "envloop_beta"]
    assert sub["score"].tolist() == lm.groups("subset")["score"].tolist()
    dims = report.drilldown("envloop_group", "dimension")
    assert dims["value"].tolist() == lm.groups("dimension")["dimension"].tolist()


def test_mixed_models_and_bad_input_are_refused(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]], tmp_path: Path
) -> None:
    m1, m2 = two_models
    with pytest.raises(EnvloopError) as err:
        ws.baseline_report([*m1, m2[0]])
    text = str(err.value)
    assert "acme/m1: m1_math-bench, m1_code-bench, m1_agent-bench" in text
    assert "acme/m2: m2_math-bench" in text
    anonymous = ws.load(envloop_job(tmp_path, "anon", "x-bench", None, M1["math-bench"]))
    with pytest.raises(EnvloopError, match=r"no model: anon.*allowed only when no job names one"):
        ws.baseline_report([m1[0], anonymous])
    # jobs without a model are fine together (named by the first job)
    anon2 = ws.load(envloop_job(tmp_path, "anon2", "y-bench", None, M1["code-bench"]))
    assert ws.baseline_report([anonymous, anon2]).name == "baseline of anon"
    with pytest.raises(TypeError, match="list of jobs"):
        ws.baseline_report("m1_math-bench")  # type: ignore[arg-type]
    with pytest.raises(EnvloopError, match="listed twice"):
        ws.baseline_report([m1[0], m1[0].id])
    with pytest.raises(EnvloopError, match="no job 'missing'"):
        ws.baseline_report(["missing"])


def test_two_jobs_of_one_dataset_are_named_by_job_id(ws: enb.Workspace, tmp_path: Path) -> None:
    a = ws.load(envloop_job(tmp_path, "a1", "same", "m", M1["math-bench"]))
    b = ws.load(envloop_job(tmp_path, "a2", "same", "m", M1["code-bench"]))
    c = ws.load(envloop_job(tmp_path, "a3", "other", "m", M1["code-bench"]))
    assert ws.baseline_report([a, b, c]).benchmarks == ["a1", "a2", "other"]


# -- comparison --------------------------------------------------------------------------
def test_compare_marks_a_benchmark_missing_from_a_report(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]
) -> None:
    m1, m2 = two_models
    r1, r2 = ws.baseline_report(m1), ws.baseline_report(m2)
    cmp = r1.compare(r2)
    t = cmp.table()
    assert t["benchmark"].tolist() == ["math-bench", "code-bench", "agent-bench"]
    assert t["acme/m1"].tolist() == [j.summary().score for j in m1]
    assert t["acme/m2"].tolist()[:2] == [j.summary().score for j in m2]
    assert t["acme/m2"].isna().tolist() == [False, False, True]
    assert t["acme/m2 coverage"].iloc[2] == "not run"
    assert t["in_every_report"].tolist() == [True, True, False]
    assert t["comparable"].tolist() == [True, True, None]
    assert t["mark"].tolist() == ["", "", "not run by acme/m2"]
    assert t["best"].tolist()[:2] == ["acme/m2", "acme/m1"]
    checks = cmp.comparability()
    assert checks.loc[2, "missing_from"] == ["acme/m2"]
    # radar: one polygon per report over the union, the missing benchmark in the subtitle
    spec = cmp.radar().to_dict()
    assert "agent-bench: not run by acme/m2" in spec["title"]["subtitle"][0]
    points = next(v for v in spec["datasets"].values() if v and "text" in v[0] and "job" in v[0])
    assert sorted({(p["job"], p["group"]) for p in points}) == sorted(
        [("acme/m1", b) for b in M1] + [("acme/m2", b) for b in M2]
    )
    s = cmp.strengths()
    best = s[s["kind"] == "strength"].set_index("benchmark")["report"].to_dict()
    assert best == {"math-bench": "acme/m2", "code-bench": "acme/m1"}
    assert set(s["noise"]) == {"within noise"}  # three tasks: nothing beyond noise
    words = cmp.words()
    assert words[1].startswith("acme/m2: best on math-bench (+40.0 pts, within noise)")
    assert words[1].endswith("did not run agent-bench.")
    assert "agent-bench" not in s["benchmark"].tolist()
    html = cmp._repr_html_()
    assert "not run by acme/m2" in html and "Strengths and weaknesses" in html


def test_compare_marks_different_frozen_work(ws: enb.Workspace, tmp_path: Path) -> None:
    a = ws.load(envloop_job(tmp_path, "x1", "math-bench", "m-a", M1["math-bench"]))
    b = ws.load(envloop_job(tmp_path, "x2", "math-bench", "m-b", M2["math-bench"],
                            revision="sha256:other"))  # fmt: skip
    cmp = ws.baseline_report([a]).compare(ws.baseline_report([b]))
    t = cmp.table()
    assert t["comparable"].tolist() == [False]
    assert t["mark"].iloc[0].startswith("not comparable: dataset revision")
    s = cmp.strengths()
    assert set(s["noise"]) == {"not assessed"}
    assert "jobs not comparable" in s["sentence"].iloc[0]


def test_inspect_checkpoints_compare(ws: enb.Workspace) -> None:
    """Two Inspect checkpoints of one task: two one-benchmark reports, same frozen work."""
    jobs = [ws.load(p) for p in INSPECT]
    by_model = {j.info["model"]: j for j in jobs}
    a = ws.baseline_report([by_model["mockllm/ckpt-a"]])
    b = ws.baseline_report([by_model["mockllm/ckpt-b"]])
    assert a.benchmarks == b.benchmarks == ["capitals"]
    cmp = a.compare(b)
    t = cmp.table()
    assert t["comparable"].tolist() == [True] and t["mark"].tolist() == [""]
    assert t["mockllm/ckpt-a"].iloc[0] == by_model["mockllm/ckpt-a"].summary().score
    assert t["best"].iloc[0] == "mockllm/ckpt-b"
    s = cmp.strengths()
    assert s[["report", "kind"]].values.tolist() == [
        ["mockllm/ckpt-b", "strength"],
        ["mockllm/ckpt-a", "weakness"],
    ]
    # the interval is the comparison engine's paired bootstrap on the same tasks
    engine = ws.compare([by_model["mockllm/ckpt-a"], by_model["mockllm/ckpt-b"]])
    paired = engine.paired().iloc[0]
    row = s.iloc[0]
    assert math.isclose(row["low"], paired["score_low"]) and math.isclose(
        row["high"], paired["score_high"]
    )
    assert row["noise"] == ("beyond noise" if paired["score_low"] > 0 else "within noise")


def test_compare_refuses_more_than_five_reports(ws: enb.Workspace, tmp_path: Path) -> None:
    reports = [
        ws.baseline_report(
            [ws.load(envloop_job(tmp_path, f"j{i}", "b", f"m{i}", M1["math-bench"]))]
        )
        for i in range(6)
    ]
    assert len(reports[0].compare(*reports[1:5]).names) == 5
    with pytest.raises(EnvloopError, match="at most 5 baseline reports in total, got 6"):
        reports[0].compare(*reports[1:])
    with pytest.raises(EnvloopError, match="needs another"):
        reports[0].compare()
    with pytest.raises(EnvloopError, match="in both reports"):
        reports[0].compare(reports[0])


def test_same_model_twice_gets_distinct_names(ws: enb.Workspace, tmp_path: Path) -> None:
    a = ws.load(envloop_job(tmp_path, "r1", "b", "m", M1["math-bench"]))
    b = ws.load(envloop_job(tmp_path, "r2", "b", "m", M2["math-bench"]))
    cmp = ws.baseline_report([a]).compare(ws.baseline_report([b]))
    assert cmp.names == ["m", "m (2)"]


# -- HTML and panel ------------------------------------------------------------------------
def test_export_html_is_self_contained(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]], tmp_path: Path
) -> None:
    m1, _ = two_models
    out = ws.baseline_report(m1).export_html(tmp_path / "r" / "baseline.html")
    assert out.sections == (
        "Overview", "Score by benchmark", "Score per benchmark",
        "math-bench by subset", "code-bench by subset", "agent-bench by subset",
    )  # fmt: skip
    assert out.charts == 4
    text = out.path.read_text(encoding="utf-8")
    assert "default-src 'none'" in text
    assert "<script src=" not in text and "<link href=" not in text
    assert "cdn.jsdelivr" not in text
    assert "17/18 attempts scored" in text and "acme/m1" in text
    assert out.bytes == out.path.stat().st_size and not list(tmp_path.glob("r/*.partial-write"))


def test_panel_driven_from_python(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]
) -> None:
    m1, _ = two_models
    p = ws.baseline_report(m1).panel()
    assert repr(p) == "<BaselinePanel acme/m1: 3 benchmarks · Overview · Score details>"
    assert [p.widget.get_title(i) for i in range(2)] == ["Overview", "Score details"]
    assert p.frame is not None and p.frame["value"].tolist() == ["code", "math"]
    assert list(p.by.options) == [("subset", "subset"), ("level", "tag:level"),
                                  ("dimension", "dimension")]  # fmt: skip
    p.benchmark.value = "code-bench"
    assert p.frame["score"].tolist() == m1[1].groups("subset")["score"].tolist()
    p.by.value = "dimension"
    assert p.frame["value"].tolist() == m1[1].groups("dimension")["dimension"].tolist()
    assert set(p.view_buttons) == set(p.frame["value"])
    assert p.chart.to_dict()["title"] == "code-bench: score by dimension"
    p.by.value = "subset"
    p.view_buttons["code"].click()
    assert p.guard.last_error is None
    jp = p.job_panel
    assert jp is not None and jp.job.id == "m1_code-bench"
    assert jp.widget.selected_index == 1 and jp.cases.subset.value == "code"
    assert set(jp.cases.frame["task"]) == {"B", "C"}
    p.by.value = "tag:level"
    p.view_buttons["hard"].click()
    assert p.job_panel is not jp and p.job_panel is not None
    cases = p.job_panel.cases
    assert (cases.query.tag_key, cases.query.tag_value) == ("level", "hard")
    assert set(cases.frame["task"]) == {"B", "C"}  # the two hard tasks
    assert "Cases filtered to tag level = hard" in p.opened.children[0].value
    cases.subset.value = "code"  # the subset dropdown filters by subset again
    assert (cases.query.tag_key, cases.query.tag_value) == ("subset", "code")
    assert set(cases.frame["task"]) == {"B", "C"}
    cases.subset.value = "math"
    assert set(cases.frame["task"]) == {"A"}


def test_panel_of_a_benchmark_without_drilldown(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = json.loads(envloop_job(tmp_path, "plain", "p", "m", M2["math-bench"]).read_text())
    for task in doc["job"]["tasks"]:
        task["tags"] = {}
    for trial in doc["trials"]:
        trial.pop("metrics", None)
    path = tmp_path / "plain2.json"
    path.write_text(json.dumps(doc))
    job = ws.load(path)
    report = ws.baseline_report([job])
    assert report.dimensions("p") == []
    p = report.panel()
    assert p.frame is None and "has no drill-down" in p.heading.value
    out = report.export_html(tmp_path / "p.html")
    assert out.sections[-1] == "p" and "no drill-down" in out.path.read_text(encoding="utf-8")


# -- an lm-eval run over several tasks: one benchmark per lm-eval task ------------------------
def _check_rows_against_groups(report: enb.BaselineReport, job: enb.Job, **opts: Any) -> None:
    """Every split benchmark's row is its subset's row of ``job.groups(by="subset")``."""
    table = report.table().set_index("benchmark")
    groups = job.groups("subset", **opts).set_index("value")
    for bench in report.items:
        if not bench.split or bench.job_id != job.id:
            continue
        row, g = table.loc[bench.label], groups.loc[bench.subset]
        assert row["job_id"] == job.id and row["subset"] == bench.subset
        assert row["score"] == g["score"] and row["pass@k"] == g["pass@k"]
        assert row["pass^k"] == g["pass^k"] and row["k"] == g["k"]
        assert (row["completed"], row["total"]) == (g["complete_members"], g["tasks"])
        assert row["samples"] == f"{g['complete_members']}/{g['tasks']}"
        assert (row["scored"], row["attempts"]) == (g["scored"], g["total"])
        missing = g["total"] - g["scored"]
        assert row["coverage"] == f"{g['scored']}/{g['total']} scored" + (
            f", {missing} missing" if missing else ""
        )
        assert row["bad_cases"] == g["bad_cases"]


def test_lm_eval_run_is_one_benchmark_per_task(ws: enb.Workspace) -> None:
    lm = ws.load(LM_EVAL)
    assert lm.info["source_format"] == "lm-eval"
    report = ws.baseline_report([lm])
    assert report.benchmarks == ["envloop_alpha", "envloop_beta"]
    assert [(b.job_id, b.subset, b.split) for b in report.items] == [
        (lm.id, "envloop_alpha", True),
        (lm.id, "envloop_beta", True),
    ]
    assert repr(report).endswith("· 2 benchmarks: envloop_alpha, envloop_beta>")
    _check_rows_against_groups(report, lm)
    for opts in ({"bad_below": 0.9}, {"policy": "failure"}, {"threshold": 0.5}):
        _check_rows_against_groups(ws.baseline_report([lm], **opts), lm, **opts)  # type: ignore[arg-type]
    info = report.overview()
    assert info["benchmarks"] == ["envloop_alpha", "envloop_beta"] and info["jobs"] == [lm.id]
    s = lm.summary()
    assert (info["scored"], info["attempts"]) == (s.scored, s.total)
    # two benchmarks: bars of the score per lm-eval task (a radar of two is a segment)
    spec = report.radar().to_dict()
    assert '"type": "bar"' in json.dumps(spec) and "theta" not in json.dumps(spec)
    bars = next(v for v in spec["datasets"].values() if v and "benchmark" in v[0])
    scores = lm.groups("subset").set_index("value")["score"].to_dict()
    assert {p["benchmark"]: p["score"] for p in bars} == scores
    # a benchmark is named by its label; the split job's id is ambiguous
    assert report.job("envloop_beta") is lm and report.job(lm.id) is lm
    with pytest.raises(EnvloopError, match="is split into envloop_alpha, envloop_beta"):
        report.benchmark(lm.id)
    # split_by="subset" splits any job with several subsets; None splits none
    assert ws.baseline_report([lm], split_by="subset").benchmarks == report.benchmarks
    assert ws.baseline_report([lm], split_by=None).benchmarks == ["envloop_group"]
    with pytest.raises(ValueError, match="split_by must be"):
        ws.baseline_report([lm], split_by="task")  # type: ignore[arg-type]


def test_split_benchmark_drilldown_excludes_its_subset(ws: enb.Workspace) -> None:
    lm = ws.load(LM_EVAL)
    report = ws.baseline_report([lm])
    assert report.dimensions("envloop_alpha") == ["tag:group"]  # not subset, not dimension
    frame = report.drilldown("envloop_alpha")  # by its first choice: the lm-eval group
    sub = lm.groups("subset").set_index("value").loc["envloop_alpha"]
    assert frame["value"].tolist() == ["envloop_group"]
    r = frame.iloc[0]
    assert (r["score"], r["completed"], r["tasks"], r["bad_cases"], r["pass@k"]) == (
        sub["score"], sub["complete_members"], sub["tasks"], sub["bad_cases"], sub["pass@k"],
    )  # fmt: skip
    for by in ("subset", "dimension", "tag:subset"):
        with pytest.raises(EnvloopError, match="cannot be drilled down by"):
            report.drilldown("envloop_alpha", by)
    assert report.drilldown_chart("envloop_beta").to_dict()["title"] == (
        "envloop_beta: score by group"
    )


def test_split_drilldown_counts_as_job_groups(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]
) -> None:
    """The within-subset tag drill-down sums the job's per-task counts as ``job.groups``
    does: over every task it is ``job.groups`` exactly; within a subset, a tag covering
    the subset gives the subset's row."""
    from envloop_nb._compare.baseline import restricted_tag_groups

    m1, _ = two_models
    job = m1[1]  # code-bench: tasks B, C (code; level hard) and A (math; level easy)
    for opts in ({}, {"policy": "failure"}, {"threshold": 0.5}, {"bad_below": 0.9}):
        for key in ("subset", "level"):
            ours = restricted_tag_groups(ws.con, job.id, key, **opts)  # type: ignore[arg-type]
            theirs = job.groups(f"tag:{key}", **opts)
            assert ours.columns.tolist() == theirs.columns.tolist()
            for col in ("value", "tasks", "total", "scored", "complete_members", "score",
                        "pass@k", "pass^k", "bad_cases", "rated_tasks"):  # fmt: skip
                assert ours[col].tolist() == theirs[col].tolist(), (key, opts, col)
    report = ws.baseline_report([job], split_by="subset")
    assert report.benchmarks == ["code", "math"]
    assert report.dimensions("code") == ["tag:level"]
    _check_rows_against_groups(report, job)
    level = report.drilldown("code", "tag:level")
    code = job.groups("subset").set_index("value").loc["code"]
    assert level[["value", "tasks", "samples"]].values.tolist() == [["hard", 2, "2/2"]]
    assert level["score"].iloc[0] == code["score"]


def test_mixed_report_lm_eval_split_and_envloop_job(ws: enb.Workspace, tmp_path: Path) -> None:
    lm = ws.load(LM_EVAL)
    other = ws.load(
        envloop_job(tmp_path, "d_math", "math-bench", lm.info["model"], M1["math-bench"])
    )
    report = ws.baseline_report([lm, other])
    assert report.benchmarks == ["envloop_alpha", "envloop_beta", "math-bench"]
    table = report.table()
    _check_rows_against_groups(report, lm)
    row = table.iloc[2]
    s = other.summary()
    assert (row["score"], row["completed"], row["total"]) == (
        s.score, s.complete_members, s.total_members,
    )  # fmt: skip
    assert row["subset"] is None or row["subset"] != row["subset"]
    assert report.dimensions("math-bench") == ["subset", "dimension"]
    info = report.overview()
    assert info["attempts"] == lm.summary().total + s.total


def test_split_benchmark_panel_view_opens_its_subset(ws: enb.Workspace, tmp_path: Path) -> None:
    lm = ws.load(LM_EVAL)
    other = ws.load(
        envloop_job(tmp_path, "d_math", "math-bench", lm.info["model"], M1["math-bench"])
    )
    p = ws.baseline_report([lm, other]).panel()
    assert repr(p) == "<BaselinePanel envloop-dummy: 3 benchmarks · Overview · Score details>"
    assert list(p.benchmark.options) == ["envloop_alpha", "envloop_beta", "math-bench"]
    assert list(p.by.options) == [("group", "tag:group")]
    assert p.frame is not None and p.frame["value"].tolist() == ["envloop_group"]
    for subset in ("envloop_alpha", "envloop_beta"):
        p.benchmark.value = subset
        assert p.frame["score"].tolist() == [
            lm.groups("subset").set_index("value").loc[subset, "score"]
        ]
        p.view_buttons["envloop_group"].click()
        assert p.guard.last_error is None
        jp = p.job_panel
        assert jp is not None and jp.job.id == lm.id
        assert jp.widget.selected_index == 1 and jp.cases.subset.value == subset
        expected = {
            t
            for (t,) in ws.con.execute(
                "SELECT task FROM task_tags WHERE job_id = ? AND key = 'subset' AND value = ?",
                [lm.id, subset],
            ).fetchall()
        }
        assert set(jp.cases.frame["task"]) == expected
        assert f"Cases filtered to subset {subset}" in p.opened.children[0].value
    p.benchmark.value = "math-bench"  # a whole job: its own subsets again
    assert next(iter(p.by.options)) == ("subset", "subset")
    p.view_buttons["math"].click()
    assert p.job_panel is not None and p.job_panel.job.id == other.id


def test_export_html_has_every_split_benchmark(ws: enb.Workspace, tmp_path: Path) -> None:
    lm = ws.load(LM_EVAL)
    other = ws.load(
        envloop_job(tmp_path, "d_math", "math-bench", lm.info["model"], M1["math-bench"])
    )
    out = ws.baseline_report([lm, other]).export_html(tmp_path / "lm.html")
    assert out.sections == (
        "Overview", "Score by benchmark", "Score per benchmark",
        "envloop_alpha by group", "envloop_beta by group", "math-bench by subset",
    )  # fmt: skip
    text = out.path.read_text(encoding="utf-8")
    assert "envloop_alpha" in text and "envloop_beta" in text
    assert f"job {lm.id}, subset envloop_alpha" in text


def test_compare_matches_split_benchmarks_by_name(ws: enb.Workspace, tmp_path: Path) -> None:
    lm = ws.load(LM_EVAL)
    lm2 = ws.load(LM_EVAL, job_id="lm-again")
    other = ws.load(
        envloop_job(tmp_path, "d_math", "math-bench", lm.info["model"], M1["math-bench"])
    )
    a = ws.baseline_report([lm, other], name="A")
    b = ws.baseline_report([lm2], name="B")
    cmp = a.compare(b)
    t = cmp.table()
    assert t["benchmark"].tolist() == ["envloop_alpha", "envloop_beta", "math-bench"]
    scores = lm.groups("subset").set_index("value")["score"]
    assert t["A"].tolist()[:2] == t["B"].tolist()[:2] == scores.tolist()
    assert t["comparable"].tolist() == [True, True, None]
    assert t["mark"].tolist() == ["", "", "not run by B"]
    checks = cmp.comparability().set_index("benchmark")
    assert checks.loc["envloop_alpha", "differences"] == []


def test_split_guard_compares_the_subset_tasks_only(ws: enb.Workspace, tmp_path: Path) -> None:
    """Two jobs split by subset whose task C (subset code) differs in content: the code
    benchmark is not comparable, the math one is (the whole jobs' guard would refuse both)."""
    x = ws.load(envloop_job(tmp_path, "x", "d", "m-x", M1["math-bench"]))
    doc = json.loads(envloop_job(tmp_path, "y", "d", "m-y", M2["math-bench"]).read_text())
    doc["job"]["tasks"][2]["digest"] = "sha256:changed"
    path = tmp_path / "y2.json"
    path.write_text(json.dumps(doc))
    y = ws.load(path)
    assert not ws.compare([x, y]).comparable  # the whole jobs differ
    cmp = ws.baseline_report([x], split_by="subset").compare(
        ws.baseline_report([y], split_by="subset")
    )
    t = cmp.table().set_index("benchmark")
    assert t["comparable"].to_dict() == {"code": False, "math": True}
    assert t.loc["code", "mark"] == (
        "not comparable: 1 tasks have the same name but a different digest (different "
        "content) (tasks of benchmark code)"
    )
    s = cmp.strengths()
    noise = {b: set(s.loc[s["benchmark"] == b, "noise"]) for b in ("code", "math")}
    assert noise["code"] == {"not assessed"}
    assert noise["math"] <= {"within noise", "beyond noise"} and noise["math"]
    # the math benchmark's interval is over its own task (A), complete in both
    math = s[s["benchmark"] == "math"].iloc[0]
    assert "over 1 tasks complete in both" in math["sentence"]


# -- the comparison's panel, the report panel's Comparison tab, the comparison's HTML ------
def test_comparison_panel_driven_from_python(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]]
) -> None:
    m1, m2 = two_models
    cmp = ws.baseline_report(m1).compare(ws.baseline_report(m2))
    p = cmp.panel()
    assert repr(p) == "<BaselineComparePanel acme/m1 vs acme/m2: 3 benchmarks>"
    assert p.frame.equals(cmp.table()) and p.words == cmp.words()
    assert isinstance(p.radar, alt.JupyterChart)
    assert "agent-bench: not run by acme/m2" in p.chart.to_dict()["title"]["subtitle"][0]
    table = p.table_html.value
    assert "acme/m1" in table and "acme/m2" in table
    assert "⚠ not run by acme/m2" in table and table.count(">not run</small>") == 1
    assert "color:var(--jp-error-color1,#c62828)" in table  # the marks are red
    assert cmp.words()[1] in p.words_html.value  # (no character there needs escaping)
    assert "Strengths and weaknesses" in p.words_html.value
    checks = p.comparability_html.value
    assert "only acme/m1 ran it" in checks and "same frozen work" in checks
    assert [c.value for c in p.widget.children if hasattr(c, "value")] == [
        p.heading.value, p.radar_note.value, table, p.words_html.value, checks,
    ]  # fmt: skip


def test_comparison_panel_marks_different_frozen_work(ws: enb.Workspace, tmp_path: Path) -> None:
    a = ws.load(envloop_job(tmp_path, "x1", "math-bench", "m-a", M1["math-bench"]))
    b = ws.load(envloop_job(tmp_path, "x2", "math-bench", "m-b", M2["math-bench"],
                            revision="sha256:other"))  # fmt: skip
    p = ws.baseline_report([a]).compare(ws.baseline_report([b])).panel()
    assert "⚠ not comparable: dataset revision" in p.table_html.value
    assert ">no</span>" in p.comparability_html.value
    assert "not assessed" in p.words_html.value
    assert "one benchmark: the radar is one axis" in p.radar_note.value


def test_report_panel_comparison_tab(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]], tmp_path: Path
) -> None:
    m1, m2 = two_models
    r1, r2 = ws.baseline_report(m1), ws.baseline_report(m2)
    p = r1.panel(compare_with=[r2])
    assert repr(p) == (
        "<BaselinePanel acme/m1: 3 benchmarks · Overview · Score details · Comparison>"
    )
    assert len(p.widget.children) == 3
    assert [p.widget.get_title(i) for i in range(3)] == ["Overview", "Score details", "Comparison"]
    assert p.comparison is not None and p.widget.children[2] is p.comparison.widget
    assert p.comparison.frame.equals(r1.compare(r2).table())
    assert "⚠ not run by acme/m2" in p.comparison.table_html.value
    assert p.comparison.radar_note.value == ""  # three benchmarks: a real radar
    p.benchmark.value = "code-bench"  # the other tabs still work
    assert p.frame is not None and p.frame["value"].tolist() == ["code", "math"]
    plain = r1.panel()
    assert len(plain.widget.children) == 2 and plain.comparison is None
    assert len(r1.panel(compare_with=[]).widget.children) == 2
    with pytest.raises(TypeError, match=r"compare_with takes a list"):
        r1.panel(compare_with=r2)  # type: ignore[arg-type]
    others = [
        ws.baseline_report(
            [ws.load(envloop_job(tmp_path, f"o{i}", "math-bench", f"o{i}", M2["math-bench"]))]
        )
        for i in range(4)
    ]
    assert len(r1.panel(compare_with=others).comparison.names) == 5  # type: ignore[union-attr]
    with pytest.raises(EnvloopError, match="at most 5 baseline reports in total, got 6"):
        r1.panel(compare_with=[r2, *others])


def test_comparison_export_html_is_self_contained(
    ws: enb.Workspace, two_models: tuple[list[enb.Job], list[enb.Job]], tmp_path: Path
) -> None:
    m1, m2 = two_models
    cmp = ws.baseline_report(m1).compare(ws.baseline_report(m2))
    out = cmp.export_html(tmp_path / "c" / "compare.html")
    assert out.sections == ("Reports", "Scores by benchmark and report", "Radar",
                            "Strengths and weaknesses", "Comparability")  # fmt: skip
    assert out.charts == 1
    text = out.path.read_text(encoding="utf-8")
    assert "default-src 'none'" in text
    assert "<script src=" not in text and "<link href=" not in text
    assert "cdn.jsdelivr" not in text
    assert "acme/m1" in text and "acme/m2" in text
    assert "⚠ not run by acme/m2" in text and "only acme/m1 ran it" in text
    assert "1 of 3 benchmarks marked (red)" in text
    assert out.bytes == out.path.stat().st_size and not list(tmp_path.glob("c/*.partial-write"))
