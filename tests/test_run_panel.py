"""run.panel(): the widgets wired to the run's numbers (no browser; tests/test_browser_run.py
looks at it in JupyterLab)."""

from __future__ import annotations

import pytest

import envloop_nb as enb
from envloop_nb._ui.compare_panel import ComparisonPanel
from envloop_nb._ui.run_panel import RunPanel

from .conftest import SAMPLE_DATA


@pytest.fixture(scope="module")
def run() -> enb.Run:
    ws = enb.open()
    ws.load_all(SAMPLE_DATA / "training_run")
    return ws.run("rl-0412")


def test_the_panel_shows_the_run(run: enb.Run) -> None:
    panel = run.panel()
    assert isinstance(panel, RunPanel)
    assert "step <b>6</b>" in panel.headline.value and str(run.mde()) in panel.headline.value
    spec = panel.curve.chart.to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]][-1] == "point"  # the jump's mark
    assert "5 → 6" in panel.changes.value
    assert ">tool-use-12<" in panel.lists.value and ">code-16<" in panel.lists.value
    assert len(panel.blocks) == 48 * 10
    panel.metric.value = "pass"
    assert panel.message.value == ""
    assert panel.curve.chart.to_dict()["title"] == "pass over training"


def test_a_task_and_a_step_show_that_attempt(run: enb.Run) -> None:
    panel = run.panel()
    panel.task.value = "math-01"
    panel.step.value = 6
    assert "job_rl0412_r06" in panel.attempts.value
    assert panel.attempt.options == (1, 2, 3, 4) and panel.attempt.value == 1
    first = panel.attempt_view.value
    assert first
    panel.attempt.value = 2
    assert panel.attempt_view.value and panel.attempt_view.value != first
    panel.task.value = "math-13"
    panel.step.value = 8  # not completely scored there: says so, never a failure
    assert panel.message.value == ""


def test_clicking_a_matrix_block_picks_its_task_and_step(run: enb.Run) -> None:
    from altair.utils.selection import PointSelection

    panel = run.panel()
    row = panel.blocks[(panel.blocks["task_block"] == 3) & (panel.blocks["step_block"] == 5)]
    picked = PointSelection(name="cell", value=[{"task_block": 3, "step_block": 5}], store=[])
    panel.matrix.selections._set_value("cell", picked)
    assert panel.message.value == ""
    assert panel.task.value == row["first_task"].iloc[0] and panel.step.value == 6
    assert "job_rl0412_r06" in panel.attempts.value


def test_two_steps_open_the_comparison_panel(run: enb.Run) -> None:
    panel = run.panel()
    panel.step_a.value, panel.step_b.value = 5, 6
    panel.compare_button.click()
    assert panel.message.value == ""
    assert isinstance(panel.comparison, ComparisonPanel)
    assert list(panel.comparison.state.job_ids) == ["job_rl0412_r05", "job_rl0412_r06"]
    assert panel.compare_box.children[-1] is panel.comparison
    panel.step_b.value = 5
    panel.compare_button.click()  # the same step twice: a readable line, no traceback
    assert "twice" in panel.message.value


