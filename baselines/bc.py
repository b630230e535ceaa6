"""Behaviour cloning: an MLP regressed from state to the dataset's action, offline only.

A sanity column for Table 1: what each dataset supports without RL (no rewards, no returns,
no value). Readable top to bottom (config, loss, agent; the network is baselines/nets.py's).
The settings are CORL's BC (``algorithms/offline/any_percent_bc.py`` with its
``configs/offline/bc`` files, ``frac: 1.0``, every trajectory kept):

* actor: Linear-ReLU-Linear-ReLU-Linear-tanh, two hidden layers of 256, PyTorch's default
  initialisation, output scaled to the action bounds (tanh x max_action in CORL, whose
  environments all have bounds [-1, 1]);
* loss: mean squared error between the actor's action and the dataset's, over batch and action
  entries; Adam at 3e-4, batch 256, 1e6 updates, batches drawn uniformly with replacement;
* observations standardised by the dataset's per-dimension mean and std (+1e-3), at the
  network's input, in training and in evaluation;
* evaluation: the actor's action as is (it is deterministic), 10 episodes (100 on AntMaze)
  every 5000 updates, scores D4RL-normalised.

One difference: CORL reads the data through ``d4rl.qlearning_dataset``, which drops the last
step of every trajectory that ended by timeout (it has no next observation, which BC does not
use); here every (state, action) step is a training pair, and the state statistics are over
every step. That is one step in a thousand on the locomotion files.

An update reads nothing back from the device: its loss is summed there (baselines/metrics.py)
and the loop reads the sum every ``READ_EVERY_UPDATES`` updates and at every evaluation and
checkpoint, where a NaN or inf loss raises ``TrainingDiverged``.

Resume is exact: ``state_dict`` holds the actor, its optimiser, the sampling RNG and counters;
the standardisation is recomputed from the dataset. ``finetune`` is a no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from baselines.metrics import READ_EVERY_UPDATES, DeviceMeans, read_metrics
from baselines.nets import DeterministicActor
from rlbase.clock import Stopwatch
from rlbase.config import ConfigError, apply_overrides, is_rate, is_size
from rlbase.envs import VectorEnvPool, run_policy_episodes, summarize_returns
from rlbase.presets import PRESETS, scale_bc
from rlbase.progress import progress_bar
from rlbase.protocol import domain_defaults, evaluation_episodes, is_antmaze, known_datasets
from rlbase.seeds import evaluation_seeds, run_seed
from rlbase.training import SafePoints, TrainingDiverged, parameters_finite, resolve_device
from rlbase.trajectories import Trajectories

EnvFactory = Callable[[], gym.Env]
ScoreFn = Callable[[np.ndarray], np.ndarray]
Logger = Callable[[dict], None]
METRICS = ("bc_loss",)


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------
@dataclass
class BCConfig:
    hidden_dim: int = 256
    n_hidden: int = 2  # hidden layers: (256, 256)
    lr: float = 3e-4  # Adam
    batch_size: int = 256
    updates: int = 1_000_000
    online_samples: int = 0  # BC is offline only; the runner's checks read the online budget here
    normalize_observations: bool = True  # CORL's ``normalize: true``
    obs_std_eps: float = 1e-3  # added to the observations' std, as CORL's compute_mean_std
    eval_episodes: int = 10
    # episodes of an evaluation that does not end the run (0: eval_episodes)
    eval_episodes_interim: int = 0
    eval_every_updates: int = 5000
    checkpoint_every_updates: int = 5000
    device: str = "auto"
    seed: int = 0

    def validate(self) -> BCConfig:
        def check(cond: bool, name: str, rule: str) -> None:
            if not cond:
                raise ConfigError(f"{name}={getattr(self, name)!r} is out of range: {rule}")

        for name in ("hidden_dim", "n_hidden", "batch_size", "updates", "eval_episodes",
                     "eval_every_updates", "checkpoint_every_updates"):
            check(is_size(getattr(self, name)), name, "an integer >= 1")
        for name in ("eval_episodes_interim", "seed"):
            check(is_size(getattr(self, name), 0), name, "an integer >= 0")
        check(is_rate(self.lr), "lr", "> 0 and finite")
        check(is_rate(self.obs_std_eps, zero_ok=True), "obs_std_eps", ">= 0 and finite")
        check(isinstance(self.normalize_observations, bool), "normalize_observations", "true | false")
        check(self.online_samples == 0, "online_samples", "0 (BC is offline only)")
        return self


def bc_config(dataset: str, preset: str = "paper", seed: int = 0,
              overrides: dict[str, Any] | None = None) -> BCConfig:
    """BC's configuration: CORL's settings, scaled by preset (rlbase.presets.scale_bc), then
    overrides."""
    if dataset not in known_datasets():
        raise ConfigError(f"unknown dataset {dataset!r}; known: {', '.join(known_datasets())}")
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    cfg = BCConfig(seed=seed, eval_episodes=domain_defaults(dataset)["eval_episodes"])
    cfg = scale_bc(cfg, preset, is_antmaze(dataset))
    return apply_overrides(cfg.validate(), overrides or {})


# --------------------------------------------------------------------------------------------
# The loss (the network: baselines/nets.py's DeterministicActor)
# --------------------------------------------------------------------------------------------
def bc_loss(predicted: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over every batch and action entry (CORL's ``F.mse_loss``)."""
    return (predicted - target).pow(2).mean()


