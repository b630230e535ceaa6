"""Our DT (``baselines/dt.py``: ODT's model with the deterministic head) against CORL's ``algorithms/offline/dt.py``.

CORL (corl-team/CORL, Apache-2.0) is not in this repository: ``ODT_CORL_SRC`` names a folder
holding its ``algorithms/offline/dt.py`` and, for the per-dataset settings, ``configs/offline/dt/``
(a clone; the ``corl-iql`` driver reads the same variable). The file's ``DecisionTransformer``,
``SequenceDataset`` (its window builder), ``discounted_cumsum`` and ``eval_rollout`` are imported
and run as they are; its training step lives in ``train()``, so the masked loss and the warmup
rule are restated below in ``corl_*`` functions next to the lines they restate.

Both codes get the same weights (CORL's, copied into ours by :func:`copy_weights`) and the same
windows (ours drawn by our sampler; CORL's built by its own ``SequenceDataset`` for the same
trajectory and start). Compared: the settings per dataset, window contents (states, actions,
return-to-go, timesteps, padding), state normalisation, the sampling law, the forward pass, the
loss and its masking, the optimiser and warmup, one whole update, the evaluation rollout
(context and return-to-go handling) and the initialisation. Our DT uses ReLU, CORL GELU (the
one architectural difference): the same-weights comparisons build ours with GELU, and the
difference is reported on its own line.

``python -m benchmarks.reference_checks.dt_corl [--out paper_tables/baselines_components_cpu.md]``
prints the findings and, with ``--out``, writes the "DT against CORL" section there.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
from collections.abc import Mapping
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import yaml

from baselines.dt import dt_config
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
from odt.config import ODTConfig
from odt.learner import warmup_factor
from odt.model import DecisionTransformer as OurDT
from odt.objective import deterministic_policy_loss
from odt.rollout import Conditioning, run_episodes
from odt.sampling import trajectory_probabilities
from odt.train import ODTTrainer
from rlbase.config import apply_overrides
from rlbase.trajectories import Trajectories

SOURCE_ENV = "ODT_CORL_SRC"
SCRIPT = "algorithms/offline/dt.py"
KNOWN_SOURCES = {"9791ff887ea80e6d8c648eab26cbac9f0c580a5333298d4a4cfdc04e046f3dd6": "eeeeef2"}
HINT = (f"set {SOURCE_ENV} to a clone of github.com/corl-team/CORL (Apache-2.0; checked at eeeeef2), or a folder "
        f"holding its {SCRIPT} and configs/offline/dt/")
HEADING = "## DT against CORL"
OBS_DIM, ACT_DIM = 11, 3  # Hopper-v5's
BATCH = 64
# Table 1's rows and CORL's config file for each (CORL has no DT config for ant-*)
CORL_CONFIGS = {
    "hopper-medium": "hopper/medium_v2", "hopper-medium-replay": "hopper/medium_replay_v2",
    "walker2d-medium": "walker2d/medium_v2", "walker2d-medium-replay": "walker2d/medium_replay_v2",
    "halfcheetah-medium": "halfcheetah/medium_v2", "halfcheetah-medium-replay": "halfcheetah/medium_replay_v2",
    "antmaze-umaze": "antmaze/umaze_v2", "antmaze-umaze-diverse": "antmaze/umaze_diverse_v2",
}


def _refuse(*args, **kwargs):
    raise RuntimeError("stand-in: the reference check never runs CORL's training entry point")


def load_corl_dt(environ: Mapping[str, str] | None = None) -> Reference:
    """CORL's DT file, imported without running ``train`` (ConfigError naming ``ODT_CORL_SRC``
    when it is not configured)."""
    gym_stub = stand_in("gym", Env=object, make=_refuse, wrappers=stand_in("gym.wrappers"))
    stand_ins = {
        "d4rl": stand_in("d4rl"),
        "gym": gym_stub,
        "pyrallis": stand_in("pyrallis", wrap=lambda *a, **k: (lambda f: f), dump=_refuse),
        "wandb": stand_in("wandb", init=_refuse, log=_refuse),
    }
    return load(SOURCE_ENV, SCRIPT, HINT, stand_ins, KNOWN_SOURCES, environ)


# ----- CORL's training step, restated (dt.py, train()) --------------------------------------------
def corl_loss(predicted: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """loss = mean over all B x K x A entries of mse(predicted, actions) * mask (padding zeroed, but counted)."""
    loss = torch.nn.functional.mse_loss(predicted, actions.detach(), reduction="none")
    return (loss * mask.unsqueeze(-1)).mean()


def corl_warmup(step: int, warmup_steps: int) -> float:
    """LambdaLR(optim, lambda steps: min((steps + 1) / warmup_steps, 1)), stepped after every update."""
    return min((step + 1) / warmup_steps, 1)


def corl_update(model, optim, scheduler, batch, clip: float) -> torch.Tensor:
    """One iteration of train()'s loop: forward with the padding mask, masked loss, clip, AdamW, scheduler."""
    states, actions, returns, time_steps, mask = batch
    predicted = model(states=states, actions=actions, returns_to_go=returns, time_steps=time_steps,
                      padding_mask=~mask.to(torch.bool))
    loss = corl_loss(predicted, actions, mask)
    optim.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optim.step()
    scheduler.step()
    return loss


