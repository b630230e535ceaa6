"""Speed and memory of ODT training on this machine (issue 8): ``python -m benchmarks.perf``.

What it measures, all in one process so that ratios compare like with like:

* ms per gradient update of ``ODTTrainer.update`` (the real trainer: model, LAMB, warmup,
  clipping, the lambda step, its ``.item()`` calls) for four model sizes, with the batch
  sampling (``ODTTrainer.batch_tensors``: length-proportional choice, window gather,
  padding, RTG, tensors) timed separately and as a share of the update;
* achieved GFLOP/s of an update (matmul FLOPs counted by ``torch.utils.flop_counter``) and
  its ratio to a large fp32 matmul timed right before, at the same thread count;
* evaluation: 10 Hopper episodes stepped together at the ``cpu`` preset, run to the full
  1000 steps (the health check is switched off so every episode is worst-case long), and
  one exploration episode (1 env, sampled actions); env-steps/s with and without the model;
* the replay buffer's FIFO add at the ``cpu`` and ``paper`` buffer sizes;
* an estimate of a whole ``cpu``-preset ODT run on Hopper (pretraining + online budget +
  evaluations) from those numbers, for several mean episode lengths;
* peak RSS after each section, the machine, the library versions and the load average
  (other processes on a shared machine slow everything; the numbers say when they did).

Wall-clock medians are the headline numbers; CPU time per update is reported too because on
a shared machine it shows what the work itself costs. Data are synthetic Hopper-shaped
trajectories (obs 11, act 3, ~1M steps like hopper-medium): speed does not depend on values.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from odt.buffer import TrajectoryBuffer
from odt.config import make_config
from odt.rollout import run_episodes
from odt.train import ODTTrainer
from rlbase.checkpoint import atomic_write_bytes
from rlbase.config import ConfigError, apply_overrides
from rlbase.progress import progress_bar
from rlbase.protocol import phase_evaluations
from rlbase.runtime import keep_freed_memory_in_heap
from rlbase.trajectories import Trajectories

HOPPER = "Hopper-v5"
OBS_DIM, ACT_DIM = 11, 3


@dataclass(frozen=True)
class UpdateCase:
    """One model size to time. The official code's times are not quoted here: they come only
    from the alternating side-by-side sitting of ``benchmarks.perf.official``."""

    name: str
    embed_dim: int
    n_layers: int
    n_heads: int
    batch_size: int
    reps: int | None = None  # None: PerfConfig.reps
    warmup: int | None = None  # None: PerfConfig.warmup


CASES = {
    "small": UpdateCase("small", 64, 2, 1, 32),  # benchmarks.perf.official's "d"
    "dt-gym": UpdateCase("dt-gym", 128, 3, 1, 64),  # benchmarks.perf.official's "c"
    "cpu-preset": UpdateCase("cpu-preset", 64, 3, 4, 64),  # the cpu preset's model and batch
    "paper": UpdateCase("paper", 512, 4, 4, 256, reps=3, warmup=1),
}
PAPER_GOAL_MATMUL_RATIO = 0.7  # issue 17: paper size at >= 70% of a large fp32 matmul
RUN_GOAL_MINUTES = 6.0  # issue 17: a whole cpu-preset hopper-medium ODT run


@dataclass
class PerfConfig:
    cases: list[str] = field(default_factory=lambda: list(CASES))
    threads: list[int] = field(default_factory=lambda: [2, 1])  # first: all cases; others: cpu preset
    reps: int = 20  # timed updates per case (after warmup)
    warmup: int = 3
    sample_reps: int = 200
    eval_episodes: int = 10
    eval_steps: int = 1000  # steps per evaluation episode (Hopper's time limit)
    dataset_steps: int = 1_000_000
    matmul_size: int = 2048
    device: str = "cpu"
    batch_sampling: str = "auto"  # ODTConfig.batch_sampling: host (numpy) | device (torch) | auto
    precision: str = "fp32"  # ODTConfig.precision: fp32 | tf32 | bf16
    rollout_preset: str = "cpu"  # the model the rollouts time: the cpu preset's or the paper's
    out: str = "paper_tables/perf/perf_latest.json"
    progress: bool = True

    def validate(self) -> PerfConfig:
        unknown = [c for c in self.cases if c not in CASES]
        if unknown:
            raise ConfigError(f"cases: unknown {unknown}; known: {', '.join(CASES)}")
        for name in ("reps", "sample_reps", "eval_episodes", "eval_steps", "dataset_steps", "matmul_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r} must be >= 1")
        if self.rollout_preset not in ("cpu", "paper"):
            raise ConfigError(f"rollout_preset={self.rollout_preset!r}: cpu | paper")
        if self.warmup < 0:
            raise ConfigError(f"warmup={self.warmup!r} must be >= 0")
        if not self.threads or min(self.threads) < 1:
            raise ConfigError(f"threads={self.threads!r}: one or more counts >= 1")
        return self


QUICK = dict(reps=3, warmup=1, sample_reps=20, eval_episodes=2, eval_steps=50, dataset_steps=20_000,
             matmul_size=512, cases=["small"], threads=[1])


# ----- small pure helpers --------------------------------------------------------------------
def summarize(seconds: list[float]) -> dict:
    """Median, min and 90th percentile of a list of durations, in milliseconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    return {"median_ms": float(np.median(ms)), "min_ms": float(ms.min()),
            "p90_ms": float(np.percentile(ms, 90)), "n": int(len(ms))}


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, B on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def estimate_run(pretrain_updates: int, online_samples: int, updates_per_round: int,
                 eval_every_rounds: int, eval_every_updates: int, eval_episodes: int,
                 step_ms: float, eval_step_ms: float, explore_step_ms: float,
                 episode_length: int) -> dict:
    """Seconds of a whole ODT run (Algorithm 1) from per-unit costs.

    Online rounds = ceil(budget / L) (one exploration episode of L steps, then I updates);
    evaluations: one every eval_every_updates in pretraining plus one at its end, one every
    eval_every_rounds online plus one at the end; an evaluation steps eval_episodes
    episodes together for L steps (eval_step_ms is one vectorised step).
    """
    rounds = math.ceil(online_samples / episode_length) if online_samples else 0
    online_updates = rounds * updates_per_round
    evals = phase_evaluations(pretrain_updates, eval_every_updates) + phase_evaluations(rounds, eval_every_rounds)
    parts = {
        "pretrain_s": pretrain_updates * step_ms / 1e3,
        "online_updates_s": online_updates * step_ms / 1e3,
        "exploration_s": rounds * episode_length * explore_step_ms / 1e3,
        "evaluation_s": evals * episode_length * eval_step_ms / 1e3,
    }
    total = sum(parts.values())
    return {"episode_length": episode_length, "rounds": rounds, "updates": pretrain_updates + online_updates,
            "evaluations": evals, **parts, "total_min": total / 60.0}


