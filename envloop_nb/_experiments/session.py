"""What a workspace keeps in memory for its experiments during one Python session:
the notebook evaluator functions bound to each experiment, running listeners and
watchers, and how to stop the panels that poll the workspace (functions and threads
cannot be stored in the DuckDB file)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: opening a workspace needs none of them
    from .listen import Tail
    from .runner import Evaluator
    from .watch import Watch

__all__ = ["Session"]


@dataclass
class Session:
    """Per-workspace, per-session state of experiments."""

    evaluators: dict[str, dict[str, Evaluator]] = field(default_factory=dict)
    listeners: dict[str, Tail] = field(default_factory=dict)
    listen_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    watchers: dict[str, Watch] = field(default_factory=dict)
    #: A panel's "stop polling" methods, held weakly: a panel that was dropped is not kept.
    pollers: list[weakref.WeakMethod[Callable[[], None]]] = field(default_factory=list)

    def bound(self, experiment_id: str) -> dict[str, Evaluator]:
        return self.evaluators.setdefault(experiment_id, {})

    def on_close(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` (a panel's bound method that stops its poll thread and waits for
        it) in :meth:`stop_all`, before the workspace's connection closes."""
        self.pollers = [ref for ref in self.pollers if ref() is not None]
        self.pollers.append(weakref.WeakMethod(stop))

    def stop_all(self) -> None:
        for ref in self.pollers:
            stop = ref()
            if stop is not None:
                stop()
        self.pollers.clear()
        for tail in self.listeners.values():
            tail.stop(timeout=5)
        for watch in self.watchers.values():
            watch.stop(timeout=5)
        self.listeners.clear()
        self.watchers.clear()
