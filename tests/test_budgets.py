"""Every registered method states its budget, and the launch estimate prices it, never guesses.

Each expected count is worked out here from the method's own config and its definition (ODT:
the paper's Algorithm 1, R rounds of one exploration episode and I updates each; IQL and SAC one
update per online step, SAC's only after its warmup; BC offline only), not read back from
``benchmarks.budgets``. Configs are the ``cpu`` preset's on hopper-medium, whose fields each
test pins first, so a changed preset shows here as a changed premise, not a changed price.
"""

from __future__ import annotations

import pytest

from baselines.bc import bc_config
from benchmarks.corl.driver import CorlIQLConfig
from benchmarks.experiments import RunSpec
from benchmarks.launch import NoBudget, estimate, estimate_run, run_budget
from benchmarks.methods import METHODS, budget_of, method_config
from benchmarks.official.driver import OfficialODTConfig, official_variant
from rlbase.config import ConfigError

HOPPER = "hopper-medium"
CAP = 1000  # hopper's episode cap
EPISODE = CAP // 2  # ODT's layout prices a locomotion episode at half the cap
MLP_LAYER = 256 * 256  # the hidden-to-hidden weights of a (256, 256) MLP


def _odt(method: str = "odt", **overrides):
    cfg = method_config(method, HOPPER, "cpu", 0, overrides)
    assert (cfg.pretrain_updates, cfg.eval_every_updates, cfg.eval_episodes, cfg.eval_episodes_interim) == (2500, 1000, 10, 0)
    assert (cfg.model.max_ep_len, cfg.online.updates_per_round, cfg.online.eval_every_rounds) == (CAP, 300, 5)
    return cfg


def _transformer_flops(cfg) -> float:
    """6 x parameters x tokens (12 L d^2 parameters, 3K tokens) plus attention (12 L B (3K)^2 d)."""
    m, batch = cfg.model, cfg.optim.batch_size
    tokens = 3 * m.context_len
    return 6 * batch * tokens * 12 * m.n_layers * m.embed_dim ** 2 + 12 * m.n_layers * batch * tokens ** 2 * m.embed_dim


def _check_odt(method: str) -> None:
    cfg = _odt(method)
    assert cfg.online.online_samples == 5000
    b = run_budget(method, cfg, HOPPER)
    rounds = 5000 / EPISODE  # 10 rounds of one 500-step episode
    assert (b.pretraining.updates, b.online.updates) == (2500, rounds * 300)
    assert b.pretraining.env_steps == 3 * 10 * EPISODE  # evaluations at 1000, 2000 and 2500 updates
    assert b.online.env_steps == 5000 + 2 * 10 * EPISODE  # the samples, evaluations after rounds 5 and 10
    assert b.update_flops == pytest.approx(_transformer_flops(cfg)) and b.exact
    assert estimate_run(method, cfg, HOPPER)[:2] == (2500 + 3000, 5000 + 5 * 10 * EPISODE)


def _check_offline_transformer(method: str) -> None:
    cfg = _odt(method)
    assert cfg.online.online_samples == 0
    b = run_budget(method, cfg, HOPPER)
    assert (b.pretraining.updates, b.pretraining.env_steps) == (2500, 3 * 10 * EPISODE)
    assert (b.online.updates, b.online.env_steps) == (0, 0)
    assert b.update_flops == pytest.approx(_transformer_flops(cfg))


def _check_matched_control(method: str) -> None:
    """Stopping on its twin's online updates: 4200 of them are 14 rounds of 300."""
    cfg = _odt(method, **{"online.online_updates": 4200})
    b = run_budget(method, cfg, HOPPER)
    assert b.online.updates == 4200 and b.online.env_steps == 14 * EPISODE + 3 * 10 * EPISODE  # after rounds 5, 10, 14
    assert run_budget(method, _odt(method), HOPPER).online.updates == 3000  # no twin read yet: its twin's samples


def _iql_cfg():
    cfg = method_config("iql", HOPPER, "cpu", 0, {})
    assert (cfg.offline_updates, cfg.eval_every_updates, cfg.online_samples, cfg.eval_every_samples) == (
        180_000, 10_000, 5000, 1000)
    assert (cfg.eval_episodes, cfg.eval_episodes_interim, cfg.batch_size, cfg.hidden_dim, cfg.n_hidden) == (
        10, 0, 256, 256, 2)
    return cfg


