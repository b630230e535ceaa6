"""The ablation protocol's analysis (studies/ablations/analysis.py) on hand-made records whose
differences are known by construction, and its verdicts as PROTOCOL-reanalysis.md reads
PROTOCOL-ablations-cpu.md's claims (one vocabulary; Fig. 2's entropy the primary, the rest one Holm
family; Figs. 9-10 cells out of regime below half the data's mean)."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.reproduction import Estimate
from studies.ablations import analysis as ap
from tests.test_aggregate import fake_run


def curve_run(root, experiment, method, dataset, seed, variant, online_scores, offline=30.0,
              entropy=-2.0, lam=0.05, init_lambda=0.1):
    """A complete run whose online evaluations are ``online_scores`` (in order)."""
    spec = RunSpec(experiment, method, dataset, seed, "cpu", variant=variant)
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.SPEC, spec.to_dict())
    rec.write_json(d / "config.json", {"optim": {"init_lambda": init_lambda}})
    curve = [{"phase": "pretrain", "updates": 10, "online_samples": 0, "score_mean": offline,
              "entropy": -1.0, "lambda": init_lambda}]
    per_eval = lambda v: v if isinstance(v, list) else [v] * len(online_scores)  # noqa: E731
    curve += [{"phase": "online", "updates": 20 + i, "online_samples": 100 * (i + 1), "score_mean": s,
               "entropy": h, "lambda": la}
              for i, (s, h, la) in enumerate(zip(online_scores, per_eval(entropy), per_eval(lam)))]
    rec.write_curve(d / rec.CURVE, curve)
    rec.write_json(d / rec.RECORD, {"status": "complete", "run_id": spec.run_id, "final_score": online_scores[-1],
                                    "offline_score": offline, "counters": {"wall_time": 1.0}})


def word(c):
    """A comparison's verdict word (markdown bold and p-values removed)."""
    return ap.verdict_word(c.verdict)


def _paired(values):
    from benchmarks.reproduction import combination_estimate
    return combination_estimate([(np.asarray(values, dtype=float), 1.0)])


@pytest.mark.parametrize("values,expected", [
    ([4.0, 5.0, 6.0, 5.5, 4.5], "supports"), ([-4.0, -5.0, -6.0, -5.5, -4.5], "contradicts"),
    ([-0.3, 0.2, 0.1, -0.1, 0.0], "equivalent"),  # inside +-5: no longer "does not hold"
    ([-9.0, 12.0, 3.0, -6.0, 15.0], "inconclusive"),
    ([-0.4, -0.5, -0.6, -0.55, -0.45], "contradicts")])  # shown below 0, however small: never equivalent
def test_positive_claims_read_in_one_vocabulary(values, expected):
    (c,) = ap.read_all([ap.positive("Fig. 7", "D9", "D9", _paired(values), 5)])
    assert word(c) == expected


@pytest.mark.parametrize("values,expected", [
    ([-0.3, 0.2, 0.1, -0.1, 0.0], "equivalent"), ([0.4, 0.5, 0.6, 0.55, 0.45], "equivalent"),
    ([9.0, 10.0, 11.0, 10.5, 9.5], "contradicts"), ([-9.0, -10.0, -11.0, -10.5, -9.5], "contradicts"),
    ([-9.0, 12.0, 3.0, -6.0, 15.0], "inconclusive"), ([4.0, 5.0, 6.0, 5.5, 4.5], "inconclusive")])
def test_comparable_claims_read_equivalent_or_beyond_the_margin(values, expected):
    (c,) = ap.read_all([ap.comparable("Appendix D", "D16", "D16", _paired(values), 5)])
    assert word(c) == expected


def test_no_verdict_below_the_protocols_seed_count():
    (c,) = ap.read_all([ap.positive("Fig. 7", "D9", "D9", _paired([9.0, 8.0, 10.0, 9.5]), 5)])
    assert c.verdict == "incomplete (n=4 < 5)"


