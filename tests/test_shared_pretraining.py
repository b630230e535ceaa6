"""Shared pretraining (benchmarks/shared_pretraining.py): every field declared online-only leaves
the end-of-pretraining state unchanged, the key separates what pretraining depends on, and a
run started from another run's pretraining ends exactly where it would have alone. Smoke preset,
everything under tmp_path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks import shared_pretraining as shared
from benchmarks.experiments import RunSpec
from benchmarks.methods import build_agent, method_config
from odt.config import to_dict

# a valid value other than the smoke default, for every field declared online-only
ALTERNATIVES = {
    "odt": {"online.add_rollouts": False, "online.hindsight_relabel": False,
            "online.g_online": 3600.0, "online.exploration_rtg": "curriculum", "online.curriculum_q": 90.0},
    "iql": {"online_window": 100},
}


def _spec(method: str, seed: int = 0, overrides=()) -> RunSpec:
    return RunSpec("t", method, "hopper-medium", seed, "smoke", tuple(overrides))


def _pretrained_state(spec: RunSpec) -> dict:
    data = job_mod.load_data(spec)
    cfg = method_config(spec.method, spec.dataset, spec.preset, spec.seed, spec.overrides_dict)
    agent = build_agent(spec.method, cfg, data.trajectories, data.spec.make_env, data.score_fn, progress=False)
    try:
        agent.pretrain()
        state = agent.state_dict()
        del state["counters"]["wall_time"]  # a clock reading, the only part that may differ
        return state
    finally:
        agent.close()


def _same(a, b, where: str = "state") -> None:
    assert type(a) is type(b), where
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b), where
    else:
        assert a == b, where


def test_every_family_declares_exactly_the_fields_tested_here():
    assert {f: set(v) for f, v in shared.AFTER_SWITCH.items()} == {f: set(v) for f, v in ALTERNATIVES.items()}
    assert set(shared.FAMILY.values()) == set(shared.AFTER_SWITCH)


@pytest.mark.parametrize("family,field", [(f, k) for f, fields in ALTERNATIVES.items() for k in sorted(fields)])
def test_an_online_only_field_leaves_the_end_of_pretraining_state_unchanged(family, field):
    method = "odt" if family == "odt" else family
    base = method_config(method, "hopper-medium", "smoke", 0, {})
    assert shared.flatten(to_dict(base))[field] != ALTERNATIVES[family][field]  # a real change
    torch.manual_seed(0)
    a = _pretrained_state(_spec(method))
    torch.manual_seed(0)
    b = _pretrained_state(_spec(method, overrides=[(field, ALTERNATIVES[family][field])]))
    _same(a, b)


@pytest.mark.parametrize("field,value", [("online.buffer_size", 5), ("online.sampling", "return")])
def test_a_pretraining_field_does_change_the_state(field, value):
    """The comparison above can fail: the buffer built at the switch depends on its size, and
    pretraining batches are drawn by the online sampling rule (so neither may be declared online-only)."""
    a = _pretrained_state(_spec("odt"))
    b = _pretrained_state(_spec("odt", overrides=[(field, value)]))
    with pytest.raises(AssertionError):
        _same(a, b)


def test_the_key_separates_what_pretraining_depends_on():
    def key(method="odt", seed=0, data="d1", **changes):
        cfg = to_dict(method_config(method if method != "odt-control" else "odt", "hopper-medium", "smoke", seed,
                                    changes))
        return shared.key(method, cfg, seed, {"sha256": data})

    base = key()
    assert base is not None and base == key() and base.startswith("odt-s0-")
    assert key("odt-control", **{"online.add_rollouts": False}) == base  # the control shares odt's
    assert key(**{"online.hindsight_relabel": False, "online.g_online": 3600.0}) == base
    assert key(seed=1) != base and key(data="d2") != base
    assert key(**{"online.buffer_size": 5}) != base and key(**{"optim.lr": 0.5}) != base
    assert key(**{"online.lr": 0.5}) != base  # the rate switch happens at the end of pretraining
    cfg = to_dict(method_config("dt", "hopper-medium", "smoke", 0, {}))
    assert shared.key("dt", cfg, 0, {"sha256": "d1"}) is None  # no online phase: never shared


def test_a_run_from_shared_pretraining_ends_as_it_would_alone(tmp_path):
    control, odt = _spec("odt-control"), _spec("odt")
    alone = job_mod.run_one(odt, tmp_path / "alone", threads=1, reuse_pretraining=False)
    assert not (tmp_path / "alone" / shared.DIRNAME).exists()

    job_mod.run_one(control, tmp_path / "pair", threads=1)
    assert len(list((tmp_path / "pair" / shared.DIRNAME).iterdir())) == 1
    reused = job_mod.run_one(odt, tmp_path / "pair", threads=1)
    record = rec.read_record(rec.run_dir(tmp_path / "pair", odt))
    assert record["pretraining_from"] == control.run_id
    assert any("pretraining reused from run" in n for n in record["notes"])
    alone_dir = rec.run_dir(tmp_path / "alone", odt)
    assert rec.read_record(alone_dir)["pretraining_from"] is None
    assert reused["final_score"] == alone["final_score"]
    assert rec.read_curve(rec.run_dir(tmp_path / "pair", odt) / rec.CURVE) == rec.read_curve(alone_dir / rec.CURVE)


def test_iql_share_and_published_buffers_share_the_offline_phase(tmp_path):
    share, published = _spec("iql"), _spec("iql", overrides=[("online_window", 100)])
    alone = job_mod.run_one(published, tmp_path / "alone", threads=1, reuse_pretraining=False)
    job_mod.run_one(share, tmp_path / "pair", threads=1)
    reused = job_mod.run_one(published, tmp_path / "pair", threads=1)
    d = rec.run_dir(tmp_path / "pair", published)
    assert rec.read_record(d)["pretraining_from"] == share.run_id
    assert reused["final_score"] == alone["final_score"]
    assert rec.read_curve(d / rec.CURVE) == rec.read_curve(rec.run_dir(tmp_path / "alone", published) / rec.CURVE)


def test_a_corrupt_shared_state_is_ignored_and_the_run_computes_its_own(tmp_path):
    control, odt = _spec("odt-control"), _spec("odt")
    job_mod.run_one(control, tmp_path, threads=1)
    (stored,) = (tmp_path / shared.DIRNAME).glob("*/ckpt-*.pt")
    stored.write_bytes(b"not a checkpoint")
    job_mod.run_one(odt, tmp_path, threads=1)
    assert rec.read_record(rec.run_dir(tmp_path, odt))["pretraining_from"] is None


def test_fresh_pretraining_from_the_command_line_reaches_the_jobs(tmp_path):
    from benchmarks import run as run_cli
    from benchmarks.launch import launch
    parse = run_cli.build_parser().parse_args
    assert run_cli._options(parse(["table1"])).reuse_pretraining is True
    fresh = run_cli._options(parse(["table1", "--fresh-pretraining", "--executor", "debug"]))
    assert fresh.reuse_pretraining is False
    report = launch([_spec("odt-control"), _spec("odt")], tmp_path, fresh, progress=False)
    assert report.done == 2 and not (tmp_path / shared.DIRNAME).exists()
    assert all(rec.read_record(rec.run_dir(tmp_path, s))["pretraining_from"] is None
               for s in (_spec("odt-control"), _spec("odt")))
