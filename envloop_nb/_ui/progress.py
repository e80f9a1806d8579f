"""A progress bar for evaluation runs: an ipywidgets bar in a notebook kernel, a text
line on standard error elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["in_notebook", "progress_reporter"]


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where widgets can be shown)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def progress_reporter(total: int, label: str, *, show: bool = True) -> Callable[[int, int], None]:
    """A ``(done, total)`` callback showing progress; a no-op when ``show`` is False."""
    if not show or total == 0:
        return lambda done, total: None
    if in_notebook():
        import ipywidgets as w
        from IPython.display import display

        bar = w.IntProgress(value=0, min=0, max=total, description="evaluating")
        text = w.HTML(f"0/{total} {label}")
        display(w.HBox([bar, text]))  # type: ignore[no-untyped-call]

        def widget(done: int, total: int) -> None:
            bar.value = done
            text.value = f"{done}/{total} {label}"
            if done == total:
                bar.bar_style = "success"

        return widget

    step = max(1, total // 20)

    def line(done: int, total: int) -> None:
        if done == total or done % step == 0:
            end = "\n" if done == total else "\r"
            print(f"evaluating: {done}/{total} {label}", end=end, file=sys.stderr, flush=True)

    return line