def test_in_a_kernel_the_first_screen_is_the_curves_points_and_the_rest_comes_after_the_cell(
    run: enb.Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: the first screen is each step's own number with its coverage drops, read
    without the run's task matrix or its bootstrap; the intervals, the noise band, the
    matrix, the headline, the tests' marks and the task lists come right after the cell,
    each said to be coming until then, and end as the panel built in one go."""
    from envloop_nb._ui import run_panel

    later: list[object] = []
    monkeypatch.setattr(run_panel, "after_cell", lambda action: later.append(action) or True)
    eager = RunPanel(run.state, compare=lambda a, b: None)
    fresh = run.workspace.run("rl-0412")  # nothing memoized
    panel = fresh.panel()
    assert panel.pending and len(later) == 1
    assert "matrix" not in fresh.state.data and "weights" not in fresh.state.data
    first = panel.curve.chart.to_dict()
    assert [layer["mark"]["type"] for layer in first["layer"]] == ["line", "point", "point"]
    complete = eager.curve.chart.to_dict()["datasets"].values()
    (line,) = (rows for rows in complete if rows and "estimate" in rows[0])
    drawn = first["datasets"][first["data"]["name"]]  # the points the complete curve draws
    for key in ("step", "estimate", "coverage", "drop", "note"):
        assert [r[key] for r in drawn] == [r[key] for r in line], key
    for shown in (panel._note, panel.changes, panel.headline, panel.lists, panel.matrix):
        assert "computing" in shown.value
    assert panel.blocks is None and panel.matrix_row.children == (panel.matrix,)
    later[0]()  # type: ignore[operator]  # what IPython runs after the cell
    assert not panel.pending and panel.message.value == ""
    for name in ("headline", "changes", "lists", "_note"):
        assert getattr(panel, name).value == getattr(eager, name).value
    assert panel.curve.chart.to_dict() == eager.curve.chart.to_dict()
    assert panel.matrix.chart.to_dict() == eager.matrix.chart.to_dict()
    assert panel.blocks.equals(eager.blocks)


@pytest.mark.parametrize("deferred", [False, True])
def test_the_complete_panel_is_the_one_of_before(
    run: enb.Run, deferred: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The panel once complete — headline, curve with its bands and marks, its legend,
    changes, task lists, matrix — is what the panel at 723e686 showed, byte for byte
    (``tests/data/run_panel/final_state.json``, written by that commit's panel), built in
    one go or in a kernel's two parts; also after switching the metric, and for a run of
    results-only files (told per subset, no matrix)."""
    import json
    from pathlib import Path

    from envloop_nb._ui import run_panel

    later: list[object] = []
    monkeypatch.setattr(run_panel, "after_cell", lambda action: later.append(action) or True)
    before = json.loads(
        (Path(__file__).resolve().parent / "data" / "run_panel" / "final_state.json").read_text()
    )

    def state_of(panel: RunPanel) -> dict[str, object]:
        return {
            "headline": panel.headline.value, "changes": panel.changes.value,
            "lists": panel.lists.value, "note": panel._note.value,
            "curve": panel.curve.chart.to_dict(),
            "matrix": panel.matrix.value if panel.no_tasks else panel.matrix.chart.to_dict(),
        }  # fmt: skip

    def made(state: object) -> RunPanel:
        panel = RunPanel(state, compare=lambda a, b: None, defer=deferred)  # type: ignore[arg-type]
        if deferred:
            assert panel.pending
            later.pop()()  # type: ignore[operator]
        return panel

    panel = made(run.workspace.run("rl-0412").state)
    assert state_of(panel) == before["rl-0412"]
    panel.metric.value = "pass"
    assert state_of(panel) == before["rl-0412 pass"]
    pythia = Path(__file__).resolve().parent / "data" / "lm_eval" / "pythia_run"
    ws = enb.open()
    jobs = [ws.load(p) for p in sorted(pythia.glob("160m_step1*.json"))]
    assert state_of(made(ws.run(jobs).state)) == before["pythia"]


def test_in_a_kernel_the_first_screen_is_few_widget_models(
    run: enb.Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: the first screen (curve, matrix) sends few widget models; the attempt
    viewer and the comparison's controls come with the rest after the cell, or on first
    use (the same controls, wired the same way)."""
    from ipywidgets.widgets import widget as ipw

    from envloop_nb._ui import run_panel

    later: list[object] = []
    monkeypatch.setattr(run_panel, "after_cell", lambda action: later.append(action) or True)
    before = set(ipw._instances)
    panel = run.panel()
    assert len(set(ipw._instances) - before) <= 40  # 35 (the chart library once more); was 79
    later[0]()  # type: ignore[operator]
    assert panel.task.options and panel.step_a.value == run.state.steps[0]
    assert panel.compare_box in panel.children
    panel.task.value, panel.step.value = "math-01", 6
    assert "job_rl0412_r06" in panel.attempts.value
    early = run.panel()  # a control asked for before the cell ends: made then
    assert early.pending and early.step_b.value == run.state.steps[-1]
    assert early.compare_box in early.children


def test_a_run_without_per_task_results_says_so_instead_of_an_empty_matrix() -> None:
    """Pythia checkpoints (aggregate numbers only): the panel drew an empty matrix with a
    task picker of no tasks and listed 'learned: none'; the report the same lists."""
    from pathlib import Path

    pythia = Path(__file__).resolve().parent / "data" / "lm_eval" / "pythia_run"
    ws = enb.open()
    run = ws.run([ws.load(p) for p in sorted(pythia.glob("160m_step1*.json"))])
    panel = run.panel()
    assert panel.no_tasks is not None and panel.no_tasks.startswith("not assessed: no step")
    assert panel.matrix_row.children == (panel.matrix,) and "not assessed" in panel.matrix.value
    assert "not assessed" in panel.lists.value and ">none<" not in panel.lists.value
    assert panel.compare_button is not None  # two steps can still be compared
