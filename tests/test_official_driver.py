"""The official-odt driver without the official code: its adapters, its mapping of the preset onto
the official options, and a whole run through a stand-in source (tests/official_stand_in/) that
has the official entry points and order of calls."""

from __future__ import annotations

import json
import pickle
import sys
import types
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from benchmarks.methods import method_config
from benchmarks.official import comparison
from benchmarks.official.adapters import (
    InProcessVecEnv,
    OldGymEnv,
    from_official_trajectories,
    stand_in_modules,
    to_official_trajectories,
)
from benchmarks.official.driver import (
    SOURCE_ENV,
    WORKERS_ENV,
    OfficialODTAgent,
    locate_source,
    official_config,
    official_variant,
)
from odt.config import make_config
from rlbase.config import ConfigError
from tests.conftest import make_hopper, toy_trajectories

STAND_IN = Path(__file__).parent / "official_stand_in"


class Corridor(gym.Env):
    """1-D: the position moves by the action; terminated past +1, truncated after 4 steps."""

    observation_space = gym.spaces.Box(-10, 10, (1,), np.float64)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(self.np_random.uniform(-0.5, 0.5))
        return np.array([self.x]), {}

    def step(self, action):
        self.x += float(action[0])
        return np.array([self.x]), 1.0, self.x > 1.0, False, {}


def corridor() -> gym.Env:
    return gym.wrappers.TimeLimit(Corridor(), max_episode_steps=4)


# ----- the dataset in the official layout ------------------------------------------------------

def test_official_pickle_round_trips_the_dataset_exactly():
    data = toy_trajectories([5, 1, 7, 3], obs_dim=4, act_dim=2, seed=3)
    paths = pickle.loads(pickle.dumps(to_official_trajectories(data)))
    assert [len(p["rewards"]) for p in paths] == [5, 1, 7, 3]
    for i, p in enumerate(paths):  # the official layout: terminals set only at a terminated trajectory's end
        assert p["terminals"].dtype == bool and p["terminals"][:-1].sum() == 0
        assert bool(p["terminals"][-1]) == bool(i % 2)
        assert p["observations"].dtype == np.float32 and p["observations"].shape == (len(p["rewards"]), 4)
    back = from_official_trajectories(paths)
    for name in ("observations", "actions", "rewards", "lengths", "terminated"):
        np.testing.assert_array_equal(getattr(back, name), getattr(data, name), err_msg=name)


# ----- the old gym API and the vector env ------------------------------------------------------

def test_old_gym_adapter_seeds_at_the_next_reset_and_reports_done():
    env = OldGymEnv(corridor())
    assert env.seed(7) == [7]
    first = env.reset()
    reference, _ = corridor().reset(seed=7)
    np.testing.assert_array_equal(first, reference)  # reset() returns the observation alone
    assert not np.array_equal(env.reset(), first)  # later resets continue the stream, unseeded
    obs, reward, done, info = env.step(np.array([2.0], dtype=np.float32))
    assert (reward, done) == (1.0, True) and isinstance(reward, float)  # terminated -> done
    env.reset()
    for _ in range(3):
        assert env.step(np.array([0.0], dtype=np.float32))[2] is False
    *_, done, info = env.step(np.array([0.0], dtype=np.float32))
    assert done and info["TimeLimit.truncated"]  # truncated at the time limit -> done, as old gym


def test_vector_env_resets_ended_episodes_like_subproc_vec_env():
    fns = [lambda s=s: _seeded(s) for s in (0, 1)]
    vec = InProcessVecEnv(fns)
    obs = vec.reset()
    assert obs.shape == (2, 1) and vec.num_envs == 2
    obs, rewards, dones, infos = vec.step(np.array([[2.0], [0.0]], dtype=np.float32))
    assert rewards.dtype == np.float32 and dones.tolist() == [True, False]
    assert infos[0]["terminal_observation"][0] > 1.0  # the last observation of the ended episode
    assert abs(obs[0, 0]) <= 0.5  # ... and the env restarted
    vec.close()


def _seeded(seed: int) -> OldGymEnv:
    env = OldGymEnv(corridor())
    env.seed(seed)
    return env


def test_stand_in_modules_exist_only_inside_the_block(tmp_path):
    (tmp_path / "official_probe_module.py").write_text("VALUE = 42\n")
    before = sys.modules.get("gym")
    sentinel = types.ModuleType("gym")
    sys.modules["gym"] = sentinel  # a module the stand-in shadows comes back afterwards
    path_before = list(sys.path)
    try:
        with stand_in_modules({"corridor": corridor}, [tmp_path]):
            import d4rl  # noqa: F401
            import gym as old_gym
            import official_probe_module
            from stable_baselines3.common.vec_env import SubprocVecEnv
            assert isinstance(old_gym.make("corridor"), OldGymEnv)
            assert SubprocVecEnv is InProcessVecEnv and official_probe_module.VALUE == 42
            with pytest.raises(KeyError, match="no environment for 'hopper'"):
                old_gym.make("hopper")
        assert sys.modules["gym"] is sentinel
        assert "official_probe_module" not in sys.modules and "d4rl" not in sys.modules
        assert "stable_baselines3.common.vec_env" not in sys.modules and sys.path == path_before
    finally:
        if before is None:
            sys.modules.pop("gym", None)
        else:
            sys.modules["gym"] = before


