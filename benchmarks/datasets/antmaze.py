"""AntMaze U-maze for the harness: the environment, the maze grid, a waypoint planner, yaw steering.

D4RL's ``antmaze-umaze-v2`` / ``antmaze-umaze-diverse-v2`` evaluation environment, rebuilt on
gymnasium-robotics' ``AntMaze_UMaze-v5`` model (the gymnasium Ant with the maze blocks added):

* observation: 29 dims, as D4RL's AntMaze (``expose_all_qpos=True``, evaluation mode, no goal in
  the observation): ``qpos[:15]`` (torso x, y, z, orientation quaternion w x y z, 8 joint angles)
  then ``qvel[:14]``; no contact forces;
* reward: D4RL's sparse reward, 1.0 when the torso's (x, y) is within 0.5 of the goal, else 0
  (gymnasium-robotics uses 0.45; we use D4RL's 0.5);
* episode end: terminated when the goal is reached (D4RL's evaluation mode), truncated at 700
  steps (D4RL's ``max_episode_steps`` for the U-maze); falling over does not end an episode
  (D4RL ignores the ant's health check in the maze). So a return is 1 (reached) or 0, and the
  normalized score is 100 x success rate (D4RL's reference min 0, max 1);
* start: the centre of cell (1, 1), (0, 0), plus D4RL's ant reset noise (qpos + U(-0.1, 0.1),
  qvel + 0.1 N(0, 1)); goal: the centre of cell (3, 1), (0, 8), plus D4RL's goal noise
  (U(0, 1) + U(0, 0.5) per coordinate, clipped at 0), drawn per episode as D4RL's v2
  environments do;
* ``info``: ``success`` (goal reached at this step), ``goal``, ``xy``, ``distance``.

Coordinates are D4RL's. The maze is D4RL's ``U_MAZE`` (5x5 cells of 4 m, rows and columns as
D4RL indexes them); cell (row, col) has its centre at (4 col - 4, 4 row - 4), so the start cell
is the origin. gymnasium-robotics builds a maze centred on the origin with y *falling* with the
row index; we hand it the map upside down (the U is symmetric, so the walls are the same), which
makes its world a pure translation of D4RL's, by (-4, -4); observations, goals and ``infos/qpos``
are reported in D4RL's frame. A real D4RL ``antmaze-umaze-v2`` file therefore fits this
environment column for column.

Steering. Ant dynamics are invariant to a rotation of the world about the vertical axis: the
torso orientation composes with the rotation, the world-frame linear velocity rotates with it,
and the free joint's angular velocity (MuJoCo keeps it in the body frame) and the joint
angles are unchanged. :func:`rotate_ant_state` applies such a rotation to the 27-dim ant state,
so a policy that walks along +x can be steered towards any heading by feeding it the state
rotated by minus that heading. The ant's body is also symmetric under a quarter turn about its
own vertical axis (legs relabeled, some ankle signs flipped: :func:`quarter_turn_state`), so the
walker never has to walk more than 45 degrees off its body's axes, nor turn at a maze corner: the
controller describes the ant with whichever of its four body axes is nearest the command.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections import deque
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

U_MAZE: tuple[tuple[int, ...], ...] = (  # D4RL's U_MAZE; 1 = wall, 0 = free
    (1, 1, 1, 1, 1),
    (1, 0, 0, 0, 1),
    (1, 1, 1, 0, 1),
    (1, 0, 0, 0, 1),
    (1, 1, 1, 1, 1),
)
CELL_SIZE = 4.0  # D4RL's maze_size_scaling
START_CELL = (1, 1)  # D4RL's 'r' cell
GOAL_CELL = (3, 1)  # D4RL's 'g' cell
SUCCESS_RADIUS = 0.5  # D4RL's sparse-reward radius
MAX_EPISODE_STEPS = 700  # D4RL's time limit for the U-maze
OBS_DIM = 29  # qpos[:15] + qvel[:14]
ANT_STATE_DIM = 27  # qpos[2:15] + qvel[:14]: the ant without its x, y


# the start of a notice gymnasium-robotics prints to stderr on import, about its Adroit tasks
ADROIT_NOTICE = "AdroitHandRelocateDense-v1, AdroitHandHammerDense-v1, AdroitHandDoorDense-v1"


def import_robotics():
    """The ``gymnasium_robotics`` module. Its import prints a notice on the Adroit hand tasks'
    rewards to stderr (environments the harness never uses) into every log and status: that line
    is held back; anything else the import writes passes through."""
    if "gymnasium_robotics" in sys.modules:
        return sys.modules["gymnasium_robotics"]
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            import gymnasium_robotics
    finally:
        sys.stderr.write("".join(line for line in held.getvalue().splitlines(keepends=True)
                                 if not line.startswith(ADROIT_NOTICE)))
    return gymnasium_robotics


def antmaze_available() -> bool:
    """True when gymnasium-robotics (the ``antmaze`` extra) is importable."""
    try:
        import_robotics()
    except ImportError:
        return False
    return True


def robotics_version() -> str:
    return import_robotics().__version__


# ============================================================================ maze geometry (pure)
def cell_to_xy(cell, start_cell=START_CELL, cell_size: float = CELL_SIZE) -> np.ndarray:
    """Centre of cell (row, col) in D4RL's frame: the start cell's centre is the origin, y grows with the row."""
    return np.array([(cell[1] - start_cell[1]) * cell_size, (cell[0] - start_cell[0]) * cell_size], dtype=np.float64)


def xy_to_cell(xy, start_cell=START_CELL, cell_size: float = CELL_SIZE) -> tuple[int, int]:
    """The (row, col) of the cell containing (x, y) (D4RL's frame; a cell spans its centre +- 2 m)."""
    return (int(math.floor(xy[1] / cell_size + 0.5)) + start_cell[0],
            int(math.floor(xy[0] / cell_size + 0.5)) + start_cell[1])


def free_cells(maze=U_MAZE) -> list[tuple[int, int]]:
    return [(i, j) for i, row in enumerate(maze) for j, v in enumerate(row) if v == 0]


def simulator_offset(maze=U_MAZE, start_cell=START_CELL, cell_size: float = CELL_SIZE) -> np.ndarray:
    """Simulator (gymnasium-robotics, map flipped upside down) minus D4RL coordinates: a constant."""
    rows, cols = len(maze), len(maze[0])
    flipped_row = rows - 1 - start_cell[0]  # the start cell's row in the flipped map
    sim = np.array([(start_cell[1] + 0.5) * cell_size - cols / 2 * cell_size,
                    rows / 2 * cell_size - (flipped_row + 0.5) * cell_size])
    return sim - cell_to_xy(start_cell, start_cell, cell_size)


def bfs_path(maze, start: tuple[int, int], goal: tuple[int, int]) -> list[tuple[int, int]]:
    """A shortest 4-connected path of free cells from ``start`` to ``goal`` (both included).

    Raises ValueError naming the cell when either is a wall or outside, or no path exists.
    """
    rows, cols = len(maze), len(maze[0])
    for name, (i, j) in (("start", start), ("goal", goal)):
        if not (0 <= i < rows and 0 <= j < cols) or maze[i][j] != 0:
            raise ValueError(f"{name} cell {(i, j)} is not a free cell of the maze; free cells: {free_cells(maze)}")
    parent: dict[tuple[int, int], tuple[int, int] | None] = {tuple(start): None}
    queue = deque([tuple(start)])
    while queue:
        cell = queue.popleft()
        if cell == tuple(goal):
            path = [cell]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]])
            return path[::-1]
        i, j = cell
        for nxt in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)):
            if 0 <= nxt[0] < rows and 0 <= nxt[1] < cols and maze[nxt[0]][nxt[1]] == 0 and nxt not in parent:
                parent[nxt] = cell
                queue.append(nxt)
    raise ValueError(f"no path from cell {start} to cell {goal}")


