"""An EnvLoop attempt's ChatML ``input`` and ``output`` as steps
(``formats/envloop-job-result.md``: ``input`` is the prompt, a string or a ChatML message
list; ``output`` the final answer or last assistant message).

A string ``input`` is one ``user`` message (turn 1); a message list is read as
OpenAI-style chat messages (:func:`envloop_nb._loaders.common.chat_steps.read_chat_messages`:
roles, tool calls with their results, reasoning, content parts), message ``i`` being
turn ``i + 1``. ``output`` is then one ``assistant`` message, the turn after the input;
an empty string is kept (the attempt answered nothing), a null output writes no row.
Neither has usage (the trial's ``usage`` is the attempt's, not a turn's).

A trial with an ATIF trajectory is read by :mod:`envloop_nb._loaders.harbor.atif` instead:
its steps are the trajectory's, not this two-part summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._errors import LoadError
from ..._store.steps import StepSink
from ..common.chat_steps import StepRows, StepsRead, read_chat_messages

__all__ = ["read_chatml_steps"]


def read_chatml_steps(
    writer: StepSink,
    *,
    task: str,
    attempt: int,
    input: str | Sequence[Any] | None,
    output: str | None,
    source: object,
    place: str,
) -> StepsRead:
    """Write one attempt's ``input`` / ``output`` as steps.

    ``source`` is the file and ``place`` the trial in it (``"trials[3]"``); a message's
    place is ``place.input[i]``. An unknown role, a result naming no earlier call, an
    ``input`` that is neither a string nor a list or an ``output`` that is not a string
    is a :class:`LoadError` naming the file and that place.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> ws = enb.open()
    >>> job = ws.load("../shared/formats/examples/three-tasks-two-attempts.json", steps=False)
    >>> from envloop_nb._store.steps import StepWriter
    >>> w = StepWriter(ws.con, job.id)
    >>> got = read_chatml_steps(w, task="A", attempt=1, input="Compute 17*23.",
    ...                         output="391", source="job.json", place="trials[0]")
    >>> w.close(), got.rows, got.messages
    (2, 2, 2)
    >>> job.steps()[["step", "turn", "role", "kind", "content"]].values.tolist()
    [[1, 1, 'user', 'message', 'Compute 17*23.'], [2, 2, 'assistant', 'message', '391']]
    """
    out = StepsRead()
    rows = StepRows(writer, task, attempt, out)
    turns = 0
    if isinstance(input, str):
        rows.add(
            turn=1, role="user", kind="message", content=input,
            source_place=f"{source}, {place}.input",
        )  # fmt: skip
        out.messages += 1
        turns = 1
    elif isinstance(input, list):
        read_chat_messages(rows, input, source=source, place=f"{place}.input")
        turns = len(input)
    elif input is not None:
        raise LoadError(
            source,
            f"{place}.input",
            f"expected a string or a ChatML message list, got {type(input).__name__}",
        )
    if isinstance(output, str):
        rows.add(
            turn=turns + 1, role="assistant", kind="message", content=output,
            source_place=f"{source}, {place}.output",
        )  # fmt: skip
        out.messages += 1
    elif output is not None:
        raise LoadError(
            source, f"{place}.output", f"expected a string, got {type(output).__name__}"
        )
    return out
