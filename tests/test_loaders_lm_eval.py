"""lm-evaluation-harness output (``--log_samples``): a real run of lm-eval's dummy model on
two local generate_until tasks in one group, with ``repeats: 3`` and two filters
(``tests/data/lm_eval/make_fixture.sh``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format
from tests.conftest import ROOT
from tests.test_loaders_envloop import load_job

RUN = ROOT / "tests" / "data" / "lm_eval" / "run"
MODEL_DIR = RUN / "envloop-dummy"
RESULTS = next(MODEL_DIR.glob("results_*.json"))
STAMP = RESULTS.stem.removeprefix("results_")
TASKS = ("envloop_alpha", "envloop_beta")


def _samples(task: str) -> list[dict[str, Any]]:
    path = MODEL_DIR / f"samples_{task}_{STAMP}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _results() -> dict[str, Any]:
    return dict(json.loads(RESULTS.read_text()))


def _copy(tmp_path: Path) -> Path:
    """A copy of the model folder to edit."""
    folder = tmp_path / "envloop-dummy"
    shutil.copytree(MODEL_DIR, folder)
    return folder


def _load(ws: enb.Workspace, source: Path, **options: Any) -> enb.Job:
    return load_job(ws, source, format="lm-eval", **options)


def _rewrite_samples(folder: Path, task: str, edit: Any) -> Path:
    path = folder / f"samples_{task}_{STAMP}.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")
    return path


def test_detected_as_lm_eval() -> None:
    assert detect_format(RUN) == "lm-eval"  # <output_path>
    assert detect_format(MODEL_DIR) == "lm-eval"  # <output_path>/<model>
    assert detect_format(RESULTS) == "lm-eval"


@pytest.mark.parametrize("source", [RUN, MODEL_DIR, RESULTS])
def test_each_doc_is_one_task_with_one_attempt(ws: enb.Workspace, source: Path) -> None:
    job = load_job(ws, source)  # detected
    assert job.id == f"lm-eval:envloop-dummy@{STAMP}"
    assert job.k == 1  # lm-eval scores one filtered response per doc, not each repeat
    tasks = job.tasks()["task"].tolist()
    assert tasks == [f"{t}/{i}" for t in TASKS for i in range(6)]
    attempts = job.attempts()
    assert len(attempts) == 12 and set(attempts["attempt"]) == {1}
    info = job.info
    assert info["source_format"] == "lm-eval" and info["runner"] == "lm-eval"
    assert info["model"] == "envloop-dummy"  # model_name (config.model is "dummy")
    assert info["created_at"].timestamp() == pytest.approx(_results()["date"])
    assert info["dataset_name"] == "envloop_group"


def test_reward_is_the_first_metric_under_the_first_filter(ws: enb.Workspace) -> None:
    job = _load(ws, RUN)
    a = job.attempts().set_index("task")
    for task in TASKS:
        for row in _samples(task):
            if row["filter"] != "strict":
                continue
            got = a.loc[f"{task}/{row['doc_id']}"]
            assert got["reward"] == row["exact_match"]
            assert got["output"] == row["filtered_resps"][0]
            assert got["reference"] == row["target"]
            assert got["input"] == row["arguments"]["gen_args_0"]["arg_0"]
            extra = json.loads(got["extra"])
            assert extra["repeats"] == 3 and extra["resps"] == [["lol", "lol", "lol"]]
            assert extra["metrics"]["strict"]["bleu"] == row["bleu"]  # not a number per doc
            assert extra["filtered_resps"]["vote"] == ["l"]
    summary = job.summary()
    assert (summary.scored, summary.total, summary.score) == (12, 12, 0.5)


def test_other_metrics_and_filters_are_dimensions(ws: enb.Workspace) -> None:
    job = _load(ws, RUN)
    dims = ws.sql(
        f"SELECT task, name, value FROM dimensions WHERE job_id = '{job.id}' ORDER BY ALL"
    ).df()
    names = sorted(set(dims["name"]))
    assert names == ["char_overlap,strict", "char_overlap,vote", "exact_match,vote"]
    assert len(dims) == 36  # 12 docs x 3; bleu's per-doc pairs are not numbers
    lookup = {(r.task, r.name): r.value for r in dims.itertuples()}
    for task in TASKS:
        for row in _samples(task):
            name = f"char_overlap,{row['filter']}"
            assert lookup[(f"{task}/{row['doc_id']}", name)] == row["char_overlap"]
    sql = f"SELECT name, higher_is_better FROM dimension_meta WHERE job_id = '{job.id}'"
    meta = ws.sql(sql).df()
    assert meta.set_index("name")["higher_is_better"].to_dict() == dict.fromkeys(names, True)


def test_tags_are_the_lm_eval_task_and_group(ws: enb.Workspace) -> None:
    job = _load(ws, RUN)
    tags = ws.sql(
        f"SELECT task, key, value FROM task_tags WHERE job_id = '{job.id}' ORDER BY ALL"
    ).df()
    assert len(tags) == 24
    first = tags[tags["task"] == "envloop_beta/0"].set_index("key")["value"].to_dict()
    assert first == {"group": "envloop_group", "subset": "envloop_beta"}
    assert json.loads(job.tasks()["tags"].iloc[0]) == {
        "subset": "envloop_alpha",
        "group": "envloop_group",
    }


def test_score_per_task_equals_the_harness(ws: enb.Workspace) -> None:
    job = _load(ws, RUN)
    results = _results()["results"]
    by_subset = job.groups(by="subset").set_index("value")["score"]
    for task in TASKS:
        assert by_subset[task] == pytest.approx(results[task]["exact_match,strict"], abs=1e-12)
    group = job.groups(by="tag:group").set_index("value")["score"]
    assert group["envloop_group"] == pytest.approx(results["envloop_group"]["exact_match,strict"])


def test_source_numbers_and_platform_metrics(ws: enb.Workspace) -> None:
    job = _load(ws, RUN)
    info = job.info
    doc = _results()
    platform = info["platform_metrics"]
    for key in ("results", "groups", "n-samples", "versions", "config"):
        assert platform[key] == doc[key]
    nums = {n["metric"]: n for n in info["extra"]["source_numbers"]}
    first = nums["envloop_alpha · exact_match,strict"]
    assert first["source"] == doc["results"]["envloop_alpha"]["exact_match,strict"]
    assert first["of"] == "reward" and first["statistic"] == "mean"
    assert first["tasks_tag"] == ["subset", "envloop_alpha"]
    err = nums["envloop_beta · char_overlap_stderr,vote"]
    assert err["of"] == "dimension:char_overlap,vote" and err["statistic"] == "stderr"
    assert nums["envloop_group · exact_match,strict"]["tasks_tag"] == ["group", "envloop_group"]
    assert not any("bleu" in m for m in nums)  # a corpus metric: not a mean of per-doc values
    assert not any("stderr" in m for m in nums if m.startswith("envloop_group"))  # pooled
    assert len(nums) == 22


def test_every_source_number_agrees(ws: enb.Workspace) -> None:
    job = _load(ws, RUN)
    df = job.source_agreement()
    assert len(df) == 22
    assert df["agrees"].tolist() == [True] * 22, df[~df["agrees"]][["metric", "source"]]


def test_k_overrides(ws: enb.Workspace) -> None:
    job = _load(ws, RUN, k=3)
    assert job.k == 3
    summary = job.summary()
    assert summary.scored == 12 and summary.total == 36
    with pytest.raises(enb.LoadError, match=r"k: expected an integer >= 1"):
        _load(ws, RUN, k=0)


def test_uneven_repeats_warn(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = _copy(tmp_path)

    def fewer(lines: list[str]) -> list[str]:
        row = json.loads(lines[0])
        row["resps"] = [["lol", "lol"]]
        return [json.dumps(row), *lines[1:]]

    _rewrite_samples(folder, "envloop_alpha", fewer)
    with pytest.warns(enb.LoadWarning, match=r"different numbers of repeats.*envloop_alpha: 2, 3"):
        job = _load(ws, folder)
    assert json.loads(job.attempts()["extra"].iloc[0])["repeats"] == 2


def test_bad_line_names_file_and_line_and_leaves_workspace(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    folder = _copy(tmp_path)
    job = _load(ws, folder, job_id="run")
    before = job.attempts()
    _rewrite_samples(folder, "envloop_beta", lambda ls: [*ls[:3], '{"doc_id": 3, "filt', *ls[4:]])
    with pytest.raises(enb.LoadError, match=r"samples_envloop_beta_.*\.jsonl, line 4: not valid"):
        _load(ws, folder, job_id="run")
    assert ws.job("run").attempts().equals(before)  # the failed reload changed nothing
    assert ws.sql("SELECT count(*) FROM attempts").fetchone() == (12,)


def test_lenient_skips_and_warns(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _rewrite_samples(folder, "envloop_beta", lambda ls: [*ls[:3], "not json", *ls[4:]])
    with pytest.warns(
        enb.LoadWarning,
        match=r"skipped 1 unusable sample line.*; 1 doc\(s\) have no line under the first filter",
    ):
        job = _load(ws, folder, lenient=True)
    assert len(job.tasks()) == 12  # doc 3 still has its 'vote' line...
    assert job.summary().scored == 11  # ...but no reward under 'strict'


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda ls: [ls[0], ls[0], *ls[1:]],
            r"line 2: doc 0 filter 'strict' appears twice \(first at line 1\)",
        ),
        (
            lambda ls: [ls[0].replace('"doc_id": 0', '"doc_id": "0"'), *ls[1:]],
            r"line 1: doc_id must be an integer >= 0, got '0'",
        ),
        (
            lambda ls: [ls[0].replace('"exact_match": 1.0', '"exact_match": NaN'), *ls[1:]],
            r"line 1: exact_match must be a finite number or null, got nan",
        ),
        (lambda ls: ls[1:], r"line 6: doc 0 has no line for the task's first filter"),
    ],
)
def test_errors_name_the_sample_line(
    ws: enb.Workspace, tmp_path: Path, edit: Any, message: str
) -> None:
    folder = _copy(tmp_path)
    _rewrite_samples(folder, "envloop_alpha", edit)
    with pytest.raises(enb.LoadError, match=r"samples_envloop_alpha_.*\.jsonl, " + message):
        _load(ws, folder)
    assert ws.jobs().empty


def test_results_errors(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / f"samples_envloop_beta_{STAMP}.jsonl").unlink()
    with pytest.raises(enb.LoadError, match=r"\$\.configs\.envloop_beta: no samples file"):
        _load(ws, folder)
    folder = _copy(tmp_path / "b")
    doc = _results()
    doc["n-samples"]["envloop_alpha"]["effective"] = 7
    (folder / RESULTS.name).write_text(json.dumps(doc))
    with pytest.raises(enb.LoadError, match=r"n-samples\.envloop_alpha\.effective: the results"):
        _load(ws, folder)
    shutil.copy(RESULTS, folder / "results_2030-01-01T00-00-00.json")
    with pytest.raises(enb.LoadError, match=r"holds 2 lm-eval runs .*ws\.load_all\(path\)"):
        _load(ws, folder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(enb.LoadError, match=r"no results_\*\.json here"):
        _load(ws, tmp_path / "empty")


def test_a_corpus_metric_first_falls_back_to_a_per_doc_number(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    folder = _copy(tmp_path)
    doc = _results()
    for task in TASKS:
        metrics = doc["configs"][task]["metric_list"]
        doc["configs"][task]["metric_list"] = [metrics[2], *metrics[:2]]  # bleu first
    (folder / RESULTS.name).write_text(json.dumps(doc))
    job = _load(ws, folder)
    assert job.info["extra"]["reward"] == dict.fromkeys(TASKS, "exact_match,strict")
    assert job.summary().score == 0.5


def test_a_value_that_is_no_number_is_refused_naming_file_line_and_metric(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    folder = _copy(tmp_path)

    def oops(lines: list[str]) -> list[str]:
        row = json.loads(lines[4])
        row["char_overlap"] = "oops"
        return [*lines[:4], json.dumps(row), *lines[5:]]

    _rewrite_samples(folder, "envloop_alpha", oops)
    message = (
        r"samples_envloop_alpha_.*\.jsonl, line 5: doc \d+: char_overlap under filter "
        r"'\w+' must be a finite number or null, got 'oops'"
    )
    with pytest.raises(enb.LoadError, match=message):
        _load(ws, folder)
    assert ws.jobs().empty
    with pytest.warns(
        enb.LoadWarning, match=r"1 metric value\(s\) that are not numbers set to null.*'oops'"
    ):
        job = _load(ws, folder, lenient=True)
    dims = job.dimensions()
    overlap = dims[dims["name"] == "char_overlap,strict"].set_index("task")["value"]
    assert len(overlap) == 12 and overlap.isna().tolist().count(True) == 1  # kept, as missing
    assert overlap.isna()["envloop_alpha/4"]


def test_a_samples_file_for_a_task_not_in_the_results_is_refused(
    ws: enb.Workspace, tmp_path: Path
) -> None:
    folder = _copy(tmp_path)
    shutil.copy(
        folder / f"samples_envloop_beta_{STAMP}.jsonl",
        folder / f"samples_envloop_gamma_{STAMP}.jsonl",
    )
    message = (
        r"samples_envloop_gamma_.*\.jsonl: task 'envloop_gamma' is not in the results' configs"
    )
    with pytest.raises(enb.LoadError, match=message):
        _load(ws, folder)
    with pytest.warns(
        enb.LoadWarning, match=r"1 samples file\(s\) of tasks not in the results not loaded"
    ):
        job = _load(ws, folder, lenient=True)
    assert len(job.tasks()) == 12
