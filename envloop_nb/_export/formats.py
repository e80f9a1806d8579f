"""Number formats of workbook cells: a value stays the number, its format shows it as
people read it (rates ``25.0%``, differences ``+2.1%`` / ``−0.9%``, counts ``1,234``) —
the XLSX side of :mod:`envloop_nb._present.display`."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["COUNT", "DIFF", "NUM", "PCT", "number_format"]

#: Number format of a rate (``0.25`` shows as ``25.0%``).
PCT = "0.0%"
#: Number format of a reward or other plain number (up to three decimals).
NUM = "0.###"
#: Number format of a difference of rates (``0.021`` shows as ``+2.1%``, ``-0.009`` as
#: ``−0.9%``): the value stays the number, only its display carries the sign.
DIFF = "+0.0%;\u22120.0%;0.0%"
#: Number format of a count (thousands separators).
COUNT = "#,##0"


def number_format(name: str, values: Any) -> str | None:
    """The number format of a frame's column, from its name and values: rates in [0, 1]
    (``score``, ``pass``, ``pass@k``, ``*_share``, ``*_rate``, ``score_base``…) as
    :data:`PCT`, differences (``*_diff``, ``*_low``, ``*_high``, ``gap``) as :data:`DIFF`,
    whole numbers as :data:`COUNT`; None for the rest (text, other numbers).

    Examples
    --------
    >>> number_format("score_diff", [0.1]), number_format("pass@4", [0.5, None])
    ('+0.0%;−0.0%;0.0%', '0.0%')
    >>> number_format("scored", [767]), number_format("job", ["a"])
    ('#,##0', None)
    """
    import numbers

    nums: list[float] = [
        float(v) for v in values if isinstance(v, numbers.Real) and not isinstance(v, bool)
    ]
    nums = [v for v in nums if not math.isnan(v)]
    if not nums:
        return None
    key = name.lower()
    if key == "gap" or key.endswith(("_diff", "_low", "_high")):
        return DIFF
    rate = key in ("score", "pass", "pass_rate", "coverage_rate") or key.startswith(
        ("pass@", "pass^", "score_", "pass_")
    ) or key.endswith(("_share", "_rate"))  # fmt: skip
    if rate and all(0 <= v <= 1 for v in nums):
        return PCT
    if all(v.is_integer() for v in nums) and not key.endswith("_p"):
        return COUNT
    return None
