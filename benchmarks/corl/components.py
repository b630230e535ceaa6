"""Our IQL (``baselines/iql.py``) against CORL's IQL, one piece at a time: same batch, same weights.

Whole runs of the two codes share no random streams, so when their results differ this check
says where. CORL's ``algorithms/offline/iql.py`` and ``algorithms/finetune/iql.py`` are loaded
from ``ODT_CORL_SRC`` under the driver's stand-ins (never copied here) and their own classes and
functions are called: ``TwinQ``, ``ValueFunction``, ``GaussianPolicy``, ``ImplicitQLearning``
(its ``train`` step, ``_update_policy``, its optimisers' schedule), ``soft_update``,
``modify_reward``, ``modify_reward_online``, ``return_reward_range``, ``eval_actor``. CORL's
weights are copied into ours through an explicit name map (:func:`our_key`); the batch comes
from the generated hopper-medium file (a tiny smoke file where it is absent) with terminal
transitions placed in it. Compared:

* V (expectile), Q and actor (AWR) losses and every parameter's gradient, each code's update
  run with its optimiser steps disabled (so neither V moves before the others read it);
* one and 50 updates with the real optimisers; and CORL's order of one update rebuilt from our
  loss functions, to tell the order apart from everything else;
* the target network's Polyak step; the advantage weights and their clip at 100;
* the reward transforms (hopper-medium: 1000 / (max return - min return); AntMaze: r - 1;
  offline and online) and the transitions each code builds (terminals kept, timeouts dropped);
* the mean action and two closed-loop Hopper episodes from one seed; the initialisation at one
  torch seed; Adam's settings and the actor's learning rate over the offline phase and on into
  the online one.

``python -m benchmarks.corl.components [--out PATH]`` writes the section "IQL against CORL" of
``paper_tables/baselines_components_cpu.md`` (other sections of that file are kept).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.iql import (
    GaussianActor,
    IQLAgent,
    TwinQ,
    ValueNet,
    awr_weights,
    cosine_factor,
    expectile_loss,
    iql_config,
    reward_scale,
    td_target,
    transitions,
)
from benchmarks.corl.adapters import CorlEnv, corl_modules, d4rl_arrays, qlearning_dataset
from benchmarks.corl.driver import SCRIPTS, locate_source
from rlbase.trajectories import Trajectories

REPORT = Path("paper_tables/baselines_components_cpu.md")
SECTION = "## IQL against CORL"
OTHER_SECTIONS = ("## SAC against CleanRL", "## DT against CORL")
BATCH, TERMINALS_IN_BATCH, SEED = 256, 16, 0


# ----- the two codes' networks, one name map ------------------------------------------------

def our_key(kind: str, corl_key: str) -> str:
    """CORL's parameter name -> ours: CORL's MLPs hold their layers in ``.net``, its value
    network its MLP in ``.v``, its policy its MLP in ``.net``."""
    if kind == "q":
        return re.sub(r"^(q[12])\.net\.", r"\1.", corl_key)
    if kind == "v":
        return re.sub(r"^v\.net\.", "net.", corl_key)
    return re.sub(r"^net\.net\.", "net.", corl_key)


def copy_into_ours(corl_net: torch.nn.Module, ours: torch.nn.Module, kind: str) -> None:
    """Load CORL's weights into our network; every parameter of each must be matched."""
    state = {our_key(kind, k): v.clone() for k, v in corl_net.state_dict().items()}
    ours.load_state_dict(state, strict=True)


def mapped_grads(corl_net: torch.nn.Module, kind: str) -> dict[str, torch.Tensor]:
    return {our_key(kind, n): p.grad.detach().clone() for n, p in corl_net.named_parameters()}


def grads(ours: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in ours.named_parameters()}


def params(net: torch.nn.Module, kind: str | None = None) -> dict[str, torch.Tensor]:
    return {(our_key(kind, n) if kind else n): p.detach().clone() for n, p in net.named_parameters()}


def max_rel(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], scale: float = 1.0) -> tuple[float, float]:
    """(max |a - scale * b|, that over max |a|) over the common parameters."""
    diff = max(float((a[k] - scale * b[k]).abs().max()) for k in a)
    size = max(float(a[k].abs().max()) for k in a)
    return diff, diff / size if size > 0 else math.nan


@dataclass
class Nets:
    q: torch.nn.Module
    v: torch.nn.Module
    actor: torch.nn.Module
    target: torch.nn.Module