def test_every_claim_but_the_primary_is_one_holm_family():
    from scipy import stats

    from benchmarks.intervals import holm
    samples = {"Fig. 2 entropy": [0.1, 0.2, 0.0, 0.1, 0.15], "D1": [4.0, 5.0, 6.5], "D9": [2.0, 3.5, 1.0, 2.5, 4.0],
               "D13": [10.0, 12.0, 9.0, 20.0, 15.0]}
    rows = [ap.Comparison("Fig. 2", "gap", _paired(samples["Fig. 2 entropy"]), key=ap.PRIMARY, expected_sign=None,
                          margin=ap.ENTROPY_MARGIN)]
    rows += [ap.positive("x", k, k, _paired(v), 3) for k, v in samples.items() if k != ap.PRIMARY]
    read = {c.key: c for c in ap.read_all(rows)}
    assert read[ap.PRIMARY].verdict.startswith("**equivalent** (primary;")
    raw = [stats.ttest_1samp(samples[k], 0.0).pvalue for k in ("D1", "D9", "D13")]
    adjusted = holm(raw)
    for k, p in zip(("D1", "D9", "D13"), adjusted):
        assert f"Holm {p:.3f}" in read[k].verdict


def test_hindsight_is_paired_by_seed(tmp_path):
    root = tmp_path / "results"
    # seed s: off scores 40 + 3s (seeds differ a lot), on adds exactly 6: paired, the interval has no width
    for s in range(20, 25):
        fake_run(root, "odt", "hopper-medium", s, final=46.0 + 3 * s, experiment="hindsight", preset="cpu",
                 variant="relabel=True")
        fake_run(root, "odt", "hopper-medium", s, final=40.0 + 3 * s, experiment="hindsight", preset="cpu",
                 variant="relabel=False")
    fake_run(root, "odt", "hopper-medium", 25, status="failed", experiment="hindsight", preset="cpu",
             variant="relabel=True")  # not complete: left out
    (c,) = ap.read_all(ap.fig7_hindsight(ap.load(root, "cpu")))
    assert (c.estimate.mean, c.estimate.lo, c.estimate.hi, c.estimate.n) == pytest.approx((6.0, 6.0, 6.0, 5))
    assert word(c) == "supports" and "s20 +6.0" in c.per_seed


def test_buffer_init_and_table_rtg_are_per_dataset(tmp_path):
    root = tmp_path / "results"
    for s in range(20, 25):
        for d, top_gain in (("hopper-medium", 10.0), ("walker2d-medium", -1.0)):
            fake_run(root, "odt", d, s, final=50.0 + s + top_gain, experiment="buffer_init", preset="cpu",
                     variant="init=top")
            fake_run(root, "odt", d, s, final=50.0 + s, experiment="buffer_init", preset="cpu", variant="init=random")
        fake_run(root, "odt", "hopper-medium", s, final=50.0 + (s % 2), experiment="table_rtg", preset="cpu",
                 variant="g_online=2g*")
        fake_run(root, "odt", "hopper-medium", s, final=50.0, experiment="table_rtg", preset="cpu",
                 variant="g_online=g*")
    data = ap.load(root, "cpu")
    hop, walk, rtg = ap.read_all(ap.fig8_buffer_init(data) + ap.appendix_d_table_rtg(data))
    assert "hopper-medium" in hop.label and hop.estimate.mean == pytest.approx(10.0) and word(hop) == "supports"
    # exactly -1 on every seed: a difference shown against the claim, small as it is
    assert walk.estimate.mean == pytest.approx(-1.0) and word(walk) == "contradicts"
    assert rtg.estimate.mean == pytest.approx(2 / 5) and word(rtg) == "equivalent"  # inside [-5, 5]


