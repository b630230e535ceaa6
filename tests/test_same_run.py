"""Whole-run reuse (benchmarks/sharing/runs.py): a run whose spec differs from a complete run's only by
overrides that leave the computation unchanged copies that run's curve and record under its own
name; anything that changes the computation runs. Smoke preset, everything under tmp_path."""

from __future__ import annotations

from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.methods import method_config
from benchmarks.sharing import runs as same_run
from rlbase.config import to_dict


def _spec(experiment: str, overrides=(), variant: str = "default", seed: int = 0) -> RunSpec:
    return RunSpec(experiment, "odt", "hopper-medium", seed, "smoke", tuple(overrides), variant=variant)


def test_the_same_computation_in_another_experiment_is_copied_not_recomputed(tmp_path):
    default_relabel = to_dict(method_config("odt", "hopper-medium", "smoke", 0, {}))["online"]["hindsight_relabel"]
    first = _spec("hindsight", [("online.hindsight_relabel", default_relabel)], "relabel=True")
    second = _spec("buffer_init", [("online.buffer_init", "top")], "init=top")  # top is the default too
    assert first.run_id != second.run_id
    job_mod.run_one(first, tmp_path, threads=1)
    summary = job_mod.run_one(second, tmp_path, threads=1)

    a, b = rec.run_dir(tmp_path, first), rec.run_dir(tmp_path, second)
    record = rec.read_record(b)
    assert record["reused_from"] == f"hindsight/{first.run_id}"
    assert record["run_id"] == second.run_id and record["spec"]["experiment"] == "buffer_init"
    assert any("same computation as run" in n for n in record["notes"])
    assert rec.read_curve(b / rec.CURVE) == rec.read_curve(a / rec.CURVE)
    assert summary["final_score"] == rec.read_record(a)["final_score"]
    assert not (b / rec.CHECKPOINTS).exists()  # nothing was computed


def test_a_copied_run_ends_exactly_as_it_would_alone(tmp_path):
    first = _spec("hindsight", [("online.hindsight_relabel", True)], "relabel=True")
    second = _spec("table_rtg", [], "default")
    job_mod.run_one(first, tmp_path / "pair", threads=1)
    job_mod.run_one(second, tmp_path / "pair", threads=1)
    alone = job_mod.run_one(second, tmp_path / "alone", threads=1, reuse_pretraining=False)
    assert rec.read_record(rec.run_dir(tmp_path / "alone", second)).get("reused_from") is None
    assert rec.read_curve(rec.run_dir(tmp_path / "pair", second) / rec.CURVE) == \
        rec.read_curve(rec.run_dir(tmp_path / "alone", second) / rec.CURVE)
    assert rec.read_record(rec.run_dir(tmp_path / "pair", second))["final_score"] == alone["final_score"]


def test_a_change_of_computation_or_fresh_pretraining_runs_it(tmp_path):
    job_mod.run_one(_spec("hindsight", [("online.hindsight_relabel", True)], "relabel=True"), tmp_path, threads=1)
    off = _spec("hindsight", [("online.hindsight_relabel", False)], "relabel=False")
    job_mod.run_one(off, tmp_path, threads=1)
    assert rec.read_record(rec.run_dir(tmp_path, off)).get("reused_from") is None  # another config
    other_seed = _spec("table_rtg", [], seed=1)
    job_mod.run_one(other_seed, tmp_path, threads=1)
    assert rec.read_record(rec.run_dir(tmp_path, other_seed)).get("reused_from") is None
    fresh = _spec("buffer_init", [("online.buffer_init", "top")], "init=top")
    job_mod.run_one(fresh, tmp_path, threads=1, reuse_pretraining=False)
    assert rec.read_record(rec.run_dir(tmp_path, fresh)).get("reused_from") is None


def test_the_key_covers_method_config_seed_sweep_and_data():
    cfg = to_dict(method_config("odt", "hopper-medium", "smoke", 0, {}))
    base = same_run.key("odt", cfg, 0, {"content_sha256": "d1"})
    assert base is not None and base == same_run.key("odt", cfg, 0, {"content_sha256": "d1"})
    changed = {**cfg, "online": {**cfg["online"], "g_online": 1.0}}
    assert same_run.key("odt", changed, 0, {"content_sha256": "d1"}) != base
    assert same_run.key("odt-control", cfg, 0, {"content_sha256": "d1"}) != base
    assert same_run.key("odt", cfg, 1, {"content_sha256": "d1"}) != base
    assert same_run.key("odt", cfg, 0, {"content_sha256": "d2"}) != base
    assert same_run.key("odt", cfg, 0, {"content_sha256": "d1"}, (1.0, 2.0)) != base
