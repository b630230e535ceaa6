"""The forge's AntMaze recipes: a goal-reaching ant controller and D4RL-style U-maze datasets.

D4RL collected ``antmaze-umaze`` and ``antmaze-umaze-diverse`` with a goal-reaching ant policy
steered through the maze by a waypoint planner (its ``generate_ant_maze_datasets.py``: the
policy sees the ant state and the *direction* to the next waypoint, rescaled to norm 10;
actions get N(0, 0.2^2) noise). Here:

* the walker: SAC (baselines/sac.py, the forge's trainer) on :class:`DirectionalAnt` (flat
  Ant-v5), rewarded for walking along a commanded heading and seeing its state rotated into the
  heading's frame. Ant dynamics are yaw invariant, so "a direction-conditioned policy" and "a
  +x walker fed the rotated state" are the same thing; the rotation makes the direction input
  exact instead of learned. Its SAC starts from the ant-medium forge's SAC checkpoint
  (``walker_init``). Training checkpoints every ``checkpoint_every`` steps (atomically) and
  resumes after any interruption; every ``maze_eval_every`` steps the controller (walker +
  planner) is scored on the evaluation U-maze and training stops once its success rate reaches
  the threshold. The walker is saved as ``walker-policy.pt`` (and can be committed as
  ``benchmarks/datasets/policies/ant-walker-seed<S>.pt``, ~80 KB, so datasets rebuild without
  training). SAC inside the maze itself (random starts and goals, the controller's commands)
  was tried and learned to stand still (return about 490 per 500-step episode, what standing
  earns; 0% maze success at 350k steps);
* the controller: planner (BFS over the maze's free cells, D4RL's rule) + walker, shown the ant
  along the body axis nearest the planner's heading (:class:`MazeController`), mean action +
  N(0, 0.1^2) noise, clipped (D4RL's ``--noisy`` used 0.2: with it our ant flips more often);
* ``antmaze-umaze``: D4RL's start cell and goal cell every episode;
  ``antmaze-umaze-diverse``: a random start cell and a random commanded goal cell, a new random
  commanded goal each time one is reached; the reward (and the end of an episode) is always
  measured against the evaluation goal, as in D4RL where rewards come from the environment's
  target goal;
* ``antmaze-umaze-d4rlstyle``: ``antmaze-umaze``'s collection (controller, cells, noise, seed)
  with D4RL's episode and label conventions (``labels="d4rl"``, :func:`d4rl_labels`).

Differences from D4RL's files, recorded in every card: ``umaze`` and ``umaze-diverse`` episodes
end when the evaluation goal is reached (terminal) or at 700 steps (timeout) instead of running
1000 steps regardless, so a trajectory's return is 1 (it reached the goal) or 0 and the data's
success rate is the mean return. ``umaze-d4rlstyle`` runs every episode 1000 steps, the
controller still commanding the goal after reaching it, and labels every step that ends within
the success radius of the goal reward 1 and terminal (a label, not an episode end), as D4RL's
relabelling did. Observations, goals and ``infos/*`` (goal, commanded goal, qpos, qvel) are in
D4RL's frame, as in D4RL's files.
"""

from __future__ import annotations

import functools
import io
import json
import math
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from baselines.sac import SACAgent, TanhGaussianActor, sac_config
from benchmarks.datasets.antmaze import (
    GOAL_CELL,
    MAX_EPISODE_STEPS,
    START_CELL,
    SUCCESS_RADIUS,
    U_MAZE,
    AntMazeTask,
    AntMazeUMaze,
    DirectionalAnt,
    WaypointPlanner,
    action_from_quarter_turn,
    d4rl_goal,
    free_cells,
    nearest_quarter_turn,
    quarter_turn_state,
    robotics_version,
    steer,
    wrap_angle,
    xy_to_cell,
    yaw_of,
)
from benchmarks.datasets.d4rl_io import read_arrays, split_points
from benchmarks.datasets.forge_base import (
    FORGE_SAC_SETTINGS,
    ForgeConfig,
    ForgeError,
    ForgeStopped,
    NumpyActor,
    _write_dataset,
    family_dir,
    load_first_actor,
    write_card,
)
from benchmarks.datasets.portable_math import math_settings
from benchmarks.datasets.registry import DatasetSpec, DatasetUnavailable, data_dir, get_spec
from rlbase.checkpoint import CheckpointManager, atomic_write_bytes
from rlbase.config import ConfigError, apply_overrides
from rlbase.progress import progress_bar
from rlbase.seeds import antmaze_check_seed, antmaze_forge_episode_seed, antmaze_label_goal_seed
from rlbase.training import StopRequested

