"""odt/rollout.py's episode helpers on an environment whose every number is known by hand:
the random-action episodes behind the test datasets, and the vectorised evaluation of the MLP
baselines (IQL, SAC)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from odt.rollout import random_policy_episodes, run_policy_episodes


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
