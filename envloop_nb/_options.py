"""Session-wide settings (``enb.options``): set once in a notebook, read by the library."""

from __future__ import annotations

import getpass
from dataclasses import dataclass

__all__ = ["Options", "options", "who"]


@dataclass
class Options:
    """``enb.options``: settings of this Python session.

    Attributes
    ----------
    reviewer
        The name recorded on manual corrections, undos and annotations when ``by=`` is
        not given (default ``None``: the operating-system user).
    evaluator_timeout
        Seconds an evaluator may take on one row before the row is recorded as failed
        (``None``: no limit). ``exp.run(timeout=...)`` overrides it.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> enb.options.reviewer = "li.wei"
    >>> enb.options.reviewer
    'li.wei'
    >>> enb.options.reviewer = None
    """

    reviewer: str | None = None
    evaluator_timeout: float | None = 120.0


options = Options()


def who(by: str | None) -> str:
    """Who makes a change: ``by``, else ``enb.options.reviewer``, else the OS user."""
    if by is not None:
        if not isinstance(by, str) or not by.strip():
            raise ValueError(f"by must be a non-empty name, got {by!r}")
        return by
    if options.reviewer:
        return options.reviewer
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - no user database (some containers)
        return "unknown"
