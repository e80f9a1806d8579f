"""Tasks over training: the matrix, learned, forgotten and flaky tasks, pinned against the
sample run's construction (``envloop_nb._runs.tasks``)."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb._runs.tasks import scan

from .conftest import SAMPLE_DATA

RUN_DIR = SAMPLE_DATA / "training_run"
DATA = Path(__file__).resolve().parent / "data" / "lm_eval"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("training_run_generate", RUN_DIR / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run() -> enb.Run:
    ws = enb.open()
    ws.load_all(RUN_DIR)
    return ws.run("rl-0412")


def test_learned_forgotten_and_flaky_are_the_construction(run: enb.Run) -> None:
    expected = _generator().expected()
    learned = run.learned()
    assert dict(zip(learned["task"], learned["learned_at"], strict=True)) == expected["learned"]
    forgotten = run.forgotten()
    assert (
        dict(zip(forgotten["task"], forgotten["forgotten_at"], strict=True))
        == expected["forgotten"]
    )
    assert run.flaky()["task"].tolist() == expected["flaky"]
    assert learned["learned_at"].tolist() == sorted(learned["learned_at"])


def test_the_solved_matrix_is_the_plan_where_the_task_is_complete(run: enb.Run) -> None:
    gen = _generator()
    solved = run.task_matrix(value="solved")
    assert list(solved.columns) == run.steps
    for task, states in gen.PLAN.items():
        row = solved.loc[task].tolist()
        for step, (state, cell) in enumerate(zip(states, row, strict=True), start=1):
            incomplete = step == gen.COVERAGE_ROUND and (
                task in gen.INVALID_IN_8 or task in gen.UNDISPATCHED_IN_8
            )
            assert np.isnan(cell) if incomplete else cell == state, (task, step)


def test_the_matrix_is_ordered_so_the_structure_shows(run: enb.Run) -> None:
    states = run.task_states()
    categories = list(dict.fromkeys(states["category"]))
    assert categories == ["solved from the start", "learned", "forgotten", "flaky",
                          "never solved stably"]  # fmt: skip
    matrix = run.task_matrix()
    assert list(matrix.index) == states["task"].tolist()
    learned = states[states["category"] == "learned"]
    assert learned["learned_at"].tolist() == sorted(learned["learned_at"])
    # the pass rate is the job's per-task pass rate
    samples = run.job(3).samples().set_index("task")
    for task in ("code-12", "math-01", "tool-use-12"):
        assert matrix.loc[task, 3] == samples.loc[task, "passes"] / samples.loc[task, "scored"]
    # a task relearned after it was forgotten is in both lists
    row = states.set_index("task").loc["tool-use-16"]
    assert (row["first_stable"], row["learned_at"], row["forgotten_at"]) == (5, 5, 4)
    assert states.set_index("task").loc["math-13", "first_stable"] == 1


def test_blocks_aggregate_the_matrix_before_a_browser(run: enb.Run) -> None:
    matrix = run.task_matrix()
    blocks = run.matrix_blocks(max_tasks=5, max_steps=3)
    assert len(blocks) == 15 and blocks["tasks"].sum() == 48 * 3 and blocks["steps"].sum() == 10 * 5
    first = blocks.iloc[0]
    cells = matrix.iloc[: first["tasks"], : first["steps"]].to_numpy(float)
    assert first["mean"] == pytest.approx(np.nanmean(cells))
    assert first["known"] == pytest.approx(np.isfinite(cells).mean())
    whole = run.matrix_blocks(max_tasks=1000, max_steps=1000)
    assert len(whole) == 48 * 10
    assert whole["mean"].to_numpy(float) == pytest.approx(
        matrix.to_numpy(float).ravel(), nan_ok=True
    )


def _reference(row: list[float], stable: int) -> tuple[int, int, int, int]:
    """first stable, learned, first forgotten, flips of one task by a plain loop."""
    known = [(j, v) for j, v in enumerate(row) if not np.isnan(v)]
    first = learned = forgot = -1
    for i, (j, v) in enumerate(known):
        tail = [u for _, u in known[i:]]
        if v == 1 and all(u == 1 for u in tail) and len(tail) >= stable:
            first = j
            if any(u == 0 for _, u in known[:i]):
                learned = j
            break
    run = 0
    for j, v in known:
        if v == 0 and run >= stable and forgot < 0:
            forgot = j
        run = run + 1 if v == 1 else 0
    flips = sum(1 for a, b in itertools.pairwise(known) if a[1] != b[1])
    return first, learned, forgot, flips


@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, np.nan]), min_size=6, max_size=6),
                min_size=1, max_size=12), st.integers(1, 3))  # fmt: skip
def test_the_scan_equals_a_plain_loop(rows: list[list[float]], stable: int) -> None:
    found = scan(np.array(rows), stable, 3)
    for i, row in enumerate(rows):
        first, learned, forgot, flips = _reference(row, stable)
        assert (found["first"][i], found["learned"][i], found["forgotten"][i], found["flips"][i]) == (
            first, learned, forgot, flips
        )  # fmt: skip


def test_a_cell_opens_its_attempts(run: enb.Run) -> None:
    rows = run.attempts("math-01", 6)
    assert rows["job_id"].unique().tolist() == ["job_rl0412_r06"]
    assert rows["attempt"].tolist() == [1, 2, 3, 4]
    assert rows["reward"].mean() == run.task_matrix().loc["math-01", 6]
    with pytest.raises(enb.EnvloopError, match="task 'nope' is in no job of this run"):
        run.attempts("nope", 6)


def test_a_run_without_per_task_results_says_not_assessed_not_none(run: enb.Run) -> None:
    """Pythia checkpoints (lm-eval results without samples) listed 'learned: none' in the
    run's report and panel: as if the model had learned nothing, where nothing was known."""
    from envloop_nb._present.run_html import task_list_html

    ws = enb.open()
    pythia = ws.run([ws.load(p) for p in sorted((DATA / "pythia_run").glob("160m_step1*.json"))])
    for kind, frame in (("learned", pythia.learned()), ("forgotten", pythia.forgotten()),
                        ("flaky", pythia.flaky())):  # fmt: skip
        assert frame.empty and frame.attrs["not_assessed"].startswith("not assessed: no step")
        shown = task_list_html(frame, kind)
        assert "not assessed" in shown and "none" not in shown
    # a run with per-task results: an empty list is a real "none"
    assert "not_assessed" not in run.learned().attrs and "not_assessed" not in run.flaky().attrs
