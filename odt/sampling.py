"""Sub-trajectory sampling (Algorithm 3): pick trajectories, then windows, all vectorised.

A trajectory is drawn with probability proportional to its length (or, for the ablation,
to its return shifted to be non-negative); then a start step uniformly within it; the
window covers K steps from there, cut at the trajectory's end and padded on the right.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def trajectory_probabilities(lengths: np.ndarray, returns: np.ndarray | None = None,
                             strategy: str = "length") -> np.ndarray:
    """Sampling probability of each trajectory: proportional to length, or to return."""
    if strategy == "length":
        weights = np.asarray(lengths, dtype=np.float64)
    elif strategy == "return":
        if returns is None:
            raise ValueError("return-proportional sampling needs the trajectory returns")
        r = np.asarray(returns, dtype=np.float64)
        weights = r - min(r.min(), 0.0) + 1e-6  # shift so every weight is positive
    else:
        raise ValueError(f"unknown sampling strategy {strategy!r}; known: length, return")
    return weights / weights.sum()


@dataclass
class WindowIndex:
    flat: np.ndarray  # (B, K) indices into the flat step arrays (padding repeats a valid index)
    mask: np.ndarray  # (B, K) True at real steps, False at right padding
    timesteps: np.ndarray  # (B, K) step index within the episode (0 at padding)


def sample_windows(rng: np.random.Generator, starts: np.ndarray, lengths: np.ndarray,
                   probs: np.ndarray, batch_size: int, context_len: int) -> WindowIndex:
    """Draw batch_size windows of up to context_len steps (Algorithm 3)."""
    traj = rng.choice(len(lengths), size=batch_size, p=probs)
    length = lengths[traj]
    offset = (rng.random(batch_size) * length).astype(np.int64)  # uniform in [0, length)
    steps = offset[:, None] + np.arange(context_len)[None, :]
    mask = steps < length[:, None]
    steps = np.where(mask, steps, offset[:, None])
    return WindowIndex(flat=starts[traj][:, None] + steps, mask=mask, timesteps=np.where(mask, steps, 0))


def sample_windows_torch(generator: torch.Generator, starts: torch.Tensor, lengths: torch.Tensor,
                         probs: torch.Tensor, batch_size: int, context_len: int) -> tuple[torch.Tensor, ...]:
    """Algorithm 3 as :func:`sample_windows`, drawn with a torch generator on the tensors' device,
    so a batch is chosen without leaving the GPU. Returns (flat, mask, timesteps), each (B, K).
    The same law as the numpy sampler, not the same stream: a seed gives other windows."""
    device = lengths.device
    traj = torch.multinomial(probs, batch_size, replacement=True, generator=generator)
    length = lengths[traj]
    uniform = torch.rand(batch_size, generator=generator, device=device, dtype=torch.float64)
    offset = (uniform * length).long().clamp_max(length - 1)  # uniform in [0, length)
    steps = offset[:, None] + torch.arange(context_len, device=device)[None, :]
    mask = steps < length[:, None]
    steps = torch.where(mask, steps, offset[:, None])
    return starts[traj][:, None] + steps, mask, torch.where(mask, steps, 0)
