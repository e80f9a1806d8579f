"""A log's samples cut into chunks bounded by count and by bytes."""

from __future__ import annotations

from typing import Any

__all__ = ["chunk_spans"]


def chunk_spans(sizes: Any, most: int, budget: int) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` spans over items of ``sizes`` bytes (a numpy array):
    at most ``most`` items and ``budget`` bytes each, but never empty (an item larger
    than ``budget`` is a chunk of its own).

    A count alone is not a bound: 8,192 agent samples of 80 kB each are 650 MB of JSON,
    past the workspace's memory limit once DuckDB has parsed them.

    Examples
    --------
    >>> import numpy as np
    >>> chunk_spans(np.array([10, 10, 10, 50, 10, 10]), 4, 30)
    [(0, 3), (3, 4), (4, 6)]
    >>> chunk_spans(np.array([1] * 5), 2, 100)
    [(0, 2), (2, 4), (4, 5)]
    """
    import numpy as np

    n = len(sizes)
    ends = np.cumsum(sizes, dtype=np.int64)
    spans: list[tuple[int, int]] = []
    start = 0
    while start < n:
        base = int(ends[start - 1]) if start else 0
        fits = int(np.searchsorted(ends, base + budget, side="right"))
        stop = max(start + 1, min(fits, start + most, n))
        spans.append((start, stop))
        start = stop
    return spans
