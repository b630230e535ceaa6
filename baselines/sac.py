"""Soft Actor-Critic (Haarnoja et al., 2018), read top to bottom (networks: baselines/nets.py).

Twin Q networks with Polyak-averaged targets, a tanh-squashed Gaussian actor, and automatic
temperature tuning towards an entropy target of -dim(A). One gradient update per environment
step after a warm-up of uniformly random actions. The defaults are the SAC paper's
hyperparameters (its Table 1 and the v2 paper's automatic temperature): Adam with learning
rate 3e-4 for actor, critics and temperature, batch 256, discount 0.99, target smoothing
0.005, two hidden layers of 256 units, a 1e6-transition replay buffer. The warm-up length
(5000 random steps) is CleanRL's; the SAC paper's implementations use 1000-10000. The initial
temperature 0.1 is pytorch_sac's (the implementation the ODT paper cites for its SAC column);
the dataset forge pins its own SAC to 1.0, the value its datasets were made with.

It serves twice: as the SAC column of Table 1 (``sac_config(dataset, "paper")``: 200k online
steps from scratch, behind the ``baselines/interface.py`` Agent protocol; ``pretrain`` does
nothing) and as the behaviour-policy trainer of the dataset forge (benchmarks/datasets/forge.py).

Resume is exact: ``state_dict`` holds networks, optimisers, temperature, replay buffer, RNG
states and counters. Checkpoints are taken at episode boundaries (an unfinished episode
cannot be captured in general), so ``request_stop`` takes effect when the current episode ends.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from baselines.metrics import READ_EVERY_UPDATES, DeviceMeans, read_metrics
from baselines.nets import TanhGaussianActor, TwinQ
from rlbase.clock import Stopwatch
from rlbase.config import ConfigError, apply_overrides, is_finite, is_rate, is_size
from rlbase.envs import VectorEnvPool, run_policy_episodes, summarize_returns
from rlbase.presets import PRESETS, scale_sac
from rlbase.progress import progress_bar
from rlbase.seeds import evaluation_seeds, run_seed, sac_episode_seed
from rlbase.training import SafePoints, TrainingDiverged, parameters_finite

Logger = Callable[[dict], None]
METRICS = ("critic_loss", "actor_loss", "alpha", "entropy", "q_mean")  # per update, summed on the device


# ============================================================================ configuration
@dataclass
class SACConfig:
    dataset: str = "hopper-medium"  # the dataset name whose environment SAC trains on (Table 1 uses its env)
    preset: str = "paper"
    seed: int = 0
    online_samples: int = 200_000  # environment steps (Table 1: 0.2m, from scratch)
    warmup_steps: int = 5_000  # uniformly random actions before the first update
    batch_size: int = 256
    hidden_dim: int = 256
    n_hidden: int = 2
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    alpha_lr: float = 3e-4
    gamma: float = 0.99
    tau: float = 0.005
    buffer_size: int = 1_000_000
    init_alpha: float = 0.1  # pytorch_sac's init_temperature, the implementation the paper cites
    target_entropy: float | None = None  # None: -dim(A)
    updates_per_step: int = 1
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    eval_every: int = 5_000  # environment steps between evaluations
    eval_episodes: int = 10
    checkpoint_every: int = 10_000  # environment steps between checkpoints (taken at episode ends)
    device: str = "cpu"

    def validate(self) -> SACConfig:
        def check(ok: bool, name: str, rule: str) -> None:
            if not ok:
                raise ConfigError(f"{name}={getattr(self, name)!r} is out of range: {rule}")
        check(self.preset in PRESETS, "preset", " | ".join(PRESETS))
        for name in ("online_samples", "warmup_steps", "seed"):
            check(is_size(getattr(self, name), 0), name, "an integer >= 0")
        for name in ("batch_size", "hidden_dim", "n_hidden", "buffer_size", "updates_per_step",
                     "eval_every", "eval_episodes", "checkpoint_every"):
            check(is_size(getattr(self, name)), name, "an integer >= 1")
        for name in ("actor_lr", "critic_lr", "alpha_lr", "init_alpha"):
            check(is_rate(getattr(self, name)), name, "> 0 and finite")
        for name in ("log_std_min", "log_std_max"):
            check(is_finite(getattr(self, name)), name, "finite")
        check(is_finite(self.target_entropy, none_ok=True), "target_entropy", "finite or None")
        check(0 < self.gamma <= 1, "gamma", "in (0, 1]")
        check(0 < self.tau <= 1, "tau", "in (0, 1]")
        check(self.log_std_min < self.log_std_max, "log_std_min", "< log_std_max")
        return self


def sac_config(dataset: str, preset: str = "paper", seed: int = 0,
               overrides: dict[str, Any] | None = None) -> SACConfig:
    """SAC's configuration for one run: the SAC paper's, scaled by preset
    (rlbase.presets.scale_sac), then overrides."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    cfg = SACConfig(dataset=dataset, preset=preset, seed=seed)
    cfg = scale_sac(cfg, preset)
    cfg = apply_overrides(cfg, dict(overrides or {}))
    return cfg.validate()


