"""The named seed streams give the integers the runs have always used (records stay comparable),
and no stream is written out anywhere else in the algorithms."""

from __future__ import annotations

import re
from pathlib import Path

from odt.config import PAPER_OFFLINE_TABLE, PAPER_ONLINE_TABLE
from rlbase import seeds
from rlbase.protocol import DATASETS, known_datasets

REPO = Path(__file__).resolve().parent.parent


def test_each_stream_is_the_integer_the_runs_used():
    assert seeds.evaluation_seeds(2, 3, 4) == [10_200_012, 10_200_013, 10_200_014, 10_200_015]
    assert seeds.exploration_seed(3, 2) == 20_300_002  # ODT round 2, IQL online episode 2, seed 3
    assert seeds.device_batch_seed(7) == 30_000_007
    assert seeds.sac_episode_seed(2, 5) == 32_000_005
    assert seeds.iql_sampling_seed(4) == 5
    assert seeds.run_seed(9) == 9
    assert seeds.random_episode_seed(5, 3) == 8
    assert seeds.forge_episode_seed(2, 7) == 42_000_007  # the locomotion forge's episode 7, seed 2
    assert seeds.antmaze_check_seed(3, 4) == 50_030_004
    assert seeds.antmaze_forge_episode_seed(1, 0) == 61_000_000


def test_no_seed_base_is_written_out_in_the_algorithms_or_the_harness():
    pattern = re.compile(r"\b[1-9]0_000_000\b")
    found = [f"{path.relative_to(REPO)}:{i}" for package in ("rlbase", "odt", "baselines", "benchmarks")
             for path in sorted((REPO / package).rglob("*.py")) if path.name != "seeds.py"
             for i, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, "seed bases outside rlbase/seeds.py: " + ", ".join(found)


def test_the_datasets_every_method_knows_are_odts_table_rows():
    assert set(DATASETS) == set(PAPER_ONLINE_TABLE) == set(PAPER_OFFLINE_TABLE)
    assert known_datasets() == sorted(DATASETS)
