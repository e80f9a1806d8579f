"""Tailing growing files in the background of the kernel: a trace feed (listen mode) and
a growing export (``ws.watch``).

A :class:`Tail` reads only complete lines: a half-written last line (no newline yet) is
waited for, not an error. Each poll's new lines are handed on together; a line that is
not JSON stops the tail with a :class:`LoadError` naming the file and line (kept in
``.error``), and nothing of that poll is applied.

A feed that is *truncated* (the bytes the tail read last are no longer where it read
them: the file is shorter, or was emptied and written again) or *rotated* (another file
at the path: renamed away and made again) is read again from the start of what is at
the path now, and ``.restarts`` counts it; while no file is at the path (between a
rotation's rename and the new file) the tail waits. Re-reading hands on lines it may
have handed on before: listen mode keys cases by ``trace_id``, so a trace already added
is not added or evaluated twice.

Listen mode (:func:`eligible`) adds every new *main* trace (no ``parent_trace_id``) of
the experiment's agent whose execution succeeded and that started at or after the moment
listening began — a trace without a start time counts from when it was first ingested
(``ingested_at``, else when the feed showed it). A trace seen while still running is added
when a later line reports it succeeded.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from .._loaders.envloop.experiment import complete_lines

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

    ``start_at_end=True`` skips what the file holds when the tail starts. A truncated or
    rotated file is read again from its start (see the module docstring).
    """

    #: How many of the last bytes read are kept to tell a rewritten file (a truncated one
    #: written past the old end again) from one that only grew.
    SEEN = 4096

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
        self.restarts = 0
        self._file: tuple[int, int] | None = None  # (device, inode) of the file read
        self._seen = b""  # the last bytes read, ending at ``offset``
        self._stop = threading.Event()
        if start_at_end and path.exists():
            with path.open("rb") as f:
                data = f.read()
                self._file = _file_key(f)
            end = data.rfind(b"\n") + 1
            self.offset, self.line = end, data[:end].count(b"\n")
            self._seen = data[max(0, end - self.SEEN) : end]
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Tail:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def poll(self) -> int:
        """Read and hand on the complete lines appended since the last poll (from the
        start of the file again when it was truncated or rotated)."""
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            return 0  # rotated away and not made again yet: waited for
        with f:
            file = _file_key(f)
            if self._replaced(f, file):
                self.offset, self.line, self._seen = 0, 0, b""
                self.restarts += 1
            self._file = file
            f.seek(self.offset)
            data = f.read()
        lines, offset, line = complete_lines(self.path, self.offset, self.line, data=data)
        if lines:
            self.on_lines(lines)
        self._seen = (self._seen + data[: offset - self.offset])[-self.SEEN :]
        self.offset, self.line = offset, line
        return len(lines)

    def _replaced(self, f: BinaryIO, file: tuple[int, int]) -> bool:
        """Whether the open file ``f`` is not the one read so far, continued: another
        file (rotated), or the bytes last read are gone from their place (truncated)."""
        if self._file is not None and file != self._file:
            return True
        if not self._seen:
            return False
        f.seek(self.offset - len(self._seen))
        return f.read(len(self._seen)) != self._seen

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


def _file_key(f: BinaryIO) -> tuple[int, int]:
    """The open file's (device, inode): another file at the path has another."""
    st = os.fstat(f.fileno())
    return st.st_dev, st.st_ino
