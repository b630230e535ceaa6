"""Our SAC (``baselines/sac.py``) against CleanRL's ``cleanrl/sac_continuous_action.py``.

CleanRL (vwxyzjn/cleanrl, MIT) is not in this repository: ``ODT_CLEANRL_SRC`` names a folder
holding ``cleanrl/sac_continuous_action.py`` (a clone). Its networks (``Actor``,
``SoftQNetwork``) and ``Args`` are imported from that file; its update lives in the script's
``__main__`` block, which cannot be imported, so each of its formulas is restated below in a
``cleanrl_*`` function next to the line it restates, and computed with CleanRL's own networks.

Both codes get the same weights (CleanRL's, copied into ours by :func:`copy_weights`), the same
batch and, for sampled actions, the same standard normals (both draw them from torch's CPU
generator, seeded alike). Compared: the hyperparameters, the networks' outputs, action scaling,
the tanh-Gaussian log-probability, the critic target (twin minimum, entropy term, terminals),
critic, actor and temperature losses, the target-network update, the initialisation law, the
learning-start and update cadence, and how truncation is stored. Everything runs in float32,
the precision both codes train in.

``python -m benchmarks.reference_checks.sac_cleanrl [--out paper_tables/baselines_components_cpu.md]``
prints the findings and, with ``--out``, writes the "SAC against CleanRL" section there.
"""

from __future__ import annotations

import argparse
import copy
import math
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from baselines.sac import SACAgent, polyak_update, sac_config, td_target
from benchmarks.reference_checks.common import (
    BoxEnv,
    Finding,
    Reference,
    code_version,
    findings_table,
    load,
    max_abs,
    stand_in,
    write_section,
)

SOURCE_ENV = "ODT_CLEANRL_SRC"
SCRIPT = "cleanrl/sac_continuous_action.py"
KNOWN_SOURCES = {"f411ff829c864f1312dbca6a01b7a8c8830a4d9640e37beffa41630ff71bb7e0": "fe8d8a0"}
HINT = (f"set {SOURCE_ENV} to a clone of github.com/vwxyzjn/cleanrl (MIT; checked at fe8d8a0), or any folder "
        f"holding that repository's {SCRIPT}")
HEADING = "## SAC against CleanRL"
OBS_DIM, ACT_DIM = 11, 3  # Hopper-v5's
BATCH = 256
SEED = 0


def _refuse(*args, **kwargs):
    raise RuntimeError("stand-in: the reference check never runs CleanRL's command line")


def load_cleanrl(environ: Mapping[str, str] | None = None) -> Reference:
    """CleanRL's SAC file, imported without running its script (ConfigError naming ``ODT_CLEANRL_SRC``
    when it is not configured)."""
    stand_ins = {
        "tyro": stand_in("tyro", cli=_refuse),
        "torch.utils.tensorboard": stand_in("torch.utils.tensorboard", SummaryWriter=_refuse),
        "cleanrl_utils": stand_in("cleanrl_utils"),
        "cleanrl_utils.buffers": stand_in("cleanrl_utils.buffers", ReplayBuffer=_refuse),
    }
    return load(SOURCE_ENV, SCRIPT, HINT, stand_ins, KNOWN_SOURCES, environ)


# ----- both codes with the same weights ------------------------------------------------------------
class VectorSpaces:
    """What CleanRL's constructors read of its vector env: the single spaces."""

    def __init__(self, env: BoxEnv):
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space


def build_pair(ref: Reference, low: np.ndarray, high: np.ndarray, seed: int = SEED):
    """(our agent, CleanRL's actor, qf1, qf2, qf1_target, qf2_target), ours holding CleanRL's weights."""
    env = BoxEnv(low, high, OBS_DIM)
    torch.manual_seed(seed)
    m = ref.module
    spaces = VectorSpaces(env)
    actor, qf1, qf2 = m.Actor(spaces), m.SoftQNetwork(spaces), m.SoftQNetwork(spaces)
    qf1_t, qf2_t = copy.deepcopy(qf1), copy.deepcopy(qf2)
    cfg = sac_config("hopper-medium", "paper", seed, {"device": "cpu"})
    agent = SACAgent(cfg, lambda: BoxEnv(low, high, OBS_DIM), progress=False)
    copy_weights(actor, qf1, qf2, agent)
    return agent, actor, qf1, qf2, qf1_t, qf2_t


