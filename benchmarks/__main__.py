"""``python -m benchmarks generate ...`` writes the data; ``python -m benchmarks run ...``
times the stages and writes ``benchmarks/RESULTS.md``; ``python -m benchmarks report``
re-renders it from ``benchmarks/data/results.json``."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("generate", "run", "stage", "report"):
        raise SystemExit("usage: python -m benchmarks generate|run|report [options]  (see --help)")
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "generate":
        from .generate import main as generate_main

        generate_main(rest)
    elif command == "run":
        from .runner import main as run_main

        run_main(rest)
    elif command == "report":  # re-render RESULTS.md from benchmarks/data/results.json
        import json

        from .generate import DATA
        from .report import write_markdown
        from .runner import HERE

        report = json.loads((DATA / "results.json").read_text())
        (HERE / "RESULTS.md").write_text(write_markdown(report))
        print(f"wrote {HERE / 'RESULTS.md'}")
    else:
        from .runner import stage_main

        stage_main(rest)


if __name__ == "__main__":
    main()
