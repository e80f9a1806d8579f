"""Hard-case buckets: ordered score-range rules over one metric, the platform's semantics.

A rule set is an ordered list of buckets ``(name, low, high)`` over one metric. A value
belongs to a bucket when ``low <= value < high``; when several buckets contain it the
first one from the top wins; a value that matches none goes to ``"Other (matched no
rule)"``. A task whose metric is undefined (shown "-": not every attempt scored) takes
part in no bucket, not even Other: its ``bucket`` is null and the summary says how many
were left out and why.

Applying rules is vectorized (numpy for pandas, expressions for polars, a ``CASE`` for
DuckDB) with one pass per bucket, never a loop over rows, and never mutates its input.

This module is pure: rules, their warnings and JSON, applied to frames. Applying rules
to a job in the workspace (its per-task or per-attempt values, :class:`BucketResult`)
is :mod:`envloop_nb._buckets.apply`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from .._store.sql import literal, number

__all__ = [
    "EXCLUDED",
    "OTHER",
    "PASS_K",
    "Bucket",
    "BucketRules",
    "Level",
    "metric_range",
    "parse_names",
]

#: The bucket of a value that matches no rule.
OTHER = "Other (matched no rule)"
#: The summary row (and XLSX sheet) of rows whose metric is undefined: in no bucket.
EXCLUDED = "(excluded)"

#: Where a rule set applies: one row per task, or one row per attempt.
Level: TypeAlias = Literal["task", "attempt"]

#: A ``pass@K`` / ``pass^K`` metric name; group 1 is K.
PASS_K = re.compile(r"^pass[@^](\d+)$")
_RATE_METRICS = ("pass_rate",)


def metric_range(metric: str) -> tuple[float, float] | None:
    """The closed range a metric's values lie in, when it is known.

    Pass rates and pass@k / pass^k estimates are rates in [0, 1]; rewards, composites
    and named dimensions have no fixed scale (``None``).

    Examples
    --------
    >>> metric_range("pass_rate"), metric_range("pass@2"), metric_range("reward_mean")
    ((0.0, 1.0), (0.0, 1.0), None)
    """
    if metric in _RATE_METRICS or PASS_K.match(metric):
        return (0.0, 1.0)
    return None


def _is_rate(metric: str) -> bool:
    return metric_range(metric) == (0.0, 1.0)


def _fmt_bound(value: float, pct: bool) -> str:
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if pct:
        text = f"{value * 100:.2f}".rstrip("0").rstrip(".")
        return f"{text}%"
    return f"{value:.6g}"


def _fmt_range(low: float, high: float, pct: bool) -> str:
    return f"[{_fmt_bound(low, pct)}, {_fmt_bound(high, pct)})"


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{what} must be a number, got NaN")
    return out


@dataclass(frozen=True)
class Bucket:
    """One score range ``low <= value < high`` with a name.

    Two names are reserved: ``"Other (matched no rule)"`` (values that match no bucket)
    and ``"(excluded)"`` (rows whose metric is undefined, the summary's last row).

    Examples
    --------
    >>> Bucket("hard", 0, 0.25)
    Bucket(name='hard', low=0.0, high=0.25)
    >>> Bucket("hard", 0, 0.25).contains(0.25), Bucket("hard", 0, 0.25).contains(0.0)
    (False, True)
    """

    name: str
    low: float
    high: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a bucket needs a non-empty name, got {self.name!r}")
        if self.name == OTHER:
            raise ValueError(f"{OTHER!r} is reserved for values that match no rule")
        if self.name.strip() == EXCLUDED:
            raise ValueError(
                f"{EXCLUDED!r} is reserved for rows whose metric is undefined (the summary's "
                "last row); choose another bucket name"
            )
        object.__setattr__(self, "low", _number(self.low, f"bucket {self.name!r}: low"))
        object.__setattr__(self, "high", _number(self.high, f"bucket {self.name!r}: high"))

    def contains(self, value: float) -> bool:
        """Whether ``low <= value < high``."""
        return self.low <= value < self.high

    def range_text(self, pct: bool = False) -> str:
        """``"[0%, 25%)"`` (``pct=True``) or ``"[0, 0.25)"``."""
        return _fmt_range(self.low, self.high, pct)


def _as_bucket(item: Any, i: int) -> Bucket:
    if isinstance(item, Bucket):
        return item
    if isinstance(item, dict):
        missing = {"name", "low", "high"} - set(item)
        if missing:
            raise ValueError(f"bucket #{i + 1} is missing {sorted(missing)}: {item!r}")
        return Bucket(item["name"], item["low"], item["high"])
    if isinstance(item, list | tuple) and len(item) == 3:
        return Bucket(*item)
    raise TypeError(f"bucket #{i + 1} must be a Bucket, (name, low, high) or a dict, got {item!r}")


def _merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of half-open intervals as sorted disjoint intervals (empty ones dropped)."""
    out: list[tuple[float, float]] = []
    for low, high in sorted(iv for iv in intervals if iv[0] < iv[1]):
        if out and low <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


@dataclass(frozen=True, init=False)
class BucketRules:
    """An ordered rule set over one metric; first match from the top wins.

    Parameters
    ----------
    buckets
        ``Bucket`` objects, ``(name, low, high)`` tuples or ``{"name", "low", "high"}``
        dicts, in priority order.
    metric
        The column to bucket on. Per task (``level="task"``): ``"pass_rate"``
        (default), ``"pass@K"`` / ``"pass^K"``, ``"reward_mean"``, ``"composite"`` or
        any named score dimension (its per-task mean). Per attempt
        (``level="attempt"``): ``"reward"`` (default there), ``"composite"`` or a
        dimension.
    level
        ``"task"`` (one row per task) or ``"attempt"`` (one row per attempt).

    Examples
    --------
    >>> import pandas as pd
    >>> rules = BucketRules([Bucket("hard", 0, 0.25), Bucket("easy", 0.75, 1.01)])
    >>> frame = pd.DataFrame({"task": ["a", "b", "c", "d"], "pass_rate": [0.0, 0.5, 1.0, None]})
    >>> rules.apply(frame)["bucket"].tolist()
    ['hard', 'Other (matched no rule)', 'easy', None]
    >>> print(rules)
    BucketRules on pass_rate (per task), first match wins
      1  hard  [0%, 25%)
      2  easy  [75%, 101%)
         Other (matched no rule): everything else
    """

    buckets: tuple[Bucket, ...]
    metric: str
    level: Level

    def __init__(
        self,
        buckets: Iterable[Bucket | tuple[str, float, float] | dict[str, Any]],
        metric: str = "pass_rate",
        *,
        level: Level | str = "task",
    ) -> None:
        if isinstance(buckets, str | bytes | Bucket | dict):
            raise TypeError("buckets must be a list of buckets")
        object.__setattr__(self, "buckets", tuple(buckets))
        object.__setattr__(self, "metric", metric)
        object.__setattr__(self, "level", level)
        self.__post_init__()

    def __post_init__(self) -> None:
        items = tuple(_as_bucket(b, i) for i, b in enumerate(self.buckets))
        if not items:
            raise ValueError("a rule set needs at least one bucket")
        seen: set[str] = set()
        for b in items:
            if b.name in seen:
                raise ValueError(f"duplicate bucket name {b.name!r}: names must be unique")
            seen.add(b.name)
        object.__setattr__(self, "buckets", items)
        if self.level not in ("task", "attempt"):
            raise ValueError(f"level must be 'task' or 'attempt', got {self.level!r}")
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"metric must be a column name, got {self.metric!r}")
        if self.level == "attempt" and (self.metric == "pass_rate" or PASS_K.match(self.metric)):
            raise ValueError(
                f"{self.metric!r} is a per-task metric; per attempt use metric='reward', "
                "'composite' or a dimension name"
            )
        if self.level == "task" and self.metric == "reward":
            raise ValueError(
                "metric='reward' is per attempt: use level='attempt', or metric='reward_mean' "
                "for the per-task mean reward"
            )

    # -- description -------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Bucket names in priority order, then ``OTHER``."""
        return [b.name for b in self.buckets] + [OTHER]

    def direction(
        self, before: str, after: str, *, higher_is_better: bool = True
    ) -> Literal["better", "worse", "same", "unordered"]:
        """Whether a task moving from bucket ``before`` to ``after`` got better or worse.

        Buckets are ordered by the middle of their range on the metric (higher is better
        unless ``higher_is_better=False``, e.g. a lower-is-better dimension); the same
        bucket is ``"same"``; ``Other``, excluded or unknown names have no order
        (``"unordered"``).

        Examples
        --------
        >>> rules = BucketRules([("hard", 0, 0.25), ("medium", 0.25, 0.75), ("easy", 0.75, 1.01)])
        >>> rules.direction("hard", "easy"), rules.direction("easy", "medium")
        ('better', 'worse')
        >>> rules.direction("hard", "hard"), rules.direction("hard", OTHER)
        ('same', 'unordered')
        >>> rules.direction("hard", "easy", higher_is_better=False)
        'worse'
        """
        if before == after:
            return "same"
        middle = {b.name: (b.low + b.high) / 2 for b in self.buckets}
        if before not in middle or after not in middle or middle[before] == middle[after]:
            return "unordered"
        up = middle[after] > middle[before]
        return "better" if up == higher_is_better else "worse"

    @property
    def range(self) -> tuple[float, float] | None:
        """The metric's known range (``(0, 1)`` for rates) or ``None``."""
        return None if self.level == "attempt" else metric_range(self.metric)

    @property
    def _pct(self) -> bool:
        return self.range == (0.0, 1.0)

    def excluded_reason(self) -> str:
        """Why a row's metric can be undefined (for the summary)."""
        m = self.metric
        if self.level == "attempt":
            if m == "reward":
                return "no reward (attempt missing, pending or invalid)"
            return f"no {m} value on the attempt"
        if m == "pass_rate":
            return "pass rate undefined ('-'): not every attempt of the task scored"
        if PASS_K.match(m):
            return f"{m} undefined: fewer scored attempts than k, or non-binary rewards"
        if m == "reward_mean":
            return "no scored attempt"
        return f"no {m} value on any attempt of the task"

    def __str__(self) -> str:
        where = "per attempt" if self.level == "attempt" else "per task"
        width = max(len(b.name) for b in self.buckets)
        lines = [f"BucketRules on {self.metric} ({where}), first match wins"]
        for i, b in enumerate(self.buckets, 1):
            lines.append(f"  {i}  {b.name.ljust(width)}  {b.range_text(self._pct)}")
        lines.append(f"     {OTHER}: everything else")
        return "\n".join(lines)

    # -- warnings ------------------------------------------------------------------
    def warnings(self) -> list[str]:
        """Readable warnings about classic mistakes in this rule set.

        Checks: an upper bound equal to the metric's maximum (the maximum then falls
        into Other), overlaps (the later bucket is shadowed there), buckets that can
        never match (empty, fully shadowed, or outside the metric's range), and gaps.

        Examples
        --------
        >>> for w in BucketRules([Bucket("low", 0, 0.5), Bucket("high", 0.5, 1.0)]).warnings():
        ...     print(w)
        bucket 'high' [50%, 100%) excludes its upper bound 100%, the maximum of pass_rate: a value of exactly 100% matches no bucket and falls into 'Other (matched no rule)' (use a high bound above 100%, e.g. 1.01, to include it)
        """
        pct = self._pct
        rng = self.range
        out: list[str] = []

        def fmt(v: float) -> str:
            return _fmt_bound(v, pct)

        def rtext(b: Bucket) -> str:
            return b.range_text(pct)

        never: set[str] = set()
        for i, b in enumerate(self.buckets):
            label = f"bucket {b.name!r} {rtext(b)}"
            if b.low >= b.high:
                out.append(f"{label} can never match: its low bound is not below its high bound")
                never.add(b.name)
                continue
            if rng is not None and (b.low > rng[1] or b.high <= rng[0]):
                out.append(
                    f"{label} can never match: it lies outside the range of {self.metric} "
                    f"[{fmt(rng[0])}, {fmt(rng[1])}]"
                )
                never.add(b.name)
                continue
            earlier = [e for e in self.buckets[:i] if e.low < e.high]
            covered = _merge((e.low, e.high) for e in earlier)
            lo, hi = b.low, b.high
            if rng is not None:  # only the reachable part of the interval matters
                lo, hi = max(lo, rng[0]), min(hi, math.nextafter(rng[1], math.inf))
            if any(c_lo <= lo and hi <= c_hi for c_lo, c_hi in covered):
                shadows = ", ".join(repr(e.name) for e in earlier if e.low < hi and lo < e.high)
                out.append(
                    f"{label} can never match: it is fully shadowed by earlier bucket(s) "
                    f"{shadows} (first match wins)"
                )
                never.add(b.name)
                continue
            for e in earlier:
                o_lo, o_hi = max(b.low, e.low), min(b.high, e.high)
                if o_lo < o_hi:
                    out.append(
                        f"{label} overlaps bucket {e.name!r} {rtext(e)}: values in "
                        f"{_fmt_range(o_lo, o_hi, pct)} go to {e.name!r} (first match wins)"
                    )
        live = _merge((b.low, b.high) for b in self.buckets if b.name not in never)
        if rng is not None:
            top = rng[1]
            if not any(lo <= top < hi for lo, hi in live):
                at_max = [b for b in self.buckets if b.high == top]
                if at_max:
                    b = at_max[0]
                    out.append(
                        f"bucket {b.name!r} {rtext(b)} excludes its upper bound {fmt(top)}, "
                        f"the maximum of {self.metric}: a value of exactly {fmt(top)} matches "
                        f"no bucket and falls into {OTHER!r} (use a high bound above "
                        f"{fmt(top)}, e.g. {top + 0.01:g}, to include it)"
                    )
        gaps: list[tuple[float, float]] = []
        for (_, a_hi), (b_lo, _) in itertools.pairwise(live):
            gaps.append((a_hi, b_lo))
        if rng is not None and live:
            if live[0][0] > rng[0]:
                gaps.insert(0, (rng[0], min(live[0][0], rng[1])))
            if live[-1][1] < rng[1]:
                gaps.append((live[-1][1], rng[1]))
        for g_lo, g_hi in gaps:
            if rng is not None:
                g_lo, g_hi = max(g_lo, rng[0]), min(g_hi, rng[1])
            if g_lo < g_hi:
                out.append(
                    f"gap: values in {_fmt_range(g_lo, g_hi, pct)} match no bucket and go to "
                    f"{OTHER!r}"
                )
        return out

    # -- JSON ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``{"metric", "level", "buckets": [{"name", "low", "high"}]}``."""

        def enc(v: float) -> float | str:
            return ("inf" if v > 0 else "-inf") if math.isinf(v) else v

        return {
            "metric": self.metric,
            "level": self.level,
            "buckets": [
                {"name": b.name, "low": enc(b.low), "high": enc(b.high)} for b in self.buckets
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The rule set as JSON (infinite bounds as ``"inf"`` / ``"-inf"``).

        Examples
        --------
        >>> rules = BucketRules([Bucket("hard", 0, 0.25)], metric="pass@2")
        >>> BucketRules.from_json(rules.to_json()) == rules
        True
        """
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BucketRules:
        """The inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or "buckets" not in data:
            raise ValueError(f"expected an object with 'buckets', got {data!r}")

        def dec(v: Any, what: str) -> Any:
            if v in ("inf", "+inf", "Infinity"):
                return math.inf
            if v in ("-inf", "-Infinity"):
                return -math.inf
            return v

        buckets = []
        for i, b in enumerate(data["buckets"]):
            if not isinstance(b, dict):
                raise ValueError(f"bucket #{i + 1} must be an object, got {b!r}")
            buckets.append({**b, **{k: dec(b[k], k) for k in ("low", "high") if k in b}})
        return cls(
            tuple(_as_bucket(b, i) for i, b in enumerate(buckets)),
            data.get("metric", "pass_rate"),
            level=data.get("level", "task"),
        )

    @classmethod
    def from_json(cls, text: str) -> BucketRules:
        """Read a rule set saved with :meth:`to_json`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"rule set is not valid JSON: {err}") from None
        return cls.from_dict(data)

    # -- applying ------------------------------------------------------------------
    def _codes(self, values: np.ndarray) -> np.ndarray:
        """Bucket index per value: 0..len-1, len for Other, -1 for undefined."""
        values = np.asarray(values, dtype=np.float64)
        undefined = np.isnan(values)
        codes = np.full(values.shape, len(self.buckets), dtype=np.int64)
        codes[undefined] = -1
        free = ~undefined
        for i, b in enumerate(self.buckets):
            with np.errstate(invalid="ignore"):
                hit = free & (values >= b.low) & (values < b.high)
            codes[hit] = i
            free &= ~hit
        return codes

    def _column(self, frame: Any) -> str:
        cols = list(frame.columns)
        if self.metric not in cols:
            raise KeyError(f"the frame has no column {self.metric!r} to bucket on; columns: {cols}")
        return self.metric

    def apply(self, frame: Any) -> Any:
        """A new frame with a ``bucket`` column (null where the metric is undefined).

        Works on pandas and polars frames and returns the same kind; the input frame is
        never changed.
        """
        col = self._column(frame)
        if _is_polars(frame):
            return frame.with_columns(self.polars_expr(col).alias("bucket"))
        codes = self._codes(_pandas_values(frame, col))
        import pandas as pd

        labels = np.array([*self.names, None], dtype=object)  # code -1 picks None
        out = frame.copy()
        out["bucket"] = pd.Series(labels[codes], index=frame.index, dtype=object)
        return out

    def polars_expr(self, column: str | None = None) -> Any:
        """A polars expression giving the bucket of ``column`` (first match wins)."""
        import polars as pl

        c = pl.col(column or self.metric).cast(pl.Float64)
        expr: Any = pl.when(c.is_null() | c.is_nan()).then(pl.lit(None, dtype=pl.String))
        for b in self.buckets:
            expr = expr.when((c >= b.low) & (c < b.high)).then(pl.lit(b.name))
        return expr.otherwise(pl.lit(OTHER))

    def sql_case(self, column: str) -> str:
        """A DuckDB ``CASE`` expression giving the bucket of ``column`` (SQL, not a name).

        Bucket names and bounds are data: they enter the SQL only through
        :mod:`envloop_nb._store.sql` (any name is kept exactly, quotes included).
        """
        parts = [f"CASE WHEN {column} IS NULL OR isnan({column}::DOUBLE) THEN NULL"]
        for b in self.buckets:
            cond = f"{column} >= {_sql_num(b.low)} AND {column} < {_sql_num(b.high)}"
            parts.append(f"WHEN {cond} THEN {literal(b.name)}")
        parts.append(f"ELSE {literal(OTHER)} END")
        return " ".join(parts)

    def summary(self, frame: Any) -> Any:
        """Counts and shares per bucket (rule order, then Other, then the excluded row).

        Columns: ``bucket, range, count, share, note``. ``share`` is the part of the
        bucketed rows (excluded rows take part in no bucket); the last row,
        ``"(excluded)"``, counts rows whose metric is undefined and says why.
        Same frame kind as the input.

        Examples
        --------
        >>> import pandas as pd
        >>> rules = BucketRules([Bucket("hard", 0, 0.5), Bucket("easy", 0.5, 1.01)])
        >>> s = rules.summary(pd.DataFrame({"pass_rate": [0.0, 0.25, 1.0, None]}))
        >>> s[["bucket", "count"]].values.tolist()
        [['hard', 2], ['easy', 1], ['Other (matched no rule)', 0], ['(excluded)', 1]]
        """
        col = self._column(frame)
        if _is_polars(frame):
            values = frame.get_column(col).cast(float).fill_null(np.nan).to_numpy()
        else:
            values = _pandas_values(frame, col)
        return self._summary_from_codes(self._codes(values), polars=_is_polars(frame))

    def _counts(self, codes: np.ndarray) -> tuple[list[int], int]:
        counts = np.bincount(codes[codes >= 0], minlength=len(self.buckets) + 1)
        return [int(c) for c in counts], int((codes < 0).sum())

    def _summary_from_codes(self, codes: np.ndarray, *, polars: bool) -> Any:
        counts, excluded = self._counts(codes)
        return _summary_table(self, counts, excluded, polars=polars)


def _summary_table(rules: BucketRules, counts: list[int], excluded: int, *, polars: bool) -> Any:
    bucketed = sum(counts)
    pct = rules._pct
    data = {
        "bucket": [*rules.names, EXCLUDED],
        "range": [b.range_text(pct) for b in rules.buckets] + ["everything else", "-"],
        "count": [*counts, excluded],
        "share": [c / bucketed if bucketed else None for c in counts] + [None],
        "note": [""] * len(counts) + [rules.excluded_reason() if excluded else ""],
    }
    if polars:
        import polars as pl

        return pl.DataFrame(data, schema_overrides={"share": pl.Float64})
    import pandas as pd

    out = pd.DataFrame(data)
    out["share"] = out["share"].astype("float64")
    return out


def _pandas_values(frame: Any, col: str) -> np.ndarray:
    import pandas as pd

    series = frame[col]
    if not (pd.api.types.is_numeric_dtype(series) or series.isna().all()):
        raise TypeError(f"column {col!r} must be numeric to bucket on, got dtype {series.dtype}")
    return np.asarray(series.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def _is_polars(frame: Any) -> bool:
    return type(frame).__module__.split(".")[0] == "polars"


def _sql_num(v: float) -> str:
    """A bucket bound: a finite number, or an open end (infinity)."""
    if math.isinf(v):
        return "'infinity'::DOUBLE" if v > 0 else "'-infinity'::DOUBLE"
    return number(float(v))


def parse_names(rules: BucketRules, buckets: Sequence[str] | str | None) -> list[str] | None:
    """Validate chosen bucket names against ``rules`` (``None`` = all)."""
    if buckets is None:
        return None
    chosen = [buckets] if isinstance(buckets, str) else list(buckets)
    unknown = [b for b in chosen if b not in rules.names]
    if unknown:
        raise ValueError(f"unknown bucket(s) {unknown}; this rule set has {rules.names}")
    if not chosen:
        raise ValueError("buckets=[] selects nothing; pass None to export every bucket")
    return chosen
