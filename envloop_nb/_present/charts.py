"""Charts of a job: small aggregated frames from DuckDB, then pure altair spec builders.

Two layers, kept apart so each is testable on its own:

* ``*_frame(con, job_id, ...)`` aggregate in SQL (histogram bins, status counts) and
  return a frame with at most a few dozen rows: raw attempts never reach the browser.
* ``*_chart(frame, ...)`` are pure functions from such a frame to an ``altair.Chart``.

Every chart renders offline, on its own or as ``enb.chart_widget(chart)`` (see
``envloop_nb._present.render``). Colours are neutral greys that read on JupyterLab's light and
dark themes; the background is transparent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .altair_import import altair
from .theme import si_axis

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = [
    "DISTRIBUTIONS",
    "bar_chart",
    "bucket_chart",
    "curve_chart",
    "distribution_chart",
    "distribution_frame",
    "status_frame",
]

#: Attempt measures that have a distribution chart: name -> (SQL expression, axis title).
DISTRIBUTIONS: dict[str, tuple[str, str]] = {
    "reward": ("reward", "reward"),
    "turns": ("turns", "turns"),
    "tokens": ("coalesce(input_tokens, 0) + coalesce(output_tokens, 0)", "tokens (in + out)"),
    "input_tokens": ("input_tokens", "input tokens"),
    "output_tokens": ("output_tokens", "output tokens"),
    "duration": ("duration_s", "duration (s)"),
}

#: Order of attempt states (plus slots never dispatched).
STATUS_ORDER = ("completed", "failed", "cancelled", "running", "pending", "not dispatched")

#: Plot width of a panel chart: two side by side (with their labels and menus) fill a
#: ~950-px panel; a narrower one shows one per row.
WIDTH = 360
#: Plot width of the bucket chart: beside the counts table it fits a 900-px panel.
BUCKET_WIDTH = 320
HEIGHT = 160


def _styled(chart: Any) -> Any:
    """The toolkit's theme (:func:`envloop_nb._present.theme.themed`), offline."""
    from .theme import themed

    return themed(chart)


# -- aggregation in DuckDB ---------------------------------------------------------------


#: Measures that count things (turns, tokens): binned by whole values.
WHOLE_MEASURES = frozenset({"turns", "tokens", "input_tokens", "output_tokens"})