def _check_iql_budget(b) -> None:
    """180k offline updates evaluated 18 times, then one update per online sample, 5 evaluations,
    each of 10 episodes at the cap; an update about six passes of the hidden layer."""
    assert (b.pretraining.updates, b.online.updates) == (180_000, 5000)
    assert (b.pretraining.env_steps, b.online.env_steps) == (18 * 10 * CAP, 5000 + 5 * 10 * CAP)
    assert b.update_flops == 6 * 256 * 6 * MLP_LAYER and not b.exact


def _check_iql(method: str) -> None:
    _check_iql_budget(run_budget(method, _iql_cfg(), HOPPER))


def _check_corl_iql(method: str) -> None:
    """CORL's IQL runs the budget of the ``iql`` config it maps (its driver evaluates where ``iql`` does)."""
    _check_iql_budget(run_budget(method, CorlIQLConfig(iql=_iql_cfg(), dataset=HOPPER, script="finetune"), HOPPER))


def _check_sac(method: str) -> None:
    cfg = method_config(method, HOPPER, "cpu", 0, {})
    assert (cfg.online_samples, cfg.warmup_steps, cfg.updates_per_step, cfg.eval_every, cfg.eval_episodes) == (
        5000, 125, 1, 1000, 10)
    b = run_budget(method, cfg, HOPPER)
    assert (b.pretraining.updates, b.pretraining.env_steps) == (0, 0)
    assert (b.online.updates, b.online.env_steps) == (5000 - 125, 5000 + 5 * 10 * CAP)
    assert b.update_flops == 6 * 256 * 6 * MLP_LAYER


def _check_bc(method: str) -> None:
    """180k updates of one actor, evaluated every 1e4; an update is one forward-backward pass."""
    cfg = method_config(method, HOPPER, "cpu", 0, {})
    assert (cfg.updates, cfg.eval_every_updates, cfg.eval_episodes, cfg.batch_size, cfg.hidden_dim) == (
        180_000, 10_000, 10, 256, 256)
    b = run_budget(method, cfg, HOPPER)
    assert (b.pretraining.updates, b.pretraining.env_steps) == (180_000, 18 * 10 * CAP)
    assert (b.online.updates, b.online.env_steps) == (0, 0)
    assert b.update_flops == 6 * 256 * MLP_LAYER


def _check_official(method: str) -> None:
    """The official code on ``odt``'s config: its pretraining in 5 iterations of 500 updates, an
    evaluation after each; every evaluation steps its 10 environments to the cap."""
    odt = _odt()
    variant = official_variant(odt, HOPPER)
    assert (variant["max_pretrain_iters"], variant["num_updates_per_pretrain_iter"]) == (5, 500)
    b = run_budget(method, OfficialODTConfig(odt=odt, dataset=HOPPER, variant=variant), HOPPER)
    assert (b.pretraining.updates, b.online.updates) == (2500, 3000)
    assert (b.pretraining.env_steps, b.online.env_steps) == (5 * 10 * CAP, 5000 + 2 * 10 * CAP)
    assert b.update_flops == pytest.approx(_transformer_flops(odt))


CHECKS = {
    "odt": _check_odt, "odt-control": _check_odt, "odt-control-matched": _check_matched_control,
    "odt-offline": _check_offline_transformer, "dt": _check_offline_transformer,
    "iql": _check_iql, "corl-iql": _check_corl_iql, "sac": _check_sac, "bc": _check_bc,
    "official-odt": _check_official,
}


def test_every_registered_method_states_a_budget_checked_here():
    assert sorted(CHECKS) == sorted(METHODS)  # a new method needs its budget and a check of it
    assert all(budget_of(m) is not None for m in METHODS)


@pytest.mark.parametrize("method", sorted(CHECKS))
def test_the_budget_each_method_states(method):
    CHECKS[method](method)


def test_a_method_that_states_no_budget_is_refused_not_priced_at_zero(monkeypatch):
    monkeypatch.setitem(METHODS, "no-budget", (bc_config, METHODS["bc"][1]))
    spec = RunSpec("t", "no-budget", HOPPER, 0, "cpu")
    with pytest.raises(NoBudget, match="method 'no-budget' states no budget"):
        estimate([spec])
    assert issubclass(NoBudget, ConfigError)  # the runner reports it as a bad config, before anything runs
    assert estimate([RunSpec("t", "bc", HOPPER, 0, "cpu")]).updates == 180_000  # the same config, stated
