"""Launching run specs through submitit: Slurm job arrays, local processes, or in-process debug.

The executor is submitit's (``AutoExecutor`` with ``cluster=`` slurm | local | debug); the job
is ``benchmarks.job.RunJob`` (a ``Checkpointable``). On Slurm all pending runs of an experiment
go out as one job array (``slurm_array_parallelism`` caps how many run at once); locally
submitit's LocalExecutor starts one process per job and this module keeps at most
``parallel`` of them alive (LocalExecutor has no cap of its own). Finished, failed and running
jobs are shown as counts on one progress bar; a failed job is reported with its log path and
does not stop the others. An update-matched run (``benchmarks.matched_updates``) reads its twin's
complete record, so it starts only once its twin has ended (``twin_unfinished``): locally a
free slot goes to the next run that can start, on Slurm such runs go out as a second array
once the first has ended. Ctrl-C, or SIGTERM to the launcher, cancels the running jobs and
raises :class:`LaunchInterrupted` naming them (each resumes from its checkpoints at the next
launch); the local executor's helper processes, which get the terminal's Ctrl-C too, write their
stderr to ``_logs/`` instead of the terminal.

Before a launch the runner checks the plan here: ``with_overrides`` (``--set``),
``check_configs``, ``dataset_problems`` and ``make_datasets`` (the forge, on demand).

The compute estimate printed before a launch is a cost model, not a measurement: gradient
updates x FLOPs per update (6 x parameters x tokens for the transformer, plus attention),
divided by a throughput calibrated on this 2-core CPU (the ``paper`` model: about 8 s per
update) or a nominal GPU throughput, plus environment steps at a fixed cost each.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import submitit

from benchmarks import matched_updates as matched
from benchmarks import measured_cost
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import (
    ConfigChanged,
    RunJob,
    check_config_unchanged,
    config_dict,
    config_drift,
    held_elsewhere,
    spec_config,
)
from benchmarks.official.driver import OfficialODTConfig
from benchmarks.run_progress import LiveProgress
from benchmarks.sharing import pretraining as shared
from benchmarks.trackers.loggers import require_loggers
from odt.config import (
    ConfigError,
    domain_defaults,
    evaluation_episodes,
    is_antmaze,
    phase_evaluations,
)
from odt.progress import progress_bar, writes_to_log

EXECUTORS = ("auto", "slurm", "local", "debug")
LIVE_EVERY_S = 5.0  # seconds between two looks at the running runs' directories (the live lines)


@dataclass
class LaunchOptions:
    executor: str = "auto"  # auto | slurm | local | debug
    parallel: int = 2  # local: jobs alive at once (2 on a 2-core machine)
    threads: int | None = None  # torch threads per job; None: cpus // parallel locally, cpus on Slurm
    # Slurm
    partition: str | None = None
    time_min: int = 24 * 60
    gpus: int | None = None  # per job; None: Slurm 0, local every GPU this machine shows (local_job_gpus)
    cpus: int = 4
    mem_gb: float | None = 16.0
    array_parallelism: int = 64
    max_requeues: int = 3  # time-limit/preemption requeues per job (submitit's slurm_max_num_timeout)
    slurm_extra: dict[str, Any] = field(default_factory=dict)  # extra sbatch options
    poll_s: float = 1.0
    loggers: tuple[str, ...] = ()  # also log curve rows to "tensorboard" / "wandb" (benchmarks.trackers.loggers)
    reuse_pretraining: bool = True  # start from a shared end-of-pretraining state (benchmarks/sharing/pretraining.py)
    # seconds, in all, that a launch waits for runs another process holds before it leaves them to
    # that process: a launch being stopped (Ctrl-C, pkill) keeps its jobs' locks a few seconds more
    holder_grace_s: float = 30.0

    def validate(self) -> LaunchOptions:
        if self.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.executor!r}; known: {', '.join(EXECUTORS)}")
        for name in ("parallel", "time_min", "cpus", "array_parallelism"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r} is out of range: >= 1")
        if self.max_requeues < 0:
            raise ConfigError(f"max_requeues={self.max_requeues!r} is out of range: >= 0")
        if self.gpus is not None and self.gpus < 0:
            raise ConfigError(f"gpus={self.gpus!r} is out of range: >= 0")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads={self.threads!r} is out of range: >= 1")
        if self.mem_gb is not None and not (math.isfinite(self.mem_gb) and self.mem_gb > 0):
            raise ConfigError(f"mem_gb={self.mem_gb!r} is out of range: > 0 and finite")
        if not (math.isfinite(self.holder_grace_s) and self.holder_grace_s >= 0):
            raise ConfigError(f"holder_grace_s={self.holder_grace_s!r} is out of range: >= 0 and finite")
        require_loggers(self.loggers)
        return self


def slurm_reachable(timeout_s: float = 10.0) -> bool:
    """True when sbatch is installed and a Slurm controller answers (``sinfo`` succeeds)."""
    if not (shutil.which("sbatch") and shutil.which("sinfo")):
        return False
    try:
        return subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, timeout=timeout_s).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def resolve_executor(kind: str) -> str:
    """``auto``: Slurm when a controller answers, else local processes (an installed but
    stopped Slurm, as on a laptop with the client tools, does not count)."""
    if kind == "auto":
        return "slurm" if slurm_reachable() else "local"
    return kind


def job_threads(opts: LaunchOptions, kind: str) -> int:
    """The torch thread count each job gets: ``--threads``, else this machine's cores shared
    among ``parallel`` local runs, or ``cpus`` per Slurm job."""
    cpus = os.cpu_count() or 1
    return opts.threads or (opts.cpus if kind == "slurm" else max(1, cpus // opts.parallel))


def gpu_present() -> bool:
    """True when torch sees a CUDA GPU here."""
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover - a broken CUDA install counts as none
        return False


def visible_gpus() -> tuple[str, ...]:
    """The GPUs this process sees, as CUDA_VISIBLE_DEVICES names them: this process's own
    variable's entries (integers, UUIDs or MIG instances) where it is set, else 0..n-1 of the n
    GPUs torch sees; () without a GPU."""
    if not gpu_present():
        return ()
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        import torch
        return tuple(str(i) for i in range(torch.cuda.device_count()))
    return tuple(e.strip() for e in listed.split(",") if e.strip())


def local_job_gpus(opts: LaunchOptions) -> tuple[str, ...]:
    """The GPUs each local job is given: every GPU this launcher sees (``opts.gpus`` None), or the
    first ``opts.gpus`` of them (0: none, the job runs on the CPU). Submitit's local executor sets
    each job's CUDA_VISIBLE_DEVICES to the GPUs it is given, none by default: a local job not given
    one never sees a GPU, however many the machine has."""
    ids = visible_gpus()
    if opts.gpus is None:
        return ids
    if opts.gpus > len(ids):
        raise ConfigError(f"gpus={opts.gpus!r} is out of range: local jobs can be given the {len(ids)} "
                          f"GPU(s) this machine shows")
    return ids[:opts.gpus]


def job_gpus(kind: str, opts: LaunchOptions) -> int:
    """How many GPUs each job of executor ``kind`` will see (debug runs in this process)."""
    if kind == "local":
        return len(local_job_gpus(opts))
    if kind == "debug":
        return int(gpu_present())
    return opts.gpus or 0


def default_preset(kind: str, gpus: int = 0) -> tuple[str, str]:
    """(preset, why) when none is given: the paper's on Slurm or where each job gets a GPU
    (``gpus``, from :func:`job_gpus`), else the cpu preset."""
    if kind == "slurm":
        return "paper", "submitting to Slurm"
    if gpus:
        return "paper", "a CUDA GPU is present"
    return "cpu", "local CPU, no GPU"


def largest_node_cpus(partition: str | None, timeout_s: float = 10.0) -> int | None:
    """The most CPUs any node of the partition (default: all) offers, from sinfo; None if unknown."""
    cmd = ["sinfo", "-h", "-o", "%c"] + (["-p", partition] if partition else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    counts = [int(tok.rstrip("+")) for tok in out.split() if tok.rstrip("+").isdigit()]
    return max(counts) if counts else None


def check_fits_slurm(opts: LaunchOptions) -> None:
    """A job asking more CPUs than any node has would pend forever without a word: refuse it."""
    most = largest_node_cpus(opts.partition)
    if most is not None and opts.cpus > most:
        where = f"partition {opts.partition!r}" if opts.partition else "this cluster"
        raise ConfigError(f"cpus={opts.cpus} is out of range: the largest node of {where} has {most} CPUs "
                          f"(the jobs would pend forever); pass --cpus {most} or less")


def make_executor(kind: str, folder: Path, opts: LaunchOptions, name: str = "odt") -> submitit.AutoExecutor:
    if kind == "slurm":
        check_fits_slurm(opts)
    executor = submitit.AutoExecutor(folder=folder, cluster=kind, slurm_max_num_timeout=opts.max_requeues)
    params: dict[str, Any] = {"timeout_min": opts.time_min, "name": name}
    if kind == "slurm":
        params.update(cpus_per_task=opts.cpus, gpus_per_node=opts.gpus or 0,
                      slurm_array_parallelism=opts.array_parallelism)
        if opts.mem_gb is not None:
            params["mem_gb"] = opts.mem_gb
        if opts.partition:
            params["slurm_partition"] = opts.partition
        if opts.slurm_extra:
            params["slurm_additional_parameters"] = dict(opts.slurm_extra)
    elif kind == "local" and (gpus := local_job_gpus(opts)):
        # submitit numbers a local job's GPUs 0..n-1 of the machine; the export keeps the launcher's own
        params.update(gpus_per_node=len(gpus),
                      local_setup=[f"export CUDA_VISIBLE_DEVICES={shlex.quote(','.join(gpus))}"])
    executor.update_parameters(**params)
    return executor


CONTROLLER_LOG = "local-controllers.err"


@contextlib.contextmanager
def _stderr_to(path: Path, active: bool = True):
    """Processes started inside write their stderr to ``path``, not the terminal. Ctrl-C reaches
    the whole foreground process group, and submitit's local controller processes (whose stderr
    is the launcher's) would print a KeyboardInterrupt traceback each over the launcher's report."""
    if not active:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM to the launcher (``kill <pid>``, a batch system's stop) acts as Ctrl-C: the launch
    cancels its running jobs, which checkpoint and exit. By default SIGTERM ended the launcher
    alone and its local job processes ran on, unseen. Only in the main thread (where Python lets
    a handler be set); the previous handler comes back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(job: Any, kind: str) -> None:
    """Stop a running job so that it checkpoints and exits. Local: SIGTERM to its submitit
    controller (whose pid is the job id), which forwards it to the run; submitit's own cancel
    sends SIGINT, which a launch started in the background (``&``, ``nohup``) ignores, and its
    jobs with it: they ran on. Slurm: scancel. Debug runs in this process: nothing to stop."""
    if kind == "local":
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(job.job_id), signal.SIGTERM)
    elif kind != "debug":
        job.cancel(check=False)


@dataclass
class Failure:
    run_id: str
    error: str
    log: str | None


class LaunchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a launch; ``run_ids`` are the runs that were running (cancelled; each
    resumes from its newest checkpoint on the next launch)."""

    def __init__(self, run_ids: list[str]):
        super().__init__(f"interrupted {len(run_ids)} running run(s)")
        self.run_ids = run_ids


