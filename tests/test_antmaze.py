"""AntMaze U-maze: environment, planner, steering, the forge's recipe, and ODT/IQL on it (issue 10)."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium_robotics", reason="AntMaze needs gymnasium-robotics (pip install -e '.[antmaze]')")

from baselines.sac import TanhGaussianActor  # noqa: E402
from benchmarks.datasets import DatasetUnavailable, get_spec, load_dataset  # noqa: E402
from benchmarks.datasets.antmaze import (  # noqa: E402
    ADROIT_NOTICE,
    GOAL_CELL,
    MAX_EPISODE_STEPS,
    OBS_DIM,
    START_CELL,
    SUCCESS_RADIUS,
    U_MAZE,
    AntMazeTask,
    AntMazeUMaze,
    DirectionalAnt,
    WaypointPlanner,
    action_from_quarter_turn,
    bfs_path,
    cell_to_xy,
    distance_to_walls,
    free_cells,
    quarter_turn_state,
    quat_mul,
    rotate_ant_state,
    sparse_reward,
    steer,
    torso_upright,
    wrap_angle,
    xy_to_cell,
    yaw_of,
)
from benchmarks.datasets.antmaze_forge import (  # noqa: E402
    AntMazeForgeConfig,
    MazeController,
    add_start_cell_counts,
    antmaze_forge_config,
    check_walker_task,
    collect_antmaze,
    from_forge_config,
    make_antmaze,
    start_cell_counts,
    walker_path,
)
from benchmarks.datasets.forge import ForgeError, NumpyActor  # noqa: E402
from rlbase.checkpoint import atomic_write_bytes  # noqa: E402
from rlbase.config import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def env():
    e = AntMazeUMaze()
    yield e
    e.close()


# ----- the environment ------------------------------------------------------------------------
def test_observation_is_d4rl_29_dims_with_xy_first(env):
    obs, info = env.reset(seed=0)
    assert obs.shape == (OBS_DIM,) and env.observation_space.shape == (29,)
    assert env.action_space.shape == (8,)
    np.testing.assert_allclose(obs[:2], info["xy"])
    np.testing.assert_allclose(obs[:2], env._ant.data.qpos[:2] - env.offset)  # D4RL's frame
    np.testing.assert_allclose(obs[2:15], env._ant.data.qpos[2:15])
    np.testing.assert_allclose(obs[15:], env._ant.data.qvel[:14])


def test_sparse_reward_is_one_exactly_within_half_a_metre():
    goal = np.array([-4.0, -4.0])
    for r, expected in ((0.0, 1.0), (0.4999, 1.0), (0.5, 1.0), (0.5001, 0.0), (2.0, 0.0)):
        for angle in np.linspace(0, 2 * np.pi, 7):
            xy = goal + r * np.array([np.cos(angle), np.sin(angle)])
            assert sparse_reward(xy, goal) == expected, (r, angle)


def test_step_reward_and_termination_follow_the_distance(env):
    env.reset(seed=1)
    seen = set()
    for offset in (0.0, 0.3, 0.45, 0.55, 0.7, 1.5):
        env.place(env.goal + np.array([offset, 0.0]))
        _, reward, term, trunc, info = env.step(np.zeros(8))
        assert reward == (1.0 if info["distance"] <= SUCCESS_RADIUS else 0.0)
        assert term == info["success"] == (reward == 1.0) and not trunc
        seen.add(reward)
    assert seen == {0.0, 1.0}


def test_time_limit_is_700_steps_and_falling_does_not_end_an_episode():
    env = get_spec("antmaze-umaze").make_env()
    try:
        env.reset(seed=3)
        env.action_space.seed(3)
        for t in range(1, MAX_EPISODE_STEPS + 1):
            _, reward, term, trunc, _ = env.step(env.action_space.sample())
            assert not term  # random actions never reach the goal 8 m away
            assert trunc == (t == MAX_EPISODE_STEPS)
    finally:
        env.close()


def test_start_and_goal_follow_d4rl(env):
    start_centre, goal_centre = cell_to_xy(START_CELL), cell_to_xy(GOAL_CELL)
    np.testing.assert_allclose(start_centre, [0.0, 0.0])  # D4RL: the ant starts at the origin
    np.testing.assert_allclose(goal_centre, [0.0, 8.0])  # D4RL: goal cell centre (0, 8)
    goals, starts = [], []
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        goals.append(info["goal"])
        starts.append(obs[:2])
    off = np.array(goals) - goal_centre
    assert (off[:, 0] >= 0).all() and (off[:, 0] <= 1.5).all()  # U(0, 1) + U(0, 0.5)
    assert (off[:, 1] >= 0).all() and (off[:, 1] <= 1.5).all()
    assert len({tuple(g) for g in np.round(goals, 6)}) == 40  # redrawn every episode (D4RL v2)
    assert np.abs(np.array(starts) - start_centre).max() <= 0.1 + 1e-9
    assert {xy_to_cell(g) for g in goals} == {GOAL_CELL}


def test_the_simulated_walls_are_d4rls(env):
    """Free cells are free and wall cells are walls in the simulator, at D4RL's coordinates."""
    import mujoco

    model, data = env._ant.model, env._ant.data
    for i, row in enumerate(U_MAZE):
        for j, wall in enumerate(row):
            point = np.append(cell_to_xy((i, j)) + env.offset, 0.5)  # 0.5 m up, in the simulator's frame
            geom = np.zeros(1, np.int32)
            # a vertical ray from 3 m above the point: it hits a block's top (2 m high) only over a wall
            dist = mujoco.mj_ray(model, data, point + [0, 0, 2.5], np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
            hits_block = dist != -1 and dist < 1.5 and model.geom(geom[0]).name.startswith("block_")
            assert hits_block == bool(wall), (i, j)


def test_same_seed_same_episode():
    a, b = AntMazeUMaze(), AntMazeUMaze()
    try:
        oa, _ = a.reset(seed=7)
        ob, _ = b.reset(seed=7)
        np.testing.assert_array_equal(oa, ob)
        acts = np.random.default_rng(0).uniform(-1, 1, (20, 8))
        for act in acts:
            oa = a.step(act)[0]
            ob = b.step(act)[0]
        np.testing.assert_array_equal(oa, ob)
    finally:
        a.close()
        b.close()


def test_diverse_task_draws_starts_and_goals_over_free_cells():
    e = AntMazeUMaze(AntMazeTask(random_start=True, random_goal=True))
    try:
        starts, goals = set(), set()
        for seed in range(60):
            obs, info = e.reset(seed=seed)
            starts.add(xy_to_cell(obs[:2]))
            goals.add(xy_to_cell(info["goal"]))
            assert xy_to_cell(obs[:2]) != xy_to_cell(info["goal"])
        assert starts == goals == set(free_cells(U_MAZE))
        assert all(x >= 0 and y >= 0 for x, y in [cell_to_xy(c) for c in starts])
    finally:
        e.close()


# ----- the planner ------------------------------------------------------------------------------
def _all_pairs_distances(maze):
    free = free_cells(maze)
    dist = {(a, b): (0 if a == b else (1 if abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 else np.inf))
            for a in free for b in free}
    for k, i, j in itertools.product(free, free, free):  # Floyd-Warshall, independent of the BFS
        dist[i, j] = min(dist[i, j], dist[i, k] + dist[k, j])
    return dist


def test_bfs_paths_are_valid_and_shortest_on_the_u_maze():
    dist = _all_pairs_distances(U_MAZE)
    for a, b in itertools.product(free_cells(U_MAZE), repeat=2):
        path = bfs_path(U_MAZE, a, b)
        assert path[0] == a and path[-1] == b
        assert all(U_MAZE[i][j] == 0 for i, j in path)
        assert all(abs(p[0] - q[0]) + abs(p[1] - q[1]) == 1 for p, q in zip(path, path[1:]))
        assert len(path) - 1 == dist[a, b]
    assert bfs_path(U_MAZE, START_CELL, GOAL_CELL) == [(1, 1), (1, 2), (1, 3), (2, 3), (3, 3), (3, 2), (3, 1)]


def test_bfs_rejects_walls_by_name():
    with pytest.raises(ValueError, match=r"goal cell \(2, 1\) is not a free cell"):
        bfs_path(U_MAZE, (1, 1), (2, 1))


def test_waypoints_follow_the_corridor():
    planner = WaypointPlanner()
    goal = cell_to_xy(GOAL_CELL) + [0.3, 0.2]
    east, south, west = 0.0, np.pi / 2, np.pi  # "south" = towards larger rows = +y in D4RL's frame
    for cell, expected in (((1, 1), east), ((1, 2), east), ((1, 3), south), ((2, 3), south), ((3, 3), west),
                           ((3, 2), west)):
        xy = cell_to_xy(cell) + np.array([0.2, 0.3])  # not at the exact centre
        heading = planner.heading(xy, goal)
        assert abs(np.angle(np.exp(1j * (heading - expected)))) < 0.5, (cell, heading)
    np.testing.assert_allclose(planner.waypoint(cell_to_xy(GOAL_CELL), goal), goal)  # in the goal cell: the goal


def _distance_to_walls(xy) -> float:  # written out here, independently of antmaze.distance_to_walls
    walls = [cell_to_xy((i, j)) for i, row in enumerate(U_MAZE) for j, v in enumerate(row) if v == 1]
    return min(float(np.linalg.norm(np.maximum(np.abs(np.asarray(xy) - w) - 2.0, 0.0))) for w in walls)


def test_distance_to_walls_matches_the_geometry():
    rng = np.random.default_rng(0)
    pts = rng.uniform(-6, 14, size=(200, 2))
    np.testing.assert_allclose(distance_to_walls(pts), [_distance_to_walls(p) for p in pts])
    assert distance_to_walls(np.array([0.0, 0.0])) == pytest.approx(2.0)  # the start cell's centre


@pytest.mark.parametrize("start_cell", free_cells(U_MAZE))
def test_a_point_following_the_planner_reaches_the_goal_clear_of_the_walls(start_cell):
    """A point moving 1 m/s along the planner's heading (the ant's speed, none of its dynamics)."""
    planner, goal = WaypointPlanner(), cell_to_xy(GOAL_CELL) + [0.7, 0.4]
    xy = cell_to_xy(start_cell).copy()
    for _ in range(MAX_EPISODE_STEPS):
        if np.linalg.norm(xy - goal) <= SUCCESS_RADIUS:
            break
        h = planner.heading(xy, goal)
        xy = xy + 0.05 * np.array([np.cos(h), np.sin(h)])  # 20 Hz control
        assert _distance_to_walls(xy) >= 0.9, (start_cell, xy)
    assert np.linalg.norm(xy - goal) <= SUCCESS_RADIUS, (start_cell, xy)


# ----- steering ---------------------------------------------------------------------------------
@pytest.fixture
def two_ants():
    """Two Ant-v5 simulations (the first walked 15 random steps from its reset) and the rng that moved it."""
    rng = np.random.default_rng(0)
    e1 = gym.make("Ant-v5", include_cfrc_ext_in_observation=False).unwrapped
    e2 = gym.make("Ant-v5", include_cfrc_ext_in_observation=False).unwrapped
    e1.reset(seed=1)
    e2.reset(seed=1)
    for act in rng.uniform(-1, 1, (15, 8)):
        e1.step(act)
    yield e1, e2, rng
    e1.close()
    e2.close()


def test_rotation_is_a_symmetry_of_the_ant_dynamics(two_ants):
    """Rotate the whole simulated state about z and step both copies: the states stay rotated copies."""
    e1, e2, rng = two_ants
    for angle in (0.7, -2.0, np.pi):
        q, v = e1.data.qpos.copy(), e1.data.qvel.copy()
        rotated = rotate_ant_state(np.concatenate([q[2:], v]), angle)
        c, s = np.cos(angle), np.sin(angle)
        q2 = np.concatenate([[c * q[0] - s * q[1], s * q[0] + c * q[1]], rotated[:13]])
        e2.set_state(q2, rotated[13:].copy())
        for act in rng.uniform(-1, 1, (25, 8)):
            e1.step(act)
            e2.step(act)
        s1 = np.concatenate([e1.data.qpos[2:], e1.data.qvel])
        s2 = np.concatenate([e2.data.qpos[2:], e2.data.qvel])
        np.testing.assert_allclose(rotate_ant_state(s1, angle), s2, atol=1e-6)


def test_steering_maps_the_commanded_heading_to_plus_x():
    rng = np.random.default_rng(1)
    state = rng.normal(size=27)
    q = rng.normal(size=4)
    state[1:5] = q / np.linalg.norm(q)
    for heading in (0.0, 0.4, -1.3, 3.0):
        seen = steer(state, heading)
        # the yaw is measured from the commanded heading, the velocity is expressed in its frame
        assert abs(np.angle(np.exp(1j * (yaw_of(seen[1:5]) - (yaw_of(state[1:5]) - heading))))) < 1e-9
        u = np.array([np.cos(heading), np.sin(heading)])
        assert seen[13] == pytest.approx(state[13:15] @ u)  # velocity along the heading -> along +x
        assert seen[14] == pytest.approx(u[0] * state[14] - u[1] * state[13])
        np.testing.assert_allclose(np.delete(seen, [1, 2, 3, 4, 13, 14]), np.delete(state, [1, 2, 3, 4, 13, 14]))
        np.testing.assert_allclose(rotate_ant_state(seen, heading), state, atol=1e-12)  # inverse
    np.testing.assert_allclose(quat_mul([1, 0, 0, 0], state[1:5]), state[1:5])


@pytest.mark.parametrize("spread", [0.3, 1.5])
def test_directional_ant_draws_headings_within_the_spread_of_the_torso_yaw(spread):
    e = DirectionalAnt(turn_prob=1.0, heading_spread=spread)  # a new heading every step
    try:
        offsets = []
        for seed in range(5):
            e.reset(seed=seed)
            for _ in range(20):
                e.step(np.zeros(8))  # the heading is redrawn after the physics step, from the torso's new yaw
                offsets.append(wrap_angle(e.heading - float(yaw_of(e._env.unwrapped.data.qpos[3:7]))))
        offsets = np.array(offsets)
        assert np.all(np.abs(offsets) <= spread + 1e-9)
        assert offsets.min() < -0.5 * spread and offsets.max() > 0.5 * spread  # spread over the range, both sides
    finally:
        e.close()


@pytest.mark.parametrize("end_when_flipped", [True, False])
def test_directional_ant_ends_an_episode_on_its_back_only_when_asked(end_when_flipped):
    e = DirectionalAnt(turn_prob=0.0, end_when_flipped=end_when_flipped)
    try:
        e.reset(seed=0)
        inner = e._env.unwrapped
        qpos, qvel = inner.data.qpos.copy(), np.zeros_like(inner.data.qvel)
        assert torso_upright(qpos[3:7]) > 0.9
        _, _, term, _, _ = e.step(np.zeros(8))
        assert not term  # upright and healthy
        qpos[2], qpos[3:7] = 0.5, [0.0, 1.0, 0.0, 0.0]  # rolled 180 degrees: on its back, inside Ant-v5's healthy height
        inner.set_state(qpos, qvel)
        assert torso_upright(inner.data.qpos[3:7]) == pytest.approx(-1.0)
        _, _, term, _, _ = e.step(np.zeros(8))
        assert term is end_when_flipped
    finally:
        e.close()


def test_wrap_angle_maps_into_minus_pi_to_pi():
    angles = np.linspace(-10, 10, 101)
    wrapped = np.array([wrap_angle(a) for a in angles])
    assert np.all((wrapped >= -np.pi) & (wrapped < np.pi))
    np.testing.assert_allclose(np.cos(wrapped), np.cos(angles), atol=1e-12)
    np.testing.assert_allclose(np.sin(wrapped), np.sin(angles), atol=1e-12)


def test_walker_training_is_not_resumed_under_another_task(tmp_path):
    task = {"turn_prob": 0.01, "heading_spread": 1.0, "ctrl_cost_weight": 0.5}
    check_walker_task(tmp_path, task)  # a new directory: the task is recorded
    check_walker_task(tmp_path, dict(task))  # the same task: fine
    with pytest.raises(ConfigError, match="heading_spread"):
        check_walker_task(tmp_path, {**task, "heading_spread": 3.0})
    old = tmp_path / "old"
    (old / "sac").mkdir(parents=True)
    (old / "sac" / "ckpt-000000001000.pt").write_bytes(b"")  # checkpoints from before tasks were recorded
    with pytest.raises(ConfigError, match="move that directory aside"):
        check_walker_task(old, task)


def _yawed_obs(yaw: float) -> np.ndarray:
    obs = np.zeros(29)
    obs[3:7] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]  # a rotation by yaw about z
    return obs


