"""How numbers are shown — the one formatter every panel, report and workbook uses.

Rates in [0, 1] as percentages with one decimal (``61.0%``), differences of rates in
points (``+2.1 pts``), intervals with their estimate (``+2.1 pts [−0.9, +5.0]``), counts
with thousands separators, durations in s / min / h, timestamps to the second. A negative
number is written with a real minus sign (``−``, U+2212); a value that rounds to zero
carries no sign. ``"-"`` stands for a value that is missing (never 0).

Column names become the headers people read through :func:`header` (one mapping,
:data:`HEADERS`; an unknown name loses its underscores).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = [
    "HEADERS",
    "MINUS",
    "format_count",
    "format_duration",
    "format_int",
    "format_interval",
    "format_metric",
    "format_number",
    "format_pct",
    "format_points",
    "format_score",
    "format_signed",
    "format_timestamp",
    "header",
    "is_missing",
    "shorten",
    "shorten_middle",
]

#: The minus sign numbers are written with.
MINUS = "\u2212"


def is_missing(value: Any) -> bool:
    """None, NaN, NA or an infinite float: a value that cannot be shown as a number."""
    if value is None:
        return True
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return True


def _fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, a real minus, no sign on a rounded zero."""
    text = f"{value:.{digits}f}"
    if text.startswith("-"):
        text = text[1:]
        if text.strip("0.") == "":
            return text
        return MINUS + text
    return text


def format_pct(value: float | None, digits: int = 1, *, trim: bool = False) -> str:
    """A rate in [0, 1] as a percentage with ``digits`` decimals; ``"-"`` when undefined.

    Examples
    --------
    >>> format_pct(0.75), format_pct(1), format_pct(2 / 3), format_pct(None)
    ('75.0%', '100.0%', '66.7%', '-')
    >>> format_pct(0.6, trim=True), format_pct(-0.05)
    ('60%', '−5.0%')
    """
    if is_missing(value):
        return "-"
    assert value is not None
    text = _fixed(float(value) * 100, digits)
    if trim and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "%"


def format_number(value: float | None, digits: int = 4, *, signed: bool = False) -> str:
    """A number on its own scale to ``digits`` significant digits, never in exponent form
    above 1: from ``10**digits`` on, a whole number with thousands separators (a perplexity
    of 302,655 reads so, not ``3.027e+05``); ``signed``: a ``+`` on a positive value.

    Examples
    --------
    >>> format_number(7.25), format_number(302655.4), format_number(-50280.2, signed=True)
    ('7.25', '302,655', '−50,280')
    >>> format_number(448.2, 3, signed=True), format_number(0.000012), format_number(None)
    ('+448', '1.2e-05', '-')
    """
    if is_missing(value):
        return "-"
    assert value is not None
    number = float(value)
    if abs(number) >= 10**digits:
        text = f"{round(number):,}"
    else:
        text = f"{number:,.{digits}g}"
        if "e+" in text:  # 1000 <= |x| < 10**digits rounding up to 10**digits
            text = f"{round(number):,}"
    if text.startswith("-"):
        text = MINUS + text[1:]
    zero = text.lstrip(MINUS).strip("0.") == ""
    if signed and not zero and not text.startswith(MINUS):
        text = "+" + text
    return text


def format_metric(value: float | None, digits: int = 1, *, trim: bool = False) -> str:
    """A metric: percentage when it lies in [0, 1], else its own scale (``trim``: no
    trailing zeros, for a sentence that shows a value to ``digits`` at most).

    Examples
    --------
    >>> format_metric(0.5), format_metric(7.25), format_metric(-0.2), format_metric(None)
    ('50.0%', '7.25', '−0.2', '-')
    """
    if is_missing(value):
        return "-"
    assert value is not None
    if 0.0 <= value <= 1.0:
        return format_pct(value, digits, trim=trim)
    return format_number(value)


