"""What the official online-dt code imports and this machine does not have, written for it.

The official ``main.py`` (facebookresearch/online-dt at c376fa1) imports ``gym`` (the API before
0.26), ``d4rl`` (for its dataset registrations), stable-baselines3's ``SubprocVecEnv`` and, for
logging, ``torch.utils.tensorboard``. :func:`stand_in_modules` provides them for one run:

* ``gym.make(name)`` builds the project's gymnasium environment of the dataset ``name`` and
  wraps it in :class:`OldGymEnv` (``seed``, ``reset() -> obs``, ``step -> (obs, r, done, info)``);
* ``d4rl`` is an empty module (the datasets come from the project's forge, in a pickle);
* ``SubprocVecEnv`` is :class:`InProcessVecEnv`, the same API without subprocesses (a 2-core
  machine gains nothing from 10 environment processes, and the steps are the same);
* ``torch.utils.tensorboard`` is stubbed only when tensorboard is not installed (the driver runs
  with ``log_to_tb`` off).

:func:`to_official_trajectories` writes the project's dataset in the layout of the official
``data/download_d4rl_gym_datasets.py`` (a list of per-trajectory dicts whose ``terminals`` mark
the last step of a trajectory that ended in a terminal state); :func:`from_official_trajectories`
reads it back.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import gymnasium
import numpy as np

from rlbase.trajectories import Trajectories

EnvFactory = Callable[[], gymnasium.Env]


class OldGymEnv:
    """A gymnasium env behind the gym<0.26 API the official code calls.

    ``seed(s)`` applies at the next ``reset`` (gymnasium seeds through ``reset``); later resets
    continue the environment's random stream, as old gym did. ``done`` is terminated or
    truncated, as old gym's ``TimeLimit`` reported it."""

    def __init__(self, env: gymnasium.Env):
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self._next_seed: int | None = None

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._next_seed = seed
        return [seed]

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self._next_seed)
        self._next_seed = None
        return obs

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not terminated:
            info = {**info, "TimeLimit.truncated": True}
        return obs, float(reward), bool(terminated or truncated), info

    def close(self) -> None:
        self.env.close()


class InProcessVecEnv:
    """stable-baselines3's ``VecEnv`` API over old-API envs, stepped in this process.

    ``reset()`` returns the stacked first observations; ``step(actions)`` returns stacked
    observations, float32 rewards, bool dones and one info dict per env, and resets an env whose
    episode ended (its last observation goes to ``info["terminal_observation"]``), as
    ``SubprocVecEnv`` does."""

    def __init__(self, env_fns: Sequence[Callable[[], OldGymEnv]]):
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)

    def reset(self) -> np.ndarray:
        return np.stack([env.reset() for env in self.envs])

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        out_obs, rewards, dones, infos = [], [], [], []
        for env, action in zip(self.envs, actions, strict=True):
            obs, reward, done, info = env.step(action)
            if done:
                info = {**info, "terminal_observation": obs}
                obs = env.reset()
            out_obs.append(obs)
            rewards.append(reward)
            dones.append(done)
            infos.append(info)
        return np.stack(out_obs), np.asarray(rewards, dtype=np.float32), np.asarray(dones, dtype=bool), infos

    def close(self) -> None:
        for env in self.envs:
            env.close()


def gym_stand_in(envs: Mapping[str, EnvFactory]) -> types.ModuleType:
    """A ``gym`` module whose ``make(name)`` builds ``envs[name]`` behind the old API."""
    module = types.ModuleType("gym")

    def make(name: str) -> OldGymEnv:
        if name not in envs:
            raise KeyError(f"gym stand-in: no environment for {name!r}; this run knows {', '.join(envs)}")
        return OldGymEnv(envs[name]())

    module.make = make
    return module