def distribution_frame(
    con: duckdb.DuckDBPyConnection, job_id: str, measure: str, *, bins: int = 30
) -> pd.DataFrame:
    """Histogram of one attempt measure of a job, binned in SQL.

    Returns one row per bin with columns ``low``, ``high``, ``count``. When the measure
    takes at most ``bins`` distinct values (binary rewards, turns), each value is its
    own bar and ``low == high``. Counts (:data:`WHOLE_MEASURES`) with more values than ``bins``
    get bins of whole values (each covering the same number of integers, edges halfway
    between them, with ``from``/``to`` the first and last integer), so no bin holds two
    values while its neighbour holds none. Attempts without a value are left out (not
    zero).

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> distribution_frame(job.con, job.id, "reward").to_dict("list")
    {'low': [0.0, 1.0], 'high': [0.0, 1.0], 'count': [2, 3]}
    """
    if measure not in DISTRIBUTIONS:
        raise ValueError(f"measure must be one of {sorted(DISTRIBUTIONS)}, got {measure!r}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    expr = DISTRIBUTIONS[measure][0]
    if measure == "tokens":  # a row with neither count has no token figure
        where = "(input_tokens IS NOT NULL OR output_tokens IS NOT NULL)"
    else:
        where = f"{expr} IS NOT NULL"
    base = f"SELECT ({expr})::DOUBLE AS x FROM attempts WHERE job_id = $job_id AND {where}"
    lo, hi, distinct, fractional = con.execute(
        f"SELECT min(x), max(x), count(DISTINCT x), count_if(x <> floor(x)) FROM ({base})",
        {"job_id": job_id},
    ).fetchone()  # type: ignore[misc]
    if lo is None:
        sql = "SELECT 0.0 AS low, 0.0 AS high, 0::BIGINT AS count WHERE false"
        return con.execute(sql).df()
    if distinct <= bins:
        sql = f"SELECT x AS low, x AS high, count(*) AS count FROM ({base}) GROUP BY x ORDER BY x"
        return con.execute(sql, {"job_id": job_id}).df()
    if not fractional and measure in WHOLE_MEASURES:  # counts: bins of whole values
        width = math.ceil((hi - lo + 1) / bins)
        sql = f"""
            SELECT $lo + b * $w - 0.5 AS low, $lo + (b + 1) * $w - 0.5 AS high,
                   count(*) AS count, ($lo + b * $w)::BIGINT AS "from",
                   ($lo + (b + 1) * $w - 1)::BIGINT AS "to"
            FROM (SELECT floor((x - $lo) / $w)::INTEGER AS b FROM ({base}))
            GROUP BY b ORDER BY b
        """
        return con.execute(sql, {"job_id": job_id, "lo": lo, "w": float(width)}).df()
    width = (hi - lo) / bins
    sql = f"""
        SELECT $lo + b * $w AS low, $lo + (b + 1) * $w AS high, count(*) AS count
        FROM (SELECT least(floor((x - $lo) / $w), {bins - 1})::INTEGER AS b FROM ({base}))
        GROUP BY b ORDER BY b
    """
    return con.execute(sql, {"job_id": job_id, "lo": lo, "w": width}).df()


def status_frame(con: duckdb.DuckDBPyConnection, job_id: str) -> pd.DataFrame:
    """Requested attempt slots by state: ``status``, ``count`` (fixed order, zeros kept).

    Slots of requested tasks that were never dispatched show as ``"not dispatched"``.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> dict(status_frame(job.con, job.id).values.tolist())["running"]
    1
    """
    rows = dict(
        con.execute(
            "SELECT status, count(*) FROM attempts WHERE job_id = ? GROUP BY status", [job_id]
        ).fetchall()
    )
    reduced = con.execute(  # a summarised job: its counts say as much as they know
        """SELECT sum(scored), sum(invalid), sum(dispatched) FROM task_summaries
           WHERE job_id = ? AND threshold IS NULL""",
        [job_id],
    ).fetchone()
    if not rows and reduced is not None and reduced[2] is not None:
        scored, invalid, dispatched = (int(x) for x in reduced)
        rows = {
            "scored": scored,
            "ended without reward": invalid,
            "no reward yet": dispatched - scored - invalid,
        }
    total = con.execute(
        """SELECT count(*) * any_value(j.attempts) FROM tasks t JOIN jobs j USING (job_id)
           WHERE t.job_id = ?""",
        [job_id],
    ).fetchone()
    requested = int(total[0] or 0) if total else 0
    rows["not dispatched"] = max(requested - sum(rows.values()), 0)
    names = list(STATUS_ORDER) + sorted(set(rows) - set(STATUS_ORDER))
    if "scored" in rows:  # summarised: no per-attempt status, only what the counts hold
        names = ["scored", "ended without reward", "no reward yet", "not dispatched"]
    import pandas as pd

    return pd.DataFrame({"status": names, "count": [int(rows.get(n, 0)) for n in names]}).astype(
        {"count": "int64"}
    )


# -- pure chart builders -------------------------------------------------------------------


def distribution_chart(frame: pd.DataFrame, *, title: str, x_title: str) -> Any:
    """Bars of a :func:`distribution_frame` (discrete values or binned ranges).

    Examples
    --------
    >>> import pandas as pd
    >>> spec = distribution_chart(
    ...     pd.DataFrame({"low": [0.0, 1.0], "high": [0.0, 1.0], "count": [2, 3]}),
    ...     title="reward", x_title="reward").to_dict()
    >>> spec["mark"]["type"], len(spec["datasets"][spec["data"]["name"]])
    ('bar', 2)
    """
    alt = altair()

    n = int(frame["count"].sum()) if len(frame) else 0
    full_title = f"{title} · {n:,} attempts"
    base = alt.Chart(frame, title=full_title, width=WIDTH, height=HEIGHT)
    whole = "from" in frame.columns  # bins of whole values: say which integers
    tooltip = [
        alt.Tooltip("from:Q" if whole else "low:Q", title="from", format=",.4~r"),
        alt.Tooltip("to:Q" if whole else "high:Q", title="to", format=",.4~r"),
        alt.Tooltip("count:Q", title="attempts", format=","),
    ]
    count_y = alt.Y("count:Q", title="attempts", axis=si_axis(tickCount=4, tickMinStep=1))
    discrete = bool(len(frame)) and bool((frame["low"] == frame["high"]).all())
    if discrete:
        chart = base.mark_bar(color="#4a90c8").encode(
            x=alt.X(
                "low:O",
                title=x_title,
                axis=alt.Axis(labelAngle=0, format=",.4~r", labelOverlap="greedy"),
            ),
            y=count_y,
            tooltip=[
                alt.Tooltip("low:Q", title=x_title, format=",.4~r"),
                alt.Tooltip("count:Q", title="attempts", format=","),
            ],
        )
    else:
        chart = base.mark_rect(color="#4a90c8", stroke="transparent", strokeWidth=0.5).encode(
            x=alt.X("low:Q", title=x_title, axis=si_axis()),
            x2="high:Q",
            y=count_y,
            y2=alt.datum(0),
            tooltip=tooltip,
        )
    return _styled(chart)


def bar_chart(
    frame: pd.DataFrame,
    *,
    category: str,
    value: str,
    title: str,
    percent: bool = True,
    extra_tooltip: tuple[str, ...] = (),
) -> Any:
    """Horizontal bars of ``value`` per ``category`` (e.g. score per subset).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"subset": ["code", "math"], "score": [0.5, 0.75]})
    >>> spec = bar_chart(f, category="subset", value="score", title="score").to_dict()
    >>> spec["encoding"]["y"]["field"], spec["encoding"]["x"]["axis"]["format"]
    ('subset', '.0%')
    """
    alt = altair()

    tooltip = [
        alt.Tooltip(f"{category}:N"),
        alt.Tooltip(f"{value}:Q", format=".1%" if percent else ",.4~r"),
    ]
    tooltip += [alt.Tooltip(f"{c}:N") for c in extra_tooltip]
    x_scale = alt.Scale(domain=[0, 1]) if percent else alt.Undefined
    chart = (
        alt.Chart(frame, title=title, width=WIDTH, height=alt.Step(16))
        .mark_bar(color="#4a90c8")
        .encode(
            y=alt.Y(f"{category}:N", sort=None, title=None),
            x=alt.X(
                f"{value}:Q",
                title=value,
                scale=x_scale,
                axis=alt.Axis(format=".0%") if percent else si_axis(),
            ),
            tooltip=tooltip,
        )
    )
    return _styled(chart)


def curve_chart(frame: pd.DataFrame, *, title: str = "pass@k and pass^k") -> Any:
    """Lines of ``pass@k`` and ``pass^k`` over k from a ``job.curve()`` frame.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"k": [1, 2], "pass@k": [0.5, 1.0], "pass^k": [0.5, 0.5], "tasks": [3, 2]})
    >>> spec = curve_chart(f).to_dict()
    >>> len(spec["datasets"][spec["data"]["name"]]), spec["mark"]["type"]
    (4, 'line')
    """
    alt = altair()
    import pandas as pd

    long = pd.DataFrame(
        {
            "k": list(frame["k"]) * 2,
            "metric": ["pass@k"] * len(frame) + ["pass^k"] * len(frame),
            "value": list(frame["pass@k"]) + list(frame["pass^k"]),
            "tasks": list(frame["tasks"]) * 2,
        }
    )
    long = long[long["value"].notna()].reset_index(drop=True)
    chart = (
        alt.Chart(long, title=title, width=WIDTH, height=HEIGHT)
        .mark_line(point=True)
        .encode(
            x=alt.X("k:O", title="k", axis=alt.Axis(labelAngle=0)),
            y=alt.Y(
                "value:Q", title=None, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format=".0%")
            ),
            color=alt.Color(
                "metric:N",
                scale=alt.Scale(domain=["pass@k", "pass^k"], range=["#4a90c8", "#d0584f"]),
                legend=alt.Legend(orient="bottom", title=None),
            ),
            tooltip=[
                "metric:N",
                "k:O",
                alt.Tooltip("value:Q", format=".1%"),
                alt.Tooltip("tasks:Q", title="tasks covered", format=","),
            ],
        )
    )
    return _styled(chart)