def distance_to_walls(points, maze=U_MAZE, cell_size: float = CELL_SIZE) -> np.ndarray:
    """Distance (m) from each (x, y) in ``points`` (shape (..., 2), D4RL's frame) to the nearest wall block."""
    walls = np.array([cell_to_xy((i, j), cell_size=cell_size)
                      for i, row in enumerate(maze) for j, v in enumerate(row) if v == 1])
    gap = np.abs(np.asarray(points, dtype=np.float64)[..., None, :] - walls) - cell_size / 2
    return np.linalg.norm(np.maximum(gap, 0.0), axis=-1).min(axis=-1)


class WaypointPlanner:
    """The point to steer to: a shortest cell path (BFS), shortened by line of sight with a wall clearance.

    The waypoints are the centres of the cells on a shortest path from the ant's cell to the
    goal's cell, then the goal itself; the planner re-plans from the ant's current cell at
    every step, as D4RL's navigation policy does. It aims at the farthest waypoint whose straight
    segment from the ant stays ``clearance`` metres clear of every wall block (so it goes
    straight down a corridor and does not cut corners); if none is, it aims at the centre of the
    ant's own cell (it has drifted towards a wall), or at the next cell's centre once within
    ``lookahead`` of its own. D4RL aimed at the next cell's centre, switching cells at their
    centres (its ``_xy_to_rowcol`` is offset by half a cell), which also avoids cutting corners.
    The clearance leaves a band ``4 - 2 clearance`` metres wide down a 4 m corridor: with 1.5 m
    an ant drifting 0.75 m off the centre line was sent back to its cell's centre and froze
    (traced); the noise-free controller reached the goal in 1 of 10 episodes with 1.5 m and in
    8 of 10 with 1.0 m (the same walker, quarter-turn steering).
    """

    def __init__(self, maze=U_MAZE, cell_size: float = CELL_SIZE, clearance: float = 1.0, lookahead: float = 1.0,
                 spacing: float = 0.25):
        self.maze, self.cell_size = maze, cell_size
        self.clearance, self.lookahead, self.spacing = clearance, lookahead, spacing
        self._free = set(free_cells(maze))

    def _clear(self, a: np.ndarray, b: np.ndarray) -> bool:
        n = max(2, int(np.ceil(np.linalg.norm(b - a) / self.spacing)) + 1)
        pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
        return bool(distance_to_walls(pts, self.maze, self.cell_size).min() >= self.clearance)

    def waypoint(self, xy, goal_xy) -> np.ndarray:
        xy = np.asarray(xy, dtype=np.float64)
        goal_xy = np.asarray(goal_xy, dtype=np.float64)
        here = xy_to_cell(xy, cell_size=self.cell_size)
        goal_cell = xy_to_cell(goal_xy, cell_size=self.cell_size)
        if here not in self._free:  # pushed into a wall's footprint by contact: use the nearest free cell
            here = min(self._free, key=lambda c: float(np.linalg.norm(cell_to_xy(c, cell_size=self.cell_size) - xy)))
        path = bfs_path(self.maze, here, goal_cell)
        if len(path) == 1:
            return goal_xy
        targets = [cell_to_xy(c, cell_size=self.cell_size) for c in path[1:-1]] + [goal_xy]
        for target in reversed(targets):
            if self._clear(xy, target):
                return target
        own = cell_to_xy(here, cell_size=self.cell_size)
        return targets[0] if np.linalg.norm(own - xy) < self.lookahead else own

    def heading(self, xy, goal_xy) -> float:
        """The world angle (rad) from the ant's position to its current waypoint."""
        d = self.waypoint(xy, goal_xy) - np.asarray(xy, dtype=np.float64)
        return float(math.atan2(d[1], d[0]))


