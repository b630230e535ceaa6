"""``python -m studies.iql_values.analysis RUN_DIR [RUN_DIR ...]``: does a trained AntMaze IQL know
how far its states are from the goal, and how many samples does its actor learn from?

IQL's actor is advantage-weighted behaviour cloning: it heads for the goal only if its value V
ranks states by how far they are from it and its advantages single out the actions that get
closer. For each complete IQL run on an AntMaze file this loads the last checkpoint and the run's
own data file and reports, over the file's states:

* ``k``: the steps from a state to the next goal-labelled step (raw reward > 0) of its trajectory;
  with IQL's rewards r - 1 and no bootstrap past a terminal goal step, a state k steps before it
  is worth v*(k) = -(1 - discount^k) / (1 - discount) along its own trajectory;
* ``spearman_v_k``: the rank correlation of V with -k over the states that reach a goal step
  (1: V orders them exactly by distance in steps); ``v_rises``: the fraction of their steps
  (s_t, s_t+1) along which V increases (1 for v*);
* ``V@k`` bins: V's mean over the states with k in the bin, and v* at the bin's mean k beside it;
  ``V unreached``: V's mean over the states that reach no goal step;
* ``V@cells``: V's mean by the maze cells between the torso's cell and the goal cell's (a
  shortest path of free cells; 6 from the U-maze's start, 0 in the goal's cell): the layout's
  distance, whatever the trajectory did next (the U-maze's goal cell, so U-maze files only);
  ``v*@cells`` beside it: v* at the median k of each cell's states that reach a goal step, what
  the file's own paths are worth there;
* the actor's weights min(exp(temperature * (min Q_target(s, a) - V(s))), max_weight) on the
  file's transitions: ``ess_256``, the effective sample size (sum w)^2 / sum w^2 of a uniform
  batch of 256 (mean over batches; 256 when every weight is equal), ``clipped`` the fraction at
  max_weight, ``adv_sd`` the advantages' standard deviation;
* ``action_mse``: how closely the policy's mean action imitates the file, the squared error
  against the file's action per dimension, averaged over its states. A complete ``bc`` run may be
  given too: it gets this column only, the level plain imitation reaches on the same file.

Descriptive only: it tests no claim. It needs the runs' checkpoints (they stay on the machine that
ran them) and their data files in the dataset cache.

    python -m studies.iql_values.analysis ~/odt-runs/cpu/antmaze_labels/iql__* --out paper_tables/iql_values_cpu.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy import stats

from benchmarks import records as rec
from benchmarks.aggregate import origin
from benchmarks.datasets.antmaze import GOAL_CELL, cell_to_xy
from benchmarks.experiments import RunSpec
from benchmarks.job import load_data, spec_config
from rlbase.checkpoint import CheckpointManager
from rlbase.trajectories import Trajectories
from studies.reach.analysis import cells_to_goal
from studies.run_rows import markdown_table, rows_of

K_BINS = (0, 1, 50, 100, 200, 400, 10**9)  # bin edges of k, the steps to the next goal step
BATCH = 256  # the preset's batch size, for the effective sample size
CHUNK = 65536  # states per forward pass


def steps_to_goal(goal: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For each step of the concatenated trajectories, the steps to the next step at or after it
    where ``goal`` is True within the same trajectory (0 on a goal step); inf where none follows."""
    out = np.full(len(goal), np.inf)
    end = 0
    for n in lengths:
        start, end = end, end + int(n)
        nxt = np.inf
        for t in range(end - 1, start - 1, -1):  # backwards: the nearest goal step ahead
            if goal[t]:
                nxt = t
            out[t] = nxt - t
    return out


def ideal_value(k: np.ndarray, discount: float) -> np.ndarray:
    """v*(k) = -(1 - discount^k) / (1 - discount): k rewards of -1, then the goal step's 0, terminal."""
    return -(1.0 - discount ** np.asarray(k, dtype=np.float64)) / (1.0 - discount)


def effective_sample_size(weights: np.ndarray) -> float:
    """(sum w)^2 / sum w^2: how many equally weighted samples a weighted batch is worth."""
    w = np.asarray(weights, dtype=np.float64)
    return float(w.sum() ** 2 / np.square(w).sum())


def value_rises(values: np.ndarray, k: np.ndarray, lengths: np.ndarray) -> float:
    """The fraction of consecutive steps (t, t+1) of one trajectory, both before a goal step ahead
    (finite k, k_t > 0), along which V increases."""
    same = np.ones(len(values) - 1, dtype=bool)
    same[np.cumsum(lengths)[:-1] - 1] = False  # the pair that straddles two trajectories
    along = same & np.isfinite(k[:-1]) & (k[:-1] > 0)
    return float(np.mean(values[1:][along] > values[:-1][along])) if along.any() else float("nan")


@torch.no_grad()
def _batched(fn, *arrays: np.ndarray) -> np.ndarray:
    parts = [fn(*(torch.as_tensor(a[i:i + CHUNK]) for a in arrays)).numpy() for i in range(0, len(arrays[0]), CHUNK)]
    return np.concatenate(parts).astype(np.float64)


def action_mse(act, data: Trajectories) -> float:
    """The mean over states and action dimensions of (act(s) - a)^2 on the file's (s, a)."""
    sq = [np.square(act(data.observations[i:i + CHUNK]) - data.actions[i:i + CHUNK]).sum()
          for i in range(0, data.num_steps, CHUNK)]
    return float(np.sum(sq) / data.actions.size)


