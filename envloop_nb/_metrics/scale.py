"""A score dimension's scale: its unit, its range and its direction.

The unit and the direction come from the source and are stored with the dimension in
``dimension_meta`` (EnvLoop: ``metrics.units`` / ``metrics.higher_is_better``); the range
follows from the unit (:data:`UNIT_RANGES`: ``pct`` is 0–100, ``ratio`` 0–1, a ``count``
has no top). One number given as a threshold or a bad-case cut-off for every dimension
is a *fraction of each dimension's range* (:meth:`Scale.cut`): 0.5 is 0.5 on a 0–1
dimension and 50 on a 0–100 one, so a 0–100 dimension is never judged at 0.5. A
dimension without a unit whose values all lie in 0–1 is on the reward's 0–1 scale; one
with no known range (a count, or no unit and values outside 0–1) is not judged by such
a number. A number given for a dimension by name is in its own units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["UNIT_RANGES", "Scale", "dimension_scales", "outside_unit", "scale_of"]

#: The range each known unit implies (``None``: no bound).
UNIT_RANGES: dict[str, tuple[float, float | None]] = {
    "pct": (0.0, 100.0),
    "percent": (0.0, 100.0),
    "%": (0.0, 100.0),
    "ratio": (0.0, 1.0),
    "fraction": (0.0, 1.0),
    "rate": (0.0, 1.0),
    "probability": (0.0, 1.0),
    "count": (0.0, None),
}


@dataclass(frozen=True)
class Scale:
    """A dimension's unit, range (``low``, ``high``; None: unknown) and direction.

    ``range_stated`` / ``direction_stated``: whether the source said them (a unit it
    names; its ``higher_is_better``). What it did not say is still worked with — values
    all in 0–1 are taken on the reward's 0–1 scale, higher is better — but shown as not
    stated, never as the source's word.

    Examples
    --------
    >>> s = scale_of("pct", higher_is_better=True)
    >>> s.cut(0.5), s.describe()
    (50.0, '0–100 pct, higher is better')
    >>> scale_of(None, higher_is_better=False, within_unit=False).describe()
    'range not stated, lower is better'
    >>> scale_of(None, higher_is_better=None).describe()
    'range not stated (values within 0–1), direction not stated'
    """

    unit: str | None
    low: float | None
    high: float | None
    higher_is_better: bool
    range_stated: bool = True
    direction_stated: bool = True

    @property
    def range_text(self) -> str | None:
        """``"0–100"`` (``"0–"`` with no top), None when unknown."""
        if self.low is None:
            return None
        top = "" if self.high is None else f"{self.high:g}"
        return f"{self.low:g}–{top}"

    @property
    def is_rate(self) -> bool:
        """Whether values are fractions of one (shown as percentages)."""
        return (self.low, self.high) == (0.0, 1.0)

    def cut(self, fraction: float) -> float | None:
        """The value ``fraction`` of the way up this range (None: no finite range)."""
        if self.low is None or self.high is None:
            return None
        return self.low + float(fraction) * (self.high - self.low)

    def describe(self) -> str:
        """``"0–100 pct, higher is better"``; what the source did not state is said so."""
        if self.range_stated:
            what = " ".join(p for p in (self.range_text, self.unit) if p)
        else:
            seen = f" (values within {self.range_text})" if self.range_text else ""
            what = ", ".join(p for p in (self.unit, f"range not stated{seen}") if p)
        way = "higher is better" if self.higher_is_better else "lower is better"
        if not self.direction_stated:
            way = "direction not stated"
        return f"{what}, {way}" if what else way


def scale_of(unit: str | None, *, higher_is_better: bool | None, within_unit: bool = True) -> Scale:
    """The :class:`Scale` of a dimension with this stored unit and direction (a missing
    direction is worked with as higher-is-better, the platform's default, and marked not
    stated). Without a known unit the range is 0–1 when every value lies there
    (``within_unit``; the reward's scale), else unknown; either way not stated.

    Examples
    --------
    >>> scale_of(None, higher_is_better=None).cut(0.5), scale_of("count", higher_is_better=True).cut(0.5)
    (0.5, None)
    >>> scale_of(None, higher_is_better=True, within_unit=False).range_text is None
    True
    """
    way = higher_is_better is not False
    said = higher_is_better is not None
    if unit and str(unit).strip().lower() in UNIT_RANGES:
        low, high = UNIT_RANGES[str(unit).strip().lower()]
        return Scale(unit, low, high, way, direction_stated=said)
    bounds = (0.0, 1.0) if within_unit else (None, None)
    return Scale(unit, bounds[0], bounds[1], way, range_stated=False, direction_stated=said)


def outside_unit(con: duckdb.DuckDBPyConnection, job_id: str) -> set[str]:
    """The job's value names (``reward``, ``composite``, dimensions) with a value outside 0–1."""
    rows = con.execute(
        """SELECT name FROM dimensions WHERE job_id = $j GROUP BY name
               HAVING bool_or(value < 0 OR value > 1)
           UNION ALL
           SELECT 'composite' WHERE (SELECT bool_or(composite < 0 OR composite > 1)
                                     FROM attempts WHERE job_id = $j)
           UNION ALL
           SELECT 'reward' WHERE (SELECT bool_or(reward < 0 OR reward > 1)
                                  FROM attempts WHERE job_id = $j)""",
        {"j": job_id},
    ).fetchall()
    return {str(r[0]) for r in rows}


def dimension_scales(con: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Scale]:
    """Each named dimension of the job (sorted) with its :class:`Scale`.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("sample_data/graded.json")
    >>> dimension_scales(job.con, job.id)["format_pct"].describe()
    '0–100 pct, higher is better'
    """
    rows = con.execute(
        """SELECT d.name, any_value(m.unit), any_value(m.higher_is_better)
           FROM (SELECT DISTINCT name FROM dimensions WHERE job_id = $j) d
           LEFT JOIN dimension_meta m ON m.job_id = $j AND m.name = d.name
           GROUP BY d.name ORDER BY d.name""",
        {"j": job_id},
    ).fetchall()
    outside = outside_unit(con, job_id)
    return {
        str(n): scale_of(u, higher_is_better=h, within_unit=n not in outside) for n, u, h in rows
    }