# ============================================================================ yaw steering (pure)
def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions in MuJoCo's (w, x, y, z) order (batched on leading dims)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def yaw_of(quat: np.ndarray) -> np.ndarray:
    """Heading (rad) of the body x axis projected on the ground, from a (w, x, y, z) quaternion."""
    w, x, y, z = np.moveaxis(np.asarray(quat, dtype=np.float64), -1, 0)
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def rotate_ant_state(state: np.ndarray, angle) -> np.ndarray:
    """The 27-dim ant state (qpos[2:15], qvel[:14]) seen in a world rotated by ``angle`` about z.

    Changes the orientation quaternion (index 1..4) and the linear velocity (13, 14); height,
    joint angles, vertical and angular velocity (body frame in MuJoCo) and joint velocities do
    not change. Works on one state or a batch; ``angle`` broadcasts.
    """
    s = np.array(state, dtype=np.float64, copy=True)
    angle = np.asarray(angle, dtype=np.float64)
    half = angle / 2.0
    rot = np.stack([np.cos(half), np.zeros_like(half), np.zeros_like(half), np.sin(half)], axis=-1)
    s[..., 1:5] = quat_mul(rot, s[..., 1:5])
    c, si = np.cos(angle), np.sin(angle)
    vx, vy = s[..., 13].copy(), s[..., 14].copy()
    s[..., 13], s[..., 14] = c * vx - si * vy, si * vx + c * vy
    return s