PACKAGED_POLICIES = Path(__file__).parent / "policies"
LEVELS = ("umaze", "umaze-diverse", "umaze-d4rlstyle")
# how episodes end and which steps carry reward 1 / terminal: "ours" (the episode ends at the
# goal, one terminal step, 700-step limit) or "d4rl" (D4RL's: episodes run to the time limit,
# every step within the success radius is rewarded and flagged terminal; d4rl_labels)
LABELS = ("ours", "d4rl")
D4RL_EPISODE_STEPS = 1000  # D4RL's collection time limit (generate_ant_maze_datasets.py)
# the recipe settings that tell a level apart beyond its name (start cells and commands: ``diverse``)
LEVEL_SETTINGS: dict[str, dict] = {
    "antmaze-umaze-d4rlstyle": {"labels": "d4rl", "episode_steps": D4RL_EPISODE_STEPS},
}


class ControllerNotReady(ForgeError):
    """The walker did not reach the success threshold within its step budget."""


@dataclass
class AntMazeForgeConfig:
    name: str = "antmaze-umaze"
    seed: int = 0
    size: int = 1_000_000  # transitions in the dataset (D4RL: 1M)
    # time limit of a collected episode, and how episodes end and steps are labelled (one of
    # LABELS); None: the level's (LEVEL_SETTINGS; else 700 and "ours")
    episode_steps: int | None = None
    labels: str | None = None
    # std of the Gaussian added to the walker's mean action. D4RL's --noisy used 0.2; here the
    # controller reached the goal in 4 of 10 episodes with 0.2, 12 of 20 with 0.1, 8 of 10 with 0
    # (walker at 284k steps; failures with noise were mostly flips)
    action_noise: float = 0.1
    lookahead: float = 1.0  # planner: aim one cell further within this distance (m) of a cell centre
    clearance: float = 1.0  # planner: straight segments keep this far (m) from the walls
    # controller: keep describing the ant by the same body axis (quarter turn) until the command
    # is this far from it; then take the nearest axis (at most 45 degrees off)
    keep_axis_deg: float = 60.0
    controller_eval_episodes: int = 50  # episodes to measure the controller's own success rate for the card
    packaged_policy: bool = True  # use benchmarks/datasets/policies/ant-walker-seed<S>.pt if present
    # ----- walker training (SAC on DirectionalAnt) -----
    walker_max_steps: int = 1_000_000  # give up if the controller has not reached the threshold by then
    # controller success rate (%) on the evaluation maze (with action noise) that ends training.
    # No walker reached 80% in the attempts so far (about 1.5M SAC steps over six variants); 50%
    # makes datasets whose episodes reach the goal about half the time
    walker_threshold: float = 50.0
    maze_eval_every: int = 20_000  # SAC steps between controller evaluations on the maze
    maze_eval_episodes: int = 20
    eval_every: int = 10_000  # SAC's own evaluation (DirectionalAnt returns)
    eval_episodes: int = 5
    checkpoint_every: int = 10_000
    turn_prob: float = 1 / 150  # DirectionalAnt: per-step probability of a new commanded heading
    # a new heading lies within this angle of the torso's yaw. With pi (anywhere) SAC stood still
    # for 160k steps (velocity along the command 0.01 m/s): the alive bonus won over learning 360
    # degrees of gaits at once. The maze's corners need turns of up to 90 degrees.
    heading_spread: float = math.pi / 2
    ctrl_cost_weight: float = 0.5  # Ant-v5's
    end_when_flipped: bool = True  # DirectionalAnt: a torso tilted past 90 degrees ends the episode
    # reward speed only up to this (m/s): uncapped, the walker reached 1.8 m/s with a gait that
    # flipped in 11 of 12 maze episodes (walker at 323k steps); the maze needs about 0.7 m/s
    max_speed: float = 1.2
    # "ant-sac": continue the ant-medium forge's SAC (actor, critics, temperature, optimisers and
    # its replay of plain Ant-v5, which is DirectionalAnt with heading 0 up to a 5e-4 contact
    # cost), whose policy already walks about 0.5 m/s along any heading through the rotation.
    # From scratch ("scratch"), SAC stood still for the first 100k+ steps in every variant tried.
    walker_init: str = "ant-sac"
    walker_episode_steps: int = 500
    sac_overrides: dict = field(default_factory=lambda: {"hidden_dim": 128, "batch_size": 128})

    def __post_init__(self) -> None:
        level = LEVEL_SETTINGS.get(self.name, {})
        if self.episode_steps is None:
            self.episode_steps = level.get("episode_steps", MAX_EPISODE_STEPS)
        if self.labels is None:
            self.labels = level.get("labels", "ours")

    @property
    def diverse(self) -> bool:
        return self.name.endswith("diverse")


def antmaze_forge_config(name: str, overrides: dict | None = None) -> AntMazeForgeConfig:
    return apply_overrides(AntMazeForgeConfig(name=name), dict(overrides or {}))


