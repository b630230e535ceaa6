"""What is published about D4RL's locomotion and AntMaze v2 datasets, and how a generated dataset compares.

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

AntMaze cards add rows that only AntMaze needs (steps with reward 1, terminal and timeout steps,
the collection episodes' length) and a table of conventions: where D4RL's file and the generated
one differ in how they were made rather than in a number (when an episode ends, which steps carry
reward 1 and the terminal flag, where starts and goals fall). Each D4RL side names its source;
D4RL's own code is cited at Farama-Foundation/D4RL (formerly rail-berkeley/d4rl), master.
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
class Convention:
    """How D4RL's file was made on one point (with its source) beside how the generated one is."""

    topic: str
    d4rl: str
    source: str
    generated: str  # what the forge does (benchmarks/datasets/antmaze.py, antmaze_forge.py)


@dataclass(frozen=True)
class D4RLStats:
    """The published statistics of one D4RL dataset; ``None``: no source was found."""

    name: str  # D4RL's id, e.g. "hopper-medium-v2"
    transitions: Published | None = None  # steps in the file
    episodes: Published | None = None  # counted as TFDS does (module docstring)
    normalized_return_mean: Published | None = None  # of the dataset's trajectories
    normalized_return_min: Published | None = None
    normalized_return_max: Published | None = None
    # AntMaze only (``maze``): rows of ANTMAZE_STATISTICS and the conventions table
    maze: bool = False
    reward_one_steps: Published | None = None  # steps whose reward is 1
    terminal_steps: Published | None = None  # steps flagged terminal
    timeout_steps: Published | None = None  # steps flagged timeout
    collection_episode_steps: Published | None = None  # time limit of the data-collection episodes
    conventions: tuple[Convention, ...] = ()


def _row(family: str, level: str, episodes: int) -> D4RLStats:
    transitions = Published(1_000_000, D4RL_PAPER_MEDIUM) if level == "medium" else None
    return D4RLStats(name=f"{family}-{level}-v2", transitions=transitions,
                     episodes=Published(episodes, _tfds(family, level)))


# ----- AntMaze: sources ------------------------------------------------------------------------
_D4RL = "https://github.com/Farama-Foundation/D4RL/blob/master/"
_GEN, _RELABEL = "scripts/generation/generate_ant_maze_datasets.py", "scripts/generation/relabel_antmaze_rewards.py"
GEN_SCRIPT = f"D4RL {_GEN} ({_D4RL}{_GEN})"
RELABEL_SCRIPT = f"D4RL {_RELABEL} ({_D4RL}{_RELABEL})"
REGISTRY = f"D4RL d4rl/locomotion/__init__.py, the registration of {{name}} ({_D4RL}d4rl/locomotion/__init__.py)"
GOAL_ENV = f"D4RL d4rl/locomotion/goal_reaching_env.py, step ({_D4RL}d4rl/locomotion/goal_reaching_env.py)"
MAZE_ENV = f"D4RL d4rl/locomotion/maze_env.py ({_D4RL}d4rl/locomotion/maze_env.py)"
WIKI = "D4RL wiki, Tasks page, AntMaze section (https://github.com/Farama-Foundation/D4RL/wiki/Tasks)"
ISSUE_199 = ("D4RL issue #199, antmaze-umaze-diverse-v0/v2 reward/terminals inconsistent with other antmaze "
             "tasks (https://github.com/Farama-Foundation/D4RL/issues/199)")
TIMEOUT_FIX = ("D4RL issue #77, Antmaze datasets broken (timeout flags out of step with episode ends; "
               "https://github.com/Farama-Foundation/D4RL/issues/77), PR #101 Antmaze fixed datasets "
               "(https://github.com/Farama-Foundation/D4RL/pull/101), PR #128 Merging v2 environments "
               "(https://github.com/Farama-Foundation/D4RL/pull/128)")


def _tfds_antmaze(config: str) -> str:
    return (f"TFDS catalog d4rl_antmaze, config {config}, 'train' split examples "
            f"(https://www.tensorflow.org/datasets/catalog/d4rl_antmaze; tensorflow/datasets "
            f"docs/catalog/d4rl_antmaze.md, e.g. at commit 3f9c162)")


ANTMAZE_TRANSITIONS = Published(1_000_000, f"{GEN_SCRIPT}: --num_samples defaults to int(1e6), one row per "
                                            "sample; the command line of the released file is not published")
ANTMAZE_COLLECTION_STEPS = Published(1000, f"{GEN_SCRIPT}: --max_episode_steps defaults to 1000 (its counter "
                                           "raises the timeout flag on an episode's 1001st step)")