@torch.no_grad()
def copy_weights(actor, qf1, qf2, agent: SACAgent) -> None:
    """CleanRL's actor and twin critics into ours. Our actor's last layer is CleanRL's two heads
    stacked (mean rows, then log-std rows); our critics are one batched layer per depth, member
    i holding critic i's weights transposed."""
    ours = [m for m in agent.actor.net if isinstance(m, torch.nn.Linear)]
    ours[0].weight.copy_(actor.fc1.weight)
    ours[0].bias.copy_(actor.fc1.bias)
    ours[1].weight.copy_(actor.fc2.weight)
    ours[1].bias.copy_(actor.fc2.bias)
    ours[2].weight.copy_(torch.cat([actor.fc_mean.weight, actor.fc_logstd.weight]))
    ours[2].bias.copy_(torch.cat([actor.fc_mean.bias, actor.fc_logstd.bias]))
    layers = [m for m in agent.critic.net if hasattr(m, "weight")]
    for i, q in enumerate((qf1, qf2)):
        for layer, theirs in zip(layers, (q.fc1, q.fc2, q.fc3), strict=True):
            layer.weight[i].copy_(theirs.weight.T)
            layer.bias[i, 0].copy_(theirs.bias)
    agent.critic_target.load_state_dict(agent.critic.state_dict())


def make_batch(seed: int, low: np.ndarray, high: np.ndarray, n: int = BATCH) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "observations": rng.normal(size=(n, OBS_DIM)).astype(np.float32),
        "actions": rng.uniform(low, high, size=(n, len(low))).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "next_observations": rng.normal(size=(n, OBS_DIM)).astype(np.float32),
        "terminated": rng.random(n) < 0.1,
        "truncated": np.zeros(n, bool),
    }


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float32)


def _ours_sample(agent: SACAgent, obs: torch.Tensor, seed: int):
    return agent.actor.sample(obs, torch.Generator().manual_seed(seed))


def _cleanrl_sample(actor, obs: torch.Tensor, seed: int):
    torch.manual_seed(seed)  # rsample draws from the global CPU generator: the same normals
    return actor.get_action(obs)


# ----- CleanRL's update, restated (sac_continuous_action.py, the training block of __main__) ------
def cleanrl_target(qf1_t, qf2_t, next_obs, next_act, next_logp, reward, done, alpha: float, gamma: float):
    """next_q_value: r + (1 - done) * gamma * (min(qf1_target, qf2_target)(s', a') - alpha * log pi(a'|s'))."""
    min_q = torch.min(qf1_t(next_obs, next_act), qf2_t(next_obs, next_act)) - alpha * next_logp
    return reward.flatten() + (1 - done.flatten()) * gamma * min_q.view(-1)


def cleanrl_critic_loss(qf1, qf2, obs, act, target) -> torch.Tensor:
    """qf_loss = mse(qf1(s, a), y) + mse(qf2(s, a), y)."""
    f = torch.nn.functional.mse_loss
    return f(qf1(obs, act).view(-1), target) + f(qf2(obs, act).view(-1), target)


def cleanrl_actor_loss(qf1, qf2, obs, pi, log_pi, alpha: float) -> torch.Tensor:
    """actor_loss = mean(alpha * log pi - min(qf1, qf2)(s, pi))."""
    return ((alpha * log_pi) - torch.min(qf1(obs, pi), qf2(obs, pi))).mean()


def cleanrl_alpha_loss(log_alpha: torch.Tensor, log_pi: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """alpha_loss = mean(-exp(log_alpha) * (log pi + target_entropy)), log pi drawn afresh after the actor step."""
    return (-log_alpha.exp() * (log_pi + target_entropy)).mean()


@torch.no_grad()
def cleanrl_soft_update(target: torch.nn.Module, source: torch.nn.Module, tau: float) -> None:
    """target <- tau * source + (1 - tau) * target, parameter by parameter."""
    for param, target_param in zip(source.parameters(), target.parameters()):
        target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)