@dataclass
class LaunchReport:
    total: int = 0
    skipped: int = 0  # already complete before the launch
    done: int = 0
    failed: list[Failure] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # run ids another live launch was running: left to it

    @property
    def ok(self) -> bool:
        return not self.failed


def _held(exc: BaseException) -> bool:
    """The job found its run held by another live process (it raised RunInProgress, possibly pickled back)."""
    return "RunInProgress" in str(exc) or type(exc).__name__ == "RunInProgress"


def _failure(root: Path, spec: RunSpec, exc: BaseException, log: str | None) -> Failure:
    record = rec.read_record(rec.run_dir(root, spec)) or {}
    last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
    error = record.get("error") or last
    stored = rec.resolve_log(root, record.get("log"))
    return Failure(spec.run_id, error, log or (str(stored) if stored else None))


def _config_or_none(spec: RunSpec) -> Any:
    try:
        return spec_config(spec)
    except ConfigError:  # the run itself reports a config that does not build, naming the field
        return None


def pretraining_groups(specs: Sequence[RunSpec], configs: Sequence[Any] | None = None) -> list[str | None]:
    """Each spec's pretraining-sharing group (``sharing.pretraining.pretraining_group`` of its
    config; ``configs``, when given, are the specs' configs already built); None for a method
    that never shares or a spec whose config does not build."""
    if configs is None:
        configs = [_config_or_none(s) for s in specs]
    return [None if c is None else shared.pretraining_group(s.method, config_dict(c))
            for s, c in zip(specs, configs, strict=True)]


def sharing_cell(spec: RunSpec, group: str | None) -> tuple[str, str, int] | None:
    """The runs that compute one pretraining: same sharing group, dataset and seed (None: never shares)."""
    return (group, spec.dataset, spec.seed) if group is not None else None


def followers(specs: Sequence[RunSpec], groups: Sequence[str | None]) -> list[bool]:
    """For each spec, whether an earlier spec of the list has the same ``sharing_cell``:
    that run computes the pretraining and this one can start from its state."""
    seen: set[tuple[str, str, int]] = set()
    out = []
    for spec, group in zip(specs, groups, strict=True):
        cell = sharing_cell(spec, group)
        out.append(cell in seen)
        if cell is not None:
            seen.add(cell)
    return out


