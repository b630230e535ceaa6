"""``python -m studies.rtg_probe.analysis RUN_DIR [RUN_DIR ...]``: does a trained ODT or DT model read
the size of its return-to-go?

For each run (its latest checkpoint) the model acts on windows of its own dataset, the way it
acts during evaluation: the last ``eval_context_len`` steps of a trajectory, the return-to-go
token of each step set to (target - reward collected before it) / rtg_scale. The probe changes
only the target, m * g_eval for each m of ``--multiples``, and reports the mean absolute change
of the mean action (over windows and action entries) against the action at the run's own g_eval
(m = 1). Beside it: the same distance between the actions of two different windows at m = 1,
the size of "a different decision", and the norm of the return embedding's bias over its weight's.

A model that sees only the sign of its return-to-go (the bug 80c856e fixed: GPT-2's zero bias
on ``embed_return``) shows 0 between any two positive targets. The probe reads checkpoints, which
stay on the machine that ran the runs (they are not committed); it runs no episode.

    python -m studies.rtg_probe.analysis results/cpu/g_eval/odt__hopper-medium__default__s20__*
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import load_data, spec_config
from odt.model import DecisionTransformer
from rlbase.checkpoint import CheckpointManager
from rlbase.trajectories import Trajectories


@dataclass(frozen=True)
class Windows:
    """Evaluation-shaped inputs for ``n`` windows of ``context`` steps (every step a real one)."""

    states: torch.Tensor  # (n, context, obs_dim), normalised as the trainer does
    actions: torch.Tensor  # (n, context, act_dim)
    collected: torch.Tensor  # (n, context, 1): raw reward collected in the trajectory before each step
    timesteps: torch.Tensor  # (n, context)

    def returns_to_go(self, target: float, rtg_scale: float) -> torch.Tensor:
        return (target - self.collected) / rtg_scale


def sample_windows(data: Trajectories, n: int, context: int, seed: int = 0,
                   max_timestep: int | None = None) -> Windows:
    """``n`` windows ending at a uniformly drawn step t >= context - 1 of a uniformly drawn
    trajectory long enough to have one (seeded)."""
    rng = np.random.default_rng(seed)
    long_enough = np.flatnonzero(data.lengths >= context)
    if long_enough.size == 0:
        raise ValueError(f"no trajectory has {context} steps")
    mean, std = data.state_statistics()
    states, actions, collected, steps = [], [], [], []
    for i in rng.choice(long_enough, size=n):
        start, length = int(data.starts[i]), int(data.lengths[i])
        t = int(rng.integers(context - 1, length))
        lo = t + 1 - context
        rewards = data.rewards[start:start + t + 1].astype(np.float64)
        before = np.concatenate([[0.0], np.cumsum(rewards)])[lo:t + 1]
        states.append((data.observations[start + lo:start + t + 1] - mean) / std)
        actions.append(data.actions[start + lo:start + t + 1])
        collected.append(before[:, None])
        steps.append(np.arange(lo, t + 1))
    ts = np.asarray(steps)
    if max_timestep is not None:
        ts = np.minimum(ts, max_timestep)
    f32 = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float32)  # noqa: E731
    return Windows(f32(states), f32(actions), f32(collected), torch.as_tensor(ts, dtype=torch.long))


@torch.no_grad()
def mean_actions(model: DecisionTransformer, windows: Windows, target: float, rtg_scale: float) -> torch.Tensor:
    """(n, act_dim): the action each window's last state gets, mean action (no sampling)."""
    was_training = model.training
    model.eval()
    out = model(windows.states, windows.actions, windows.returns_to_go(target, rtg_scale), windows.timesteps)
    model.train(was_training)
    last = tuple(p[:, -1] for p in out) if isinstance(out, tuple) else out[:, -1]
    return model.head.mean_action(last)


def rtg_sensitivity(model: DecisionTransformer, windows: Windows, g_eval: float, rtg_scale: float,
                    multiples: list[float], seed: int = 0) -> dict[str, float]:
    """Mean |a(m g_eval) - a(g_eval)| per multiple, and between two windows at g_eval."""
    base = mean_actions(model, windows, g_eval, rtg_scale)
    out = {f"x{m:g}": float((mean_actions(model, windows, m * g_eval, rtg_scale) - base).abs().mean())
           for m in multiples}
    shuffled = base[torch.as_tensor(np.random.default_rng(seed).permutation(len(base)))]
    out["between windows"] = float((base - shuffled).abs().mean())
    weight, bias = model.embed_return.weight.detach(), model.embed_return.bias.detach()
    out["embed_return bias/weight norm"] = float(bias.norm() / weight.norm())
    return out


def probe_run(directory: Path, multiples: list[float], n: int, seed: int) -> dict[str, float | str]:
    spec = RunSpec.from_dict(rec.read_spec(directory))
    cfg = spec_config(spec)
    if not hasattr(cfg, "model"):
        raise ValueError(f"{directory.name}: method {spec.method!r} has no transformer to probe")
    loaded = CheckpointManager(directory / rec.CHECKPOINTS).load_latest()
    if loaded.state is None:
        raise FileNotFoundError(f"{directory}: no readable checkpoint (checkpoints stay on the machine that ran it)")
    data = load_data(spec)
    model = DecisionTransformer(data.trajectories.obs_dim, data.trajectories.act_dim, cfg.model)
    model.load_state_dict(loaded.state["agent"]["model"])
    windows = sample_windows(data.trajectories, n, cfg.model.eval_context_len, seed, cfg.model.max_ep_len - 1)
    row = rtg_sensitivity(model, windows, cfg.g_eval, cfg.rtg_scale, multiples, seed)
    return {"run": directory.name, "checkpoint": loaded.path.name, **row}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.rtg_probe.analysis", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="run directories (each with spec.json and checkpoints/)")
    p.add_argument("--multiples", nargs="+", type=float, default=[0.25, 3.0],
                   help="targets as multiples of the run's g_eval (default 0.25 3)")
    p.add_argument("--windows", type=int, default=1500, help="dataset windows per run (default 1500)")
    p.add_argument("--seed", type=int, default=0, help="which windows (default 0)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for directory in args.runs:
        try:
            rows.append(probe_run(directory, args.multiples, args.windows, args.seed))
        except (FileNotFoundError, ValueError, KeyError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(f"{r[c]:.4f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