# ----- both codes with the same weights --------------------------------------------------------------
def corl_model(ref: Reference, cfg: ODTConfig, dropout: float | None = None):
    m = cfg.model
    p = m.dropout if dropout is None else dropout
    return ref.module.DecisionTransformer(
        state_dim=OBS_DIM, action_dim=ACT_DIM, seq_len=m.context_len, episode_len=m.max_ep_len,
        embedding_dim=m.embed_dim, num_layers=m.n_layers, num_heads=m.n_heads, attention_dropout=p,
        residual_dropout=p, embedding_dropout=p, max_action=1.0)


def parameter_map(n_layers: int) -> dict[str, str]:
    """Our parameter name -> CORL's (our timestep table is CORL's first max_ep_len rows; CORL keeps
    context_len more for the timesteps of right padding)."""
    names = {"embed_return": "return_emb", "embed_state": "state_emb", "embed_action": "action_emb",
             "embed_ln": "emb_norm", "ln_f": "out_norm", "head.linear": "action_head.0"}
    out = {f"{o}.{w}": f"{t}.{w}" for o, t in names.items() for w in ("weight", "bias")}
    out["embed_timestep.weight"] = "timestep_emb.weight"
    for i in range(n_layers):
        block = {"ln1": "norm1", "ln2": "norm2", "attn.proj": "attention.out_proj", "mlp.0": "mlp.0", "mlp.2": "mlp.2"}
        for o, t in block.items():
            for w in ("weight", "bias"):
                out[f"blocks.{i}.{o}.{w}"] = f"blocks.{i}.{t}.{w}"
        out[f"blocks.{i}.attn.qkv.weight"] = f"blocks.{i}.attention.in_proj_weight"  # rows q, k, v in both
        out[f"blocks.{i}.attn.qkv.bias"] = f"blocks.{i}.attention.in_proj_bias"
    return out


@torch.no_grad()
def copy_weights(theirs: torch.nn.Module, ours: torch.nn.Module) -> None:
    src = dict(theirs.named_parameters())
    mapping = parameter_map(len(ours.blocks))
    mine = dict(ours.named_parameters())
    if set(mine) != set(mapping):
        raise AssertionError(f"unmapped parameters: {sorted(set(mine) ^ set(mapping))}")
    if len(src) != len(mapping):
        raise AssertionError(f"CORL has {len(src)} parameters, the map {len(mapping)}")
    for o, t in mapping.items():
        mine[o].copy_(src[t][: mine[o].shape[0]] if o == "embed_timestep.weight" else src[t])


def config(dataset: str = "hopper-medium", **overrides) -> ODTConfig:
    """Our DT's paper config (the original DT gym setting), cpu device, with overrides."""
    return apply_overrides(dt_config(dataset, "paper", 0, {"device": "cpu"}), overrides)


def synthetic_data(seed: int = 0) -> Trajectories:
    """Trajectories of Hopper's shapes, some shorter than the context so that windows are padded."""
    rng = np.random.default_rng(seed)
    episodes = []
    for i, n in enumerate([3, 9, 17, 25, 60, 140, 300, 1000]):
        episodes.append(dict(observations=rng.normal(size=(n, OBS_DIM)).astype(np.float32) * 2 + 1,
                             actions=rng.uniform(-1, 1, size=(n, ACT_DIM)).astype(np.float32),
                             rewards=rng.uniform(0, 4, size=n).astype(np.float32), terminated=bool(i % 2)))
    return Trajectories.from_episodes(episodes)