class _FixedPlanner:
    def __init__(self, heading):
        self.h = heading

    def heading(self, xy, goal):
        return self.h


def test_controller_shows_the_walker_the_body_axis_nearest_the_command_and_keeps_it():
    controller = MazeController(None, _FixedPlanner(0.0), keep_axis=np.radians(60))
    for yaw, planned, expected_axis in ((0.0, 0.3, 0), (0.0, 1.4, 1), (0.0, -1.4, 3), (0.0, 3.0, 2), (2.0, 0.0, 3)):
        controller.axis, controller.planner.h = None, planned
        heading, axis = controller.command(_yawed_obs(yaw), (0.0, 0.0))
        assert heading == planned and axis == expected_axis, (yaw, planned, axis)
        assert abs(wrap_angle(yaw + axis * np.pi / 2 - planned)) <= np.pi / 4 + 1e-12
    controller.axis, controller.planner.h = None, 0.0
    assert controller.command(_yawed_obs(0.0), None)[1] == 0
    for planned, expected_axis in ((0.9, 0), (1.0, 0), (1.1, 1), (0.9, 1), (0.6, 1), (0.5, 0), (1.0, 0)):
        controller.planner.h = planned  # 60 degrees = 1.047 rad of hysteresis around the current axis
        assert controller.command(_yawed_obs(0.0), None)[1] == expected_axis, planned


