"""Write 27 Pythia-style lm-evaluation-harness 0.3 results files (results only, no samples).

Usage (from the project root)::

    .venv/bin/python tests/data/lm_eval/pythia_run/generate.py

The shape is exactly that of EleutherAI's published Pythia evaluations
(``evals/pythia-v1/pythia-160m/zero-shot/160m_step<N>.json``, two of which are copied
unchanged in ``tests/data/lm_eval/pythia-160m/``): ``results`` {task: {metric: v,
metric_stderr: v}}, ``versions`` and ``config`` with ``model_args``
``"pretrained=EleutherAI/pythia-160m,revision=step<N>"``. The numbers are made up,
deterministically: each task's accuracy climbs from chance towards a final value along
``1 − exp(−step / 30000)`` with a seeded wobble, its stderr that of a mean over the
task's docs (lm-eval's ``mean_stderr``: ``√(p(1 − p) / (n − 1))``); LAMBADA's perplexity
falls. Steps are Pythia's checkpoint schedule thinned to 27: 0, 1, 2, 4, ..., 512, then
1000, 3000, 13000, 23000, ..., 143000.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

SEED = 160
STEPS = [0, *(2**i for i in range(10)), 1000, 3000, *range(13000, 143001, 10000)]
#: task: (docs, chance, final accuracy, metrics in lm-eval 0.3's order)
TASKS = {
    "lambada_openai": (5153, 0.0, 0.33, ("ppl", "acc")),
    "piqa": (1838, 0.5, 0.62, ("acc", "acc_norm")),
    "winogrande": (1267, 0.5, 0.53, ("acc",)),
    "arc_easy": (2376, 0.25, 0.44, ("acc", "acc_norm")),
}


def _doc(step: int, rng: np.random.Generator) -> dict[str, object]:
    grow = 1 - math.exp(-step / 30000)
    results: dict[str, dict[str, float]] = {}
    for task, (docs, chance, final, metrics) in TASKS.items():
        entry: dict[str, float] = {}
        for metric in metrics:
            if metric == "ppl":
                value = 40.0 + 3.0e5 * math.exp(-step / 2000) + float(rng.normal(0, 0.4))
                entry["ppl"] = value
                entry["ppl_stderr"] = value * 0.035
                continue
            shift = -0.02 if metric == "acc_norm" else 0.0
            p = chance + (final - chance) * grow + shift + float(rng.normal(0, 0.004))
            p = min(max(p, 1 / docs), 1 - 1 / docs)
            entry[metric] = round(p * docs) / docs
            entry[f"{metric}_stderr"] = math.sqrt(entry[metric] * (1 - entry[metric]) / (docs - 1))
        results[task] = entry
    return {
        "results": results,
        "versions": {task: 0 for task in TASKS},
        "config": {
            "model": "hf-causal",
            "model_args": f"pretrained=EleutherAI/pythia-160m,revision=step{step}",
            "num_fewshot": 0,
            "batch_size": 16,
            "device": "cuda:0",
            "no_cache": True,
            "limit": None,
            "bootstrap_iters": 100000,
            "description_dict": {},
        },
    }


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    for step in STEPS:
        text = json.dumps(_doc(step, rng), indent=2) + "\n"
        (out / f"160m_step{step}.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