def cleanrl_schedule(total: int, learning_starts: int, policy_frequency: int) -> tuple[int, int, int]:
    """(critic updates, actor updates, first step with an update) of CleanRL's loop over ``total``
    environment steps: random actions while global_step < learning_starts, a critic update at
    every global_step > learning_starts, and at every policy_frequency-th of those steps
    policy_frequency actor (and temperature) updates."""
    steps = [s for s in range(total) if s > learning_starts]
    actor = sum(policy_frequency for s in steps if s % policy_frequency == 0)
    return len(steps), actor, (steps[0] + 1 if steps else -1)  # as a count of environment steps taken


def our_schedule(total: int, warmup: int, updates_per_step: int) -> tuple[int, int, int]:
    """The same for ours (SACAgent.env_step): an update after every stored step once
    online_samples >= warmup_steps, each one critic, actor and temperature step."""
    steps = [s for s in range(1, total + 1) if s >= warmup]
    return len(steps) * updates_per_step, len(steps) * updates_per_step, (steps[0] if steps else -1)


# ----- the checks ----------------------------------------------------------------------------
def check_settings(ref: Reference) -> list[Finding]:
    args = ref.module.Args()
    ours = sac_config("hopper-medium", "paper")
    text = ref.path.read_text()
    init_alpha = 1.0 if re.search(r"log_alpha\s*=\s*torch\.zeros\(", text) else float("nan")
    alpha_lr = args.q_lr if re.search(r"a_optimizer\s*=\s*optim\.Adam\(\[log_alpha\],\s*lr=args\.q_lr", text) else float("nan")
    rows = [
        ("discount gamma", args.gamma, ours.gamma, ""),
        ("target smoothing tau", args.tau, ours.tau, ""),
        ("batch size", args.batch_size, ours.batch_size, ""),
        ("replay buffer", args.buffer_size, ours.buffer_size, ""),
        ("actor learning rate", args.policy_lr, ours.actor_lr, ""),
        ("critic learning rate", args.q_lr, ours.critic_lr,
         "ours: the SAC paper's 3e-4 for every network (Haarnoja et al. 2018, Table 1); CleanRL raises the "
         "critics' to 1e-3. Would change every SAC cell of Table 1 and the forge's behaviour policies"),
        ("temperature learning rate", alpha_lr, ours.alpha_lr,
         "CleanRL steps log alpha with the critics' 1e-3; ours with the paper's 3e-4 (as above)"),
        ("initial temperature", init_alpha, ours.init_alpha,
         "CleanRL starts log alpha at 0 (alpha 1); ours at pytorch_sac's 0.1, the implementation the ODT "
         "paper cites for its SAC column (the forge keeps 1.0 for its own SAC, the value its data were made with)"),
        ("temperature autotuned", args.autotune, True, ""),
        ("random steps before learning", args.learning_starts, ours.warmup_steps, ""),
        ("actor updates delayed (policy_frequency)", args.policy_frequency, 1,
         "CleanRL updates the actor and temperature policy_frequency=2 times on every 2nd step (TD3's delay, "
         "the same count, on the same batch, between two critic steps); ours once per step, as the SAC paper"),
        ("target update every (steps)", args.target_network_frequency, 1, ""),
    ]
    out = []
    for name, theirs, mine, why in rows:
        same = float(theirs) == float(mine)
        out.append(Finding(f"setting: {name}", same, f"CleanRL {theirs:g}, ours {float(mine):g}", "" if same else why))
    return out


def check_networks(ref: Reference) -> list[Finding]:
    low, high = -np.ones(ACT_DIM, np.float32), np.ones(ACT_DIM, np.float32)
    agent, actor, qf1, qf2, _, _ = build_pair(ref, low, high)
    try:
        b = make_batch(1, low, high)
        obs, act = _t(b["observations"]), _t(b["actions"])
        with torch.no_grad():
            mean_r, log_std_r = actor(obs)
            mean_o, log_std_o = agent.actor.dist_params(obs)
            q_r = torch.stack([qf1(obs, act).view(-1), qf2(obs, act).view(-1)])
            q_o = agent.critic(obs, act)
        sizes = [qf1.fc1.out_features, qf1.fc2.out_features]
        return [
            Finding("networks: actor (mean, bounded log-std)", True,
                    f"max |diff| mean {max_abs(mean_r, mean_o):.1e}, log-std {max_abs(log_std_r, log_std_o):.1e} "
                    f"(hidden {sizes}, log-std in [{ref.module.LOG_STD_MIN}, {ref.module.LOG_STD_MAX}] both)"),
            Finding("networks: twin critics Q(s, a)", True, f"max |diff| {max_abs(q_r, q_o):.1e} over {BATCH} pairs"),
        ]
    finally:
        agent.close()