def bucket_chart(
    frame: pd.DataFrame, *, title: str = "tasks per bucket", width: int = BUCKET_WIDTH
) -> Any:
    """Bars of rows per bucket from a frame with ``bucket`` and ``count`` columns.

    The chart is ``width`` pixels wide plus its bucket labels (it fits a 900-px panel
    beside the counts table), the bars start at zero and the count axis reads
    ``0``, ``20,000``, ``40,000``... (whole numbers, never ``0k`` for everything).

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"bucket": ["hard", "easy"], "count": [3, 5]})
    >>> spec = bucket_chart(f).to_dict()
    >>> spec["encoding"]["y"]["sort"], spec["width"], spec["encoding"]["x"]["axis"]["format"]
    (['hard', 'easy'], 320, ',d')
    """
    alt = altair()

    order = [str(b) for b in frame["bucket"]]
    chart = (
        alt.Chart(frame, title=title, width=width, height=alt.Step(18))
        .mark_bar(color="#8e6cc0")
        .encode(
            y=alt.Y("bucket:N", sort=order, title=None, axis=alt.Axis(labelLimit=140)),
            x=alt.X(
                "count:Q",
                title="count",
                scale=alt.Scale(zero=True, nice=True),
                # whole counts with separators; tickMinStep keeps small counts integral
                axis=alt.Axis(format=",d", tickCount=4, tickMinStep=1, labelOverlap=True),
            ),
            tooltip=["bucket:N", alt.Tooltip("count:Q", format=",")],
        )
    )
    return _styled(chart)
