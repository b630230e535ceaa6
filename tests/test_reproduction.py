"""The reproduction summary: t-intervals, finetuning gains read within runs, and the registered
readings (one vocabulary, primaries alone, Holm over the rest) from a results tree."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.intervals import holm
from benchmarks.reproduction import (
    HAND_WRITTEN,
    Estimate,
    Registered,
    at_floor,
    combination_estimate,
    emit,
    gains,
    margin_for,
    read_protocol,
    row_k,
    wall_times,
)


def test_one_group_is_the_one_sample_t_interval_and_two_are_welchs():
    rng = np.random.default_rng(0)
    x, y = rng.normal(10, 5, 6), rng.normal(4, 2, 9)
    one = combination_estimate([(x, 1.0)])
    ref = stats.ttest_1samp(x, 0.0)
    assert (one.lo, one.hi) == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert one.p_value == pytest.approx(ref.pvalue) and one.df == 5 and one.n == 6
    two = combination_estimate([(x, 1.0), (y, -1.0)])
    ref = stats.ttest_ind(x, y, equal_var=False)
    assert (two.lo, two.hi) == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert two.mean == pytest.approx(x.mean() - y.mean()) and two.df == pytest.approx(ref.df) and two.n == 6


def test_combination_of_groups_is_the_signed_sum_of_means():
    est = combination_estimate([([1.0, 3.0], 1.0), ([10.0, 10.0, 10.0], -1.0)])
    # one group varies (sd sqrt(2), n 2): se 1, df 1, the other is constant
    assert est.mean == pytest.approx(-8.0) and est.n == 2
    assert (est.lo, est.hi) == pytest.approx((-8.0 - stats.t.ppf(0.975, 1), -8.0 + stats.t.ppf(0.975, 1)))
    assert combination_estimate([([], 1.0)]).n == 0 and combination_estimate([([], 1.0)]).text() == "—"
    same = combination_estimate([([4.0, 4.0, 4.0], 1.0)])
    assert (same.lo, same.mean, same.hi) == (4.0, 4.0, 4.0)
    assert same.text() == "+4.0 [+4.0, +4.0] (n=3)" and same.text(signed=False) == "4.0 [4.0, 4.0] (n=3)"


def _runs(rows):
    return pd.DataFrame(rows, columns=["method", "dataset", "status", "final_score", "offline_score", "wall_time"])


def _curves(scores_by_run):
    """run_id -> online scores (in order): the online evaluation rows of those runs."""
    rows = [(rid, "online", i, s) for rid, scores in scores_by_run.items() for i, s in enumerate(scores)]
    return pd.DataFrame(rows, columns=["run_id", "phase", "step", "score_mean"])


def test_gains_use_the_right_runs_and_ignore_incomplete_ones():
    rows, online = [], {}
    for s in range(5):
        rows.append(("odt", "hopper-medium", "complete", 50.0 + s, 20.0, 600.0, s, f"o{s}"))
        rows.append(("odt-offline", "hopper-medium", "complete", 30.0, 30.0, 300.0, s, f"f{s}"))
        rows.append(("iql", "hopper-medium", "complete", 42.0, 40.0, 200.0, s, f"i{s}"))
        online[f"o{s}"] = [0.0, 40.0 + s, 50.0 + s]  # last two: mean 45 + s
        online[f"i{s}"] = [99.0, 40.0, 41.0, 42.0]  # last two: mean 41.5
    rows.append(("odt", "hopper-medium", "failed", 1000.0, 0.0, 1.0, 9, "o9"))
    runs = pd.DataFrame(rows, columns=["method", "dataset", "status", "final_score", "offline_score", "wall_time",
                                       "seed", "run_id"])
    g = gains(runs, _curves(online), "hopper-medium")
    assert g["k"] == 2
    assert g["delta_odt"].mean == pytest.approx(22.0)  # Table 1: mean(50..54) - 30
    assert g["delta_odt_within_run"].mean == pytest.approx(27.0)  # mean(45..49) - 20
    assert g["delta_iql"].mean == pytest.approx(1.5) and g["delta_iql"].lo == g["delta_iql"].hi == 1.5
    assert g["delta_iql_final"].mean == pytest.approx(2.0)  # Table 1's column: final - offline
    assert g["delta_odt_minus_delta_iql"].mean == pytest.approx(20.0)
    assert g["delta_odt_within_run_minus_delta_iql"].mean == pytest.approx(25.5)  # 27 - 1.5
    wt = wall_times(runs).set_index("method")
    assert wt.loc["odt", "mean"] == pytest.approx(10.0) and wt.loc["odt", "count"] == 5
    assert gains(runs, _curves(online), "walker2d-medium")["delta_odt"].n == 0


def test_row_k_is_two_unless_a_run_of_the_row_evaluated_fewer_times_online():
    runs = pd.DataFrame([("odt", "d", "complete", 0, "a"), ("odt", "d", "complete", 1, "b"),
                         ("iql", "d", "complete", 0, "c"), ("odt", "d", "failed", 2, "x")],
                        columns=["method", "dataset", "status", "seed", "run_id"])
    assert row_k(_curves({"a": [1, 2, 3], "b": [1, 2], "c": [1, 2, 3, 4, 5], "x": [1]}), runs, "d") == 2
    assert row_k(_curves({"a": [1, 2, 3], "b": [1], "c": [1, 2, 3, 4, 5]}), runs, "d") == 1  # halfcheetah-like
    assert row_k(_curves({"a": [1, 2, 3], "b": [1, 2, 3], "c": [1, 2, 3]}), runs, "d", k=3) == 3


def test_early_gain_is_the_first_online_evaluation_minus_the_last_pretraining_one():
    from benchmarks.reproduction import early_gains
    rows = []
    for run, (pre, first, last) in {"a": (40.0, 70.0, 20.0), "b": (50.0, 60.0, 55.0)}.items():
        rows += [(run, 0, "pretrain", 0, 10.0), (run, 1, "pretrain", 0, pre),
                 (run, 2, "online", 1500, first), (run, 3, "online", 5000, last)]
    curves = pd.DataFrame(rows, columns=["run_id", "step", "phase", "online_samples", "score_mean"])
    runs = _runs([("odt", "hopper-medium", "complete", 0, 0, 1)] * 2).assign(run_id=["a", "b"])
    gain, samples = early_gains(curves, runs, "hopper-medium", "odt")
    assert gain.mean == pytest.approx(20.0) and samples == 1500 and gain.n == 2  # (30 + 10) / 2
    assert early_gains(curves, runs.assign(status="failed"), "hopper-medium", "odt")[0].n == 0


def test_rate_comparison_is_the_difference_of_within_run_gains():
    from benchmarks.reproduction import rate_comparison
    base = _runs([("odt", "hopper-medium", "complete", 40.0 + s, 40.0, 1.0) for s in range(4)])
    other = _runs([("odt", "hopper-medium", "complete", 60.0, 45.0, 1.0)] * 3
                  + [("odt", "hopper-medium", "failed", 0.0, 0.0, 1.0)])
    c = rate_comparison(base, other, "hopper-medium")
    assert c["base"].mean == pytest.approx(1.5) and c["other"].mean == pytest.approx(15.0)
    assert c["difference"].mean == pytest.approx(13.5) and c["other"].n == 3  # the failed run is left out
    assert c["other_final"].mean == pytest.approx(60.0) and c["base_final"].mean == pytest.approx(41.5)


def test_buffer_comparison_pairs_iql_buffers_by_seed():
    from benchmarks.reproduction import buffer_comparison
    cols = ["method", "dataset", "status", "final_score", "offline_score", "wall_time", "seed"]
    table1, published = [], []
    for s in range(4):
        table1 += [("iql", "hopper-medium", "complete", 30.0 + s, 40.0, 1.0, s),
                   ("odt", "hopper-medium", "complete", 50.0, 20.0, 1.0, s),
                   ("odt-offline", "hopper-medium", "complete", 45.0, 45.0, 1.0, s)]
        published.append(("iql", "hopper-medium", "complete", 35.0 + 2 * s, 40.0, 1.0, s))
    published.append(("iql", "hopper-medium", "complete", 99.0, 40.0, 1.0, 7))  # no share run: unpaired
    c = buffer_comparison(pd.DataFrame(table1, columns=cols), pd.DataFrame(published, columns=cols),
                          "hopper-medium")
    assert c["delta_share"].mean == pytest.approx(-8.5)  # mean(30..33) - 40
    assert c["published_minus_share"].mean == pytest.approx(6.5) and c["published_minus_share"].n == 4  # 5 + s
    assert c["offline_gap"].mean == 0.0 and c["offline_gap"].lo == c["offline_gap"].hi == 0.0
    pub_gain = (35 + 37 + 39 + 41 + 99) / 5 - 40
    assert c["delta_published"].mean == pytest.approx(pub_gain)
    assert c["p2_published"].mean == pytest.approx((50 - 45) - pub_gain)


def test_side_sections_keep_to_the_summarised_datasets(monkeypatch):
    from benchmarks import aggregate as agg
    from benchmarks import reproduction
    cols = ["method", "dataset", "status", "final_score", "offline_score", "wall_time", "seed"]
    other = pd.DataFrame([("odt", "hopper-medium", "complete", 50.0, 40.0, 1.0, 0),
                          ("iql", "hopper-medium", "complete", 50.0, 40.0, 1.0, 0)], columns=cols)
    monkeypatch.setattr(agg, "load_runs", lambda root, preset, experiment: other)
    table1 = pd.DataFrame([("odt", "hopper-medium-replay", "complete", 30.0, 20.0, 1.0, 0)], columns=cols)
    assert reproduction.finetune_lr_lines("r", "cpu", table1) == []
    assert reproduction.buffer_lines("r", "cpu", table1) == []
    assert reproduction.finetune_lr_lines("r", "cpu", other) != []


def test_side_runs_on_another_data_file_are_never_paired_with_table1s(monkeypatch):
    """A remade medium-replay file is another dataset: S4's published IQL runs made on the old
    file must not be paired with Table 1's IQL runs on the new one, and the report says what it left out."""
    from benchmarks import aggregate as agg
    from benchmarks import reproduction
    cols = ["method", "dataset", "status", "final_score", "offline_score", "wall_time", "seed", "data_file"]
    table1 = pd.DataFrame([r for s in range(3) for r in (
        ("iql", "hopper-medium-replay", "complete", 30.0, 20.0, 1.0, s, "newfile1"),
        ("iql", "hopper-medium", "complete", 40.0, 30.0, 1.0, s, "medium01"))], columns=cols)
    published = pd.DataFrame([r for s in range(3) for r in (
        ("iql", "hopper-medium-replay", "complete", 90.0, 20.0, 1.0, s, "oldfile0"),
        ("iql", "hopper-medium", "complete", 45.0, 30.0, 1.0, s, "medium01"),
        ("iql", "hopper-medium", "complete", 45.0, 30.0, 1.0, s + 10, None))], columns=cols)
    monkeypatch.setattr(agg, "load_runs", lambda root, preset, experiment:
                        published if experiment == "iql_buffer" else pd.DataFrame(columns=cols))
    kept = reproduction.side_runs("r", "cpu", "iql_buffer", table1)
    assert set(kept.dataset) == {"hopper-medium"} and len(kept) == 6  # the unrecorded file is kept
    rows = [line for line in reproduction.buffer_lines("r", "cpu", table1) if line.startswith("| hopper")]
    assert len(rows) == 1 and rows[0].startswith("| hopper-medium |")
    # paired with the share runs on the same file only: published − share = 45 − 40 on each seed
    assert "+5.0 [+5.0, +5.0] (n=3)" in rows[0]
    left = reproduction.other_data_lines("r", "cpu", table1)
    assert left[-1] == ("- `iql_buffer` on hopper-medium-replay: 3 run(s) on data file oldfile0, "
                        "Table 1's runs on newfile1")
    same = published.assign(data_file=published.data_file.replace("oldfile0", "newfile1"))
    monkeypatch.setattr(agg, "load_runs", lambda root, preset, experiment:
                        same if experiment == "iql_buffer" else pd.DataFrame(columns=cols))
    assert reproduction.other_data_lines("r", "cpu", table1) == []
    assert len(reproduction.side_runs("r", "cpu", "iql_buffer", table1)) == 9


