"""The run panel's first screen timed in the browser: real JupyterLab, headless Chromium.

Run (after ``python -m benchmarks.bench_run --workspace FILE``, which loads the 200
checkpoints × 5,000 tasks × 8 attempts into ``FILE``)::

    .venv/bin/python -m benchmarks.bench_run_browser FILE [repeats]   # FILE: an absolute path

A notebook opens the workspace file and assembles the run (``ws.run(jobs, step="name")``,
not timed); then ``run.panel()`` is run with Ctrl+Enter and three times are taken: until
its first screen is visible — the panel with its curve over training drawn (the first
vega chart in the panel: since the issue-36 rework each step's own number with its
coverage drops, every other part saying "computing…"; before it, the curve with its
noise band, drawn together with the matrix) —, until the tasks × steps matrix is drawn
too (two vega charts), and until the panel is complete: nothing left "computing" (the
curve's bands, the headline, the tests' marks, the changes and the task lists, filled
right after the cell). The first run computes everything (curve with its task
bootstrap, the adjusted tests, the matrix blocks, the task lists) and loads the chart
library; the repeats build a fresh run each time (``ws.run`` again: nothing memoized) in
the cell before, so every repeat is a cold panel on a warm page. The last repeat leaves
two screenshots, at its first screen and complete (``test-artifacts/bench-run-panel-*.png``),
and says where the matrix's top is in the complete panel against the window's height
(1,200 px: above or below the fold). The target (issue 36): < 1.5 s to the first
screen. Prints a Markdown table.

To time another version of the code with this same script, run a copy of it inside that
version's tree (``ROOT`` is the script's parent folder: the notebook imports from there).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .bench_browser import _idle, _ms
from .lab import CHROMIUM, CHROMIUM_ARGS, jupyterlab, open_notebook

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 1500.0

#: JS: the number of drawn vega charts in the last run panel of code cell ``i``
_CHARTS = (
    "(i) => { const c = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[i];"
    " const p = c && c.querySelector('.enb-run-panel');"
    " return p ? p.querySelectorAll('svg.marks, canvas.marks').length : 0; }"
)
#: JS: the top of the second chart (the matrix) of the run panel of code cell ``i`` and the
#: window's height, in CSS pixels
_FOLD = (
    "(i) => { const c = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[i];"
    " const e = c.querySelectorAll('.enb-run-panel .vega-embed')[1];"
    " return e ? [e.getBoundingClientRect().top, window.innerHeight] : null; }"
)
#: JS: the last run panel of code cell ``i`` has nothing left "computing"
_DONE = (
    "(i) => { const c = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[i];"
    " const p = c && c.querySelector('.enb-run-panel');"
    " return !!p && !p.textContent.includes('computing') && p.textContent.includes('best'); }"
)


def _notebook(path: Path, workspace: str) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}  # fmt: skip
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import envloop_nb as enb\n"
            f"ws = enb.open({workspace!r})\n"
            "ids = [j for j in ws.jobs()['job_id'] if j.startswith('ckpt_step')]\n"
            "run = ws.run(ids, step='name'); run"
        ),
        nbformat.v4.new_code_cell("run.panel()"),
    ]
    nbformat.write(nb, str(path))


def _run(
    page: Any, index: int, timeout_ms: float = 600_000, shots: Path | None = None
) -> tuple[float, float, float]:
    """Ctrl+Enter on code cell ``index``; ms until its run panel shows its first drawn
    chart (the curve), two (the matrix too), and until it is complete (nothing left
    "computing"). With ``shots``: a screenshot at the first screen and one complete."""
    _idle(page, timeout_ms)
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.evaluate(
        "(i) => { const c = document.querySelectorAll('.jp-Notebook .jp-CodeCell')[i];"
        " c.querySelector('.jp-OutputArea').innerHTML = ''; }",
        index,
    )  # the previous panel's charts must not count
    t0 = time.perf_counter()
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"{_CHARTS}", arg=index, timeout=timeout_ms, polling=10)
    first = _ms(t0)
    if shots is not None:
        page.screenshot(path=str(shots / "bench-run-panel-first.png"))
    page.wait_for_function(f"(i) => ({_CHARTS})(i) >= 2", arg=index, timeout=timeout_ms, polling=10)
    both = _ms(t0)
    page.wait_for_function(f"{_DONE}", arg=index, timeout=timeout_ms, polling=10)
    done = _ms(t0)
    if shots is not None:
        page.screenshot(path=str(shots / "bench-run-panel-complete.png"))
    return first, both, done


def run(workspace: str, repeats: int = 3) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    scratch = Path(tempfile.mkdtemp(prefix="enb-bench-run-"))
    try:
        _notebook(scratch / "bench_run.ipynb", workspace)
        with jupyterlab(scratch, env={"PYTHONPATH": str(ROOT)}) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = open_notebook(browser, url, "bench_run.ipynb",
                                 ready=".jp-Notebook .jp-CodeCell", timeout_ms=120_000)  # fmt: skip
            first_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(0)
            first_cell.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Escape")
            page.keyboard.press("Control+Enter")
            first_cell.locator(".jp-OutputArea-output:has-text('envloop_nb.Run')").wait_for(
                timeout=600_000
            )
            first = _run(page, 1)
            times, matrix, done = [], [], []
            for repeat in range(repeats):
                _idle(page, 600_000)
                cell0 = page.locator(".jp-Notebook .jp-CodeCell").nth(0)
                cell0.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Escape")
                page.keyboard.press("Control+Enter")  # a fresh run: nothing memoized
                _idle(page, 600_000)
                last = repeat == repeats - 1
                shown, both, filled = _run(page, 1, shots=ROOT / "test-artifacts" if last else None)
                times.append(shown)
                matrix.append(both)
                done.append(filled)
            fold = page.evaluate(_FOLD, 1)
            browser.close()
        return {"first": first, "times": times, "matrix": matrix, "done": done, "fold": fold}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    workspace = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    out = run(workspace, repeats)
    rows = (
        ("run panel's first screen (its curve drawn), 200 × 5,000 × 8", out["times"], 0,
         f"< {TARGET_MS:.0f}"),
        ("the matrix drawn too", out["matrix"], 1, "—"),
        ("the panel complete (nothing left computing)", out["done"], 2, "—"),
    )  # fmt: skip
    print("| in the browser | median ms | min–max ms | runs | first run ms | target |")
    print("|---|---|---|---|---|---|")
    for what, times, i, target in rows:
        print(
            f"| {what} | {statistics.median(times):.0f} | {min(times):.0f}–{max(times):.0f} "
            f"| {len(times)} | {out['first'][i]:.0f} | {target} |"
        )
    if out["fold"]:
        top, height = out["fold"]
        print(f"\nthe matrix's top in the complete panel: {top:.0f} px, window {height} px high")


if __name__ == "__main__":
    main()
