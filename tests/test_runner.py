"""The experiment registry, the compute estimate, and the runner end to end at the smoke preset:
idempotence (a second call runs nothing), failures reported without stopping the others,
resume from a checkpoint to the same result, the CLI's dry run and a local-executor launch.
Everything is written under tmp_path, never into the repository's results/."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from baselines.iql import iql_config
from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks import run as run_cli
from benchmarks.experiments import EXPERIMENTS, SAC_DATASETS, TABLE1_DATASETS, RunSpec, expand
from benchmarks.launch import LaunchOptions, estimate, estimate_run, launch
from benchmarks.methods import method_config
from odt.config import make_config
from rlbase.config import ConfigError

ALL_METHODS = ["dt", "odt-offline", "odt", "odt-control", "iql", "sac", "official-odt", "corl-iql"]


# ----- registry ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_expands_to_unique_stable_ids(name):
    a = expand(name, "smoke", seeds=2, registered=ALL_METHODS)
    b = expand(name, "smoke", seeds=2, registered=ALL_METHODS)
    assert a and [s.run_id for s in a] == [s.run_id for s in b]
    assert len({s.run_id for s in a}) == len(a)
    first = EXPERIMENTS[name].first_seed  # tuning experiments start at 100, never on reported seeds
    assert {s.seed for s in a} == {first, first + 1} and {s.preset for s in a} == {"smoke"}
    tuning = EXPERIMENTS[name].description.startswith("Tuning")
    assert first >= 100 if tuning else first + EXPERIMENTS[name].seeds <= 100  # reported seeds are 0-99
    for s in a:  # every spec builds a valid config
        from benchmarks.methods import EXTERNAL_METHODS, METHODS, method_config
        if s.method in METHODS and s.method not in EXTERNAL_METHODS:  # those need code from outside (docs/)
            method_config(s.method, s.dataset, s.preset, s.seed, s.overrides_dict)


def test_table1_is_the_papers_grid():
    specs = expand("table1", "paper", registered=ALL_METHODS)
    assert {s.seed for s in specs} == set(range(10))
    cells = {(s.method, s.dataset) for s in specs}
    assert {d for m, d in cells if m == "sac"} == set(SAC_DATASETS)
    for m in ("dt", "odt-offline", "odt", "odt-control", "iql"):
        assert {d for mm, d in cells if mm == m} == set(TABLE1_DATASETS)
    assert len(specs) == 10 * (5 * 10 + 4)  # the paper's grid plus the control on every dataset


def test_unregistered_methods_are_reported_and_left_out():
    warnings = []
    specs = expand("stability", "smoke", seeds=1, registered=["odt"], warn=warnings.append)
    assert {s.method for s in specs} == {"odt"}
    assert "iql" in warnings[0] and "sac" in warnings[0]


def test_run_id_depends_on_what_the_run_computes():
    base = RunSpec("x", "odt", "hopper-medium", 0, "smoke")
    assert base.run_id == RunSpec("other-experiment", "odt", "hopper-medium", 0, "smoke").run_id
    assert base.run_id != RunSpec("x", "odt", "hopper-medium", 1, "smoke").run_id
    assert base.run_id != RunSpec("x", "odt", "hopper-medium", 0, "cpu").run_id
    assert base.run_id != RunSpec("x", "odt", "hopper-medium", 0, "smoke", (("online.g_online", 1.0),)).run_id
    assert RunSpec.from_dict(json.loads(json.dumps(base.to_dict()))) == base


def test_ablation_overrides_are_the_intended_ones():
    specs = expand("g_online", "paper", seeds=1, registered=ALL_METHODS)
    assert sorted(s.overrides_dict["online.g_online"] for s in specs) == [3600, 7200, 10800, 18000, 36000]
    stoch = expand("stoch_vs_det", "smoke", seeds=1, registered=ALL_METHODS)
    assert {(s.overrides_dict["model.stochastic"], s.overrides_dict["model.embed_dim"]) for s in stoch} == {
        (True, 32), (False, 32), (True, 64), (False, 64)}
    assert all(s.g_eval_sweep for s in expand("g_eval", "smoke", seeds=1, registered=ALL_METHODS))
    grid = expand("eval_context", "cpu", seeds=1, registered=ALL_METHODS)  # ant-medium-replay: paper lr 1e-4
    for s in grid:  # the paper's grid uses one rate for both phases, whatever the preset finetunes at
        cfg = method_config(s.method, s.dataset, s.preset, s.seed, s.overrides_dict)
        assert s.overrides_dict["online.lr"] == s.overrides_dict["optim.lr"] == cfg.online.lr == cfg.optim.lr


@pytest.mark.parametrize("kwargs, needle", [
    (dict(experiment="tabel1"), "table1"),
    (dict(experiment="table1", preset="laptop"), "smoke"),
    (dict(experiment="table1", datasets=["hopper-easy"]), "hopper-medium"),
    (dict(experiment="table1", methods=["ppo"]), "odt-offline"),
    (dict(experiment="table1", seeds=0), "seeds"),
])
def test_bad_names_raise_listing_the_valid_ones(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        expand(**{"preset": "smoke", **kwargs}, registered=ALL_METHODS)


# ----- estimate ------------------------------------------------------------------------------
def test_estimate_counts_updates_and_env_steps_of_the_paper_config():
    cfg = make_config("hopper-medium", "online", "paper")
    updates, env_steps, flops, exact = estimate_run("odt", cfg)
    assert exact and updates == pytest.approx(5000 + 400 * 300)  # 200k samples in 500-step episodes
    assert env_steps >= 200_000
    cpu = make_config("hopper-medium", "online", "cpu")
    small = estimate_run("odt", cpu)
    assert small[2] < flops / 50
    # cpu: 5000 samples in episodes of 500 are 10 rounds, evaluated every 5 (the 5th and the 10th,
    # which ends the phase), after 3 pretraining evaluations (1000, 2000, 2500): 5 of 10 episodes
    assert (cpu.online.online_samples, cpu.online.eval_every_rounds, cpu.eval_episodes) == (5000, 5, 10)
    assert small[1] == pytest.approx(5000 + 5 * 10 * 500)
    est = estimate(expand("table1", "paper", datasets=["hopper-medium"], methods=["odt"]))
    assert est.runs == 10 and "hours" in est.describe() and est.cpu_hours > 100 * est.gpu_hours


def test_antmaze_estimate_counts_its_evaluations_at_the_cap_and_at_antmaze_step_cost():
    """AntMaze episodes end only at the goal: an evaluation of 100 episodes is 100 x 700 steps
    (~70 s of one core in the sizing records of 2026-11-27); locomotion keeps episodes of half the cap."""
    from benchmarks.launch import ANTMAZE_STEP_S, ENV_STEP_S

    cfg = make_config("antmaze-umaze", "offline", "cpu")  # 2e4 updates, evaluated every 2500
    _, env_steps, _, _ = estimate_run("odt-offline", cfg, "antmaze-umaze")
    # 8 evaluations, as the committed DT antmaze-umaze curves have (2500, 5000, ..., 20000): the one
    # ending the offline phase runs 100 episodes, the other 7 run 20 (the amendment of 2026-11-29)
    assert env_steps == pytest.approx((1 * 100 + 7 * 20) * 700)
    (spec,) = expand("table1", "cpu", seeds=1, datasets=["antmaze-umaze"], methods=["odt-offline"])
    assert estimate([spec]).env_seconds == pytest.approx((100 + 7 * 20) * 700 * ANTMAZE_STEP_S)
    full = dataclasses.replace(cfg, eval_episodes_interim=0)
    assert estimate_run("odt-offline", full, "antmaze-umaze")[1] == pytest.approx(8 * 100 * 700)
    # IQL: 1.8e5 / 1e4 = 18 offline and 5000 / 1000 = 5 online evaluations (23, as the committed
    # IQL hopper-medium curves have), the two ending a phase at 100 episodes
    iql = iql_config("antmaze-umaze", "cpu")
    assert estimate_run("iql", iql, "antmaze-umaze")[1] == pytest.approx(5000 + (2 * 100 + 21 * 20) * 700)
    hopper = make_config("hopper-medium", "offline", "cpu")  # 2500 updates, evaluated every 1000
    # at 1000, 2000 and the end, 2500: 3 evaluations of 10 episodes of half the cap
    assert estimate_run("odt-offline", hopper, "hopper-medium")[1] == pytest.approx(3 * 10 * 500)
    (spec,) = expand("table1", "cpu", seeds=1, datasets=["hopper-medium"], methods=["odt-offline"])
    assert estimate([spec]).env_seconds == pytest.approx(3 * 10 * 500 * ENV_STEP_S)


def test_estimate_of_a_partial_run_counts_what_is_left():
    """ODT at the cpu preset: 2500 pretraining updates then rounds of 300 (5k samples in
    500-step episodes: 10 rounds): 5500 updates. At 2500 done, 3000 are left, 6/11 of the run."""
    from benchmarks.launch import remaining_fraction
    (spec,) = expand("table1", "cpu", seeds=1, datasets=["hopper-medium"], methods=["odt"])
    full = estimate([spec])
    assert full.updates == pytest.approx(5500)
    half = estimate([spec], done_updates={spec.run_id: 2500})
    assert half.updates == pytest.approx(3000) and half.cpu_hours == pytest.approx(full.cpu_hours * 6 / 11)
    assert estimate([spec], done_updates={"another run": 2500}).updates == pytest.approx(5500)
    # a run that starts from another's pretraining (own 3000 of a 5500-update run): 500 online done
    assert remaining_fraction(5500, 3000, 3000) == pytest.approx(2500 / 3000)
    assert remaining_fraction(5500, 3000, 1000) == 1.0  # its own part has not begun
    assert remaining_fraction(5500, 5500, 9000) == 0.0


# ----- running -------------------------------------------------------------------------------
def _spec(method="odt", seed=0, overrides=(), experiment="t"):
    return RunSpec(experiment, method, "hopper-medium", seed, "smoke", tuple(overrides))


def test_run_one_is_idempotent(tmp_path):
    spec = _spec()
    first = job_mod.run_one(spec, tmp_path, threads=1)
    d = rec.run_dir(tmp_path, spec)
    assert first["status"] == "complete" and rec.is_complete(d)
    stamp = (d / rec.RECORD).stat().st_mtime_ns
    again = job_mod.run_one(spec, tmp_path, threads=1)
    assert again == first and (d / rec.RECORD).stat().st_mtime_ns == stamp
    assert len(rec.read_json(d / rec.ENVIRONMENT)["attempts"]) == 1
    record = rec.read_record(d)
    assert record["offline"]["phase"] == "pretrain" and record["final"]["phase"] == "online"
    assert record["final"]["online_samples"] >= 300
    assert len(list((d / rec.CHECKPOINTS).glob("ckpt-*.pt"))) == 1  # only the final state is kept
    for name in (rec.SPEC, rec.CONFIG, rec.PROVENANCE, rec.CURVE):
        assert (d / name).exists(), name
    assert rec.read_json(d / rec.PROVENANCE)["source"] == "generated-smoke"
    assert rec.read_json(d / rec.CONFIG)["model"]["embed_dim"] == 32


def test_a_run_made_under_another_config_is_reported_not_reused(tmp_path):
    spec = _spec()
    job_mod.run_one(spec, tmp_path, threads=1)
    d = rec.run_dir(tmp_path, spec)
    stored = rec.read_json(d / rec.CONFIG)
    stored["model"]["embed_dim"] = 128  # as if the preset had been retuned since this run
    rec.write_json(d / rec.CONFIG, stored)
    before = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    with pytest.raises(job_mod.ConfigChanged, match="model.embed_dim: 128 on disk, 32 now"):
        job_mod.run_one(spec, tmp_path, threads=1)
    report = launch([spec], tmp_path, LaunchOptions(executor="debug"), progress=False)
    assert report.skipped == 0 and report.done == 0 and len(report.failed) == 1
    assert "Move" in report.failed[0].error and "model.embed_dim" in report.failed[0].error
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()} == before  # nothing touched
    # a field the code added since, absent on disk, at its default: the same run, skipped as complete
    stored["model"]["embed_dim"] = 32
    stored["online"].pop("online_updates")
    rec.write_json(d / rec.CONFIG, stored)
    assert job_mod.run_one(spec, tmp_path, threads=1)["status"] == "complete"
    rec.write_json(d / rec.CONFIG, {**stored, "retired": 1})  # a field the code no longer has
    with pytest.raises(job_mod.ConfigChanged, match="retired: 1 on disk, no such field now"):
        job_mod.run_one(spec, tmp_path, threads=1)


def test_a_failed_run_is_reported_and_the_others_finish(tmp_path):
    good = [_spec("odt"), _spec("odt-offline")]
    bad = _spec("odt", seed=1, overrides=[("online.buffer_init", "bottom")])
    report = launch([good[0], bad, good[1]], tmp_path, LaunchOptions(executor="debug"), progress=False)
    assert report.done == 2 and len(report.failed) == 1
    failure = report.failed[0]
    assert failure.run_id == bad.run_id and "online.buffer_init" in failure.error
    record = rec.read_record(rec.run_dir(tmp_path, bad))
    assert record["status"] == "failed" and "online.buffer_init" in record["error"]
    again = launch([good[0], bad, good[1]], tmp_path, LaunchOptions(executor="debug"), progress=False)
    assert again.skipped == 2 and again.done == 0 and len(again.failed) == 1  # failures are retried


def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_result(tmp_path, monkeypatch):
    spec = _spec()
    reference = job_mod.run_one(spec, tmp_path / "ref", threads=1)
    real = rec.write_curve
    calls = {"n": 0}

    def dies_on_the_fifth_row(path, rows):
        calls["n"] += 1
        if calls["n"] == 6:  # the first write is the empty curve
            raise RuntimeError("simulated crash")
        real(path, rows)

    monkeypatch.setattr(rec, "write_curve", dies_on_the_fifth_row)
    with pytest.raises(RuntimeError, match="simulated crash"):
        job_mod.run_one(spec, tmp_path / "run", threads=1)
    monkeypatch.setattr(rec, "write_curve", real)
    d = rec.run_dir(tmp_path / "run", spec)
    assert rec.status_of(d) == "failed" and any((d / rec.CHECKPOINTS).iterdir())
    resumed = job_mod.run_one(spec, tmp_path / "run", threads=1)
    assert resumed["status"] == "complete"
    record = rec.read_record(d)
    assert any("resumed from ckpt-" in n for n in record["notes"]) and record["attempts"] == 2
    ref_record = rec.read_record(rec.run_dir(tmp_path / "ref", spec))
    assert record["final"] == ref_record["final"] and resumed["final_score"] == reference["final_score"]
    assert rec.read_curve(d / rec.CURVE) == rec.read_curve(rec.run_dir(tmp_path / "ref", spec) / rec.CURVE)


def test_a_run_held_by_a_live_process_is_not_started_twice(tmp_path):
    spec = _spec()
    d = rec.run_dir(tmp_path, spec)
    assert not job_mod.held_elsewhere(d)
    with job_mod._run_lock(d):  # another launcher is running it
        assert job_mod.held_elsewhere(d)
        with pytest.raises(job_mod.RunInProgress, match="another live process"):
            job_mod.run_one(spec, tmp_path, threads=1)
        assert not (d / rec.SPEC).exists() and not (d / rec.RECORD).exists()
    assert job_mod.run_one(spec, tmp_path, threads=1)["status"] == "complete"  # released
    assert not job_mod.held_elsewhere(d)  # released with its holder


def test_a_run_that_meets_a_launchers_brief_probe_waits_it_out(tmp_path):
    """held_elsewhere takes and drops a run's lock in microseconds; a run starting in that instant
    must not call itself taken (it would be left undone), while a real holder still stops it."""
    import threading
    d = tmp_path / "run"
    probe_done = threading.Event()

    def probe(seconds):
        with job_mod._run_lock(d):
            probe_done.set()
            time.sleep(seconds)

    holder = threading.Thread(target=probe, args=(0.2,))
    holder.start()
    probe_done.wait()
    with pytest.raises(job_mod.RunInProgress):  # no patience: taken
        with job_mod._run_lock(d):
            pass
    with job_mod._run_lock(d, patience=job_mod.PROBE_PATIENCE_S):  # a run's own patience outlasts the probe
        pass
    holder.join()


def test_a_second_launch_leaves_held_runs_to_the_first_and_does_not_call_them_failed(tmp_path):
    held, free = _spec(seed=0), _spec(seed=1)
    with job_mod._run_lock(rec.run_dir(tmp_path, held)):  # the first launch is running seed 0
        report = launch([held, free], tmp_path, LaunchOptions(executor="debug", holder_grace_s=0.2), progress=False)
    assert report.ok and report.done == 1 and report.held == [held.run_id] and not report.failed
    assert rec.is_complete(rec.run_dir(tmp_path, free)) and not rec.is_complete(rec.run_dir(tmp_path, held))


def test_a_launch_runs_what_a_stopping_launch_lets_go_within_the_grace(tmp_path, capsys):
    """A launch that was just stopped holds its runs' locks until its jobs have exited (2026-12-03:
    a launch started in that window left the run to a dying process and finished without it).
    A holder that lets go within the grace leaves the run to this launch (one that holds on past the
    grace keeps it: the test above)."""
    import threading
    spec = _spec()
    locked, release = threading.Event(), threading.Event()

    def stopping_launch():
        with job_mod._run_lock(rec.run_dir(tmp_path, spec)):
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=stopping_launch)
    holder.start()
    locked.wait()
    threading.Timer(0.5, release.set).start()  # its job exits half a second later
    report = launch([spec], tmp_path, LaunchOptions(executor="debug", holder_grace_s=20.0), progress=True)
    holder.join()
    assert report.ok and report.done == 1 and report.held == []
    assert rec.is_complete(rec.run_dir(tmp_path, spec))
    assert "1 run(s) held by another process; waiting up to 20 s" in capsys.readouterr().out


def test_launch_options_reject_a_negative_or_infinite_holder_grace():
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ConfigError, match=f"holder_grace_s={bad!r} is out of range"):
            LaunchOptions(holder_grace_s=bad).validate()


def test_g_eval_sweep_rows_are_recorded_after_each_phase(tmp_path):
    spec = RunSpec("g", "odt", "hopper-medium", 0, "smoke", (), "default", (0.5, 2.0))
    job_mod.run_one(spec, tmp_path, threads=1)
    curve = rec.read_curve(rec.run_dir(tmp_path, spec) / rec.CURVE)
    for phase in ("sweep-pretrained", "sweep-finetuned"):
        rows = [r for r in curve if r["phase"] == phase]
        assert [r["g_eval_multiple"] for r in rows] == [0.5, 2.0]
        assert [r["g_eval"] for r in rows] == [1800.0, 7200.0]


# ----- the CLI -------------------------------------------------------------------------------
def test_dry_run_prints_counts_and_runs_nothing(tmp_path, capsys):
    code = run_cli.main(["table1", "--preset", "smoke", "--seeds", "2", "--datasets", "hopper-medium",
                         "--results", str(tmp_path), "--dry-run", "--executor", "local"])
    out = capsys.readouterr().out
    assert code == 0 and "0 complete" in out and "estimate" in out and "absent" in out
    assert not any(tmp_path.iterdir())


def test_dry_run_says_how_far_a_partial_run_had_come(tmp_path, capsys):
    (first, *_) = expand("table1", "smoke", seeds=1, datasets=["hopper-medium"], methods=["odt"])
    directory = rec.run_dir(tmp_path, first)
    rec.write_json(directory / rec.SPEC, first.to_dict())
    rec.write_curve(directory / rec.CURVE, [{"phase": "pretrain", "updates": 20, "online_samples": 0},
                                            {"phase": "online", "updates": 1500, "online_samples": 2250}])
    assert run_cli.main(["table1", "--preset", "smoke", "--seeds", "1", "--datasets", "hopper-medium",
                         "--methods", "odt", "--results", str(tmp_path), "--dry-run", "--executor", "local"]) == 0
    out = capsys.readouterr().out
    assert "1 of the runs to run are partial" in out
    (line,) = [x for x in out.splitlines() if first.run_id in x]
    assert line.split()[0] == "partial" and line.endswith("(last evaluation at 1,500 updates, 2,250 online samples)")


def test_only_seeds_plans_that_share_of_the_seeds(tmp_path, capsys):
    base = ["table1", "--preset", "smoke", "--seeds", "4", "--datasets", "hopper-medium", "--methods", "odt",
            "--results", str(tmp_path), "--dry-run", "--executor", "local"]
    assert run_cli.main(base + ["--only-seeds", "1", "3"]) == 0
    listed = [x for x in capsys.readouterr().out.splitlines() if x.lstrip().startswith("absent")]
    assert sorted(x.split("__")[-2] for x in listed) == ["s1", "s3"]
    assert run_cli.main(base + ["--only-seeds", "2", "7"]) == 2  # seed 7 is not among the 4 planned
    err = capsys.readouterr().err
    assert "--only-seeds 7" in err and "0-3" in err


def test_variants_plans_the_matching_part_of_a_grid(tmp_path, capsys):
    base = ["pos_embedding", "--preset", "smoke", "--seeds", "1", "--results", str(tmp_path), "--dry-run",
            "--executor", "local"]
    assert run_cli.main(base + ["--variants", "*lr=0.001,*"]) == 0
    listed = [x for x in capsys.readouterr().out.splitlines() if x.lstrip().startswith("absent")]
    # the grid's lr=1e-3 half: 2 weight decays x positional embedding on/off; lr=1e-4 left out
    assert len(listed) == 4 and all("_lr=0.001_" in x for x in listed)
    assert {x.split("pos=")[1].split("_")[0] for x in listed} == {"True", "False"}
    assert run_cli.main(base + ["--variants", "pos=False,lr=0.0001,wd=0.0001", "pos=True,*wd=0.001"]) == 0
    listed = [x for x in capsys.readouterr().out.splitlines() if x.lstrip().startswith("absent")]
    assert len(listed) == 3
    assert run_cli.main(base + ["--variants", "*", "lr=1e-3"]) == 2  # labels write 1e-3 as 0.001
    err = capsys.readouterr().err
    assert "--variants lr=1e-3" in err and "pos=False,lr=0.001,wd=0.001" in err


def test_cli_rejects_bad_names(tmp_path, capsys):
    assert run_cli.main(["table9", "--results", str(tmp_path)]) == 2
    assert "known: table1" in capsys.readouterr().err
    assert run_cli.main(["table1", "--executor", "cloud", "--results", str(tmp_path)]) == 2


@pytest.mark.parametrize("executor", ["debug", pytest.param("local", marks=pytest.mark.slow)])
def test_cli_end_to_end_then_skips(tmp_path, capsys, executor):
    """In-process (debug) in the fast suite; through submitit's LocalExecutor processes (~15 s
    on an idle 2-core machine) behind the slow marker; .ci/run also runs the local path."""
    args = ["table1", "--preset", "smoke", "--seeds", "1", "--datasets", "hopper-medium",
            "--methods", "odt", "odt-offline", "--executor", executor, "--results", str(tmp_path / "r"),
            "--tables-dir", str(tmp_path / "t"), "--quiet"]
    assert run_cli.main(args) == 0
    out = capsys.readouterr().out
    assert "2 finished, 0 failed" in out
    table = (tmp_path / "t" / "table1.md").read_text()
    for d in TABLE1_DATASETS:
        assert f"| {d} |" in table
    assert run_cli.main(args) == 0
    assert "2 complete, 0 to run" in capsys.readouterr().out


def test_a_refused_submission_is_reported_not_raised(tmp_path, monkeypatch):
    import submitit

    def refuse(self, *args, **kwargs):
        raise RuntimeError("sbatch: error: Unable to contact slurm controller")

    monkeypatch.setattr(submitit.AutoExecutor, "submit", refuse)
    monkeypatch.setattr(submitit.AutoExecutor, "map_array", refuse)
    specs = [_spec(seed=s) for s in (0, 1)]
    for executor in ("debug", "slurm"):  # without Slurm installed, "slurm" fails earlier (no srun)
        report = launch(specs, tmp_path, LaunchOptions(executor=executor), progress=False)
        assert report.done == 0 and len(report.failed) == 2
        assert all(f.error.startswith("submission failed: ") for f in report.failed)
        if executor == "debug":
            assert all("slurm controller" in f.error for f in report.failed)


def test_auto_executor_needs_a_live_slurm_controller(monkeypatch):
    import benchmarks.launch as launch_mod
    from benchmarks.launch import preflight
    monkeypatch.setattr(preflight.shutil, "which", lambda name: None)
    assert launch_mod.resolve_executor("auto") == "local" and launch_mod.resolve_executor("slurm") == "slurm"
    monkeypatch.setattr(preflight.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(preflight.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no controller")))
    assert launch_mod.resolve_executor("auto") == "local"  # client tools installed, controller down


def test_slurm_jobs_larger_than_every_node_are_refused_before_submission(monkeypatch, tmp_path):
    import subprocess as sp

    import benchmarks.launch as launch_mod
    from benchmarks.launch import preflight
    seen = []

    def fake_sinfo(cmd, **kw):
        seen.append(cmd)
        return sp.CompletedProcess(cmd, 0, stdout="2\n4+\n", stderr="")
    monkeypatch.setattr(preflight.subprocess, "run", fake_sinfo)
    assert launch_mod.largest_node_cpus("gpu") == 4 and seen[-1][-2:] == ["-p", "gpu"]
    with pytest.raises(ConfigError, match="cpus=8 is out of range: the largest node of partition 'gpu' has 4 CPUs"):
        launch_mod.make_executor("slurm", tmp_path, LaunchOptions(cpus=8, partition="gpu"))
    launch_mod.check_fits_slurm(LaunchOptions(cpus=4))  # fits: no error
    monkeypatch.setattr(preflight.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError()))
    assert launch_mod.largest_node_cpus(None) is None  # unknown: submission goes ahead
    with pytest.raises(ConfigError, match="max_requeues"):
        LaunchOptions(max_requeues=-1).validate()


@pytest.mark.parametrize("experiment,dataset,cell", [
    ("eval_context", "ant-medium-replay", "lr=0.0001,wd=0.0005"),   # Table C.4's finetuning cell
    ("pos_embedding", "walker2d-medium", "lr=0.001,wd=0.001")])
def test_lr_wd_grids_contain_the_papers_own_cell(experiment, dataset, cell):
    specs = expand(experiment, "cpu", 1)
    settings = {s.variant.split(",", 1)[1] for s in specs if s.dataset == dataset}
    assert cell in settings and len(settings) == 4
    for s in specs:  # one rate for pretraining and finetuning, the grid's weight decay applied
        o = dict(s.overrides)
        assert o["optim.lr"] == o["online.lr"] and f"wd={o['optim.weight_decay']:g}" in s.variant


def test_control_pretraining_changes_only_the_pretraining_length_of_table1s_arms():
    """P1m: as many pretraining sequences as the paper's hopper-medium row (5000 updates of 256,
    Table C.4) at the cpu preset's batch of 64 = 20,000 updates; every other field is Table 1's."""
    from rlbase.config import to_dict
    specs = expand("control_pretraining", "cpu")
    assert {(s.method, s.dataset) for s in specs} == {("odt", "hopper-medium"), ("odt-control", "hopper-medium")}
    assert {s.seed for s in specs} == set(range(10)) and {s.variant for s in specs} == {"pretrain=20000"}
    for s in specs:
        longer = to_dict(method_config(s.method, s.dataset, "cpu", s.seed, s.overrides_dict))
        table1 = to_dict(method_config(s.method, s.dataset, "cpu", s.seed, {}))
        assert table1["pretrain_updates"] == 2500 and longer["pretrain_updates"] == 20_000
        assert {k for k in table1 if table1[k] != longer[k]} == {"pretrain_updates"}
