"""benchmarks.perf.phases: a py-spy raw profile of a run, split by trainer phase."""

import gzip

import pytest

from benchmarks.perf import phases

ROOT = "<module> (run.py:1);run_one (job.py:10);ODTTrainer.finetune (odt/train.py:330)"
PROFILE = "\n".join([
    f"{ROOT};ODTTrainer.update (odt/train.py:191);ODTTrainer.step (odt/train.py:183);Linear.forward (x.py:1) 50",
    f"{ROOT};ODTTrainer.update (odt/train.py:191);Tensor.backward (t.py:5);_engine_run_backward (g.py:9) 30",
    f"{ROOT};ODTTrainer.update (odt/train.py:191);Lamb.step (odt/lamb.py:40) 5",
    # a rollout's forward pass is exploration, not the update, though it runs Linear.forward too
    f"{ROOT};ODTTrainer.explore (odt/train.py:284);run_episodes (odt/rollout.py:60);Linear.forward (x.py:1) 10",
    f"{ROOT};ODTTrainer._eval_row (odt/train.py:223);ODTTrainer.evaluate (odt/train.py:204) 4",
    f"{ROOT};ODTTrainer.batch_tensors (odt/train.py:162) 1",
    "Thread._bootstrap_inner (threading.py:1);TMonitor.run (tqdm.py:1);Event.wait (threading.py:2) 400",
    "",
])


def test_samples_fall_in_their_phase_and_waiting_threads_are_left_out():
    counts = phases.phase_samples(PROFILE.splitlines())
    assert dict(counts) == {"update: forward and loss": 50, "update: backward": 30, "update: optimizer": 5,
                            "exploration": 10, "evaluation": 4, "batch sampling": 1}
    share = phases.shares(counts)
    assert list(share)[0] == "update: forward and loss"
    assert share["exploration"] == pytest.approx(0.1)
    assert sum(share.values()) == pytest.approx(1.0)


def test_a_line_that_is_not_raw_format_is_named():
    with pytest.raises(ValueError, match="line 2"):
        phases.phase_samples(["a;b 3", "a;b three"])


def test_cli_reads_plain_or_gzipped_profiles_and_writes_json(tmp_path, capsys):
    (tmp_path / "run.txt").write_text(PROFILE)
    (tmp_path / "run.txt.gz").write_bytes(gzip.compress(PROFILE.encode()))
    for name in ("run.txt", "run.txt.gz"):
        assert phases.main([str(tmp_path / name), "--out", str(tmp_path / "p.json")]) == 0
        assert "exploration" in capsys.readouterr().out
        assert '"samples": 100' in (tmp_path / "p.json").read_text()