def format_signed(value: float | None, digits: int = 1, *, percent: bool = True) -> str:
    """A difference with its sign: in points (``value`` × 100) when ``percent``, else on
    its own scale (3 significant digits); no sign when it rounds to zero.

    Examples
    --------
    >>> format_signed(0.021), format_signed(-0.009), format_signed(0.0004), format_signed(None)
    ('+2.1', '−0.9', '0.0', '-')
    >>> format_signed(-1.25, percent=False)
    '−1.25'
    """
    if is_missing(value):
        return "-"
    assert value is not None
    if not percent:
        return format_number(value, 3, signed=True)
    text = _fixed(float(value) * 100, digits)
    zero = text.lstrip(MINUS).strip("0.") == ""
    return text if zero or text.startswith(MINUS) else "+" + text


def format_points(value: float | None, digits: int = 1, *, percent: bool = True) -> str:
    """A difference of rates in percentage points (``+2.1 pts``); on its own scale when
    not ``percent``.

    Examples
    --------
    >>> format_points(0.021), format_points(-0.1125), format_points(0.5, percent=False)
    ('+2.1 pts', '−11.2 pts', '+0.5')
    """
    text = format_signed(value, digits, percent=percent)
    return f"{text} pts" if percent and text != "-" else text


def format_interval(
    estimate: float | None,
    low: float | None,
    high: float | None,
    *,
    digits: int = 1,
    percent: bool = True,
) -> str:
    """An estimate with its interval: ``+2.1 pts [−0.9, +5.0]``.

    Examples
    --------
    >>> format_interval(0.021, -0.009804, 0.05)
    '+2.1 pts [−1.0, +5.0]'
    >>> format_interval(None, None, None)
    '-'
    """
    if is_missing(estimate):
        return "-"
    bounds = ", ".join(format_signed(v, digits, percent=percent) for v in (low, high))
    return f"{format_points(estimate, digits, percent=percent)} [{bounds}]"


def format_int(value: Any) -> str:
    """A count with thousands separators; ``"-"`` when missing.

    Examples
    --------
    >>> format_int(1234567), format_int(None), format_int(3.0)
    ('1,234,567', '-', '3')
    """
    if is_missing(value):
        return "-"
    return f"{int(value):,}".replace("-", MINUS)


def format_count(part: int | None, whole: int) -> str:
    """``"5/6"`` with thousands separators; ``"?/6"`` when the part is unknown.

    Examples
    --------
    >>> format_count(1234, 5000), format_count(None, 6)
    ('1,234/5,000', '?/6')
    """
    return f"{'?' if part is None else format(part, ',')}/{whole:,}"


