"""``python -m studies.reach.analysis RUN_DIR [RUN_DIR ...]``: where do an AntMaze run's final
evaluation episodes go?

A success rate of 0 does not say whether the ant stood still, walked the wrong way or nearly
made it. For each complete run this replays its final evaluation from its last checkpoint (the
same reset seeds and mean actions, so the same episodes: the replayed returns are checked
against the record's) with a recorder around each environment, and reports per run the mean
over episodes of

* ``path_m``: the length of the torso's (x, y) path from reset to the episode's end;
* ``start_m``, ``closest_m``, ``final_m``: the distance to the goal at reset, at its smallest
  over the episode, and at the end (success is a distance <= 0.5 m);
* ``closer_m``: start_m - closest_m, how much nearer to the goal the ant ever got in a
  straight line (in the U-maze the way to the goal first leads away from it, so also:)
* ``start_cells``, ``fewest_cells``, ``final_cells``: maze cells between the ant's cell and the
  goal's along the corridors (a shortest 4-connected path; 6 from the U-maze's start, 0 in the
  goal's cell), at reset, at the fewest over the episode, and at the end;
  ``episodes_by_fewest_cells`` counts the episodes by their fewest ("4:60 5:40": 60 got within
  4 cells of the goal's, 40 within 5).

``replayed`` is "yes" when the replayed returns equal the record's final ones, episode by
episode; "no" means the numbers describe other episodes of the same policy (a run whose last
evaluation was not its final row, e.g. a g_eval sweep). For a policy that never reaches the goal
every return is 0 both ways, so there "yes" is a weak check; the replay itself is tested on
Hopper, whose returns differ from episode to episode. Descriptive only: it tests no claim. It needs the environment
to report ``xy`` and ``distance`` in its info (the project's AntMaze does) and the run's
checkpoints, which stay on the machine that ran it (they are not committed).

    python -m studies.reach.analysis results/cpu/table1/*__antmaze-umaze-diverse__* --csv reach.csv
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import torch

from benchmarks import records as rec
from benchmarks.aggregate import origin
from benchmarks.datasets.antmaze import U_MAZE, bfs_path, xy_to_cell
from benchmarks.experiments import RunSpec
from benchmarks.job import load_data, spec_config
from rlbase.checkpoint import CheckpointManager
from studies.run_rows import markdown_table, rows_of


@dataclass(frozen=True)
class EpisodeReach:
    path_m: float
    start_m: float
    closest_m: float
    final_m: float
    start_cells: float
    fewest_cells: float
    final_cells: float
    steps: int


def cells_to_goal(xy: np.ndarray, goal, maze=U_MAZE) -> np.ndarray:
    """For each position, the steps of a shortest 4-connected path of free cells from its cell to
    the goal's cell (NaN for a position whose cell is a wall: the torso pressed into one)."""
    goal_cell = xy_to_cell(goal)
    known: dict[tuple[int, int], float] = {}
    out = np.empty(len(xy))
    for i, p in enumerate(np.asarray(xy, dtype=np.float64)):
        cell = xy_to_cell(p)
        if cell not in known:
            try:
                known[cell] = float(len(bfs_path(maze, cell, goal_cell)) - 1)
            except ValueError:
                known[cell] = np.nan
        out[i] = known[cell]
    return out


def episode_reach(xy: np.ndarray, distance: np.ndarray, cells: np.ndarray) -> EpisodeReach:
    """One episode's geometry from the torso's positions ``xy`` (T + 1, 2), its straight-line
    distances to the goal (T + 1,) and its cells to the goal (T + 1,), from reset to the last step."""
    xy, distance, cells = (np.asarray(a, dtype=np.float64) for a in (xy, distance, cells))
    if xy.ndim != 2 or xy.shape[1] != 2 or len(xy) < 1 or not len(xy) == len(distance) == len(cells):
        raise ValueError(f"need (T + 1, 2) positions and (T + 1,) distances and cells, got {xy.shape}, "
                         f"{distance.shape} and {cells.shape}")
    path = float(np.linalg.norm(np.diff(xy, axis=0), axis=1).sum())
    fewest = float(np.nanmin(cells)) if np.isfinite(cells).any() else np.nan
    return EpisodeReach(path_m=path, start_m=float(distance[0]), closest_m=float(distance.min()),
                        final_m=float(distance[-1]), start_cells=float(cells[0]), fewest_cells=fewest,
                        final_cells=float(cells[-1]), steps=len(xy) - 1)