# ----- measurement -----------------------------------------------------------------------------
def synthetic_hopper_data(num_steps: int, seed: int = 0) -> Trajectories:
    """Hopper-shaped random trajectories (lengths 200-700, mean ~450 like hopper-medium)."""
    rng = np.random.default_rng(seed)
    lengths = []
    while sum(lengths) < num_steps:
        lengths.append(int(rng.integers(200, 701)))
    lengths[-1] -= sum(lengths) - num_steps
    if lengths[-1] < 1:
        lengths.pop()
    n = sum(lengths)
    return Trajectories(observations=rng.normal(size=(n, OBS_DIM)).astype(np.float32),
                        actions=rng.uniform(-1, 1, size=(n, ACT_DIM)).astype(np.float32),
                        rewards=rng.uniform(0, 3, size=n).astype(np.float32),
                        lengths=np.asarray(lengths, dtype=np.int64),
                        terminated=np.zeros(len(lengths), dtype=bool))


def make_hopper() -> gym.Env:
    return gym.make(HOPPER)


def make_hopper_full_length() -> gym.Env:
    """Hopper that never terminates early, so an episode is the full 1000 steps."""
    return gym.make(HOPPER, terminate_when_unhealthy=False)


class Timer:
    """perf_counter around a block, synchronising CUDA so GPU work is inside the interval."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __call__(self, fn: Callable[[], object]) -> tuple[float, float, object]:
        if self.cuda:
            torch.cuda.synchronize()
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - wall, time.process_time() - cpu, out


def matmul_gflops(size: int, device: torch.device, reps: int = 3) -> tuple[float, float]:
    """Throughput of a square fp32 matmul (median of reps), GFLOP/s by wall and by CPU time."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    timer = Timer(device)
    timer(lambda: a @ b)
    times = [timer(lambda: a @ b)[:2] for _ in range(reps)]
    flop = 2.0 * size**3
    return (flop / float(np.median([t[0] for t in times])) / 1e9,
            flop / float(np.median([t[1] for t in times])) / 1e9)