def test_a_quarter_turn_relabeling_of_the_legs_is_a_symmetry_of_the_ant_dynamics(two_ants):
    """Describe the same ant by a body frame turned by k x 90 degrees (legs relabeled): stepping
    the relabeled copy with the relabeled actions keeps it the relabeled description of the original."""
    e1, e2, rng = two_ants
    for k in (1, 2, 3):
        q, v = e1.data.qpos.copy(), e1.data.qvel.copy()
        turned = quarter_turn_state(np.concatenate([q[2:], v]), k)
        e2.set_state(np.concatenate([q[:2], turned[:13]]), turned[13:].copy())
        mujoco.mj_forward(e1.model, e1.data)  # geom positions of the current state (set_state did e2's)
        gap = np.linalg.norm(e1.data.geom_xpos[:, None] - e2.data.geom_xpos[None], axis=-1)
        assert gap.min(axis=1).max() < 1e-9 and gap.min(axis=0).max() < 1e-9  # the same bodies, same places
        turn = wrap_angle(yaw_of(turned[1:5]) - yaw_of(q[3:7]) - k * np.pi / 2)  # exact for an upright torso
        assert abs(turn) < 0.05
        for act in rng.uniform(-1, 1, (25, 8)):
            e1.step(action_from_quarter_turn(act, k))
            e2.step(act)
        s1 = quarter_turn_state(np.concatenate([e1.data.qpos[2:], e1.data.qvel]), k)
        s2 = np.concatenate([e2.data.qpos[2:], e2.data.qvel])
        s1[1:5] *= np.sign(s1[1:5] @ s2[1:5])  # q and -q are the same orientation
        np.testing.assert_allclose(s1, s2, atol=1e-8)
    x = rng.normal(size=(3, 27))
    np.testing.assert_allclose(quarter_turn_state(quarter_turn_state(x, 1), 3)[:, 5:], x[:, 5:], atol=1e-12)
    np.testing.assert_allclose(action_from_quarter_turn(x[:, :8], 4), x[:, :8])


