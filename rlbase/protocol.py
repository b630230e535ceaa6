"""What every method of the benchmark shares about datasets and evaluation.

The datasets and preset names, the domain of a dataset (gym locomotion or AntMaze) and its
defaults, and how many evaluations and episodes a phase runs: one definition,
so ODT, DT and the baselines are evaluated alike.
"""

from __future__ import annotations

import math
from typing import Any

# The D4RL datasets of the paper's Table 1, those every method has a configuration for
# (ODT's per-dataset tables in odt/config.py cover exactly these).
DATASETS = (
    "hopper-medium",
    "hopper-medium-replay",
    "walker2d-medium",
    "walker2d-medium-replay",
    "halfcheetah-medium",
    "halfcheetah-medium-replay",
    "ant-medium",
    "ant-medium-replay",
    "antmaze-umaze",
    "antmaze-umaze-diverse",
)


def phase_evaluations(length: float, every: float) -> int:
    """Evaluations the trainers make in a phase of ``length`` updates, samples or rounds: one every
    ``every`` and one at its end, which is the last periodic one when ``every`` divides ``length``
    (2e4 updates evaluated every 2500: 8, not 9); none for an empty phase, one (its end) when
    ``every`` is infinite."""
    if length <= 0:
        return 0
    return math.ceil(length / every) if math.isfinite(every) else 1


def evaluation_episodes(eval_episodes: int, interim: int, ends_phase: bool) -> int:
    """Episodes of one evaluation: ``eval_episodes`` at the end of a phase (the score a table
    reads), ``interim`` (where > 0) at the evaluations in between, which only draw the curve."""
    return eval_episodes if ends_phase or interim <= 0 else interim


def is_antmaze(dataset: str) -> bool:
    """AntMaze (goal-reaching, 0/1 rewards, 700-step episodes) rather than gym locomotion."""
    return dataset.startswith("antmaze")


# RTG scale as in DT's gym code (returns / 1000); AntMaze returns are 0/1 and are not scaled.
# Episode caps: 1000 steps for gym locomotion, 700 for AntMaze U-maze (D4RL's cut).
def domain_defaults(dataset: str) -> dict[str, Any]:
    if is_antmaze(dataset):
        return dict(rtg_scale=1.0, max_ep_len=700, eval_episodes=100)
    return dict(rtg_scale=1000.0, max_ep_len=1000, eval_episodes=10)


def known_datasets() -> list[str]:
    return sorted(DATASETS)