def case_config(case: UpdateCase, device: str, batch_sampling: str = "auto", precision: str = "fp32"):
    cfg = make_config("hopper-medium", "online", "cpu")
    return apply_overrides(cfg, {"model.embed_dim": case.embed_dim, "model.n_layers": case.n_layers,
                                 "model.n_heads": case.n_heads, "optim.batch_size": case.batch_size,
                                 "device": device, "batch_sampling": batch_sampling, "precision": precision})


def time_updates(trainer: ODTTrainer, reps: int, warmup: int, sample_reps: int) -> dict:
    """Update (excluding sampling) and sampling times of the trainer's own code path."""
    timer = Timer(trainer.device)
    for _ in range(warmup):
        trainer.update(trainer.batch_tensors(trainer.buffer))
    sample_times = [timer(lambda: trainer.batch_tensors(trainer.buffer))[0] for _ in range(sample_reps)]
    wall, cpu = [], []
    for _ in range(reps):
        batch = trainer.batch_tensors(trainer.buffer)
        w, c, _ = timer(lambda b=batch: trainer.update(b))
        wall.append(w)
        cpu.append(c)
    # the training loop's own pace: reps sampled-and-stepped updates with no read in between
    # (on a GPU the per-update timings above synchronise every update; this does not)
    loop_s = timer(lambda: [trainer.step(trainer.batch_tensors(trainer.buffer)) for _ in range(reps)])[0]
    with FlopCounterMode(display=False) as counter:
        trainer.update(trainer.batch_tensors(trainer.buffer))
    update = summarize(wall)
    sample = summarize(sample_times)
    batch_size = trainer.cfg.optim.batch_size
    return {
        "update": update,
        "update_cpu_ms_median": float(np.median(cpu)) * 1e3,
        "sample": sample,
        "sample_share": sample["median_ms"] / update["median_ms"],
        "step_ms": update["median_ms"] + sample["median_ms"],
        "loop_ms_per_update": loop_s / reps * 1e3,
        "windows_per_s": batch_size / ((update["median_ms"] + sample["median_ms"]) / 1e3),
        "sampled_windows_per_s": batch_size / (sample["median_ms"] / 1e3),
        "gflop_per_update": counter.get_total_flops() / 1e9,
    }


def measure_case(case: UpdateCase, pc: PerfConfig, data: Trajectories, threads: int) -> dict:
    torch.set_num_threads(threads)
    cfg = case_config(case, pc.device, pc.batch_sampling, pc.precision)
    trainer = ODTTrainer(cfg, data, make_hopper, progress=False)
    try:
        mm = matmul_gflops(pc.matmul_size, trainer.device)
        reps = case.reps if case.reps is not None and pc.reps >= case.reps else pc.reps
        warmup = pc.warmup if case.warmup is None else min(pc.warmup, case.warmup)
        if trainer.device.type == "cuda":  # a case's cap on reps is for CPU cost; a GPU runs them all
            reps, warmup = pc.reps, pc.warmup
        res = time_updates(trainer, reps, warmup, pc.sample_reps)
    finally:
        trainer.close()
    gflops = res["gflop_per_update"] / (res["update"]["median_ms"] / 1e3)
    cpu_gflops = res["gflop_per_update"] / (res["update_cpu_ms_median"] / 1e3)
    row = {"case": case.name, "threads": threads, "batch_sampling": trainer.batch_sampling,
           "precision": cfg.precision, "embed_dim": case.embed_dim, "n_layers": case.n_layers,
           "n_heads": case.n_heads, "batch_size": case.batch_size, "context_len": cfg.model.context_len,
           **res, "achieved_gflops": gflops, "matmul_gflops": mm[0], "matmul_ratio": gflops / mm[0],
           # CPU-time based: at one thread, what an idle core would do (robust to other load)
           "achieved_gflops_cpu": cpu_gflops, "matmul_gflops_cpu": mm[1], "matmul_ratio_cpu": cpu_gflops / mm[1],
           "peak_rss_mib": peak_rss_mib()}
    if case.name == "paper":
        row["goal_matmul_ratio"] = PAPER_GOAL_MATMUL_RATIO
        row["goal_met"] = row["matmul_ratio"] >= PAPER_GOAL_MATMUL_RATIO
        row["goal_met_cpu"] = row["matmul_ratio_cpu"] >= PAPER_GOAL_MATMUL_RATIO
    return row


