"""The trainer: learning signal, exact resume from checkpoints, Algorithm 1 end to end."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import make_hopper

from odt.config import make_config
from odt.learner import warmup_factor
from odt.rollout import run_episodes
from odt.train import ODTTrainer
from rlbase.checkpoint import CheckpointManager
from rlbase.training import TrainingDiverged


def _cfg(**overrides):
    base = {"online.online_samples": 150, "pretrain_updates": 30, "eval_every_updates": 1000,
            "checkpoint_every_updates": 10, "online.eval_every_rounds": 100}
    return make_config("hopper-medium", "online", "smoke", {**base, **overrides})


def _params(trainer):
    return torch.cat([p.detach().flatten() for p in trainer.model.parameters()])


def test_pretraining_lowers_the_nll(hopper_random):
    trainer = ODTTrainer(_cfg(pretrain_updates=150, **{"optim.lr": 1e-3}), hopper_random, make_hopper, progress=False)
    first = [trainer.update(trainer.batch_tensors(trainer.buffer))["nll"] for _ in range(10)]
    for _ in range(130):
        trainer.update(trainer.batch_tensors(trainer.buffer))
    last = [trainer.update(trainer.batch_tensors(trainer.buffer))["nll"] for _ in range(10)]
    assert np.mean(last) < np.mean(first) - 1.0


class _Stop(Exception):
    pass


def test_checkpoint_round_trip_resumes_exactly(hopper_random, tmp_path):
    cfg = _cfg()
    straight = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    straight.pretrain()
    straight.finetune()

    manager = CheckpointManager(tmp_path / "ckpt", keep=2)
    interrupted = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    calls = {"n": 0}

    def save_then_die():
        manager.save(interrupted.state_dict(), interrupted.counters.updates)
        calls["n"] += 1
        if calls["n"] in (2, 5):  # once during pretraining, once during the online phase
            raise _Stop

    for _ in range(3):
        trainer = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
        state = manager.load_latest().state
        if state is not None:
            trainer.load_state_dict(state)
            # the restored trainer takes the same next batch as the one it was saved from
        interrupted = trainer
        try:
            trainer.pretrain(checkpoint=save_then_die)
            trainer.finetune(checkpoint=save_then_die)
            break
        except _Stop:
            continue
    assert calls["n"] > 5
    assert len(manager.paths()) == 2  # only the last two kept
    torch.testing.assert_close(_params(interrupted), _params(straight), rtol=0, atol=0)
    for key in ("updates", "online_samples", "rounds", "evaluations"):
        assert getattr(interrupted.counters, key) == getattr(straight.counters, key)
    np.testing.assert_array_equal(interrupted.buffer.rtg, straight.buffer.rtg)
    assert interrupted.lam == straight.lam


def test_restored_trainer_draws_the_same_next_batch(hopper_random, tmp_path):
    a = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    for _ in range(3):
        a.update(a.batch_tensors(a.buffer))
    manager = CheckpointManager(tmp_path)
    manager.save(a.state_dict(), a.counters.updates)
    b = ODTTrainer(_cfg(seed=99), hopper_random, make_hopper, progress=False)
    b.load_state_dict(manager.load_latest().state)
    torch.testing.assert_close(_params(a), _params(b), rtol=0, atol=0)
    batch_a, batch_b = a.batch_tensors(a.buffer), b.batch_tensors(b.buffer)
    for k in batch_a:
        torch.testing.assert_close(batch_a[k], batch_b[k], rtol=0, atol=0)


def test_corrupt_checkpoint_falls_back_to_the_previous(hopper_random, tmp_path):
    a = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    manager = CheckpointManager(tmp_path, keep=3)
    manager.save(a.state_dict(), 1)
    newest = manager.save(a.state_dict(), 2)
    newest.write_bytes(newest.read_bytes()[:100])  # truncated
    result = manager.load_latest()
    assert result.path.name.endswith("000000000001.pt")
    assert "checksum mismatch" in result.skipped[0]


def test_online_loop_end_to_end_on_hopper(hopper_random):
    cfg = _cfg(**{"online.online_samples": 200, "online.buffer_size": 5, "online.eval_every_rounds": 3})
    rows = []
    trainer = ODTTrainer(cfg, hopper_random, make_hopper, score_fn=lambda r: 100 * r / 3234.3, progress=False)
    offline = trainer.pretrain(log=rows.append)
    assert offline["phase"] == "pretrain" and trainer.counters.updates == cfg.pretrain_updates
    assert len(trainer.buffer) == 5  # top-N initialised
    final = trainer.finetune(log=rows.append)
    k = trainer.counters
    assert k.online_samples >= 200 and k.updates == cfg.pretrain_updates + k.rounds * cfg.online.updates_per_round
    assert final["phase"] == "online" and np.isfinite(final["return_mean"]) and "score_mean" in final
    assert len(trainer.buffer) == 5  # FIFO kept the capacity; online rollouts replaced offline ones
    assert trainer.buffer.data.lengths.sum() > 0
    assert all(np.isfinite(r["lambda"]) and r["lambda"] > 0 for r in rows)
    online = [r for r in rows if r["phase"] == "online"]
    assert online and all(r["exploration_rtg"] == cfg.online.g_online for r in online)  # fixed g_online
    assert all(np.isfinite(r["exploration_return"]) for r in online)
    assert "exploration_rtg" not in rows[0]  # pretraining rows have no exploration
    trainer.close()


@pytest.mark.parametrize("updates,samples", [(60, 10), (15, 10_000)])
def test_an_update_budget_replaces_the_sample_budget_as_the_stopping_rule(hopper_random, updates, samples):
    """online.online_updates > 0: rounds run until rounds x updates_per_round reaches it, however
    many samples they take (far more, or far fewer, than online_samples); the last round is
    evaluated with the full episode count and checkpointed."""
    cfg = _cfg(**{"online.online_updates": updates, "online.online_samples": samples, "online.eval_every_rounds": 5})
    trainer = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    rows, saved = [], []
    try:
        trainer.pretrain()
        trainer.finetune(log=rows.append, checkpoint=lambda: saved.append(trainer.counters.rounds))
    finally:
        trainer.close()
    k = trainer.counters
    assert trainer.online_updates == updates == k.updates - cfg.pretrain_updates
    assert k.rounds == updates // cfg.online.updates_per_round
    assert (k.online_samples > samples) == (samples == 10)  # the sample budget did not stop it
    assert rows[-1]["rounds"] == k.rounds and len(rows[-1]["returns"]) == cfg.eval_episodes
    assert saved[-1] == k.rounds


def test_an_update_budget_ends_on_a_round():
    from rlbase.config import ConfigError
    with pytest.raises(ConfigError, match="online.online_updates=7 .*multiple of online.updates_per_round"):
        _cfg(**{"online.online_updates": 7})


@pytest.mark.parametrize("interim", [0, 1])
def test_evaluations_in_between_run_the_interim_episodes_and_each_phase_ends_on_the_full_count(hopper_random, interim):
    """The table reads the evaluation that ends pretraining and the one that ends the online
    budget: those run eval_episodes; the others draw the curve with eval_episodes_interim (0:
    eval_episodes, the behaviour before the field)."""
    cfg = _cfg(**{"eval_episodes": 3, "eval_episodes_interim": interim, "eval_every_updates": 10,
                  "online.online_samples": 120, "online.eval_every_rounds": 1})
    rows = []
    trainer = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    trainer.pretrain(log=rows.append)
    trainer.finetune(log=rows.append)
    trainer.close()
    budget = cfg.online.online_samples
    ends = [(r["phase"] == "pretrain" and r["updates"] == cfg.pretrain_updates)
            or (r["phase"] == "online" and r["online_samples"] >= budget) for r in rows]
    assert [r["updates"] for r in rows[:3]] == [10, 20, 30] and sum(ends) == 2 and len(rows) > 4
    assert [len(r["returns"]) for r in rows] == [3 if end or interim == 0 else interim for end in ends]


def test_deterministic_variant_trains_without_lambda(hopper_random):
    trainer = ODTTrainer(_cfg(**{"model.stochastic": False}), hopper_random, make_hopper, progress=False)
    lam = trainer.lam
    m = trainer.update(trainer.batch_tensors(trainer.buffer))
    assert "entropy" not in m and "lambda" not in m and trainer.lam == lam  # no meaningless columns


def test_nan_loss_raises_a_clear_error(hopper_random):
    trainer = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    with torch.no_grad():
        trainer.model.embed_state.weight.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match="loss is nan"):
        trainer.update(trainer.batch_tensors(trainer.buffer))


def test_dataset_that_does_not_fit_the_env_is_an_error(hopper_random):
    from rlbase.trajectories import Trajectories

    wrong = Trajectories(hopper_random.observations[:, :5], hopper_random.actions, hopper_random.rewards,
                         hopper_random.lengths, hopper_random.terminated)
    with pytest.raises(ValueError, match="do not fit the environment"):
        ODTTrainer(_cfg(), wrong, make_hopper, progress=False)


def test_stop_request_checkpoints_then_raises_and_resume_matches(hopper_random, tmp_path):
    from rlbase.training import StopRequested

    straight = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    straight.pretrain()
    straight.finetune()

    manager = CheckpointManager(tmp_path)
    trainer = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    saves = []

    def save():
        saves.append(trainer.counters.updates)
        manager.save(trainer.state_dict(), trainer.counters.updates)
        if trainer.counters.rounds >= 2 and not trainer.safe_points.requested:
            trainer.request_stop()  # as a SIGTERM handler would, mid-way through the online phase

    trainer.pretrain(checkpoint=save)
    with pytest.raises(StopRequested):
        trainer.finetune(checkpoint=save)
    assert saves[-1] == trainer.counters.updates < straight.counters.updates
    resumed = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    resumed.load_state_dict(manager.load_latest().state)
    assert resumed.counters.updates == trainer.counters.updates
    resumed.pretrain()
    resumed.finetune()
    torch.testing.assert_close(_params(resumed), _params(straight), rtol=0, atol=0)


def test_nan_parameters_stop_before_a_checkpoint_is_written(hopper_random, tmp_path):
    manager = CheckpointManager(tmp_path)
    trainer = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    manager.save(trainer.state_dict(), 0)
    with torch.no_grad():
        trainer.model.head.mean.bias.fill_(float("inf"))  # the loss stays finite for a moment
    with pytest.raises(TrainingDiverged):
        trainer._save(lambda: manager.save(trainer.state_dict(), 1))
    assert [p.name for p in manager.paths()] == ["ckpt-000000000000.pt"]


def test_online_lr_takes_over_after_pretraining_and_survives_a_checkpoint(hopper_random):
    cfg = _cfg(**{"optim.lr": 1e-3, "online.lr": 2e-4, "optim.warmup_steps": 10})
    trainer = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    trainer.pretrain()
    assert [g["lr"] for g in trainer.optimizer.param_groups] == pytest.approx([2e-4])
    trainer.update(trainer.batch_tensors(trainer.buffer))  # the scheduler keeps the new base rate
    assert [g["lr"] for g in trainer.optimizer.param_groups] == pytest.approx([2e-4])
    resumed = ODTTrainer(cfg, hopper_random, make_hopper, progress=False)
    resumed.load_state_dict(trainer.state_dict())
    resumed.update(resumed.batch_tensors(resumed.buffer))
    assert [g["lr"] for g in resumed.optimizer.param_groups] == pytest.approx([2e-4])
    same = ODTTrainer(_cfg(**{"optim.lr": 1e-3, "optim.warmup_steps": 10}), hopper_random, make_hopper, progress=False)
    same.pretrain()  # without online.lr the paper's single rate stays
    assert [g["lr"] for g in same.optimizer.param_groups] == pytest.approx([1e-3])


# ----- one step at a time: warmup, batch assembly, exploration --------------------------------
def test_warmup_is_linear_from_one_over_n_to_one():
    """The official DT/ODT schedule: factor (step + 1) / warmup_steps, capped at 1."""
    assert [warmup_factor(s, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_factor(0, 10_000) == pytest.approx(1e-4)


def test_batch_is_the_buffer_windows_normalised_with_the_configured_sampling(hopper_random):
    """What an update sees: the windows the buffer draws with ``online.sampling`` (here
    return-proportional) from the trainer's generator, states standardised by the dataset's
    statistics, RTG divided by rtg_scale, timesteps capped at max_ep_len - 1, the mask as drawn."""
    trainer = ODTTrainer(_cfg(**{"online.sampling": "return", "model.max_ep_len": 8}), hopper_random, make_hopper,
                         progress=False)
    c = trainer.cfg
    rng = copy.deepcopy(trainer.rng)
    batch = trainer.batch_tensors(trainer.buffer)
    idx, raw = trainer.buffer.sample(rng, c.optim.batch_size, c.model.context_len, "return")
    mean, std = hopper_random.state_statistics()
    np.testing.assert_allclose(batch["states"].numpy(), (raw["observations"] - mean) / std, rtol=1e-6)
    np.testing.assert_array_equal(batch["actions"].numpy(), raw["actions"])
    np.testing.assert_allclose(batch["rtg"].numpy()[..., 0], raw["rtg"] / c.rtg_scale, rtol=1e-6)
    np.testing.assert_array_equal(batch["timesteps"].numpy(), np.minimum(idx.timesteps, 7))
    assert batch["timesteps"].dtype == torch.long and batch["mask"].dtype == torch.bool
    np.testing.assert_array_equal(batch["mask"].numpy(), idx.mask)
    length_rng = copy.deepcopy(rng)  # the same draw under length sampling picks other windows
    assert not np.array_equal(trainer.buffer.sample(length_rng, c.optim.batch_size, c.model.context_len)[0].flat,
                              trainer.buffer.sample(copy.deepcopy(rng), c.optim.batch_size, c.model.context_len,
                                                    "return")[0].flat)


def test_curriculum_exploration_rtg_is_the_buffer_return_percentile(hopper_random):
    trainer = ODTTrainer(_cfg(**{"online.exploration_rtg": "curriculum", "online.curriculum_q": 25.0}),
                         hopper_random, make_hopper, progress=False)
    returns = [float(trainer.buffer.data.episode(i)["rewards"].astype(np.float64).sum())
               for i in range(len(trainer.buffer))]
    assert trainer.exploration_rtg() == pytest.approx(np.percentile(returns, 25.0), rel=1e-9)
    fixed = ODTTrainer(_cfg(), hopper_random, make_hopper, progress=False)
    assert fixed.exploration_rtg() == fixed.cfg.online.g_online


@pytest.mark.parametrize("hindsight", [True, False])
def test_exploration_samples_from_its_round_seed_and_stores_the_episode_with_its_rtg(hopper_random, hindsight):
    """Round r of a run with seed s explores with sampled actions from a generator and an
    environment both seeded 2e7 + 1e5 s + r (whatever torch's global generator holds), and
    stores the episode with hindsight RTG (suffix sums of its rewards) or, without relabeling,
    the commanded RTG g_online minus the rewards received so far."""
    trainer = ODTTrainer(_cfg(seed=3, **{"online.hindsight_relabel": hindsight}), hopper_random, make_hopper,
                         progress=False)
    trainer.counters.rounds = 2
    seed = 20_000_000 + 3 * 100_000 + 2
    g = trainer.cfg.online.g_online
    envs = gym.vector.SyncVectorEnv([make_hopper])
    try:
        expected = run_episodes(trainer.model, envs, trainer.conditioning(g), seeds=[seed], sample=True,
                                generator=torch.Generator().manual_seed(seed))
        mean_action = run_episodes(trainer.model, envs, trainer.conditioning(g), seeds=[seed], sample=False)
    finally:
        envs.close()
    torch.manual_seed(12345)
    got = trainer.explore().episodes[0]
    np.testing.assert_array_equal(got["actions"], expected.episodes[0]["actions"])
    n = min(len(got["actions"]), len(mean_action.episodes[0]["actions"]))
    assert not np.allclose(got["actions"][:n], mean_action.episodes[0]["actions"][:n])
    rewards = got["rewards"].astype(np.float64)
    stored = trainer.buffer.rtg[-len(rewards):]  # the newest trajectory is stored last
    np.testing.assert_array_equal(trainer.buffer.data.episode(len(trainer.buffer) - 1)["rewards"], got["rewards"])
    if hindsight:
        want = [rewards[t:].sum() for t in range(len(rewards))]
    else:
        want = [g - rewards[:t].sum() for t in range(len(rewards))]
    np.testing.assert_allclose(stored, want, rtol=1e-5)
    trainer.close()
