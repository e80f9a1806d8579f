"""Follow a job that changes underneath a panel (``ws.watch``): a light poll of its
``jobs.loaded_at`` on a DuckDB cursor of its own; a change is handed to the kernel's
main loop, so the panel redraws between cells — never while a cell of yours uses the
workspace connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

__all__ = ["Follower", "in_kernel_loop"]


def in_kernel_loop(fn: Callable[[], Any]) -> None:
    """Run ``fn`` on the Jupyter kernel's main loop (thread-safe); directly elsewhere."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        fn()
        return
    loop = getattr(getattr(get_ipython(), "kernel", None), "io_loop", None)
    if loop is None:
        fn()
    else:
        loop.add_callback(fn)


class Follower:
    """Call ``on_change`` (on the kernel loop) whenever ``probe`` — a one-row SQL
    query with parameters — returns something new."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        probe: str,
        params: list[Any],
        on_change: Callable[[], None],
        *,
        interval: float = 1.0,
    ) -> None:
        self.probe, self.params, self.on_change, self.interval = probe, params, on_change, interval
        self.cursor = con.cursor()
        self.changes = 0
        self._last = self._read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="envloop-follow", daemon=True)
        self._thread.start()

    def _read(self) -> Any:
        return self.cursor.execute(self.probe, self.params).fetchone()

    def _run(self) -> None:
        import duckdb

        try:
            while not self._stop.wait(self.interval):
                try:
                    now = self._read()
                except duckdb.ConnectionException:  # the workspace was closed: end quietly
                    return
                if now != self._last:
                    self._last = now
                    self.changes += 1
                    in_kernel_loop(self.on_change)
        finally:
            self.cursor.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