def from_forge_config(fc) -> AntMazeForgeConfig:
    """Map the forge CLI's ForgeConfig onto this recipe (only the fields that mean the same here)."""
    base = ForgeConfig(name=fc.name)
    cfg = AntMazeForgeConfig(name=fc.name, seed=fc.seed, packaged_policy=fc.packaged_policy)
    if fc.size != base.size:
        cfg.size = fc.size
    if fc.sac_max_steps != base.sac_max_steps:
        cfg.walker_max_steps = fc.sac_max_steps
    if fc.target_score is not None:
        cfg.walker_threshold = fc.target_score
    for key in ("eval_every", "eval_episodes", "checkpoint_every"):
        if getattr(fc, key) != getattr(base, key):
            setattr(cfg, key, getattr(fc, key))
    if fc.sac_overrides:
        cfg.sac_overrides = {**cfg.sac_overrides, **fc.sac_overrides}
    return cfg


# ============================================================================ paths
def walker_dir(seed: int, root=None) -> Path:
    return data_dir(root) / "forge" / f"antmaze-walker-seed{seed}"


def walker_path(seed: int, root=None) -> Path:
    return walker_dir(seed, root) / "walker-policy.pt"


def packaged_walker_path(seed: int) -> Path:
    return PACKAGED_POLICIES / f"ant-walker-seed{seed}.pt"


# ============================================================================ the controller
class MazeController:
    """Planner + walker: the action for a 29-dim AntMaze observation and a commanded goal.

    The walker walks along +x of the frame it is shown. The controller shows it the ant's state
    rotated into the planner's heading and described by the ant body axis (one of four, a
    quarter turn apart: :func:`quarter_turn_state`) nearest that heading, so the walker never
    walks more than ``keep_axis`` off its body's axis and need not turn at the maze's corners;
    the axis is kept until the heading is ``keep_axis`` away from it (no flicker between two).
    Without the axes, the walker froze when commanded 90-100 degrees from its yaw, and turning
    towards the commands flipped it: noise-free, the walker at 284k steps reached the goal in 4
    of 20 episodes with its commands limited to 60 degrees from the yaw, in 8 of 10 with the axes.
    """

    def __init__(self, walker: NumpyActor, planner: WaypointPlanner | None = None, action_noise: float = 0.0,
                 keep_axis: float = math.radians(60)):
        self.walker, self.planner, self.action_noise = walker, planner or WaypointPlanner(), action_noise
        self.keep_axis = keep_axis
        self.axis: int | None = None  # quarter turns from the body's x axis to the one the walker is shown

    def command(self, obs: np.ndarray, goal_xy) -> tuple[float, int]:
        """The planner's heading and the body axis (quarter turns) that the walker is to walk along."""
        heading, yaw = self.planner.heading(obs[:2], goal_xy), float(yaw_of(obs[3:7]))
        if self.axis is None or abs(wrap_angle(yaw + self.axis * math.pi / 2 - heading)) > self.keep_axis:
            self.axis = nearest_quarter_turn(yaw, heading)
        return heading, self.axis

    def act(self, obs: np.ndarray, goal_xy, rng: np.random.Generator | None = None) -> np.ndarray:
        heading, axis = self.command(obs, goal_xy)
        action = action_from_quarter_turn(self.walker.mean(steer(quarter_turn_state(obs[2:], axis), heading)), axis)
        if self.action_noise > 0:
            action = action + self.action_noise * rng.standard_normal(action.shape)
        return np.clip(action, -1.0, 1.0).astype(np.float32)


def make_controller(actor: TanhGaussianActor, cfg: AntMazeForgeConfig) -> MazeController:
    """The recipe's controller (planner settings, body-axis switching, action noise) around ``actor``."""
    planner = WaypointPlanner(lookahead=cfg.lookahead, clearance=cfg.clearance)
    return MazeController(NumpyActor(actor), planner, cfg.action_noise, math.radians(cfg.keep_axis_deg))


def controller_success(controller: MazeController, episodes: int, seed: int,
                       episode_steps: int = MAX_EPISODE_STEPS) -> dict:
    """The controller on the evaluation task (D4RL's start and goal): success rate and steps to the goal."""
    env = AntMazeUMaze(AntMazeTask())
    rng = np.random.default_rng(seed)
    reached, steps = [], []
    try:
        for k in range(episodes):
            obs, info = env.reset(seed=antmaze_check_seed(seed, k))
            n = 0
            while n < episode_steps:
                obs, _, term, _, info = env.step(controller.act(obs, env.goal, rng))
                n += 1
                if term:
                    break
            reached.append(bool(info["success"]))
            steps.append(n)
    finally:
        env.close()
    reached_arr = np.array(reached)
    return {"episodes": episodes, "success_rate": float(reached_arr.mean()),
            "steps_to_goal_mean": float(np.mean(np.array(steps)[reached_arr])) if reached_arr.any() else None}