# ----- the preset as the official variant ------------------------------------------------------

def test_cpu_preset_maps_onto_the_official_options():
    v = official_variant(make_config("hopper-medium", "online", "cpu", {"seed": 3}), "hopper-medium")
    # the cpu preset of docs/presets-and-methods.md, in main.py's option names
    expected = {"seed": 3, "env": "hopper-medium", "K": 20, "embed_dim": 64, "n_layer": 3, "n_head": 4,
                "dropout": 0.1, "eval_context_length": 5, "ordering": 0, "eval_rtg": 3600.0,
                "num_eval_episodes": 10, "init_temperature": 0.1, "batch_size": 64, "learning_rate": 1e-3,
                "weight_decay": 5e-4, "warmup_steps": 1000, "online_rtg": 7200.0, "replay_size": 25,
                "num_updates_per_online_iter": 300, "eval_interval": 5, "num_online_rollouts": 1,
                "driver_online_lr": 1e-4, "driver_online_samples": 5000, "log_to_tb": False}
    assert {k: v[k] for k in expected} == expected
    # 2500 pretraining updates in iterations of 500, so evaluations fall at 1000 and 2000 too
    assert (v["num_updates_per_pretrain_iter"], v["max_pretrain_iters"]) == (500, 5)


@pytest.mark.parametrize("field, value", [("model.stochastic", False), ("online.exploration_rtg", "curriculum"),
                                          ("online.add_rollouts", False), ("online.buffer_init", "random"),
                                          ("optim.lambda_lr", 1e-3), ("rtg_scale", 1.0),
                                          ("online.online_updates", 300)])
def test_settings_the_official_code_cannot_run_are_refused_by_name(field, value):
    cfg = make_config("hopper-medium", "online", "cpu", {field: value})
    with pytest.raises(ConfigError, match=field.split(".")[-1]):
        official_variant(cfg, "hopper-medium")


def test_without_the_official_source_the_method_refuses_and_says_how(tmp_path, monkeypatch):
    monkeypatch.delenv(SOURCE_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"{SOURCE_ENV} is not set.*docs/official-odt.md"):
        method_config("official-odt", "hopper-medium", "cpu")
    with pytest.raises(ConfigError, match="no main.py there"):
        locate_source({SOURCE_ENV: str(tmp_path)})
    source = locate_source({SOURCE_ENV: str(STAND_IN)})
    assert source.commit is None and len(source.sha256) == 64  # not the official code: no commit claimed


# ----- a whole run through the stand-in source -------------------------------------------------

def test_a_run_follows_the_official_loop_with_the_drivers_wrappers(hopper_random):
    environ = {SOURCE_ENV: str(STAND_IN), WORKERS_ENV: "0"}
    overrides = {"pretrain_updates": 40, "eval_every_updates": 20, "online.lr": 3e-5}
    cfg = official_config("hopper-medium", "smoke", 5, overrides, environ=environ)
    agent = OfficialODTAgent(cfg, hopper_random, make_hopper, score_fn=lambda r: np.asarray(r) / 10,
                             progress=False, environ=environ)
    rows: list[dict] = []
    modules_before = set(sys.modules)
    try:
        end_of_pretraining = agent.pretrain(log=rows.append)
        last = agent.finetune(log=rows.append)
        evaluation = agent.evaluate(episodes=3)
        experiment = agent._experiment
    finally:
        agent.close()

    budget, per_round = cfg.odt.online.online_samples, cfg.odt.online.updates_per_round
    pre = [r for r in rows if r["phase"] == "pretrain"]
    online = [r for r in rows if r["phase"] == "online"]
    assert [r["updates"] for r in pre] == [20, 40] and end_of_pretraining is pre[-1]
    # the budget counts samples: the run stops at the round that reaches it, and evaluates there
    assert last is online[-1] and last["online_samples"] >= budget
    assert experiment.total_transitions_sampled == last["online_samples"]
    rounds = experiment.online_iter
    assert last["rounds"] == rounds and last["updates"] == 40 + rounds * per_round
    assert [r["rounds"] for r in online[:-1]] == list(range(2, rounds, 2))  # every eval_every_rounds = 2
    # per-episode returns come from the official evaluation, normalised by the score function
    assert all(len(r["returns"]) == cfg.odt.eval_episodes for r in rows)
    assert last["score_mean"] == pytest.approx(np.mean(last["returns"]) / 10)
    # pretraining at the preset's rate, finetuning at online.lr (after warmup both are flat)
    assert experiment.rates[39] == pytest.approx(cfg.odt.optim.lr)
    assert experiment.rates[40:] == pytest.approx([3e-5] * (len(experiment.rates) - 40))
    assert len(evaluation["returns"]) == 3 and agent.counters.pretrain_done
    assert not {"main", "data", "evaluation", "utils"} & (set(sys.modules) - modules_before)
    assert agent.finetune() is None and agent.pretrain() is None  # done: nothing more to run


