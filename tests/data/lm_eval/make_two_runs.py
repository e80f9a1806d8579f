"""two_runs/: two lm-eval runs written into one model folder, as a second run (or a second
checkpoint) with the same ``--output_path`` leaves them: ``results_<time>.json`` and
``samples_<task>_<time>.jsonl`` per run, told apart only by lm-eval's ``date_id``.

The first run is run/'s files unchanged. The second is the same run in which the model
answered doc 0 of envloop_alpha "no" (three repeats) instead of "lol": that doc's
sample lines are rescored as lm-eval scores them (the tasks' filters and metrics, see
tasks/), and the results' per-task means and stderrs and the group's size-weighted means
and pooled stderrs are recomputed with lm-eval's own formulas
(``lm_eval/api/metrics.py``: ``mean``, ``mean_stderr``, ``aggregate_subtask_metrics``,
``pooled_sample_stderr``). Recomputing the first run reproduces its results exactly (checked
below). ``bleu`` (a corpus metric, 0.0 in both) is kept.

    python tests/data/lm_eval/make_two_runs.py
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "run" / "envloop-dummy"
OUT = HERE / "two_runs" / "envloop-dummy"
LATER = 1406.3817  # seconds between the two runs
STAMP_B = "2026-12-01T12-31-41.279001"  # lm-eval: datetime.now().isoformat().replace(":", "-")
TASKS = ("envloop_alpha", "envloop_beta")
MEANS = ("exact_match", "char_overlap")  # the metrics aggregated by mean
FILTERS = ("strict", "vote")


def _char_overlap(reference: str, prediction: str) -> float:  # tasks/lm_eval_fixture_utils.py
    ref, pred = set(reference.lower()), set(prediction.lower())
    return len(ref & pred) / len(ref) if ref else 0.0


def _stderr(values: list[float]) -> float:
    mu = sum(values) / len(values)
    return math.sqrt(sum((x - mu) ** 2 for x in values) / (len(values) - 1)) / math.sqrt(
        len(values)
    )


def _rescore(doc: dict, answer: str) -> dict:
    """The sample line of ``doc`` had the model answered ``answer`` on every repeat."""
    doc = dict(doc)
    kept = answer if doc["filter"] == "strict" else answer[0]  # regex (\w+) / vote, (\w)
    doc["resps"] = [[answer] * len(doc["resps"][0])]
    doc["filtered_resps"] = [kept]
    doc["exact_match"] = float(kept.lower() == doc["target"].lower())  # ignore_case
    doc["char_overlap"] = _char_overlap(doc["target"], kept)
    doc["bleu"] = [doc["target"], kept]
    return doc


def _recompute(results: dict, samples: dict[str, list[dict]]) -> dict:
    results = json.loads(json.dumps(results))
    per_task: dict[tuple[str, str, str], tuple[float, float]] = {}
    for task in TASKS:
        entry = results["results"][task]
        for metric in MEANS:
            for filt in FILTERS:
                values = [s[metric] for s in samples[task] if s["filter"] == filt]
                mean, err = sum(values) / len(values), _stderr(values)
                entry[f"{metric},{filt}"], entry[f"{metric}_stderr,{filt}"] = mean, err
                per_task[task, metric, filt] = (mean, err)
    sizes = [results["n-samples"][t]["effective"] for t in TASKS]
    for key in ("results", "groups"):
        group = results[key]["envloop_group"]
        for metric in MEANS:
            for filt in FILTERS:
                means = [per_task[t, metric, filt][0] for t in TASKS]
                errs = [per_task[t, metric, filt][1] for t in TASKS]
                group[f"{metric},{filt}"] = sum(
                    m * s for m, s in zip(means, sizes, strict=True)
                ) / sum(sizes)
                pooled = sum((s - 1) * e**2 * s for s, e in zip(sizes, errs, strict=True)) / (
                    sum(sizes) - len(sizes)
                )
                group[f"{metric}_stderr,{filt}"] = math.sqrt(pooled / sum(sizes))
    return results


def _dump_samples(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main() -> None:
    first = next(SRC.glob("results_*.json"))
    stamp_a = first.stem.removeprefix("results_")
    results = json.loads(first.read_text(encoding="utf-8"))
    texts = {t: (SRC / f"samples_{t}_{stamp_a}.jsonl").read_text(encoding="utf-8") for t in TASKS}
    samples = {t: [json.loads(line) for line in texts[t].splitlines()] for t in TASKS}
    assert _recompute(results, samples) == results, "the formulas do not reproduce run/"
    assert all(_dump_samples(samples[t]) == texts[t] for t in TASKS), "not lm-eval's dump"
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    shutil.copy(first, OUT / first.name)
    for task in TASKS:
        name = f"samples_{task}_{stamp_a}.jsonl"
        shutil.copy(SRC / name, OUT / name)
    later = {t: list(rows) for t, rows in samples.items()}
    later["envloop_alpha"] = [
        _rescore(r, "no") if r["doc_id"] == 0 else r for r in later["envloop_alpha"]
    ]
    second = _recompute(results, later)
    second["date"] = results["date"] + LATER
    second["total_evaluation_time_seconds"] = "41.90327114099974"
    (OUT / f"results_{STAMP_B}.json").write_text(
        json.dumps(second, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    for task in TASKS:
        (OUT / f"samples_{task}_{STAMP_B}.jsonl").write_text(
            _dump_samples(later[task]), encoding="utf-8"
        )
    for path in sorted(OUT.iterdir()):
        print(path.relative_to(HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