def order_for_sharing(specs: Sequence[RunSpec], groups: Sequence[str | None], block: int) -> list[RunSpec]:
    """The order to start runs in; ``groups[i]`` is the pretraining-sharing group of ``specs[i]``
    (None: never shares), ``block`` how many runs go at once.

    Seed-major, so a launch cut short leaves whole seeds (every cell of seed 0, then seed 1, ...)
    rather than every seed of the first cells, but in blocks of ``block`` consecutive seeds:
    within a block, the leaders (the first run of each (group, dataset, seed), and runs that never
    share) come first in seed-major order, then the followers, which start from a leader's
    end-of-pretraining state. Plain seed-major order would put ``odt`` and ``odt-control`` of one
    seed side by side, start them together and have both compute the same pretraining. A
    follower can still start before its leader has finished pretraining (too few leaders in a
    block, leaders that finish early); it then waits for it (``sharing.pretraining.pretraining_lock``)."""
    if len(groups) != len(specs):
        raise ValueError(f"{len(groups)} groups for {len(specs)} specs")
    block = max(1, block)
    order = sorted(range(len(specs)), key=lambda i: specs[i].seed)  # stable: plan order within a seed
    follows = followers([specs[i] for i in order], [groups[i] for i in order])
    seeds = sorted({s.seed for s in specs})
    block_of = {seed: n // block for n, seed in enumerate(seeds)}
    ranked = sorted(range(len(order)), key=lambda n: (block_of[specs[order[n]].seed], follows[n]))
    return [specs[order[n]] for n in ranked]


def pretraining_in_progress(directory: Path) -> bool:
    """True if another live process is running this run and it has not left pretraining yet
    (its curve has only pretraining rows): a run that shares its pretraining would wait for it."""
    if not held_elsewhere(directory):
        return False
    return all(r.get("phase") == "pretrain" for r in rec.read_curve(Path(directory) / rec.CURVE))


def next_to_start(queue: Sequence[RunSpec], waits: Callable[[RunSpec], bool]) -> int:
    """The position in ``queue`` of the run to start next: the first that would not sit waiting
    for another run's pretraining (``waits``), or the first of all when every one would (it then
    waits on the lock, as before; nothing else could use the slot)."""
    return next((n for n, spec in enumerate(queue) if not waits(spec)), 0)


def twin_unfinished(spec: RunSpec, root: Path, unfinished: set[str]) -> bool:
    """Whether ``spec`` is an update-matched run (``matched_updates.twin_spec``) whose twin has not
    ended yet: the twin is among ``unfinished`` (this launch's runs not yet ended), or it is not
    complete and another live process is running it. Such a run cannot start yet: it reads its
    twin's complete record, and without one it stops with ``TwinNotReady``. A twin that ended
    without a complete record (failed) does not hold it back: the run then reports that."""
    twin = matched.twin_spec(spec)
    if twin is None:
        return False
    if twin.run_id in unfinished:
        return True
    directory = rec.run_dir(root, twin)
    return not rec.is_complete(directory) and held_elsewhere(directory)


def pretraining_waits(root: Path, specs: Sequence[RunSpec], groups: Sequence[str | None]) -> Callable[[RunSpec], bool]:
    """``waits(spec)``: whether ``spec`` would wait for a same-pretraining run (same group,
    dataset and seed) that a live process, this launch's or another's, is pretraining now.
    Two launches of one experiment each order their own plan, so without this the second starts
    the follower of the run the first is pretraining and a core idles on the lock (seen on 2026-11-26)."""
    cells: dict[tuple[str, str, int], list[RunSpec]] = {}
    cell_of: dict[str, tuple[str, str, int]] = {}
    for spec, group in zip(specs, groups, strict=True):
        if (cell := sharing_cell(spec, group)) is not None:
            cells.setdefault(cell, []).append(spec)
            cell_of[spec.run_id] = cell

    def waits(spec: RunSpec) -> bool:
        cell = cell_of.get(spec.run_id)
        return cell is not None and any(other.run_id != spec.run_id and pretraining_in_progress(rec.run_dir(root, other))
                                        for other in cells[cell])
    return waits


def held_by_live_holders(root: Path, specs: Sequence[RunSpec], grace_s: float,
                         say: Callable[[str], None] | None = None) -> list[RunSpec]:
    """The runs of ``specs`` whose lock another process still holds after up to ``grace_s``
    seconds in all. A launch that was just stopped holds its runs' locks until its jobs have
    exited; without the grace a launch started in that window would leave those runs to a
    process about to die, and finish without running them (seen on 2026-12-03). A live holder runs for
    hours, so waiting out the grace costs a launch that meets one only those seconds."""
    held = [s for s in specs if held_elsewhere(rec.run_dir(root, s))]
    if held and grace_s > 0 and say is not None:
        say(f"{len(held)} run(s) held by another process; waiting up to {grace_s:g} s in case it is exiting")
    deadline = time.monotonic() + grace_s  # one deadline for all: each run gets what is left of it
    return [s for s in held if held_elsewhere(rec.run_dir(root, s), patience=max(0.0, deadline - time.monotonic()))]


def launch(specs: Sequence[RunSpec], root: Path | str, opts: LaunchOptions | None = None,
           progress: bool = True) -> LaunchReport:
    """Run every spec that is not complete; returns what finished and what failed."""
    opts = (opts or LaunchOptions()).validate()
    root = Path(root)
    kind = resolve_executor(opts.executor)
    pending = [s for s in specs if not rec.is_complete(rec.run_dir(root, s))]
    report = LaunchReport(total=len(specs), skipped=len(specs) - len(pending))
    for spec in specs:  # a complete run made under another config is reported, never reused silently
        try:
            check_config_unchanged(spec, rec.run_dir(root, spec))
        except ConfigChanged as exc:
            report.failed.append(Failure(spec.run_id, str(exc), str(rec.run_dir(root, spec))))
            if spec in pending:
                pending.remove(spec)
            else:
                report.skipped -= 1
    for spec in held_by_live_holders(root, pending, opts.holder_grace_s, say=print if progress else None):
        pending.remove(spec)  # another launch of the same experiment is running it: leave it alone
        report.held.append(spec.run_id)
    if not pending:
        return report
    threads = job_threads(opts, kind)

    groups: dict[tuple[str, str], list[RunSpec]] = {}
    # Seed-major, so a launch cut short leaves whole seeds, with runs that start from another
    # run's pretraining after their leader (order_for_sharing); on Slurm the array order is the same.
    sharing = pretraining_groups(pending) if opts.reuse_pretraining else [None] * len(pending)
    for s in order_for_sharing(pending, sharing, opts.parallel if kind != "slurm" else opts.array_parallelism):
        groups.setdefault((s.preset, s.experiment), []).append(s)
    # runs another live launch holds are not ours to start, but their pretraining is ours to wait on
    held_ids = set(report.held)
    held = [s for s in specs if s.run_id in held_ids]
    waits = (pretraining_waits(root, pending + held, sharing + pretraining_groups(held)) if opts.reuse_pretraining
             else (lambda spec: False))

    bar = progress_bar(total=len(pending), desc="runs", unit="run", enabled=progress)
    running: list[tuple[RunSpec, Any]] = []
    # below the bar, each running run's phase, progress, score and time left, from its directory
    live = LiveProgress(root, lambda: [s for s, _ in running], bar.write, _pretraining_share_of,
                        inplace=not writes_to_log(sys.stderr), every_s=LIVE_EVERY_S) if progress else None
    unfinished = {s.run_id for s in pending}  # this launch's runs that have not ended: twins hold their runs back
    told_twin_wait = False

    def show() -> None:
        bar.set_postfix(done=report.done, running=len(running), failed=len(report.failed))

    def collect(block: bool = False) -> None:
        for item in list(running):
            spec, job = item
            if not (block or job.done()):
                continue
            log = str(job.paths.stderr) if kind != "debug" else None
            try:
                job.result()  # a debug job computes its run here, still listed as running (the live lines read it)
            except KeyboardInterrupt:  # (debug: the run itself was interrupted) still unfinished
                raise
            except Exception as exc:  # the job failed; report and go on
                running.remove(item)
                unfinished.discard(spec.run_id)
                if _held(exc):  # taken by another launch between our check and the job's start
                    report.held.append(spec.run_id)
                    bar.write(f"held by another live launch, left to it: {spec.run_id}")
                    bar.update(1)
                    show()
                    continue
                failure = _failure(root, spec, exc, log)
                report.failed.append(failure)
                bar.write(f"FAILED {failure.run_id}: {failure.error}\n  log: {failure.log}")
            else:
                running.remove(item)
                unfinished.discard(spec.run_id)
                report.done += 1
            bar.update(1)
            show()

    def submission_failed(group: list[RunSpec], exc: Exception, folder) -> None:
        error = "submission failed: " + ((str(exc).strip().splitlines() or [type(exc).__name__])[-1])
        for spec in group:
            unfinished.discard(spec.run_id)
            report.failed.append(Failure(spec.run_id, error, str(folder)))
            bar.update(1)
        bar.write(f"FAILED to submit {len(group)} run(s): {error}")
        show()

    def submit_array(executor: Any, group: list[RunSpec], folder: Path) -> None:
        try:
            jobs = executor.map_array(RunJob(opts.reuse_pretraining), group, [str(root)] * len(group), [threads] * len(group),
                                      [opts.loggers] * len(group))
        except Exception as exc:  # sbatch refused (no controller, bad partition, ...)
            submission_failed(group, exc, folder)
            return
        running.extend(zip(group, jobs, strict=True))
        show()

    def wait_all() -> None:
        while running:
            collect(block=(kind == "debug"))
            if running:
                time.sleep(opts.poll_s)

    with _terminate_as_interrupt():
        try:
            if live is not None:
                live.start()
            second_wave: list[tuple[Any, list[RunSpec], Path]] = []  # Slurm: runs whose twins the first array runs
            for (preset, experiment), group in groups.items():
                folder = rec.logs_dir(root, preset, experiment)
                try:
                    executor = make_executor(kind, folder, opts, name=f"odt-{experiment}")
                except Exception as exc:  # e.g. slurm asked for on a machine without srun
                    submission_failed(group, exc, folder)
                    continue
                if kind == "slurm":  # one job array per experiment (two where matched runs wait for their twins)
                    later = [s for s in group if twin_unfinished(s, root, unfinished)]
                    if later:
                        second_wave.append((executor, later, folder))
                    submit_array(executor, [s for s in group if s not in later], folder)
                    continue
                queue = list(group)
                while queue:
                    while len(running) >= (1 if kind == "debug" else opts.parallel):
                        collect(block=(kind == "debug"))
                        if len(running) >= opts.parallel:
                            time.sleep(opts.poll_s)
                    ready = [s for s in queue if not twin_unfinished(s, root, unfinished)]
                    if not ready:  # every queued run is an update-matched run whose twin is still running
                        if not running and not told_twin_wait:  # the twins are another live launch's
                            bar.write("waiting for another launch to finish the twins of the update-matched runs left")
                            told_twin_wait = True
                        collect(block=(kind == "debug"))
                        time.sleep(opts.poll_s)
                        continue
                    # a follower whose leader still pretrains goes later
                    spec = ready[next_to_start(ready, waits)]
                    queue.remove(spec)
                    try:
                        with _stderr_to(folder / CONTROLLER_LOG, kind == "local"):
                            running.append((spec, executor.submit(RunJob(opts.reuse_pretraining), spec, str(root), threads, opts.loggers)))
                    except Exception as exc:
                        submission_failed([spec], exc, folder)
                    show()
            wait_all()
            for executor, later, folder in second_wave:
                submit_array(executor, later, folder)
            wait_all()
        except KeyboardInterrupt:
            for _, job in running:
                _stop(job, kind)
            raise LaunchInterrupted([spec.run_id for spec, _ in running]) from None
        finally:
            if live is not None:
                live.stop()
            bar.close()
    return report


# ---------------------------------------------------------------------------------------------
# Before a launch: overrides, configs, datasets
# ---------------------------------------------------------------------------------------------
def with_overrides(specs: Sequence[RunSpec], overrides: dict[str, Any]) -> list[RunSpec]:
    """The specs with ``overrides`` (``--set``) applied over their own; being part of the spec,
    they change each run's id."""
    if not overrides:
        return list(specs)
    return [dataclasses.replace(s, overrides=tuple(sorted({**s.overrides_dict, **overrides}.items())))
            for s in specs]


def check_configs(specs: Sequence[RunSpec]) -> None:
    """Build each distinct config once; a bad field or value raises ConfigError naming the
    method, dataset and field, before anything runs."""
    seen = set()
    for s in specs:
        key = (s.method, s.dataset, s.preset, s.overrides)
        if key in seen:
            continue
        seen.add(key)
        try:
            spec_config(s)
        except ConfigError as exc:
            raise ConfigError(f"{s.method} on {s.dataset} ({s.variant}): {exc}") from None


def dataset_problems(specs: Sequence[RunSpec]) -> dict[str, str]:
    """Dataset name -> why the runs cannot load it (missing, invalid), for each dataset the specs
    need at their preset's size; empty when every one is there. Smoke data is made on demand."""
    from benchmarks.datasets.loading import dataset_problem
    from benchmarks.methods import dataset_size
    needed = sorted({(s.dataset, dataset_size(s.preset)) for s in specs})
    problems = {name: dataset_problem(name, size) for name, size in needed}
    return {name: problem for name, problem in problems.items() if problem is not None}


def dataset_provenance(name: str, size: str, read: dict[tuple[str, str], dict] | None = None) -> dict:
    """The provenance of dataset ``name`` at ``size``, as a run loads it (its ``content_sha256``
    hashes every step: seconds for a 1M-step file). ``read`` keeps what one launch has read
    already, so its checks read each file once; a launch that remakes a file starts a new one."""
    from benchmarks.datasets.loading import load_dataset
    read = {} if read is None else read
    if (name, size) not in read:
        read[(name, size)] = dict(load_dataset(name, size=size).provenance)
    return read[(name, size)]


def _complete_runs(root: Path | str, preset: str, experiment: str, loaded: dict[tuple[str, str], list]) -> list:
    """The complete runs of one experiment (``benchmarks.check``'s reading), read once per launch:
    ``loaded`` keeps what the launch's data checks have read."""
    from benchmarks.check import load_run_files
    if (preset, experiment) not in loaded:
        loaded[(preset, experiment)] = load_run_files(root, preset, experiment)
    return loaded[(preset, experiment)]


def _on_other_data(name: str, runs: list, read: dict[tuple[str, str], dict] | None) -> tuple[str | None, list]:
    """The content hash of full-size dataset ``name`` on disk, and those of ``runs`` that trained on
    other data (none when the file records no hash)."""
    on_disk = dataset_provenance(name, "full", read).get("content_sha256")
    return on_disk, [r for r in runs if on_disk is not None and r.data_content != on_disk]


def _contents(runs: list) -> str:
    return ", ".join(sorted({r.data_content[:8] for r in runs}))


def data_content_conflicts(root: Path | str, specs: Sequence[RunSpec],
                           read: dict[tuple[str, str], dict] | None = None,
                           loaded: dict[tuple[str, str], list] | None = None) -> dict[str, str]:
    """Dataset name -> why the runs about to start would put two datasets in one row: some complete
    run of their experiment already in ``root`` trained on other data than the file on disk holds
    (another content hash: a remade medium-replay file is another dataset, see
    ``benchmarks.datasets.portable_math``). That covers a row wholly on other data and a mixed one,
    whose runs on other data the launch would skip as complete (2026-11-28: old-file records under
    the new row's run ids, which do not name the file). Empty when they all agree or there is
    nothing to compare. Full-size data only. ``read`` as in ``dataset_provenance``; ``loaded`` as in
    ``_complete_runs``."""
    from benchmarks.methods import dataset_size
    loaded = {} if loaded is None else loaded
    out = {}
    for preset, experiment, name in sorted({(s.preset, s.experiment, s.dataset) for s in specs
                                            if dataset_size(s.preset) == "full"}):
        done = [r for r in _complete_runs(root, preset, experiment, loaded)
                if r.dataset == name and r.data_content is not None]
        if not done:
            continue
        on_disk, other = _on_other_data(name, done, read)
        if not other:
            continue
        if len(other) == len(done):
            out[name] = (f"the file on disk holds other data (content {on_disk[:8]}) than the {len(done)} complete "
                         f"{experiment} run(s) of it trained on ({_contents(other)}): a run started now would put two "
                         f"datasets in one row. Remake the file those runs used, or move those runs under "
                         f"results/archive/ to start the row again on this file")
        else:
            out[name] = (f"{len(other)} of the {len(done)} complete {experiment} run(s) of it trained on other data "
                         f"({_contents(other)}) than the file on disk (content {on_disk[:8]}), and the launch would "
                         f"skip them as complete, leaving two datasets in one row: "
                         f"{', '.join(sorted(r.name for r in other))}. Move those runs under results/archive/ "
                         f"to run them again on this file")
    return out


def complete_runs_on_other_data(root: Path | str, specs: Sequence[RunSpec],
                                read: dict[tuple[str, str], dict] | None = None,
                                loaded: dict[tuple[str, str], list] | None = None) -> dict[str, str]:
    """Dataset name -> a warning naming the complete runs among ``specs`` that trained on other data
    than the file on disk holds. ``data_content_conflicts`` looks only at the runs a launch starts;
    a row with nothing left to run is skipped as complete, so its runs on an old file went unseen
    (2026-11-28: S4's rerun on a remade file ran nothing). A warning, not a refusal: a complete
    plan's tables can still be rewritten. Full-size data only; ``read`` and ``loaded`` as in
    ``data_content_conflicts``."""
    from benchmarks.methods import dataset_size
    loaded = {} if loaded is None else loaded
    done: dict[str, list] = {}  # dataset -> the complete runs of the plan on it
    for preset, experiment in sorted({(s.preset, s.experiment) for s in specs if dataset_size(s.preset) == "full"}):
        ids = {s.run_id for s in specs if (s.preset, s.experiment) == (preset, experiment)}
        for r in _complete_runs(root, preset, experiment, loaded):
            if r.name in ids and r.data_content is not None:
                done.setdefault(r.dataset, []).append(r)
    out = {}
    for name, runs in sorted(done.items()):
        on_disk, other = _on_other_data(name, runs, read)
        if other:
            out[name] = (f"{len(other)} complete run(s) of this plan trained on other data ({_contents(other)}) than "
                         f"the file on disk (content {on_disk[:8]}); the launch skips them as complete: "
                         f"{', '.join(sorted(r.name for r in other))}. Move them under results/archive/ to run "
                         f"them again on this file")
    return out


def forgeable(name: str) -> bool:
    """True when the forge can fix dataset ``name`` here: its environment is installed and either
    nothing is on disk or the file in the way is the forge's own (an invalid D4RL file is the user's)."""
    from benchmarks.datasets.loading import find_dataset
    from benchmarks.datasets.registry import get_spec
    if name.startswith("minari:") or not get_spec(name).available:  # Minari data is never forged
        return False
    found = find_dataset(name)
    return found is None or found[0] == "generated"


def make_datasets(names: Sequence[str], progress: bool = True, say: Callable[[str], None] = print) -> None:
    """Make datasets with the forge, one after the other (its progress bars and messages); an
    invalid file of the forge's own is rebuilt.

    Each is made by ``python -m benchmarks.datasets make`` in a child process: the forge pins
    its math settings (``benchmarks.datasets.portable_math``) for the whole process, and they
    must not reach this one or the runs it launches."""
    from benchmarks.datasets.forge import expected_work
    from benchmarks.datasets.loading import find_dataset
    for i, name in enumerate(names, 1):
        say(f"making dataset {name} ({i}/{len(names)}): the forge {expected_work(name)}")
        argv = [sys.executable, "-m", "benchmarks.datasets", "make", name]
        argv += ["--force"] if find_dataset(name) is not None else []
        argv += [] if progress else ["--quiet"]
        forge_in_child(name, argv)


def forge_in_child(name: str, argv: list[str]) -> None:
    """Run the forge's command; its exit code becomes the exception ``make`` would have raised
    (1 ForgeError; 2 DatasetUnavailable: a usage, configuration or availability error; 130
    ForgeStopped: the forge checkpointed first)."""
    from benchmarks.datasets.forge_base import ForgeError, ForgeStopped
    from benchmarks.datasets.registry import DatasetUnavailable
    child = subprocess.Popen(argv)
    try:
        code = child.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the child too: let it checkpoint and exit
        code = child.wait()
    if code == 130:
        raise ForgeStopped(f"[forge] making {name} was interrupted after a checkpoint; run the same command "
                           "again to resume")
    if code == 2:
        raise DatasetUnavailable(f"the forge refused to make {name} (its message is above)")
    if code != 0:
        raise ForgeError(f"the forge could not make {name} (exit code {code}; its message is above)")


# ---------------------------------------------------------------------------------------------
# Compute estimate
# ---------------------------------------------------------------------------------------------
CPU_CORE_FLOPS = 4e10  # effective FLOP/s of one core: 38-46 measured for the cpu preset's ODT, DT, IQL and SAC runs
GPU_FLOPS = 2.0e13  # nominal effective FLOP/s of one modern GPU on this model (rough)
EPISODE_FRACTION = 0.5  # mean locomotion episode length assumed, as a fraction of the cap
ENV_STEP_S = 3e-4  # seconds per MuJoCo locomotion step with a policy forward, CPU
# AntMaze: 70 s of one core per evaluation of 100 episodes x 700 steps (sizing records of 2026-11-27);
# its episodes end only at the goal, which few reach at this scale, so they are counted at the cap
ANTMAZE_STEP_S = 1e-3


def env_step_seconds(dataset: str) -> float:
    """CPU seconds of one environment step with a policy forward on ``dataset``'s environment."""
    return ANTMAZE_STEP_S if is_antmaze(dataset) else ENV_STEP_S


@dataclass
class Estimate:
    runs: int = 0
    updates: float = 0.0
    env_steps: float = 0.0
    flops: float = 0.0
    env_seconds: float = 0.0  # CPU seconds of the environment steps (their cost differs by domain)
    rough: list[str] = field(default_factory=list)  # methods whose config layout is not known
    shared_runs: int = 0  # runs that start from another run's pretraining (not counted again)
    timed_runs: int = 0  # runs priced by complete runs of the same computation (measured_cost)
    timed_seconds: float = 0.0  # their measured CPU core-seconds (medians of their computations)
    timed_model_seconds: float = 0.0  # what the FLOP model would have said for them
    timed_on: set[str] = field(default_factory=set)  # CPU models the measurements came from
    timed_fastest_seconds: float = 0.0  # the measured part had each run cost its fastest match
    timed_slowest_seconds: float = 0.0  # ... or its slowest (machines of one CPU model differ ~2x)
    calibrated_runs: int = 0  # the other runs whose method and domain have complete runs (calibration)
    calibrated_extra_seconds: float = 0.0  # what scaling them by those runs' measured / model adds
    calibration_ratios: list[float] = field(default_factory=list)  # the factor each was scaled by

    @property
    def cpu_hours(self) -> float:
        """CPU core-hours (one thread per run): measured where complete runs of the same
        computation exist, else the FLOP and environment-step model, scaled where complete runs
        of the same method and domain say how far off it is (``calibration``)."""
        return (self._unmeasured_seconds() + self.timed_seconds) / 3600

    @property
    def cpu_hours_range(self) -> tuple[float, float]:
        """``cpu_hours`` with each measured run priced by its fastest, then its slowest match
        instead of their median: how far the measurements alone let the total move."""
        rest = self._unmeasured_seconds()
        return (rest + self.timed_fastest_seconds) / 3600, (rest + self.timed_slowest_seconds) / 3600

    def _unmeasured_seconds(self) -> float:
        model = self.flops / CPU_CORE_FLOPS + self.env_seconds - self.timed_model_seconds
        return model + self.calibrated_extra_seconds

    @property
    def gpu_hours(self) -> float:
        return (self.flops / GPU_FLOPS + self.env_seconds) / 3600

    def wall_hours(self, kind: str, opts: LaunchOptions, gpu: bool = False) -> float:
        """Rough wall-clock hours of these runs on executor ``kind``: locally ``parallel`` runs
        at once (all on the GPU if there is one), on Slurm ``array_parallelism`` jobs at once."""
        if self.runs == 0:
            return 0.0
        if kind == "slurm":
            total = self.gpu_hours if opts.gpus else self.cpu_hours / opts.cpus
            return total / min(self.runs, opts.array_parallelism)
        if gpu:
            return self.gpu_hours
        return self.cpu_hours / max(1, min(opts.parallel, os.cpu_count() or 1, self.runs))

    def describe(self) -> str:
        text = (f"{self.runs} runs, ~{self.updates:.3g} gradient updates and ~{self.env_steps:.3g} "
                f"environment steps in total: roughly {self.cpu_hours:.3g} CPU core-hours "
                f"({self.cpu_hours / 2:.3g} h on a 2-core machine running two at once), "
                f"{self.gpu_hours:.3g} GPU-hours")
        if self.shared_runs:
            text += (f"; {self.shared_runs} run{'s' if self.shared_runs != 1 else ''} start"
                     f"{'' if self.shared_runs != 1 else 's'} from another run's pretraining (not counted again)")
        if self.timed_runs:
            which = "all" if self.timed_runs == self.runs else f"{self.timed_runs} of them"
            machines = ", ".join(sorted(self.timed_on - {measured_cost.UNKNOWN_CPU})) or "an unrecorded CPU"
            lo, hi = self.cpu_hours_range
            spread = (f"; {lo:.3g}-{hi:.3g} core-hours at the fastest and slowest of them: "
                      f"machines of one CPU model differ" if f"{lo:.3g}" != f"{hi:.3g}" else "")
            text += (f"; CPU time of {which} measured (median of complete runs of the same config in the "
                     f"results folder, timed on {machines}{spread})"
                     + ("" if self.timed_runs == self.runs else ", the rest modelled"))
        if self.calibrated_runs:
            lo, hi = min(self.calibration_ratios), max(self.calibration_ratios)
            span = f"x{lo:.2g}" if f"{lo:.2g}" == f"{hi:.2g}" else f"x{lo:.2g}-{hi:.2g}"
            text += (f"; {self.calibrated_runs} modelled run{'s' if self.calibrated_runs != 1 else ''} scaled "
                     f"({span}) by what complete runs of the same method and domain took against the model")
        if self.rough:
            text += (f" (per-update cost of {', '.join(sorted(set(self.rough)))} estimated as MLPs "
                     f"from generic config fields)")
        return text


def _transformer_update_flops(batch: int, context: int, layers: int, dim: int) -> float:
    tokens = 3 * context  # (return, state, action) per timestep
    params = 12 * layers * dim * dim
    return 6.0 * batch * tokens * params + 12.0 * layers * batch * tokens * tokens * dim


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            out.update(_flatten(getattr(obj, f.name), f"{prefix}{f.name}."))
    else:
        out[prefix.rstrip(".").split(".")[-1]] = obj
    return out


def _first(d: dict[str, Any], names: Sequence[str], default: Any) -> Any:
    for n in names:
        if isinstance(d.get(n), (int, float)) and not isinstance(d.get(n), bool):
            return d[n]
    return default


def _odt_layout(cfg: Any) -> bool:
    model = getattr(cfg, "model", None)
    return model is not None and hasattr(model, "embed_dim") and hasattr(cfg, "online")


def _odt_update_flops(cfg: Any) -> float:
    m = cfg.model
    return _transformer_update_flops(cfg.optim.batch_size, m.context_len, m.n_layers, m.embed_dim)


def _ep_len(cfg: Any, dataset: str = "") -> float:
    # locomotion: episodes of half the cap (hopper-medium at the cpu preset: 380 of 1000 on
    # average; HalfCheetah always runs to the cap): rounds are what online time depends on;
    # goal-reaching (AntMaze): the cap
    cap = getattr(cfg.model, "max_ep_len", 1000)
    return cap if is_antmaze(dataset) else EPISODE_FRACTION * cap


def _eval_len(dataset: str) -> float:
    """Evaluation episode length of the generic (non-ODT) layout: the environment's cap."""
    return domain_defaults(dataset)["max_ep_len"]


def _generic(cfg: Any) -> tuple[dict[str, Any], float, float]:
    """(flattened config, offline updates, FLOPs per update as ~3 two-layer MLPs)."""
    d = _flatten(cfg)
    offline = _first(d, ("pretrain_updates", "offline_updates", "num_updates", "updates"), 0)
    hidden = _first(d, ("hidden_dim", "hidden_size", "hidden"), 256)
    batch = _first(d, ("batch_size",), 256)
    return d, offline, 6.0 * batch * 3 * 2 * hidden * hidden


def priced_config(cfg: Any) -> Any:
    """The config whose layout prices a run: ``official-odt`` runs the ``odt`` config it carries."""
    return cfg.odt if isinstance(cfg, OfficialODTConfig) else cfg


def estimate_run(cfg: Any, dataset: str = "") -> tuple[float, float, float, bool]:
    """(gradient updates, environment steps, FLOPs, exact-layout?) of one run's config on ``dataset``
    (its domain sets the episode lengths): its pretraining (``estimate_pretraining``) plus its
    online phase."""
    cfg = priced_config(cfg)
    updates, env_steps, flops = estimate_pretraining(cfg, dataset)
    if _odt_layout(cfg):
        o, ep_len = cfg.online, _ep_len(cfg, dataset)
        rounds = o.online_samples / ep_len
        online_updates = rounds * o.updates_per_round
        evals = phase_evaluations(math.ceil(rounds), o.eval_every_rounds)
        episodes = _phase_episodes(evals, cfg.eval_episodes, cfg.eval_episodes_interim)
        return (updates + online_updates, env_steps + o.online_samples + episodes * ep_len,
                flops + online_updates * _odt_update_flops(cfg), True)
    d, _, per_update = _generic(cfg)
    online = _first(d, ("online_samples", "online_steps", "total_steps", "env_steps"), 0)
    online_updates = online * _first(d, ("updates_per_step", "utd"), 1)
    evals = phase_evaluations(online, _first(d, ("eval_every_samples", "eval_every"), math.inf))
    episodes = _phase_episodes(evals, _first(d, ("eval_episodes",), 10), _first(d, ("eval_episodes_interim",), 0))
    env_steps += online + episodes * _eval_len(dataset)  # full-length evaluation episodes
    return updates + online_updates, env_steps, flops + online_updates * per_update, False


def _phase_episodes(evals: int, full: int, interim: int) -> float:
    """Episodes of a phase's ``evals`` evaluations: the one ending it runs ``full``, the others
    ``interim`` where set (``evaluation_episodes``)."""
    if evals <= 0:
        return 0.0
    return full + (evals - 1) * evaluation_episodes(full, interim, ends_phase=False)


def estimate_pretraining(cfg: Any, dataset: str = "") -> tuple[float, float, float]:
    """(gradient updates, environment steps, FLOPs) of the pretraining part of ``estimate_run``:
    the offline updates and the evaluations made during them, the one ending the phase included
    (it runs the full ``eval_episodes``; the others ``eval_episodes_interim`` where set)."""
    cfg = priced_config(cfg)
    if _odt_layout(cfg):
        updates = cfg.pretrain_updates
        episodes = _phase_episodes(phase_evaluations(updates, cfg.eval_every_updates), cfg.eval_episodes,
                                   cfg.eval_episodes_interim)
        return updates, episodes * _ep_len(cfg, dataset), updates * _odt_update_flops(cfg)
    d, offline, per_update = _generic(cfg)
    evals = phase_evaluations(offline, _first(d, ("eval_every_updates",), math.inf))
    episodes = _phase_episodes(evals, _first(d, ("eval_episodes",), 10), _first(d, ("eval_episodes_interim",), 0))
    return offline, episodes * _eval_len(dataset), offline * per_update


def _cpu_seconds(flops: float, env_steps: float, dataset: str) -> float:
    """The model's CPU seconds for ``flops`` at ``CPU_CORE_FLOPS`` and ``env_steps`` on ``dataset``."""
    return flops / CPU_CORE_FLOPS + env_steps * env_step_seconds(dataset)


def model_seconds(cfg: Any, dataset: str, follower: bool = False) -> float:
    """The model's CPU seconds for one run of ``cfg`` on ``dataset``, without its pretraining
    where ``follower``."""
    _, e, f, _ = estimate_run(cfg, dataset)
    if follower:
        _, pe, pf = estimate_pretraining(cfg, dataset)
        e, f = e - pe, f - pf
    return _cpu_seconds(f, e, dataset)


def _pretraining_share_of(spec: RunSpec) -> float:
    cfg = _config_or_none(spec)
    return 0.0 if cfg is None else pretraining_share(cfg, spec.dataset)


def pretraining_share(cfg: Any, dataset: str) -> float:
    """The share of one run's modelled seconds that its pretraining takes (0 without one): how
    progress through pretraining and through the online phase weigh against each other."""
    full = model_seconds(cfg, dataset)
    return 0.0 if full <= 0 else min(1.0, max(0.0, 1.0 - model_seconds(cfg, dataset, follower=True) / full))


def domain_of(dataset: str) -> str:
    """The environment family a dataset's runs share: hopper, walker2d, halfcheetah, ant, antmaze."""
    return dataset.split("-")[0]


def calibration(timed: dict[measured_cost.Computation, list[measured_cost.TimedRun]],
                cpu_model: str | None = None) -> dict[tuple[str, str], float]:
    """(method, domain) -> the median over its complete runs of measured core-seconds / the
    model's seconds for the same run: how far off the model is for that method on that domain
    (timed on ``cpu_model`` where some were). Left out: runs that sweep g_eval (evaluations the
    model does not price), and runs whose config the current code does not rebuild from their
    spec as it ran (the model would price another computation)."""
    ratios: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for key, runs in timed.items():
        if key.g_eval_sweep:
            continue
        for t in runs:
            cfg = _config_or_none(t.spec) if t.spec is not None else None
            if cfg is None or config_drift(t.config, measured_cost.without_seed(config_dict(cfg))):
                continue
            model = model_seconds(cfg, key.dataset, key.from_shared_pretraining)
            if model > 0:
                ratios.setdefault((key.method, domain_of(key.dataset)), []).append((t.cpu_model, t.core_seconds / model))
    out = {}
    for k, pairs in ratios.items():
        here = [r for cpu, r in pairs if cpu == cpu_model]
        out[k] = statistics.median(here or [r for _, r in pairs])
    return out


def remaining_fraction(full_updates: float, own_updates: float, done_updates: float) -> float:
    """The share of a run's own cost still to pay when it resumes from ``done_updates`` (its
    last evaluation; it resumes from a checkpoint at or after it). ``full_updates`` counts the
    whole run, ``own_updates`` what this run computes itself (less, when its pretraining is
    another run's); work is taken as proportional to updates."""
    if own_updates <= 0:
        return 0.0
    return min(1.0, max(0.0, full_updates - done_updates) / own_updates)


def estimate(specs: Sequence[RunSpec], reuse_pretraining: bool = True,
             timed: dict[measured_cost.Computation, list[measured_cost.TimedRun]] | None = None,
             done_updates: dict[str, int] | None = None, saved: set[str] | None = None,
             cpu_model: str | None = None) -> Estimate:
    """The cost of running ``specs``. With ``reuse_pretraining``, a run whose pretraining another
    run of the list computes (same group, dataset and seed: ``followers``), or whose run id is in
    ``saved`` (its state already under ``_pretrained/``: ``saved_pretraining``), is counted
    without it. ``timed`` (``measured_cost.timed_runs`` of the results folder) prices a run's CPU
    time by the median of complete runs of the same computation where there are any.
    ``done_updates`` (run id -> updates at a partial run's last evaluation) counts only what is
    left of those. ``cpu_model``: the CPU the runs will have, when known (a local launch); runs
    timed on it are preferred where there are any."""
    est = Estimate(runs=len(specs))
    ratios = calibration(timed, cpu_model) if timed else {}
    configs = [spec_config(s) for s in specs]
    groups = pretraining_groups(specs, configs) if reuse_pretraining else [None] * len(specs)
    from_disk = (saved or set()) if reuse_pretraining else set()
    for s, cfg, after_leader in zip(specs, configs, followers(specs, groups), strict=True):
        follower = after_leader or s.run_id in from_disk
        u, e, f, exact = estimate_run(cfg, s.dataset)
        full = u
        if follower:
            pu, pe, pf = estimate_pretraining(cfg, s.dataset)
            u, e, f = u - pu, e - pe, f - pf
            est.shared_runs += 1
        left = remaining_fraction(full, u, (done_updates or {}).get(s.run_id, 0))
        u, e, f = u * left, e * left, f * left
        est.updates += u
        est.env_steps += e
        est.env_seconds += e * env_step_seconds(s.dataset)
        est.flops += f
        same = measured_cost.matching(timed, s, config_dict(cfg), follower, cpu_model) if timed else []
        if same:
            est.timed_runs += 1
            est.timed_seconds += measured_cost.median_core_seconds(same) * left
            est.timed_fastest_seconds += min(t.core_seconds for t in same) * left
            est.timed_slowest_seconds += max(t.core_seconds for t in same) * left
            est.timed_model_seconds += _cpu_seconds(f, e, s.dataset)
            est.timed_on.update(t.cpu_model for t in same)
        elif (s.method, domain_of(s.dataset)) in ratios:
            ratio = ratios[(s.method, domain_of(s.dataset))]
            est.calibrated_runs += 1
            est.calibrated_extra_seconds += _cpu_seconds(f, e, s.dataset) * (ratio - 1)
            est.calibration_ratios.append(ratio)
        if not exact:
            est.rough.append(s.method)
    return est


def saved_pretraining(root: Path | str, specs: Sequence[RunSpec], threads: int,
                      read: dict[tuple[str, str], dict] | None = None) -> set[str]:
    """Run ids of ``specs`` whose end-of-pretraining state an earlier run left under
    ``<root>/_pretrained/`` for a job with ``threads`` torch threads on this host: started here
    (locally) they load it instead of pretraining. Only what a local launch can know (a Slurm
    job's host is another); specs whose data is not on disk or whose config does not build are
    left out. ``read`` as in ``dataset_provenance``."""
    store = Path(root) / shared.DIRNAME
    if not store.is_dir() or not any(store.iterdir()):
        return set()
    from benchmarks.datasets import DatasetError, DatasetUnavailable
    from benchmarks.methods import dataset_size
    unreadable: set[tuple[str, str]] = set()  # (dataset, size) that failed to load, not tried again
    out = set()
    for s in specs:
        cfg = _config_or_none(s)
        where = (s.dataset, dataset_size(s.preset))
        if cfg is None or s.method not in shared.FAMILY or where in unreadable:
            continue
        try:
            provenance = dataset_provenance(*where, read)
        except (DatasetUnavailable, DatasetError):  # the run itself reports what is wrong with its data
            unreadable.add(where)
            continue
        k = shared.key(s.method, config_dict(cfg), s.seed, provenance, threads)
        if k is not None and shared.is_saved(root, k):
            out.add(s.run_id)
    return out


def format_hours(hours: float) -> str:
    """``12 min``, ``2.2 h``, ``3.1 days``."""
    if hours < 1:
        return f"{max(1, round(hours * 60)) if hours > 0 else 0} min"
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:,.3g} days"
