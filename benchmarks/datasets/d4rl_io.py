"""D4RL's hdf5 format: read (split into trajectories, validate) and write (atomically).

A D4RL file holds flat step arrays ``observations (N, obs)``, ``actions (N, act)``,
``rewards (N,)``, ``terminals (N,)`` and ``timeouts (N,)``, optionally ``next_observations``,
``infos/*`` and ``metadata/*``. A trajectory ends at a step flagged terminal (the MDP ended:
``terminated=True``) or timeout (the time limit cut it: ``terminated=False``). Steps after the
last flagged step belong to an episode that was cut off by the end of collection; they are
dropped and reported, as D4RL's own ``sequence_dataset`` does.

Our files keep the same keys and add ``metadata/card_json`` (the dataset card as JSON).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from rlbase.checkpoint import atomic_write_bytes
from rlbase.trajectories import DatasetError, Trajectories

REQUIRED_KEYS = ("observations", "actions", "rewards", "terminals", "timeouts")
ACTION_TOLERANCE = 1e-4  # float32 round-off allowed outside the action bounds


@dataclass
class D4RLData:
    trajectories: Trajectories
    next_observations: np.ndarray | None  # aligned with trajectories' steps, when the file has them
    dropped_tail_steps: int  # steps after the last terminal/timeout (an unfinished episode)
    metadata: dict = field(default_factory=dict)  # metadata/* scalars, card_json parsed as "card"


# ----- splitting (pure) -----------------------------------------------------------------------
def split_points(terminals: np.ndarray, timeouts: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Trajectory lengths, their terminated flags, and the number of unfinished tail steps.

    A step flagged both terminal and timeout counts as terminal (the MDP really ended).
    """
    terminals = np.asarray(terminals, dtype=bool)
    timeouts = np.asarray(timeouts, dtype=bool)
    ends = np.flatnonzero(terminals | timeouts)
    n = len(terminals)
    if len(ends) == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool), n
    lengths = np.diff(np.concatenate([[-1], ends])).astype(np.int64)
    return lengths, terminals[ends].copy(), int(n - 1 - ends[-1])


