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
import shlex
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from baselines.sac import SACAgent, TanhGaussianActor, sac_config
from benchmarks.datasets.d4rl_io import read_d4rl, write_d4rl
from benchmarks.datasets.loading import card_path, generated_path
from benchmarks.datasets.registry import DatasetSpec, DatasetUnavailable, data_dir, get_spec
from odt.checkpoint import CheckpointManager, atomic_write_bytes
from odt.config import ConfigError, apply_overrides
from odt.train import StopRequested

LEVELS = ("medium", "medium-replay", "random")


class ForgeError(RuntimeError):
    """The forge could not make a dataset (e.g. SAC never reached the level); the message says why."""
PACKAGED_POLICIES = Path(__file__).parent / "policies"


@dataclass
class ForgeConfig:
    name: str  # dataset name, e.g. "hopper-medium"
    seed: int = 0
    size: int = 1_000_000  # transitions of medium / random datasets
    target_fraction: float = 1 / 3  # medium level = this fraction of D4RL's expert (normalized 100)
    target_score: float | None = None  # explicit normalized-score threshold (overrides target_fraction)
    sac_max_steps: int = 1_000_000  # give up if SAC has not reached the level by then
    eval_every: int = 5_000
    eval_episodes: int = 10
    checkpoint_every: int = 20_000
    sac_overrides: dict = field(default_factory=dict)  # e.g. {"hidden_dim": 32} (tests)
    packaged_policy: bool = True  # use benchmarks/datasets/policies/<family>-medium-seed<S>.pt if present

    @property
    def threshold(self) -> float:
        return 100.0 * self.target_fraction if self.target_score is None else self.target_score


def family_dir(spec: DatasetSpec, seed: int, root=None) -> Path:
    return data_dir(root) / "forge" / f"{spec.family}-seed{seed}"


def policy_path(spec: DatasetSpec, seed: int, root=None) -> Path:
    return family_dir(spec, seed, root) / "medium-policy.pt"


def packaged_policy_path(spec: DatasetSpec, seed: int) -> Path:
    return PACKAGED_POLICIES / f"{spec.family}-medium-seed{seed}.pt"


def _command() -> str:
    return "python -m benchmarks.datasets " + " ".join(shlex.quote(a) for a in sys.argv[1:]) \
        if sys.argv and sys.argv[0].endswith(("__main__.py", "datasets")) else ""


# ============================================================================ SAC to medium
def _sac(spec: DatasetSpec, fc: ForgeConfig, progress: bool) -> SACAgent:
    overrides = {"online_samples": fc.sac_max_steps, "eval_every": fc.eval_every,
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
            raise SystemExit(f"[forge] stopped at SAC step {agent.counters.online_samples} after a checkpoint; "
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
            "sac_wall_time": agent.counters.wall_time, "threshold_score": fc.threshold,
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
        "sac_config": record["sac_config"], "behaviour_policy_eval": record["evaluation"]})


# ============================================================================ collection
def load_first_actor(paths: list[Path]) -> tuple[TanhGaussianActor, dict] | None:
    """The first saved policy record among ``paths`` that exists, as an actor in eval mode and
    its record (with the path it came from); None if none exists."""
    for path in paths:
        if path.exists():
            rec = torch.load(path, map_location="cpu", weights_only=False)
            actor = TanhGaussianActor(rec["obs_dim"], rec["act_dim"], rec["hidden_dim"], rec["n_hidden"],
                                      rec["log_std_min"], rec["log_std_max"], rec["action_low"], rec["action_high"])
            actor.load_state_dict(rec["actor"])
            rec["path"] = str(path)
            return actor.eval(), rec
    return None


def load_policy(spec: DatasetSpec, seed: int, root=None, packaged: bool = True) -> tuple[TanhGaussianActor, dict]:
    """The medium behaviour policy: from the forge directory, else (if ``packaged``) the repository's."""
    found = load_first_actor([policy_path(spec, seed, root)] + ([packaged_policy_path(spec, seed)] if packaged else []))
    if found is not None:
        return found
    raise DatasetUnavailable(f"no medium policy for {spec.family} seed {seed} (looked in "
                             f"{policy_path(spec, seed, root)} and {packaged_policy_path(spec, seed)})")


