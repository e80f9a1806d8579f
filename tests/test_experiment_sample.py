"""The sample experiment export is what its generator writes, and says what its README says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import envloop_nb as enb

FOLDER = Path(__file__).resolve().parent.parent / "sample_data" / "experiments"


def test_the_committed_file_is_what_the_generator_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("exp_generate", FOLDER / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    written = gen.write(tmp_path)
    assert written.read_bytes() == (FOLDER / "ops-helper.json").read_bytes()


def test_the_sample_holds_what_its_readme_says() -> None:
    exp = enb.open().load(FOLDER / "ops-helper.json")
    assert str(exp.summary()) == "composite 80.8 · 20/24 rows counted · 1 failed · 1 pending"
    res = exp.results().set_index(["trace_id", "evaluator"])
    assert res.loc[("tr_005", "answer_accuracy"), "run"] == 2
    assert res.loc[("tr_009", "answer_accuracy"), "status"] == "failed"
    assert exp.corrections()["state"].tolist() == ["live", "undone"]
    assert (
        (exp.evaluators().set_index("evaluator").loc["answer_accuracy", "succeeded_without_score"])
        == 2
    )
