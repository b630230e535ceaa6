"""SAC: the math against torch.distributions, the buffer, a learning signal, exact resume."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from baselines.interface import Agent
from baselines.metrics import READ_EVERY_UPDATES
from baselines.nets import TwinQ, squashed_gaussian_log_prob
from baselines.sac import (
    ReplayBuffer,
    SACAgent,
    SACConfig,
    polyak_update,
    sac_config,
    td_target,
)
from rlbase.config import ConfigError
from rlbase.training import TrainingDiverged


class TargetBandit(gym.Env):
    """One-step episodes: reward -(a - 0.5)^2 per dim. The optimal mean action is 0.5."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(2, np.float32), {}

    def step(self, action):
        return np.ones(2, np.float32), -float(((np.asarray(action) - 0.5) ** 2).sum()), True, False, {}


def test_squashed_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    mean, log_std = torch.randn(64, 3), torch.randn(64, 3).clamp(-2, 1)
    u = mean + log_std.exp() * torch.randn(64, 3)
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()), [torch.distributions.TanhTransform()])
    expected = dist.log_prob(torch.tanh(u).clamp(-1 + 1e-6, 1 - 1e-6)).sum(-1)
    ok = torch.tanh(u).abs().max(-1).values < 0.999  # where atanh(tanh(u)) is well conditioned
    torch.testing.assert_close(squashed_gaussian_log_prob(u, mean, log_std)[ok], expected[ok], rtol=1e-4, atol=1e-3)


def test_td_target_numbers():
    r, term = torch.tensor([1.0, 1.0]), torch.tensor([0.0, 1.0])
    q, logp = torch.tensor([10.0, 10.0]), torch.tensor([-2.0, -2.0])
    torch.testing.assert_close(td_target(r, term, q, logp, 0.5, 0.9), torch.tensor([1 + 0.9 * 11.0, 1.0]))


def test_polyak_update_moves_by_tau():
    a, b = TwinQ(3, 1, 8, 1, batched=True), TwinQ(3, 1, 8, 1, batched=True)
    before = [p.clone() for p in a.parameters()]
    polyak_update(a, b, 0.25)
    for p0, p, q in zip(before, a.parameters(), b.parameters()):
        torch.testing.assert_close(p, 0.75 * p0 + 0.25 * q)


@pytest.mark.parametrize("batched", [True, False])
def test_twin_critics_are_independent_members(batched):
    q = TwinQ(3, 2, 16, 2, batched=batched)
    out = q(torch.randn(5, 3), torch.randn(5, 2))
    assert out.shape == (2, 5) and not torch.allclose(out[0], out[1])


def test_batched_twin_critics_compute_what_two_separate_mlps_do():
    """The batched layout is the pair layout's math: copy its weights into two MLPs and compare."""
    batched, pair = TwinQ(3, 2, 16, 2, batched=True), TwinQ(3, 2, 16, 2)
    with torch.no_grad():
        for member, mlp in enumerate((pair.q1, pair.q2)):
            linears = [m for m in mlp if isinstance(m, torch.nn.Linear)]
            ensembles = [m for m in batched.net if not isinstance(m, torch.nn.ReLU)]
            for linear, ens in zip(linears, ensembles, strict=True):
                linear.weight.copy_(ens.weight[member].T)
                linear.bias.copy_(ens.bias[member, 0])
    obs, act = torch.randn(7, 3), torch.randn(7, 2)
    torch.testing.assert_close(batched(obs, act), pair(obs, act))


def test_replay_buffer_is_fifo_and_ordered():
    buf = ReplayBuffer(1, 1, capacity=4)
    for i in range(6):
        buf.add([i], [0.0], float(i), [i + 1], False, i == 5)
    assert buf.size == 4
    np.testing.assert_array_equal(buf.ordered()["rewards"], [2, 3, 4, 5])
    assert buf.ordered()["truncated"].tolist() == [False, False, False, True]
    other = ReplayBuffer(1, 1, capacity=4)
    other.load_state_dict(buf.state_dict())
    np.testing.assert_array_equal(other.ordered()["observations"], buf.ordered()["observations"])


