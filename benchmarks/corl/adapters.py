"""What CORL's single-file IQL imports and this project does not have, written for it.

CORL's ``algorithms/offline/iql.py`` and ``algorithms/finetune/iql.py`` import ``d4rl`` (for
``qlearning_dataset`` and the environments' ``get_dataset`` / ``get_normalized_score``), ``gym``
(the API before 0.26, with ``wrappers.TransformObservation`` / ``TransformReward``), ``wandb``
and ``pyrallis``. :func:`corl_modules` provides them for one run and loads a CORL script from
its file:

* ``gym.make(name)`` builds the project's gymnasium environment of dataset ``name`` behind the
  old API (:class:`CorlEnv`: :class:`benchmarks.official.adapters.OldGymEnv` plus what CORL
  reads of a D4RL environment: ``get_dataset``, ``get_normalized_score``, ``_max_episode_steps``);
* ``d4rl.qlearning_dataset(env)`` turns the environment's flat D4RL arrays into transitions by
  D4RL's rule (:func:`qlearning_dataset`);
* ``wandb`` hands every ``log`` call to a callback (the driver's curve and stop requests), and
  ``init`` starts nothing;
* ``pyrallis.wrap()`` leaves ``train`` as it is (the driver passes the config), ``dump`` writes
  the config as JSON.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib.util
import json
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from benchmarks.datasets.d4rl_io import to_arrays
from benchmarks.official.adapters import OldGymEnv
from rlbase.trajectories import Trajectories

EnvFactory = Callable[[], gymnasium.Env]
ScoreFn = Callable[[np.ndarray], np.ndarray]
LogFn = Callable[[dict, "int | None"], None]


# ----- the data: D4RL's flat arrays and its transition rule ------------------------------------

def d4rl_arrays(data: Trajectories) -> dict[str, np.ndarray]:
    """The flat step arrays of a D4RL file (observations, actions, rewards, terminals, timeouts):
    a trajectory's last step is flagged terminal if it ended in a terminal state, timeout if the
    time limit cut it."""
    arrays = to_arrays(data)
    return {k: np.asarray(v) for k, v in arrays.items()}


def qlearning_dataset(arrays: Mapping[str, np.ndarray], terminate_on_end: bool = False) -> dict[str, np.ndarray]:
    """D4RL's ``qlearning_dataset`` rule, on flat arrays with ``timeouts``.

    Transition i is (s_i, a_i, r_i, s_{i+1}, terminal_i) for i < N - 1. A step flagged timeout
    is skipped (it has no next state in its episode) unless ``terminate_on_end``; a terminal
    step is kept and its s_{i+1} is the next episode's first state (masked by the terminal in a
    TD target). The last step of the arrays never has a successor and is always dropped.
    Observations, actions and rewards come back float32, terminals bool."""
    n = len(arrays["rewards"])
    timeouts = np.asarray(arrays["timeouts"], dtype=bool)[: n - 1]
    keep = np.arange(max(n - 1, 0)) if terminate_on_end else np.flatnonzero(~timeouts)
    obs = np.asarray(arrays["observations"], dtype=np.float32)
    return {
        "observations": obs[keep],
        "actions": np.asarray(arrays["actions"], dtype=np.float32)[keep],
        "next_observations": obs[keep + 1],
        "rewards": np.asarray(arrays["rewards"], dtype=np.float32)[keep],
        "terminals": np.asarray(arrays["terminals"], dtype=bool)[keep],
    }


# ----- the environment -------------------------------------------------------------------------

def time_limit(env: gymnasium.Env) -> int | None:
    """The step limit of a gymnasium env (its spec's, else a TimeLimit wrapper's)."""
    spec = getattr(env, "spec", None)
    if spec is not None and spec.max_episode_steps:
        return int(spec.max_episode_steps)
    while env is not None:
        if isinstance(env, gymnasium.wrappers.TimeLimit):
            return int(env._max_episode_steps)
        env = getattr(env, "env", None)
    return None


class CorlEnv(OldGymEnv):
    """A project env as CORL sees a D4RL env: the old gym API, the dataset, the D4RL score.

    ``get_normalized_score`` is D4RL's fraction (CORL multiplies it by 100): the project's
    normalised score / 100, or the raw return when the dataset has no reference scores."""

    def __init__(self, env: gymnasium.Env, data: Trajectories | None, score_fn: ScoreFn | None):
        super().__init__(env)
        self._data, self._score_fn = data, score_fn
        self._max_episode_steps = time_limit(env)

    def get_dataset(self) -> dict[str, np.ndarray]:
        if self._data is None:
            raise RuntimeError("this environment was made without a dataset")
        return d4rl_arrays(self._data)

    def get_normalized_score(self, score: float) -> float:
        if self._score_fn is None:
            return float(score)
        return float(np.asarray(self._score_fn(np.asarray([score], dtype=np.float64)))[0]) / 100.0


class Wrapper:
    """gym<0.26's ``Wrapper``: public attributes come from the wrapped env, private ones do not."""

    def __init__(self, env: Any):
        self.env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"accessing private attribute {name!r} is prohibited")
        return getattr(self.env, name)

    def reset(self, **kwargs: Any) -> Any:
        return self.env.reset(**kwargs)

    def step(self, action: np.ndarray) -> tuple:
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()