def probe(agent, data: Trajectories, rng: np.random.Generator) -> dict:
    """The module doc's numbers for one trained IQL agent on its data."""
    c = agent.cfg
    k = steps_to_goal(data.rewards > 0, data.lengths)
    v = _batched(lambda o: agent.value(agent._inputs(o)), data.observations)
    q = _batched(lambda o, a: agent.target_critic(agent._inputs(o), a).min(dim=0).values,
                 data.observations, data.actions)
    adv = q - v
    w = np.minimum(np.exp(c.temperature * adv), c.max_weight)
    batches = rng.integers(0, len(w), size=(200, BATCH))
    reached = np.isfinite(k)
    row = {"states": len(k), "reaching": float(reached.mean()),
           "spearman_v_k": float(stats.spearmanr(v[reached], -k[reached]).statistic),
           "v_rises": value_rises(v, k, data.lengths),
           "ess_256": float(np.mean([effective_sample_size(w[b]) for b in batches])),
           "clipped": float(np.mean(w >= c.max_weight)), "adv_sd": float(adv.std())}
    for low, high in zip(K_BINS[:-1], K_BINS[1:]):
        inside = (k >= low) & (k < high)
        label = f"{low}" if high == low + 1 else f"{low}-{high - 1}" if high < 10**9 else f">={low}"
        row[f"V@k {label}"] = (f"{v[inside].mean():.1f} / {ideal_value(k[inside].mean(), c.discount) + 0.0:.1f}"
                               if inside.any() else "—")
    row["V unreached"] = f"{v[~reached].mean():.1f}" if (~reached).any() else "—"
    cells = cells_to_goal(data.observations[:, :2], cell_to_xy(GOAL_CELL))
    row["V@cells 0..6"] = " ".join(f"{v[cells == n].mean():.0f}" if (cells == n).any() else "—" for n in range(7))
    row["v*@cells 0..6"] = " ".join(  # the file's own paths: v* at the median k of each cell's reaching states
        f"{ideal_value(np.median(k[reached & (cells == n)]), c.discount) + 0.0:.0f}"
        if (reached & (cells == n)).any() else "—" for n in range(7))
    row["action_mse"] = action_mse(lambda o: agent.act(o, sample=False), data)
    return row


def run_row(directory: Path) -> dict:
    """One complete run's row: its spec, where it ran, and at its last checkpoint :func:`probe`
    (IQL) or :func:`action_mse` alone (BC)."""
    from benchmarks.methods import build_agent
    directory = Path(directory)
    spec = RunSpec.from_dict(rec.read_spec(directory))
    if spec.method not in ("iql", "bc") or not rec.is_complete(directory):
        raise ValueError(f"{directory}: not a complete iql or bc run")
    loaded = CheckpointManager(directory / rec.CHECKPOINTS).load_latest()
    if loaded.state is None:
        raise FileNotFoundError(f"{directory}: no readable checkpoint (checkpoints stay on the machine that ran it)")
    data = load_data(spec)
    agent = build_agent(spec.method, spec_config(spec), data.trajectories, data.spec.make_env, data.score_fn,
                        progress=False)
    try:
        agent.load_state_dict(loaded.state["agent"])
        if spec.method == "iql":
            found = probe(agent, data.trajectories, np.random.default_rng(spec.seed))
        else:
            found = {"action_mse": action_mse(agent.act, data.trajectories)}
    finally:
        agent.close()
    ran = origin(rec.read_json(directory / rec.ENVIRONMENT).get("attempts", []), rec.read_json(directory / rec.PROVENANCE))
    record = rec.read_record(directory)
    return {"method": spec.method, "dataset": spec.dataset, "seed": spec.seed, "data_file": ran["data_file"], "code": ran["code"],
            "updates": agent.counters.updates, "offline_score": record.get("offline_score"), **found}


def markdown(table: pd.DataFrame) -> str:
    made = rec.code_version()
    head = (f"# What a trained AntMaze IQL's values say (`studies.iql_values.analysis`)\n\n"
            f"Generated by `python -m studies.iql_values.analysis` from {len(table)} complete run(s) at code "
            f"{(made['git_sha'] or 'outside git')[:7]}{'+dirty' if made['git_dirty'] else ''}, each at its last "
            "checkpoint on its own data file (generated here, not D4RL; an IQL run's last checkpoint follows its online "
            "phase's updates, 5000 at the cpu preset, on top of the 1.8e5 offline ones). `k`: steps to the next goal-labelled step; "
            "`V@k` cells: V's mean over those states / v*(mean k) = -(1 - 0.99^k) / 0.01; `spearman_v_k`: rank "
            "correlation of V with -k over states that reach a goal step; `v_rises`: fraction of their steps along "
            "which V increases; `ess_256`: effective sample size of the actor's weights in a batch of 256; "
            "`clipped`: fraction of weights at the clip; `action_mse`: the mean action's squared error against the file's, per dimension (BC rows: this alone). Descriptive only (see the module doc).\n\n")
    cell = lambda v: str(v) if not isinstance(v, float) else "—" if np.isnan(v) else (  # noqa: E731
        f"{v:.0f}" if v.is_integer() else f"{v:.3f}")
    return head + markdown_table(table, cell) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.iql_values.analysis", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path,
                   help="complete IQL (or BC: action_mse only) run directories on a U-maze file, each with checkpoints/")
    p.add_argument("--out", type=Path, default=None, help="also write a Markdown page (e.g. paper_tables/iql_values_cpu.md)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows, failed = rows_of(args.runs, run_row)
    if not rows:
        print("error: no run could be probed", file=sys.stderr)
        return 2
    table = pd.DataFrame(rows).sort_values(["dataset", "method", "seed"])
    print(table.to_string(index=False))
    if args.out is not None:
        args.out.write_text(markdown(table))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