def test_stability_measures_against_hand_computed_values(tmp_path):
    root = tmp_path / "results"
    for s in range(5):
        # ODT: offline 30, online 40, 50, 45 (mean |change| 7.5); gain 15
        curve_run(root, "table1", "odt", "hopper-medium", s, "default", [40.0, 50.0, 45.0])
        # IQL: its last two evaluations 29 and 29, so a within-run delta of exactly -1 (comparable to 0);
        # SAC: 5, 25, 5 (mean |change| 20)
        curve_run(root, "table1", "iql", "hopper-medium", s, "default", [60.0, 29.0, 29.0], offline=30.0)
        curve_run(root, "table1", "sac", "hopper-medium", s, "default", [5.0, 25.0, 5.0], offline=0.0)
    data = ap.load(root, "cpu")
    d13, d14, d15 = ap.read_all(ap.fig11_stability(data))
    lines = ap.report_lines(data, "cpu")
    table = [line for line in lines[:lines.index("## Appendix F: sampling by length against by return (no runs)")]
             if line.startswith("| ")]
    assert all(line.count("|") == 6 for line in table)  # no label breaks the markdown table's columns
    # within run, k = 2 (IQL's runs have 3 online evaluations, ODT's 3): ODT (50 + 45) / 2 - 30 = 17.5
    assert d13.estimate.mean == pytest.approx(17.5) and word(d13) == "supports"
    assert d14.estimate.mean == pytest.approx(-1.0) and word(d14) == "equivalent"
    assert d15.estimate.mean == pytest.approx(20.0 - 7.5) and word(d15) == "supports"


def test_deterministic_head_loss_from_its_peak(tmp_path):
    root = tmp_path / "results"
    for s in range(20, 25):
        for size in ("small", "large"):
            curve_run(root, "stoch_vs_det", "odt", "hopper-medium", s, f"{size},stochastic", [50.0, 60.0, 58.0])
            curve_run(root, "stoch_vs_det", "odt", "hopper-medium", s, f"{size},deterministic", [55.0, 70.0, 40.0])
    d3, d4, *_ = ap.read_all(ap.fig4_stoch(ap.load(root, "cpu")))
    assert d3.estimate.mean == pytest.approx(58.0 - 40.0) and word(d3) == "supports"
    assert d4.estimate.mean == pytest.approx((70.0 - 40.0) - (60.0 - 58.0)) and word(d4) == "supports"


def test_convergence_reads_entropy_against_beta_and_lambda_against_its_start(tmp_path):
    root = tmp_path / "results"
    for s in range(5):  # hopper: beta = -|A| = -3
        curve_run(root, "table1", "odt", "hopper-medium", s, "default", [50.0, 60.0], entropy=-2.8, lam=0.02,
                  init_lambda=0.1)
    gap, ratio = ap.read_all(ap.fig2_convergence(ap.load(root, "cpu")))
    assert gap.estimate.mean == pytest.approx(0.2) and gap.verdict.startswith("**equivalent** (primary;")
    assert ratio.estimate.mean == pytest.approx(0.2) and word(ratio) == "supports"  # below 0.5


def test_convergence_needs_the_entropy_gaps_mean_within_half_a_nat(tmp_path):
    root = tmp_path / "results"
    for s in range(5):  # gap 0.7 on every seed: inside +-1 nat, but its mean is not within 0.5
        curve_run(root, "table1", "odt", "hopper-medium", s, "default", [50.0, 60.0], entropy=-2.3)
    gap, _ = ap.read_all(ap.fig2_convergence(ap.load(root, "cpu")))
    assert gap.verdict.startswith("inconclusive (equivalent within ±1 but |mean| > 0.5")


def _grid_runs(root, gains, offline=(40.0, 40.0, 40.0, 40.0)):
    cells = ["lr=0.0001,wd=0.0001", "lr=0.0001,wd=0.001", "lr=0.001,wd=0.0001", "lr=0.001,wd=0.001"]
    for s in range(20, 23):
        for cell, g, pre in zip(cells, gains, offline):
            fake_run(root, "odt", "walker2d-medium", s, final=50.0 + g + s % 2, offline=pre, experiment="pos_embedding",
                     preset="cpu", variant=f"pos=False,{cell}")
            fake_run(root, "odt", "walker2d-medium", s, final=50.0, offline=pre, experiment="pos_embedding",
                     preset="cpu", variant=f"pos=True,{cell}")


