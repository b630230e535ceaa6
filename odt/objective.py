"""ODT's objective (paper eqs. 3-7): NLL minus lambda times entropy, and the dual step.

Both terms are averaged over the valid (unpadded) positions of a batch of length-K windows,
which is the paper's 1/K scaling with padded positions left out of numerator and
denominator alike. The entropy is a one-sample reparameterized Monte Carlo estimate
H ~= -log pi(a~), a~ ~ pi. lambda is optimised as log(lambda), so it stays positive.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from odt.policy import sample_squashed, squashed_action_log_prob


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of values (B, T) over positions where mask (B, T) is True."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)


@dataclass
class LossTerms:
    loss: torch.Tensor  # what the policy optimiser minimises
    nll: torch.Tensor  # J(theta); for the deterministic head, the MSE
    entropy: torch.Tensor  # one-sample estimate of H (detached); 0 for deterministic


def stochastic_policy_loss(mean: torch.Tensor, log_std: torch.Tensor, actions: torch.Tensor,
                           mask: torch.Tensor, lam: torch.Tensor) -> LossTerms:
    """J(theta) - lambda * H(theta) for the squashed Gaussian (lambda is held fixed)."""
    nll = -masked_mean(squashed_action_log_prob(actions, mean, log_std), mask)
    _, sample_log_prob = sample_squashed(mean, log_std)
    entropy = -masked_mean(sample_log_prob, mask)
    return LossTerms(loss=nll - lam.detach() * entropy, nll=nll.detach(), entropy=entropy)


def deterministic_policy_loss(predicted: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor) -> LossTerms:
    """DT's l2 loss: the mean squared error over every action entry of the valid positions, as
    in the official DT and ODT code (each position has act_dim entries, so this is the mean
    over positions of the per-position mean over action dims)."""
    mse = masked_mean((predicted - actions).pow(2).mean(dim=-1), mask)
    return LossTerms(loss=mse, nll=mse.detach(), entropy=torch.zeros((), device=mse.device))


def temperature_loss(log_lambda: torch.Tensor, entropy: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """lambda * (H - beta) with H held fixed (eq. 7). Its gradient in log(lambda) is
    lambda * (H - beta): descending it raises lambda while H < beta and lowers it above."""
    return log_lambda.exp() * (entropy.detach() - target_entropy)
