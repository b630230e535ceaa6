"""Action heads: ODT's tanh-squashed diagonal Gaussian and DT's deterministic head.

The Gaussian's mean and log-std come from two separate linear layers (paper section 4.2);
the log-std is squashed into [log_std_min, log_std_max]. Evaluation uses the mean action
tanh(mu); exploration samples. All math is in pure functions over tensors.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

_LOG_2 = math.log(2.0)
_ACTION_EPS = 1e-6  # data actions are clipped to (-1 + eps, 1 - eps) before atanh


def bounded_log_std(raw: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """Map an unbounded tensor smoothly into [lo, hi]."""
    return lo + 0.5 * (hi - lo) * (torch.tanh(raw) + 1.0)


def tanh_gaussian_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(a) for a = tanh(u), u ~ N(mean, exp(log_std)^2), summed over action dims.

    Uses log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)) for numerical stability.
    """
    z = (u - mean) * torch.exp(-log_std)
    gaussian = -0.5 * z.pow(2) - log_std - 0.5 * math.log(2.0 * math.pi)
    log_det = 2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))
    return (gaussian - log_det).sum(dim=-1)


def squashed_action_log_prob(action: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(action) of given actions in [-1, 1] (the data actions for the NLL)."""
    a = action.clamp(-1.0 + _ACTION_EPS, 1.0 - _ACTION_EPS)
    return tanh_gaussian_log_prob(torch.atanh(a), mean, log_std)


def sample_squashed(mean: torch.Tensor, log_std: torch.Tensor, generator: torch.Generator | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterized sample a = tanh(mean + std * eps) and its log-probability."""
    eps = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
    u = mean + torch.exp(log_std) * eps
    return torch.tanh(u), tanh_gaussian_log_prob(u, mean, log_std)


class GaussianHead(nn.Module):
    """Two linear layers: the mean and the (bounded) log-std of the pre-tanh Gaussian."""

    stochastic = True

    def __init__(self, embed_dim: int, act_dim: int, log_std_min: float, log_std_max: float):
        super().__init__()
        self.mean = nn.Linear(embed_dim, act_dim)
        self.log_std = nn.Linear(embed_dim, act_dim)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mean(h), bounded_log_std(self.log_std(h), self.log_std_min, self.log_std_max)

    @staticmethod
    def mean_action(params: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return torch.tanh(params[0])

    @staticmethod
    def sample_action(params: tuple[torch.Tensor, torch.Tensor], generator: torch.Generator | None = None) -> torch.Tensor:
        return sample_squashed(*params, generator=generator)[0]


class DeterministicHead(nn.Module):
    """DT's head: one linear layer followed by tanh; trained with MSE."""

    stochastic = False

    def __init__(self, embed_dim: int, act_dim: int):
        super().__init__()
        self.linear = nn.Linear(embed_dim, act_dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.linear(h))

    @staticmethod
    def mean_action(params: torch.Tensor) -> torch.Tensor:
        return params

    @staticmethod
    def sample_action(params: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return params  # a deterministic policy explores with its own action
