"""The ``corl-iql`` method: CORL's single-file IQL, unmodified, on this project's work.

CORL (corl-team/CORL, Apache-2.0) is not in this repository: ``ODT_CORL_SRC`` names a folder
holding its ``algorithms/offline/iql.py``, ``algorithms/finetune/iql.py`` and ``configs/`` (a
clone, or those paths exported from one; ``docs/corl.md``). The script is loaded under the
stand-ins of :mod:`benchmarks.corl.adapters` and its ``train(config)`` runs as it is on the
project's dataset and gymnasium environment:

* a run without an online phase runs ``algorithms/offline/iql.py``; one with an online phase
  runs ``algorithms/finetune/iql.py`` (its offline phase, then one update per online step);
* the ``TrainConfig`` is CORL's own file for the dataset (``configs/<offline|finetune>/iql/
  <env>/<level>_v2.yaml``: the authors' setting, state normalisation, Polyak rate and actor
  kind included), with the budget, batch, expectile, temperature, discount, learning rates,
  reward handling, buffer size, evaluation episodes, seed and device set from the project's
  ``iql`` config of the same dataset, preset and seed (:func:`corl_train_config`); ``--set
  corl.<field>=<value>`` sets any other ``TrainConfig`` field;
* ``eval_actor`` is wrapped: CORL evaluates every ``eval_freq`` updates, set to the greatest
  common divisor of the project's evaluation points, and the wrapper runs only the evaluations
  the project's ``iql`` makes (every ``eval_every_updates`` offline, ``eval_every_samples``
  online, and at the end of each phase, with ``eval_episodes_interim`` episodes in between);
  the other calls return NaN without stepping an environment. Evaluations draw on no training
  random stream, so this does not change what is trained. Each evaluation becomes a curve row;
* ``wandb.log`` is where the driver follows CORL's update counter, averages its losses into
  the rows, raises on a stop request and on non-finite losses;
* CORL's prints are dropped (the rows say what they said); ``torch.use_deterministic_algorithms``
  and ``PYTHONHASHSEED``, which CORL's ``set_seed`` sets, are put back after the run.

A run is restartable, not resumable (CORL's loop has no resume): an interrupted run starts again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.iql import IQLConfig, iql_config
from benchmarks.corl.adapters import EnvEntry, corl_modules, train_config_fields
from benchmarks.whole_run_agent import WholeRunAgent
from rlbase.config import ConfigError
from rlbase.envs import summarize_returns
from rlbase.protocol import evaluation_episodes
from rlbase.training import RunningMeans, StopRequested, TrainingDiverged, resolve_device
from rlbase.trajectories import Trajectories

DRIVER_VERSION = 1
SOURCE_ENV = "ODT_CORL_SRC"
SCRIPTS = {"offline": "algorithms/offline/iql.py", "finetune": "algorithms/finetune/iql.py"}
# sha256 of the two scripts (scripts_sha256) -> the CORL commit they are from
KNOWN_SOURCES = {
    "1e6b9b3b1f4810211ce7a783afad360462727bc8b21e90d68ee59c795c0c5a26": "eeeeef2",
}
SETUP_HINT = (f"set {SOURCE_ENV} to a folder holding CORL's {SCRIPTS['offline']}, {SCRIPTS['finetune']} "
              "and configs/ (github.com/corl-team/CORL at eeeeef2); docs/corl.md gives the commands")
CORL_HIDDEN = (256, 2)  # TwinQ, ValueFunction and the policies are built at their defaults
CORL_EXP_ADV_MAX = 100.0  # iql.py: EXP_ADV_MAX
CORL_LOG_STD_MAX = 2.0  # iql.py: LOG_STD_MAX
# TrainConfig fields that name or place a run rather than set what it computes
_META = ("project", "group", "name", "env", "seed", "device", "checkpoints_path", "load_model",
         "eval_freq", "n_episodes", "eval_seed")
_LOSSES = ("value_loss", "q_loss", "actor_loss")


# ----- the source and its provenance ---------------------------------------------------------

@dataclass(frozen=True)
class CorlSource:
    path: Path
    scripts_sha256: str  # of the two scripts (relative path and content, in order)
    commit: str | None  # from KNOWN_SOURCES; None for scripts the driver does not know


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def scripts_sha256(root: Path) -> str:
    digest = hashlib.sha256()
    for rel in sorted(SCRIPTS.values()):
        digest.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return digest.hexdigest()


def locate_source(environ: dict[str, str] | None = None) -> CorlSource:
    """The CORL folder ``ODT_CORL_SRC`` names; ConfigError saying how to set it up if it is
    unset or lacks a script."""
    env = os.environ if environ is None else environ
    where = env.get(SOURCE_ENV)
    if not where:
        raise ConfigError(f"corl-iql needs CORL's code, and {SOURCE_ENV} is not set: {SETUP_HINT}")
    path = Path(where).expanduser().resolve()
    for rel in SCRIPTS.values():
        if not (path / rel).is_file():
            raise ConfigError(f"{SOURCE_ENV}={where}: no {rel} there: {SETUP_HINT}")
    sha = scripts_sha256(path)
    return CorlSource(path=path, scripts_sha256=sha, commit=KNOWN_SOURCES.get(sha))


# ----- CORL's config files -----------------------------------------------------------------------

def config_file(root: Path, dataset: str, script: str) -> Path | None:
    """CORL's config for the dataset (``hopper-medium`` -> ``configs/<script>/iql/hopper/medium_v2.yaml``;
    the finetune script falls back on the offline file, CORL having finetune files for AntMaze and
    Adroit only); None where CORL has none (``ant-*``)."""
    env, _, level = dataset.partition("-")
    name = f"{level.replace('-', '_')}_v2.yaml"
    for kind in dict.fromkeys((script, "offline")):
        path = root / "configs" / kind / "iql" / env / name
        if path.is_file():
            return path
    return None


def parse_flat_yaml(text: str) -> dict[str, str]:
    """``key: value`` lines (CORL's config files are flat) -> raw value strings; comments and
    blank lines skipped."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or line[0].isspace():
            raise ConfigError(f"CORL config line {number} is not a flat 'key: value': {line!r}")
        out[key.strip()] = value.strip()
    return out


def coerce(value: Any, annotation: str, name: str) -> Any:
    """A config value (a string from a file or the command line, or already typed) as the
    ``TrainConfig`` annotation says, the way pyrallis decodes it."""
    optional = (re.fullmatch(r"Optional\[(.+)\]", annotation) or re.fullmatch(r"(.+) \| None", annotation)
                or re.fullmatch(r"None \| (.+)", annotation))
    base = optional.group(1) if optional else annotation
    text = value.strip().strip("'\"") if isinstance(value, str) else value
    if optional and (value is None or (isinstance(value, str) and value.strip() in ("null", "None", "~", ""))):
        return None
    try:
        if base == "bool":
            if isinstance(text, bool):
                return text
            if str(text).lower() in ("true", "false"):
                return str(text).lower() == "true"
            raise ValueError
        if base == "int":
            number = float(text)
            if number != int(number):
                raise ValueError
            return int(number)
        if base == "float":
            return float(text)
        if base == "str":
            return str(text)
    except (TypeError, ValueError):
        raise ConfigError(f"corl.{name}={value!r}: not a {base}") from None
    raise ConfigError(f"corl.{name}: the driver cannot set a field of type {annotation}")


# ----- the project's iql config as CORL's TrainConfig ----------------------------------------------

def evaluation_points(cfg: IQLConfig) -> dict[int, int]:
    """Update counter -> episodes of every evaluation the project's ``iql`` makes: every
    ``eval_every_updates`` offline and at the end of the offline phase, then every
    ``eval_every_samples`` online samples (one update each) and at the end of the budget."""
    off, on = cfg.offline_updates, cfg.online_samples
    points = {s: evaluation_episodes(cfg.eval_episodes, cfg.eval_episodes_interim, s == off)
              for s in range(cfg.eval_every_updates, off + 1, cfg.eval_every_updates)}
    points[off] = cfg.eval_episodes
    for j in range(cfg.eval_every_samples, on + 1, cfg.eval_every_samples):
        points[off + j] = evaluation_episodes(cfg.eval_episodes, cfg.eval_episodes_interim, j == on)
    if on:
        points[off + on] = cfg.eval_episodes
    return dict(sorted(points.items()))


def _check_expressible(cfg: IQLConfig, preset: str) -> None:
    def require(ok: bool, name: str, why: str) -> None:
        if not ok:
            raise ConfigError(f"corl-iql cannot run {name}={getattr(cfg, name)!r}: {why}")

    if preset != "smoke":  # the smoke preset's 32-unit networks are not applied (CORL: 2 x 256)
        require(cfg.hidden_dim == CORL_HIDDEN[0], "hidden_dim", "CORL's networks have 256 units")
        require(cfg.n_hidden == CORL_HIDDEN[1], "n_hidden", "CORL's networks have 2 hidden layers")
    require(cfg.max_weight == CORL_EXP_ADV_MAX, "max_weight", "fixed at 100 in iql.py (EXP_ADV_MAX)")
    require(cfg.log_std_max == CORL_LOG_STD_MAX, "log_std_max", "fixed at 2 in iql.py (LOG_STD_MAX)")
    require(cfg.actor_schedule == "cosine", "actor_schedule", "iql.py always anneals the actor's rate")
    require(cfg.offline_updates > 0, "offline_updates", "CORL's cosine schedule needs at least one update")


def corl_train_config(cfg: IQLConfig, dataset: str, script: str, file_values: dict[str, str],
                      fields: dict[str, str], corl_overrides: dict[str, Any]) -> dict[str, Any]:
    """CORL's ``TrainConfig`` fields for one run: its config file's values (bar the fields that
    name or place a run), then the project's ``iql`` settings it has a field for, then
    ``corl.<field>`` overrides; every value typed as ``TrainConfig`` declares it."""
    unknown = sorted(set(corl_overrides) - set(fields))
    if unknown:
        raise ConfigError(f"unknown CORL TrainConfig field(s) corl.{', corl.'.join(unknown)}; "
                          f"fields: {', '.join(fields)}")
    points = evaluation_points(cfg)
    mapped = {
        "env": dataset, "seed": cfg.seed, "device": str(resolve_device(cfg.device)),
        "batch_size": cfg.batch_size, "iql_tau": cfg.expectile, "beta": cfg.temperature,
        "discount": cfg.discount, "actor_lr": cfg.actor_lr, "qf_lr": cfg.critic_lr, "vf_lr": cfg.value_lr,
        "normalize_reward": cfg.domain != "ant",  # CORL scales hopper/walker2d/halfcheetah, shifts AntMaze
        "buffer_size": cfg.buffer_size, "n_episodes": cfg.eval_episodes,
        "eval_freq": math.gcd(*points), "checkpoints_path": None, "load_model": "",
    }
    if script == "offline":
        mapped["max_timesteps"] = cfg.offline_updates
    else:
        mapped.update(offline_iterations=cfg.offline_updates, online_iterations=cfg.online_samples)
    from_file = {k: v for k, v in file_values.items() if k in fields and k not in _META}
    merged = {**from_file, **mapped, **corl_overrides}
    missing = sorted(k for k in mapped if k not in fields)
    if missing:
        raise ConfigError(f"CORL's {SCRIPTS[script]} has no TrainConfig field {', '.join(missing)}: "
                          "not the CORL code this driver is written for")
    return {k: coerce(v, fields[k], k) for k, v in merged.items()}


@dataclass(frozen=True)
class CorlIQLConfig:
    """What a ``corl-iql`` run is: the project's ``iql`` config it was mapped from, the CORL
    script and ``TrainConfig`` fields it runs, the config file they came from and the source's
    provenance (per-file sha256 and the commit those files match)."""

    iql: IQLConfig
    dataset: str
    script: str  # "offline" | "finetune"
    train: dict[str, Any] = field(default_factory=dict)
    config_file: str = ""  # CORL's config file read, relative to the source ("": none for this dataset)
    source_files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256
    source_commit: str | None = None
    driver_version: int = DRIVER_VERSION

    @property
    def seed(self) -> int:
        return self.iql.seed


def corl_config(dataset: str, preset: str, seed: int, overrides: dict[str, Any],
                environ: dict[str, str] | None = None) -> CorlIQLConfig:
    """The runner's config builder: ``iql``'s config (overrides without the ``corl.`` prefix go
    there) mapped by :func:`map_config` (``corl.<field>`` overrides go to CORL's TrainConfig)."""
    ours = {k: v for k, v in overrides.items() if not k.startswith("corl.")}
    theirs = {k[len("corl."):]: v for k, v in overrides.items() if k.startswith("corl.")}
    return map_config(iql_config(dataset, preset, seed, ours), dataset, preset, theirs, environ)


def map_config(cfg: IQLConfig, dataset: str, preset: str, corl_overrides: dict[str, Any] | None = None,
               environ: dict[str, str] | None = None) -> CorlIQLConfig:
    """An ``iql`` config as the CORL run it maps to: the script (finetune when there is an
    online phase), the TrainConfig (:func:`corl_train_config`), the files and their digests."""
    _check_expressible(cfg, preset)
    source = locate_source(environ)
    script = "finetune" if cfg.online_samples > 0 else "offline"
    script_path = source.path / SCRIPTS[script]
    cfg_path = config_file(source.path, dataset, script)
    values = parse_flat_yaml(cfg_path.read_text()) if cfg_path is not None else {}
    train = corl_train_config(cfg, dataset, script, values, train_config_fields(script_path), corl_overrides or {})
    files = {rel: file_sha256(source.path / rel) for rel in SCRIPTS.values()}
    rel_cfg = cfg_path.relative_to(source.path).as_posix() if cfg_path is not None else ""
    if cfg_path is not None:
        files[rel_cfg] = file_sha256(cfg_path)
    return CorlIQLConfig(iql=cfg, dataset=dataset, script=script, train=train, config_file=rel_cfg,
                         source_files=files, source_commit=source.commit)


# ----- the agent -------------------------------------------------------------------------------

@dataclass
class Counters:
    updates: int = 0
    online_samples: int = 0
    episodes: int = 0  # online training episodes finished
    evaluations: int = 0
    pretrain_done: bool = False
    wall_time: float = 0.0
    cpu_time: float = 0.0


class _Lengths:
    """An old-API env that counts the steps of each episode (CORL's eval_actor returns returns only)."""

    def __init__(self, env: Any):
        self.env, self.lengths = env, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, **kwargs: Any) -> Any:
        self.lengths.append(0)
        return self.env.reset(**kwargs)

    def step(self, action: np.ndarray) -> tuple:
        self.lengths[-1] += 1
        return self.env.step(action)


