"""Comparisons of 2-5 jobs as functions of a frozen :class:`CompareState`.

``state`` (the record), ``guard`` (comparability), ``tasks`` (per-task rows derived from
``_metrics.counts.task_counts``), ``tables`` (per-group tables and strengths),
``paired`` (paired statistics and transitions), ``charts`` (chart specs of a state),
``leaderboard`` (the ranked table and the saved snapshots). The ``Comparison`` facade
binds them as methods; nothing here names it.
"""
