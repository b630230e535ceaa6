"""Speed changes keep the math: fixed-seed loss curves, dropout's distribution, attention.

The loss curves below were first recorded with the implementation before any speed change
(commit 1cc3632's odt/, one thread) and re-pinned once, when the initialisation changed (see
REFERENCE_LOSS); speed changes must reproduce them to float tolerance. They run with dropout off, because the fast dropout draws its masks from the
same generator in a different way (checked here by its distribution instead).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import make_hopper

import odt.model as model_module
from odt.config import ModelConfig, make_config
from odt.model import DecisionTransformer, dropout
from odt.train import ODTTrainer
from rlbase.trajectories import Trajectories

# 25 updates of ODTTrainer.update on _curve_data(), see _curve_trainer (seed 3, one thread).
REFERENCE_LOSS = {
    # Re-pinned (both curves) when the model's initialisation became the official code's
    # (odt/model.py: PyTorch's defaults for the token embeddings, orthogonal Gaussian head). The
    # curves before it came from commit 1cc3632's odt/, before any speed change, and this code
    # still reproduced them with GPT-2's init everywhere; its stochastic curve started at 37.5
    # where this one starts at 5562: the orthogonal log-std layer puts some initial standard
    # deviations near exp(-5), as in the official code.
    True: [5562.308, 5512.1327, 4819.1198, 6019.6158, 4847.0649, 5062.1255, 5053.3891, 4751.1007,
           4617.2892, 4858.1538, 5051.4421, 5177.5027, 4970.2376, 4101.8829, 3776.4629, 4232.0339,
           4237.8858, 3344.2095, 3852.7425, 4060.7832, 3781.8402, 3344.7867, 2985.9649, 3977.6339,
           2825.3542],
    # DT's loss is the mean over action entries (the official DT loss)
    False: [0.4905669, 0.4589854, 0.470174, 0.466763, 0.4995269, 0.4890079, 0.4668691, 0.4771326,
            0.4621384, 0.4950024, 0.469363, 0.4833001, 0.4605495, 0.4784814, 0.4625527, 0.4645566,
            0.4617681, 0.4339841, 0.4636293, 0.4635853, 0.4496226, 0.4813601, 0.4421812, 0.4568073,
            0.4543396],
}


def _curve_data() -> Trajectories:
    rng = np.random.default_rng(0)
    episodes = [dict(observations=rng.normal(size=(n, 11)).astype(np.float32),
                     actions=rng.uniform(-1, 1, size=(n, 3)).astype(np.float32),
                     rewards=rng.uniform(0, 3, size=n).astype(np.float32), terminated=bool(i % 2))
                for i, n in enumerate([40, 25, 60, 33, 50, 18])]
    return Trajectories.from_episodes(episodes)


def _curve_trainer(stochastic: bool) -> ODTTrainer:
    cfg = make_config("hopper-medium", "online", "smoke", {
        "model.dropout": 0.0, "model.n_layers": 2, "model.context_len": 20, "model.stochastic": stochastic,
        "optim.lr": 1e-3, "optim.warmup_steps": 5, "device": "cpu", "seed": 3})
    torch.manual_seed(0)
    return ODTTrainer(cfg, _curve_data(), make_hopper, progress=False)


@pytest.mark.parametrize("stochastic", [True, False])
def test_fixed_seed_loss_curve_is_unchanged(stochastic):
    trainer = _curve_trainer(stochastic)
    losses = [trainer.update(trainer.batch_tensors(trainer.buffer))["loss"] for _ in range(25)]
    np.testing.assert_allclose(losses, REFERENCE_LOSS[stochastic], rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 200_000, 200_001])
def test_dropout_keep_rate_and_scale(n):
    p = 0.1
    x = torch.ones(n)
    y = dropout(x, p, training=True)
    kept = y != 0
    assert torch.all((y == 0) | torch.isclose(y, torch.full_like(y, 1.0 / (1.0 - p))))
    if n >= 1000:  # the kept fraction is Binomial(n, 1 - p)/n: within 5 standard deviations
        sd = math.sqrt(p * (1 - p) / n)
        assert abs(kept.float().mean().item() - (1 - p)) < 5 * sd


@pytest.mark.parametrize("p", [0.5, 0.1])
def test_dropout_every_16_bit_lane_keeps_at_the_same_rate_independently(p):
    """Each 64-bit draw serves four consecutive elements: every lane must keep with
    probability 1 - p (a lane fed by a 63-bit draw's top bits would not), and neighbours
    must be uncorrelated."""
    torch.manual_seed(1)
    n = 800_000
    keep = (dropout(torch.ones(n), p, training=True) != 0).float().view(-1, 4)
    sd = math.sqrt(p * (1 - p) / (n // 4))
    for lane in range(4):
        assert abs(keep[:, lane].mean().item() - (1 - p)) < 5 * sd, lane
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 0)):
        corr = torch.corrcoef(torch.stack([keep[:, a], keep[:, b]]))[0, 1].item()
        assert abs(corr) < 5 / math.sqrt(n // 4), (a, b)


def test_dropout_is_unbiased_and_its_keep_probability_is_p_to_16_bits():
    """E[dropout(x)] = x (inverted dropout), and the drop probability is round(p 2^16) / 2^16."""
    torch.manual_seed(2)
    n, p = 2_000_000, 0.1
    y = dropout(torch.ones(n), p, training=True)
    kept = (y != 0).float().mean().item()
    q = 1 - round(p * 2**16) / 2**16  # 0.89999390
    assert abs(kept - q) < 5 * math.sqrt(q * (1 - q) / n)
    assert torch.all(y[y != 0] == y[y != 0][0]) and y[y != 0][0].item() == pytest.approx(1 / q, rel=1e-6)
    assert abs(y.mean().item() - 1.0) < 5 * math.sqrt((1 - q) / q / n)


def test_dropout_is_seeded_by_torch_and_identity_when_off():
    x = torch.randn(3, 50)
    torch.manual_seed(5)
    a = dropout(x, 0.3, training=True)
    torch.manual_seed(5)
    b = dropout(x, 0.3, training=True)
    torch.testing.assert_close(a, b)
    assert not torch.equal(a, dropout(x, 0.3, training=True))
    assert dropout(x, 0.3, training=False) is x and dropout(x, 0.0, training=True) is x


def test_dropout_gradient_is_mask_times_scale():
    x = torch.randn(1000, requires_grad=True)
    y = dropout(x, 0.25, training=True)
    y.sum().backward()
    expected = (y.detach() != 0).float() / (1 - round(0.25 * 2**16) / 2**16)
    torch.testing.assert_close(x.grad, expected)


def test_dropout_matches_torch_dropout_in_distribution():
    """Mean and variance of outputs agree with F.dropout's (same rule, different draws)."""
    x = torch.randn(300_000)
    ours, theirs = dropout(x, 0.1, training=True), F.dropout(x, 0.1, training=True)
    for stat in (torch.mean, torch.var):
        assert abs(stat(ours).item() - stat(theirs).item()) < 0.02


SMALL = ModelConfig(embed_dim=32, n_layers=2, n_heads=4, dropout=0.1, context_len=8, eval_context_len=3,
                    max_ep_len=100, positional_embedding=True)


def _inputs(b=4, t=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, t, 5, generator=g), torch.rand(b, t, 3, generator=g) * 2 - 1,
            torch.randn(b, t, 1, generator=g), torch.randint(0, 100, (b, t), generator=g))


