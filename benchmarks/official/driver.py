"""The ``official-odt`` method: the unmodified official online-dt Experiment on this project's work.

The official ``main.py`` (facebookresearch/online-dt, written against c376fa1) is imported from
the folder ``ODT_OFFICIAL_SRC`` names, with the stand-ins of :mod:`benchmarks.official.adapters`,
and its ``Experiment`` runs pretraining and the online phase as it is, on the project's dataset
(pickled in the official layout into a scratch folder) and gymnasium environment. The preset's
config (the same one ``odt`` runs with) becomes the official ``variant`` by
:func:`official_variant`, which refuses any setting the official code cannot express.

Where ``main.py`` has no option for a preset's setting, the driver wraps an official method
(instance attributes of the one Experiment; the official code is not edited):

* ``online_tuning``: before the official online loop starts, the learning rate switches to
  ``online.lr`` (the cpu preset pretrains at 1e-3 and finetunes at the paper's 1e-4; the
  official code has one rate), the warmup factor applying to the new base rate as in ``odt``;
* ``_augment_trajectories``: after each exploration rollout, once the online samples reach the
  budget the current round becomes the last (``max_online_iters``), so the official loop runs
  its updates and its final evaluation and stops: the budget counts samples, not rounds;
* ``logger.log_metrics``: after the official logger prints, each evaluation becomes a curve row
  (per-episode returns are read from the official ``evaluation.vec_evaluate_episode_rtg``,
  wrapped to keep what it returns) and the counters follow the official ones;
* ``main.create_dataloader``: the official loader with ``num_workers`` from
  ``ODT_OFFICIAL_WORKERS`` (default 0) instead of 24 worker processes: on a 2-core machine 24
  workers are slower; batches are drawn the same way, by the main process's ``random`` and
  ``numpy`` streams instead of the workers';
* ``main.args``: ``Experiment.__call__`` seeds from the script's global ``args``, which an
  import does not create; the driver sets it to the run's seed.

Pretraining runs in iterations of ``gcd(eval_every_updates, pretrain_updates)`` updates (the
official code evaluates after every pretraining iteration): 500 at the cpu preset, so the curve
has evaluations at 500, 1000, ..., 2500 updates. Evaluation and exploration environments are
seeded as the official code seeds them (0..n-1 and 100), whatever the run's seed.

A run is restartable, not resumable: the official code keeps no state the driver can restore
mid-run, so an interrupted run starts again from the beginning (its record says so in
``attempts``). ``pretrain`` runs the whole official Experiment (both phases are one official
call); ``finetune`` returns its last online row.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import math
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.official.adapters import (
    InProcessVecEnv,
    OldGymEnv,
    stand_in_modules,
    to_official_trajectories,
)
from benchmarks.whole_run_agent import WholeRunAgent
from odt.config import ODTConfig, make_config
from odt.train import Counters
from rlbase.config import ConfigError
from rlbase.envs import summarize_returns
from rlbase.training import StopRequested, resolve_device
from rlbase.trajectories import Trajectories

DRIVER_VERSION = 1
SOURCE_ENV = "ODT_OFFICIAL_SRC"  # the official source folder (holds main.py)
WORKERS_ENV = "ODT_OFFICIAL_WORKERS"  # the official data loader's worker processes (default 0)
DEPS_DIR = "_deps"  # inside the source folder: its pinned transformers (pip install --target)
# sha256 of the official Python files (source_sha256) -> the commit they are from
KNOWN_SOURCES = {
    "69b15b3cd0ca57e015b4918885e7350b915cfd8743428f5a4a1b954f6e854ff3": "c376fa1",
}
OFFICIAL_LAMBDA_LR = 1e-4  # main.py: Adam on log_temperature at 1e-4
OFFICIAL_GRAD_CLIP = 0.25  # trainer.py: clip_grad_norm_(..., 0.25)
OFFICIAL_MAX_EP_LEN = 1000  # main.py: MAX_EPISODE_LEN
OFFICIAL_LOG_STD = (-5.0, 2.0)  # decision_transformer.py: DiagGaussianActor's log_std_bounds
SETUP_HINT = (f"set {SOURCE_ENV} to a folder holding the official online-dt source (github.com/"
              "facebookresearch/online-dt at c376fa1) with its pinned model dependencies in "
              f"<folder>/{DEPS_DIR}; docs/official-odt.md gives the commands")


# ----- the source and its provenance ---------------------------------------------------------

@dataclass(frozen=True)
class OfficialSource:
    path: Path
    sha256: str  # of the official Python files, not of DEPS_DIR
    commit: str | None  # from KNOWN_SOURCES; None for a source the driver does not know


def source_sha256(path: Path) -> str:
    """A digest of the official code itself: every ``.py`` file outside ``DEPS_DIR``, by
    relative path and content, in sorted order."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*.py") if DEPS_DIR not in p.relative_to(path).parts)
    for p in files:
        digest.update(p.relative_to(path).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return digest.hexdigest()


def locate_source(environ: dict[str, str] | None = None) -> OfficialSource:
    """The official source ``ODT_OFFICIAL_SRC`` names; ConfigError saying how to set it up if it
    is unset or holds no ``main.py``."""
    env = os.environ if environ is None else environ
    where = env.get(SOURCE_ENV)
    if not where:
        raise ConfigError(f"official-odt needs the official code, and {SOURCE_ENV} is not set: {SETUP_HINT}")
    path = Path(where).expanduser().resolve()
    if not (path / "main.py").is_file():
        raise ConfigError(f"{SOURCE_ENV}={where}: no main.py there: {SETUP_HINT}")
    sha = source_sha256(path)
    return OfficialSource(path=path, sha256=sha, commit=KNOWN_SOURCES.get(sha))


# ----- the preset's config as the official variant -------------------------------------------

@dataclass(frozen=True)
class OfficialODTConfig:
    """What an ``official-odt`` run is: the project's ``odt`` config for the same dataset, preset
    and seed, the official ``variant`` it maps to, and the official source it runs."""

    odt: ODTConfig
    dataset: str
    variant: dict[str, Any] = field(default_factory=dict)
    source_sha256: str = ""
    source_commit: str | None = None
    driver_version: int = DRIVER_VERSION

    @property
    def online(self):  # the budget, where the runner and tests read it for every method
        return self.odt.online

    @property
    def seed(self) -> int:
        return self.odt.seed


def _require(cond: bool, name: str, value: Any, why: str) -> None:
    if not cond:
        raise ConfigError(f"official-odt cannot run {name}={value!r}: {why}")


def _check_expressible(cfg: ODTConfig, act_dim: int | None) -> None:
    """ConfigError naming the first setting of ``cfg`` the official main.py cannot run."""
    m, o, on = cfg.model, cfg.optim, cfg.online
    _require(m.stochastic, "model.stochastic", m.stochastic, "the official Experiment builds the stochastic policy only")
    _require(o.optimizer == "lamb", "optim.optimizer", o.optimizer, "the official Experiment uses LAMB")
    _require(o.lambda_lr == OFFICIAL_LAMBDA_LR, "optim.lambda_lr", o.lambda_lr, "fixed at 1e-4 in main.py")
    _require(o.grad_clip == OFFICIAL_GRAD_CLIP, "optim.grad_clip", o.grad_clip, "fixed at 0.25 in trainer.py")
    _require(o.target_entropy is None or (act_dim is not None and o.target_entropy == -act_dim),
             "optim.target_entropy", o.target_entropy, "fixed at -|A| in main.py")
    _require(m.max_ep_len == OFFICIAL_MAX_EP_LEN, "model.max_ep_len", m.max_ep_len, "fixed at 1000 in main.py")
    _require((m.log_std_min, m.log_std_max) == OFFICIAL_LOG_STD, "model.log_std_min/max",
             (m.log_std_min, m.log_std_max), "fixed at (-5, 2) in the official policy head")
    _require(on.exploration_rtg == "fixed", "online.exploration_rtg", on.exploration_rtg, "main.py explores at a fixed online_rtg")
    _require(on.hindsight_relabel, "online.hindsight_relabel", on.hindsight_relabel, "the official loader always relabels")
    _require(on.add_rollouts, "online.add_rollouts", on.add_rollouts, "the official loop always adds its rollouts")
    _require(on.buffer_init == "top", "online.buffer_init", on.buffer_init, "the official buffer keeps the top trajectories")
    _require(on.sampling == "length", "online.sampling", on.sampling, "the official loader samples by length")
    _require(cfg.eval_episodes_interim == 0, "eval_episodes_interim", cfg.eval_episodes_interim,
             "every official evaluation runs num_eval_episodes")
    _require(cfg.precision == "fp32", "precision", cfg.precision, "the official code runs fp32")
    _require(on.online_updates == 0, "online.online_updates", on.online_updates,
             "the official loop stops on its rounds; the driver stops it on the sample budget only")


def official_variant(cfg: ODTConfig, dataset: str, act_dim: int | None = None) -> dict[str, Any]:
    """The official main.py ``variant`` (its argparse options) for the project's ``odt`` config.

    The official code scales returns by 1/1000 (1 on AntMaze); the config's ``rtg_scale`` must
    agree. ``online.lr`` and the online sample budget have no official option: the driver
    applies them (see the module docstring) and they are kept under ``driver_*`` keys."""
    _check_expressible(cfg, act_dim)
    reward_scale = 1.0 if "antmaze" in dataset else 0.001
    _require(math.isclose(1.0 / cfg.rtg_scale, reward_scale), "rtg_scale", cfg.rtg_scale,
             f"main.py scales returns by {reward_scale:g} on {dataset}")
    per_iter = math.gcd(cfg.eval_every_updates, cfg.pretrain_updates) or cfg.pretrain_updates
    budget = cfg.online.online_samples
    return {
        "seed": cfg.seed, "env": dataset,
        "K": cfg.model.context_len, "embed_dim": cfg.model.embed_dim, "n_layer": cfg.model.n_layers,
        "n_head": cfg.model.n_heads, "activation_function": cfg.model.activation,
        "dropout": cfg.model.dropout, "eval_context_length": cfg.model.eval_context_len,
        "ordering": int(cfg.model.positional_embedding),
        "eval_rtg": cfg.g_eval, "num_eval_episodes": cfg.eval_episodes,
        "init_temperature": cfg.optim.init_lambda, "batch_size": cfg.optim.batch_size,
        "learning_rate": cfg.optim.lr, "weight_decay": cfg.optim.weight_decay,
        "warmup_steps": cfg.optim.warmup_steps,
        "max_pretrain_iters": cfg.pretrain_updates // per_iter if per_iter else 0,
        "num_updates_per_pretrain_iter": per_iter,
        "max_online_iters": budget,  # an upper bound (a round takes >= 1 sample); the budget stops it
        "online_rtg": cfg.online.g_online, "num_online_rollouts": 1,
        "replay_size": cfg.online.buffer_size,
        "num_updates_per_online_iter": cfg.online.updates_per_round,
        "eval_interval": cfg.online.eval_every_rounds,
        "device": str(resolve_device(cfg.device)), "log_to_tb": False, "exp_name": "official-odt",
        "driver_online_lr": cfg.online.lr, "driver_online_samples": budget,
    }


def official_config(dataset: str, preset: str, seed: int, overrides: dict[str, Any],
                    environ: dict[str, str] | None = None) -> OfficialODTConfig:
    """The runner's config builder: ``odt``'s config, its official variant, the source."""
    cfg = make_config(dataset, "online", preset, {"seed": seed, **overrides})
    variant = official_variant(cfg, dataset)
    source = locate_source(environ)
    return OfficialODTConfig(odt=cfg, dataset=dataset, variant=variant, source_sha256=source.sha256,
                             source_commit=source.commit)


# ----- the agent -----------------------------------------------------------------------------

@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    """main.py reads ``./data/<env>.pkl``: the official run works in a scratch folder."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class OfficialODTAgent(WholeRunAgent):
    """The runner's agent for ``official-odt`` (``baselines.interface.Agent``)."""

    def __init__(self, cfg: OfficialODTConfig, data: Trajectories, make_env: Callable,
                 score_fn: Callable[[np.ndarray], np.ndarray] | None = None, progress: bool = True,
                 environ: dict[str, str] | None = None):
        self.cfg, self.data, self.make_env, self.score_fn = cfg, data, make_env, score_fn
        self.progress = progress
        self.environ = environ
        self.counters = Counters()
        self.rows: list[dict] = []
        self._experiment: Any = None
        self._evaluate_episodes: Callable | None = None
        # set by a caller that starts the online phase from another state (``cross_start``):
        # called with the Experiment before its online loop; returns the updates that state holds
        self.before_online: Callable[[Any], int] | None = None
        self._updates_before_online = 0

    def _source(self):
        source = locate_source(self.environ)
        if source.sha256 != self.cfg.source_sha256:
            raise ConfigError(f"{SOURCE_ENV}={source.path} holds other official code (sha256 {source.sha256[:12]}) "
                              f"than this run's config was made with ({self.cfg.source_sha256[:12]})")
        return source

    def _run(self, log: Callable[[dict], None]) -> None:
        source = self._source()
        name = self.cfg.dataset
        with (tempfile.TemporaryDirectory(prefix="official-odt-") as work,
              stand_in_modules({name: self.make_env}, [source.path, source.path / DEPS_DIR]),
              working_directory(Path(work))):
            (Path(work) / "data").mkdir()
            with open(Path(work) / "data" / f"{name}.pkl", "wb") as f:
                pickle.dump(to_official_trajectories(self.data), f)
            experiment = self._build_experiment(Path(work), log)
            experiment()
        self.counters.pretrain_done = True

    def _build_experiment(self, work: Path, log: Callable[[dict], None]) -> Any:
        main = importlib.import_module("main")
        loader = importlib.import_module("data")
        evaluation = importlib.import_module("evaluation")
        utils = importlib.import_module("utils")
        seed = self.cfg.seed
        main.args = argparse.Namespace(seed=seed)
        workers = int((self.environ or os.environ).get(WORKERS_ENV, "0"))
        main.create_dataloader = functools.partial(loader.create_dataloader, num_workers=workers)
        evaluated: dict[str, np.ndarray] = {}
        episodes_fn = evaluation.vec_evaluate_episode_rtg

        def keep_returns(*args, **kwargs):
            returns, lengths, trajectories = episodes_fn(*args, **kwargs)
            evaluated.update(returns=np.asarray(returns, dtype=np.float64), lengths=np.asarray(lengths, dtype=np.float64))
            return returns, lengths, trajectories

        evaluation.vec_evaluate_episode_rtg = keep_returns
        self._evaluate_episodes = episodes_fn
        variant = {k: v for k, v in self.cfg.variant.items() if not k.startswith("driver_")}
        variant["save_dir"] = str(work / "exp")
        utils.set_seed_everywhere(seed)
        experiment = main.Experiment(variant)
        self._experiment = experiment
        self._wrap(experiment, evaluated, log)
        return experiment

    def _wrap(self, experiment: Any, evaluated: dict, log: Callable[[dict], None]) -> None:
        """The driver's wrappers of official methods (module docstring)."""
        cfg, per_iter = self.cfg.odt, self.cfg.variant["num_updates_per_pretrain_iter"]
        budget, phase = self.cfg.variant["driver_online_samples"], {"now": "pretrain"}
        online_tuning, augment, log_metrics = (experiment.online_tuning, experiment._augment_trajectories,
                                               experiment.logger.log_metrics)

        def switch_rate_then_tune(*args, **kwargs):
            phase["now"] = "online"
            if self.before_online is not None:
                self._updates_before_online = self.before_online(experiment)
            if cfg.online.lr is not None:
                scheduler = experiment.scheduler
                scheduler.base_lrs = [cfg.online.lr for _ in experiment.optimizer.param_groups]
                factor = min((scheduler.last_epoch + 1) / cfg.optim.warmup_steps, 1.0)
                for group in experiment.optimizer.param_groups:
                    group["lr"] = cfg.online.lr * factor
            return online_tuning(*args, **kwargs)

        def augment_within_budget(*args, **kwargs):
            out = augment(*args, **kwargs)
            if experiment.total_transitions_sampled >= budget:
                experiment.variant["max_online_iters"] = experiment.online_iter + 1
            return out

        def log_and_record(outputs, iter_num, total_transitions_sampled, writer):
            log_metrics(outputs, iter_num=iter_num, total_transitions_sampled=total_transitions_sampled, writer=writer)
            k = self.counters
            online = phase["now"] == "online"
            k.rounds = experiment.online_iter + 1 if online else 0
            k.online_samples = int(experiment.total_transitions_sampled)
            k.updates = (experiment.pretrain_iter if online else experiment.pretrain_iter + 1) * per_iter
            k.updates += k.rounds * cfg.online.updates_per_round + self._updates_before_online
            if "evaluation/return_mean_gm" in outputs:
                k.evaluations += 1
                row = self._row(phase["now"], outputs, evaluated)
                self.rows.append(row)
                log(row)
            if self._stop_requested:
                raise StopRequested(f"stopped on request at update {k.updates}; an official-odt run restarts from the beginning")

        experiment.online_tuning = switch_rate_then_tune
        experiment._augment_trajectories = augment_within_budget
        experiment.logger.log_metrics = log_and_record

    def _row(self, phase: str, outputs: dict, evaluated: dict) -> dict:
        k = self.counters
        row = {"phase": phase, "updates": k.updates, "online_samples": k.online_samples, "rounds": k.rounds,
               "loss": float(outputs["training/train_loss_mean"]),  # mean over the iteration's updates
               "nll": float(outputs["training/nll"]),  # the official trainer logs its last update's
               "entropy": float(outputs["training/entropy"]), "lambda": float(outputs["training/temp_value"]),
               **summarize_returns(evaluated["returns"], evaluated["lengths"], self.score_fn),
               "g_eval": float(self.cfg.odt.g_eval)}
        if phase == "online":
            row.update(exploration_rtg=float(self.cfg.odt.online.g_online),
                       exploration_return=float(outputs["aug_traj/return"]))
        return row

    # ----- evaluation, state ---------------------------------------------------------------
    def evaluate(self, episodes: int | None = None) -> dict:
        """Mean-action episodes of the official model through the official evaluation loop,
        on fresh environments seeded 0..n-1 (only after a run in this process)."""
        exp = self._experiment
        if exp is None or self._evaluate_episodes is None:
            raise RuntimeError("official-odt evaluates only the model of a run made in this process")
        n = episodes or self.cfg.odt.eval_episodes
        envs = InProcessVecEnv([functools.partial(_seeded, self.make_env, i) for i in range(n)])
        try:
            returns, lengths, _ = self._evaluate_episodes(
                envs, exp.state_dim, exp.act_dim, exp.model, target_return=[exp.variant["eval_rtg"] * exp.reward_scale] * n,
                max_ep_len=OFFICIAL_MAX_EP_LEN, reward_scale=exp.reward_scale, state_mean=exp.state_mean,
                state_std=exp.state_std, device=exp.device, mode="normal", use_mean=True)
        finally:
            envs.close()
        return summarize_returns(np.asarray(returns, dtype=np.float64), np.asarray(lengths, dtype=np.float64),
                                 self.score_fn)

    def state_dict(self) -> dict:
        return {"counters": dataclasses.asdict(self.counters), "rows": list(self.rows),
                "driver_version": DRIVER_VERSION}

    def load_state_dict(self, state: dict) -> None:
        self.counters = Counters(**state["counters"])
        self.rows = list(state.get("rows", []))
        self._last_online = None

    def close(self) -> None:
        self._experiment = None


def _seeded(make_env: Callable, seed: int) -> OldGymEnv:
    env = OldGymEnv(make_env())
    env.seed(seed)
    return env