def test_pretraining_mismatches_name_the_seeds_where_odt_and_control_differ():
    from benchmarks.reproduction import control_lines, pretraining_mismatches
    rows = [("odt", "hopper-medium", "complete", 50.0, 30.0 + (s == 2), 1.0, s) for s in range(4)]
    rows += [("odt-control", "hopper-medium", "complete", 40.0, 30.0, 1.0, s) for s in range(1, 5)]
    runs = pd.DataFrame(rows, columns=["method", "dataset", "status", "final_score", "offline_score", "wall_time", "seed"])
    runs = runs.assign(updates=100, online_samples=5000)
    assert pretraining_mismatches(runs, "hopper-medium") == {2: 1.0}  # seeds 0 and 4 are unpaired
    warning = [line for line in control_lines(runs) if "WARNING" in line]
    assert len(warning) == 1 and "seeds 2 (+1.0)" in warning[0]
    same = runs.assign(offline_score=30.0)
    assert pretraining_mismatches(same, "hopper-medium") == {}
    assert not any("WARNING" in line for line in control_lines(same))


def test_control_pretraining_sets_p1_after_longer_pretraining_beside_table1s(monkeypatch):
    from benchmarks import aggregate as agg
    from benchmarks import reproduction
    cols = ["method", "dataset", "status", "final_score", "offline_score", "wall_time", "seed"]
    # Table 1: ODT 2 below its control on every seed; P1m: ODT 5 + s above it, pretrained 10 higher
    table1 = [("odt", "hopper-medium", "complete", 50.0, 30.0, 1.0, s) for s in range(4)]
    table1 += [("odt-control", "hopper-medium", "complete", 52.0, 30.0, 1.0, s) for s in range(4)]
    longer = [("odt", "hopper-medium", "complete", 65.0 + s, 40.0, 1.0, s) for s in range(3)]
    longer += [("odt-control", "hopper-medium", "complete", 60.0, 40.0, 1.0, s) for s in range(3)]
    table1, longer = (pd.DataFrame(r, columns=cols).assign(updates=100, online_samples=5000) for r in (table1, longer))
    c = reproduction.pretraining_length_comparison(table1, longer, "hopper-medium")
    assert c["p1"].mean == pytest.approx(-2.0) and c["p1"].n == 4
    assert c["p1m"].mean == pytest.approx(6.0) and c["p1m"].n == 3  # 5, 6, 7
    assert c["p1m_minus_p1"].mean == pytest.approx(8.0)
    assert c["pretrained_gain"].mean == pytest.approx(10.0) and c["pretrained_gain"].n == 3  # seeds in both
    monkeypatch.setattr(agg, "load_runs", lambda root, preset, experiment: longer)
    lines = reproduction.control_pretraining_lines("r", "cpu", table1)
    assert sum("| hopper-medium |" in line for line in lines) == 3  # Table 1, P1m, their difference
    assert any("P1m (the paper's amount)" in line and "+6.0" in line for line in lines)
    assert reproduction.control_pretraining_lines("r", "cpu", table1.assign(dataset="walker2d-medium")) == []


