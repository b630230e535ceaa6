"""Episodes on an environment whose every number is known by hand: rlbase/envs.py's random-action
episodes behind the test datasets and vectorised evaluation of the MLP baselines (IQL, SAC),
and odt/rollout.py's context rollout."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import make_hopper

from odt.config import ModelConfig
from odt.model import DecisionTransformer
from odt.rollout import Conditioning, run_episodes
from rlbase.envs import random_policy_episodes, run_policy_episodes, summarize_returns
from rlbase.seeds import evaluation_seeds


class CountingEnv(gym.Env):
    """obs_t = [t, seed], reward r_t = t + 1; the episode ends after ``horizon`` steps, by
    termination or by truncation. ``horizon_from_seed``: a seeded reset sets the horizon to the
    seed (an unseeded one keeps it). Every reset seed is recorded in ``resets``."""

    metadata: dict = {"render_modes": []}
    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, horizon: int = 5, truncate: bool = False, horizon_from_seed: bool = False):
        self.horizon, self.truncate, self.horizon_from_seed = horizon, truncate, horizon_from_seed
        self.t, self.seed_seen, self.resets = 0, None, []

    def _obs(self) -> np.ndarray:
        return np.array([self.t, -1 if self.seed_seen is None else self.seed_seen], dtype=np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.resets.append(seed)
        self.t = 0
        if seed is not None:
            self.seed_seen = seed
            if self.horizon_from_seed:
                self.horizon = seed
        return self._obs(), {}

    def step(self, action):
        reward = float(self.t + 1)
        self.t += 1
        done = self.t >= self.horizon
        return self._obs(), reward, done and not self.truncate, done and self.truncate, {}


def test_random_episodes_stop_once_the_step_budget_is_reached():
    # horizon 5: 10 steps are covered by exactly two episodes, 11 need a third
    assert [len(e["rewards"]) for e in random_policy_episodes(CountingEnv, 10, seed=0)] == [5, 5]
    assert [len(e["rewards"]) for e in random_policy_episodes(CountingEnv, 11, seed=0)] == [5, 5, 5]
    assert len(random_policy_episodes(CountingEnv, 1, seed=0)) == 1


def test_random_episodes_reset_with_consecutive_seeds_and_record_what_the_env_returned():
    env = CountingEnv()
    episodes = random_policy_episodes(lambda: env, 11, seed=7)
    assert env.resets == [7, 8, 9]
    for k, ep in enumerate(episodes):
        assert ep["observations"].dtype == np.float32 and ep["actions"].dtype == np.float32
        assert ep["rewards"].dtype == np.float32
        # the observation each action was taken in: steps 0..4, then the reset seed
        np.testing.assert_array_equal(ep["observations"], [[t, 7 + k] for t in range(5)])
        np.testing.assert_array_equal(ep["rewards"], [1, 2, 3, 4, 5])
        assert ep["actions"].shape == (5, 1) and np.all(np.abs(ep["actions"]) <= 1)
        assert ep["terminated"] is True
    assert set(episodes[0]) == {"observations", "actions", "rewards", "terminated"}


def test_random_episodes_flag_truncation_as_not_terminated():
    episodes = random_policy_episodes(lambda: CountingEnv(horizon=3, truncate=True), 6, seed=0)
    assert [e["terminated"] for e in episodes] == [False, False]


def test_random_actions_are_reproducible_by_seed():
    def actions(seed):
        return np.concatenate([e["actions"] for e in random_policy_episodes(CountingEnv, 10, seed=seed)])

    np.testing.assert_array_equal(actions(3), actions(3))
    assert not np.array_equal(actions(3), actions(4))


def test_vectorised_evaluation_counts_each_sub_env_first_episode_only():
    """Two sub-environments of horizons 2 and 5 (set by their reset seeds): each contributes
    exactly its first episode, 1+2 = 3 and 1+..+5 = 15, though the shorter one is reset and
    stepped on while the other finishes."""
    envs = gym.vector.SyncVectorEnv([lambda: CountingEnv(horizon_from_seed=True) for _ in range(2)])
    seen = []

    def policy(obs):
        seen.append(obs[:, 1].copy())
        return np.zeros((2, 1), dtype=np.float32)

    try:
        returns, lengths = run_policy_episodes(envs, policy, seeds=[2, 5])
    finally:
        envs.close()
    np.testing.assert_array_equal(returns, [3.0, 15.0])
    np.testing.assert_array_equal(lengths, [2, 5])
    assert lengths.dtype == np.int64
    np.testing.assert_array_equal(seen[0], [2, 5])  # the seeds reached the sub-environments


def test_evaluation_seeds_follow_the_documented_formula():
    """Evaluation episode i of a run with seed s, after e earlier evaluations of n episodes,
    resets with 10^7 + 10^5 s + e n + i. The formula is part of what a record means: a resumed
    or repeated run must meet the committed runs' evaluation episodes, so it may not drift."""
    assert evaluation_seeds(0, 0, 3) == [10_000_000, 10_000_001, 10_000_002]
    assert evaluation_seeds(7, 4, 10) == [10_700_040 + i for i in range(10)]
    # consecutive evaluations of one run never reuse an episode, and runs of different seeds
    # do not meet within 10^4 evaluations of 10 episodes
    firsts = [x for e in range(3) for x in evaluation_seeds(2, e, 10)]
    assert len(set(firsts)) == 30
    assert max(evaluation_seeds(2, 9_999, 10)) < min(evaluation_seeds(3, 0, 10))


