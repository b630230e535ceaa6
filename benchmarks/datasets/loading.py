"""``load_dataset(name, size)``: find a dataset on disk, read it, check it fits its environment.

Where datasets live (``data_dir()``: $ODT_DATA_DIR, default ~/.cache/odt-bench/datasets):

    <data_dir>/<name>.hdf5             made here by the forge (``python -m benchmarks.datasets make <name>``)
    <data_dir>/<name>.card.json        its dataset card (also inside the hdf5, metadata/card_json)
    <data_dir>/d4rl/<name>-v2.hdf5     real D4RL files you bring (D4RL's own file names, e.g.
                                       hopper_medium-v2.hdf5, are accepted too)
    <data_dir>/smoke/<name>.hdf5       size="smoke": a tiny random-policy dataset for tests and CI

``source="auto"`` prefers a real D4RL file, then a forged one. A D4RL name never loads Minari
data: Minari datasets are named ``minari:<id>`` and read from Minari's own directory
($MINARI_DATASETS_PATH, default ~/.minari/datasets) as they are, at every size
(``minari_io``; nothing is downloaded).
Without loading: ``find_dataset`` says which one that is, ``dataset_problem`` whether it is
usable (``validate_file``: keys, shapes, finite values, fit to the environment) and
``make_command`` the one command that makes it so (the runner checks a plan with them).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.datasets.d4rl_io import check_fits_env, read_d4rl, to_arrays, write_d4rl
from benchmarks.datasets.minari_io import minari_available, minari_installed, read_minari
from benchmarks.datasets.minari_spec import MINARI_INSTALL, MinariSpec, download_command, is_minari
from benchmarks.datasets.registry import DatasetSpec, DatasetUnavailable, data_dir, get_spec
from rlbase.config import ConfigError
from rlbase.trajectories import DatasetError, Trajectories

SIZES = ("full", "smoke")
SOURCES = ("auto", "d4rl", "generated")
SMOKE_STEPS = 2000
SMOKE_SEED = 0
D4RL_ANT_OBS_DIM = 111  # Ant-v2: 27 qpos/qvel dims + 84 contact-force dims (zero under MuJoCo 2.0)


@dataclass
class LoadedDataset:
    trajectories: Trajectories
    spec: DatasetSpec | MinariSpec
    provenance: dict  # source, path, sha256, dropped_tail_steps, card (when forged), ...
    next_observations: np.ndarray | None = field(default=None, repr=False)  # aligned with steps, if stored

    def score_fn(self, returns) -> np.ndarray:
        """D4RL normalized scores (100 * (R - random) / (expert - random)) of raw returns."""
        return self.spec.score_fn(returns)

    @property
    def make_env(self) -> Callable:
        return self.spec.make_env


# ----- paths ----------------------------------------------------------------------------------
def generated_path(name: str, root: str | os.PathLike | None = None) -> Path:
    return data_dir(root) / f"{name}.hdf5"


def card_path(name: str, root: str | os.PathLike | None = None) -> Path:
    return data_dir(root) / f"{name}.card.json"


def smoke_path(name: str, root: str | os.PathLike | None = None) -> Path:
    return data_dir(root) / "smoke" / f"{name}.hdf5"


def d4rl_candidates(spec: DatasetSpec, root: str | os.PathLike | None = None) -> list[Path]:
    """Where a real D4RL file of ``spec`` may be; none for a forge variant (``variant_of``): its
    name means the forge's data, which no D4RL file is."""
    if spec.variant_of:
        return []
    d = data_dir(root) / "d4rl"
    underscored = spec.name.replace("-", "_") + "-v2"  # D4RL's download file name
    return [d / f"{spec.d4rl_name}.hdf5", d / f"{underscored}.hdf5"]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def content_sha256(traj: Trajectories) -> str:
    """sha256 of the data itself (every array with its dtype and shape, in a fixed order), so two
    files holding the same steps agree even when their bytes differ (an hdf5's card carries its
    creation time; the file's own sha256 changes with every make)."""
    h = hashlib.sha256()
    for name in ("observations", "actions", "rewards", "lengths", "terminated"):
        a = np.ascontiguousarray(getattr(traj, name))
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


