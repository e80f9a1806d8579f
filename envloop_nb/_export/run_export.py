"""A training run as a standalone HTML report and as a workbook (``run.export_html``,
``run.export_xlsx``).

The report (one self-contained file like every report: Jinja2, the vega bundle inlined, a
CSP that forbids any request; see :mod:`envloop_nb._present.report_html`): the run's
headline (best checkpoint with its interval and the steps indistinguishable from it, the
minimum detectable effect, the guard), the curve over training with its interval band, the
noise band, coverage-drop and significance marks, the changes that stay significant after
adjustment and every test, the tasks × steps matrix (in blocks: at most
:data:`MATRIX_TASKS` × :data:`MATRIX_STEPS`), the tasks learned, forgotten and flaky, and
the curve's numbers.

The workbook (on the one safe cell writer :mod:`envloop_nb._export.cells`): ``Run`` (the
facts and the headline), ``Curve``, ``Noise band``, ``Tests``, ``Task states`` and
``Task matrix`` (tasks × steps, pass rate; a missing cell stays empty, never 0). Every
sheet of a run with blocking differences carries the guard's mark as its red first row.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import EnvloopError
from .._files import output_file
from .._present import run_html
from .._present.compare_html import guard_html
from .._present.report_html import ReportSection, frame_table_html, report_html
from .._present.run_charts import matrix_chart, run_curve_chart
from .._present.run_html import group_headline_html, headline_html, step_text, task_lists_html
from .._runs import by_group as _by_group
from .._runs import curve as _curve
from .._runs import tasks as _tasks
from .._runs import tests as _tests
from .._runs.assemble import RunState, mark
from .._store.schema import written_by
from .cells import new_workbook, save_workbook, write_frame
from .html_report import HtmlReport, write_report

if TYPE_CHECKING:
    import os

    import pandas as pd

__all__ = ["MATRIX_STEPS", "MATRIX_TASKS", "PER_SUBSET", "export_run_html", "export_run_xlsx",
           "mde_text", "run_headline", "shown_by", "shown_curve"]  # fmt: skip

#: The report's matrix: at most this many blocks of tasks × of steps.
MATRIX_TASKS, MATRIX_STEPS = 120, 100
_CURVE_COLUMNS = ["step", "group", "job_id", "estimate", "low", "high", "interval", "scored", "total",
                  "coverage", "coverage_drop", "note"]  # fmt: skip


def _curve_shown(metric: str) -> dict[str, str]:
    """The curve's columns under names the report's one number format reads as what they
    are: the metric and its bounds are values (a rate as a percentage), not differences in
    points, and coverage is a rate."""
    return {"estimate": metric, "low": f"{metric}_lower_bound",
            "high": f"{metric}_upper_bound", "coverage": "coverage_rate"}  # fmt: skip


def _best(state: RunState, metric: str) -> tuple[_tests.BestCheckpoint | None, str]:
    """The best checkpoint, or None with the reason there is none."""
    try:
        return _tests.best(state, metric=metric), ""
    except (EnvloopError, ValueError) as e:
        return None, str(e)


def shown_by(state: RunState, *, metric: str = "score") -> str | None:
    """``"subset"`` when the views tell the run per subset — no step has an overall number
    (results-only files: one number per lm-eval task) but the subsets have —, else None."""
    if _curve.curve(state, metric=metric)["estimate"].notna().any():
        return None
    by = _curve.curve(state, metric=metric, by="subset")
    return "subset" if len(by) and by["estimate"].notna().any() else None


#: Why a run is told per subset (under its curve, in its headline).
PER_SUBSET = (
    "no overall number at any step (aggregates only, one number per task: a whole-run number "
    "would need the tasks' weights, which the files do not give): one line per subset"
)


def shown_curve(state: RunState, *, metric: str = "score") -> tuple[pd.DataFrame, str]:
    """The curve a view draws and what it is: the run's own (``run.curve()``), or, when no
    step has an overall number (results-only files: one number per lm-eval task), the
    curve per subset."""
    by = shown_by(state, metric=metric)
    if by is not None:
        return _curve.curve(state, metric=metric, by=by), PER_SUBSET
    frame = _curve.curve(state, metric=metric)
    if frame["estimate"].notna().any():
        return frame, ""
    return frame, "no step has a number for this metric"


def mde_text(state: RunState) -> tuple[str, int | None]:
    """The minimum-detectable-effect sentence and the run's number of tasks (None when
    unknown); the reason instead when the run cannot say (aggregates without a stderr)."""
    try:
        effect = _tests.mde(state)
    except (EnvloopError, ValueError) as e:
        return f"smallest detectable change: cannot say ({e})", None
    return str(effect), int(effect.n_tasks) or None


def run_headline(state: RunState, *, metric: str = "score") -> str:
    """The headline HTML of a run (best checkpoint, MDE, guard mark); per subset when the
    run is told per subset (:func:`shown_by`)."""
    if metric == "score" and shown_by(state, metric=metric) is not None:
        return group_headline_html(
            best=_by_group.best_by(state, by="subset"), mde=_by_group.mde_by(state, by="subset"),
            mark=mark(state), steps=len(state.steps),
            why="no number for the whole run (the sources state one per task): per task, "
            "from the files' stderr",
        )  # fmt: skip
    text, n_tasks = mde_text(state)
    best, why = _best(state, metric)
    return headline_html(
        best=best, mde=text, mark=mark(state), steps=len(state.steps), tasks=n_tasks,
        no_best=why,
    )  # fmt: skip


def export_run_html(
    state: RunState, path: str | os.PathLike[str], *, metric: str = "score"
) -> HtmlReport:
    """Write the run's standalone HTML report (see the module docstring)."""
    note = mark(state)
    curve, curve_what = shown_curve(state, metric=metric)
    by = shown_by(state, metric=metric)
    band = _curve.noise_band(state, metric=metric, by=by)
    tests = _tests.tests(state, by=by)
    blocks = _tasks.aggregate(state, max_tasks=MATRIX_TASKS, max_steps=MATRIX_STEPS)
    curve_chart = run_curve_chart(curve, band=band, tests=tests, title=f"{metric} over training")
    drops = [step_text(s) for s, d in zip(curve["step"], curve["coverage_drop"], strict=True) if d]
    curve_note = (f"{curve_what}; " if curve_what else "") + run_html.CURVE_LEGEND
    if drops:
        curve_note += f" — coverage dropped at step {', '.join(drops)}"
    no_tasks = _tasks.no_tasks(state)
    lists = "".join(
        task_lists_html(_tasks.learned(state), _tasks.forgotten(state), _tasks.flaky(state))
    )
    sections = [
        ReportSection(
            "Run",
            run_headline(state, metric=metric)
            + guard_html(list(state.differences), len(state.job_ids)),
        ),
        ReportSection("Curve over training", charts=(curve_chart.to_dict(),), note=curve_note),
        ReportSection(
            "Changes beyond noise",
            run_html.tests_table_html(tests, only_significant=True),
            note=note,
        ),
        ReportSection(
            "Tasks over training",
            f'<div style="display:flex;flex-wrap:wrap;gap:18px">{lists}</div>',
            charts=(matrix_chart(blocks).to_dict(),) if blocks["mean"].notna().any() else (),
            note="" if no_tasks else _matrix_note(state, blocks) + (f" · {note}" if note else ""),
        ),
        ReportSection("All tests", run_html.tests_table_html(tests), note=note),
        ReportSection(
            "Curve",
            frame_table_html(
                curve[_CURVE_COLUMNS].rename(columns=_curve_shown(metric))
                if set(_CURVE_COLUMNS) <= set(curve.columns)
                else curve,
            ),
            note=note,
        ),
    ]
    first, last = step_text(state.steps[0]), step_text(state.steps[-1])
    meta = [f"{len(state.steps)} steps ({first} – {last})", f"by {state.step_from}",
            f"policy {state.policy}", f"solved at pass rate ≥ {state.solved_at:g}"]  # fmt: skip
    title = f"Training run {state.name or ''}".strip()
    text = report_html(title, sections, meta=meta, written_by=written_by())
    return write_report(Path(path), text, sections)