# Conventions shared by both U-maze files.
_EPISODE_END = Convention(
    "when a collection episode ends",
    "only at the time limit (1000 steps by default): the collection environment is built without the "
    "evaluation flag, and only evaluation mode ends an episode at the goal; the ant goes on after "
    "reaching it",
    f"{GEN_SCRIPT}; {GOAL_ENV}",
    "at the evaluation goal (terminal, the first step within 0.5) or after 700 steps (timeout)")
_TERMINAL_FLAG = Convention(
    "what the terminal flag means",
    "a relabel, not an episode end: after collection the terminal flag is set, like the reward, on every "
    "step whose next position lies within 0.5 of the goal (the released files' names end in _sparse, "
    "the relabel script's suffix)",
    RELABEL_SCRIPT,
    "the episode ended at the goal: one terminal step per successful trajectory, its last")
_TIMEOUTS = Convention(
    "timeout flags",
    "the v2 files (names ending in _sparse_fixed) correct v0's timeout flags, which were out of step with "
    "the actual episode ends",
    TIMEOUT_FIX,
    "set on the 700th step of an episode that did not reach the goal")
_TFDS_COUNT = Convention(
    "what the TFDS episode count counts",
    "TFDS cuts the file after every terminal or timeout step, so every terminal step near the goal "
    "closes a TFDS episode of its own: the count is not a count of collection episodes",
    "tensorflow/datasets tensorflow_datasets/d4rl/dataset_utils.py, generate_examples "
    "(https://github.com/tensorflow/datasets/blob/master/tensorflow_datasets/d4rl/dataset_utils.py)",
    "each trajectory has at most one terminal step, so the count is the trajectories (plus the tail)")
_NOISE = Convention(
    "action noise of the collection policy",
    "N(0, 0.2^2) added to the controller's action, clipped to [-1, 1] (--noisy; the files' names say noisy)",
    GEN_SCRIPT,
    "N(0, 0.1^2) (0.2 flipped our ant more often: docs/datasets.md)")
_GOAL = Convention(
    "the goal that rewards refer to",
    "one goal point for the whole file: the relabel computes rewards and terminals against the target of "
    "one instance of the evaluation environment, drawn once in the maze's goal cell (row 3, column 1 of "
    "U_MAZE) with noise U(0, 1) + U(0, 0.5) per coordinate, clipped at 0; the collection script itself "
    "redraws its goal at every reset",
    f"{RELABEL_SCRIPT}; {MAZE_ENV}, goal_sampler; {GEN_SCRIPT}",
    "the same cell and noise, drawn per episode; each step's reward refers to its episode's goal "
    "(benchmarks/datasets/antmaze.py)")
_EVALUATION = Convention(
    "evaluation episodes",
    "700 steps at most, ended at the goal (evaluation mode), goal redrawn at every reset (v2_resets)",
    f"{REGISTRY.format(name='antmaze-umaze-v2')}; {GOAL_ENV}",
    "the same: 700 steps at most, ended at the goal, goal redrawn per episode")

def _antmaze_row(level: str, episodes: int, conventions: tuple[Convention, ...]) -> D4RLStats:
    return D4RLStats(name=f"antmaze-{level}-v2", transitions=ANTMAZE_TRANSITIONS,
                     episodes=Published(episodes, _tfds_antmaze(f"{level}-v2")), maze=True,
                     collection_episode_steps=ANTMAZE_COLLECTION_STEPS, conventions=conventions)


ANTMAZE_UMAZE = _antmaze_row("umaze", 10_154, (
        Convention("where episodes start and what the controller commands",
                   "one fixed start, the maze's start cell (row 1, column 1), and one commanded goal, the goal "
                   "cell on the other side of the wall (multistart False, multigoal False in the file's name)",
                   f"{WIKI}; {REGISTRY.format(name='antmaze-umaze-v2')} (dataset_url)",
                   "the same start cell and goal cell in every episode"),
        _GOAL, _EPISODE_END,
        Convention("which steps carry reward 1",
                   "every step within 0.5 of the goal, and the ant stays near it after arriving, so a "
                   "successful collection episode holds a run of reward-1 (and terminal) steps; D4RL issue "
                   "#199 reports such clusters of 1s in every AntMaze file but umaze-diverse",
                   f"{RELABEL_SCRIPT}; {ISSUE_199}",
                   "one step per successful trajectory, the step that ends it"),
        _TERMINAL_FLAG, _TIMEOUTS, _TFDS_COUNT, _NOISE, _EVALUATION,
    ))