# ----- the API --------------------------------------------------------------------------------
def load_dataset(name: str, size: str = "full", data_dir: str | os.PathLike | None = None,
                 source: str = "auto") -> LoadedDataset:
    """Load dataset ``name``; ``size="smoke"`` builds (once, then cached) a tiny random-policy one.
    A Minari name (``minari:<id>``) loads the local Minari dataset as it is, at either size."""
    spec = _checked_spec(name, size, source)
    if isinstance(spec, MinariSpec):
        traj, provenance, nxt = read_minari(spec)
        return LoadedDataset(traj, spec, provenance, nxt)
    if size == "smoke":
        return _load_smoke(spec, data_dir)
    candidates = _candidates(spec, data_dir, source)
    found = _first_present(candidates)
    if found is None:
        raise DatasetUnavailable(_not_on_disk(spec, candidates, data_dir))
    kind, where = found
    return _load_hdf5(spec, Path(where), kind)


def find_dataset(name: str, data_dir: str | os.PathLike | None = None,
                 source: str = "auto") -> tuple[str, str] | None:
    """``(source, path)`` that ``load_dataset(name)`` would read (a Minari id for Minari), or None."""
    if is_minari(name):
        spec = get_spec(name)
        return ("minari", spec.minari_id) if minari_available(spec.minari_id) else None
    found = _first_present(_candidates(_checked_spec(name, "full", source), data_dir, source))
    return None if found is None else (found[0], str(found[1]))


def dataset_problem(name: str, size: str = "full", data_dir: str | os.PathLike | None = None) -> str | None:
    """None if ``load_dataset(name, size)`` finds a valid dataset; else why not, in one line
    (``"not on disk"`` when nothing is there; smoke data is made on demand)."""
    spec = get_spec(name)
    if isinstance(spec, MinariSpec):
        return _minari_problem(spec)
    if not spec.available:
        return "its environment needs gymnasium-robotics: pip install -e '.[antmaze]'"
    if size == "smoke":
        return None
    found = find_dataset(name, data_dir)
    if found is None:
        return "not on disk"
    kind, where = found
    return validate_file(spec, Path(where))


def _minari_problem(spec: MinariSpec) -> str | None:
    if not minari_installed():
        return f"Minari datasets need the minari package: {MINARI_INSTALL}"
    if not spec.on_disk:
        return "not on disk (Minari)"
    if not spec.available:
        return f"its environment ({spec.env_id}) needs a package that is not installed"
    return None


def make_command(name: str, data_dir: str | os.PathLike | None = None) -> str:
    """The one command that gives ``load_dataset(name)`` a valid dataset here."""
    spec = get_spec(name)
    if isinstance(spec, MinariSpec):
        return MINARI_INSTALL if not minari_installed() else download_command(spec.minari_id)
    if not spec.available:
        return "pip install -e '.[antmaze]'"
    found = find_dataset(name, data_dir)
    make = f"python -m benchmarks.datasets make {name}"
    if found is None:
        return make
    kind, where = found
    return f"{make} --force" if kind == "generated" else f"mv {where} {where}.invalid && {make}"


