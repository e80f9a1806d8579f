"""The same job gives bit-identical numbers in every run (parallel float sums included)."""

from __future__ import annotations

import envloop_nb as enb
from tests.conftest import SAMPLE_DATA


def test_graded_job_numbers_are_bit_identical_across_workspaces() -> None:
    seen = set()
    for _ in range(8):
        with enb.open() as ws:
            job = ws.load(SAMPLE_DATA / "graded.json")
            s = job.summary()
            per_task = job.samples()["reward_mean"].tolist()
            groups = job.groups(by="dimension")["score"].tolist()
            seen.add((s.score, tuple(per_task), tuple(groups)))
    assert len(seen) == 1
