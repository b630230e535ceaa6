"""The init comparison of 2026-11-26 (I1, I2 of PROTOCOL-official-init-cpu.md), on hand-made runs."""

import numpy as np
import pandas as pd
from scipy import stats

from studies.init_comparison import analysis as ic


def _runs(rows):
    return pd.DataFrame(rows, columns=["method", "dataset", "seed", "status", "final_score", "offline_score"])


def test_change_pairs_new_and_old_by_seed_and_skips_unpaired_or_incomplete_runs():
    new = _runs([("odt", "hopper-medium", s, "complete", 60.0 + s, 40.0) for s in range(4)]
                + [("odt", "hopper-medium", 4, "failed", 1e6, 1e6)])
    old = _runs([("odt", "hopper-medium", s, "complete", 50.0, 30.0 + s) for s in range(1, 5)])
    final = ic.per_seed_change(new, old, "odt", "hopper-medium", "final_score")
    pretrained = ic.per_seed_change(new, old, "odt", "hopper-medium", "offline_score")
    # seeds 1-3 have a complete run on both sides; seed 0 is new only, seed 4 failed on the new side
    assert final.to_dict() == {1: 11.0, 2: 12.0, 3: 13.0}
    assert pretrained.to_dict() == {1: 9.0, 2: 8.0, 3: 7.0}


def test_seeds_pair_only_where_the_two_runs_have_the_same_config():
    new = _runs([("dt", "hopper-medium", s, "complete", 40.0, None) for s in range(3)]).assign(
        config=['{"optim": {"lr": 3e-4}}', '{"optim": {"lr": 1e-4}, "precision": "fp32"}', '{"optim": {"lr": 3e-4}}'])
    old = _runs([("dt", "hopper-medium", s, "complete", 30.0, None) for s in range(3)]).assign(
        config=['{"optim": {"lr": 1e-4}}'] * 3)
    # only seed 1 ran the same config on both sides (a field the old config lacks does not count):
    # the others changed more than the init
    assert ic.per_seed_change(new, old, "dt", "hopper-medium", "final_score").to_dict() == {1: 10.0}


def test_report_reads_only_the_preregistered_rows_and_describes_the_rest():
    new = _runs([("odt", "hopper-medium", s, "complete", 70.0, 40.0) for s in range(5)]
                + [("odt-offline", "hopper-medium", s, "complete", 30.0 + s, 30.0 + s) for s in range(5)]
                + [("odt", "walker2d-medium", s, "complete", 20.0, 20.0) for s in range(5)])
    old = _runs([("odt", "hopper-medium", s, "complete", 70.0 - 2 * s, 45.0) for s in range(5)]
                + [("odt-offline", "hopper-medium", s, "complete", 30.0, 30.0) for s in range(5)]
                + [("odt", "walker2d-medium", s, "complete", 25.0, 25.0) for s in range(5)])
    lines = ic.report_lines(new, old, "table1")
    rows = {tuple(c.strip() for c in line.split("|")[1:5]): line for line in lines[2:]}
    # I1: -5 on every seed: shown below 0, against the claim that the fix raised the score (primary, alone)
    i1 = rows[("I1", "`odt`", "hopper-medium", "end of pretraining")]
    assert "-5.0 [-5.0, -5.0] (n=5) | **contradicts** (primary; p <0.001" in i1
    # I2: 0, 2, 4, 6, 8 (mean 4): the paired t-interval, read as the family of one
    i2 = rows[("I2", "`odt`", "hopper-medium", "final")]
    half = stats.t.ppf(0.975, 4) * np.std([0, 2, 4, 6, 8], ddof=1) / np.sqrt(5)
    assert f"+4.0 [{4 - half:+.1f}, {4 + half:+.1f}] (n=5) | **supports** (p " in i2 and "Holm" in i2
    assert "| s0 +0.0, s1 +2.0, s2 +4.0, s3 +6.0, s4 +8.0 |" in i2
    assert "-5.0 [-5.0, -5.0] (n=5) | described |" in rows[("description", "`odt`", "walker2d-medium", "final")]
    # the offline-only method has no separate end-of-pretraining row
    assert ("description", "`odt-offline`", "hopper-medium", "final") in rows
    assert ("description", "`odt-offline`", "hopper-medium", "end of pretraining") not in rows
    # another experiment's rows are description, never I1 / I2
    assert all(line.split("|")[1].strip() == "description" for line in ic.report_lines(new, old, "g_eval")[2:])


def test_a_description_row_gets_no_verdict():
    assert ic.reading(ic.Estimate(1.0, 0.5, 1.5, 5)) == "described"
    assert ic.reading(ic.Estimate(float("nan"), float("nan"), float("nan"), 0)) == "no paired seeds"