def corl_nets(corl: Any, obs_dim: int, act_dim: int, seed: int) -> Nets:
    """CORL's networks as its ``train`` builds them, and a target moved off the critic (so a
    check can tell which one each loss reads)."""
    torch.manual_seed(seed)
    q, v = corl.TwinQ(obs_dim, act_dim), corl.ValueFunction(obs_dim)
    actor = corl.GaussianPolicy(obs_dim, act_dim, 1.0)
    target = copy.deepcopy(q)
    with torch.no_grad():
        for p in target.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return Nets(q, v, actor, target)


def corl_trainer(corl: Any, nets: Nets, cfg: Any, max_steps: int) -> Any:
    """CORL's ``ImplicitQLearning`` over ``nets`` with the optimisers its ``train`` makes."""
    trainer = corl.ImplicitQLearning(
        max_action=1.0, actor=nets.actor, actor_optimizer=torch.optim.Adam(nets.actor.parameters(), lr=cfg.actor_lr),
        q_network=nets.q, q_optimizer=torch.optim.Adam(nets.q.parameters(), lr=cfg.critic_lr),
        v_network=nets.v, v_optimizer=torch.optim.Adam(nets.v.parameters(), lr=cfg.value_lr),
        iql_tau=cfg.expectile, beta=cfg.temperature, max_steps=max_steps, discount=cfg.discount, tau=cfg.tau,
        device="cpu")
    trainer.q_target = copy.deepcopy(nets.target).requires_grad_(False)
    return trainer


def our_agent(cfg: Any, data: Trajectories, make_env: Any, nets: Nets) -> IQLAgent:
    """Our agent with CORL's weights (and CORL's perturbed target)."""
    agent = IQLAgent(cfg, data, make_env, progress=False)
    copy_into_ours(nets.q, agent.critic, "q")
    copy_into_ours(nets.target, agent.target_critic, "q")
    copy_into_ours(nets.v, agent.value, "v")
    copy_into_ours(nets.actor, agent.actor, "actor")
    return agent


@contextlib.contextmanager
def steps_disabled(*optimizers: torch.optim.Optimizer) -> Iterator[None]:
    saved = [opt.step for opt in optimizers]
    for opt in optimizers:
        opt.step = lambda *a, **k: None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the schedulers notice the skipped steps
            yield
    finally:
        for opt, step in zip(optimizers, saved, strict=True):
            opt.step = step


# ----- data ----------------------------------------------------------------------------------

@dataclass
class Data:
    name: str
    traj: Trajectories
    make_env: Any
    note: str


def load(name: str) -> Data:
    from benchmarks.datasets import load_dataset
    from benchmarks.datasets.loading import DatasetUnavailable

    try:
        loaded = load_dataset(name, size="full")
        note = f"generated `{name}` ({loaded.trajectories.num_steps} steps)"
    except (DatasetUnavailable, FileNotFoundError):
        loaded = load_dataset(name, size="smoke")
        note = f"smoke `{name}` ({loaded.trajectories.num_steps} steps; the full file is not on this machine)"
    return Data(name, loaded.trajectories, loaded.spec.make_env, note)


def batch_of(trans: dict[str, np.ndarray], scale: tuple[float, float], seed: int) -> dict[str, torch.Tensor]:
    """BATCH transitions, TERMINALS_IN_BATCH of them terminal, rewards transformed by ``scale``."""
    rng = np.random.default_rng(seed)
    terminal = np.flatnonzero(trans["dones"] > 0)
    idx = rng.integers(0, len(trans["rewards"]), BATCH)
    if len(terminal):
        idx[:TERMINALS_IN_BATCH] = rng.choice(terminal, TERMINALS_IN_BATCH)
    out = {k: torch.as_tensor(np.asarray(v[idx], dtype=np.float32)) for k, v in trans.items()}
    out["rewards"] = out["rewards"] * scale[0] + scale[1]
    return out


def as_corl(batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    return [batch["observations"], batch["actions"], batch["rewards"][:, None], batch["next_observations"],
            batch["dones"][:, None]]


# ----- the checks ----------------------------------------------------------------------------

class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def add(self, *cells: Any) -> None:
        self.rows.append(tuple(_fmt(c) for c in cells))

    def markdown(self, header: tuple[str, ...]) -> str:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in self.rows])


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "0" if x == 0 else (f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.1e}")
    return str(x)


