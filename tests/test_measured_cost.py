"""The launch estimate prices a run by complete runs of the same computation where they exist.

Records are written by hand here (no run is made): a complete run's record, config, spec and
environment, as ``job.run_one`` leaves them."""
from __future__ import annotations

import pytest

from benchmarks import measured_cost
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import config_dict, spec_config
from benchmarks.launch import CPU_CORE_FLOPS, estimate


def _spec(seed=0, method="odt-offline", overrides=()):
    return RunSpec("table1", method, "hopper-medium", seed, "cpu", tuple(overrides))


def _write_run(root, spec, seconds, *, attempts=1, threads=1, cuda=False, wall_time=None,
               pretraining_from=None, config=None, cpu="Test CPU"):
    d = rec.run_dir(root, spec)
    d.mkdir(parents=True)
    rec.write_json(d / rec.SPEC, spec.to_dict())
    rec.write_json(d / rec.CONFIG, config if config is not None else config_dict(spec_config(spec)))
    env = {"cuda": cuda, "torch_threads": threads, "cpu_model": cpu}
    rec.write_json(d / rec.ENVIRONMENT, {"attempts": [env] * attempts})
    rec.write_json(d / rec.RECORD, {"status": "complete", "run_id": spec.run_id, "spec": spec.to_dict(),
                                    "attempt_seconds": seconds, "attempts": attempts,
                                    "counters": {"wall_time": wall_time},
                                    "pretraining_from": pretraining_from})
    return d


def _model_hours(spec):
    return estimate([spec]).cpu_hours


def test_a_run_is_priced_by_the_median_of_complete_runs_of_the_same_config(tmp_path):
    for seed, seconds in [(0, 100.0), (1, 500.0), (2, 200.0)]:
        _write_run(tmp_path, _spec(seed), seconds)
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    est = estimate([_spec(7), _spec(8)], timed=timed)
    assert est.timed_runs == 2
    assert est.cpu_hours == pytest.approx(2 * 200.0 / 3600)  # the median (not the mean, 267), per run
    assert "measured" in est.describe() and "Test CPU" in est.describe()
    # the same runs took 100-500 s: the plan's total at the fastest and slowest of them, said beside the median
    assert est.cpu_hours_range == pytest.approx((2 * 100.0 / 3600, 2 * 500.0 / 3600))
    assert "0.0556-0.278 core-hours at the fastest and slowest of them" in est.describe()


def test_a_different_config_or_method_is_not_the_same_computation(tmp_path):
    _write_run(tmp_path, _spec(0), 100.0)
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    other = _spec(1, overrides=(("pretrain_updates", 5000),))
    assert estimate([other], timed=timed).timed_runs == 0
    odt = _spec(1, method="odt")
    assert estimate([odt], timed=timed).timed_runs == 0
    assert estimate([odt], timed=timed).cpu_hours == pytest.approx(_model_hours(odt))  # no odt run: the model
    # a run whose stored config differs in one field (code changed since) is not the same computation
    drifted = config_dict(spec_config(_spec(3)))
    drifted["optim"]["batch_size"] = 2 * drifted["optim"]["batch_size"]
    _write_run(tmp_path / "b", _spec(3), 100.0, config=drifted)
    assert estimate([_spec(4)], timed=measured_cost.timed_runs(tmp_path / "b", "cpu")).timed_runs == 0


def test_mixed_plan_adds_measured_and_modelled_parts(tmp_path):
    _write_run(tmp_path, _spec(0), 500.0)
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    modelled = _spec(1, method="dt")  # no complete dt run: the model alone prices it
    est = estimate([_spec(1), modelled], timed=timed)
    assert est.cpu_hours == pytest.approx(500.0 / 3600 + _model_hours(modelled))
    assert est.flops / CPU_CORE_FLOPS > 0  # the totals of updates and FLOPs still count every run


def test_a_modelled_run_is_scaled_by_how_far_off_the_model_is_for_its_method_and_domain(tmp_path):
    """Two complete odt-offline hopper runs took 3x and 1x what the model says for them (median
    2x): another config of the same method and domain is priced at 2x its model. Another domain
    keeps the model, and so does everything when the only complete run's stored config is not what
    the current code builds for its spec (the model would price another computation)."""
    model_s = _model_hours(_spec(0)) * 3600
    _write_run(tmp_path, _spec(0), 3 * model_s)
    _write_run(tmp_path, _spec(1), 1 * model_s)
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    other = _spec(2, overrides=(("pretrain_updates", 5000),))
    est = estimate([other], timed=timed)
    assert (est.timed_runs, est.calibrated_runs) == (0, 1)
    assert est.cpu_hours == pytest.approx(2 * _model_hours(other))
    assert "1 modelled run scaled (x2)" in est.describe()
    walker = RunSpec("table1", "odt-offline", "walker2d-medium", 0, "cpu")
    assert estimate([walker], timed=timed).cpu_hours == pytest.approx(_model_hours(walker))
    drifted = config_dict(spec_config(_spec(3)))
    drifted["optim"]["batch_size"] = 2 * drifted["optim"]["batch_size"]
    _write_run(tmp_path / "b", _spec(3), 10 * model_s, config=drifted)
    assert estimate([other], timed=measured_cost.timed_runs(tmp_path / "b", "cpu")).calibrated_runs == 0


