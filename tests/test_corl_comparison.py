"""The reading of PROTOCOL-corl-iql-cpu.md (benchmarks/corl/comparison.py): the AntMaze seed rule,
the primary's verdict, Holm over the secondaries, the outcome and the refusal of other data files.
Frames are built here; expectations are computed independently with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.corl import comparison as K
from benchmarks.reproduction import MixedContents

ANT, HOP = "antmaze-umaze", "hopper-medium"


def run(method, dataset, seed, offline, final, data_file=None):
    experiment = "corl_iql" if method == "corl-iql" else "table1"
    return {"preset": "cpu", "experiment": experiment, "method": method, "dataset": dataset, "seed": seed,
            "run_id": f"{method}__{dataset}__s{seed}", "status": "complete", "offline_score": float(offline),
            "final_score": float(final), "wall_time": 2000.0, "code": "abc1234", "cpu": "some CPU",
            "data_file": data_file or K.CONTENT[dataset]}


OURS_ANT = [9.0, 0.0, 0.0, 3.0, 0.0]  # Table 1's IQL cell


def frame(corl_ant, corl_hop=(), ours_hop=(50.0, 60.0, 40.0, 45.0, 55.0)) -> pd.DataFrame:
    rows = [run("iql", ANT, s, v, v + 1) for s, v in enumerate(OURS_ANT)]
    rows += [run("corl-iql", ANT, s, v, 0.0) for s, v in enumerate(corl_ant)]
    rows += [run("iql", HOP, s, v, v - 5) for s, v in enumerate(ours_hop)]
    rows += [run("corl-iql", HOP, s, v, v - 10) for s, v in enumerate(corl_hop)]
    return pd.DataFrame(rows)


def test_seed_rule_reads_three_seeds_when_far_and_waits_for_five_when_near():
    assert K.corl_antmaze_seeds(frame([4.0, 0.0])) is None  # seeds 0-2 incomplete
    assert K.corl_antmaze_seeds(frame([70.0, 60.0, 80.0])) == range(3)  # mean 70 vs 3: 67 >= 20
    assert K.corl_antmaze_seeds(frame([4.0, 0.0, 1.0])) is None  # near: waits for seeds 3-4
    assert K.corl_antmaze_seeds(frame([4.0, 0.0, 1.0, 2.0])) is None
    assert K.corl_antmaze_seeds(frame([4.0, 0.0, 1.0, 2.0, 0.0])) == range(5)


def test_primary_is_a_welch_interval_read_for_corl_doing_better():
    corl = [4.0, 0.0, 1.0, 2.0, 0.0]
    primary = K.read_all(frame(corl))[0]
    assert (primary.dataset, primary.metric) == K.PRIMARY
    welch = stats.ttest_ind(corl, OURS_ANT, equal_var=False)
    assert primary.interval.estimate == pytest.approx(np.mean(corl) - np.mean(OURS_ANT))
    assert primary.interval.p_value == pytest.approx(welch.pvalue)
    assert primary.verdict == "inconclusive"
    assert K.outcome(primary).startswith("1: CORL's IQL also fails")
    high = K.read_all(frame([70.0, 60.0, 80.0]))[0]
    assert list(high.corl) == [70.0, 60.0, 80.0] and high.verdict == "supports"
    assert K.outcome(high).startswith("2: CORL's IQL succeeds")


def test_secondaries_carry_holm_over_the_three():
    corl_hop = [20.0, 25.0, 30.0, 22.0, 28.0]
    readings = {(r.dataset, r.metric): r for r in K.read_all(frame([4.0, 0.0, 1.0, 2.0, 0.0], corl_hop))}
    raw = {k: readings[k].interval.p_value for k in readings if k != K.PRIMARY}
    order = sorted(raw, key=raw.get)
    expected, running = {}, 0.0
    for i, k in enumerate(order):  # Holm step-down, written out
        running = max(running, min(1.0, (len(order) - i) * raw[k]))
        expected[k] = running
    for k, p in expected.items():
        assert readings[k].p_holm == pytest.approx(p)
    assert readings[(HOP, "offline_score")].verdict == "differ"


def test_hopper_is_not_read_before_both_arms_have_five():
    readings = {(r.dataset, r.metric): r for r in K.read_all(frame([4.0, 0.0, 1.0, 2.0, 0.0], [20.0, 25.0]))}
    assert readings[(HOP, "final_score")].interval is None


def test_a_run_on_another_file_is_refused_by_name():
    runs = frame([4.0, 0.0, 1.0])
    runs.loc[runs.run_id == "corl-iql__antmaze-umaze__s2", "data_file"] = "0badf11e"
    with pytest.raises(MixedContents, match=r"corl-iql__antmaze-umaze__s2.*0badf11e"):
        K.report_lines(runs, "cpu")
