"""The pure math: relabeling, sampling, the policy distribution, the objective, LAMB."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import toy_trajectories
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import TanhTransform

from odt.lamb import Lamb
from odt.objective import (
    deterministic_policy_loss,
    masked_mean,
    stochastic_policy_loss,
    temperature_loss,
)
from odt.policy import (
    GaussianHead,
    sample_squashed,
    squashed_action_log_prob,
    tanh_gaussian_log_prob,
)
from odt.relabel import commanded_returns_to_go, returns_to_go
from odt.sampling import sample_windows, trajectory_probabilities

# ----- relabeling --------------------------------------------------------------------------


def test_returns_to_go_are_suffix_sums_per_trajectory():
    rewards = np.array([1, 2, 3, 10, 20, 5], dtype=np.float32)
    lengths = np.array([3, 2, 1])
    np.testing.assert_allclose(returns_to_go(rewards, lengths), [6, 5, 3, 30, 20, 5])


def test_commanded_rtg_decrements_by_received_reward():
    np.testing.assert_allclose(commanded_returns_to_go(10.0, np.array([1.0, 2.0, 3.0])), [10, 9, 7])


# ----- sampling ----------------------------------------------------------------------------


def test_trajectory_frequencies_are_proportional_to_length():
    lengths = np.array([1, 5, 10, 50, 134])
    data = toy_trajectories(lengths)
    probs = trajectory_probabilities(data.lengths)
    rng = np.random.default_rng(0)
    n = 40_000
    idx = sample_windows(rng, data.starts, data.lengths, probs, n, context_len=4)
    traj_of_step = np.repeat(np.arange(len(lengths)), lengths)
    counts = np.bincount(traj_of_step[idx.flat[:, 0]], minlength=len(lengths))
    expected = n * lengths / lengths.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 18.47  # chi-square, 4 dof, p = 0.001


def test_window_start_is_uniform_within_trajectory_and_padding_is_right():
    data = toy_trajectories([8])
    rng = np.random.default_rng(1)
    idx = sample_windows(rng, data.starts, data.lengths, np.array([1.0]), 16_000, context_len=5)
    starts = idx.timesteps[:, 0]
    counts = np.bincount(starts, minlength=8)
    assert counts.min() > 1700 and counts.max() < 2300  # 2000 expected per start
    # the mask is a prefix of True then False; timesteps are consecutive where valid
    valid = idx.mask.sum(axis=1)
    np.testing.assert_array_equal(valid, np.minimum(5, 8 - starts))
    assert (np.diff(idx.mask.astype(int), axis=1) <= 0).all()
    np.testing.assert_array_equal((idx.timesteps - starts[:, None])[idx.mask],
                                  np.broadcast_to(np.arange(5), (16_000, 5))[idx.mask])


def test_return_proportional_sampling_weights_returns():
    probs = trajectory_probabilities(np.array([1, 1]), np.array([1.0, 3.0]), "return")
    np.testing.assert_allclose(probs, [0.25, 0.75], rtol=1e-5)
    with pytest.raises(ValueError, match="unknown sampling"):
        trajectory_probabilities(np.array([1]), strategy="bogus")


# ----- the squashed Gaussian ---------------------------------------------------------------


def test_log_prob_matches_torch_transformed_distribution():
    torch.manual_seed(0)
    mean, log_std = torch.randn(64, 3), torch.rand(64, 3) - 1.0
    u = mean + log_std.exp() * torch.randn(64, 3)
    ref = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform()])
    np.testing.assert_allclose(tanh_gaussian_log_prob(u, mean, log_std).numpy(),
                               ref.log_prob(torch.tanh(u)).sum(-1).numpy(), rtol=1e-4, atol=1e-4)
    a = torch.tanh(u)
    np.testing.assert_allclose(squashed_action_log_prob(a, mean, log_std).numpy(),
                               tanh_gaussian_log_prob(u, mean, log_std).numpy(), rtol=1e-3, atol=1e-3)


def _squashed_entropy_by_quadrature(mu: float, sigma: float) -> float:
    """H[tanh(u)] = H[u] + E[log(1 - tanh(u)^2)], the expectation by quadrature."""
    u = np.linspace(mu - 10 * sigma, mu + 10 * sigma, 200_001)
    pdf = np.exp(-0.5 * ((u - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    log_det = 2 * (math.log(2) - u - np.logaddexp(0, -2 * u))
    gauss_h = 0.5 * math.log(2 * math.pi * math.e * sigma**2)
    return gauss_h + float(np.trapezoid(pdf * log_det, u))


def test_one_sample_entropy_estimate_is_unbiased():
    mus, sigmas = [0.0, 0.7, -1.2], [0.5, 0.3, 1.0]
    mean = torch.tensor(mus).expand(200_000, 3)
    log_std = torch.tensor(sigmas).log().expand(200_000, 3)
    gen = torch.Generator().manual_seed(0)
    actions, log_prob = sample_squashed(mean, log_std, generator=gen)
    # the estimate is -log pi of the sample it drew
    np.testing.assert_allclose(log_prob[:100].numpy(),
                               squashed_action_log_prob(actions[:100], mean[:100], log_std[:100]).numpy(),
                               rtol=1e-3, atol=1e-3)
    expected = sum(_squashed_entropy_by_quadrature(m, s) for m, s in zip(mus, sigmas))
    estimate = float(-log_prob.mean())
    stderr = float(log_prob.std()) / math.sqrt(len(log_prob))
    assert abs(estimate - expected) < 4 * stderr


def test_sample_is_reparameterized():
    mean = torch.zeros(5, 2, requires_grad=True)
    log_std = torch.zeros(5, 2, requires_grad=True)
    a, _ = sample_squashed(mean, log_std)
    a.sum().backward()
    assert mean.grad.abs().sum() > 0 and log_std.grad.abs().sum() > 0


def test_sample_is_tanh_of_mean_plus_std_times_the_generators_normal_draw():
    """a = tanh(mu + sigma * eps), eps ~ N(0, I) drawn from the given generator alone: the same
    generator seed gives the same action whatever the global generator did, which leaves the
    global generator untouched (a resumed run replays its exploration)."""
    mean, log_std = torch.tensor([[0.3, -1.0, 0.0]]), torch.tensor([[0.0, -2.0, 0.5]])
    eps = torch.randn(1, 3, generator=torch.Generator().manual_seed(4))
    torch.manual_seed(0)
    before = torch.get_rng_state()
    a, _ = sample_squashed(mean, log_std, generator=torch.Generator().manual_seed(4))
    assert torch.equal(torch.get_rng_state(), before)
    torch.testing.assert_close(a, torch.tanh(mean + torch.exp(log_std) * eps))
    head_action = GaussianHead.sample_action((mean, log_std), generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(head_action, a)


# ----- the objective -----------------------------------------------------------------------


def test_padded_positions_do_not_change_the_loss(device):
    torch.manual_seed(0)
    mean, log_std = torch.randn(4, 6, 3).to(device), torch.full((4, 6, 3), -1.0, device=device)
    actions = (torch.rand(4, 6, 3) * 2 - 1).to(device)
    mask = torch.ones(4, 6, dtype=torch.bool, device=device)
    mask[:, 4:] = False
    lam = torch.tensor(0.5, device=device)
    torch.manual_seed(1)
    base = stochastic_policy_loss(mean, log_std, actions, mask, lam)
    garbage = actions.clone()
    garbage[:, 4:] = 0.99
    torch.manual_seed(1)
    other = stochastic_policy_loss(mean, log_std, garbage, mask, lam)
    assert torch.allclose(base.nll, other.nll)
    nll_manual = -squashed_action_log_prob(actions[:, :4], mean[:, :4], log_std[:, :4]).mean()
    assert torch.allclose(base.nll, nll_manual, atol=1e-5)
    assert torch.allclose(base.loss, base.nll - 0.5 * base.entropy)


def test_masked_mean_and_deterministic_loss():
    v = torch.tensor([[1.0, 2.0, 100.0]])
    m = torch.tensor([[True, True, False]])
    assert masked_mean(v, m).item() == pytest.approx(1.5)
    pred = torch.zeros(1, 3, 2)
    act = torch.tensor([[[1.0, 1.0], [0.0, 2.0], [9.0, 9.0]]])
    # the mean over every valid action entry, as in DT's official loss: (1 + 1 + 0 + 4) / 4
    assert deterministic_policy_loss(pred, act, m).loss.item() == pytest.approx((1 + 1 + 0 + 4) / 4)


@pytest.mark.parametrize("entropy,direction", [(-5.0, 1), (-1.0, -1)])
def test_lambda_rises_below_target_entropy_and_falls_above(entropy, direction):
    log_lambda = torch.tensor(math.log(0.1), requires_grad=True)
    opt = torch.optim.Adam([log_lambda], lr=1e-2)
    start = log_lambda.exp().item()
    for _ in range(20):
        opt.zero_grad()
        temperature_loss(log_lambda, torch.tensor(entropy), target_entropy=-3.0).backward()
        opt.step()
    assert (log_lambda.exp().item() - start) * direction > 0


# ----- LAMB --------------------------------------------------------------------------------


def _lamb_reference(params, grads_seq, lr, b1, b2, eps, wd, adapt=True):
    """The LAMB rule written out per tensor, in float64 (``adapt=False``: no trust ratio)."""
    ws = [p.detach().double().clone() for p in params]
    ms = [torch.zeros_like(w) for w in ws]
    vs = [torch.zeros_like(w) for w in ws]
    for t, grads in enumerate(grads_seq, start=1):
        for i, g in enumerate(grads):
            g = g.double()
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vs[i] = b2 * vs[i] + (1 - b2) * g * g
            r = (ms[i] / (1 - b1**t)) / ((vs[i] / (1 - b2**t)).sqrt() + eps) + wd * ws[i]
            wn, rn = ws[i].norm(), r.norm()
            trust = wn / rn if (wn > 0 and rn > 0 and adapt) else 1.0
            ws[i] = ws[i] - lr * trust * r
    return ws


def test_lamb_follows_the_update_rule(device):
    torch.manual_seed(0)
    params = [torch.randn(4, 3, requires_grad=True), torch.zeros(5, requires_grad=True), torch.randn(2, requires_grad=True)]
    grads_seq = [[torch.randn_like(p) for p in params] for _ in range(5)]
    expected = _lamb_reference(params, grads_seq, lr=0.01, b1=0.9, b2=0.999, eps=1e-6, wd=0.01)
    params = [p.detach().to(device).requires_grad_(True) for p in params]
    opt = Lamb(params, lr=0.01, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
    for grads in grads_seq:
        for p, g in zip(params, grads):
            p.grad = g.clone().to(device)
        opt.step()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.detach().double().cpu().numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("always_adapt", [False, True])
def test_lamb_without_weight_decay_is_adam_unless_always_adapt(always_adapt):
    """timm's LAMB (the official ODT code's) skips the trust ratio where weight decay is 0."""
    torch.manual_seed(1)
    params = [torch.randn(4, 3, requires_grad=True), torch.randn(2, requires_grad=True)]
    grads_seq = [[torch.randn_like(p) for p in params] for _ in range(4)]
    expected = _lamb_reference(params, grads_seq, lr=0.01, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, adapt=always_adapt)
    adam_params = [p.detach().clone().requires_grad_(True) for p in params]
    adam = torch.optim.Adam(adam_params, lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    opt = Lamb(params, lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, always_adapt=always_adapt)
    for grads in grads_seq:
        for p, q, g in zip(params, adam_params, grads):
            p.grad, q.grad = g.clone(), g.clone()
        opt.step()
        adam.step()
    for p, q, e in zip(params, adam_params, expected):
        np.testing.assert_allclose(p.detach().double().numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
        same_as_adam = np.allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert same_as_adam != always_adapt


def test_lamb_rejects_bad_hyperparameters():
    with pytest.raises(ValueError, match="lr"):
        Lamb([torch.zeros(1, requires_grad=True)], lr=0.0, weight_decay=0.0, eps=1e-8)


# ----- LAMB: found by mutation testing (tests/MUTATION.md) --------------------------------------
def _lamb(**kw):
    args = dict(lr=1e-3, weight_decay=0.0, eps=1e-8)
    return Lamb([torch.zeros(2, requires_grad=True)], **{**args, **kw})


@pytest.mark.parametrize("betas", [(0.0, 0.0), (0.0, 0.999), (0.9, 0.0), (0.999999, 0.999999)])
def test_lamb_accepts_betas_in_the_half_open_unit_interval(betas):
    assert _lamb(betas=betas).param_groups[0]["betas"] == betas


@pytest.mark.parametrize("betas", [(1.0, 0.5), (0.5, 1.0), (1.5, 0.5), (0.5, 1.5), (-0.1, 0.5), (0.5, -0.1)])
def test_lamb_rejects_each_beta_outside_the_half_open_unit_interval(betas):
    with pytest.raises(ValueError, match=r"^betas=\(.*\) must be in \[0, 1\)$"):
        _lamb(betas=betas)


def test_lamb_accepts_zero_weight_decay_and_rejects_negative():
    _lamb(weight_decay=0.0)
    with pytest.raises(ValueError, match="^weight_decay=-0.1 must be >= 0$"):
        _lamb(weight_decay=-0.1)


def test_lamb_trust_ratio_is_one_when_the_update_is_zero():
    """phi(||w||) / ||r|| with ||r|| = 0 (zero gradient, no decay) is taken as 1, so the step is
    the (zero) update itself, not 0 / 0."""
    w = torch.tensor([3.0, -4.0], requires_grad=True)
    opt = Lamb([w], lr=0.1, weight_decay=0.0, eps=1e-8, always_adapt=True)
    w.grad = torch.zeros(2)
    opt.step()
    assert torch.equal(w.detach(), torch.tensor([3.0, -4.0]))


def test_odt_optimises_with_lamb_at_the_official_betas_and_eps():
    """The official code: timm's Lamb with its default betas (0.9, 0.999), eps 1e-8, the paper's
    learning rate and weight decay."""
    import gymnasium as gym

    from odt.config import make_config
    from odt.train import ODTTrainer

    cfg = make_config("hopper-medium", "online", "smoke", {"seed": 0})
    trainer = ODTTrainer(cfg, toy_trajectories([30, 40], obs_dim=11, act_dim=3), lambda: gym.make("Hopper-v5"),
                         progress=False)
    group = trainer.optimizer.param_groups[0]
    assert isinstance(trainer.optimizer, Lamb)
    assert (group["betas"], group["eps"]) == ((0.9, 0.999), 1e-8)
    assert (group["initial_lr"], group["weight_decay"]) == (cfg.optim.lr, cfg.optim.weight_decay)
    trainer.close()
