"""The reading of PROTOCOL-antmaze-budget-cpu.md (studies/antmaze_budget/analysis.py): the primary
B - O and the secondary B - W as Welch intervals, the outcomes at the protocol's thresholds, B's
curve at CORL's published points, and the refusal of a record on another file. Frames are built
here; expectations computed with scipy and numpy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.reproduction import MixedContents
from studies.antmaze_budget import analysis as B

ARM_O = [9.0, 0.0, 0.0, 3.0, 0.0]
ARM_W = [64.0, 60.0, 55.0, 66.0, 62.0]


def run(experiment, seed, score, data_file="b7b9dc8f"):
    return {"preset": "cpu", "experiment": experiment, "method": "iql", "dataset": "antmaze-umaze", "seed": seed,
            "run_id": f"{experiment}__iql__s{seed}", "status": "complete", "offline_score": float(score),
            "final_score": float(score), "data_file": data_file}


def frame(b) -> pd.DataFrame:
    rows = [run("table1", s, v) for s, v in enumerate(ARM_O)]
    rows += [run("antmaze_actor", s, v) for s, v in enumerate(ARM_W)]
    rows += [run("antmaze_budget", s, v) for s, v in enumerate(b)]
    return pd.DataFrame(rows)


def test_arms_are_told_apart_by_experiment_and_read_with_welch():
    b = [40.0, 45.0, 50.0, 35.0, 42.0]
    found = B.READING.comparisons(frame(b))
    for pair, other in ((("B", "O"), ARM_O), (("B", "W"), ARM_W)):
        welch = stats.ttest_ind(b, other, equal_var=False)
        assert found[pair].estimate == pytest.approx(np.mean(b) - np.mean(other))
        assert found[pair].p_value == pytest.approx(welch.pvalue)
    assert B.READING.outcome(frame(b), found[("B", "O")]).startswith("at the paper's budget IQL reaches the goal")


def test_outcomes_below_and_between_the_thresholds_and_before_five_seeds():
    low = frame([0.0, 2.0, 5.0, 1.0, 0.0])
    assert B.READING.outcome(low, B.READING.comparisons(low)[("B", "O")]).startswith("the paper's budget does not rescue")
    middle = frame([15.0, 20.0, 18.0, 22.0, 16.0])
    assert B.READING.outcome(middle, B.READING.comparisons(middle)[("B", "O")]).startswith("none of the registered branches")
    partial = frame([40.0, 45.0])
    assert B.READING.comparisons(partial)[("B", "O")] is None and B.READING.outcome(partial, None).startswith("not read yet")


def test_the_curve_is_read_at_corls_points_last_row_per_seed_complete_runs_only():
    rows = []
    for seed, (at_1e5, at_2e5, end) in enumerate([(10.0, 20.0, 50.0), (0.0, 30.0, 70.0)]):
        for step, (updates, score) in enumerate([(100_000, at_1e5), (200_000, at_2e5), (1_000_000, 1.0),
                                                 (1_000_000, end)]):  # the phase end repeats the last point
            rows.append({"method": "iql", "status": "complete", "seed": seed, "step": step, "updates": updates,
                         "score_mean": score})
    rows.append({"method": "iql", "status": "partial", "seed": 2, "step": 0, "updates": 100_000, "score_mean": 99.0})
    lines = B.curve_table(pd.DataFrame(rows))
    assert lines[2].startswith("| 100,000 | 10, 0 | 5.0") and lines[2].endswith("| 14 |")
    assert lines[3].startswith("| 200,000 | 20, 30 | 25.0")
    assert lines[4].startswith("| 1,000,000 | 50, 70 | 60.0") and lines[4].endswith("| 77 |")


def test_a_record_on_another_file_is_refused():
    runs = pd.concat([frame([40.0] * 5), pd.DataFrame([run("antmaze_budget", 5, 1.0, "deadbeef")])])
    with pytest.raises(MixedContents, match="deadbeef"):
        B.report_lines(runs, pd.DataFrame(columns=["method", "status", "seed", "step", "updates", "score_mean"]), "cpu")


def test_the_experiment_is_the_protocols_arm_b():
    from benchmarks.experiments import expand
    from benchmarks.methods import method_config
    specs = expand("antmaze_budget", "cpu")
    assert sorted((s.method, s.dataset, s.seed) for s in specs) == [("iql", "antmaze-umaze", s) for s in range(5)]
    table1 = method_config("iql", "antmaze-umaze", "cpu", 0, {})
    for s in specs:
        cfg = method_config(s.method, s.dataset, s.preset, s.seed, s.overrides_dict)
        assert (cfg.offline_updates, cfg.online_samples) == (1_000_000, 0)
        # everything else is Table 1's cell
        assert (cfg.temperature, cfg.expectile, cfg.batch_size, cfg.discount) == (
            table1.temperature, table1.expectile, table1.batch_size, table1.discount) == (10.0, 0.9, 256, 0.99)
        assert cfg.eval_every_updates == table1.eval_every_updates == 10_000