def test_walker_warm_start_continues_the_ant_forge_sac_or_says_how_to_make_it(tmp_path):
    import functools

    from baselines.sac import SACAgent, sac_config
    from benchmarks.datasets.antmaze_forge import warm_start_walker
    from rlbase.checkpoint import CheckpointManager

    cfg = antmaze_forge_config("antmaze-umaze")
    make = functools.partial(DirectionalAnt, max_episode_steps=20)
    sac = sac_config("antmaze-umaze", "smoke", 0, {"hidden_dim": 16, "warmup_steps": 10, "online_samples": 60})
    with pytest.raises(DatasetUnavailable, match="make ant-medium --train"):
        warm_start_walker(SACAgent(sac, make, None, progress=False), cfg, tmp_path)
    ant = SACAgent(sac, make, None, progress=False)
    for _ in range(40):  # some training, so that the state is not the initial one
        ant.env_step()
    CheckpointManager(tmp_path / "forge" / "ant-seed0" / "sac").save({"agent": ant.state_dict(), "curve": []}, 40)
    walker = SACAgent(dataclasses.replace(sac, seed=5), make, None, progress=False)
    row = warm_start_walker(walker, cfg, tmp_path)
    assert row["phase"] == "warm start" and row["online_samples"] == 40 == walker.counters.online_samples
    for a, b in zip(ant.actor.parameters(), walker.actor.parameters(), strict=True):
        assert torch.equal(a, b)
    assert walker.buffer.size == ant.buffer.size == 40 and walker.alpha == pytest.approx(ant.alpha)