def measure_rollouts(pc: PerfConfig, data: Trajectories, threads: int) -> dict:
    """Evaluation (N envs, mean action) and exploration (1 env, sampled), the model of
    ``pc.rollout_preset`` (hopper-medium online)."""
    torch.set_num_threads(threads)
    cfg = make_config("hopper-medium", "online", pc.rollout_preset, {"device": pc.device})
    trainer = ODTTrainer(cfg, data, make_hopper_full_length, progress=False)
    timer = Timer(trainer.device)
    n = pc.eval_episodes
    envs = gym.vector.SyncVectorEnv([make_hopper_full_length for _ in range(n)])
    one = gym.vector.SyncVectorEnv([make_hopper_full_length])
    try:
        cond = trainer.conditioning(cfg.g_eval)
        run = lambda e, k, sample, gen=None: run_episodes(  # noqa: E731
            trainer.model, e, cond, seeds=list(range(k)), sample=sample, generator=gen, max_steps=pc.eval_steps)
        run(envs, n, False)  # warm caches
        wall, eval_cpu, result = timer(lambda: run(envs, n, False))
        steps = int(result.lengths.sum())
        gen = torch.Generator(device=trainer.device).manual_seed(0)
        explore_wall, explore_cpu, explore = timer(lambda: run(one, 1, True, gen))
        explore_steps = int(explore.lengths.sum())
        # the same vector env stepped with random actions: what the simulator alone costs
        envs.reset(seed=0)
        envs.action_space.seed(0)
        acts = [envs.action_space.sample() for _ in range(pc.eval_steps)]
        env_wall, _, _ = timer(lambda: [envs.step(a) for a in acts])
    finally:
        envs.close()
        one.close()
        trainer.close()
    return {
        "threads": threads, "preset": pc.rollout_preset, "embed_dim": cfg.model.embed_dim,
        "device": str(trainer.device), "eval_episodes": n, "eval_context_len": cfg.model.eval_context_len,
        "eval_steps_per_episode": int(result.lengths.max()),
        "eval_s": wall, "eval_env_steps_per_s": steps / wall,
        "eval_vector_step_ms": wall / int(result.lengths.max()) * 1e3,
        "eval_cpu_s": eval_cpu, "eval_vector_step_cpu_ms": eval_cpu / int(result.lengths.max()) * 1e3,
        "env_only_env_steps_per_s": n * pc.eval_steps / env_wall,
        "explore_steps": explore_steps, "explore_s": explore_wall,
        "explore_env_steps_per_s": explore_steps / explore_wall,
        "explore_step_ms": explore_wall / explore_steps * 1e3,
        "explore_step_cpu_ms": explore_cpu / explore_steps * 1e3,
        "peak_rss_mib": peak_rss_mib(),
    }


def measure_buffer_add(data: Trajectories, episode_length: int = 1000, reps: int = 20) -> list[dict]:
    """FIFO add of one episode at the cpu (100) and paper (1000) buffer sizes."""
    rng = np.random.default_rng(1)
    episode = dict(observations=rng.normal(size=(episode_length, OBS_DIM)).astype(np.float32),
                   actions=rng.uniform(-1, 1, size=(episode_length, ACT_DIM)).astype(np.float32),
                   rewards=rng.uniform(0, 3, size=episode_length).astype(np.float32), terminated=False)
    rows = []
    for capacity in (100, 1000):
        buffer = TrajectoryBuffer.from_offline(data, capacity)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            buffer.add(episode)
            times.append(time.perf_counter() - t)
        nbytes = sum(a.nbytes for a in (buffer.data.observations, buffer.data.actions, buffer.data.rewards,
                                        buffer.rtg))
        rows.append({"capacity": capacity, "steps_stored": buffer.data.num_steps,
                     "stored_mib": nbytes / 2**20, **summarize(times)})
    return rows


