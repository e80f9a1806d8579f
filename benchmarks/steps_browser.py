"""The browser stages of ``bench_steps``: a transcript and a side-by-side view as a notebook
shows them, written to an HTML file and opened in headless Chromium (Debian's, as
``tests/test_browser.py`` and ``bench_browser.py`` launch it), against plain static HTML
of the same bytes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import steps_data as sd

Body = Callable[[], Any]


def browser_page(steps: int, folder: Path, what: str) -> dict[str, Path]:
    """Write ``transcript.html`` (one attempt of ``steps`` steps) or ``compare.html`` (two
    attempts of ``steps`` steps, diverging at a sixth) as a notebook would show them, and
    ``floor-<what>.html`` of the same bytes: plain static HTML, one block a step."""
    import envloop_nb as enb
    from envloop_nb._store.steps import StepWriter

    folder.mkdir(parents=True, exist_ok=True)
    parquet = folder / "attempts.parquet"
    import duckdb

    duckdb.sql(
        "SELECT 'task-000000' AS task, a::INTEGER AS attempt, 'completed' AS status, "
        "(a = 1)::INT::DOUBLE AS reward FROM range(1, 3) t(a)"
    ).write_parquet(str(parquet))
    ws = enb.open()
    job = ws.load(str(parquet), format="table", k=2, job_id="browser")
    writer = StepWriter(ws.con, job.id)
    for attempt in (1, 2):
        for s in range(1, steps + 1):
            j, part = divmod(s - 1, 3)
            tool = sd.TOOLS[sd._h(j, attempt if j >= steps // 6 else 0) % 5]
            row: dict[str, Any] = {"task": "task-000000", "attempt": attempt, "step": s,
                                   "turn": j + 1, "model": "acme/coder"}  # fmt: skip
            if part == 0:
                row |= {"role": "assistant", "kind": "message", "tokens_in": 1000 + j,
                        "tokens_out": 40, "content": f"Turn {j + 1}: next I use {tool}."}  # fmt: skip
            elif part == 1:
                row |= {"role": "assistant", "kind": "tool_call", "tool": tool,
                        "call_id": f"c{j}", "arguments": json.dumps({"command": f"ls /app/{j}"})}  # fmt: skip
            else:
                error = sd._h(j, 9) % 13 == 0
                row |= {"role": "tool", "kind": "tool_result", "tool": tool, "call_id": f"c{j}",
                        "is_error": error,
                        "content": ("error: no such file" if error else
                                    "\n".join(f"line {i} of the output of {tool}" for i in range(8)))}  # fmt: skip
            writer.add(row)
    writer.close()
    if what == "transcript":
        pages = {what: job.transcript("task-000000", 1)._repr_html_()}
    else:
        pages = {what: job.compare_attempts("task-000000", 1, 2)._repr_html_()}
    ws.close()
    out = {}
    for what, fragment in pages.items():
        page = f"<!doctype html><html><head><meta charset='utf-8'></head><body>{fragment}</body></html>"
        (folder / f"{what}.html").write_text(page)
        out[what] = folder / f"{what}.html"
        size = len(page.encode())
        block = "<div class='floor-step'>step {n}: " + "plain text " * 20 + "</div>\n"
        parts, total, n = [], 0, 0
        while total < size:
            n += 1
            parts.append(block.format(n=n))
            total += len(parts[-1])
        (folder / f"floor-{what}.html").write_text(
            "<!doctype html><html><head><meta charset='utf-8'></head><body>"
            + "".join(parts)
            + "</body></html>"
        )
        out[f"floor-{what}"] = folder / f"floor-{what}.html"
    return out


#: the first block of a step in each page
_FIRST = {
    "transcript": ".enb-step",
    "compare": ".enb-sbs-row",
    "floor-transcript": ".floor-step",
    "floor-compare": ".floor-step",
}
_PAINTED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def browser_stage(name: str, size: str) -> tuple[Body, int, Any]:
    """(timed body, steps, after(result) -> facts) of one browser stage."""
    steps = sd.parse_count(size)
    what = name.removeprefix("steps_browser_")
    page_of = "transcript" if steps > 1000 else "compare"  # the floor's page: by size
    which = f"floor-{page_of}" if what == "floor" else what
    folder = sd.ROOT / f"browser-{size}"
    if not (folder / f"{which}.html").exists():
        browser_page(steps, folder, page_of if what == "floor" else what)
    pages = {p.stem: p for p in folder.glob("*.html")}
    from playwright.sync_api import sync_playwright

    from .lab import CHROMIUM, CHROMIUM_ARGS

    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    warm = browser.new_page()  # the browser's own first page: not the page's time
    warm.goto("about:blank")
    url = pages[which].as_uri()

    page = browser.new_page(viewport={"width": 1400, "height": 1000})

    def body() -> float:
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.locator(_FIRST[which]).first.wait_for(state="visible", timeout=60_000)
        page.evaluate(_PAINTED)
        return time.perf_counter() - t0

    def facts(shown: float) -> dict[str, Any]:
        timing = page.evaluate(
            """() => { const n = performance.getEntriesByType('navigation')[0];
                       const p = performance.getEntriesByName('first-contentful-paint')[0];
                       return {dom_ms: n.domContentLoadedEventEnd, load_ms: n.loadEventEnd,
                               fcp_ms: p ? p.startTime : null}; }"""
        )
        browser.close()
        pw.stop()
        return {"shown_s": shown, **timing, "page": which, "bytes": pages[which].stat().st_size}

    return body, steps, facts