def test_seed_projection_from_paired_differences():
    """Differences 2, 4, 6, 8: mean 5, sample SD sqrt(20/3). Half-width at n seeds is
    1.96 SD / sqrt(n); seeds for 80% power at the mean: ((1.96 + 0.84) SD / 5)^2 = 2.09 -> 3."""
    from benchmarks.reproduction import seed_projection
    p = seed_projection([2.0, 4.0, 6.0, 8.0])
    sd = (20.0 / 3.0) ** 0.5
    assert (p.n, p.mean, p.sd) == (4, 5.0, pytest.approx(sd))
    assert p.half_width(10) == pytest.approx(1.959964 * sd / 10 ** 0.5)
    assert p.seeds_for_power() == 3
    assert seed_projection([1.0, -1.0]).seeds_for_power() == float("inf")  # mean 0: no seed count
    assert seed_projection([3.0]) is None  # one seed has no spread


def test_control_section_projects_the_seeds_its_paired_difference_needs():
    from benchmarks.reproduction import control_lines
    rows = [("odt", "hopper-medium", "complete", 40.0 + d, 30.0, 1.0, s) for s, d in enumerate([2, 4, 6, 8])]
    rows += [("odt-control", "hopper-medium", "complete", 40.0, 30.0, 1.0, s) for s in range(4)]
    runs = pd.DataFrame(rows, columns=["method", "dataset", "status", "final_score", "offline_score", "wall_time", "seed"])
    runs = runs.assign(updates=100, online_samples=5000)
    (row,) = [line for line in control_lines(runs) if line.startswith("| hopper-medium | 4 |")]
    assert "+5.0" in row and row.rstrip(" |").endswith("3")


