"""The per-domain comparisons of PROTOCOL-table1-rows-cpu.md, read under PROTOCOL-reanalysis.md, on
hand-made runs whose differences are known by construction."""

import pandas as pd
import pytest
from scipy import stats

from benchmarks.intervals import holm
from studies.rows import analysis as rp


def _runs(rows):
    return pd.DataFrame(rows, columns=["method", "dataset", "seed", "status", "final_score", "offline_score", "run_id"])


def _row(dataset, odt, off, iql_final, iql_off, seeds=range(5)):
    return ([("odt", dataset, s, "complete", odt + s, 10.0, f"{dataset}/odt/{s}") for s in seeds]
            + [("odt-offline", dataset, s, "complete", off, off, f"{dataset}/off/{s}") for s in seeds]
            + [("iql", dataset, s, "complete", iql_final, iql_off, f"{dataset}/iql/{s}") for s in seeds])


def _curves(runs, before_last=0.0):
    """Two online evaluations per ODT and IQL run: the last is the run's final score, the one
    before it the final plus ``before_last``."""
    rows = []
    for r in runs.itertuples():
        if r.method in ("odt", "iql"):
            rows += [(r.run_id, "online", 1, r.final_score + before_last), (r.run_id, "online", 2, r.final_score)]
    return pd.DataFrame(rows, columns=["run_id", "phase", "step", "score_mean"])


def test_c1_sums_table1_deltas_over_the_domain_rows():
    rows = _row("walker2d-medium", 40.0, 30.0, 35.0, 33.0) + _row("walker2d-medium-replay", 20.0, 25.0, 10.0, 14.0)
    rows.append(("odt", "walker2d-medium", 9, "failed", 1e6, 0.0, "x"))  # ignored: not complete
    e = rp.summed(_runs(rows), rp.DOMAINS["walker2d"], rp.c1_groups)
    # medium: delta ODT = mean(40..44) - 30 = 12, delta IQL = 2; replay: delta ODT = 22 - 25 = -3, delta IQL = -4
    assert e.mean == pytest.approx((12.0 - 2.0) + (-3.0 + 4.0))
    assert e.n == 5 and e.lo < e.mean < e.hi


def test_c1_is_read_within_each_run_from_its_last_two_online_evaluations():
    runs = _runs(_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0) + _row("walker2d-medium-replay", 20.0, 25.0, 10.0, 14.0))
    # the evaluation before the last scores 4 more: the mean of the last two is final + 2, for ODT and IQL alike
    e = rp.summed(runs, rp.DOMAINS["walker2d"], rp.within_run(_curves(runs, before_last=4.0)))
    # medium: ODT (42 + 2) - 10 = 34, IQL (35 + 2) - 33 = 4; replay: ODT (22 + 2) - 10 = 14, IQL (10 + 2) - 14 = -2
    assert e.mean == pytest.approx((34.0 - 4.0) + (14.0 + 2.0)) and e.n == 5
    # only ODT varies (its finals 40..44 and 20..24): two groups of sd sqrt(2.5), n 5, Welch-Satterthwaite df 8
    se = (2 * 2.5 / 5) ** 0.5
    assert (e.lo, e.hi) == pytest.approx((e.mean - stats.t.ppf(0.975, 8) * se, e.mean + stats.t.ppf(0.975, 8) * se))


def test_c1_report_reads_within_run_and_describes_table1s_delta():
    runs = _runs(_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0))
    lines = rp.report_lines(runs, _curves(runs))
    row = next(line for line in lines if line.startswith("| walker2d-medium |"))
    cells = row.split(" | ")
    # within run: each ODT run's final (40 + s) minus its own end of pretraining (10) = 32 on average, minus
    # delta IQL 2: +30.0; Table 1's: mean(40..44) - 30 - 2 = +10.0, described; the paper's row term +4.2
    assert cells[1].startswith("+30.0") and cells[-1].startswith("+10.0") and "+4.2" in row and rp.ROW_READING in row
    domain = next(line for line in lines if line.startswith("| **walker2d** (sum) |") and "+15.2" in line)
    assert "incomplete (n=0 < 5)" in domain  # the replay row has no runs