def losses_and_gradients(corl: Any, cfg: Any, data: Data, batch: dict[str, torch.Tensor], seed: int) -> Table:
    """Both codes' update with their optimiser steps disabled: the three losses as each reports
    them, and each network's gradient."""
    obs_dim, act_dim = data.traj.obs_dim, data.traj.act_dim
    nets = corl_nets(corl, obs_dim, act_dim, seed)
    agent = our_agent(cfg, data.traj, data.make_env, nets)
    trainer = corl_trainer(corl, nets, cfg, cfg.offline_updates)
    with steps_disabled(trainer.v_optimizer, trainer.q_optimizer, trainer.actor_optimizer):
        theirs = trainer.train(as_corl(batch))
    with steps_disabled(agent.value_opt, agent.critic_opt, agent.actor_opt):
        ours = agent.update(batch)
    t = Table()
    for name, kind, ours_net, corl_net, factor in (
            ("value_loss", "v", agent.value, nets.v, 1.0), ("q_loss", "q", agent.critic, nets.q, 2.0),
            ("actor_loss", "actor", agent.actor, nets.actor, 1.0)):
        loss_diff = abs(ours[name] - factor * theirs[name])
        g_abs, g_rel = max_rel(grads(ours_net), mapped_grads(corl_net, kind), factor)
        t.add(name, ours[name], theirs[name], f"{factor:g}", loss_diff / abs(ours[name]), g_abs, g_rel)
    agent.close()
    return t


def corl_order_update(agent: IQLAgent, opts: dict[str, torch.optim.Optimizer], batch: dict[str, torch.Tensor],
                      step: int) -> None:
    """One update in CORL's order, from our loss functions: next_v and the advantages from the V
    before this update's V step; the V, then Q (loss halved, as CORL's mean of two MSEs), then
    the Polyak step, then the actor."""
    c = agent.cfg
    obs, act = batch["observations"], batch["actions"]
    with torch.no_grad():
        next_v = agent.value(batch["next_observations"])
        q_target = torch.min(*agent.target_critic(obs, act))
    adv = q_target - agent.value(obs)
    v_loss = expectile_loss(adv, c.expectile)
    opts["v"].zero_grad()
    v_loss.backward()
    opts["v"].step()
    y = td_target(batch["rewards"], batch["dones"], next_v, c.discount)
    q1, q2 = agent.critic(obs, act)
    q_loss = ((q1 - y).pow(2).mean() + (q2 - y).pow(2).mean()) / 2
    opts["q"].zero_grad()
    q_loss.backward()
    opts["q"].step()
    with torch.no_grad():
        torch._foreach_lerp_(list(agent.target_critic.parameters()), list(agent.critic.parameters()), c.tau)
    w = awr_weights(adv.detach(), c.temperature, c.max_weight)
    actor_loss = -(w * agent.actor.log_prob(obs, act)).mean()
    for group in opts["actor"].param_groups:
        group["lr"] = c.actor_lr * cosine_factor(step, c.offline_updates)
    opts["actor"].zero_grad()
    actor_loss.backward()
    opts["actor"].step()


