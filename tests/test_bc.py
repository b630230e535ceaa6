"""Behaviour cloning (baselines/bc.py): its loss is the MSE on the dataset's actions, its updates
lower it, its settings are CORL's at each preset, a resumed run is the uninterrupted one bit for
bit, and the runner completes a smoke launch of it."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from conftest import make_hopper

from baselines.bc import BCAgent, bc_config
from baselines.metrics import READ_EVERY_UPDATES
from benchmarks import run as run_cli
from benchmarks.methods import build_agent, method_config
from rlbase.config import ConfigError
from rlbase.presets import CPU_IQL_OFFLINE_UPDATES
from rlbase.training import StopRequested, TrainingDiverged


def _numpy_actor(agent: BCAgent, obs: np.ndarray) -> np.ndarray:
    """The actor's action from its weights, in float64 numpy: standardise, (Linear, ReLU)*, Linear, tanh, rescale."""
    x = (obs.astype(np.float64) - obs_mean(agent)) / obs_std(agent)
    linears = [m for m in agent.actor.net if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(linears):
        x = x @ layer.weight.detach().double().numpy().T + layer.bias.detach().double().numpy()
        x = np.maximum(x, 0.0) if i < len(linears) - 1 else np.tanh(x)
    return x * agent.actor.scale.double().numpy() + agent.actor.center.double().numpy()


def obs_mean(agent):
    return agent.dataset_observations.astype(np.float64).mean(axis=0)


def obs_std(agent):
    return agent.dataset_observations.astype(np.float64).std(axis=0) + agent.cfg.obs_std_eps


@pytest.fixture
def agent(hopper_random):
    a = BCAgent(bc_config("hopper-medium", "smoke", seed=2), hopper_random, make_hopper, progress=False)
    a.dataset_observations = hopper_random.observations  # for the independent computation above
    yield a
    a.close()


def test_loss_is_the_mean_squared_error_on_the_datasets_actions(agent, hopper_random):
    rng = np.random.default_rng(7)
    idx = rng.integers(0, hopper_random.num_steps, size=64)
    obs, act = hopper_random.observations[idx], hopper_random.actions[idx].astype(np.float64)
    expected = np.mean((_numpy_actor(agent, obs) - act) ** 2)  # over batch and action entries

    before = copy.deepcopy(agent.actor.state_dict())
    loss = agent.update(agent.observations[torch.from_numpy(idx)], agent.actions[torch.from_numpy(idx)])
    assert loss == pytest.approx(expected, rel=1e-5)
    # evaluation acts with the same function of the raw observation
    agent.actor.load_state_dict(before)
    np.testing.assert_allclose(agent.act(obs), _numpy_actor(agent, obs), rtol=1e-4, atol=1e-5)


def test_a_few_updates_lower_the_loss_on_a_fixed_batch(agent):
    obs, act = agent.sample_batch()
    losses = [agent.update(obs, act) for _ in range(20)]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses  # Adam at 3e-4: small, steady steps
    assert losses[-1] < 0.95 * losses[0], losses
    assert agent.counters.updates == 20


def test_update_names_a_divergence_at_its_update(agent):
    agent.update(*agent.sample_batch())
    obs, act = agent.sample_batch()
    with pytest.raises(TrainingDiverged, match=r"BC losses \{'bc_loss': nan\} at update 1"):
        agent.update(obs, torch.full_like(act, float("nan")))


@pytest.mark.parametrize("every, raised_at, kept", [(5, 10, [5]), (1000, READ_EVERY_UPDATES, [])])
def test_a_nan_loss_stops_bc_within_one_read_interval_and_no_checkpoint_holds_it(hopper_random, every, raised_at, kept):
    """The loop reads its loss every READ_EVERY_UPDATES updates and before every checkpoint, not
    every update: a NaN loss from update 7 on raises TrainingDiverged at whichever comes first."""
    cfg = bc_config("hopper-medium", "smoke", 0, {"updates": 3 * READ_EVERY_UPDATES, "eval_every_updates": 1000,
                                                   "checkpoint_every_updates": every})
    agent = BCAgent(cfg, hopper_random, make_hopper, progress=False)
    sample, checkpoints = agent.sample_batch, []

    def poisoned():
        obs, act = sample()
        return (obs, torch.full_like(act, float("nan"))) if agent.counters.updates >= 7 else (obs, act)

    agent.sample_batch = poisoned
    try:
        with pytest.raises(TrainingDiverged, match="BC losses"):
            agent.pretrain(checkpoint=lambda: checkpoints.append(agent.counters.updates))
        assert agent.counters.updates == raised_at and checkpoints == kept
    finally:
        agent.close()


def test_a_stop_request_checkpoints_after_the_current_update_then_raises(agent):
    saved = []
    agent.request_stop()
    with pytest.raises(StopRequested, match=r"^stopped on request at update 1$"):
        agent.pretrain(checkpoint=lambda: saved.append(agent.counters.updates))
    assert saved == [1] and agent.counters.updates == 1


def test_settings_are_corls_at_each_preset():
    paper = bc_config("hopper-medium", "paper")
    assert (paper.hidden_dim, paper.n_hidden, paper.lr, paper.batch_size, paper.updates) == (256, 2, 3e-4, 256, 1_000_000)
    assert paper.normalize_observations and paper.obs_std_eps == 1e-3
    assert (paper.eval_every_updates, paper.eval_episodes) == (5000, 10)
    assert bc_config("antmaze-umaze", "paper").eval_episodes == 100
    cpu = bc_config("hopper-medium", "cpu")
    assert (cpu.hidden_dim, cpu.batch_size, cpu.lr) == (256, 256, 3e-4)  # network, batch and rate kept
    assert cpu.updates == CPU_IQL_OFFLINE_UPDATES and cpu.eval_every_updates == 10_000
    assert bc_config("hopper-medium", "cpu-200k") == cpu
    ant = bc_config("antmaze-umaze", "cpu")
    assert (ant.eval_episodes, ant.eval_episodes_interim) == (100, 20)
    with pytest.raises(ConfigError, match="online_samples"):
        bc_config("hopper-medium", "smoke", overrides={"online_samples": 10})
    with pytest.raises(ConfigError, match="lr"):
        bc_config("hopper-medium", "smoke", overrides={"lr": 0.0})


def test_evaluation_is_deterministic_on_the_projects_evaluation_seeds(hopper_random):
    score = lambda r: np.asarray(r) / 10.0  # noqa: E731
    cfg = method_config("bc", "hopper-medium", "smoke", seed=4)
    a, b = (build_agent("bc", cfg, hopper_random, make_hopper, score, progress=False) for _ in range(2))
    try:
        first, again = a.evaluate(3), b.evaluate(3)
        assert first["returns"] == again["returns"]  # same weights, same episodes: same returns
        assert first["score_mean"] == pytest.approx(first["return_mean"] / 10.0)
        assert a.evaluate(3)["returns"] != first["returns"]  # the next evaluation runs new episodes
    finally:
        a.close()
        b.close()


def test_resume_from_any_checkpoint_is_bit_identical(hopper_random):
    cfg = bc_config("hopper-medium", "smoke", seed=5, overrides={"updates": 60, "checkpoint_every_updates": 10})
    saved, rows = [], []
    agent = BCAgent(cfg, hopper_random, make_hopper, progress=False)
    try:
        agent.pretrain(log=rows.append, checkpoint=lambda: saved.append(copy.deepcopy(agent.state_dict())))
        final = agent.state_dict()
    finally:
        agent.close()
    assert [s["counters"]["updates"] for s in saved] == [10, 20, 30, 40, 50, 60, 60]
    for start in (saved[1], saved[3]):
        resumed_rows = [r for r in rows if r["updates"] <= start["counters"]["updates"]]
        resumed = BCAgent(cfg, hopper_random, make_hopper, progress=False)
        try:
            resumed.load_state_dict(copy.deepcopy(start))
            resumed.pretrain(log=resumed_rows.append)
            state = resumed.state_dict()
        finally:
            resumed.close()
        for name in ("actor", "opt"):
            torch.testing.assert_close(state[name], final[name], rtol=0, atol=0)
        assert state["rng_numpy"] == final["rng_numpy"] and torch.equal(state["rng_torch"], final["rng_torch"])
        assert {k: v for k, v in state["counters"].items() if not k.endswith("time")} == \
               {k: v for k, v in final["counters"].items() if not k.endswith("time")}
        assert resumed_rows == rows


def test_a_smoke_launch_of_bc_completes(tmp_path, capsys):
    args = ["table1", "--preset", "smoke", "--seeds", "1", "--datasets", "hopper-medium", "--methods", "bc",
            "--executor", "debug", "--results", str(tmp_path / "r"), "--tables-dir", str(tmp_path / "t"), "--quiet"]
    assert run_cli.main(args) == 0
    assert "1 finished, 0 failed" in capsys.readouterr().out
    table = (tmp_path / "t" / "table1.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| dataset"))
    assert "| BC |" in header
