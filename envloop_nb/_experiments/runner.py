"""Evaluators that run in the notebook, and the runner that fills pending result rows.

An :class:`Evaluator` wraps a function ``fn(case)`` (sync or ``async``) that returns a
number, ``(number, reason)``, a mapping ``{"score", "reason", "points"}``, or ``None``
(succeeded without a number). Any exception, a timeout, a value that is no number or lies
outside the scale makes the row **failed** with the reason as its ``error`` — never a 0.

The runner evaluates rows concurrently (``concurrency`` at a time) on its own event loop
in a worker thread, so it works the same in a plain script and inside Jupyter's running
loop; a sync function runs in a thread pool. Each finished row is written at once (a
DuckDB cursor of the runner's own), so an interrupted run keeps what it finished. A
function that hangs past the timeout is abandoned (its row failed); Python cannot kill its
thread, which finishes in the background and is then ignored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import inspect
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

__all__ = ["EvalCase", "Evaluator", "Outcome", "interpret", "run_rows"]


@dataclass(frozen=True)
class EvalCase:
    """What an evaluator function sees of a case.

    ``input`` is the task input (a string, or a ChatML list of ``{"role", "content"}``),
    ``output`` the agent's actual output, ``reference`` the reference answer or ``None``.
    ``text`` is the input's last user message (or the input string).
    """

    trace_id: str
    input: Any
    output: Any
    reference: str | None
    tags: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str | None:
        if isinstance(self.input, list):
            users = [
                m.get("content")
                for m in self.input
                if isinstance(m, Mapping) and m.get("role") == "user"
            ]
            return str(users[-1]) if users else None
        return None if self.input is None else str(self.input)


@dataclass(frozen=True)
class Evaluator:
    """An evaluator that runs in the notebook.

    Parameters
    ----------
    name
        Its name in the experiment (binding a function to a name the experiment already
        has — e.g. a platform judge — re-evaluates that evaluator locally).
    fn
        ``fn(case: EvalCase)``, sync or async; see the module docstring for what it returns.
    needs_reference
        The evaluator compares with the reference answer: it cannot be added while a case
        lacks one, and an appended case without one gets a row that is not counted.
    scale
        ``(min, max)`` of its scores; default 0-100.
    timeout
        Seconds per row (default ``enb.options.evaluator_timeout``).

    Examples
    --------
    >>> ev = Evaluator("exact", lambda case: 100.0 if case.output == case.reference else 0.0)
    >>> ev.name, ev.needs_reference
    ('exact', False)
    """

    name: str
    fn: Callable[[EvalCase], Any]
    needs_reference: bool = False
    scale: tuple[float, float] = (0.0, 100.0)
    timeout: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"an evaluator needs a non-empty name, got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(f"evaluator {self.name!r}: fn must be callable, got {self.fn!r}")
        lo, hi = self.scale
        if not lo < hi:
            raise ValueError(f"evaluator {self.name!r}: scale needs min < max, got {self.scale!r}")


@dataclass(frozen=True)
class Outcome:
    """One evaluated row: ``succeeded`` (score may be None) or ``failed`` (with error)."""

    status: str
    score: float | None = None
    reason: str | None = None
    points: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None


def interpret(value: Any, scale: tuple[float, float]) -> Outcome:
    """What an evaluator function returned, as an outcome.

    Examples
    --------
    >>> interpret(70, (0, 100)).score, interpret((50, "ok"), (0, 100)).reason
    (70.0, 'ok')
    >>> interpret({"score": 120}, (0, 100)).error
    'returned 120, outside the scale 0-100'
    >>> interpret(None, (0, 100)).status
    'succeeded'
    """
    reason: Any = None
    points: Any = ()
    if isinstance(value, Mapping):
        score, reason, points = value.get("score"), value.get("reason"), value.get("points") or ()
    elif isinstance(value, tuple) and len(value) == 2:
        score, reason = value
    else:
        score = value
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        return Outcome("failed", error=f"returned {score!r}, not a number")
    if score is not None and not math.isfinite(score):
        return Outcome("failed", error=f"returned {score!r}, not a finite number")
    if score is not None and not scale[0] <= score <= scale[1]:
        return Outcome(
            "failed", error=f"returned {score:g}, outside the scale {scale[0]:g}-{scale[1]:g}"
        )
    if not isinstance(points, list | tuple):
        return Outcome("failed", error=f"points must be a list, got {type(points).__name__}")
    return Outcome(
        "succeeded",
        score=None if score is None else float(score),
        reason=None if reason is None else str(reason),
        points=tuple(dict(p) if isinstance(p, Mapping) else {"name": str(p)} for p in points),
    )


async def _one(
    ev: Evaluator, case: EvalCase, timeout: float | None, pool: concurrent.futures.Executor
) -> Outcome:
    loop = asyncio.get_running_loop()
    try:
        if inspect.iscoroutinefunction(ev.fn):
            call = ev.fn(case)
        else:
            call = loop.run_in_executor(pool, ev.fn, case)
        value = await asyncio.wait_for(call, timeout)
        if inspect.isawaitable(value):  # a sync function that returned a coroutine
            value = await asyncio.wait_for(value, timeout)
    except TimeoutError:
        return Outcome("failed", error=f"timed out after {timeout:g} s")
    except Exception as err:
        return Outcome(
            "failed", error=f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        )
    return interpret(value, ev.scale)


def _write(cur: duckdb.DuckDBPyConnection, eid: str, result_id: str, out: Outcome) -> None:
    cur.execute(
        """UPDATE exp_results SET status = ?, score = ?, reason = ?, points = ?, error = ?,
                  evaluated_at = ?
           WHERE experiment_id = ? AND result_id = ?""",
        [
            out.status, out.score, out.reason, json.dumps(list(out.points), ensure_ascii=False,
            default=str), out.error, dt.datetime.now(dt.UTC), eid, result_id,
        ],
    )  # fmt: skip


def run_rows(
    con: duckdb.DuckDBPyConnection,
    eid: str,
    rows: Sequence[tuple[str, Evaluator, EvalCase]],
    *,
    concurrency: int = 8,
    timeout: float | None,
    on_done: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Evaluate ``(result_id, evaluator, case)`` rows; returns ``{"succeeded", "failed"}``.

    Blocks until every row is written; ``on_done(done, total)`` after each.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    counts = {"succeeded": 0, "failed": 0}
    if not rows:
        return counts
    lock = threading.Lock()
    cur = con.cursor()
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=concurrency, thread_name_prefix="envloop-eval"
    )

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)
        done = 0

        async def task(result_id: str, ev: Evaluator, case: EvalCase) -> None:
            nonlocal done
            async with gate:
                out = await _one(ev, case, ev.timeout if ev.timeout is not None else timeout, pool)
            with lock:
                _write(cur, eid, result_id, out)
                counts[out.status] += 1
                done += 1
                if on_done is not None:
                    on_done(done, len(rows))

        await asyncio.gather(*(task(r, e, c) for r, e, c in rows))

    errors: list[BaseException] = []

    def thread_main() -> None:
        try:
            asyncio.run(main())
        except BaseException as err:
            errors.append(err)

    worker = threading.Thread(target=thread_main, name="envloop-runner", daemon=True)
    worker.start()
    worker.join()
    pool.shutdown(wait=False, cancel_futures=True)
    cur.close()
    if errors:
        raise errors[0]
    return counts