def check_sampling(ref: Reference) -> list[Finding]:
    """Action scaling on an asymmetric box, and the log-probability on [-1, 1] and elsewhere."""
    out = []
    low, high = np.array([-2.0, 0.0, -1.0], np.float32), np.array([2.0, 1.0, 3.0], np.float32)
    agent, actor, *_ = build_pair(ref, low, high)
    try:
        obs = _t(make_batch(2, low, high)["observations"])
        with torch.no_grad():
            a_r, logp_r, mean_r = _cleanrl_sample(actor, obs, 7)
            a_o, logp_o = _ours_sample(agent, obs, 7)
            mean_o = agent.actor.mean_action(obs)
        shift = float(np.log((high - low) / 2).sum())
        out.append(Finding("action scaling (tanh onto [low, high]), sampled and mean action", True,
                           f"bounds {low.tolist()}..{high.tolist()}: max |diff| sampled {max_abs(a_r, a_o):.1e}, "
                           f"mean {max_abs(mean_r, mean_o):.1e}"))
        gap = (logp_r.view(-1) - logp_o)
        out.append(Finding("log-probability on a box other than [-1, 1]", False,
                           f"CleanRL - ours = {float(gap.mean()):.4f} (sum of log(scale) = {-shift:.4f} with "
                           "CleanRL's sign)",
                           "CleanRL's is the density of the scaled action (it subtracts log(scale)); ours of the "
                           "tanh'd action before scaling. Every environment here has bounds [-1, 1] (scale 1), "
                           "where the two agree: no run is affected"))
    finally:
        agent.close()
    low, high = -np.ones(ACT_DIM, np.float32), np.ones(ACT_DIM, np.float32)
    agent, actor, *_ = build_pair(ref, low, high)
    try:
        obs = _t(make_batch(3, low, high)["observations"])
        with torch.no_grad():
            _, logp_r, _ = _cleanrl_sample(actor, obs, 8)
            _, logp_o = _ours_sample(agent, obs, 8)
            # saturated pre-tanh values: the mean pushed out to about 8 in both (ours: the mean rows)
            actor.fc_mean.bias.add_(8.0)
            agent.actor.net[-1].bias[:ACT_DIM].add_(8.0)
            _, sat_r, _ = _cleanrl_sample(actor, obs, 9)
            _, sat_o = _ours_sample(agent, obs, 9)
        out.append(Finding("tanh-Gaussian log-probability correction, bounds [-1, 1]", False,
                           f"max |diff| {max_abs(logp_r.view(-1), logp_o):.1e} on a fresh actor; with the pre-tanh "
                           f"mean near 8 (saturated), max |diff| {max_abs(sat_r.view(-1), sat_o):.1f}",
                           "CleanRL subtracts log(1 - tanh(u)^2 + 1e-6), which caps the correction near "
                           "log(1e-6) once tanh saturates; ours is the exact 2(log 2 - u - softplus(-2u)). Per "
                           "dimension they differ by log(1 + 1e-6 / (1 - tanh(u)^2)): under 0.01 while |u| < 5.3. "
                           "Kept (exact, and the form of pytorch_sac, whose SAC the paper cites); it would change "
                           "SAC cells only through saturated actions"))
    finally:
        agent.close()
    return out


