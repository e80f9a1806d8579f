"""``python -m envloop_nb``: the command line (see :mod:`envloop_nb._cli`)."""

from __future__ import annotations

from ._cli import run

if __name__ == "__main__":
    run()
