"""What is published about D4RL's locomotion v2 datasets, and how a generated dataset compares.

Every dataset card of the forge ends with a section "Compared with D4RL's <name>-v2" that puts
each published statistic of D4RL's dataset beside the generated dataset's own value and the
difference (``comparison_markdown``). Only numbers found in a public source are recorded here,
each with its source; a statistic for which no source was found is ``None`` and the card prints
"not published". Nothing is estimated: in particular no source was found for the size of the
medium-replay datasets or for the returns of any dataset's trajectories (mean, min, max).

Episodes are counted as the TFDS catalog counts them (tensorflow_datasets/d4rl/dataset_utils.py):
the file is cut after every step flagged terminal or timeout, and the steps after the last such
flag (an episode cut off by the end of collection) make one more episode. The generated value is
counted the same way: complete trajectories, plus one if the file has an unfinished tail.
"""

from __future__ import annotations

from dataclasses import dataclass

NOT_PUBLISHED = "not published"
D4RL_PAPER_MEDIUM = ("D4RL paper (Fu et al. 2020, arXiv:2004.07219): the medium data is made by "
                     "\"collecting 1M samples from this partially-trained policy\" (quoted in "
                     "enjeeneer/zero-shot-rl README.md)")


def _tfds(family: str, level: str) -> str:
    return (f"TFDS catalog d4rl_mujoco_{family}, config v2-{level}, 'train' split examples "
            f"(https://www.tensorflow.org/datasets/catalog/d4rl_mujoco_{family}; "
            f"tensorflow/datasets docs/catalog/d4rl_mujoco_{family}.md)")


@dataclass(frozen=True)
class Published:
    """One published number and where it was published."""

    value: float
    source: str


@dataclass(frozen=True)
class D4RLStats:
    """The published statistics of one D4RL dataset; ``None``: no source was found."""

    name: str  # D4RL's id, e.g. "hopper-medium-v2"
    transitions: Published | None = None  # steps in the file
    episodes: Published | None = None  # counted as TFDS does (module docstring)
    normalized_return_mean: Published | None = None  # of the dataset's trajectories
    normalized_return_min: Published | None = None
    normalized_return_max: Published | None = None


def _row(family: str, level: str, episodes: int) -> D4RLStats:
    transitions = Published(1_000_000, D4RL_PAPER_MEDIUM) if level == "medium" else None
    return D4RLStats(name=f"{family}-{level}-v2", transitions=transitions,
                     episodes=Published(episodes, _tfds(family, level)))


# D4RL id -> what is published about it.
PUBLISHED: dict[str, D4RLStats] = {row.name: row for row in (
    _row("hopper", "medium", 2187),
    _row("hopper", "medium-replay", 2041),
    _row("walker2d", "medium", 1191),
    _row("walker2d", "medium-replay", 1093),
    _row("halfcheetah", "medium", 1000),
    _row("halfcheetah", "medium-replay", 202),
    _row("ant", "medium", 1203),
    _row("ant", "medium-replay", 485),
)}


def published_stats(d4rl_name: str) -> D4RLStats | None:
    """What is recorded about D4RL's ``d4rl_name`` (e.g. "hopper-medium-v2"); None if nothing."""
    return PUBLISHED.get(d4rl_name)


# ----- comparison (pure) ----------------------------------------------------------------------
# (label, D4RLStats field, how the difference reads: "count" as difference and ratio, "score" as points)
STATISTICS: tuple[tuple[str, str, str], ...] = (
    ("transitions (steps in the file)", "transitions", "count"),
    ("episodes (complete trajectories, plus 1 for an unfinished tail, as TFDS counts)", "episodes", "count"),
    ("normalized return of the trajectories, mean", "normalized_return_mean", "score"),
    ("normalized return of the trajectories, min", "normalized_return_min", "score"),
    ("normalized return of the trajectories, max", "normalized_return_max", "score"),
)


def generated_values(card: dict) -> dict[str, float | None]:
    """The generated dataset's value of each statistic, read from its card (None if absent)."""
    norm = card.get("normalized_returns") or {}
    trajectories = card.get("trajectories")
    episodes = None if trajectories is None else trajectories + (1 if card.get("unfinished_tail_steps") else 0)
    return {"transitions": card.get("steps_in_file"), "episodes": episodes,
            "normalized_return_mean": norm.get("mean"), "normalized_return_min": norm.get("min"),
            "normalized_return_max": norm.get("max")}


def _number(value: float | None, kind: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.0f}" if kind == "count" else f"{value:.1f}"


def difference(generated: float | None, published: float | None, kind: str) -> str:
    """How the generated value differs from the published one: a count as difference and ratio
    ("+479 (1.22x)"), a normalized return in points ("-5.2 points"); "-" if either is missing."""
    if generated is None or published is None:
        return "-"
    if kind == "score":
        return f"{generated - published:+.1f} points"
    ratio = f" ({generated / published:.2f}x)" if published else ""
    return f"{generated - published:+.0f}{ratio}"


def comparison_markdown(card: dict, stats: D4RLStats | None) -> list[str]:
    """The card's section comparing the generated dataset with D4RL's published statistics."""
    name = card.get("d4rl_equivalent") or (stats.name if stats else "?")
    head = [f"## Compared with D4RL's {name}", ""]
    if stats is None:
        return head + [f"No published statistics of {name} are recorded (benchmarks/datasets/d4rl_stats.py)."]
    ours = generated_values(card)
    lines = ["| statistic | D4RL | generated | generated vs D4RL | D4RL source |", "|---|---|---|---|---|"]
    for label, key, kind in STATISTICS:
        pub: Published | None = getattr(stats, key)
        value = None if pub is None else pub.value
        d4rl = NOT_PUBLISHED if pub is None else _number(value, kind)
        source = "no source found" if pub is None else pub.source
        lines.append(f"| {label} | {d4rl} | {_number(ours[key], kind)} | "
                     f"{difference(ours[key], value, kind)} | {source} |")
    return head + lines