def _vec_env_modules() -> dict[str, types.ModuleType]:
    names = ("stable_baselines3", "stable_baselines3.common", "stable_baselines3.common.vec_env")
    modules = {name: types.ModuleType(name) for name in names}
    modules["stable_baselines3.common.vec_env"].SubprocVecEnv = InProcessVecEnv
    modules["stable_baselines3"].common = modules["stable_baselines3.common"]
    modules["stable_baselines3.common"].vec_env = modules["stable_baselines3.common.vec_env"]
    return modules


def _tensorboard_stand_in() -> dict[str, types.ModuleType]:
    """A ``torch.utils.tensorboard`` whose SummaryWriter refuses to run, when tensorboard is absent."""
    if importlib.util.find_spec("tensorboard") is not None:
        return {}
    module = types.ModuleType("torch.utils.tensorboard")

    class SummaryWriter:  # noqa: D401 - a stand-in
        def __init__(self, *args, **kwargs):
            raise RuntimeError("tensorboard is not installed: the official driver runs with log_to_tb off")

    module.SummaryWriter = SummaryWriter
    return {"torch.utils.tensorboard": module}


@contextlib.contextmanager
def stand_in_modules(envs: Mapping[str, EnvFactory], paths: Sequence[str]) -> Iterator[None]:
    """``gym``, ``d4rl``, ``stable_baselines3.common.vec_env`` (and ``torch.utils.tensorboard``
    when absent) as stand-ins, and ``paths`` first on ``sys.path``, for the duration of the block.
    On exit the stand-ins and every module loaded from ``paths`` (the official ``main``,
    ``utils``, ``data``, ..., its pinned ``transformers``) leave ``sys.modules``, modules they
    shadowed come back, and ``sys.path`` is as before; other modules imported meanwhile stay."""
    modules = {"gym": gym_stand_in(envs), "d4rl": types.ModuleType("d4rl"),
               **_vec_env_modules(), **_tensorboard_stand_in()}
    shadowed = {name: sys.modules[name] for name in modules if name in sys.modules}
    saved_path = list(sys.path)
    roots = tuple(str(Path(p).resolve()) for p in paths)
    sys.modules.update(modules)
    sys.path[:0] = [str(p) for p in paths]
    try:
        yield
    finally:
        for name in [n for n, m in sys.modules.items() if n in modules or _loaded_from(m, roots)]:
            del sys.modules[name]
        sys.modules.update(shadowed)
        sys.path[:] = saved_path


def _loaded_from(module: types.ModuleType | None, roots: tuple[str, ...]) -> bool:
    path = getattr(module, "__file__", None)
    return bool(path) and bool(roots) and str(Path(path).resolve()).startswith(roots)


# ----- the dataset in the official pickle layout ------------------------------------------------

def to_official_trajectories(data: Trajectories) -> list[dict[str, np.ndarray]]:
    """One dict per trajectory: observations, actions, rewards (float32) and terminals (bool,
    True only at the last step of a trajectory that ended in a terminal state), as the official
    download script writes them. ``next_observations`` is left out: the official training code
    never reads it, and the project's data has no observation after a trajectory's last step."""
    out = []
    for i in range(len(data)):
        e = data.episode(i)
        terminals = np.zeros(len(e["rewards"]), dtype=bool)
        terminals[-1] = e["terminated"]
        out.append({"observations": np.array(e["observations"], dtype=np.float32),
                    "actions": np.array(e["actions"], dtype=np.float32),
                    "rewards": np.array(e["rewards"], dtype=np.float32),
                    "terminals": terminals})
    return out


def from_official_trajectories(paths: Sequence[Mapping[str, np.ndarray]]) -> Trajectories:
    """The inverse of :func:`to_official_trajectories` (a trajectory is terminated when its last
    ``terminals`` entry is set)."""
    return Trajectories.from_episodes([
        {"observations": p["observations"], "actions": p["actions"], "rewards": p["rewards"],
         "terminated": bool(np.asarray(p["terminals"])[-1])} for p in paths])
