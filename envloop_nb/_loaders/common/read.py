"""Reading source bytes so that nothing is lost or invented without a :class:`LoadError`.

Every loader reads its files through these checks:

* **gzip** (``.gz``): the whole stream must be there. A file cut short — mid-stream, or
  at a line boundary without gzip's trailer — would otherwise load the trials before
  the cut and say nothing (DuckDB's reader stops quietly at a missing trailer).
  :func:`check_gzip` inflates the stream once, in C (zlib), and checks every member's
  end-of-stream marker, CRC-32 and length; about 0.7 s for a 1M-trial JSONL.gz (33 MB
  compressed, 490 MB of text).
* **UTF-8**: text must be valid UTF-8; an invalid byte is named by line and column.
* **JSON read in Python** (headers, documents, Harbor and τ-bench files): lone
  surrogate escapes (``"\\ud800"``, which Python's parser accepts but no UTF-8 text can
  hold) and nesting deeper than the parser's recursion limit are refused by place.

* **Path names** must be valid UTF-8 (:func:`check_path_name`): DuckDB takes paths as
  UTF-8 text and the workspace records them as text, so a name such as ``b"\\xff.json"``
  (a ``str`` with a surrogate escape on POSIX) is refused by name, not with a raw
  ``UnicodeEncodeError``.

Lines that DuckDB's JSON reader rejects are explained by :func:`explain_bad_line`.
"""

from __future__ import annotations

import json
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..._errors import LoadError

__all__ = [
    "bad_path_name",
    "check_gzip",
    "check_path_name",
    "decode_utf8",
    "explain_bad_line",
    "is_gzip",
    "lone_surrogate",
    "parse_json",
    "read_bytes",
    "read_first_line",
    "shown_path",
]

_CHUNK = 1 << 20  # compressed bytes read at a time
_OUT = 1 << 22  # most decompressed bytes produced at a time