def test_grid_claim_needs_three_of_four_cells_and_none_against(tmp_path):
    _grid_runs(tmp_path / "a", [10.0, 12.0, 9.0, -8.0])
    rows = ap.read_all(ap.fig10_pos_embedding(ap.load(tmp_path / "a", "cpu")))
    assert [word(r) for r in rows[:4]] == ["supports", "supports", "supports", "contradicts"]
    assert rows[-1].verdict == "contradicts"  # three cells support, one goes against
    _grid_runs(tmp_path / "b", [10.0, 12.0, 9.0, 0.0])
    rows = ap.read_all(ap.fig10_pos_embedding(ap.load(tmp_path / "b", "cpu")))
    assert word(rows[3]) == "equivalent" and rows[-1].verdict == "inconclusive"  # no cell may be equivalent
    _grid_runs(tmp_path / "c", [10.0, 12.0, 9.0, 20.0])
    assert ap.read_all(ap.fig10_pos_embedding(ap.load(tmp_path / "c", "cpu")))[-1].verdict == "supports"


def test_grid_cells_whose_pretraining_ends_below_half_the_datas_mean_are_out_of_regime(tmp_path):
    """walker2d-medium's card: mean normalised return 33.5, so a cell whose arms end pretraining
    below 16.8 is out of regime; the grid is read over the two cells left (both must support)."""
    assert ap.data_mean("walker2d-medium") == pytest.approx(33.528, abs=1e-3)
    _grid_runs(tmp_path / "results", [-10.0, -12.0, 9.0, 11.0], offline=(6.7, 16.7, 30.0, 16.9))
    rows = ap.read_all(ap.fig10_pos_embedding(ap.load(tmp_path / "results", "cpu")))
    assert [r.verdict.startswith("out of regime") for r in rows[:4]] == [True, True, False, False]
    assert "pretraining ends at 6.7 < half the data's mean 33.5" in rows[0].verdict
    assert [word(r) for r in rows[2:4]] == ["supports", "supports"] and rows[-1].verdict == "supports"


def context_run(root, seed, ctx, losses, offline, final=30.0):
    """A complete Fig. 9 run whose pretraining evaluations logged ``losses`` (in order)."""
    spec = RunSpec("eval_context", "odt", "ant-medium-replay", seed, "cpu", variant=f"ctx={ctx},lr=0.001,wd=0.0001")
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.SPEC, spec.to_dict())
    curve = [{"phase": "pretrain", "updates": 10 * (i + 1), "online_samples": 0, "score_mean": offline, "loss": loss}
             for i, loss in enumerate(losses)]
    curve.append({"phase": "online", "updates": 100, "online_samples": 1000, "score_mean": final, "loss": 0.1})
    rec.write_curve(d / rec.CURVE, curve)
    rec.write_json(d / rec.RECORD, {"status": "complete", "run_id": spec.run_id, "final_score": final,
                                    "offline_score": offline, "counters": {"wall_time": 1.0}})


def test_eval_context_within_network_reading_pairs_only_seeds_that_shared_pretraining(tmp_path):
    root = tmp_path / "results"
    for s in (20, 21):  # same pretraining in both arms: context 1 scores 2 more
        context_run(root, s, 1, (1.5, 0.7), offline=32.0 + s)
        context_run(root, s, 5, (1.5, 0.7), offline=30.0 + s)
    context_run(root, 22, 1, (1.5, 0.7), offline=90.0)  # another network at ctx 5 (its losses differ): left out
    context_run(root, 22, 5, (1.5, 0.8), offline=40.0)
    rows = ap.fig9_eval_context(ap.load(root, "cpu"))
    (x,) = [r for r in rows if r.label.startswith("D11x")]
    assert (x.estimate.mean, x.estimate.lo, x.estimate.hi, x.estimate.n) == pytest.approx((2.0, 2.0, 2.0, 2))
    assert x.per_seed == "s20 +2.0, s21 +2.0" and x.verdict.startswith("no verdict")
    assert ap.shared_pretraining(ap.load(root, "cpu").curves["eval_context"],
                                 "ctx=1,lr=0.001,wd=0.0001", "ctx=5,lr=0.001,wd=0.0001") == [20, 21]


