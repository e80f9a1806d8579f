"""A training run: many checkpoints of one eval as functions of a frozen :class:`RunState`.

``assemble`` (which jobs, their steps, the comparison guard applied: refused or marked),
``pertask`` (the per-task counts as tasks × steps matrices, the shared task bootstrap),
``curve`` (a metric per step with intervals, coverage and the noise band), ``tests``
(which changes are real: paired tests, multiple-testing adjustment, the best checkpoint,
the minimum detectable effect), ``tasks`` (tasks over training: the matrix, learned,
forgotten and flaky tasks). The ``Run`` facade binds them as methods; nothing here names it.
"""