# ----- the registered reading ------------------------------------------------------------------

def _runs(ours: dict[str, list[float]], official: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    for method, cells in (("odt", ours), ("official-odt", official)):
        for dataset, finals in cells.items():
            for seed, final in enumerate(finals):
                rows.append({"method": method, "dataset": dataset, "seed": seed, "status": "complete",
                             "final_score": final, "offline_score": final - 20.0})
    return pd.DataFrame(rows)


def test_the_reading_follows_the_protocols_verdicts():
    rng = np.random.default_rng(0)
    base = 60 + rng.normal(0, 1, 10)
    runs = _runs({"hopper-medium": list(base), "walker2d-medium": [30, 31, 29, 30, 30]},
                 {"hopper-medium": list(base + rng.normal(0, 1, 10)), "walker2d-medium": [60, 61, 59, 60, 60]})
    readings = {(r.dataset, r.metric): r for r in comparison.read_all(runs)}
    primary = readings[("hopper-medium", "final_score")]
    assert list(readings)[0] == ("hopper-medium", "final_score") and primary.p_holm is None
    assert primary.verdict == "equivalent"  # the same scores up to a point of noise
    # independently: Welch's interval of the two sets
    ours, official = primary.ours, primary.official
    se = np.sqrt(ours.var(ddof=1) / 10 + official.var(ddof=1) / 10)
    assert primary.interval.estimate == pytest.approx(ours.mean() - official.mean())
    assert primary.interval.high - primary.interval.estimate == pytest.approx(se * 2.1, rel=0.05)
    walker = readings[("walker2d-medium", "final_score")]
    assert walker.verdict == "contradicts" and walker.interval.high < 0  # 30 points apart
    assert walker.p_holm >= walker.interval.p_value  # read inside the family of secondaries
    assert readings[("hopper-medium-replay", "final_score")].verdict.startswith("not read")


def test_a_wide_spread_reads_inconclusive_not_agreement():
    runs = _runs({"hopper-medium": [20, 90, 40, 75, 55, 30, 85, 50, 65, 35]},
                 {"hopper-medium": [25, 95, 45, 70, 50, 40, 80, 60, 55, 30]})
    primary = comparison.read_all(runs)[0]
    assert primary.interval.low < 0 < primary.interval.high  # contains 0 ...
    assert primary.verdict == "inconclusive"  # ... but is not inside the margin


def test_table1_shows_the_official_column_beside_ours():
    from benchmarks.tables import official_section
    ours = _runs({"hopper-medium": [50.0, 60.0]}, {})
    official = _runs({}, {"hopper-medium": [40.0, 44.0, 48.0]})
    text = official_section(ours, official, "cpu")
    row = next(line for line in text.splitlines() if line.startswith("| hopper-medium |"))
    # end of pretraining (final - 20 in _runs), then final; population std; n for the official cells
    assert row == ("| hopper-medium | 35.00 ± 5.00 (n=2) | 24.00 ± 3.27 (n=3) | 55.00 ± 5.00 (n=2) "
                   "| 44.00 ± 3.27 (n=3) |")
    assert official_section(ours, official.iloc[0:0], "cpu") == ""  # no official run: no section


def _runs_20(ours_final: list[float], official_final: list[float], gain_ours: float, gain_official: float):
    rows = []
    for method, finals, gain in (("odt", ours_final, gain_ours), ("official-odt", official_final, gain_official)):
        for seed, final in enumerate(finals):
            rows.append({"method": method, "dataset": "hopper-medium", "seed": seed, "status": "complete",
                         "final_score": final, "offline_score": final - gain})
    return pd.DataFrame(rows)


def test_the_amendment_waits_for_twenty_seeds_per_arm_then_reads_at_the_second_look_level():
    rng = np.random.default_rng(1)
    ours, official = list(60 + rng.normal(0, 10, 20)), list(45 + rng.normal(0, 10, 20))
    partial = _runs_20(ours, official[:15], 20.0, 0.0)
    assert not comparison.amendment_complete(partial)
    assert "Not read" in "\n".join(comparison.amendment_lines(partial))  # no interim look
    runs = _runs_20(ours, official, 20.0, 0.0)
    assert comparison.amendment_complete(runs)
    primary = comparison.read_all(runs, comparison.amended_rows(), comparison.SECOND_LOOK_ALPHA)[0]
    assert len(primary.ours) == len(primary.official) == 20
    # independently: a 95.2% Welch interval (t quantile at 1 - 0.048 / 2, Welch-Satterthwaite df)
    from scipy import stats
    a, b = np.array(ours), np.array(official)
    va, vb = a.var(ddof=1) / 20, b.var(ddof=1) / 20
    df = (va + vb) ** 2 / (va**2 / 19 + vb**2 / 19)
    half = stats.t.ppf(1 - 0.048 / 2, df) * np.sqrt(va + vb)
    assert (primary.interval.low, primary.interval.high) == pytest.approx((a.mean() - b.mean() - half,
                                                                           a.mean() - b.mean() + half))
    assert primary.verdict == "contradicts"  # 15 points apart at SD 10 and n = 20
    # the first look's seeds alone are still read at 0.05, as registered
    assert comparison.read_all(runs)[0].interval.confidence == pytest.approx(0.95)
    gain = comparison.read_online_gain(runs)
    assert gain.interval.estimate == pytest.approx(20.0)  # 20 - 0, every run's own two scores
    text = "\n".join(comparison.amendment_lines(runs))
    assert "| hopper-medium | final (primary) |" in text and "(95.2%)" in text and "(90.4%)" in text


def test_a_difference_at_the_second_look_needs_the_stricter_level():
    # p between 0.048 and 0.05: significant at a single look, not at the second of two
    from scipy import stats
    base = np.linspace(-1.0, 1.0, 20)
    se = base.std(ddof=1) * np.sqrt(2 / 20)  # equal variances: Welch's df is 38
    shift = stats.t.ppf(1 - 0.049 / 2, 38) * se  # two-sided p = 0.049
    runs = _runs_20(list(base + shift), list(base), 0.0, 0.0)
    primary = comparison.read_all(runs, comparison.amended_rows(), comparison.SECOND_LOOK_ALPHA)[0]
    assert primary.interval.p_value == pytest.approx(0.049)
    assert comparison.read_all(runs, comparison.amended_rows())[0].verdict == "contradicts"  # one look
    assert primary.verdict != "contradicts"
    assert primary.interval.low < 0 < primary.interval.high


# ----- whole-run timing from records ------------------------------------------------------------

def _timed_record(root, method: str, seed: int, seconds: float, updates: int, status: str = "complete",
                  attempts: int = 1) -> None:
    d = root / "cpu" / "official_more" / f"{method}__hopper-medium__default__s{seed}__x"
    d.mkdir(parents=True)
    (d / "spec.json").write_text(json.dumps({"method": method, "dataset": "hopper-medium", "seed": seed}))
    (d / "record.json").write_text(json.dumps({
        "status": status, "attempts": attempts, "attempt_seconds": seconds, "final_score": 50.0,
        "counters": {"updates": updates, "online_samples": 5000}}))


def test_timing_from_records_pairs_complete_single_attempt_runs_by_seed(tmp_path):
    from benchmarks.official import timing
    for seed, (ours, official) in enumerate([(600.0, 1200.0), (500.0, 1500.0), (700.0, 1400.0)]):
        _timed_record(tmp_path, "odt", seed, ours, 6000)
        _timed_record(tmp_path, "official-odt", seed, official, 7000)
    _timed_record(tmp_path, "odt", 3, 650.0, 6000)  # no official twin: left out
    _timed_record(tmp_path, "official-odt", 4, 900.0, 7000, status="running")
    _timed_record(tmp_path, "odt", 4, 900.0, 6000, attempts=2)  # resumed: its seconds are not one run's
    rounds = timing.rounds_from_records(tmp_path, "cpu", "official_more", "hopper-medium")
    assert [[t.seed for t in r] for r in rounds] == [[0, 0], [1, 1], [2, 2]]
    out = timing.summary(rounds, ("wall_s",))
    assert out["ratio_wall_s"] == {"median": 0.5, "min": 1 / 3, "max": 0.5, "n": 3}  # 0.5, 1/3, 0.5
    assert out["odt_wall_ms_per_update"]["median"] == pytest.approx(600.0 / 6000 * 1000)
    assert out["official-odt_wall_ms_per_update"]["max"] == pytest.approx(1500.0 / 7000 * 1000)
    assert "cpu_s" not in "".join(out)  # records keep no CPU time: none is reported


def test_timing_overrides_reach_our_command_only():
    from benchmarks.official import timing
    ours = timing.command("odt", "hopper-medium", "cpu", 100, 1, Path("o.json"), ["precision=bf16"])
    assert ours[ours.index("--set") + 1:] == ["precision=bf16"]
    assert "--set" not in timing.command("official-odt", "hopper-medium", "cpu", 100, 1, Path("o.json"))
