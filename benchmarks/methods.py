"""The method registry: names the runner knows, mapped to configs and agents.

Every method is built the same way and presents the interface in baselines/interface.py, and
states its budget (gradient updates, environment steps, FLOPs per update, from its config;
benchmarks/budgets.py), which the launcher's cost estimate prices.

* ``odt``: the paper's finetuning protocol (short pretraining with the finetuning table, then
  the online budget); ``odt-offline``: its offline protocol (1e5 updates, the offline table),
  which gives Table 1's "ODT (offline)" column; ``odt-control``: ``odt`` with the same
  pretraining, rate switch, buffer initialisation, exploration rollouts and budget, but the
  rollouts never enter the buffer (no new data), so ODT's gain over it is what online data adds.
  ``odt-control-matched``: ``odt-control`` that stops on updates, not samples: its online phase
  makes exactly as many updates as its twin, the ``odt`` run of the same experiment, dataset,
  seed, preset, overrides and variant (``UPDATE_TWINS``), read from the twin's record by the
  runner (benchmarks/matched_updates.py) into ``online.online_updates``. The plain control
  spends the sample budget, so where its episodes are longer or shorter than ODT's it makes
  fewer or more updates than its twin.
* ``dt``: the original Decision Transformer, offline only (baselines/dt.py).
* ``iql``: Implicit Q-Learning, offline then finetuned online (baselines/iql.py); its
  end-of-pretraining row gives "IQL (offline)", its last row "IQL (0.2m)".
* ``sac``: Soft Actor-Critic online from scratch (baselines/sac.py); the dataset only names
  the environment.
* ``bc``: behaviour cloning, an MLP regressed from state to action with CORL's settings,
  offline only (baselines/bc.py); Table 1's sanity column, what each dataset supports without RL.
* ``official-odt``: the unmodified official online-dt code (facebookresearch/online-dt) run on
  the same dataset, environment and ``odt`` config (benchmarks/official/); needs the official
  source, named by ``ODT_OFFICIAL_SRC`` (docs/official-odt.md), and refuses to start without it.
* ``corl-iql``: CORL's single-file IQL (corl-team/CORL), unmodified, on the same dataset and
  environment with ``iql``'s budget and CORL's own config for the dataset (benchmarks/corl/);
  needs CORL's source, named by ``ODT_CORL_SRC`` (docs/corl.md), and refuses to start without it.

Run one method from the command line (a quick check, not the benchmark runner)::

    python -m benchmarks.methods iql hopper-medium --preset smoke
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.bc import BCAgent, bc_config
from baselines.dt import dt_agent, dt_config
from baselines.interface import Agent
from baselines.iql import IQLAgent, iql_config
from baselines.sac import SACAgent, sac_config
from benchmarks import budgets
from benchmarks.budgets import BudgetFn
from benchmarks.corl.driver import CorlIQLAgent, corl_config
from benchmarks.datasets.registry import hyperparameter_dataset
from benchmarks.official.driver import OfficialODTAgent, official_config
from odt.config import make_config
from odt.train import ODTTrainer
from rlbase.config import ConfigError, parse_assignments
from rlbase.presets import PRESETS
from rlbase.trajectories import Trajectories


def dataset_size(preset: str) -> str:
    """The smoke preset trains on the tiny generated dataset; every other preset on the real one."""
    return "smoke" if preset == "smoke" else "full"


def _odt_config(protocol: str, **fixed: Any):
    def config(dataset: str, preset: str, seed: int, overrides: dict[str, Any]):
        return make_config(dataset, protocol, preset, {"seed": seed, **fixed, **overrides})
    return config


def _odt_agent(cfg, data: Trajectories, make_env: Callable[[], gym.Env],
               score_fn: Callable[[np.ndarray], np.ndarray] | None, progress: bool) -> Agent:
    return ODTTrainer(cfg, data, make_env, score_fn=score_fn, progress=progress)


def _matched_agent(cfg, data: Trajectories, make_env: Callable[[], gym.Env],
                   score_fn: Callable[[np.ndarray], np.ndarray] | None, progress: bool) -> Agent:
    """ODT's trainer for a run whose update budget is its twin's; refuses a config without one."""
    if cfg.online.online_updates <= 0:
        raise ConfigError("online.online_updates=0: odt-control-matched stops on its odt twin's online updates; "
                          "the runner sets them from the twin's record (benchmarks/matched_updates.py), by hand "
                          "--set online.online_updates=N")
    return _odt_agent(cfg, data, make_env, score_fn, progress)


def _iql_agent(cfg, data, make_env, score_fn, progress) -> Agent:
    return IQLAgent(cfg, data, make_env, score_fn=score_fn, progress=progress)


def _sac_config(dataset: str, preset: str, seed: int, overrides: dict[str, Any]):
    from benchmarks.datasets import DATASETS

    if dataset not in DATASETS:  # SAC trains on the dataset's environment, whichever it is
        raise ConfigError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    return sac_config(dataset, preset, seed, overrides)


def _bc_agent(cfg, data, make_env, score_fn, progress) -> Agent:
    return BCAgent(cfg, data, make_env, score_fn=score_fn, progress=progress)


def _official_agent(cfg, data, make_env, score_fn, progress) -> Agent:
    return OfficialODTAgent(cfg, data, make_env, score_fn=score_fn, progress=progress)


def _corl_iql_agent(cfg, data, make_env, score_fn, progress) -> Agent:
    return CorlIQLAgent(cfg, data, make_env, score_fn=score_fn, progress=progress)


def _sac_agent(cfg, data, make_env, score_fn, progress) -> Agent:
    del data  # SAC learns from scratch online; the dataset only names the environment
    return SACAgent(cfg, make_env, score_fn=score_fn, progress=progress)


# name -> (config builder, agent builder, budget: what one run computes, from its config)
METHODS: dict[str, tuple[Callable, Callable, BudgetFn]] = {
    "odt": (_odt_config("online"), _odt_agent, budgets.odt_budget),
    "odt-offline": (_odt_config("offline"), _odt_agent, budgets.odt_budget),
    "odt-control": (_odt_config("online", **{"online.add_rollouts": False}), _odt_agent, budgets.odt_budget),
    "odt-control-matched": (_odt_config("online", **{"online.add_rollouts": False}), _matched_agent,
                            budgets.odt_budget),
    "dt": (dt_config, dt_agent, budgets.odt_budget),
    "iql": (iql_config, _iql_agent, budgets.iql_budget),
    "sac": (_sac_config, _sac_agent, budgets.sac_budget),
    "bc": (bc_config, _bc_agent, budgets.bc_budget),
    "official-odt": (official_config, _official_agent, budgets.official_odt_budget),
    "corl-iql": (corl_config, _corl_iql_agent, budgets.corl_iql_budget),
}
# methods that run code from outside this repository (the setup they need is in docs/)
EXTERNAL_METHODS = ("official-odt", "corl-iql")
# method -> the method of its twin, whose online updates it makes (online.online_updates, set by
# the runner from the twin's record: benchmarks/matched_updates.py)
UPDATE_TWINS: dict[str, str] = {"odt-control-matched": "odt"}


def _require(method: str) -> None:
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")


def method_config(method: str, dataset: str, preset: str, seed: int = 0, overrides: dict | None = None):
    """The config of ``method`` on ``dataset``; a Minari dataset (``minari:<id>``) is configured
    with the paper's row of its environment family, a forge variant with its base dataset's
    (``registry.hyperparameter_dataset``)."""
    _require(method)
    return METHODS[method][0](hyperparameter_dataset(dataset), preset, seed, dict(overrides or {}))


def budget_of(method: str) -> BudgetFn | None:
    """The budget function ``method`` states (``benchmarks.budgets``); None where its entry names none."""
    _require(method)
    entry = METHODS[method]
    return entry[2] if len(entry) > 2 else None


def build_agent(method: str, cfg, data: Trajectories, make_env: Callable[[], gym.Env],
                score_fn: Callable[[np.ndarray], np.ndarray] | None = None, progress: bool = True) -> Agent:
    _require(method)
    return METHODS[method][1](cfg, data, make_env, score_fn, progress)


# --------------------------------------------------------------------------------------------
# A thin CLI: one method, one dataset, pretrain -> finetune, final scores as JSON.
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.methods",
        description="Train one registered method on one dataset (offline phase, then online "
                    "phase) and print the end-of-phase evaluations as JSON. For quick checks; "
                    "benchmark runs with records on disk go through the runner.")
    p.add_argument("method", help=f"one of: {', '.join(sorted(METHODS))}")
    p.add_argument("dataset", help="a dataset name, e.g. hopper-medium")
    p.add_argument("--preset", default="smoke", choices=PRESETS, help="config scale (default: smoke)")
    p.add_argument("--size", default=None, choices=("full", "smoke"),
                   help="dataset size to load (default: smoke for the smoke preset, else full)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                   help="config overrides, e.g. --set offline_updates=1000")
    p.add_argument("--out", help="also write the result JSON to this file (atomically)")
    args = p.parse_args(argv)

    import torch

    from benchmarks.datasets import load_dataset
    from rlbase.checkpoint import atomic_write_bytes

    torch.set_num_threads(args.threads)
    try:
        cfg = method_config(args.method, args.dataset, args.preset, args.seed, parse_assignments(args.set))
        loaded = load_dataset(args.dataset, size=args.size or dataset_size(args.preset))
        agent = build_agent(args.method, cfg, loaded.trajectories, loaded.spec.make_env, loaded.score_fn)
    except (ConfigError, ValueError, FileNotFoundError) as exc:  # bad names, values, files: exit 2, as the other CLIs
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    start = time.perf_counter()
    try:
        offline = agent.pretrain()
        online = agent.finetune()
    finally:
        agent.close()
    drop = ("returns",)
    result = {
        "method": args.method, "dataset": args.dataset, "preset": args.preset, "seed": args.seed,
        "provenance": {k: v for k, v in loaded.provenance.items() if isinstance(v, (str, int, float))},
        "offline": {k: v for k, v in (offline or {}).items() if k not in drop},
        "online": {k: v for k, v in (online or {}).items() if k not in drop} or None,
        "updates": agent.counters.updates, "online_samples": agent.counters.online_samples,
        "wall_time_s": time.perf_counter() - start,
    }
    text = json.dumps(result, indent=2, default=float)
    print(text)
    if args.out:
        from pathlib import Path
        atomic_write_bytes(Path(args.out), text.encode())
    return result


if __name__ == "__main__":
    main()
