"""The numbers a source file reports about itself, in one form every loader writes.

A harness's log carries its own aggregates (Inspect's ``results.scores``, Terminal-Bench's
``accuracy`` and ``pass_at_k``, lm-eval's ``results``, the EnvLoop ``metrics`` block,
Harbor's ``result.json``). A loader keeps each one as a :class:`SourceNumber` in the job
row's ``extra["source_numbers"]``: the value, and the recipe that reproduces it — which
values (the reward or a dimension), how a task's attempts are reduced to one value, the
statistic over the observations, what a pass is, and the missing-value rule. The metrics
floor (:mod:`envloop_nb._metrics.agreement`) recomputes each from the job's own rows.

Examples
--------
>>> n = SourceNumber(metric="accuracy", source=0.5, of="reward", reducer="none",
...                  statistic="mean", policy="failure", rule="null counts as failure")
>>> SourceNumber.from_dict(n.as_dict()) == n
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

__all__ = ["REDUCERS", "STATISTICS", "Reducer", "SourceNumber", "Statistic"]

#: How a task's attempts become one value (``"none"``: every attempt is an observation).
Reducer = Literal["none", "mean", "median", "mode", "max", "pass_at", "pass_k", "at_least"]
#: The statistic over the observations that have a value (see :class:`SourceNumber`).
Statistic = Literal["mean", "stderr", "std", "var", "scored", "unscored", "passed", "not_passed"]
REDUCERS: tuple[str, ...] = get_args(Reducer)
STATISTICS: tuple[str, ...] = get_args(Statistic)
_NEEDS_K = ("pass_at", "pass_k", "at_least")


@dataclass(frozen=True)
class SourceNumber:
    """One number the source reports, with the recipe that reproduces it.

    Attributes
    ----------
    metric
        The source's own name for it (``"exact · pass_at_2 · accuracy"``).
    source
        Its value, verbatim (NaN when the source wrote NaN).
    of
        ``"reward"`` or ``"dimension:<name>"``.
    reducer
        How a task's attempts become one value; ``"none"`` makes every attempt one
        observation. ``pass_at``/``pass_k`` are the unbiased estimators at ``k``,
        ``at_least`` is 1 when at least ``k`` attempts pass.
    statistic
        Over the observations with a value: ``mean``, ``stderr`` (sample standard
        deviation over the square root of their number), ``std``, ``var`` (both with
        ddof = 1), ``scored`` (how many have a value), ``unscored`` (requested ones
        without), ``passed``, ``not_passed`` (requested ones that do not pass).
    policy
        ``"unknown"``: an attempt without a value is dropped, and a task whose reducer
        cannot be computed (no value; fewer than ``k`` for ``pass_at``/``pass_k``) is
        unscored. ``"failure"``: every requested slot (tasks × k) counts, one without a
        value as 0.
    threshold
        A pass is ``value >= threshold``; ``None``: ``value == 1``.
    rule
        One sentence for the user: the source's missing-value rule and pass threshold.
    tasks_tag
        ``(key, value)``: only the tasks with that tag (a subtask's numbers).
    scale
        The source states the number times this (``100``: a percentage); the recomputed
        number is shown and compared in the source's units.
    decimals
        The source wrote the number rounded to this many decimals: it agrees when the
        recomputed one is within half a unit of its last decimal. ``None``: not rounded.
    """

    metric: str
    source: float
    of: str
    reducer: Reducer
    statistic: Statistic
    policy: Literal["unknown", "failure"]
    rule: str
    k: int | None = None
    threshold: float | None = None
    tasks_tag: tuple[str, str] | None = None
    scale: float = 1.0
    decimals: int | None = None

    def __post_init__(self) -> None:
        if self.reducer not in REDUCERS:
            raise ValueError(f"reducer must be one of {REDUCERS}, got {self.reducer!r}")
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {self.statistic!r}")
        if self.policy not in ("unknown", "failure"):
            raise ValueError(f"policy must be 'unknown' or 'failure', got {self.policy!r}")
        if not (self.of == "reward" or self.of.startswith("dimension:")):
            raise ValueError(f"of must be 'reward' or 'dimension:<name>', got {self.of!r}")
        if (self.reducer in _NEEDS_K) != (self.k is not None):
            raise ValueError(
                f"reducer {self.reducer!r} {'needs' if self.k is None else 'takes no'} k"
            )
        if self.k is not None and self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise ValueError(f"threshold must be finite, got {self.threshold!r}")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be a finite number > 0, got {self.scale!r}")
        if self.decimals is not None and self.decimals < 0:
            raise ValueError(f"decimals must be >= 0, got {self.decimals!r}")

    @property
    def dimension(self) -> str | None:
        """The dimension's name, or ``None`` for the reward."""
        return None if self.of == "reward" else self.of.removeprefix("dimension:")

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the form stored in ``jobs.extra["source_numbers"]``)."""
        out = asdict(self)
        out["tasks_tag"] = list(self.tasks_tag) if self.tasks_tag else None
        if isinstance(self.source, float) and not math.isfinite(self.source):
            out["source"] = None if math.isnan(self.source) else str(self.source)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceNumber:
        """Read one stored number back (``ValueError`` naming what is wrong)."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown field(s) {unknown} in a source number")
        values = dict(data)
        raw = values.get("source")
        values["source"] = float("nan") if raw is None else float(raw)
        tag = values.get("tasks_tag")
        values["tasks_tag"] = (str(tag[0]), str(tag[1])) if tag else None
        if values.get("k") is not None:
            values["k"] = int(values["k"])
        if values.get("threshold") is not None:
            values["threshold"] = float(values["threshold"])
        values["scale"] = float(values.get("scale", 1.0))
        if values.get("decimals") is not None:
            values["decimals"] = int(values["decimals"])
        return cls(**values)