class ReachRecorder(gym.Wrapper):
    """Appends an ``EpisodeReach`` to ``sink`` for every episode that began with a seeded reset
    (an evaluation's episodes; a vector env's autoresets pass no seed and are not recorded)."""

    def __init__(self, env: gym.Env, sink: list[EpisodeReach]):
        super().__init__(env)
        self.sink = sink
        self.maze = getattr(env.unwrapped, "maze", U_MAZE)
        self._xy: list[np.ndarray] | None = None
        self._distance: list[float] = []
        self._goal: np.ndarray | None = None

    def _track(self, info: dict) -> None:
        if not {"xy", "distance", "goal"} <= set(info):
            raise KeyError("the environment's info lacks 'xy', 'distance' or 'goal': reach works on AntMaze only")
        self._xy.append(np.asarray(info["xy"], dtype=np.float64)[:2])
        self._distance.append(float(info["distance"]))
        self._goal = np.asarray(info["goal"], dtype=np.float64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._xy, self._distance = ([], []) if seed is not None else (None, [])
        if self._xy is not None:
            self._track(info)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._xy is not None:
            self._track(info)
            if terminated or truncated:
                xy = np.stack(self._xy)
                self.sink.append(episode_reach(xy, np.asarray(self._distance), cells_to_goal(xy, self._goal, self.maze)))
                self._xy = None
        return obs, reward, terminated, truncated, info


@dataclass(frozen=True)
class Replay:
    spec: RunSpec
    recorded: np.ndarray  # the record's final-row returns, in evaluation order
    returns: np.ndarray  # the same evaluation replayed from the checkpoint
    checkpoint: str

    @property
    def matches(self) -> bool:
        return self.returns.shape == self.recorded.shape and bool(np.allclose(self.returns, self.recorded))


def replay_final_evaluation(directory: Path, wrap_env: Callable[[gym.Env], gym.Env] = lambda env: env) -> Replay:
    """Run the final row's evaluation of a complete run again from its last checkpoint: the same
    agent, reset seeds and mean actions, each environment wrapped by ``wrap_env``."""
    from benchmarks.methods import build_agent
    directory = Path(directory)
    spec = RunSpec.from_dict(rec.read_spec(directory))
    if not rec.is_complete(directory):
        raise ValueError(f"{directory}: not a complete run (no complete record.json)")
    recorded = np.asarray(rec.read_record(directory)["final"]["returns"], dtype=np.float64)
    loaded = CheckpointManager(directory / rec.CHECKPOINTS).load_latest()
    if loaded.state is None:
        raise FileNotFoundError(f"{directory}: no readable checkpoint (checkpoints stay on the machine that ran it)")
    data = load_data(spec)
    agent = build_agent(spec.method, spec_config(spec), data.trajectories,
                        lambda: wrap_env(data.spec.make_env()), data.score_fn, progress=False)
    try:
        agent.load_state_dict(loaded.state["agent"])
        agent.counters.evaluations -= 1  # the checkpoint follows the final row's evaluation: its seeds again
        returns = np.asarray(agent.evaluate(len(recorded))["returns"], dtype=np.float64)
    finally:
        agent.close()
    return Replay(spec, recorded, returns, loaded.path.name)


def reach_row(directory: Path) -> dict:
    """One summary row per run (see the module doc): its final evaluation replayed with recorders."""
    sink: list[EpisodeReach] = []
    replay = replay_final_evaluation(directory, lambda env: ReachRecorder(env, sink))
    episodes = pd.DataFrame([asdict(e) for e in sink])
    spec, directory = replay.spec, Path(directory)
    ran = origin(rec.read_json(directory / rec.ENVIRONMENT).get("attempts", []),
                 rec.read_json(directory / rec.PROVENANCE))
    return {"method": spec.method, "dataset": spec.dataset, "seed": spec.seed, "preset": spec.preset,
            "code": ran["code"], "data_file": ran["data_file"], "episodes": len(sink),
            "successes": int(np.sum(replay.returns > 0)), **episodes.mean().drop("steps").to_dict(),
            "closer_m": float((episodes.start_m - episodes.closest_m).mean()),
            "steps": float(episodes.steps.mean()), "episodes_by_fewest_cells": tally_cells(episodes.fewest_cells),
            "replayed": "yes" if replay.matches else "no",
            "checkpoint": replay.checkpoint, "run": directory.name}


def tally_cells(fewest: pd.Series) -> str:
    """How many episodes got to within each number of cells of the goal's, nearest first: "0:3 4:60 5:37"."""
    counts = fewest.dropna().astype(int).value_counts().sort_index()
    return " ".join(f"{cells}:{n}" for cells, n in counts.items())


def markdown(table: pd.DataFrame) -> str:
    """The table as a Markdown page that says how it was made."""
    made = rec.code_version()
    head = (f"# Where AntMaze evaluation episodes go (`studies.reach.analysis`)\n\n"
            f"Generated by `python -m studies.reach.analysis` from {len(table)} run director{'y' if len(table) == 1 else 'ies'} at code "
            f"{(made['git_sha'] or 'outside git')[:7]}{'+dirty' if made['git_dirty'] else ''}. "
            "Each row replays a complete run's final evaluation from its last checkpoint (mean actions, "
            "the record's reset seeds; `replayed` = the returns equal the record's) and averages over its "
            "episodes: `path_m` the torso's path, `start_m` / `closest_m` / `final_m` the straight-line "
            "distance to the goal, `*_cells` the maze cells between the ant's cell and the goal's (6 from "
            "the U-maze's start; `episodes_by_fewest_cells` counts episodes by the fewest they reached). `code` and `data_file` are where the run ran (its git sha, its data "
            "file's content hash). Descriptive only.\n\n")
    cell = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    return head + markdown_table(table.drop(columns=["run"], errors="ignore"), cell) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.reach.analysis", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="complete AntMaze run directories (each with checkpoints/)")
    p.add_argument("--csv", type=Path, default=None, help="also write the table here (one row per run)")
    p.add_argument("--out", type=Path, default=None,
                   help="also write it as a Markdown page saying how it was made (e.g. paper_tables/reach_antmaze_cpu.md)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows, failed = rows_of(args.runs, reach_row, lambda r: f"replayed={r['replayed']}")
    if not rows:
        print("error: no run could be replayed", file=sys.stderr)
        return 2
    table = pd.DataFrame(rows).sort_values(["dataset", "method", "seed"])
    print(table.drop(columns=["run"]).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.csv is not None:
        table.to_csv(args.csv, index=False, float_format="%.4f")
    if args.out is not None:
        args.out.write_text(markdown(table))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