def validate_file(spec: DatasetSpec, path: Path) -> str | None:
    """None if the hdf5 file reads as a dataset of ``spec`` (keys, shapes, finite values, and
    when its environment is installed, dimensions and action bounds); else the reason."""
    try:
        if spec.available:
            _load_hdf5(spec, Path(path), "check", digest=False)
        else:
            read_d4rl(path)
    except (DatasetError, OSError, ValueError, KeyError, TypeError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _checked_spec(name: str, size: str, source: str) -> DatasetSpec | MinariSpec:
    spec = get_spec(name)
    if size not in SIZES:
        raise ConfigError(f"size={size!r} is not valid; choose one of {', '.join(SIZES)}")
    if source not in SOURCES:
        raise ConfigError(f"source={source!r} is not valid; choose one of {', '.join(SOURCES)}")
    if isinstance(spec, MinariSpec):
        problem = _minari_problem(spec)
        if problem:
            raise DatasetUnavailable(f"{name}: {problem}; {make_command(name)}")
        return spec
    if not spec.available:
        raise DatasetUnavailable(f"{name}: AntMaze needs gymnasium-robotics, which is not installed: "
                                 f"pip install -e '.[antmaze]'")
    return spec


def _candidates(spec: DatasetSpec, root, source: str) -> list[tuple[str, Path | str]]:
    """Where a full dataset may be, in the order ``source="auto"`` prefers them."""
    out: list[tuple[str, Path | str]] = []
    if source in ("auto", "d4rl"):
        out += [("d4rl", path) for path in d4rl_candidates(spec, root)]
    if source in ("auto", "generated"):
        out.append(("generated", generated_path(spec.name, root)))
    return out


def _first_present(candidates: list[tuple[str, Path | str]]) -> tuple[str, Path | str] | None:
    """The first candidate that is there, in ``source="auto"``'s order of preference."""
    return next(((kind, where) for kind, where in candidates if Path(where).exists()), None)


def _not_on_disk(spec: DatasetSpec, candidates: list, root) -> str:
    tried = ", ".join(str(w) for _, w in candidates)
    d4rl = d4rl_candidates(spec, root)
    bring = f"  or bring D4RL's file: put {spec.d4rl_name}.hdf5 in {d4rl[0].parent}/\n" if d4rl else ""
    return (f"dataset {spec.name!r} is not on disk (looked for: {tried}).\n"
            f"  make it here:   python -m benchmarks.datasets make {spec.name}\n"
            f"{bring}"
            f"  (the data directory is $ODT_DATA_DIR, default ~/.cache/odt-bench/datasets)")


def _load_hdf5(spec: DatasetSpec, path: Path, source: str, digest: bool = True) -> LoadedDataset:
    data = read_d4rl(path)
    traj, nxt = data.trajectories, data.next_observations
    provenance = dict(source=source, name=spec.name, path=str(path), sha256=_sha256(path) if digest else None,
                      content_sha256=content_sha256(traj) if digest else None, steps=traj.num_steps, trajectories=len(traj),
                      dropped_tail_steps=data.dropped_tail_steps, env_id=spec.env_id,
                      env_kwargs=dict(spec.env_kwargs), reference=[spec.ref_min_score, spec.ref_max_score])
    if "card" in data.metadata:
        provenance["card"] = data.metadata["card"]
        if data.metadata["card"].get("source") == "generated-smoke":
            provenance["source"] = "generated-smoke"
    if source == "d4rl" and spec.family == "ant" and traj.obs_dim == D4RL_ANT_OBS_DIM:
        traj, nxt = _convert_d4rl_ant(traj, nxt, path)
        provenance["obs_conversion"] = ("dropped D4RL Ant-v2 observation columns 27..110 (contact forces, "
                                        "all zero in the file) to match Ant-v5 without cfrc_ext")
    env = spec.make_env()
    try:
        check_fits_env(traj, env.observation_space, env.action_space, str(path))
    finally:
        env.close()
    return LoadedDataset(traj, spec, provenance, nxt)


def _convert_d4rl_ant(traj: Trajectories, nxt: np.ndarray | None, path: Path):
    contact = traj.observations[:, 27:]
    if np.any(contact != 0):
        raise DatasetError(f"{path}: a 111-dim D4RL ant file whose contact-force columns 27..110 are not all "
                           f"zero; it does not fit Ant-v5's 27-dim observation and is not converted")
    out = Trajectories(traj.observations[:, :27].copy(), traj.actions, traj.rewards, traj.lengths, traj.terminated)
    return out, (None if nxt is None else nxt[:, :27].copy())


def _load_smoke(spec: DatasetSpec, root) -> LoadedDataset:
    path = smoke_path(spec.name, root)
    if path.exists() and not _smoke_is_current(spec, path):
        path.unlink(missing_ok=True)  # made for an older environment definition: rebuild
    if not path.exists():
        make_smoke(spec, path)
    loaded = _load_hdf5(spec, path, "generated-smoke")
    loaded.provenance["source"] = "generated-smoke"
    return loaded


def _smoke_is_current(spec: DatasetSpec, path: Path) -> bool:
    try:
        card = read_d4rl(path).metadata.get("card", {})
    except (DatasetError, OSError):
        return False
    return card.get("env_id") == spec.env_id and card.get("env_kwargs") == dict(spec.env_kwargs)


def make_smoke(spec: DatasetSpec, path: Path, steps: int = SMOKE_STEPS, seed: int = SMOKE_SEED) -> None:
    """A tiny uniformly-random-policy dataset, clearly labelled as not a D4RL dataset."""
    from rlbase.envs import random_policy_episodes

    episodes = random_policy_episodes(spec.make_env, steps, seed)
    traj = Trajectories.from_episodes(episodes)
    returns = traj.returns()
    scores = spec.score_fn(returns)
    card = dict(name=spec.name, source="generated-smoke", policy="uniform random actions", seed=seed,
                steps=traj.num_steps, trajectories=len(traj),
                warning="smoke data for tests and CI: random-policy episodes, NOT a D4RL-level dataset",
                returns=dict(min=float(returns.min()), mean=float(returns.mean()), max=float(returns.max())),
                normalized=dict(min=float(scores.min()), mean=float(scores.mean()), max=float(scores.max())),
                **spec.env_versions())
    write_d4rl(path, to_arrays(traj), card)
