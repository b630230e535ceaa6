"""The method registry: names the runner knows, mapped to configs and agents.

Every method is built the same way and presents the interface in baselines/interface.py.
``odt`` is the paper's finetuning protocol (short pretraining with the finetuning table, then
the online budget); ``odt-offline`` its offline protocol (1e5 updates, the offline table),
which gives Table 1's "ODT (offline)" column.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.interface import Agent
from odt.config import ConfigError, make_config
from odt.train import ODTTrainer
from odt.trajectories import Trajectories


def _odt_config(protocol: str):
    def config(dataset: str, preset: str, seed: int, overrides: dict[str, Any]):
        return make_config(dataset, protocol, preset, {"seed": seed, **overrides})
    return config


def _odt_agent(cfg, data: Trajectories, make_env: Callable[[], gym.Env],
               score_fn: Callable[[np.ndarray], np.ndarray] | None, progress: bool) -> Agent:
    return ODTTrainer(cfg, data, make_env, score_fn=score_fn, progress=progress)


# name -> (config builder, agent builder)
METHODS: dict[str, tuple[Callable, Callable]] = {
    "odt": (_odt_config("online"), _odt_agent),
    "odt-offline": (_odt_config("offline"), _odt_agent),
}


def _require(method: str) -> None:
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")


def method_config(method: str, dataset: str, preset: str, seed: int = 0, overrides: dict | None = None):
    _require(method)
    return METHODS[method][0](dataset, preset, seed, dict(overrides or {}))


def build_agent(method: str, cfg, data: Trajectories, make_env: Callable[[], gym.Env],
                score_fn: Callable[[np.ndarray], np.ndarray] | None = None, progress: bool = True) -> Agent:
    _require(method)
    return METHODS[method][1](cfg, data, make_env, score_fn, progress)
