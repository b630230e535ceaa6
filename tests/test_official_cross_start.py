"""The cross-start diagnostic (benchmarks/official/cross_start.py): its readings from the runs'
curves, and, where ``ODT_OFFICIAL_SRC`` holds the official online-dt code, that our state set into
the official Experiment continues as ours does (skipped without it: CI has no official code)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import stats

from benchmarks.official import components as C
from benchmarks.official import cross_start as X
from benchmarks.official.online_components import full_batches

SOURCE = os.environ.get("ODT_OFFICIAL_SRC", "")
needs_official = pytest.mark.skipif(not SOURCE or not (Path(SOURCE) / "main.py").is_file(),
                                    reason="ODT_OFFICIAL_SRC does not name the official online-dt code")


def test_a_runs_readings_are_its_online_evaluations_mean_and_last():
    rows = [{"phase": "pretrain", "score_mean": 90.0}, {"phase": "online", "score_mean": 30.0},
            {"phase": "online", "score_mean": 40.0}, {"phase": "online", "score_mean": 35.0}]
    assert X.online_readings(rows) == {"online_mean": 35.0, "final": 35.0}
    with pytest.raises(ValueError, match="without online"):
        X.online_readings(rows[:1])


def test_paired_reading_is_the_paired_t_test_of_ours_minus_official():
    rng = np.random.default_rng(3)
    ours = {s: {"online_mean": 35 + rng.normal(0, 3), "final": 35 + rng.normal(0, 6)} for s in range(5, 10)}
    official = {s: {"online_mean": ours[s]["online_mean"] + 6 + rng.normal(0, 1), "final": 40.0 + s}
                for s in range(5, 10)}
    official[10] = {"online_mean": 0.0, "final": 0.0}  # no pair: left out
    primary, secondary = X.paired_readings(ours, official)
    a = [ours[s]["online_mean"] for s in range(5, 10)]
    b = [official[s]["online_mean"] for s in range(5, 10)]
    ref = stats.ttest_rel(a, b)
    assert primary.interval.p_value == pytest.approx(ref.pvalue) and primary.interval.n_a == 5
    assert (primary.interval.low, primary.interval.high) == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert primary.verdict == "the official loop higher from the same start"
    assert secondary.metric == "final" and secondary.ours.size == 5


def test_paired_reading_says_equivalent_only_inside_the_margin():
    ours = {s: {"online_mean": 35.0 + 0.1 * s, "final": 35.0 + 4 * (-1) ** s} for s in range(6)}
    official = {s: {"online_mean": 35.0 + 0.1 * s + 0.2 * (-1) ** s, "final": 35.0 - 4 * (-1) ** s} for s in range(6)}
    primary, secondary = X.paired_readings(ours, official)
    assert primary.verdict == f"equivalent within ±{X.MARGIN:g}"
    assert secondary.verdict == "inconclusive"  # differences of +-8: wide, centred on 0
    with pytest.raises(ValueError, match="2 or more seeds"):
        X.paired_readings({1: ours[1]}, {1: official[1]})


def test_a_missing_state_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="no such state file"):
        X.read_state(tmp_path / "_pretrained" / "odt-s5-x" / "ckpt-000000005000.pt")


@needs_official
def test_our_state_set_into_the_official_experiment_continues_as_ours():
    """Three of our updates give our learner moments, a step count and a temperature the official
    Experiment does not have; once set into it, one update of each code on the same batch and
    noise agrees as the component check's single update does (TOL_FLOAT32_UPDATE on its norm)."""
    cfg = C.component_config(0)
    cfg = replace(cfg, optim=replace(cfg.optim, warmup_steps=2))
    with C.official_session(Path(SOURCE), C.synthetic_data(0)) as session:
        pair = C.build_pair(session, cfg, torch.float32)
        exp, trainer = pair.experiment, pair.trainer
        batches = full_batches(session, pair, 4, seed=0)
        for i, b in enumerate(batches[:3]):
            torch.manual_seed(100 + i)
            trainer.update(C.our_batch(b))
        updates = X.set_official_state(exp, trainer.learner, pair.mapping)
        assert updates == 3 and exp.optimizer.param_groups[0]["step"] == 3
        assert C.mapped_difference(C._params(exp.model), C._params(trainer.model), pair.mapping)[0][0] == 0.0
        assert exp.optimizer.param_groups[0]["lr"] == pytest.approx(trainer.optimizer.param_groups[0]["lr"])
        assert float(exp.model.log_temperature.detach()) == float(trainer.log_lambda.detach())
        adam_o = exp.log_temperature_optimizer.state[exp.model.log_temperature]
        adam_u = trainer.lambda_optimizer.state[trainer.log_lambda]
        assert {k: float(v) for k, v in adam_o.items()} == {k: float(v) for k, v in adam_u.items()}
        assert int(adam_o["step"]) == 3
        rows = C.Rows("one update from the set state", torch.float32, C.TOL_FLOAT32_TERMS)
        C.full_step_rows(session, pair, batches[3], rows, seed=7)
        judged = {r.check: r for r in rows.out}
        for check in ("trainer step: update (delta parameters)", "trainer step: loss",
                      "trainer step: temperature lambda after the dual step",
                      "trainer step: learning rate after the warmup step"):
            assert judged[check].ok, (check, judged[check])
