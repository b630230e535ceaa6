"""The recipe-independent parts of the forge: its config, policy records, the numpy actor that
collection steps, and dataset files with their cards.

Both recipes build on this module: the locomotion one (forge.py, which is also the entry point
``make`` and dispatches AntMaze names) and the AntMaze one (antmaze_forge.py).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from baselines.sac import TanhGaussianActor
from benchmarks.datasets.d4rl_io import split_points, write_d4rl
from benchmarks.datasets.d4rl_stats import D4RLStats, comparison_markdown, stats_for_card
from benchmarks.datasets.loading import card_path, generated_path
from benchmarks.datasets.registry import DatasetSpec, DatasetUnavailable, data_dir
from rlbase.checkpoint import atomic_write_bytes


class ForgeError(RuntimeError):
    """The forge could not make a dataset (e.g. SAC never reached the level); the message says why."""


class ForgeStopped(KeyboardInterrupt):
    """The forge was asked to stop (Ctrl-C, SIGTERM) and checkpointed first; the message says how
    to resume. A KeyboardInterrupt, so callers that treat Ctrl-C as "interrupted" treat it alike."""


PACKAGED_POLICIES = Path(__file__).parent / "policies"
# The forge's SAC starts at temperature 1.0, as every dataset and walker made here was (their
# cards record the whole SAC config); Table 1's SAC starts at the cited implementation's 0.1.
# Pinned so that changing Table 1's SAC never changes the data, and resumed forges stay exact.
FORGE_SAC_SETTINGS = {"init_alpha": 1.0}


@dataclass
class ForgeConfig:
    name: str  # dataset name, e.g. "hopper-medium"
    seed: int = 0
    size: int = 1_000_000  # transitions of medium / random datasets
    target_fraction: float = 1 / 3  # medium level = this fraction of D4RL's expert (normalized 100)
    target_score: float | None = None  # explicit normalized-score threshold (overrides target_fraction)
    sac_max_steps: int = 1_000_000  # give up if SAC has not reached the level by then
    eval_every: int = 5_000
    eval_episodes: int = 10
    checkpoint_every: int = 20_000
    sac_overrides: dict = field(default_factory=dict)  # e.g. {"hidden_dim": 32} (tests)
    packaged_policy: bool = True  # use benchmarks/datasets/policies/<family>-medium-seed<S>.pt if present

    @property
    def threshold(self) -> float:
        return 100.0 * self.target_fraction if self.target_score is None else self.target_score


def family_dir(spec: DatasetSpec, seed: int, root=None) -> Path:
    return data_dir(root) / "forge" / f"{spec.family}-seed{seed}"


def _command() -> str:
    return "python -m benchmarks.datasets " + " ".join(shlex.quote(a) for a in sys.argv[1:]) \
        if sys.argv and sys.argv[0].endswith(("__main__.py", "datasets")) else ""


def load_first_actor(paths: list[Path]) -> tuple[TanhGaussianActor, dict] | None:
    """The first saved policy record among ``paths`` that exists, as an actor in eval mode and
    its record (with the path it came from); None if none exists."""
    for path in paths:
        if path.exists():
            rec = torch.load(path, map_location="cpu", weights_only=False)
            actor = TanhGaussianActor(rec["obs_dim"], rec["act_dim"], rec["hidden_dim"], rec["n_hidden"],
                                      rec["log_std_min"], rec["log_std_max"], rec["action_low"], rec["action_high"])
            actor.load_state_dict(rec["actor"])
            rec["path"] = str(path)
            return actor.eval(), rec
    return None


class NumpyActor:
    """The tanh-Gaussian actor's sampling path and mean action in numpy: collection calls it once
    per step, and at batch size 1 numpy's small matmuls cost a fraction of a torch call (same
    math as ``TanhGaussianActor.sample`` and ``mean_action``)."""

    def __init__(self, actor: TanhGaussianActor):
        linears = [m for m in actor.net if isinstance(m, torch.nn.Linear)]
        self.weights = [(m.weight.detach().numpy().T.astype(np.float64), m.bias.detach().numpy().astype(np.float64))
                        for m in linears]
        self.lo, self.hi = actor.log_std_min, actor.log_std_max
        self.scale, self.center = actor.scale.numpy().astype(np.float64), actor.center.numpy().astype(np.float64)

    def _heads(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(obs, dtype=np.float64)
        for i, (w, b) in enumerate(self.weights):
            x = x @ w + b
            if i < len(self.weights) - 1:
                x = np.maximum(x, 0.0)
        mean, raw_log_std = np.split(x, 2, axis=-1)
        return mean, raw_log_std

    def mean(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic (mean) action, float64."""
        return np.tanh(self._heads(obs)[0]) * self.scale + self.center

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mean, log_std = self._heads(obs)
        log_std = self.lo + 0.5 * (self.hi - self.lo) * (np.tanh(log_std) + 1)
        u = mean + np.exp(log_std) * rng.standard_normal(mean.shape)
        return (np.tanh(u) * self.scale + self.center).astype(np.float32)


