"""``ws.watch(path)``: follow a growing export in the background of the kernel.

A :class:`Watch` polls the file's size and modification time; when it grew and ends with
a complete line, it calls its ``update`` function (for an experiment's streaming export:
read the new lines and merge them; for a job export: load the job again — one
transaction, so a read that meets a half-written line leaves the workspace as it was and
is retried at the next poll). An update that keeps failing on an unchanged file stops
the watch with its error in ``.error``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["Watch"]


class Watch:
    """Poll ``path`` every ``interval`` seconds; call ``update()`` when it has grown."""

    def __init__(
        self,
        path: Path,
        update: Callable[[], None],
        *,
        interval: float = 0.5,
        job_id: str | None = None,
        experiment_id: str | None = None,
    ) -> None:
        self.path = path
        self.job_id, self.experiment_id = job_id, experiment_id
        self.update = update
        self.interval = interval
        self.updates = 0
        self.error: BaseException | None = None
        self._seen: tuple[int, int] | None = None
        self._failed_on: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"envloop-watch-{path.name}", daemon=True
        )

    def start(self, *, seen_now: bool = True) -> Watch:
        """Start polling; ``seen_now`` takes the file as it is now as already loaded."""
        if seen_now:
            self._seen = self._stamp()
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def _complete(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(0, 2)
            if f.tell() == 0:
                return False
            f.seek(-1, 2)
            return f.read(1) == b"\n"

    def poll(self) -> bool:
        """Update once if the file grew and ends with a complete line; True if it did."""
        stamp = self._stamp()
        if stamp is None or stamp == self._seen or not self._complete():
            return False
        try:
            self.update()
        except Exception as err:
            if self._failed_on == stamp:  # failed twice on the same bytes: a real error
                raise
            self._failed_on = stamp
            del err
            return False
        self._seen, self._failed_on = stamp, None
        self.updates += 1
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except BaseException as err:
                self.error = err
                return

    def stop(self, timeout: float | None = None) -> None:
        """Stop polling (an update under way finishes first)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
