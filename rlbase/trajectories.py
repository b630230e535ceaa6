"""The one in-memory dataset type: trajectories stored flat, once.

Every algorithm in the harness consumes a :class:`Trajectories`. Steps of all trajectories
are concatenated along the first axis; ``starts[i]`` and ``lengths[i]`` locate trajectory
``i``. This layout lets samplers gather whole batches with one fancy index, and lets the
replay buffer evict its oldest trajectory by slicing off a prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class DatasetError(ValueError):
    """A dataset is malformed: the message names the field and what is wrong."""


@dataclass(frozen=True)
class Trajectories:
    observations: np.ndarray  # (N, obs_dim) float32
    actions: np.ndarray  # (N, act_dim) float32
    rewards: np.ndarray  # (N,) float32
    lengths: np.ndarray  # (T,) int64, each >= 1, summing to N
    terminated: np.ndarray  # (T,) bool: ended in a terminal state (False: timeout/truncation)

    def __post_init__(self) -> None:
        self.validate()

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def from_episodes(cls, episodes: Sequence[dict]) -> Trajectories:
        """Build from dicts with keys observations, actions, rewards and terminated."""
        if not episodes:
            raise DatasetError("no trajectories: the dataset is empty")
        return cls(
            observations=np.concatenate([e["observations"] for e in episodes]).astype(np.float32),
            actions=np.concatenate([e["actions"] for e in episodes]).astype(np.float32),
            rewards=np.concatenate([e["rewards"] for e in episodes]).astype(np.float32),
            lengths=np.array([len(e["rewards"]) for e in episodes], dtype=np.int64),
            terminated=np.array([bool(e["terminated"]) for e in episodes], dtype=bool),
        )

    def validate(self) -> None:
        n = len(self.rewards)
        if len(self.lengths) == 0 or n == 0:
            raise DatasetError("no trajectories: the dataset is empty")
        for name in ("observations", "actions"):
            arr = getattr(self, name)
            if arr.ndim != 2 or len(arr) != n:
                raise DatasetError(f"{name}: shape {arr.shape}, expected ({n}, dim) to match rewards")
        if self.rewards.ndim != 1:
            raise DatasetError(f"rewards: shape {self.rewards.shape}, expected ({n},)")
        if (self.lengths < 1).any():
            raise DatasetError("lengths: every trajectory needs at least one step")
        if int(self.lengths.sum()) != n:
            raise DatasetError(f"lengths sum to {int(self.lengths.sum())}, but there are {n} steps")
        if self.terminated.shape != self.lengths.shape:
            raise DatasetError("terminated: one flag per trajectory expected")
        for name in ("observations", "actions", "rewards"):
            arr = getattr(self, name)
            if not np.isfinite(arr).all():
                bad = int(np.argwhere(~np.isfinite(arr.reshape(n, -1)).all(axis=1))[0, 0])
                raise DatasetError(f"{name}: NaN or inf at step {bad}")

    # ----- views -------------------------------------------------------------------------
    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    @property
    def num_steps(self) -> int:
        return int(len(self.rewards))

    @property
    def obs_dim(self) -> int:
        return int(self.observations.shape[1])

    @property
    def act_dim(self) -> int:
        return int(self.actions.shape[1])

    def __len__(self) -> int:
        return int(len(self.lengths))

    def returns(self) -> np.ndarray:
        """Undiscounted return of each trajectory, shape (T,)."""
        return np.add.reduceat(self.rewards.astype(np.float64), self.starts)

    def episode(self, i: int) -> dict:
        s = int(self.starts[i])
        e = s + int(self.lengths[i])
        return {
            "observations": self.observations[s:e],
            "actions": self.actions[s:e],
            "rewards": self.rewards[s:e],
            "terminated": bool(self.terminated[i]),
        }

    def select(self, indices: Sequence[int] | np.ndarray) -> Trajectories:
        """A new dataset with the given trajectories, in the given order."""
        indices = np.asarray(indices, dtype=np.int64)
        return Trajectories.from_episodes([self.episode(int(i)) for i in indices])

    def state_statistics(self, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
        """Per-dimension mean and std of the observations (eps added to the std, as in DT's code)."""
        mean = self.observations.mean(axis=0)
        std = self.observations.std(axis=0) + eps
        return mean.astype(np.float32), std.astype(np.float32)