def format_duration(seconds: float | None) -> str:
    """A duration: ``0.42 s``, ``12.3 s``, ``4 min 05 s``, ``2 h 03 min``.

    Examples
    --------
    >>> format_duration(0.42), format_duration(12.34), format_duration(245), format_duration(7390)
    ('0.42 s', '12.3 s', '4 min 05 s', '2 h 03 min')
    >>> format_duration(None)
    '-'
    """
    if is_missing(seconds):
        return "-"
    assert seconds is not None
    s = float(seconds)
    if s < 0:
        return MINUS + format_duration(-s)
    if s < 1:
        return f"{s:.2f} s"
    if s < 60:
        return f"{s:.1f} s"
    whole = round(s)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def format_timestamp(value: Any) -> str:
    """A point in time to the second (no microseconds), ``T`` as a space, with ``UTC``
    when it is a UTC time; ``"-"`` when missing.

    Examples
    --------
    >>> format_timestamp(dt.datetime(2026, 11, 30, 16, 0, 5, 123456))
    '2026-11-30 16:00:05'
    >>> format_timestamp(dt.datetime(2026, 11, 30, 16, 0, tzinfo=dt.UTC))
    '2026-11-30 16:00:00 UTC'
    >>> format_timestamp("2026-11-30T16:00:05.123456+00:00"), format_timestamp(None)
    ('2026-11-30 16:00:05 UTC', '-')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if hasattr(value, "to_pydatetime"):  # a pandas Timestamp
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        offset = value.utcoffset()
        if offset is not None:
            text += " UTC" if offset == dt.timedelta(0) else value.strftime(" %z")
        return text
    return str(value)


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


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters: cut at a word boundary with
    ``…`` when longer (mid-word only when the first word alone is longer).

    Examples
    --------
    >>> shorten("Fix src/parser.py so that it passes.", 30)
    'Fix src/parser.py so that it…'
    >>> shorten("short  text", 30), shorten("abcdefghij", 5)
    ('short text', 'abcd…')
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space > 0:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


def shorten_middle(text: str, limit: int, *, tail: int | None = None) -> str:
    """``text`` at most ``limit`` characters, its middle replaced by ``…``: names that
    share a long prefix stay apart by their ends (``tail`` characters kept at the end,
    by default nearly two thirds).

    Examples
    --------
    >>> shorten_middle("inspect:capitals:mockllm/ckpt-a:GZykN69u", 26)
    'inspect:…m/ckpt-a:GZykN69u'
    >>> shorten_middle("job_base", 26)
    'job_base'
    """
    if len(text) <= limit:
        return text
    keep = limit - 1
    end = min(tail if tail is not None else (keep * 2 + 2) // 3, keep)
    return text[: keep - end] + "…" + text[len(text) - end :]


#: Column names and the headers people read (tables in panels, reports and workbooks).
HEADERS: dict[str, str] = {
    "job": "Job",
    "job_id": "Job",
    "rank": "#",
    "model": "Model",
    "status": "Status",
    "score": "Score",
    "pass": "Pass rate",
    "pass_rate": "Pass rate",
    "scored": "Scored",
    "missing": "Missing",
    "total": "Attempts",
    "n": "Attempts",
    "tasks": "Tasks",
    "n_tasks": "Tasks",
    "complete_members": "Complete tasks",
    "total_members": "Tasks",
    "coverage": "Coverage",
    "warning": "Warnings",
    "baseline": "Baseline",
    "shared_complete": "Shared complete tasks",
    "tasks_union": "Tasks in either",
    "shared_share": "Shared share",
    "score_base": "Baseline score",
    "score_job": "Job score",
    "score_diff": "Δ score",
    "score_low": "Δ score low",
    "score_high": "Δ score high",
    "pass_diff": "Δ pass rate",
    "pass_low": "Δ pass low",
    "pass_high": "Δ pass high",
    "fixed": "Fixed",
    "broken": "Broken",
    "mcnemar_p": "McNemar p",
    "p": "p",
    "p_holm": "p (Holm)",
    "p_bh": "p (BH)",
    "p_adjusted": "p adjusted",
    "verdict": "Verdict",
    "note": "Note",
    "sentence": "Finding",
    "task": "Task",
    "attempt": "Attempt",
    "subset": "Subset",
    "reward": "Reward",
    "error": "Error",
    "input": "Input",
    "output": "Output",
    "duration_s": "Duration",
    "started_at": "Started",
    "finished_at": "Finished",
    "created_at": "Created",
    "loaded_at": "Loaded",
    "tokens_in": "Input tokens",
    "tokens_out": "Output tokens",
    "tokens_cached": "Cached tokens",
    "cost_usd": "Cost (USD)",
    "bad_cases": "Bad cases",
    "dimension": "Dimension",
    "value": "Value",
    "estimate": "Estimate",
    "low": "Low",
    "high": "High",
    "gap": "Gap",
    "group": "Group",
    "kind": "Kind",
    "transition": "Transition",
    "count": "Count",
    "share": "Share",
}


def header(name: Any) -> str:
    """The header people read for a column name: :data:`HEADERS`, else the name with its
    underscores as spaces and a capital first letter when it starts with a lower-case
    word (``pass@4`` and ``GPT-4`` stay as they are).

    Examples
    --------
    >>> header("complete_members"), header("duration_s"), header("pass@4"), header("tool_calls")
    ('Complete tasks', 'Duration', 'pass@4', 'Tool calls')
    >>> header("dispatched"), header("step 2"), header("GPT-4")
    ('Dispatched', 'Step 2', 'GPT-4')
    """
    text = str(name)
    if text in HEADERS:
        return HEADERS[text]
    words = text.replace("_", " ").strip()
    first = words.split(" ", 1)[0]
    if not (first.isascii() and first.isalpha() and first.islower()):
        return words
    return words[:1].upper() + words[1:]
