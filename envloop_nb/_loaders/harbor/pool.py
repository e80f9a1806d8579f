"""Worker processes for a big Harbor job: its trials' ``result.json`` files
(:func:`envloop_nb._loaders.harbor.trials.read_trials`) and their trajectories
(:mod:`envloop_nb._loaders.harbor.trial_steps`) are read in chunks by forked worker
processes, one per CPU, and the chunks' results come back in order.

A worker writes nothing: it returns what it read (an Arrow batch, counts); a
:class:`~envloop_nb.LoadError` it raises (pickled whole) is raised in the caller when
the caller reaches that chunk, so the error is the first in order, as in one process.
"""

from __future__ import annotations

import gc
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import islice
from multiprocessing import get_context
from typing import Any, TypeVar

__all__ = ["CHUNK", "PARALLEL_FROM", "in_order", "workers"]

T = TypeVar("T")

#: Fewer trials than this are read in this process (starting workers costs more).
PARALLEL_FROM = 2_000
#: Trials a worker reads at a time (~10,000 step rows at 20 a trial).
CHUNK = 500


def _cpus() -> int:
    return min(len(os.sched_getaffinity(0)), 8)


def workers(trials: int) -> int:
    """Worker processes for ``trials`` trials: one per CPU this process may use (at most
    8) from :data:`PARALLEL_FROM` trials on Linux, where they are forked; else 1 (read
    here; a spawned worker would import ``__main__`` again)."""
    if trials < PARALLEL_FROM or sys.platform != "linux":
        return 1
    return _cpus()


def in_order(
    fn: Callable[..., T], chunks: Iterable[tuple[Any, ...]], *, workers: int
) -> Iterator[T]:
    """``fn(*chunk)`` of each chunk, in order: here when ``workers`` is 1, else by that
    many forked processes, a few chunks ahead of the one the caller is at (what is in
    flight stays bounded). What ``fn`` raises for a chunk is raised when that chunk's
    turn comes."""
    if workers <= 1:
        yield from (fn(*chunk) for chunk in chunks)
        return
    # the children's collector leaves the parent's objects (and so their pages) alone
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"))
    try:
        following = iter(chunks)
        pending = deque(pool.submit(fn, *c) for c in islice(following, workers * 3))
        while pending:
            out = pending.popleft().result()
            nxt = next(following, None)
            if nxt is not None:
                pending.append(pool.submit(fn, *nxt))
            yield out
    finally:
        pool.shutdown(cancel_futures=True)
        if freeze:
            gc.unfreeze()
