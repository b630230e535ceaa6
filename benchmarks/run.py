"""``python -m benchmarks.run <experiment>``: expand an experiment, launch what is not done, tabulate.

Examples::

    python -m benchmarks.run table1 --preset smoke --seeds 1 --datasets hopper-medium  # ~1 min, not a result
    python -m benchmarks.run table1 --preset cpu --datasets hopper-medium
    python -m benchmarks.run table1 --dry-run                     # what the paper preset would run
    python -m benchmarks.run hindsight --executor slurm --partition gpu --gpus 1 --time 1440

A second call skips complete runs; partial runs resume from their checkpoints; failed runs are
retried and, if they fail again, reported with their log path (the others still finish).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import records as rec
from benchmarks.experiments import EXPERIMENTS, expand
from benchmarks.launch import EXECUTORS, LaunchOptions, estimate, launch, resolve_executor
from odt.config import PRESETS, ConfigError, parse_assignments


def _available(dataset: str) -> bool:
    try:
        from benchmarks.datasets import get_spec
        return bool(getattr(get_spec(dataset), "available", True))
    except ImportError:  # pragma: no cover - datasets package missing
        return True




def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", help="one of: " + ", ".join(EXPERIMENTS))
    p.add_argument("--preset", default="paper", help=f"{' | '.join(PRESETS)} (default: paper, the paper's configuration)")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (default: the paper's, e.g. 10 for table1)")
    p.add_argument("--datasets", nargs="+", default=None, help="only these datasets")
    p.add_argument("--methods", nargs="+", default=None, help="only these methods")
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT, help="results root (default: results/ or $ODT_RESULTS)")
    p.add_argument("--tables-dir", type=Path, default=Path("paper_tables"), help="where tables go (default: paper_tables/)")
    p.add_argument("--dry-run", action="store_true", help="print what would run and what is already done, run nothing")
    p.add_argument("--include-unavailable", action="store_true",
                   help="also launch datasets the registry marks unavailable (they will fail)")
    g = p.add_argument_group("executor")
    g.add_argument("--executor", default="auto", help=f"{' | '.join(EXECUTORS)}; auto = slurm when a Slurm controller answers sinfo, else local")
    g.add_argument("--parallel", type=int, default=2, help="local: runs at once (default 2)")
    g.add_argument("--threads", type=int, default=None, help="torch threads per run (default: cores / parallel locally, --cpus on Slurm)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    s = p.add_argument_group("slurm (logs go to <results>/<preset>/<experiment>/_logs/)")
    s.add_argument("--partition", default=None)
    s.add_argument("--time", type=int, default=24 * 60, help="time limit per job in minutes (default 1440)")
    s.add_argument("--gpus", type=int, default=0, help="GPUs per job")
    s.add_argument("--cpus", type=int, default=4, help="CPUs per job")
    s.add_argument("--mem-gb", type=float, default=16.0, help="memory per job in GB")
    s.add_argument("--array-parallelism", type=int, default=64, help="array tasks running at once")
    s.add_argument("--max-requeues", type=int, default=3,
                   help="requeues per job after a time limit or preemption (default 3); each resumes from its checkpoint")
    s.add_argument("--slurm-extra", nargs="*", default=[], metavar="KEY=VALUE",
                   help="extra sbatch options, e.g. qos=high account=rl")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        specs = expand(args.experiment, args.preset, args.seeds, args.datasets, args.methods,
                       warn=lambda m: print(f"warning: {m}", file=sys.stderr))
        opts = LaunchOptions(
            executor=args.executor, parallel=args.parallel, threads=args.threads,
            partition=args.partition, time_min=args.time, gpus=args.gpus, cpus=args.cpus,
            mem_gb=args.mem_gb, array_parallelism=args.array_parallelism, max_requeues=args.max_requeues,
            slurm_extra=parse_assignments(args.slurm_extra, "--slurm-extra")).validate()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.include_unavailable:
        skipped = sorted({s.dataset for s in specs if not _available(s.dataset)})
        if skipped:
            print(f"warning: dataset(s) {', '.join(skipped)} not available here; their rows stay missing "
                  f"(--include-unavailable to launch them anyway)", file=sys.stderr)
            specs = [s for s in specs if s.dataset not in skipped]

    status = {s.run_id: rec.status_of(rec.run_dir(args.results, s)) for s in specs}
    todo = [s for s in specs if status[s.run_id] != "complete"]
    kind = resolve_executor(opts.executor)
    print(f"{args.experiment} [{args.preset}]: {len(specs)} runs, {len(specs) - len(todo)} complete, "
          f"{len(todo)} to run (executor: {kind}; results: {args.results})")
    if todo:
        print(f"estimate for the runs to do: {estimate(todo).describe()}")
        if args.preset == "paper" and kind != "slurm":
            print("note: the paper preset is sized for GPUs; on a CPU try --preset cpu or --preset smoke")
    if args.dry_run:
        for s in specs:
            print(f"  {status[s.run_id]:9s} {rec.run_dir(args.results, s)}")
        return 0

    report = launch(todo, args.results, opts, progress=not args.quiet)
    print(f"{args.experiment}: {report.done} finished, {len(report.failed)} failed, "
          f"{len(specs) - len(todo)} were already complete"
          + (f", {len(report.held)} left to another live launch running them" if report.held else ""))
    for f in report.failed:
        print(f"  FAILED {f.run_id}: {f.error}\n    log: {f.log}")
    try:
        from benchmarks import tables
        written = tables.write_experiment_tables(args.experiment, args.results, args.preset, args.tables_dir)
        for path in written:
            print(f"wrote {path}")
    except Exception as exc:  # tables are a convenience here; the records are the result
        print(f"warning: could not write tables: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
