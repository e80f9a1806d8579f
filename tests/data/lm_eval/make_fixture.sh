#!/usr/bin/env bash
# Regenerate the lm-eval fixture in this folder by running lm-evaluation-harness itself,
# offline, with its dummy model, on the local tasks in tasks/ (12 docs in docs.jsonl).
#
#   LM_EVAL=/work/lmevalvenv/bin/lm_eval bash tests/data/lm_eval/make_fixture.sh
#
# lm-eval is NOT a dependency of envloop_nb: install it in a venv of its own
# (python3 -m venv /work/lmevalvenv; pip install torch==2.13.0; pip install lm-eval).
# Output: run/envloop-dummy/results_<time>.json and samples_<task>_<time>.jsonl, copied
# unchanged except that absolute paths of this machine are replaced by "<local>".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lm_eval="${LM_EVAL:-/work/lmevalvenv/bin/lm_eval}"
python="$(dirname "$lm_eval")/python"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export HF_HOME="$out/hf" TOKENIZERS_PARALLELISM=false
cd "$here/tasks"  # data_files and --include_path are relative to this folder
"$lm_eval" --model dummy --model_args pretrained=envloop-dummy \
    --tasks envloop_group --include_path . --log_samples --seed 1234 \
    --output_path "$out/run"
rm -rf "$here/run"
mkdir -p "$here/run"
cp -r "$out/run/." "$here/run/"
# Scrub absolute local paths (the only change made to lm-eval's files).
"$python" - "$here/run" "$here" "$out" "$HOME" <<'PY'
import pathlib, sys
root = pathlib.Path(sys.argv[1])
prefixes = sorted({p for p in sys.argv[2:] if p and p != "/"}, key=len, reverse=True)
for f in sorted(root.rglob("*")):
    if not f.is_file():
        continue
    text = f.read_text(encoding="utf-8")
    new = text
    for p in prefixes:
        new = new.replace(p, "<local>")
    if new != text:
        f.write_text(new, encoding="utf-8")
        print(f"scrubbed local paths in {f.relative_to(root)}")
PY
# results_only/: the same run's results as lm-eval writes them without --log_samples (its
# task_hashes, computed from the samples, are then empty); no samples beside them.
"$python" - "$here" <<'PY'
import json, pathlib, sys
here = pathlib.Path(sys.argv[1])
src = next((here / "run").glob("*/results_*.json"))
doc = json.loads(src.read_text(encoding="utf-8"))
doc["task_hashes"] = {}
out = here / "results_only" / src.parent.name / src.name
out.parent.mkdir(parents=True, exist_ok=True)
for old in out.parent.glob("results_*.json"):
    old.unlink()
out.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
PY
# two_runs/: this run and a second one (doc 0 of envloop_alpha answered "no") side by side in
# one model folder, as a rerun into the same --output_path leaves them (make_two_runs.py).
"$python" "$here/make_two_runs.py"
find "$here/run" "$here/results_only" "$here/two_runs" -type f | sort
