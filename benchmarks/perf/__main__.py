"""``python -m benchmarks.perf`` (``make perf``): the speed and memory benchmarks of :mod:`benchmarks.perf.speed`."""

from benchmarks.perf.speed import main

if __name__ == "__main__":
    raise SystemExit(main())