def test_presets_and_config_errors():
    assert sac_config("hopper-medium", "paper").online_samples == 200_000
    paper = sac_config("hopper-medium", "paper")
    assert (paper.actor_lr, paper.batch_size, paper.gamma, paper.tau, paper.hidden_dim, paper.buffer_size) == \
        (3e-4, 256, 0.99, 0.005, 256, 1_000_000)
    assert (sac_config("hopper-medium", "cpu").online_samples, sac_config("hopper-medium", "cpu").warmup_steps) == (5_000, 125)
    assert sac_config("hopper-medium", "smoke", overrides={"seed": 3}).seed == 3
    with pytest.raises(ConfigError, match="unknown preset 'gpu'"):
        sac_config("hopper-medium", "gpu")
    with pytest.raises(ConfigError, match="tau"):
        sac_config("hopper-medium", "smoke", overrides={"tau": 2.0})
    with pytest.raises(ConfigError):
        sac_config("hopper-medium", "smoke", overrides={"nope": 1})


def test_initial_temperature_is_the_cited_implementations_and_the_forge_keeps_its_own():
    # pytorch_sac (cited by the paper for SAC) starts at alpha 0.1; the forge made every dataset at 1.0
    from benchmarks.datasets.forge import _sac
    from benchmarks.datasets.forge_base import ForgeConfig
    from benchmarks.datasets.registry import get_spec

    assert sac_config("hopper-medium", "paper").init_alpha == 0.1
    assert sac_config("hopper-medium", "cpu").init_alpha == 0.1
    agent = _sac(get_spec("hopper-medium"), ForgeConfig("hopper-medium", sac_overrides={"buffer_size": 1000}), progress=False)
    assert agent.cfg.init_alpha == 1.0 and agent.alpha == pytest.approx(1.0)


def _small(**kw) -> SACConfig:
    base = dict(online_samples=600, warmup_steps=100, batch_size=32, hidden_dim=32, eval_every=300,
                eval_episodes=2, checkpoint_every=150, seed=0)
    return SACConfig(**{**base, **kw})


def test_a_nan_loss_stops_sac_within_one_read_interval():
    """SAC reads its metrics every READ_EVERY_UPDATES updates: a NaN reward in every batch from
    update 3 on raises TrainingDiverged by the next read."""
    agent = SACAgent(_small(online_samples=2000, warmup_steps=0, eval_every=2000, checkpoint_every=2000),
                     TargetBandit, progress=False)
    sample = agent.buffer.sample

    def poisoned(rng, n):
        batch = sample(rng, n)
        if agent.counters.updates >= 3:
            batch["rewards"] = np.full_like(batch["rewards"], np.nan)
        return batch

    agent.buffer.sample = poisoned
    with pytest.raises(TrainingDiverged, match="SAC losses"):
        agent.finetune()
    assert 3 < agent.counters.updates <= 3 + READ_EVERY_UPDATES
    agent.close()


def test_learning_signal_on_a_bandit():
    torch.manual_seed(0)
    agent = SACAgent(_small(online_samples=800, eval_every=800, actor_lr=1e-3, critic_lr=1e-3),
                     TargetBandit, progress=False)
    before = agent.evaluate(2)["return_mean"]
    row = agent.finetune()
    assert before < -0.3  # an untrained actor's mean action is near 0: return about -0.5
    assert row["return_mean"] > -0.1  # the mean action moved to about 0.5 in each dim
    action = agent.act(np.ones(2, np.float32), deterministic=True)
    np.testing.assert_allclose(action, [0.5, 0.5], atol=0.2)
    assert agent.counters.updates == 800 - 100 + 1
    agent.close()


def test_agent_protocol_and_rows():
    agent = SACAgent(_small(online_samples=300), lambda: gym.make("Pendulum-v1"),
                     score_fn=lambda r: np.asarray(r) / 10, progress=False)
    assert isinstance(agent, Agent)
    assert agent.pretrain() is None
    rows = []
    final = agent.finetune(log=rows.append)
    assert [r["online_samples"] for r in rows] == [300]
    for key in ("phase", "updates", "online_samples", "return_mean", "return_std", "length_mean", "returns",
                "score_mean", "score_std", "critic_loss", "alpha"):
        assert key in final
    assert final["score_mean"] == pytest.approx(final["return_mean"] / 10)
    assert agent.evaluate(3)["length_mean"] == 200
    agent.close()


