"""The buffer protocol's analysis (studies/buffer/analysis.py) on hand-made records whose
differences are known: B1 paired by seed, B2 as a difference of paired differences, and their
reading under PROTOCOL-reanalysis.md (B2 primary, the B1s one Holm family)."""

from __future__ import annotations

import pytest

from studies.buffer import analysis as bp
from tests.test_aggregate import fake_run


def _paired(values):
    from benchmarks.reproduction import combination_estimate
    return combination_estimate([(values, 1.0)])


def test_b2_is_the_primary_and_the_b1s_one_holm_family():
    """PROTOCOL-reanalysis.md: B2 read alone; B1 at 25, 250, 1200 read with Holm; P1(250) - P1(25) described."""
    from scipy import stats

    from benchmarks.intervals import holm
    b1 = {b: [d + 0.5 * i for i in range(5)] for b, d in ((25, -10.0), (250, 1.0), (1200, 4.0))}
    comp = {f"B1({b})": _paired(v) for b, v in b1.items()}
    comp["P1(1200) - P1(25)"] = _paired([14.0, 14.5, 13.0, 15.0, 16.0])
    comp["P1(250) - P1(25)"] = _paired([11.0, 11.5, 10.0, 12.0, 13.0])
    read = bp.verdicts(comp)
    assert "P1(250) - P1(25)" not in read and read["P1(1200) - P1(25)"].primary
    raw = [stats.ttest_1samp(v, 0.0).pvalue for v in b1.values()]
    assert [read[f"B1({b})"].reading.p_difference_holm for b in b1] == pytest.approx(holm(raw))
    assert read["B1(25)"].word == "contradicts" and read["P1(1200) - P1(25)"].word == "supports"


def test_a_difference_inside_the_margin_reads_equivalent_not_contradicts():
    read = bp.verdicts({"P1(1200) - P1(25)": _paired([0.5, -0.4, 0.2, 0.1, -0.3])})
    assert read["P1(1200) - P1(25)"].word == "equivalent"
    assert bp.verdicts({"B1(25)": _paired([])})["B1(25)"].word == "no data"


def test_b1_and_b2_pair_by_seed(tmp_path):
    root = tmp_path / "results"
    # seed s: control final 50 + s at every size; ODT adds -10 at 25, 0 at 250, +s at 1200
    for seed in range(10, 15):
        for b, add in ((25, -10.0), (250, 0.0), (1200, float(seed))):
            for method, final in (("odt", 50.0 + seed + add), ("odt-control", 50.0 + seed)):
                fake_run(root, method, "hopper-medium", seed, final=final, offline=30.0,
                         experiment="buffer_size", preset="cpu", variant=f"buffer={b}")
    runs = bp.scores(root, "cpu")
    assert len(runs) == 30
    comp = bp.comparisons(runs)
    assert comp["B1(25)"].mean == pytest.approx(-10.0) and comp["B1(25)"].lo == pytest.approx(-10.0)
    assert comp["B1(1200)"].mean == pytest.approx(12.0) and comp["B1(1200)"].n == 5
    assert comp["P1(1200) - P1(25)"].mean == pytest.approx(22.0)
    assert comp["P1(250) - P1(25)"].mean == pytest.approx(10.0) and comp["P1(250) - P1(25)"].hi == pytest.approx(10.0)
    read = bp.verdicts(comp)
    assert read["B1(25)"].word == "contradicts" and read["B1(1200)"].word == "supports"
    text = bp.report(root, "cpu")
    assert "30 of 30 runs complete" in text and "Incomplete" not in text
    assert "| 12 | 1200 | 30.00 / 74.0 | 30.00 / 62.0 | +12.0 | yes |" in text


def test_an_incomplete_batch_is_labelled_a_status(tmp_path):
    root = tmp_path / "results"
    for method in ("odt", "odt-control"):
        fake_run(root, method, "hopper-medium", 10, experiment="buffer_size", preset="cpu", variant="buffer=25")
    assert "a status, not a result" in bp.report(root, "cpu")


def test_cli_rejects_seed_cuts_and_resampling(capsys):
    for argv, message in ((["--seeds", "0"], "unrecognized arguments: --seeds"),
                          (["--reps", "500"], "unrecognized arguments: --reps")):
        with pytest.raises(SystemExit) as bad:
            bp.main(argv)
        assert bad.value.code == 2 and message in capsys.readouterr().err
