"""What a Minari dataset name means: ``minari:<Minari id>``, its environment and its scoring.

A Minari dataset is named by its own id with a ``minari:`` prefix, e.g.
``minari:mujoco/hopper/medium-v0`` or ``minari:D4RL/antmaze/umaze-v1``. D4RL names
(``hopper-medium``) never mean Minari data: Minari's ``mujoco/*`` datasets were collected by other
policies (their "medium" is above D4RL's expert level), so a D4RL normalized score on them would
be meaningless.

* Environment: the dataset's own evaluation environment (``eval_env_spec`` in its metadata, else
  ``env_spec``), made with ``gym.make``. A Dict observation space is flattened by gymnasium's
  ``FlattenObservation`` wrapper, which concatenates the sub-observations in the Dict space's key
  order; gymnasium sorts those keys, so a goal-conditioned AntMaze port
  (``observation`` 27, ``achieved_goal`` 2, ``desired_goal`` 2) becomes
  ``[achieved_goal (2), desired_goal (2), observation (27)]``, 31 numbers. The loader flattens the
  stored observations the same way, so the policy sees in evaluation what it saw in training.
* Scores: normalized as 100 * (R - ref_min_score) / (ref_max_score - ref_min_score) with the
  reference scores of the dataset's metadata when it has both; otherwise the "score" is the raw
  return, and ``scoring`` says so.
* Hyperparameters: the paper's Table C row of the same environment family and level
  (``hyperparameter_dataset``): ``minari:mujoco/hopper/medium-v0`` trains with ``hopper-medium``'s
  row. That row only sets the configuration; data and scores stay the Minari dataset's.

Nothing here downloads: a dataset not under ``$MINARI_DATASETS_PATH`` (default
``~/.minari/datasets``) is reported with the ``minari download`` command that fetches it.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.datasets.scores import normalize
from rlbase.config import ConfigError

PREFIX = "minari:"
MINARI_INSTALL = "pip install -e '.[minari]'"
# Environment family (the env part of a Minari id) -> the paper's Table C row that configures it,
# by level; "*" is the family's row for any other level.
HYPERPARAMETER_ROWS: dict[str, dict[str, str]] = {
    "hopper": {"medium-replay": "hopper-medium-replay", "*": "hopper-medium"},
    "walker2d": {"medium-replay": "walker2d-medium-replay", "*": "walker2d-medium"},
    "halfcheetah": {"medium-replay": "halfcheetah-medium-replay", "*": "halfcheetah-medium"},
    "ant": {"medium-replay": "ant-medium-replay", "*": "ant-medium"},
    "antmaze": {"umaze-diverse": "antmaze-umaze-diverse", "*": "antmaze-umaze"},
}
ENV_FAMILIES = {"Hopper": "hopper", "Walker2d": "walker2d", "HalfCheetah": "halfcheetah", "Ant": "ant",
                "AntMaze": "antmaze"}


def is_minari(name: str) -> bool:
    """True for a ``minari:<id>`` dataset name."""
    return isinstance(name, str) and name.startswith(PREFIX)


def minari_id(name: str) -> str:
    """The Minari id of ``minari:<id>`` (ValueError naming the name if it has no id)."""
    if not is_minari(name) or not name[len(PREFIX):].strip("/"):
        raise ValueError(f"dataset {name!r} is not a Minari name; write minari:<id>, "
                         f"e.g. minari:mujoco/hopper/medium-v0")
    return name[len(PREFIX):]


def family_and_level(dataset_id: str) -> tuple[str, str]:
    """("hopper", "medium") from "mujoco/hopper/medium-v0": Minari ids are
    ``[namespace/][env_name/]dataset_name-v<version>``; ("", level) when no env part is known."""
    parts = dataset_id.split("/")
    level = parts[-1].rsplit("-v", 1)[0] if "-v" in parts[-1] else parts[-1]
    env = parts[-2].lower() if len(parts) >= 2 else ""
    return (env if env in HYPERPARAMETER_ROWS else ""), level


def hyperparameter_dataset(name: str) -> str:
    """The dataset whose paper configuration a run on ``name`` uses: ``name`` itself for the
    registry's datasets, the Table C row of the same family and level for a Minari name."""
    if not is_minari(name):
        return name
    family, level = family_and_level(minari_id(name))
    family = family or minari_spec(name).family  # an id without a known env part: its environment's
    if not family:
        raise ConfigError(f"dataset {name!r}: no hyperparameters for it; its Minari id must name one of the "
                          f"environment families {', '.join(HYPERPARAMETER_ROWS)} (as in mujoco/hopper/medium-v0)")
    rows = HYPERPARAMETER_ROWS[family]
    return rows.get(level, rows["*"])


def datasets_root() -> Path:
    """Minari's local data directory (the same rule as ``minari.storage.get_dataset_path``)."""
    root = os.environ.get("MINARI_DATASETS_PATH")
    return Path(root) if root else Path("~/.minari/datasets").expanduser()


