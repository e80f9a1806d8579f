"""What a workspace keeps in memory for its experiments during one Python session:
the notebook evaluator functions bound to each experiment, and running listeners and
watchers (functions and threads cannot be stored in the DuckDB file)."""

from __future__ import annotations

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

    def bound(self, experiment_id: str) -> dict[str, Evaluator]:
        return self.evaluators.setdefault(experiment_id, {})

    def stop_all(self) -> None:
        for tail in self.listeners.values():
            tail.stop(timeout=5)
        for watch in self.watchers.values():
            watch.stop(timeout=5)
        self.listeners.clear()
        self.watchers.clear()
