"""Dataset names -> gymnasium environments, reference scores, and where the data lives.

Names follow D4RL without the version suffix (``hopper-medium`` is D4RL's ``hopper-medium-v2``);
such a name means D4RL's data or the forge's D4RL-recipe data, never a Minari dataset. Minari
datasets are named by their own id, ``minari:<id>`` (``benchmarks.datasets.minari_spec``);
``get_spec`` answers for both.
The environments are gymnasium's MuJoCo v5 ones; where they differ from the mujoco-py v2
environments D4RL was collected on, ``DatasetSpec.env_notes`` says how (it is copied into every
dataset card) and the kwargs are chosen to match D4RL where gymnasium allows it.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from benchmarks.datasets.minari_spec import MinariSpec, is_minari, minari_spec
from benchmarks.datasets.minari_spec import hyperparameter_dataset as minari_hyperparameter_dataset
from benchmarks.datasets.scores import normalize, reference
from rlbase.config import ConfigError

DATA_DIR_ENV = "ODT_DATA_DIR"
DEFAULT_DATA_DIR = Path("~/.cache/odt-bench/datasets")


class UnknownDataset(ConfigError):
    """A dataset name that is not in the registry; the message lists the valid names."""


class DatasetUnavailable(FileNotFoundError):
    """A known dataset that is not on disk (or not supported yet); the message says what to do."""


_COMMON_V5_NOTES = (
    "gymnasium v5 runs on the `mujoco` bindings (MuJoCo 3+) instead of mujoco-py/MuJoCo 2.0 as D4RL's v2 "
    "environments did; dynamics agree up to simulator-version differences, so returns are comparable but "
    "not bit-identical to D4RL's."
)

_FAMILIES: dict[str, dict] = {
    "hopper": dict(env_id="Hopper-v5", env_kwargs=(), notes=(
        _COMMON_V5_NOTES,
        "Hopper-v5 has the same 11-dim observation, 3-dim action, reward terms, healthy checks and "
        "1000-step limit as Hopper-v2.",
    )),
    "walker2d": dict(env_id="Walker2d-v5", env_kwargs=(("xml_file", "walker2d.xml"),), notes=(
        _COMMON_V5_NOTES,
        "Walker2d-v5's own model gives both feet friction 1.9; Walker2d-v2 (D4RL) had 0.9 on the right foot "
        "and 1.9 on the left. We pass xml_file='walker2d.xml' (the v2-era model gymnasium still ships) to "
        "keep D4RL's feet; observation (17) and action (6) are the same.",
    )),
    "halfcheetah": dict(env_id="HalfCheetah-v5", env_kwargs=(), notes=(
        _COMMON_V5_NOTES,
        "HalfCheetah-v5 has the same 17-dim observation, 6-dim action and reward as HalfCheetah-v2.",
    )),
    "ant": dict(env_id="Ant-v5", env_kwargs=(("include_cfrc_ext_in_observation", False),
                                             ("contact_cost_weight", 0.0)), notes=(
        _COMMON_V5_NOTES,
        "D4RL's Ant-v2 observation is 111-dim: 27 position/velocity dims plus 84 contact-force dims that "
        "are identically zero under MuJoCo 2.0 (mujoco-py's cfrc_ext bug). Ant-v5's default is 105-dim "
        "(78 contact-force dims that are NOT zero). We use Ant-v5 with include_cfrc_ext_in_observation=False: "
        "27 dims, the informative part of D4RL's observation. A real 111-dim D4RL ant file is converted "
        "explicitly by dropping its 84 contact columns, and only if they are all zero (else an error).",
        "Ant-v5 charges a contact cost (weight 5e-4) that was effectively zero in Ant-v2 (the same zero "
        "cfrc_ext); we pass contact_cost_weight=0.0 so the reward matches D4RL's.",
    )),
    "antmaze": dict(env_id="AntMaze_UMaze-v5", env_kwargs=(), notes=(
        "AntMaze needs gymnasium-robotics (the antmaze extra: pip install -e '.[antmaze]'). The environment is "
        "D4RL's AntMaze U-maze evaluation task rebuilt on gymnasium-robotics' AntMaze_UMaze-v5 maze model "
        "(gymnasium's Ant, 4 m cells) and stepped with D4RL's rules (benchmarks/datasets/antmaze.py): 29-dim "
        "observation qpos[:15] + qvel[:14] (no goal, no contact forces), sparse reward 1 within 0.5 of the goal "
        "(gymnasium-robotics: 0.45), the episode ends at the goal or after 700 steps, falling over does not end it; "
        "D4RL's start cell, goal cell and noise.",
        "Coordinates are D4RL's (start cell centre (0, 0), goal cell centre (0, 8)): gymnasium-robotics gets the "
        "(symmetric) U map upside down, which makes its world D4RL's shifted by (-4, -4), and x, y are reported "
        "shifted back, so a real D4RL antmaze-umaze-v2 file fits column for column.",
        "The ant is gymnasium's ant.xml under MuJoCo 3+ (actions in [-1, 1]), not D4RL's locomotion ant.xml under "
        "mujoco-py; gains and masses were not compared.",
    )),
}


def _mujoco_warning(message: str) -> None:
    try:
        warnings.warn(f"MuJoCo: {message}", UserWarning, stacklevel=2)
    except Exception:  # e.g. python -W error: an exception crossing MuJoCo's C frames aborts
        print(f"MuJoCo warning: {message}", file=sys.stderr)


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings through Python's ``warnings`` instead of MuJoCo's own handler.

    MuJoCo's handler prints a model-compiler warning to stderr and appends it to
    ``MUJOCO_LOG.TXT`` in the working directory every time a model loads: under MuJoCo 4,
    HalfCheetah-v5's XML (``settotalmass``) gave 11 identical stderr lines at the start of every
    halfcheetah run and a growing log file wherever a run started. Python's default filter shows
    each message once per process and writes no file. Idempotent; the handler is MuJoCo's
    process-wide setting, so this is set, never toggled."""
    import mujoco

    if mujoco.get_mju_user_warning() is not _mujoco_warning:
        mujoco.set_mju_user_warning(_mujoco_warning)


