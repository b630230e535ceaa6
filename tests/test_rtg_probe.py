"""The RTG probe: evaluation-shaped windows, and a model that sees only the RTG's sign reads 0."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from odt.config import ModelConfig
from odt.model import DecisionTransformer
from rlbase.trajectories import Trajectories
from studies.rtg_probe.analysis import rtg_sensitivity, sample_windows

CFG = ModelConfig(embed_dim=32, n_layers=2, n_heads=2, dropout=0.0, context_len=8, eval_context_len=4,
                  max_ep_len=100, positional_embedding=False)


def _data() -> Trajectories:
    rng = np.random.default_rng(0)
    episodes = [dict(observations=rng.normal(size=(n, 5)).astype(np.float32),
                     actions=rng.uniform(-1, 1, size=(n, 2)).astype(np.float32),
                     rewards=np.full(n, 2.0, dtype=np.float32), terminated=False) for n in (3, 30, 50)]
    return Trajectories.from_episodes(episodes)


def test_windows_carry_the_reward_collected_before_each_step_as_at_evaluation():
    data = _data()
    w = sample_windows(data, 64, context=4, seed=1)
    # constant reward 2 per step: before step t the trajectory has collected 2 t
    np.testing.assert_allclose(w.collected[..., 0].numpy(), 2.0 * w.timesteps.numpy())
    assert (np.diff(w.timesteps.numpy(), axis=1) == 1).all()  # consecutive real steps, no padding
    rtg = w.returns_to_go(1000.0, 1000.0)[..., 0].numpy()
    np.testing.assert_allclose(rtg, (1000.0 - 2.0 * w.timesteps.numpy()) / 1000.0, rtol=1e-6)


def test_a_model_that_sees_only_the_rtgs_sign_reads_zero_and_the_official_init_does_not():
    data = _data()
    w = sample_windows(data, 128, context=4, seed=0)
    torch.manual_seed(0)
    model = DecisionTransformer(5, 2, CFG)
    reads = rtg_sensitivity(model, w, g_eval=3600.0, rtg_scale=1000.0, multiples=[3.0])
    assert reads["x3"] > 1e-4 and reads["embed_return bias/weight norm"] > 0.1  # untrained: small, not 0
    blind = DecisionTransformer(5, 2, dataclasses.replace(CFG))
    blind.load_state_dict(model.state_dict())
    with torch.no_grad():
        blind.embed_return.bias.zero_()  # the old init's bias, which LAMB kept at zero
    reads = rtg_sensitivity(blind, w, g_eval=3600.0, rtg_scale=1000.0, multiples=[3.0])
    assert reads["x3"] < 1e-6 < reads["between windows"]  # LN(w g) = sign(g) LN(w): 1e-8, rounding
