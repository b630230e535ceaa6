"""studies.reach.analysis: the geometry of AntMaze episodes (path walked, distances to the goal, maze
cells to the goal's cell), checked against values worked out by hand, and its replay of a run's
final evaluation checked against the run's own record."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from rlbase.envs import run_policy_episodes
from studies.reach.analysis import ReachRecorder, cells_to_goal, episode_reach


def test_episode_reach_is_the_path_length_and_the_distances_at_reset_closest_and_end():
    xy = [(0.0, 0.0), (3.0, 0.0), (3.0, 4.0), (3.0, 2.0)]  # legs of 3, 4 and 2 m
    goal = np.array([3.0, 4.0])
    distance = [5.0, 4.0, 0.0, 2.0]  # |xy - goal| by hand: a 3-4-5 triangle, then along the last leg
    e = episode_reach(np.array(xy), np.array(distance), np.array([6.0, 5.0, 5.0, 5.0]))
    assert e.path_m == pytest.approx(9.0)
    assert (e.start_m, e.closest_m, e.final_m) == (5.0, 0.0, 2.0)
    assert (e.start_cells, e.fewest_cells, e.final_cells, e.steps) == (6.0, 5.0, 5.0, 3)
    assert np.allclose(np.linalg.norm(np.array(xy) - goal, axis=1), distance)
    with pytest.raises(ValueError, match="positions"):
        episode_reach(np.zeros((3, 2)), np.zeros(2), np.zeros(3))


def test_tally_cells_counts_episodes_by_their_fewest_cells_nearest_first():
    from studies.reach.analysis import tally_cells
    assert tally_cells(pd.Series([5.0, 4.0, 5.0, np.nan, 0.0])) == "0:1 4:1 5:2"


def test_cells_to_goal_counts_the_corridors_of_the_u_maze():
    # D4RL's U-maze: start cell (1, 1) at the origin, 4 m cells, goal cell (3, 1) at (0, 8); the
    # corridor runs (1,1) (1,2) (1,3) (2,3) (3,3) (3,2) (3,1): 6 steps from the start's cell
    goal = (0.3, 8.2)  # anywhere in the goal's cell
    points = np.array([(0.0, 0.0), (1.9, 0.0), (2.1, 0.0), (8.0, 0.0), (8.0, 4.0), (8.0, 8.0), (4.0, 8.0),
                       (0.0, 8.0), (0.0, 4.0)])  # the last: the wall cell (2, 1) between start and goal
    expected = [6, 6, 5, 4, 3, 2, 1, 0, np.nan]
    assert np.allclose(cells_to_goal(points, goal), expected, equal_nan=True)


class Stroll(gym.Env):
    """Walks 0.4 m along +x per step from the origin; info as the project's AntMaze reports it."""
    observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,))
    action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,))
    goal = np.array([0.0, 8.0])

    def __init__(self, length: int):
        self.length = length

    def _info(self) -> dict:
        return {"xy": self.xy.copy(), "goal": self.goal.copy(), "distance": float(np.linalg.norm(self.xy - self.goal))}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.xy, self.t = np.zeros(2), 0
        return self.xy.copy(), self._info()

    def step(self, action):
        self.xy, self.t = self.xy + np.array([0.4, 0.0]), self.t + 1
        return self.xy.copy(), 0.0, False, self.t >= self.length, self._info()


def test_recorder_keeps_the_seeded_episodes_and_not_the_vector_envs_autoresets():
    sink = []
    # the 1-step episode ends first; its sub-env then autoresets (no seed) and walks on while the
    # 4-step episode finishes: that extra episode must not be recorded
    envs = gym.vector.SyncVectorEnv([lambda: ReachRecorder(Stroll(1), sink), lambda: ReachRecorder(Stroll(4), sink)])
    _, lengths = run_policy_episodes(envs, lambda obs: np.zeros((len(obs), 1)), seeds=[3, 4])
    envs.close()
    assert list(lengths) == [1, 4]
    assert sorted(e.steps for e in sink) == [1, 4]
    one, four = sorted(sink, key=lambda e: e.steps)
    assert four.path_m == pytest.approx(1.6) and one.path_m == pytest.approx(0.4)
    assert four.start_m == pytest.approx(8.0) and four.final_m == pytest.approx(np.hypot(1.6, 8.0))
    assert four.closest_m == pytest.approx(8.0)  # walking along +x only ever moves away from the goal
    assert (four.start_cells, four.fewest_cells, four.final_cells) == (6.0, 6.0, 6.0)  # x < 2 m: still the start cell


def test_recorder_names_what_is_missing_outside_antmaze():
    env = ReachRecorder(gym.make("Pendulum-v1"), [])
    with pytest.raises(KeyError, match="AntMaze only"):
        env.reset(seed=0)


ANTMAZE_SMOKE = {"iql": (("offline_updates", 20), ("online_samples", 40), ("eval_every_samples", 40)),
                 "odt-offline": (("pretrain_updates", 10), ("eval_every_updates", 10))}


@pytest.mark.parametrize("method", ["iql", "odt-offline", "odt"])
def test_replay_gives_the_final_rows_returns_episode_by_episode(tmp_path, method):
    # Hopper: returns differ from episode to episode, so equal returns mean the same episodes
    from benchmarks import job
    from benchmarks.experiments import RunSpec
    from benchmarks.records import read_record, run_dir
    from studies.reach.analysis import replay_final_evaluation
    spec = RunSpec("t", method, "hopper-medium", 1, "smoke")
    job.run_one(spec, tmp_path, threads=1)
    replay = replay_final_evaluation(run_dir(tmp_path, spec))
    recorded = read_record(run_dir(tmp_path, spec))["final"]["returns"]
    assert len(set(recorded)) == len(recorded) > 1
    assert replay.returns.tolist() == pytest.approx(recorded) and replay.matches


@pytest.mark.parametrize("method", sorted(ANTMAZE_SMOKE))
def test_reach_row_summarises_the_replayed_antmaze_episodes(tmp_path, method):
    pytest.importorskip("gymnasium_robotics", reason="AntMaze needs gymnasium-robotics")
    from benchmarks import job
    from benchmarks.experiments import RunSpec
    from benchmarks.records import read_record, run_dir
    from studies.reach.analysis import main, reach_row
    spec = RunSpec("t", method, "antmaze-umaze", 0, "smoke", ANTMAZE_SMOKE[method])
    job.run_one(spec, tmp_path, threads=1)
    final = read_record(run_dir(tmp_path, spec))["final"]
    row = reach_row(run_dir(tmp_path, spec))
    assert row["replayed"] == "yes"
    assert row["episodes"] == len(final["returns"]) and row["successes"] == sum(r > 0 for r in final["returns"])
    assert row["steps"] == pytest.approx(final["length_mean"])
    assert row["start_cells"] == pytest.approx(6.0)  # every evaluation starts in the U-maze's start cell
    assert row["path_m"] > 0 and row["fewest_cells"] <= row["start_cells"]
    assert row["closer_m"] == pytest.approx(row["start_m"] - row["closest_m"])
    out, csv = tmp_path / "reach.md", tmp_path / "reach.csv"
    assert main([str(run_dir(tmp_path, spec)), "--out", str(out), "--csv", str(csv)]) == 0
    page = out.read_text()
    assert "from 1 run directory" in page and f"| {method} | antmaze-umaze | 0 | smoke |" in page
    assert pd.read_csv(csv).loc[0, "episodes"] == row["episodes"]