def shown_path(text: object) -> str:
    """``text`` as printable text: bytes that are not UTF-8 (surrogate escapes) written
    ``\\xff``, other lone surrogates ``\\ud800``."""
    text = str(text)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def bad_path_name(text: str) -> str | None:
    """Why ``text`` (a file or folder name) is not valid UTF-8, or None when it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        char = ord(text[err.start])
        if 0xDC80 <= char <= 0xDCFF:  # os.fsdecode's escape of a byte that is not UTF-8
            return f"not valid UTF-8 (byte 0x{char - 0xDC00:02x})"
        return f"not valid Unicode (lone surrogate \\u{char:04x})"
    return None


def check_path_name(source: object) -> None:
    """Refuse a path whose name is not valid UTF-8 (e.g. ``os.fsdecode(b"\\xff.json")``):
    DuckDB cannot open it and the workspace cannot record it, so every loader stops here
    with a :class:`LoadError` naming the path (its bad bytes written ``\\xff``).

    Examples
    --------
    >>> import os
    >>> check_path_name("runs/ok.jsonl")
    >>> check_path_name("runs/" + os.fsdecode(b"\\xff.json"))
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: runs/\\xff.json: the path is not valid UTF-8 (byte 0xff): DuckDB cannot open it and the workspace cannot record it; rename it
    """
    problem = bad_path_name(str(source))
    if problem is not None:
        raise LoadError(
            shown_path(source),
            None,
            f"the path is {problem}: DuckDB cannot open it and the workspace cannot "
            "record it; rename it",
        )


def is_gzip(path: Path) -> bool:
    """True for a ``.gz`` file name."""
    return path.name.lower().endswith(".gz")


class _Inflated:
    """Counts the lines inflated so far, for the place of a truncation or corruption."""

    def __init__(self) -> None:
        self.lines = 0
        self.ends_line = True

    def seen(self, out: bytes) -> None:
        if out:
            self.lines += out.count(b"\n")
            self.ends_line = out.endswith(b"\n")

    def place(self) -> str:
        return f"after line {self.lines}" if self.ends_line else f"line {self.lines + 1}"


def _inflate(path: Path, state: _Inflated) -> Iterator[bytes]:
    """The decompressed bytes of the gzip file ``path``; a missing end, a bad CRC-32 or
    length, or bytes that are not gzip raise a :class:`LoadError`.

    Several concatenated members are one stream, and zero bytes after a member are
    padding (as for Python's :mod:`gzip`).
    """
    d = zlib.decompressobj(31)
    fresh, members = True, 0  # fresh: d has consumed nothing yet
    try:
        with path.open("rb") as f:
            while block := f.read(_CHUNK):
                data = block
                while data:
                    if fresh and members:
                        data = data.lstrip(b"\x00")
                        if not data:
                            break
                    fresh = False
                    out = d.decompress(data, _OUT)
                    state.seen(out)
                    if out:
                        yield out
                    if d.eof:
                        members += 1
                        data = d.unused_data
                        d, fresh = zlib.decompressobj(31), True
                    else:
                        data = d.unconsumed_tail
    except zlib.error as err:
        text, place = str(err), f"after line {state.lines}"  # decoded fine up to there
        if "incorrect header check" in text and not members and not state.lines:
            problem = "not a gzip file (no gzip header), though its name ends in .gz"
        elif "data check" in text or "length check" in text:  # the data is damaged somewhere
            place = "gzip trailer" if not members else f"gzip trailer of member {members + 1}"
            problem = f"corrupt gzip file: its CRC-32 or length check failed ({text})"
        else:
            problem = f"corrupt gzip file ({text})"
        raise LoadError(path, place, problem) from None
    except OSError as err:
        raise LoadError(path, None, f"cannot be read ({err})") from None
    if not fresh:
        raise LoadError(
            path,
            state.place(),
            "truncated gzip file: the compressed stream ends without its end marker "
            "and CRC trailer (the file was cut short)",
        )


def check_gzip(path: Path) -> None:
    """Refuse a ``.gz`` file whose gzip stream is incomplete or corrupt.

    Examples
    --------
    >>> import gzip, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl.gz"
    >>> data = gzip.compress(b'{"a": 1}\\n' * 1000)
    >>> _ = p.write_bytes(data)
    >>> check_gzip(p)
    >>> _ = p.write_bytes(data[:-8])  # no trailer
    >>> check_gzip(p)
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: .../run.jsonl.gz, after line 1000: truncated gzip file: ...
    """
    for _ in _inflate(path, _Inflated()):
        pass


def read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed (and checked whole) when it is ``.gz``."""
    if is_gzip(path):
        return b"".join(_inflate(path, _Inflated()))
    try:
        return path.read_bytes()
    except OSError as err:
        raise LoadError(path, None, f"cannot be read ({err})") from None


def read_first_line(path: Path) -> bytes:
    """The first line's bytes (a gzip file's stream is not checked here)."""
    import gzip

    try:
        opener: Any = gzip.open if is_gzip(path) else open
        with opener(path, "rb") as f:
            return bytes(f.readline())
    except (OSError, EOFError) as err:
        raise LoadError(path, "line 1", f"cannot be read ({err})") from None


def decode_utf8(source: object, data: bytes, *, line: int = 1) -> str:
    """``data`` as text; an invalid UTF-8 byte is named by line and column.

    ``line`` is the file line on which ``data`` starts.

    Examples
    --------
    >>> decode_utf8("run.jsonl", b'{"a": 1}\\n{"b": "\\xff"}')
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: run.jsonl, line 2: not valid UTF-8 (byte 0xff at column 8)
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        at = err.start
        row = line + data.count(b"\n", 0, at)
        column = at - (data.rfind(b"\n", 0, at) + 1) + 1
        raise LoadError(
            source, f"line {row}", f"not valid UTF-8 (byte 0x{data[at]:02x} at column {column})"
        ) from None


# An escaped backslash (skipped), a valid surrogate pair (skipped), or a lone surrogate.
_ESCAPE = re.compile(
    r"\\(?:\\|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|(u[dD][89a-fA-F][0-9a-fA-F]{2}))"
)


def lone_surrogate(text: str) -> tuple[int, str] | None:
    """Offset and text of the first lone surrogate escape in JSON ``text``, or None.

    Examples
    --------
    >>> lone_surrogate('{"ok": "\\\\ud83d\\\\ude00", "bad": "x\\\\ud800"}')
    (32, '\\\\ud800')
    >>> lone_surrogate('{"literal": "\\\\\\\\ud800"}') is None
    True
    """
    if "\\ud" not in text and "\\uD" not in text:  # the common case: a fast scan
        return None
    for m in _ESCAPE.finditer(text):
        if m.group(1):
            return m.start(), m.group(0)
    return None


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _deepest(text: str) -> tuple[int, int]:
    """The deepest nesting of arrays/objects in ``text`` and the offset where it starts."""
    depth = best = where = 0
    for m in _TOKEN.finditer(text):
        ch = m.group(0)
        if ch in "[{":
            depth += 1
            if depth > best:
                best, where = depth, m.start()
        elif ch in "]}":
            depth -= 1
    return best, where


def _line_col(text: str, at: int, line: int) -> tuple[int, int]:
    return line + text.count("\n", 0, at), at - (text.rfind("\n", 0, at) + 1) + 1


def parse_json(source: object, text: str, *, what: str | None = None, line: int = 1) -> Any:
    """Parse JSON ``text`` (which starts on file line ``line``) or raise a LoadError that
    names the line: invalid JSON, nesting too deep for Python's parser, or a lone
    surrogate escape.

    Examples
    --------
    >>> parse_json("x.json", '[1, 2')
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: x.json, line 1: not valid JSON (Expecting ',' delimiter at column 6)
    >>> parse_json("x.json", '{"a": "\\\\udc00"}')
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: x.json, line 1: lone surrogate \\udc00 at column 8: not valid Unicode text
    >>> parse_json("x.json", "[" * 100000 + "]" * 100000)
    Traceback (most recent call last):
    ...
    envloop_nb._errors.LoadError: x.json, line 1: JSON nested 100000 levels deep (deepest at column 100000); ...
    """
    expected = f"; expected {what}" if what else ""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise LoadError(
            source,
            f"line {line + err.lineno - 1}",
            f"not valid JSON ({err.msg} at column {err.colno}){expected}",
        ) from None
    except RecursionError:
        depth, at = _deepest(text)
        row, column = _line_col(text, at, line)
        raise LoadError(
            source,
            f"line {row}",
            f"JSON nested {depth} levels deep (deepest at column {column}); Python's JSON "
            f"parser stops at about {sys.getrecursionlimit()} levels",
        ) from None
    lone = lone_surrogate(text)
    if lone is not None:
        row, column = _line_col(text, lone[0], line)
        raise LoadError(
            source,
            f"line {row}",
            f"lone surrogate {lone[1]} at column {column}: not valid Unicode text",
        )
    return value


def explain_bad_line(path: Path, line_no: int) -> str:
    """Why file line ``line_no`` is not a JSON value (DuckDB's reader only says it is not)."""
    import gzip

    opener: Any = gzip.open if is_gzip(path) else open
    raw = None
    try:
        with opener(path, "rb") as f:
            for i, line in enumerate(f, start=1):
                if i == line_no:
                    raw = bytes(line)
                    break
    except (OSError, EOFError):
        pass
    if raw is None:
        return "not valid JSON"
    try:
        text = decode_utf8(path, raw, line=line_no)
        json.loads(text)
    except LoadError as err:
        return err.problem
    except json.JSONDecodeError as err:
        return f"not valid JSON ({err.msg}, column {err.colno}); truncated line?"
    except RecursionError:
        pass
    try:
        parse_json(path, text, line=line_no)
    except LoadError as err:
        return err.problem
    return "not valid JSON"