# The ant's body is symmetric under a quarter turn about its own vertical axis: relabel the legs
# (leg i+1 takes leg i's place) and the same physical ant is described by a body frame turned by
# 90 degrees. Ankle axes of neighbouring legs are mirror images, so some ankle angles change sign.
# Joint order in qpos/qvel: hip_1, ankle_1, hip_2, ankle_2, hip_3, ankle_3, hip_4, ankle_4.
_QUARTER_SOURCE = np.array([2, 3, 4, 5, 6, 7, 0, 1])  # new joint j is old joint _QUARTER_SOURCE[j]
_QUARTER_SIGN = np.array([1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0])
_ACTION_OF_JOINT = np.array([2, 3, 4, 5, 6, 7, 0, 1])  # actuators: hip_4, ankle_4, hip_1, ankle_1, ...


def quarter_turn_joints(joints: np.ndarray, k: int) -> np.ndarray:
    """Joint angles (or velocities, torques) in qpos order, relabeled for a body frame turned by k x 90 degrees."""
    out = np.array(joints, dtype=np.float64, copy=True)
    for _ in range(k % 4):
        out = out[..., _QUARTER_SOURCE] * _QUARTER_SIGN
    return out


def quarter_turn_state(state: np.ndarray, k: int) -> np.ndarray:
    """The 27-dim ant state described with its body frame turned by ``k`` quarter turns about body z.

    The physical ant is the same (same geometry, same motion); the torso quaternion gains the
    body-frame turn, the body-frame angular velocity (16:19) is expressed in the turned frame, and
    the legs are relabeled. Height and world-frame linear velocity do not change.
    """
    s = np.array(state, dtype=np.float64, copy=True)
    turn = (k % 4) * math.pi / 2
    rot = np.array([math.cos(turn / 2), 0.0, 0.0, math.sin(turn / 2)])
    s[..., 1:5] = quat_mul(s[..., 1:5], rot)
    c, si = math.cos(turn), math.sin(turn)
    wx, wy = s[..., 16].copy(), s[..., 17].copy()
    s[..., 16], s[..., 17] = c * wx + si * wy, -si * wx + c * wy
    s[..., 5:13] = quarter_turn_joints(s[..., 5:13], k)
    s[..., 19:27] = quarter_turn_joints(s[..., 19:27], k)
    return s