def local_metadata(dataset_id: str) -> dict | None:
    """The metadata of the local Minari dataset ``dataset_id``, or None when it is not on disk."""
    path = datasets_root() / dataset_id / "data" / "metadata.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable Minari metadata ({exc})") from None


def download_command(dataset_id: str) -> str:
    return f"minari download {dataset_id}   (into $MINARI_DATASETS_PATH, default ~/.minari/datasets)"


def _reference(meta: dict, key: str) -> float:
    value = meta.get(key)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.nan


def _max_steps(env_spec_json: str) -> int:
    if not env_spec_json:
        return 0
    return int(json.loads(env_spec_json).get("max_episode_steps") or 0)


@dataclass(frozen=True)
class MinariSpec:
    """A local Minari dataset, presenting the interface of ``registry.DatasetSpec``."""

    name: str  # "minari:<id>"
    minari_id: str
    family: str  # "hopper", ..., "antmaze", or "" when the id names none we know
    level: str
    env_id: str  # the evaluation environment's id ("" when the dataset is not on disk)
    env_spec_json: str  # gymnasium EnvSpec JSON of the evaluation environment
    dict_observations: bool  # a Dict observation space, flattened (see the module docstring)
    ref_min_score: float  # nan when the metadata has none
    ref_max_score: float
    max_episode_steps: int
    d4rl_name: str = ""  # Minari data is never a D4RL dataset
    env_kwargs: tuple = ()
    env_notes: tuple = ()

    @property
    def domain(self) -> str:
        return "antmaze" if self.family == "antmaze" else "locomotion"

    @property
    def on_disk(self) -> bool:
        return bool(self.env_spec_json)

    @property
    def has_reference(self) -> bool:
        return math.isfinite(self.ref_min_score) and math.isfinite(self.ref_max_score) \
            and self.ref_max_score != self.ref_min_score

    @property
    def scoring(self) -> str:
        """How this dataset's scores are computed, for tables and provenance."""
        if self.has_reference:
            return (f"normalized with the Minari metadata's ref_min_score={self.ref_min_score:g}, "
                    f"ref_max_score={self.ref_max_score:g}")
        return "raw return (the Minari metadata has no ref_min_score/ref_max_score)"

    @property
    def available(self) -> bool:
        """minari is installed and, for a dataset on disk, its environment's package imports (a
        dataset not on disk counts as available: the runner's dataset check says how to get it)."""
        if importlib.util.find_spec("minari") is None:
            return False
        if not self.on_disk:
            return True
        entry = json.loads(self.env_spec_json).get("entry_point") or ""
        module = entry.split(":")[0] if isinstance(entry, str) else ""
        return not module or importlib.util.find_spec(module.split(".")[0]) is not None

    def make_env(self, **kwargs):
        """A fresh evaluation environment; Dict observations flattened (a picklable bound method)."""
        import gymnasium as gym
        from gymnasium.envs.registration import EnvSpec

        if not self.on_disk:
            raise FileNotFoundError(f"{self.name}: not on disk; {download_command(self.minari_id)}")
        env = gym.make(EnvSpec.from_json(self.env_spec_json), **kwargs)
        return gym.wrappers.FlattenObservation(env) if self.dict_observations else env

    def score_fn(self, returns) -> np.ndarray:
        """Normalized scores when the metadata has reference scores, else the raw returns."""
        if self.has_reference:
            return normalize(returns, self.ref_min_score, self.ref_max_score)
        return np.asarray(returns, dtype=np.float64)

    def env_versions(self) -> dict:
        import gymnasium as gym
        return {"env_id": self.env_id, "env_spec": self.env_spec_json, "gymnasium": gym.__version__}


def minari_spec(name: str) -> MinariSpec:
    """The spec of ``minari:<id>`` from its local metadata (a spec with ``on_disk`` False, whose
    environment cannot be made, when the dataset is not on disk)."""
    dataset_id = minari_id(name)
    family, level = family_and_level(dataset_id)
    meta = local_metadata(dataset_id) or {}
    env_json = meta.get("eval_env_spec") or meta.get("env_spec") or ""
    obs_space = meta.get("observation_space") or ""
    is_dict = isinstance(obs_space, str) and json.loads(obs_space or "{}").get("type") == "Dict"
    env_id = json.loads(env_json).get("id", "") if env_json else ""
    if not family and env_id:
        family = ENV_FAMILIES.get(env_id.split("_")[0].split("-")[0], "")
    return MinariSpec(name=name, minari_id=dataset_id, family=family, level=level, env_id=env_id,
                      env_spec_json=env_json, dict_observations=is_dict,
                      ref_min_score=_reference(meta, "ref_min_score"),
                      ref_max_score=_reference(meta, "ref_max_score"), max_episode_steps=_max_steps(env_json))