def test_claims_follow_the_papers_value_and_the_margin():
    assert rp.claim(25.8, 5.0) == 1 and rp.claim(-6.0, 5.0) == -1
    assert rp.claim(3.4, 5.0) is None and rp.claim(-2.2, 5.0) is None and rp.claim(-2.3, 10.0) is None
    runs = _runs([])
    claims = {c.key: (c.expected_sign, c.margin) for c in rp.comparisons(runs, _curves(runs))}
    # C1: large on hopper, walker2d, antmaze; within +-5 on halfcheetah (-0.2) and ant (+3.4)
    assert {k: v for k, v in claims.items() if k.startswith("C1")} == {
        "C1 hopper": (1, 5.0), "C1 walker2d": (1, 5.0), "C1 halfcheetah": (None, 5.0), "C1 ant": (None, 5.0),
        "C1 antmaze": (1, 10.0)}
    # C3: the ant rows' paper values (-2.2, -2.5) lie within the margin: no sign to agree with
    assert claims["C3 ant-medium"] == (None, 5.0) and claims["C3 hopper-medium"] == (1, 5.0)
    assert claims["C3 antmaze-umaze-diverse"] == (None, 10.0) and claims["C2 antmaze (sum)"] == (1, 10.0)
    assert claims["C4"] == (1, 5.0)


def test_the_primaries_are_c1_hopper_and_walker2d_and_the_rest_one_holm_family():
    rows = []
    for d in (d for r in rp.DOMAINS.values() for d in r):
        rows += _row(d, 40.0 if "hopper" in d else 30.0, 30.0, 35.0, 33.0)
        rows += [("odt-control", d, s, "complete", 38.0 + s % 2, 10.0, f"{d}/c/{s}") for s in range(5)]
        rows += [("dt", d, s, "complete", 28.0 + s % 3, 28.0, f"{d}/dt/{s}") for s in range(5)]
    runs = _runs(rows)
    comparisons = rp.comparisons(runs, _curves(runs))
    assert [c.key for c in comparisons if c.primary] == ["C1 hopper", "C1 walker2d"]
    read = rp.read_protocol(comparisons)
    assert read["C1 hopper"].reading.p_difference_holm == read["C1 hopper"].reading.p_difference
    family = [c.key for c in comparisons if not c.primary and c.status is None]
    raw = [read[k].reading.p_difference for k in family]
    assert [read[k].reading.p_difference_holm for k in family] == pytest.approx(holm(raw))
    assert "C1 halfcheetah" in family and "C4" in family and len(family) == 3 + 15 + 10 + 1


def test_c1_is_incomplete_while_a_row_lacks_an_arm():
    runs = _runs(_row("ant-medium", 40.0, 30.0, 35.0, 33.0))  # ant-medium-replay has no runs
    (c,) = [c for c in rp.comparisons(runs, _curves(runs)) if c.key == "C1 ant"]
    assert c.estimate.n == 0 and c.status == "incomplete (n=0 < 5)"


def test_c2_pairs_odt_and_control_by_seed():
    rows = [("odt", "hopper-medium", s, "complete", 10.0 * s + 5.0, 20.0, f"o{s}") for s in range(6)]
    rows += [("odt-control", "hopper-medium", s, "complete", 10.0 * s, 20.0, f"c{s}") for s in range(1, 7)]
    e = rp.summed(_runs(rows), ["hopper-medium"], rp._row_groups_c2)
    # seeds 1-5 in both arms, each differing by exactly 5: a paired interval has no width
    assert (e.lo, e.mean, e.hi, e.n) == (5.0, 5.0, 5.0, 5)


def test_c3_is_odt_offline_minus_dt_as_independent_groups():
    rows = [("odt-offline", "halfcheetah-medium", s, "complete", 40.0 + s, 40.0 + s, f"f{s}") for s in range(5)]
    rows += [("dt", "halfcheetah-medium", s, "complete", 41.0, 41.0, f"d{s}") for s in range(7)]
    e = rp.summed(_runs(rows), ["halfcheetah-medium"], rp.c3_groups)
    assert e.mean == pytest.approx(1.0) and e.n == 5


def test_antmaze_runs_at_the_floor_get_no_verdict():
    rows = [("odt", "antmaze-umaze-diverse", s, "complete", float(s), 0.0, f"o{s}") for s in range(5)]
    rows += [("odt-control", "antmaze-umaze-diverse", s, "complete", 5.0 - s, 0.0, f"c{s}") for s in range(5)]
    rows += [("odt-offline", "antmaze-umaze-diverse", s, "complete", 0.0, 0.0, f"f{s}") for s in range(5)]
    rows += [("dt", "antmaze-umaze-diverse", s, "complete", 0.0, 0.0, f"d{s}") for s in range(5)]
    runs = _runs(rows)
    by_key = {c.key: c for c in rp.comparisons(runs, _curves(runs))}
    assert by_key["C2 antmaze-umaze-diverse"].status.startswith("out of regime (floor")
    assert by_key["C3 antmaze-umaze-diverse"].status.startswith("out of regime (floor")
    assert by_key["C2 antmaze (sum)"].status.startswith("incomplete")  # antmaze-umaze has no runs
    lifted = _runs(rows + [("odt", "antmaze-umaze-diverse", 5, "complete", 12.0, 0.0, "o5"),
                           ("odt-control", "antmaze-umaze-diverse", 5, "complete", 0.0, 0.0, "c5")])
    assert {c.key: c for c in rp.comparisons(lifted, _curves(lifted))}["C2 antmaze-umaze-diverse"].status is None


