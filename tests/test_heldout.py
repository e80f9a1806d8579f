"""Held-out guard and reference filling: stripped-exact input matches."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import envloop_nb as enb
from envloop_nb import HeldOutWarning

from .conftest import SAMPLE_DATA


def make_job(path: Path, job_id: str, tasks: dict[str, tuple[Any, str | None]]) -> Path:
    """A finished k=1 job; ``tasks`` maps name -> (input, reference)."""
    doc = {
        "schema_version": "envloop.job-result/v1",
        "job": {
            "id": job_id,
            "status": "completed",
            "dataset": {"name": "hand", "version": "1"},
            "attempts": 1,
            "tasks": [{"name": t} for t in tasks],
        },
        "trials": [
            {
                "task": t,
                "attempt": 1,
                "status": "completed",
                "reward": 0,
                "input": inp,
                "reference": ref,
            }
            for t, (inp, ref) in tasks.items()
        ],
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def train_ws(ws: enb.Workspace, tmp_path: Path) -> enb.Workspace:
    src = ws.load(
        make_job(
            tmp_path / "src.json",
            "job_src",
            {
                "s1": ("Compute 2+2.", "4"),
                "s2": ("Name a prime.", "7"),
                "s3": ([{"role": "user", "content": "Fix the bug"}], None),
            },
        )
    )
    with pytest.warns(HeldOutWarning, match=r"training dataset train-set@1.*job_src \(3 tasks\)"):
        src.export_dataset(tmp_path / "ds", name="train-set", version="1", purpose="train")
    return ws


def test_guard_fires_on_overlap(train_ws: enb.Workspace, tmp_path: Path) -> None:
    with pytest.warns(HeldOutWarning, match=r"2 of 5 task inputs of job job_eval"):
        job = train_ws.load(  # the load itself warns (see test_load_warns_on_its_own)
            make_job(
                tmp_path / "eval.json",
                "job_eval",
                {
                    "e1": ("  Compute 2+2.\n\t", None),  # surrounding whitespace: a match
                    "e2": ("compute 2+2.", None),  # case differs: no match
                    "e3": ("Name  a prime.", None),  # inner whitespace differs: no match
                    "e4": ([{"role": "user", "content": "Fix the bug"}], None),  # same chat
                    "e5": ("Something new", None),
                },
            )
        )
    with pytest.warns(HeldOutWarning, match=r"2 of 5 task inputs of job job_eval"):
        result = job.heldout_check()
    assert not result.ok
    assert result.tasks == ["e1", "e4"]
    assert result.overlaps == (("e1", "train-set@1"), ("e4", "train-set@1"))
    assert result.per_dataset == {"train-set@1": 2}
    assert result.n_overlapping == 2 and result.tasks_checked == 5
    assert result.frame()["task"].tolist() == ["e1", "e4"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = train_ws.check_heldout(job, warn=False)
    assert quiet.tasks == ["e1", "e4"]


def test_no_train_dataset_no_warning(ws: enb.Workspace, tmp_path: Path) -> None:
    job = ws.load(make_job(tmp_path / "j.json", "j", {"a": ("x", None)}))
    result = job.heldout_check()  # filterwarnings=error: a warning would fail this
    assert result.ok and "no training dataset" in str(result)
    # a dataset not marked for training does not count
    job.export_dataset(tmp_path / "ds", name="plain", version="1")
    job.export_dataset(tmp_path / "ds", name="ev", version="1", purpose="eval")
    assert job.heldout_check().ok


def test_eval_dataset_overlapping_train_warns(train_ws: enb.Workspace, tmp_path: Path) -> None:
    with pytest.warns(HeldOutWarning, match=r"1 of 2 task inputs of job job_j"):
        job = train_ws.load(
            make_job(
                tmp_path / "j.json", "job_j", {"a": ("Name a prime. ", None), "b": ("new", None)}
            )
        )
    with pytest.warns(HeldOutWarning, match=r"evaluation dataset ev@1.*train-set@1 \(1 inputs\)"):
        job.export_dataset(tmp_path / "ds", name="ev", version="1", purpose="eval")


def test_guard_on_sample_data(ws: enb.Workspace, tmp_path: Path) -> None:
    base = ws.load(SAMPLE_DATA / "base.json")
    rules = enb.BucketRules([enb.Bucket("hard", 0, 0.25)])
    with pytest.warns(HeldOutWarning):
        ds = base.export_dataset(
            tmp_path, name="hard", version="1", rules=rules, buckets=["hard"], purpose="train"
        )
    with pytest.warns(HeldOutWarning, match="HELD-OUT VIOLATION.*job job_sft500"):
        sft = ws.load(SAMPLE_DATA / "sft-step500.json")  # same dataset revision
    with pytest.warns(HeldOutWarning, match="HELD-OUT VIOLATION"):
        result = sft.heldout_check()
    hard_inputs = {
        s.strip()
        for s in ws.sql("SELECT input FROM dataset_rows WHERE dataset_name = 'hard'").df()["input"]
    }
    a = sft.attempts().dropna(subset=["input"])
    expected = list(dict.fromkeys(a.loc[a["input"].str.strip().isin(hard_inputs), "task"]))
    assert result.tasks == expected
    assert result.per_dataset == {ds.ref: len(expected)}


# -- the guard fires on its own: on load and on registration ---------------------------------
def test_load_warns_on_its_own(train_ws: enb.Workspace, tmp_path: Path) -> None:
    path = make_job(
        tmp_path / "eval.json",
        "job_eval",
        {"e1": ("Compute 2+2.", None), "e2": ("Name a prime.", None), "e3": ("new", None)},
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        job = train_ws.load(path)
    assert [w.category for w in caught] == [HeldOutWarning]  # once, from the guard
    message = str(caught[0].message)
    assert message.startswith("HELD-OUT VIOLATION: 2 of 3 task inputs of job job_eval")
    assert "train-set@1 (2 tasks)" in message and "Tasks: e1, e2" in message
    assert caught[0].filename == __file__  # points at the user's ws.load line
    assert job.heldout_check(warn=False).tasks == ["e1", "e2"]  # the load still happened
    # reloading warns again; a job whose inputs are new does not warn
    with pytest.warns(HeldOutWarning, match="job job_eval"):
        train_ws.load(path)
    train_ws.load(make_job(tmp_path / "new.json", "job_new", {"n": ("fresh", None)}))


def test_load_without_train_dataset_is_quiet(ws: enb.Workspace, tmp_path: Path) -> None:
    src = ws.load(make_job(tmp_path / "src.json", "job_src", {"s": ("same", None)}))
    src.export_dataset(tmp_path / "ds", name="ev", version="1", purpose="eval")
    src.export_dataset(tmp_path / "ds", name="plain", version="1")
    ws.load(make_job(tmp_path / "j.json", "job_j", {"t": ("same", None)}))  # no warning


def test_registering_a_train_dataset_warns(ws: enb.Workspace, tmp_path: Path) -> None:
    """Loading a train dataset folder over overlapping jobs warns (export already did)."""
    other = enb.open()
    src = other.load(make_job(tmp_path / "src.json", "job_src", {"s1": ("Q1", None)}))
    with pytest.warns(HeldOutWarning, match=r"train-set@2.*job_src \(1 tasks\)"):
        ds = src.export_dataset(tmp_path / "ds", name="train-set", version="2", purpose="train")
    ws.load(make_job(tmp_path / "a.json", "job_a", {"a1": ("Q1", None), "a2": ("Q2", None)}))
    ws.load(make_job(tmp_path / "b.json", "job_b", {"b1": ("other", None)}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = ws.load(ds.path)
    assert back.ref == "train-set@2" and [w.category for w in caught] == [HeldOutWarning]
    message = str(caught[0].message)
    assert message.startswith("HELD-OUT: training dataset train-set@2 contains task inputs")
    assert "job_a (1 tasks)" in message and "job_b" not in message
    assert caught[0].filename == __file__
    with pytest.warns(HeldOutWarning, match=r"train-set@2.*job_a \(1 tasks\)"):
        ws.load_dataset(ds.path)  # the same through load_dataset
    # an eval dataset loaded over a train dataset it shares inputs with warns too
    with pytest.warns(HeldOutWarning, match=r"evaluation dataset ev@1"):
        ev = src.export_dataset(tmp_path / "ds", name="ev", version="1", purpose="eval")
    with pytest.warns(HeldOutWarning, match=r"evaluation dataset ev@1.*train-set@2"):
        ws.load(ev.path)
    # a fresh workspace without jobs: nothing to overlap
    enb.open().load(ds.path)


def test_fill_references(ws: enb.Workspace, tmp_path: Path) -> None:
    src = ws.load(
        make_job(
            tmp_path / "src.json",
            "job_src",
            {
                "d1": ("Same question", ""),  # blank: not valid
                "d2": (" Same question ", "first valid"),
                "d3": ("Same question", "later"),
                "d4": ("Other question", "  "),  # blank only
                "d5": ("Third", "third ref"),
            },
        )
    )
    ds = src.export_dataset(tmp_path / "ds", name="refs", version="1")
    job = ws.load(
        make_job(
            tmp_path / "j.json",
            "job_j",
            {
                "a": ("Same question\n", None),
                "b": ("Other question", None),
                "c": ("Third", "kept"),  # has a reference: untouched
                "d": ("Third", ""),  # blank: filled
                "e": ("unknown", None),
            },
        )
    )
    fill = job.fill_references(ds)
    assert (fill.missing_before, fill.filled, fill.tasks_filled, fill.missing_after) == (4, 2, 2, 2)
    assert "filled 2 of 4" in str(fill)
    refs = dict(zip(job.attempts()["task"], job.attempts()["reference"], strict=True))
    assert refs["a"] == "first valid"
    assert refs["c"] == "kept"
    assert refs["d"] == "third ref"
    assert refs["b"] is None or refs["b"] != refs["b"]  # still missing (NaN/None)
    # by name@version too; a second run has nothing left to match
    again = job.fill_references("refs@1")
    assert again.filled == 0 and again.missing_before == 2
    with pytest.raises(enb.EnvloopError, match="no dataset nope@1"):
        job.fill_references("nope@1")