def trainer(cfg: ODTConfig, data: Trajectories) -> ODTTrainer:
    return ODTTrainer(cfg, data, lambda: BoxEnv(-np.ones(ACT_DIM), np.ones(ACT_DIM), OBS_DIM), progress=False)


def corl_dataset(ref: Reference, data: Trajectories, cfg: ODTConfig):
    """CORL's SequenceDataset over ``data``, built as its loader builds one from D4RL (returns by
    its discounted_cumsum at gamma 1, state statistics over every step) without reading D4RL."""
    m = ref.module
    ds = object.__new__(m.SequenceDataset)
    ds.dataset = []
    for i in range(len(data)):
        ep = data.episode(i)
        traj = {k: np.asarray(ep[k], np.float32) for k in ("observations", "actions", "rewards")}
        traj["returns"] = m.discounted_cumsum(traj["rewards"], gamma=1.0)
        ds.dataset.append(traj)
    ds.reward_scale = 1.0 / cfg.rtg_scale
    ds.seq_len = cfg.model.context_len
    ds.state_mean = data.observations.mean(0, keepdims=True)
    ds.state_std = data.observations.std(0, keepdims=True) + 1e-6
    ds.sample_prob = data.lengths / data.lengths.sum()
    return ds


def paired_batches(ref: Reference, tr: ODTTrainer, data: Trajectories, seed: int = 3):
    """Our batch for windows drawn by our sampler, and CORL's for the same (trajectory, start)."""
    c = tr.cfg
    tr.rng = np.random.default_rng(seed)
    ours = tr.batch_tensors(tr.buffer)
    idx, _ = tr.buffer.sample(np.random.default_rng(seed), c.optim.batch_size, c.model.context_len)
    starts = data.starts
    first = idx.flat[:, 0]
    traj = np.searchsorted(starts, first, side="right") - 1
    ds = corl_dataset(ref, data, c)
    rows = [ds._SequenceDataset__prepare_sample(int(t), int(f - starts[t])) for t, f in zip(traj, first, strict=True)]
    theirs = [torch.as_tensor(np.stack(col)) for col in zip(*rows, strict=True)]
    states, actions, returns, time_steps, mask = theirs
    theirs = (states.float(), actions.float(), returns.float(), time_steps.long(), mask.float())
    return ours, theirs, ds