def l2(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The Euclidean distance between two sets of parameters (all of one network)."""
    return math.sqrt(sum(float((a[k] - b[k]).pow(2).sum()) for k in a))


def updates(corl: Any, cfg: Any, data: Data, trans: dict[str, np.ndarray], scale: tuple[float, float],
            seed: int, counts: tuple[int, ...] = (1, 50)) -> Table:
    """The same sequence of batches through CORL's ``train``, our ``IQLAgent.update`` and CORL's
    order rebuilt from our functions (with non-fused Adam, as CORL's): each network's distance to
    CORL's after ``counts`` updates, over the distance CORL's travelled (whole-network Euclidean
    norms: Adam's first steps are +-lr per weight, so single weights say little)."""
    obs_dim, act_dim = data.traj.obs_dim, data.traj.act_dim
    t = Table()
    nets = corl_nets(corl, obs_dim, act_dim, seed)
    start = {kind: params(getattr(nets, attr), kind) for kind, attr in (("q", "q"), ("v", "v"), ("actor", "actor"))}
    start["target"] = params(nets.target, "q")
    ours = our_agent(cfg, data.traj, data.make_env, nets)
    emulated = our_agent(cfg, data.traj, data.make_env, nets)
    opts = {"v": torch.optim.Adam(emulated.value.parameters(), lr=cfg.value_lr),
            "q": torch.optim.Adam(emulated.critic.parameters(), lr=cfg.critic_lr),
            "actor": torch.optim.Adam(emulated.actor.parameters(), lr=cfg.actor_lr)}
    trainer = corl_trainer(corl, nets, cfg, cfg.offline_updates)
    done = 0
    for n in counts:
        for k in range(done, n):
            batch = batch_of(trans, scale, seed + 1 + k)
            trainer.train(as_corl(batch))
            ours.update(batch)
            corl_order_update(emulated, opts, batch, k)
        done = n
        for kind, theirs_net, our_attr in (("v", nets.v, "value"), ("q", nets.q, "critic"),
                                            ("actor", nets.actor, "actor"), ("target", trainer.q_target, "target_critic")):
            theirs = params(theirs_net, "q" if kind == "target" else kind)
            moved = l2(theirs, start[kind])
            t.add(n, our_attr, moved, *(l2(params(getattr(agent, our_attr)), theirs) / moved for agent in (ours, emulated)))
    ours.close()
    emulated.close()
    return t


def q_loss_factor(seed: int, steps: int = 20) -> float:
    """Adam fed gradients g or g / 2 (our Q loss against CORL's, same everything else) for
    ``steps`` steps of random gradients of size 1e-3 on a 256 x 256 matrix: the distance between
    the two over the distance travelled."""
    gen = torch.Generator().manual_seed(seed)
    w1 = torch.zeros(256, 256, requires_grad=True)
    w2 = torch.zeros(256, 256, requires_grad=True)
    o1, o2 = torch.optim.Adam([w1], lr=3e-4), torch.optim.Adam([w2], lr=3e-4)
    for _ in range(steps):
        g = 1e-3 * torch.randn(256, 256, generator=gen)
        w1.grad, w2.grad = g.clone(), g / 2
        o1.step()
        o2.step()
    return float((w1 - w2).detach().norm() / w1.detach().norm())


def target_step(corl: Any, seed: int) -> float:
    torch.manual_seed(seed)
    target, critic = TwinQ(11, 3, 256, 2), TwinQ(11, 3, 256, 2)
    theirs = copy.deepcopy(target)
    corl.soft_update(theirs, critic, 0.005)
    with torch.no_grad():
        torch._foreach_lerp_(list(target.parameters()), list(critic.parameters()), 0.005)
    return max(float((a - b).abs().max()) for a, b in zip(target.parameters(), theirs.parameters(), strict=True))


class _UnitLoss(torch.nn.Module):
    """A stand-in actor whose squared error to any action is exactly 1 per sample (one action
    dimension), so CORL's policy loss on one sample is its advantage weight."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.ones(len(obs), 1) + 0.0 * self.w


def advantage_weights(corl: Any, beta: float) -> tuple[int, float, int, int]:
    """CORL's weight of each advantage on a grid (through its ``_update_policy``) against
    ``awr_weights``: (grid size, max |difference| / weight, clipped by CORL, clipped by ours)."""
    grid = torch.linspace(-1.0, 1.0, 81)
    ours = awr_weights(grid, beta, 100.0)
    actor = _UnitLoss()
    trainer = corl.ImplicitQLearning(
        max_action=1.0, actor=actor, actor_optimizer=torch.optim.SGD(actor.parameters(), lr=0.0),
        q_network=torch.nn.Linear(1, 1), q_optimizer=None, v_network=torch.nn.Linear(1, 1), v_optimizer=None,
        beta=beta, max_steps=10, device="cpu")
    theirs = []
    for a in grid:
        log: dict[str, float] = {}
        trainer._update_policy(a.reshape(1), torch.zeros(1, 1), torch.zeros(1, 1), log)
        theirs.append(log["actor_loss"])
    theirs_t = torch.tensor(theirs)
    rel = float(((ours - theirs_t).abs() / ours).max())
    return len(grid), rel, int((theirs_t >= 100.0).sum()), int((ours >= 100.0).sum())


def reward_checks(corl: Any, corl_ft: Any, hopper: Data, antmaze: Data) -> Table:
    t = Table()
    q = qlearning_dataset(d4rl_arrays(hopper.traj))
    before = q["rewards"].copy()
    info = corl_ft.modify_reward(q, "hopper-medium")
    nonzero = np.abs(before) > 1e-6
    corl_mult = float(np.median(q["rewards"][nonzero] / before[nonzero]))
    mult, offset = reward_scale("locomotion", hopper.traj.returns())
    lo, hi = float(hopper.traj.returns().min()), float(hopper.traj.returns().max())
    t.add(f"{hopper.name}: multiplier 1000 / (max - min return)", mult, corl_mult, abs(mult - corl_mult) / mult)
    t.add(f"{hopper.name}: min, max trajectory return", f"{lo:.2f}, {hi:.2f}",
          f"{info['min_ret']:.2f}, {info['max_ret']:.2f}", "")
    online = np.array([0.0, 1.0, 3.5])
    corl_online = np.array([corl_ft.modify_reward_online(float(r), "hopper-medium", **info) for r in online])
    t.add(f"{hopper.name}: online rewards 0, 1, 3.5", _arr(online * mult + offset), _arr(corl_online),
          float(np.abs(online * mult + offset - corl_online).max()))
    qa = qlearning_dataset(d4rl_arrays(antmaze.traj))
    raw = qa["rewards"].copy()
    corl.modify_reward(qa, "antmaze-umaze")
    mult_a, off_a = reward_scale("antmaze", antmaze.traj.returns())
    t.add(f"{antmaze.name}: offline rewards (max diff over {len(raw)})", f"{mult_a:g} r {off_a:+g}", "r - 1",
          float(np.abs(raw * mult_a + off_a - qa["rewards"]).max()))
    corl_on = np.array([corl_ft.modify_reward_online(float(r), "antmaze-umaze") for r in (0.0, 1.0)])
    t.add(f"{antmaze.name}: online rewards 0, 1", _arr(np.array([0.0, 1.0]) * mult_a + off_a), _arr(corl_on),
          float(np.abs(np.array([0.0, 1.0]) * mult_a + off_a - corl_on).max()))
    return t


def _arr(x: np.ndarray) -> str:
    return ", ".join(f"{v:.4g}" for v in x)


def transition_checks(datas: list[Data]) -> Table:
    t = Table()
    for d in datas:
        ours, theirs = transitions(d.traj), qlearning_dataset(d4rl_arrays(d.traj))
        n = len(theirs["rewards"])
        same = all(np.array_equal(theirs[k], ours[k][:n]) for k in ("observations", "actions", "rewards"))
        same &= bool(np.array_equal(theirs["terminals"], ours["dones"][:n] > 0))
        live = ~theirs["terminals"]
        succ = bool(np.array_equal(theirs["next_observations"][live], ours["next_observations"][:n][live]))
        t.add(d.name, f"{len(d.traj)} ({int(d.traj.terminated.sum())} terminated)", len(ours["rewards"]), n,
              int(ours["dones"].sum()), int(theirs["terminals"].sum()), "yes" if same else "NO",
              "yes" if succ else "NO")
    return t


def evaluation_checks(corl: Any, cfg: Any, data: Data, seed: int) -> Table:
    t = Table()
    nets = corl_nets(corl, data.traj.obs_dim, data.traj.act_dim, seed)
    agent = our_agent(cfg, data.traj, data.make_env, nets)
    nets.actor.eval()
    states = data.traj.observations[:: max(1, data.traj.num_steps // 256)][:256]
    corl_actions = np.stack([nets.actor.act(s, "cpu") for s in states])
    our_actions = agent.act(states, sample=False)
    t.add("mean action on 256 dataset states (max abs diff)", float(np.abs(corl_actions - our_actions).max()))
    env = CorlEnv(data.make_env(), None, None)
    corl_returns = corl.eval_actor(env, nets.actor, "cpu", 2, 1234)
    env.close()
    ours_env = data.make_env()
    ours_returns, ours_lengths = [], []
    for i in range(2):
        obs, _ = ours_env.reset(seed=1234 if i == 0 else None)
        total, length, done = 0.0, 0, False
        while not done:
            obs, r, term, trunc, _ = ours_env.step(agent.act(obs[None], sample=False)[0])
            total, length, done = total + float(r), length + 1, term or trunc
        ours_returns.append(total)
        ours_lengths.append(length)
    ours_env.close()
    t.add("two closed-loop episodes from seed 1234: returns", f"ours {_arr(np.array(ours_returns))}; "
          f"CORL {_arr(np.asarray(corl_returns))}; lengths (ours) {ours_lengths}")
    agent.close()
    return t


def initialisation_checks(corl: Any, seed: int) -> Table:
    t = Table()
    for kind, make_corl, make_ours in (
            ("q", lambda: corl.TwinQ(11, 3), lambda: TwinQ(11, 3, 256, 2)),
            ("v", lambda: corl.ValueFunction(11), lambda: ValueNet(11, 256, 2)),
            ("actor", lambda: corl.GaussianPolicy(11, 3, 1.0), lambda: GaussianActor(11, 3, 256, 2, -5.0, 2.0))):
        torch.manual_seed(seed)
        theirs = params(make_corl(), kind)
        torch.manual_seed(seed)
        mine = params(make_ours())
        diff = max(float((mine[k] - theirs[k]).abs().max()) for k in theirs)
        hidden = mine["net.2.weight" if kind != "q" else "q1.2.weight"]
        s = torch.linalg.svdvals(hidden)
        t.add(kind, diff, float(s.max() / s.min()))
    return t


def optimiser_checks(corl: Any, cfg: Any, total: int, online: int) -> Table:
    """Adam's settings in both codes, and the actor's rate at every update of an offline phase of
    ``total`` updates, then ``online`` more (CORL's finetune script keeps stepping the schedule)."""
    t = Table()
    nets = corl_nets(corl, 11, 3, 0)
    trainer = corl_trainer(corl, nets, cfg, total)
    group = trainer.actor_optimizer.param_groups[0]
    ours_group = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=3e-4, fused=True).param_groups[0]
    for key in ("betas", "eps", "weight_decay", "amsgrad"):
        t.add(f"Adam {key}", str(ours_group[key]), str(group[key]), "same" if ours_group[key] == group[key] else "DIFFERENT")
    t.add("Adam fused", str(ours_group["fused"]), str(group["fused"]), "rounding only")
    corl_lr, ours_lr = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(total + online):
            corl_lr.append(trainer.actor_optimizer.param_groups[0]["lr"])
            ours_lr.append(cfg.actor_lr * cosine_factor(k, total) if k < total else cfg.actor_lr)
            trainer.actor_lr_schedule.step()
    c, o = np.array(corl_lr), np.array(ours_lr)
    t.add(f"actor rate, offline updates 0..{total - 1}: max abs diff", "", "", float(np.abs(c[:total] - o[:total]).max()))
    for j in (1, online // 5, online):
        if j <= online:
            t.add(f"actor rate at online update {j}", f"{o[total + j - 1]:.3g}", f"{c[total + j - 1]:.3g}", "")
    return t


# ----- the report ------------------------------------------------------------------------------

def run(seed: int = SEED) -> str:
    source = locate_source()
    hopper, antmaze = load("hopper-medium"), load("antmaze-umaze")
    hopper_cfg = iql_config("hopper-medium", "cpu", seed, {"device": "cpu"})
    antmaze_cfg = iql_config("antmaze-umaze", "cpu", seed, {"device": "cpu"})
    hopper_smoke = Data("hopper-medium", load_smoke("hopper-medium"), hopper.make_env, "")
    torch.set_num_threads(1)
    with corl_modules({}, lambda data, step: None) as load_script, contextlib.redirect_stdout(io.StringIO()):
        corl = load_script(source.path / SCRIPTS["offline"], "corl_iql_offline_components")
        corl_ft = load_script(source.path / SCRIPTS["finetune"], "corl_iql_finetune_components")
        trans = transitions(hopper.traj)
        scale = reward_scale("locomotion", hopper.traj.returns())
        batch = batch_of(trans, scale, seed)
        sections = {
            "losses_hopper": losses_and_gradients(corl, hopper_cfg, hopper_smoke, batch, seed),
            "losses_antmaze": _antmaze_losses(corl, antmaze_cfg, antmaze, seed),
            "updates": updates(corl, hopper_cfg, hopper_smoke, trans, scale, seed),
            "q_factor": q_loss_factor(seed),
            "target": target_step(corl, seed),
            "weights_hopper": advantage_weights(corl, hopper_cfg.temperature),
            "weights_antmaze": advantage_weights(corl, antmaze_cfg.temperature),
            "rewards": reward_checks(corl, corl_ft, hopper, antmaze),
            "transitions": transition_checks([hopper, antmaze]),
            "evaluation": evaluation_checks(corl, hopper_cfg, hopper_smoke, seed),
            "init": initialisation_checks(corl, seed),
            "optim": optimiser_checks(corl, hopper_cfg, 180_000, 5000),
        }
    return render(sections, source, hopper, antmaze, seed)


def load_smoke(name: str) -> Trajectories:
    from benchmarks.datasets import load_dataset
    return load_dataset(name, size="smoke").trajectories


def _antmaze_losses(corl: Any, cfg: Any, antmaze: Data, seed: int) -> Table:
    trans = transitions(antmaze.traj)
    batch = batch_of(trans, reward_scale("antmaze", antmaze.traj.returns()), seed)
    return losses_and_gradients(corl, cfg, antmaze, batch, seed)


def our_commit() -> str:
    """This repository's commit, marked when ``baselines/iql.py`` has uncommitted changes."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" (baselines/iql.py edited)" if git("status", "--porcelain", "--", "../../baselines/iql.py") else "")


def render(s: dict[str, Any], source: Any, hopper: Data, antmaze: Data, seed: int) -> str:
    commit = source.commit or f"unknown (scripts sha256 {source.scripts_sha256[:12]})"
    loss_header = ("loss", "ours", "CORL", "ours / CORL by definition", "loss rel. diff",
                   "max abs grad diff", "rel. to max grad")
    qr = s["q_factor"]
    n_h, rel_h, clip_corl_h, clip_ours_h = s["weights_hopper"]
    n_a, rel_a, clip_corl_a, clip_ours_a = s["weights_antmaze"]
    return f"""{SECTION}

CORL {commit} (`{SCRIPTS['offline']}`, `{SCRIPTS['finetune']}`, loaded from `ODT_CORL_SRC` under
the `corl-iql` driver's stand-ins, run unmodified) against `baselines/iql.py` at {our_commit()}, seed {seed}, float32, one
CPU thread. Data: {hopper.note}; {antmaze.note}. Command:
`ODT_CORL_SRC=<CORL> python -m benchmarks.corl.components --out {REPORT}`.
What each difference means and what was done about it is in the list at the end.

### Losses and gradients (one batch of {BATCH}, optimiser steps disabled)

Both codes' update on the same batch ({TERMINALS_IN_BATCH} of its transitions terminal where the
data has terminals: hopper-medium; the AntMaze smoke file has none) and weights (CORL's networks copied into ours by name; the
target critic moved off the critic by 0.01 N(0, 1) so that reading the wrong one would show),
each code's own update function (`ImplicitQLearning.train`, `IQLAgent.update`) with its optimiser
steps disabled, so V does not move before the actor and Q read it.

hopper-medium (cpu preset: expectile 0.7, temperature 3):

{s['losses_hopper'].markdown(loss_header)}

antmaze-umaze (expectile 0.9, temperature 10, rewards r - 1):

{s['losses_antmaze'].markdown(loss_header)}

### Updates with the real optimisers (hopper-medium, cpu preset)

The same batches through CORL's `ImplicitQLearning.train` (Adam), our `IQLAgent.update` (fused
Adam) and "ours in CORL's order" (our loss functions and networks, non-fused Adam, CORL's order:
next V and advantages from the V before the V step, V, Q with the loss halved, Polyak, actor).
Distances are Euclidean norms over each whole network (Adam's first step moves every weight by
+-lr whatever its gradient's size, so single weights say little): "CORL moved" is how far CORL's
network went from the shared start, the other columns each code's distance to CORL's over it.

{s['updates'].markdown(('updates', 'network', 'CORL moved (L2)', 'ours: distance to CORL / CORL moved', "ours in CORL's order: the same"))}

Q loss factor: Adam fed g and g / 2 for 20 steps (random gradients of size 1e-3 on a 256 x 256
matrix) ends {qr:.1e} of the distance travelled apart: the factor 2 between our Q loss (sum of the
two critics' MSE, as the official IQL) and CORL's (their mean) changes only Adam's epsilon term.

### Target network, advantage weights, rewards, transitions

- Polyak step (tau 0.005), CORL's `soft_update` against our `torch._foreach_lerp_`: max abs
  difference {s['target']:.1e}.
- Advantage weights exp(beta A) clipped at 100, CORL's (one sample at a time through its
  `_update_policy`, whose loss is then the weight) against `awr_weights`, {n_h} advantages in [-1, 1]:
  beta 3: max relative difference {rel_h:.1e}, clipped {clip_corl_h} (CORL) and {clip_ours_h} (ours); beta 10:
  {rel_a:.1e}, clipped {clip_corl_a} and {clip_ours_a}.

Reward transforms (CORL's `modify_reward` on D4RL's transition set, `modify_reward_online`; ours
`reward_scale`):

{s['rewards'].markdown(('what', 'ours', 'CORL', 'abs or rel. diff'))}

Transitions (ours: `baselines.iql.transitions`; CORL: `d4rl.qlearning_dataset` by D4RL's rule):

{s['transitions'].markdown(('dataset', 'trajectories', 'ours', 'CORL', 'terminal (ours)', 'terminal (CORL)', 'common transitions equal', 'successors equal where not terminal'))}

### Evaluation, initialisation, optimiser

{s['evaluation'].markdown(('evaluation (same actor weights, raw observations)', 'result'))}

Initialisation at one torch seed (each code builds its network after `torch.manual_seed({seed})`):
max |weight difference|, and the condition number of the 256 x 256 hidden layer (an orthogonal
initialisation would give 1):

{s['init'].markdown(('network', 'max abs diff', 'condition number'))}

{s['optim'].markdown(('optimiser', 'ours', 'CORL', 'difference'))}

{DIFFERENCES}"""


DIFFERENCES = """### Differences found, and what was done

No component of our IQL differs from CORL's where both follow the official IQL code
(ikostrikov/implicit_q_learning): the V, Q and actor losses and all gradients agree to float32
rounding (the Q loss by its definitional factor 2), as do the Polyak step, the advantage weights
and their clip, the reward transforms, the transitions (terminal steps kept and masked, timeout
steps dropped), the mean action and closed-loop episodes, the initialisation and Adam's settings.
So no fix was made to `baselines/iql.py` and no committed result changes. What differs, with the
reason it stays:

1. **Order of one update.** Ours, as the official code, steps V first and gives the actor's
   advantages and Q's target the new V; CORL computes both from the V before this update's V
   step. Rebuilt in CORL's order from our functions, our update matches CORL's to float32
   rounding (table above), so the order is the whole of the difference between the two updates;
   it moves the parameters apart as two seeds would. Kept: it is the official order.
2. **Q loss scale.** Ours sums the two critics' MSE (official), CORL averages them; under Adam
   only the epsilon term sees it. Kept.
3. **Log-std floor.** -5 (official) against CORL's -20; equal while the policy's std stays above
   0.0067. Kept.
4. **State standardisation.** Every CORL IQL config sets `normalize: true` (mean and std of the
   dataset, std + 1e-3); ours feeds raw observations as the official code, with the diagnostic
   switch `normalize_observations` (one seed at 1.8e5 updates on antmaze-umaze: 3% with it, 2%
   without; `PROTOCOL-iql-antmaze-inputs-cpu.md`). `corl-iql` runs CORL's setting; the whole-run
   protocol measures the pair.
5. **CORL's hopper-medium(-replay) config.** A deterministic actor (advantage-weighted squared
   error) and a Polyak rate of 0.001, against the Gaussian actor and 0.005 of the paper and ours.
   `corl-iql` runs CORL's config on hopper-medium; `--set corl.iql_deterministic=false
   --set corl.tau=0.005` runs CORL's code at the paper's setting.
6. **The actor's rate online.** CORL's finetune script keeps stepping the offline phase's cosine
   schedule, which climbs back from 0: at the cpu preset its actor learns at < 6e-7 through the
   5000 online updates, against our constant 3e-4 (the official finetuning config decays nothing:
   `opt_decay_schedule = None`). Kept; it touches only `corl-iql`'s online phase.
7. **Evaluation.** CORL reseeds its evaluation env with the run's seed before each evaluation (the
   same starts every time; ours draws fresh ones), and on AntMaze runs 100 episodes at every
   evaluation (the `corl-iql` driver runs ours: 20 between the ends of the phases, 100 at them).
   The mean action is the same. Kept.
8. **Data edges.** D4RL's transition rule drops the dataset's very last step (a terminal one on
   hopper-medium: 1 of 999 829 transitions), and CORL's return range for the locomotion scaling
   splits episodes at terminals or every 1000 transitions of that set; on hopper-medium (every
   trajectory terminated) its min and max returns are ours. Online, CORL stores an episode that
   ends exactly at the time limit as not done even when the env terminated; ours stores
   `terminated`. Kept (no effect at these datasets).
9. **Initialisation.** Both codes keep PyTorch's default (same weights at one seed); the official
   code uses orthogonal weights. CORL's published IQL results are with the default, so it is not a
   difference from CORL and was not changed here.
10. **Online batches** at the cpu preset come from our newest 25k transitions (`online_window`);
   CORL samples its whole buffer (our `online_window=0`). A preset choice, listed in docs/corl.md.
"""


def write_section(text: str, path: Path) -> None:
    """Put ``text`` (starting with SECTION) into ``path``, replacing that section only; a new
    file gets the report's skeleton, the other sections as headings."""
    if path.exists():
        old = path.read_text()
        start = old.find(SECTION)
        if start < 0:
            new = old.rstrip() + "\n\n" + text
        else:
            nxt = [i for h in OTHER_SECTIONS if (i := old.find("\n" + h, start)) >= 0]
            end = min(nxt) + 1 if nxt else len(old)
            new = old[:start] + text.rstrip() + "\n\n" + old[end:]
    else:
        new = SKELETON + text.rstrip() + "\n\n" + "\n\n".join(f"{h}\n\n(not yet written)\n" for h in OTHER_SECTIONS)
    path.write_text(new.rstrip() + "\n")


SKELETON = """# The baselines against their reference code, one component at a time (cpu)

Each section feeds one batch and the same weights through one of our baselines and its reference
implementation, run unmodified from outside the repository, and lists every difference found:
fixed (the commit says so) or written down with its reason. Whole-run comparisons are separate
protocols (`PROTOCOL-corl-iql-cpu.md` for IQL).

"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.corl.components",
                                description="Our IQL against CORL's, component by component (needs ODT_CORL_SRC).")
    p.add_argument("--out", type=Path, default=None, help=f"write the section into this report (e.g. {REPORT})")
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args(argv)
    text = run(args.seed)
    if args.out:
        write_section(text, args.out)
    print(text)


if __name__ == "__main__":
    main()
