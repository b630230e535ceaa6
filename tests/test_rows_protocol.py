"""The per-domain comparisons of PROTOCOL-table1-rows-cpu.md, on hand-made runs."""

import pandas as pd
import pytest

from benchmarks import rows_protocol as rp
from benchmarks.reproduction import Estimate


def _runs(rows):
    return pd.DataFrame(rows, columns=["method", "dataset", "seed", "status", "final_score", "offline_score"])


def _row(dataset, odt, off, iql_final, iql_off, seeds=range(5)):
    return ([("odt", dataset, s, "complete", odt + s, 10.0) for s in seeds]
            + [("odt-offline", dataset, s, "complete", off, off) for s in seeds]
            + [("iql", dataset, s, "complete", iql_final, iql_off) for s in seeds])


def test_c1_sums_table1_deltas_over_the_domain_rows():
    rows = _row("walker2d-medium", 40.0, 30.0, 35.0, 33.0) + _row("walker2d-medium-replay", 20.0, 25.0, 10.0, 14.0)
    rows.append(("odt", "walker2d-medium", 9, "failed", 1e6, 0.0))  # ignored: not complete
    e = rp.summed(_runs(rows), rp.DOMAINS["walker2d"], rp.c1_groups, reps=500)
    # medium: delta ODT = mean(40..44) - 30 = 12, delta IQL = 2; replay: delta ODT = 22 - 25 = -3, delta IQL = -4
    assert e.mean == pytest.approx((12.0 - 2.0) + (-3.0 + 4.0))
    assert e.n == 5 and e.lo < e.mean < e.hi


def test_c1_report_describes_each_row_beneath_its_domain_without_a_verdict():
    # walker2d-medium alone: delta ODT = mean(40..44) - 30 = 12, delta IQL = 35 - 33 = 2, so +10.0;
    # the paper's row term is 4.60 - 0.44 = +4.2 (Table 1); the domain sum waits for the replay row
    lines = rp.report_lines(_runs(_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0)), reps=200)
    row = next(line for line in lines if line.startswith("| walker2d-medium |"))
    assert row.split(" | ")[1].startswith("+10.0") and "+4.2" in row and rp.ROW_READING in row
    # within run: each ODT run's final (40 + s) minus its own end of pretraining (10) = 32 on average,
    # minus delta IQL 2: +30.0, shown beside Table 1's reading
    assert row.split(" | ")[2].startswith("+30.0")
    domain = next(line for line in lines if line.startswith("| **walker2d** (sum) |") and "+15.2" in line)
    assert domain.endswith("| incomplete |")


def test_c1_is_incomplete_while_a_row_lacks_an_arm():
    runs = _runs(_row("ant-medium", 40.0, 30.0, 35.0, 33.0))  # ant-medium-replay has no runs
    e = rp.summed(runs, rp.DOMAINS["ant"], rp.c1_groups, reps=200)
    assert e.n == 0 and rp.c1_verdict("ant", e) == "incomplete"


def test_c2_pairs_odt_and_control_by_seed():
    rows = [("odt", "hopper-medium", s, "complete", 10.0 * s + 5.0, 20.0) for s in range(6)]
    rows += [("odt-control", "hopper-medium", s, "complete", 10.0 * s, 20.0) for s in range(1, 7)]
    e = rp.summed(_runs(rows), ["hopper-medium"], rp._row_groups_c2, reps=500)
    # seeds 1-5 in both arms, each differing by exactly 5: a paired interval has no width
    assert (e.lo, e.mean, e.hi, e.n) == (5.0, 5.0, 5.0, 5)


def test_c3_is_odt_offline_minus_dt_as_independent_groups():
    rows = [("odt-offline", "halfcheetah-medium", s, "complete", 40.0 + s, 40.0 + s) for s in range(5)]
    rows += [("dt", "halfcheetah-medium", s, "complete", 41.0, 41.0) for s in range(7)]
    e = rp.summed(_runs(rows), ["halfcheetah-medium"], rp.c3_groups, reps=500)
    assert e.mean == pytest.approx(1.0) and e.n == 5


@pytest.mark.parametrize("domain,lo,hi,expected", [
    ("hopper", 0.5, 9.0, "supports"), ("hopper", -9.0, -0.5, "contradicts"), ("walker2d", -1.0, 9.0, "inconclusive"),
    ("halfcheetah", -1.0, 1.0, "consistent with the paper"), ("ant", 0.5, 4.0, "differs from it"),
    ("ant", -6.0, -4.0, "differs from it")])
def test_c1_verdicts_follow_the_protocol(domain, lo, hi, expected):
    assert rp.c1_verdict(domain, Estimate((lo + hi) / 2, lo, hi, 5)) == expected


@pytest.mark.parametrize("lo,hi,expected", [
    (0.1, 8.0, "supports"), (-8.0, -0.1, "contradicts"), (-2.9, 2.9, "contradicts"), (-4.0, 2.0, "inconclusive")])
def test_c2_verdicts_follow_the_protocol(lo, hi, expected):
    assert rp.c2_verdict(Estimate((lo + hi) / 2, lo, hi, 5)) == expected


