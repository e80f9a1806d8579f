"""What the tabs of one job panel share, and how a callback's error is shown.

:class:`PanelState` holds the job (a :class:`~envloop_nb._store.ref.JobRef`), the
missing-value policy and pass threshold in force, and the current bucket result. A tab
changes them through :meth:`PanelState.set_metric` / :meth:`PanelState.set_buckets`
and hears about changes through callbacks; no tab reads another tab's widgets.
:class:`Guard` runs a callback and turns an exception into a readable box.

Examples
--------
>>> import envloop_nb as enb
>>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
>>> state = PanelState(job)
>>> state.on_metric(lambda s: print("now", s.policy, s.threshold))
>>> state.set_metric("failure", 0.5)
now failure 0.5
>>> state.set_metric("failure", 0.5)  # unchanged: nobody is called
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._present.cases_html import error_box
from .._types import Policy

if TYPE_CHECKING:
    import duckdb

    from .._buckets.apply import BucketResult
    from .._store.ref import JobRef

__all__ = ["Guard", "PanelState", "describe_error", "widget_bundle"]

Listener = Callable[["PanelState"], None]


class PanelState:
    """The job, the policy/threshold in force and the current buckets of one panel.

    Attributes
    ----------
    ref
        The job (anything with ``.con`` and ``.id``).
    policy, threshold
        Missing-value policy and pass threshold every tab computes with.
    buckets
        The last bucket result applied (``None`` before any).
    """

    def __init__(
        self, ref: JobRef, *, policy: Policy = "unknown", threshold: float | None = None
    ) -> None:
        self.ref = ref
        self.policy: Policy = policy
        self.threshold = threshold
        self.buckets: BucketResult | None = None
        self._metric_listeners: list[Listener] = []
        self._bucket_listeners: list[Listener] = []

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        return self.ref.con

    @property
    def job_id(self) -> str:
        return self.ref.id

    def on_metric(self, listener: Listener) -> None:
        """Call ``listener(state)`` after the policy or the threshold changed."""
        self._metric_listeners.append(listener)

    def on_buckets(self, listener: Listener) -> None:
        """Call ``listener(state)`` after a new bucket result was applied."""
        self._bucket_listeners.append(listener)

    def set_metric(self, policy: Policy, threshold: float | None) -> None:
        """Use ``policy`` and ``threshold`` from now on (listeners hear of a change)."""
        if (policy, threshold) == (self.policy, self.threshold):
            return
        self.policy, self.threshold = policy, threshold
        for listener in self._metric_listeners:
            listener(self)

    def set_buckets(self, result: BucketResult) -> None:
        """Make ``result`` the current buckets; if a listener fails, the old ones stay."""
        old, self.buckets = self.buckets, result
        try:
            for listener in self._bucket_listeners:
                listener(self)
        except BaseException:
            self.buckets = old
            raise


def describe_error(exc: BaseException) -> str:
    """``"ValueError: the message"`` (a ``KeyError``'s quotes removed).

    Examples
    --------
    >>> describe_error(KeyError("no job 'x'"))
    "KeyError: no job 'x'"
    """
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, KeyError) and text.startswith(("'", '"')):
        text = text[1:-1]
    return f"{type(exc).__name__}: {text}"


class Guard:
    """Runs a callback; an exception becomes a readable message in ``box`` (an HTML widget)."""

    def __init__(self, box: Any) -> None:
        self.box = box
        self.last_error: str | None = None

    def run(self, fn: Callable[[], Any]) -> bool:
        """Run ``fn``; ``False`` (and the message in the box) if it raised."""
        self.box.value = ""
        try:
            fn()
        except Exception as exc:  # shown in the panel, never a traceback
            self.last_error = describe_error(exc)
            self.box.value = error_box(self.last_error)
            return False
        self.last_error = None
        return True


def widget_bundle(widget: Any, text: str, **kwargs: Any) -> Any:
    """``widget``'s display bundle with ``text`` as its plain-text form (what a notebook
    shows without the widget front end, and what nbval compares)."""
    bundle = widget._repr_mimebundle_(**kwargs)
    if isinstance(bundle, tuple):
        data, meta = bundle
        return {**data, "text/plain": text}, meta
    if isinstance(bundle, dict):
        bundle = {**bundle, "text/plain": text}
    return bundle
