"""``python -m benchmarks generate ...`` writes the data; ``python -m benchmarks run ...``
times the stages and writes ``benchmarks/RESULTS.md``."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("generate", "run", "stage"):
        raise SystemExit("usage: python -m benchmarks generate|run [options]  (see --help)")
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "generate":
        from .generate import main as generate_main

        generate_main(rest)
    elif command == "run":
        from .runner import main as run_main

        run_main(rest)
    else:
        from .runner import stage_main

        stage_main(rest)


if __name__ == "__main__":
    main()
