"""The decision rule of PROTOCOL-antmaze-sizing-cpu.md on hand-made curves (no training)."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.experiments import expand
from benchmarks.methods import METHODS, method_config
from studies.antmaze_sizing import analysis as sizing


def _curve(points: dict[int, tuple[float, float]]) -> pd.DataFrame:
    """{updates: (seed 100's score, seed 101's)} -> rows (updates, seed, score)."""
    return pd.DataFrame([{"updates": n, "seed": 100 + i, "score": v}
                         for n, pair in points.items() for i, v in enumerate(pair)])


def test_learning_needs_every_seed_at_the_point_and_the_next():
    # 5000: one seed only; 7500: both, but 10000 falls back; 12500 and 15000: both -> 12500
    c = _curve({2500: (0, 0), 5000: (40, 10), 7500: (35, 31), 10000: (50, 20), 12500: (30, 45), 15000: (60, 33)})
    assert sizing.learns_at(c) == 12500
    assert sizing.learns_at(_curve({2500: (0, 0), 5000: (10, 20), 7500: (31, 30)})) == 7500  # the last counts alone
    assert sizing.learns_at(_curve({2500: (0, 0), 5000: (29.9, 80)})) is None
    assert sizing.learns_at(_curve({2500: (50, 50)})[lambda d: d.seed == 100]) is None  # one seed is not two


def _flat(score_2500: float, score_end: float, end: int = 20000) -> pd.DataFrame:
    return _curve({2500: (score_2500, score_2500), end // 2: (score_2500, score_2500), end: (score_end, score_end)})


def test_decision_takes_the_first_learned_budget_and_shares_it_between_dt_and_odt_offline():
    curves = {"dt": _curve({2500: (0, 0), 5000: (10, 5), 7500: (35, 40), 10000: (38, 44)}),
              "odt-offline": _curve({2500: (0, 0), 5000: (31, 33), 7500: (30, 50), 10000: (60, 61)}),
              "odt": _flat(0, 15), "iql": _flat(0, 70, end=180000)}
    per_update = {"dt": 0.002, "odt-offline": 0.002, "odt": 0.002, "iql": 0.0004}
    d = sizing.decide(curves, per_update)
    assert d.learned == {"dt": 7500, "odt-offline": 5000, "odt": None, "iql": 180000}
    assert d.offline_updates == 5000  # the smaller U of the two offline-only methods
    assert d.pretrain_updates == 20000  # odt did not learn but gained 15 >= 10 points to the curve's end
    assert d.minutes["odt-offline"] == pytest.approx(10.0) and d.minutes["iql"] == pytest.approx(72.0)
    assert d.criterion_met  # odt-offline within 40 minutes


def test_without_learning_or_gain_the_preset_keeps_its_budgets():
    curves = {m: _flat(0, 5) for m in ("dt", "odt-offline", "odt")} | {"iql": _flat(0, 20, end=180000)}
    d = sizing.decide(curves, {m: 0.002 for m in curves})
    assert (d.offline_updates, d.pretrain_updates, d.criterion_met) == (2500, 3500, False)
    slow = {m: _flat(0, 5) for m in ("dt", "odt-offline", "odt")} | {"iql": _flat(0, 40, end=180000)}
    d = sizing.decide(slow, {m: 0.002 for m in slow})
    assert d.learned["iql"] == 180000 and not d.criterion_met  # learned, but in 360 minutes
    with pytest.raises(ValueError, match="odt"):
        sizing.decide({k: v for k, v in curves.items() if k != "odt"}, {})


def test_the_experiment_runs_what_the_protocol_says():
    specs = expand("antmaze_sizing", "cpu", registered=list(METHODS))
    assert sorted({s.seed for s in specs}) == [100, 101]
    for s in specs:
        cfg = method_config(s.method, s.dataset, s.preset, s.seed, s.overrides_dict)
        if s.method == "iql":
            assert (cfg.offline_updates, cfg.online_samples, cfg.eval_every_updates) == (180_000, 0, 10_000)
        else:
            assert (cfg.pretrain_updates, cfg.online.online_samples, cfg.eval_every_updates) == (20_000, 0, 2500)
        assert cfg.eval_episodes == 100


def test_the_figures_dashed_line_is_the_rules_threshold():
    from benchmarks.plots import (
        ANTMAZE_LEARNED,  # the harness draws the line; the study owns the rule
    )
    assert ANTMAZE_LEARNED == sizing.LEARNED
