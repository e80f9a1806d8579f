"""Diagnosis: flag the patterns evaluators look for, each with its evidence.

Each check is one DuckDB query over the job's attempts grouped by task, followed by a
pure decision on the few numbers it returns. Thresholds live in
:class:`DiagnosisOptions` (frozen; override with ``dataclasses.replace`` or keywords).

Checks (``code``: what it flags):

``all-rewards-zero``
    every scored reward of the job is 0: usually the deployment, a tool or the dataset
    (reference answers, verifier) is broken rather than the model.
``looping``
    tasks that never pass and spend many turns: mean turns ≥ ``max(looping_min_turns,
    looping_factor × job median turns)``.
``short-output``
    tasks that never pass with very short responses: mean output tokens ≤
    ``short_output_tokens`` (or, without token counts, mean output length ≤
    ``short_output_chars`` characters): empty or malformed output.
``turn-spread``
    per-task mean turns spread widely: their coefficient of variation (standard
    deviation / mean) ≥ ``turn_spread_cv`` (at least ``min_tasks_for_spread`` tasks with
    turns).
``confident-wrong``
    rollouts with mean token logprob ≥ ``confident_logprob`` (near 0: the model is sure)
    whose reward is not a pass: at least ``confident_min_rollouts`` of them and at least
    ``confident_share`` of the confident scored rollouts. The evidence compares with the
    failure share of the other rollouts.
``timeouts``
    share of dispatched rollouts whose ``error`` or ``error_type`` mentions a timeout: vs
    another job (``against``), flagged when higher by ≥ ``timeout_share_diff`` and at least
    ``timeout_ratio`` times the other's; alone, flagged when ≥ ``timeout_share``.
``platform-mismatch``
    the source's own ``metrics`` block disagrees with the recomputed summary (policy
    "unknown", no threshold): every differing key is named with both values. For a
    Harbor job, its ``result.json`` mean and pass@k under the policy of the Harbor
    version that wrote it (``"failure"`` before 0.26, ``"unknown"`` from 0.26; when the
    version is unknown, flagged only if neither policy reproduces them).

A task *never passes* when it has a scored attempt and none passes. A pass is
``reward >= threshold`` when ``DiagnosisOptions.threshold`` is set; otherwise
``reward = 1`` for a binary job and ``reward >= graded_pass`` for a graded one.
"""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from .._present.display import format_metric, format_pct
from .._store.ref import job_info, summarised
from .counts import pass_sql, task_counts
from .summary import job_summary

if TYPE_CHECKING:
    from .._store.ref import JobRef

__all__ = ["DiagnosisOptions", "Finding", "Findings", "diagnose"]

Severity = Literal["error", "warning", "info"]
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
_ICON = {"error": "✖", "warning": "⚠", "info": "ℹ"}


@dataclass(frozen=True)
class DiagnosisOptions:
    """Thresholds of the diagnosis checks (see :mod:`envloop_nb._metrics.diagnosis`).

    Examples
    --------
    >>> opts = DiagnosisOptions(looping_min_turns=10)
    >>> opts.looping_min_turns, opts.looping_factor
    (10, 3.0)
    """

    threshold: float | None = None
    graded_pass: float = 0.5
    looping_min_turns: float = 30
    looping_factor: float = 3.0
    short_output_tokens: float = 20
    short_output_chars: float = 20
    turn_spread_cv: float = 1.0
    min_tasks_for_spread: int = 5
    confident_logprob: float = -0.1
    confident_min_rollouts: int = 5
    confident_share: float = 0.25
    timeout_share: float = 0.25
    timeout_share_diff: float = 0.05
    timeout_ratio: float = 2.0
    platform_tolerance: float = 1e-9
    max_listed_tasks: int = 8


@dataclass(frozen=True)
class Finding:
    """One flagged pattern with its evidence.

    ``code`` is stable for programs; ``title`` and ``evidence`` are for people; ``tasks``
    are the tasks concerned (may be empty); ``numbers`` the values the decision used.
    """

    code: str
    severity: Severity
    title: str
    evidence: str
    tasks: tuple[str, ...] = ()
    numbers: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        text = f"[{self.severity}] {self.title}\n  {self.evidence}"
        if self.tasks:
            text += f"\n  tasks: {_task_list(self.tasks, 8)}"
        return text

    def _repr_html_(self) -> str:
        return findings_html([self])


