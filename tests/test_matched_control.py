"""The update-matched control (``odt-control-matched``, benchmarks/matched_updates.py): its online
phase makes exactly as many updates as its ``odt`` twin of the same spec, where the plain control,
which spends the sample budget, makes another number; it refuses to run without a complete twin,
and a run stopped mid-way resumes to the same record. Smoke preset, everything under tmp_path.

The overrides raise the finetuning rate so that ODT's own rollouts change its episodes within the
smoke budget: with seed 0, ODT takes 11 rounds and the plain control 16."""

from __future__ import annotations

import shutil

import pytest
import torch

from benchmarks import check
from benchmarks import job as job_mod
from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.methods import build_agent, method_config
from odt.train import ODTTrainer
from rlbase.config import ConfigError
from rlbase.training import StopRequested

OVERRIDES = (("online.lr", 0.01),)
SEED = 0


def _spec(method: str) -> RunSpec:
    return RunSpec("matched", method, "hopper-medium", SEED, "smoke", OVERRIDES)


def _online_updates(root, spec: RunSpec) -> int:
    directory = rec.run_dir(root, spec)
    return rec.read_record(directory)["counters"]["updates"] - rec.read_json(directory / rec.CONFIG)["pretrain_updates"]


def _counters(root, spec: RunSpec) -> dict:
    counters = dict(rec.read_record(rec.run_dir(root, spec))["counters"])
    del counters["wall_time"], counters["cpu_time"]
    return counters


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    """ODT, the plain control and the matched control of one seed, run to the end in one root."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("arms")
    for method in ("odt", "odt-control", "odt-control-matched"):
        job_mod.run_one(_spec(method), root, threads=1)
    return root


def test_the_matched_control_makes_its_twins_online_updates_where_the_plain_control_does_not(arms):
    odt, plain, ours = (_spec(m) for m in ("odt", "odt-control", "odt-control-matched"))
    assert _online_updates(arms, plain) != _online_updates(arms, odt)  # the mismatch the method exists for
    assert _online_updates(arms, ours) == _online_updates(arms, odt) > 0
    assert _counters(arms, ours)["rounds"] == _counters(arms, odt)["rounds"]

    directory = rec.run_dir(arms, ours)
    config, record = rec.read_json(directory / rec.CONFIG), rec.read_record(directory)
    assert config["online"]["online_updates"] == _online_updates(arms, odt)  # recorded in its config
    assert config["online"]["add_rollouts"] is False
    assert record["matched_to"] == odt.run_id
    assert record["pretraining_from"] == odt.run_id  # the three arms share one pretraining


def test_the_checks_accept_the_matched_runs_and_catch_a_count_that_differs(arms):
    runs = check.load_run_files(arms, "smoke", "matched")
    assert len(runs) == 3 and all(not check.record_problems(r) for r in runs)
    findings = check._control({}, runs)
    assert findings and all(f.ok for f in findings)
    ours = next(r for r in runs if r.method == "odt-control-matched")
    ours.config["online"]["online_updates"] += 5  # as if it had been matched to another count
    assert any("online.online_updates" in p for p in check.record_problems(ours))
    ours.record["counters"]["updates"] += 5
    assert any("its twin" in f.text and not f.ok for f in check._control({}, runs))


def test_a_stopped_matched_control_resumes_to_the_same_record(arms, tmp_path, monkeypatch):
    odt, ours = _spec("odt"), _spec("odt-control-matched")
    shutil.copytree(rec.run_dir(arms, odt), rec.run_dir(tmp_path, odt))  # its twin, complete
    evaluate = ODTTrainer._eval_row

    def stop_at_the_first_online_row(self, phase, log, ends_phase=True, **extra):
        if phase == "online":
            self.request_stop()  # checkpoints at the end of this round, then raises
        return evaluate(self, phase, log, ends_phase, **extra)

    with monkeypatch.context() as m:
        m.setattr(ODTTrainer, "_eval_row", stop_at_the_first_online_row)
        with pytest.raises(StopRequested):
            job_mod.run_one(ours, tmp_path, threads=1)
    assert rec.read_record(rec.run_dir(tmp_path, ours)) is None  # partial
    job_mod.run_one(ours, tmp_path, threads=1)
    record = rec.read_record(rec.run_dir(tmp_path, ours))
    assert record["attempts"] == 2 and any("resumed from" in n for n in record["notes"])
    assert _counters(tmp_path, ours) == _counters(arms, ours)
    assert rec.read_curve(rec.run_dir(tmp_path, ours) / rec.CURVE) == rec.read_curve(rec.run_dir(arms, ours) / rec.CURVE)


def test_without_a_complete_twin_the_matched_control_stops_before_computing(tmp_path):
    ours, odt = _spec("odt-control-matched"), _spec("odt")
    with pytest.raises(matched.TwinNotReady, match=f"twin {odt.run_id} complete, and it has no record"):
        job_mod.run_one(ours, tmp_path, threads=1)
    failed = rec.read_record(rec.run_dir(tmp_path, ours))
    assert failed["status"] == "failed" and odt.run_id in failed["error"]
    assert not list((rec.run_dir(tmp_path, ours) / rec.CHECKPOINTS).glob("*.pt"))

    twin = rec.run_dir(tmp_path, odt)
    twin.mkdir(parents=True)
    rec.write_json(twin / rec.RECORD, {"status": "failed", "run_id": odt.run_id})
    with pytest.raises(matched.TwinNotReady, match="is 'failed', not complete"):
        job_mod.run_one(ours, tmp_path, threads=1)

    overridden = RunSpec("matched", ours.method, ours.dataset, SEED, "smoke", OVERRIDES + (("online.online_updates", 50),))
    with pytest.raises(ConfigError, match=r"online.online_updates of an update-matched run \(odt-control-matched\)"):
        matched.with_twin_updates(method_config(ours.method, ours.dataset, "smoke", SEED), overridden, twin)


def test_the_matched_agent_refuses_a_config_without_an_update_budget(hopper_random):
    from conftest import make_hopper
    cfg = method_config("odt-control-matched", "hopper-medium", "smoke", SEED)
    assert cfg.online.online_updates == 0 and cfg.online.add_rollouts is False
    with pytest.raises(ConfigError, match="online.online_updates=0: odt-control-matched stops on its odt twin"):
        build_agent("odt-control-matched", cfg, hopper_random, make_hopper)
