"""The forge: D4RL-style datasets made here, with SAC, on gymnasium's MuJoCo environments.

D4RL's recipe (Fu et al., 2020, section 5 and appendix C), followed step by step:

* train SAC online on the environment, evaluating it every ``eval_every`` steps;
* early-stop when the policy reaches the *medium* level, about one third of expert
  performance: a normalized score of ``100 * target_fraction`` (D4RL's expert = 100);
* ``medium``: ``size`` transitions (1M by default) collected by that policy snapshot with
  stochastic actions (sampled from the tanh Gaussian, as D4RL's "medium" data);
* ``medium-replay``: every transition in SAC's replay buffer up to the moment the policy
  reached the medium level (including the random warm-up), in the order collected;
* ``random``: ``size`` transitions of uniformly random actions (D4RL used a randomly
  initialised policy; uniform actions are the usual stand-in, recorded in the card);
* ``expert`` is not made yet (it needs a full SAC training run to convergence).

State lives in ``<data_dir>/forge/<family>-seed<S>/``: SAC checkpoints (resumed after any
interruption, exactly), the evaluation curve, and the behaviour policy snapshot
``medium-policy.pt`` (a few hundred KB). With the policy on disk, or packaged under
``benchmarks/datasets/policies/`` (hopper, seed 0, is), ``medium`` is rebuilt in minutes
without training, bit for bit (collection is seeded; ``--train`` retrains instead).
"""

from __future__ import annotations

import io
import json
import signal
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from baselines.sac import SACAgent, TanhGaussianActor, sac_config
from benchmarks.datasets.d4rl_io import read_d4rl
from benchmarks.datasets.forge_base import (  # the shared parts, also read from here
    FORGE_SAC_SETTINGS,
    PACKAGED_POLICIES,
    ForgeConfig,
    ForgeError,
    ForgeStopped,
    NumpyActor,
    _write_dataset,
    family_dir,
    load_first_actor,
)
from benchmarks.datasets.loading import card_path, generated_path
from benchmarks.datasets.portable_math import math_settings
from benchmarks.datasets.registry import DatasetSpec, DatasetUnavailable, get_spec
from rlbase.checkpoint import CheckpointManager, atomic_write_bytes
from rlbase.config import ConfigError, apply_overrides
from rlbase.progress import progress_bar
from rlbase.seeds import forge_episode_seed
from rlbase.training import StopRequested

LEVELS = ("medium", "medium-replay", "random")


def policy_path(spec: DatasetSpec, seed: int, root=None) -> Path:
    return family_dir(spec, seed, root) / "medium-policy.pt"


def packaged_policy_path(spec: DatasetSpec, seed: int) -> Path:
    return PACKAGED_POLICIES / f"{spec.family}-medium-seed{seed}.pt"


# ============================================================================ SAC to medium
def _sac(spec: DatasetSpec, fc: ForgeConfig, progress: bool) -> SACAgent:
    overrides = {**FORGE_SAC_SETTINGS, "online_samples": fc.sac_max_steps, "eval_every": fc.eval_every,
                 "eval_episodes": fc.eval_episodes, "checkpoint_every": fc.checkpoint_every, **fc.sac_overrides}
    cfg = sac_config(spec.name, "paper", fc.seed, overrides)
    return SACAgent(cfg, spec.make_env, spec.score_fn, progress=progress)


