"""HTML of a training run (pure): the headline (best checkpoint, its indistinguishable
set, the minimum detectable effect, the guard's mark), the tests between steps, and the
lists of tasks learned, forgotten and flaky.

Frames and plain objects in (``run.tests()``, ``run.learned()`` …, the ``BestCheckpoint``
and ``DetectableEffect`` of ``envloop_nb._runs.tests`` read through their attributes), HTML
out, styled inline with the JupyterLab theme variables so it reads in light and dark themes,
in a panel and in a standalone report alike. Text is escaped.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any, Protocol

from .display import format_metric, format_number

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CURVE_LEGEND",
    "BestLike",
    "group_headline_html",
    "headline_html",
    "step_text",
    "task_list_html",
    "task_lists_html",
    "tests_table_html",
]

_FONT = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"
_TH = "text-align:left;padding:2px 8px;color:var(--jp-ui-font-color2,#666);font-weight:600;white-space:nowrap"
_TD = "padding:2px 8px;vertical-align:top;border-top:1px solid var(--jp-border-color3,#eee)"
_GREEN, _RED, _AMBER = "#3d9a5f", "#c62828", "#c27a12"
#: How to read the curve (under the chart, in the panel and the report).
CURVE_LEGEND = (
    "line and points: the metric with its interval (shaded); grey bars: the noise band (where "
    "a step lands when nothing changed since the step before); ▲ / ▼: adjacent changes "
    "significant after adjustment; ◇: a step whose coverage dropped (not joined by the line, "
    "never drawn as a score change)"
)
#: Rows of a task list or of the tests table shown before "… more".
MAX_ROWS = 200


class BestLike(Protocol):
    """What :func:`headline_html` reads of a best checkpoint."""

    @property
    def step(self) -> Any: ...
    @property
    def metric(self) -> str: ...
    @property
    def estimate(self) -> float: ...
    @property
    def low(self) -> float | None: ...
    @property
    def high(self) -> float | None: ...
    @property
    def interval(self) -> str: ...
    @property
    def indistinguishable(self) -> tuple[Any, ...]: ...
    @property
    def untested(self) -> tuple[Any, ...]: ...
    @property
    def alpha(self) -> float: ...


def step_text(step: Any) -> str:
    """A step as text: ``6``, ``143000``, ``2.5``; ``-`` when missing.

    Examples
    --------
    >>> step_text(6), step_text(2.5), step_text(3.0), step_text(None)
    ('6', '2.5', '3', '-')
    """
    if step is None or (isinstance(step, float) and math.isnan(step)):
        return "-"
    return f"{step:g}" if isinstance(step, float) else str(step)


def _steps_text(steps: Any, *, most: int = 30) -> str:
    items = [step_text(s) for s in steps]
    if len(items) > most:
        return ", ".join(items[:most]) + f" … ({len(items):,} steps)"
    return ", ".join(items) or "none"


def headline_html(
    *,
    best: BestLike | None,
    mde: str,
    mark: str = "",
    steps: int,
    tasks: int | None = None,
    no_best: str = "",
) -> str:
    """The run's headline: the best checkpoint with its interval and the steps
    statistically indistinguishable from it, the minimum-detectable-effect sentence, and
    the guard's mark in amber when the jobs are not all comparable.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> b = NS(step=6, metric="score", estimate=0.61, low=0.49, high=0.72, interval="task bootstrap",
    ...        indistinguishable=(4, 6, 7), untested=(), alpha=0.05)
    >>> out = headline_html(best=b, mde="smallest detectable change: 9.6 points", steps=10)
    >>> "step <b>6</b>" in out and "4, 6, 7" in out and "9.6 points" in out
    True
    """
    parts = []
    if mark:
        parts.append(f'<div style="color:{_AMBER};font-weight:600">{html.escape(mark)}</div>')
    if best is None:
        why = html.escape(no_best or "no step has a value")
        parts.append(f"<div>best checkpoint: none ({why})</div>")
    else:
        ci = (
            ""
            if best.low is None
            else f" ({format_metric(best.low)} – {format_metric(best.high)}, {html.escape(best.interval)})"
        )
        untested = (
            f"; not tested against it: steps {html.escape(_steps_text(best.untested))}"
            if best.untested
            else ""
        )
        parts.append(
            f"<div>best {html.escape(best.metric)}: step <b>{html.escape(step_text(best.step))}</b>: "
            f"<b>{format_metric(best.estimate)}</b>{ci}</div>"
            f"<div>statistically indistinguishable from it (α {best.alpha:g}, Holm): steps "
            f"{html.escape(_steps_text(best.indistinguishable))}{untested}</div>"
        )
    if mde:
        parts.append(f"<div>{html.escape(mde)}</div>")
    size = f"{steps:,} steps" + ("" if tasks is None else f" · {tasks:,} tasks")
    parts.append(f'<div style="color:var(--jp-ui-font-color2,#666)">{size}</div>')
    return f'<div class="enb-run-headline" style="{_FONT};line-height:1.6">{"".join(parts)}</div>'


def _value(value: Any, rate: bool) -> str:
    if value is None or value != value:
        return "-"
    return format_metric(value) if rate else format_number(value)


def _is_rate(*values: Any) -> bool:
    known = [float(v) for v in values if v is not None and v == v]
    return bool(known) and all(0.0 <= v <= 1.0 for v in known)


def group_headline_html(
    *, best: pd.DataFrame, mde: pd.DataFrame, mark: str = "", steps: int, why: str = ""
) -> str:
    """The headline of a run told per group (``run.best(by=...)`` and ``run.mde(by=...)``:
    results-only files with one number per task and none for the whole run): per group its
    best step with the interval and the steps indistinguishable from it, or why it has
    none, and its smallest detectable change (in points for a rate, else in the metric's
    units); ``why`` says why there is no whole-run headline.

    Examples
    --------
    >>> import pandas as pd
    >>> b = pd.DataFrame({"group": ["piqa"], "metric": ["acc"], "higher_is_better": [True],
    ...     "step": [143000], "estimate": [0.63], "low": [0.60], "high": [0.65],
    ...     "interval": ["source stderr"], "indistinguishable": [(133000, 143000)],
    ...     "untested": [()], "method": ["from the source's stderr, unpaired"], "note": [""]})
    >>> m = pd.DataFrame({"group": ["piqa"], "effect": [0.046], "note": [""]})
    >>> out = group_headline_html(best=b, mde=m, steps=27)
    >>> "step <b>143000</b>" in out and "133000, 143000" in out and "4.6 points" in out
    True
    """
    effects = {r["group"]: r for r in mde.to_dict("records")}
    alpha = float(best.attrs.get("alpha", 0.05))
    parts = []
    if mark:
        parts.append(f'<div style="color:{_AMBER};font-weight:600">{html.escape(mark)}</div>')
    if why:
        parts.append(f"<div>{html.escape(why)}</div>")
    methods = sorted({str(x) for x in best["method"].dropna() if x})
    rows = []
    for r in best.to_dict("records"):
        rate = _is_rate(r.get("estimate"), r.get("low"), r.get("high"))
        name = (f"{html.escape(str(r['group']))} "
                f"<small>({html.escape(str(r.get('metric') or ''))})</small>")  # fmt: skip
        if r.get("step") is None or r.get("estimate") is None:
            found = f"<i>{html.escape(str(r.get('note') or 'no best'))}</i>"
        else:
            ci = (
                ""
                if r.get("low") is None or r.get("low") != r.get("low")
                else f" ({_value(r['low'], rate)} – {_value(r['high'], rate)})"
            )
            lower = (
                " <small>(lower is better)</small>" if r.get("higher_is_better") is False else ""
            )
            found = (
                f"step <b>{html.escape(step_text(r['step']))}</b>: "
                f"<b>{_value(r['estimate'], rate)}</b>{ci}{lower}; indistinguishable: steps "
                f"{html.escape(_steps_text(r.get('indistinguishable') or ()))}"
            )
        e = effects.get(r["group"], {})
        effect = e.get("effect")
        if effect is None or effect != effect:
            said = html.escape(str(e.get("note") or "-"))
        else:
            unit = html.escape(str(r.get("metric") or ""))
            said = (
                f"{float(effect) * 100:.1f} points" if rate else f"{format_number(effect)} {unit}"
            )
        rows.append(f'<tr><td style="{_TD}">{name}</td>'
                    f'<td style="{_TD}">{found}</td><td style="{_TD};white-space:nowrap">{said}</td></tr>')  # fmt: skip
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in
                   ("group", f"best checkpoint (α {alpha:g}, Holm within the group)",
                    "smallest detectable change"))  # fmt: skip
    how = f"<div><small>{html.escape('; '.join(methods))}</small></div>" if methods else ""
    parts.append(
        f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{how}"
    )
    parts.append(f'<div style="color:var(--jp-ui-font-color2,#666)">{steps:,} steps</div>')
    return f'<div class="enb-run-headline" style="{_FONT};line-height:1.6">{"".join(parts)}</div>'


def _pts(value: Any) -> str:
    if value is None or value != value:
        return "-"
    return f"{float(value) * 100:+.1f}"


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _raw(value: Any) -> str:
    """A difference in the metric's own units (not a rate: ``ppl``)."""
    if value is None or value != value:
        return "-"
    return format_number(value, signed=True)