# ============================================================================ writing + cards
def _write_dataset(spec: DatasetSpec, arrays: dict, root, fc: ForgeConfig, extra: dict) -> dict:
    """Write the hdf5 (with its card inside) and the card next to it, atomically; returns the card."""
    lengths, terminated, tail = split_points(arrays["terminals"], arrays["timeouts"])
    n = int(lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    returns = np.add.reduceat(arrays["rewards"][:n].astype(np.float64), starts) if n else np.zeros(0)
    scores = spec.score_fn(returns)
    stats = lambda a: ({"min": float(a.min()), "mean": float(a.mean()), "max": float(a.max())}  # noqa: E731
                       if len(a) else None)
    card = {
        "name": spec.name, "source": "generated", "d4rl_equivalent": spec.d4rl_name, **extra,
        "seed": fc.seed, "command": _command() or f"python -m benchmarks.datasets make {spec.name} --seed {fc.seed}",
        **spec.env_versions(), "env_notes": list(spec.env_notes),
        "steps_in_file": int(len(arrays["rewards"])), "steps_in_trajectories": n,
        "unfinished_tail_steps": int(tail), "trajectories": int(len(lengths)),
        "terminated_trajectories": int(terminated.sum()), "timeout_trajectories": int((~terminated).sum()),
        "lengths": stats(lengths), "returns": stats(returns), "normalized_returns": stats(scores),
        "reference": {"min": spec.ref_min_score, "max": spec.ref_max_score,
                      "source": "D4RL REF_MIN_SCORE/REF_MAX_SCORE", "normalized": "100 * (R - min) / (max - min)"},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    card["sha256"] = write_d4rl(generated_path(spec.name, root), arrays, card)
    write_card(spec.name, root, card)
    return card


def write_card(name: str, root, card: dict) -> None:
    """``<name>.card.json`` and its markdown, ``<name>.card.md``, next to the data file."""
    atomic_write_bytes(card_path(name, root), json.dumps(card, indent=2).encode())
    _write_markdown(name, root, card)


def _write_markdown(name: str, root, card: dict) -> Path:
    path = card_path(name, root).with_suffix(".md")  # <name>.card.json -> <name>.card.md
    atomic_write_bytes(path, card_markdown(card, stats_for_card(card)).encode())
    return path


def rewrite_card_markdown(name: str, root=None) -> Path:
    """Write ``<name>.card.md`` again from ``<name>.card.json``, with the sections cards have now
    (e.g. the comparison with D4RL); the data file is neither read nor touched. Returns its path."""
    path = card_path(name, root)
    if not path.exists():
        raise DatasetUnavailable(f"{name}: no card at {path}; make the dataset first: "
                                 f"python -m benchmarks.datasets make {name}")
    return _write_markdown(name, root, json.loads(path.read_text()))


def _sac_math_lines(card: dict) -> list[str]:
    """Where SAC trained and under which math settings (``portable_math``); a medium-replay
    file from before them can be remade only on the CPU model that made it."""
    math = card.get("sac_math") or card.get("walker_sac_math")
    if math:
        return [f"- SAC trained on {math.get('cpu_model')} ({math.get('machine')}), MKL_CBWR="
                f"{math.get('MKL_CBWR')}, ATen kernels {math.get('aten_cpu_capability')}, torch {math.get('torch')}"]
    if card.get("level") == "medium-replay":
        return ["- SAC trained under the math libraries' default CPU dispatch (made before the forge pinned "
                "it): this file is SAC's replay buffer and can be remade bit for bit only on the CPU model "
                "that made it, which was not recorded"]
    return []


def card_markdown(card: dict, d4rl: D4RLStats | None) -> str:
    """The card as markdown; ``d4rl``: what is published about D4RL's dataset of the same name
    (``d4rl_stats.published_stats``), None if nothing is recorded."""
    def fmt(s):
        return "n/a" if s is None else f"{s['min']:.1f} / {s['mean']:.1f} / {s['max']:.1f}"
    lines = [
        f"# {card['name']} (generated, D4RL-style stand-in for {card['d4rl_equivalent']})", "",
        f"- level: {card.get('level')}; policy: {card.get('policy')}",
        f"- environment: {card['env_id']} {card['env_kwargs']} (gymnasium {card['gymnasium']}, mujoco {card['mujoco']})",
        f"- seed: {card['seed']}; command: `{card['command']}`",
        f"- steps: {card['steps_in_file']} in the file, {card['steps_in_trajectories']} in "
        f"{card['trajectories']} complete trajectories ({card['terminated_trajectories']} terminated, "
        f"{card['timeout_trajectories']} timed out), {card['unfinished_tail_steps']} unfinished tail steps",
        f"- trajectory length min / mean / max: {fmt(card['lengths'])}",
        f"- return min / mean / max: {fmt(card['returns'])}",
        f"- normalized return min / mean / max: {fmt(card['normalized_returns'])} "
        f"(D4RL reference {card['reference']['min']} / {card['reference']['max']})",
    ]
    if "data_success_rate" in card:  # AntMaze
        own = card["controller_success"]
        what = ("collection episodes reaching the evaluation goal at least once" if "label_counts" in card
                else "trajectories reaching the evaluation goal")
        lines.append(f"- data success rate ({what}): "
                     f"{100 * card['data_success_rate']:.1f}%; controller success rate on the evaluation task: "
                     f"{100 * own['success_rate']:.1f}% of {own['episodes']} episodes; walker: SAC after "
                     f"{card.get('walker_sac_steps')} steps")
        if "label_counts" in card:  # D4RL's labels: how they differ, and the counts (data notes)
            lines += [f"- {note}" for note in card.get("data_notes", [])]
        if "start_cell" in card:
            c = card["start_cell"]
            lines.append(f"- trajectories starting in the evaluation start cell (what a cloner learns the task "
                         f"from): {c['from_start_cell']} of {c['trajectories']}, {c['successful_from_start_cell']} "
                         f"of them successful (of {c['successful']} successful trajectories in all)")
    if "behaviour_policy_eval" in card:
        ev = card["behaviour_policy_eval"]
        lines.append(f"- behaviour policy (SAC after {card.get('sac_steps')} steps), deterministic evaluation: "
                     f"return {ev['return_mean']:.1f} +- {ev['return_std']:.1f}, normalized {ev['score_mean']:.1f}")
    lines += _sac_math_lines(card)
    lines += ["", "## How the environment differs from D4RL's", ""] + [f"- {n}" for n in card["env_notes"]]
    lines += [""] + comparison_markdown(card, d4rl)
    lines += ["", f"sha256 of the hdf5: `{card['sha256']}`; created {card['created']}", ""]
    return "\n".join(lines)