def test_last_evaluations_mean_reads_the_last_k_online_rows_of_complete_runs():
    from benchmarks.reproduction import last_evaluations_lines, last_evaluations_mean
    runs = pd.DataFrame([("a", "odt", "hopper-medium", "complete", 0), ("b", "odt", "hopper-medium", "complete", 1),
                         ("c", "odt", "hopper-medium", "partial", 2), ("d", "odt-control", "hopper-medium", "complete", 0)],
                        columns=["run_id", "method", "dataset", "status", "seed"])
    rows = [("a", "pretrain", 1, 99.0), ("a", "online", 2, 10.0), ("a", "online", 3, 20.0), ("a", "online", 4, 40.0),
            ("b", "online", 2, 5.0),  # one online evaluation only: left out for k = 2
            ("c", "online", 2, 70.0), ("c", "online", 3, 70.0),  # not complete
            ("d", "online", 2, 0.0), ("d", "online", 3, 10.0)]
    curves = pd.DataFrame(rows, columns=["run_id", "phase", "step", "score_mean"])
    assert last_evaluations_mean(curves, runs, "hopper-medium", "odt", 2).to_dict() == {0: 30.0}
    assert last_evaluations_mean(curves, runs, "hopper-medium", "odt", 1).to_dict() == {0: 40.0, 1: 5.0}
    (row,) = [line for line in last_evaluations_lines(curves, runs, ["hopper-medium"])
              if line.startswith("| hopper-medium")]
    assert row.split(" | ")[1:3] == ["+30.0 (n=1: no interval from one seed)", "+25.0 (n=1: no interval from one seed)"]


