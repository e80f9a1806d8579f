"""Harbor jobs (``job``, ``trials``, ``version``) and Terminal-Bench runs
(``terminal_bench``, ``terminal_bench_meta``)."""
