"""lm-evaluation-harness results-only files (no ``--log_samples``): EleutherAI's published
Pythia evaluations (lm-eval 0.3: ``results`` / ``versions`` / ``config``) and an lm-eval
0.4 ``results_<time>.json`` written without samples (``tests/data/lm_eval/``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb._loaders import detect_format, job_sources
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "lm_eval"
PYTHIA = DATA / "pythia-160m" / "zero-shot"
STEP = PYTHIA / "160m_step113000.json"
ONLY = DATA / "results_only" / "envloop-dummy"
RESULTS = next(ONLY.glob("results_*.json"))
Z95 = NormalDist().inv_cdf(0.975)  # 1.959963984540054...


def _doc(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_both_shapes_are_detected() -> None:
    assert detect_format(STEP) == "lm-eval"  # 0.3: a name of the user's choosing
    assert detect_format(RESULTS) == "lm-eval"
    assert detect_format(ONLY) == "lm-eval"
    assert [p.name for p in job_sources(PYTHIA)] == ["160m_step113000.json", "160m_step123000.json"]


def test_a_pythia_file_is_a_summary_only_job(ws: enb.Workspace) -> None:
    job = ws.load(STEP)
    doc = _doc(STEP)
    assert job.id == "lm-eval:EleutherAI/pythia-v1.1-160m@160m_step113000"
    info = job.info
    assert info["source_format"] == "lm-eval" and info["runner"] == "lm-eval"
    assert info["model"] == "EleutherAI/pythia-v1.1-160m"  # config.model is "hf-causal"
    model = info["extra"]["lm_eval_model"]
    assert model["model"] == "hf-causal"
    assert model["model_args"] == {"pretrained": "EleutherAI/pythia-v1.1-160m",
                                   "revision": "step113000"}  # fmt: skip
    assert (model["revision"], model["step"]) == ("step113000", 113000)
    assert info["extra"]["summarised"]["metrics_only"] is True
    assert info["platform_metrics"] == {k: doc[k] for k in ("results", "versions", "config")}
    assert job.k == 1
    s = job.summary()
    assert s.score is None  # six tasks, no number for the whole run
    assert (s.scored, s.missing, s.invalid, s.pass_, s.pass_at_k, s.pass_hat_k) == (None,) * 6
    assert s.note is not None and "6 lm-eval tasks" in s.note and "groups(by='subset')" in s.note
    assert "no samples" in s.note
    groups = job.groups(by="subset")
    assert groups["value"].tolist() == list(doc["results"])  # the file's order
    by = groups.set_index("value")
    for task, entry in doc["results"].items():
        first = next(m for m in entry if not m.endswith("_stderr"))  # lm-eval 0.3's order
        row = by.loc[task]
        assert row["metric"] == first and row["score"] == entry[first]  # exactly
        err = entry[f"{first}_stderr"]
        assert row["stderr"] == err
        assert row["ci_low"] == entry[first] - Z95 * err  # not clipped
        assert row["ci_high"] == entry[first] + Z95 * err
    assert by["tasks"].isna().all() and by["scored"].isna().all()  # 0.3 states no counts
    assert by.loc["lambada_openai", "metric"] == "ppl"
    dims = job.groups(by="dimension")
    got = {(r.subset, r.dimension): r.score for r in dims.itertuples()}
    assert got[("arc_easy", "acc_norm")] == doc["results"]["arc_easy"]["acc_norm"]
    assert got[("lambada_openai", "acc")] == doc["results"]["lambada_openai"]["acc"]
    assert len(got) == 5  # every number the file states beside each task's first


def test_views_that_need_samples_say_so(ws: enb.Workspace) -> None:
    job = ws.load(STEP)
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.34)])
    for view in (job.samples, job.curve, job.attempts, job.rollout_stats,
                 lambda: job.buckets(rules)):  # fmt: skip
        with pytest.raises(ValueError, match=r"lm-eval results without samples.*--log_samples"):
            view()
    ivs = job.intervals(frame=None)
    assert ivs["score"].estimate is None and "groups(by='subset')" in ivs["score"].method
    listed = ws.jobs().set_index("job_id").loc[job.id]
    assert listed[["tasks", "dispatched", "scored"]].isna().all()  # unknown, not 0


def test_a_folder_of_checkpoints_loads_one_job_each(ws: enb.Workspace) -> None:
    jobs = ws.load_all(PYTHIA)
    assert [j.info["extra"]["lm_eval_model"]["step"] for j in jobs] == [113000, 123000]
    later = jobs[1].groups(by="subset").set_index("value")
    assert (
        later.loc["arc_easy", "score"]
        == _doc(PYTHIA / "160m_step123000.json")["results"]["arc_easy"]["acc"]
    )


def test_a_04_results_file_without_samples(ws: enb.Workspace) -> None:
    job = ws.load(ONLY)
    doc = _doc(RESULTS)
    stamp = RESULTS.stem.removeprefix("results_")
    assert job.id == f"lm-eval:envloop-dummy@{stamp}"  # as with its samples
    assert job.info["model"] == "envloop-dummy"
    assert job.info["extra"]["lm_eval_model"]["model_args"] == {"pretrained": "envloop-dummy"}
    by = job.groups(by="subset").set_index("value")
    assert by.index.tolist() == ["envloop_alpha", "envloop_beta"]
    for task in by.index:
        entry = doc["results"][task]
        row = by.loc[task]
        assert row["metric"] == "exact_match,strict"  # configs' metric_list, first filter
        assert row["score"] == entry["exact_match,strict"]
        assert row["stderr"] == entry["exact_match_stderr,strict"]
        n = doc["n-samples"][task]["effective"]
        assert (row["tasks"], row["total"], row["scored"], row["missing"]) == (n, n, n, 0)
    group = job.groups(by="tag:group").set_index("value")
    assert (
        group.loc["envloop_group", "score"] == doc["results"]["envloop_group"]["exact_match,strict"]
    )
    assert group.loc["envloop_group", "tasks"] == 12  # its sample_len
    s = job.summary()  # one group holds every task: its number is the run's
    assert s.score == doc["results"]["envloop_group"]["exact_match,strict"]
    assert (s.total_members, s.scored, s.missing) == (12, 12, 0)
    iv = job.intervals(frame=None)["score"]
    err = doc["results"]["envloop_group"]["exact_match_stderr,strict"]
    assert (iv.low, iv.high) == (s.score - Z95 * err, s.score + Z95 * err)
    dims = job.groups(by="dimension")
    assert set(dims["dimension"]) == {"char_overlap,strict", "char_overlap,vote",
                                  "exact_match,vote", "bleu,strict", "bleu,vote"}  # fmt: skip


def test_a_stderr_not_computed_gives_no_interval(ws: enb.Workspace, tmp_path: Path) -> None:
    doc = _doc(RESULTS)
    doc["results"]["envloop_alpha"]["exact_match_stderr,strict"] = "N/A"  # lm-eval's word
    doc["config"]["model_args"] = "pretrained=EleutherAI/pythia-160m,revision=step143000"
    del doc["n-samples"]["envloop_beta"]  # then the entry's sample_len counts the docs
    del doc["n-samples"]["envloop_alpha"], doc["results"]["envloop_alpha"]["sample_len"]
    path = tmp_path / RESULTS.name
    path.write_text(json.dumps(doc))
    job = ws.load(path)
    assert job.info["extra"]["lm_eval_model"]["step"] == 143000
    by = job.groups(by="subset").set_index("value")
    assert by.loc["envloop_alpha", ["stderr", "ci_low", "ci_high"]].isna().all()
    assert by.loc["envloop_alpha", ["tasks", "scored"]].isna().all()  # not stated: unknown
    assert by.loc["envloop_beta", "tasks"] == 6


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["results"]["arc_easy"].update(acc="oops"),
         r"\$\.results\.arc_easy\.acc: expected a finite number or null, got 'oops'"),
        (lambda d: d["results"]["arc_easy"].update(acc_stderr=[1]),
         r"\$\.results\.arc_easy\.acc_stderr: expected a finite number, 'N/A' or null"),
        (lambda d: d.update(results=[]), r"\$\.results: expected an lm-eval results object"),
    ],
)  # fmt: skip
def test_bad_results_are_refused(
    ws: enb.Workspace, tmp_path: Path, edit: Any, message: str
) -> None:
    doc = _doc(STEP)
    edit(doc)
    path = tmp_path / STEP.name
    path.write_text(json.dumps(doc))
    with pytest.raises(enb.LoadError, match=message):
        ws.load(path, format="lm-eval")
    assert ws.jobs().empty


def test_samples_present_for_some_tasks_only_is_refused(ws: enb.Workspace, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(DATA / "run" / "envloop-dummy", folder)
    next(folder.glob("samples_envloop_beta_*.jsonl")).unlink()
    with pytest.raises(enb.LoadError, match=r"\$\.configs\.envloop_beta: no samples file"):
        ws.load(folder)
