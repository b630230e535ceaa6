"""The transformer: causality, positional embedding switch, heads, evaluation context."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import make_hopper

import odt.model as model_module
from odt.config import ModelConfig
from odt.model import DecisionTransformer
from odt.rollout import Conditioning, run_episodes

SMALL = ModelConfig(embed_dim=32, n_layers=2, n_heads=2, dropout=0.0, context_len=8, eval_context_len=3,
                    max_ep_len=100, positional_embedding=True)


def _inputs(b=2, t=8, obs=5, act=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, t, obs, generator=g), torch.rand(b, t, act, generator=g) * 2 - 1,
            torch.randn(b, t, 1, generator=g), torch.randint(0, 100, (b, t), generator=g))


@pytest.mark.parametrize("stochastic", [True, False])
def test_prediction_at_t_ignores_later_tokens(stochastic, device):
    model = DecisionTransformer(5, 3, dataclasses.replace(SMALL, stochastic=stochastic)).eval().to(device)
    s, a, g, ts = (x.to(device) for x in _inputs())
    t = 4
    out = model(s, a, g, ts)
    s2, a2, g2, ts2 = s.clone(), a.clone(), g.clone(), ts.clone()
    s2[:, t + 1:] += 5.0
    g2[:, t + 1:] -= 3.0
    a2[:, t:] = -a2[:, t:]  # a_t comes after s_t, so even a_t must not matter
    ts2[:, t + 1:] = 0
    out2 = model(s2, a2, g2, ts2)
    first = (lambda o: o[0]) if stochastic else (lambda o: o)
    torch.testing.assert_close(first(out)[:, :t + 1], first(out2)[:, :t + 1])
    assert not torch.allclose(first(out)[:, t + 1:], first(out2)[:, t + 1:])


def test_positional_embedding_switch():
    s, a, g, ts = _inputs()
    with_pos = DecisionTransformer(5, 3, SMALL).eval()
    without = DecisionTransformer(5, 3, dataclasses.replace(SMALL, positional_embedding=False)).eval()
    assert without.embed_timestep is None
    assert not any("timestep" in name for name, _ in without.named_parameters())
    torch.testing.assert_close(without(s, a, g, ts)[0], without(s, a, g, (ts + 17) % 100)[0])
    assert not torch.allclose(with_pos(s, a, g, ts)[0], with_pos(s, a, g, (ts + 17) % 100)[0])


def test_log_std_is_bounded():
    model = DecisionTransformer(5, 3, SMALL).eval()
    with torch.no_grad():
        model.head.log_std.bias.fill_(1e4)
        hi = model(*_inputs())[1]
        model.head.log_std.bias.fill_(-1e4)
        lo = model(*_inputs())[1]
    assert hi.max() <= SMALL.log_std_max + 1e-6 and lo.min() >= SMALL.log_std_min - 1e-6


class _RecordingModel(DecisionTransformer):
    def __init__(self, *args):
        super().__init__(*args)
        self.seen_lengths: list[int] = []

    def forward(self, states, actions, rtg, timesteps):
        self.seen_lengths.append(states.shape[1])
        return super().forward(states, actions, rtg, timesteps)


def test_evaluation_context_is_truncated_and_mean_action_is_deterministic():
    env_cfg = dataclasses.replace(SMALL, max_ep_len=1000)
    model = _RecordingModel(11, 3, env_cfg)
    envs = gym.vector.SyncVectorEnv([make_hopper, make_hopper])
    cond = Conditioning(target_return=3600.0, rtg_scale=1000.0, state_mean=np.zeros(11, np.float32),
                        state_std=np.ones(11, np.float32), context_len=3)
    first = run_episodes(model, envs, cond, seeds=[1, 2], sample=False, max_steps=12)
    assert model.seen_lengths[:4] == [1, 2, 3, 3] and max(model.seen_lengths) == 3
    again = run_episodes(model, envs, cond, seeds=[1, 2], sample=False, max_steps=12)
    np.testing.assert_array_equal(first.returns, again.returns)
    for ep, n in zip(first.episodes, first.lengths):
        assert len(ep["rewards"]) == n and ep["observations"].shape == (n, 11)
    np.testing.assert_allclose(first.returns, [ep["rewards"].sum() for ep in first.episodes], rtol=1e-5)
    envs.close()


def test_sampled_exploration_differs_from_mean_action():
    model = DecisionTransformer(11, 3, dataclasses.replace(SMALL, max_ep_len=1000))
    envs = gym.vector.SyncVectorEnv([make_hopper])
    cond = Conditioning(3600.0, 1000.0, np.zeros(11, np.float32), np.ones(11, np.float32), 3)
    mean = run_episodes(model, envs, cond, seeds=[3], sample=False, max_steps=5)
    sampled = run_episodes(model, envs, cond, seeds=[3], sample=True,
                           generator=torch.Generator().manual_seed(0), max_steps=5)
    assert not np.allclose(mean.episodes[0]["actions"], sampled.episodes[0]["actions"])
    envs.close()


def _every_token_forward(model: DecisionTransformer, s, a, g, ts):
    """The transformer written out with every block computing every token, read at the
    state tokens: what the model's shortened last block must reproduce."""
    b, t, _ = s.shape
    tokens = torch.stack((model.embed_return(g), model.embed_state(s), model.embed_action(a)), dim=2)
    if model.embed_timestep is not None:
        tokens = tokens + model.embed_timestep(ts).unsqueeze(2)
    x = model.embed_ln(tokens.reshape(b, 3 * t, -1))
    for block in model.blocks:
        x = block(x)
    return model.head(model.ln_f(x).view(b, t, 3, -1)[:, :, 1])


