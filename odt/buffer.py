"""The trajectory replay buffer (Algorithm 1): top-N initialisation, FIFO replacement.

Trajectories are stored once, flat and in insertion order, so the oldest is always the
first and evicting it is slicing off a prefix. Each step carries the return-to-go it will be
trained with: the suffix sum of the rewards actually received (hindsight relabeling), or,
with relabeling off, the RTG the rollout was conditioned on.
"""

from __future__ import annotations

import numpy as np

from odt.relabel import commanded_returns_to_go, returns_to_go
from odt.sampling import WindowIndex, sample_windows, trajectory_probabilities
from rlbase.trajectories import Trajectories


class TrajectoryBuffer:
    def __init__(self, capacity: int, data: Trajectories, rtg: np.ndarray | None = None):
        if capacity < 1:
            raise ValueError(f"capacity={capacity} must be >= 1")
        self.capacity = capacity
        self.data = data
        self.rtg = returns_to_go(data.rewards, data.lengths) if rtg is None else rtg.astype(np.float32)
        self._cache()

    # ----- initialisation ----------------------------------------------------------------
    @classmethod
    def from_offline(cls, data: Trajectories, capacity: int, init: str = "top",
                     rng: np.random.Generator | None = None) -> TrajectoryBuffer:
        """Initialise with the top-N trajectories by return, or N chosen at random.

        Top-N are inserted in ascending order of return, so the worst of them leaves first.
        """
        n = min(capacity, len(data))
        if init == "top":
            order = np.argsort(data.returns(), kind="stable")[-n:]
        elif init == "random":
            if rng is None:
                raise ValueError("random buffer initialisation needs an rng")
            order = np.sort(rng.choice(len(data), size=n, replace=False))
        else:
            raise ValueError(f"unknown buffer initialisation {init!r}; known: top, random")
        return cls(capacity, data.select(order))

    # ----- FIFO --------------------------------------------------------------------------
    def add(self, episode: dict, relabel: bool = True, initial_rtg: float | None = None) -> None:
        """Append one rollout; evict the oldest trajectories beyond capacity."""
        if relabel:
            rtg = returns_to_go(episode["rewards"], np.array([len(episode["rewards"])]))
        else:
            if initial_rtg is None:
                raise ValueError("without relabeling the rollout's initial RTG is needed")
            rtg = commanded_returns_to_go(initial_rtg, episode["rewards"])
        new = Trajectories.from_episodes([episode])
        drop = max(0, len(self.data) + 1 - self.capacity)
        keep_from = int(self.data.lengths[:drop].sum())
        self.data = Trajectories(
            observations=np.concatenate([self.data.observations[keep_from:], new.observations]),
            actions=np.concatenate([self.data.actions[keep_from:], new.actions]),
            rewards=np.concatenate([self.data.rewards[keep_from:], new.rewards]),
            lengths=np.concatenate([self.data.lengths[drop:], new.lengths]),
            terminated=np.concatenate([self.data.terminated[drop:], new.terminated]),
        )
        self.rtg = np.concatenate([self.rtg[keep_from:], rtg])
        self._cache()

    def _cache(self) -> None:
        self._starts = self.data.starts
        self._returns = self.data.returns()
        self._probs: dict[str, np.ndarray] = {}

    # ----- sampling ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.data)

    def returns(self) -> np.ndarray:
        return self._returns

    def probabilities(self, strategy: str = "length") -> np.ndarray:
        if strategy not in self._probs:
            self._probs[strategy] = trajectory_probabilities(self.data.lengths, self._returns, strategy)
        return self._probs[strategy]

    def sample(self, rng: np.random.Generator, batch_size: int, context_len: int,
               strategy: str = "length") -> tuple[WindowIndex, dict[str, np.ndarray]]:
        """A batch of windows: index info and the gathered arrays (raw, unnormalised)."""
        idx = sample_windows(rng, self._starts, self.data.lengths, self.probabilities(strategy),
                             batch_size, context_len)
        batch = {
            "observations": self.data.observations[idx.flat],
            "actions": self.data.actions[idx.flat],
            "rtg": self.rtg[idx.flat],
        }
        return idx, batch

    # ----- checkpointing -----------------------------------------------------------------
    def state_dict(self) -> dict:
        d = self.data
        return dict(capacity=self.capacity, observations=d.observations, actions=d.actions,
                    rewards=d.rewards, lengths=d.lengths, terminated=d.terminated, rtg=self.rtg)

    @classmethod
    def from_state_dict(cls, state: dict) -> TrajectoryBuffer:
        data = Trajectories(observations=state["observations"], actions=state["actions"],
                            rewards=state["rewards"], lengths=state["lengths"],
                            terminated=state["terminated"])
        return cls(int(state["capacity"]), data, rtg=state["rtg"])
