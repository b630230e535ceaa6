"""The reading of PROTOCOL-bc-cpu.md (studies/bc/analysis.py): per-row description, the
antmaze-umaze primary BC - IQL, Holm over BC - DT and BC - CORL's IQL, the outcome, and the refusal
of BC runs on another data file. Frames are built here; expectations computed with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.reproduction import MixedContents
from studies.bc import analysis as B

ANT, HOP = "antmaze-umaze", "hopper-medium"
IQL = [9.0, 0.0, 0.0, 3.0, 0.0]
DT = [41.0, 33.0, 12.0, 6.0, 11.0]


def run(method, dataset, seed, score, data_file="b7b9dc8f"):
    experiment = "corl_iql" if method == "corl-iql" else "table1"
    return {"preset": "cpu", "experiment": experiment, "method": method, "dataset": dataset, "seed": seed,
            "run_id": f"{method}__{dataset}__s{seed}", "status": "complete", "offline_score": float(score),
            "final_score": float(score), "data_file": data_file}


def frame(bc, corl=(4.0, 0.0, 1.0, 2.0, 0.0)) -> pd.DataFrame:
    rows = [run("iql", ANT, s, v) for s, v in enumerate(IQL)] + [run("dt", ANT, s, v) for s, v in enumerate(DT)]
    rows += [run("corl-iql", ANT, s, v) for s, v in enumerate(corl)]
    rows += [run("bc", ANT, s, v) for s, v in enumerate(bc)]
    rows += [run("bc", HOP, s, 50.0 + s, "bdaad3f4") for s in range(5)]
    return pd.DataFrame(rows)


def test_primary_and_holm_secondaries_on_antmaze():
    bc = [30.0, 25.0, 40.0, 20.0, 35.0]
    found = B.comparisons(frame(bc))
    for method, other in (("iql", IQL), ("dt", DT), ("corl-iql", [4.0, 0.0, 1.0, 2.0, 0.0])):
        welch = stats.ttest_ind(bc, other, equal_var=False)
        assert found[method].estimate == pytest.approx(np.mean(bc) - np.mean(other))
        assert found[method].p_value == pytest.approx(welch.pvalue)
    p_dt, p_corl = found["dt"].p_value, found["corl-iql"].p_value
    low, high = sorted([p_dt, p_corl])
    holm_high = max(min(1.0, 2 * low), high)
    line = next(x for x in B.comparison_table(frame(bc), found) if x.startswith("| dt |"))
    assert f"| {(holm_high if p_dt == high else min(1.0, 2 * low)):.3f} |" in line
    assert B.outcome(frame(bc), found["iql"]).startswith("imitation of the file reaches the goal")


def test_weak_imitation_outcome_and_unsettled_corl_seeds():
    runs = frame([0.0, 2.0, 1.0, 0.0, 3.0], corl=(4.0, 0.0))  # CORL's seed rule not settled
    found = B.comparisons(runs)
    assert found["corl-iql"] is None
    assert B.outcome(runs, found["iql"]).startswith("plain imitation of the whole file does not reach")


def test_row_description_is_a_t_interval():
    runs = frame([30.0, 25.0, 40.0, 20.0, 35.0])
    line = next(x for x in B.rows_table(runs) if x.startswith(f"| {HOP} |"))
    x = np.arange(5) + 50.0
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / np.sqrt(5)
    assert f"52.0 [{52 - half:.1f}, {52 + half:.1f}] (n=5)" in line


def test_bc_on_another_file_is_refused():
    runs = frame([30.0, 25.0, 40.0, 20.0, 35.0])
    runs.loc[(runs.method == "bc") & (runs.dataset == ANT) & (runs.seed == 4), "data_file"] = "0badf11e"
    with pytest.raises(MixedContents, match="0badf11e"):
        B.report_lines(runs, "cpu")


def test_rows_without_bc_say_why():
    note = " ".join(B.empty_rows_note(frame([30.0, 25.0, 40.0, 20.0, 35.0])))
    replay = note.split("No BC runs on ")[1].split(":")[0].split(", ")
    assert set(replay) == {"hopper-medium-replay", "walker2d-medium-replay", "halfcheetah-medium-replay",
                           "ant-medium-replay"}
    assert "CPU model that made it" in note
    waiting = note.split("No complete BC runs yet on ")[1].rstrip(".").split(", ")
    assert ANT not in waiting and HOP not in waiting and "walker2d-medium" in waiting
