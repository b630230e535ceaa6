"""The paper's equations and algorithm lines, each recomputed by hand on a tiny case.

Every test names what it checks in the paper (Zheng, Zhang & Grover, ICML 2022; numbering of
the arXiv LaTeX in shared/paper): Eq. 1 (DT's l2 loss), Eq. 2 (the Gaussian policy, squashed
by tanh here), Eq. 3 (the NLL J), Eq. 4 (the entropy H), Eq. 6 (min_theta J - lambda H),
Eq. 7 (min_lambda lambda (H - beta)), Algorithm 1 (top-N buffer, FIFO refresh), Algorithm 2
(length-proportional sampling, hindsight relabeling) and Algorithm 3 (uniform windows), the
evaluation rule g_{t+1} = g_t - r_t of section 2.2, LAMB (appendix C), and the baselines'
losses (IQL, SAC, DT).

The expected values are written from the definitions (plain Python / numpy, or torch used as
a calculator on copies of the networks), not by calling the function under test. Each test
is built so that a plausible wrong-math bug changes the number it compares: a missing tanh
Jacobian, the entropy term's sign, lambda moving the wrong way, RTG not decremented or not
scaled, an off-by-one in returns-to-go, sampling by count instead of length, the bottom N kept,
FIFO evicting the newest, LAMB's trust ratio inverted, and so on.
"""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import toy_trajectories
from torch import nn

from baselines.dt import dt_agent, dt_config
from baselines.iql import IQLAgent, iql_config
from baselines.sac import SACAgent, sac_config
from odt.buffer import TrajectoryBuffer
from odt.config import make_config
from odt.lamb import Lamb
from odt.objective import (
    deterministic_policy_loss,
    masked_mean,
    stochastic_policy_loss,
    temperature_loss,
)
from odt.policy import (
    DeterministicHead,
    GaussianHead,
    bounded_log_std,
    sample_squashed,
    squashed_action_log_prob,
    tanh_gaussian_log_prob,
)
from odt.relabel import commanded_returns_to_go, returns_to_go
from odt.rollout import Conditioning, run_episodes
from odt.sampling import sample_windows, trajectory_probabilities
from odt.train import ODTTrainer
from rlbase.trajectories import Trajectories

LOG_2PI = math.log(2.0 * math.pi)


# ----- shared helpers ------------------------------------------------------------------------
def log_normal(x: float, mu: float, sigma: float) -> float:
    return -0.5 * ((x - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * LOG_2PI


def squashed_log_prob_by_hand(u: float, mu: float, sigma: float) -> float:
    """log density of a = tanh(u), u ~ N(mu, sigma^2): log N(u) - log |da/du|, da/du = 1 - tanh(u)^2."""
    return log_normal(u, mu, sigma) - math.log(1.0 - math.tanh(u) ** 2)


class TinyEnv(gym.Env):
    """A deterministic environment whose every number is known by hand.

    obs_t = [t, 10 + t, -t], reward r_t = t + 1 (t = 0, 1, ...), terminated after ``horizon``
    steps; observations 3-dimensional, actions 2-dimensional in [-1, 1].
    """

    metadata: dict = {"render_modes": []}
    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self, horizon: int = 6):
        self.horizon, self.t = horizon, 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t, 10 + self.t, -self.t], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        reward = float(self.t + 1)
        self.t += 1
        return self._obs(), reward, self.t >= self.horizon, False, {}


def _episode(length: int, reward: float, tag: float) -> dict:
    return dict(observations=np.full((length, 3), tag, np.float32), actions=np.zeros((length, 2), np.float32),
                rewards=np.full(length, reward, np.float32), terminated=True)


def _odt_trainer(data: Trajectories, **overrides) -> ODTTrainer:
    base = {"model.dropout": 0.0, "device": "cpu", "optim.batch_size": 16}
    cfg = make_config("hopper-medium", "online", "smoke", {**base, **overrides})
    return ODTTrainer(cfg, data, TinyEnv, progress=False)


# ===== Eq. 2 and the tanh change of variables (odt/policy.py) ================================
def test_eq2_squashed_gaussian_log_prob_by_hand_includes_the_tanh_jacobian():
    """Eq. 2 with a = tanh(u): log pi(a) = sum_i [log N(u_i; mu_i, sigma_i) - log(1 - tanh(u_i)^2)]."""
    mu, log_std, u = [0.3, -1.1], [-0.5, 0.2], [0.9, -2.0]
    expected = sum(squashed_log_prob_by_hand(u[i], mu[i], math.exp(log_std[i])) for i in range(2))
    without_jacobian = sum(log_normal(u[i], mu[i], math.exp(log_std[i])) for i in range(2))
    assert abs(expected - without_jacobian) > 1.0  # the Jacobian matters at this point
    t = lambda x: torch.tensor([x], dtype=torch.float64)  # noqa: E731
    got = tanh_gaussian_log_prob(t(u), t(mu), t(log_std)).item()
    assert got == pytest.approx(expected, abs=1e-9)
    # the NLL side reads the data action a, inverts the squashing, and gets the same number
    a = [math.tanh(x) for x in u]
    assert squashed_action_log_prob(t(a), t(mu), t(log_std)).item() == pytest.approx(expected, abs=1e-6)