def test_report_names_the_command_for_figures_without_runs(tmp_path):
    root = tmp_path / "results"
    for s in range(20, 25):
        for on in (True, False):
            fake_run(root, "odt", "hopper-medium", s, final=50.0, experiment="hindsight", preset="cpu",
                     variant=f"relabel={on}")
    text = "\n".join(ap.report_lines(ap.load(root, "cpu"), "cpu"))
    assert "python -m benchmarks.run g_eval --preset cpu --seeds 3" in text
    assert "| Fig. 7 |" in text and "+0.0 [+0.0, +0.0] (n=5) | **equivalent** (" in text


def test_sampling_correlation_is_pearson_over_trajectory_probabilities(monkeypatch):
    lengths = np.array([10, 20, 30, 40])
    returns = np.array([5.0, 30.0, 20.0, 45.0])
    traj = types.SimpleNamespace(lengths=lengths, returns=lambda: returns, num_steps=100)
    monkeypatch.setattr("benchmarks.datasets.load_dataset", lambda name: types.SimpleNamespace(trajectories=traj))
    monkeypatch.setattr("benchmarks.datasets.loading.content_sha256", lambda t: "ab" * 32)
    ((name, r, note),) = ap.sampling_correlations(["hopper-medium"])
    # by hand: p_len = l / 100, p_ret = R / 100; Pearson r of (10, 20, 30, 40) and (5, 30, 20, 45)
    x, y = lengths - lengths.mean(), returns - returns.mean()
    assert r == pytest.approx(float((x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum())))
    assert "4 trajectories" in note


def _appendix_f_row(text: str, name: str) -> str:
    (row,) = [line for line in text.splitlines() if line.startswith(f"| {name} |")]
    return row


def test_a_dataset_not_on_disk_keeps_the_row_an_earlier_report_computed(tmp_path, monkeypatch, capsys):
    """Regenerating Appendix F on a machine without a dataset keeps the earlier report's row for it
    (value, verdict and content hash unchanged) and says so; a dataset never computed stays '—'."""
    root, out = tmp_path / "results", tmp_path / "ablations.md"
    data = ap.load(root, "cpu")
    computed = [("hopper-medium", 0.98213, "content bdaad3f4, 2665 trajectories"),
                ("walker2d-medium", 0.5, "content 15c93cbb, 1523 trajectories"),
                ("halfcheetah-medium", None, "not on disk here (FileNotFoundError)")]
    out.write_text("\n".join(ap.report_lines(data, "cpu", computed)))
    before = out.read_text()

    def absent(name, **_):
        raise FileNotFoundError(name)
    monkeypatch.setattr("benchmarks.datasets.load_dataset", absent)
    ap.main(["--results", str(root), "--out", str(out),
             "--correlations", "hopper-medium", "walker2d-medium", "halfcheetah-medium"])
    after = out.read_text()
    assert _appendix_f_row(after, "hopper-medium") == "| hopper-medium | 0.982 | supports | content bdaad3f4, 2665 trajectories |"
    assert _appendix_f_row(after, "walker2d-medium") == _appendix_f_row(before, "walker2d-medium")
    assert "| 0.500 | contradicts |" in _appendix_f_row(after, "walker2d-medium")
    assert _appendix_f_row(after, "halfcheetah-medium").startswith("| halfcheetah-medium | — | — | not on disk here")
    err = capsys.readouterr().err
    assert "hopper-medium is not on disk here; kept its row" in err and "halfcheetah-medium" not in err


def test_a_dataset_on_disk_is_computed_again_not_kept(monkeypatch):
    """An earlier report's row is only a fallback: a dataset that loads is computed afresh."""
    lengths, returns = np.array([10, 20, 30]), np.array([10.0, 20.0, 30.0])  # r = 1 by construction
    traj = types.SimpleNamespace(lengths=lengths, returns=lambda: returns)
    monkeypatch.setattr("benchmarks.datasets.load_dataset", lambda name: types.SimpleNamespace(trajectories=traj))
    monkeypatch.setattr("benchmarks.datasets.loading.content_sha256", lambda t: "cd" * 32)
    earlier = "## Appendix F\n\n| dataset | r | verdict | data |\n|---|---|---|---|\n| hopper-medium | 0.100 | does not hold | content ab |\n"
    ((name, r, note),) = ap.keep_previous(ap.sampling_correlations(["hopper-medium"]), earlier, "earlier.md")
    assert r == pytest.approx(1.0) and note == "content cdcdcdcd, 3 trajectories"


