"""Every random stream of a run, and of the forge that makes its data, named once.

A run's integer ``seed`` fans out into streams, each seeded with an integer computed here from
the seed and a counter (the evaluation, the episode, the round), so a resumed run re-derives
them from its counters. The integers are part of every record: changing one changes results,
so they stay as they are; a new stream gets a new base here.

Evaluation and exploration seeds of one run are 10M apart and never meet. From seed 100 on,
``seed * SEED_STRIDE`` reaches the next base: seed 100's exploration round 100 and its device
batch generator are both seeded 30,000,100. Left so: records depend on these integers.
"""

from __future__ import annotations

EVALUATION_BASE = 10_000_000  # env resets of evaluation episodes (every method)
EXPLORATION_BASE = 20_000_000  # ODT's exploration rollouts, IQL's online episodes
SEED_STRIDE = 100_000  # room per run seed in the evaluation and exploration streams
BATCH_SEED_OFFSET = 30_000_000  # ODT's device batch generator
SAC_EPISODE_BASE = 30_000_000  # SAC's env resets, one per episode
SAC_SEED_STRIDE = 1_000_000
FORGE_EPISODE_BASE = 40_000_000  # env resets of a forged locomotion dataset's episodes
ANTMAZE_CHECK_BASE = 50_000_000  # env resets of the AntMaze controller's success check
ANTMAZE_CHECK_STRIDE = 10_000
ANTMAZE_FORGE_BASE = 60_000_000  # env resets of a forged AntMaze dataset's episodes
ANTMAZE_LABEL_GOAL_BASE = 70_000_000  # the one goal a D4RL-style AntMaze file's labels refer to
FORGE_SEED_STRIDE = 1_000_000


def run_seed(seed: int) -> int:
    """The run's own seed, as given: torch's global generator at construction (initial weights,
    dropout) and the numpy generator of host-side batches."""
    return seed


def exploration_seed(seed: int, episode: int) -> int:
    """Env reset (and ODT's action-sampling generator) of online episode ``episode``: ODT's
    exploration round, IQL's online episode."""
    return EXPLORATION_BASE + seed * SEED_STRIDE + episode


def device_batch_seed(seed: int) -> int:
    """ODT's generator of training batches drawn on the device."""
    return BATCH_SEED_OFFSET + seed


def sac_episode_seed(seed: int, episode: int) -> int:
    """Env reset of SAC's ``episode``-th training episode."""
    return SAC_EPISODE_BASE + seed * SAC_SEED_STRIDE + episode


def iql_sampling_seed(seed: int) -> int:
    """IQL's generator of exploration actions in its online phase."""
    return seed + 1


def random_episode_seed(seed: int, episode: int) -> int:
    """Env reset of episode ``episode`` of a random-policy dataset made with ``seed``."""
    return seed + episode


def forge_episode_seed(seed: int, episode: int) -> int:
    """Env reset of episode ``episode`` of a locomotion dataset forged with ``seed``."""
    return FORGE_EPISODE_BASE + seed * FORGE_SEED_STRIDE + episode


def antmaze_check_seed(seed: int, episode: int) -> int:
    """Env reset of episode ``episode`` of the AntMaze controller's success check."""
    return ANTMAZE_CHECK_BASE + seed * ANTMAZE_CHECK_STRIDE + episode


def antmaze_forge_episode_seed(seed: int, episode: int) -> int:
    """Env reset of episode ``episode`` of an AntMaze dataset forged with ``seed``."""
    return ANTMAZE_FORGE_BASE + seed * FORGE_SEED_STRIDE + episode


def antmaze_label_goal_seed(seed: int) -> int:
    """The draw of the one goal point that a D4RL-style AntMaze file forged with ``seed`` labels
    its steps against (D4RL's relabel used one environment instance's goal for the whole file)."""
    return ANTMAZE_LABEL_GOAL_BASE + seed


def evaluation_seeds(seed: int, evaluations_done: int, n: int) -> list[int]:
    """Reset seeds of the next n evaluation episodes: fixed by the run's seed and how many
    evaluations came before, so a resumed run evaluates on the same episodes."""
    base = EVALUATION_BASE + seed * SEED_STRIDE + evaluations_done * n
    return [base + i for i in range(n)]