def test_eq2_squashed_density_integrates_to_one_over_the_action_interval():
    """A density in a = tanh(u) must integrate to 1 over (-1, 1); without the Jacobian it does not."""
    mu, sigma = 0.4, 0.6
    a = np.linspace(-1 + 1e-7, 1 - 1e-7, 400_001)
    u = torch.atanh(torch.as_tensor(a, dtype=torch.float64))[:, None]
    logp = tanh_gaussian_log_prob(u, torch.full_like(u, mu), torch.full_like(u, math.log(sigma)))
    total = float(np.trapezoid(np.exp(logp.numpy()), a))
    assert total == pytest.approx(1.0, abs=2e-3)
    no_jacobian = np.exp(-0.5 * ((u.numpy()[:, 0] - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    assert abs(float(np.trapezoid(no_jacobian, a)) - 1.0) > 0.1


def test_sec33_mean_action_is_the_squashed_mean_and_log_std_is_bounded():
    """Sec. 3.3: two separate linear layers for mean and log-std; evaluation uses the mean action
    tanh(mu) (inside the action box), exploration samples a = tanh(mu + sigma eps)."""
    head = GaussianHead(4, 2, log_std_min=-5.0, log_std_max=2.0)
    assert head.mean is not head.log_std and isinstance(head.mean, nn.Linear)
    mu = torch.tensor([[3.0, -0.2]])
    torch.testing.assert_close(GaussianHead.mean_action((mu, torch.zeros(1, 2))), torch.tanh(mu))
    raw = torch.tensor([-1e4, 0.0, 1e4])
    torch.testing.assert_close(bounded_log_std(raw, -5.0, 2.0), torch.tensor([-5.0, -1.5, 2.0]))
    gen = torch.Generator().manual_seed(0)
    a, _ = sample_squashed(torch.zeros(1000, 2), torch.zeros(1000, 2), generator=gen)
    assert a.abs().max() < 1.0 and a.std() > 0.3


# ===== Eqs. 3, 4 and 6: the policy objective (odt/objective.py) ==============================
def test_eq3_eq4_eq6_policy_loss_is_nll_minus_lambda_times_one_sample_entropy_by_hand():
    """Eq. 6: loss = J - lambda H with J = -(1/K) sum_k log pi(a_k) (Eq. 3) and the one-sample
    reparameterised estimate H = -(1/K) sum_k log pi(a~_k), a~_k = tanh(mu + sigma eps) (Eq. 4),
    both over the valid positions of the window (the last one is padding)."""
    mean = torch.tensor([[[0.1, -0.4], [0.7, 0.0], [-0.3, 0.2]]], dtype=torch.float64)
    log_std = torch.tensor([[[-0.2, -1.0], [0.1, -0.5], [0.0, 0.0]]], dtype=torch.float64)
    actions = torch.tensor([[[0.5, -0.9], [0.2, 0.3], [0.99, 0.99]]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    lam = 0.37

    torch.manual_seed(11)
    eps = torch.randn(mean.shape, dtype=torch.float64)  # the draw sample_squashed makes
    valid = [0, 1]
    nll = -sum(squashed_log_prob_by_hand(math.atanh(actions[0, k, i].item()), mean[0, k, i].item(),
                                         math.exp(log_std[0, k, i].item()))
               for k in valid for i in range(2)) / len(valid)
    u = mean + log_std.exp() * eps
    entropy = -sum(squashed_log_prob_by_hand(u[0, k, i].item(), mean[0, k, i].item(), math.exp(log_std[0, k, i].item()))
                   for k in valid for i in range(2)) / len(valid)

    torch.manual_seed(11)
    terms = stochastic_policy_loss(mean, log_std, actions, mask, torch.tensor(lam, dtype=torch.float64))
    assert terms.nll.item() == pytest.approx(nll, abs=1e-6)
    assert terms.entropy.item() == pytest.approx(entropy, abs=1e-9)
    assert terms.loss.item() == pytest.approx(nll - lam * entropy, abs=1e-6)  # minus: entropy is rewarded


def test_eq6_lambda_is_held_fixed_in_the_policy_step():
    """Eq. 6 optimises theta with lambda fixed: the policy loss sends no gradient to log(lambda),
    and its gradient in the log-std is that of J - lambda H (more entropy, lower loss)."""
    log_lambda = torch.tensor(math.log(0.5), requires_grad=True)
    mean = torch.zeros(1, 4, 2)
    log_std = torch.full((1, 4, 2), -3.0, requires_grad=True)  # sigma = 0.05: |sigma eps| stays small
    actions = torch.zeros(1, 4, 2)  # the NLL's optimum is at the smallest std; the entropy pulls up
    mask = torch.ones(1, 4, dtype=torch.bool)
    terms = stochastic_policy_loss(mean, log_std, actions, mask, log_lambda.exp())
    terms.loss.backward()
    assert log_lambda.grad is None or log_lambda.grad.abs().item() == 0.0
    grad_with_entropy = log_std.grad.clone()
    log_std.grad = None
    stochastic_policy_loss(mean, log_std, actions, mask, torch.tensor(0.0)).loss.backward()
    # at a = 0 (u = 0) the NLL gradient in each log_std is +1 / K; the one-sample entropy's is
    # (1 - 2 x tanh x) / K with x = sigma eps, positive for small sigma, and it enters with -lambda
    torch.testing.assert_close(log_std.grad, torch.full_like(log_std, 1 / 4))
    assert (grad_with_entropy < log_std.grad).all()


# ===== Eq. 7: the dual step on lambda ==========================================================
@pytest.mark.parametrize("entropy,beta", [(-5.0, -3.0), (-1.0, -3.0)])
def test_eq7_temperature_gradient_is_lambda_times_entropy_minus_target(entropy, beta):
    """Eq. 7: min_lambda lambda (H - beta), optimised in log(lambda): d/dlog(lambda) = lambda (H - beta).
    One SGD step: log(lambda) -= eta lambda (H - beta), so lambda rises iff H < beta."""
    lam0, eta = 0.2, 0.5
    log_lambda = torch.tensor(math.log(lam0), dtype=torch.float64, requires_grad=True)
    temperature_loss(log_lambda, torch.tensor(entropy, dtype=torch.float64), beta).backward()
    assert log_lambda.grad.item() == pytest.approx(lam0 * (entropy - beta))
    new_lam = math.exp(math.log(lam0) - eta * log_lambda.grad.item())
    assert (new_lam > lam0) == (entropy < beta)


@pytest.mark.parametrize("beta", [50.0, -50.0])
def test_eq6_eq7_trainer_update_uses_lambda_before_its_step_and_moves_it_the_right_way(beta):
    """One ODTTrainer.update (Alg. 2 line 8): the policy loss is J - lambda H with the current
    lambda; then one Adam step on log(lambda) (appendix C) on lambda (H - beta): its first step
    is -lr * sign(gradient), so lambda grows by exp(lr) when H < beta, shrinks when H > beta."""
    lr = 0.01
    trainer = _odt_trainer(toy_trajectories([7, 3, 9, 5], obs_dim=3, act_dim=2),
                           **{"optim.lambda_lr": lr, "optim.target_entropy": beta})
    lam0 = trainer.lam
    m = trainer.update(trainer.batch_tensors(trainer.buffer))
    assert m["loss"] == pytest.approx(m["nll"] - lam0 * m["entropy"], rel=1e-5, abs=1e-5)
    assert abs(m["entropy"]) < 20  # so beta = +-50 is surely above / below it
    expected = lam0 * math.exp(lr if m["entropy"] < beta else -lr)
    assert m["lambda"] == pytest.approx(expected, rel=1e-5)
    trainer.close()


# ===== Returns-to-go and hindsight relabeling (odt/relabel.py) ===============================
def test_sec21_returns_to_go_by_double_loop_and_alg2_line6_end_points():
    """Sec. 2.1: g_t = sum_{t'=t}^{|tau|} r_t' per trajectory; Sec. 2.2: g_1 is the trajectory's
    return; Sec. 3.3 (Alg. 2 line 6): the last token g_|tau| is exactly r_|tau|."""
    rng = np.random.default_rng(3)
    lengths = np.array([1, 4, 2, 7, 3])
    rewards = rng.normal(size=lengths.sum()).astype(np.float32)
    expected, start = [], 0
    for n in lengths:
        r = [float(x) for x in rewards[start:start + n]]
        expected += [sum(r[t:]) for t in range(n)]
        start += n
    got = returns_to_go(rewards, lengths)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    ends = np.cumsum(lengths) - 1
    starts = ends - lengths + 1
    np.testing.assert_allclose(got[ends], rewards[ends], rtol=1e-6)  # g_|tau| = r_|tau| (no off-by-one)
    np.testing.assert_allclose(got[starts], [rewards[s:e + 1].sum() for s, e in zip(starts, ends)], rtol=1e-5)


def test_sec22_commanded_rtg_equals_relabeled_rtg_when_the_command_is_the_achieved_return():
    """Sec. 2.2's g_{t+1} = g_t - r_t started at g_1 = R(tau) is the hindsight label of Alg. 2 line 6;
    started at any other g_1 it differs by the constant g_1 - R(tau) (what relabeling corrects)."""
    rewards = np.array([2.0, 0.5, 3.0, 1.5], np.float32)
    achieved = float(rewards.sum())
    relabeled = returns_to_go(rewards, np.array([4]))
    np.testing.assert_allclose(commanded_returns_to_go(achieved, rewards), relabeled, rtol=1e-6)
    np.testing.assert_allclose(commanded_returns_to_go(100.0, rewards) - relabeled, 100.0 - achieved, rtol=1e-6)


def test_rtg_tokens_are_float32_roundings_of_exact_sums_over_long_trajectories():
    """The model reads float32 RTG tokens (Sec. 2.1's g_t); each must be the float32 rounding of
    the exact suffix sum, not a float32 running sum, whose error grows with the trajectory. The
    reference sums the rewards from the end (a reversed float64 cumulative sum), not the code's
    prefix differences. Also: no trajectory in, no token out; tokens are float32 in both modes."""
    rng = np.random.default_rng(4)
    lengths = np.array([30_000, 5, 20_000])
    rewards = rng.uniform(0.0, 5.0, size=lengths.sum()).astype(np.float32)
    expected, start = [], 0
    for n in lengths:
        r = rewards[start:start + n].astype(np.float64)
        expected.append(np.cumsum(r[::-1])[::-1])
        start += n
    expected = np.concatenate(expected).astype(np.float32)
    got = returns_to_go(rewards, lengths)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=2 ** -22, atol=0)  # at most about one float32 ulp
    commanded = commanded_returns_to_go(float(rewards[:30_000].astype(np.float64).sum()), rewards[:30_000])
    assert commanded.dtype == np.float32
    np.testing.assert_allclose(commanded, expected[:30_000], rtol=2 ** -22, atol=1e-6)
    empty = returns_to_go(np.zeros(0, np.float32), np.zeros(0, np.int64))
    assert empty.shape == (0,) and empty.dtype == np.float32


# ===== Sampling: Alg. 2 line 2 and Alg. 3 (odt/sampling.py) ==================================
def test_alg2_line2_trajectory_probability_is_length_over_total_length():
    """p(tau) = |tau| / sum |tau|, not 1 / (number of trajectories)."""
    np.testing.assert_allclose(trajectory_probabilities(np.array([2, 3, 5])), [0.2, 0.3, 0.5])
    np.testing.assert_allclose(trajectory_probabilities(np.array([1, 9])), [0.1, 0.9])


def test_alg3_every_step_is_an_equally_likely_window_start():
    """Alg. 3 lines 2 and 4: P(tau) |tau|^-1 = 1 / N for every step of every trajectory, so window
    starts are uniform over all N steps (sampling by count would favour the short trajectory)."""
    lengths = np.array([1, 3, 6])
    starts = np.array([0, 1, 4])
    n = 30_000
    idx = sample_windows(np.random.default_rng(5), starts, lengths, trajectory_probabilities(lengths), n, 4)
    counts = np.bincount(idx.flat[:, 0], minlength=10)
    expected = n / 10
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 27.88  # chi-square with 9 dof at p = 0.001
    # by count, step 0 (the length-1 trajectory) would get n/3 starts
    assert counts[0] < 1.2 * expected


def test_alg3_line5_windows_stay_in_their_trajectory_with_relabeled_rtg_and_right_padding():
    """Alg. 3 line 5: s, a, g = (x_t, ..., x_min(t+K-1, |tau|)) of one trajectory, with the
    hindsight RTGs of line 3; shorter windows are padded after the real steps and masked."""
    lengths = [3, 5, 2]
    episodes = []
    for i, n in enumerate(lengths):
        obs = np.array([[100 * i + t, 0, 0] for t in range(n)], np.float32)
        episodes.append(dict(observations=obs, actions=obs[:, :2] / 1000, terminated=True,
                             rewards=np.array([10 * i + t + 1 for t in range(n)], np.float32)))
    buf = TrajectoryBuffer(10, Trajectories.from_episodes(episodes))
    K = 4
    idx, batch = buf.sample(np.random.default_rng(2), 500, K)
    for b in range(500):
        first = int(batch["observations"][b, 0, 0])
        traj, t0 = divmod(first, 100)
        n = lengths[traj]
        rewards = [10 * traj + t + 1 for t in range(n)]
        valid = min(K, n - t0)
        np.testing.assert_array_equal(idx.mask[b], [k < valid for k in range(K)])
        for k in range(valid):
            assert batch["observations"][b, k, 0] == 100 * traj + t0 + k
            assert idx.timesteps[b, k] == t0 + k
            assert batch["rtg"][b, k] == pytest.approx(sum(rewards[t0 + k:]))


# ===== Alg. 1: the replay buffer (odt/buffer.py) ===============================================
def test_alg1_line2_top_n_by_return_then_line5_fifo_refresh():
    """Alg. 1 line 2: B <- the N trajectories of highest return (not the longest, not the bottom N).
    Line 5: B <- B minus its oldest trajectory, plus the new rollout (the newest is kept even when it
    has the lowest return). Returns here run against lengths, so a sort by length picks others."""
    returns = {0: 0.8, 1: 10.0, 2: 5.0, 3: 7.0, 4: 3.0}
    lengths = {0: 8, 1: 2, 2: 5, 3: 1, 4: 6}
    data = Trajectories.from_episodes([_episode(lengths[i], returns[i] / lengths[i], tag=i) for i in range(5)])
    buf = TrajectoryBuffer.from_offline(data, capacity=3, init="top")
    tags = lambda: [int(buf.data.observations[s, 0]) for s in buf.data.starts]  # noqa: E731
    assert tags() == [2, 3, 1]  # the top 3 by return, worst first (it is the oldest)
    np.testing.assert_allclose(buf.returns(), [5.0, 7.0, 10.0], rtol=1e-5)

    buf.add(_episode(4, 0.0, tag=50))  # a poor rollout: return 0
    assert tags() == [3, 1, 50]  # the oldest (2) left; the new, lowest-return one stays
    buf.add(_episode(3, 100.0 / 3, tag=60))
    assert tags() == [1, 50, 60]
    np.testing.assert_allclose(buf.probabilities(), np.array([2, 4, 3]) / 9)  # Alg. 2 line 2 on the refreshed B
    # the newest rollout carries its hindsight RTGs (Alg. 2 line 6)
    np.testing.assert_allclose(buf.rtg[-3:], [100.0, 200.0 / 3, 100.0 / 3], rtol=1e-5)


def test_alg1_line2_buffer_larger_than_the_dataset_holds_all_of_it():
    data = Trajectories.from_episodes([_episode(2, 1.0, 0), _episode(3, 2.0, 1)])
    buf = TrajectoryBuffer.from_offline(data, capacity=10, init="top")
    assert len(buf) == 2 and buf.capacity == 10
    buf.add(_episode(1, 0.0, 9))
    assert len(buf) == 3  # below capacity nothing is evicted


# ===== Sec. 2.2: what a rollout feeds the model (odt/rollout.py) ==============================
class RecordingModel(nn.Module):
    """Stands in for the transformer: records its inputs and acts 0.1 * (call number) in every
    dimension, so the actions fed back into the context are known."""

    def __init__(self, obs_dim: int, act_dim: int, max_ep_len: int = 100):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(()))
        self.cfg = SimpleNamespace(max_ep_len=max_ep_len)
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.head = DeterministicHead(1, act_dim)
        self.calls: list[tuple[torch.Tensor, ...]] = []

    def forward(self, states, actions, rtg, timesteps):
        self.calls.append(tuple(x.detach().clone() for x in (states, actions, rtg, timesteps)))
        b, t, _ = states.shape
        return torch.full((b, t, self.act_dim), 0.1 * len(self.calls))


def test_sec22_rollout_decrements_scaled_rtg_normalises_states_and_truncates_the_context():
    """Sec. 2.2: g_1 = target, g_{t+1} = g_t - r_t (tokens are g / rtg_scale); states enter as
    (s - mean) / std; the model sees the last eval-context-length steps (appendix B); the
    action slot of the current step is still empty; timesteps are the step indices."""
    horizon, K, scale, target = 6, 3, 10.0, 50.0
    mean, std = np.array([1.0, 2.0, 3.0], np.float32), np.array([2.0, 4.0, 0.5], np.float32)
    model = RecordingModel(3, 2)
    envs = gym.vector.SyncVectorEnv([lambda: TinyEnv(horizon)])
    cond = Conditioning(target_return=target, rtg_scale=scale, state_mean=mean, state_std=std, context_len=K)
    result = run_episodes(model, envs, cond, seeds=[0], sample=False)
    envs.close()

    rewards = [t + 1.0 for t in range(horizon)]
    assert result.returns[0] == pytest.approx(sum(rewards)) and result.lengths[0] == horizon
    assert len(model.calls) == horizon
    for t, (states, actions, rtg, timesteps) in enumerate(model.calls):
        window = list(range(max(0, t - K + 1), t + 1))
        assert states.shape[1] == len(window)
        for k, j in enumerate(window):
            obs = np.array([j, 10 + j, -j], np.float32)
            np.testing.assert_allclose(states[0, k].numpy(), (obs - mean) / std, rtol=1e-6)
            g_j = (target - sum(rewards[:j])) / scale
            assert rtg[0, k, 0].item() == pytest.approx(g_j, abs=1e-5)
            assert timesteps[0, k].item() == j
            fed = 0.0 if j == t else 0.1 * (j + 1)  # earlier actions are the model's own
            np.testing.assert_allclose(actions[0, k].numpy(), [fed, fed], atol=1e-6)
    np.testing.assert_allclose(result.episodes[0]["actions"][:, 0], [0.1 * (t + 1) for t in range(horizon)], rtol=1e-5)


# ===== Alg. 2 line 7: the batch the trainer assembles (odt/train.py) ==========================
def test_alg2_batch_tensors_normalise_states_scale_rtg_clip_timesteps_and_mask():
    """ODTTrainer.batch_tensors: states (s - mean) / std with the dataset's mean and std (+1e-6,
    DT's convention), RTG tokens g / rtg_scale with g the suffix sum of rewards, timesteps clipped
    at max_ep_len - 1, mask True exactly at real steps."""
    data = toy_trajectories([7, 3, 9], obs_dim=3, act_dim=2, seed=4)
    trainer = _odt_trainer(data, **{"model.max_ep_len": 4, "rtg_scale": 10.0, "optim.batch_size": 64})
    rng = np.random.default_rng()
    rng.bit_generator.state = trainer.rng.bit_generator.state
    idx, _ = trainer.buffer.sample(rng, 64, trainer.cfg.model.context_len)
    batch = trainer.batch_tensors(trainer.buffer)
    trainer.close()

    obs = data.observations.astype(np.float64)
    mean, std = obs.mean(axis=0), obs.std(axis=0) + 1e-6
    where = {}  # flat index -> (trajectory, step), and each step's RTG, by loops
    rtg = {}
    flat = 0
    for i, n in enumerate(data.lengths):
        r = data.rewards[flat:flat + n].astype(np.float64)
        for t in range(n):
            where[flat + t] = (i, t)
            rtg[flat + t] = r[t:].sum()
        flat += n
    for b in range(64):
        for k in range(trainer.cfg.model.context_len):
            f = int(idx.flat[b, k])
            assert bool(batch["mask"][b, k]) == bool(idx.mask[b, k])
            if not idx.mask[b, k]:
                continue
            _, t = where[f]
            np.testing.assert_allclose(batch["states"][b, k].numpy(), (obs[f] - mean) / std, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(batch["actions"][b, k].numpy(), data.actions[f], rtol=1e-6)
            assert batch["rtg"][b, k, 0].item() == pytest.approx(rtg[f] / 10.0, rel=1e-5)
            assert batch["timesteps"][b, k].item() == min(t, 3)
    assert batch["timesteps"].max().item() == 3  # long trajectories were clipped


# ===== Eq. 1: DT's loss (baselines/dt.py through the shared trainer) ==========================
def test_eq1_dt_loss_is_the_mean_squared_error_over_valid_steps_and_action_entries():
    """Eq. 1: (1/K) sum_k (a_k - pi_DT(s, g)_k)^2 over the valid steps of the window, the square of
    an action vector taken as the mean over its entries as the official DT/ODT code does (the
    squared norm would be act_dim times larger); DT's head is deterministic (no entropy, no lambda)."""
    data = toy_trajectories([6, 4, 8], obs_dim=3, act_dim=2, seed=1)
    cfg = dt_config("hopper-medium", "smoke", overrides={"model.dropout": 0.0, "device": "cpu", "optim.batch_size": 8})
    trainer = dt_agent(cfg, data, TinyEnv, progress=False)
    batch = trainer.batch_tensors(trainer.buffer)
    with torch.no_grad():
        pred = trainer.model(batch["states"], batch["actions"], batch["rtg"], batch["timesteps"]).double()
    act, mask = batch["actions"].double(), batch["mask"]
    per_step = ((pred - act) ** 2).sum(-1) / act.shape[-1]
    expected = sum(per_step[b, k].item() for b in range(8) for k in range(per_step.shape[1]) if mask[b, k]) / int(mask.sum())
    m = trainer.update(batch)
    trainer.close()
    assert m["loss"] == pytest.approx(expected, rel=1e-5)
    assert "lambda" not in m and "entropy" not in m
    assert pred.abs().max() < 1.0  # tanh head


# ===== LAMB (appendix C; odt/lamb.py) ==========================================================
def test_lamb_one_and_two_steps_by_hand_with_weight_decay_and_the_trust_ratio():
    """LAMB (You et al. 2019, Alg. 2): m, v Adam moments with bias correction; r = m^/(sqrt(v^)+eps)
    + wd w; w <- w - lr ||w|| / ||r|| r (ratio 1 when a norm is 0). Plain-python floats."""
    lr, b1, b2, eps, wd = 0.1, 0.9, 0.999, 1e-6, 0.1
    w, z = [3.0, -4.0], [0.0, 0.0]
    grads = [([0.5, -2.0], [1.0, -1.0]), ([1.0, 1.0], [0.5, 0.5])]
    p = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    q = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    opt = Lamb([p, q], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)

    def norm(x):
        return math.sqrt(sum(v * v for v in x))

    state = {id(w): ([0.0, 0.0], [0.0, 0.0]), id(z): ([0.0, 0.0], [0.0, 0.0])}
    for step, (gw, gz) in enumerate(grads, start=1):
        for x, g in ((w, gw), (z, gz)):
            m, v = state[id(x)]
            m[:] = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
            v[:] = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
            r = [(mi / (1 - b1**step)) / (math.sqrt(vi / (1 - b2**step)) + eps) + wd * xi
                 for mi, vi, xi in zip(m, v, x)]
            trust = norm(x) / norm(r) if norm(x) > 0 and norm(r) > 0 else 1.0
            x[:] = [xi - lr * trust * ri for xi, ri in zip(x, r)]
        p.grad, q.grad = torch.tensor(gw, dtype=torch.float64), torch.tensor(gz, dtype=torch.float64)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-10)
        np.testing.assert_allclose(q.detach().numpy(), z, rtol=1e-10, atol=1e-12)
    # after step 1 the trust ratio was ||w|| / ||r|| = 5 / ||(1.3, -1.4)|| ~ 2.6, far from its inverse
    assert w[0] < 3.0 - 0.3


def test_lamb_without_weight_decay_takes_adams_bias_corrected_step():
    """LAMB as in the official ODT code (timm's, always_adapt=False): with weight decay 0 (the
    paper's AntMaze rows) there is no trust ratio: w <- w - lr m^ / (sqrt(v^) + eps)."""
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-6
    p = torch.tensor([3.0, -4.0], dtype=torch.float64, requires_grad=True)
    opt = Lamb([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=0.0)
    w, m, v = [3.0, -4.0], [0.0, 0.0], [0.0, 0.0]
    for step, g in enumerate(([0.5, -2.0], [1.0, 1.0]), start=1):
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
        w = [wi - lr * (mi / (1 - b1**step)) / (math.sqrt(vi / (1 - b2**step)) + eps) for wi, mi, vi in zip(w, m, v)]
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-10)


# ===== IQL (Kostrikov et al. 2022; baselines/iql.py) ==========================================
@pytest.mark.parametrize("q_shift", [0.0, 5.0])
def test_iql_update_value_actor_and_critic_losses_by_hand(q_shift):
    """One IQLAgent.update against its definitions, on copies of the networks:
    L_V = mean |tau - 1(u < 0)| u^2, u = min(Q1', Q2')(s, a) - V(s);
    L_pi = -mean min(exp(beta (min Q'(s, a) - V_new(s))), 100) log N(a; tanh(mu(s)), sigma^2);
    L_Q = sum_i mean (Q_i(s, a) - (r + gamma (1 - d) V_new(s')))^2; Q' <- (1 - tau) Q' + tau Q.
    q_shift raises the target critic so every advantage weight hits the clip at 100."""
    data = toy_trajectories([6, 9, 4, 7], obs_dim=3, act_dim=2, seed=2)  # odd trajectories end terminal
    cfg = iql_config("hopper-medium", "smoke", overrides={"device": "cpu"})
    agent = IQLAgent(cfg, data, TinyEnv, progress=False)
    with torch.no_grad():
        for head in (agent.target_critic.q1, agent.target_critic.q2):
            head[-1].bias += q_shift
    arrays = agent.buffer.arrays
    dones = torch.nonzero(arrays["dones"][: agent.buffer.size] > 0).flatten()
    rows = torch.cat([dones, torch.tensor([0, 1, 2, 7, 8, 11])])  # terminals and non-terminals
    batch = {k: v[rows].clone() for k, v in arrays.items()}
    assert batch["dones"].sum() >= 2 and (batch["dones"] == 0).sum() >= 6
    actor0, critic0 = copy.deepcopy(agent.actor), copy.deepcopy(agent.critic)
    target0, value0 = copy.deepcopy(agent.target_critic), copy.deepcopy(agent.value)

    m = agent.update(batch)

    obs, act = batch["observations"], batch["actions"]
    with torch.no_grad():
        q_t = torch.minimum(*target0(obs, act))
        u = q_t - value0(obs)
        value_loss = (torch.abs(cfg.expectile - (u < 0).float()) * u**2).mean()
        v_new = agent.value(obs)
        weights = torch.exp(cfg.temperature * (q_t - v_new)).clamp(max=100.0)
        mu = torch.tanh(actor0.net(obs))
        sigma = actor0.log_std.clamp(cfg.log_std_min, cfg.log_std_max).exp()
        log_pi = (-0.5 * ((act - mu) / sigma) ** 2 - sigma.log() - 0.5 * LOG_2PI).sum(-1)
        actor_loss = -(weights * log_pi).mean()
        y = batch["rewards"] + cfg.discount * (1 - batch["dones"]) * agent.value(batch["next_observations"])
        q1, q2 = critic0(obs, act)
        q_loss = ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()
    assert bool((weights == 100.0).all()) == (q_shift > 0) and bool((weights < 100.0).all()) == (q_shift == 0)
    assert m["value_loss"] == pytest.approx(value_loss.item(), rel=1e-5)
    assert m["advantage_mean"] == pytest.approx((q_t - v_new).mean().item(), rel=1e-5, abs=1e-6)
    assert m["weight_mean"] == pytest.approx(weights.mean().item(), rel=1e-5)
    assert m["actor_loss"] == pytest.approx(actor_loss.item(), rel=1e-5)
    assert m["q_loss"] == pytest.approx(q_loss.item(), rel=1e-5)
    for p0, p, tp in zip(target0.parameters(), agent.critic.parameters(), agent.target_critic.parameters()):
        torch.testing.assert_close(tp, (1 - cfg.tau) * p0 + cfg.tau * p)
    agent.close()


# ===== SAC (Haarnoja et al. 2018; baselines/sac.py) ===========================================
@pytest.mark.parametrize("target_entropy", [50.0, -50.0])
def test_sac_update_target_actor_and_temperature_by_hand(target_entropy):
    """One SACAgent.update against its definitions: y = r + gamma (1 - terminated) (min_i Q'_i(s', a')
    - alpha log pi(a'|s')) with a' ~ pi(s') (a truncated step still bootstraps); L_Q = 1/2 sum_i
    mean (Q_i - y)^2; L_pi = mean(alpha log pi(a~|s) - min_i Q_i(s, a~)) with the updated critic;
    L_alpha = -log(alpha) mean(log pi + H_target), whose first Adam step raises alpha iff the
    entropy estimate is below the target."""
    cfg = sac_config("hopper-medium", "smoke", overrides={"target_entropy": target_entropy})
    agent = SACAgent(cfg, TinyEnv, progress=False)
    rng = np.random.default_rng(0)
    B = 6
    batch = {"observations": rng.normal(size=(B, 3)).astype(np.float32),
             "actions": rng.uniform(-1, 1, size=(B, 2)).astype(np.float32),
             "rewards": np.array([1.0, -2.0, 0.5, 3.0, 0.0, 1.5], np.float32),
             "next_observations": rng.normal(size=(B, 3)).astype(np.float32),
             "terminated": np.array([0, 1, 0, 0, 1, 0], bool),
             "truncated": np.array([0, 0, 1, 0, 0, 0], bool)}
    actor0, critic0, target0 = (copy.deepcopy(x) for x in (agent.actor, agent.critic, agent.critic_target))
    log_alpha0 = agent.log_alpha.item()
    alpha = math.exp(log_alpha0)

    torch.manual_seed(123)
    m = agent.update(batch)
    torch.manual_seed(123)
    eps_next, eps_now = torch.randn(B, 2), torch.randn(B, 2)  # the two draws update() makes, in order

    def sample(actor, obs, eps):
        mean, log_std = actor.dist_params(obs)
        u = mean + log_std.exp() * eps
        logp = torch.tensor([sum(squashed_log_prob_by_hand(u[b, i].item(), mean[b, i].item(), log_std[b, i].exp().item())
                                 for i in range(2)) for b in range(B)])
        return torch.tanh(u), logp

    t = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in batch.items()}
    with torch.no_grad():
        a_next, logp_next = sample(actor0, t["next_observations"], eps_next)
        next_q = target0(t["next_observations"], a_next).min(dim=0).values
        y = t["rewards"] + cfg.gamma * (1 - t["terminated"]) * (next_q - alpha * logp_next)
        q = critic0(t["observations"], t["actions"])
        critic_loss = 0.5 * sum(((q[i] - y) ** 2).mean() for i in range(2))
        a_now, logp_now = sample(actor0, t["observations"], eps_now)
        actor_loss = (alpha * logp_now - agent.critic(t["observations"], a_now).min(dim=0).values).mean()
    assert m["critic_loss"] == pytest.approx(critic_loss.item(), rel=1e-4)
    assert m["actor_loss"] == pytest.approx(actor_loss.item(), rel=1e-4, abs=1e-5)
    entropy = -logp_now.mean().item()
    assert m["entropy"] == pytest.approx(entropy, rel=1e-4)
    grad = -(logp_now.mean().item() + target_entropy)  # d L_alpha / d log(alpha) = H_est - H_target
    expected_log_alpha = log_alpha0 - cfg.alpha_lr * math.copysign(1.0, grad)
    assert agent.log_alpha.item() == pytest.approx(expected_log_alpha, abs=1e-6)
    assert (agent.alpha > alpha) == (entropy < target_entropy)
    agent.close()


# ===== Gaps found by mutation testing (tests/MUTATION.md), each from a definition ================
def test_eq5_average_over_valid_positions_with_one_or_none_valid():
    """The 1/K average of eq. 5 runs over the valid (unpadded) positions only: with one valid
    position it is that position's value; with none it is 0, not NaN."""
    values = torch.tensor([[4.0, -7.0, 9.0], [1.5, 2.5, 3.5]])
    one = torch.tensor([[False, False, False], [False, True, False]])
    assert masked_mean(values, one).item() == 2.5
    assert masked_mean(values, torch.zeros_like(one)).item() == 0.0


def test_dt_loss_is_the_mean_squared_action_error_with_no_entropy_term():
    """DT's objective (Sec. 2.2): the squared error of the predicted actions averaged over the
    valid positions and action entries; it has no entropy term, reported as a zero tensor."""
    predicted = torch.tensor([[[1.0, 2.0], [0.0, 0.0]], [[3.0, -1.0], [5.0, 5.0]]])
    actions = torch.tensor([[[0.0, 0.0], [9.0, 9.0]], [[1.0, 1.0], [5.0, 4.0]]])
    mask = torch.tensor([[True, False], [True, True]])
    # valid positions: (1^2+2^2)/2 = 2.5, (2^2+2^2)/2 = 4, (0+1)/2 = 0.5 -> mean 7/3
    terms = deterministic_policy_loss(predicted, actions, mask)
    assert terms.loss.item() == pytest.approx(7.0 / 3.0)
    assert isinstance(terms.entropy, torch.Tensor) and terms.entropy.shape == () and terms.entropy.item() == 0.0


def test_alg3_padded_positions_carry_timestep_zero_and_real_ones_their_step_in_the_episode():
    """What the batch feeds the model: a window that runs past its trajectory's end is padded,
    and padded positions carry timestep 0 (the official code's padding); real positions carry
    their step index within the episode."""
    lengths = np.array([2, 3])
    starts = np.array([0, 2])
    windows = sample_windows(np.random.default_rng(0), starts, lengths, np.array([0.5, 0.5]), 64, 6)
    assert (~windows.mask).any(axis=1).all()  # K = 6 exceeds every trajectory
    assert (windows.timesteps[~windows.mask] == 0).all()
    traj = (windows.flat[:, :1] >= 2).astype(int)  # which trajectory each window came from
    np.testing.assert_array_equal(windows.timesteps[windows.mask], (windows.flat - starts[traj])[windows.mask])


def test_appendix_f_return_proportional_sampling():
    """Appendix F's alternative: p(tau) proportional to its return, shifted so the lowest
    return (or 0, if all are positive) gets a tiny positive weight; no returns, a clear error."""
    eps = 1e-6
    for returns, shifted in (([0.0, 1.0, 3.0], [0.0, 1.0, 3.0]), ([-2.0, 1.0, 3.0], [0.0, 3.0, 5.0])):
        weights = np.array(shifted) + eps
        p = trajectory_probabilities(np.array([5, 5, 5]), np.array(returns), strategy="return")
        np.testing.assert_allclose(p, weights / weights.sum(), rtol=1e-12)
        assert (p > 0).all()
    with pytest.raises(ValueError, match="^return-proportional sampling needs the trajectory returns$"):
        trajectory_probabilities(np.array([5, 5]), None, strategy="return")
