"""What one run of each method computes, as the method states it from its own config.

A :class:`Budget` counts a run's gradient updates and environment steps (training samples and
evaluation episodes) per phase, and the FLOPs of one update. Every method in
``benchmarks.methods.METHODS`` names its budget function there; the launcher's cost estimate
(``benchmarks.launch.cost``) prices those counts and never guesses them from field names.

Counts that depend on how the environment behaves are assumptions, stated once here: a
locomotion episode of ODT's layout is ``EPISODE_FRACTION`` of its cap long on average (online
rounds are what ODT's online time depends on), an AntMaze episode runs to the cap (few reach the
goal at this scale), and an evaluation episode of an MLP baseline is priced at the environment's
cap. One update of a transformer is priced by its layout (6 x parameters x tokens, plus
attention); one of an MLP method by ``mlp_update_flops`` (network passes x hidden-layer weights).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlbase.protocol import domain_defaults, evaluation_episodes, is_antmaze, phase_evaluations

EPISODE_FRACTION = 0.5  # mean locomotion episode length assumed, as a fraction of the cap


@dataclass(frozen=True)
class Phase:
    updates: float = 0.0  # gradient updates
    env_steps: float = 0.0  # environment steps: training samples and evaluation episodes


@dataclass(frozen=True)
class Budget:
    """One run's work: its pretraining (the part another run's saved state can replace) and
    its online phase, and what one gradient update costs."""
    pretraining: Phase
    online: Phase
    update_flops: float  # FLOPs of one gradient update
    exact: bool  # True: update_flops from the network's layout; False: MLP weights counted roughly

    @property
    def updates(self) -> float:
        return self.pretraining.updates + self.online.updates

    @property
    def env_steps(self) -> float:
        return self.pretraining.env_steps + self.online.env_steps

    @property
    def flops(self) -> float:
        return self.updates * self.update_flops


BudgetFn = Callable[[Any, str], Budget]  # (the method's config, dataset) -> its budget


def phase_episodes(evals: int, full: int, interim: int) -> float:
    """Episodes of a phase's ``evals`` evaluations: the one ending it runs ``full``, the others
    ``interim`` where set (``rlbase.protocol.evaluation_episodes``)."""
    if evals <= 0:
        return 0.0
    return full + (evals - 1) * evaluation_episodes(full, interim, ends_phase=False)


def transformer_update_flops(batch: int, context: int, layers: int, dim: int) -> float:
    """FLOPs of one update of a decision transformer: 6 x parameters x tokens plus attention."""
    tokens = 3 * context  # (return, state, action) per timestep
    params = 12 * layers * dim * dim
    return 6.0 * batch * tokens * params + 12.0 * layers * batch * tokens * tokens * dim


def mlp_update_flops(batch: int, hidden: int, n_hidden: int, passes: float) -> float:
    """FLOPs of one update of an MLP method: 6 per weight and sample (forward and backward) over
    ``passes`` forward-backward passes of a network's hidden-to-hidden weights, (n_hidden - 1) x
    hidden^2 (its input and output layers, a few dozen units wide, are left out)."""
    return 6.0 * batch * passes * max(1, n_hidden - 1) * hidden * hidden


def episode_length(cap: int, dataset: str) -> float:
    """Mean episode length assumed for ODT's layout: the cap on AntMaze, else ``EPISODE_FRACTION`` of it."""
    return cap if is_antmaze(dataset) else EPISODE_FRACTION * cap


def eval_length(dataset: str) -> float:
    """Evaluation episode length of an MLP baseline: the environment's cap."""
    return domain_defaults(dataset)["max_ep_len"]


# ----- the decision transformers (odt, odt-offline, odt-control(-matched), dt) ----------------

def odt_rounds(cfg: Any, dataset: str) -> float:
    """Online rounds of an ODT config: its online updates / updates per round where it stops on
    updates (``online.online_updates``), else its sample budget / the assumed episode length."""
    o = cfg.online
    if o.online_updates > 0:
        return o.online_updates / o.updates_per_round
    return o.online_samples / episode_length(cfg.model.max_ep_len, dataset)


