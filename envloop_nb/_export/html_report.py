"""Standalone HTML reports of a job and of an experiment (``job.export_html``,
``exp.export_html``): what the panels show, in one self-contained file for people who do
not run Jupyter (see :mod:`envloop_nb._present.report_html`).

A job's report: the summary cards with their coverage, the job's facts, the pass@k /
pass^k curve and score by subset, the per-subset and per-dimension tables, the diagnosis,
the buckets (with ``rules``) and a bounded sample of hard cases (the tasks with the
lowest pass rate; ``hard_cases`` of them) — for a job with steps, followed by compact
transcripts of up to :data:`HARD_TRANSCRIPTS` of them (per task its attempt with the
lowest reward that has steps: its first :data:`HEAD_STEPS` and last :data:`TAIL_STEPS`
steps, each text cut at :data:`~envloop_nb._present.transcript_html.COMPACT_CHARS`
characters in DuckDB; static HTML, no script). An experiment's: progress, composite and
evaluator cards with ``counted/total``, the case list (bounded) and the correction
history. The file is written atomically.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._behaviour.findings import diagnose
from .._buckets.apply import job_buckets
from .._buckets.rules import BucketRules
from .._compare.state import CompareState
from .._experiments import stats as exp_stats
from .._files import written_whole
from .._metrics.consumption import consumption_rows
from .._metrics.facts import dimension_names, noted_summary, shown_info
from .._metrics.groups import group_summaries
from .._metrics.inference import inference_config
from .._metrics.passk_views import curve, samples
from .._present import charts
from .._present.cases_html import SNIPPET, chat_snippet
from .._present.compare_html import leaderboard_html, paired_html, strengths_html
from .._present.display import format_pct, shorten
from .._present.experiment_html import case_list_html, history_html, summary_card_html
from .._present.job_details import consumption_html, inference_html
from .._present.paged_view import PAGED_CSS
from .._present.panel_html import (
    PANEL_CSS,
    bucket_counts_html,
    facts_html,
    findings_html,
    groups_html,
    note_html,
    rows_table,
)
from .._present.report_html import ReportSection, report_html
from .._present.transcript_html import COMPACT_CHARS, TRANSCRIPT_CSS, transcript_html
from .._store.ref import JobRef, job_k, summarised
from .._store.schema import written_by
from .._store.steps import has_steps
from .._types import Policy
from .behaviour_report import behaviour_section, compare_behaviour_section

__all__ = [
    "HARD_TRANSCRIPTS",
    "HEAD_STEPS",
    "TAIL_STEPS",
    "HtmlReport",
    "export_compare_html",
    "export_experiment_html",
    "export_job_html",
    "write_report",
]


#: Hard cases shown with a compact transcript (the first ones of the table that have steps).
HARD_TRANSCRIPTS = 8
#: Steps shown from the start and from the end of each such attempt.
HEAD_STEPS, TAIL_STEPS = 10, 6


@dataclass(frozen=True)
class HtmlReport:
    """What an HTML export wrote: the file, its size, its sections and charts."""

    path: Path
    bytes: int
    sections: tuple[str, ...]
    charts: int

    def __str__(self) -> str:
        return f"wrote {self.path} ({self.bytes / 1e6:.1f} MB, {len(self.sections)} sections, {self.charts} charts)"


def write_report(path: str | Path, text: str, sections: Sequence[ReportSection]) -> HtmlReport:
    """Write a report's text whole (a partial file never stands at ``path``, nor is one
    left beside it: :func:`envloop_nb._files.written_whole`)."""
    path = Path(path)
    with written_whole(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return HtmlReport(
        path=path,
        bytes=path.stat().st_size,
        sections=tuple(s.title for s in sections),
        charts=sum(len(s.charts) for s in sections),
    )


def _no_curve(job: JobRef, threshold: float | None) -> str:
    """Why a job has no pass@k curve (every point undefined), in words."""
    graded, complete = job.con.execute(
        """SELECT count(*) FILTER (WHERE reward IS NOT NULL AND reward NOT IN (0, 1)),
                  (SELECT count(*) FROM tasks WHERE job_id = $job)
           FROM attempts WHERE job_id = $job""",
        {"job": job.id},
    ).fetchone() or (0, 0)
    if graded and threshold is None:
        return (
            "No pass@k / pass^k chart: the rewards are graded (not only 0 and 1), so an "
            "attempt has no pass without a threshold — export with threshold=0.5 (say) to "
            "count a reward at or above it as a pass."
        )
    if not complete:
        return "No pass@k / pass^k chart: the job has no tasks."
    return (
        "No pass@k / pass^k chart: no task has all its attempts scored yet (pass@k is "
        "defined over complete tasks only)."
    )


def _hard_cases(job: JobRef, policy: Policy, threshold: float | None, limit: int) -> str:
    frame = samples(job.con, job.id, policy=policy, threshold=threshold)
    if not len(frame) or limit <= 0:
        return ""
    hard = frame.sort_values(["pass_rate", "task"], na_position="last").head(limit)
    firsts = {
        task: (error, text, bool(chat))
        for task, error, text, chat in job.con.execute(
            """SELECT task, arg_min(error, attempt) FILTER (WHERE error IS NOT NULL),
                      arg_min(input, attempt) FILTER (WHERE input IS NOT NULL),
                      arg_min(input_is_chat, attempt) FILTER (WHERE input IS NOT NULL)
               FROM attempts WHERE job_id = ? GROUP BY task""",
            [job.id],
        ).fetchall()
    }
    rows = []
    for r in hard.to_dict("records"):
        error, prompt, chat = firsts.get(r["task"], (None, None, False))
        if error:
            text = f"error: {error}"
        elif prompt and chat:
            text = chat_snippet(str(prompt))  # at most SNIPPET + 1 characters: longer is cut
        else:
            text = str(prompt or "")
        rows.append(
            [str(r["task"]), str(r.get("subset") or ""), format_pct(r.get("pass_rate")),
             f"{int(r.get('scored') or 0)}/{int(r.get('n') or 0)}", shorten(text, SNIPPET)]
        )  # fmt: skip
    note = (
        f'<div class="enb-dim">the {len(rows)} tasks with the lowest pass rate of {len(frame):,} '
        "(tasks without a pass rate — not every attempt scored — come last)</div>"
    )
    table = rows_table(
        ["task", "subset", "pass rate", "scored", "input (last user turn) or first error"],
        rows,
        {2, 3},
    )
    shown = _hard_transcripts(job, [str(t) for t in hard["task"]])
    return f'{PANEL_CSS}<div class="enb-panel">{note}{table}</div>{shown}'


def _hard_transcripts(job: JobRef, tasks: list[str]) -> str:
    """Compact transcripts of the hard cases that have steps (see the module docstring),
    queried bounded: the chosen attempts' first and last steps, texts cut in DuckDB."""
    if not tasks or not has_steps(job.con, job.id):
        return ""
    params = {"job": job.id, "tasks": tasks, "k": HARD_TRANSCRIPTS}
    picked = job.con.execute(
        """WITH hard AS (SELECT unnest($tasks) AS task, generate_subscripts($tasks, 1) AS i),
                n AS (SELECT task, attempt, count(*) AS n FROM steps
                      WHERE job_id = $job AND task IN (SELECT task FROM hard) GROUP BY ALL)
           SELECT n.task, n.attempt, n.n, a.reward, a.status
           FROM n JOIN hard h USING (task)
           JOIN attempts a ON a.job_id = $job AND a.task = n.task AND a.attempt = n.attempt
           QUALIFY row_number() OVER (PARTITION BY n.task
                                      ORDER BY a.reward ASC NULLS LAST, n.attempt) = 1
           ORDER BY h.i LIMIT $k""",
        params,
    ).fetchall()
    if not picked:
        return ""
    rel = job.con.execute(
        """SELECT s.task, s.attempt, s.step, s.turn, s.parent_step, s.agent, s.role, s.kind,
                  s.tool, s.call_id, left(s.arguments::VARCHAR, $chars) AS arguments,
                  length(s.arguments::VARCHAR) AS arguments_chars,
                  left(s.content, $chars) AS content, length(s.content) AS content_chars,
                  s.is_error, s.copied, s.tokens_in, s.tokens_out, s.tokens_cached,
                  s.cost_usd, s.model, s.duration_s
           FROM steps s
           JOIN (SELECT unnest($tasks) AS task, unnest($attempts) AS attempt,
                        unnest($n) AS n) p ON p.task = s.task AND p.attempt = s.attempt
           WHERE s.job_id = $job AND (s.step <= $head OR s.step > p.n - $tail)
           ORDER BY s.task, s.attempt, s.step""",
        {
            "job": job.id,
            "tasks": [p[0] for p in picked],
            "attempts": [p[1] for p in picked],
            "n": [p[2] for p in picked],
            "chars": COMPACT_CHARS,
            "head": HEAD_STEPS,
            "tail": TAIL_STEPS,
        },
    )
    names = [d[0] for d in rel.description or ()]
    by_attempt: dict[tuple[str, int], list[dict[str, object]]] = {}
    for row in rel.fetchall():
        r = dict(zip(names, row, strict=True))
        by_attempt.setdefault((str(r["task"]), int(r["attempt"])), []).append(r)
    parts = []
    for task, attempt, n, reward, status in picked:
        info = {"task": task, "attempt": attempt, "reward": reward, "status": status}
        rows = by_attempt.get((task, attempt), [])
        parts.append(transcript_html(rows, info, compact=True, total_steps=n, styles=False).html)
    note = (
        f'<h3 class="enb-hard-tr">Transcripts of {len(parts)} hard case'
        f"{'s' if len(parts) != 1 else ''}</h3>"
        f'<div class="enb-section-note">per task the attempt with the lowest reward that has steps: '
        f"its first {HEAD_STEPS} and last {TAIL_STEPS} steps, each text cut at "
        f"{COMPACT_CHARS:,} characters (job.transcript(task, attempt) shows the whole)</div>"
    )
    return PAGED_CSS + TRANSCRIPT_CSS + note + "".join(parts)