ANTMAZE_UMAZE_DIVERSE = _antmaze_row("umaze-diverse", 1036, (
        Convention("where episodes start and what the controller commands",
                   "random goal locations commanded (wiki); starts at a random free cell plus noise "
                   "(multistart True in the file's name: the reset's non_zero_reset location)",
                   f"{WIKI}; {GEN_SCRIPT}; {MAZE_ENV}, _get_reset_location",
                   "random start cells, random commanded goal cells (a new one when one is reached)"),
        _GOAL, _EPISODE_END,
        Convention("which steps carry reward 1",
                   "a single step of reward (and terminal) 1 when the ant reaches the goal, unlike the other "
                   "AntMaze files",
                   ISSUE_199,
                   "one step per successful trajectory, as in D4RL's file; but here that step ends the trajectory"),
        Convention("what the terminal flag means",
                   "a relabel, not an episode end (collection episodes end only at the time limit): it "
                   "marks the same single step as the reward",
                   f"{ISSUE_199}; {GEN_SCRIPT}",
                   "the episode ended at the goal: one terminal step per successful trajectory, its last"),
        _TIMEOUTS, _TFDS_COUNT, _NOISE, _EVALUATION,
    ))

# antmaze-umaze-d4rlstyle (antmaze-umaze collected with D4RL's conventions): D4RL's facts are
# antmaze-umaze-v2's; the generated side of the conventions is the variant's own.
ANTMAZE_UMAZE_D4RLSTYLE = D4RLStats(
    name=ANTMAZE_UMAZE.name, transitions=ANTMAZE_TRANSITIONS, episodes=ANTMAZE_UMAZE.episodes, maze=True,
    collection_episode_steps=ANTMAZE_COLLECTION_STEPS, conventions=(
        ANTMAZE_UMAZE.conventions[0],
        Convention(_GOAL.topic, _GOAL.d4rl, _GOAL.source,
                   "the same: one label goal for the whole file, drawn once in the goal cell with D4RL's noise "
                   "(infos/goal), while each episode's controller steers to its own draw (infos/commanded_goal)"),
        Convention(_EPISODE_END.topic, _EPISODE_END.d4rl, _EPISODE_END.source,
                   "only at the time limit, 1000 steps (the timeout on the 1000th step, where D4RL's counter flags "
                   "the 1001st); the controller keeps commanding the goal after reaching it"),
        Convention(ANTMAZE_UMAZE.conventions[3].topic,
                   "every step whose next row's position lies within 0.5 of the goal; at a timeout step the next "
                   "row is the next episode's start, so a timeout step never has reward 1 "
                   "(the relabel shifts the observations by one row)",
                   f"{RELABEL_SCRIPT}; {ISSUE_199}",
                   "every step whose own next position (the torso after the step) lies within 0.5 of the "
                   "file's label goal, an episode's last step included"),
        Convention(_TERMINAL_FLAG.topic, _TERMINAL_FLAG.d4rl, _TERMINAL_FLAG.source,
                   "a label on the same steps as reward 1, not an episode end; a timeout step within 0.5 carries "
                   "both flags (readers take it as terminal)"),
        Convention(_TIMEOUTS.topic, _TIMEOUTS.d4rl, _TIMEOUTS.source,
                   "set on the 1000th step of every collection episode"),
        Convention(_TFDS_COUNT.topic, _TFDS_COUNT.d4rl, _TFDS_COUNT.source,
                   "the same rule: every terminal step closes a trajectory, so a stay near the goal is a run "
                   "of 1-step trajectories"),
        _NOISE, _EVALUATION,
    ))

# A generated dataset's name -> its comparison, where it is not its D4RL equivalent's alone.
GENERATED_VARIANTS: dict[str, D4RLStats] = {"antmaze-umaze-d4rlstyle": ANTMAZE_UMAZE_D4RLSTYLE}

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
    ANTMAZE_UMAZE,
    ANTMAZE_UMAZE_DIVERSE,
)}


def published_stats(d4rl_name: str) -> D4RLStats | None:
    """What is recorded about D4RL's ``d4rl_name`` (e.g. "hopper-medium-v2"); None if nothing."""
    return PUBLISHED.get(d4rl_name)


def stats_for_card(card: dict) -> D4RLStats | None:
    """What a generated dataset's card is compared with: its variant's record (GENERATED_VARIANTS,
    by the card's name), else what is published about its D4RL equivalent."""
    return GENERATED_VARIANTS.get(card.get("name", "")) or published_stats(card.get("d4rl_equivalent", ""))