def test_antmaze_c1_is_directional_and_its_c3_two_sided():
    """The session-45 amendment: the paper's AntMaze C1 is large (+48.6), read as hopper's; its C3
    is slightly negative on both rows (-0.2, -2.3), so an interval below 0 differs only if it
    excludes 0, as one above 0 does."""
    assert rp.c1_verdict("antmaze", Estimate(5.0, 1.0, 9.0, 5)) == "supports"
    assert rp.c1_verdict("antmaze", Estimate(-1.0, -9.0, 7.0, 5)) == "inconclusive"
    assert rp.c3_verdict(Estimate(-1.0, -4.0, 2.0, 5), "antmaze-umaze") == "consistent with the paper"
    assert rp.c3_verdict(Estimate(-9.0, -12.0, -6.0, 5), "antmaze-umaze") == "differs from it"
    assert rp.c3_verdict(Estimate(9.0, 6.0, 12.0, 5), "antmaze-umaze-diverse") == "differs from it"
    assert rp.c3_verdict(Estimate(9.0, 6.0, 12.0, 5), "ant-medium") == "consistent with the paper"


def test_c3_verdict_and_the_seed_floor():
    assert rp.c3_verdict(Estimate(1.0, -1.0, 3.0, 5)) == "consistent with the paper"
    assert rp.c3_verdict(Estimate(-3.0, -5.0, -1.0, 5)) == "differs from it"
    assert rp.c3_verdict(Estimate(9.0, 8.0, 10.0, 4)) == "incomplete"
    assert rp.c2_verdict(Estimate(9.0, 8.0, 10.0, 4)) == "incomplete"


def test_paper_values_are_the_ones_the_protocol_states():
    # PROTOCOL-table1-rows-cpu.md, C1, from the paper's Table 1 by hand: hopper (30.59 + 2.25) - (2.98 + 4.10)
    # antmaze (the session-45 amendment): (35.4 + 7.99) - (2.4 - 7.6)
    assert {d: round(rp.paper_c1(d), 1) for d in rp.DOMAINS} == {
        "hopper": 25.8, "walker2d": 15.2, "halfcheetah": -0.2, "ant": 3.4, "antmaze": 48.6}
    assert rp.paper_c3("ant-medium") == pytest.approx(91.33 - 93.56)
    assert rp.paper_c3("antmaze-umaze-diverse") == pytest.approx(50.20 - 52.5)


def test_c4_waits_for_all_eight_rows_and_then_sums_them():
    rows = []
    for d in (d for r in rp.DOMAINS.values() for d in r):
        rows += _row(d, 40.0, 30.0, 35.0, 33.0)  # AntMaze's rows too: C4 must leave them out
    text = "\n".join(rp.c4_lines(_runs(rows), reps=200))
    # each row: ODT online mean 42 - IQL online 35 = 7; delta ODT 12 - delta IQL 2 = 10
    assert "incomplete" not in text and "+56.0" in text and "+80.0" in text
    partial = _runs([r for r in rows if r[1] != "ant-medium-replay"])
    assert "incomplete" in "\n".join(rp.c4_lines(partial, reps=200))


def test_score_sums_add_each_methods_row_means_over_the_domain():
    rows = _row("hopper-medium", 40.0, 30.0, 35.0, 33.0) + _row("hopper-medium-replay", 20.0, 25.0, 10.0, 14.0)
    lines = rp.score_sum_lines(_runs(rows), reps=200)
    ours = next(line for line in lines if line.startswith("| **hopper** |")).split(" | ")
    # columns: DT, ODT offline, ODT (5k), IQL offline, IQL (5k), control; no DT or control runs here
    assert ours[1] == "—" and ours[6].startswith("—")
    assert ours[2] == "55.0 [55.0, 55.0] (n=5)"  # 30 + 25, no spread
    assert ours[3].startswith("64.0 [")  # mean(40..44) + mean(20..24) = 42 + 22
    assert ours[4].startswith("47.0 [") and ours[5].startswith("45.0 [")  # IQL offline 33 + 14, online 35 + 10
    paper = lines[lines.index(next(line for line in lines if line.startswith("| **hopper** |"))) + 1].split(" | ")
    # the paper's Table 1 by hand: ODT (0.2m) 97.54 + 88.89, DT 61.03 + 62.75; no control in the paper
    assert paper[3] == "186.4" and paper[1] == "123.8" and paper[6].startswith("—")


def test_cli_rejects_few_resamples_and_an_empty_tree(tmp_path, capsys):
    with pytest.raises(SystemExit) as few:
        rp.main(["--results", str(tmp_path), "--reps", "50"])
    assert few.value.code == 2 and "--reps: 50 is out of range" in capsys.readouterr().err
    assert rp.main(["--results", str(tmp_path)]) == 1
    assert "no table1 runs" in capsys.readouterr().err


def test_the_reports_budget_words_follow_the_preset():
    # cpu protocol: 5k online samples; the offline protocol trains 2500 updates where ODT pretrains 5000 on
    # walker2d and ant (PROTOCOL-table1-rows-cpu.md). The paper: 0.2M samples, and its offline protocol
    # trains 1e5 updates, longer than ODT's pretraining on every domain (appendix tables)
    cpu = "\n".join(rp.report_lines(_runs(_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0)), reps=200, preset="cpu"))
    assert "trains 2500 updates where ODT pretrains 5000 on walker2d and ant" in cpu
    assert "| ODT (5k) |" in cpu and "against our 5k" in cpu
    paper = "\n".join(rp.report_lines(_runs(_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0)), reps=200, preset="paper"))
    assert "at least as many updates as ODT pretrains on every domain" in paper and "against our 200k" in paper