def action_from_quarter_turn(action: np.ndarray, k: int) -> np.ndarray:
    """The real ant's action (actuator order) for an ``action`` chosen for its ``k``-quarter-turned description."""
    joints = np.asarray(action, dtype=np.float64)[..., _ACTION_OF_JOINT]  # actuator order -> qpos order
    real = quarter_turn_joints(joints, -k % 4)
    out = np.empty_like(real)
    out[..., _ACTION_OF_JOINT] = real
    return out


def nearest_quarter_turn(yaw: float, heading: float) -> int:
    """The k in 0..3 whose turned body frame points closest to ``heading`` (its yaw is yaw + k x 90 degrees)."""
    return int(np.argmin([abs(wrap_angle(yaw + k * math.pi / 2 - heading)) for k in range(4)]))


def torso_upright(quat) -> float:
    """The world-z component of the body's z axis for a (w, x, y, z) quaternion: 1 upright, -1 on its back."""
    w, x, y, z = (float(v) for v in quat)
    return 1.0 - 2.0 * (x * x + y * y)


def wrap_angle(angle: float) -> float:
    """``angle`` in [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def steer(state: np.ndarray, heading) -> np.ndarray:
    """What a +x walker must see to walk along world ``heading``: the state rotated by -heading."""
    return rotate_ant_state(state, -np.asarray(heading, dtype=np.float64))


# ============================================================================ the environment
@dataclass(frozen=True)
class AntMazeTask:
    """Where episodes start and which goal they are scored against."""

    random_start: bool = False  # False: D4RL's start cell; True: a uniformly drawn free cell
    random_goal: bool = False  # False: D4RL's goal cell; True: a uniformly drawn free cell (not the start's)
    success_radius: float = SUCCESS_RADIUS
    terminate_at_goal: bool = True  # D4RL's evaluation mode


def sparse_reward(xy, goal, radius: float = SUCCESS_RADIUS) -> float:
    """D4RL's sparse AntMaze reward: 1.0 when ``xy`` is within ``radius`` (inclusive) of ``goal``."""
    return 1.0 if float(np.linalg.norm(np.asarray(xy, np.float64) - np.asarray(goal, np.float64))) <= radius else 0.0


def d4rl_goal(cell, rng: np.random.Generator, cell_size: float = CELL_SIZE) -> np.ndarray:
    """D4RL's goal in ``cell``: its centre + U(0, s/4) + U(0, s/8) per coordinate, clipped at 0."""
    xy = cell_to_xy(cell, cell_size=cell_size) + rng.uniform(0, cell_size * 0.25, 2)
    xy = xy + rng.uniform(0, 0.5, 2) * 0.25 * cell_size
    return np.maximum(xy, 0.0)


def d4rl_reset_location(cell, rng: np.random.Generator, cell_size: float = CELL_SIZE) -> np.ndarray:
    """D4RL's random start (``non_zero_reset``) in ``cell``: its centre + U(0, s/4) per coordinate, clipped at 0."""
    return np.maximum(cell_to_xy(cell, cell_size=cell_size) + rng.uniform(0, 0.5, 2) * 0.5 * cell_size, 0.0)


