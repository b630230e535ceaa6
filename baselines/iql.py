"""Implicit Q-Learning (Kostrikov, Nair & Levine, ICLR 2022): offline, then online finetuning.

Readable top to bottom (config, pure loss functions, replay buffer, agent; the networks are
baselines/nets.py's, the metrics' device sums baselines/metrics.py's). What it implements, as
published:

* V is fit by expectile regression to the target twin-Q minimum:
  L_V = E[ |tau - 1(u < 0)| u^2 ],  u = min(Q1', Q2')(s, a) - V(s).
* Each Q is fit to r + gamma * (1 - done) * V(s') (no max over actions, no policy in the
  target); the target critic tracks the critic by Polyak averaging with rate tau.
* The policy is extracted by advantage-weighted regression:
  L_pi = -E[ min(exp(beta * (min Q' - V)), 100) * log pi(a | s) ].
* The policy is a Gaussian with a tanh'd mean and a state-independent log-std (clipped to
  [-5, 2]); evaluation takes the mean, exploration samples and clips to [-1, 1].
* Reward scaling as the official IQL code: hopper, walker2d and halfcheetah rewards times
  1000 / (max return - min return) over the dataset's trajectories; ant rewards unscaled;
  AntMaze rewards minus 1. New online rewards get the same transform.
* Observations enter the networks raw, as in the official IQL code. ``normalize_observations``
  (off by default; not in the official code, on in CORL's IQL) standardises them with the offline
  dataset's per-dimension mean and std, at the networks' input only (the buffer stays raw): a
  diagnostic switch for AntMaze, where raw x-y positions span ~10 m.
* Order of one update as in the reference implementation, one named step each: V, then the
  actor (with the new V), then Q (with the new V at s'), then the Polyak step. An update reads
  nothing back from the device; the loops read the summed metrics once per interval.
* The actor's learning rate follows a cosine decay over the offline updates (the published
  locomotion setting); online it is constant, as in the published finetuning setting.
* Online finetuning: a transition replay buffer holding the offline data followed by the new
  samples (FIFO at ``buffer_size``), one gradient update per environment step. Optionally
  (``online_window``, not in the published code) online batches come from the newest rows
  only, which sets the online data's share of what is sampled at a scaled-down budget.

Resume is exact: ``state_dict`` holds networks, optimisers, the online transitions (the
offline ones are rebuilt from the dataset), RNG states and counters. Online checkpoints are
taken at episode boundaries, so no simulator state is needed.
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

from baselines.metrics import READ_EVERY_UPDATES, DeviceMeans, read_metrics
from baselines.nets import GaussianActor, TwinQ, ValueNet
from rlbase.clock import Stopwatch
from rlbase.config import ConfigError, apply_overrides, is_finite, is_rate, is_size
from rlbase.envs import VectorEnvPool, run_policy_episodes, summarize_returns
from rlbase.presets import PRESETS, scale_iql
from rlbase.progress import ProgressBar, progress_bar
from rlbase.protocol import domain_defaults, evaluation_episodes, is_antmaze, known_datasets
from rlbase.seeds import evaluation_seeds, exploration_seed, iql_sampling_seed, run_seed
from rlbase.training import SafePoints, TrainingDiverged, parameters_finite, resolve_device
from rlbase.trajectories import DatasetError, Trajectories

METRICS = ("value_loss", "actor_loss", "q_loss", "advantage_mean", "weight_mean", "v_mean")  # per update
EnvFactory = Callable[[], gym.Env]
ScoreFn = Callable[[np.ndarray], np.ndarray]
Logger = Callable[[dict], None]


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------
@dataclass
class IQLConfig:
    # reward transform and defaults: "locomotion" (hopper, walker2d, halfcheetah: scaled),
    # "ant" (unscaled, as the official IQL leaves ant-*), "antmaze" (minus 1)
    domain: str = "locomotion"
    hidden_dim: int = 256
    n_hidden: int = 2  # hidden layers of every MLP: (256, 256)
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    value_lr: float = 3e-4
    actor_schedule: str = "cosine"  # offline phase: "cosine" (published) | "constant"
    discount: float = 0.99
    tau: float = 0.005  # Polyak rate of the target critic
    expectile: float = 0.7
    temperature: float = 3.0  # beta of the advantage weights
    max_weight: float = 100.0
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    # not in the official code (raw observations): standardise the networks' inputs with the
    # offline data's mean and std (a diagnostic; see the module docstring)
    normalize_observations: bool = False
    batch_size: int = 256
    offline_updates: int = 1_000_000
    online_samples: int = 200_000
    buffer_size: int = 1_000_000  # transitions; FIFO over offline data then online samples
    # online phase only: batches from the newest this many transitions (0: the whole buffer).
    # Sizes the online data's share of what is sampled (the cpu preset's "share" variant).
    online_window: int = 0
    eval_episodes: int = 10
    # episodes of an evaluation that does not end a phase (0: eval_episodes); the evaluations at
    # the end of the offline phase and of the online budget always run eval_episodes
    eval_episodes_interim: int = 0
    eval_every_updates: int = 5000  # offline phase
    eval_every_samples: int = 5000  # online phase
    checkpoint_every_updates: int = 5000
    device: str = "auto"
    seed: int = 0

    def validate(self) -> IQLConfig:
        def check(cond: bool, name: str, rule: str) -> None:
            if not cond:
                raise ConfigError(f"{name}={getattr(self, name)!r} is out of range: {rule}")

        check(self.domain in ("locomotion", "ant", "antmaze"), "domain", "locomotion | ant | antmaze")
        check(isinstance(self.normalize_observations, bool), "normalize_observations", "true | false")
        check(self.actor_schedule in ("cosine", "constant"), "actor_schedule", "cosine | constant")
        for name in ("hidden_dim", "n_hidden", "batch_size", "buffer_size", "eval_episodes",
                     "eval_every_updates", "eval_every_samples", "checkpoint_every_updates"):
            check(is_size(getattr(self, name)), name, "an integer >= 1")
        for name in ("offline_updates", "online_samples", "online_window", "eval_episodes_interim", "seed"):
            check(is_size(getattr(self, name), 0), name, "an integer >= 0")
        for name in ("actor_lr", "critic_lr", "value_lr", "temperature", "max_weight"):
            check(is_rate(getattr(self, name)), name, "> 0 and finite")
        for name in ("log_std_min", "log_std_max"):
            check(is_finite(getattr(self, name)), name, "finite")
        check(0.0 <= self.discount <= 1.0, "discount", "in [0, 1]")
        check(0.0 < self.tau <= 1.0, "tau", "in (0, 1]")
        check(0.0 < self.expectile < 1.0, "expectile", "in (0, 1)")
        check(self.log_std_min < self.log_std_max, "log_std_min", "< log_std_max")
        return self


def iql_config(dataset: str, preset: str = "paper", seed: int = 0,
               overrides: dict[str, Any] | None = None) -> IQLConfig:
    """IQL's published configuration for a dataset, scaled by preset (rlbase.presets.scale_iql),
    then overrides."""
    if dataset not in known_datasets():
        raise ConfigError(f"unknown dataset {dataset!r}; known: {', '.join(known_datasets())}")
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    cfg = IQLConfig(seed=seed, eval_episodes=domain_defaults(dataset)["eval_episodes"])
    if dataset.startswith("ant-"):
        cfg = dataclasses.replace(cfg, domain="ant")
    if is_antmaze(dataset):
        cfg = dataclasses.replace(cfg, domain="antmaze", expectile=0.9, temperature=10.0,
                                  buffer_size=2_000_000)
    cfg = scale_iql(cfg, preset, is_antmaze(dataset))
    return apply_overrides(cfg.validate(), overrides or {})


# --------------------------------------------------------------------------------------------
# The math: pure functions over tensors
# --------------------------------------------------------------------------------------------
def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """Mean of |expectile - 1(diff < 0)| * diff^2 (asymmetric L2; diff = target - prediction)."""
    weight = torch.where(diff > 0, expectile, 1.0 - expectile)
    return (weight * diff.pow(2)).mean()


def awr_actor_loss(weights: torch.Tensor, log_prob: torch.Tensor) -> torch.Tensor:
    """-E[w * log pi(a | s)]: advantage-weighted regression onto the data's actions."""
    return -(weights * log_prob).mean()