@dataclass(frozen=True)
class DatasetSpec:
    name: str  # e.g. "hopper-medium"
    family: str  # "hopper" | "walker2d" | "halfcheetah" | "ant" | "antmaze"
    level: str  # "medium" | "medium-replay" | "random" | "expert" | "umaze" | "umaze-diverse" | "umaze-d4rlstyle"
    env_id: str
    ref_min_score: float
    ref_max_score: float
    domain: str  # "locomotion" | "antmaze"
    max_episode_steps: int
    d4rl_name: str  # D4RL's id, e.g. "hopper-medium-v2"
    env_kwargs: tuple = ()  # (key, value) pairs passed to gym.make
    env_notes: tuple = field(default=(), compare=False)  # how the env differs from D4RL's
    # a variant of another registry dataset (same environment, scores and method configs) that only
    # the forge makes: it takes that dataset's hyperparameters and never loads a real D4RL file
    variant_of: str = ""

    @property
    def available(self) -> bool:
        """False when the environment's package is missing (AntMaze needs gymnasium-robotics)."""
        if self.domain == "antmaze":
            from benchmarks.datasets.antmaze import antmaze_available
            return antmaze_available()
        return True

    def make_env(self, **kwargs) -> gym.Env:
        """A fresh gymnasium environment for this dataset (a picklable bound method)."""
        if not self.available:
            raise DatasetUnavailable(
                f"{self.name}: AntMaze needs gymnasium-robotics, which is not installed: "
                f"pip install -e '.[antmaze]'")
        if self.domain == "antmaze":
            from benchmarks.datasets.antmaze import make_antmaze_env
            return make_antmaze_env(max_episode_steps=self.max_episode_steps, **kwargs)
        route_mujoco_warnings()
        return gym.make(self.env_id, max_episode_steps=self.max_episode_steps,
                        **{**dict(self.env_kwargs), **kwargs})

    def score_fn(self, returns) -> np.ndarray:
        """D4RL normalized scores of raw returns."""
        return normalize(returns, self.ref_min_score, self.ref_max_score)

    def env_versions(self) -> dict:
        import mujoco
        versions = {"env_id": self.env_id, "env_kwargs": dict(self.env_kwargs),
                    "gymnasium": gym.__version__, "mujoco": mujoco.__version__}
        if self.domain == "antmaze" and self.available:
            from benchmarks.datasets.antmaze import robotics_version
            versions["gymnasium_robotics"] = robotics_version()
        return versions