def check_losses(ref: Reference) -> list[Finding]:
    low, high = -np.ones(ACT_DIM, np.float32), np.ones(ACT_DIM, np.float32)
    agent, actor, qf1, qf2, qf1_t, qf2_t = build_pair(ref, low, high)
    out = []
    try:
        b = make_batch(4, low, high)
        obs, act, rew = _t(b["observations"]), _t(b["actions"]), _t(b["rewards"])
        nxt, done = _t(b["next_observations"]), _t(b["terminated"])
        alpha, gamma = 0.37, agent.cfg.gamma
        with torch.no_grad():
            na_r, nlogp_r, _ = _cleanrl_sample(actor, nxt, 11)
            na_o, nlogp_o = _ours_sample(agent, nxt, 11)
            y_r = cleanrl_target(qf1_t, qf2_t, nxt, na_r, nlogp_r, rew, done, alpha, gamma)
            y_o = td_target(rew, done, agent.critic_target(nxt, na_o).min(dim=0).values, nlogp_o, alpha, gamma)
            # the same next actions and log-probabilities in both: the formula alone
            y_same = td_target(rew, done, agent.critic_target(nxt, na_r).min(dim=0).values, nlogp_r.view(-1),
                               alpha, gamma)
        out.append(Finding("critic target: min of twin targets, entropy term, (1 - terminated)", True,
                           f"max |diff| {max_abs(y_r, y_same):.1e} with the same next actions; "
                           f"{max_abs(y_r, y_o):.1e} each with its own log-probability"))

        # critic loss and its gradients
        loss_r = cleanrl_critic_loss(qf1, qf2, obs, act, y_r)
        q = agent.critic(obs, act)
        loss_o = 0.5 * ((q - y_r.unsqueeze(0)) ** 2).mean(dim=1).sum()  # baselines/sac.py: SACAgent.update
        g_r = torch.autograd.grad(loss_r, [qf1.fc1.weight])[0]
        g_o = torch.autograd.grad(loss_o, [agent.critic.net[0].weight])[0][0].T
        ratio = float(loss_o.detach() / loss_r.detach())
        step_gap = adam_scale_gap(agent.critic, obs, act, y_r.detach(), agent.cfg.critic_lr)
        out.append(Finding("critic loss", False,
                           f"ours / CleanRL = {ratio:.6f} (gradients: {float((g_o / g_r)[g_r.abs() > 1e-6].mean()):.6f}); "
                           f"5 Adam steps on either loss from the same critic: the two parameter changes are "
                           f"{step_gap[0]:.1e} of their length apart; {step_gap[1]} of {step_gap[2]} weights differ "
                           "by more than 1% of the largest change",
                           "ours is the SAC paper's J_Q = E[(Q - y)^2 / 2] per critic; CleanRL sums the two "
                           "MSEs without the 1/2. Adam divides out a constant factor except where a gradient is "
                           "of the order of its eps (1e-8: weights into nearly dead units), so the updates agree "
                           "but for those; kept"))

        # actor loss on the same sample
        pi_r, logpi_r, _ = _cleanrl_sample(actor, obs, 12)
        a_loss_r = cleanrl_actor_loss(qf1, qf2, obs, pi_r, logpi_r, alpha)
        pi_o, logpi_o = _ours_sample(agent, obs, 12)
        a_loss_o = (alpha * logpi_o - agent.critic(obs, pi_o).min(dim=0).values).mean()  # SACAgent.update
        out.append(Finding("actor loss: mean(alpha log pi - min Q)", True,
                           f"|diff| {abs(float((a_loss_r - a_loss_o).detach())):.1e} (CleanRL {float(a_loss_r.detach()):.4f})"))

        # temperature loss and its gradient in log alpha
        target_entropy = -float(ACT_DIM)
        la_r = torch.tensor([math.log(alpha)], requires_grad=True)
        la_o = torch.tensor(math.log(alpha), requires_grad=True)
        l_r = cleanrl_alpha_loss(la_r, logpi_r.detach(), target_entropy)
        l_o = -(la_o * (logpi_o.detach() + target_entropy)).mean()  # SACAgent.update
        (gr,) = torch.autograd.grad(l_r, [la_r])
        (go,) = torch.autograd.grad(l_o, [la_o])
        out.append(Finding("temperature loss (autotune to target entropy -|A|)", False,
                           f"target entropy -|A| = {target_entropy:g} both; d loss / d log alpha: CleanRL "
                           f"{float(gr):.4f}, ours {float(go):.4f} (ratio {float(gr / go):.3f} = alpha {alpha})",
                           "CleanRL's loss is -alpha (log pi + target), ours -log alpha (log pi + target) (the SAC "
                           "authors' softlearning form): same sign and fixed point, CleanRL's gradient is alpha "
                           "times ours, which Adam's normalisation mostly divides out. CleanRL also draws log pi "
                           "afresh after the actor step; ours reuses the actor step's sample. Kept"))

        # target network update
        ours_t, theirs_t = copy.deepcopy(agent.critic_target), copy.deepcopy(qf1_t)
        with torch.no_grad():
            for p in agent.critic.parameters():
                p.add_(0.1)
            for p in qf1.parameters():
                p.add_(0.1)
        polyak_update(ours_t, agent.critic, agent.cfg.tau)
        cleanrl_soft_update(theirs_t, qf1, ref.module.Args().tau)
        diff = max_abs(theirs_t.fc1.weight, ours_t.net[0].weight[0].T)
        out.append(Finding("target network update (tau every step)", True,
                           f"tau {agent.cfg.tau} both; max |diff| after one update {diff:.1e}"))
    finally:
        agent.close()
    return out


