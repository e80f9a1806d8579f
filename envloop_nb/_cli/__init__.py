"""The command line: ``python -m envloop_nb gate`` and ``report`` (also ``envloop-nb``).

``gate BASELINE CANDIDATE``
    A regression gate for CI. Both sources are loaded with the toolkit's own loaders into
    a temporary in-memory workspace (as the jobs ``baseline`` and ``candidate``), the
    comparison guard runs (the same frozen work: dataset and revision, runner, tasks and
    digests, attempts per task), and the paired difference *candidate − baseline* of the
    metric is taken on the tasks both jobs requested and scored completely, with its
    ``1 − alpha`` task-bootstrap interval ``[lo, hi]`` — the comparison's own paired
    statistics (:meth:`envloop_nb.Comparison.paired`), never a second definition. With
    the margin ``δ = --max-drop``:

    - exit 0, *no regression*: ``lo ≥ −δ`` (the whole interval is above the margin);
    - exit 1, *regression*: the difference is below ``−δ`` and ``hi < 0`` (a drop beyond
      the margin and beyond noise);
    - exit 2, *cannot tell*, with the reason: anything else (the interval reaches below
      ``−δ`` without the drop being established: underpowered), and before any number:
      a source that does not load (a missing file too), jobs that are not comparable,
      either job's coverage (scored / requested attempts) below ``--min-coverage``, fewer
      than half of the tasks shared and completely scored (the comparison's own rule),
      fewer than ``--min-tasks`` such tasks, or a metric that is undefined (a pass rate
      of non-binary rewards without ``--threshold``).

    It prints one line (or, with ``--json``, one JSON object) and never says "no
    regression" when it cannot tell.

``report PATH… -o OUT``
    One path: that job's standalone HTML report (:meth:`envloop_nb.Job.export_html`);
    2–5 paths: the comparison report of those jobs, the first the baseline
    (:meth:`envloop_nb.Comparison.export_html`). Which report a set of paths makes is
    decided in one place, :data:`REPORTS` / :func:`report_kind`.

``report --run PATH… -o OUT``
    A training run's report (:meth:`envloop_nb.Run.export_html`): every checkpoint the
    paths hold (a folder: every job in it, as ``ws.load_all``), their steps from the
    ``agent_round`` label, else the lm-eval revision's step (``step143000``).

Exit codes: argparse's own usage errors exit 2 as well (an unknown option, a missing
argument), so a gate's 2 always means "not a pass".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn, TextIO

from .._errors import EnvloopError
from .regression import (
    EXIT_CANNOT_TELL,
    EXIT_NO_REGRESSION,
    EXIT_REGRESSION,
    Coverage,
    GateResult,
    decide,
    gate,
)
from .reports import REPORTS, report, report_kind

__all__ = [
    "EXIT_CANNOT_TELL",
    "EXIT_NO_REGRESSION",
    "EXIT_REGRESSION",
    "REPORTS",
    "Coverage",
    "GateResult",
    "decide",
    "gate",
    "main",
    "report",
    "report_kind",
    "run",
]

# -- the command line ------------------------------------------------------------------
_GATE_HELP = """\
Is CANDIDATE worse than BASELINE beyond noise? Both are loaded with envloop_nb's loaders
(any supported source: EnvLoop exports, Harbor / Terminal-Bench folders, Inspect logs,
lm-eval output, tau-bench results, Parquet / CSV tables), the comparison guard runs (same
frozen work), and the paired difference candidate - baseline of the metric on the tasks
both scored completely gets its (1 - alpha) task-bootstrap interval [lo, hi].

