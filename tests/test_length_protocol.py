"""PROTOCOL-offline-length-cpu.md: the offline_length arm and its comparisons, on hand-made runs."""

import dataclasses

import pandas as pd
import pytest

from benchmarks.experiments import expand
from benchmarks.intervals import holm
from benchmarks.methods import method_config
from studies.length import analysis as lp

COLUMNS = ["method", "dataset", "seed", "status", "final_score", "offline_score"]


def _runs(rows):
    return pd.DataFrame(rows, columns=COLUMNS)


def _table1_row(dataset, odt, off, iql_final, iql_off, seeds=range(5)):
    return ([("odt", dataset, s, "complete", odt + s, 30.0) for s in seeds]
            + [("odt-offline", dataset, s, "complete", off + s, off + s) for s in seeds]
            + [("iql", dataset, s, "complete", iql_final, iql_off) for s in seeds])


def _longer_row(dataset, off, seeds=range(5)):
    return [("odt-offline", dataset, s, "complete", off + s, off + s) for s in seeds]


def test_l1_is_c1_with_the_longer_offline_protocol_in_place_of_table1s():
    table1 = _runs(_table1_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0)
                   + _table1_row("walker2d-medium-replay", 20.0, 25.0, 10.0, 14.0))
    longer = _runs(_longer_row("walker2d-medium", 36.0) + _longer_row("walker2d-medium-replay", 20.0))
    e = lp.l1(table1, longer, lp.DOMAINS["walker2d"])
    # medium: ODT mean 42 - longer offline mean 38 - delta IQL 2 = 2;
    # replay: ODT 22 - longer 22 - (-4) = 4; the shorter offline protocol (32, 27) plays no part
    assert e.mean == pytest.approx(6.0) and e.n == 5 and e.lo <= e.mean <= e.hi


def test_l1_is_incomplete_until_every_row_has_the_longer_arm():
    table1 = _runs(_table1_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0)
                   + _table1_row("walker2d-medium-replay", 20.0, 25.0, 10.0, 14.0))
    longer = _runs(_longer_row("walker2d-medium", 36.0))
    e = lp.l1(table1, longer, lp.DOMAINS["walker2d"])
    assert e.n == 0
    (l1,) = [c for c in lp.comparisons(table1, longer, _runs([])) if c.key == "L1 walker2d"]
    assert l1.status == "incomplete (n=0 < 5)" and l1.primary


def test_l2_pairs_the_two_lengths_by_seed_and_reads_it_against_a_rise():
    table1 = _runs(_table1_row("ant-medium", 40.0, 30.0, 35.0, 33.0, seeds=range(6)))
    longer = _runs(_longer_row("ant-medium", 33.0, seeds=range(1, 7)))
    e = lp.l2(table1, longer, "ant-medium")
    # seeds 1-5 in both, each longer run exactly 3 above its seed's Table 1 run: no width when paired
    assert (e.mean, e.lo, e.hi, e.n) == (3.0, 3.0, 3.0, 5)
    (c,) = [c for c in lp.comparisons(table1, longer, _runs([])) if c.key == "L2 ant-medium"]
    assert (c.expected_sign, c.margin, c.primary) == (1, 5.0, False)
    assert lp.read_protocol([c])[c.key].word == "supports"
    # exactly no change on every seed: shown inside the margin, equivalent (never "no difference shown")
    same = [c for c in lp.comparisons(table1, _runs(_longer_row("ant-medium", 30.0)), _runs([]))
            if c.key == "L2 ant-medium"]
    assert lp.read_protocol(same)["L2 ant-medium"].word == "equivalent"


def test_l3_sets_the_longer_arm_against_odts_own_end_of_pretraining():
    table1 = _runs(_table1_row("ant-medium", 40.0, 30.0, 35.0, 33.0))  # ODT's offline_score: 30 in every run
    e = lp.l3(table1, _runs(_longer_row("ant-medium", 31.0)), "ant-medium")
    assert e.mean == pytest.approx(33.0 - 30.0)


def _curve(method, dataset, seed, updates_scores):
    return [(method, dataset, "pretrain", seed, u, s) for u, s in updates_scores]