def run_estimates(cpu_rows: dict[int, dict], rollouts: dict[int, dict]) -> list[dict]:
    cfg = make_config("hopper-medium", "online", "cpu")
    out = []
    for threads, row in cpu_rows.items():
        ro = rollouts.get(threads) or next(iter(rollouts.values()))
        bases = {"wall": (row["step_ms"], ro["eval_vector_step_ms"], ro["explore_step_ms"])}
        if threads == 1:  # one thread's CPU time is what the run costs on a core of its own
            bases["cpu"] = (row["update_cpu_ms_median"] + row["sample"]["median_ms"],
                            ro["eval_vector_step_cpu_ms"], ro["explore_step_cpu_ms"])
        for basis, (step, eval_step, explore_step) in bases.items():
            for length in (1000, 500, 250):
                est = estimate_run(cfg.pretrain_updates, cfg.online.online_samples, cfg.online.updates_per_round,
                                   cfg.online.eval_every_rounds, cfg.eval_every_updates, cfg.eval_episodes,
                                   step, eval_step, explore_step, length)
                out.append({"threads": threads, "basis": basis, **est, "goal_min": RUN_GOAL_MINUTES,
                            "goal_met": est["total_min"] <= RUN_GOAL_MINUTES})
    return out


def paper_run_estimates(updates: list[dict], rollouts: dict[int, dict]) -> list[dict]:
    """A paper-preset hopper-medium ODT run from the paper case's loop pace (no per-update sync:
    what the training loop does) and the paper model's rollout steps, for three episode lengths."""
    rows = [r for r in updates if r["case"] == "paper"]
    if not rows or not rollouts:
        return []
    cfg = make_config("hopper-medium", "online", "paper")
    row, ro = rows[0], next(iter(rollouts.values()))
    step_ms = row["loop_ms_per_update"]
    return [{"preset": "paper", "threads": row["threads"], "basis": "wall, loop pace", "precision": row["precision"],
             **estimate_run(cfg.pretrain_updates, cfg.online.online_samples, cfg.online.updates_per_round,
                            cfg.online.eval_every_rounds, cfg.eval_every_updates, cfg.eval_episodes,
                            step_ms, ro["eval_vector_step_ms"], ro["explore_step_ms"], length)}
            for length in (1000, 500, 250)]


