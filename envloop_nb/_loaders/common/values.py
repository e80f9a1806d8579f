"""Small helpers shared by the Python-side loaders (Harbor, τ-bench): reading a JSON
file with an error that names it, checking numbers and RFC 3339 times."""

from __future__ import annotations

import datetime as dt
import gzip
import math
from pathlib import Path
from typing import Any, TypeGuard

from ..._errors import LoadError
from .read import decode_utf8, parse_json, read_bytes

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "K_FACTOR",
    "K_FLOOR",
    "check_claimed_k",
    "check_k",
    "duration_s",
    "fits",
    "infer_k",
    "infer_k_counted",
    "is_int",
    "is_number",
    "parse_time",
    "physical_line",
    "physical_place",
    "read_json_file",
]


def read_json_file(path: Path, what: str = "a JSON document") -> Any:
    """Parse a (optionally ``.gz``) JSON file; any problem becomes a :class:`LoadError`
    naming the line: a truncated gzip stream, invalid UTF-8 or JSON, a lone surrogate,
    nesting too deep (see :mod:`envloop_nb._loaders.common.read`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = p.write_text('{"a": 1,')
    >>> read_json_file(p)
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: .../x.json, line 1: not valid JSON (Expecting property name enclosed in double quotes at column 9); expected a JSON document
    """
    if not path.is_file():
        raise LoadError(path, None, f"file not found: expected {what}")
    return parse_json(path, decode_utf8(path, read_bytes(path)), what=what)


#: The largest value of the workspace's INTEGER (attempt, k, turns) and BIGINT columns.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def fits(value: int | float, most: int) -> bool:
    """True when the number ``value`` fits a column holding ``-most - 1 .. most``."""
    return -most - 1 <= value <= most


def is_int(value: Any) -> TypeGuard[int]:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_k(source: object, k: Any) -> None:
    """The ``k=`` option of every loader: ``None``, or an integer >= 1 that fits the
    workspace's INTEGER column; anything else is a :class:`~envloop_nb.LoadError`.

    Examples
    --------
    >>> check_k("x.json", 2.5)
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: x.json, k: expected an integer >= 1, got 2.5
    """
    if k is None:
        return
    if not is_int(k) or k < 1:
        raise LoadError(source, "k", f"expected an integer >= 1, got {k!r}")
    if k > INT32_MAX:
        raise LoadError(source, "k", f"k {k} is out of range: it must fit a 32-bit integer")


#: A claimed k (attempts per task) is taken up to the larger of ``K_FLOOR`` and
#: ``K_FACTOR`` times the highest attempt number present: a job not yet started claims
#: its k with no attempt present (any k up to ``K_FLOOR`` loads), and a k far beyond
#: the attempts is no plan but a typo or hostile input that every view would iterate up
#: to (``range(1, k + 1)`` of 2e9).
K_FLOOR = 10_000
K_FACTOR = 100


def check_claimed_k(source: object, place: str, k: int, top: int | None, *, name: str) -> None:
    """Refuse a claimed ``k`` beyond ``max(K_FLOOR, K_FACTOR × top)``, ``top`` the highest
    attempt number present (None: no attempt), naming ``place`` (the field or option
    ``name`` that claims it).

    Examples
    --------
    >>> check_claimed_k("x.json", "$.job.attempts", 8, None, name="attempts")
    >>> check_claimed_k("x.json", "$.job.attempts", 500, 4, name="attempts")
    >>> check_claimed_k("x.json", "$.job.attempts", 20_000, 4, name="attempts")
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: x.json, $.job.attempts: attempts 20000 is far beyond the attempts present (the highest is 4): at most 10000 is taken (10000, or 100 × the highest)
    """
    most = max(K_FLOOR, K_FACTOR * (top or 0))
    if k > most:
        present = f"the highest is {top}" if top else "none yet"
        raise LoadError(
            source,
            place,
            f"{name}{'=' if name == 'k' else ' '}{k} is far beyond the attempts present "
            f"({present}): at most {most} is taken ({K_FLOOR}, or {K_FACTOR} × the highest)",
        )


def is_number(value: Any) -> TypeGuard[int | float]:
    """True for a finite int or float (not a bool, not a numeric string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def parse_time(value: Any, source: object, place: str, field: str) -> dt.datetime | None:
    """An RFC 3339 string (or null) as an aware datetime; naive times are taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise LoadError(source, place, f"{field} must be an RFC 3339 time string, got {value!r}")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise LoadError(source, place, f"{field} is not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def duration_s(start: dt.datetime | None, end: dt.datetime | None) -> float | None:
    """Seconds from ``start`` to ``end``, or None when either is missing."""
    if start is None or end is None:
        return None
    return (end - start).total_seconds()


def physical_line(path: Path, ordinal: int) -> int:
    """The file line number of the ``ordinal``-th non-blank line (DuckDB's JSON readers
    skip blank lines, so their row ordinal can run behind the line number)."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    seen = 0
    try:
        with opener(path, "rb") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    seen += 1
                    if seen == ordinal:
                        return number
    except (OSError, EOFError):
        pass
    return ordinal


def physical_place(path: Path, place: str) -> str:
    """``"line N"`` (a row ordinal) → ``"line M"`` (the file's line); other places unchanged."""
    if place.startswith("line ") and place[5:].isdigit():
        return f"line {physical_line(path, int(place[5:]))}"
    return place


def infer_k(source: object, counts: dict[str, int], top_index: int, *, stacklevel: int = 5) -> int:
    """k when the source does not say: the most attempts any task has, with a warning
    (:class:`~envloop_nb.LoadWarning`) when tasks have uneven counts, and one when the
    attempt numbers run beyond every task's count (then k is the highest number, so no
    attempt is out of range, and the column may not be an attempt index at all).

    ``counts`` maps each task to its attempts, ``top_index`` is the highest attempt
    number (1-based).

    Examples
    --------
    >>> infer_k("x.json", {"a": 2, "b": 2}, 2)
    2
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     k = infer_k("x.json", {"a": 1, "b": 1}, 100)
    >>> k, "no task has more than 1 attempt" in str(caught[0].message)
    (100, True)
    """
    most = max(counts.values(), default=0)
    fewest = min(counts.values(), default=0)
    short = sum(1 for n in counts.values() if n < most)
    return infer_k_counted(
        source, most=most, fewest=fewest, short=short, tasks=len(counts), top_index=top_index,
        stacklevel=stacklevel + 1,
    )  # fmt: skip


def infer_k_counted(
    source: object, *, most: int, fewest: int, short: int, tasks: int, top_index: int,
    stacklevel: int = 5, uneven: bool = True,
) -> int:  # fmt: skip
    """:func:`infer_k` from the counts already aggregated (in SQL, for big tables);
    ``uneven=False`` leaves out the uneven-counts warning (a table whose rows are only
    the attempts that were recorded)."""
    import warnings

    from ..._errors import LoadWarning

    k = max(most, top_index, 1)
    if top_index > most:
        warnings.warn(
            f"{source}: attempt numbers reach {top_index} but no task has more than {most} "
            f"attempt{'s' if most != 1 else ''}; k = {k} as numbered (so most slots are "
            "missing). If that column is not an attempt index, map another or pass k=",
            LoadWarning,
            stacklevel=stacklevel,
        )
    elif uneven and fewest < most:
        warnings.warn(
            f"{source}: tasks have between {fewest} and {most} attempts ({short} of "
            f"{tasks} have fewer than {most}); k = {most}, the missing ones count as "
            "missing in coverage (pass k= to say how many were requested)",
            LoadWarning,
            stacklevel=stacklevel,
        )
    return k
