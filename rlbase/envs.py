"""Environments and episodes shared by every method.

A pool of vector environments built once, episodes of a memoryless policy
stepped together, the evaluation row every method's curve shares, and a
random-policy dataset for demos and tests. ODT's own context rollout stays in odt.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from rlbase.seeds import random_episode_seed


def random_policy_episodes(make_env, num_steps: int, seed: int) -> list[dict]:
    """Episodes of uniformly random actions, at least num_steps steps in all.

    A tiny stand-in dataset for demos and tests; real datasets come from the forge.
    """
    env = make_env()
    env.action_space.seed(seed)
    episodes, total, k = [], 0, 0
    try:
        while total < num_steps:
            obs, _ = env.reset(seed=random_episode_seed(seed, k))
            ep = dict(observations=[], actions=[], rewards=[], terminated=False)
            while True:
                act = env.action_space.sample()
                ep["observations"].append(obs)
                ep["actions"].append(act)
                obs, reward, term, trunc, _ = env.step(act)
                ep["rewards"].append(reward)
                if term or trunc:
                    ep["terminated"] = bool(term)
                    break
            episodes.append({key: (np.asarray(v, dtype=np.float32) if key != "terminated" else v)
                             for key, v in ep.items()})
            total += len(ep["rewards"])
            k += 1
    finally:
        env.close()
    return episodes


def run_policy_episodes(envs: gym.vector.VectorEnv, policy, seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """One episode per sub-environment of a memoryless ``policy(obs batch) -> action batch``
    (the MLP baselines), all stepped together; returns (returns, lengths)."""
    n = envs.num_envs
    obs, _ = envs.reset(seed=list(seeds))
    returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    while alive.any():
        obs, reward, term, trunc, _ = envs.step(policy(obs))
        returns[alive] += reward[alive]
        lengths[alive] += 1
        alive &= ~(term | trunc)
    return returns, lengths


def summarize_returns(returns: np.ndarray, lengths: np.ndarray, score_fn=None) -> dict:
    """The evaluation part of a curve row, the same for every method: raw returns, lengths
    and, when the dataset has reference scores, normalised scores."""
    row = {"return_mean": float(returns.mean()), "return_std": float(returns.std()),
           "length_mean": float(lengths.mean()), "returns": [float(r) for r in returns]}
    if score_fn is not None:
        scores = np.asarray(score_fn(returns), dtype=np.float64)
        row.update(score_mean=float(scores.mean()), score_std=float(scores.std()))
    return row


class VectorEnvPool:
    """Vector environments of each size asked for, built once and reused; ``close`` ends them."""

    def __init__(self, make_env):
        self.make_env = make_env
        self._envs: dict[int, gym.vector.VectorEnv] = {}

    def get(self, n: int) -> gym.vector.VectorEnv:
        if n not in self._envs:
            self._envs[n] = gym.vector.SyncVectorEnv([self.make_env for _ in range(n)])
        return self._envs[n]

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
