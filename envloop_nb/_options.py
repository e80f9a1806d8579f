"""Session-wide settings (``enb.options``): set once in a notebook, read by the library."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Options", "options"]


@dataclass
class Options:
    """``enb.options``: settings of this Python session.

    Attributes
    ----------
    reviewer
        The name recorded on manual corrections and undos when ``by=`` is not given
        (default ``None``: the operating-system user).
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
