"""Write the Terminal-Bench 1 fixture with the harness's own result models.

Run with a separate venv that has the ``terminal-bench`` wheel (never a project
dependency)::

    python3 -m venv /work/tbvenv
    /work/tbvenv/bin/pip install pydantic numpy
    /work/tbvenv/bin/pip download --no-deps --only-binary=:all: --python-version 3.12 \
        terminal-bench==0.2.18 -d /tmp/tbwheel
    /work/tbvenv/bin/pip install --no-deps --ignore-requires-python \
        /tmp/tbwheel/terminal_bench-0.2.18-py3-none-any.whl
    /work/tbvenv/bin/python tests/data/terminal_bench/make_fixture.py

terminal-bench 0.2.x requires Python >= 3.12 and a heavy dependency tree (docker,
litellm, streamlit...); only three of its modules are needed here
(``harness/models.py``, ``agents/failure_mode.py``, ``parsers/base_parser.py``), so the
package's ``__init__`` files (which import the whole harness) are bypassed with empty
parent packages, and those modules are imported as installed. The file is serialised
exactly as ``Harness._write_results`` does: ``results.model_dump_json(indent=4)``, and
trial names are ``Harness._get_trial_name``'s ``f"{task}.{attempt}-of-{n}.{run_id}"``.

Deterministic: a seeded RNG makes the uuids, fixed times make the timestamps, so running
it again writes the same bytes. Tests only read the JSON; nothing imports this script.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import random
import sys
import types
import uuid
from pathlib import Path

RUN_ID = "2025-06-01__12-00-00"
AGENT = "terminus"
MODEL = "claude-sonnet-4"
N_ATTEMPTS = 3
OUT = Path(__file__).resolve().parent / f"{RUN_ID}_{AGENT}_{MODEL}" / "results.json"


def _harness_models() -> types.ModuleType:
    """``terminal_bench.harness.models`` without running the package ``__init__``s."""
    spec = importlib.util.find_spec("terminal_bench")  # finds, does not execute
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("terminal-bench is not installed in this interpreter")
    root = Path(next(iter(spec.submodule_search_locations)))
    for name in ("", ".agents", ".parsers", ".harness", ".utils"):
        full = "terminal_bench" + name
        pkg = types.ModuleType(full)
        pkg.__path__ = [str(root / name.lstrip(".").replace(".", "/"))]
        sys.modules[full] = pkg
    import terminal_bench.harness.models as models

    return models


# task -> per attempt: (is_resolved, failure_mode, parser_results)
P, F = "passed", "failed"
TASKS: dict[str, tuple[str, list[tuple[bool | None, str, dict[str, str] | None]]]] = {
    "hello-world": (
        'Create a file called hello.txt in the current directory. Write "Hello, world!" to it.',
        [
            (True, "unset", {"test_hello_file_exists": P, "test_hello_file_content": P}),
            (True, "unset", {"test_hello_file_exists": P, "test_hello_file_content": P}),
            (True, "unset", {"test_hello_file_exists": P, "test_hello_file_content": P}),
        ],
    ),
    "fix-git": (
        "I just made some changes to my personal site and checked out master, but now I "
        "can't find those changes. Please help me find them and merge them into master.",
        [
            (True, "unset", {"test_about_file": P, "test_layout_file": P}),
            (False, "unset", {"test_about_file": P, "test_layout_file": F}),
            (None, "agent_timeout", None),
        ],
    ),
    "crack-7z-hash": (
        'You need to create a file called "solution.txt" with the word found in '
        '"secret_file.txt" in the "secrets.7z" archive.',
        [
            (True, "unset", {"test_solution_file": P}),
            (True, "unset", {"test_solution_file": P}),
            (False, "agent_timeout", {"test_solution_file": F}),  # tests ran after the timeout
        ],
    ),
    "crack-7z-hash.hard": (
        'You need to create a file called "solution.txt" with the word found in '
        '"secret_file.txt" in the "secrets.7z" archive. The archive\'s password is '
        "not in any wordlist.",
        [
            (False, "unset", {"test_solution_file": F}),
            (None, "parse_error", None),
            (False, "unset", {"test_solution_file": F}),
        ],
    ),
    "csv-to-parquet": (
        "Convert the file '/app/data.csv' into a Parquet file named '/app/data.parquet'.",
        [
            (True, "unset", {"test_parquet_exists": P, "test_data_matches": P}),
            (False, "unset", {"test_parquet_exists": P, "test_data_matches": F}),
            (True, "unset", {"test_parquet_exists": P, "test_data_matches": P}),
        ],
    ),
    "play-zork": (
        "Your task is to play the game Zork to reach the end. You should finish the game "
        "with the maximum possible score.",
        [
            (False, "unset", {"test_zork_end": F, "test_zork_score": F}),
            (None, "test_timeout", None),
            (False, "unset", {"test_zork_end": F, "test_zork_score": F}),
        ],
    ),
}


def main() -> None:
    models = _harness_models()
    from terminal_bench.agents.failure_mode import FailureMode
    from terminal_bench.parsers.base_parser import UnitTestStatus

    rng = random.Random(20250601)
    start = dt.datetime(2025, 6, 1, 12, 0, 0, tzinfo=dt.UTC)
    trials = []
    for t, (task, (instruction, outcomes)) in enumerate(TASKS.items()):
        for attempt, (resolved, mode, parsed) in enumerate(outcomes, start=1):
            began = start + dt.timedelta(minutes=7 * (t * N_ATTEMPTS + attempt))
            name = f"{task}.{attempt}-of-{N_ATTEMPTS}.{RUN_ID}"  # Harness._get_trial_name
            trials.append(
                models.TrialResults(
                    id=uuid.UUID(int=rng.getrandbits(128), version=4),
                    trial_name=name,
                    task_id=task,
                    instruction=instruction,
                    is_resolved=resolved,
                    failure_mode=FailureMode(mode),
                    parser_results=(
                        None
                        if parsed is None
                        else {k: UnitTestStatus(v) for k, v in parsed.items()}
                    ),
                    recording_path=f"{RUN_ID}/{task}/{name}/sessions/agent.cast",
                    total_input_tokens=rng.randrange(20_000, 400_000),
                    total_output_tokens=rng.randrange(1_000, 30_000),
                    trial_started_at=began.isoformat(),
                    trial_ended_at=(began + dt.timedelta(minutes=6)).isoformat(),
                    agent_started_at=(began + dt.timedelta(seconds=5)).isoformat(),
                    agent_ended_at=(began + dt.timedelta(minutes=5)).isoformat(),
                    test_started_at=(began + dt.timedelta(minutes=5, seconds=2)).isoformat(),
                    test_ended_at=(began + dt.timedelta(minutes=5, seconds=50)).isoformat(),
                )
            )
    rng.shuffle(trials)  # the harness appends trials as they finish, in no task order
    results = models.BenchmarkResults(
        id=uuid.UUID(int=rng.getrandbits(128), version=4), results=trials
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(results.model_dump_json(indent=4))  # Harness._write_results
    print(f"wrote {OUT}: accuracy {results.accuracy}, pass_at_k {results.pass_at_k}")


if __name__ == "__main__":
    main()