def train_to_medium(spec: DatasetSpec, fc: ForgeConfig, root=None, progress: bool = True) -> dict:
    """Train SAC (resuming from its checkpoints) until the medium level; save the policy and replay.

    Returns the policy record (also in medium-policy.pt). Idempotent: a saved policy is reused.
    """
    out = family_dir(spec, fc.seed, root)
    pol = policy_path(spec, fc.seed, root)
    if pol.exists():
        return torch.load(pol, map_location="cpu", weights_only=False)
    manager = CheckpointManager(out / "sac", keep=2)
    agent = _sac(spec, fc, progress)
    curve_file = out / "sac-curve.json"
    curve: list[dict] = []
    loaded = manager.load_latest()
    for note in loaded.skipped:
        print(f"[forge] skipped checkpoint {note}", file=sys.stderr)
    if loaded.state is not None:
        agent.load_state_dict(loaded.state["agent"])
        curve = loaded.state["curve"]
        print(f"[forge] resumed SAC from {loaded.path.name} at step {agent.counters.online_samples}",
              file=sys.stderr)

    def log(row: dict) -> None:
        curve.append({k: v for k, v in row.items() if k != "returns"})
        atomic_write_bytes(curve_file, json.dumps(curve, indent=1).encode())

    def checkpoint() -> None:
        manager.save({"agent": agent.state_dict(), "curve": list(curve)}, agent.counters.online_samples)

    reached = lambda row: row["score_mean"] >= fc.threshold  # noqa: E731
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    if threading.current_thread() is threading.main_thread():
        for sig in previous:  # checkpoint at the end of the current episode, then stop
            signal.signal(sig, lambda *_: agent.request_stop())
    try:
        try:
            row = agent.finetune(log=log, checkpoint=checkpoint, stop_when=reached)
        except StopRequested:
            raise ForgeStopped(f"[forge] stopped at SAC step {agent.counters.online_samples} after a checkpoint; "
                             "run the same command again to resume") from None
        if row is None or not reached(row):
            raise ForgeError(
                f"SAC did not reach the medium level (normalized score {fc.threshold:.1f}) on {spec.env_id} "
                f"within {fc.sac_max_steps} steps; best evaluation: "
                f"{max((r['score_mean'] for r in curve), default=float('nan')):.1f} (curve: {curve_file})")
        record = {
            "actor": agent.actor.state_dict(), "obs_dim": agent.obs_dim, "act_dim": agent.act_dim,
            "hidden_dim": agent.cfg.hidden_dim, "n_hidden": agent.cfg.n_hidden,
            "log_std_min": agent.cfg.log_std_min, "log_std_max": agent.cfg.log_std_max,
            "action_low": agent.action_low, "action_high": agent.action_high,
            "env": spec.env_versions(), "seed": fc.seed, "sac_config": asdict(agent.cfg),
            "sac_steps": agent.counters.online_samples, "sac_updates": agent.counters.updates,
            "sac_wall_time": agent.counters.wall_time, "threshold_score": fc.threshold, "sac_math": math_settings(),
            "evaluation": {k: row[k] for k in ("return_mean", "return_std", "score_mean", "score_std", "returns")},
        }
        replay = agent.buffer.ordered()
        _save_replay(spec, fc, replay, record, root)
        buf = io.BytesIO()
        torch.save(record, buf)
        atomic_write_bytes(pol, buf.getvalue())  # last: its presence means "medium reached, replay saved"
        return record
    finally:
        agent.close()
        if threading.current_thread() is threading.main_thread():
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _save_replay(spec: DatasetSpec, fc: ForgeConfig, replay: dict, record: dict, root) -> None:
    """The replay buffer up to the medium level, as the family's medium-replay dataset."""
    arrays = {"observations": replay["observations"], "actions": replay["actions"],
              "rewards": replay["rewards"], "next_observations": replay["next_observations"],
              "terminals": replay["terminated"], "timeouts": replay["truncated"] & ~replay["terminated"]}
    name = f"{spec.family}-medium-replay"
    _write_dataset(get_spec(name), arrays, root, fc, extra={
        "level": "medium-replay", "policy": "SAC replay buffer from the first step (uniform random warm-up "
        f"of {record['sac_config']['warmup_steps']} steps) to the step the policy reached the medium level",
        "sac_steps": record["sac_steps"], "sac_wall_time_s": record["sac_wall_time"],
        "sac_config": record["sac_config"], "sac_math": record["sac_math"], "behaviour_policy_eval": record["evaluation"]})


# ============================================================================ collection
def load_policy(spec: DatasetSpec, seed: int, root=None, packaged: bool = True) -> tuple[TanhGaussianActor, dict]:
    """The medium behaviour policy: the repository's (if ``packaged`` and committed), else the forge
    directory's. The committed one comes first so that a medium-replay make, which leaves its own
    SAC snapshot in the forge directory, does not change what a later medium make collects."""
    local, committed = policy_path(spec, seed, root), packaged_policy_path(spec, seed)
    found = load_first_actor(([committed] if packaged else []) + [local])
    if found is not None:
        return found
    raise DatasetUnavailable(f"no medium policy for {spec.family} seed {seed} (looked in "
                             f"{policy_path(spec, seed, root)} and {packaged_policy_path(spec, seed)})")


def collect(spec: DatasetSpec, size: int, seed: int, actor: TanhGaussianActor | None,
            progress: bool = True) -> dict[str, np.ndarray]:
    """``size`` transitions from ``actor`` (stochastic actions) or uniform random actions (None).

    Episodes are reset with seeds derived from ``seed``; the last episode is cut at ``size`` and
    left without an end flag (an unfinished tail, dropped by the reader as in D4RL).
    """
    env = spec.make_env()
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    out = {"observations": np.zeros((size, obs_dim), np.float32), "actions": np.zeros((size, act_dim), np.float32),
           "rewards": np.zeros(size, np.float32), "next_observations": np.zeros((size, obs_dim), np.float32),
           "terminals": np.zeros(size, bool), "timeouts": np.zeros(size, bool)}
    rng = np.random.default_rng(seed)
    policy = None if actor is None else NumpyActor(actor)
    low, high = env.action_space.low, env.action_space.high
    episode = 0
    obs, _ = env.reset(seed=forge_episode_seed(seed, 0))
    try:
        for t in progress_bar(range(size), desc=f"collect {spec.name}", unit="step", enabled=progress,
                              mininterval=2.0):
            action = rng.uniform(low, high).astype(np.float32) if policy is None else policy.sample(obs, rng)
            nxt, reward, term, trunc, _ = env.step(action)
            out["observations"][t], out["actions"][t], out["rewards"][t] = obs, action, reward
            out["next_observations"][t] = nxt
            out["terminals"][t], out["timeouts"][t] = term, trunc and not term
            obs = nxt
            if term or trunc:
                episode += 1
                obs, _ = env.reset(seed=forge_episode_seed(seed, episode))
    finally:
        env.close()
    return out


