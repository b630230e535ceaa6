"""The baselines' network pieces: one MLP, one twin Q, a value head and the actors' heads.

IQL, SAC and BC build their networks from these. Every piece creates its parameters in the order
its layers are listed, with PyTorch's default initialisation, so a seed gives the same weights
wherever a piece is built the same way; the attribute names are the state-dict keys the methods'
checkpoints hold.

Two twin-Q layouts exist because the two methods' reference code differ: IQL (as CORL's and the
official IQL) keeps two separate MLPs, SAC runs both members as one batched matmul. Both give
Q values of shape (2, B). The actors are three distributions, one per method: IQL's Gaussian
with a tanh'd mean and a state-independent std, SAC's tanh-squashed Gaussian, BC's deterministic
tanh head.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def mlp(in_dim: int, out_dim: int, hidden: int, n_hidden: int,
        out_activation: nn.Module | None = None) -> nn.Sequential:
    """``n_hidden`` Linear-ReLU layers of width ``hidden``, a Linear to ``out_dim``, then
    ``out_activation`` if given."""
    layers: list[nn.Module] = []
    for i in range(n_hidden):
        layers += [nn.Linear(in_dim if i == 0 else hidden, hidden), nn.ReLU()]
    layers.append(nn.Linear(hidden if n_hidden else in_dim, out_dim))
    if out_activation is not None:
        layers.append(out_activation)
    return nn.Sequential(*layers)


class EnsembleLinear(nn.Module):
    """``n`` independent linear layers applied as one batched matmul (the batched twin critics)."""

    def __init__(self, n: int, inp: int, out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, inp, out))
        self.bias = nn.Parameter(torch.empty(n, 1, out))
        bound = 1.0 / math.sqrt(inp)  # nn.Linear's default initialisation, per member
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (n, B, inp)
        return torch.baddbmm(self.bias, x, self.weight)


class TwinQ(nn.Module):
    """Two Q(s, a) networks; ``forward`` gives both members' values, shape (2, B).

    ``batched=False``: two MLPs, ``q1`` then ``q2`` (IQL). ``batched=True``: each layer holds
    both members (``EnsembleLinear``) and runs as one batched matmul (SAC).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, n_hidden: int, batched: bool = False):
        super().__init__()
        self.batched = batched
        if batched:
            layers: list[nn.Module] = []
            for i in range(n_hidden):
                layers += [EnsembleLinear(2, obs_dim + act_dim if i == 0 else hidden, hidden), nn.ReLU()]
            layers.append(EnsembleLinear(2, hidden, 1))
            self.net = nn.Sequential(*layers)
        else:
            self.q1 = mlp(obs_dim + act_dim, 1, hidden, n_hidden)
            self.q2 = mlp(obs_dim + act_dim, 1, hidden, n_hidden)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, act], dim=-1)
        if self.batched:
            return self.net(x.unsqueeze(0).expand(2, -1, -1)).squeeze(-1)
        return torch.stack([self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)])


class ValueNet(nn.Module):
    """V(s): an MLP with one output."""

    def __init__(self, obs_dim: int, hidden: int, n_hidden: int):
        super().__init__()
        self.net = mlp(obs_dim, 1, hidden, n_hidden)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs).squeeze(-1)


class _ActionBox(nn.Module):
    """Maps [-1, 1] onto the environment's action box: a * scale + center."""

    def _register_box(self, low: np.ndarray, high: np.ndarray) -> None:
        self.register_buffer("scale", torch.as_tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("center", torch.as_tensor((high + low) / 2.0, dtype=torch.float32))

    def _to_box(self, a: torch.Tensor) -> torch.Tensor:
        return a * self.scale + self.center


class GaussianActor(nn.Module):
    """IQL's policy: N(tanh(mu(s)), exp(log_std)^2) with a learned state-independent log-std."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, n_hidden: int,
                 log_std_min: float, log_std_max: float):
        super().__init__()
        self.net = mlp(obs_dim, act_dim, hidden, n_hidden)
        self.log_std = nn.Parameter(torch.zeros(act_dim))
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def forward(self, obs: torch.Tensor) -> torch.distributions.Normal:
        mean = torch.tanh(self.net(obs))
        std = self.log_std.clamp(self.log_std_min, self.log_std_max).exp()
        # unvalidated: checking the arguments reads them back to the host on every call, and a
        # diverged run is caught where the loop reads its losses (baselines/metrics.py)
        return torch.distributions.Normal(mean, std.expand_as(mean), validate_args=False)

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self(obs).log_prob(act).sum(-1)


def squashed_gaussian_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)) for u ~ N(mean, exp(log_std)), summed over action dims.

    The tanh change of variables subtracts log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)),
    written in the numerically stable form.
    """
    gauss = (-0.5 * ((u - mean) / log_std.exp()) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    return gauss - (2 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)


class TanhGaussianActor(_ActionBox):
    """SAC's policy: tanh(u), u ~ N(mu(s), sigma(s)), mapped onto the action box; the log-std is
    squashed into [log_std_min, log_std_max]."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, n_hidden: int, log_std_min: float,
                 log_std_max: float, action_low: np.ndarray, action_high: np.ndarray):
        super().__init__()
        self.net = mlp(obs_dim, 2 * act_dim, hidden, n_hidden)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max
        self._register_box(action_low, action_high)

    def dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (torch.tanh(log_std) + 1)
        return mean, log_std

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in the env's bounds and its log-probability (of the unscaled tanh)."""
        mean, log_std = self.dist_params(obs)
        eps = torch.randn(mean.shape, generator=generator, device=mean.device)
        u = mean + log_std.exp() * eps
        return self._to_box(torch.tanh(u)), squashed_gaussian_log_prob(u, mean, log_std)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        return self._to_box(torch.tanh(self.dist_params(obs)[0]))


class DeterministicActor(_ActionBox):
    """BC's policy: a tanh-bounded MLP, its output mapped onto the action box."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, n_hidden: int,
                 low: np.ndarray, high: np.ndarray):
        super().__init__()
        self.net = mlp(obs_dim, act_dim, hidden, n_hidden, out_activation=nn.Tanh())
        self._register_box(low, high)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self._to_box(self.net(obs))
