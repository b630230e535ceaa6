"""Minari datasets already on disk (never downloaded here); ``minari`` is optional.

Minari stores episodes (observations has one more row than actions: the final observation).
We keep the first ``len(actions)`` observations of each episode and its ``terminations`` flag,
which is the same convention as D4RL's hdf5 files.
"""

from __future__ import annotations

import numpy as np

from benchmarks.datasets.d4rl_io import check_fits_env
from benchmarks.datasets.registry import DatasetSpec
from odt.trajectories import Trajectories


def minari_available(dataset_id: str) -> bool:
    """True when ``minari`` imports and ``dataset_id`` is in its local data directory."""
    try:
        import minari
    except ImportError:
        return False
    try:
        return dataset_id in minari.list_local_datasets()
    except Exception:
        return False


def read_minari(spec: DatasetSpec) -> tuple[Trajectories, dict, np.ndarray]:
    """(trajectories, provenance, next observations) of the local Minari dataset of ``spec``,
    checked against its environment (``loading.load_dataset`` wraps them as a LoadedDataset)."""
    import minari

    ds = minari.load_dataset(spec.minari_id, download=False)
    episodes, nexts = [], []
    for ep in ds.iterate_episodes():
        obs = np.asarray(ep.observations, dtype=np.float32)
        k = len(ep.actions)
        episodes.append(dict(observations=obs[:k], actions=np.asarray(ep.actions, np.float32),
                             rewards=np.asarray(ep.rewards, np.float32),
                             terminated=bool(np.asarray(ep.terminations)[-1])))
        nexts.append(obs[1:k + 1])
    traj = Trajectories.from_episodes(episodes)
    env = spec.make_env()
    try:
        check_fits_env(traj, env.observation_space, env.action_space, f"minari:{spec.minari_id}")
    finally:
        env.close()
    provenance = dict(source="minari", name=spec.name, path=f"minari:{spec.minari_id}",
                      sha256=None, steps=traj.num_steps, trajectories=len(traj), dropped_tail_steps=0,
                      env_id=spec.env_id, reference=[spec.ref_min_score, spec.ref_max_score],
                      minari_env_spec=str(getattr(ds, "env_spec", "")))
    return traj, provenance, np.concatenate(nexts)