class Findings(list[Finding]):
    """A list of :class:`Finding` that renders as readable text and HTML."""

    def __str__(self) -> str:
        if not self:
            return "no findings"
        return "\n".join(str(f) for f in self)

    def _repr_html_(self) -> str:
        return findings_html(self)

    def codes(self) -> list[str]:
        """The codes, in order."""
        return [f.code for f in self]


def _task_list(tasks: Sequence[str], limit: int) -> str:
    shown = ", ".join(tasks[:limit])
    return shown + (f" … (+{len(tasks) - limit} more)" if len(tasks) > limit else "")


_CSS = """<style>
.enb-findings{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  display:flex;flex-direction:column;gap:6px;max-width:960px}
.enb-finding{border-left:4px solid var(--jp-border-color1,#bbb);padding:4px 10px;
  background:var(--jp-layout-color1,#fff);color:var(--jp-ui-font-color1,#222)}
.enb-finding.enb-error{border-left-color:var(--jp-error-color1,#c62828)}
.enb-finding.enb-warning{border-left-color:var(--jp-warn-color1,#d97706)}
.enb-finding.enb-info{border-left-color:var(--jp-info-color1,#0277bd)}
.enb-finding .enb-ftitle{font-weight:600}
.enb-finding .enb-fcode{font-family:var(--jp-code-font-family,monospace);font-size:11px;
  color:var(--jp-ui-font-color2,#666);margin-left:6px}
.enb-finding .enb-ftasks{font-size:12px;color:var(--jp-ui-font-color2,#555)}
</style>"""


def findings_html(findings: Sequence[Finding]) -> str:
    """Pure HTML for a list of findings.

    Examples
    --------
    >>> f = Finding("looping", "warning", "Agent loops", "3 tasks never pass", ("a",))
    >>> "Agent loops" in findings_html([f]) and "enb-warning" in findings_html([f])
    True
    """
    if not findings:
        return f'{_CSS}<div class="enb-findings"><div class="enb-finding enb-info">No findings.</div></div>'
    items = []
    for f in findings:
        tasks = (
            f'<div class="enb-ftasks">tasks: {html.escape(_task_list(f.tasks, 12))}</div>'
            if f.tasks
            else ""
        )
        items.append(
            f'<div class="enb-finding enb-{f.severity}">'
            f'<div><span class="enb-ftitle">{_ICON[f.severity]} {html.escape(f.title)}</span>'
            f'<span class="enb-fcode">{html.escape(f.code)}</span></div>'
            f"<div>{html.escape(f.evidence)}</div>{tasks}</div>"
        )
    return f'{_CSS}<div class="enb-findings">{"".join(items)}</div>'


# -- data ------------------------------------------------------------------------------

_TIMEOUT = (
    "(coalesce(error, '') || ' ' || coalesce(error_type, '')) "
    "SIMILAR TO '(?i).*(timeout|timed out|time limit|deadline exceeded).*'"
)


def _pass_threshold(job: JobRef, options: DiagnosisOptions) -> float | None:
    """The threshold of a pass: the option, else none for binary rewards (a pass is a 1),
    else ``graded_pass``."""
    if options.threshold is not None:
        return float(options.threshold)
    counts = task_counts(job.con, job.id)
    if sum(counts.column("nonbinary").to_pylist()) == 0:
        return None
    return float(options.graded_pass)


def _pass_expr(job: JobRef, options: DiagnosisOptions) -> str:
    return pass_sql(_pass_threshold(job, options))


def _per_task(job: JobRef, options: DiagnosisOptions) -> list[dict[str, Any]]:
    """Per task with an attempt (by name): its counts (the job's per-task counts) and the
    mean turns, output tokens and output length of its attempts."""
    counts = task_counts(job.con, job.id, _pass_threshold(job, options))
    by_task = dict(
        zip(
            counts.column("task").to_pylist(),
            zip(
                counts.column("scored").to_pylist(),
                counts.column("passes").to_pylist(),
                strict=True,
            ),
            strict=True,
        )
    )
    cur = job.con.execute(
        """SELECT task, avg(turns) AS turns, avg(output_tokens) AS out_tokens,
                  avg(length(output)) AS out_chars, count(output) AS n_output
           FROM attempts WHERE job_id = ? GROUP BY task ORDER BY task""",
        [job.id],
    )
    names = [d[0] for d in cur.description]
    rows = []
    for r in cur.fetchall():
        row = dict(zip(names, r, strict=True))
        scored, passes = by_task.get(row["task"], (0, 0))
        rows.append({"task": row["task"], "scored": scored, "passes": passes, **row})
    return rows