class NumpyActor:
    """The tanh-Gaussian actor's sampling path and mean action in numpy: collection calls it once
    per step, and at batch size 1 numpy's small matmuls cost a fraction of a torch call (same
    math as ``TanhGaussianActor.sample`` and ``mean_action``)."""

    def __init__(self, actor: TanhGaussianActor):
        linears = [m for m in actor.net if isinstance(m, torch.nn.Linear)]
        self.weights = [(m.weight.detach().numpy().T.astype(np.float64), m.bias.detach().numpy().astype(np.float64))
                        for m in linears]
        self.lo, self.hi = actor.log_std_min, actor.log_std_max
        self.scale, self.center = actor.scale.numpy().astype(np.float64), actor.center.numpy().astype(np.float64)

    def _heads(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(obs, dtype=np.float64)
        for i, (w, b) in enumerate(self.weights):
            x = x @ w + b
            if i < len(self.weights) - 1:
                x = np.maximum(x, 0.0)
        mean, raw_log_std = np.split(x, 2, axis=-1)
        return mean, raw_log_std

    def mean(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic (mean) action, float64."""
        return np.tanh(self._heads(obs)[0]) * self.scale + self.center

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mean, log_std = self._heads(obs)
        log_std = self.lo + 0.5 * (self.hi - self.lo) * (np.tanh(log_std) + 1)
        u = mean + np.exp(log_std) * rng.standard_normal(mean.shape)
        return (np.tanh(u) * self.scale + self.center).astype(np.float32)


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
    obs, _ = env.reset(seed=40_000_000 + seed * 1_000_000)
    try:
        for t in tqdm(range(size), desc=f"collect {spec.name}", unit="step", disable=not progress,
                      mininterval=2.0, dynamic_ncols=True):
            action = rng.uniform(low, high).astype(np.float32) if policy is None else policy.sample(obs, rng)
            nxt, reward, term, trunc, _ = env.step(action)
            out["observations"][t], out["actions"][t], out["rewards"][t] = obs, action, reward
            out["next_observations"][t] = nxt
            out["terminals"][t], out["timeouts"][t] = term, trunc and not term
            obs = nxt
            if term or trunc:
                episode += 1
                obs, _ = env.reset(seed=40_000_000 + seed * 1_000_000 + episode)
    finally:
        env.close()
    return out


# ============================================================================ writing + cards
def _write_dataset(spec: DatasetSpec, arrays: dict, root, fc: ForgeConfig, extra: dict) -> dict:
    """Write the hdf5 (with its card inside) and the card next to it, atomically; returns the card."""
    from benchmarks.datasets.d4rl_io import split_points

    lengths, terminated, tail = split_points(arrays["terminals"], arrays["timeouts"])
    n = int(lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    returns = np.add.reduceat(arrays["rewards"][:n].astype(np.float64), starts) if n else np.zeros(0)
    scores = spec.score_fn(returns)
    stats = lambda a: ({"min": float(a.min()), "mean": float(a.mean()), "max": float(a.max())}  # noqa: E731
                       if len(a) else None)
    card = {
        "name": spec.name, "source": "generated", "d4rl_equivalent": spec.d4rl_name, **extra,
        "seed": fc.seed, "command": _command() or f"python -m benchmarks.datasets make {spec.name} --seed {fc.seed}",
        **spec.env_versions(), "env_notes": list(spec.env_notes),
        "steps_in_file": int(len(arrays["rewards"])), "steps_in_trajectories": n,
        "unfinished_tail_steps": int(tail), "trajectories": int(len(lengths)),
        "terminated_trajectories": int(terminated.sum()), "timeout_trajectories": int((~terminated).sum()),
        "lengths": stats(lengths), "returns": stats(returns), "normalized_returns": stats(scores),
        "reference": {"min": spec.ref_min_score, "max": spec.ref_max_score,
                      "source": "D4RL REF_MIN_SCORE/REF_MAX_SCORE", "normalized": "100 * (R - min) / (max - min)"},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    card["sha256"] = write_d4rl(generated_path(spec.name, root), arrays, card)
    atomic_write_bytes(card_path(spec.name, root), json.dumps(card, indent=2).encode())
    atomic_write_bytes(card_path(spec.name, root).with_suffix("").with_suffix(".card.md"),
                       card_markdown(card).encode())
    return card


def card_markdown(card: dict) -> str:
    def fmt(s):
        return "n/a" if s is None else f"{s['min']:.1f} / {s['mean']:.1f} / {s['max']:.1f}"
    lines = [
        f"# {card['name']} (generated, D4RL-style stand-in for {card['d4rl_equivalent']})", "",
        f"- level: {card.get('level')}; policy: {card.get('policy')}",
        f"- environment: {card['env_id']} {card['env_kwargs']} (gymnasium {card['gymnasium']}, mujoco {card['mujoco']})",
        f"- seed: {card['seed']}; command: `{card['command']}`",
        f"- steps: {card['steps_in_file']} in the file, {card['steps_in_trajectories']} in "
        f"{card['trajectories']} complete trajectories ({card['terminated_trajectories']} terminated, "
        f"{card['timeout_trajectories']} timed out), {card['unfinished_tail_steps']} unfinished tail steps",
        f"- trajectory length min / mean / max: {fmt(card['lengths'])}",
        f"- return min / mean / max: {fmt(card['returns'])}",
        f"- normalized return min / mean / max: {fmt(card['normalized_returns'])} "
        f"(D4RL reference {card['reference']['min']} / {card['reference']['max']})",
    ]
    if "data_success_rate" in card:  # AntMaze
        own = card["controller_success"]
        lines.append(f"- data success rate (trajectories reaching the evaluation goal): "
                     f"{100 * card['data_success_rate']:.1f}%; controller success rate on the evaluation task: "
                     f"{100 * own['success_rate']:.1f}% of {own['episodes']} episodes; walker: SAC after "
                     f"{card.get('walker_sac_steps')} steps")
    if "behaviour_policy_eval" in card:
        ev = card["behaviour_policy_eval"]
        lines.append(f"- behaviour policy (SAC after {card.get('sac_steps')} steps), deterministic evaluation: "
                     f"return {ev['return_mean']:.1f} +- {ev['return_std']:.1f}, normalized {ev['score_mean']:.1f}")
    lines += ["", "## How the environment differs from D4RL's", ""] + [f"- {n}" for n in card["env_notes"]]
    lines += ["", f"sha256 of the hdf5: `{card['sha256']}`; created {card['created']}", ""]
    return "\n".join(lines)


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
        "behaviour_policy_eval": record["evaluation"],
        "size": fc.size, "collect_wall_time_s": time.perf_counter() - t0})


def forge_config(name: str, overrides: dict | None = None) -> ForgeConfig:
    return apply_overrides(ForgeConfig(name=name), dict(overrides or {}))