def test_paper_values_are_the_ones_the_protocol_states():
    # PROTOCOL-table1-rows-cpu.md, C1, from the paper's Table 1 by hand: hopper (30.59 + 2.25) - (2.98 + 4.10)
    # antmaze (the amendment of 2026-11-29 on the antmaze domain): (35.4 + 7.99) - (2.4 - 7.6)
    assert {d: round(rp.paper_c1(d), 1) for d in rp.DOMAINS} == {
        "hopper": 25.8, "walker2d": 15.2, "halfcheetah": -0.2, "ant": 3.4, "antmaze": 48.6}
    assert rp.paper_c3("ant-medium") == pytest.approx(91.33 - 93.56)
    assert rp.paper_c3("antmaze-umaze-diverse") == pytest.approx(50.20 - 52.5)


def test_c4_waits_for_all_eight_rows_and_then_sums_them():
    rows = []
    for d in (d for r in rp.DOMAINS.values() for d in r):
        rows += _row(d, 40.0, 30.0, 35.0, 33.0)  # AntMaze's rows too: C4 must leave them out
    runs = _runs(rows)
    text = "\n".join(rp.c4_lines(runs, _curves(runs)))
    # each row: ODT online mean 42 - IQL online 35 = 7; Table 1: delta ODT 12 - delta IQL 2 = 10;
    # within run: delta ODT 42 - 10 = 32 - delta IQL 2 = 30
    assert "incomplete" not in text and "+56.0" in text and "+80.0" in text and "+240.0" in text
    partial = _runs([r for r in rows if r[1] != "ant-medium-replay"])
    assert "incomplete" in "\n".join(rp.c4_lines(partial, _curves(partial)))


def test_score_sums_add_each_methods_row_means_over_the_domain():
    rows = _row("hopper-medium", 40.0, 30.0, 35.0, 33.0) + _row("hopper-medium-replay", 20.0, 25.0, 10.0, 14.0)
    lines = rp.score_sum_lines(_runs(rows))
    ours = next(line for line in lines if line.startswith("| **hopper** |")).split(" | ")
    # columns: DT, ODT offline, ODT (5k), IQL offline, IQL (5k), control; no DT or control runs here
    assert ours[1] == "—" and ours[6].startswith("—")
    assert ours[2] == "55.0 [55.0, 55.0] (n=5)"  # 30 + 25, no spread
    assert ours[3].startswith("64.0 [")  # mean(40..44) + mean(20..24) = 42 + 22
    assert ours[4].startswith("47.0 [") and ours[5].startswith("45.0 [")  # IQL offline 33 + 14, online 35 + 10
    paper = lines[lines.index(next(line for line in lines if line.startswith("| **hopper** |"))) + 1].split(" | ")
    # the paper's Table 1 by hand: ODT (0.2m) 97.54 + 88.89, DT 61.03 + 62.75; no control in the paper
    assert paper[3] == "186.4" and paper[1] == "123.8" and paper[6].startswith("—")


def test_cli_has_no_resampling_option_and_rejects_an_empty_tree(tmp_path, capsys):
    with pytest.raises(SystemExit) as old:
        rp.main(["--results", str(tmp_path), "--reps", "500"])
    assert old.value.code == 2 and "unrecognized arguments: --reps" in capsys.readouterr().err
    assert rp.main(["--results", str(tmp_path)]) == 1
    assert "no table1 runs" in capsys.readouterr().err


def test_the_reports_budget_words_follow_the_preset():
    # cpu protocol: 5k online samples; the offline protocol trains 2500 updates where ODT pretrains 5000 on
    # walker2d and ant (PROTOCOL-table1-rows-cpu.md). The paper: 0.2M samples, and its offline protocol
    # trains 1e5 updates, longer than ODT's pretraining on every domain (appendix tables)
    runs = _runs(_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0))
    cpu = "\n".join(rp.report_lines(runs, _curves(runs), preset="cpu"))
    assert "trains 2500 updates where ODT pretrains 5000 on walker2d and ant" in cpu
    assert "| ODT (5k) |" in cpu and "against our 5k" in cpu
    paper = "\n".join(rp.report_lines(runs, _curves(runs), preset="paper"))
    assert "at least as many updates as ODT pretrains on every domain" in paper and "against our 200k" in paper