def _quantile(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return float(s[lo] + (s[hi] - s[lo]) * (pos - lo))


# -- checks ------------------------------------------------------------------------------


def _all_zero(job: JobRef) -> list[Finding]:
    counts = task_counts(job.con, job.id)
    per_task = zip(
        counts.column("scored").to_pylist(),
        counts.column("reward_min").to_pylist(),
        counts.column("reward_max").to_pylist(),
        strict=True,
    )
    rewarded = [(n, lo, hi) for n, lo, hi in per_task if n > 0]
    scored, tasks = sum(n for n, _, _ in rewarded), len(rewarded)
    if scored == 0 or any(lo != 0 or hi != 0 for _, lo, hi in rewarded):
        return []
    return [
        Finding(
            "all-rewards-zero",
            "error",
            "Every reward is 0",
            f"all {scored:,} scored rewards across {tasks:,} tasks are 0; when nothing ever "
            "passes, check the deployment (endpoint, model name), the tools and the dataset "
            "(references, verifier) before reading this as model quality.",
            (),
            {"scored": scored, "tasks": tasks},
        )
    ]


def _never_pass(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["scored"] > 0 and r["passes"] == 0]


def _looping(job: JobRef, rows: list[dict[str, Any]], o: DiagnosisOptions) -> list[Finding]:
    median_row = job.con.execute(
        "SELECT median(turns) FROM attempts WHERE job_id = ?", [job.id]
    ).fetchone()
    median = None if median_row is None or median_row[0] is None else float(median_row[0])
    if median is None:
        return []
    limit = max(o.looping_min_turns, o.looping_factor * median)
    hits = sorted(
        (r for r in _never_pass(rows) if r["turns"] is not None and r["turns"] >= limit),
        key=lambda r: -r["turns"],
    )
    if not hits:
        return []
    shown = "; ".join(f"{r['task']} {r['turns']:.1f}" for r in hits[: o.max_listed_tasks])
    return [
        Finding(
            "looping",
            "warning",
            "Tasks never pass while spending many turns (agent looping?)",
            f"{len(hits)} task(s) never pass and average ≥ {limit:g} turns "
            f"(job median {median:g} turns; limit = max({o.looping_min_turns:g}, "
            f"{o.looping_factor:g} × median)). Mean turns: {shown}.",
            tuple(r["task"] for r in hits),
            {"tasks": len(hits), "turn_limit": limit, "median_turns": median},
        )
    ]


def _short_output(rows: list[dict[str, Any]], o: DiagnosisOptions) -> list[Finding]:
    hits = []
    for r in _never_pass(rows):
        if r["out_tokens"] is not None:
            if r["out_tokens"] <= o.short_output_tokens:
                hits.append((r["task"], f"{r['out_tokens']:.0f} tokens"))
        elif (
            r["n_output"] and r["out_chars"] is not None and r["out_chars"] <= o.short_output_chars
        ):
            hits.append((r["task"], f"{r['out_chars']:.0f} chars"))
    if not hits:
        return []
    shown = "; ".join(f"{t} {v}" for t, v in hits[: o.max_listed_tasks])
    return [
        Finding(
            "short-output",
            "warning",
            "Tasks never pass with very short responses (empty or malformed output?)",
            f"{len(hits)} task(s) never pass and their mean response is ≤ "
            f"{o.short_output_tokens:g} tokens (or ≤ {o.short_output_chars:g} characters "
            f"without token counts). Mean response: {shown}.",
            tuple(t for t, _ in hits),
            {"tasks": len(hits)},
        )
    ]


def _turn_spread(rows: list[dict[str, Any]], o: DiagnosisOptions) -> list[Finding]:
    with_turns = [r for r in rows if r["turns"] is not None]
    if len(with_turns) < o.min_tasks_for_spread:
        return []
    turns = [float(r["turns"]) for r in with_turns]
    p10, p50, p90 = (_quantile(turns, q) for q in (0.1, 0.5, 0.9))
    mean = sum(turns) / len(turns)
    cv = math.inf if mean <= 0 else statistics.stdev(turns) / mean
    if cv < o.turn_spread_cv:
        return []
    above = [r for r in with_turns if r["turns"] > p50]
    longest = sorted(above, key=lambda r: -r["turns"])[: o.max_listed_tasks]
    return [
        Finding(
            "turn-spread",
            "info",
            "Turns vary widely between tasks",
            f"per-task mean turns range from {min(turns):.1f} to {max(turns):.1f} (10th / 50th "
            f"/ 90th percentile {p10:.1f} / {p50:.1f} / {p90:.1f}); their coefficient of "
            f"variation is {cv:.2f}, at or above {o.turn_spread_cv:g}. Longest: "
            + "; ".join(f"{r['task']} {r['turns']:.1f}" for r in longest)
            + ".",
            tuple(r["task"] for r in longest),
            {"p10": p10, "p50": p50, "p90": p90, "cv": cv, "tasks": len(turns)},
        )
    ]


def _confident_wrong(job: JobRef, o: DiagnosisOptions) -> list[Finding]:
    passed = _pass_expr(job, o)
    cur = job.con.execute(
        f"""WITH a AS (SELECT *, logprob_mean >= $lp AS sure FROM attempts
                       WHERE job_id = $job_id AND reward IS NOT NULL)
            SELECT count(*) FILTER (WHERE sure) AS confident,
                   count(*) FILTER (WHERE sure AND NOT ({passed})) AS wrong,
                   list(DISTINCT task ORDER BY task) FILTER (WHERE sure AND NOT ({passed}))
                       AS tasks,
                   avg(logprob_mean) FILTER (WHERE sure AND NOT ({passed})) AS mean_lp,
                   count(*) FILTER (WHERE NOT sure) AS others,
                   count(*) FILTER (WHERE NOT sure AND NOT ({passed})) AS others_wrong
            FROM a""",
        {"job_id": job.id, "lp": o.confident_logprob},
    )
    row = cur.fetchone()
    assert row is not None
    confident, wrong, tasks, mean_lp = int(row[0]), int(row[1]), list(row[2] or []), row[3]
    others, others_wrong = int(row[4]), int(row[5])
    if wrong < o.confident_min_rollouts or wrong < o.confident_share * confident:
        return []
    other_text = (
        f"; the other {others:,} scored rollouts fail {format_pct(others_wrong / others)}"
        if others
        else ""
    )
    return [
        Finding(
            "confident-wrong",
            "warning",
            "Confident but wrong: logprob near 0 with low reward",
            f"{wrong:,} of {confident:,} scored rollouts ({format_pct(wrong / confident)}) "
            f"with mean token logprob ≥ {o.confident_logprob:g} do not pass (their mean "
            f"logprob {mean_lp:.3f}){other_text}. The model is sure of answers the verifier "
            "rejects: check the references and the verifier, or look for a confidently "
            "learned wrong style.",
            tuple(tasks),
            {
                "confident": confident,
                "wrong": wrong,
                "share": wrong / confident,
                "others": others,
                "others_wrong": others_wrong,
            },
        )
    ]


def _timeout_share(job: JobRef) -> tuple[int, int]:
    row = job.con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {_TIMEOUT}) FROM attempts WHERE job_id = ?",
        [job.id],
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _timeouts(job: JobRef, against: JobRef | None, o: DiagnosisOptions) -> list[Finding]:
    n, t = _timeout_share(job)
    if n == 0:
        return []
    share = t / n
    tasks_rows = job.con.execute(
        f"""SELECT DISTINCT task FROM attempts WHERE job_id = ? AND {_TIMEOUT} ORDER BY task""",
        [job.id],
    ).fetchall()
    tasks = tuple(r[0] for r in tasks_rows)
    if against is None:
        if share < o.timeout_share or t == 0:
            return []
        return [
            Finding(
                "timeouts",
                "warning",
                "Many rollouts time out",
                f"{t:,} of {n:,} dispatched rollouts ({format_pct(share)}) report a timeout "
                f"in error/error_type (flagged at ≥ {format_pct(o.timeout_share)}).",
                tasks,
                {"timeouts": t, "rollouts": n, "share": share},
            )
        ]
    n2, t2 = _timeout_share(against)
    share2 = t2 / n2 if n2 else 0.0
    if t == 0 or share - share2 < o.timeout_share_diff or share < o.timeout_ratio * share2:
        return []
    return [
        Finding(
            "timeouts",
            "warning",
            f"More timeouts than {against.id}",
            f"{t:,} of {n:,} rollouts ({format_pct(share)}) time out in {job.id} versus "
            f"{t2:,} of {n2:,} ({format_pct(share2)}) in {against.id}: a difference of "
            f"{(share - share2) * 100:.1f} points. Timeouts are missing rewards, not model "
            "answers: compare the runner, sandbox limits and endpoint latency first.",
            tasks,
            {"timeouts": t, "rollouts": n, "share": share, "other_share": share2},
        )
    ]


