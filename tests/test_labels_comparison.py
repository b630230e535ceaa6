"""The reading of PROTOCOL-antmaze-labels-cpu.md (studies/antmaze_labels/analysis.py): arm L's seed
rule (three seeds when their mean is 20 points above arm O's, else five), the primary L - O as a
Welch interval, Holm over BL - BO and L - BL, the outcomes, and the refusal of a record on another
file. Frames are built here; expectations computed with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.reproduction import MixedContents
from studies.antmaze_labels import analysis as L

NEW, OLD = "antmaze-umaze-d4rlstyle", "antmaze-umaze"
ARM_O = [9.0, 0.0, 0.0, 3.0, 0.0]
BO = [61.0, 66.0, 57.0, 55.0, 55.0]


def run(method, dataset, seed, score, data_file=None):
    experiment = "antmaze_labels" if dataset == NEW else "table1"
    return {"preset": "cpu", "experiment": experiment, "method": method, "dataset": dataset, "seed": seed,
            "run_id": f"{method}__{dataset}__s{seed}", "status": "complete", "offline_score": float(score),
            "final_score": float(score) + 1.0, "data_file": data_file or {NEW: "7fca558f", OLD: "b7b9dc8f"}[dataset]}


def frame(labels, bl=(60.0, 62.0, 58.0, 64.0, 59.0)) -> pd.DataFrame:
    rows = [run("iql", OLD, s, v) for s, v in enumerate(ARM_O)] + [run("bc", OLD, s, v) for s, v in enumerate(BO)]
    rows += [run("iql", NEW, s, v) for s, v in enumerate(labels)] + [run("bc", NEW, s, v) for s, v in enumerate(bl)]
    return pd.DataFrame(rows)


def test_seed_rule_stops_at_three_only_twenty_points_above_arm_o():
    # arm O's seeds 0-2 average 3.0: L's first three must average 23 or more
    assert L.labels_seeds(frame([23.0, 23.0, 23.0])) == range(3)
    assert L.labels_seeds(frame([22.0, 23.0, 23.0])) is None  # seeds 3-4 asked for, not run
    assert L.labels_seeds(frame([22.0, 23.0, 23.0, 1.0, 2.0])) == range(5)
    assert L.labels_seeds(frame([40.0, 40.0])) is None  # seed 2 missing


def test_primary_is_welch_on_the_rule_seeds_and_secondaries_get_holm():
    labels, bl = [30.0, 35.0, 40.0], [60.0, 62.0, 58.0, 64.0, 59.0]
    found = L.comparisons(frame(labels, bl))
    welch = stats.ttest_ind(labels, ARM_O, equal_var=False)
    assert found[("L", "O")].estimate == pytest.approx(np.mean(labels) - np.mean(ARM_O))
    assert found[("L", "O")].p_value == pytest.approx(welch.pvalue)
    p1 = stats.ttest_ind(bl, BO, equal_var=False).pvalue
    p2 = stats.ttest_ind(labels, bl, equal_var=False).pvalue
    low, high = sorted([p1, p2])
    holm = {low: min(1.0, 2 * low), high: max(min(1.0, 2 * low), high)}
    line = next(x for x in L.comparison_table(frame(labels, bl), found) if x.startswith("| BL − BO |"))
    assert f"| {holm[p1]:.3f} |" in line


def test_outcomes():
    # labels rescue IQL, BC alike on both files
    rescued = frame([30.0, 35.0, 40.0], bl=[60.0, 62.0, 58.0, 56.0, 59.0])
    assert L.outcome(rescued, L.comparisons(rescued)).startswith("the labels are why")
    # IQL helped, but BC on the new file differs too
    both = frame([30.0, 35.0, 40.0], bl=[90.0, 91.0, 89.0, 92.0, 90.0])
    assert L.outcome(both, L.comparisons(both)).startswith("the new file helps IQL")
    # no rescue: five seeds near zero
    failed = frame([0.0, 1.0, 0.0, 2.0, 0.0])
    assert L.outcome(failed, L.comparisons(failed)).startswith("D4RL's labelling does not rescue")
    # between the branches
    middle = frame([8.0, 10.0, 6.0, 9.0, 12.0])
    assert L.outcome(middle, L.comparisons(middle)).startswith("none of the registered branches")


def test_primary_waits_for_the_bc_arms_before_the_outcome():
    runs = frame([30.0, 35.0, 40.0], bl=[60.0, 62.0])
    found = L.comparisons(runs)
    assert found[("BL", "BO")] is None and found[("L", "O")] is not None
    assert "not settled" in L.outcome(runs, found)


def test_a_record_on_another_file_is_refused():
    runs = frame([30.0, 35.0, 40.0])
    runs.loc[runs.index[-1], "data_file"] = "deadbeef"
    with pytest.raises(MixedContents, match="deadbeef"):
        L.report_lines(runs, "cpu")
