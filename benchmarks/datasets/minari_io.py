"""Reading local Minari datasets (never downloaded here; ``minari`` is the optional extra).

Minari stores episodes; an episode's observations have one more row than its actions (the
observation after the last step). We keep the first ``len(actions)`` observations, and the rows
1..len(actions) as the next observations, the layout of D4RL's hdf5 files.

* Dict observations (goal-conditioned AntMaze ports: ``observation`` 27, ``achieved_goal`` 2,
  ``desired_goal`` 2) are flattened with ``gymnasium.spaces.flatten``'s rule, the one the
  evaluation environment's ``FlattenObservation`` wrapper applies: the sub-observations
  concatenated in the Dict space's (sorted) key order, ``[achieved_goal, desired_goal,
  observation]``. See ``minari_spec``.
* Terminations and truncations stay apart: an episode counts as ``terminated`` only when its
  last step is a termination. A truncated episode (a time limit, or AntMaze's continuing task,
  which never terminates) is not terminal, so returns-to-go and bootstrapping treat it as cut
  off, not as ending in an absorbing state. A termination before the last step is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.datasets.d4rl_io import check_fits_env
from benchmarks.datasets.minari_spec import (
    MINARI_INSTALL,
    MinariSpec,
    datasets_root,
    local_metadata,
)
from rlbase.trajectories import DatasetError, Trajectories


def minari_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("minari") is not None


def minari_available(dataset_id: str) -> bool:
    """True when ``minari`` imports and ``dataset_id`` is in its local data directory."""
    return minari_installed() and local_metadata(dataset_id) is not None


def flatten_observations(observations, space) -> np.ndarray:
    """(T, dim) float32 rows of an episode's observations: arrays as they are, Dict spaces
    concatenated in the space's key order (``gymnasium.spaces.flatten``'s order)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        if not isinstance(observations, dict):
            raise DatasetError(f"observations: a Dict space ({list(space.spaces)}) but stored as "
                               f"{type(observations).__name__}")
        missing = [k for k in space.spaces if k not in observations]
        if missing:
            raise DatasetError(f"observations: keys {missing} of the Dict space are not stored")
        parts = [flatten_observations(observations[k], sub) for k, sub in space.spaces.items()]
        return np.concatenate(parts, axis=1)
    if not isinstance(space, spaces.Box):
        raise DatasetError(f"observations: only Box and Dict-of-Box spaces are supported, not {space}")
    arr = np.asarray(observations, dtype=np.float32)
    return arr.reshape(len(arr), -1)


def episode_terminated(terminations, truncations, episode: int) -> bool:
    """True when the episode ends in a termination; False when it was truncated (or cut off
    without either flag, as a final unfinished episode may be)."""
    term = np.asarray(terminations, dtype=bool)
    if term[:-1].any():
        raise DatasetError(f"episode {episode}: terminations before its last step "
                           f"(at {np.flatnonzero(term[:-1]).tolist()}); a Minari episode ends at its first")
    del truncations  # a step both terminated and truncated is terminal (gymnasium's rule)
    return bool(term[-1])


@dataclass
class MinariEpisodes:
    """A Minari dataset read into the harness's layout."""

    trajectories: Trajectories
    next_observations: np.ndarray
    truncated: int  # episodes that end in a truncation (not terminal)
    metadata: dict


def read_episodes(dataset_id: str) -> MinariEpisodes:
    """The episodes of local Minari dataset ``dataset_id`` (flattened, terminal flags apart)."""
    if not minari_installed():
        raise DatasetError(f"minari:{dataset_id}: the minari package is not installed: {MINARI_INSTALL}")
    import minari

    ds = minari.load_dataset(dataset_id, download=False)
    space = ds.observation_space
    episodes, nexts, truncated = [], [], 0
    for i, ep in enumerate(ds.iterate_episodes()):
        obs = flatten_observations(ep.observations, space)
        k = len(ep.rewards)
        if len(obs) != k + 1:
            raise DatasetError(f"minari:{dataset_id} episode {i}: {len(obs)} observations for {k} steps "
                               f"(Minari stores one more, the final observation)")
        terminated = episode_terminated(ep.terminations, ep.truncations, i)
        truncated += int(bool(np.asarray(ep.truncations)[-1]) and not terminated)
        actions = np.asarray(ep.actions, np.float32).reshape(k, -1)
        episodes.append(dict(observations=obs[:k], actions=actions, rewards=np.asarray(ep.rewards, np.float32),
                             terminated=terminated))
        nexts.append(obs[1:])
    return MinariEpisodes(Trajectories.from_episodes(episodes), np.concatenate(nexts), truncated,
                          dict(ds.storage.metadata))