class AntMazeUMaze(gym.Env):
    """D4RL's AntMaze U-maze evaluation environment (see the module docstring); Box(29) observations."""

    metadata = {"render_modes": []}

    def __init__(self, task: AntMazeTask = AntMazeTask(), maze=U_MAZE):
        import_robotics()
        from gymnasium_robotics.envs.maze.ant_maze_v5 import AntMazeEnv

        self.task, self.maze = task, tuple(tuple(r) for r in maze)
        # the maze model (blocks + ant) of gymnasium-robotics, built from the map upside down so
        # that its world is D4RL's shifted by ``offset``; we step its ant directly and keep start,
        # goal, reward and termination here (D4RL's rules, not gymnasium-robotics')
        self._maze_env = AntMazeEnv(maze_map=[list(r) for r in self.maze[::-1]], reward_type="sparse",
                                    continuing_task=True, reset_target=False)
        self.offset = simulator_offset(self.maze)
        try:  # gymnasium-robotics leaves its generated model file in the temp directory; it is loaded now
            os.remove(self._maze_env.tmp_xml_file_path)
        except OSError:
            pass
        self._ant = self._maze_env.ant_env
        self.action_space = self._ant.action_space
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(OBS_DIM,), dtype=np.float64)
        self._free = free_cells(self.maze)
        self.goal = cell_to_xy(GOAL_CELL)
        self.start_cell = START_CELL

    # ----- state access -----------------------------------------------------------------------
    def qpos(self) -> np.ndarray:
        """The ant's qpos[:15] with x, y in D4RL's frame."""
        q = self._ant.data.qpos[:15].copy()
        q[:2] -= self.offset
        return q

    def qvel(self) -> np.ndarray:
        return self._ant.data.qvel[:14].copy()

    def _obs(self) -> np.ndarray:
        return np.concatenate([self.qpos(), self.qvel()]).astype(np.float64)

    @property
    def xy(self) -> np.ndarray:
        return self._ant.data.qpos[:2] - self.offset

    def set_goal(self, goal_xy) -> None:
        self.goal = np.asarray(goal_xy, dtype=np.float64).copy()
        self._maze_env.goal = self.goal + self.offset  # the red target sphere (rendering only)
        self._maze_env.update_target_site_pos()

    def sample_goal(self, cell=None) -> np.ndarray:
        """A goal in ``cell`` (default: the task's) with D4RL's noise."""
        if cell is None:
            cell = self._free[self.np_random.integers(len(self._free))] if self.task.random_goal else GOAL_CELL
        return d4rl_goal(cell, self.np_random)

    def place(self, xy) -> None:
        """Put the ant at rest at ``xy`` (D4RL's frame) in its initial pose (tests, demos)."""
        qpos = self._ant.init_qpos.copy()
        qpos[:2] = np.asarray(xy, dtype=np.float64) + self.offset
        self._ant.set_state(qpos, np.zeros_like(self._ant.init_qvel))

    def _info(self) -> dict:
        xy = self.xy
        return {"success": sparse_reward(xy, self.goal, self.task.success_radius) == 1.0, "goal": self.goal.copy(),
                "xy": xy, "distance": float(np.linalg.norm(xy - self.goal))}

    # ----- the gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._maze_env.reset(seed=None if seed is None else int(seed))  # seeds its model/RNG once
        options = options or {}
        goal_cell = options.get("goal_cell")
        start_cell = options.get("start_cell")
        self.set_goal(options["goal"] if "goal" in options else self.sample_goal(goal_cell))
        random_start = start_cell is None and self.task.random_start
        if start_cell is None:
            if random_start:
                here = xy_to_cell(self.goal)
                choices = [c for c in self._free if c != here] or self._free
                start_cell = choices[self.np_random.integers(len(choices))]
            else:
                start_cell = START_CELL
        self.start_cell = tuple(start_cell)
        ant = self._ant
        qpos = ant.init_qpos.copy()
        qvel = ant.init_qvel.copy()
        qpos[:2] = cell_to_xy(start_cell)
        qpos[:15] += self.np_random.uniform(-0.1, 0.1, 15)  # D4RL's ant reset noise
        qvel[:14] += 0.1 * self.np_random.standard_normal(14)
        if random_start:  # D4RL's non_zero_reset replaces x, y by a noisy point of a random cell
            qpos[:2] = d4rl_reset_location(start_cell, self.np_random)
        qpos[:2] += self.offset
        ant.set_state(qpos, qvel)
        return self._obs(), self._info()

    def step(self, action):
        self._ant.step(np.asarray(action, dtype=np.float64))  # its reward and health check are ignored
        info = self._info()
        reward = 1.0 if info["success"] else 0.0
        terminated = bool(info["success"] and self.task.terminate_at_goal)
        return self._obs(), reward, terminated, False, info

    def close(self) -> None:
        self._maze_env.close()