# ----- the checks ----------------------------------------------------------------------------------
def check_settings(ref: Reference) -> list[Finding]:
    defaults = ref.module.TrainConfig.__dataclass_fields__
    configs = {}
    for dataset, rel in CORL_CONFIGS.items():
        path = ref.root / "configs/offline/dt" / f"{rel}.yaml"
        if path.is_file():
            configs[dataset] = yaml.safe_load(path.read_text())
    if not configs:
        return [Finding("settings per dataset", False, f"no configs/offline/dt/ under {SOURCE_ENV}: not compared")]

    def corl(d: str, key: str):
        return configs[d].get(key, defaults[key].default)

    def ours(d: str):
        c = dt_config(d, "paper")
        return c, c.model, c.optim

    rows = {  # setting: (CORL's value, ours, why it differs where it does)
        "embedding dim": (lambda d: corl(d, "embedding_dim"), lambda d: ours(d)[1].embed_dim, ""),
        "layers": (lambda d: corl(d, "num_layers"), lambda d: ours(d)[1].n_layers, ""),
        "heads": (lambda d: corl(d, "num_heads"), lambda d: ours(d)[1].n_heads, ""),
        "context K": (lambda d: corl(d, "seq_len"), lambda d: ours(d)[1].context_len, ""),
        "dropout (embedding, attention, residual)": (
            lambda d: (corl(d, "embedding_dropout"), corl(d, "attention_dropout"), corl(d, "residual_dropout")),
            lambda d: (ours(d)[1].dropout,) * 3, ""),
        "batch size": (lambda d: corl(d, "batch_size"), lambda d: ours(d)[2].batch_size,
                       "CORL retuned its locomotion DT to batch 4096 at rate 8e-4; ours keeps the original DT "
                       "gym setting (batch 64, 1e-4: Chen et al.'s code), the DT whose published numbers the "
                       "ODT paper's Table 1 compares with. The cpu preset's DT (batch 64, width 64, 2500 updates "
                       "at 3e-4) is scaled from that"),
        "AdamW learning rate": (lambda d: corl(d, "learning_rate"), lambda d: ours(d)[2].lr, "as batch size"),
        "AdamW weight decay": (lambda d: corl(d, "weight_decay"), lambda d: ours(d)[2].weight_decay, ""),
        "AdamW betas": (lambda d: tuple(corl(d, "betas")), lambda d: (0.9, 0.999), ""),
        "gradient clip (norm)": (lambda d: corl(d, "clip_grad"), lambda d: ours(d)[2].grad_clip, ""),
        "warmup updates": (lambda d: corl(d, "warmup_steps"), lambda d: ours(d)[2].warmup_steps, ""),
        "updates": (lambda d: corl(d, "update_steps"), lambda d: ours(d)[0].pretrain_updates, ""),
        "return-to-go scale": (lambda d: corl(d, "reward_scale"), lambda d: 1.0 / ours(d)[0].rtg_scale, ""),
        "timestep table (episode_len)": (lambda d: corl(d, "episode_len"), lambda d: ours(d)[1].max_ep_len,
                                         "AntMaze episodes end at 700 steps here (D4RL's cut), so our table stops "
                                         "there; CORL sizes it 1000 for every task. No step reaches row 700"),
        "target return(s) at evaluation": (lambda d: tuple(corl(d, "target_returns")), lambda d: (ours(d)[0].g_eval,),
                                           "CORL evaluates each of its targets and reports them separately; ours "
                                           "one: the original DT's (hopper 3600, walker2d 5000, halfcheetah 6000 of "
                                           "its 12000 / 6000) and the ODT table's g_eval on AntMaze"),
        "evaluation episodes": (lambda d: corl(d, "eval_episodes"), lambda d: ours(d)[0].eval_episodes,
                                "ours: 10 on locomotion, 100 on AntMaze, as every method of the tables"),
    }
    out = []
    for name, (theirs_of, ours_of, why) in rows.items():
        pairs: dict[tuple, list[str]] = {}
        for d in configs:
            pairs.setdefault((theirs_of(d), ours_of(d)), []).append(d)
        same = all(_equal(t, o) for t, o in pairs)
        text = "; ".join(f"CORL {_fmt(t)}, ours {_fmt(o)}" + ("" if len(pairs) == 1 else f" ({_rows(ds)})")
                         for (t, o), ds in pairs.items())
        out.append(Finding(f"setting: {name}", same, text, "" if same else why))
    return out


def _equal(a, b) -> bool:
    a, b = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=0))


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(f"{x:g}" for x in v) + ")"
    return f"{v:g}"


def _rows(datasets: list[str]) -> str:
    loco = [d for d in datasets if not d.startswith("antmaze")]
    if len(loco) == len(datasets) and len(loco) > 2:
        return "locomotion"
    if not loco and len(datasets) == 2:
        return "AntMaze"
    return ", ".join(datasets)


def check_windows(ref: Reference) -> list[Finding]:
    data = synthetic_data()
    cfg = config(**{"optim.batch_size": BATCH})
    tr = trainer(cfg, data)
    try:
        ours, theirs, ds = paired_batches(ref, tr, data)
    finally:
        tr.close()
    states, actions, returns, time_steps, mask = theirs
    real = ours["mask"]
    same_mask = torch.equal(real, mask.bool())
    diffs = {"states": max_abs(ours["states"][real], states[real]),
             "actions": max_abs(ours["actions"][real], actions[real]),
             "return-to-go": max_abs(ours["rtg"][..., 0][real], returns[real]),
             "timesteps": max_abs(ours["timesteps"][real], time_steps[real])}
    mean_gap = max_abs(tr.state_mean, ds.state_mean[0])
    std_gap = max_abs(tr.state_std, ds.state_std[0])
    probs_gap = max_abs(trajectory_probabilities(data.lengths), ds.sample_prob)
    padded = int((~real).sum())
    return [
        Finding("windows: states, actions, return-to-go (/1000), timesteps at real steps", max(diffs.values()) < 1e-5,
                f"{BATCH} windows of K={cfg.model.context_len}, {padded} padded steps; max |diff| "
                + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items())),
        Finding("padding: right side, same mask", same_mask,
                f"masks equal: {same_mask}. Padded steps: CORL zeros with timesteps running on past the end "
                "(its table has K extra rows), ours the window's first step at timestep 0; neither reaches a "
                "real step's output (causal attention, padding after the real steps) nor the loss"),
        Finding("state normalisation (dataset mean, std + 1e-6)", max(mean_gap, std_gap) < 1e-5,
                f"max |diff| mean {mean_gap:.1e}, std {std_gap:.1e}"),
        Finding("sampling law: trajectory p ∝ length, start uniform in it", probs_gap < 1e-12,
                f"probabilities max |diff| {probs_gap:.1e}; both draw the start uniformly over the trajectory's steps"),
    ]


