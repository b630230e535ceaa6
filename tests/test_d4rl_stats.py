"""The card's comparison with D4RL's published statistics (benchmarks/datasets/d4rl_stats.py)."""

from __future__ import annotations

import json

import pytest

from benchmarks.datasets.d4rl_stats import (
    NOT_PUBLISHED,
    PUBLISHED,
    D4RLStats,
    Published,
    comparison_markdown,
    difference,
    generated_values,
    published_stats,
)

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


def test_the_table_covers_table1_locomotion_and_every_number_has_a_source():
    names = {f"{f}-{lvl}-v2" for f in ("hopper", "walker2d", "halfcheetah", "ant")
             for lvl in ("medium", "medium-replay")}
    assert set(PUBLISHED) == names
    for name, row in PUBLISHED.items():
        assert published_stats(name) is row
        for key in ("transitions", "episodes", "normalized_return_mean", "normalized_return_min",
                    "normalized_return_max"):
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


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_recorded_dataset_renders(name):
    lines = comparison_markdown({**CARD, "d4rl_equivalent": name}, published_stats(name))
    assert lines[0] == f"## Compared with D4RL's {name}" and len(lines) == 2 + 2 + 5
