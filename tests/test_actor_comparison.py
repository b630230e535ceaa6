"""The reading of PROTOCOL-antmaze-actor-cpu.md (studies/antmaze_actor/analysis.py): the primary W - O
and the secondary W - BO as Welch intervals, the outcomes at the protocol's thresholds, and the
refusal of a record on another file. Frames are built here; expectations computed with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.reproduction import MixedContents
from studies.antmaze_actor import analysis as A

ARM_O = [9.0, 0.0, 0.0, 3.0, 0.0]
ARM_BO = [61.0, 66.0, 57.0, 55.0, 55.0]


def run(experiment, method, seed, score, data_file="b7b9dc8f"):
    return {"preset": "cpu", "experiment": experiment, "method": method, "dataset": "antmaze-umaze", "seed": seed,
            "run_id": f"{experiment}__{method}__s{seed}", "status": "complete", "offline_score": float(score),
            "final_score": float(score), "data_file": data_file}


def frame(w) -> pd.DataFrame:
    rows = [run("table1", "iql", s, v) for s, v in enumerate(ARM_O)]
    rows += [run("table1", "bc", s, v) for s, v in enumerate(ARM_BO)]
    rows += [run("antmaze_actor", "iql", s, v) for s, v in enumerate(w)]
    return pd.DataFrame(rows)


def test_arms_are_told_apart_by_experiment_and_read_with_welch():
    w = [40.0, 45.0, 50.0, 35.0, 42.0]
    found = A.READING.comparisons(frame(w))
    for (left, right), other in ((("W", "O"), ARM_O), (("W", "BO"), ARM_BO)):
        welch = stats.ttest_ind(w, other, equal_var=False)
        assert found[(left, right)].estimate == pytest.approx(np.mean(w) - np.mean(other))
        assert found[(left, right)].p_value == pytest.approx(welch.pvalue)
    assert A.READING.outcome(frame(w), found[("W", "O")]).startswith("IQL's actor imitates the file")


def test_outcomes_below_and_between_the_thresholds():
    low = frame([0.0, 2.0, 5.0, 1.0, 0.0])
    assert A.READING.outcome(low, A.READING.comparisons(low)[("W", "O")]).startswith("IQL's actor does not imitate")
    middle = frame([15.0, 20.0, 18.0, 22.0, 16.0])
    assert A.READING.outcome(middle, A.READING.comparisons(middle)[("W", "O")]).startswith("none of the registered branches")


def test_nothing_is_read_before_five_seeds():
    runs = frame([40.0, 45.0])
    assert A.READING.comparisons(runs)[("W", "O")] is None
    assert A.READING.outcome(runs, None).startswith("not read yet")


def test_a_record_on_another_file_is_refused():
    runs = pd.concat([frame([40.0] * 5), pd.DataFrame([run("antmaze_actor", "iql", 5, 1.0, "deadbeef")])])
    with pytest.raises(MixedContents, match="deadbeef"):
        A.report_lines(runs, "cpu")