def test_check_compares_only_the_evaluations_before_table1s_last():
    cols = ["method", "dataset", "phase", "seed", "updates", "score_mean"]
    short = pd.DataFrame(_curve("odt-offline", "ant-medium", 0, [(1000, 10.0), (2000, 12.0), (2500, 13.0)])
                         + _curve("odt-offline", "ant-medium", 1, [(1000, 11.0), (2000, 14.0), (2500, 15.0)]), columns=cols)
    longer = pd.DataFrame(_curve("odt-offline", "ant-medium", 0, [(1000, 10.0), (2000, 12.0), (3000, 16.0)])
                          + _curve("odt-offline", "ant-medium", 1, [(1000, 11.0), (2000, 14.5), (3000, 17.0)]), columns=cols)
    rows = lp.check_rows(short, longer, "ant-medium")
    assert list(zip(rows.seed, rows.updates, rows.equal)) == [(0, 1000, True), (0, 2000, True),
                                                              (1, 1000, True), (1, 2000, False)]


def test_the_arm_differs_from_table1s_offline_protocol_only_in_its_length():
    specs = [s for s in expand("offline_length", "cpu", seeds=1) if s.dataset == "walker2d-medium"]
    assert [s.method for s in specs] == ["odt-offline"]
    table1 = method_config("odt-offline", "walker2d-medium", "cpu", 0, {})
    longer = method_config("odt-offline", "walker2d-medium", "cpu", 0, dict(specs[0].overrides))
    pretraining = method_config("odt", "walker2d-medium", "cpu", 0, {}).pretrain_updates
    assert (table1.pretrain_updates, longer.pretrain_updates, pretraining) == (2500, 5000, 5000)
    assert dataclasses.replace(longer, pretrain_updates=table1.pretrain_updates) == table1


def test_cli_has_no_resampling_option_and_rejects_an_empty_tree(tmp_path, capsys):
    with pytest.raises(SystemExit) as old:
        lp.main(["--results", str(tmp_path), "--reps", "500"])
    assert old.value.code == 2 and "unrecognized arguments: --reps" in capsys.readouterr().err
    assert lp.main(["--results", str(tmp_path)]) == 1
    assert "no table1 runs" in capsys.readouterr().err


def test_report_sets_l1_beside_c1_and_the_papers_row_term():
    table1 = _runs(_table1_row("walker2d-medium", 40.0, 30.0, 35.0, 33.0))
    longer = _runs(_longer_row("walker2d-medium", 36.0))
    empty = pd.DataFrame(columns=["method", "dataset", "phase", "seed", "updates", "score_mean"])
    lines = lp.report_lines(table1, longer, empty, empty, lp.read(table1, longer, _runs([])))
    row = next(line for line in lines if line.startswith("| walker2d-medium |")).split(" | ")
    # L1: 42 - 38 - 2 = +2.0; C1 with Table 1's offline protocol (mean 32): 42 - 32 - 2 = +8.0;
    # the paper's row term 4.60 - 0.44 = +4.2
    assert row[1].startswith("+2.0") and row[2].startswith("+8.0") and row[3] == "+4.2"
    assert any(line.startswith("| walker2d-medium | 36.0 | 37.0 |") for line in lines)  # per-seed finals


def test_longer_runs_on_another_data_file_are_left_out_and_named():
    """walker2d-medium-replay's file remakes only on the CPU model that made it: a longer arm run
    on a remake is another dataset and must not enter L1 beside Table 1's runs."""
    table1 = _runs(_table1_row("walker2d-medium-replay", 40.0, 30.0, 35.0, 33.0)).assign(data_file="db70ea19")
    longer = _runs(_longer_row("walker2d-medium-replay", 34.0)).assign(data_file="0ther000")
    assert lp.on_other_data(longer, table1).all()
    assert lp.other_data_lines(longer[lp.on_other_data(longer, table1)]) == [
        "Left out: 5 `offline_length` run(s) on walker2d-medium-replay, data file 0ther000, "
        "not the file of Table 1's runs of it."]
    same = longer.assign(data_file="db70ea19")
    assert not lp.on_other_data(same, table1).any() and lp.other_data_lines(same[lp.on_other_data(same, table1)]) == []


# ----- the amendment of 2026-11-29: C3 with DT and ODT offline both at 4x the preset's length --
def test_the_c3_arm_trains_dt_and_odt_offline_four_times_longer_and_changes_nothing_else():
    specs = expand("offline_length_c3", "cpu", seeds=1)
    assert sorted((s.method, s.dataset) for s in specs) == [("dt", "hopper-medium-replay"),
                                                            ("odt-offline", "hopper-medium-replay")]
    for s in specs:
        table1 = method_config(s.method, s.dataset, "cpu", 0, {})
        longer = method_config(s.method, s.dataset, "cpu", 0, dict(s.overrides))
        # the paper's offline protocol trains 1e5 updates; the cpu preset 2500 (1e5 / 40); the arm 1e4
        assert (table1.pretrain_updates, longer.pretrain_updates) == (2500, 10_000)
        assert dataclasses.replace(longer, pretrain_updates=table1.pretrain_updates) == table1


