"""The Minari path: a dataset written with minari's own storage API into a temporary
MINARI_DATASETS_PATH is found by load_dataset and read back exactly. Skipped when ``minari``
is not importable (it is optional: pip install '.[minari]'). Minari's DataCollector needs jax,
so the episodes are written through MinariStorage directly."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from benchmarks.datasets import load_dataset

minari = pytest.importorskip("minari")


def _episodes(n: int = 3):
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env = gym.make("Hopper-v5", max_episode_steps=1000)
    rng = np.random.default_rng(0)
    out = []
    for k in range(n):
        o, _ = env.reset(seed=k)
        obs, acts, rews, terms, truncs = [o], [], [], [], []
        while True:
            a = rng.uniform(-1, 1, 3).astype(np.float32)
            o, r, te, tr, _ = env.step(a)
            obs.append(o), acts.append(a), rews.append(r), terms.append(te), truncs.append(tr)
            if te or tr:
                break
        out.append(EpisodeBuffer(id=k, seed=k, observations=np.array(obs), actions=np.array(acts), rewards=rews,
                                 terminations=terms, truncations=truncs, infos={}))
    return env, out


def test_local_minari_dataset_is_loaded(tmp_path, monkeypatch):
    from minari.dataset.minari_storage import MinariStorage

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    env, episodes = _episodes()
    dataset_id = "mujoco/hopper/medium-v0"
    path = tmp_path / "minari" / dataset_id / "data"
    path.parent.mkdir(parents=True)
    storage = MinariStorage.new(path, env.observation_space, env.action_space, env_spec=env.spec)
    storage.update_episodes(episodes)
    storage.update_metadata({"dataset_id": dataset_id, "minari_version": minari.__version__,
                             "algorithm_name": "uniform random", "author": {"test"}, "author_email": {"t@x"},
                             "code_permalink": "none", "description": "test", "requirements": [],
                             "num_episodes_average_score": 0})
    d = load_dataset("hopper-medium", data_dir=tmp_path / "empty")  # auto: no hdf5 on disk -> Minari
    assert d.provenance["source"] == "minari"
    assert len(d.trajectories) == 3
    for i, ep in enumerate(episodes):
        e = d.trajectories.episode(i)
        np.testing.assert_allclose(e["observations"], ep.observations[:-1].astype(np.float32))
        np.testing.assert_allclose(e["actions"], ep.actions)
        np.testing.assert_allclose(e["rewards"], np.asarray(ep.rewards, np.float32))
        assert e["terminated"] == bool(ep.terminations[-1])
    s = d.trajectories.starts[1]
    np.testing.assert_allclose(d.next_observations[s - 1], episodes[0].observations[-1].astype(np.float32))