# ============================================================================ entry point
def make(name: str, fc: ForgeConfig | None = None, root=None, force: bool = False, progress: bool = True) -> dict:
    """Make dataset ``name`` (training SAC first if needed); returns its card."""
    spec = get_spec(name)
    if not spec.available:
        raise DatasetUnavailable(f"{name}: AntMaze needs gymnasium-robotics, which is not installed: "
                                 f"pip install -e '.[antmaze]'")
    fc = fc or ForgeConfig(name=name)
    if spec.domain == "antmaze":  # its own recipe: walker + waypoint planner (antmaze_forge.py)
        from benchmarks.datasets.antmaze_forge import from_forge_config, make_antmaze
        return make_antmaze(spec, from_forge_config(fc), root, force, progress)
    if spec.level not in LEVELS:
        raise ConfigError(f"the forge makes levels {', '.join(LEVELS)}; {name!r} is level {spec.level!r} "
                          "(expert needs a full SAC run to convergence and is not implemented yet)")
    target = generated_path(name, root)
    if target.exists() and not force:
        cp = card_path(name, root)
        card = json.loads(cp.read_text()) if cp.exists() else read_d4rl(target).metadata.get("card", {})
        print(f"[forge] {target} exists (use --force to rebuild)", file=sys.stderr)
        return card
    start = time.perf_counter()
    torch.set_num_threads(1)
    if spec.level == "random":
        arrays = collect(spec, fc.size, fc.seed, None, progress)
        return _write_dataset(spec, arrays, root, fc, extra={
            "level": "random", "policy": "uniform random actions (D4RL: a randomly initialised policy)",
            "size": fc.size, "wall_time_s": time.perf_counter() - start})
    if spec.level == "medium-replay":
        if force and policy_path(spec, fc.seed, root).exists():
            raise ConfigError(f"--force for {name}: delete {family_dir(spec, fc.seed, root)} to retrain SAC "
                              "(the replay buffer is saved once, when the policy reached the medium level)")
        train_to_medium(spec, fc, root, progress)
        card = json.loads(card_path(name, root).read_text())
        return card
    # medium
    try:
        actor, record = load_policy(spec, fc.seed, root, packaged=fc.packaged_policy)
    except DatasetUnavailable:
        train_to_medium(spec, fc, root, progress)
        actor, record = load_policy(spec, fc.seed, root, packaged=False)
    t0 = time.perf_counter()
    arrays = collect(spec, fc.size, fc.seed, actor, progress)
    return _write_dataset(spec, arrays, root, fc, extra={
        "level": "medium", "policy": "SAC snapshot at the medium level, stochastic (sampled) actions",
        "policy_file": record["path"], "sac_steps": record["sac_steps"],
        "sac_wall_time_s": record.get("sac_wall_time"), "sac_config": record["sac_config"],
        "sac_math": record.get("sac_math"), "behaviour_policy_eval": record["evaluation"],
        "size": fc.size, "collect_wall_time_s": time.perf_counter() - t0})


def forge_config(name: str, overrides: dict | None = None) -> ForgeConfig:
    return apply_overrides(ForgeConfig(name=name), dict(overrides or {}))


def expected_work(name: str, fc: ForgeConfig | None = None, root=None) -> str:
    """What ``make(name)`` will do here and roughly how long it takes, for a caller to say first."""
    spec = get_spec(name)
    fc = fc or ForgeConfig(name=name)
    collect_only = f"collects {fc.size:,} steps (minutes)"
    if spec.domain == "antmaze":
        from benchmarks.datasets.antmaze_forge import packaged_walker_path, walker_path
        ready = walker_path(fc.seed, root).exists() or (fc.packaged_policy and packaged_walker_path(fc.seed).exists())
        return collect_only if ready else "trains the ant walker first (hours on a CPU), then " + collect_only
    if spec.level == "random":
        return collect_only
    if policy_path(spec, fc.seed, root).exists():
        return collect_only if spec.level == "medium" else "writes the saved replay buffer (seconds)"
    if spec.level == "medium" and fc.packaged_policy and packaged_policy_path(spec, fc.seed).exists():
        return "uses the packaged medium policy and " + collect_only
    then = collect_only if spec.level == "medium" else "keeps its replay buffer"
    return f"trains SAC to the medium level first (hours on a CPU, at most {fc.sac_max_steps:,} steps), then {then}"
