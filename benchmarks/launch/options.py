"""What a launch asks for and what each job gets: the executor, torch threads, GPUs, the preset.

``LaunchOptions`` are the runner's flags for one launch (executor, local lanes, Slurm
resources, loggers, pretraining reuse); the functions below turn them into what each job sees
(its threads and GPUs) and the preset chosen when none is given.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from benchmarks.trackers.loggers import require_loggers
from rlbase.config import ConfigError

EXECUTORS = ("auto", "slurm", "local", "debug")


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