# ============================================================================ pure math
def td_target(reward: torch.Tensor, terminated: torch.Tensor, next_q: torch.Tensor, next_log_prob: torch.Tensor,
              alpha: torch.Tensor | float, gamma: float) -> torch.Tensor:
    """Soft Bellman target r + gamma (1 - terminal) (min_i Q'_i(s', a') - alpha log pi(a'|s'))."""
    return reward + gamma * (1.0 - terminated) * (next_q - alpha * next_log_prob)


@torch.no_grad()
def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    for t, s in zip(target.parameters(), source.parameters()):
        t.lerp_(s, tau)


# ============================================================================ replay buffer
class ReplayBuffer:
    """Transitions in preallocated numpy arrays, FIFO once full, uniform sampling."""

    FIELDS = ("observations", "actions", "rewards", "next_observations", "terminated", "truncated")

    def __init__(self, obs_dim: int, act_dim: int, capacity: int):
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.data = {
            "observations": np.zeros((capacity, obs_dim), np.float32),
            "actions": np.zeros((capacity, act_dim), np.float32),
            "rewards": np.zeros(capacity, np.float32),
            "next_observations": np.zeros((capacity, obs_dim), np.float32),
            "terminated": np.zeros(capacity, bool),
            "truncated": np.zeros(capacity, bool),
        }

    def add(self, obs, act, reward, next_obs, terminated: bool, truncated: bool) -> None:
        d, i = self.data, self.pos
        d["observations"][i], d["actions"][i], d["rewards"][i] = obs, act, reward
        d["next_observations"][i], d["terminated"][i], d["truncated"][i] = next_obs, terminated, truncated
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, rng: np.random.Generator, batch_size: int) -> dict[str, np.ndarray]:
        idx = rng.integers(0, self.size, size=batch_size)
        return {k: v[idx] for k, v in self.data.items()}

    def ordered(self) -> dict[str, np.ndarray]:
        """All stored transitions, oldest first."""
        if self.size < self.capacity:
            return {k: v[:self.size].copy() for k, v in self.data.items()}
        return {k: np.concatenate([v[self.pos:], v[:self.pos]]) for k, v in self.data.items()}

    def state_dict(self) -> dict:
        return {"capacity": self.capacity, "pos": self.pos, "size": self.size,
                "data": {k: v[:self.size].copy() for k, v in self.data.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore; a different capacity is fine while the saved buffer never wrapped and fits."""
        wrapped = state["size"] == state["capacity"] and state["pos"] != 0
        if state["capacity"] != self.capacity and (wrapped or state["size"] > self.capacity):
            raise ValueError(f"replay buffer: {state['size']} transitions saved with capacity {state['capacity']} "
                             f"do not fit capacity {self.capacity} in order")
        self.size = state["size"]
        self.pos = state["pos"] if state["capacity"] == self.capacity else self.size % self.capacity
        for k, v in state["data"].items():
            self.data[k][:self.size] = v


# ============================================================================ the agent
@dataclass
class Counters:
    updates: int = 0
    online_samples: int = 0
    episodes: int = 0
    evaluations: int = 0
    wall_time: float = 0.0
    cpu_time: float = 0.0


class SACAgent:
    """SAC behind the Agent protocol: ``pretrain`` is a no-op, ``finetune`` trains from scratch."""

    def __init__(self, cfg: SACConfig, make_env: Callable[[], gym.Env],
                 score_fn: Callable[[np.ndarray], np.ndarray] | None = None, progress: bool = True):
        self.cfg, self.make_env, self.score_fn, self.progress = cfg.validate(), make_env, score_fn, progress
        self.device = torch.device(cfg.device)
        torch.manual_seed(run_seed(cfg.seed))
        self.rng = np.random.default_rng(run_seed(cfg.seed))
        self.env = make_env()
        space = self.env.action_space
        if not isinstance(space, gym.spaces.Box):
            raise ConfigError(f"SAC needs a continuous (Box) action space, got {space}")
        self.obs_dim = int(np.prod(self.env.observation_space.shape))
        self.act_dim = int(np.prod(space.shape))
        self.action_low, self.action_high = space.low.astype(np.float32), space.high.astype(np.float32)
        h, n = cfg.hidden_dim, cfg.n_hidden
        self.actor = TanhGaussianActor(self.obs_dim, self.act_dim, h, n, cfg.log_std_min, cfg.log_std_max,
                                       self.action_low, self.action_high).to(self.device)
        self.critic = TwinQ(self.obs_dim, self.act_dim, h, n, batched=True).to(self.device)
        self.critic_target = TwinQ(self.obs_dim, self.act_dim, h, n, batched=True).to(self.device)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(cfg.init_alpha), device=self.device, requires_grad=True)
        self.target_entropy = float(-self.act_dim if cfg.target_entropy is None else cfg.target_entropy)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr)
        self.buffer = ReplayBuffer(self.obs_dim, self.act_dim, min(cfg.buffer_size, max(cfg.online_samples, 1)))
        self.counters = Counters()
        self.train_returns: list[float] = []  # return of every finished training episode
        self._metrics = DeviceMeans(METRICS, self.device)
        self._obs: np.ndarray | None = None  # observation of the episode in progress
        self._ep_return = 0.0
        self._eval_envs = VectorEnvPool(make_env)
        self.safe_points = SafePoints()  # the stop flag; the safe point: the end of an episode

    @property
    def alpha(self) -> float:
        return float(self.log_alpha.detach().exp())

    def request_stop(self) -> None:
        """Checkpoint and raise StopRequested when the current episode ends (signal-handler safe)."""
        self.safe_points.request()

    # ----- one gradient update ------------------------------------------------------------
    def step(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """One update (critics, actor, temperature, targets) with no host read: its metrics stay
        on the device, summed for the next logged row (the loop reads them every
        READ_EVERY_UPDATES updates)."""
        to = lambda a: torch.as_tensor(a, dtype=torch.float32, device=self.device)  # noqa: E731
        obs, act, rew = to(batch["observations"]), to(batch["actions"]), to(batch["rewards"])
        nxt, term = to(batch["next_observations"]), to(batch["terminated"])
        alpha = self.log_alpha.detach().exp()

        with torch.no_grad():
            next_act, next_logp = self.actor.sample(nxt)
            next_q = self.critic_target(nxt, next_act).min(dim=0).values
            target = td_target(rew, term, next_q, next_logp, alpha, self.cfg.gamma)
        q = self.critic(obs, act)
        critic_loss = 0.5 * ((q - target.unsqueeze(0)) ** 2).mean(dim=1).sum()
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()

        new_act, logp = self.actor.sample(obs)
        self.critic.requires_grad_(False)
        q_new = self.critic(obs, new_act).min(dim=0).values
        self.critic.requires_grad_(True)
        actor_loss = (alpha * logp - q_new).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()

        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_opt.step()

        polyak_update(self.critic_target, self.critic, self.cfg.tau)
        self.counters.updates += 1
        with torch.no_grad():
            metrics = dict(zip(METRICS, (critic_loss.detach(), actor_loss.detach(), self.log_alpha.exp(),
                                         -logp.mean(), q.mean()), strict=True))
        self._metrics.add(metrics)
        return metrics

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """``step``, then its metrics as floats (one host read; TrainingDiverged if one is NaN or
        inf): for scripts and tests that want floats after every update."""
        return read_metrics(self.step(batch), "SAC", self.counters.updates - 1)

    def _read_metrics(self) -> dict[str, float]:
        """The metrics' means since the last logged row (one host read); raises TrainingDiverged
        when a loss since then was NaN or inf."""
        return self._metrics.means("SAC", self.counters.updates)

    # ----- acting ---------------------------------------------------------------------------
    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool = False) -> np.ndarray:
        o = torch.as_tensor(obs, dtype=torch.float32, device=self.device).reshape(-1, self.obs_dim)
        a = self.actor.mean_action(o) if deterministic else self.actor.sample(o)[0]
        return a.cpu().numpy().reshape((-1, self.act_dim) if np.ndim(obs) > 1 else (self.act_dim,))

    def _reset_episode(self) -> None:
        seed = sac_episode_seed(self.cfg.seed, self.counters.episodes)
        self._obs, _ = self.env.reset(seed=seed)
        self._ep_return = 0.0

    def env_step(self) -> bool:
        """One training step: act, store, learn; True when the episode ended."""
        if self._obs is None:
            self._reset_episode()
        k, c = self.counters, self.cfg
        if k.online_samples < c.warmup_steps:
            action = self.rng.uniform(self.action_low, self.action_high).astype(np.float32)
        else:
            action = self.act(self._obs)
        nxt, reward, term, trunc, _ = self.env.step(action)
        self.buffer.add(self._obs, action, reward, nxt, bool(term), bool(trunc))
        self._ep_return += float(reward)
        self._obs = nxt
        k.online_samples += 1
        if k.online_samples >= c.warmup_steps and self.buffer.size >= c.batch_size:
            for _ in range(c.updates_per_step):
                self.step(self.buffer.sample(self.rng, c.batch_size))
                if k.updates % READ_EVERY_UPDATES == 0:
                    self._read_metrics()
        if term or trunc:
            self.train_returns.append(self._ep_return)
            k.episodes += 1
            self._obs = None
            return True
        return False

    # ----- the Agent protocol ----------------------------------------------------------------
    def pretrain(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> None:
        """SAC learns from scratch online: nothing to pretrain."""
        return None

    def finetune(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None,
                 stop_when: Callable[[dict], bool] | None = None) -> dict | None:
        """Train online until ``online_samples``; evaluate every ``eval_every`` steps.

        ``stop_when(row)`` (used by the forge) ends training right after an evaluation row for
        which it returns True, mid-episode, without a checkpoint.
        """
        c, k = self.cfg, self.counters
        bar = progress_bar(total=c.online_samples, initial=min(k.online_samples, c.online_samples), desc="sac",
                           unit="step", enabled=self.progress, mininterval=2.0)
        row, last_ckpt, clock = None, k.online_samples, Stopwatch(k)
        while k.online_samples < c.online_samples:
            ended = self.env_step()
            bar.update(1)
            if k.online_samples % c.eval_every == 0 or k.online_samples == c.online_samples:
                clock.lap()
                row = self._eval_row(log)
                bar.set_postfix(ret=f"{row['return_mean']:.0f}", alpha=f"{self.alpha:.3f}")
                if self.progress:
                    bar.write(_describe(row))
                if stop_when is not None and stop_when(row):
                    break
            if ended and (k.online_samples - last_ckpt >= c.checkpoint_every or self.safe_points.requested):
                clock.lap()
                self._save(checkpoint)
                last_ckpt = k.online_samples
                if self.safe_points.requested:
                    bar.close()
                    self.safe_points.stop_if_requested(f"step {k.online_samples}")
        clock.lap()
        bar.close()
        if k.online_samples >= c.online_samples and last_ckpt != k.online_samples:
            self._save(checkpoint)
        return row

    def _save(self, checkpoint: Callable[[], None] | None) -> None:
        """Checkpoint finite state only, so the last good checkpoint stays."""
        self.safe_points.save(checkpoint, self._check_finite)

    def _check_finite(self) -> None:
        self._read_metrics()
        if not parameters_finite((self.actor, self.critic)):
            raise TrainingDiverged(f"SAC parameters became NaN or inf by update {self.counters.updates}; "
                                   "the last good checkpoint is kept")

    def _eval_row(self, log: Logger | None) -> dict:
        k = self.counters
        train = self._metrics.pop("SAC", k.updates)
        recent = self.train_returns[-10:]
        row = {"phase": "online", "updates": k.updates, "online_samples": k.online_samples,
               "episodes": k.episodes, **train,
               "train_return": float(np.mean(recent)) if recent else float("nan"),
               **self.evaluate(), "wall_time": k.wall_time}
        if log is not None:
            log(row)
        return row

    @torch.no_grad()
    def evaluate(self, episodes: int | None = None, deterministic: bool = True) -> dict:
        """Mean-action episodes (one per sub-environment of a vector env), batched actor calls."""
        n = episodes or self.cfg.eval_episodes
        returns, lengths = run_policy_episodes(self._eval_envs.get(n), lambda o: self.act(o, deterministic),
                                               evaluation_seeds(self.cfg.seed, self.counters.evaluations, n))
        self.counters.evaluations += 1
        return summarize_returns(returns, lengths, self.score_fn)

    # ----- checkpointing -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "config": dataclasses.asdict(self.cfg),
            "actor": self.actor.state_dict(), "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(), "log_alpha": self.log_alpha.detach().cpu(),
            "actor_opt": self.actor_opt.state_dict(), "critic_opt": self.critic_opt.state_dict(),
            "alpha_opt": self.alpha_opt.state_dict(), "buffer": self.buffer.state_dict(),
            "counters": dict(vars(self.counters)), "train_returns": list(self.train_returns),
            "running": self._metrics.state_dict(),
            "rng_numpy": self.rng.bit_generator.state, "rng_torch": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.critic_target.load_state_dict(state["critic_target"])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"].to(self.device))
        self.actor_opt.load_state_dict(state["actor_opt"])
        self.critic_opt.load_state_dict(state["critic_opt"])
        self.alpha_opt.load_state_dict(state["alpha_opt"])
        self.buffer.load_state_dict(state["buffer"])
        self.counters = Counters(**state["counters"])
        self.train_returns = list(state["train_returns"])
        self._metrics.load_state_dict(state["running"])
        self.rng.bit_generator.state = state["rng_numpy"]
        torch.set_rng_state(state["rng_torch"])
        last = self.buffer.pos - 1
        if self.buffer.size and not (self.buffer.data["terminated"][last] or self.buffer.data["truncated"][last]):
            # the checkpoint was taken mid-episode (only at the end of the budget): that episode
            # cannot be continued, so its last stored step is marked as cut off
            self.buffer.data["truncated"][last] = True
        self._obs = None

    def close(self) -> None:
        self.env.close()
        self._eval_envs.close()


def _describe(row: dict) -> str:
    score = f" score {row['score_mean']:.1f}" if "score_mean" in row else ""
    return (f"[sac] step {row['online_samples']}: return {row['return_mean']:.1f} "
            f"+- {row['return_std']:.1f}{score} (train {row['train_return']:.1f}, alpha {row.get('alpha', float('nan')):.3f})")