# ============================================================================ the walker
def load_walker(seed: int, root=None, packaged: bool = True) -> tuple[TanhGaussianActor, dict]:
    found = load_first_actor([walker_path(seed, root)] + ([packaged_walker_path(seed)] if packaged else []))
    if found is not None:
        return found
    raise DatasetUnavailable(f"no ant walker for seed {seed} (looked in {walker_path(seed, root)} and "
                             f"{packaged_walker_path(seed)}); train it with: python -m benchmarks.datasets make "
                             "antmaze-umaze")


def walker_task(cfg: AntMazeForgeConfig) -> dict:
    """The settings that define the walker's training task: a checkpoint made under others is not resumed."""
    return {"turn_prob": cfg.turn_prob, "heading_spread": cfg.heading_spread, "ctrl_cost_weight": cfg.ctrl_cost_weight,
            "episode_steps": cfg.walker_episode_steps, "sac_overrides": dict(cfg.sac_overrides), "init": cfg.walker_init,
            "end_when_flipped": cfg.end_when_flipped, "max_speed": cfg.max_speed}


def warm_start_walker(agent: SACAgent, cfg: AntMazeForgeConfig, root=None) -> dict:
    """Load the ant-medium forge's latest SAC checkpoint into ``agent``; the curve row that says so."""
    src = family_dir(get_spec("ant-medium"), cfg.seed, root) / "sac"
    warm = CheckpointManager(src, keep=2).load_latest()
    if warm.state is None:
        raise DatasetUnavailable(
            f"the ant walker starts from the ant-medium forge's SAC (walker_init='ant-sac') and {src} holds no "
            "checkpoint; train it with: python -m benchmarks.datasets make ant-medium --train (about 20 min)")
    agent.load_state_dict(warm.state["agent"])
    print(f"[antmaze] the walker starts from {warm.path} (SAC step {agent.counters.online_samples})", file=sys.stderr)
    return {"phase": "warm start", "source": str(warm.path), "online_samples": agent.counters.online_samples}


def check_walker_task(out: Path, task: dict) -> None:
    """Record ``task`` in ``out``, or refuse (naming the fields) if ``out`` holds training under another task."""
    path = out / "walker-task.json"
    has_checkpoints = any((out / "sac").glob("ckpt-*.pt"))
    stored = json.loads(path.read_text()) if path.exists() else ({"unknown": "no walker-task.json"} if has_checkpoints else None)
    if stored is None:
        atomic_write_bytes(path, json.dumps(task, indent=1).encode())
        return
    changed = sorted(k for k in set(stored) | set(task) if stored.get(k) != task.get(k))
    if changed:
        raise ConfigError(f"{out} holds walker training for another task (fields differ: {', '.join(changed)}); "
                          f"move that directory aside to train the walker anew")


