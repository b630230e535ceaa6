"""``python -m benchmarks.run <experiment>``: expand an experiment, check its datasets, launch what is not done, tabulate.

Examples::

    python -m benchmarks.run table1 --preset smoke --seeds 1 --datasets hopper-medium  # ~1 min, not a result
    python -m benchmarks.run table1 --preset cpu --datasets hopper-medium --make-datasets
    python -m benchmarks.run table1 --dry-run        # the plan, its cost and its datasets; runs nothing
    python -m benchmarks.run hindsight --preset cpu --set online.online_samples=2500
    python -m benchmarks.run hindsight --executor slurm --partition gpu --gpus 1 --time 1440

Without --preset the preset is ``paper`` when the runs go to Slurm or a CUDA GPU is here (local
jobs are given the launcher's GPUs; ``--gpus 0`` keeps them on the CPU), else ``cpu``; the first
line says which, how many runs, and the estimated wall time. Before anything
runs, every dataset the plan needs is checked (on disk, readable, fitting its environment): if
some are not, nothing is launched and one message names each with the command that makes it
(--make-datasets makes them first instead). A local plan estimated over 24 h needs --yes.

A second call skips complete runs; partial runs resume from their checkpoints (--dry-run says how
far each had come); failed runs are retried and, if they fail again, reported with their log
path (the others still finish).
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path

from benchmarks import measured_cost, outputs
from benchmarks import records as rec
from benchmarks.datasets.portable_math import cpu_model
from benchmarks.experiments import EXPERIMENTS, RunSpec, expand
from benchmarks.launch import (
    EXECUTORS,
    LaunchInterrupted,
    LaunchOptions,
    check_configs,
    complete_runs_on_other_data,
    data_content_conflicts,
    dataset_problems,
    default_preset,
    estimate,
    forgeable,
    format_hours,
    job_gpus,
    job_threads,
    launch,
    make_datasets,
    resolve_executor,
    saved_pretraining,
    with_overrides,
)
from benchmarks.methods import METHODS
from benchmarks.trackers.loggers import LOGGERS
from rlbase.config import ConfigError, parse_assignments
from rlbase.presets import PRESETS

LOCAL_LIMIT_H = 24.0  # a local plan estimated longer than this needs --yes
EXIT_CODES = """exit codes:
  0 every run of the plan is complete (or --dry-run)
  1 some runs failed (each is named with its log), or a dataset could not be made
  2 usage or configuration error: an unknown name, an out-of-range value, datasets missing,
    or a local plan over 24 h without --yes; nothing was launched
  3 none failed, but some runs were left to another live launch that is running them (the
    tables were not rewritten): run the same command again after that launch has ended
  130 interrupted (Ctrl-C): the next call resumes the interrupted runs from their checkpoints"""


def _available(dataset: str) -> bool:
    try:
        from benchmarks.datasets import get_spec
        return bool(getattr(get_spec(dataset), "available", True))
    except ImportError:  # pragma: no cover - datasets package missing
        return True


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__, epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", help="one of: " + ", ".join(EXPERIMENTS))
    p.add_argument("--preset", default=None,
                   help=f"{' | '.join(PRESETS)} (default: paper on Slurm or with a CUDA GPU, else cpu)")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (default: the paper's, e.g. 10 for table1)")
    p.add_argument("--only-seeds", type=int, nargs="+", default=None, metavar="SEED",
                   help="only these seeds of the plan (e.g. --only-seeds 5 6 7: one share of a batch split "
                        "between machines or launchers; each skips runs another launch is running)")
    p.add_argument("--variants", nargs="+", default=None, metavar="PATTERN",
                   help="only the variants whose label matches one of these shell patterns, e.g. "
                        "--variants '*lr=0.001,*' (part of a sweep or grid; labels separate their fields with "
                        "commas, which run directory names write as underscores; a pattern that matches none "
                        "lists the labels)")
    p.add_argument("--datasets", nargs="+", default=None, help="only these datasets")
    p.add_argument("--methods", nargs="+", default=None, help="only these methods")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a config field of every run, as in python -m odt, e.g. --set optim.lr=1e-4 "
                        "(part of each run's id, so these are other runs)")
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT, help="results root (default: results/ or $ODT_RESULTS)")
    p.add_argument("--tables-dir", type=Path, default=None,
                   help="where tables go (default: paper_tables/<preset>/ for the repository's results/, "
                        "else <results>/paper_tables/<preset>/); tables are not rewritten when a run failed")
    p.add_argument("--dry-run", action="store_true", help="print the plan, its datasets and what is done; run nothing")
    p.add_argument("--make-datasets", action="store_true",
                   help="make the datasets the plan is missing with the forge first (can take hours: it says so)")
    p.add_argument("--yes", action="store_true", help=f"launch a local plan estimated over {LOCAL_LIMIT_H:g} h")
    p.add_argument("--include-unavailable", action="store_true",
                   help="also launch datasets the registry marks unavailable (they will fail)")
    g = p.add_argument_group("executor")
    g.add_argument("--executor", default="auto", help=f"{' | '.join(EXECUTORS)}; auto = slurm when a Slurm controller answers sinfo, else local")
    g.add_argument("--parallel", type=int, default=2, help="local: runs at once (default 2)")
    g.add_argument("--threads", type=int, default=None, help="torch threads per run (default: cores / parallel locally, --cpus on Slurm)")
    g.add_argument("--quiet", action="store_true",
                   help="no progress bar and no line per running run (phase, progress, score, time left)")
    g.add_argument("--fresh-pretraining", action="store_true",
                   help="every run computes everything itself; by default a run whose pretraining is "
                        "identical to one already done on this machine (same config up to online-only "
                        "fields, seed, data, code, threads) starts from that state "
                        "(benchmarks/sharing/pretraining.py), and a run that is the same computation as a "
                        "complete run of another experiment (same method, config, seed, data, code, "
                        "threads, host) copies its record (benchmarks/sharing/runs.py); records name the source run")
    g.add_argument("--log", action="append", default=[], choices=LOGGERS,
                   help="also write each run's curve rows live to TensorBoard (<run dir>/tensorboard/) or "
                        "W&B (<run dir>/wandb/, offline unless WANDB_MODE is set); repeatable")
    s = p.add_argument_group("slurm (logs go to <results>/<preset>/<experiment>/_logs/)")
    s.add_argument("--partition", default=None)
    s.add_argument("--time", type=int, default=24 * 60, help="time limit per job in minutes (default 1440)")
    s.add_argument("--gpus", type=int, default=None,
                   help="GPUs per job (Slurm: default 0; local: default every GPU this machine shows, "
                        "0 runs the jobs on the CPU)")
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
        return _run(args)
    except (ConfigError, rec.CorruptRecord) as exc:
        _err(f"error: {exc}")
        return 2
    except LaunchInterrupted as exc:
        for run_id in exc.run_ids:
            _err(f"interrupted: {run_id}; the next call resumes it from its last checkpoint")
        _err("interrupted: run the same command again to resume (complete runs are skipped)")
        return 130
    except KeyboardInterrupt as exc:  # before any run started (ForgeStopped says how the forge resumes)
        _err(str(exc) or "interrupted before any run started; run the same command again to start")
        return 130


def _options(args: argparse.Namespace) -> LaunchOptions:
    return LaunchOptions(
        executor=args.executor, parallel=args.parallel, threads=args.threads,
        partition=args.partition, time_min=args.time, gpus=args.gpus, cpus=args.cpus,
        mem_gb=args.mem_gb, array_parallelism=args.array_parallelism, max_requeues=args.max_requeues,
        slurm_extra=parse_assignments(args.slurm_extra, "--slurm-extra"), loggers=tuple(args.log),
        reuse_pretraining=not args.fresh_pretraining).validate()


def plan(args: argparse.Namespace, preset: str, check: bool = True) -> list[RunSpec]:
    """The experiment's specs with the --set overrides, every config built once where ``check``
    (ConfigError names the field), without the datasets whose environment is not installed (reported)."""
    specs = expand(args.experiment, preset, args.seeds, args.datasets, args.methods, registered=list(METHODS),
                   warn=lambda m: _err(f"warning: {m}"))
    specs = only_seeds(specs, args.only_seeds, args.experiment)
    specs = only_variants(specs, args.variants, args.experiment)
    specs = with_overrides(specs, parse_assignments(args.set))
    if check:
        check_configs(specs)
    if not args.include_unavailable:
        skipped = sorted({s.dataset for s in specs if not _available(s.dataset)})
        if skipped:
            _err(f"warning: dataset(s) {', '.join(skipped)} not available here; their rows stay missing "
                 f"(--include-unavailable to launch them anyway)")
            specs = [s for s in specs if s.dataset not in skipped]
    return specs


def only_seeds(specs: list[RunSpec], seeds: list[int] | None, experiment: str) -> list[RunSpec]:
    """The specs of the chosen seeds (all without a choice); a seed the plan lacks is a ConfigError."""
    if seeds is None:
        return specs
    planned = sorted({s.seed for s in specs})
    missing = sorted(set(seeds) - set(planned))
    if missing:
        span = f"{planned[0]}-{planned[-1]}" if planned else "none"
        raise ConfigError(f"--only-seeds {' '.join(map(str, missing))}: not among {experiment}'s seeds here "
                          f"({span}; --seeds N sets how many)")
    return [s for s in specs if s.seed in set(seeds)]


def only_variants(specs: list[RunSpec], patterns: list[str] | None, experiment: str) -> list[RunSpec]:
    """The specs whose variant label matches one of the shell ``patterns`` (all without any); a
    pattern that matches no variant of the plan is a ConfigError listing the labels."""
    if patterns is None:
        return specs
    labels = sorted({s.variant for s in specs})
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(label, p) for label in labels)]
    if unmatched:
        raise ConfigError(f"--variants {' '.join(unmatched)}: matches none of {experiment}'s variants here "
                          f"({', '.join(labels) or 'none'})")
    return [s for s in specs if any(fnmatch.fnmatchcase(s.variant, p) for p in patterns)]


def _run(args: argparse.Namespace) -> int:
    opts = _options(args)
    kind = resolve_executor(opts.executor)
    gpus = job_gpus(kind, opts)  # what each job will see: the estimate and the default preset follow it
    preset, why = (args.preset, "--preset") if args.preset else default_preset(kind, gpus)
    specs = plan(args, preset)
    status = {s.run_id: rec.status_of(rec.run_dir(args.results, s)) for s in specs}
    todo = [s for s in specs if status[s.run_id] != "complete"]
    gpu = kind != "slurm" and gpus > 0
    timed = None if gpus else measured_cost.timed_runs(args.results, preset)
    done = {s.run_id: rec.updates_done(rec.run_dir(args.results, s)) for s in todo if status[s.run_id] == "partial"}
    read: dict = {}  # datasets this launch has read (their content hashes), shared by its checks
    loaded: dict = {}  # the complete runs its data checks have read, per (preset, experiment)
    saved = (saved_pretraining(args.results, [s for s in todo if status[s.run_id] == "absent"], job_threads(opts, kind),
                               read) if kind == "local" and opts.reuse_pretraining else set())
    here = cpu_model() if kind == "local" else None  # the CPU local runs will have; a Slurm node's is not known
    est = estimate(todo, reuse_pretraining=opts.reuse_pretraining, timed=timed, done_updates=done, saved=saved,
                   cpu_model=here)
    wall = est.wall_hours(kind, opts, gpu)
    print(f"{args.experiment}: preset {preset} ({why}), {len(specs)} runs, {len(specs) - len(todo)} complete, "
          f"{len(todo)} to run, estimated wall time {format_hours(wall)} (executor: {kind})")
    print(f"results: {args.results}" + (f"; estimate: {est.describe()}" if todo else ""))
    started = sum(status[s.run_id] == "partial" for s in todo)
    if started:
        print(f"{started} of the runs to run are partial: they resume from their last checkpoints "
              f"(the estimate counts what is left after each one's last evaluation; --dry-run says how "
              f"far each had come)")
    if todo and preset == "paper" and kind != "slurm" and not gpu:
        print("note: the paper preset is sized for GPUs; on a CPU try --preset cpu or --preset smoke")
    problems = dataset_problems([s for s in todo if _available(s.dataset)])
    conflicts = data_content_conflicts(args.results, [s for s in todo if _available(s.dataset)
                                                      and s.dataset not in problems], read, loaded)
    open_rows = {s.dataset for s in todo}
    finished = [s for s in specs if status[s.run_id] == "complete" and s.dataset not in open_rows
                and _available(s.dataset)]  # rows with nothing left to run, which no check above sees
    unreadable = dataset_problems(finished)  # a row whose file is not here cannot be compared
    stale = complete_runs_on_other_data(args.results, [s for s in finished if s.dataset not in unreadable], read,
                                        loaded)
    for name, why in stale.items():
        _err(f"warning: {name}: {why}")
    if args.dry_run:
        for s in specs:
            directory = rec.run_dir(args.results, s)
            progress = rec.progress_of(directory) if status[s.run_id] == "partial" else ""
            print(f"  {status[s.run_id]:9s} {directory}" + (f"  ({progress})" if progress else ""))
        if problems:
            print(_datasets_message(problems, args.make_datasets))
        for name, why in conflicts.items():
            print(f"{name}: {why}")
        return 0
    refusals = _refusals(args, kind, wall, problems) + [f"error: {n}: {why}" for n, why in conflicts.items()]
    for text in refusals:
        _err(text)
    if refusals:
        return 2
    if problems and not _make(sorted(problems), args.quiet):
        return 1
    made = data_content_conflicts(args.results, [s for s in todo if s.dataset in problems], loaded=loaded)
    for name, why in made.items():  # a file just made can differ from the one earlier runs used
        _err(f"error: {name}: {why}")
    if made:
        return 2
    return _launch(args, preset, specs, todo, opts)


def _refusals(args: argparse.Namespace, kind: str, wall: float, problems: dict[str, str]) -> list[str]:
    """Why this plan is not launched: datasets it cannot load (and will not make), a local plan too long."""
    out = []
    blocking = {n: p for n, p in problems.items() if not (args.make_datasets and forgeable(n))}
    if blocking:
        out.append("error: " + _datasets_message(blocking, args.make_datasets))
    if kind != "slurm" and wall > LOCAL_LIMIT_H and not args.yes:
        out.append(f"error: this plan is estimated at {format_hours(wall)} of wall time on this machine, over "
                   f"{LOCAL_LIMIT_H:g} h; pass --yes to launch it anyway, or make it smaller (fewer --seeds, "
                   f"--datasets or --methods, a smaller --preset), or submit it to Slurm (--executor slurm)")
    return out


def _datasets_message(problems: dict[str, str], making: bool) -> str:
    from benchmarks.datasets import data_dir
    from benchmarks.datasets.loading import make_command

    lines = [f"{len(problems)} dataset(s) this plan needs cannot be loaded (data directory: {data_dir()}):"]
    for name, problem in sorted(problems.items()):
        lines.append(f"  {name}: {problem}\n      {make_command(name)}")
    if not making:
        lines.append("run the command(s) above, or pass --make-datasets to make the missing ones first "
                     "(medium-replay and unpackaged medium datasets train SAC first: hours on a CPU)")
    return "\n".join(lines)


def _make(names: list[str], quiet: bool) -> bool:
    """Make the missing datasets with the forge; False (reported) if one could not be made."""
    from benchmarks.datasets.forge_base import ForgeError
    from benchmarks.datasets.registry import DatasetUnavailable

    try:
        make_datasets(names, progress=not quiet)
    except (ForgeError, DatasetUnavailable) as exc:
        _err(f"error: {exc}")
        return False
    return True


def _launch(args: argparse.Namespace, preset: str, specs: list[RunSpec], todo: list[RunSpec],
            opts: LaunchOptions) -> int:
    report = launch(todo, args.results, opts, progress=not args.quiet)
    print(f"{args.experiment}: {report.done} finished, {len(report.failed)} failed, "
          f"{len(specs) - len(todo)} were already complete"
          + (f", {len(report.held)} left to another live launch running them" if report.held else ""))
    for f in report.failed:
        print(f"  FAILED {f.run_id}: {f.error}\n    log: {f.log}")
    for f in report.not_started:
        print(f"  {f.run_id}: {f.error}")
    if report.ok and not report.held:
        _write_tables(args, preset)
    else:
        print("tables not rewritten: some runs of this plan are not complete (the tables on disk are unchanged)")
    return 1 if not report.ok else 3 if report.held else 0


def _write_tables(args: argparse.Namespace, preset: str) -> None:
    """Tables of the whole experiment (every complete record of this results root and preset)."""
    out = args.tables_dir or outputs.tables_dir(args.results, preset)
    try:
        from benchmarks import minari_table, tables
        written = tables.write_experiment_tables(args.experiment, args.results, preset, out)
        written += minari_table.write_minari_table(args.experiment, args.results, preset, out)
        for path in written:
            print(f"wrote {path}")
    except Exception as exc:  # tables are a convenience here; the records are the result
        _err(f"warning: could not write tables: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
