"""The learner alone: built from a config and two sizes (no environment, no data), one update on
a made-up batch checked against the paper's objective computed here by hand, and its state."""

from __future__ import annotations

import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import toy_trajectories

from odt.config import make_config
from odt.learner import ODTLearner
from odt.train import ODTTrainer

OBS, ACT, B = 3, 2, 6


def _cfg(**overrides):
    base = {"model.dropout": 0.0, "device": "cpu"}
    return make_config("hopper-medium", "online", "smoke", {**base, **overrides})


def _batch(cfg, seed: int = 1) -> dict[str, torch.Tensor]:
    """B windows of K steps; actions inside (-0.9, 0.9); the last positions of some rows padded."""
    g = torch.Generator().manual_seed(seed)
    k = cfg.model.context_len
    valid = torch.tensor([k, k, 2, 1, k - 1, 3])[:, None]
    return {"states": torch.randn(B, k, OBS, generator=g),
            "actions": 0.9 * (2 * torch.rand(B, k, ACT, generator=g) - 1),
            "rtg": torch.randn(B, k, 1, generator=g),
            "timesteps": torch.arange(k).repeat(B, 1),
            "mask": torch.arange(k)[None, :] < valid}


def _log_prob_by_hand(a_or_u: torch.Tensor, mean, log_std, given_action: bool) -> torch.Tensor:
    """log pi(a) for a = tanh(u), u ~ N(mean, std^2): log N(u) - log(1 - a^2), summed over dims."""
    u = torch.atanh(a_or_u) if given_action else a_or_u
    a = a_or_u if given_action else torch.tanh(u)
    normal = torch.distributions.Normal(mean, log_std.exp())
    return (normal.log_prob(u) - torch.log1p(-a.pow(2))).sum(-1)


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return x[mask].mean()


def test_a_learner_needs_no_environment(monkeypatch):
    def no_env(*args, **kwargs):
        raise AssertionError("the learner made an environment")

    monkeypatch.setattr(gym, "make", no_env)
    cfg = _cfg()
    learner = ODTLearner(cfg, OBS, ACT)
    m = learner.step(_batch(cfg))
    assert learner.updates == 1 and set(m) == {"loss", "nll", "entropy", "lambda"}


@pytest.mark.parametrize("beta", [50.0, -50.0])
def test_one_update_is_nll_minus_lambda_entropy_and_the_dual_step_moves_lambda_toward_beta(beta):
    """Eq. 6: the policy loss is J - lambda H, J the masked mean of -log pi(a_data) and H the
    one-sample estimate -log pi(a~) with a~ = tanh(mu + sigma eps), both from the model's
    outputs before the update, lambda its value before the dual step. Eq. 7 with Adam on
    log(lambda): the first step is -lr sign(lambda (H - beta)), so lambda grows by exp(lr)
    when H < beta and shrinks by it when H > beta."""
    lr = 0.01
    cfg = _cfg(**{"optim.lambda_lr": lr, "optim.target_entropy": beta})
    torch.manual_seed(7)
    learner = ODTLearner(cfg, OBS, ACT)
    batch = _batch(cfg)
    lam0 = learner.lam
    with torch.no_grad():  # the outputs the update sees (dropout 0: the forward draws nothing)
        learner.model.train()
        mean, log_std = (t.double() for t in learner.model(batch["states"], batch["actions"], batch["rtg"],
                                                           batch["timesteps"]))
    rng = torch.get_rng_state()
    eps = torch.randn(mean.shape, dtype=torch.float32).double()  # the update's entropy sample
    torch.set_rng_state(rng)

    m = {k: float(v) for k, v in learner.step(batch).items()}

    mask, actions = batch["mask"], batch["actions"].double()
    nll = -_masked_mean(_log_prob_by_hand(actions, mean, log_std, given_action=True), mask).item()
    u = mean + log_std.exp() * eps
    entropy = -_masked_mean(_log_prob_by_hand(u, mean, log_std, given_action=False), mask).item()
    assert m["nll"] == pytest.approx(nll, rel=1e-5)
    assert m["entropy"] == pytest.approx(entropy, rel=1e-4, abs=1e-5)
    assert m["loss"] == pytest.approx(nll - lam0 * entropy, rel=1e-4, abs=1e-5)
    assert abs(entropy) < 20  # so beta = +-50 lies surely above / below it
    assert (learner.lam > lam0) == (entropy < beta)
    assert learner.lam == pytest.approx(lam0 * math.exp(lr if entropy < beta else -lr), rel=1e-5)
    assert m["lambda"] == pytest.approx(learner.lam, rel=1e-7)