class TransformObservation(Wrapper):
    """gym<0.26's ``wrappers.TransformObservation``: ``f`` applied to every observation."""

    def __init__(self, env: Any, f: Callable[[np.ndarray], np.ndarray]):
        super().__init__(env)
        self.f = f

    def reset(self, **kwargs: Any) -> np.ndarray:
        return self.f(self.env.reset(**kwargs))

    def step(self, action: np.ndarray) -> tuple:
        obs, reward, done, info = self.env.step(action)
        return self.f(obs), reward, done, info


class TransformReward(Wrapper):
    """gym<0.26's ``wrappers.TransformReward``: ``f`` applied to every reward."""

    def __init__(self, env: Any, f: Callable[[float], float]):
        super().__init__(env)
        self.f = f

    def step(self, action: np.ndarray) -> tuple:
        obs, reward, done, info = self.env.step(action)
        return obs, self.f(reward), done, info


@dataclass(frozen=True)
class EnvEntry:
    """What ``gym.make(name)`` builds for one dataset name."""

    make_env: EnvFactory
    data: Trajectories | None = None
    score_fn: ScoreFn | None = None


def gym_stand_in(envs: Mapping[str, EnvEntry]) -> types.ModuleType:
    """A ``gym`` module whose ``make(name)`` builds ``envs[name]`` as a :class:`CorlEnv`."""
    module = types.ModuleType("gym")

    def make(name: str) -> CorlEnv:
        if name not in envs:
            raise KeyError(f"gym stand-in: no environment for {name!r}; this run knows {', '.join(envs)}")
        entry = envs[name]
        return CorlEnv(entry.make_env(), entry.data, entry.score_fn)

    wrappers = types.ModuleType("gym.wrappers")
    wrappers.TransformObservation = TransformObservation
    wrappers.TransformReward = TransformReward
    module.make, module.Env, module.Wrapper, module.wrappers = make, CorlEnv, Wrapper, wrappers
    return module


def d4rl_stand_in() -> types.ModuleType:
    module = types.ModuleType("d4rl")

    def qlearning_dataset_of(env: Any, dataset: Mapping[str, np.ndarray] | None = None,
                             terminate_on_end: bool = False, **kwargs: Any) -> dict[str, np.ndarray]:
        return qlearning_dataset(env.get_dataset(**kwargs) if dataset is None else dataset, terminate_on_end)

    module.qlearning_dataset = qlearning_dataset_of
    return module


def wandb_stand_in(on_log: LogFn) -> types.ModuleType:
    """``wandb`` whose ``log(data, step)`` calls ``on_log(data, step)``; nothing is sent anywhere."""
    module = types.ModuleType("wandb")
    module.run = types.SimpleNamespace(save=lambda *a, **k: None, finish=lambda *a, **k: None)
    module.init = lambda *args, **kwargs: module.run
    module.finish = lambda *args, **kwargs: None

    def log(data: dict, step: int | None = None, **kwargs: Any) -> None:
        on_log(dict(data), step)

    module.log = log
    return module


def pyrallis_stand_in() -> types.ModuleType:
    module = types.ModuleType("pyrallis")

    def wrap(config_path: str | None = None) -> Callable:
        def keep(fn: Callable) -> Callable:
            return fn  # the driver passes the config; nothing is parsed from the command line
        return keep

    def dump(config: Any, stream: Any) -> None:
        stream.write(json.dumps(dataclasses.asdict(config), default=str, indent=2))

    module.wrap, module.dump = wrap, dump
    return module


# ----- loading a script under the stand-ins ----------------------------------------------------

@contextlib.contextmanager
def corl_modules(envs: Mapping[str, EnvEntry], on_log: LogFn) -> Iterator[Callable[[Path, str], types.ModuleType]]:
    """``gym``, ``d4rl``, ``wandb`` and ``pyrallis`` as stand-ins for the duration of the block,
    which gets a loader ``load(path, name)`` of a CORL script as module ``name``. On exit the
    stand-ins and the loaded scripts leave ``sys.modules`` and the modules they shadowed (the
    real ``wandb``, for one) come back."""
    modules = {"gym": gym_stand_in(envs), "gym.wrappers": None, "d4rl": d4rl_stand_in(),
               "wandb": wandb_stand_in(on_log), "pyrallis": pyrallis_stand_in()}
    modules["gym.wrappers"] = modules["gym"].wrappers
    loaded: list[str] = []
    shadowed = {name: sys.modules[name] for name in modules if name in sys.modules}

    def load(path: Path, name: str) -> types.ModuleType:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load CORL script {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loaded.append(name)
        spec.loader.exec_module(module)
        return module

    sys.modules.update(modules)
    try:
        yield load
    finally:
        for name in [*modules, *loaded]:
            sys.modules.pop(name, None)
        sys.modules.update(shadowed)


def train_config_fields(script: Path) -> dict[str, str]:
    """The fields of a CORL script's ``TrainConfig`` dataclass and their annotations, as source
    text, read with ``ast`` (nothing is imported)."""
    tree = ast.parse(Path(script).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TrainConfig":
            return {stmt.target.id: ast.unparse(stmt.annotation) for stmt in node.body
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)}
    raise ValueError(f"{script}: no TrainConfig class")
