"""The buffer protocol's analysis (benchmarks/buffer_protocol.py) on hand-made records whose
differences are known: B1 paired by seed, B2 as a difference of paired differences, and the
protocol's verdict rule."""

from __future__ import annotations

import pytest

from benchmarks import buffer_protocol as bp
from benchmarks.reproduction import Estimate
from tests.test_aggregate import fake_run


@pytest.mark.parametrize("lo,hi,expected", [
    (0.5, 9.0, "supports"), (-9.0, -0.5, "contradicts"), (-2.0, 2.5, "contradicts"),  # inside [-3, 3]
    (-4.0, 8.0, "inconclusive"), (-3.5, 1.0, "inconclusive")])
def test_verdict_follows_the_protocol(lo, hi, expected):
    assert bp.verdict(Estimate((lo + hi) / 2, lo, hi, 5)) == expected


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
    comp = bp.comparisons(runs, reps=500)
    assert comp["B1(25)"].mean == pytest.approx(-10.0) and comp["B1(25)"].lo == pytest.approx(-10.0)
    assert comp["B1(1200)"].mean == pytest.approx(12.0) and comp["B1(1200)"].n == 5
    assert comp["P1(1200) - P1(25)"].mean == pytest.approx(22.0)
    assert comp["P1(250) - P1(25)"].mean == pytest.approx(10.0) and comp["P1(250) - P1(25)"].hi == pytest.approx(10.0)
    assert bp.verdict(comp["B1(25)"]) == "contradicts" and bp.verdict(comp["B1(1200)"]) == "supports"
    text = bp.report(root, "cpu", reps=500)
    assert "30 of 30 runs complete" in text and "Incomplete" not in text
    assert "| 12 | 1200 | 30.00 / 74.0 | 30.00 / 62.0 | +12.0 | yes |" in text


def test_an_incomplete_batch_is_labelled_a_status(tmp_path):
    root = tmp_path / "results"
    for method in ("odt", "odt-control"):
        fake_run(root, method, "hopper-medium", 10, experiment="buffer_size", preset="cpu", variant="buffer=25")
    assert "a status, not a result" in bp.report(root, "cpu", reps=200)


def test_cli_rejects_seed_cuts_and_few_resamples(capsys):
    for argv, message in ((["--seeds", "0"], "unrecognized arguments: --seeds"), (["--reps", "10"], "10 is out of range")):
        with pytest.raises(SystemExit) as bad:
            bp.main(argv)
        assert bad.value.code == 2 and message in capsys.readouterr().err