@pytest.mark.parametrize("kwargs, expected", [
    ({"attempts": 1, "threads": 2}, 2 * 40.0),  # one attempt: its seconds, times its threads
    ({"attempts": 3, "wall_time": 90.0}, 90.0),  # resumed: the compute time its counters kept
    ({"attempts": 3, "wall_time": 90.0, "pretraining_from": "x"}, None),  # that time holds another run's
    # ... less that run's time at the switch, where the record kept it
    ({"attempts": 3, "wall_time": 90.0, "pretraining_from": "x", "inherited": 25.0}, 65.0),
    ({"attempts": 3, "wall_time": 90.0, "pretraining_from": "x", "inherited": 95.0}, None),  # not a time
    ({"attempts": 1, "cuda": True}, None),  # GPU seconds do not price CPU time
])
def test_cost_of_one_record(kwargs, expected):
    attempts = [{"cuda": kwargs.get("cuda", False), "torch_threads": kwargs.get("threads", 1)}] * kwargs["attempts"]
    record = {"status": "complete", "attempt_seconds": 40.0, "counters": {"wall_time": kwargs.get("wall_time")},
              "pretraining_from": kwargs.get("pretraining_from"),
              "inherited_counters": {"wall_time": kwargs["inherited"]} if "inherited" in kwargs else None}
    assert rec.core_seconds(record, attempts) == expected
    assert rec.core_seconds({**record, "status": "partial"}, attempts) is None


def test_runs_that_start_from_shared_pretraining_are_priced_only_by_their_like(tmp_path):
    """A control that began from its ODT run's saved pretraining took only its online part: it
    prices followers, never a run that pretrains itself."""
    _write_run(tmp_path, _spec(0, method="odt-control"), 60.0, pretraining_from="odt__x")
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    control = _spec(1, method="odt-control")
    assert measured_cost.matching(timed, control, spec_config(control), True)
    assert not measured_cost.matching(timed, control, spec_config(control), False)


def test_an_update_matched_run_is_priced_by_its_like_whatever_count_its_twin_gave_it(tmp_path):
    """An update-matched control's config.json holds its twin's online updates, set when it
    started; the config built for a control not yet started holds the default. Complete controls
    price it all the same; a change in any other field still makes another computation."""
    control = _spec(0, method="odt-control-matched")
    ran = config_dict(spec_config(control))
    ran["online"]["online_updates"] = 1234
    _write_run(tmp_path, control, 60.0, pretraining_from="odt__x", config=ran)
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    waiting = _spec(1, method="odt-control-matched")
    assert [t.core_seconds for t in measured_cost.matching(timed, waiting, spec_config(waiting), True)] == [60.0]
    other = _spec(1, method="odt-control-matched", overrides=(("pretrain_updates", 5000),))
    assert not measured_cost.matching(timed, other, spec_config(other), True)
    # for a run that sets its own online updates the count is part of the computation
    odt_ran = config_dict(spec_config(_spec(0, method="odt")))
    _write_run(tmp_path / "b", _spec(0, method="odt"), 60.0, config=odt_ran)
    odt_ran["online"]["online_updates"] = 1234
    _write_run(tmp_path / "b", _spec(2, method="odt"), 90.0, config=odt_ran)
    odt = _spec(1, method="odt")
    timed = measured_cost.timed_runs(tmp_path / "b", "cpu")
    assert [t.core_seconds for t in measured_cost.matching(timed, odt, spec_config(odt), False)] == [60.0]


def test_runs_timed_on_the_cpu_that_will_run_are_preferred(tmp_path):
    """The same run costs differently on another CPU model: where some runs were timed on the CPU
    the launch will use, only they price it; where none were, all of them do."""
    for seed, seconds, cpu in [(0, 100.0, "Fast CPU"), (1, 120.0, "Fast CPU"), (2, 900.0, "Slow CPU")]:
        _write_run(tmp_path, _spec(seed), seconds, cpu=cpu)
    timed = measured_cost.timed_runs(tmp_path, "cpu")
    slow = estimate([_spec(7)], timed=timed, cpu_model="Slow CPU")
    assert slow.cpu_hours == pytest.approx(900.0 / 3600) and slow.timed_on == {"Slow CPU"}
    assert estimate([_spec(7)], timed=timed, cpu_model="Fast CPU").cpu_hours == pytest.approx(110.0 / 3600)
    unseen = estimate([_spec(7)], timed=timed, cpu_model="Other CPU")
    assert unseen.cpu_hours == pytest.approx(120.0 / 3600)  # the median of all three
    assert estimate([_spec(7)], timed=timed).cpu_hours == pytest.approx(120.0 / 3600)
