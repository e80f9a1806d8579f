"""Write the sample experiment export ``ops-helper.json`` (``envloop.experiment-result/v1``).

An agent ``ops-helper`` answered twelve Linux questions; two evaluators judge the
traces: ``answer_accuracy`` (compares with a reference answer) and ``answer_quality``.
What there is to find: a judge call that failed and was re-evaluated (run 2), one that
failed and was not, a row still running, a succeeded row without a number (a case added
by listen mode has no reference), a live manual correction and an undone one.
Deterministic: run it again and the file is the same.

    python sample_data/experiments/generate.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

QA = [
    ("How do I see the current working directory?", "pwd", "Run pwd.", 95, 85),
    ("How do I list files, including hidden ones?", "ls -a", "Use ls -la (or ls -a).", 70, 40),
    ("Show disk usage per folder.", "du -sh *", "du -sh *", 90, 80),
    ("How do I find files named *.log under /var?", "find /var -name '*.log'", "find /var -name '*.log'", 100, 90),
    ("How do I see which process listens on port 8080?", "netstat", "ss -ltnp | grep 8080 (or lsof -i :8080)", 35, 30),
    ("How do I follow a log file as it grows?", "tail -f app.log", "tail -f app.log", 95, 88),
    ("How do I count lines in a file?", "wc -l file", "wc -l file", 98, 92),
    ("How do I make a script executable?", "chmod +x script.sh", "chmod +x script.sh", 96, 90),
    ("How do I check free memory?", "free -h", "free -h", 94, 86),
    ("How do I search a folder for a word, recursively?", "grep -r word .", "grep -rn word .", 85, 75),
    ("How do I see the last reboot time?", "uptime -s", None, None, 70),
    ("How do I compress a folder into a tar.gz?", "tar czf out.tar.gz folder/", None, None, 82),
]
START = "2026-11-20T08:{:02d}:00Z"


def document() -> dict[str, Any]:
    cases, results = [], []
    for i, (q, out, ref, acc, qual) in enumerate(QA, start=1):
        tid = f"tr_{i:03d}"
        listen = ref is None
        cases.append({
            "trace_id": tid, "agent": "ops-helper", "parent_trace_id": None, "status": "success",
            "trace_started_at": None if i == 12 else START.format(i * 3),
            "ingested_at": START.format(i * 3 + 1),
            "input": [{"role": "system", "content": "You are a helpful ops assistant."},
                      {"role": "user", "content": q}] if i % 3 == 0 else q,
            "output": out, "reference": ref, "reference_source": None if ref is None else ("dataset" if i % 2 else "manual"),
            "added_by": "listen" if listen else "selection",
            "tags": {"topic": "files" if i in (2, 3, 4, 7, 8, 10, 12) else "system"},
        })  # fmt: skip
        when = f"2026-11-20T09:{i:02d}:00Z"
        if i == 5:  # the judge failed, then the pair was re-evaluated
            results.append(_row(f"r{i}a", tid, "answer_accuracy", "failed", None, when, run=1,
                                error="judge model unreachable (timeout after 60 s)"))  # fmt: skip
            results.append(_row(f"r{i}a2", tid, "answer_accuracy", "succeeded", acc, f"2026-11-20T10:{i:02d}:00Z",
                                run=2, reason="Names a tool but not the one asked for."))  # fmt: skip
        elif i == 9:  # failed and not re-evaluated yet
            results.append(_row(f"r{i}a", tid, "answer_accuracy", "failed", None, when,
                                error="judge returned no score (malformed JSON)"))  # fmt: skip
        elif ref is None:
            results.append(_row(f"r{i}a", tid, "answer_accuracy", "succeeded", None, when,
                                reason="No reference answer: no score."))  # fmt: skip
        else:
            reason = "Matches the reference." if acc >= 90 else "Partly matches the reference."
            points = [{"name": "command", "score": acc, "evidence": out}]
            results.append(_row(f"r{i}a", tid, "answer_accuracy", "succeeded", acc, when, reason=reason, points=points))
        if i == 12:
            results.append(_row(f"r{i}q", tid, "answer_quality", "running", None, None))
        else:
            reason = "Clear and complete." if qual >= 80 else "Too short to be useful."
            results.append(_row(f"r{i}q", tid, "answer_quality", "succeeded", qual, when, reason=reason))
    corrections = [
        {"result_id": "r2q", "run": 1, "score": 65, "reason": "The short answer is what the user asked for.",
         "by": "li.wei", "at": "2026-11-20T11:00:00Z", "undone_by": None, "undone_at": None},
        {"result_id": "r1q", "run": 1, "score": 100, "reason": "Judge penalised brevity wrongly.",
         "by": "li.wei", "at": "2026-11-20T11:05:00Z", "undone_by": "a.khan", "undone_at": "2026-11-20T12:00:00Z"},
    ]  # fmt: skip
    return {
        "schema_version": "envloop.experiment-result/v1",
        "experiment": {
            "id": "exp_ops01", "name": "ops-helper answers", "agent": "ops-helper", "type": "single-group",
            "status": "running", "created_at": "2026-11-20T08:55:00Z", "started_at": "2026-11-20T09:00:00Z",
            "finished_at": None,
            "listen": {"enabled": True, "since": "2026-11-20T09:00:00Z", "stopped_at": None},
            "evaluators": [
                {"name": "answer_accuracy", "kind": "preset", "needs_reference": True, "version": "3",
                 "judge_model": "judge-large@2", "scale": {"min": 0, "max": 100}},
                {"name": "answer_quality", "kind": "preset", "needs_reference": False, "version": "2",
                 "judge_model": "judge-large@2", "scale": {"min": 0, "max": 100}},
            ],
        },  # fmt: skip
        "cases": cases,
        "results": results,
        "corrections": corrections,
    }


def _row(rid: str, tid: str, ev: str, status: str, score: float | None, when: str | None, *,
         run: int = 1, reason: str | None = None, error: str | None = None,
         points: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    return {"id": rid, "trace_id": tid, "evaluator": ev, "status": status, "score": score, "reason": reason,
            "points": points or [], "error": error, "evaluated_at": when, "run": run}  # fmt: skip


def write(folder: Path) -> Path:
    path = folder / "ops-helper.json"
    path.write_text(json.dumps(document(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent))