def test_summary_scores_are_float64_mean_and_std_of_the_normalised_returns():
    returns, lengths = np.array([1.0, 2.0, 4.0, 7.0, 11.0]), np.array([10, 20, 30, 40, 50])

    def score(r):
        return (r / 3).astype(np.float32)  # a score function may hand back float32

    row = summarize_returns(returns, lengths, score)
    values = [float(v) for v in score(returns)]
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    assert row["score_mean"] == pytest.approx(mean, rel=1e-12)
    assert row["score_std"] == pytest.approx(std, rel=1e-12)
    assert (row["return_mean"], row["length_mean"], row["returns"]) == (5.0, 30.0, [1.0, 2.0, 4.0, 7.0, 11.0])
    assert row["return_std"] == pytest.approx(math.sqrt(sum((x - 5.0) ** 2 for x in returns) / 5), rel=1e-12)
    assert "score_mean" not in summarize_returns(returns, lengths)


def test_sampled_rollouts_draw_from_the_given_generator_only():
    """Exploration samples from the run's own generator (what makes a resumed run replay the
    same episodes): the same generator seed gives the same actions whatever torch's global
    generator did meanwhile, and the global generator is left untouched."""
    cfg = ModelConfig(embed_dim=16, n_layers=1, n_heads=1, dropout=0.0, context_len=4, eval_context_len=4,
                      max_ep_len=1000, positional_embedding=True)
    model = DecisionTransformer(11, 3, dataclasses.replace(cfg, stochastic=True))
    envs = gym.vector.SyncVectorEnv([make_hopper])
    cond = Conditioning(3600.0, 1000.0, np.zeros(11, np.float32), np.ones(11, np.float32), 4)
    try:
        torch.manual_seed(1)
        before = torch.get_rng_state()
        first = run_episodes(model, envs, cond, seeds=[5], sample=True,
                             generator=torch.Generator().manual_seed(9), max_steps=6)
        assert torch.equal(torch.get_rng_state(), before)
        torch.manual_seed(2)
        second = run_episodes(model, envs, cond, seeds=[5], sample=True,
                              generator=torch.Generator().manual_seed(9), max_steps=6)
    finally:
        envs.close()
    np.testing.assert_array_equal(first.episodes[0]["actions"], second.episodes[0]["actions"])