def test_g_eval_sweep_differences_are_read_from_the_sweep_rows(tmp_path):
    root = tmp_path / "results"
    for s in range(20, 23):
        spec = RunSpec("g_eval", "odt", "hopper-medium", s, "cpu", variant="default", g_eval_sweep=(0.25, 1.0))
        d = rec.run_dir(root, spec)
        rec.write_json(d / rec.SPEC, spec.to_dict())
        # after pretraining R(1.0) - R(0.25) = 20; after finetuning 5: D1 = 20, D2 = 15
        sweeps = [("sweep-pretrained", 0.25, 30.0), ("sweep-pretrained", 1.0, 50.0),
                  ("sweep-finetuned", 0.25, 60.0), ("sweep-finetuned", 1.0, 65.0)]
        curve = [{"phase": "pretrain", "updates": 10, "online_samples": 0, "score_mean": 40.0, "g_eval": 3600.0}]
        curve += [{"phase": p, "g_eval_multiple": m, "g_eval": m * 3600.0, "score_mean": v + s, "updates": 10,
                   "online_samples": 0} for p, m, v in sweeps]
        rec.write_curve(d / rec.CURVE, curve)
        rec.write_json(d / rec.RECORD, {"status": "complete", "run_id": spec.run_id, "final_score": 65.0,
                                        "offline_score": 40.0, "counters": {}})
    d1, d2 = ap.read_all(ap.fig3_g_eval(ap.load(root, "cpu")))
    assert d1.estimate.mean == pytest.approx(20.0) and d1.estimate.n == 3 and word(d1) == "supports"
    assert word(d2) == "supports" and d2.estimate.mean == pytest.approx(15.0)


@pytest.mark.parametrize("domain", ["hopper", "walker2d", "halfcheetah", "ant"])
def test_action_dims_are_the_environments_own(domain):
    """beta = -|A| in the entropy comparisons and panels: |A| read from each dataset's environment."""
    from benchmarks.datasets import DATASETS
    from benchmarks.experiments import ACTION_DIMS

    env = DATASETS[f"{domain}-medium"].make_env()
    try:
        assert env.action_space.shape == (ACTION_DIMS[domain],)
    finally:
        env.close()


@pytest.mark.parametrize("argv, message", [(["--seeds", "0"], "unrecognized arguments: --seeds"),
                                           (["--reps", "500"], "unrecognized arguments: --reps")])
def test_cli_rejects_seed_cuts_and_resampling(argv, message, capsys):
    """Each figure has its protocol's seeds, and nothing is resampled (t-intervals)."""
    with pytest.raises(SystemExit) as bad:
        ap.main(argv)
    assert bad.value.code == 2 and message in capsys.readouterr().err


def test_report_says_where_each_experiments_runs_ran(tmp_path):
    """Hindsight's arms on two machines (3 runs on one, 2 on the other) are counted per value;
    Table 1's runs are left to Table 1's own section; a failed run is not counted."""
    from tests.test_aggregate import _ran_on
    root = tmp_path / "results"
    for s in range(20, 25):
        for on in (True, False):
            spec = fake_run(root, "odt", "hopper-medium", s, final=50.0, experiment="hindsight", preset="cpu",
                            variant=f"relabel={on}")
            cpu = "AMD EPYC" if s < 23 else "Intel Xeon"
            _ran_on(root, spec, ("f" * 40, False, cpu, "2.13.0+cpu"))
    fake_run(root, "odt", "hopper-medium", 25, status="failed", experiment="hindsight", preset="cpu",
             variant="relabel=True")
    fake_run(root, "odt", "hopper-medium", 0, experiment="table1", preset="cpu")
    text = "\n".join(ap.report_lines(ap.load(root, "cpu"), "cpu"))
    where = text[text.index("## Where the runs ran"):]
    assert "| hindsight | 10 | 0.00 | fffffff | AMD EPYC (6), Intel Xeon (4) | 2.13.0+cpu | ab12cd34 |" in where
    assert "| table1 |" not in where