def same_weight_models(ref: Reference, cfg: ODTConfig, dropout: float | None = None):
    """CORL's model (its own initialisation) and ours built with GELU holding its weights."""
    torch.manual_seed(0)
    theirs = corl_model(ref, cfg, dropout)
    gelu = dataclasses.replace(cfg.model, activation="gelu", dropout=cfg.model.dropout if dropout is None else dropout)
    ours = OurDT(OBS_DIM, ACT_DIM, gelu)
    copy_weights(theirs, ours)
    return theirs, ours


def check_forward_and_loss(ref: Reference) -> list[Finding]:
    data = synthetic_data()
    cfg = config(**{"optim.batch_size": BATCH})
    tr = trainer(cfg, data)
    try:
        ours_b, theirs_b, _ = paired_batches(ref, tr, data)
    finally:
        tr.close()
    theirs, ours = same_weight_models(ref, cfg)
    theirs.eval()
    ours.eval()
    states, actions, returns, time_steps, mask = theirs_b
    real = ours_b["mask"]
    with torch.no_grad():
        p_t = theirs(states, actions, returns, time_steps, padding_mask=~mask.bool())
        p_o = ours(ours_b["states"], ours_b["actions"], ours_b["rtg"], ours_b["timesteps"])
        relu = copy.deepcopy(ours)
        for block in relu.blocks:
            block.mlp[1] = torch.nn.ReLU()
        p_relu = relu(ours_b["states"], ours_b["actions"], ours_b["rtg"], ours_b["timesteps"])
    l_t = corl_loss(p_t, actions, mask)
    l_o = deterministic_policy_loss(p_t, actions, real).loss
    n_valid, n_all = int(real.sum()), real.numel()
    return [
        Finding("forward: action at every real step (same weights, eval mode, GELU in both)", True,
                f"max |diff| {max_abs(p_t[real], p_o[real]):.1e} over {n_valid} steps"),
        Finding("activation in the MLPs", False,
                f"ours ReLU, CORL GELU; with the same weights the actions differ by up to {max_abs(p_t[real], p_relu[real]):.2f}",
                "ours is the original DT's (its gym GPT-2 uses ReLU), the DT the ODT paper compares with; kept"),
        Finding("loss: MSE on actions, padding masked", False,
                f"ours / CORL = {float(l_o / l_t):.4f} = B·K / real steps = {n_all}/{n_valid} = {n_all / n_valid:.4f}",
                "CORL zeroes the padded steps but divides by all B·K·A entries; ours (the original DT's) by the "
                "real ones. Within a batch every real step weighs the same in both; the batch's scale differs, "
                "which Adam divides out up to its eps and which gradient clipping at 0.25 rescales anyway. "
                "On the generated files windows are rarely padded (1000-step trajectories: ~1% of steps). Kept"),
    ]


