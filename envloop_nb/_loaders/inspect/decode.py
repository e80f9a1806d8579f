"""An Inspect sample's JSON decoded for its steps: only the members
:func:`~.steps.read_inspect_steps` reads, the rest skipped in C without being built.

A sample's ``events`` are most of its text (each model event repeats the conversation in
its ``input``, and carries the provider's raw ``call``); ``msgspec`` decodes the sample
into the typed structs below, whose unlisted members it passes over, and the result is
the same plain dicts and lists as ``json.loads`` gives for what is kept (an event with
only the keys read). Where ``msgspec`` would read a text differently from
``json.loads``, it refuses it (``NaN`` / ``Infinity`` literals, a number out of a
float's range, an unpaired surrogate escape, invalid UTF-8), and so does a sample of
another shape (``events`` not a list of objects): such a text is decoded by
``json.loads`` whole, as before. Integers of any size and repeated keys (the last one
wins) are read as ``json.loads`` reads them.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from msgspec.structs import asdict

__all__ = ["decode_sample"]


class _Event(msgspec.Struct, gc=False):
    """The members of an event that the steps read (a model, tool, span or step event)."""

    event: Any = None
    id: Any = None
    span_id: Any = None
    parent_id: Any = None
    type: Any = None
    action: Any = None
    timestamp: Any = None
    completed: Any = None
    working_time: Any = None
    model: Any = None
    error: Any = None
    output: Any = None


class _Sample(msgspec.Struct, gc=False):
    """The members of a sample that the steps read."""

    id: Any = None
    epoch: Any = None
    messages: Any = None
    events: list[_Event] | None = None
    attachments: Any = None
    error: Any = None


_DECODE = msgspec.json.Decoder(_Sample).decode


def decode_sample(text: str | bytes | memoryview) -> Any:
    """A sample's JSON ``text`` with the members its steps read (a dict, each event a
    dict of the members read; ``None`` where a member is absent). A text ``msgspec``
    refuses is decoded whole by ``json.loads``, which raises for text that is not JSON.

    Examples
    --------
    >>> text = '{"id": 1, "epoch": 2, "events": [{"event": "model", "input": [1, 2]}]}'
    >>> decode_sample(text)["events"]  # doctest: +NORMALIZE_WHITESPACE
    [{'event': 'model', 'id': None, 'span_id': None, 'parent_id': None, 'type': None,
      'action': None, 'timestamp': None, 'completed': None, 'working_time': None,
      'model': None, 'error': None, 'output': None}]
    >>> decode_sample('{"id": 1, "x": NaN}')  # json.loads reads NaN: so it is read
    {'id': 1, 'x': nan}
    """
    try:
        sample = _DECODE(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return json.loads(text if isinstance(text, str | bytes) else bytes(text))
    out = asdict(sample)
    if sample.events is not None:
        out["events"] = [asdict(event) for event in sample.events]
    return out
