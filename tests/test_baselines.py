"""DT, IQL and SAC: IQL's losses on hand-made numbers, its data plumbing, learning signals on a
small problem, and DT's configuration."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import make_hopper

import baselines.dt as dt_module
from baselines.dt import dt_agent, dt_config
from baselines.iql import (
    TransitionBuffer,
    awr_weights,
    cosine_factor,
    expectile_loss,
    iql_config,
    reward_scale,
    td_target,
    transitions,
)
from baselines.metrics import READ_EVERY_UPDATES, DeviceMeans
from benchmarks.methods import build_agent, method_config
from rlbase.config import ConfigError
from rlbase.training import StopRequested, TrainingDiverged
from rlbase.trajectories import DatasetError, Trajectories


# ----- IQL's math on hand-made numbers ------------------------------------------------------
def test_expectile_loss_matches_its_formula():
    diff = torch.tensor([2.0, -1.0, 0.5, 0.0])
    expected = (0.7 * 4.0 + 0.3 * 1.0 + 0.7 * 0.25 + 0.0) / 4
    assert expectile_loss(diff, 0.7).item() == pytest.approx(expected)
    assert expectile_loss(diff, 0.5).item() == pytest.approx(0.5 * (diff**2).mean().item())


@pytest.mark.parametrize("tau", [0.5, 0.7, 0.9])
def test_expectile_loss_is_minimised_at_the_expectile(tau):
    # the tau-expectile of {0, 1} is tau: tau * (1 - v) = (1 - tau) * v
    samples = torch.tensor([0.0, 1.0])
    grid = torch.linspace(0, 1, 1001)
    losses = torch.stack([expectile_loss(samples - v, tau) for v in grid])
    assert grid[losses.argmin()].item() == pytest.approx(tau, abs=1e-3)


def test_awr_weights_are_exp_of_scaled_advantage_clipped_at_100():
    adv = torch.tensor([0.0, 1.0, -1.0, 10.0, 1e4])
    w = awr_weights(adv, temperature=3.0, max_weight=100.0)
    np.testing.assert_allclose(w.numpy(), [1.0, math.exp(3), math.exp(-3), 100.0, 100.0], rtol=1e-6)


def test_td_target_stops_at_terminals():
    r, d, v = torch.tensor([1.0, 1.0]), torch.tensor([0.0, 1.0]), torch.tensor([10.0, 10.0])
    np.testing.assert_allclose(td_target(r, d, v, 0.99).numpy(), [10.9, 1.0], rtol=1e-6)


def test_cosine_factor_decays_from_one_to_zero():
    assert cosine_factor(0, 100) == 1.0
    assert cosine_factor(50, 100) == pytest.approx(0.5)
    assert cosine_factor(100, 100) == pytest.approx(0.0) and cosine_factor(500, 100) == pytest.approx(0.0)
    assert cosine_factor(1, 1) == pytest.approx(0.0) and cosine_factor(0, 2) == 1.0  # short schedules decay too
    assert cosine_factor(0, 0) == 1.0 and cosine_factor(7, 0) == 1.0  # no schedule: the full rate


def test_reward_scaling_per_domain():
    mult, offset = reward_scale("locomotion", np.array([100.0, 600.0, 300.0]))
    assert (mult, offset) == (pytest.approx(2.0), 0.0)
    assert reward_scale("antmaze", np.array([0.0, 1.0])) == (1.0, -1.0)
    assert reward_scale("ant", np.array([100.0, 600.0])) == (1.0, 0.0)  # the official IQL leaves ant unscaled
    assert [iql_config(d).domain for d in ("hopper-medium", "halfcheetah-medium-replay", "walker2d-medium",
                                          "ant-medium", "ant-medium-replay", "antmaze-umaze")] == \
        ["locomotion", "locomotion", "locomotion", "ant", "ant", "antmaze"]
    assert reward_scale("locomotion", np.array([3.0, 3.5]))[0] == pytest.approx(2000.0)  # a spread below 1 is fine
    with pytest.raises(DatasetError) as err:
        reward_scale("locomotion", np.array([5.0, 5.0]))
    assert str(err.value) == ("rewards: every trajectory has the same return, so IQL's locomotion "
                              "scaling 1000 / (max return - min return) is undefined")


# ----- data plumbing ------------------------------------------------------------------------
def _traj(n, value, terminated):
    obs = np.arange(n, dtype=np.float32)[:, None] + value
    return dict(observations=obs, actions=np.zeros((n, 1), np.float32),
                rewards=np.full(n, value, np.float32), terminated=terminated)


def test_transitions_drop_truncated_ends_and_flag_terminals():
    data = Trajectories.from_episodes([_traj(3, 10.0, False), _traj(2, 20.0, True)])
    t = transitions(data)
    np.testing.assert_array_equal(t["observations"][:, 0], [10, 11, 20, 21])
    np.testing.assert_array_equal(t["next_observations"][:2, 0], [11, 12])
    assert t["next_observations"][2, 0] == 21
    np.testing.assert_array_equal(t["dones"], [0, 0, 0, 1])
    assert all(t[k].dtype == np.float32 for k in ("observations", "actions", "rewards", "next_observations", "dones"))
    np.testing.assert_array_equal(t["rewards"], [10, 10, 20, 20])


def test_transition_buffer_is_fifo_over_offline_then_online_and_round_trips():
    data = Trajectories.from_episodes([_traj(5, 0.0, True)])
    buf = TransitionBuffer(transitions(data), capacity=6, max_online=4)
    for i in range(3):
        buf.add([100.0 + i], [0.0], 1.0, [101.0 + i], 0.0)
    assert len(buf) == 6 and buf.low == 2
    batch = buf.sample(np.random.default_rng(0), 500, torch.device("cpu"))
    seen = set(batch["observations"][:, 0].tolist())
    assert seen == {2.0, 3.0, 4.0, 100.0, 101.0, 102.0}  # the two oldest offline rows are out
    other = TransitionBuffer(transitions(data), capacity=6, max_online=4)
    other.load_online_rows(buf.online_rows())
    assert other.size == buf.size
    for k in buf.arrays:
        assert torch.equal(other.arrays[k], buf.arrays[k])
    buf.add([0.0], [0.0], 0.0, [0.0], 0.0)
    with pytest.raises(RuntimeError, match="full"):
        buf.add([0.0], [0.0], 0.0, [0.0], 0.0)


def test_transition_buffer_window_samples_only_the_newest_rows():
    data = Trajectories.from_episodes([_traj(5, 0.0, True)])
    buf = TransitionBuffer(transitions(data), capacity=100, max_online=4)
    for i in range(2):
        buf.add([100.0 + i], [0.0], 1.0, [101.0 + i], 0.0)
    rng = np.random.default_rng(0)
    seen = set(buf.sample(rng, 500, torch.device("cpu"), window=3)["observations"][:, 0].tolist())
    assert seen == {4.0, 100.0, 101.0}  # the newest three rows: the last offline one, both online
    everything = set(buf.sample(rng, 500, torch.device("cpu"))["observations"][:, 0].tolist())
    assert everything == {0.0, 1.0, 2.0, 3.0, 4.0, 100.0, 101.0}


def test_iql_online_window_applies_to_the_online_phase_only(hopper_random):
    from baselines.iql import IQLAgent

    cfg = iql_config("hopper-medium", "smoke", 0, {"online_window": 50})
    agent = IQLAgent(cfg, hopper_random, make_hopper, progress=False)
    offline_rows = agent.buffer.size
    picked = lambda: agent.sample_batch()["observations"]  # noqa: E731
    rows = agent.buffer.arrays["observations"][:offline_rows]
    old = {tuple(r.tolist()) for r in rows[: offline_rows - 50]}
    assert any(tuple(r.tolist()) in old for r in picked())  # offline: the whole dataset
    agent.counters.pretrain_done = True
    assert not any(tuple(r.tolist()) in old for r in picked())  # online: the newest 50 rows
    agent.close()



def test_iql_evaluations_in_between_run_the_interim_episodes_and_each_phase_ends_on_the_full_count(hopper_random):
    from baselines.iql import IQLAgent

    cfg = iql_config("hopper-medium", "smoke", 0, {"eval_episodes": 3, "eval_episodes_interim": 1,
                                                    "offline_updates": 40, "eval_every_updates": 10,
                                                    "online_samples": 60, "eval_every_samples": 20})
    rows = []
    agent = IQLAgent(cfg, hopper_random, make_hopper, progress=False)
    agent.pretrain(log=rows.append)
    agent.finetune(log=rows.append)
    agent.close()
    assert [(r["phase"], r["updates"], r["online_samples"], len(r["returns"])) for r in rows] == [
        ("pretrain", 10, 0, 1), ("pretrain", 20, 0, 1), ("pretrain", 30, 0, 1), ("pretrain", 40, 0, 3),
        ("online", 60, 20, 1), ("online", 80, 40, 1), ("online", 100, 60, 3)]


def test_iql_agent_transforms_rewards_as_its_domain_says(hopper_random):
    """r' = multiplier * r + offset: locomotion 1000 / (max - min trajectory return), AntMaze r - 1."""
    from baselines.iql import IQLAgent

    agent = IQLAgent(iql_config("hopper-medium", "smoke"), hopper_random, make_hopper, progress=False)
    returns = [float(hopper_random.episode(i)["rewards"].astype(np.float64).sum()) for i in range(len(hopper_random))]
    mult = 1000.0 / (max(returns) - min(returns))
    r = np.array([0.5, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(agent._scale(r), r * mult, rtol=1e-6)
    agent.reward_scale = (1.0, -1.0)  # AntMaze's transform
    np.testing.assert_allclose(agent._scale(r), r - 1.0)
    agent.close()


def _affine_copy(data: Trajectories, scale: np.ndarray, shift: np.ndarray) -> Trajectories:
    return dataclasses.replace(data, observations=(data.observations * scale + shift).astype(np.float32))


def test_iql_normalize_observations_makes_learning_blind_to_observation_units(hopper_random):
    """Standardising by the offline data's mean and std (x - mean) / std gives the networks the
    same inputs when every observation dimension is rescaled and shifted, so the same seed makes
    the same updates and acts alike on the correspondingly transformed observations; raw inputs
    (the official code's) change with the units."""
    from baselines.iql import IQLAgent

    rng = np.random.default_rng(0)
    scale = rng.uniform(0.5, 4.0, hopper_random.obs_dim).astype(np.float32)
    shift = rng.uniform(-20.0, 20.0, hopper_random.obs_dim).astype(np.float32)
    moved = _affine_copy(hopper_random, scale, shift)
    probe = hopper_random.observations[:5]

    def after_updates(data, normalize):
        cfg = iql_config("hopper-medium", "smoke", 0, {"normalize_observations": normalize})
        agent = IQLAgent(cfg, data, make_hopper, progress=False)
        losses = [agent.update(agent.sample_batch()) for _ in range(3)]
        obs = probe if data is hopper_random else probe * scale + shift
        action = agent.act(obs.astype(np.float32), sample=False)
        agent.close()
        return losses, action

    same, same_action = after_updates(hopper_random, True)
    moved_losses, moved_action = after_updates(moved, True)
    for a, b in zip(same, moved_losses, strict=True):
        assert a == pytest.approx(b, rel=1e-3, abs=1e-4)
    np.testing.assert_allclose(same_action, moved_action, rtol=1e-3, atol=1e-4)
    raw, _ = after_updates(hopper_random, False)
    raw_moved, _ = after_updates(moved, False)
    assert raw[0]["value_loss"] != pytest.approx(raw_moved[0]["value_loss"], rel=1e-3)
    with pytest.raises(ConfigError, match="normalize_observations"):
        iql_config("hopper-medium", "smoke", 0, {"normalize_observations": 1})


def test_iql_actor_rate_follows_the_cosine_offline_and_is_constant_online(hopper_random):
    from baselines.iql import IQLAgent

    cfg = iql_config("hopper-medium", "smoke", 0, {"actor_schedule": "cosine"})
    agent = IQLAgent(cfg, hopper_random, make_hopper, progress=False)
    rate = lambda: agent.actor_opt.param_groups[0]["lr"]  # noqa: E731
    agent.counters.updates = cfg.offline_updates // 2
    agent._set_actor_lr()
    assert rate() == pytest.approx(cfg.actor_lr * 0.5)
    agent.counters.pretrain_done = True
    agent._set_actor_lr()
    assert rate() == cfg.actor_lr  # online: the published constant rate
    agent.close()


def test_iql_update_reports_its_metrics_and_names_a_divergence(hopper_random):
    from baselines.iql import IQLAgent

    agent = IQLAgent(iql_config("hopper-medium", "smoke"), hopper_random, make_hopper, progress=False)
    metrics = agent.update(agent.sample_batch())
    assert set(metrics) == {"value_loss", "actor_loss", "q_loss", "advantage_mean", "weight_mean", "v_mean"}
    batch = agent.sample_batch()
    batch["rewards"] = torch.full_like(batch["rewards"], float("nan"))
    with pytest.raises(TrainingDiverged, match=r"IQL losses .* at update 1"):
        agent.update(batch)
    agent.close()


def test_a_nan_loss_stops_iql_within_one_read_interval_and_no_checkpoint_holds_it(hopper_random):
    """The loop reads its metrics every READ_EVERY_UPDATES updates, not every update: a NaN
    loss from update 7 on raises TrainingDiverged by the next read, before any checkpoint."""
    from baselines.iql import IQLAgent

    cfg = iql_config("hopper-medium", "smoke", 0, {"offline_updates": 3 * READ_EVERY_UPDATES,
                                                    "eval_every_updates": 1000, "checkpoint_every_updates": 5})
    agent = IQLAgent(cfg, hopper_random, make_hopper, progress=False)
    sample, checkpoints = agent.sample_batch, []

    def poisoned():
        batch = sample()
        if agent.counters.updates >= 7:
            batch["rewards"] = torch.full_like(batch["rewards"], float("nan"))
        return batch

    agent.sample_batch = poisoned
    with pytest.raises(TrainingDiverged, match="IQL losses"):
        agent.pretrain(checkpoint=lambda: checkpoints.append(agent.counters.updates))
    assert 7 < agent.counters.updates <= 7 + READ_EVERY_UPDATES and checkpoints == [5]
    agent.close()


def test_device_means_are_the_float_sums_of_the_per_update_values():
    """Float64 sums of float32 values on the device: the means a per-update float read gave."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=(37, 2)).astype(np.float32) * np.float32(1e3)
    means = DeviceMeans(("a", "b"))
    for row in values:
        means.add({"a": torch.tensor(row[0]), "b": torch.tensor(row[1])})
    expected = {"a": 0.0, "b": 0.0}
    for row in values:
        expected = {"a": expected["a"] + float(row[0]), "b": expected["b"] + float(row[1])}
    state = means.state_dict()
    assert state == {"sums": expected, "count": 37}  # a checkpoint's layout, as before
    restored = DeviceMeans(("a", "b"))
    restored.load_state_dict(state)
    assert restored.pop("x", 37) == means.pop("x", 37) == {k: v / 37 for k, v in expected.items()}
    assert means.pop("x", 37) == {} and means.state_dict() == {"sums": {}, "count": 0}
    means.add({"a": torch.tensor(float("inf")), "b": torch.tensor(1.0)})
    with pytest.raises(TrainingDiverged, match=r"x losses \{'a': inf\} within the 1 updates up to update 9"):
        means.means("x", 9)


def _iql_reference_update(agent, batch) -> None:
    """One IQL update written from the paper's definitions (Kostrikov et al. 2022, Alg. 1 and
    its official order): V by expectile regression on min(Q_target), then the actor by
    advantage-weighted log-likelihood with the updated V, then both Qs by squared TD error to
    r + gamma (1 - d) V(s') with the updated V, then Polyak averaging of the target Qs; plain
    per-parameter Adam. Applied to copies of the agent's networks and optimizers."""
    c = agent.cfg
    s, a, r = batch["observations"], batch["actions"], batch["rewards"]
    with torch.no_grad():
        x = torch.cat([s, a], -1)
        q_t = torch.minimum(agent.target_critic.q1(x), agent.target_critic.q2(x)).squeeze(-1)
    u = q_t - agent.value(s)
    tau_weight = (c.expectile - (u < 0).float()).abs()
    agent.value_opt.zero_grad()
    (tau_weight * u * u).mean().backward()
    agent.value_opt.step()
    with torch.no_grad():
        w = torch.minimum(torch.exp(c.temperature * (q_t - agent.value(s))), torch.tensor(c.max_weight))
        next_v = agent.value(batch["next_observations"])
    agent._set_actor_lr()
    agent.actor_opt.zero_grad()
    (-(w * agent.actor(s).log_prob(a).sum(-1))).mean().backward()
    agent.actor_opt.step()
    y = r + c.discount * (1 - batch["dones"]) * next_v
    q1, q2 = agent.critic(s, a)
    agent.critic_opt.zero_grad()
    (((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()).backward()
    agent.critic_opt.step()
    with torch.no_grad():
        for p, tp in zip(agent.critic.parameters(), agent.target_critic.parameters(), strict=True):
            tp.copy_((1 - c.tau) * tp + c.tau * p)


def test_iql_update_is_the_published_update_and_its_fused_adam_is_plain_adam(hopper_random):
    """Three updates of the agent against the reference above on the same batches: the same
    parameters (to float rounding). And the agent's fused Adam gives what per-parameter Adam
    gives, to float rounding (fused kernels round differently; not bit for bit)."""
    import copy

    from baselines.iql import IQLAgent

    agent = IQLAgent(iql_config("hopper-medium", "smoke"), hopper_random, make_hopper, progress=False)
    plain = copy.deepcopy({k: getattr(agent, k) for k in ("cfg", "counters", "actor", "critic",
                                                          "target_critic", "value")})
    reference = copy.copy(agent)  # shares the buffer; its own networks and optimizers below
    twin = copy.copy(agent)
    for obj in (reference, twin):
        for k in ("actor", "critic", "target_critic", "value", "counters"):
            setattr(obj, k, copy.deepcopy(plain[k]))
        obj._metrics = DeviceMeans(agent._metrics.names)
        for opt, net, lr in (("actor_opt", obj.actor, obj.cfg.actor_lr),
                             ("critic_opt", obj.critic, obj.cfg.critic_lr),
                             ("value_opt", obj.value, obj.cfg.value_lr)):
            setattr(obj, opt, torch.optim.Adam(net.parameters(), lr=lr, foreach=False))
    assert all(g["fused"] for o in (agent.actor_opt, agent.critic_opt, agent.value_opt)
               for g in o.param_groups)
    for _ in range(3):
        batch = agent.sample_batch()
        agent.update(batch)
        twin.update(batch)
        _iql_reference_update(reference, batch)
        reference.counters.updates += 1
    for name in ("actor", "critic", "target_critic", "value"):
        ours = dict(getattr(agent, name).named_parameters())
        for k, p in getattr(twin, name).named_parameters():
            torch.testing.assert_close(ours[k], p, rtol=1e-6, atol=1e-7,
                                       msg=f"{name}.{k}: fused Adam differs from plain Adam")
        for k, p in getattr(reference, name).named_parameters():
            torch.testing.assert_close(ours[k], p, rtol=1e-5, atol=1e-6, msg=f"{name}.{k}")
    assert not torch.equal(agent.value.net[0].weight, plain["value"].net[0].weight)  # it moved
    agent.close()


# ----- configs ------------------------------------------------------------------------------
def test_iql_config_per_domain_and_preset():
    loco, maze = iql_config("hopper-medium"), iql_config("antmaze-umaze")
    assert (loco.expectile, loco.temperature, loco.buffer_size) == (0.7, 3.0, 1_000_000)
    assert (maze.expectile, maze.temperature, maze.buffer_size, maze.domain) == (0.9, 10.0, 2_000_000, "antmaze")
    assert (loco.offline_updates, loco.online_samples, loco.batch_size, loco.hidden_dim) == (1_000_000, 200_000, 256, 256)
    cpu = iql_config("hopper-medium", "cpu")
    assert (cpu.offline_updates, cpu.online_samples, cpu.buffer_size, cpu.online_window) == \
        (180_000, 5_000, 1_000_000, 25_000)  # the protocol's plateau length; online data's share 20%
    # AntMaze at the cpu preset: 100-episode evaluations at the phase ends, 20 in between
    assert (iql_config("antmaze-umaze", "cpu").eval_episodes, iql_config("antmaze-umaze", "cpu").eval_episodes_interim) == (100, 20)
    assert (cpu.eval_episodes, cpu.eval_episodes_interim, maze.eval_episodes_interim) == (10, 0, 0)
    assert iql_config("hopper-medium", "smoke", 7, {"expectile": "0.8"}).expectile == 0.8
    with pytest.raises(ConfigError, match="expectile"):
        iql_config("hopper-medium", overrides={"expectile": 1.5})


def test_dt_config_is_the_original_gym_setting():
    cfg = dt_config("halfcheetah-medium")
    m, o = cfg.model, cfg.optim
    assert (m.stochastic, m.embed_dim, m.n_layers, m.n_heads, m.context_len, m.eval_context_len) == (False, 128, 3, 1, 20, 20)
    assert m.positional_embedding and m.activation == "relu" and m.dropout == 0.1
    assert (o.optimizer, o.lr, o.weight_decay, o.warmup_steps, o.batch_size, o.grad_clip) == ("adamw", 1e-4, 1e-4, 10_000, 64, 0.25)
    assert (cfg.pretrain_updates, cfg.rtg_scale, cfg.g_eval, cfg.online.online_samples) == (100_000, 1000.0, 6000.0, 0)
    assert cfg.eval_every_updates == 10_000  # DT's 10 iterations of 1e4 updates, evaluated after each
    assert dt_config("hopper-medium").seed == 0 and dt_config("hopper-medium", seed=3).seed == 3
    assert dt_config("hopper-medium").g_eval == 3600 and dt_config("walker2d-medium-replay").g_eval == 5000
    assert dt_config("ant-medium").g_eval == 6000  # DT had no ant target: the ODT table's
    cpu = dt_config("hopper-medium", "cpu")
    assert (cpu.pretrain_updates, cpu.optim.warmup_steps, cpu.model.embed_dim, cpu.model.n_heads) == (2500, 1000, 64, 1)
    # PROTOCOL-dt-sizing-cpu.md: 3e-4 at the cpu preset only (the LAMB floor does not apply to AdamW)
    assert (cpu.optim.optimizer, cpu.optim.lr) == ("adamw", 3e-4)
    assert dt_config("hopper-medium", "smoke").optim.lr == 1e-4
    with pytest.raises(ConfigError, match="offline only"):
        dt_config("hopper-medium", overrides={"online.online_samples": 10})



def _unlike_odt(real):
    """ODT's paper configuration with every field DT sets moved to a value DT never uses."""
    def base(dataset: str, mode: str):
        c = real(dataset, mode)
        return dataclasses.replace(
            c,
            model=dataclasses.replace(c.model, embed_dim=96, n_layers=2, n_heads=2, dropout=0.3, activation="gelu",
                                      context_len=7, eval_context_len=3, positional_embedding=False),
            optim=dataclasses.replace(c.optim, batch_size=17, optimizer="lamb", lr=3e-3, weight_decay=0.5,
                                      warmup_steps=7, grad_clip=9.0),
            online=dataclasses.replace(c.online, online_samples=1234),
            pretrain_updates=77, g_eval=11.0, eval_every_updates=13)
    return base


def test_dt_settings_are_dt_own_and_do_not_follow_odt_defaults(monkeypatch):
    """DT's gym settings (the original DT code's defaults: embedding 128, 3 layers, 1 head, ReLU,
    dropout 0.1, K = 20, batch 64, AdamW 1e-4 with weight decay 1e-4, warmup 1e4, clip 0.25,
    10 x 1e4 updates, targets hopper 3600 / walker2d 5000 / halfcheetah 6000) must hold whatever
    ODT's defaults are: most of them coincide with ODT's today, so only a base that differs in
    every field shows that DT sets each one itself. Ant has no DT target and keeps ODT's g_eval."""
    monkeypatch.setattr(dt_module, "paper_config", _unlike_odt(dt_module.paper_config))
    for dataset, target in [("hopper-medium", 3600.0), ("walker2d-medium", 5000.0), ("halfcheetah-medium-replay", 6000.0)]:
        cfg = dt_config(dataset)
        m, o = cfg.model, cfg.optim
        assert (m.embed_dim, m.n_layers, m.n_heads, m.dropout, m.activation) == (128, 3, 1, 0.1, "relu"), dataset
        assert (m.context_len, m.eval_context_len, m.positional_embedding, m.stochastic) == (20, 20, True, False), dataset
        assert (o.batch_size, o.optimizer, o.lr, o.weight_decay, o.warmup_steps, o.grad_clip) == (64, "adamw", 1e-4, 1e-4, 10_000, 0.25)
        assert (cfg.online.online_samples, cfg.pretrain_updates, cfg.eval_every_updates) == (0, 100_000, 10_000)
        assert cfg.g_eval == target, dataset
    assert dt_config("ant-medium").g_eval == 11.0


def test_dt_errors_name_the_bad_value_and_the_choices():
    with pytest.raises(ConfigError) as err:
        dt_config("hopper-medium", preset="fast")
    assert str(err.value) == "unknown preset 'fast'; known: paper, cpu, cpu-200k, smoke"
    cfg = dt_config("hopper-medium", "smoke", overrides={"model.stochastic": True})
    with pytest.raises(ConfigError) as err:
        dt_agent(cfg, None, make_hopper)
    assert str(err.value) == "model.stochastic=True: DT uses the deterministic head"


def test_dt_agent_hands_its_score_function_and_progress_flag_to_the_trainer(hopper_random):
    cfg = dt_config("hopper-medium", "smoke", overrides={"device": "cpu"})

    def score(returns):
        return returns / 100.0

    trainer = dt_agent(cfg, hopper_random, make_hopper, score_fn=score, progress=False)
    assert trainer.score_fn is score and trainer.progress is False
    assert dt_agent(cfg, hopper_random, make_hopper).progress is True  # a bar by default, as every method


# ----- learning signals on a small problem --------------------------------------------------
class ReachEnv(gym.Env):
    """Each step shows a random state s; reward 1 - mean((a - a*(s))^2) with a*(s) = tanh(W s).
    Episodes last 8 steps (truncated). A uniformly random policy scores about 0.5 per step."""

    W = np.array([[1.5, -1.0, 0.5], [-0.5, 1.0, 1.5]], dtype=np.float32)
    LENGTH = 8

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._t = 0
        self._obs = np.zeros(3, np.float32)

    @classmethod
    def best(cls, obs):
        return np.tanh(obs @ cls.W.T)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self._obs = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return self._obs, {}

    def step(self, action):
        reward = 1.0 - float(np.mean((np.clip(action, -1, 1) - self.best(self._obs)) ** 2))
        self._t += 1
        self._obs = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return self._obs, reward, False, self._t >= self.LENGTH, {}


def reach_dataset(episodes=200, length=ReachEnv.LENGTH, seed=0) -> Trajectories:
    """Half the episodes near-optimal (noisy a*), half uniformly random: BC-able with a filter."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(episodes):
        obs = rng.uniform(-1, 1, (length, 3)).astype(np.float32)
        best = ReachEnv.best(obs)
        act = (np.clip(best + rng.normal(0, 0.1, best.shape), -1, 1) if i % 2
               else rng.uniform(-1, 1, best.shape)).astype(np.float32)
        rew = 1.0 - np.mean((act - best) ** 2, axis=1)
        out.append(dict(observations=obs, actions=act, rewards=rew.astype(np.float32), terminated=False))
    return Trajectories.from_episodes(out)


SIGNAL_OVERRIDES = {
    "dt": {"pretrain_updates": 400, "optim.lr": 1e-3, "rtg_scale": 10.0, "g_eval": 8.0,
           "model.max_ep_len": 16, "eval_every_updates": 10_000},
    "iql": {"offline_updates": 400, "online_samples": 0, "hidden_dim": 64, "eval_every_updates": 10_000},
    "sac": {"online_samples": 1500, "warmup_steps": 100, "eval_every": 10_000},  # online from scratch
}


@pytest.mark.parametrize("method", sorted(SIGNAL_OVERRIDES))
def test_learning_signal_on_a_small_problem(method):
    data = reach_dataset()
    cfg = method_config(method, "hopper-medium", "smoke", seed=0, overrides=SIGNAL_OVERRIDES[method])
    agent = build_agent(method, cfg, data, ReachEnv, progress=False)
    try:
        before = agent.evaluate(episodes=10)["return_mean"]
        row = agent.pretrain() or agent.finetune()  # SAC has no offline phase
        after = agent.evaluate(episodes=10)["return_mean"]
    finally:
        agent.close()
    random_policy = ReachEnv.LENGTH * (1 - (1 / 3 + np.mean(ReachEnv.best(np.random.default_rng(1).uniform(-1, 1, (4000, 3))) ** 2)))
    assert after > random_policy + 1.5, (before, after, random_policy)
    assert after > before + 1.0
    assert row["return_mean"] > random_policy + 1.5


def test_iql_advantage_weights_beat_behaviour_cloning_on_mixed_data():
    # Long trajectories put the scaled rewards on D4RL's scale (1000 / return spread ~ 1).
    data = reach_dataset(episodes=10, length=1000)
    cfg = iql_config("hopper-medium", "smoke", 0, {**SIGNAL_OVERRIDES["iql"], "offline_updates": 1000})
    agent = build_agent("iql", cfg, data, ReachEnv, progress=False)
    try:
        assert agent.reward_scale[0] == pytest.approx(1000 / np.ptp(data.returns()))
        for _ in range(cfg.offline_updates):
            agent.update(agent.sample_batch())
        obs = np.random.default_rng(5).uniform(-1, 1, (500, 3)).astype(np.float32)
        best = ReachEnv.best(obs)
        err = float(np.mean((agent.act(obs, sample=False) - best) ** 2))
    finally:
        agent.close()
    # the best behaviour cloning can do is the data's mean action, (a* + 0) / 2
    bc_err = float(np.mean((0.5 * best - best) ** 2))
    assert err < 0.5 * bc_err, (err, bc_err)


def test_iql_stop_request_checkpoints_at_the_next_safe_point_then_raises(hopper_random):
    cfg = method_config("iql", "hopper-medium", "smoke", seed=1)
    agent = build_agent("iql", cfg, hopper_random, make_hopper, progress=False)
    saved = []
    try:
        agent.request_stop()  # offline: the next safe point is right after the current update
        with pytest.raises(StopRequested):
            agent.pretrain(checkpoint=lambda: saved.append(agent.state_dict()))
        assert agent.counters.updates == 1 and [s["counters"]["updates"] for s in saved] == [1]

        agent.safe_points.requested = False
        agent.pretrain()
        agent.request_stop()  # online: at the end of the current episode
        with pytest.raises(StopRequested):
            agent.finetune(checkpoint=lambda: saved.append(agent.state_dict()))
        k = saved[-1]["counters"]
        assert k["episodes"] == 1 and 0 < k["online_samples"] == agent.counters.online_samples < cfg.online_samples
    finally:
        agent.close()