def export_job_html(
    job: JobRef,
    path: str | Path,
    *,
    rules: BucketRules | None = None,
    policy: Policy = "unknown",
    threshold: float | None = None,
    hard_cases: int = 50,
) -> HtmlReport:
    """Write the job's standalone HTML report (see the module docstring)."""
    con, jid = job.con, job.id
    info = shown_info(con, jid)  # the status says when annotations are awaited
    summary = noted_summary(con, jid, policy=policy, threshold=threshold)
    # every requested slot: attempts by state and the slots never dispatched (they add up
    # to tasks × k); a summarised job's slots as far as its counts tell
    states = {s: c for s, c in charts.status_frame(con, jid).itertuples(index=False) if c}
    config = inference_config(con, jid)
    reduced = summarised(con, jid)
    sections = [
        ReportSection(
            "Summary",
            summary._repr_html_(),
            note=f"policy {policy}"
            + ("" if threshold is None else f" · pass threshold {threshold:g}"),
        ),
        ReportSection(
            "Job",
            facts_html(
                info,
                {str(k): int(v) for k, v in states.items()},
                dimensions=dimension_names(con, jid),
                concurrency=config.concurrency,
                titled=False,
            ),
            note=""
            if reduced is None
            else (
                f"summarised: the attempts stayed in {reduced.get('where')}; "
                "this report is built from the per-task counts"
            ),
        ),
        ReportSection(
            "Inference configuration and consumption",
            f'{PANEL_CSS}<div class="enb-panel">{inference_html(config.to_dict())}'
            f"{consumption_html(consumption_rows(con, jid))}</div>",
        ),
    ]
    points = curve(con, jid, policy=policy, threshold=threshold)
    specs = []
    why = "" if points["pass@k"].notna().any() else _no_curve(job, threshold)
    if not why:
        title = f"pass@k / pass^k, k = 1..{job_k(con, jid)}"
        specs.append(charts.curve_chart(points, title=title).to_dict())
    by_subset = group_summaries(con, jid, by="subset", policy=policy, threshold=threshold)
    if len(by_subset):
        scores = by_subset[["value", "score"]].rename(columns={"value": "subset"})
        rate = bool(scores["score"].dropna().between(0, 1).all())
        specs.append(
            charts.bar_chart(
                scores, category="subset", value="score", title="score by subset", percent=rate
            ).to_dict()
        )
    if specs or why:
        sections.append(ReportSection("Charts", note_html(why) if why else "", charts=tuple(specs)))
    tables = groups_html(by_subset, "subset")
    by_dim = group_summaries(con, jid, by="dimension", policy=policy, threshold=threshold)
    if len(by_dim):
        tables += groups_html(by_dim, "dimension")
    if tables:
        sections.append(ReportSection("By subset and dimension", tables))
    sections.append(ReportSection("Diagnosis", findings_html(diagnose(job), titled=False)))
    behaviour = behaviour_section(job, threshold)
    if behaviour is not None:  # a job without steps has no behaviour to show
        sections.append(behaviour)
    if rules is not None:
        result = job_buckets(job, rules, policy=policy, threshold=threshold, allow_partial=True)
        what = "tasks" if rules.level == "task" else "attempts"
        counts = bucket_counts_html(result.counts, f"Buckets of {jid} on {result.metric}", what)
        chart = charts.bucket_chart(result.counts).to_dict()
        note = "PARTIAL: the job is not finished" if result.partial else ""
        sections.append(ReportSection("Buckets", counts, charts=(chart,), note=note))
    hard = _hard_cases(job, policy, threshold, hard_cases)
    if hard:
        sections.append(ReportSection("Hard cases", hard))
    meta = [str(info.get("model") or "-"), f"{info.get('dataset_name') or '-'}@{info.get('dataset_version') or '-'}",
            f"k = {info.get('attempts')}", str(info.get("status") or "-"), str(info.get("source_format"))]  # fmt: skip
    text = report_html(f"Job {jid}", sections, meta=meta, written_by=written_by())
    return write_report(Path(path), text, sections)


