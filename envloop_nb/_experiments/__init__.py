"""Experiments: traces judged by evaluators (numbers, corrections, runs, listen mode)."""
