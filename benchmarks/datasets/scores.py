"""D4RL's normalized score: 100 * (R - random) / (expert - random).

The reference returns are D4RL's own (``d4rl/infos.py``, REF_MIN_SCORE / REF_MAX_SCORE of the
v2 locomotion datasets and the AntMaze tasks). They are properties of an environment family,
not of a dataset, so every dataset of a family (medium, medium-replay, random, expert) is scored
against the same pair. Generated datasets record which pair they were scored against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reference:
    min_score: float  # return of D4RL's random policy
    max_score: float  # return of D4RL's expert policy (for AntMaze: 1 = always reaches the goal)
    source: str = "D4RL infos.py REF_MIN_SCORE/REF_MAX_SCORE (v2 datasets)"


REFERENCES: dict[str, Reference] = {
    "hopper": Reference(-20.272305, 3234.3),
    "walker2d": Reference(1.629008, 4592.3),
    "halfcheetah": Reference(-280.178953, 12135.0),
    "ant": Reference(-325.6, 3879.7),
    "antmaze": Reference(0.0, 1.0),
}


def reference(family: str) -> Reference:
    if family not in REFERENCES:
        raise KeyError(f"no reference scores for {family!r}; known: {', '.join(REFERENCES)}")
    return REFERENCES[family]


def normalize(returns, min_score: float, max_score: float) -> np.ndarray:
    """100 * (R - min) / (max - min), elementwise; a float array of the same shape."""
    returns = np.asarray(returns, dtype=np.float64)
    return 100.0 * (returns - min_score) / (max_score - min_score)


def unnormalize(scores, min_score: float, max_score: float) -> np.ndarray:
    """The inverse of :func:`normalize`: raw returns from normalized scores."""
    scores = np.asarray(scores, dtype=np.float64)
    return min_score + scores / 100.0 * (max_score - min_score)