_PLATFORM_KEYS = ("score", "pass", "pass@k", "pass^k", "k")
_COUNT_KEYS = ("total", "scored", "missing", "invalid", "total_members", "complete_members")


def _differs(a: Any, b: Any, tol: float) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    try:
        return bool(abs(float(a) - float(b)) > tol)
    except (TypeError, ValueError):
        return bool(a != b)


def _harbor_platform(job: JobRef, tol: float) -> list[Finding]:
    """Harbor's result.json under the policy of the Harbor version that wrote it."""
    from .harbor import check

    c = check(job, tol)
    if c is None or c.agrees:
        return []
    policy = c.compared_policy
    diffs = c.diffs(policy)
    parts = "; ".join(
        f"{k}: Harbor {a:.6g} vs recomputed {'null' if b is None else f'{b:.6g}'}"
        for k, (a, b) in diffs.items()
    )
    return [
        Finding(
            "platform-mismatch",
            "error",
            "Harbor's result.json disagrees with the recomputed numbers",
            f"{c.verdict()}. {len(diffs)} value(s) differ: {parts}. The file may be stale "
            "or edited, or the Harbor version's rule was not what its lock.json says.",
            (),
            {
                "policy": policy,
                "matches": list(c.matches),
                **{k: {"platform": a, "recomputed": b} for k, (a, b) in diffs.items()},
            },
        )
    ]