def to_arrays(traj: Trajectories, tail: dict | None = None,
              next_observations: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """D4RL step arrays of a dataset; ``tail`` is an unfinished episode appended without end flags."""
    n = traj.num_steps
    ends = traj.starts + traj.lengths - 1
    terminals = np.zeros(n, dtype=bool)
    timeouts = np.zeros(n, dtype=bool)
    terminals[ends[traj.terminated]] = True
    timeouts[ends[~traj.terminated]] = True
    arrays = dict(observations=traj.observations, actions=traj.actions, rewards=traj.rewards,
                  terminals=terminals, timeouts=timeouts)
    if next_observations is not None:
        arrays["next_observations"] = np.asarray(next_observations, dtype=np.float32)
    if tail is not None and len(tail["rewards"]) > 0:
        k = len(tail["rewards"])
        extra = dict(observations=tail["observations"], actions=tail["actions"], rewards=tail["rewards"],
                     terminals=np.zeros(k, bool), timeouts=np.zeros(k, bool))
        if next_observations is not None:
            if "next_observations" not in tail:
                raise DatasetError("tail: next_observations missing while the dataset has them")
            extra["next_observations"] = tail["next_observations"]
        arrays = {key: np.concatenate([arrays[key], np.asarray(extra[key], dtype=arrays[key].dtype)])
                  for key in arrays}
    return arrays


# ----- writing --------------------------------------------------------------------------------
def write_d4rl(path: str | Path, arrays: dict[str, np.ndarray], card: dict | None = None) -> str:
    """Write D4RL step arrays (and a card under metadata/card_json) atomically; returns the sha256."""
    import hashlib

    missing = [k for k in REQUIRED_KEYS if k not in arrays]
    if missing:
        raise DatasetError(f"cannot write {path}: missing arrays {missing}")
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        for key, arr in arrays.items():
            f.create_dataset(key, data=arr)
        if card is not None:
            f.create_dataset("metadata/card_json", data=json.dumps(card, sort_keys=True))
    data = buf.getvalue()
    atomic_write_bytes(Path(path), data)
    return hashlib.sha256(data).hexdigest()


# ----- reading --------------------------------------------------------------------------------
def _read_metadata(f: h5py.File) -> dict:
    meta: dict = {}
    if "metadata" not in f:
        return meta

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.shape == ():
            value = obj[()]
            meta[name] = value.decode() if isinstance(value, bytes) else value
    f["metadata"].visititems(visit)
    if "card_json" in meta:
        meta["card"] = json.loads(meta.pop("card_json"))
    return meta


def read_arrays(path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """The step arrays and metadata of a D4RL file, with key and length checks."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such dataset file")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise DatasetError(f"{path}: not a readable hdf5 file ({exc})") from None
    with f:
        keys = sorted(k for k in f.keys())
        missing = [k for k in REQUIRED_KEYS if k not in f]
        if missing:
            raise DatasetError(f"{path}: missing key(s) {missing} (file has: {keys}); "
                               f"D4RL -v2 files have {list(REQUIRED_KEYS)}")
        arrays = {k: f[k][()] for k in REQUIRED_KEYS}
        if "next_observations" in f:
            arrays["next_observations"] = f["next_observations"][()]
        metadata = _read_metadata(f)
    n = len(arrays["rewards"])
    if n == 0:
        raise DatasetError(f"{path}: the dataset is empty (0 steps)")
    for key, arr in arrays.items():
        if len(arr) != n:
            raise DatasetError(f"{path}: '{key}' has {len(arr)} rows but 'rewards' has {n}")
    for key in ("rewards", "terminals", "timeouts"):
        if arrays[key].ndim != 1:
            raise DatasetError(f"{path}: '{key}' has shape {arrays[key].shape}, expected ({n},)")
    for key in ("observations", "actions", "next_observations"):
        if key in arrays and arrays[key].ndim != 2:
            raise DatasetError(f"{path}: '{key}' has shape {arrays[key].shape}, expected ({n}, dim)")
    for key in ("observations", "actions", "rewards", "next_observations"):
        if key in arrays:
            bad = ~np.isfinite(arrays[key].reshape(n, -1)).all(axis=1)
            if bad.any():
                raise DatasetError(f"{path}: '{key}' has NaN or inf at step {int(np.flatnonzero(bad)[0])} "
                                   f"({int(bad.sum())} steps in all)")
    return arrays, metadata


def read_d4rl(path: str | Path) -> D4RLData:
    """Read a D4RL hdf5 file and split it into trajectories on terminals and timeouts."""
    arrays, metadata = read_arrays(path)
    lengths, terminated, tail = split_points(arrays["terminals"], arrays["timeouts"])
    if len(lengths) == 0:
        raise DatasetError(f"{path}: no complete trajectory (no step is flagged terminal or timeout; "
                           f"{tail} steps would all be an unfinished tail)")
    n = len(arrays["rewards"]) - tail
    traj = Trajectories(
        observations=arrays["observations"][:n].astype(np.float32),
        actions=arrays["actions"][:n].astype(np.float32),
        rewards=arrays["rewards"][:n].astype(np.float32),
        lengths=lengths, terminated=terminated)
    nxt = arrays.get("next_observations")
    return D4RLData(traj, None if nxt is None else nxt[:n].astype(np.float32), tail, metadata)


# ----- checks against an environment ----------------------------------------------------------
def check_fits_env(traj: Trajectories, observation_space, action_space, where: str) -> None:
    """Observation/action shapes match the env and actions lie within its bounds; else DatasetError."""
    obs_shape = tuple(observation_space.shape)
    act_shape = tuple(action_space.shape)
    if (traj.obs_dim,) != obs_shape:
        raise DatasetError(f"{where}: observations are {traj.obs_dim}-dim but the environment's are "
                           f"{obs_shape}; a dataset is never reshaped to fit")
    if (traj.act_dim,) != act_shape:
        raise DatasetError(f"{where}: actions are {traj.act_dim}-dim but the environment's are {act_shape}")
    low = np.asarray(action_space.low, dtype=np.float64) - ACTION_TOLERANCE
    high = np.asarray(action_space.high, dtype=np.float64) + ACTION_TOLERANCE
    out = ((traj.actions < low) | (traj.actions > high)).any(axis=1)
    if out.any():
        step = int(np.flatnonzero(out)[0])
        raise DatasetError(f"{where}: actions out of the environment's bounds [{action_space.low.min()}, "
                           f"{action_space.high.max()}] at step {step} ({int(out.sum())} steps in all; "
                           f"e.g. {traj.actions[step].tolist()})")