def machine_info() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=False, cwd=Path(__file__).resolve().parent).stdout.strip()
    except OSError:
        commit = ""
    versions = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                "gymnasium": gym.__version__}
    try:
        import mujoco
        versions["mujoco"] = mujoco.__version__
    except ImportError:
        pass
    return {"cpu": cpu, "logical_cpus": os.cpu_count(), "platform": platform.platform(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "mkl": torch.backends.mkl.is_available(), "mkldnn": torch.backends.mkldnn.is_available(),
            "versions": versions, "git_commit": commit,
            "malloc_tuning": os.environ.get("ODT_MALLOC_TUNING", "1") != "0"}


def run(pc: PerfConfig) -> dict:
    pc.validate()
    started = datetime.now(timezone.utc)
    load_start = os.getloadavg()
    data = synthetic_hopper_data(pc.dataset_steps)
    primary, *others = pc.threads
    jobs: list[tuple[str, Callable[[], object]]] = []
    updates: list[dict] = []
    rollouts: dict[int, dict] = {}
    order = [c for c in CASES if c in pc.cases and c != "paper"] + (["paper"] if "paper" in pc.cases else [])
    for name in order:
        jobs.append((f"update {name} x{primary}t",
                     lambda n=name: updates.append(measure_case(CASES[n], pc, data, primary))))
        if name == "cpu-preset":  # the run-time estimate also wants the other thread counts
            for t in others:
                jobs.append((f"update {name} x{t}t", lambda n=name, t=t: updates.append(measure_case(CASES[n], pc, data, t))))
            for t in pc.threads:
                jobs.append((f"rollouts x{t}t", lambda t=t: rollouts.__setitem__(t, measure_rollouts(pc, data, t))))
    if "cpu-preset" not in pc.cases:
        jobs.append((f"rollouts x{primary}t", lambda: rollouts.__setitem__(primary, measure_rollouts(pc, data, primary))))
    buffer_rows: list[dict] = []
    jobs.insert(0, ("buffer add", lambda: buffer_rows.extend(measure_buffer_add(data))))
    bar = progress_bar(jobs, desc="perf", unit="job", enabled=pc.progress)
    for label, job in bar:
        bar.set_postfix_str(label)
        job()
    torch.set_num_threads(primary)
    cpu_rows = {r["threads"]: r for r in updates if r["case"] == "cpu-preset"}
    return {
        "started_utc": started.isoformat(timespec="seconds"),
        "seconds": (datetime.now(timezone.utc) - started).total_seconds(),
        "load_average_start": list(load_start), "load_average_end": list(os.getloadavg()),
        "machine": machine_info(), "config": dataclasses.asdict(pc),
        "dataset": {"kind": "synthetic Hopper-shaped", "steps": data.num_steps, "trajectories": len(data)},
        "updates": updates, "rollouts": list(rollouts.values()), "buffer_add": buffer_rows,
        "run_estimate": (run_estimates(cpu_rows, rollouts) if cpu_rows and rollouts and pc.rollout_preset == "cpu"
                         else paper_run_estimates(updates, rollouts) if pc.rollout_preset == "paper" else []),
        "peak_rss_mib": peak_rss_mib(),
    }


# ----- report ------------------------------------------------------------------------------
def format_report(res: dict) -> str:
    m = res["machine"]
    lines = [f"ODT perf  {res['started_utc']}  {m['cpu']} ({m['logical_cpus']} CPUs)  torch {m['versions']['torch']}"
             f"  load avg {res['load_average_start'][0]:.1f} -> {res['load_average_end'][0]:.1f}"]
    if res["updates"]:
        lines.append(f"batch sampling {res['updates'][0]['batch_sampling']}, precision {res['updates'][0]['precision']}; "
                     "'loop ms': an update in a run of updates with no read between them")
    lines.append("")
    lines.append(f"{'case':<11}{'thr':>4}{'size':>15}{'update ms':>11}{'min':>8}{'cpu ms':>8}{'sample ms':>10}"
                 f"{'share':>7}{'loop ms':>9}{'GFLOP/s':>9}{'matmul':>8}{'ratio':>7}{'cpu ratio':>10}  goal")
    for r in res["updates"]:
        size = f"{r['embed_dim']}/{r['n_layers']}/{r['n_heads']}/{r['batch_size']}"
        ref = ""
        if "goal_matmul_ratio" in r:
            ref = f">= {r['goal_matmul_ratio']:.0%} of matmul: {'met' if r['goal_met'] else 'NOT met'}"
        lines.append(f"{r['case']:<11}{r['threads']:>4}{size:>15}{r['update']['median_ms']:>11.1f}"
                     f"{r['update']['min_ms']:>8.1f}{r['update_cpu_ms_median']:>8.1f}{r['sample']['median_ms']:>10.2f}"
                     f"{r['sample_share']:>7.1%}{r['loop_ms_per_update']:>9.1f}{r['achieved_gflops']:>9.1f}"
                     f"{r['matmul_gflops']:>8.1f}"
                     f"{r['matmul_ratio']:>7.0%}{r['matmul_ratio_cpu']:>10.0%}  {ref}")
    lines.append("")
    for ro in res["rollouts"]:
        lines.append(f"rollouts ({ro.get('preset', 'cpu')} model, {ro.get('device', 'cpu')}) x{ro['threads']} thread(s): {ro['eval_episodes']}-episode evaluation of "
                     f"{ro['eval_steps_per_episode']} steps each in {ro['eval_s']:.1f} s "
                     f"({ro['eval_env_steps_per_s']:.0f} env-steps/s, CPU {ro['eval_cpu_s']:.1f} s; simulator alone "
                     f"{ro['env_only_env_steps_per_s']:.0f}); exploration {ro['explore_env_steps_per_s']:.0f} env-steps/s")
    for b in res["buffer_add"]:
        lines.append(f"buffer add (capacity {b['capacity']}, {b['steps_stored']} steps, {b['stored_mib']:.1f} MiB): "
                     f"{b['median_ms']:.2f} ms per episode")
    paper_est = [e for e in res["run_estimate"] if e.get("preset") == "paper"]
    for e in paper_est:
        lines.append(f"paper-preset hopper-medium ODT run ({e['precision']}, loop pace), episodes of "
                     f"{e['episode_length']:>4}: {e['updates']} updates, {e['rounds']} rounds, {e['evaluations']} evals "
                     f"-> {e['total_min']:.1f} min (pretrain {e['pretrain_s'] / 60:.1f}, online updates "
                     f"{e['online_updates_s'] / 60:.1f}, exploration {e['exploration_s'] / 60:.1f}, "
                     f"evaluation {e['evaluation_s'] / 60:.1f})")
    if res["run_estimate"] and not paper_est:
        lines += ["", "whole cpu-preset ODT run on Hopper (estimate from the numbers above):"]
        for e in res["run_estimate"]:
            lines.append(f"  {e['threads']} thread(s), {e['basis']:>4} time, episodes of {e['episode_length']:>4}: {e['updates']} updates, "
                         f"{e['rounds']} rounds, {e['evaluations']} evals -> {e['total_min']:.1f} min "
                         f"(goal <= {e['goal_min']:g}: {'met' if e['goal_met'] else 'NOT met'})")
    lines.append(f"\npeak RSS {res['peak_rss_mib']:.0f} MiB; {res['seconds']:.0f} s in all")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> PerfConfig:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.perf",
        description="Time ODT training on this machine: ms/update for four model sizes (vs the official code's "
                    "figures), sampling share, GFLOP/s vs a matmul, evaluation env-steps/s, buffer add, a whole "
                    "cpu-preset run estimate and peak RSS. Prints a table and writes JSON.")
    p.add_argument("--cases", default=",".join(CASES),
                   help=f"comma-separated subset of {', '.join(CASES)} (default: all; 'paper' takes ~1 min)")
    p.add_argument("--threads", default="2,1",
                   help="torch thread counts: all cases at the first, the cpu preset also at the rest (default 2,1)")
    p.add_argument("--reps", type=int, default=PerfConfig.reps, help="timed updates per case (paper: 3)")
    p.add_argument("--eval-steps", type=int, default=PerfConfig.eval_steps, help="steps per evaluation episode")
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto (GPU timing synchronises around each update)")
    p.add_argument("--batch-sampling", default="auto", choices=["auto", "host", "device"],
                   help="where batches are drawn (auto: the device on a GPU, numpy on the host on a CPU)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16"],
                   help="fp32 (the paper), tf32 (CUDA matmuls) or bf16 (autocast forward)")
    p.add_argument("--rollout-preset", default="cpu", choices=["cpu", "paper"],
                   help="the model the evaluation/exploration rollouts run (cpu: the cpu-preset run estimate; "
                        "paper: with --cases paper, the paper-preset hopper-medium run estimate)")
    p.add_argument("--out", default=PerfConfig.out, help="JSON output path (written atomically)")
    p.add_argument("--quick", action="store_true", help="seconds-long smoke run of the harness itself (not a result)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    try:
        threads = [int(t) for t in a.threads.split(",") if t]
    except ValueError:
        p.error(f"--threads {a.threads!r}: expected integers like 2,1")
    pc = PerfConfig(cases=[c for c in a.cases.split(",") if c], threads=threads, reps=a.reps,
                    eval_steps=a.eval_steps, device=a.device, batch_sampling=a.batch_sampling,
                    precision=a.precision, rollout_preset=a.rollout_preset, out=a.out, progress=not a.no_progress)
    if a.quick:
        pc = dataclasses.replace(pc, **QUICK)
    try:
        return pc.validate()
    except ConfigError as exc:
        p.error(str(exc))
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> dict:
    pc = parse_args(argv)
    keep_freed_memory_in_heap()  # as the training entry points do (rlbase/runtime.py)
    res = run(pc)
    print(format_report(res))
    out = Path(pc.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, (json.dumps(res, indent=1) + "\n").encode())
    print(f"wrote {out}")
    return res


if __name__ == "__main__":
    main()