With the margin d = --max-drop:
  exit 0  NO REGRESSION  lo >= -d (the whole interval is above the margin)
  exit 1  REGRESSION     difference < -d and hi < 0 (beyond the margin and beyond noise)
  exit 2  CANNOT TELL    anything else, with the reason: the interval reaches below -d
                         (underpowered), fewer than --min-tasks shared complete tasks,
                         not comparable, coverage below --min-coverage, fewer than half
                         the tasks shared and complete, a source that does not load
                         (a missing file too), an unexpected error (its traceback on
                         stderr), or a usage error (argparse's own exit 2)
One line is printed (one JSON object with --json). It never says NO REGRESSION when it
cannot tell.
"""

_REPORT_HELP = """\
Write a standalone HTML report (one self-contained file, no network needed to read it):
one PATH makes that job's report (summary with coverage, charts, tables, diagnosis,
hard cases); 2-5 PATHs make the comparison report of those jobs, the first the baseline
(guard, leaderboard, charts, tables, paired statistics); with --run, PATHs (files or
folders of checkpoints) make a training run's report (curve over training with its noise
band, changes beyond noise, best checkpoint, tasks learned and forgotten; steps from the
agent_round label or the lm-eval revision). Exit 0 when written, 2 when a source does
not load, the paths are too many or do not make a run.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envloop-nb",
        description="envloop_nb from the command line: a regression gate and HTML reports.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--format", default=None, help="the sources' format when detection is ambiguous (e.g. table, envloop, harbor, inspect)")  # fmt: skip
        p.add_argument("--threshold", type=float, default=None, help="pass threshold: a pass is reward >= THRESHOLD (default: reward 1)")  # fmt: skip
        p.add_argument("--policy", choices=("unknown", "failure"), default="unknown", help="a requested attempt without reward: stays missing (unknown, default) or counts as 0 (failure)")  # fmt: skip

    g = sub.add_parser("gate", help="exit 0/1/2: no regression / regression / cannot tell", description=_GATE_HELP, formatter_class=fmt)  # fmt: skip
    g.add_argument("baseline", metavar="BASELINE")
    g.add_argument("candidate", metavar="CANDIDATE")
    g.add_argument("--metric", choices=("score", "pass"), default="score", help="score: mean reward per task (default); pass: pass rate per task")  # fmt: skip
    g.add_argument("--max-drop", type=float, default=0.02, help="the margin d: a drop up to d is tolerated (default 0.02, in the metric's units)")  # fmt: skip
    g.add_argument("--alpha", type=float, default=0.05, help="the interval is (1 - alpha) (default 0.05: 95%%)")  # fmt: skip
    g.add_argument("--min-coverage", type=float, default=0.9, help="least share of each job's requested attempts that must be scored (default 0.9)")  # fmt: skip
    g.add_argument("--min-tasks", type=int, default=20, help="least number of tasks shared and completely scored (default 20)")  # fmt: skip
    g.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")  # fmt: skip
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of the line")  # fmt: skip
    common(g)
    r = sub.add_parser("report", help="write a job's or a comparison's standalone HTML report", description=_REPORT_HELP, formatter_class=fmt)  # fmt: skip
    r.add_argument("paths", nargs="+", metavar="PATH")
    r.add_argument("-o", "--output", required=True, help="the HTML file to write")
    r.add_argument("--run", action="store_true", help="the PATHs are one training run's checkpoints (files or folders): a run report")  # fmt: skip
    common(r)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    stdout = out if out is not None else sys.stdout
    args = _parser().parse_args(argv)
    if args.command == "gate":
        try:
            result = gate(
                args.baseline,
                args.candidate,
                metric=args.metric,
                max_drop=args.max_drop,
                alpha=args.alpha,
                min_coverage=args.min_coverage,
                min_tasks=args.min_tasks,
                policy=args.policy,
                threshold=args.threshold,
                fmt=args.format,
                resamples=args.resamples,
                seed=args.seed,
            )
        except (EnvloopError, ValueError) as exc:
            result = GateResult(EXIT_CANNOT_TELL, str(exc), args.metric, args.max_drop, 1 - args.alpha)  # fmt: skip
        except Exception as exc:  # a crash must not exit 1, which reads as "regression"
            traceback.print_exc()
            why = f"the gate failed: {type(exc).__name__}: {exc}"
            result = GateResult(EXIT_CANNOT_TELL, why, args.metric, args.max_drop, 1 - args.alpha)
        text = json.dumps(result.to_dict()) if args.json else result.line()
        print(text, file=stdout)
        return result.exit_code
    try:
        written = report(
            args.paths, args.output, policy=args.policy, threshold=args.threshold,
            fmt=args.format, run=args.run,
        )  # fmt: skip
    except (EnvloopError, ValueError) as exc:
        print(f"envloop-nb report: {exc}", file=sys.stderr)
        return EXIT_CANNOT_TELL
    except Exception:  # the same exit as a refusal: 2, never 1
        traceback.print_exc()
        return EXIT_CANNOT_TELL
    print(str(written), file=stdout)
    return 0


def run() -> NoReturn:
    """The process's entry (``python -m envloop_nb``, the ``envloop-nb`` script):
    :func:`main` on the command line's arguments, then the process ends at once.

    Once the command has printed its line (its files written and closed, the workspace
    closed) nothing is left to do but the interpreter's teardown — every module of
    pandas, pyarrow and DuckDB freed one by one, ~0.09 s of the gate's 1M-attempt run —
    so the streams are flushed and the process exits with the code. The gate also runs
    without the cyclic garbage collector: a command of a second or two whose memory is
    bounded by its two loads, where each full collection walked every object the
    imports made (~0.04 s in all). Arrow allocates from the C heap unless
    ``ARROW_DEFAULT_MEMORY_POOL`` says otherwise (see the comment below).
    """
    # Arrow's default pool (mimalloc) asks for transparent huge pages on its arenas: where
    # the kernel grants them on request (``madvise``, Debian's default) each new 2 MB page
    # is zeroed at its first touch, which on a VM whose memory is backed lazily stalled
    # the gate's Arrow steps by 0.2-0.35 s in about a third of the runs. The C heap has no
    # such pages; a pool the user chose is kept.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if sys.argv[1:2] == ["gate"]:
        gc.disable()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
