"""Multiple-testing adjustment of p-values: Holm (family-wise error) and Benjamini–Hochberg
(false discovery rate). Pure functions over a list of p-values.

* Holm's step-down: sort ascending, ``p_(i) · (m − i + 1)``, running maximum, capped at 1;
* Benjamini–Hochberg's step-up: sort ascending, ``p_(i) · m / i``, running minimum from
  the largest down, capped at 1.

Both return the adjusted p-values in the input order (statsmodels'
``multipletests(method="holm" / "fdr_bh")``, which the tests use as a reference). For any
input ``p ≤ BH ≤ Holm ≤ 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["Adjust", "adjust_pvalues"]

Adjust = Literal["holm", "bh"]


def adjust_pvalues(pvalues: Sequence[float], method: Adjust = "holm") -> list[float]:
    """Adjusted p-values, in the input order.

    Parameters
    ----------
    pvalues
        Raw p-values in [0, 1] (an empty list gives an empty list).
    method
        ``"holm"`` (controls the family-wise error rate) or ``"bh"`` (Benjamini–Hochberg,
        controls the false discovery rate).

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm")
    [0.03, 0.06, 0.06]
    >>> [round(p, 6) for p in adjust_pvalues([0.01, 0.04, 0.03], "bh")]
    [0.03, 0.04, 0.04]
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if method not in ("holm", "bh"):
        raise ValueError(f"method must be 'holm' or 'bh', got {method!r}")
    if p.size and (not np.isfinite(p).all() or (p < 0).any() or (p > 1).any()):
        raise ValueError(f"p-values must be numbers in [0, 1], got {p.tolist()!r}")
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        scaled = ranked * (m - np.arange(m))
        adjusted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    else:
        scaled = ranked * m / np.arange(1, m + 1)
        adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adjusted
    return [float(x) for x in out]