def provenance(spec: MinariSpec, data: MinariEpisodes) -> dict:
    """Where the data came from and how it is scored, for run records and ``datasets list``."""
    meta = data.metadata
    traj = data.trajectories
    return dict(source="minari", name=spec.name, path=str(datasets_root() / spec.minari_id),
                minari_id=spec.minari_id, sha256=None, steps=traj.num_steps, trajectories=len(traj),
                terminated=int(traj.terminated.sum()), truncated=data.truncated, dropped_tail_steps=0,
                env_id=spec.env_id, env_spec=spec.env_spec_json, observations=observation_layout(spec, meta),
                reference=([spec.ref_min_score, spec.ref_max_score] if spec.has_reference else None),
                scoring=spec.scoring, hyperparameters_from=_hyperparameters_from(spec),
                algorithm_name=meta.get("algorithm_name"), author=_plain(meta.get("author")),
                minari_version=meta.get("minari_version"), description=meta.get("description"))


def _hyperparameters_from(spec: MinariSpec) -> str | None:
    from benchmarks.datasets.minari_spec import hyperparameter_dataset
    from rlbase.config import ConfigError
    try:
        return hyperparameter_dataset(spec.name)
    except ConfigError:
        return None


def _plain(value):
    return sorted(value) if isinstance(value, (set, frozenset)) else value


def observation_layout(spec: MinariSpec, meta: dict) -> str:
    """"flat" or the flattened order of a Dict space, e.g. "achieved_goal[0:2] desired_goal[2:4] ..."."""
    if not spec.dict_observations:
        return "flat"
    from gymnasium import spaces

    space = meta.get("observation_space")
    if not isinstance(space, spaces.Dict):
        return "dict (flattened in the space's key order)"
    out, at = [], 0
    for key, sub in space.spaces.items():
        n = int(spaces.flatdim(sub))
        out.append(f"{key}[{at}:{at + n}]")
        at += n
    return " ".join(out)


def local_minari_datasets() -> list[tuple[str, str, str]]:
    """(id, directory, one-line provenance) of every dataset in Minari's local directory, from
    its metadata (the episodes are not read); empty when minari is not installed."""
    if not minari_installed():
        return []
    import minari

    from benchmarks.datasets.minari_spec import minari_spec

    out = []
    for dataset_id, meta in minari.list_local_datasets().items():
        spec = minari_spec(f"minari:{dataset_id}")
        desc = (f"{meta.get('total_episodes')} episodes, {meta.get('total_steps')} steps, env {spec.env_id or '?'}, "
                f"collected by {meta.get('algorithm_name') or '?'} ({', '.join(_plain(meta.get('author')) or ['?'])}), "
                f"minari {meta.get('minari_version')}; scores: {spec.scoring}")
        out.append((dataset_id, str(datasets_root() / dataset_id), desc))
    return out


def read_minari(spec: MinariSpec) -> tuple[Trajectories, dict, np.ndarray]:
    """(trajectories, provenance, next observations) of the local Minari dataset of ``spec``,
    checked against its evaluation environment (``loading.load_dataset`` wraps them)."""
    data = read_episodes(spec.minari_id)
    env = spec.make_env()
    try:
        check_fits_env(data.trajectories, env.observation_space, env.action_space, spec.name)
    finally:
        env.close()
    return data.trajectories, provenance(spec, data), data.next_observations
