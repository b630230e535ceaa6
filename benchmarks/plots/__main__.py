"""``python -m benchmarks.plots``: every figure from ``results/`` (see :mod:`benchmarks.plots`)."""

from benchmarks.plots.make import main

if __name__ == "__main__":
    raise SystemExit(main())