def _build() -> dict[str, DatasetSpec]:
    specs: dict[str, DatasetSpec] = {}
    for family in ("hopper", "walker2d", "halfcheetah", "ant"):
        ref = reference(family)
        fam = _FAMILIES[family]
        for level in ("medium", "medium-replay", "random", "expert"):
            name = f"{family}-{level}"
            specs[name] = DatasetSpec(
                name=name, family=family, level=level, env_id=fam["env_id"],
                ref_min_score=ref.min_score, ref_max_score=ref.max_score, domain="locomotion",
                max_episode_steps=1000, d4rl_name=f"{name}-v2",
                env_kwargs=fam["env_kwargs"], env_notes=fam["notes"])
    ref = reference("antmaze")
    # umaze-d4rlstyle: antmaze-umaze collected with D4RL's episode and label conventions
    # (benchmarks/datasets/antmaze_forge.py); evaluated and scored exactly as antmaze-umaze
    for level, base in (("umaze", ""), ("umaze-diverse", ""), ("umaze-d4rlstyle", "antmaze-umaze")):
        name = f"antmaze-{level}"
        specs[name] = DatasetSpec(
            name=name, family="antmaze", level=level, env_id=_FAMILIES["antmaze"]["env_id"],
            ref_min_score=ref.min_score, ref_max_score=ref.max_score, domain="antmaze",
            max_episode_steps=700, d4rl_name=f"{base or name}-v2",
            env_notes=_FAMILIES["antmaze"]["notes"], variant_of=base)
    return specs


DATASETS: dict[str, DatasetSpec] = _build()

# The ten datasets of the paper's Table 1.
TABLE1_DATASETS: tuple[str, ...] = tuple(
    f"{f}-{lvl}" for f in ("hopper", "walker2d", "halfcheetah", "ant") for lvl in ("medium", "medium-replay")
) + ("antmaze-umaze", "antmaze-umaze-diverse")


def get_spec(name: str) -> DatasetSpec | MinariSpec:
    """The spec of a registry name, or of a Minari name ``minari:<id>`` (from its local metadata)."""
    if is_minari(name):
        try:
            return minari_spec(name)
        except ValueError as exc:
            raise UnknownDataset(str(exc)) from None
    if name not in DATASETS:
        raise UnknownDataset(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}, "
                             f"or a local Minari dataset as minari:<id>")
    return DATASETS[name]


def hyperparameter_dataset(name: str) -> str:
    """The dataset whose configuration (paper row, preset scaling) a run on ``name`` uses: the
    base dataset of a forge variant (``DatasetSpec.variant_of``), the family's row for a Minari
    name (``minari_spec.hyperparameter_dataset``), else ``name`` itself."""
    if is_minari(name):
        return minari_hyperparameter_dataset(name)
    spec = DATASETS.get(name)
    return spec.variant_of if spec is not None and spec.variant_of else name


def normalized_score(name: str, returns) -> np.ndarray:
    """D4RL normalized score of raw returns on dataset ``name`` (or family, e.g. "hopper"); for a
    Minari name, its metadata's normalization or the raw return (``MinariSpec.scoring``)."""
    if name in DATASETS or is_minari(name):
        return get_spec(name).score_fn(returns)
    try:
        ref = reference(name)
    except KeyError:
        raise UnknownDataset(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None
    return normalize(returns, ref.min_score, ref.max_score)


def data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The dataset directory: the argument, else $ODT_DATA_DIR, else ~/.cache/odt-bench/datasets."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    return Path(data_dir).expanduser()
