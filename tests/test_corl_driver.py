"""The corl-iql driver without CORL: its adapters (D4RL's transition rule, the old gym API, the
stand-in modules), its mapping of ``iql``'s config onto CORL's TrainConfig, its refusal without
the source, and whole runs through a stand-in source (tests/corl_stand_in/) that has CORL's entry
points. The last tests run the real CORL scripts and are skipped unless ODT_CORL_SRC names them."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import types
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from baselines.iql import IQLConfig, transitions
from benchmarks.corl.adapters import (
    CorlEnv,
    EnvEntry,
    TransformObservation,
    TransformReward,
    corl_modules,
    d4rl_arrays,
    qlearning_dataset,
    train_config_fields,
)
from benchmarks.corl.driver import (
    KNOWN_SOURCES,
    SCRIPTS,
    SOURCE_ENV,
    CorlIQLAgent,
    coerce,
    config_file,
    corl_config,
    corl_train_config,
    evaluation_points,
    locate_source,
    map_config,
    parse_flat_yaml,
)
from benchmarks.methods import method_config
from rlbase.config import ConfigError
from tests.conftest import toy_trajectories

STAND_IN = Path(__file__).parent / "corl_stand_in"
CORL_SRC = os.environ.get(SOURCE_ENV)
needs_corl = pytest.mark.skipif(not CORL_SRC, reason=f"{SOURCE_ENV} is not set (CORL's source; docs/corl.md)")


class Corridor(gym.Env):
    """1-D: the position moves by the action; reward 1 and terminated past +1."""

    observation_space = gym.spaces.Box(-10, 10, (1,), np.float64)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(self.np_random.uniform(-0.5, 0.5))
        return np.array([self.x]), {}

    def step(self, action):
        self.x += float(action[0])
        return np.array([self.x]), float(self.x > 1.0), self.x > 1.0, False, {}


def corridor() -> gym.Env:
    return gym.wrappers.TimeLimit(Corridor(), max_episode_steps=4)


def corridor_data(seed: int = 0):
    return toy_trajectories([3, 4, 2, 4, 3, 4], obs_dim=1, act_dim=1, seed=seed)


# ----- D4RL's layouts ------------------------------------------------------------------------------

def test_qlearning_dataset_follows_d4rls_rule():
    arrays = {"observations": np.arange(7, dtype=np.float64)[:, None] * 10,
              "actions": np.arange(7, dtype=np.float64)[:, None], "rewards": np.arange(7) + 0.5,
              "terminals": np.array([0, 1, 0, 0, 0, 0, 1], bool), "timeouts": np.array([0, 0, 0, 1, 0, 0, 0], bool)}
    out = qlearning_dataset(arrays)
    # by hand: steps 0..5 (6 has no successor); step 3 is a timeout -> skipped; step 1 is terminal -> kept
    kept = [0, 1, 2, 4, 5]
    np.testing.assert_array_equal(out["observations"][:, 0], [10 * i for i in kept])
    np.testing.assert_array_equal(out["next_observations"][:, 0], [10 * (i + 1) for i in kept])
    np.testing.assert_array_equal(out["rewards"], [i + 0.5 for i in kept])
    np.testing.assert_array_equal(out["terminals"], [False, True, False, False, False])
    assert out["observations"].dtype == np.float32 and out["terminals"].dtype == bool
    assert len(qlearning_dataset(arrays, terminate_on_end=True)["rewards"]) == 6  # the timeout kept


def test_d4rl_transitions_are_ours_bar_the_last_step_and_masked_successors():
    data = toy_trajectories([5, 3, 6, 2, 4], obs_dim=3, act_dim=2, seed=1)  # odd ones terminated
    theirs, ours = qlearning_dataset(d4rl_arrays(data)), transitions(data)
    n = len(ours["rewards"])
    # our set, less the very last transition of the arrays (D4RL never keeps the last step)
    assert len(theirs["rewards"]) == n - int(data.terminated[-1])
    for key in ("observations", "actions", "rewards"):
        np.testing.assert_array_equal(theirs[key], ours[key][: len(theirs["rewards"])], err_msg=key)
    np.testing.assert_array_equal(theirs["terminals"], ours["dones"][: len(theirs["rewards"])].astype(bool))
    live = ~theirs["terminals"]  # successors agree wherever a TD target uses them
    np.testing.assert_array_equal(theirs["next_observations"][live], ours["next_observations"][: len(live)][live])


# ----- the old gym API ---------------------------------------------------------------------------

def test_corl_env_is_a_d4rl_env_behind_the_old_api():
    data = corridor_data()
    env = CorlEnv(corridor(), data, score_fn=lambda r: np.asarray(r) * 50.0)
    assert env._max_episode_steps == 4
    assert env.get_normalized_score(1.0) == pytest.approx(0.5)  # D4RL's fraction: score / 100
    np.testing.assert_array_equal(env.get_dataset()["rewards"], data.rewards)
    env.seed(3)
    assert env.reset().shape == (1,)
    _, reward, done, _ = env.step(np.array([2.0], np.float32))
    assert (reward, done) == (1.0, True)
    assert CorlEnv(corridor(), None, None).get_normalized_score(7.0) == 7.0


def test_old_wrappers_transform_and_hide_private_attributes():
    env = TransformReward(TransformObservation(CorlEnv(corridor(), None, None), lambda s: s * 10), lambda r: r - 1)
    env.seed(0)
    first = env.reset()
    assert abs(first[0]) <= 5.0
    obs, reward, done, _ = env.step(np.array([2.0], np.float32))
    assert obs[0] == pytest.approx(first[0] + 20.0) and reward == 0.0 and done
    assert env.get_normalized_score(3.0) == 3.0  # public attributes come from the wrapped env
    with pytest.raises(AttributeError, match="private"):
        _ = env._max_episode_steps


def test_stand_in_modules_exist_only_inside_the_block(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text("import d4rl, gym, pyrallis, wandb\n\n@pyrallis.wrap()\ndef train(x):\n"
                      "    wandb.log({'q_loss': x}, step=3)\n    return gym.make('c').reset().shape\n")
    sentinel = types.ModuleType("wandb")
    before = sys.modules.get("wandb")
    sys.modules["wandb"] = sentinel
    logged = []
    try:
        with corl_modules({"c": EnvEntry(corridor)}, lambda data, step: logged.append((data, step))) as load:
            assert load(script, "corl_probe").train(1.5) == (1,)
            assert sys.modules["wandb"] is not sentinel
        assert logged == [({"q_loss": 1.5}, 3)]
        assert sys.modules["wandb"] is sentinel and "corl_probe" not in sys.modules
        assert "d4rl" not in sys.modules and "pyrallis" not in sys.modules
    finally:
        if before is None:
            sys.modules.pop("wandb", None)
        else:
            sys.modules["wandb"] = before


# ----- the config ----------------------------------------------------------------------------------

def test_flat_yaml_and_values_typed_as_train_config_declares():
    values = parse_flat_yaml("# c\nbeta: 3.0\nactor_lr: 3e-4\nnormalize: true\ncheckpoints_path: null\n"
                             "load_model: ''\nbuffer_size: 10000000\n")
    assert values["actor_lr"] == "3e-4"
    assert coerce(values["actor_lr"], "float", "actor_lr") == 3e-4  # a string to PyYAML, a float to pyrallis
    assert coerce(values["normalize"], "bool", "normalize") is True
    assert coerce(values["checkpoints_path"], "Optional[str]", "checkpoints_path") is None
    assert coerce(values["load_model"], "str", "load_model") == ""
    assert coerce(values["buffer_size"], "int", "buffer_size") == 10_000_000
    assert coerce(0.5, "Optional[float]", "actor_dropout") == 0.5 and coerce("null", "float | None", "d") is None
    with pytest.raises(ConfigError, match="corl.batch_size"):
        coerce("2.5", "int", "batch_size")
    with pytest.raises(ConfigError, match="corl.normalize"):
        coerce("yes please", "bool", "normalize")
    with pytest.raises(ConfigError, match="line 2"):
        parse_flat_yaml("a: 1\n  nested: 2\n")


def test_train_config_fields_are_read_without_importing():
    fields = train_config_fields(STAND_IN / SCRIPTS["offline"])
    assert fields["max_timesteps"] == "int" and fields["actor_dropout"] == "float | None"


def test_evaluation_points_are_iqls_schedule():
    cfg = IQLConfig(offline_updates=50, online_samples=25, eval_every_updates=20, eval_every_samples=10,
                    eval_episodes=100, eval_episodes_interim=20)
    assert evaluation_points(cfg) == {20: 20, 40: 20, 50: 100, 60: 20, 70: 20, 75: 100}
    offline_only = dataclasses.replace(cfg, online_samples=0, eval_episodes_interim=0)
    assert evaluation_points(offline_only) == {20: 100, 40: 100, 50: 100}


def test_train_config_is_the_file_then_iqls_settings_then_overrides():
    fields = train_config_fields(STAND_IN / SCRIPTS["finetune"])
    cfg = IQLConfig(domain="antmaze", expectile=0.9, temperature=10.0, batch_size=64, offline_updates=50,
                    online_samples=25, eval_every_updates=20, eval_every_samples=10, seed=4, device="cpu")
    file_values = {"tau": "0.002", "normalize": "true", "beta": "1.0", "iql_deterministic": "false",
                   "eval_freq": "5000", "project": "CORL", "env": "x-v2"}
    train = corl_train_config(cfg, "antmaze-umaze", "finetune", file_values, fields, {"iql_deterministic": "true"})
    assert train["tau"] == 0.002 and train["normalize"] is True  # the authors' setting, from the file
    assert (train["beta"], train["iql_tau"], train["batch_size"]) == (10.0, 0.9, 64)  # iql's
    assert (train["offline_iterations"], train["online_iterations"]) == (50, 25)
    assert train["eval_freq"] == 5 and train["normalize_reward"] is True and train["seed"] == 4
    assert train["env"] == "antmaze-umaze" and "project" not in train  # names of a run are not kept
    assert train["iql_deterministic"] is True  # corl.<field> overrides last
    with pytest.raises(ConfigError, match="corl.no_such_field"):
        corl_train_config(cfg, "antmaze-umaze", "finetune", {}, fields, {"no_such_field": 1})
    offline = train_config_fields(STAND_IN / SCRIPTS["offline"])
    ant = dataclasses.replace(cfg, domain="ant", online_samples=0)
    train = corl_train_config(ant, "ant-medium", "offline", {}, offline, {})
    assert train["max_timesteps"] == 50 and train["normalize_reward"] is False  # ant rewards unscaled


def test_config_files_by_dataset_name(tmp_path):
    for rel in ("configs/offline/iql/hopper/medium_replay_v2.yaml", "configs/finetune/iql/antmaze/umaze_v2.yaml",
                "configs/offline/iql/antmaze/umaze_v2.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("tau: 0.005\n")
    rel = lambda p: p.relative_to(tmp_path).as_posix() if p else None  # noqa: E731
    assert rel(config_file(tmp_path, "hopper-medium-replay", "finetune")) == "configs/offline/iql/hopper/medium_replay_v2.yaml"
    assert rel(config_file(tmp_path, "antmaze-umaze", "finetune")) == "configs/finetune/iql/antmaze/umaze_v2.yaml"
    assert rel(config_file(tmp_path, "antmaze-umaze", "offline")) == "configs/offline/iql/antmaze/umaze_v2.yaml"
    assert config_file(tmp_path, "ant-medium", "offline") is None


def test_refused_without_the_source_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(SOURCE_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"{SOURCE_ENV} is not set.*docs/corl.md"):
        method_config("corl-iql", "hopper-medium", "cpu")
    (tmp_path / "algorithms" / "offline").mkdir(parents=True)
    (tmp_path / SCRIPTS["offline"]).write_text("")
    with pytest.raises(ConfigError, match="no algorithms/finetune/iql.py there"):
        locate_source({SOURCE_ENV: str(tmp_path)})


def test_settings_corl_cannot_run_are_refused():
    env = {SOURCE_ENV: str(STAND_IN)}
    with pytest.raises(ConfigError, match="max_weight"):
        corl_config("hopper-medium", "cpu", 0, {"max_weight": 50.0}, environ=env)
    with pytest.raises(ConfigError, match="hidden_dim"):
        corl_config("hopper-medium", "cpu", 0, {"hidden_dim": 64}, environ=env)
    corl_config("hopper-medium", "smoke", 0, {}, environ=env)  # the smoke preset's widths are not applied


def test_cpu_preset_maps_to_the_finetune_script_with_provenance():
    cfg = corl_config("hopper-medium", "cpu", 3, {"corl.tau": "0.01"}, environ={SOURCE_ENV: str(STAND_IN)})
    assert cfg.script == "finetune" and cfg.seed == 3 and cfg.config_file == ""  # no hopper file in the stand-in
    assert (cfg.train["offline_iterations"], cfg.train["online_iterations"]) == (180_000, 5000)
    assert cfg.train["eval_freq"] == 1000 and cfg.train["tau"] == 0.01
    assert set(cfg.source_files) == set(SCRIPTS.values()) and cfg.source_commit is None
    offline = corl_config("hopper-medium", "cpu", 3, {"online_samples": 0}, environ={SOURCE_ENV: str(STAND_IN)})
    assert offline.script == "offline" and offline.train["max_timesteps"] == 180_000
    assert offline.train["eval_freq"] == 10_000


# ----- whole runs through the stand-in source ------------------------------------------------------

def _small_config(online: int, environ: dict) -> object:
    cfg = IQLConfig(offline_updates=30, online_samples=online, eval_every_updates=20, eval_every_samples=4,
                    eval_episodes=3, eval_episodes_interim=1, batch_size=8, seed=2, device="cpu")
    return map_config(cfg, "corridor-short", "smoke", {}, environ)


@pytest.mark.parametrize("online", [0, 10])
def test_whole_run_through_the_stand_in_source(online, tmp_path):
    source = tmp_path / "corl"
    shutil.copytree(STAND_IN, source)
    environ = {SOURCE_ENV: str(source)}
    cfg = _small_config(online, environ)
    assert cfg.config_file == "configs/offline/iql/corridor/short_v2.yaml" and cfg.train["tau"] == 0.002
    rows: list[dict] = []
    agent = CorlIQLAgent(cfg, corridor_data(), corridor, score_fn=lambda r: np.asarray(r) * 100.0,
                         progress=False, environ=environ)
    offline = agent.pretrain(log=rows.append)
    last = agent.finetune()
    expected = [(20, 1), (30, 3)] + ([(34, 1), (38, 1), (40, 3)] if online else [])
    assert [(r["updates"], len(r["returns"])) for r in rows] == expected
    assert [r["phase"] for r in rows] == ["pretrain"] * 2 + ["online"] * (3 if online else 0)
    assert offline is rows[1] and last is (rows[-1] if online else None)
    assert all(np.isfinite(r["actor_loss"]) and r["length_mean"] >= 1 for r in rows)
    assert rows[1]["score_mean"] == pytest.approx(100.0 * np.mean(rows[1]["returns"]))
    assert agent.counters.updates == 30 + online and agent.counters.online_samples == online
    assert agent.counters.pretrain_done and agent.counters.wall_time > 0
    assert len(agent.evaluate(2)["returns"]) == 2
    assert agent.pretrain() is None  # a done run does not run again
    agent.close()
    (source / SCRIPTS["offline"]).write_text((source / SCRIPTS["offline"]).read_text() + "\n# edited\n")
    with pytest.raises(ConfigError, match="not the file this run's config was made with"):
        CorlIQLAgent(cfg, corridor_data(), corridor, progress=False, environ=environ).pretrain()


def test_a_stop_request_ends_the_run_at_the_next_update(tmp_path):
    from rlbase.training import StopRequested

    environ = {SOURCE_ENV: str(STAND_IN)}
    agent = CorlIQLAgent(_small_config(0, environ), corridor_data(), corridor, progress=False, environ=environ)
    agent.request_stop()
    with pytest.raises(StopRequested, match="restarts from the beginning"):
        agent.pretrain()
    assert agent.counters.updates == 1 and not agent.counters.pretrain_done


# ----- the real CORL (skipped unless ODT_CORL_SRC is set) ----------------------------------------

@needs_corl
def test_real_corl_source_is_known():
    source = locate_source()
    assert source.commit in KNOWN_SOURCES.values(), f"unknown CORL scripts, sha256 {source.scripts_sha256}"


@needs_corl
@pytest.mark.parametrize("online", [0, 6])
def test_real_corl_runs_unmodified_on_a_toy_corridor(online):
    cfg = IQLConfig(offline_updates=6, online_samples=online, eval_every_updates=3, eval_every_samples=3,
                    eval_episodes=2, batch_size=16, seed=1, device="cpu")
    cfg = map_config(cfg, "corridor-short", "smoke", {})
    rows: list[dict] = []
    agent = CorlIQLAgent(cfg, corridor_data(), corridor, progress=False)
    agent.pretrain(log=rows.append)
    assert [r["updates"] for r in rows] == [3, 6] + ([9, 12] if online else [])
    assert all(np.isfinite(r["q_loss"]) and np.isfinite(r["value_loss"]) for r in rows)
    agent.close()
