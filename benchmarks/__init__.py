"""Benchmarks of envloop_nb at scale (issue 6): ``python -m benchmarks generate|run``."""
