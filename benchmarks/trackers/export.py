"""``python -m benchmarks.trackers.export``: replay finished (or partial) runs' ``curve.jsonl`` into
TensorBoard event files or W&B offline runs, so existing results can be browsed with those tools.

    python -m benchmarks.trackers.export --results results/cpu/table1 --to tensorboard --out runs/tb
    tensorboard --logdir runs/tb
    python -m benchmarks.trackers.export --results results/cpu/table1 --to wandb --out runs/wandb
    wandb sync runs/wandb/*/wandb/offline-run-*      # upload later, from a machine with network

Every directory under --results holding a ``curve.jsonl`` is one run; it is written to
``<out>/<its path under --results>/`` with the metric names and steps of ``benchmarks.trackers.loggers``
(``<phase>/<key>`` at step ``updates``). The records are only read, never changed.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks import records as rec
from benchmarks.trackers.loggers import LOGGERS, LoggerUnavailable, open_logger, require_loggers
from rlbase.config import ConfigError


@dataclass(frozen=True)
class ExportJob:
    results: Path  # a results root, a preset or experiment directory, or one run directory
    to: str  # "tensorboard" | "wandb"
    out: Path


def run_directories(results: Path) -> list[Path]:
    """The run directories (those holding curve.jsonl) under ``results``, sorted; ``_logs`` and other
    ``_``-prefixed directories skipped."""
    found = [p.parent for p in Path(results).rglob(rec.CURVE)]
    return sorted(d for d in found if not any(part.startswith("_") for part in d.relative_to(results).parts))


def _target(job: ExportJob, run: Path) -> Path:
    rel = run.relative_to(job.results)
    return job.out / (rel if rel.parts else Path(run.name))


def export_run(job: ExportJob, run: Path) -> int:
    """Replay one run's curve into ``job.to`` under ``job.out``; the number of rows written."""
    rows = rec.read_curve(run / rec.CURVE)
    spec = rec.read_json(run / rec.SPEC) if (run / rec.SPEC).exists() else {}
    group = f"{spec.get('preset')}/{spec.get('experiment')}" if spec else None
    logger = open_logger(job.to, _target(job, run), run.name, group, spec or None)
    try:
        for row in rows:
            logger.log(row)
    finally:
        logger.close()
    return len(rows)


def export(job: ExportJob) -> list[tuple[Path, int]]:
    """Export every run under ``job.results``; (run directory, rows) for each."""
    require_loggers([job.to])
    if not Path(job.results).is_dir():
        raise ConfigError(f"--results {job.results}: not a directory")
    runs = run_directories(job.results)
    if not runs:
        raise ConfigError(f"--results {job.results}: no run directory (one holding {rec.CURVE}) under it")
    return [(run, export_run(job, run)) for run in runs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.trackers.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="exit codes: 0 exported; 2 usage error (no runs, missing package)")
    p.add_argument("--results", type=Path, required=True, help="results directory to read (any level)")
    p.add_argument("--to", choices=LOGGERS, required=True, help="tensorboard event files or W&B offline runs")
    p.add_argument("--out", type=Path, required=True, help="where to write them")
    args = p.parse_args(argv)
    job = ExportJob(args.results, args.to, args.out)
    try:
        done = export(job)
    except (ConfigError, LoggerUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"exported {len(done)} run(s), {sum(n for _, n in done)} curve rows, to {args.to} in {args.out}")
    if args.to == "tensorboard":
        print(f"view them: tensorboard --logdir {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
