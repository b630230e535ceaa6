"""Shared fixtures: seeded, single-threaded, and a tiny Hopper-v5 dataset built on the fly."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlbase.envs import random_policy_episodes
from rlbase.trajectories import Trajectories


@pytest.fixture(autouse=True)
def _seed_and_threads():
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(1)  # deterministic kernels and no oversubscription on 2 cores


# Tests that take the ``device`` fixture run on the CPU and, marked ``cuda``, on a CUDA GPU when
# one is present (skipped, never failed, without one): ``pytest -m cuda`` checks a GPU install.
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here")])]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


def make_hopper() -> gym.Env:
    return gym.make("Hopper-v5")


@pytest.fixture(scope="session")
def hopper_random() -> Trajectories:
    """About 2000 steps of a uniformly random policy on Hopper-v5."""
    return Trajectories.from_episodes(random_policy_episodes(make_hopper, 2000, seed=0))


def toy_trajectories(lengths, obs_dim=3, act_dim=2, seed=0) -> Trajectories:
    rng = np.random.default_rng(seed)
    episodes = [
        dict(observations=rng.normal(size=(n, obs_dim)).astype(np.float32),
             actions=rng.uniform(-1, 1, size=(n, act_dim)).astype(np.float32),
             rewards=rng.uniform(0, 1, size=n).astype(np.float32),
             terminated=bool(i % 2))
        for i, n in enumerate(lengths)
    ]
    return Trajectories.from_episodes(episodes)