def _count(value: Any) -> str:
    if value is None or value != value:
        return "-"
    return f"{int(value):,}"


def _p(value: Any) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.2g}" if value >= 1e-4 else "< 0.0001"


def tests_table_html(
    frame: pd.DataFrame, *, only_significant: bool = False, max_rows: int = MAX_ROWS
) -> str:
    """``run.tests()`` as a table: the two steps, the paired difference in points with its
    interval, fixed / broken tasks, the raw and the adjusted p-value, the verdict (green
    beyond noise, amber borderline) and the note on shared tasks.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"kind": ["adjacent"], "step_a": [5], "step_b": [6], "diff": [0.24],
    ...     "low": [0.14], "high": [0.34], "fixed": [13], "broken": [0], "p": [0.0002],
    ...     "p_adjusted": [0.003], "shared_complete": [48], "tasks_union": [48],
    ...     "verdict": ["beyond noise: step 6 is better than step 5"], "note": [""]})
    >>> t.attrs["adjust"] = "holm"
    >>> out = tests_table_html(t)
    >>> "+24.0" in out and "0.003" in out and "beyond noise" in out
    True
    """
    import pandas as pd

    adjust = str(frame.attrs.get("adjust", "holm"))
    alpha = float(frame.attrs.get("alpha", 0.05))
    shown = frame
    if only_significant and len(frame):
        p = frame["p_adjusted"].astype(float)
        shown = frame[p.notna() & (p < alpha)]
        adjacent = shown["kind"].astype(str).str.contains("adjacent")
        shown = pd.concat([shown[adjacent], shown[~adjacent]])  # the step-to-step jumps first
    if not len(shown):
        what = "no change is significant after adjustment" if only_significant else "no test"
        return f'<div style="{_FONT}"><i>{what}</i></div>'
    grouped = "group" in shown and shown["group"].notna().any()
    # unpaired rows only (aggregates from the sources' stderr): no tasks to count
    counted = any(
        c in shown and shown[c].notna().any() for c in ("fixed", "broken", "shared_complete")
    )
    head = [
        *(["group"] if grouped else []),
        "kind",
        "steps",
        "Δ" if grouped else "Δ (pts)",
        *(["fixed / broken"] if counted else []),
        "p",
        f"p ({adjust})",
        *(["shared & complete"] if counted else []),
        "verdict",
    ]
    rows = []
    for r in shown.head(max_rows).to_dict("records"):
        verdict = str(r.get("verdict") or "")
        color = (
            _GREEN
            if verdict.startswith("beyond noise")
            else _AMBER
            if verdict.startswith(("borderline", "not assessed", "cannot"))
            else "inherit"
        )
        note = str(r.get("note") or "")
        shared = r.get("shared_complete")
        union = r.get("tasks_union")
        rate = _is_rate(r.get("score_a"), r.get("score_b")) or r.get("score_a") is None
        delta = _pts if rate else _raw
        cells = [
            *([html.escape(str(r.get("group") or ""))] if grouped else []),
            html.escape(str(r.get("kind") or "")),
            f"{html.escape(step_text(r.get('step_a')))} → {html.escape(step_text(r.get('step_b')))}",
            f"{delta(r.get('diff'))} <small>[{delta(r.get('low'))}, {delta(r.get('high'))}]</small>",
            *([f"{_count(r.get('fixed'))} / {_count(r.get('broken'))}"] if counted else []),
            _p(r.get("p")),
            f"<b>{_p(r.get('p_adjusted'))}</b>",
            *(
                ["-" if shared is None or shared != shared else f"{_count(shared)}/{_count(union)}"]
                if counted
                else []
            ),
            f'<span style="color:{color}">{html.escape(verdict)}</span>'
            + (f'<br><small style="opacity:0.8">{html.escape(note)}</small>' if note else ""),
        ]
        rows.append("<tr>" + "".join(f'<td style="{_TD};white-space:nowrap">{c}</td>' for c in cells[:-1])
                    + f'<td style="{_TD};min-width:9em">{cells[-1]}</td></tr>')  # fmt: skip
    more = (
        f'<div style="opacity:0.7">… {len(shown) - max_rows:,} more not shown (all of them: run.tests())</div>'
        if len(shown) > max_rows
        else ""
    )
    methods = set(frame["method"].dropna().astype(str)) if "method" in frame else set()
    paired = any(m.startswith("paired") for m in methods)
    unpaired = any(m.startswith("from the source's stderr") for m in methods)
    how = []
    if paired or not unpaired:
        how.append("paired difference over tasks both steps scored completely (bootstrap "
                   "interval), exact McNemar on tasks solved by one step only")  # fmt: skip
    if unpaired:
        how.append("steps holding only aggregates: the difference of their numbers from the "
                   "source's stderr, unpaired (z interval, two-sided normal p; independent "
                   "samples assumed: conservative when the checkpoints share docs)")  # fmt: skip
    per = " (one row per pair of steps and group)" if grouped else ""
    intro = (
        f'<div style="margin-bottom:4px">{html.escape(_upper_first("; ".join(how)))}; p-values '
        f"adjusted ({html.escape(adjust)}) across all {len(frame):,} tests{per}; α {alpha:g}. "
        "Δ in points for a rate, else in the metric's units.</div>"
    )
    header = "".join(f'<th style="{_TH}">{html.escape(h)}</th>' for h in head)
    return (
        f'<div class="enb-run-tests" style="{_FONT};line-height:1.4;min-width:0;max-width:100%">'
        f"{intro}"
        '<div style="overflow-x:auto">'
        f'<table style="border-collapse:collapse"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{more}</div>"
    )


