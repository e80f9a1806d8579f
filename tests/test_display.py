"""The one number formatter (issue 37): rates, points, intervals, counts, durations,
timestamps and headers, as every panel, report and workbook shows them."""

from __future__ import annotations

import datetime as dt
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from envloop_nb._present.display import (
    MINUS,
    format_duration,
    format_int,
    format_interval,
    format_metric,
    format_number,
    format_pct,
    format_points,
    format_signed,
    format_timestamp,
    header,
    shorten,
)

finite = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False)


def _number(text: str) -> float:
    return float(text.replace(MINUS, "-").removesuffix(" pts").removesuffix("%"))


def test_rates_have_one_decimal() -> None:
    """A panel showed ``61%``, ``52.3%`` and ``44%`` side by side."""
    assert [format_pct(v) for v in (0.61, 0.523, 0.44, 1.0, 0.0)] == [
        "61.0%", "52.3%", "44.0%", "100.0%", "0.0%"]  # fmt: skip
    assert format_pct(None) == "-" and format_pct(float("nan")) == "-"


def test_interval_in_points_with_a_real_minus() -> None:
    """A negative bound printed as a raw fraction (``-0.009804``) beside ``8.3%``."""
    assert format_interval(0.021, -0.009, 0.05) == "+2.1 pts [−0.9, +5.0]"
    assert format_points(-0.1125) == "−11.2 pts" and "-" not in format_points(-0.5)


@settings(deadline=None, max_examples=300)
@given(finite)
def test_signed_value_reads_back_and_its_sign_agrees(value: float) -> None:
    text = format_signed(value)
    assert "-" not in text  # the minus is U+2212
    shown = _number(text)
    assert math.isclose(shown, round(value * 100, 1), abs_tol=0.051)
    if shown == 0:
        assert text == "0.0"  # a rounded zero has no sign
    else:
        assert text[0] == ("+" if value > 0 else MINUS)


@settings(deadline=None, max_examples=300)
@given(finite, finite, finite)
def test_interval_keeps_estimate_and_bounds(estimate: float, low: float, high: float) -> None:
    text = format_interval(estimate, low, high)
    head, bounds = text.split(" [")
    assert head == format_points(estimate)
    assert bounds.removesuffix("]").split(", ") == [format_signed(low), format_signed(high)]


@settings(deadline=None, max_examples=200)
@given(st.floats(min_value=0, max_value=1))
def test_rate_rounds_to_one_decimal(value: float) -> None:
    text = format_pct(value)
    assert text.endswith("%") and len(text.split(".")[1]) == 2  # one digit, then "%"
    assert abs(_number(text) - value * 100) <= 0.05 + 1e-9


@settings(deadline=None)
@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_counts_have_thousands_separators(n: int) -> None:
    text = format_int(n)
    assert int(text.replace(",", "").replace(MINUS, "-")) == n
    assert all(len(g) == 3 for g in text.lstrip(MINUS).split(",")[1:])


def test_durations_and_timestamps() -> None:
    """Timestamps showed microseconds; durations raw seconds under ``duration_s``."""
    assert format_duration(3.25) == "3.2 s" and format_duration(61) == "1 min 01 s"
    assert format_timestamp(dt.datetime(2026, 1, 2, 3, 4, 5, 678901)) == "2026-01-02 03:04:05"
    assert "." not in format_timestamp("2026-01-02T03:04:05.678901+00:00")


def test_headers_are_for_people() -> None:
    """``complete_members`` and ``duration_s`` were table headers."""
    for name in ("complete_members", "duration_s", "score_low", "mcnemar_p", "tokens_in"):
        assert "_" not in header(name)
    assert header("pass@4") == "pass@4"


def test_shorten_cuts_at_a_word() -> None:
    assert shorten("The test fails. Fix src/parser.py so that it passes.", 40) == (
        "The test fails. Fix src/parser.py so…"
    )
    assert shorten("a b", 10) == "a b"


def test_large_numbers_on_their_own_scale_never_in_exponent_form() -> None:
    """A Pythia checkpoint's lambada perplexity (302,655) printed ``3.027e+05`` and a change
    of it ``-5.028e+04 [-7.053e+04, -3.004e+04]`` in the run report."""
    assert format_metric(302655.4) == "302,655"
    assert format_signed(-50284.3, percent=False) == f"{MINUS}50,284"
    assert format_interval(-50284.3, -70527.0, -30041.0, percent=False) == (
        f"{MINUS}50,284 [{MINUS}70,527, {MINUS}30,041]"
    )
    assert format_number(9999.6) == "10,000" and format_number(1234.56) == "1,235"
    assert format_number(39.4912) == "39.49" and format_signed(448.2, percent=False) == "+448"


@settings(deadline=None)
@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_format_number_reads_back_close_and_has_no_exponent_above_one(value: float) -> None:
    text = format_number(value)
    if abs(value) >= 1:
        assert "e" not in text
    back = float(text.replace(MINUS, "-").replace(",", ""))
    assert math.isclose(back, value, rel_tol=1e-3, abs_tol=1e-9)