# --------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------
@dataclass
class Counters:
    updates: int = 0
    online_samples: int = 0  # always 0: BC never acts for training
    evaluations: int = 0
    pretrain_done: bool = False
    wall_time: float = 0.0
    cpu_time: float = 0.0


class BCAgent:
    def __init__(self, cfg: BCConfig, dataset: Trajectories, make_env: EnvFactory,
                 score_fn: ScoreFn | None = None, progress: bool = True):
        self.cfg = cfg.validate()
        self.make_env, self.score_fn, self.progress = make_env, score_fn, progress
        self.device = resolve_device(cfg.device)
        low, high = self._action_bounds(dataset.obs_dim, dataset.act_dim)

        torch.manual_seed(run_seed(cfg.seed))
        self.rng = np.random.default_rng(run_seed(cfg.seed))
        self.actor = DeterministicActor(dataset.obs_dim, dataset.act_dim, cfg.hidden_dim, cfg.n_hidden, low, high).to(self.device)
        self.opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.lr)
        if cfg.normalize_observations:
            mean, std = dataset.state_statistics(eps=cfg.obs_std_eps)
        else:
            mean, std = np.zeros(dataset.obs_dim, np.float32), np.ones(dataset.obs_dim, np.float32)
        self.obs_mean = torch.as_tensor(mean, device=self.device)
        self.obs_std = torch.as_tensor(std, device=self.device)
        self.observations = self._inputs(torch.as_tensor(dataset.observations, device=self.device))
        self.actions = torch.as_tensor(dataset.actions, device=self.device)
        self.counters = Counters()
        self._metrics = DeviceMeans(METRICS, self.device)
        self._eval_envs = VectorEnvPool(make_env)
        self.safe_points = SafePoints()  # the stop flag; the safe point: after an update

    def _action_bounds(self, obs_dim: int, act_dim: int) -> tuple[np.ndarray, np.ndarray]:
        env = self.make_env()
        try:
            obs_space, act_space = env.observation_space, env.action_space
        finally:
            env.close()
        if not isinstance(act_space, gym.spaces.Box):
            raise ConfigError(f"BC needs a continuous (Box) action space, got {act_space}")
        if obs_space.shape != (obs_dim,) or act_space.shape != (act_dim,):
            raise ValueError(f"dataset shapes (obs {obs_dim}, act {act_dim}) do not fit the "
                             f"environment (obs {obs_space.shape}, act {act_space.shape})")
        return act_space.low.astype(np.float32), act_space.high.astype(np.float32)

    def _inputs(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs.float() - self.obs_mean) / self.obs_std

    def request_stop(self) -> None:
        """Checkpoint and raise rlbase.training.StopRequested after the current update (signal-safe)."""
        self.safe_points.request()

    # ----- training ------------------------------------------------------------------------
    def sample_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.from_numpy(self.rng.integers(0, len(self.actions), size=self.cfg.batch_size)).to(self.device)
        return self.observations[idx], self.actions[idx]

    def step(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """One Adam step on the MSE of a batch of (standardised) observations and actions, with
        no host read: the loss stays on the device, summed for the next logged row."""
        loss = bc_loss(self.actor(obs), act)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.counters.updates += 1
        self._metrics.add({"bc_loss": loss})
        return loss.detach()

    def update(self, obs: torch.Tensor, act: torch.Tensor) -> float:
        """``step``, then its loss as a float (one host read; TrainingDiverged if it is NaN or
        inf): for scripts and tests that want a float after every update."""
        return read_metrics({"bc_loss": self.step(obs, act)}, "BC", self.counters.updates - 1)["bc_loss"]

    def _read_metrics(self) -> dict[str, float]:
        """The loss's mean since the last logged row (one host read); raises TrainingDiverged
        when a loss since then was NaN or inf."""
        return self._metrics.means("BC", self.counters.updates)

    def pretrain(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> dict | None:
        c, k = self.cfg, self.counters
        if k.pretrain_done:
            return None
        bar = progress_bar(total=c.updates, initial=k.updates, desc="bc", unit="upd",
                           enabled=self.progress, mininterval=1.0)
        clock = Stopwatch(k)
        while k.updates < c.updates:
            self.step(*self.sample_batch())
            bar.update(1)
            if k.updates % READ_EVERY_UPDATES == 0:  # the logging interval: one host read
                self._postfix(bar, self._read_metrics())
            if k.updates % c.eval_every_updates == 0 and k.updates < c.updates:
                self._say(bar, self._eval_row(log, ends_phase=False))
            if SafePoints.crossed(k.updates - 1, k.updates, c.checkpoint_every_updates) or self.safe_points.requested:
                clock.lap()
                self._save(checkpoint)
        bar.close()
        row = self._eval_row(log, ends_phase=True)
        self._say(bar, row)
        k.pretrain_done = True
        clock.lap()
        self._save(checkpoint)
        return row

    def finetune(self, log: Logger | None = None, checkpoint: Callable[[], None] | None = None) -> None:
        """BC is offline only."""
        return None

    def _save(self, checkpoint: Callable[[], None] | None) -> None:
        """A safe point: checkpoint finite state only (the last good checkpoint stays), then stop
        if asked to."""
        self.safe_points.save(checkpoint, self._check_finite)
        self.safe_points.stop_if_requested(f"update {self.counters.updates}")

    def _check_finite(self) -> None:
        self._read_metrics()
        if not parameters_finite([self.actor]):
            raise TrainingDiverged(f"BC parameters became NaN or inf by update {self.counters.updates}")

    # ----- evaluation ----------------------------------------------------------------------
    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        o = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        return self.actor(self._inputs(o)).cpu().numpy()

    def evaluate(self, episodes: int | None = None) -> dict:
        n = episodes or self.cfg.eval_episodes
        returns, lengths = run_policy_episodes(self._eval_envs.get(n), self.act,
                                               evaluation_seeds(self.cfg.seed, self.counters.evaluations, n))
        self.counters.evaluations += 1
        return summarize_returns(returns, lengths, self.score_fn)

    def _eval_row(self, log: Logger | None, ends_phase: bool) -> dict:
        c, k = self.cfg, self.counters
        episodes = evaluation_episodes(c.eval_episodes, c.eval_episodes_interim, ends_phase)
        row = {"phase": "pretrain", "updates": k.updates, "online_samples": 0,
               **self._metrics.pop("BC", k.updates), **self.evaluate(episodes)}
        if log is not None:
            log(row)
        return row

    def _postfix(self, bar, means: dict[str, float]) -> None:
        if "bc_loss" in means:
            bar.set_postfix(loss=f"{means['bc_loss']:.4f}")

    def _say(self, bar, row: dict) -> None:
        if self.progress:
            score = f" score {row['score_mean']:.1f}" if "score_mean" in row else ""
            loss = f" loss {row['bc_loss']:.4f}" if "bc_loss" in row else ""
            bar.write(f"[bc] updates {row['updates']} return {row['return_mean']:.1f}{score}{loss}")

    # ----- checkpointing -------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "actor": self.actor.state_dict(), "opt": self.opt.state_dict(),
            "counters": dict(vars(self.counters)),
            "running": self._metrics.state_dict(),
            "rng_numpy": self.rng.bit_generator.state, "rng_torch": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.actor.load_state_dict(state["actor"])
        self.opt.load_state_dict(state["opt"])
        self.counters = Counters(**state["counters"])
        self._metrics.load_state_dict(state["running"])
        self.rng.bit_generator.state = state["rng_numpy"]
        torch.set_rng_state(state["rng_torch"])

    def close(self) -> None:
        self._eval_envs.close()
