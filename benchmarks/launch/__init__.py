"""Launching run specs through submitit: Slurm job arrays, local processes, or in-process debug.

The runner (``benchmarks.run``) goes through this package in three steps:

* ``preflight``: before anything runs, the cluster can take the jobs, every config builds, the
  data is there (or is forged, with ``--make-datasets``) and no row would mix two datasets;
* ``cost``: the compute estimate printed before a launch, each method's stated budget
  (``benchmarks.budgets``) priced, measured runs preferred where there are any;
* ``scheduler``: ``launch`` itself, the runs' order and lanes, their ends and the progress lines.

``options`` holds what a launch asks for (``LaunchOptions``) and what each job gets;
``executors`` the submitit executor and the processes it starts; ``ordering`` the order runs
start in and what holds one back. The names below are the package's interface.
"""

from benchmarks.launch.cost import (
    ANTMAZE_STEP_S,
    CPU_CORE_FLOPS,
    ENV_STEP_S,
    GPU_FLOPS,
    Estimate,
    NoBudget,
    calibration,
    domain_of,
    env_step_seconds,
    estimate,
    estimate_pretraining,
    estimate_run,
    format_hours,
    model_seconds,
    pretraining_share,
    remaining_fraction,
    run_budget,
    saved_pretraining,
)
from benchmarks.launch.executors import CONTROLLER_LOG, make_executor
from benchmarks.launch.options import (
    EXECUTORS,
    LaunchOptions,
    default_preset,
    gpu_present,
    job_gpus,
    job_threads,
    local_job_gpus,
    visible_gpus,
)
from benchmarks.launch.ordering import (
    followers,
    next_to_start,
    order_for_sharing,
    pretraining_groups,
    sharing_cell,
    twin_failed,
    twin_unfinished,
)
from benchmarks.launch.preflight import (
    check_configs,
    check_fits_slurm,
    complete_runs_on_other_data,
    data_content_conflicts,
    dataset_problems,
    dataset_provenance,
    forge_in_child,
    forgeable,
    largest_node_cpus,
    make_datasets,
    resolve_executor,
    slurm_reachable,
    with_overrides,
)
from benchmarks.launch.scheduler import Failure, LaunchInterrupted, LaunchReport, Scheduler, launch

__all__ = [
    "ANTMAZE_STEP_S", "CONTROLLER_LOG", "CPU_CORE_FLOPS", "ENV_STEP_S", "EXECUTORS", "GPU_FLOPS",
    "Estimate", "Failure", "LaunchInterrupted", "LaunchOptions", "LaunchReport", "NoBudget", "Scheduler",
    "calibration", "check_configs", "check_fits_slurm", "complete_runs_on_other_data", "data_content_conflicts",
    "dataset_problems", "dataset_provenance", "default_preset", "domain_of", "env_step_seconds", "estimate",
    "estimate_pretraining", "estimate_run", "followers", "forge_in_child", "forgeable", "format_hours",
    "gpu_present", "job_gpus", "job_threads", "largest_node_cpus", "launch", "local_job_gpus", "make_datasets",
    "make_executor", "model_seconds", "next_to_start", "order_for_sharing", "pretraining_groups",
    "pretraining_share", "remaining_fraction", "resolve_executor", "run_budget", "saved_pretraining",
    "sharing_cell", "slurm_reachable", "twin_failed", "twin_unfinished", "visible_gpus", "with_overrides",
]
