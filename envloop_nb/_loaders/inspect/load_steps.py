"""A log's steps, read while the loader maps its samples: each sample × epoch (an
attempt) gets the steps of its messages and events (:func:`~.steps.read_inspect_steps`).

The samples reach Python as the JSON texts the SQL mapping reads (:mod:`.sql`), one
chunk at a time, on the thread that writes the chunk's attempts (the only one that
writes on the load's connection); each text is decoded once, here, from the chunk's
own buffer and only in the members its steps read (:func:`~.decode.decode_sample`), and
its rows stream through one :class:`~envloop_nb._store.steps.StepWriter`. A ``.json`` log not laid out
as Inspect writes it is read whole by DuckDB for the attempts; its samples are then
parsed in Python for their steps (:meth:`InspectLog.samples <.read.InspectLog.samples>`).

A sample that has no ``messages`` at all has no steps (counted in
``attempts_without``); any other unreadable message is a :class:`LoadError` naming the
file, the sample and the message, or under ``lenient=True`` the attempt's steps are
skipped whole (its rows are held until its reader succeeded) and counted.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..._errors import LoadError, LoadWarning
from ..._store.steps import HeldRows, StepWriter
from .decode import decode_sample
from .steps import InspectStepsRead, read_inspect_steps

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb
    import pyarrow as pa

__all__ = ["SOURCE", "LogSteps"]

#: What ``extra.steps.source`` says the steps were read from.
SOURCE = "inspect messages and events"
_COUNTS = tuple(f.name for f in fields(InspectStepsRead))


@dataclass
class LogSteps:
    """The steps of one log's samples, written through one :class:`StepWriter`.

    Parameters
    ----------
    con
        The load's connection; rows are written inside its transaction.
    job_id
        The job being loaded.
    path
        The log (named in every row's ``source_place`` and in errors).
    lenient
        Skip (and count) an attempt whose steps cannot be read, instead of failing.
    """

    con: duckdb.DuckDBPyConnection
    job_id: str
    path: Path
    lenient: bool = False
    with_steps: int = 0
    without: int = 0
    skipped: int = 0
    first_skipped: str | None = None
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    _writer: StepWriter | None = None
    _held: HeldRows | None = None

    def __post_init__(self) -> None:
        self._writer = StepWriter(self.con, self.job_id)
        self._held = HeldRows() if self.lenient else None

    def texts(self, places: pa.ChunkedArray, texts: pa.ChunkedArray, refs: pa.ChunkedArray) -> None:
        """Read the samples of one chunk: ``places``, the samples' JSON ``texts`` (as
        :mod:`.sql` hands them to DuckDB, which has checked them already) and whether
        each one's messages may hold ``attachment://`` references."""
        for place, text, ref in zip(
            places.to_pylist(), _views(texts), refs.to_pylist(), strict=True
        ):
            self.sample(str(place), decode_sample(text), refs=bool(ref))

    def samples(self, samples: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Read ``(place, sample)`` pairs."""
        for place, sample in samples:
            self.sample(place, sample)

    def sample(self, place: str, sample: Mapping[str, Any], *, refs: bool = True) -> None:
        """Read one sample's steps (its id and epoch were checked by the mapping)."""
        assert self._writer is not None
        if sample.get("messages") is None:  # nothing recorded: no steps, none invented
            self.without += 1
            return
        epoch = sample.get("epoch")
        task, attempt = str(sample["id"]), 1 if epoch is None else int(epoch)
        held = self._held
        if held is None:
            got = read_inspect_steps(
                self._writer, task=task, attempt=attempt, sample=sample,
                source=self.path, place=place, refs=refs,
            )  # fmt: skip
        else:
            held.rows.clear()
            try:
                got = read_inspect_steps(
                    held, task=task, attempt=attempt, sample=sample,
                    source=self.path, place=place, refs=refs,
                )  # fmt: skip
            except LoadError as err:
                self.skipped += 1
                self.first_skipped = self.first_skipped or str(err)
                return
            held.write_to(self._writer)
        if got.rows:
            self.with_steps += 1
        else:
            self.without += 1
        for name in _COUNTS:
            self.totals[name] += getattr(got, name)

    def close(self) -> dict[str, Any]:
        """Write the rows left; warn about skipped attempts; return ``extra.steps``."""
        assert self._writer is not None
        self._writer.close()
        if self.skipped:
            warnings.warn(
                f"{self.path}: the steps of {self.skipped} sample(s) were not read and are "
                f"left out (lenient=True); first: {self.first_skipped}",
                LoadWarning,
                stacklevel=5,
            )
        t = self.totals
        return {
            "source": SOURCE,
            "attempts_with_steps": self.with_steps,
            "attempts_without": self.without,
            "skipped": self.skipped,
            "first_skipped": self.first_skipped,
            "rows": t["rows"],
            "messages": t["messages"],
            "tool_calls": t["tool_calls"],
            "tool_results": t["tool_results"],
            "tool_errors": t["tool_errors"],
            "errors": t["errors"],
            "model_events": t["model_events"],
            # agent model calls that produced no message of the sample (sub-agents run as
            # tools): their usage is in the attempt's, not in its steps'
            "unmatched_model_events": t["unmatched_events"],
        }


def _views(texts: pa.ChunkedArray) -> Iterator[memoryview]:
    """Each text of a string column as a view of its UTF-8 bytes in the column's own
    buffer (no copy: the chunk's texts never become Python strings)."""
    import numpy as np
    import pyarrow as pa

    for chunk in texts.chunks:
        if chunk.null_count:
            raise ValueError("a sample's text is missing")  # the mapping read every one
        _, offsets, data = chunk.buffers()
        kind = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        at = np.frombuffer(offsets, dtype=kind)[chunk.offset : chunk.offset + len(chunk) + 1]
        view = memoryview(data) if data is not None else memoryview(b"")
        for start, stop in zip(at[:-1].tolist(), at[1:].tolist(), strict=True):
            yield view[start:stop]
