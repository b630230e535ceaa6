"""Speed measurements of the harness: ``speed`` (``make perf``, ``python -m benchmarks.perf``),
``official`` (side by side with the official online-dt code) and ``overlay`` (loss curves of two
code versions, to check that a speed change leaves training where it was). Results and notes:
``paper_tables/perf/PERF.md``, ``paper_tables/perf/data/``."""