# ----- comparison (pure) ----------------------------------------------------------------------
# (label, D4RLStats field, how the difference reads: "count" as difference and ratio, "score" as points)
STATISTICS: tuple[tuple[str, str, str], ...] = (
    ("transitions (steps in the file)", "transitions", "count"),
    ("episodes (complete trajectories, plus 1 for an unfinished tail, as TFDS counts)", "episodes", "count"),
    ("normalized return of the trajectories, mean", "normalized_return_mean", "score"),
    ("normalized return of the trajectories, min", "normalized_return_min", "score"),
    ("normalized return of the trajectories, max", "normalized_return_max", "score"),
)
# AntMaze only (D4RLStats.maze); a generated value the card does not hold reads "not in the card".
ANTMAZE_STATISTICS: tuple[tuple[str, str, str], ...] = (
    ("steps with reward 1 (generated: the sum of the complete trajectories' 0/1 returns)",
     "reward_one_steps", "count"),
    ("steps flagged terminal (generated: the trajectories that ended at the goal)", "terminal_steps", "count"),
    ("steps flagged timeout (generated: the trajectories cut at the time limit)", "timeout_steps", "count"),
    ("time limit of a data-collection episode (steps)", "collection_episode_steps", "count"),
)
NOT_IN_CARD = "not in the card"


def generated_values(card: dict) -> dict[str, float | None]:
    """The generated dataset's value of each statistic, read from its card (None if absent)."""
    norm = card.get("normalized_returns") or {}
    trajectories = card.get("trajectories")
    episodes = None if trajectories is None else trajectories + (1 if card.get("unfinished_tail_steps") else 0)
    return {"transitions": card.get("steps_in_file"), "episodes": episodes,
            "normalized_return_mean": norm.get("mean"), "normalized_return_min": norm.get("min"),
            "normalized_return_max": norm.get("max")}


def antmaze_generated_values(card: dict) -> dict[str, float | None]:
    """The generated AntMaze dataset's value of each ANTMAZE_STATISTICS row, from its card (None if
    absent). Its rewards are 0 or 1 and a reward of 1 ends the trajectory, so the reward-1 steps of
    its complete trajectories are the sum of their returns (mean x count). A card with
    ``label_counts`` (D4RL's labels, where a step can be terminal and timeout at once) counts the
    file's flags themselves."""
    counts = card.get("label_counts")
    if counts:
        return {"reward_one_steps": counts.get("goal_steps"), "terminal_steps": counts.get("terminal_steps"),
                "timeout_steps": counts.get("timeout_steps"),
                "collection_episode_steps": (card.get("antmaze_config") or {}).get("episode_steps")}
    returns = card.get("returns") or {}
    trajectories = card.get("trajectories")
    reward_one = (None if returns.get("mean") is None or trajectories is None
                  else round(returns["mean"] * trajectories))
    return {"reward_one_steps": reward_one, "terminal_steps": card.get("terminated_trajectories"),
            "timeout_steps": card.get("timeout_trajectories"),
            "collection_episode_steps": (card.get("antmaze_config") or {}).get("episode_steps")}


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


def _table_row(label: str, pub: Published | None, ours: float | None, kind: str, missing: str) -> str:
    value = None if pub is None else pub.value
    d4rl = NOT_PUBLISHED if pub is None else _number(value, kind)
    source = "no source found" if pub is None else pub.source
    mine = missing if ours is None else _number(ours, kind)
    return f"| {label} | {d4rl} | {mine} | {difference(ours, value, kind)} | {source} |"


def conventions_markdown(stats: D4RLStats) -> list[str]:
    """The conventions table: how D4RL's file was made beside how the generated one is ([] if none)."""
    if not stats.conventions:
        return []
    lines = ["", f"### How {stats.name} and the generated file were made (conventions, not numbers)", "",
             f"| what | D4RL's {stats.name} | generated | D4RL source |", "|---|---|---|---|"]
    return lines + [f"| {c.topic} | {c.d4rl} | {c.generated} | {c.source} |" for c in stats.conventions]


def comparison_markdown(card: dict, stats: D4RLStats | None) -> list[str]:
    """The card's section comparing the generated dataset with D4RL's published statistics."""
    name = card.get("d4rl_equivalent") or (stats.name if stats else "?")
    head = [f"## Compared with D4RL's {name}", ""]
    if stats is None:
        return head + [f"No published statistics of {name} are recorded (benchmarks/datasets/d4rl_stats.py)."]
    ours = generated_values(card)
    lines = ["| statistic | D4RL | generated | generated vs D4RL | D4RL source |", "|---|---|---|---|---|"]
    lines += [_table_row(label, getattr(stats, key), ours[key], kind, "n/a") for label, key, kind in STATISTICS]
    if stats.maze:
        maze = antmaze_generated_values(card)
        lines += [_table_row(label, getattr(stats, key), maze[key], kind, NOT_IN_CARD)
                  for label, key, kind in ANTMAZE_STATISTICS]
    return head + lines + conventions_markdown(stats)