def train_walker(cfg: AntMazeForgeConfig, root=None, progress: bool = True) -> dict:
    """SAC on DirectionalAnt until the maze controller's success rate reaches the threshold.

    Resumable: checkpoints (networks, optimisers, replay, RNG) every ``checkpoint_every`` steps
    at episode ends; running it again continues from the latest one. Returns the policy record.
    """
    out = walker_dir(cfg.seed, root)
    pol = walker_path(cfg.seed, root)
    if pol.exists():
        return torch.load(pol, map_location="cpu", weights_only=False)
    torch.set_num_threads(1)
    overrides = {**FORGE_SAC_SETTINGS, "online_samples": cfg.walker_max_steps, "eval_every": cfg.eval_every,
                 "eval_episodes": cfg.eval_episodes, "checkpoint_every": cfg.checkpoint_every, **cfg.sac_overrides}
    sac_cfg = sac_config(cfg.name, "paper", cfg.seed, overrides)
    make_env = functools.partial(DirectionalAnt, turn_prob=cfg.turn_prob, max_episode_steps=cfg.walker_episode_steps,
                                 heading_spread=cfg.heading_spread, ctrl_cost_weight=cfg.ctrl_cost_weight,
                                 end_when_flipped=cfg.end_when_flipped, max_speed=cfg.max_speed)
    agent = SACAgent(sac_cfg, make_env, None, progress=progress)
    manager = CheckpointManager(out / "sac", keep=2)
    check_walker_task(out, walker_task(cfg))
    curve_file = out / "walker-curve.json"
    curve: list[dict] = []
    loaded = manager.load_latest()
    for note in loaded.skipped:
        print(f"[antmaze] skipped checkpoint {note}", file=sys.stderr)
    if loaded.state is not None:
        agent.load_state_dict(loaded.state["agent"])
        curve = loaded.state["curve"]
        print(f"[antmaze] resumed the walker's SAC from {loaded.path.name} at step "
              f"{agent.counters.online_samples}", file=sys.stderr)
    elif cfg.walker_init == "ant-sac":
        curve = [warm_start_walker(agent, cfg, root)]
    elif cfg.walker_init != "scratch":
        raise ConfigError(f"walker_init={cfg.walker_init!r}: 'ant-sac' or 'scratch'")

    def write_curve() -> None:
        atomic_write_bytes(curve_file, json.dumps(curve, indent=1).encode())

    def log(row: dict) -> None:
        curve.append({k: v for k, v in row.items() if k != "returns"})
        write_curve()

    def checkpoint() -> None:
        manager.save({"agent": agent.state_dict(), "curve": list(curve)}, agent.counters.online_samples)

    def reached(row: dict) -> bool:
        step = row["online_samples"]
        last = max((r["online_samples"] for r in curve if "maze" in r), default=0)
        due = step - last >= cfg.maze_eval_every or step >= cfg.walker_max_steps
        if step < sac_cfg.warmup_steps or not due:
            return False
        ctrl = make_controller(agent.actor, cfg)
        result = controller_success(ctrl, cfg.maze_eval_episodes, cfg.seed + step)
        curve[-1]["maze"] = result
        write_curve()
        if progress:
            print(f"[antmaze] step {step}: controller success {100 * result['success_rate']:.0f}% "
                  f"(threshold {cfg.walker_threshold:.0f}%)", file=sys.stderr)
        return 100 * result["success_rate"] >= cfg.walker_threshold

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        for sig in previous:  # checkpoint at the end of the current episode, then stop
            signal.signal(sig, lambda *_: agent.request_stop())
    try:
        try:
            agent.finetune(log=log, checkpoint=checkpoint, stop_when=reached)
        except StopRequested:
            raise ForgeStopped(f"[antmaze] stopped at walker step {agent.counters.online_samples} after a checkpoint; "
                             "run the same command again to resume") from None
        maze = curve[-1].get("maze") if curve else None
        if maze is None or 100 * maze["success_rate"] < cfg.walker_threshold:
            done = [r["maze"]["success_rate"] for r in curve if "maze" in r]
            raise ControllerNotReady(
                f"the ant walker did not reach {cfg.walker_threshold:.0f}% success on the U-maze within "
                f"{cfg.walker_max_steps} SAC steps (best: {100 * max(done, default=float('nan')):.0f}%; "
                f"curve: {curve_file})")
        record = {
            "actor": agent.actor.state_dict(), "obs_dim": agent.obs_dim, "act_dim": agent.act_dim,
            "hidden_dim": agent.cfg.hidden_dim, "n_hidden": agent.cfg.n_hidden,
            "log_std_min": agent.cfg.log_std_min, "log_std_max": agent.cfg.log_std_max,
            "action_low": agent.action_low, "action_high": agent.action_high,
            "task": {"description": "SAC walker; sees the 27-dim ant state rotated into the commanded heading",
                     **walker_task(cfg)},
            "warm_start": next((r for r in curve if r.get("phase") == "warm start"), None),
            "seed": cfg.seed, "sac_config": asdict(agent.cfg), "sac_steps": agent.counters.online_samples,
            "sac_updates": agent.counters.updates, "sac_wall_time": agent.counters.wall_time,
            "sac_math": math_settings(), "threshold_success": cfg.walker_threshold, "maze_evaluation": maze,
        }
        buf = io.BytesIO()
        torch.save(record, buf)
        atomic_write_bytes(pol, buf.getvalue())
        return record
    finally:
        agent.close()
        if main_thread:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


