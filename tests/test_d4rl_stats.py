"""The card's comparison with D4RL's published statistics (benchmarks/datasets/d4rl_stats.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.datasets.d4rl_stats import (
    NOT_IN_CARD,
    NOT_PUBLISHED,
    PUBLISHED,
    Convention,
    D4RLStats,
    Published,
    antmaze_generated_values,
    comparison_markdown,
    difference,
    generated_values,
    published_stats,
)

LOCOMOTION = {f"{f}-{lvl}-v2" for f in ("hopper", "walker2d", "halfcheetah", "ant")
              for lvl in ("medium", "medium-replay")}
ANTMAZE = {"antmaze-umaze-v2", "antmaze-umaze-diverse-v2"}
CARDS = Path(__file__).resolve().parents[1] / "paper_tables" / "datasets"

# A small card of the shape the forge writes; only the keys the comparison reads matter.
CARD = {
    "name": "toy-medium", "d4rl_equivalent": "toy-medium-v2",
    "steps_in_file": 1200, "trajectories": 11, "unfinished_tail_steps": 5,
    "normalized_returns": {"min": 2.0, "mean": 30.0, "max": 61.5},
}
STATS = D4RLStats(name="toy-medium-v2", transitions=Published(1000, "source A"),
                  episodes=Published(10, "source B"), normalized_return_mean=Published(32.5, "source C"))


def _row(lines: list[str], label_start: str) -> list[str]:
    """The cells of the table row whose label starts with ``label_start``."""
    (row,) = [line for line in lines if line.startswith(f"| {label_start}")]
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_section_puts_each_published_value_beside_the_generated_one():
    lines = comparison_markdown(CARD, STATS)
    assert lines[0] == "## Compared with D4RL's toy-medium-v2"
    assert _row(lines, "transitions")[1:] == ["1000", "1200", "+200 (1.20x)", "source A"]
    # 11 complete trajectories plus the unfinished tail, counted as TFDS counts D4RL's episodes
    assert _row(lines, "episodes")[1:] == ["10", "12", "+2 (1.20x)", "source B"]
    assert _row(lines, "normalized return of the trajectories, mean")[1:] == [
        "32.5", "30.0", "-2.5 points", "source C"]


def test_a_missing_statistic_is_printed_as_not_published():
    lines = comparison_markdown(CARD, STATS)
    assert _row(lines, "normalized return of the trajectories, max")[1:] == [
        NOT_PUBLISHED, "61.5", "-", "no source found"]
    empty = comparison_markdown(CARD, D4RLStats(name="toy-medium-v2"))
    rows = [line for line in empty if line.startswith("| ") and not line.startswith("| statistic")]
    assert len(rows) == 5 and all(f"| {NOT_PUBLISHED} |" in row for row in rows)


def test_no_recorded_statistics_says_so():
    lines = comparison_markdown(CARD, None)
    assert lines[0] == "## Compared with D4RL's toy-medium-v2"
    assert any("No published statistics of toy-medium-v2 are recorded" in line for line in lines)


def test_generated_values_count_episodes_as_tfds_does():
    assert generated_values({**CARD, "unfinished_tail_steps": 0})["episodes"] == 11
    assert generated_values(CARD)["episodes"] == 12
    assert generated_values({"d4rl_equivalent": "x"}) == dict.fromkeys(
        ("transitions", "episodes", "normalized_return_mean", "normalized_return_min",
         "normalized_return_max"))


def test_difference_reads_as_count_or_points():
    assert difference(150, 100, "count") == "+50 (1.50x)"
    assert difference(90, 100, "count") == "-10 (0.90x)"
    assert difference(5, 0, "count") == "+5"
    assert difference(40.25, 42.0, "score") == "-1.8 points"
    assert difference(None, 1.0, "score") == difference(1.0, None, "count") == "-"


def test_the_table_covers_table1_and_every_number_has_a_source():
    assert set(PUBLISHED) == LOCOMOTION | ANTMAZE
    for name, row in PUBLISHED.items():
        assert published_stats(name) is row
        assert row.maze == (name in ANTMAZE)
        for key in ("transitions", "episodes", "normalized_return_mean", "normalized_return_min",
                    "normalized_return_max", "reward_one_steps", "terminal_steps", "timeout_steps",
                    "collection_episode_steps"):
            pub = getattr(row, key)
            assert pub is None or (pub.source.strip() and pub.value >= 0)
        if row.transitions is not None:
            assert row.episodes.value <= row.transitions.value
    assert published_stats("hopper-random-v2") is None


def test_card_rewritten_from_its_json_gets_the_section_and_leaves_the_data(tmp_path):
    from benchmarks.datasets.__main__ import main as cli

    card = {**CARD, "name": "hopper-medium", "d4rl_equivalent": "hopper-medium-v2", "level": "medium",
            "policy": "p", "env_id": "Hopper-v5", "env_kwargs": {}, "gymnasium": "g", "mujoco": "m",
            "seed": 0, "command": "c", "steps_in_trajectories": 1195, "terminated_trajectories": 11,
            "timeout_trajectories": 0, "lengths": {"min": 1.0, "mean": 2.0, "max": 3.0},
            "returns": {"min": 1.0, "mean": 2.0, "max": 3.0}, "reference": {"min": 0.0, "max": 1.0},
            "env_notes": ["note"], "sha256": "abc", "created": "now"}
    (tmp_path / "hopper-medium.card.json").write_text(json.dumps(card))
    (tmp_path / "hopper-medium.hdf5").write_bytes(b"data")
    assert cli(["card", "hopper-medium", "--data-dir", str(tmp_path)]) == 0
    text = (tmp_path / "hopper-medium.card.md").read_text()
    assert "## Compared with D4RL's hopper-medium-v2" in text
    published = published_stats("hopper-medium-v2").episodes
    assert _row(text.splitlines(), "episodes")[1:3] == [f"{published.value:.0f}", "12"]
    assert text.index("## How the environment differs") < text.index("## Compared with D4RL's")
    assert (tmp_path / "hopper-medium.hdf5").read_bytes() == b"data"


def test_rewriting_a_card_that_does_not_exist_fails_cleanly(tmp_path, capsys):
    from benchmarks.datasets.__main__ import main as cli

    assert cli(["card", "hopper-medium", "--data-dir", str(tmp_path)]) == 2
    assert "no card at" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(LOCOMOTION))
def test_every_recorded_locomotion_dataset_renders_the_five_rows_only(name):
    lines = comparison_markdown({**CARD, "d4rl_equivalent": name}, published_stats(name))
    assert lines[0] == f"## Compared with D4RL's {name}" and len(lines) == 2 + 2 + 5


# ----- AntMaze --------------------------------------------------------------------------------
# A toy AntMaze card: 8 complete trajectories with 0/1 returns of mean 0.25 (2 reached the goal).
MAZE_CARD = {**CARD, "d4rl_equivalent": "toy-maze-v2", "trajectories": 8, "unfinished_tail_steps": 0,
             "terminated_trajectories": 2, "timeout_trajectories": 6,
             "returns": {"min": 0.0, "mean": 0.25, "max": 1.0}, "antmaze_config": {"episode_steps": 700}}
MAZE = D4RLStats(name="toy-maze-v2", maze=True, episodes=Published(40, "source B"),
                 collection_episode_steps=Published(1000, "source D"),
                 conventions=(Convention("episode end", "at the time limit", "source E", "at the goal"),
                              Convention("reward 1", "every step near the goal", "source F", "one step")))


def test_antmaze_rows_put_published_conventions_beside_the_cards_counts():
    lines = comparison_markdown(MAZE_CARD, MAZE)
    # 8 trajectories x mean return 0.25 = 2 steps of reward 1 (rewards are 0 or 1)
    assert _row(lines, "steps with reward 1")[1:] == [NOT_PUBLISHED, "2", "-", "no source found"]
    assert _row(lines, "steps flagged terminal")[1:3] == [NOT_PUBLISHED, "2"]
    assert _row(lines, "steps flagged timeout")[1:3] == [NOT_PUBLISHED, "6"]
    assert _row(lines, "time limit of a data-collection episode")[1:] == [
        "1000", "700", "-300 (0.70x)", "source D"]
    assert _row(lines, "episodes")[1:3] == ["40", "8"]  # no tail: the trajectories alone


def test_an_antmaze_count_the_card_lacks_says_so():
    card = {k: v for k, v in MAZE_CARD.items() if k not in ("antmaze_config", "timeout_trajectories")}
    assert antmaze_generated_values(card)["collection_episode_steps"] is None
    lines = comparison_markdown(card, MAZE)
    assert _row(lines, "time limit of a data-collection episode")[1:4] == ["1000", NOT_IN_CARD, "-"]
    assert _row(lines, "steps flagged timeout")[2] == NOT_IN_CARD
    assert antmaze_generated_values({}) == dict.fromkeys(
        ("reward_one_steps", "terminal_steps", "timeout_steps", "collection_episode_steps"))


def test_conventions_table_lists_each_convention_with_its_source():
    lines = comparison_markdown(MAZE_CARD, MAZE)
    start = lines.index("### How toy-maze-v2 and the generated file were made (conventions, not numbers)")
    table = lines[start + 2:]
    assert table[0] == "| what | D4RL's toy-maze-v2 | generated | D4RL source |"
    assert table[2:] == ["| episode end | at the time limit | at the goal | source E |",
                         "| reward 1 | every step near the goal | one step | source F |"]
    # a locomotion dataset has neither the AntMaze rows nor a conventions table
    plain = comparison_markdown(CARD, STATS)
    assert not any(line.startswith("###") or "steps flagged" in line for line in plain)


@pytest.mark.parametrize("name", sorted(ANTMAZE))
def test_antmaze_records_say_where_each_fact_was_published(name):
    row = published_stats(name)
    assert row.maze and row.transitions.value == 1_000_000
    assert row.collection_episode_steps.value == 1000
    assert "d4rl_antmaze" in row.episodes.source and "tensorflow" in row.episodes.source
    # no source gives these counts for D4RL's files: they stay unpublished, not estimated
    assert row.reward_one_steps is None and row.terminal_steps is None and row.timeout_steps is None
    topics = [c.topic for c in row.conventions]
    assert len(set(topics)) == len(topics) >= 5
    for c in row.conventions:
        assert "https://" in c.source and c.d4rl.strip() and c.generated.strip()
    lines = comparison_markdown({**CARD, "d4rl_equivalent": name}, row)
    assert len(lines) == 2 + 2 + 5 + 4 + 5 + len(row.conventions)


def test_tfds_counts_of_the_two_umaze_files_are_recorded():
    assert published_stats("antmaze-umaze-v2").episodes.value == 10154
    assert published_stats("antmaze-umaze-diverse-v2").episodes.value == 1036


@pytest.mark.parametrize("name", ["antmaze-umaze", "antmaze-umaze-diverse"])
def test_committed_antmaze_cards_carry_the_comparison_of_their_json(name):
    card = json.loads((CARDS / f"{name}.card.json").read_text())
    text = (CARDS / f"{name}.card.md").read_text()
    section = comparison_markdown(card, published_stats(card["d4rl_equivalent"]))
    assert "\n".join(section) in text
    assert _row(section, "steps flagged terminal")[2] == str(card["terminated_trajectories"])