def test_directional_ant_pays_speed_only_up_to_max_speed():
    e = DirectionalAnt(turn_prob=0.0, max_speed=0.05)
    try:
        e.reset(seed=1)
        rng = np.random.default_rng(1)
        capped = 0
        for _ in range(30):
            act = rng.uniform(-1, 1, 8)
            _, reward, term, _, info = e.step(act)
            paid = min(info["velocity_along"], 0.05)
            capped += info["velocity_along"] > 0.05
            assert reward == pytest.approx(paid + 1.0 - 0.5 * float(np.square(act).sum()), rel=1e-6)
            if term:
                break
        assert capped > 0  # the cap was exercised
    finally:
        e.close()


@pytest.mark.parametrize("ctrl_cost_weight", [0.5, 0.1])
def test_directional_ant_rewards_velocity_along_the_command(ctrl_cost_weight):
    e = DirectionalAnt(turn_prob=0.0, ctrl_cost_weight=ctrl_cost_weight)
    try:
        obs, info = e.reset(seed=0)
        assert obs.shape == (27,)
        inner = e._env.unwrapped
        u = np.array([np.cos(e.heading), np.sin(e.heading)])
        rng = np.random.default_rng(0)
        for _ in range(10):
            before = inner.data.body("torso").xpos[:2].copy()  # Ant-v5's x_velocity is of the torso body
            act = rng.uniform(-1, 1, 8)
            obs, reward, term, trunc, info = e.step(act)
            along = (inner.data.body("torso").xpos[:2] - before) / inner.dt @ u
            assert info["velocity_along"] == pytest.approx(along, rel=1e-6, abs=1e-9)
            assert inner._ctrl_cost_weight == ctrl_cost_weight
            assert reward == pytest.approx(along + 1.0 - ctrl_cost_weight * float(np.square(act).sum()),
                                           rel=1e-6)
            state = np.concatenate([inner.data.qpos[2:15], inner.data.qvel[:14]])
            np.testing.assert_allclose(obs, steer(state, e.heading))
    finally:
        e.close()


