"""The side-by-side settings of ``official-odt`` (benchmarks/official/settings.py): the driver's
mapping for walker2d-medium and hopper-medium against values typed here from the paper's appendix
tables and the cpu preset's stated rules, and, where ``ODT_OFFICIAL_SRC`` holds the official
code, the values an official Experiment is built with (skipped without it: CI has no official code).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from benchmarks.official import components as C
from benchmarks.official import settings as S
from benchmarks.official.driver import official_variant
from odt.config import PAPER_ONLINE_TABLE, make_config
from rlbase.trajectories import Trajectories

SOURCE = os.environ.get("ODT_OFFICIAL_SRC", "")
needs_official = pytest.mark.skipif(not SOURCE or not (Path(SOURCE) / "main.py").is_file(),
                                    reason="ODT_OFFICIAL_SRC does not name the official online-dt code")

# Table C.4 (tbl:odt_hp_online) of the paper, typed from its rows: pretraining updates, buffer
# size, embedding size, learning rate, weight decay, eval context length, g_eval, g_online, position.
PAPER_C4 = {
    "hopper-medium": (5000, 1000, 512, 0.0001, 0.0005, 5, 3600, 7200, False),
    "walker2d-medium": (10000, 1000, 512, 0.001, 0.001, 5, 5000, 10000, False),
}
C4_KEYS = ("pretrain_updates", "buffer_size", "embed_dim", "lr", "weight_decay", "eval_context_len", "g_eval",
           "g_online", "positional_embedding")


@pytest.fixture(scope="module")
def both():
    return [S.dataset_settings(d, "cpu", None, with_data=False) for d in ("walker2d-medium", "hopper-medium")]


@pytest.mark.parametrize("dataset", sorted(PAPER_C4))
def test_the_configs_table_is_the_papers(dataset):
    assert tuple(PAPER_ONLINE_TABLE[dataset][k] for k in C4_KEYS) == PAPER_C4[dataset]


def test_walker2d_at_the_cpu_preset_in_both_codes(both):
    """Each walker2d-medium value both codes run: the paper's (Table C.4) where the cpu preset
    keeps it, its stated rule where it scales (pretraining /2, buffer /40, budget /40, width 64,
    3 layers, batch 64, warmup 1000, LAMB rates raised to at least 1e-3)."""
    walker = both[0]
    expected = {"g_eval": 5000.0, "g_online": 10000.0, "reward_scale": 0.001, "pretrain_updates": 5000,
                "pretrain_eval_every": 1000, "lr": 1e-3, "warmup": 1000, "online_lr": 1e-3, "weight_decay": 1e-3,
                "max_ep_len": 1000, "context_len": 20, "eval_context_len": 5, "positional": False, "buffer_size": 25,
                "updates_per_round": 300, "online_samples": 5000, "eval_every_rounds": 5, "init_lambda": 0.1,
                "target_entropy": -6.0, "lambda_lr": 1e-4, "batch_size": 64, "grad_clip": 0.25, "embed_dim": 64,
                "n_layers": 3, "n_heads": 4, "dropout": 0.1, "embed_dropout": 0.1, "log_std_bounds": (-5.0, 2.0),
                "eval_episodes": 10}
    for side in (walker.ours, walker.official):
        got = {k: side[k] for k in expected}
        assert all(S.same(got[k], v) for k, v in expected.items()), {k: (got[k], v) for k, v in expected.items()
                                                                     if not S.same(got[k], v)}


def test_the_codes_differ_only_in_hoppers_evaluation_cadence(both):
    """hopper-medium pretrains 2500 updates: the official code evaluates after each of its
    iterations of gcd(1000, 2500) = 500 updates, ours every 1000; walker2d's 5000 give 1000 in both."""
    differ = {(s.dataset, k) for s in both for k in S.ROWS if k not in S.DATA_ROWS
              and not S.same(s.ours[k], s.official[k])}
    assert differ == {("hopper-medium", "pretrain_eval_every")}
    assert both[1].official["pretrain_eval_every"] == 500