def odt_budget(cfg: Any, dataset: str) -> Budget:
    """``pretrain_updates`` evaluated every ``eval_every_updates``, then rounds of one exploration
    episode and ``updates_per_round`` updates, evaluated every ``eval_every_rounds`` rounds."""
    ep_len, o = episode_length(cfg.model.max_ep_len, dataset), cfg.online
    pre_evals = phase_evaluations(cfg.pretrain_updates, cfg.eval_every_updates)
    pre_episodes = phase_episodes(pre_evals, cfg.eval_episodes, cfg.eval_episodes_interim)
    rounds = odt_rounds(cfg, dataset)
    samples = rounds * ep_len if o.online_updates > 0 else o.online_samples
    evals = phase_evaluations(math.ceil(rounds), o.eval_every_rounds)
    episodes = phase_episodes(evals, cfg.eval_episodes, cfg.eval_episodes_interim)
    m = cfg.model
    return Budget(Phase(cfg.pretrain_updates, pre_episodes * ep_len),
                  Phase(rounds * o.updates_per_round, samples + episodes * ep_len),
                  transformer_update_flops(cfg.optim.batch_size, m.context_len, m.n_layers, m.embed_dim), True)


def official_odt_budget(cfg: Any, dataset: str) -> Budget:
    """The official online-dt code on the ``odt`` config it carries (``cfg.odt``, mapped to
    ``cfg.variant``): the same updates and rounds, but it evaluates after every pretraining
    iteration (``num_updates_per_pretrain_iter`` updates), every evaluation runs all
    ``num_eval_episodes``, and its vectorised evaluation steps every environment until the
    longest episode ends (priced at the cap)."""
    own, v = odt_budget(cfg.odt, dataset), cfg.variant
    cap = cfg.odt.model.max_ep_len
    pre_steps = v["max_pretrain_iters"] * v["num_eval_episodes"] * cap
    evals = phase_evaluations(math.ceil(odt_rounds(cfg.odt, dataset)), v["eval_interval"])
    online_steps = cfg.odt.online.online_samples + evals * v["num_eval_episodes"] * cap
    return Budget(Phase(v["max_pretrain_iters"] * v["num_updates_per_pretrain_iter"], pre_steps),
                  Phase(own.online.updates, online_steps), own.update_flops, True)


# ----- the MLP baselines -----------------------------------------------------------------------

def _evaluated(length: float, every: float, full: int, interim: int, dataset: str) -> float:
    """Environment steps of the evaluations of a phase of ``length`` updates or samples."""
    return phase_episodes(phase_evaluations(length, every), full, interim) * eval_length(dataset)


def iql_budget(cfg: Any, dataset: str) -> Budget:
    """``offline_updates`` evaluated every ``eval_every_updates``, then one update per online
    sample, evaluated every ``eval_every_samples``. An update: the value net, the two critics
    and the actor, with the target critics' forward passes: about six network passes."""
    pre = Phase(cfg.offline_updates, _evaluated(cfg.offline_updates, cfg.eval_every_updates, cfg.eval_episodes,
                                                cfg.eval_episodes_interim, dataset))
    online = Phase(cfg.online_samples, cfg.online_samples + _evaluated(
        cfg.online_samples, cfg.eval_every_samples, cfg.eval_episodes, cfg.eval_episodes_interim, dataset))
    return Budget(pre, online, mlp_update_flops(cfg.batch_size, cfg.hidden_dim, cfg.n_hidden, 6), False)


def corl_iql_budget(cfg: Any, dataset: str) -> Budget:
    """CORL's IQL runs the budget of the ``iql`` config it was mapped from (``cfg.iql``): the
    driver makes CORL evaluate only where ``iql`` does."""
    return iql_budget(cfg.iql, dataset)


def sac_budget(cfg: Any, dataset: str) -> Budget:
    """No pretraining; ``online_samples`` environment steps, ``updates_per_step`` updates per step
    once ``warmup_steps`` are taken, evaluated every ``eval_every`` steps. An update: the two
    critics (with the actor's and the target critics' forward passes) and the actor through
    the critics: about six network passes."""
    updates = max(0, cfg.online_samples - cfg.warmup_steps) * cfg.updates_per_step
    steps = cfg.online_samples + _evaluated(cfg.online_samples, cfg.eval_every, cfg.eval_episodes, 0, dataset)
    return Budget(Phase(), Phase(updates, steps), mlp_update_flops(cfg.batch_size, cfg.hidden_dim, cfg.n_hidden, 6),
                  False)


def bc_budget(cfg: Any, dataset: str) -> Budget:
    """``updates`` offline updates evaluated every ``eval_every_updates``; no online phase. An
    update: one forward-backward pass of the actor."""
    pre = Phase(cfg.updates, _evaluated(cfg.updates, cfg.eval_every_updates, cfg.eval_episodes,
                                        cfg.eval_episodes_interim, dataset))
    return Budget(pre, Phase(), mlp_update_flops(cfg.batch_size, cfg.hidden_dim, cfg.n_hidden, 1), False)