# ----- the forge's recipe: controller, collection, files ----------------------------------------
def _tiny_walker(seed: int = 0) -> TanhGaussianActor:
    torch.manual_seed(seed)
    lo, hi = -np.ones(8, np.float32), np.ones(8, np.float32)
    return TanhGaussianActor(27, 8, 16, 2, -5.0, 2.0, lo, hi)


def _save_walker(root, actor: TanhGaussianActor) -> None:
    record = {"actor": actor.state_dict(), "obs_dim": 27, "act_dim": 8, "hidden_dim": 16, "n_hidden": 2,
              "log_std_min": -5.0, "log_std_max": 2.0, "action_low": -np.ones(8, np.float32),
              "action_high": np.ones(8, np.float32), "sac_steps": 0, "sac_wall_time": 0.0,
              "sac_config": {"note": "untrained (test)"}}
    buf = io.BytesIO()
    torch.save(record, buf)
    atomic_write_bytes(walker_path(0, root), buf.getvalue())


def test_forge_cli_options_map_onto_the_antmaze_recipe():
    from benchmarks.datasets.forge import forge_config

    cfg = from_forge_config(forge_config("antmaze-umaze-diverse", {"size": 5000, "sac_max_steps": 1000,
                                                                   "target_score": 50.0, "seed": 2}))
    assert (cfg.size, cfg.walker_max_steps, cfg.walker_threshold, cfg.seed, cfg.diverse) == (5000, 1000, 50.0, 2, True)
    default = from_forge_config(forge_config("antmaze-umaze"))
    assert default == AntMazeForgeConfig(name="antmaze-umaze") and not default.diverse
    with pytest.raises(ValueError, match="walker_treshold"):
        antmaze_forge_config("antmaze-umaze", {"walker_treshold": 1})