def _platform(job: JobRef, o: DiagnosisOptions) -> list[Finding]:
    info = job_info(job.con, job.id)
    if info.get("source_format") == "harbor":
        return _harbor_platform(job, o.platform_tolerance)
    platform = info.get("platform_metrics")
    if not isinstance(platform, Mapping):
        return []
    mine = job_summary(job.con, job.id).to_dict()
    diffs: dict[str, tuple[Any, Any]] = {}
    for key in _PLATFORM_KEYS:
        if key in platform and _differs(platform[key], mine[key], o.platform_tolerance):
            diffs[key] = (platform[key], mine[key])
    counts = platform.get("score_counts")
    if isinstance(counts, Mapping):
        for key in _COUNT_KEYS:
            if key in counts and _differs(counts[key], mine[key], 0):
                diffs[f"score_counts.{key}"] = (counts[key], mine[key])
    if not diffs:
        return []

    def show(v: Any) -> str:
        return (
            "null"
            if v is None
            else format_metric(v, 3, trim=True)
            if isinstance(v, float)
            else f"{v}"
        )

    parts = "; ".join(
        f"{k}: platform {show(a)} vs recomputed {show(b)}" for k, (a, b) in diffs.items()
    )
    return [
        Finding(
            "platform-mismatch",
            "error",
            "The platform's metrics block disagrees with the recomputed numbers",
            f"{len(diffs)} key(s) differ: {parts}. The recomputation uses policy 'unknown' "
            "without threshold, as the platform does: the file may be stale, edited or "
            "partially exported.",
            (),
            {k: {"platform": a, "recomputed": b} for k, (a, b) in diffs.items()},
        )
    ]


def diagnose(
    job: JobRef,
    *,
    against: JobRef | None = None,
    options: DiagnosisOptions | None = None,
    **overrides: Any,
) -> Findings:
    """Run every check on ``job`` (and compare timeouts with ``against``).

    Returns the findings, errors first, as a :class:`Findings` list.

    Examples
    --------
    >>> import envloop_nb as enb
    >>> job = enb.open().load("../shared/formats/examples/three-tasks-two-attempts.json")
    >>> print(diagnose(job))
    no findings
    >>> diagnose(job, looping_min_turns=5, looping_factor=1.0).codes()
    ['looping']
    """
    reduced = summarised(job.con, job.id)
    if reduced is not None:  # the checks read turns, outputs and errors: not here
        where = reduced.get("where") or reduced.get("engine")
        return Findings(
            [
                Finding(
                    "not_diagnosed",
                    "info",
                    "Not diagnosed: this job is summarised",
                    f"Its attempts stayed in {where}; only per-task counts are here, and the "
                    "checks read each attempt's turns, output and error.",
                )
            ]
        )
    o = options or DiagnosisOptions()
    if overrides:
        o = replace(o, **overrides)
    rows = _per_task(job, o)
    found: list[Finding] = []
    found += _all_zero(job)
    found += _looping(job, rows, o)
    found += _short_output(rows, o)
    found += _turn_spread(rows, o)
    found += _confident_wrong(job, o)
    found += _timeouts(job, against, o)
    found += _platform(job, o)
    found.sort(key=lambda f: _SEVERITY_ORDER[f.severity])
    return Findings(found)