def test_no_interval_is_printed_for_a_difference_whose_smallest_arm_has_one_seed():
    # one arm of one seed has no spread to build an interval from
    est = combination_estimate([([30.0, 50.0], 1.0), ([10.0], -1.0)])
    assert est.n == 1 and est.mean == pytest.approx(30.0) and est.interval is None
    assert est.text() == "+30.0 (n=1: no interval from one seed)"
    assert est.text(signed=False) == "30.0 (n=1: no interval from one seed)"
    assert "[" in combination_estimate([([1.0, 2.0], 1.0), ([0.0, 1.0], -1.0)]).text()


def _estimate(values):
    return combination_estimate([(np.asarray(values, dtype=float), 1.0)])


def test_the_primary_is_read_alone_and_the_rest_after_holm():
    """Three per-seed difference samples with p-values computed by scipy: the primary is read at
    its own p; the two others with Holm's adjusted p (min(1, 2 p_min), then the max)."""
    a, b, c = [4.1, 5.2, 3.9, 6.0, 4.8], [1.0, 2.5, 0.2, 1.8, 2.2], [0.5, -0.3, 0.8, 0.1, 0.4]
    p = [stats.ttest_1samp(x, 0.0).pvalue for x in (a, b, c)]
    read = read_protocol([Registered("A", _estimate(a), +1, 5.0, primary=True),
                          Registered("B", _estimate(b), +1, 5.0), Registered("C", _estimate(c), +1, 5.0)])
    assert read["A"].reading.p_difference == pytest.approx(p[0]) and read["A"].word == "supports"
    assert [read[k].reading.p_difference_holm for k in "BC"] == pytest.approx(holm(p[1:]))
    assert read["A"].text().startswith("**supports** (primary; p ")
    assert "Holm" in read["B"].text() and "Holm" not in read["A"].text()


