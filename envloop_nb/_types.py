"""Type aliases shared across modules."""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["ENDED", "FrameKind", "Policy"]

#: How a requested attempt without a reward is treated by the metrics.
#: ``"unknown"`` (the platform's): it stays missing and coverage reports it.
#: ``"failure"`` (τ-bench's, and Harbor's before 0.26): it counts as reward 0.
Policy: TypeAlias = Literal["unknown", "failure"]

#: The attempt states in which an attempt has ended: unscored there, it is *invalid*.
ENDED = ("completed", "failed", "cancelled")

#: Which frame library results come back in.
FrameKind: TypeAlias = Literal["pandas", "polars"]