def test_resume_is_exact():
    make_env = lambda: gym.make("Pendulum-v1")  # noqa: E731
    full = SACAgent(_small(), make_env, progress=False)
    full.finetune()

    class Crash(Exception):
        pass

    saved = {}
    first = SACAgent(_small(), make_env, progress=False)

    def checkpoint():
        saved["state"] = first.state_dict()
        raise Crash

    with pytest.raises(Crash):
        first.finetune(checkpoint=checkpoint)
    assert saved["state"]["counters"]["online_samples"] == 200  # first episode boundary after 150 steps
    torch.manual_seed(123)  # the restored RNG state must override whatever the process did meanwhile
    resumed = SACAgent(_small(), make_env, progress=False)
    resumed.load_state_dict(saved["state"])
    resumed.finetune()
    assert resumed.counters.online_samples == full.counters.online_samples == 600
    for p, q in zip(full.actor.parameters(), resumed.actor.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    for p, q in zip(full.critic.parameters(), resumed.critic.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    np.testing.assert_array_equal(full.buffer.ordered()["actions"], resumed.buffer.ordered()["actions"])
    assert math.isclose(full.alpha, resumed.alpha)
    full.close(), first.close(), resumed.close()


@pytest.mark.slow
def test_sac_learns_pendulum():
    torch.manual_seed(0)
    cfg = SACConfig(online_samples=8000, warmup_steps=1000, eval_every=8000, eval_episodes=5, seed=0)
    agent = SACAgent(cfg, lambda: gym.make("Pendulum-v1"), progress=False)
    row = agent.finetune()
    # A learning signal, not a solved task: a random policy scores about -1200 to -1500, a solved
    # one about -150. This seed's final policy scores -616 on these 5 evaluation starts and -107
    # on the 5 starts of a 4th evaluation (the same training: evaluation takes the mean action and
    # only its start states follow the evaluation count), measured with the cited
    # implementation's initial temperature 0.1; the old bound of -400 was set with 1.0.
    assert row["return_mean"] > -800
    agent.close()


def test_buffer_restores_into_a_larger_capacity():
    small = ReplayBuffer(1, 1, capacity=5)
    for i in range(3):
        small.add([i], [0.0], float(i), [i + 1], False, False)
    big = ReplayBuffer(1, 1, capacity=10)
    big.load_state_dict(small.state_dict())
    big.add([9], [0.0], 9.0, [10], True, False)
    np.testing.assert_array_equal(big.ordered()["rewards"], [0, 1, 2, 9])
    for i in range(3, 7):
        small.add([i], [0.0], float(i), [i + 1], False, False)  # wrapped now
    with pytest.raises(ValueError, match="do not fit"):
        ReplayBuffer(1, 1, capacity=4).load_state_dict(small.state_dict())


def test_temperature_gradient_and_update_metrics():
    """The temperature objective J = -log(alpha) (log pi(a|s) + H_target), averaged over the batch
    (the cited implementations' form of Haarnoja et al. 2018b, Eq. 18): its gradient in log(alpha)
    is -(mean log pi + H_target) = entropy - H_target, with the entropy estimate the update reports."""
    torch.manual_seed(0)
    agent = SACAgent(_small(online_samples=300), TargetBandit, progress=False)
    rng = np.random.default_rng(0)
    batch = {"observations": np.ones((16, 2), np.float32), "actions": rng.uniform(-1, 1, (16, 2)).astype(np.float32),
             "rewards": rng.normal(size=16).astype(np.float32), "next_observations": np.ones((16, 2), np.float32),
             "terminated": np.ones(16, np.float32)}
    metrics = agent.update(batch)
    assert set(metrics) == {"critic_loss", "actor_loss", "alpha", "entropy", "q_mean"}
    assert agent.log_alpha.grad.item() == pytest.approx(metrics["entropy"] - agent.target_entropy, rel=1e-5)
    assert metrics["alpha"] == pytest.approx(math.exp(agent.log_alpha.item()))
    agent.close()