def _c3_rows(dataset, dt, off, seeds=range(5)):
    return ([("dt", dataset, s, "complete", dt + s, dt + s) for s in seeds]
            + [("odt-offline", dataset, s, "complete", off + s, off + s) for s in seeds])


def test_l4_is_c3_with_both_methods_at_the_longer_length_and_its_claim():
    longer = _runs(_c3_rows("hopper-medium-replay", dt=20.0, off=26.0))
    e = lp.l4(longer, "hopper-medium-replay")
    assert e.mean == pytest.approx(6.0) and e.n == 5
    by_key = {c.key: c for c in lp.comparisons(_runs([]), _runs([]), longer)}
    # the paper's C3 on the row is +23.9, beyond the margin: the claim is "> 0"
    assert (by_key["L4 hopper-medium-replay"].expected_sign, by_key["L4 hopper-medium-replay"].primary) == (1, False)
    assert lp.read_protocol([by_key["L4 hopper-medium-replay"]])["L4 hopper-medium-replay"].word == "supports"
    below = {c.key: c for c in lp.comparisons(_runs([]), _runs([]), _runs(_c3_rows("hopper-medium-replay", 40.0, 20.0)))}
    assert lp.read_protocol([below["L4 hopper-medium-replay"]])["L4 hopper-medium-replay"].word == "contradicts"
    few = lp.comparisons(_runs([]), _runs([]), _runs(_c3_rows("hopper-medium-replay", dt=20.0, off=26.0, seeds=range(4))))
    assert {c.key: c for c in few}["L4 hopper-medium-replay"].status == "incomplete (n=4 < 5)"


def test_the_l1s_are_primary_and_l2_l4_l5_one_holm_family():
    table1 = _runs(_table1_row("ant-medium", 40.0, 30.0, 35.0, 33.0) + _table1_row("ant-medium-replay", 30.0, 28.0, 30.0, 29.0)
                   + _c3_rows("hopper-medium-replay", dt=27.0, off=14.0))
    longer = _runs([("odt-offline", d, s, "complete", v + 1.5 * s * (s % 2), v) for d, v in
                    (("ant-medium", 33.0), ("ant-medium-replay", 29.0)) for s in range(5)])
    c3 = _runs([(m, "hopper-medium-replay", s, "complete", v + s * (1 + s % 2), v) for m, v in
                (("dt", 28.0), ("odt-offline", 20.0)) for s in range(5)])
    comparisons = lp.comparisons(table1, longer, c3)
    assert [c.key for c in comparisons if c.primary] == ["L1 walker2d", "L1 ant"]
    read = lp.read_protocol(comparisons)
    family = [c.key for c in comparisons if not c.primary and c.status is None]
    assert family == ["L2 ant-medium", "L2 ant-medium-replay", "L4 hopper-medium-replay",
                      "L5 hopper-medium-replay dt", "L5 hopper-medium-replay odt-offline"]
    assert [read[k].reading.p_difference_holm for k in family] == pytest.approx(
        holm([read[k].reading.p_difference for k in family]))


def test_c3_section_sets_l4_beside_table1s_c3_and_pairs_l5_per_method():
    table1 = _runs(_c3_rows("hopper-medium-replay", dt=27.0, off=14.0))  # Table 1's C3: 14 - 27 = -13
    longer = _runs(_c3_rows("hopper-medium-replay", dt=30.0, off=35.0))
    empty = pd.DataFrame(columns=["method", "dataset", "phase", "seed", "updates", "score_mean"])
    lines = lp.c3_report_lines(table1, longer, empty, empty, lp.read(table1, _runs([]), longer))
    row = next(line for line in lines if line.startswith("| hopper-medium-replay | +5.0")).split(" | ")
    assert row[2].startswith("-13.0") and row[-2] == "> 0" and row[-1].startswith("**supports**")
    l5 = {line.split(" | ")[1]: line for line in lines if line.startswith("| hopper-medium-replay | ")
          and line.split(" | ")[1] in ("dt", "odt-offline") and "(n=5)" in line}
    # every seed's longer run exactly 3 (dt) and 21 (odt-offline) above its Table 1 run: shown, supports
    assert l5["dt"].split(" | ")[2].startswith("+3.0") and l5["odt-offline"].split(" | ")[2].startswith("+21.0")
    assert all("**supports**" in line for line in l5.values())
    assert "| hopper-medium-replay | dt | 30.0 | 31.0 | 32.0 | 33.0 | 34.0 |" in lines
