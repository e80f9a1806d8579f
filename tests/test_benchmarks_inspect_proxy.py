"""The proxy Inspect log of ``benchmarks/inspect_proxy.py`` (used while inspect_ai is not
in the dev lock): each copy loads with the steps of the fixture it copies, under its own
ids."""

from __future__ import annotations

from pathlib import Path

import pytest

import envloop_nb as enb
from benchmarks import inspect_proxy


def test_each_copy_has_the_fixtures_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspect_proxy, "DATA", tmp_path)
    log = inspect_proxy.make(3)
    ws = enb.open()
    steps = ws.load(log).steps()
    one = ws.load(inspect_proxy.FIXTURE).steps()
    assert sorted(steps["task"].unique()) == ["s000000", "s000001", "s000002"]
    cols = ["step", "turn", "role", "kind", "tool", "content", "tokens_in", "started_at"]
    for _, got in steps.groupby("task"):
        assert got[cols].reset_index(drop=True).equals(one[cols].reset_index(drop=True))