@contextlib.contextmanager
def _process_state_kept() -> Iterator[None]:
    """What CORL's ``set_seed`` changes for the whole process, put back afterwards."""
    import torch

    deterministic, hashseed = torch.are_deterministic_algorithms_enabled(), os.environ.get("PYTHONHASHSEED")
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic)
        if hashseed is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = hashseed


class CorlIQLAgent(WholeRunAgent):
    """The runner's agent for ``corl-iql`` (``baselines.interface.Agent``)."""

    def __init__(self, cfg: CorlIQLConfig, data: Trajectories, make_env: Callable,
                 score_fn: Callable[[np.ndarray], np.ndarray] | None = None, progress: bool = True,
                 environ: dict[str, str] | None = None):
        self.cfg, self.data, self.make_env, self.score_fn = cfg, data, make_env, score_fn
        self.progress, self.environ = progress, environ
        self.counters = Counters()
        self.rows: list[dict] = []
        self._running = RunningMeans()
        self._evaluator: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None
        self._eval_env: Any = None

    def _source(self):
        source = locate_source(self.environ)
        for rel, sha in self.cfg.source_files.items():
            path = source.path / rel
            if not path.is_file() or file_sha256(path) != sha:
                raise ConfigError(f"{SOURCE_ENV}={source.path}: {rel} is not the file this run's config was "
                                  f"made with (sha256 {sha[:12]})")
        return source

    def _run(self, log: Callable[[dict], None]) -> None:
        source = self._source()
        points = evaluation_points(self.cfg.iql)
        entry = EnvEntry(self.make_env, self.data, self.score_fn)
        name = f"corl_iql_{self.cfg.script}"
        with (_process_state_kept(), corl_modules({self.cfg.dataset: entry}, self._on_log) as load,
              contextlib.redirect_stdout(io.StringIO())):
            module = load(source.path / SCRIPTS[self.cfg.script], name)
            self._wrap_eval(module, points, log)
            module.train(module.TrainConfig(**self.cfg.train))
        self.counters.pretrain_done = True

    def _on_log(self, data: dict, step: int | None) -> None:
        """CORL's ``wandb.log``: once per update (its losses), once per evaluation (ignored)."""
        if step is None or not any(k in data for k in _LOSSES):
            return
        k, off = self.counters, self.cfg.iql.offline_updates
        k.updates = int(step)
        k.online_samples = max(0, k.updates - off) if self.cfg.script == "finetune" else 0
        if "train/episode_return" in data:
            k.episodes += 1
        losses = {name: float(data[name]) for name in _LOSSES if name in data}
        if not all(math.isfinite(v) for v in losses.values()):
            raise TrainingDiverged(f"CORL's IQL losses {losses} at update {k.updates}")
        self._running.add(losses)
        if self._stop_requested:
            raise StopRequested(f"stopped on request at update {k.updates}; a corl-iql run restarts from the beginning")

    def _wrap_eval(self, module: Any, points: dict[int, int], log: Callable[[dict], None]) -> None:
        """CORL's ``eval_actor`` replaced by one that runs it at the project's evaluation points
        only (module docstring), and remembers its arguments for :meth:`evaluate`."""
        corl_eval = module.eval_actor
        finetune = self.cfg.script == "finetune"
        last: dict[str, Any] = {}

        def run(episodes: int) -> tuple[np.ndarray, np.ndarray, Any]:
            counting = _Lengths(last["env"])
            out = corl_eval(counting, last["actor"], last["device"], episodes, last["seed"])
            returns = np.asarray(out[0] if finetune else out, dtype=np.float64)
            return returns, np.asarray(counting.lengths, dtype=np.float64), out

        def on_schedule(env, actor, device, n_episodes, seed):
            last.update(env=env, actor=actor, device=device, seed=seed)
            self._eval_env = env
            episodes = points.get(self.counters.updates)
            if episodes is None:  # not one of the project's evaluations: nothing is run
                return (np.array([np.nan]), float("nan")) if finetune else np.array([np.nan])
            returns, lengths, out = run(episodes)
            self._record(returns, lengths, log)
            return out

        module.eval_actor = on_schedule
        self._evaluator = lambda episodes: run(episodes)[:2]

    def _record(self, returns: np.ndarray, lengths: np.ndarray, log: Callable[[dict], None]) -> None:
        k = self.counters
        k.evaluations += 1
        phase = "online" if k.online_samples > 0 else "pretrain"
        row = {"phase": phase, "updates": k.updates, "online_samples": k.online_samples, "episodes": k.episodes,
               **self._running.pop(), **summarize_returns(returns, lengths, self.score_fn)}
        self.rows.append(row)
        log(row)
        if self.progress:
            score = f" score {row['score_mean']:.1f}" if "score_mean" in row else ""
            print(f"[corl-iql {phase}] updates {k.updates} samples {k.online_samples} "
                  f"return {row['return_mean']:.1f}{score}", file=sys.stderr)

    # ----- evaluation, state ---------------------------------------------------------------
    def evaluate(self, episodes: int | None = None) -> dict:
        """Mean-action episodes of CORL's actor through CORL's ``eval_actor`` (seeded as CORL
        seeds it), only after a run in this process."""
        if self._evaluator is None or self._eval_env is None:
            raise RuntimeError("corl-iql evaluates only the actor of a run made in this process")
        returns, lengths = self._evaluator(episodes or self.cfg.iql.eval_episodes)
        return summarize_returns(returns, lengths, self.score_fn)

    def state_dict(self) -> dict:
        return {"counters": dataclasses.asdict(self.counters), "rows": list(self.rows),
                "driver_version": DRIVER_VERSION}

    def load_state_dict(self, state: dict) -> None:
        self.counters = Counters(**state["counters"])
        self.rows = list(state.get("rows", []))
        self._last_online = None

    def close(self) -> None:
        if self._eval_env is not None:
            self._eval_env.close()
        self._eval_env, self._evaluator = None, None

