"""The files an export writes: a path checked before anything is written, and a whole
file or nothing at the path (never a half-written one, never a ``*.partial-write`` left
behind). Shared by the HTML reports, the workbooks and the dataset exports."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["output_file", "output_folder", "written_whole"]


def _check_characters(path: Path) -> None:
    """Refuse a path with a control character (a newline, tab, carriage return, DEL, a
    C1 control, a Unicode line or paragraph separator)."""
    text = str(path)
    bad = [c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp")]
    if bad:
        raise ValueError(
            f"{text!r}: a path to write must not hold a control character (found "
            f"{', '.join(sorted({repr(c) for c in bad}))}); give it a name without one"
        )


def output_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`Path`, checked as a file an export may write.

    Raises
    ------
    ValueError
        The path holds a control character (a newline in a file name, ...).
    IsADirectoryError
        A folder is at the path.

    Examples
    --------
    >>> output_file("report.html")
    PosixPath('report.html')
    >>> output_file("a\\nb.html")
    Traceback (most recent call last):
    ...
    ValueError: 'a\\nb.html': a path to write must not hold a control character (found '\\n'); give it a name without one
    """
    out = Path(path)
    _check_characters(out)
    if out.is_dir():
        raise IsADirectoryError(
            f"{out} is a folder: give the path of a file to write (a new name, or a name "
            "inside that folder)"
        )
    return out


def output_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`Path`, checked as a folder an export may write into (made
    if missing).

    Raises
    ------
    ValueError
        The path holds a control character.
    NotADirectoryError
        A file is at the path.
    """
    out = Path(path)
    _check_characters(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(
            f"{out} is a file: give the path of a folder to write the dataset into (made "
            "if missing)"
        )
    return out


@contextmanager
def written_whole(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Write a file whole: yields ``<path>.partial-write`` (beside ``path``, its folder
    made if missing) to write; when the block ends without an error it replaces
    ``path``. On any error the partial file is removed and ``path`` is as it was.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with written_whole(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('done', ['out.txt'])
    """
    out = output_file(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial-write")
    try:
        yield tmp
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