# ============================================================================ collection
def d4rl_labels(next_xy, goal, episode_step, episode_steps: int = D4RL_EPISODE_STEPS,
                radius: float = SUCCESS_RADIUS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """D4RL's AntMaze labels of steps: (reward, terminal, timeout), vectorised over leading dims.

    ``next_xy``: the torso's x, y after the step; ``goal``: its episode's goal; ``episode_step``:
    the step's number within its episode, 1 for the first. Reward 1.0 and terminal True where
    ``next_xy`` lies within ``radius`` (inclusive) of the goal, as D4RL's relabel script set both
    (``relabel_antmaze_rewards.py``); timeout True on an episode's ``episode_steps``-th step, as
    the collection's time limit; a timeout step within the radius carries both flags.
    """
    dist = np.linalg.norm(np.asarray(next_xy, np.float64) - np.asarray(goal, np.float64), axis=-1)
    terminal = dist <= radius
    return terminal.astype(np.float32), terminal, np.asarray(episode_step) >= episode_steps


def collect_antmaze(controller: MazeController, size: int, seed: int, diverse: bool,
                    episode_steps: int = MAX_EPISODE_STEPS, progress: bool = True,
                    labels: str = "ours") -> tuple[dict, dict]:
    """``size`` transitions of the controller in the U-maze; D4RL arrays and collection statistics.

    Rewards, terminals and ``infos/goal`` refer to the evaluation goal (D4RL's goal cell, noise
    per episode); ``infos/commanded_goal`` is what the controller was steering to (the same
    point for ``umaze``; random free cells for ``diverse``). ``labels="ours"``: an episode ends at
    the goal (terminal) or after ``episode_steps`` (timeout). ``labels="d4rl"``: every episode
    runs ``episode_steps`` steps, the controller commanding its episode's goal throughout,
    labelled by :func:`d4rl_labels` against one goal point for the whole file (``infos/goal``). The last episode is cut at ``size`` without an end flag (an unfinished
    tail, dropped by the reader as in D4RL).
    """
    if labels not in LABELS:
        raise ConfigError(f"labels={labels!r}: one of {', '.join(LABELS)}")
    d4rl = labels == "d4rl"
    env = AntMazeUMaze(AntMazeTask(random_start=diverse, terminate_at_goal=not d4rl))
    # "d4rl": one goal point for the whole file, drawn once in the goal cell with D4RL's noise,
    # as D4RL's relabel read one environment's target; the controller steers to its episode's goal
    label_goal = d4rl_goal(GOAL_CELL, np.random.default_rng(antmaze_label_goal_seed(seed))) if d4rl else None
    rng = np.random.default_rng(seed)
    free = free_cells(U_MAZE)
    arrays = {
        "observations": np.zeros((size, 29), np.float32), "actions": np.zeros((size, 8), np.float32),
        "rewards": np.zeros(size, np.float32), "next_observations": np.zeros((size, 29), np.float32),
        "terminals": np.zeros(size, bool), "timeouts": np.zeros(size, bool),
        "infos/goal": np.zeros((size, 2), np.float32), "infos/commanded_goal": np.zeros((size, 2), np.float32),
        "infos/qpos": np.zeros((size, 15), np.float32), "infos/qvel": np.zeros((size, 14), np.float32),
    }
    stats = {"episodes": 0, "episodes_reaching_goal": 0, "commanded_goals": 0, "commanded_goals_reached": 0}

    def new_command(current_xy) -> np.ndarray:
        here = xy_to_cell(current_xy)
        cells = [c for c in free if c != here]
        return env.sample_goal(cells[rng.integers(len(cells))])

    episode, t_ep = 0, 0
    reached_goal = command_reached = False  # this episode / this command, so far
    obs, _ = env.reset(seed=antmaze_forge_episode_seed(seed, 0))
    command = new_command(obs[:2]) if diverse else env.goal.copy()
    stats["commanded_goals"] += 1
    try:
        for t in progress_bar(range(size), desc=f"collect {_level_name(diverse, labels)}", unit="step",
                              enabled=progress, mininterval=2.0):
            action = controller.act(obs, command, rng)
            arrays["infos/qpos"][t] = env.qpos()
            arrays["infos/qvel"][t] = env.qvel()
            nxt, reward, term, _, info = env.step(action)
            t_ep += 1
            if d4rl:
                reward, term, trunc = (v.item() for v in d4rl_labels(info["xy"], label_goal, t_ep, episode_steps,
                                                                       env.task.success_radius))
            else:
                trunc = t_ep >= episode_steps and not term
            reached_goal = reached_goal or bool(term)
            arrays["observations"][t], arrays["actions"][t], arrays["rewards"][t] = obs, action, reward
            arrays["next_observations"][t], arrays["terminals"][t], arrays["timeouts"][t] = nxt, term, trunc
            arrays["infos/goal"][t], arrays["infos/commanded_goal"][t] = env.goal if label_goal is None else label_goal, command
            obs = nxt
            episode_ends = trunc or (term and not d4rl)
            if not command_reached and np.linalg.norm(obs[:2] - command) <= env.task.success_radius:
                stats["commanded_goals_reached"] += 1
                command_reached = True
                if diverse and not episode_ends:
                    command, command_reached = new_command(obs[:2]), False
                    stats["commanded_goals"] += 1
            if episode_ends:
                stats["episodes"] += 1
                stats["episodes_reaching_goal"] += int(reached_goal)
                episode += 1
                t_ep = 0
                reached_goal = command_reached = False
                obs, _ = env.reset(seed=antmaze_forge_episode_seed(seed, episode))
                command = new_command(obs[:2]) if diverse else env.goal.copy()
                stats["commanded_goals"] += 1
    finally:
        env.close()
    return arrays, stats


def _level_name(diverse: bool, labels: str) -> str:
    return "antmaze-umaze" + ("-diverse" if diverse else "") + ("-d4rlstyle" if labels == "d4rl" else "")


def label_counts(arrays: dict[str, np.ndarray], stats: dict) -> dict:
    """How a file's steps are labelled (for the card): reward-1 steps (goal transitions), terminal
    and timeout steps and those flagged both, the share of steps that end within the success
    radius, and the collection's episodes (those completed, those reaching the goal at least once)."""
    rewards, terminals, timeouts = arrays["rewards"], arrays["terminals"], arrays["timeouts"]
    goal_steps = int((rewards == 1.0).sum())
    return {"steps": int(len(rewards)), "goal_steps": goal_steps, "terminal_steps": int(terminals.sum()),
            "timeout_steps": int(timeouts.sum()), "terminal_and_timeout_steps": int((terminals & timeouts).sum()),
            "share_within_radius": goal_steps / max(len(rewards), 1), "episodes": stats["episodes"],
            "episodes_reaching_goal": stats["episodes_reaching_goal"]}


# ============================================================================ what a cloner can copy
def start_cell_counts(arrays: dict[str, np.ndarray]) -> dict[str, int]:
    """Of a file's complete trajectories, how many start in D4RL's start cell (where every
    evaluation episode starts) and how many of those reach the evaluation goal (end terminal). A
    behaviour cloner learns the evaluation task from the latter: ``umaze`` starts every trajectory
    there, ``umaze-diverse`` (random start cells) few. ``arrays``: the file's D4RL arrays
    (``observations`` with x, y first, in D4RL's frame; ``terminals``, ``timeouts``)."""
    lengths, terminated, _ = split_points(arrays["terminals"], arrays["timeouts"])
    first_steps = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    from_start = np.array([xy_to_cell(arrays["observations"][i, :2]) == START_CELL for i in first_steps], dtype=bool)
    return {"trajectories": int(len(lengths)), "successful": int(terminated.sum()),
            "from_start_cell": int(from_start.sum()), "successful_from_start_cell": int((from_start & terminated).sum())}


def add_start_cell_counts(name: str, root=None) -> bool:
    """Back-fill ``start_cell`` into an AntMaze card made before cards had it, counted from the
    dataset file (read, not changed), and write its markdown again; False (nothing written) when
    the card has it already, is not AntMaze's, or the file is not on disk."""
    from benchmarks.datasets.loading import card_path, generated_path

    path, data = card_path(name, root), generated_path(name, root)
    card = json.loads(path.read_text()) if path.exists() else {}
    if "data_success_rate" not in card or "start_cell" in card or not data.exists():
        return False
    counts = start_cell_counts(read_arrays(data)[0])
    if counts["trajectories"] != card.get("trajectories"):
        raise ForgeError(f"{data} holds {counts['trajectories']} trajectories, its card {path} describes "
                         f"{card.get('trajectories')}: not the file the card was made with; nothing written")
    write_card(name, root, {**card, "start_cell": counts})
    return True


# ============================================================================ entry point
def make_antmaze(spec: DatasetSpec, cfg: AntMazeForgeConfig, root=None, force: bool = False,
                 progress: bool = True) -> dict:
    """Make ``antmaze-umaze``, ``-diverse`` or ``-d4rlstyle`` (training the walker first if needed)."""
    from benchmarks.datasets.loading import card_path, generated_path

    if spec.level not in LEVELS:
        raise ConfigError(f"the AntMaze forge makes {', '.join('antmaze-' + lv for lv in LEVELS)}; got {spec.name!r}")
    if cfg.size < 1:
        raise ConfigError(f"size={cfg.size} is out of range: >= 1")
    if cfg.labels not in LABELS:
        raise ConfigError(f"labels={cfg.labels!r} is not valid; choose one of {', '.join(LABELS)}")
    target = generated_path(spec.name, root)
    if target.exists() and not force:
        print(f"[forge] {target} exists (use --force to rebuild)", file=sys.stderr)
        return json.loads(card_path(spec.name, root).read_text())
    torch.set_num_threads(1)
    try:
        actor, record = load_walker(cfg.seed, root, packaged=cfg.packaged_policy)
    except DatasetUnavailable:
        train_walker(cfg, root, progress)
        actor, record = load_walker(cfg.seed, root, packaged=False)
    controller = make_controller(actor, cfg)
    t0 = time.perf_counter()
    own = controller_success(controller, cfg.controller_eval_episodes, cfg.seed)
    t1 = time.perf_counter()
    arrays, stats = collect_antmaze(controller, cfg.size, cfg.seed, cfg.diverse, cfg.episode_steps, progress,
                                    cfg.labels)
    t2 = time.perf_counter()
    success = stats["episodes_reaching_goal"] / max(stats["episodes"], 1)
    labelled = {"label_counts": label_counts(arrays, stats)} if cfg.labels == "d4rl" else {}
    extra = {
        "level": spec.level,
        "policy": ("waypoint planner (BFS over the maze's free cells) steering an SAC ant walker by yaw rotation, "
                   f"mean action + N(0, {cfg.action_noise}^2) noise; "
                   + ("random start cells, random commanded goal cells (a new one when reached)" if cfg.diverse
                      else "D4RL's start cell and goal cell every episode")),
        "policy_file": record["path"], "walker_sac_steps": record["sac_steps"],
        "walker_sac_wall_time_s": record.get("sac_wall_time"), "walker_sac_config": record["sac_config"],
        "walker_sac_math": record.get("sac_math"),
        "data_notes": data_notes(cfg, labelled.get("label_counts")),
        "data_success_rate": success, "collection": stats, **labelled,
        "start_cell": start_cell_counts(arrays),
        "controller_success": own, "controller_success_rate": own["success_rate"],
        "antmaze_config": asdict(cfg), "gymnasium_robotics": robotics_version(),
        "size": cfg.size, "controller_eval_wall_time_s": t1 - t0, "collect_wall_time_s": t2 - t1,
    }
    fc = ForgeConfig(name=spec.name, seed=cfg.seed, size=cfg.size)
    card = _write_dataset(spec, arrays, root, fc, extra=extra)
    return card


def data_notes(cfg: AntMazeForgeConfig, counts: dict | None = None) -> list[str]:
    """The card's notes on how the file's episodes end and what its labels mean (``counts``:
    :func:`label_counts`, for ``labels="d4rl"``)."""
    goal = ("Rewards, terminals and infos/goal refer to the evaluation goal (D4RL's goal cell, noise drawn per "
            "episode); infos/commanded_goal is where the controller was steering.")
    if cfg.labels != "d4rl":
        return [
            "Episodes end when the evaluation goal is reached (terminal, reward 1) or after "
            f"{cfg.episode_steps} steps (timeout); D4RL's ran 1000 steps regardless of the goal, so its returns "
            "count the steps spent near the goal while ours are 0 or 1 (the mean return is the success rate).",
            goal,
        ]
    notes = [
        "D4RL's conventions, unlike antmaze-umaze: every collected episode runs "
        f"{cfg.episode_steps} steps whether or not the goal is reached, the controller commanding the goal "
        "throughout (the ant lingers near it); every step whose next torso x, y lies within 0.5 of the "
        "file's one label goal (drawn once in the goal cell with D4RL's noise, as D4RL's relabel used one "
        "environment's target for the whole file; infos/goal) has reward 1 and terminal True (a label, not "
        "an episode end), so an episode whose own goal lies far from it earns few or none; timeout True on each "
        f"episode's {cfg.episode_steps}th step, with terminal too when that step ends within 0.5. Readers split "
        "trajectories at every terminal, so a stay near the goal becomes a run of 1-step trajectories of return 1.",
        "The same as antmaze-umaze: controller (walker, planner, body-axis steering), start cell, goal cell, "
        f"per-episode goal noise, action noise N(0, {cfg.action_noise}^2) and seed; evaluation, normalisation and "
        "scores are antmaze-umaze's (700 steps, ended at the goal: D4RL's evaluation mode).",
        f"Unlike D4RL's antmaze-umaze-v2: action noise {cfg.action_noise} (D4RL: 0.2), gymnasium's ant and "
        "our walker (D4RL: its own ant and policy), episodes of 1000 steps with the timeout on the 1000th "
        "(D4RL's counter flags the 1001st), and a step's label from its own next state (D4RL's relabel reads "
        "the next row, which at a timeout is the next episode's start, so its timeout steps are never terminal).",
        "infos/goal is the label goal; infos/commanded_goal is the episode's own goal (D4RL's goal cell, "
        "noise drawn per episode), where the controller was steering.",
    ]
    if counts is not None:
        notes.append(
            f"Labels: {counts['goal_steps']} goal transitions (reward-1 steps, "
            f"{100 * counts['share_within_radius']:.2f}% of {counts['steps']} steps within the radius), "
            f"{counts['terminal_steps']} terminal steps, {counts['timeout_steps']} timeouts "
            f"({counts['terminal_and_timeout_steps']} of them also terminal), {counts['episodes']} complete "
            f"episodes, {counts['episodes_reaching_goal']} reaching the goal at least once.")
    return notes


__all__ = ["AntMazeForgeConfig", "ControllerNotReady", "MazeController", "add_start_cell_counts",
           "antmaze_forge_config", "collect_antmaze", "controller_success", "d4rl_labels", "data_notes",
           "from_forge_config", "label_counts", "load_walker", "make_antmaze", "start_cell_counts", "train_walker"]
