"""Decision Transformer (Chen et al., NeurIPS 2021) as an offline baseline.

DT is ODT's model with the deterministic head (``model.stochastic=False``: tanh'd linear
action head, MSE loss, no entropy term), trained by the same trainer on the same windows with
AdamW instead of LAMB, and never finetuned (``online.online_samples=0``: ``finetune`` is a
no-op). There is no second transformer.

Settings: the original DT gym experiments: embedding 128, 3 layers, 1 head, K=20 (and the
same context at evaluation), batch 64, AdamW lr 1e-4, weight decay 1e-4, linear warmup over
1e4 updates, gradient clipping 0.25, dropout 0.1, ReLU, learned timestep embedding, returns
divided by 1000, 10 iterations x 1e4 updates = 1e5 updates, evaluated after every iteration.
Target returns: hopper 3600, walker2d 5000, halfcheetah 6000 (the original code also tried
halfcheetah 12000 and half targets); ant and AntMaze, which DT did not run, use g_eval of the
ODT tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from odt.config import ODTConfig, paper_config
from odt.train import ODTTrainer
from rlbase.config import ConfigError, apply_overrides
from rlbase.presets import PRESETS, scale_dt
from rlbase.protocol import is_antmaze
from rlbase.trajectories import Trajectories

DT_TARGET_RETURN = {"hopper": 3600.0, "walker2d": 5000.0, "halfcheetah": 6000.0}


def dt_paper_config(dataset: str) -> ODTConfig:
    """The original DT gym configuration for one dataset (the ``paper`` preset)."""
    base = paper_config(dataset, "offline")  # validates the name; domain defaults, g_eval
    g_eval = DT_TARGET_RETURN.get(dataset.split("-")[0], base.g_eval)
    cfg = dataclasses.replace(
        base,
        model=dataclasses.replace(
            base.model, embed_dim=128, n_layers=3, n_heads=1, dropout=0.1, activation="relu",
            context_len=20, eval_context_len=20, positional_embedding=True, stochastic=False),
        optim=dataclasses.replace(
            base.optim, batch_size=64, optimizer="adamw", lr=1e-4, weight_decay=1e-4,
            warmup_steps=10_000, grad_clip=0.25),
        online=dataclasses.replace(base.online, online_samples=0),
        pretrain_updates=100_000,
        g_eval=g_eval,
        eval_every_updates=10_000,
    )
    return cfg.validate()


def dt_config(dataset: str, preset: str = "paper", seed: int = 0,
              overrides: dict[str, Any] | None = None) -> ODTConfig:
    """DT's configuration: the original gym settings, scaled by preset (rlbase.presets.scale_dt),
    then overrides."""
    paper = dt_paper_config(dataset)  # validates the name first
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    cfg = scale_dt(paper, preset, is_antmaze(dataset))
    cfg.seed = seed
    cfg = apply_overrides(cfg, overrides or {})
    if cfg.online.online_samples != 0:
        raise ConfigError(f"online.online_samples={cfg.online.online_samples}: DT is offline only (must be 0)")
    return cfg


def dt_agent(cfg: ODTConfig, data: Trajectories, make_env: Callable[[], gym.Env],
             score_fn: Callable[[np.ndarray], np.ndarray] | None = None,
             progress: bool = True) -> ODTTrainer:
    """The trainer is ODT's; with online_samples=0 its ``finetune`` takes no step."""
    if cfg.model.stochastic:
        raise ConfigError("model.stochastic=True: DT uses the deterministic head")
    return ODTTrainer(cfg, data, make_env, score_fn=score_fn, progress=progress)
