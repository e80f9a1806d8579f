"""Any long results table as an experiment (frames and files, ``mapping=``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import envloop_nb as enb

FRAME = pd.DataFrame(
    {
        "trace": ["a", "a", "b", "b", "c"],
        "judge": ["q", "r", "q", "r", "q"],
        "value": [80, None, None, 50, 30],
        "error": [None, None, "judge timeout", None, None],
        "prompt": ["x", "x", "y", "y", "z"],
    }
)
MAPPING = {"trace_id": "trace", "evaluator": "judge", "score": "value", "input": "prompt"}


def test_a_frame_maps_to_an_experiment() -> None:
    exp = enb.open().load_experiment(FRAME, experiment_id="t", agent="bot", mapping=MAPPING)
    assert str(exp.summary()) == "composite 53.3 · 3/6 rows counted · 1 failed · 1 missing"
    res = exp.results().set_index(["trace_id", "evaluator"])
    assert res.loc[("b", "q"), ["status", "error"]].tolist() == ["failed", "judge timeout"]
    assert res.loc[("a", "r"), ["status", "counted"]].tolist() == ["succeeded", False]
    assert res.loc[("c", "r"), "status"] == "missing"  # never judged: not a 0
    assert exp.cases().set_index("trace_id").loc["c", "input"] == "z"
    assert exp.info["agent"] == "bot"


@pytest.mark.parametrize("kind", ["csv", "parquet", "polars"])
def test_files_and_polars(tmp_path: Path, kind: str) -> None:
    ws = enb.open()
    if kind == "polars":
        exp = ws.load_experiment(pl.from_pandas(FRAME), experiment_id="p", mapping=MAPPING)
    else:
        path = tmp_path / f"results.{kind}"
        FRAME.to_csv(path, index=False) if kind == "csv" else FRAME.to_parquet(path)
        exp = ws.load_experiment(path, mapping=MAPPING)
        assert exp.id == "table:results"
    assert exp.summary().counted == 3


def test_bad_tables_name_the_place() -> None:
    ws = enb.open()
    with pytest.raises(enb.LoadError, match=r"row 1: score and run must be numbers"):
        ws.load_experiment(
            FRAME.assign(value=["1", "x", None, None, None]), experiment_id="t", mapping=MAPPING
        )
    with pytest.raises(enb.LoadError, match=r"column 'trace_id' missing"):
        ws.load_experiment(FRAME, experiment_id="t")
    with pytest.raises(
        enb.LoadError,
        match=r"<DataFrame>, row 0.score: score 150 is outside evaluator 'q''s scale 0-100",
    ):
        ws.load_experiment(
            FRAME.assign(value=[150, None, None, 50, 30]), experiment_id="t", mapping=MAPPING
        )
    with pytest.raises(ValueError, match="needs experiment_id"):
        ws.load_experiment(FRAME, mapping=MAPPING)
    assert len(ws.experiments()) == 0