@pytest.mark.parametrize("n_heads", [1, 4])
def test_written_out_training_attention_equals_fused_kernel(monkeypatch, n_heads):
    """With the dropout masks switched to identity, the training path (baddbmm with a cached
    additive mask) gives the fused SDPA path's outputs and gradients."""
    cfg = dataclasses.replace(SMALL, n_heads=n_heads)
    fused = DecisionTransformer(5, 3, cfg).eval()
    written = DecisionTransformer(5, 3, cfg)
    written.load_state_dict(fused.state_dict())
    monkeypatch.setattr(model_module, "dropout", lambda x, p, training: x)
    written.train()
    inputs = _inputs()
    out_f, out_w = fused(*inputs), written(*inputs)
    for a, b in zip(out_f, out_w):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    sum(o.sum() for o in out_f).backward()
    sum(o.sum() for o in out_w).backward()
    for (name, pf), pw in zip(fused.named_parameters(), written.parameters()):
        torch.testing.assert_close(pf.grad, pw.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_training_path_with_dropout_is_causal():
    """Same seed, same masks: changing the future never changes a past prediction."""
    model = DecisionTransformer(5, 3, SMALL).train()
    s, a, g, ts = _inputs()
    t = 3
    torch.manual_seed(11)
    out = model(s, a, g, ts)[0]
    s2, a2 = s.clone(), a.clone()
    s2[:, t + 1:] += 5.0
    a2[:, t:] = -a2[:, t:]
    torch.manual_seed(11)
    out2 = model(s2, a2, g, ts)[0]
    torch.testing.assert_close(out[:, :t + 1], out2[:, :t + 1])
    assert not torch.allclose(out[:, t + 1:], out2[:, t + 1:])


def test_model_state_dict_keys_unchanged_by_the_mask_cache():
    model = DecisionTransformer(5, 3, SMALL).train()
    before = set(model.state_dict())
    model(*_inputs())
    assert set(model.state_dict()) == before
    assert not any("mask" in k for k in before)


# ----- the benchmark harness (structure and arithmetic only: no timed assertions) -----------
def test_run_estimate_counts_rounds_updates_and_evaluations():
    from benchmarks.perf.speed import estimate_run

    est = estimate_run(pretrain_updates=500, online_samples=20_000, updates_per_round=300, eval_every_rounds=5,
                       eval_every_updates=1000, eval_episodes=10, step_ms=100.0, eval_step_ms=5.0,
                       explore_step_ms=2.0, episode_length=300)
    rounds = math.ceil(20_000 / 300)  # 67: evaluations at rounds 5, 10, ..., 65 and at the end
    assert est["rounds"] == rounds and est["updates"] == 500 + 300 * rounds
    assert est["evaluations"] == 1 + 13 + 1
    assert est["pretrain_s"] == pytest.approx(50.0)
    assert est["online_updates_s"] == pytest.approx(300 * rounds * 0.1)
    assert est["exploration_s"] == pytest.approx(rounds * 300 * 0.002)
    assert est["evaluation_s"] == pytest.approx(15 * 300 * 0.005)
    total = est["pretrain_s"] + est["online_updates_s"] + est["exploration_s"] + est["evaluation_s"]
    assert est["total_min"] == pytest.approx(total / 60)


def test_perf_quick_run_writes_a_complete_record(tmp_path):
    import json

    from benchmarks.perf.speed import main

    out = tmp_path / "perf.json"
    res = main(["--quick", "--no-progress", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(res))
    (row,) = res["updates"]
    assert row["case"] == "small" and row["threads"] == 1 and row["gflop_per_update"] > 0
    assert row["sample_share"] == pytest.approx(row["sample"]["median_ms"] / row["update"]["median_ms"])
    assert row["matmul_ratio"] == pytest.approx(row["achieved_gflops"] / row["matmul_gflops"])
    assert "speedup_vs_reference" not in row  # official times come only from benchmarks.perf.official's sitting
    (ro,) = res["rollouts"]
    assert ro["eval_steps_per_episode"] == 50 and ro["eval_episodes"] == 2  # full length: no early ends
    assert [b["capacity"] for b in res["buffer_add"]] == [100, 1000]
    assert res["machine"]["versions"]["torch"] == torch.__version__ and res["peak_rss_mib"] > 0


def test_perf_rejects_unknown_cases():
    from benchmarks.perf.speed import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--cases", "huge"])


def test_paper_run_estimate_uses_the_paper_hopper_schedule_and_the_loop_pace():
    from benchmarks.perf.speed import paper_run_estimates, parse_args

    with pytest.raises(SystemExit):
        parse_args(["--rollout-preset", "huge"])
    update = {"case": "paper", "threads": 1, "precision": "bf16", "loop_ms_per_update": 20.0}
    rollout = {"eval_vector_step_ms": 6.0, "explore_step_ms": 3.0}
    rows = paper_run_estimates([update], {1: rollout})
    assert [r["episode_length"] for r in rows] == [1000, 500, 250]
    first = rows[0]
    # Table C.4 hopper-medium: 5000 pretraining updates; 200k online samples, 300 updates a round
    assert first["rounds"] == 200 and first["updates"] == 5000 + 200 * 300
    assert first["pretrain_s"] == pytest.approx(5000 * 0.020)
    assert first["exploration_s"] == pytest.approx(200_000 * 0.003)
    assert paper_run_estimates([], {1: rollout}) == []

def test_rollouts_run_on_one_thread_and_restore_the_callers_count():
    import gymnasium as gym

    from odt.rollout import Conditioning, run_episodes

    model = DecisionTransformer(11, 3, dataclasses.replace(SMALL, max_ep_len=1000))
    seen = []
    model.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    envs = gym.vector.SyncVectorEnv([make_hopper, make_hopper])
    cond = Conditioning(target_return=3600.0, rtg_scale=1000.0, state_mean=np.zeros(11, np.float32),
                        state_std=np.ones(11, np.float32), context_len=3)
    try:
        torch.set_num_threads(2)
        first = run_episodes(model, envs, cond, seeds=[1, 2], sample=False, max_steps=10)
        assert torch.get_num_threads() == 2 and seen and set(seen) == {1}
        torch.set_num_threads(1)
        second = run_episodes(model, envs, cond, seeds=[1, 2], sample=False, max_steps=10)
        np.testing.assert_array_equal(first.returns, second.returns)
    finally:
        envs.close()
        torch.set_num_threads(1)


def test_allocator_tuning_is_idempotent_and_reported():
    from rlbase.runtime import keep_freed_memory_in_heap

    first = keep_freed_memory_in_heap()
    assert keep_freed_memory_in_heap() is first
    assert isinstance(first, bool)