def test_an_opposite_sign_is_never_agreement_and_statuses_stay_out_of_the_family():
    against = _estimate([-4.1, -5.2, -3.9, -6.0, -4.8])
    small = _estimate([0.2, -0.1, 0.1, 0.0, 0.15])
    read = read_protocol([Registered("against", against, +1, 100.0, primary=True),
                          Registered("small", small, +1, 5.0, primary=True),
                          Registered("floor", small, +1, 5.0, status="out of regime (floor)"),
                          Registered("few", Estimate(1.0, 0.0, 2.0, 3), +1, 5.0, status="incomplete (n=3 < 5)")])
    assert read["against"].word == "contradicts"  # even inside a huge margin
    assert read["small"].word == "equivalent"
    assert read["floor"].text() == "out of regime (floor)" and read["few"].reading is None


def test_margins_and_the_antmaze_floor():
    assert margin_for("hopper-medium") == 5.0 and margin_for("antmaze") == 10.0
    assert margin_for("antmaze-umaze-diverse") == 10.0
    assert at_floor("antmaze-umaze-diverse", [0, 1, 5], [0.0, 3.0])
    assert not at_floor("antmaze-umaze", [0, 1, 6], [0.0])
    assert not at_floor("hopper-medium", [0.0], [1.0])  # the floor is AntMaze's


def test_p1_and_p2_on_hopper_medium_are_primaries_and_p2_is_read_within_run():
    """PROTOCOL-reanalysis.md: P1 and P2 on hopper-medium read alone, on hopper-medium-replay as a
    Holm family of two; P2 = delta ODT - delta IQL each within its runs (last 2 online evaluations)."""
    from benchmarks.reproduction import table1_protocol_comparisons
    rows, online = [], {}
    for d, seeds in (("hopper-medium", 10), ("hopper-medium-replay", 5)):
        for s in range(seeds):
            rows += [("odt", d, s, "complete", 60.0 + s, 30.0, f"{d}o{s}"),
                     ("odt-control", d, s, "complete", 55.0 + s % 3, 30.0, f"{d}c{s}"),
                     ("iql", d, s, "complete", 40.0, 40.0 + s % 2, f"{d}i{s}")]
            online[f"{d}o{s}"] = [50.0, 50.0 + s, 60.0 + s]  # within run: 55 + s - 30
            online[f"{d}i{s}"] = [40.0, 40.0, 40.0]  # within run: 0 or -1
    runs = pd.DataFrame(rows, columns=["method", "dataset", "seed", "status", "final_score", "offline_score", "run_id"])
    comparisons = table1_protocol_comparisons(runs, _curves(online))
    assert [(c.key, c.primary) for c in comparisons] == [
        ("P1 hopper-medium", True), ("P2 hopper-medium", True),
        ("P1 hopper-medium-replay", False), ("P2 hopper-medium-replay", False)]
    p2 = comparisons[1].estimate
    assert p2.mean == pytest.approx((25.0 + 4.5) - (-0.5)) and p2.n == 10
    read = read_protocol(comparisons)
    assert read["P2 hopper-medium"].word == "supports" and read["P2 hopper-medium"].reading.p_difference_holm == \
        read["P2 hopper-medium"].reading.p_difference
    family = [read[k].reading.p_difference for k in ("P1 hopper-medium-replay", "P2 hopper-medium-replay")]
    assert [read[k].reading.p_difference_holm for k in ("P1 hopper-medium-replay", "P2 hopper-medium-replay")] == \
        pytest.approx(holm(family))


def test_regenerating_a_report_keeps_its_hand_written_end(tmp_path, capsys):
    out = tmp_path / "report.md"
    emit("# Report\n\nold numbers", out)
    assert out.read_text() == "# Report\n\nold numbers"
    account = f"{HAND_WRITTEN}\n\n## An account\n\nwritten by a person\n"
    out.write_text(out.read_text() + "\n\n" + account)
    emit("# Report\n\nnew numbers\n", out)
    text = out.read_text()
    assert "old numbers" not in text and text.startswith("# Report\n\nnew numbers\n")
    assert text.endswith(account) and text.count(HAND_WRITTEN) == 1
    emit("# Report\n\nnewer numbers", out)
    assert out.read_text().endswith(account) and "new numbers" not in out.read_text()
    assert "written by a person" not in capsys.readouterr().out  # the terminal shows the generated text
