"""Submitit executors and the processes they start: make one, keep its helpers quiet, stop its jobs.

The executor is submitit's (``AutoExecutor`` with ``cluster=`` slurm | local | debug); the job
is ``benchmarks.job.RunJob`` (a ``Checkpointable``). Ctrl-C, or SIGTERM to the launcher, reaches
the launch as KeyboardInterrupt (``terminate_as_interrupt``); the local executor's helper
processes, which get the terminal's Ctrl-C too, write their stderr to ``_logs/`` instead of the
terminal (``stderr_to``); ``stop_job`` makes a running job checkpoint and exit.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import submitit

from benchmarks.launch.options import LaunchOptions, local_job_gpus
from benchmarks.launch.preflight import check_fits_slurm


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
def stderr_to(path: Path, active: bool = True):
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
def terminate_as_interrupt():
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


def stop_job(job: Any, kind: str) -> None:
    """Stop a running job so that it checkpoints and exits. Local: SIGTERM to its submitit
    controller (whose pid is the job id), which forwards it to the run; submitit's own cancel
    sends SIGINT, which a launch started in the background (``&``, ``nohup``) ignores, and its
    jobs with it: they ran on. Slurm: scancel. Debug runs in this process: nothing to stop."""
    if kind == "local":
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(job.job_id), signal.SIGTERM)
    elif kind != "debug":
        job.cancel(check=False)