def test_the_packaged_walker_steered_by_body_axes_reaches_the_goal():
    """The committed walker (benchmarks/datasets/policies/ant-walker-seed0.pt) with the recipe's
    controller, action noise included: 4 seeded evaluation episodes (about 2 s in all); 4 of 4 reach
    the goal here (the card's 50-episode rate is 62%)."""
    from benchmarks.datasets.antmaze_forge import (
        controller_success,
        make_controller,
        packaged_walker_path,
    )
    from benchmarks.datasets.forge import load_first_actor

    actor, _ = load_first_actor([packaged_walker_path(0)])
    result = controller_success(make_controller(actor, AntMazeForgeConfig()), episodes=4, seed=0)
    assert result["success_rate"] >= 0.5, result


def test_numpy_walker_is_the_actor_mean():
    actor = _tiny_walker()
    x = np.random.default_rng(0).normal(size=(5, 27))
    np.testing.assert_allclose(NumpyActor(actor).mean(x), actor.mean_action(torch.as_tensor(x, dtype=torch.float32))
                               .detach().numpy(), atol=1e-5)


def test_collection_is_seeded_and_flags_episode_ends():
    ctrl = MazeController(NumpyActor(_tiny_walker()), action_noise=0.2)
    a, stats = collect_antmaze(ctrl, 900, seed=3, diverse=True, episode_steps=200, progress=False)
    b, _ = collect_antmaze(ctrl, 900, seed=3, diverse=True, episode_steps=200, progress=False)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    ends = np.flatnonzero(a["terminals"] | a["timeouts"])
    np.testing.assert_array_equal(ends, [199, 399, 599, 799])  # 200-step episodes, a 100-step tail
    np.testing.assert_array_equal(a["rewards"], a["terminals"].astype(np.float32))  # returns are 0/1
    assert stats["episodes"] == 4
    np.testing.assert_allclose(a["observations"][:, :2], a["infos/qpos"][:, :2], atol=1e-6)
    not_last = np.setdiff1d(np.arange(899), ends)
    np.testing.assert_array_equal(a["next_observations"][not_last], a["observations"][not_last + 1])
    starts = {xy_to_cell(a["observations"][i, :2]) for i in [0, 200, 400, 600, 800]}
    assert len(starts) > 1  # diverse: random start cells
    assert (np.abs(a["actions"]) <= 1).all()


def test_made_dataset_round_trips_through_load_dataset(tmp_path):
    with pytest.raises(DatasetUnavailable, match="make antmaze-umaze"):
        load_dataset("antmaze-umaze", data_dir=tmp_path)
    _save_walker(tmp_path, _tiny_walker())
    cfg = antmaze_forge_config("antmaze-umaze", {"size": 1500, "controller_eval_episodes": 1})
    card = make_antmaze(get_spec("antmaze-umaze"), cfg, root=tmp_path, progress=False)
    data = load_dataset("antmaze-umaze", data_dir=tmp_path)
    assert data.provenance["source"] == "generated"
    traj = data.trajectories
    assert traj.obs_dim == 29 and traj.act_dim == 8 and len(traj) == card["trajectories"] == 2
    assert traj.num_steps == 1400 and data.provenance["dropped_tail_steps"] == 100
    assert card["gymnasium_robotics"] and card["controller_success"]["episodes"] == 1
    assert 0.0 <= card["data_success_rate"] <= 1.0
    np.testing.assert_allclose(data.score_fn(np.array([0.0, 1.0])), [0.0, 100.0])  # 100 x success rate
    assert (tmp_path / "antmaze-umaze.card.md").read_text().count("data success rate") == 1
    again = make_antmaze(get_spec("antmaze-umaze"), cfg, root=tmp_path, progress=False)  # cached
    assert again["sha256"] == card["sha256"]
    # umaze: every trajectory starts in the evaluation start cell
    assert card["start_cell"]["from_start_cell"] == card["start_cell"]["trajectories"] == 2
    assert "starting in the evaluation start cell" in (tmp_path / "antmaze-umaze.card.md").read_text()
    # a card made before cards counted them gets them back from the file, once
    path = tmp_path / "antmaze-umaze.card.json"
    path.write_text(json.dumps({k: v for k, v in card.items() if k != "start_cell"}))
    assert add_start_cell_counts("antmaze-umaze", tmp_path)
    assert json.loads(path.read_text())["start_cell"] == card["start_cell"]
    assert not add_start_cell_counts("antmaze-umaze", tmp_path)
    path.write_text(json.dumps({**{k: v for k, v in card.items() if k != "start_cell"}, "trajectories": 3}))
    with pytest.raises(ForgeError, match="not the file the card was made with"):  # another make's card
        add_start_cell_counts("antmaze-umaze", tmp_path)
    assert "start_cell" not in json.loads(path.read_text())


