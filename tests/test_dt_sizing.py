"""The decision rule of PROTOCOL-dt-sizing-cpu.md, on hand-made scores."""

import pandas as pd
import pytest

from studies.dt_sizing import analysis as dt_sizing


def _finals(means: dict[float, tuple[float, float]]) -> pd.DataFrame:
    """rate -> (dataset a's mean, dataset b's mean); two seeds each at mean -/+ 1."""
    rows = [{"rate": r, "dataset": d, "seed": s, "final_score": m + (-1 if s == 100 else 1)}
            for r, pair in means.items() for d, m in zip("ab", pair) for s in (100, 101)]
    return pd.DataFrame(rows)


def test_a_rate_clearly_better_everywhere_is_adopted():
    d = dt_sizing.decide(_finals({1e-4: (20, 30), 3e-4: (26, 32), 1e-3: (24, 31)}))
    assert d.s == {1e-4: 25.0, 3e-4: 29.0, 1e-3: 27.5}
    assert d.best == 3e-4 and d.rate == 3e-4


def test_the_smaller_rate_wins_a_tie_within_one_point():
    d = dt_sizing.decide(_finals({1e-4: (20, 30), 3e-4: (26, 32), 1e-3: (27, 32.5)}))  # S 29 vs 29.75
    assert d.best == 3e-4 and d.rate == 3e-4


def test_a_gain_under_three_points_keeps_the_paper_rate():
    d = dt_sizing.decide(_finals({1e-4: (20, 30), 3e-4: (22, 32.5), 1e-3: (10, 30)}))  # +2.25
    assert d.best == 3e-4 and d.rate == 1e-4 and "keeps" in d.why


def test_a_large_loss_on_one_dataset_keeps_the_paper_rate():
    d = dt_sizing.decide(_finals({1e-4: (20, 30), 3e-4: (34, 24.5), 1e-3: (10, 10)}))  # +4.25 but b -5.5
    assert d.best == 3e-4 and d.rate == 1e-4 and "loses 5.5" in d.why


def test_missing_cells_or_seeds_give_no_decision():
    finals = _finals({1e-4: (20, 30), 3e-4: (26, 32)})
    with pytest.raises(ValueError):
        dt_sizing.decide(finals[~((finals.rate == 3e-4) & (finals.dataset == "b"))])
    with pytest.raises(ValueError):  # one seed of one cell still running
        dt_sizing.decide(finals[~((finals.rate == 3e-4) & (finals.dataset == "b") & (finals.seed == 101))])


def test_rates_parse_from_variants_and_scores_read_at_checkpoints():
    assert dt_sizing.rate_of("lr=0.0003") == 3e-4
    with pytest.raises(ValueError):
        dt_sizing.rate_of("default")
    curves = pd.DataFrame({"run_id": ["x"] * 3, "updates": [1000, 2000, 2500], "score_mean": [5.0, 7.0, 9.0]})
    assert dt_sizing.score_at(curves, 2000).to_dict() == {"x": 7.0}
    assert dt_sizing.score_at(curves, 1500).to_dict() == {"x": 5.0}
