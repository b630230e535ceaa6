"""The compute estimate printed before a launch: each run's stated budget, priced.

Every method states its budget (``benchmarks.budgets``, named in ``benchmarks.methods.METHODS``):
gradient updates and environment steps per phase and the FLOPs of one update. This module
prices it: FLOPs divided by a throughput calibrated on this 2-core CPU (``CPU_CORE_FLOPS``; the
``paper`` model: about 8 s per update) or a nominal GPU throughput, plus environment steps at a
fixed cost each. That is a model, not a measurement: where the results folder holds complete
runs of the same computation their measured time prices a run instead (``benchmarks.measured_cost``),
and where it holds runs of the same method and domain the model is scaled by what they took
against it (``calibration``). A method that states no budget is refused, never priced at 0.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import budgets, measured_cost
from benchmarks.experiments import RunSpec
from benchmarks.job import config_dict, config_drift, spec_config
from benchmarks.launch.options import LaunchOptions
from benchmarks.launch.ordering import config_or_none, followers, pretraining_groups
from benchmarks.launch.preflight import dataset_provenance
from benchmarks.sharing import pretraining as shared
from rlbase.config import ConfigError
from rlbase.protocol import is_antmaze

CPU_CORE_FLOPS = 4e10  # effective FLOP/s of one core: 38-46 measured for the cpu preset's ODT, DT, IQL and SAC runs
GPU_FLOPS = 2.0e13  # nominal effective FLOP/s of one modern GPU on this model (rough)
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
    rough: list[str] = field(default_factory=list)  # methods whose per-update cost is counted roughly (MLPs)
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
                     f"from their configs' widths)")
        return text


class NoBudget(ConfigError):
    """A method whose registry entry states no budget function: the estimate cannot price it."""


def run_budget(method: str, cfg: Any, dataset: str = "") -> budgets.Budget:
    """The budget ``method`` states for one run of ``cfg`` on ``dataset`` (its domain sets the
    episode lengths); NoBudget for a method whose ``METHODS`` entry names no budget function."""
    from benchmarks.methods import METHODS, budget_of
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")
    fn = budget_of(method)
    if fn is None:
        raise NoBudget(f"method {method!r} states no budget, so the launch cannot estimate its cost: give its "
                       f"METHODS entry in benchmarks/methods.py a budget function (updates, environment steps "
                       f"and FLOPs per update from its config; see benchmarks/budgets.py)")
    return fn(cfg, dataset)


def estimate_run(method: str, cfg: Any, dataset: str = "") -> tuple[float, float, float, bool]:
    """(gradient updates, environment steps, FLOPs, exact-layout?) of one run of ``method``
    with ``cfg`` on ``dataset``: its pretraining (``estimate_pretraining``) plus its online phase."""
    b = run_budget(method, cfg, dataset)
    return b.updates, b.env_steps, b.flops, b.exact


def estimate_pretraining(method: str, cfg: Any, dataset: str = "") -> tuple[float, float, float]:
    """(gradient updates, environment steps, FLOPs) of the pretraining part of ``estimate_run``:
    the offline updates and the evaluations made during them, the one ending the phase included."""
    b = run_budget(method, cfg, dataset)
    return b.pretraining.updates, b.pretraining.env_steps, b.pretraining.updates * b.update_flops


def _cpu_seconds(flops: float, env_steps: float, dataset: str) -> float:
    """The model's CPU seconds for ``flops`` at ``CPU_CORE_FLOPS`` and ``env_steps`` on ``dataset``."""
    return flops / CPU_CORE_FLOPS + env_steps * env_step_seconds(dataset)


def model_seconds(method: str, cfg: Any, dataset: str, follower: bool = False) -> float:
    """The model's CPU seconds for one run of ``method`` with ``cfg`` on ``dataset``, without
    its pretraining where ``follower``."""
    b = run_budget(method, cfg, dataset)
    if follower:
        return _cpu_seconds(b.online.updates * b.update_flops, b.online.env_steps, dataset)
    return _cpu_seconds(b.flops, b.env_steps, dataset)


def spec_pretraining_share(spec: RunSpec) -> float:
    """``pretraining_share`` of a spec's run (0 where its config does not build)."""
    cfg = config_or_none(spec)
    return 0.0 if cfg is None else pretraining_share(spec.method, cfg, spec.dataset)


def pretraining_share(method: str, cfg: Any, dataset: str) -> float:
    """The share of one run's modelled seconds that its pretraining takes (0 without one): how
    progress through pretraining and through the online phase weigh against each other."""
    full = model_seconds(method, cfg, dataset)
    return 0.0 if full <= 0 else min(1.0, max(0.0, 1.0 - model_seconds(method, cfg, dataset, follower=True) / full))


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
            cfg = config_or_none(t.spec) if t.spec is not None else None
            if cfg is None or config_drift(t.config, cfg, ignore=measured_cost.unpriced_fields(key.method)):
                continue
            try:
                model = model_seconds(key.method, cfg, key.dataset, key.from_shared_pretraining)
            except NoBudget:  # a run of a method that states no budget: nothing to scale
                continue
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
        b = run_budget(s.method, cfg, s.dataset)
        u, e, f = b.updates, b.env_steps, b.flops
        full = u
        if follower:
            u, e, f = b.online.updates, b.online.env_steps, b.online.updates * b.update_flops
            est.shared_runs += 1
        left = remaining_fraction(full, u, (done_updates or {}).get(s.run_id, 0))
        u, e, f = u * left, e * left, f * left
        est.updates += u
        est.env_steps += e
        est.env_seconds += e * env_step_seconds(s.dataset)
        est.flops += f
        same = measured_cost.matching(timed, s, cfg, follower, cpu_model) if timed else []
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
        if not b.exact:
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
        cfg = config_or_none(s)
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
