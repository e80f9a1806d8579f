"""``python -m envloop_nb report --run PATH… -o OUT``: a training run's report from the
command line (a labelled EnvLoop run's folder; Pythia-style results-only files)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from envloop_nb._cli import main, report_kind

from .conftest import ROOT, SAMPLE_DATA


def test_a_folder_of_a_labelled_run_makes_a_run_report(tmp_path: Path) -> None:
    out = io.StringIO()
    code = main(["report", "--run", str(SAMPLE_DATA / "training_run"), "-o", str(tmp_path / "r.html")], out=out)  # fmt: skip
    assert code == 0 and out.getvalue().startswith("wrote")
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Training run rl-0412" in text and "Curve over training" in text
    assert "step <b>6</b>" in text


def test_results_only_checkpoints_make_a_run_report_per_subset(tmp_path: Path) -> None:
    code = main(["report", "--run", str(ROOT / "tests/data/lm_eval/pythia_run"), "-o", str(tmp_path / "p.html")], out=io.StringIO())  # fmt: skip
    assert code == 0
    text = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert "one line per subset" in text
    # no whole-run number: the headline, the band and the tests per lm-eval task, unpaired
    # from the files' stderr (lambada's ppl: the lowest is best)
    assert "best checkpoint (α 0.05, Holm within the group)" in text
    assert "lambada_openai <small>(ppl)</small>" in text and "(lower is better)" in text
    assert "stderr, unpaired" in text and "one row per pair of steps and group" in text


def test_one_job_is_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = SAMPLE_DATA / "training_run" / "round-01.json"
    code = main(["report", "--run", str(one), "-o", str(tmp_path / "x.html")], out=io.StringIO())
    assert code == 2 and "envloop-nb report:" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()
    assert report_kind(7, run=True) == "run"
