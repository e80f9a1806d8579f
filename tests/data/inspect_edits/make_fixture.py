"""Writes the score-edit fixture with inspect_ai itself (offline; the source log was made
by inspect_ai's mockllm model, see /work/shared/fixtures/inspect/make_inspect_fixtures.py).

Run from anywhere with the project's venv::

    /work/main/.venv/bin/python tests/data/inspect_edits/make_fixture.py

It starts from a copy of a real log in /work/shared/fixtures/inspect/eval (task
``capitals``, scorers ``exact`` and ``brevity``, 3 epochs), keeps samples c00-c05 and
c09 (21 sample-epochs, among them errored ones, c05 epochs 1 and 2, and a NaN ``exact``
score, c09 epoch 1) so the files stay small, and applies three score edits with
``inspect_ai.log.edit_score`` (which also recomputes ``results``):

1. c00 epoch 1, ``exact``: "I" -> "C" by alice at 2026-12-01T09:00:00Z, reason
   "Lyon is an acceptable answer in this test"
2. c09 epoch 1, ``exact``: NaN (unscored) -> "I" by bob at 2026-12-01T09:05:00Z, no reason
3. c00 epoch 1, ``exact`` again (a chain): "C" -> "I" by carol at 2026-12-01T10:30:00Z,
   reason "Reverted: the answer is wrong"

then writes ``capitals_edits.eval`` and ``capitals_edits.json`` next to this script.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
from inspect_ai.scorer import ScoreEdit

HERE = Path(__file__).resolve().parent
SOURCE = Path(
    "/work/shared/fixtures/inspect/eval/"
    "2026-12-01T07-28-02-00-00_capitals_bdEYZMfwRXW7hHZWmgR5yc.eval"
)
KEEP = {"c00", "c01", "c02", "c03", "c04", "c05", "c09"}

EDITS = [
    ("c00", 1, "exact", "C", "alice", datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
     "Lyon is an acceptable answer in this test"),
    ("c09", 1, "exact", "I", "bob", datetime(2026, 12, 1, 9, 5, tzinfo=UTC), None),
    ("c00", 1, "exact", "I", "carol", datetime(2026, 12, 1, 10, 30, tzinfo=UTC),
     "Reverted: the answer is wrong"),
]  # fmt: skip


def main() -> None:
    log = read_eval_log(str(SOURCE))
    assert log.samples is not None
    log.samples = [s for s in log.samples if s.id in KEEP]
    log.eval.dataset.samples = len(KEEP)
    log.eval.dataset.sample_ids = sorted(KEEP)
    for sample_id, epoch, scorer, value, author, at, reason in EDITS:
        edit = ScoreEdit(
            value=value,
            provenance=ProvenanceData(timestamp=at, author=author, reason=reason),
        )
        edit_score(log, sample_id, scorer, edit, epoch=epoch)  # recomputes the metrics
    for form in ("eval", "json"):
        out = HERE / f"capitals_edits.{form}"
        log.location = out.name
        write_eval_log(log, str(out), format=form)  # type: ignore[arg-type]
        back = read_eval_log(str(out))
        assert back.samples is not None and len(back.samples) == 21
        print(out.name, out.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