def test_the_deterministic_head_takes_the_masked_mse_and_leaves_lambda_alone():
    cfg = _cfg(**{"model.stochastic": False})
    torch.manual_seed(7)
    learner = ODTLearner(cfg, OBS, ACT)
    batch = _batch(cfg)
    with torch.no_grad():
        learner.model.train()
        predicted = learner.model(batch["states"], batch["actions"], batch["rtg"], batch["timesteps"]).double()
    mse = _masked_mean((predicted - batch["actions"].double()).pow(2).mean(-1), batch["mask"]).item()
    lam0 = learner.lam
    m = {k: float(v) for k, v in learner.step(batch).items()}
    assert set(m) == {"loss", "nll"} and m["loss"] == pytest.approx(mse, rel=1e-5)
    assert learner.lam == lam0


def _saved_and_loaded(state: dict) -> dict:
    """The state as a checkpoint file gives it back (optimiser states share tensors with the
    live optimiser until they are written)."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def test_a_loaded_learner_takes_the_same_next_update():
    cfg = _cfg(**{"model.dropout": 0.1})
    torch.manual_seed(3)
    a = ODTLearner(cfg, OBS, ACT)
    a.step(_batch(cfg, seed=1))
    b = ODTLearner(cfg, OBS, ACT)
    b.load_state_dict(_saved_and_loaded(a.state_dict()))
    assert b.updates == a.updates == 1 and b.lam == a.lam
    rng = torch.get_rng_state()
    ma = a.step(_batch(cfg, seed=2))
    torch.set_rng_state(rng)
    mb = b.step(_batch(cfg, seed=2))
    assert all(torch.equal(ma[k], mb[k]) for k in ma)
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(pa, pb)


def test_a_nan_loss_is_noted_with_its_update_and_not_read_until_asked():
    cfg = _cfg()
    learner = ODTLearner(cfg, OBS, ACT)
    learner.step(_batch(cfg))
    assert learner.first_divergence() is None and learner.parameters_finite()
    with torch.no_grad():
        learner.model.embed_state.weight.fill_(float("nan"))
    learner.step(_batch(cfg))
    learner.step(_batch(cfg))
    at, loss = learner.first_divergence()
    assert at == 1 and math.isnan(loss) and not learner.parameters_finite()


class _BoxEnv(gym.Env):
    observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (ACT,), np.float32)


CHECKPOINT_KEYS = {"model", "optimizer", "scheduler", "log_lambda", "lambda_optimizer", "divergence",
                   "buffer", "counters", "running", "batch_generator", "rng_numpy", "rng_torch", "rng_cuda"}


def test_the_trainer_checkpoint_keeps_its_keys_and_a_bare_learner_loads_it():
    """The checkpoint layout runs have written all along (so old checkpoints resume), the
    learner's keys among them; a learner alone takes its policy from a run's checkpoint."""
    cfg = _cfg(**{"optim.batch_size": 4})
    trainer = ODTTrainer(cfg, toy_trajectories([7, 3, 9, 5], obs_dim=OBS, act_dim=ACT), _BoxEnv, progress=False)
    trainer.update(trainer.batch_tensors(trainer.buffer))
    state = trainer.state_dict()
    assert set(state) == CHECKPOINT_KEYS and set(trainer.learner.state_dict()) <= CHECKPOINT_KEYS
    learner = ODTLearner(cfg, OBS, ACT)
    learner.load_state_dict(state)
    assert learner.updates == trainer.counters.updates == 1 and learner.lam == trainer.lam
    for p, q in zip(learner.model.parameters(), trainer.model.parameters()):
        assert torch.equal(p, q)
    trainer.close()