def adam_scale_gap(critic: torch.nn.Module, obs, act, target, lr: float, steps: int = 5) -> tuple[float, int, int]:
    """The parameter changes of ``steps`` Adam steps on our critic loss and on twice it (CleanRL's):
    (distance between them / length of ours, both as vectors of every weight; how many weights
    differ by more than 1% of the largest change; how many weights there are)."""
    deltas = []
    for factor in (0.5, 1.0):
        net = copy.deepcopy(critic)
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        before = [p.detach().clone() for p in net.parameters()]
        for _ in range(steps):
            loss = factor * ((net(obs, act) - target.unsqueeze(0)) ** 2).mean(dim=1).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        deltas.append(torch.cat([(p.detach() - b).flatten() for p, b in zip(net.parameters(), before, strict=True)]))
    gap = deltas[0] - deltas[1]
    return (float(gap.norm() / deltas[0].norm()), int((gap.abs() > 0.01 * deltas[0].abs().max()).sum()),
            gap.numel())


def check_initialisation(ref: Reference) -> list[Finding]:
    """Both draw every weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch's nn.Linear
    default; our batched critic layer draws the same law itself)."""
    low, high = -np.ones(ACT_DIM, np.float32), np.ones(ACT_DIM, np.float32)
    torch.manual_seed(123)
    theirs = ref.module.SoftQNetwork(VectorSpaces(BoxEnv(low, high, OBS_DIM)))
    agent = SACAgent(sac_config("hopper-medium", "paper", 123, {"device": "cpu"}), lambda: BoxEnv(low, high, OBS_DIM),
                     progress=False)
    try:
        fan_in = OBS_DIM + ACT_DIM
        r = theirs.fc2.weight.detach() * math.sqrt(256)
        o = agent.critic.net[2].weight.detach() * math.sqrt(256)
        r1 = theirs.fc1.bias.detach() * math.sqrt(fan_in)
        o1 = agent.critic.net[0].bias.detach() * math.sqrt(fan_in)
        law = (f"weights x sqrt(fan_in): max {float(r.abs().max()):.3f} / {float(o.abs().max()):.3f}, std "
               f"{float(r.std()):.3f} / {float(o.std()):.3f} (U(-1, 1): 1, 0.577); biases max "
               f"{float(r1.abs().max()):.3f} / {float(o1.abs().max()):.3f}")
        same = float(r.abs().max()) <= 1 and float(o.abs().max()) <= 1 and abs(float(r.std() - o.std())) < 0.01
        return [Finding("initialisation (CleanRL: PyTorch defaults)", same, f"CleanRL / ours {law}",
                        "" if same else "the laws differ")]
    finally:
        agent.close()


def check_cadence(ref: Reference) -> list[Finding]:
    args = ref.module.Args()
    out = []
    for preset in ("paper", "cpu"):
        c = sac_config("hopper-medium", preset)
        theirs = cleanrl_schedule(c.online_samples, c.warmup_steps, args.policy_frequency)
        mine = our_schedule(c.online_samples, c.warmup_steps, c.updates_per_step)
        out.append(Finding(f"learning start and update cadence ({preset}: {c.online_samples} steps, "
                           f"{c.warmup_steps} random)", False,
                           f"critic updates CleanRL {theirs[0]}, ours {mine[0]}; actor updates {theirs[1]} / {mine[1]}; "
                           f"first update after step {theirs[2]} / {mine[2]}",
                           "CleanRL's loop updates from global step learning_starts + 1 (0-based), so two steps "
                           "later than ours, which updates once warmup_steps transitions are stored; its actor "
                           "updates come in pairs every other step. Kept: two updates in 5000 or 200k"))
    return out


