"""The run's pure renderers (envloop_nb._present.run_charts / run_html) and its report,
workbook and MLflow run (envloop_nb._export.run_export / run_mlflow), on the labelled
sample run (sample_data/training_run: one real jump at step 6, a coverage drop at step 8,
tool-use-12..15 forgotten by construction)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

import envloop_nb as enb
from envloop_nb._present.run_charts import matrix_chart, run_curve_chart, significant_changes
from envloop_nb._present.run_html import task_list_html
from envloop_nb._present.run_html import tests_table_html as render_tests

from .conftest import SAMPLE_DATA

RUN = SAMPLE_DATA / "training_run"


@pytest.fixture(scope="module")
def run() -> enb.Run:
    ws = enb.open()
    ws.load_all(RUN)
    return ws.run("rl-0412")


def _layers(spec: dict) -> list[dict]:
    return spec["layer"]


def _data(spec: dict, layer: dict) -> list[dict]:
    return spec["datasets"][layer["data"]["name"]]


def _matrix_rows(spec: dict) -> list[dict]:
    """The matrix chart's rows as the chart makes them: its one row of columns flattened,
    the labels looked up, the state calculated (the spec's transforms, in Python)."""
    (columns,) = spec["datasets"][spec["data"]["name"]]
    flatten, *lookups, _state = spec["transform"]
    rows = [dict(zip(flatten["flatten"], r, strict=True))
            for r in zip(*(columns[c] for c in flatten["flatten"]), strict=True)]  # fmt: skip
    for lookup in lookups:
        key, (field,) = lookup["lookup"], lookup["from"]["fields"]
        labels = {r[key]: r[field] for r in lookup["from"]["data"]["values"]}
        for r in rows:
            r[field] = labels[r[key]]
    for r in rows:
        r["state"] = "missing" if r["mean"] is None else "known"
    return rows


def test_the_curve_marks_the_one_real_jump_and_never_draws_the_coverage_drop_as_a_score(
    run: enb.Run,
) -> None:
    spec = run_curve_chart(run.curve(), band=run.noise_band(), tests=run.tests()).to_dict()
    marks = [layer["mark"]["type"] for layer in _layers(spec)]
    # noise band, interval band, line, points, the coverage-drop diamond, significance marks
    assert marks == ["rule", "area", "line", "point", "point", "point"]
    line = _layers(spec)[2]
    assert line["transform"] == [{"filter": "!datum.drop"}]  # the line skips step 8
    drop = _layers(spec)[4]
    assert drop["mark"]["shape"] == "diamond" and drop["transform"] == [{"filter": "datum.drop"}]
    points = [r for r in spec["datasets"][spec["layer"][3]["data"]["name"]] if r["drop"]]
    assert [r["step"] for r in points] == [8]
    sig = _data(spec, _layers(spec)[5])
    assert [(r["step_a"], r["step_b"], r["direction"]) for r in sig] == [(5, 6, "up")]
    assert sig[0]["at"] == pytest.approx(float(run.curve()["high"].iloc[5]))
    band = _data(spec, _layers(spec)[0])
    assert [r["step"] for r in band] == list(range(2, 11))  # no band before a previous step


def test_significant_changes_are_the_adjusted_adjacent_ones(run: enb.Run) -> None:
    tests = run.tests()
    sig = significant_changes(tests)
    want = tests[tests["kind"].str.contains("adjacent") & (tests["p_adjusted"] < 0.05)]
    assert sig["step_b"].tolist() == want["step_b"].tolist() == [6]
    # the baseline rows are significant too but are not step-to-step jumps
    assert (tests[tests["kind"] == "baseline"]["p_adjusted"] < 0.05).sum() == 5


def test_the_matrix_is_blocks_never_a_cell_per_attempt(run: enb.Run) -> None:
    blocks = run.matrix_blocks(max_tasks=12, max_steps=5)
    spec = matrix_chart(blocks).to_dict()
    assert len(_matrix_rows(spec)) == 12 * 5
    labels = {r["task_label"] for r in _matrix_rows(spec)}
    assert all("…" in label for label in labels)  # blocks of 4 tasks, named by first and last
    full = matrix_chart(run.matrix_blocks()).to_dict()
    rows = _matrix_rows(full)
    assert len(rows) == 48 * 10
    missing = [r for r in rows if r["state"] == "missing"]
    assert missing and all(r["step_label"] == "8" for r in missing)  # never drawn as a 0


def test_task_lists_and_tests_html(run: enb.Run) -> None:
    out = task_list_html(run.forgotten(), "forgotten")
    for task in ("tool-use-12", "tool-use-13", "tool-use-14", "tool-use-15", "tool-use-16"):
        assert f">{task}<" in out
    assert task_list_html(run.flaky().iloc[:0], "flaky").endswith("<i>none</i></div>")
    html = render_tests(run.tests(), only_significant=True)
    assert html.count("<tr>") == 1 + 6  # the header, step 5 → 6 and the five against step 1
    assert "5 → 6" in html and "beyond noise" in html and "p (holm)" in html


def test_the_report_is_one_offline_file_with_the_run(run: enb.Run, tmp_path: Path) -> None:
    out = run.export_html(tmp_path / "run.html")
    assert out.sections == ("Run", "Curve over training", "Changes beyond noise",
                            "Tasks over training", "All tests", "Curve")  # fmt: skip
    assert out.charts == 2
    text = out.path.read_text(encoding="utf-8")
    assert "default-src 'none'" in text
    assert not re.search(r"""(src|href)=["']https?://""", text)
    best = run.best()
    assert f"step <b>{best.step}</b>" in text and str(run.mde()) in text
    specs = json.loads(re.search(r"const specs = (.*);\n", text).group(1).replace("<\\/", "</"))  # type: ignore[union-attr]
    assert len(specs) == 2


def test_the_workbook_reads_back(run: enb.Run, tmp_path: Path) -> None:
    import openpyxl

    path = run.export_xlsx(tmp_path / "run.xlsx")
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb.sheetnames == ["Run", "Curve", "Noise band", "Tests", "Task states", "Task matrix"]
    curve = list(wb["Curve"].iter_rows(values_only=True))
    head = list(curve[0])
    est = [r[head.index("Estimate")] for r in curve[1:]]
    assert est == pytest.approx(run.curve()["estimate"].tolist())
    matrix = list(wb["Task matrix"].iter_rows(values_only=True))
    assert matrix[0][:3] == ("Task", "Step 1", "Step 2") and len(matrix) == 1 + 48
    # people's headers, each once (tasks and total_members both read "Tasks"), issue 37
    for name in wb.sheetnames[1:]:
        heads = [h for h in next(wb[name].iter_rows(values_only=True)) if h is not None]
        assert len(set(heads)) == len(heads), name
        assert not [h for h in heads if "_" in h or (h[:1].islower() and not h.startswith("p"))]
    assert {"Job", "Complete tasks", "Attempts", "Coverage"} <= set(head)
    want = run.task_matrix()
    row = next(r for r in matrix if r[0] == "math-13")
    assert row[8] is None and pd.isna(want.loc["math-13", 8])  # missing stays empty, never 0
    facts = {r[0]: (r[1] if len(r) > 1 else None) for r in wb["Run"].iter_rows(values_only=True)}
    assert facts["best"] == str(run.best())


@pytest.mark.slow
def test_one_mlflow_run_with_a_step_axis(run: enb.Run, tmp_path: Path) -> None:
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    run_id = run.log_mlflow(experiment="rl", tracking_uri=uri)
    client = MlflowClient(tracking_uri=uri)
    got = client.get_run(run_id)
    assert got.info.status == "FINISHED" and got.data.tags["envloop_nb.kind"] == "run"
    assert len(client.search_runs([got.info.experiment_id])) == 1
    history = sorted((m.step, m.value) for m in client.get_metric_history(run_id, "eval/score"))
    curve = run.curve()
    assert history == list(zip(curve["step"].tolist(), curve["estimate"].tolist(), strict=True))
    drops = {m.step: m.value for m in client.get_metric_history(run_id, "eval/coverage_drop")}
    assert drops[8] == 1.0 and sum(drops.values()) == 1.0
    passes = sorted((m.step, m.value) for m in client.get_metric_history(run_id, "eval/pass"))
    assert [v for _, v in passes] == run.curve(metric="pass")["estimate"].tolist()
    assert got.data.params["best"] == str(run.best())
    assert sorted(a.path for a in client.list_artifacts(run_id)) == [
        "curve.parquet", "run.xlsx", "tests.parquet"]  # fmt: skip


def test_a_matrix_of_12000_blocks_is_one_chart_in_a_report(run: enb.Run) -> None:
    """A large run's matrix (120 x 100 blocks) is above altair's 5,000-row limit for
    frames: the report's chart must still be made (it raised MaxRowsError)."""
    import altair as alt

    rows = [{"task_block": a, "step_block": b, "first_task": f"t{a}", "last_task": f"t{a}x",
             "tasks": 40, "first_step": b * 10, "last_step": b * 10 + 9, "steps": 10,
             "mean": None if (a + b) % 7 == 0 else 0.5, "known": 1.0}
            for a in range(120) for b in range(100)]  # fmt: skip
    with alt.data_transformers.enable("default", max_rows=5000):
        spec = matrix_chart(pd.DataFrame(rows)).to_dict()
    values = _matrix_rows(spec)
    assert len(values) == 12_000
    assert values[0]["mean"] is None and values[1]["mean"] == 0.5  # missing stays null
    assert json.dumps(spec)  # plain JSON: no NaN, no numpy scalars


def _blocks_12000() -> pd.DataFrame:
    rows = [{"task_block": a, "step_block": b, "first_task": f"task-{a * 40:05d}",
             "last_task": f"task-{a * 40 + 39:05d}", "tasks": 40, "first_step": b * 2000,
             "last_step": b * 2000 + 1000, "steps": 2,
             "mean": None if (a + b) % 7 == 0 else (a * 37 + b * 11) % 101 / 101, "known": 0.75}
            for a in range(120) for b in range(100)]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_matrix_of_12000_blocks_is_sent_compact() -> None:
    """Issue 36: the run panel's matrix (120 x 100 blocks) reaches the browser as columns,
    not as 12,000 records with their labels (3.1 MB of JSON before)."""
    spec = matrix_chart(_blocks_12000()).to_dict()
    assert len(json.dumps(spec)) < 400_000


def _records_chart(blocks: pd.DataFrame) -> dict:
    """The matrix chart as it was before its data went compact (one record per block):
    the reference the compact chart must draw exactly."""
    spec = matrix_chart(blocks).to_dict()
    rows = _matrix_rows(spec)
    name = spec["data"]["name"]
    spec["datasets"][name] = rows
    del spec["transform"]
    return spec


@pytest.mark.parametrize("size", ["small", "all", "12000"])
def test_the_compact_matrix_draws_exactly_what_the_records_drew(run: enb.Run, size: str) -> None:
    """Same picture, same tooltips (the SVG's aria labels carry them) as one record per
    block: rendered offline and compared byte for byte."""
    import vl_convert as vlc

    blocks = {"small": lambda: run.matrix_blocks(max_tasks=12, max_steps=5),
              "all": run.matrix_blocks, "12000": _blocks_12000}[size]()  # fmt: skip

    def svg(spec: dict) -> str:  # the renderer numbers its gradients across calls
        return re.sub(r"gradient_\d+", "gradient", vlc.vegalite_to_svg(spec))

    compact = svg(matrix_chart(blocks).to_dict())
    assert "pass rate: " in compact
    assert compact == svg(_records_chart(blocks))