def make_antmaze_env(max_episode_steps: int = MAX_EPISODE_STEPS, task: AntMazeTask | None = None) -> gym.Env:
    """The evaluation environment (fixed start and goal cells, terminate at the goal, 700 steps)."""
    if not antmaze_available():  # the registry's make_env says so first, as DatasetUnavailable
        raise ModuleNotFoundError("AntMaze needs gymnasium-robotics: pip install -e '.[antmaze]'")
    env = AntMazeUMaze(task or AntMazeTask())
    return gym.wrappers.TimeLimit(env, max_episode_steps=max_episode_steps)


# ============================================================================ the walker's task
class DirectionalAnt(gym.Env):
    """Ant-v5 on flat ground, rewarded for walking along a commanded heading, seen in the heading's frame.

    The observation is the 27-dim ant state rotated by minus the commanded heading (so "walk
    along +x" always means "walk along the command"); the reward is Ant's with the forward
    velocity replaced by the velocity along the heading: v . (cos h, sin h) + 1 (alive) -
    ``ctrl_cost_weight`` |a|^2. The heading is drawn at reset, and redrawn with probability
    ``turn_prob`` per step, within ``heading_spread`` of the torso's current yaw (pi: anywhere),
    so the walker learns to walk off its body's axis (the maze controller asks for up to 60
    degrees, see MazeController). Ends when the ant is unhealthy
    (torso height outside [0.2, 1]), as Ant-v5, and (``end_when_flipped``) when the torso is
    tilted past 90 degrees: Ant-v5 counts an ant on its back at height 0.27 as healthy, the
    walker never learned to avoid flipping, and every frozen maze episode traced was a flipped ant.
    Speed along the heading above ``max_speed`` earns nothing more (a calmer gait flips less).
    """

    metadata = {"render_modes": []}

    def __init__(self, turn_prob: float = 1 / 150, max_episode_steps: int = 500,
                 heading_spread: float = math.pi, ctrl_cost_weight: float = 0.5, end_when_flipped: bool = False,
                 max_speed: float = math.inf):
        self._env = gym.make("Ant-v5", include_cfrc_ext_in_observation=False, contact_cost_weight=0.0,
                             ctrl_cost_weight=ctrl_cost_weight, max_episode_steps=max_episode_steps)
        self.turn_prob = turn_prob
        self.heading_spread = heading_spread
        self.end_when_flipped = end_when_flipped
        self.max_speed = max_speed
        self.action_space = self._env.action_space
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(ANT_STATE_DIM,), dtype=np.float64)
        self.heading = 0.0

    def _new_heading(self) -> float:
        yaw = float(yaw_of(self._env.unwrapped.data.qpos[3:7]))
        return wrap_angle(yaw + float(self.np_random.uniform(-self.heading_spread, self.heading_spread)))

    def _state(self) -> np.ndarray:
        d = self._env.unwrapped.data
        return np.concatenate([d.qpos[2:15], d.qvel[:14]])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._env.reset(seed=None if seed is None else int(seed))
        self.heading = self._new_heading()
        return steer(self._state(), self.heading), {"heading": self.heading}

    def step(self, action):
        _, _, terminated, truncated, info = self._env.step(action)
        if self.end_when_flipped and torso_upright(self._env.unwrapped.data.qpos[3:7]) < 0.0:
            terminated = True
        v = np.array([info["x_velocity"], info["y_velocity"]])
        along = float(v @ np.array([math.cos(self.heading), math.sin(self.heading)]))
        reward = min(along, self.max_speed) + info["reward_survive"] + info["reward_ctrl"]
        info = {"velocity_along": along, "heading": self.heading}
        if self.np_random.random() < self.turn_prob:
            self.heading = self._new_heading()
        return steer(self._state(), self.heading), reward, terminated, truncated, info

    def close(self) -> None:
        self._env.close()
