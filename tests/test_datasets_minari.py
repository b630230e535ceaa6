"""Minari datasets as users have them: written here with minari's own API
(``create_dataset_from_buffers``, no download) into a temporary MINARI_DATASETS_PATH, read back
exactly through the harness (flat Hopper-v5 and a goal-conditioned AntMaze Dict space), named by
their own ids (``minari:<id>``; D4RL names never load Minari data), scored with the reference
scores of their metadata or as raw returns, and trained on in a smoke-sized run through
``benchmarks.run``. ``minari`` is in the dev extra, so CI runs these (``pytest -k minari``)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from benchmarks import records as rec
from benchmarks import run as run_cli
from benchmarks.datasets import DatasetUnavailable, get_spec, load_dataset
from benchmarks.datasets.__main__ import main as datasets_cli
from benchmarks.datasets.loading import dataset_problem, find_dataset, make_command
from benchmarks.datasets.minari_io import episode_terminated, flatten_observations
from benchmarks.datasets.minari_spec import hyperparameter_dataset
from benchmarks.experiments import expand
from rlbase.trajectories import DatasetError

minari = pytest.importorskip("minari")

HOPPER_ID = "test/hopper/random-v0"
ANTMAZE_ID = "test/antmaze/umaze-v0"


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


def _collect(env: gym.Env, episodes: int, seed: int = 0) -> list:
    """Uniformly random episodes as minari EpisodeBuffers (Dict observations as dicts of arrays)."""
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env.action_space.seed(seed)
    out = []
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        seen, acts, rews, terms, truncs = [obs], [], [], [], []
        done = False
        while not done:
            a = env.action_space.sample()
            obs, r, te, tr, _ = env.step(a)
            seen.append(obs), acts.append(a), rews.append(float(r)), terms.append(te), truncs.append(tr)
            done = te or tr
        stacked = ({key: np.stack([o[key] for o in seen]) for key in seen[0]} if isinstance(seen[0], dict)
                   else np.stack(seen))
        out.append(EpisodeBuffer(id=k, seed=seed + k, observations=stacked, actions=np.stack(acts),
                                 rewards=rews, terminations=terms, truncations=truncs, infos={}))
    return out


def _write(dataset_id: str, env: gym.Env, buffers: list, **reference) -> None:
    minari.create_dataset_from_buffers(dataset_id, buffers, env=env, eval_env=env.spec, algorithm_name="uniform random",
                                       author="odt-bench tests", author_email="tests@example.org",
                                       code_permalink="tests/test_datasets_minari.py",
                                       description="random episodes for a test", **reference)


@pytest.fixture
def hopper_minari(minari_root):
    env = gym.make("Hopper-v5", max_episode_steps=40)
    buffers = _collect(env, 4)
    _write(HOPPER_ID, env, buffers, ref_min_score=-20.0, ref_max_score=3000.0)
    env.close()
    return buffers


@pytest.fixture
def antmaze_minari(minari_root):
    """AntMaze-shaped: observation 27, achieved_goal 2, desired_goal 2; a continuing task
    (never terminates, every episode truncated); no reference scores in the metadata."""
    robotics = pytest.importorskip("gymnasium_robotics")
    gym.register_envs(robotics)
    env = gym.make("AntMaze_UMaze-v5", max_episode_steps=25, continuing_task=True,
                   include_cfrc_ext_in_observation=False)
    buffers = _collect(env, 3)
    _write(ANTMAZE_ID, env, buffers)
    env.close()
    return buffers


# ----- reading -------------------------------------------------------------------------------------------
def test_minari_flat_dataset_reads_back_exactly(hopper_minari, tmp_path):
    d = load_dataset(f"minari:{HOPPER_ID}", data_dir=tmp_path / "empty")
    assert d.provenance["source"] == "minari" and d.provenance["minari_id"] == HOPPER_ID
    assert d.provenance["observations"] == "flat" and d.provenance["hyperparameters_from"] == "hopper-medium"
    assert len(d.trajectories) == len(hopper_minari)
    for i, ep in enumerate(hopper_minari):
        e = d.trajectories.episode(i)
        np.testing.assert_allclose(e["observations"], ep.observations[:-1].astype(np.float32))
        np.testing.assert_allclose(e["actions"], ep.actions)
        np.testing.assert_allclose(e["rewards"], np.asarray(ep.rewards, np.float32))
        assert e["terminated"] == bool(ep.terminations[-1])
        end = d.trajectories.starts[i] + d.trajectories.lengths[i] - 1
        np.testing.assert_allclose(d.next_observations[end], ep.observations[-1].astype(np.float32))
    assert d.provenance["terminated"] + d.provenance["truncated"] == len(hopper_minari)
    # scored with the metadata's reference scores, not D4RL's hopper pair
    assert d.provenance["reference"] == [-20.0, 3000.0] and "ref_min_score=-20" in d.provenance["scoring"]
    np.testing.assert_allclose(d.score_fn(np.array([-20.0, 3000.0, 1490.0])), [0.0, 100.0, 50.0])
    env = d.make_env()
    assert env.observation_space.shape == (11,) and env.spec.max_episode_steps == 40
    env.close()


def test_minari_dict_observations_flatten_as_the_env_policy_sees_them(antmaze_minari):
    d = load_dataset(f"minari:{ANTMAZE_ID}")
    assert d.trajectories.obs_dim == 31
    assert d.provenance["observations"] == "achieved_goal[0:2] desired_goal[2:4] observation[4:31]"
    env = d.make_env()  # FlattenObservation over the dataset's own environment
    obs, _ = env.reset(seed=0)
    assert obs.shape == (31,)
    raw = env.unwrapped.observation_space if hasattr(env.unwrapped, "observation_space") else None
    env.close()
    space = gym.spaces.Dict({k: gym.spaces.Box(-np.inf, np.inf, (n,)) for k, n in
                             (("observation", 27), ("achieved_goal", 2), ("desired_goal", 2))})
    assert raw is not None and list(raw.spaces) == list(space.spaces)
    for i, ep in enumerate(antmaze_minari):
        e = d.trajectories.episode(i)
        rows = [gym.spaces.flatten(space, {k: v[t] for k, v in ep.observations.items()})
                for t in range(len(ep.rewards))]
        np.testing.assert_allclose(e["observations"], np.stack(rows).astype(np.float32))
        np.testing.assert_allclose(e["observations"][:, :2], ep.observations["achieved_goal"][:-1], rtol=1e-6)
        assert not e["terminated"]  # continuing task: truncated, not terminal
    assert d.provenance["truncated"] == len(antmaze_minari) and d.provenance["terminated"] == 0


def test_minari_without_reference_scores_reports_raw_return(antmaze_minari):
    spec = get_spec(f"minari:{ANTMAZE_ID}")
    assert not spec.has_reference and spec.scoring.startswith("raw return")
    np.testing.assert_allclose(spec.score_fn([0.0, 3.0]), [0.0, 3.0])
    assert load_dataset(f"minari:{ANTMAZE_ID}").provenance["reference"] is None


def test_minari_terminations_and_truncations_stay_apart():
    assert episode_terminated([False, False, True], [False, False, False], 0)
    assert not episode_terminated([False, False, False], [False, False, True], 0)  # a timeout is not terminal
    assert not episode_terminated([False, False], [False, False], 0)  # cut off, neither flag
    assert episode_terminated([False, True], [False, True], 0)  # both: terminal (gymnasium's rule)
    with pytest.raises(DatasetError, match="before its last step"):
        episode_terminated([True, False], [False, True], 3)


def test_minari_flatten_rejects_what_it_cannot_represent():
    space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,)), "b": gym.spaces.Box(-1, 1, (1,))})
    with pytest.raises(DatasetError, match=r"\['b'\]"):
        flatten_observations({"a": np.zeros((3, 2))}, space)
    with pytest.raises(DatasetError, match="Box"):
        flatten_observations(np.zeros((3, 1)), gym.spaces.Discrete(3))


# ----- names ---------------------------------------------------------------------------------------------
def test_minari_data_never_answers_to_a_d4rl_name(minari_root, tmp_path):
    env = gym.make("Hopper-v5", max_episode_steps=20)
    _write("mujoco/hopper/medium-v0", env, _collect(env, 2))
    env.close()
    assert not hasattr(get_spec("hopper-medium"), "minari_id")
    assert find_dataset("hopper-medium", data_dir=tmp_path / "empty") is None
    with pytest.raises(DatasetUnavailable, match="not on disk"):
        load_dataset("hopper-medium", data_dir=tmp_path / "empty")
    assert find_dataset("minari:mujoco/hopper/medium-v0") == ("minari", "mujoco/hopper/medium-v0")


def test_minari_names_choose_hyperparameters_and_stable_run_ids(hopper_minari):
    assert hyperparameter_dataset("minari:mujoco/hopper/medium-v0") == "hopper-medium"
    assert hyperparameter_dataset("minari:D4RL/antmaze/umaze-diverse-v1") == "antmaze-umaze-diverse"
    assert hyperparameter_dataset("minari:D4RL/antmaze/large-play-v1") == "antmaze-umaze"
    assert hyperparameter_dataset("hopper-medium") == "hopper-medium"
    specs = expand("table1", "smoke", seeds=1, datasets=[f"minari:{HOPPER_ID}"], methods=["odt"])
    assert [s.dataset for s in specs] == [f"minari:{HOPPER_ID}"]
    assert "/" not in specs[0].run_id and ":" not in specs[0].run_id
    from rlbase.config import ConfigError
    with pytest.raises(ConfigError, match="environment famil"):
        hyperparameter_dataset("minari:somewhere/unknown-v0")


def test_minari_missing_dataset_says_how_to_get_it(minari_root):
    name = "minari:D4RL/antmaze/umaze-v1"
    assert get_spec(name).available  # not skipped by the runner: its dataset check says how to get it
    assert dataset_problem(name) == "not on disk (Minari)"
    assert make_command(name).startswith("minari download D4RL/antmaze/umaze-v1")
    with pytest.raises(DatasetUnavailable, match="minari download"):
        load_dataset(name)


def test_minari_datasets_list_shows_local_datasets_with_provenance(hopper_minari, antmaze_minari, tmp_path,
                                                                   capsys):
    assert datasets_cli(["list", "--data-dir", str(tmp_path / "empty")]) == 0
    out = capsys.readouterr().out
    assert f"minari:{HOPPER_ID}" in out and f"minari:{ANTMAZE_ID}" in out
    assert "uniform random" in out and "ref_min_score=-20" in out and "raw return" in out


# ----- training through the harness -----------------------------------------------------------------------
@pytest.mark.parametrize("which", ["hopper", "antmaze"])
def test_minari_dataset_trains_through_the_runner(which, request, tmp_path, capsys):
    dataset_id = HOPPER_ID if which == "hopper" else ANTMAZE_ID
    request.getfixturevalue(f"{which}_minari")
    name = f"minari:{dataset_id}"
    argv = ["table1", "--preset", "smoke", "--seeds", "1", "--datasets", name, "--methods", "odt",
            "--executor", "debug", "--quiet", "--results", str(tmp_path / "results"),
            "--tables-dir", str(tmp_path / "tables")]
    assert run_cli.main(argv) == 0, capsys.readouterr()
    (spec,) = expand("table1", "smoke", seeds=1, datasets=[name], methods=["odt"])
    directory = rec.run_dir(tmp_path / "results", spec)
    record = rec.read_record(directory)
    assert record["status"] == "complete"
    provenance = json.loads((directory / rec.PROVENANCE).read_text())
    assert provenance["source"] == "minari" and provenance["minari_id"] == dataset_id
    score_of = get_spec(name).score_fn  # normalized for hopper (metadata), the raw return for antmaze
    rows = [r for r in rec.read_curve(directory / rec.CURVE) if "return_mean" in r]
    assert rows
    for row in rows:
        assert row["score_mean"] == pytest.approx(float(score_of(row["return_mean"])))
    if which == "antmaze":
        assert all(r["score_mean"] == pytest.approx(r["return_mean"]) for r in rows)
    table = (tmp_path / "tables" / "table1_minari.md").read_text()  # the table states the scoring
    assert name in table and "NOT D4RL normalized" in table
    assert ("raw return" if which == "antmaze" else "ref_min_score=-20") in table
    assert ("antmaze-umaze" if which == "antmaze" else "hopper-medium") in table