def test_a_comparison_with_one_seed_in_an_arm_prints_no_interval():
    one = ap.Comparison("Fig. 4", "D3", Estimate(37.0, 25.2, 48.9, 1), "incomplete (n=1 < 5)")
    assert one.text() == "+37.0 (n=1: no interval from one seed)"
    assert ap.Comparison("Fig. 4", "D3", Estimate(37.0, 25.2, 48.9, 2), "x").text() == "+37.0 [+25.2, +48.9] (n=2)"
    # a value with no bootstrap at all (Fig. 12's spread of λ) keeps its own format
    assert ap.Comparison("Fig. 12", "spread", Estimate(0.051, float("nan"), float("nan"), 1), "x").text() == "0.051 (n=1)"


def test_sampling_runs_are_compared_unpaired_and_get_no_verdict(tmp_path):
    root = tmp_path / "results"
    # return arm finals 50, 52, ..., 58 (mean 54); length arm 40 at every seed but one missing seed:
    # unpaired, so the missing seed does not drop the return arm's seed 24
    for i, s in enumerate(range(20, 25)):
        curve_run(root, "sampling", "odt", "hopper-medium", s, "sampling=return", [50.0 + 2 * i], offline=30.0)
        if s != 24:
            curve_run(root, "sampling", "odt", "hopper-medium", s, "sampling=length", [40.0], offline=32.0)
    final, pretrained = ap.appendix_f_sampling(ap.load(root, "cpu"))
    assert final.estimate.mean == pytest.approx(14.0) and pretrained.estimate.mean == pytest.approx(-2.0)
    assert final.estimate.n == 4 and final.verdict.startswith("incomplete")  # n is the smaller arm's
    curve_run(root, "sampling", "odt", "hopper-medium", 24, "sampling=length", [40.0], offline=32.0)
    final, _ = ap.appendix_f_sampling(ap.load(root, "cpu"))
    assert final.estimate.n == 5 and final.verdict == "no verdict (exploratory)"
    assert "s24 +58.0" in final.per_seed


def _lambda_sweep(root, finals, entropy=-6.2, seeds=(20, 21, 22)):
    """Fig. 12's runs on walker2d-medium (beta = -6): λ0 -> every seed's final λ."""
    for lam0, lam in finals.items():
        for s in seeds:
            curve_run(root, "lambda", "odt", "walker2d-medium", s, f"lambda0={lam0:g}", [40.0],
                      entropy=entropy, lam=lam, init_lambda=float(lam0))


@pytest.mark.parametrize("finals,entropy,expected", [
    ({1: 0.30, 2: 0.32, 5: 0.35, 10: 0.36, 100: 0.38}, -6.2, "supports"),  # spread 0.08, entropy 0.2 from beta
    ({1: 0.30, 2: 0.32, 5: 0.35, 10: 0.36, 100: 0.38}, -4.0, "inconclusive"),  # entropy 2 nats above beta
    ({1: 0.30, 2: 0.32, 5: 0.35, 10: 0.50, 100: 0.55}, -6.2, "inconclusive"),  # spread 0.25: between 0.1 and 0.3
    ({1: 0.30, 2: 0.32, 5: 0.35, 10: 0.97, 100: 0.97}, -6.2, "contradicts"),  # spread 0.67 > 0.3
    ({1: 0.30, 2: 0.32, 5: 0.35, 10: 0.36, 100: 1.10}, -6.2, "contradicts")])  # a λ at or above 1
def test_lambda_sweep_applies_the_protocols_rule(tmp_path, finals, entropy, expected):
    _lambda_sweep(tmp_path / "results", finals, entropy)
    c, _ = ap.fig12_lambda(ap.load(tmp_path / "results", "cpu"))
    assert word(c) == expected and "the protocol's rule" in c.verdict
    assert c.estimate.mean == pytest.approx(max(finals.values()) - min(finals.values()))
    assert f"lambda0=100 s22 λ {finals[100]:.3f} (entropy − β {entropy + 6:+.2f}" in c.per_seed


