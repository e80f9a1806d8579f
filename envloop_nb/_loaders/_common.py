"""Small helpers shared by the Python-side loaders (Harbor, τ-bench): reading a JSON
file with an error that names it, checking numbers and RFC 3339 times."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
from pathlib import Path
from typing import Any, TypeGuard

from .._errors import LoadError

__all__ = [
    "duration_s",
    "is_number",
    "parse_time",
    "physical_line",
    "physical_place",
    "read_json_file",
]


def read_json_file(path: Path, what: str = "a JSON document") -> Any:
    """Parse a (optionally ``.gz``) JSON file; any problem becomes a :class:`LoadError`.

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
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as err:
        raise LoadError(
            path,
            f"line {err.lineno}",
            f"not valid JSON ({err.msg} at column {err.colno}); expected {what}",
        ) from None
    except (UnicodeDecodeError, OSError, EOFError) as err:
        raise LoadError(path, None, f"cannot be read ({err}); expected {what}") from None


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
