"""How numbers are shown: rates in [0, 1] as percentages, other values on their own scale."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["format_count", "format_metric", "format_pct", "format_score"]


def format_pct(value: float | None, digits: int = 1, *, trim: bool = True) -> str:
    """A rate in [0, 1] as a percentage; ``"-"`` when undefined.

    Examples
    --------
    >>> format_pct(0.75), format_pct(1), format_pct(2 / 3), format_pct(None)
    ('75%', '100%', '66.7%', '-')
    >>> format_pct(0.6, trim=False)
    '60.0%'
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    text = f"{value * 100:.{digits}f}"
    if trim and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "%"


def format_metric(value: float | None, digits: int = 1) -> str:
    """A metric: percentage when it lies in [0, 1], else its own scale.

    Examples
    --------
    >>> format_metric(0.5), format_metric(7.25), format_metric(-0.2), format_metric(None)
    ('50%', '7.25', '-0.2', '-')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if 0.0 <= value <= 1.0:
        return format_pct(value, digits)
    return f"{value:.4g}"


def format_count(part: int | None, whole: int) -> str:
    """``"5/6"`` with thousands separators; ``"?/6"`` when the part is unknown.

    Examples
    --------
    >>> format_count(1234, 5000), format_count(None, 6)
    ('1,234/5,000', '?/6')
    """
    return f"{'?' if part is None else format(part, ',')}/{whole:,}"


def format_score(value: float | None, digits: int = 1) -> str:
    """A score on its evaluator's scale (0-100), rounded half up from the exact value the
    float holds (``76.25`` → ``76.3``, as a reader rounds); ``"-"`` when nothing counted.

    Examples
    --------
    >>> format_score(76.25), format_score(82.5), format_score(70), format_score(None)
    ('76.3', '82.5', '70', '-')
    >>> format_score(0.125, 2), format_score(float("nan"))
    ('0.13', '-')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    exact = Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    text = f"{exact:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