def twin_q_loss(q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Each member's squared error to the TD target, summed over the two (q: shape (2, B))."""
    return (q[0] - target).pow(2).mean() + (q[1] - target).pow(2).mean()


def awr_weights(advantage: torch.Tensor, temperature: float, max_weight: float) -> torch.Tensor:
    """exp(temperature * advantage), clipped from above at max_weight."""
    return torch.exp(temperature * advantage).clamp(max=max_weight)


def td_target(reward: torch.Tensor, done: torch.Tensor, next_v: torch.Tensor, discount: float) -> torch.Tensor:
    return reward + discount * (1.0 - done) * next_v


def cosine_factor(step: int, total: int) -> float:
    """Cosine decay from 1 to 0 over total steps (then 0), as optax.cosine_decay_schedule."""
    if total <= 0:
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


def reward_scale(domain: str, trajectory_returns: np.ndarray) -> tuple[float, float]:
    """(multiplier, offset) of IQL's reward transform r' = multiplier * r + offset."""
    if domain == "antmaze":
        return 1.0, -1.0
    if domain == "ant":  # the official IQL scales hopper, walker2d and halfcheetah only
        return 1.0, 0.0
    spread = float(np.max(trajectory_returns) - np.min(trajectory_returns))
    if not spread > 0:
        raise DatasetError("rewards: every trajectory has the same return, so IQL's locomotion "
                           "scaling 1000 / (max return - min return) is undefined")
    return 1000.0 / spread, 0.0


def transitions(data: Trajectories) -> dict[str, np.ndarray]:
    """(s, a, r, s', done) from trajectories.

    The last step of a trajectory that ended by truncation has no next observation and is
    dropped; the last step of a terminated one is kept with done=1 (its s' is never used, the
    state itself stands in).
    """
    n = data.num_steps
    starts = np.repeat(data.starts, data.lengths)
    pos = np.arange(n) - starts
    last = pos == np.repeat(data.lengths, data.lengths) - 1
    terminal = last & np.repeat(data.terminated, data.lengths)
    keep = ~last | terminal
    nxt = np.where(last, np.arange(n), np.arange(n) + 1)
    return {
        "observations": data.observations[keep],
        "actions": data.actions[keep],
        "rewards": data.rewards[keep].astype(np.float32),
        "next_observations": data.observations[nxt[keep]],
        "dones": terminal[keep].astype(np.float32),
    }


# --------------------------------------------------------------------------------------------
# Replay buffer: the offline transitions followed by the online ones, newest `capacity` kept
# --------------------------------------------------------------------------------------------
_FIELDS = ("observations", "actions", "rewards", "next_observations", "dones")


class TransitionBuffer:
    """Rows are stored in arrival order (offline first); sampling is uniform over the newest
    ``capacity`` rows, which is a FIFO without ever moving data."""

    def __init__(self, offline: dict[str, np.ndarray], capacity: int, max_online: int):
        self.capacity = capacity
        self.num_offline = len(offline["rewards"])
        total = self.num_offline + max_online
        self.arrays = {}
        for k in _FIELDS:
            arr = np.zeros((total, *offline[k].shape[1:]), dtype=np.float32)
            arr[: self.num_offline] = offline[k]
            self.arrays[k] = torch.from_numpy(arr)
        self.size = self.num_offline

    def add(self, obs, act, reward: float, next_obs, done: float) -> None:
        if self.size >= len(self.arrays["rewards"]):
            raise RuntimeError("transition buffer is full: more online samples than configured")
        for k, v in zip(_FIELDS, (obs, act, reward, next_obs, done), strict=True):
            self.arrays[k][self.size] = torch.as_tensor(v, dtype=torch.float32)
        self.size += 1

    @property
    def low(self) -> int:
        return max(0, self.size - self.capacity)

    def __len__(self) -> int:
        return self.size - self.low

    def sample(self, rng: np.random.Generator, batch_size: int, device: torch.device,
               window: int = 0) -> dict[str, torch.Tensor]:
        """Uniform over the FIFO's rows, or over the newest ``window`` of them (0: all)."""
        low = max(self.low, self.size - window) if window else self.low
        idx = torch.from_numpy(rng.integers(low, self.size, size=batch_size))
        return {k: v[idx].to(device) for k, v in self.arrays.items()}

    def online_rows(self) -> dict[str, torch.Tensor]:
        return {k: v[self.num_offline: self.size].clone() for k, v in self.arrays.items()}

    def load_online_rows(self, rows: dict[str, torch.Tensor]) -> None:
        n = len(rows["rewards"])
        for k in _FIELDS:
            self.arrays[k][self.num_offline: self.num_offline + n] = rows[k]
        self.size = self.num_offline + n


# --------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------
@dataclass
class Counters:
    updates: int = 0  # gradient updates, offline and online together
    online_samples: int = 0
    episodes: int = 0  # online training episodes finished
    evaluations: int = 0
    pretrain_done: bool = False
    wall_time: float = 0.0
    cpu_time: float = 0.0


class IQLAgent:
    def __init__(self, cfg: IQLConfig, dataset: Trajectories, make_env: EnvFactory,
                 score_fn: ScoreFn | None = None, progress: bool = True):
        cfg.validate()
        self.cfg, self.dataset, self.make_env = cfg, dataset, make_env
        self.score_fn, self.progress = score_fn, progress
        self.device = resolve_device(cfg.device)
        obs_dim, act_dim = dataset.obs_dim, dataset.act_dim
        self._check_env_shapes(obs_dim, act_dim)

        torch.manual_seed(run_seed(cfg.seed))
        self.rng = np.random.default_rng(run_seed(cfg.seed))
        self.explore_gen = torch.Generator(device=self.device).manual_seed(iql_sampling_seed(cfg.seed))
        h, nh = cfg.hidden_dim, cfg.n_hidden
        self.actor = GaussianActor(obs_dim, act_dim, h, nh, cfg.log_std_min, cfg.log_std_max).to(self.device)
        self.critic = TwinQ(obs_dim, act_dim, h, nh).to(self.device)
        self.target_critic = TwinQ(obs_dim, act_dim, h, nh).to(self.device)
        self.target_critic.load_state_dict(self.critic.state_dict())
        self.target_critic.requires_grad_(False)
        self.value = ValueNet(obs_dim, h, nh).to(self.device)
        self._obs_stats = None  # (mean, std) of the offline observations, when normalising
        if cfg.normalize_observations:
            mean, std = dataset.state_statistics()
            self._obs_stats = (torch.as_tensor(mean, dtype=torch.float32, device=self.device),
                               torch.as_tensor(std, dtype=torch.float32, device=self.device))
        # fused: one kernel per parameter for the whole Adam step (faster on a CPU thread); Adam
        # to float rounding, not bit for bit (paper_tables/settings_history.md)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr, fused=True)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=cfg.value_lr, fused=True)

        self.reward_scale = reward_scale(cfg.domain, dataset.returns())
        offline = transitions(dataset)
        offline["rewards"] = self._scale(offline["rewards"])
        self.buffer = TransitionBuffer(offline, cfg.buffer_size, cfg.online_samples)
        self.counters = Counters()
        self._metrics = DeviceMeans(METRICS, self.device)
        self._last_read: dict[str, float] = {}  # the latest means read, for the progress bar
        self._eval_envs = VectorEnvPool(make_env)
        self._env: gym.Env | None = None
        self.safe_points = SafePoints()  # the stop flag; safe points: after an update, after an episode

    def _check_env_shapes(self, obs_dim: int, act_dim: int) -> None:
        env = self.make_env()
        try:
            obs_shape, act_shape = env.observation_space.shape, env.action_space.shape
        finally:
            env.close()
        if obs_shape != (obs_dim,) or act_shape != (act_dim,):
            raise ValueError(f"dataset shapes (obs {obs_dim}, act {act_dim}) do not fit the "
                             f"environment (obs {obs_shape}, act {act_shape})")

    def request_stop(self) -> None:
        """Ask the running phase to checkpoint and raise rlbase.training.StopRequested at its next
        safe point (after the current update offline, at the end of the current episode
        online). Safe to call from a signal handler."""
        self.safe_points.request()

    def _save(self, checkpoint: Callable[[], None] | None) -> None:
        """A safe point: checkpoint finite state only (the last good checkpoint stays), then stop
        if asked to."""
        self.safe_points.save(checkpoint, self._check_finite)
        self.safe_points.stop_if_requested(f"update {self.counters.updates}")

    def _check_finite(self) -> None:
        self._read_metrics()
        if not parameters_finite((self.actor, self.critic, self.value)):
            raise TrainingDiverged(f"IQL parameters became NaN or inf by update {self.counters.updates}")

    def _inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """What the networks see of an observation: itself, or standardised when normalising."""
        if self._obs_stats is None:
            return obs
        mean, std = self._obs_stats
        return (obs - mean) / std

    def _scale(self, rewards):
        """IQL's reward transform (float32 arrays stay float32: Python scalars are weak)."""
        mult, offset = self.reward_scale
        return rewards * mult + offset

    # ----- one gradient update, in the reference order: V, actor, Q, target -------------
    def step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """One update with no host read: its metrics stay on the device (summed for the next
        logged row; the loops read them every READ_EVERY_UPDATES updates)."""
        c = self.cfg
        obs, act = self._inputs(batch["observations"]), batch["actions"]
        with torch.no_grad():
            q_target = self.target_critic(obs, act).min(dim=0).values
        value_loss, v = self._value_step(obs, q_target)
        with torch.no_grad():  # with the new V: the advantages, and V(s') for the Q target
            advantage = q_target - self.value(obs)
            weights = awr_weights(advantage, c.temperature, c.max_weight)
            next_v = self.value(self._inputs(batch["next_observations"]))
        actor_loss = self._actor_step(obs, act, weights)
        q_loss = self._q_step(obs, act, td_target(batch["rewards"], batch["dones"], next_v, c.discount))
        self._target_step()
        with torch.no_grad():
            metrics = dict(zip(METRICS, (value_loss.detach(), actor_loss.detach(), q_loss.detach(), advantage.mean(),
                                         weights.mean(), v.detach().mean()), strict=True))
        self.counters.updates += 1
        self._metrics.add(metrics)
        return metrics

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """``step``, then its metrics as floats (one host read; TrainingDiverged if one is NaN or
        inf): for scripts and tests that want floats after every update."""
        return read_metrics(self.step(batch), "IQL", self.counters.updates - 1)

    def _value_step(self, obs: torch.Tensor, q_target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        v = self.value(obs)
        loss = expectile_loss(q_target - v, self.cfg.expectile)
        _descend(self.value_opt, loss)
        return loss, v

    def _actor_step(self, obs: torch.Tensor, act: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        loss = awr_actor_loss(weights, self.actor.log_prob(obs, act))
        self._set_actor_lr()
        _descend(self.actor_opt, loss)
        return loss

    def _q_step(self, obs: torch.Tensor, act: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = twin_q_loss(self.critic(obs, act), target)
        _descend(self.critic_opt, loss)
        return loss

    @torch.no_grad()
    def _target_step(self) -> None:
        """Polyak: target <- (1 - tau) target + tau critic."""
        torch._foreach_lerp_(list(self.target_critic.parameters()), list(self.critic.parameters()), self.cfg.tau)

    def _read_metrics(self) -> dict[str, float]:
        """The metrics' means since the last logged row (one host read); raises TrainingDiverged
        when a loss since then was NaN or inf."""
        self._last_read = self._metrics.means("IQL", self.counters.updates)
        return self._last_read

    def _set_actor_lr(self) -> None:
        c, k = self.cfg, self.counters
        factor = 1.0
        if c.actor_schedule == "cosine" and not k.pretrain_done:
            factor = cosine_factor(k.updates, c.offline_updates)
        for group in self.actor_opt.param_groups:
            group["lr"] = c.actor_lr * factor

    def sample_batch(self) -> dict[str, torch.Tensor]:
        window = self.cfg.online_window if self.counters.pretrain_done else 0
        return self.buffer.sample(self.rng, self.cfg.batch_size, self.device, window)

    # ----- acting ------------------------------------------------------------------------
    @torch.no_grad()
    def act(self, obs: np.ndarray, sample: bool) -> np.ndarray:
        dist = self.actor(self._inputs(torch.as_tensor(obs, dtype=torch.float32, device=self.device)))
        if not sample:
            return dist.mean.cpu().numpy()
        noise = torch.randn(dist.mean.shape, generator=self.explore_gen, device=self.device)
        return (dist.mean + dist.stddev * noise).clamp(-1.0, 1.0).cpu().numpy()

    def evaluate(self, episodes: int | None = None) -> dict:
        n = episodes or self.cfg.eval_episodes
        self.actor.eval()
        returns, lengths = run_policy_episodes(self._eval_envs.get(n), lambda o: self.act(o, sample=False),
                                               evaluation_seeds(self.cfg.seed, self.counters.evaluations, n))
        self.actor.train()
        self.counters.evaluations += 1
        return summarize_returns(returns, lengths, self.score_fn)

    def _eval_row(self, phase: str, log: Logger | None, ends_phase: bool = True) -> dict:
        """Evaluate and log one curve row; ``ends_phase`` False: an evaluation in between, which
        runs ``eval_episodes_interim`` episodes where that is set."""
        c, k = self.cfg, self.counters
        episodes = evaluation_episodes(c.eval_episodes, c.eval_episodes_interim, ends_phase)
        row = {"phase": phase, "updates": k.updates, "online_samples": k.online_samples,
               "episodes": k.episodes, **self._metrics.pop("IQL", k.updates), **self.evaluate(episodes)}
        if log is not None:
            log(row)
        return row

    def _postfix(self, bar: ProgressBar, ret: float | None = None, **means: float) -> None:
        """The bar's last return and losses (from the latest read, never a read of its own)."""
        shown = {"ret": f"{ret:.0f}"} if ret is not None else {}
        shown.update({key: f"{means[name]:.3f}" for key, name in (("q", "q_loss"), ("v", "value_loss"),
                                                                   ("pi", "actor_loss")) if name in means})
        bar.set_postfix(**shown)

    def _say(self, bar: ProgressBar, row: dict) -> None:
        if self.progress:
            bar.write(_describe(row))

    # ----- offline phase -----------------------------------------------------------------
    def pretrain(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> dict | None:
        c, k = self.cfg, self.counters
        if k.pretrain_done:
            return None
        bar = progress_bar(total=c.offline_updates, initial=k.updates, desc="iql offline", unit="upd",
                           enabled=self.progress, mininterval=1.0)
        clock = Stopwatch(k)
        while k.updates < c.offline_updates:
            self.step(self.sample_batch())
            bar.update(1)
            if k.updates % READ_EVERY_UPDATES == 0:
                self._postfix(bar, **self._read_metrics())
            if k.updates % c.eval_every_updates == 0 and k.updates < c.offline_updates:
                self._say(bar, self._eval_row("pretrain", log, ends_phase=False))
            if SafePoints.crossed(k.updates - 1, k.updates, c.checkpoint_every_updates) or self.safe_points.requested:
                clock.lap()
                self._save(checkpoint)
        bar.close()
        row = self._eval_row("pretrain", log)
        self._say(bar, row)
        k.pretrain_done = True
        clock.lap()
        self._save(checkpoint)
        return row

    # ----- online phase ------------------------------------------------------------------
    def finetune(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> dict | None:
        """One environment step and one update at a time until the online budget is spent.

        Checkpoints are taken at the end of an episode once checkpoint_every_updates steps
        have passed, so a resumed run starts a fresh episode exactly where the original did.
        """
        c, k = self.cfg, self.counters
        if not k.pretrain_done:
            raise RuntimeError("finetune() before pretrain() finished")
        budget = c.online_samples
        if self._env is None:
            self._env = self.make_env()
        bar = progress_bar(total=budget, initial=min(k.online_samples, budget), desc="iql online",
                           unit="step", enabled=self.progress and budget > 0,
                           mininterval=1.0)
        row, obs, ep_return, ep_start = None, None, 0.0, k.online_samples
        clock = Stopwatch(k)
        while k.online_samples < budget:
            if obs is None:
                obs, _ = self._env.reset(seed=exploration_seed(c.seed, k.episodes))
                ep_return, ep_start = 0.0, k.online_samples
            action = self.act(obs[None], sample=True)[0]
            next_obs, reward, term, trunc, _ = self._env.step(action)
            self.buffer.add(obs, action, self._scale(reward), next_obs, float(term))
            k.online_samples += 1
            ep_return += float(reward)
            obs = next_obs
            self.step(self.sample_batch())
            bar.update(1)
            if k.updates % READ_EVERY_UPDATES == 0:
                self._read_metrics()
            if k.online_samples % c.eval_every_samples == 0 or k.online_samples == budget:
                clock.lap()
                row = self._eval_row("online", log, ends_phase=k.online_samples == budget)
                self._say(bar, row)
            if term or trunc:
                obs = None
                k.episodes += 1
                self._postfix(bar, ret=ep_return, **self._last_read)
                if SafePoints.crossed(ep_start, k.online_samples, c.checkpoint_every_updates) or self.safe_points.requested:
                    clock.lap()
                    self._save(checkpoint)
        clock.lap()
        bar.close()
        if k.online_samples > ep_start:  # the budget can end mid-episode: record the finished run
            self._save(checkpoint)
        return row

    # ----- checkpointing -----------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "actor": self.actor.state_dict(), "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(), "value": self.value.state_dict(),
            "actor_opt": self.actor_opt.state_dict(), "critic_opt": self.critic_opt.state_dict(),
            "value_opt": self.value_opt.state_dict(),
            "online_transitions": self.buffer.online_rows(),
            "counters": dict(vars(self.counters)),
            "running": self._metrics.state_dict(),
            "rng_numpy": self.rng.bit_generator.state,
            "rng_torch": torch.get_rng_state(),
            "rng_explore": self.explore_gen.get_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        for name in ("actor", "critic", "target_critic", "value", "actor_opt", "critic_opt", "value_opt"):
            getattr(self, name).load_state_dict(state[name])
        self.buffer.load_online_rows(state["online_transitions"])
        self.counters = Counters(**state["counters"])
        self._metrics.load_state_dict(state["running"])
        self.rng.bit_generator.state = state["rng_numpy"]
        torch.set_rng_state(state["rng_torch"])
        self.explore_gen.set_state(state["rng_explore"])

    def close(self) -> None:
        self._eval_envs.close()
        if self._env is not None:
            self._env.close()
        self._env = None


def _describe(row: dict) -> str:
    score = f" score {row['score_mean']:.1f}" if "score_mean" in row else ""
    losses = f" q {row['q_loss']:.3f} v {row['value_loss']:.3f}" if "q_loss" in row else ""
    return (f"[iql {row['phase']}] updates {row['updates']} samples {row['online_samples']} "
            f"return {row['return_mean']:.1f}{score}{losses}")


def _descend(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """One gradient step of ``optimizer`` on ``loss``."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