#: Per list: its title, the column of the step it names, and what that step means.
_LISTS = {
    "learned": ("learned", "learned_at", "learned at"),
    "forgotten": ("forgotten", "forgotten_at", "forgotten at"),
    "flaky": ("flaky", "flips", "flips"),
}


def task_lists_html(
    learned: pd.DataFrame, forgotten: pd.DataFrame, flaky: pd.DataFrame
) -> list[str]:
    """The three task lists, each by :func:`task_list_html`; one line instead when all
    three say the same *not assessed* (no step has per-task results: the reason once).

    Examples
    --------
    >>> import pandas as pd
    >>> empty = pd.DataFrame()
    >>> empty.attrs["not_assessed"] = "not assessed: no tasks"
    >>> task_lists_html(empty, empty, empty)
    ['<div style="font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"><i>not assessed: no tasks</i></div>']
    """
    frames = {"learned": learned, "forgotten": forgotten, "flaky": flaky}
    reasons = {str(f.attrs.get("not_assessed") or "") for f in frames.values()}
    if len(reasons) == 1 and (reason := reasons.pop()):
        return [f'<div style="{_FONT}"><i>{html.escape(reason)}</i></div>']
    return [task_list_html(frame, kind) for kind, frame in frames.items()]


def task_list_html(frame: pd.DataFrame, kind: str, *, max_rows: int = MAX_ROWS) -> str:
    """One of ``run.learned()`` / ``run.forgotten()`` / ``run.flaky()`` as a small table:
    task, subset, the step it was learned at / first failed at (or its number of flips),
    the steps solved of those known, the mean pass rate.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"task": ["t<1>"], "subset": ["s"], "forgotten_at": [5],
    ...     "solved_steps": [3], "known_steps": [10], "mean_pass_rate": [0.35]})
    >>> out = task_list_html(f, "forgotten")
    >>> "t&lt;1&gt;" in out and ">5<" in out and "3/10" in out and "35.0%" in out
    True
    """
    title, col, meaning = _LISTS[kind]
    if frame.attrs.get("not_assessed"):  # no per-task results at any step: not "none"
        why = html.escape(str(frame.attrs["not_assessed"]))
        return f'<div style="{_FONT}"><b>{title}</b>: <i>{why}</i></div>'
    if not len(frame):
        return f'<div style="{_FONT}"><b>{title}</b>: <i>none</i></div>'
    head = ["task", "subset", meaning, "solved steps", "mean pass"]
    rows = []
    for r in frame.head(max_rows).to_dict("records"):
        at = r.get(col)
        cells = [
            html.escape(str(r.get("task"))),
            html.escape(str(r.get("subset") or "")),
            html.escape(step_text(at) if col != "flips" else str(at)),
            f"{int(r.get('solved_steps') or 0)}/{int(r.get('known_steps') or 0)}",
            format_metric(r.get("mean_pass_rate")),
        ]
        rows.append(
            "<tr>"
            + "".join(f'<td style="{_TD};white-space:nowrap">{c}</td>' for c in cells)
            + "</tr>"
        )
    more = (
        f'<div style="opacity:0.7">… {len(frame) - max_rows:,} more tasks</div>'
        if len(frame) > max_rows
        else ""
    )
    header = "".join(f'<th style="{_TH}">{html.escape(h)}</th>' for h in head)
    return (
        f'<div class="enb-run-{kind}" style="{_FONT}"><b>{title}</b> ({len(frame):,} task{"s" if len(frame) != 1 else ""})'
        f'<table style="border-collapse:collapse;margin-top:2px"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{more}</div>"
    )