def test_every_value_follows_the_paper_by_the_presets_rule(both):
    text = "\n".join(S.paper_table(both, "cpu"))
    assert "DIFFERS" not in text and text.count("as the rule") == 2 * len(S.expected_from_paper("walker2d-medium", "cpu"))


def test_a_value_off_its_rule_is_flagged(both):
    walker = both[0]
    drifted = S.DatasetSettings(walker.dataset, {**walker.ours, "weight_decay": 5e-4}, walker.official, "variant")
    row = next(r for r in S.paper_table([drifted], "cpu") if "weight decay" in r)
    assert "**DIFFERS**" in row and "| 0.0005 | 0.001 |" in row


def test_the_paper_preset_keeps_every_paper_value():
    for dataset in PAPER_C4:
        expected = S.expected_from_paper(dataset, "paper")
        assert all(paper == gives for paper, gives, _ in expected.values())
        s = S.dataset_settings(dataset, "paper", None, with_data=False)
        assert all(S.same(s.ours[k], gives) for k, (_, gives, _) in expected.items())


def test_data_rows_from_trajectories():
    """The pretraining set, the top-N buffer and the padded shares, from a small dataset."""
    rng = np.random.default_rng(0)
    lengths = (30, 5, 12, 40)
    data = Trajectories.from_episodes([
        {"observations": rng.normal(size=(n, 3)).astype(np.float32), "actions": np.zeros((n, 2), np.float32),
         "rewards": np.full(n, r, np.float32), "terminated": False} for n, r in zip(lengths, (1.0, 9.0, 0.5, 2.0))])
    cfg = make_config("walker2d-medium", "online", "cpu", {"online.buffer_size": 2})
    view = S.ours_from_data(cfg, data)
    assert view.pretrain_trajectories == 4 and view.pretrain_steps == sum(lengths)
    assert view.buffer_returns.tolist() == [45.0, 80.0] and view.buffer_lengths.tolist() == [5, 40]
    k = 20
    padded = sum(max(0, k - (n - s)) for n in lengths for s in range(n)) / (sum(lengths) * k)
    assert view.rows(k)["padding_pretrain"] == f"{padded:.2%}"
    np.testing.assert_allclose(view.state_mean, data.observations.mean(axis=0), rtol=1e-6)


def test_cli_prints_both_datasets_and_refuses_an_unknown_one(capsys):
    assert S.main(["walker2d-medium", "hopper-medium", "--no-data"]) == 0
    out = capsys.readouterr().out
    assert "| walker2d-medium | pretraining updates | Table C.4 (tbl:odt_hp_online) | 10000 | /2 | 5000 |" in out
    assert S.main(["walker9-medium", "--no-data"]) == 2
    assert "walker9-medium" in capsys.readouterr().err


@needs_official
def test_an_official_experiment_is_built_with_the_mapped_values():
    """An official Experiment built as the driver builds it, on synthetic walker-shaped data: its
    reward scale, target entropy, temperature and its optimizer, context lengths, buffer and
    embedding dropout are the ones the settings table states; it pretrains on all but the
    lowest-return trajectory and normalises states as we do."""
    cfg = make_config("walker2d-medium", "online", "cpu", {"seed": 0, "device": "cpu"})
    data = C.synthetic_data(0, "walker2d-medium")
    stated = S.official_from_variant(official_variant(cfg, "walker2d-medium", 6), "walker2d-medium", 6)
    with S.official_experiment(Path(SOURCE), cfg, "walker2d-medium", data,
                               lambda: C.ShapeOnlyEnv(17, 6)) as exp:
        read, view = S.official_from_experiment(exp)
    assert all(S.same(v, stated[k]) for k, v in read.items()), {k: (v, stated[k]) for k, v in read.items()}
    mine = S.ours_from_data(cfg, data)
    assert view.pretrain_trajectories == len(data) - 1
    assert S.max_rel(view.state_mean, mine.state_mean) < 1e-6 and S.max_rel(view.state_std, mine.state_std) < 1e-6