def export_experiment_html(exp: JobRef, path: str | Path, *, cases: int = 500) -> HtmlReport:
    """Write the experiment's standalone HTML report (see the module docstring)."""
    con, eid = exp.con, exp.id
    summary = exp_stats.experiment_summary(con, eid)
    ev_rel = exp_stats.evaluator_table(con, eid)
    evaluators = [dict(zip(ev_rel.columns, r, strict=True)) for r in ev_rel.fetchall()]
    case_rel = exp_stats.case_table(con, eid)
    rows = [dict(zip(case_rel.columns, r, strict=True)) for r in case_rel.fetchall()]
    hist_rel = exp_stats.correction_history(con, eid)
    history = [dict(zip(hist_rel.columns, r, strict=True)) for r in hist_rel.fetchall()]
    names = list(summary.evaluators)
    shown = rows[:cases]
    note = "" if len(rows) <= cases else f"the first {cases:,} of {len(rows):,} cases"
    means = [e for e in evaluators if e.get("mean") is not None]
    specs: tuple[dict[str, object], ...] = ()
    if means:
        import pandas as pd

        frame = pd.DataFrame(
            {
                "evaluator": [str(e["evaluator"]) for e in means],
                "mean": [float(e["mean"]) for e in means],
                "counted": [f"{int(e['counted'])}/{int(e['total'])}" for e in means],
            }
        )
        chart = charts.bar_chart(
            frame, category="evaluator", value="mean", title="mean per evaluator (counted rows)",
            percent=False, extra_tooltip=("counted",),
        )  # fmt: skip
        specs = (chart.to_dict(),)
    sections = [
        ReportSection("Summary", summary_card_html(summary.to_dict(), evaluators), charts=specs),
        ReportSection("Cases", case_list_html(shown, names, digits=summary.digits), note=note),
        ReportSection("Corrections", history_html(history, digits=summary.digits)),
    ]
    meta = [
        f"agent {summary.agent or '-'}",
        f"{summary.cases:,} cases × {len(names)} evaluators",
        str(summary),
    ]
    text = report_html(
        f"Experiment {html.unescape(summary.name or eid)}",
        sections,
        meta=meta,
        written_by=written_by(),
    )
    return write_report(Path(path), text, sections)


