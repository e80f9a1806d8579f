"""Tailing growing files in the background of the kernel: a trace feed (listen mode) and
a growing export (``ws.watch``).

A :class:`Tail` reads only complete lines: a half-written last line (no newline yet) is
waited for, not an error. Each poll's new lines are handed on together; a line that is
not JSON stops the tail with a :class:`LoadError` naming the file and line (kept in
``.error``), and nothing of that poll is applied.

Listen mode (:func:`eligible`) adds every new *main* trace (no ``parent_trace_id``) of
the experiment's agent whose execution succeeded and that started at or after the moment
listening began — a trace without a start time counts from when it was first ingested
(``ingested_at``, else when the feed showed it). A trace seen while still running is added
when a later line reports it succeeded.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._loaders.experiment import complete_lines

__all__ = ["Tail", "eligible"]


def _time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def eligible(
    trace: Mapping[str, Any], *, agent: str | None, since: dt.datetime, seen_at: dt.datetime
) -> bool:
    """True when listen mode adds ``trace`` (see the module docstring).

    Examples
    --------
    >>> since = dt.datetime(2026, 11, 20, 9, 1, tzinfo=dt.UTC)
    >>> t = {"trace_id": "t1", "agent": "a", "parent_trace_id": None, "status": "success",
    ...      "trace_started_at": "2026-11-20T09:05:00Z"}
    >>> eligible(t, agent="a", since=since, seen_at=since)
    True
    >>> eligible(t | {"parent_trace_id": "t0"}, agent="a", since=since, seen_at=since)
    False
    >>> eligible(t | {"trace_started_at": "2026-11-20T08:00:00Z"}, agent="a", since=since, seen_at=since)
    False
    """
    if trace.get("parent_trace_id") is not None or trace.get("status") != "success":
        return False
    if agent is not None and trace.get("agent") not in (None, agent):
        return False
    started = _time(trace.get("trace_started_at")) or _time(trace.get("ingested_at")) or seen_at
    return started >= since


class Tail:
    """Poll ``path`` every ``interval`` seconds in a daemon thread; call ``on_lines``
    with each poll's new parsed lines (``[(line_number, object), ...]``).

    ``start_at_end=True`` skips what the file holds when the tail starts.
    """

    def __init__(
        self,
        path: Path,
        on_lines: Callable[[list[tuple[int, Any]]], None],
        *,
        interval: float = 0.5,
        start_at_end: bool = False,
        name: str = "envloop-tail",
    ) -> None:
        self.path = path
        self.on_lines = on_lines
        self.interval = interval
        self.offset = 0
        self.line = 0
        self.error: BaseException | None = None
        self.polls = 0
        self._stop = threading.Event()
        self._idle = threading.Event()
        if start_at_end and path.exists():
            data = path.read_bytes()
            end = data.rfind(b"\n") + 1
            self.offset, self.line = end, data[:end].count(b"\n")
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Tail:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def poll(self) -> int:
        """Read and hand on the complete lines appended since the last poll."""
        lines, offset, line = complete_lines(self.path, self.offset, self.line)
        if lines:
            self.on_lines(lines)
        self.offset, self.line = offset, line
        return len(lines)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except BaseException as err:
                self.error = err
                return
            finally:
                self.polls += 1
            self._stop.wait(self.interval)

    def stop(self, timeout: float | None = None) -> None:
        """Stop polling; wait for the current poll (and what it started) to finish."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