def test_lambda_runs_say_where_entropy_first_comes_within_half_a_nat_of_beta(tmp_path):
    """Per run: the first evaluation whose entropy is at most 0.5 above β = -6 and the lowest λ from
    there on (the dip after the constraint binds); a run whose entropy stays higher says so."""
    root = tmp_path / "results"
    # evaluations at updates 20, 21, 22, 23: entropy -3, -5.4 (0.6 above: not yet), -5.6, -6.1
    curve_run(root, "lambda", "odt", "walker2d-medium", 20, "lambda0=10", [40.0] * 4,
              entropy=[-3.0, -5.4, -5.6, -6.1], lam=[2.0, 0.9, 0.7, 0.8], init_lambda=10.0)
    curve_run(root, "lambda", "odt", "walker2d-medium", 20, "lambda0=1", [40.0] * 2,
              entropy=[-2.0, -4.0], lam=[0.5, 0.4], init_lambda=1.0)
    # near β only before its entropy rises (a fresh policy): not the constraint binding
    curve_run(root, "lambda", "odt", "walker2d-medium", 20, "lambda0=2", [40.0] * 3,
              entropy=[-5.8, 3.0, -1.0], lam=[1.5, 1.2, 1.0], init_lambda=2.0)
    c, _ = ap.fig12_lambda(ap.load(root, "cpu"))
    assert "lambda0=2 s20 λ 1.000 (entropy − β +5.00, 0.0k updates; never within 0.5 of β after its peak)" in c.per_seed
    assert "lambda0=10 s20 λ 0.800 (entropy − β -0.10, 0.0k updates; within 0.5 of β from 0.0k, lowest λ since 0.700)" \
        in c.per_seed
    assert "lambda0=1 s20 λ 0.400 (entropy − β +2.00, 0.0k updates; never within 0.5 of β after its peak)" in c.per_seed
    bound = ap._where_beta_binds(ap.load(root, "cpu").curves["lambda"], -6.0)
    assert sorted(bound.beta_at.dropna().tolist()) == [22.0]
    # an unlogged entropy is not the peak: -5.8 comes before the real one (3.0), so β is never reached
    gaps = pd.DataFrame({"run_id": ["x"] * 4, "step": [1, 2, 3, 4], "status": ["complete"] * 4, "updates": [1, 2, 3, 4],
                         "entropy": [float("nan"), -5.8, 3.0, -1.0], "lambda": [1.0, 0.9, 0.8, 0.7]})
    assert ap._where_beta_binds(gaps, -6.0).loc["x"].isna().all()


def test_lambda_sweep_waits_for_three_seeds_of_every_initial_value(tmp_path):
    root = tmp_path / "results"
    _lambda_sweep(root, {1: 0.3, 2: 0.3, 5: 0.3, 10: 0.3}, seeds=(20, 21, 22))
    _lambda_sweep(root, {100: 0.3}, seeds=(20, 21))
    c, _ = ap.fig12_lambda(ap.load(root, "cpu"))
    assert c.verdict.startswith("incomplete (n=2")


def test_lambda_sweep_also_reads_lambda_among_the_initial_values_that_reach_beta(tmp_path):
    root = tmp_path / "results"
    _lambda_sweep(root, {1: 0.36, 2: 0.33, 5: 0.37}, entropy=-2.0)  # 4 nats above beta = -6: stopped early
    _lambda_sweep(root, {10: 0.97}, entropy=-6.1)
    _lambda_sweep(root, {100: 0.95}, entropy=-6.1, seeds=(20, 21))  # n is the kept values' fewest seeds
    registered, bound = ap.fig12_lambda(ap.load(root, "cpu"))
    assert registered.verdict.startswith("incomplete (n=2") and registered.estimate.mean == pytest.approx(0.97 - 0.33)
    assert bound.estimate.mean == pytest.approx(0.02) and bound.estimate.n == 2 and "(2 of 5; exploratory)" in bound.label
    assert bound.verdict == "no verdict (exploratory)"
    assert bound.per_seed.endswith("not reaching β: lambda0=1, lambda0=2, lambda0=5")