def export_compare_html(state: CompareState, path: str | Path) -> HtmlReport:
    """Write a comparison's standalone HTML report: the guard (incomparable jobs are
    marked), the leaderboard, radar / bars / curves, the per-subset (and per-dimension)
    tables, strengths and weaknesses in words, and the paired statistics."""
    from .._compare import charts as cmp_charts
    from .._compare.guard import differences, mark
    from .._compare.leaderboard import leaderboard
    from .._compare.paired import paired
    from .._compare.state import colors
    from .._compare.tables import strengths, table, table_html
    from .._present.compare_html import guard_html

    note = mark(state)
    sections = [
        ReportSection("Guard", guard_html(differences(state), len(state.job_ids))),
        ReportSection(
            "Leaderboard",
            leaderboard_html(leaderboard(state), colors(state), state.baseline),
            note=note,
        ),
        ReportSection(
            "Charts",
            charts=(
                cmp_charts.radar(state).to_dict(),
                cmp_charts.bars(state).to_dict(),
                cmp_charts.curves(state).to_dict(),
            ),
            note=note,
        ),
        ReportSection("By subset", table_html(state, "subset"), note=note),
    ]
    if len(table(state, "dimension")):
        sections.append(ReportSection("By dimension", table_html(state, "dimension"), note=note))
    words = strengths(state, "subset")
    if len(words):
        sections.append(ReportSection("Strengths and weaknesses", strengths_html(words)))
    sections.append(ReportSection("Paired statistics", paired_html(paired(state)), note=note))
    behaviour = compare_behaviour_section(state)
    if behaviour is not None:
        sections.append(behaviour)
    meta = [f"{len(state.job_ids)} jobs", f"baseline {state.baseline}", f"policy {state.policy}"]
    text = report_html(
        "Comparison " + " vs ".join(state.job_ids), sections, meta=meta, written_by=written_by()
    )
    return write_report(Path(path), text, sections)
