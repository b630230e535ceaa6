"""Episodes stepped together with one batched model call per environment step.

Per step, one copy goes to the device (the environments' observations and rewards together)
and one comes back (the actions), whatever the number of environments.

The context lives in preallocated (n_envs, max_ep_len, .) tensors; at step t the model reads
the window of the last ``context_len`` steps, so nothing grows by concatenation. All
environments of a vector env start together and step in lockstep, so every live episode has
the same window length and the prediction is read at its last position.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from odt.model import DecisionTransformer


@dataclass
class RolloutResult:
    episodes: list[dict]  # raw observations, actions, rewards, terminated, per episode
    returns: np.ndarray  # (n,) undiscounted returns
    lengths: np.ndarray  # (n,) steps


@dataclass
class Conditioning:
    """How the model is conditioned during a rollout."""

    target_return: float  # initial RTG in raw return units
    rtg_scale: float
    state_mean: np.ndarray
    state_std: np.ndarray
    context_len: int


@contextmanager
def _single_cpu_thread(device: torch.device):
    """One intra-op thread on CPU for the duration, then the caller's count again.

    A rollout's forward passes are tiny (at most a few hundred tokens), too small for a
    second thread to help; but every parallel region still waits for the other thread, and on
    a machine whose other core is busy that wait is a scheduler slice. Measured on the shared
    2-core machine (load ~8): a 10-episode Hopper evaluation at the cpu preset took 167 s
    with 2 threads and 11.7 s with 1; exploration 15 vs 323 env-steps/s.
    """
    previous = torch.get_num_threads()
    if device.type != "cpu" or previous == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def run_episodes(model: DecisionTransformer, envs: gym.vector.VectorEnv, cond: Conditioning,
                 seeds: list[int], sample: bool, generator: torch.Generator | None = None,
                 max_steps: int | None = None) -> RolloutResult:
    """Run one episode in each sub-environment of ``envs`` (reset with ``seeds``)."""
    with _single_cpu_thread(next(model.parameters()).device):
        return _run_episodes(model, envs, cond, seeds, sample, generator, max_steps)


@torch.inference_mode()
def _run_episodes(model: DecisionTransformer, envs: gym.vector.VectorEnv, cond: Conditioning,
                  seeds: list[int], sample: bool, generator: torch.Generator | None,
                  max_steps: int | None) -> RolloutResult:
    n = envs.num_envs
    if len(seeds) != n:
        raise ValueError(f"{len(seeds)} seeds for {n} environments")
    device = next(model.parameters()).device
    horizon = max_steps or model.cfg.max_ep_len
    obs_dim, act_dim = model.obs_dim, model.act_dim
    was_training = model.training
    model.eval()

    states = torch.zeros(n, horizon, obs_dim, device=device)
    actions = torch.zeros(n, horizon, act_dim, device=device)
    rtg = torch.zeros(n, horizon, 1, device=device)
    timesteps = torch.arange(horizon, device=device).clamp_max(model.cfg.max_ep_len - 1).expand(n, horizon)
    mean = torch.as_tensor(cond.state_mean, device=device)
    std = torch.as_tensor(cond.state_std, device=device)

    raw_obs = np.zeros((n, horizon, obs_dim), dtype=np.float32)
    raw_act = np.zeros((n, horizon, act_dim), dtype=np.float32)
    rewards = np.zeros((n, horizon), dtype=np.float64)
    lengths = np.zeros(n, dtype=np.int64)
    terminated = np.zeros(n, dtype=bool)
    alive = np.ones(n, dtype=bool)

    obs, _ = envs.reset(seed=list(seeds))
    obs_dev = torch.as_tensor(obs, dtype=torch.float32, device=device)
    rtg[:, 0, 0] = cond.target_return / cond.rtg_scale
    for t in range(horizon):
        raw_obs[:, t] = obs
        states[:, t] = (obs_dev - mean) / std
        lo = max(0, t + 1 - cond.context_len)
        params = model(states[:, lo:t + 1], actions[:, lo:t + 1], rtg[:, lo:t + 1], timesteps[:, lo:t + 1])
        last = tuple(p[:, -1] for p in params) if isinstance(params, tuple) else params[:, -1]
        act = model.head.sample_action(last, generator) if sample else model.head.mean_action(last)
        actions[:, t] = act
        act_np = act.float().cpu().numpy()
        raw_act[:, t] = act_np
        obs, reward, term, trunc, _ = envs.step(act_np)
        rewards[alive, t] = reward[alive]
        lengths[alive] += 1
        terminated |= alive & term
        alive &= ~(term | trunc)
        if not alive.any():
            break
        if t + 1 < horizon:  # one copy to the device per step: the next observations and the rewards
            arrived = torch.as_tensor(np.concatenate([obs, reward[:, None]], axis=1), dtype=torch.float32,
                                      device=device)
            obs_dev, reward_dev = arrived[:, :obs_dim], arrived[:, obs_dim]
            rtg[:, t + 1, 0] = rtg[:, t, 0] - reward_dev / cond.rtg_scale

    model.train(was_training)
    episodes = [
        dict(observations=raw_obs[i, :lengths[i]], actions=raw_act[i, :lengths[i]],
             rewards=rewards[i, :lengths[i]].astype(np.float32), terminated=bool(terminated[i]))
        for i in range(n)
    ]
    return RolloutResult(episodes=episodes, returns=rewards.sum(axis=1), lengths=lengths)