def check_optimiser_and_update(ref: Reference) -> list[Finding]:
    """The warmup rule, and one whole update of each code from the same weights and batch (dropout 0)."""
    warm = 10_000
    gap = max(abs(corl_warmup(s, warm) - warmup_factor(s, warm)) for s in range(0, 3 * warm, 7))
    out = [Finding("learning-rate warmup: min((step + 1) / warmup, 1), stepped after each update", gap == 0,
                   f"max |diff| of the factor over 3 x {warm} updates: {gap:.1e}")]
    data = synthetic_data()
    # a 2-update warmup, so the three updates move the weights at about the full rate
    cfg = config(**{"optim.batch_size": BATCH, "model.dropout": 0.0, "model.activation": "gelu",
                    "optim.warmup_steps": 2})
    tr = trainer(cfg, data)
    try:
        ours_b, theirs_b, _ = paired_batches(ref, tr, data)
        theirs, ours = same_weight_models(ref, cfg, dropout=0.0)
        tr.model.load_state_dict(ours.state_dict())
        o = cfg.optim
        opt = torch.optim.AdamW(theirs.parameters(), lr=o.lr, weight_decay=o.weight_decay, betas=(0.9, 0.999))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: corl_warmup(s, o.warmup_steps))
        tr.learner.optimizer = torch.optim.AdamW(tr.model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
        tr.learner.scheduler = torch.optim.lr_scheduler.LambdaLR(tr.optimizer, lambda s: warmup_factor(s, o.warmup_steps))
        groups = tr.learner._make_optimizer().param_groups
        one_group = len(groups) == 1 and len(groups[0]["params"]) == len(list(tr.model.parameters()))
        theirs.train()
        before = {k: v.detach().clone() for k, v in tr.model.named_parameters()}
        for _ in range(3):
            corl_update(theirs, opt, sched, theirs_b, o.grad_clip)
            tr.step(ours_b)
        mapping = parameter_map(cfg.model.n_layers)
        src = dict(theirs.named_parameters())
        mine = dict(tr.model.named_parameters())
        moved = max(max_abs(mine[k], before[k]) for k in mine)
        gap = max(max_abs(mine[k], src[t][: mine[k].shape[0]]) for k, t in mapping.items())
    finally:
        tr.close()
    out.append(Finding("AdamW over every parameter (betas 0.9, 0.999; decay on all, as both DT codes)", one_group,
                       f"our optimiser has one group holding all {len(list(tr.model.parameters()))} parameters: {one_group}"))
    out.append(Finding("three whole updates (clip 0.25, AdamW, a 2-update warmup), same weights and batch, "
                       "dropout 0, GELU",
                       gap < 1e-3 * moved,
                       f"parameters moved up to {moved:.1e}; after 3 updates they differ by at most {gap:.1e} "
                       "(the loss scale above, divided out by Adam up to eps)"))
    return out


class OldGymAdapter:
    """A gymnasium environment behind the old gym API CORL's eval_rollout calls, with CORL's
    wrap_env transforms (normalised observations, rewards times the scale); records the actions."""

    def __init__(self, env: gym.Env, mean: np.ndarray, std: np.ndarray, reward_scale: float, seed: int):
        self.env, self.mean, self.std, self.scale, self.seed = env, mean, std, reward_scale, seed
        self.actions: list[np.ndarray] = []
        self.total = 0.0

    def reset(self):
        obs, _ = self.env.reset(seed=self.seed)
        return (obs - self.mean) / self.std

    def step(self, action):
        self.actions.append(np.asarray(action))
        obs, reward, term, trunc, info = self.env.step(action)
        self.total += float(reward)
        return (obs - self.mean) / self.std, reward * self.scale, term or trunc, info


def check_evaluation(ref: Reference, steps: int = 60, seed: int = 5) -> list[Finding]:
    """CORL's eval_rollout and our run_episodes on the same weights, environment and reset seed:
    context of the last K steps, a zero action in the current step's slot, return-to-go started at
    the target times the scale and lowered by each scaled reward, timesteps from 0. The episode
    (``steps`` = 3K steps, rewards the actions' sums) runs past the context, so the window slides."""
    data = synthetic_data()
    cfg = config()
    theirs, ours = same_weight_models(ref, cfg)
    theirs.eval()
    mean, std = data.state_statistics()
    target = cfg.g_eval

    def make_env():
        return BoxEnv(-np.ones(ACT_DIM), np.ones(ACT_DIM), OBS_DIM, length=steps)

    adapter = OldGymAdapter(make_env(), mean, std, 1.0 / cfg.rtg_scale, seed)
    corl_return, corl_len = ref.module.eval_rollout(theirs, adapter, target_return=target / cfg.rtg_scale)
    envs = gym.vector.SyncVectorEnv([make_env])
    try:
        cond = Conditioning(target_return=target, rtg_scale=cfg.rtg_scale, state_mean=mean, state_std=std,
                            context_len=cfg.model.eval_context_len)
        result = run_episodes(ours, envs, cond, seeds=[seed], sample=False)
    finally:
        envs.close()
    n = min(len(adapter.actions), int(result.lengths[0]))
    gap = max_abs(np.stack(adapter.actions[:n]), result.episodes[0]["actions"][:n])
    same_len = int(corl_len) == int(result.lengths[0])
    ret_gap = abs(corl_return / (1.0 / cfg.rtg_scale) - float(result.returns[0]))
    return [Finding(f"evaluation rollout ({steps} steps, target {target:g}, context {cfg.model.eval_context_len}, "
                    "same weights, GELU)",
                    same_len and gap < 1e-4,
                    f"{int(corl_len)} / {int(result.lengths[0])} steps; max |action diff| {gap:.1e}; "
                    f"return diff {ret_gap:.1e}")]


def check_initialisation(ref: Reference) -> list[Finding]:
    cfg = config()
    torch.manual_seed(0)
    theirs = corl_model(ref, cfg)
    ours = OurDT(OBS_DIM, ACT_DIM, cfg.model)
    groups = {"state embedding": ("state_emb.weight", "embed_state.weight"),
              "return embedding": ("return_emb.weight", "embed_return.weight"),
              "timestep embedding": ("timestep_emb.weight", "embed_timestep.weight"),
              "action head": ("action_head.0.weight", "head.linear.weight"),
              "attention in-projection": ("blocks.0.attention.in_proj_weight", "blocks.0.attn.qkv.weight")}
    t, o = dict(theirs.named_parameters()), dict(ours.named_parameters())
    stds = {k: (float(t[a].detach().std()), float(o[b].detach().std())) for k, (a, b) in groups.items()}
    bias = float(o["embed_state.bias"].detach().abs().max()), float(t["state_emb.bias"].detach().abs().max())
    text = "; ".join(f"{k} std {a:.3f} / {b:.3f}" for k, (a, b) in stds.items())
    return [Finding("initialisation", False,
                    f"CORL / ours: {text}; embedding biases max |b| {bias[1]:.2f} / {bias[0]:.2f}",
                    "CORL draws every linear and embedding weight from N(0, 0.02) with zero biases (its attention "
                    "in-projection, a bare parameter of nn.MultiheadAttention, keeps PyTorch's Xavier-uniform); ours gives "
                    "GPT-2's init to the transformer blocks and final LayerNorm only and leaves the token and "
                    "timestep embeddings and the head at PyTorch's defaults, as the original DT code does "
                    "(odt/model.py says why the return embedding's bias matters). Kept")]


def run_checks(ref: Reference) -> list[Finding]:
    torch.set_num_threads(1)
    return [*check_settings(ref), *check_windows(ref), *check_forward_and_loss(ref),
            *check_optimiser_and_update(ref), *check_evaluation(ref), *check_initialisation(ref)]


def section(ref: Reference, findings: list[Finding]) -> str:
    origin = f"CORL {ref.commit}" if ref.commit else f"an unrecorded CORL version (sha256 {ref.sha256[:12]})"
    n_diff = sum(not f.same for f in findings)
    return "\n".join([
        f"`baselines/dt.py` (ODT's model with the deterministic head, `odt/model.py`) at {code_version()} against "
        f"`{SCRIPT}` ({origin}, "
        f"Apache-2.0; imported from `{SOURCE_ENV}`, never copied) and its `configs/offline/dt/` files. Same weights "
        "(CORL's, copied into ours; ours built with GELU where the forward pass is compared), the same windows "
        f"(our sampler's {BATCH} draws of K = 20 on synthetic Hopper-shaped trajectories, 3 to 1000 steps long; CORL's "
        "`SequenceDataset` builds each for the same trajectory and start), float32. CORL's training step is in "
        "`train()`, so its masked loss, warmup rule and update are restated next to their lines in "
        "`benchmarks/reference_checks/dt_corl.py`; its model, window builder and `eval_rollout` run as they are. "
        f"{len(findings)} components, {n_diff} differ; none is a bug, each is kept for the reason given (changing "
        "one would change Table 1's DT cells).",
        "",
        f"Command: `{SOURCE_ENV}=<CORL clone> python -m benchmarks.reference_checks.dt_corl --out "
        "paper_tables/baselines_components_cpu.md`",
        "",
        findings_table(findings),
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.reference_checks.dt_corl", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, help="write the 'DT against CORL' section into this markdown file")
    args = p.parse_args(argv)
    from rlbase.config import ConfigError
    try:
        ref = load_corl_dt()
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