@pytest.mark.parametrize("n_heads", [1, 4])
@pytest.mark.parametrize("training", [False, True])
def test_last_block_on_state_tokens_only_equals_every_token_computation(monkeypatch, n_heads, training):
    """The last block computes only the state tokens (its keys and values cover all tokens):
    outputs and gradients equal the full computation, on the fused evaluation kernel and on
    the written-out training path (dropout masks switched to identity)."""
    cfg = dataclasses.replace(SMALL, n_layers=3, n_heads=n_heads, dropout=0.1)
    torch.manual_seed(0)
    model = DecisionTransformer(5, 3, cfg).train(training)
    monkeypatch.setattr(model_module, "dropout", lambda x, p, training: x)
    inputs = _inputs(b=3, t=8)
    ours, full = model(*inputs), _every_token_forward(model, *inputs)
    for o, f in zip(ours, full):
        torch.testing.assert_close(o, f, rtol=1e-5, atol=1e-6)
    grads = []
    for out in (ours, full):
        model.zero_grad()
        sum(o.pow(2).sum() for o in out).backward(retain_graph=True)
        grads.append([p.grad.clone() for p in model.parameters()])
    for (name, _), g_ours, g_full in zip(model.named_parameters(), *grads):
        torch.testing.assert_close(g_ours, g_full, rtol=1e-4, atol=1e-6, msg=name)


# ----- initialisation, as in the official code --------------------------------------------------
# online-dt (and kzl/decision-transformer for DT) give GPT-2's init only to the GPT-2 stack; the
# token embeddings are PyTorch Linear layers left as made (weights and biases U(-1/sqrt(fan_in),
# 1/sqrt(fan_in))), the positional embedding an nn.Embedding left as made (N(0, 1)), and ODT's
# Gaussian head pytorch_sac's orthogonal weights with zero biases.
def _return_token(model: DecisionTransformer, g: float) -> torch.Tensor:
    """The layer-normalised return-to-go token the transformer reads (no positional embedding)."""
    return model.embed_ln(model.embed_return(torch.tensor([[g]])))[0]


def test_the_return_token_carries_the_size_of_the_return_to_go():
    """LN(w g + b) must change with g, not only with its sign: with b = 0 (GPT-2's zero bias on
    embed_return) it equals sign(g) LN(w), and the model cannot tell g* from 3 g*."""
    torch.manual_seed(0)
    model = DecisionTransformer(11, 3, dataclasses.replace(SMALL, embed_dim=64, positional_embedding=False)).eval()
    with torch.no_grad():
        one, three, ten = (_return_token(model, g) for g in (1.0, 3.0, 10.0))
        assert (one - three).norm() > 0.2 * one.norm()
        assert (three - ten).norm() > 0.05 * one.norm()


@pytest.mark.parametrize("stochastic", [True, False])
def test_embeddings_keep_pytorchs_default_init_and_only_the_gpt2_stack_gets_gpt2s(stochastic):
    torch.manual_seed(0)
    d = 128
    model = DecisionTransformer(11, 3, dataclasses.replace(SMALL, embed_dim=d, stochastic=stochastic))
    for layer, fan_in in ((model.embed_return, 1), (model.embed_state, 11), (model.embed_action, 3)):
        bound = 1.0 / np.sqrt(fan_in)
        for p in (layer.weight, layer.bias):  # U(-bound, bound): std bound / sqrt(3), never beyond bound
            assert p.abs().max() <= bound and abs(p.std().item() - bound / np.sqrt(3)) < 0.25 * bound
    assert abs(model.embed_timestep.weight.std().item() - 1.0) < 0.05  # nn.Embedding's N(0, 1)
    block = model.blocks[0]
    for layer in (block.attn.qkv, block.attn.proj, block.mlp[0], block.mlp[2]):
        assert abs(layer.weight.std().item() - 0.02) < 0.002 and not layer.bias.any()
    if stochastic:  # orthogonal rows (act_dim < embed_dim), zero biases
        for layer in (model.head.mean, model.head.log_std):
            torch.testing.assert_close(layer.weight @ layer.weight.T, torch.eye(3), atol=1e-5, rtol=0)
            assert not layer.bias.any()
    else:  # DT's Linear + tanh head as PyTorch makes it
        bound = 1.0 / np.sqrt(d)
        assert model.head.linear.weight.abs().max() <= bound and model.head.linear.bias.any()
