"""The exploratory per-evaluation reading of the official comparison (benchmarks/official/curves.py)
on run directories written here, its numbers computed independently from the curves."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.official import curves as K


def run(root, experiment, method, seed, pretrain, online, spread=5.0, dataset="walker2d-medium"):
    """A complete cpu run of ``dataset``: pretraining evaluations {updates: score}, then online
    evaluation scores in order."""
    spec = RunSpec(experiment, method, dataset, seed, "cpu")
    d = rec.run_dir(root, spec)
    rec.write_json(d / rec.SPEC, spec.to_dict())
    curve = [{"phase": "pretrain", "updates": u, "online_samples": 0, "score_mean": s, "score_std": spread}
             for u, s in pretrain.items()]
    curve += [{"phase": "online", "updates": 6000 + 300 * i, "online_samples": 1000 * (i + 1), "score_mean": s,
               "score_std": spread} for i, s in enumerate(online)]
    rec.write_curve(d / rec.CURVE, curve)
    rec.write_json(d / rec.RECORD, {"status": "complete", "run_id": spec.run_id, "final_score": online[-1],
                                    "offline_score": list(pretrain.values())[-1], "counters": {"wall_time": 1.0}})


@pytest.fixture
def root(tmp_path):
    rng = np.random.default_rng(0)
    for s in range(3):
        a, b = rng.uniform(10, 40, 5), rng.uniform(10, 40, 5)
        run(tmp_path, "table1", "odt", s, dict(zip((1000, 2000, 3000, 4000, 5000), a)), [a[0] + 1, a[1] + 2])
        # the official code evaluates every 500 updates on hopper; here some extra points only it has
        run(tmp_path, "official", "official-odt", s, dict(zip((1000, 1500, 3000, 4000, 5000), b)), [b[0], b[2], b[4]],
            spread=7.0)
    return tmp_path


def welch_p(a, b):
    return stats.ttest_ind(a, b, equal_var=False).pvalue


def test_readings_are_welch_differences_of_the_curves(root):
    ours, official = K.curves(root, "cpu", "walker2d-medium", "odt", None), K.curves(root, "cpu", "walker2d-medium",
                                                                                        "official-odt", None)
    lines = K.report(root, "cpu", "walker2d-medium", 3000, None)
    shared = [line for line in lines if line.startswith("| pretraining, at")]
    assert [line.split("|")[1].strip() for line in shared] == [f"pretraining, at {u} updates" for u in (1000, 3000, 4000, 5000)]
    mean_row = next(line for line in lines if "mean of the evaluations at 3000, 4000, 5000" in line)
    pre = lambda c: c[(c.phase == "pretrain") & c.updates.isin([3000, 4000, 5000])].score_mean.mean()  # noqa: E731
    a = np.array([pre(c) for c in ours.values()])
    b = np.array([pre(c) for c in official.values()])
    assert f"{a.mean() - b.mean():+.1f} [" in mean_row and mean_row.endswith(f"| {welch_p(a, b):.3f} |")
    last = next(line for line in lines if line.startswith("| online, last"))
    a = np.array([c[c.phase == "online"].score_mean.iloc[-1] for c in ours.values()])
    b = np.array([c[c.phase == "online"].score_mean.iloc[-1] for c in official.values()])
    assert last.endswith(f"| {welch_p(a, b):.3f} |")


def test_movement_between_consecutive_evaluations(root):
    ours = K.curves(root, "cpu", "walker2d-medium", "odt", None)
    change, spread = K.movement(ours, [3000, 4000, 5000])
    expected = np.mean([abs(d) for c in ours.values()
                        for d in np.diff(c[c.updates.isin([3000, 4000, 5000]) & (c.phase == "pretrain")].score_mean)])
    assert change == pytest.approx(expected) and spread == pytest.approx(5.0)


def test_too_few_runs_are_not_read(tmp_path):
    run(tmp_path, "table1", "odt", 0, {1000: 5.0}, [6.0])
    assert "fewer than 2 complete runs" in K.report(tmp_path, "cpu", "walker2d-medium", 3000, None)[0]


def test_replay_row_reads_only_the_experiment_on_the_shared_file(tmp_path):
    """hopper-medium-replay: Table 1's runs (another data file) are never read beside
    official_replay's, where both arms ran on one file."""
    replay = "hopper-medium-replay"
    for s in range(3):
        run(tmp_path, "table1", "odt", s, {1000: 90.0}, [95.0], dataset=replay)
    assert K.curves(tmp_path, "cpu", replay, "odt", None) == {}
    for s in range(2):
        run(tmp_path, "official_replay", "odt", s, {1000: 10.0 + s}, [20.0], dataset=replay)
        run(tmp_path, "official_replay", "official-odt", s, {1000: 30.0 + s}, [40.0], dataset=replay)
    ours = K.curves(tmp_path, "cpu", replay, "odt", None)
    assert sorted(ours) == [0, 1]
    assert [c[c.phase == "pretrain"].score_mean.iloc[0] for c in ours.values()] == [10.0, 11.0]
    first = next(line for line in K.report(tmp_path, "cpu", replay, 0, None) if line.startswith("| pretraining, at"))
    assert first.split("|")[4].strip().startswith("-20.0 [")