def check_truncation(ref: Reference) -> list[Finding]:
    text = ref.path.read_text()
    stores_terminations = bool(re.search(r"handle_timeout_termination\s*=\s*False", text)) and bool(
        re.search(r"rb\.add\(obs,\s*real_next_obs,\s*actions,\s*rewards,\s*terminations", text))
    final_obs = bool(re.search(r"real_next_obs\[idx\]\s*=\s*infos\[\"final_observation\"\]\[idx\]", text))
    low, high = -np.ones(ACT_DIM, np.float32), np.ones(ACT_DIM, np.float32)
    cfg = sac_config("hopper-medium", "smoke", 0, {"device": "cpu", "warmup_steps": 10, "online_samples": 10})
    agent = SACAgent(cfg, lambda: BoxEnv(low, high, OBS_DIM, length=4), progress=False)
    try:
        for _ in range(4):
            agent.env_step()
        d = agent.buffer.data
        ours_ok = (not d["terminated"][:4].any()) and bool(d["truncated"][3]) and not d["truncated"][:3].any()
        ours_ok &= np.array_equal(d["observations"][1:4], d["next_observations"][0:3])
    finally:
        agent.close()
    same = stores_terminations and final_obs and ours_ok
    return [Finding("terminals vs truncation", same,
                    "CleanRL stores `terminations` as dones (handle_timeout_termination=False) and the true last "
                    f"observation on truncation: {stores_terminations and final_obs}; ours keeps truncated steps "
                    f"with terminated=0 and their real next observation, the target masks terminated only: {ours_ok}")]


def check_evaluation() -> list[Finding]:
    return [Finding("evaluation", False, "CleanRL's script logs its training episodes only; ours evaluates the "
                    "mean action (tanh(mu), scaled) on 10 fresh episodes every eval_every steps",
                    "nothing to compare against; ours is the evaluation every method of the tables uses")]


def run_checks(ref: Reference) -> list[Finding]:
    torch.set_num_threads(1)
    return [*check_settings(ref), *check_networks(ref), *check_sampling(ref), *check_losses(ref),
            *check_initialisation(ref), *check_cadence(ref), *check_truncation(ref), *check_evaluation()]


def section(ref: Reference, findings: list[Finding]) -> str:
    origin = f"CleanRL {ref.commit}" if ref.commit else f"an unrecorded CleanRL version (sha256 {ref.sha256[:12]})"
    n_diff = sum(not f.same for f in findings)
    return "\n".join([
        f"`baselines/sac.py` at {code_version()} against `{SCRIPT}` ({origin}, MIT; imported from `{SOURCE_ENV}`, "
        "never copied), "
        "same weights (CleanRL's, copied into ours), same batch of 256 and the same normals for sampled actions, "
        "float32. CleanRL's update is in its script's main block, so its formulas are restated next to their "
        "lines in `benchmarks/reference_checks/sac_cleanrl.py` and run with CleanRL's own networks. "
        f"{len(findings)} components, {n_diff} differ; none is a bug, each is kept for the reason given "
        "(changing one would change Table 1's SAC cells and, through `benchmarks/datasets/forge.py`, the "
        "behaviour policies of regenerated datasets).",
        "",
        f"Command: `{SOURCE_ENV}=<cleanrl clone> python -m benchmarks.reference_checks.sac_cleanrl --out "
        "paper_tables/baselines_components_cpu.md`",
        "",
        findings_table(findings),
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.reference_checks.sac_cleanrl", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, help="write the 'SAC against CleanRL' section into this markdown file")
    args = p.parse_args(argv)
    from rlbase.config import ConfigError
    try:
        ref = load_cleanrl()
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    findings = run_checks(ref)
    text = section(ref, findings)
    print(text)
    if args.out:
        write_section(args.out, HEADING, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