def test_start_cell_counts_follow_d4rls_start_cell_and_the_trajectory_ends():
    # four complete trajectories of 2 steps and a 1-step tail; the start cell spans (0, 0) +- 2 m
    first_xy = [(0.3, -0.5), (0.0, 8.0), (1.9, 1.9), (2.1, 0.0)]  # start, goal cell, start (corner), next cell
    xy = np.array([p for q in first_xy for p in (q, (9.0, 9.0))] + [(0.0, 0.0)])
    terminals = np.array([0, 1, 0, 1, 0, 0, 0, 1, 0], dtype=bool)  # the 1st, 2nd and 4th reach the goal
    timeouts = np.array([0, 0, 0, 0, 0, 1, 0, 0, 0], dtype=bool)
    assert start_cell_counts({"observations": xy, "terminals": terminals, "timeouts": timeouts}) == {
        "trajectories": 4, "successful": 3, "from_start_cell": 2, "successful_from_start_cell": 1}


def test_registry_makes_the_antmaze_env_and_smoke_data(tmp_path):
    for name in ("antmaze-umaze", "antmaze-umaze-diverse"):
        spec = get_spec(name)
        assert spec.available and spec.max_episode_steps == 700
        assert spec.env_versions()["gymnasium_robotics"]
    data = load_dataset("antmaze-umaze-diverse", size="smoke", data_dir=tmp_path)
    assert data.provenance["source"] == "generated-smoke"
    assert data.trajectories.obs_dim == 29


# ----- ODT and IQL on the sparse-reward path ----------------------------------------------------
@pytest.mark.parametrize("method", ["odt", "iql"])
def test_smoke_runs_on_antmaze(method, tmp_path):
    from benchmarks.methods import build_agent, method_config

    data = load_dataset("antmaze-umaze", size="smoke", data_dir=tmp_path)
    cfg = method_config(method, "antmaze-umaze", "smoke", seed=0)
    if method == "odt":
        assert (cfg.rtg_scale, cfg.g_eval, cfg.online.g_online) == (1.0, 1.0, 2.0)
        assert cfg.model.positional_embedding and cfg.model.max_ep_len == 700
    else:
        assert (cfg.domain, cfg.expectile, cfg.temperature) == ("antmaze", 0.9, 10.0)
    agent = build_agent(method, cfg, data.trajectories, data.make_env, data.score_fn, progress=False)
    rows = []
    try:
        agent.pretrain(log=rows.append)
        agent.finetune(log=rows.append)
        final = agent.evaluate()
    finally:
        agent.close()
    if method == "iql":
        assert agent.reward_scale == (1.0, -1.0)  # AntMaze rewards shifted by -1
    assert rows and all(np.isfinite(r["score_mean"]) for r in rows if "score_mean" in r)
    for row in [final] + [r for r in rows if "returns" in r]:
        assert set(np.asarray(row["returns"]).tolist()) <= {0.0, 1.0}  # sparse: reached or not
        assert row["score_mean"] == pytest.approx(100 * np.mean(row["returns"]))


def test_importing_gymnasium_robotics_holds_back_its_adroit_notice_and_nothing_else(tmp_path):
    """A stand-in package that writes the library's Adroit notice and one other line to stderr on
    import: the notice is dropped, the other line reaches stderr."""
    package = tmp_path / "gymnasium_robotics"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import sys\n__version__ = 'stand-in'\n"
        f"print({ADROIT_NOTICE + ' reward functions were updated'!r}, file=sys.stderr)\n"
        "print('another warning', file=sys.stderr)\n")
    repo = Path(__file__).resolve().parent.parent
    code = "from benchmarks.datasets.antmaze import robotics_version; print(robotics_version())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=repo,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{repo}"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stand-in"
    assert "another warning" in out.stderr and "AdroitHand" not in out.stderr
