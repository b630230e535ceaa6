"""Datasets: registry, normalized scores, D4RL hdf5 round trips, splitting, validation errors."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from benchmarks.datasets import (
    DATASETS,
    TABLE1_DATASETS,
    DatasetError,
    DatasetUnavailable,
    UnknownDataset,
    get_spec,
    load_dataset,
    normalized_score,
)
from benchmarks.datasets.d4rl_io import read_d4rl, split_points, to_arrays, write_d4rl
from benchmarks.datasets.loading import generated_path, smoke_path
from rlbase.trajectories import Trajectories


# ----- registry and scores --------------------------------------------------------------------
def test_registry_has_table1_and_envs():
    assert len(TABLE1_DATASETS) == 10
    for name in TABLE1_DATASETS:
        assert name in DATASETS
    assert get_spec("hopper-medium").env_id == "Hopper-v5"
    assert get_spec("walker2d-medium-replay").env_id == "Walker2d-v5"
    assert get_spec("antmaze-umaze").domain == "antmaze"
    assert get_spec("halfcheetah-medium").max_episode_steps == 1000


def test_unknown_name_lists_valid_names():
    with pytest.raises(UnknownDataset, match="hopper-medium-replay"):
        get_spec("hoper-medium")


@pytest.mark.parametrize("family,lo,hi", [
    ("hopper", -20.272305, 3234.3), ("walker2d", 1.629008, 4592.3),
    ("halfcheetah", -280.178953, 12135.0), ("ant", -325.6, 3879.7), ("antmaze", 0.0, 1.0)])
def test_reference_scores_are_d4rls(family, lo, hi):
    name = next(n for n, s in DATASETS.items() if s.family == family)
    spec = get_spec(name)
    assert (spec.ref_min_score, spec.ref_max_score) == (lo, hi)
    np.testing.assert_allclose(normalized_score(name, [lo, hi, (lo + hi) / 2]), [0.0, 100.0, 50.0])


def test_normalized_score_numbers():
    # hopper: 100 * (1000 + 20.272305) / (3234.3 + 20.272305)
    np.testing.assert_allclose(normalized_score("hopper-medium", 1000.0), 31.3486, atol=1e-3)
    np.testing.assert_allclose(normalized_score("ant", 0.0), 100 * 325.6 / (3879.7 + 325.6))
    assert normalized_score("antmaze-umaze", np.array([0.0, 1.0, 1.0])).mean() == pytest.approx(200 / 3)


def test_ant_matches_d4rl_observation_and_reward_terms():
    env = get_spec("ant-medium").make_env()
    assert env.observation_space.shape == (27,)
    env.reset(seed=0)
    _, _, _, _, info = env.step(env.action_space.sample())
    assert info["reward_contact"] == 0.0  # Ant-v2's contact cost was zero (cfrc_ext bug)
    env.close()


def test_walker2d_has_d4rls_feet_friction():
    import mujoco

    env = get_spec("walker2d-medium").make_env()
    model = env.unwrapped.model
    friction = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, i): model.geom_friction[i, 0]
                for i in range(model.ngeom)}
    assert (friction["foot_geom"], friction["foot_left_geom"]) == pytest.approx((0.9, 1.9))  # v2's model
    assert env.observation_space.shape == (17,)
    env.close()


def test_mujoco_warnings_reach_python_warnings_not_stderr_or_a_log_file(tmp_path, monkeypatch, capfd):
    """MuJoCo's own handler would print HalfCheetah-v5's compiler warning (MuJoCo 4) to stderr
    and append it to MUJOCO_LOG.TXT in the working directory at every model load."""
    import warnings

    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            get_spec("halfcheetah-medium").make_env().close()
    assert "WARNING" not in capfd.readouterr().err
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert all(str(w.message).startswith("MuJoCo: ") for w in caught)


# ----- smoke datasets -------------------------------------------------------------------------
def test_smoke_dataset_is_built_cached_and_labelled(tmp_path):
    d = load_dataset("hopper-medium", size="smoke", data_dir=tmp_path)
    assert d.provenance["source"] == "generated-smoke"
    assert "NOT a D4RL" in d.provenance["card"]["warning"]
    assert smoke_path("hopper-medium", tmp_path).exists()
    assert 2000 <= d.trajectories.num_steps < 3000
    assert d.trajectories.obs_dim == 11 and d.trajectories.act_dim == 3
    again = load_dataset("hopper-medium", size="smoke", data_dir=tmp_path)
    assert again.provenance["sha256"] == d.provenance["sha256"]
    np.testing.assert_array_equal(again.trajectories.observations, d.trajectories.observations)
    scores = d.score_fn(d.trajectories.returns())
    assert -5 < scores.mean() < 10  # a random policy scores about 0


def test_full_dataset_missing_says_how_to_make_it(tmp_path):
    with pytest.raises(DatasetUnavailable, match="python -m benchmarks.datasets make hopper-medium"):
        load_dataset("hopper-medium", data_dir=tmp_path)


def test_antmaze_without_gymnasium_robotics_says_how_to_install(tmp_path, monkeypatch):
    import benchmarks.datasets.antmaze as antmaze  # AntMaze itself is tested in test_antmaze.py

    monkeypatch.setattr(antmaze, "antmaze_available", lambda: False)
    assert not get_spec("antmaze-umaze").available
    with pytest.raises(DatasetUnavailable, match=r"pip install -e '\.\[antmaze\]'"):
        load_dataset("antmaze-umaze", size="smoke", data_dir=tmp_path)


def test_bad_size_is_named(tmp_path):
    with pytest.raises(ValueError, match="size='tiny'"):
        load_dataset("hopper-medium", size="tiny", data_dir=tmp_path)


def test_data_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ODT_DATA_DIR", str(tmp_path / "elsewhere"))
    load_dataset("hopper-medium", size="smoke")
    assert smoke_path("hopper-medium", tmp_path / "elsewhere").exists()


# ----- D4RL files: splitting, round trip, validation -----------------------------------------
def _traj(rng, lengths=(5, 3, 7), terminated=(True, False, True), obs_dim=11, act_dim=3):
    n = sum(lengths)
    return Trajectories(rng.normal(size=(n, obs_dim)).astype(np.float32),
                        rng.uniform(-1, 1, size=(n, act_dim)).astype(np.float32),
                        rng.normal(size=n).astype(np.float32),
                        np.array(lengths, np.int64), np.array(terminated, bool))


def test_split_points_on_terminals_and_timeouts():
    terminals = np.array([0, 0, 1, 0, 0, 0, 0, 1, 0, 0], bool)
    timeouts = np.array([0, 0, 0, 0, 1, 0, 0, 1, 0, 0], bool)
    lengths, terminated, tail = split_points(terminals, timeouts)
    np.testing.assert_array_equal(lengths, [3, 2, 3])
    np.testing.assert_array_equal(terminated, [True, False, True])  # both flags: terminal wins
    assert tail == 2


def test_round_trip_with_tail_and_card(tmp_path):
    rng = np.random.default_rng(0)
    traj = _traj(rng)
    tail = dict(observations=rng.normal(size=(4, 11)), actions=rng.uniform(-1, 1, (4, 3)), rewards=rng.normal(size=4))
    card = {"name": "x", "seed": 3}
    path = tmp_path / "x.hdf5"
    write_d4rl(path, to_arrays(traj, tail=tail), card)
    with h5py.File(path) as f:
        assert len(f["rewards"]) == traj.num_steps + 4
        assert int(f["terminals"][()].sum()) == 2 and int(f["timeouts"][()].sum()) == 1
    back = read_d4rl(path)
    assert back.dropped_tail_steps == 4
    assert back.metadata["card"] == card
    for key in ("observations", "actions", "rewards", "lengths", "terminated"):
        np.testing.assert_array_equal(getattr(back.trajectories, key), getattr(traj, key))


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    rng = np.random.default_rng(1)
    write_d4rl(tmp_path / "a.hdf5", to_arrays(_traj(rng)))
    assert [p.name for p in tmp_path.iterdir()] == ["a.hdf5"]


def _write_raw(path, **overrides):
    rng = np.random.default_rng(2)
    arrays = to_arrays(_traj(rng))
    arrays.update(overrides)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    with h5py.File(path, "w") as f:
        for k, v in arrays.items():
            f.create_dataset(k, data=v)
    return path


@pytest.mark.parametrize("overrides,message", [
    (dict(timeouts=None), r"missing key\(s\) \['timeouts'\]"),
    (dict(actions=np.zeros((14, 3), np.float32)), "'actions' has 14 rows but 'rewards' has 15"),
    (dict(rewards=np.r_[np.zeros(5), np.nan, np.zeros(9)].astype(np.float32)), "'rewards' has NaN or inf at step 5"),
    (dict(observations=np.full((15, 11), np.inf, np.float32)), "'observations' has NaN or inf at step 0"),
    (dict(terminals=np.zeros(15, bool), timeouts=np.zeros(15, bool)), "no complete trajectory"),
    (dict(observations=np.zeros((0, 11)), actions=np.zeros((0, 3)), rewards=np.zeros(0),
          terminals=np.zeros(0, bool), timeouts=np.zeros(0, bool)), "empty"),
    (dict(rewards=np.zeros((15, 1), np.float32)), r"'rewards' has shape \(15, 1\)"),
])
def test_validation_errors_name_the_problem(tmp_path, overrides, message):
    path = _write_raw(tmp_path / "bad.hdf5", **overrides)
    with pytest.raises(DatasetError, match=message):
        read_d4rl(path)


def test_missing_file_and_non_hdf5(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.hdf5"):
        read_d4rl(tmp_path / "nope.hdf5")
    (tmp_path / "junk.hdf5").write_text("not hdf5")
    with pytest.raises(DatasetError, match="junk.hdf5: not a readable hdf5"):
        read_d4rl(tmp_path / "junk.hdf5")


def test_shapes_that_do_not_fit_the_env_are_errors(tmp_path):
    rng = np.random.default_rng(3)
    write_d4rl(generated_path("hopper-medium", tmp_path), to_arrays(_traj(rng, obs_dim=12)))
    with pytest.raises(DatasetError, match="observations are 12-dim"):
        load_dataset("hopper-medium", data_dir=tmp_path)
    write_d4rl(generated_path("hopper-medium", tmp_path), to_arrays(_traj(rng, act_dim=4)))
    with pytest.raises(DatasetError, match="actions are 4-dim"):
        load_dataset("hopper-medium", data_dir=tmp_path)


def test_actions_out_of_bounds_are_errors(tmp_path):
    rng = np.random.default_rng(4)
    traj = _traj(rng)
    arrays = to_arrays(traj)
    arrays["actions"] = arrays["actions"].copy()
    arrays["actions"][6, 1] = 1.5
    write_d4rl(generated_path("hopper-medium", tmp_path), arrays)
    with pytest.raises(DatasetError, match="out of the environment's bounds .* at step 6"):
        load_dataset("hopper-medium", data_dir=tmp_path)


def test_real_d4rl_file_is_found_and_preferred(tmp_path):
    rng = np.random.default_rng(5)
    traj = _traj(rng)
    (tmp_path / "d4rl").mkdir()
    write_d4rl(tmp_path / "d4rl" / "hopper_medium-v2.hdf5", to_arrays(traj))
    write_d4rl(generated_path("hopper-medium", tmp_path), to_arrays(_traj(rng)))
    d = load_dataset("hopper-medium", data_dir=tmp_path)
    assert d.provenance["source"] == "d4rl"
    np.testing.assert_array_equal(d.trajectories.observations, traj.observations)
    g = load_dataset("hopper-medium", data_dir=tmp_path, source="generated")
    assert g.provenance["source"] == "generated"


def test_d4rl_ant_111_dims_converted_only_when_contact_columns_are_zero(tmp_path):
    rng = np.random.default_rng(6)
    traj = _traj(rng, obs_dim=111, act_dim=8)
    obs = traj.observations.copy()
    obs[:, 27:] = 0.0
    zeroed = Trajectories(obs, traj.actions, traj.rewards, traj.lengths, traj.terminated)
    (tmp_path / "d4rl").mkdir()
    write_d4rl(tmp_path / "d4rl" / "ant-medium-v2.hdf5", to_arrays(zeroed))
    d = load_dataset("ant-medium", data_dir=tmp_path)
    assert d.trajectories.obs_dim == 27 and "obs_conversion" in d.provenance
    np.testing.assert_array_equal(d.trajectories.observations, obs[:, :27])
    write_d4rl(tmp_path / "d4rl" / "ant-medium-v2.hdf5", to_arrays(traj))
    with pytest.raises(DatasetError, match="contact-force columns"):
        load_dataset("ant-medium", data_dir=tmp_path)


def test_stale_smoke_cache_is_rebuilt(tmp_path):
    first = load_dataset("walker2d-medium", size="smoke", data_dir=tmp_path)
    path = smoke_path("walker2d-medium", tmp_path)
    with h5py.File(path, "r+") as f:  # pretend it was made for another environment definition
        card = json.loads(f["metadata/card_json"][()])
        card["env_kwargs"] = {}
        del f["metadata/card_json"]
        f["metadata/card_json"] = json.dumps(card)
    again = load_dataset("walker2d-medium", size="smoke", data_dir=tmp_path)
    assert again.provenance["card"]["env_kwargs"] == {"xml_file": "walker2d.xml"}
    assert again.trajectories.num_steps == first.trajectories.num_steps


def test_content_digest_names_the_data_not_the_file(tmp_path):
    """Two makes of the same data differ in their bytes (the card's creation time) but not in
    their steps: provenance's content_sha256 agrees where the file's sha256 does not, and one
    changed reward changes it."""
    import copy

    from benchmarks.datasets.loading import _load_hdf5, content_sha256
    from benchmarks.datasets.registry import get_spec

    spec = get_spec("hopper-medium")
    traj = _traj(np.random.default_rng(5))
    write_d4rl(tmp_path / "a.hdf5", to_arrays(traj), {"created": "2026-11-23T00:00:00Z"})
    write_d4rl(tmp_path / "b.hdf5", to_arrays(traj), {"created": "2026-11-24T00:00:00Z"})
    a, b = (_load_hdf5(spec, tmp_path / f"{n}.hdf5", "generated").provenance for n in ("a", "b"))
    assert a["sha256"] != b["sha256"]
    assert a["content_sha256"] == b["content_sha256"] == content_sha256(traj)
    changed = copy.deepcopy(traj)
    changed.rewards[7] += np.float32(1e-3)
    assert content_sha256(changed) != content_sha256(traj)
