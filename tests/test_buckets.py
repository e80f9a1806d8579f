"""Hard-case bucket rules: every rule of issue 7, boundaries included."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envloop_nb as enb
from envloop_nb import Bucket, BucketRules
from envloop_nb._buckets.rules import OTHER

from .conftest import SAMPLE_DATA, THREE_TASKS

RULES = BucketRules(
    [Bucket("hard", 0, 0.25), Bucket("medium", 0.25, 0.75), Bucket("easy", 0.75, 1.01)]
)


def _frame(kind: str, values: list[float | None]) -> pd.DataFrame | pl.DataFrame:
    data = {"task": [f"t{i}" for i in range(len(values))], "pass_rate": values}
    if kind == "polars":
        return pl.DataFrame(data, schema={"task": pl.String, "pass_rate": pl.Float64})
    return pd.DataFrame(data).astype({"pass_rate": "float64"})


def _buckets(frame: pd.DataFrame | pl.DataFrame) -> list[str | None]:
    col = frame["bucket"]
    return list(col.to_list() if isinstance(frame, pl.DataFrame) else col.tolist())


# -- the interval rule ------------------------------------------------------------------


def test_low_is_in_high_is_out(frame_kind: str) -> None:
    rules = BucketRules([Bucket("a", 0.25, 0.5)])
    out = rules.apply(_frame(frame_kind, [0.25, 0.5, 0.4999, 0.2499]))
    assert _buckets(out) == ["a", OTHER, "a", OTHER]


def test_first_match_wins(frame_kind: str) -> None:
    rules = BucketRules([Bucket("first", 0, 0.6), Bucket("second", 0.4, 1.01)])
    out = rules.apply(_frame(frame_kind, [0.5, 0.4, 0.6, 0.39]))
    assert _buckets(out) == ["first", "first", "second", "first"]


def test_unmatched_goes_to_other(frame_kind: str) -> None:
    rules = BucketRules([Bucket("low", 0, 0.2)])
    out = rules.apply(_frame(frame_kind, [0.1, 0.2, 1.0]))
    assert _buckets(out) == ["low", OTHER, OTHER]
    assert OTHER == "Other (matched no rule)"


def test_undefined_is_in_no_bucket_not_even_other(frame_kind: str) -> None:
    frame = _frame(frame_kind, [None, 0.0, None, 1.0])
    out = RULES.apply(frame)
    assert _buckets(out) == [None, "hard", None, "easy"]
    summary = RULES.summary(frame)
    rows = dict(zip(summary["bucket"].to_list(), summary["count"].to_list(), strict=True))
    assert rows == {"hard": 1, "medium": 0, "easy": 1, OTHER: 0, "(excluded)": 2}
    note = summary["note"].to_list()[-1]
    assert "not every attempt" in note


def test_nan_in_pandas_counts_as_undefined() -> None:
    frame = pd.DataFrame({"pass_rate": [np.nan, 0.1]})
    assert _buckets(RULES.apply(frame)) == [None, "hard"]


def test_summary_counts_and_shares(frame_kind: str) -> None:
    frame = _frame(frame_kind, [0.0, 0.1, 0.5, 1.0, None])
    s = RULES.summary(frame)
    assert s["bucket"].to_list() == ["hard", "medium", "easy", OTHER, "(excluded)"]
    assert s["count"].to_list() == [2, 1, 1, 0, 1]
    shares = s["share"].to_list()
    assert shares[:4] == [0.5, 0.25, 0.25, 0.0]
    assert shares[4] is None or math.isnan(shares[4])
    assert s["range"].to_list()[:3] == ["[0%, 25%)", "[25%, 75%)", "[75%, 101%)"]
    assert type(s).__module__.split(".")[0] == frame_kind


def test_apply_never_mutates_and_returns_same_kind(frame_kind: str) -> None:
    frame = _frame(frame_kind, [0.0, 0.5, None])
    before = frame.clone() if isinstance(frame, pl.DataFrame) else frame.copy(deep=True)
    out = RULES.apply(frame)
    assert "bucket" not in frame.columns
    assert out is not frame
    assert type(out) is type(frame)
    if isinstance(frame, pl.DataFrame):
        assert frame.equals(before)
    else:
        pd.testing.assert_frame_equal(frame, before)
    assert list(out.columns) == [*frame.columns, "bucket"]


def test_missing_or_non_numeric_column() -> None:
    with pytest.raises(KeyError, match="no column 'pass_rate'"):
        RULES.apply(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(TypeError, match="must be numeric"):
        RULES.apply(pd.DataFrame({"pass_rate": ["0.5"]}))


def test_infinite_bounds() -> None:
    rules = BucketRules(
        [Bucket("neg", -math.inf, 0), Bucket("pos", 0, math.inf)], "reward", level="attempt"
    )
    out = rules.apply(pd.DataFrame({"reward": [-5.0, 0.0, 7.5]}))
    assert _buckets(out) == ["neg", "pos", "pos"]
    assert rules.warnings() == []


# -- warnings -------------------------------------------------------------------------


def test_no_warnings_for_a_clean_rule_set() -> None:
    assert RULES.warnings() == []


def test_warns_when_upper_bound_is_the_maximum() -> None:
    rules = BucketRules([Bucket("low", 0, 0.5), Bucket("high", 0.5, 1.0)])
    (w,) = rules.warnings()
    assert "'high'" in w and "exactly 100%" in w and OTHER in w
    # and it is true: 1.0 falls into Other
    assert _buckets(rules.apply(pd.DataFrame({"pass_rate": [1.0]}))) == [OTHER]


def test_no_max_warning_when_a_later_bucket_covers_the_maximum() -> None:
    rules = BucketRules([Bucket("low", 0, 1.0), Bucket("perfect", 1.0, 1.5)])
    assert rules.warnings() == []


def test_warns_on_overlap_with_the_shadowed_range() -> None:
    rules = BucketRules([Bucket("a", 0, 0.6), Bucket("b", 0.4, 1.01)])
    (w,) = rules.warnings()
    assert "'b'" in w and "overlaps" in w and "[40%, 60%)" in w and "go to 'a'" in w


def test_warns_on_empty_bucket() -> None:
    rules = BucketRules([Bucket("all", 0, 1.01), Bucket("empty", 0.5, 0.5)])
    (w,) = rules.warnings()
    assert "'empty'" in w and "never match" in w and "not below" in w


def test_warns_on_fully_shadowed_bucket() -> None:
    rules = BucketRules(
        [Bucket("wide", 0, 0.8), Bucket("inner", 0.2, 0.4), Bucket("top", 0.8, 1.01)]
    )
    (w,) = rules.warnings()
    assert "'inner'" in w and "fully shadowed" in w and "'wide'" in w


def test_warns_on_shadow_by_several_earlier_buckets() -> None:
    rules = BucketRules([Bucket("a", 0, 0.5), Bucket("b", 0.5, 1.01), Bucket("c", 0.3, 0.7)])
    (w,) = rules.warnings()
    assert "'c'" in w and "fully shadowed" in w


def test_warns_on_bucket_outside_metric_range() -> None:
    rules = BucketRules([Bucket("all", 0, 1.01), Bucket("over", 1.5, 2)])
    (w,) = rules.warnings()
    assert "'over'" in w and "outside the range" in w


def test_warns_on_gaps() -> None:
    rules = BucketRules([Bucket("low", 0.1, 0.3), Bucket("high", 0.5, 1.01)])
    ws = rules.warnings()
    assert any("gap" in w and "[0%, 10%)" in w for w in ws)
    assert any("gap" in w and "[30%, 50%)" in w for w in ws)
    assert len(ws) == 2


def test_gap_on_unknown_scale_only_between_buckets() -> None:
    rules = BucketRules([Bucket("low", 0, 1), Bucket("high", 2, 3)], metric="reward_mean")
    (w,) = rules.warnings()
    assert "gap" in w and "[1, 2)" in w


# -- plain data -----------------------------------------------------------------------


def test_json_round_trip() -> None:
    rules = BucketRules(
        [Bucket("never", -math.inf, 0.01), Bucket("rest", 0.01, math.inf)], metric="pass@2"
    )
    text = rules.to_json()
    assert "Infinity" not in text  # strict JSON
    back = BucketRules.from_json(text)
    assert back == rules
    assert back.metric == "pass@2" and back.level == "task"
    attempt = BucketRules([Bucket("lo", 0, 0.5)], metric="reward", level="attempt")
    assert BucketRules.from_json(attempt.to_json()) == attempt


def test_from_json_errors() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        BucketRules.from_json("{nope")
    with pytest.raises(ValueError, match="'buckets'"):
        BucketRules.from_json('{"metric": "pass_rate"}')
    with pytest.raises(ValueError, match="missing"):
        BucketRules.from_json('{"buckets": [{"name": "a", "low": 0}]}')


def test_prints_readably() -> None:
    text = str(RULES)
    assert text.splitlines() == [
        "BucketRules on pass_rate (per task), first match wins",
        "  1  hard    [0%, 25%)",
        "  2  medium  [25%, 75%)",
        "  3  easy    [75%, 101%)",
        "     Other (matched no rule): everything else",
    ]
    other = BucketRules([Bucket("low", 0, 0.5)], metric="reward_mean")
    assert "[0, 0.5)" in str(other)


def test_validation_errors() -> None:
    with pytest.raises(ValueError, match="non-empty name"):
        Bucket("", 0, 1)
    with pytest.raises(ValueError, match="non-empty name"):
        Bucket("  ", 0, 1)
    with pytest.raises(TypeError, match="low must be a number, got str"):
        Bucket("a", "0", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="high must be a number, got NoneType"):
        Bucket("a", 0, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a number"):
        Bucket("a", True, 1)
    with pytest.raises(ValueError, match="NaN"):
        Bucket("a", math.nan, 1)
    with pytest.raises(ValueError, match="reserved"):
        Bucket(OTHER, 0, 1)
    with pytest.raises(ValueError, match="duplicate bucket name 'a'"):
        BucketRules([Bucket("a", 0, 0.5), Bucket("a", 0.5, 1)])
    with pytest.raises(ValueError, match="at least one"):
        BucketRules([])
    with pytest.raises(ValueError, match="level"):
        BucketRules([Bucket("a", 0, 1)], level="job")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="per-task metric"):
        BucketRules([Bucket("a", 0, 1)], "pass_rate", level="attempt")
    with pytest.raises(ValueError, match="reward_mean"):
        BucketRules([Bucket("a", 0, 1)], "reward")


def test_accepts_tuples_and_dicts_and_is_frozen() -> None:
    rules = BucketRules([("a", 0, 0.5), {"name": "b", "low": 0.5, "high": 1.01}])
    assert rules.buckets == (Bucket("a", 0, 0.5), Bucket("b", 0.5, 1.01))
    with pytest.raises(AttributeError):
        rules.metric = "x"  # type: ignore[misc]


# -- property: first containing bucket, against brute force ---------------------------

bounds = st.floats(min_value=-0.5, max_value=1.5, allow_nan=False) | st.sampled_from(
    [0.0, 0.25, 0.5, 1.0, -math.inf, math.inf]
)
values = st.lists(
    st.none() | st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(-1, 2, allow_nan=False),
    max_size=40,
)


def _brute(buckets: list[Bucket], value: float | None) -> str | None:
    if value is None:
        return None
    for b in buckets:
        if b.low <= value < b.high:
            return b.name
    return OTHER


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(bounds, bounds), min_size=1, max_size=6),
    values,
)
def test_property_first_containing_bucket(pairs: list[tuple[float, float]], vals: list) -> None:
    buckets = [Bucket(f"b{i}", lo, hi) for i, (lo, hi) in enumerate(pairs)]
    rules = BucketRules(buckets)
    expected = [_brute(buckets, v) for v in vals]
    for kind in ("pandas", "polars"):
        assert _buckets(rules.apply(_frame(kind, vals))) == expected
    # the DuckDB CASE agrees too
    con = duckdb.connect()
    got = [
        r[0]
        for r in con.execute(
            f"SELECT {rules.sql_case('v')} FROM (SELECT unnest($vals::DOUBLE[]) AS v, "
            "generate_subscripts($vals::DOUBLE[], 1) AS i) ORDER BY i",
            {"vals": vals},
        ).fetchall()
    ]
    assert got == expected
    counts = rules.summary(_frame("pandas", vals))
    assert counts["count"].sum() == len(vals)
    rules.warnings()  # never raises


# -- on jobs ---------------------------------------------------------------------------


@pytest.fixture
def base(ws: enb.Workspace) -> enb.Job:
    return ws.load(SAMPLE_DATA / "base.json")


def test_job_buckets_match_samples(base: enb.Job, frame_kind: str) -> None:
    result = base.buckets(RULES, frame=frame_kind)
    samples = base.samples()
    expected = [
        _brute(list(RULES.buckets), None if pd.isna(v) else v) for v in samples["pass_rate"]
    ]
    assert _buckets(result.frame) == expected
    assert result.partial is False
    assert result.excluded == sum(e is None for e in expected)
    assert result.excluded_reason.startswith("pass rate undefined")
    assert result.count_of("hard") == expected.count("hard")
    assert "Buckets of job_base" in str(result)


def test_job_buckets_refuse_unfinished(ws: enb.Workspace) -> None:
    job = ws.load(THREE_TASKS)  # status running
    with pytest.raises(enb.EnvloopError, match=r"still running.*allow_partial=True"):
        job.buckets(RULES)
    result = job.buckets(RULES, allow_partial=True)
    assert result.partial is True
    assert "PARTIAL" in str(result)
    # A has 1/2 passes (complete), B 2/2, C incomplete -> excluded
    assert _buckets(result.frame) == ["medium", "easy", None]
    assert result.excluded == 1


def test_job_buckets_on_other_metrics(ws: enb.Workspace) -> None:
    graded = ws.load(SAMPLE_DATA / "graded.json")
    dims = graded.dimensions()
    name = sorted(dims["name"].unique())[0]
    rules = BucketRules([Bucket("lo", 0, 0.5), Bucket("hi", 0.5, 1.01)], metric=name)
    result = graded.buckets(rules)
    means = dims[dims["name"] == name].groupby("task")["value"].mean()
    got = result.frame.set_index("task")[name]
    assert np.allclose(got.loc[means.index].to_numpy(), means.to_numpy())
    comp = graded.buckets(BucketRules([Bucket("lo", 0, 0.5)], metric="composite"))
    assert "composite" in comp.frame.columns
    per_attempt = graded.buckets(
        BucketRules([Bucket("lo", 0, 0.5), Bucket("hi", 0.5, 1.01)], "reward", level="attempt")
    )
    attempts = graded.attempts()
    assert len(per_attempt.frame) == len(attempts)
    assert per_attempt.excluded == int(attempts["reward"].isna().sum())
    with pytest.raises(KeyError, match="no metric 'nope'"):
        graded.buckets(BucketRules([Bucket("lo", 0, 0.5)], metric="nope"))


def test_job_buckets_pass_at_k(base: enb.Job) -> None:
    rules = BucketRules([Bucket("low", 0, 0.5), Bucket("high", 0.5, 1.01)], metric="pass@2")
    result = base.buckets(rules)
    assert "pass@2" in result.frame.columns
    assert result.metric == "pass@2"


def test_excluded_is_a_reserved_name() -> None:
    """A bucket "(excluded)" would duplicate the summary's excluded row: refused."""
    for name in ("(excluded)", " (excluded) "):
        with pytest.raises(ValueError, match=r"'\(excluded\)' is reserved for rows whose metric"):
            Bucket(name, 0, 1)
    with pytest.raises(ValueError, match="reserved"):
        BucketRules.from_json('{"buckets": [{"name": "(excluded)", "low": 0, "high": 1}]}')
    rules = BucketRules([Bucket("(Excluded?)", 0, 0.5)])  # other names are fine
    names = rules.summary(pd.DataFrame({"pass_rate": [0.1, None]}))["bucket"].tolist()
    assert names == ["(Excluded?)", OTHER, "(excluded)"] and names.count("(excluded)") == 1