def _matrix_note(state: RunState, blocks: pd.DataFrame) -> str:
    n_tasks = int(blocks.drop_duplicates("task_block")["tasks"].sum()) if len(blocks) else 0
    text = (
        f"{n_tasks:,} tasks × {len(state.steps):,} steps; colour: pass rate, grey: not completely "
        "scored at that step (unknown, never a failure)"
    )
    if len(blocks) < n_tasks * len(state.steps):
        text += f", shown in {len(blocks):,} blocks (the mean pass rate of each)"
    return text


def _facts(state: RunState, metric: str) -> pd.DataFrame:
    import pandas as pd

    best, why = _best(state, metric)
    rows: list[tuple[str, Any]] = [
        ("run", state.name or ""),
        ("steps", len(state.steps)),
        ("first step", state.steps[0]),
        ("last step", state.steps[-1]),
        ("steps from", state.step_from),
        ("policy", state.policy),
        ("threshold", state.threshold),
        ("solved at", state.solved_at),
        ("confidence", state.confidence),
        ("resamples", state.resamples),
        ("seed", state.seed),
        ("best", why if best is None else str(best)),
        ("minimum detectable effect", mde_text(state)[0]),
        *(
            [("per subset", f"{PER_SUBSET}: see the sheets Best per subset and MDE per subset")]
            if metric == "score" and shown_by(state, metric=metric)
            else []
        ),
    ]
    rows += [("difference", f"{'BLOCKING ' if d.blocking else ''}{d.field}: {d.detail}")
             for d in state.differences]  # fmt: skip
    return pd.DataFrame(rows, columns=["field", "value"]).astype({"value": object})


def export_run_xlsx(
    state: RunState, path: str | os.PathLike[str], *, metric: str = "score"
) -> Path:
    """Write the run's workbook (see the module docstring); returns its path."""
    out = output_file(path)  # refused before the work, not after
    note = mark(state)
    wb, cells, titles = new_workbook()
    matrix = _tasks.task_matrix(state)
    wide = matrix.copy()
    wide.columns = [f"step {step_text(s)}" for s in matrix.columns]
    wide = wide.reset_index()
    by = shown_by(state, metric=metric)
    tests = _tests.tests(state, by=by)
    sheets: list[tuple[str, pd.DataFrame]] = [
        ("Run", _facts(state, metric)),
        ("Curve", shown_curve(state, metric=metric)[0]),
        ("Noise band", _curve.noise_band(state, metric=metric, by=by)),
        ("Tests", tests),
        ("Task states", _tasks.task_states(state)),
        ("Task matrix", wide),
    ]
    if by is not None and metric == "score":  # the headline per subset, as in the report
        best = _by_group.best_by(state, by=by)
        best["indistinguishable"] = [
            ", ".join(map(step_text, v or ())) for v in best["indistinguishable"]
        ]
        best["untested"] = [", ".join(map(step_text, v or ())) for v in best["untested"]]
        sheets[1:1] = [
            ("Best per subset", best),
            ("MDE per subset", _by_group.mde_by(state, by=by)),
        ]
    for title, frame in sheets:  # people's headers (Job, Complete tasks, Step 3)
        write_frame(wb, cells, titles, title, frame, note, human=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_workbook(wb, out)
    return out
