"""Returns-to-go and hindsight return relabeling (Algorithm 2, line 6).

Pure functions over flat arrays of concatenated trajectories.
"""

from __future__ import annotations

import numpy as np


def returns_to_go(rewards: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """g_t = sum_{t'>=t} r_t' within each trajectory; rewards flat (N,), lengths (T,)."""
    rewards = np.asarray(rewards, dtype=np.float64)  # float64 sums: exact to float32 on long trajectories
    ends = np.cumsum(lengths)
    csum = np.concatenate([[0.0], np.cumsum(rewards)])
    traj_of_step = np.repeat(np.arange(len(lengths)), lengths)
    # suffix sum = total up to the trajectory end minus the total before this step (empty in, empty out)
    return (csum[ends[traj_of_step]] - csum[:-1]).astype(np.float32)


def commanded_returns_to_go(initial_rtg: float, rewards: np.ndarray) -> np.ndarray:
    """The RTG tokens a rollout was conditioned on: g_1 = initial, g_{t+1} = g_t - r_t.

    This is what a trajectory carries when hindsight relabeling is switched off.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    spent = np.concatenate([[0.0], np.cumsum(rewards)[:-1]])
    return (initial_rtg - spent).astype(np.float32)
