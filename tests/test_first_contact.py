"""First contact (issue 18): the main command on a fresh machine, clean errors and exit codes,
``--set`` for the runner, validated dataset listings, and records without absolute paths.

Nothing here trains: dataset availability, the forge and the launcher are mocked where a test
would otherwise make data or run; the smoke preset is only planned.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import benchmarks.launch as launch_mod
from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks import run as run_cli
from benchmarks import tables
from benchmarks.datasets.__main__ import main as datasets_cli
from benchmarks.datasets.d4rl_io import to_arrays, write_d4rl
from benchmarks.datasets.forge_base import ForgeError, ForgeStopped
from benchmarks.datasets.registry import DatasetUnavailable
from benchmarks.experiments import RunSpec
from benchmarks.launch import LaunchInterrupted, LaunchOptions, LaunchReport, launch, with_overrides
from benchmarks.methods import method_config
from odt.__main__ import main as odt_main
from odt.config import make_config
from rlbase.config import ConfigError


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An empty data directory, as on a fresh clone; no GPU."""
    path = tmp_path / "data"
    monkeypatch.setenv("ODT_DATA_DIR", str(path))
    monkeypatch.setattr(launch_mod.options, "gpu_present", lambda: False)
    return path


@pytest.fixture
def launches(monkeypatch):
    """The launcher, mocked: records what it was asked to run and runs nothing."""
    calls: list[list[RunSpec]] = []

    def fake(specs, root, opts=None, progress=True):
        calls.append(list(specs))
        return LaunchReport(total=len(specs), done=len(specs))
    monkeypatch.setattr(run_cli, "launch", fake)
    monkeypatch.setattr(tables, "write_experiment_tables", lambda *a, **k: [])
    return calls


def _cli(tmp_path, *args: str) -> int:
    return run_cli.main([*args, "--results", str(tmp_path / "r"), "--tables-dir", str(tmp_path / "t"),
                         "--executor", "local", "--quiet"])


def _hopper_file(path, trajectories, **changes) -> None:
    arrays = {**to_arrays(trajectories), **changes}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_d4rl(path, arrays)


# ----- the main command on a fresh machine ----------------------------------------------------
def test_on_a_fresh_machine_table1_launches_nothing_and_says_what_to_make(tmp_path, data_dir, launches, capsys):
    assert _cli(tmp_path, "table1") == 2
    out, err = capsys.readouterr()
    first = out.splitlines()[0]
    assert first.startswith("table1: preset cpu (local CPU, no GPU), ") and " runs, 0 complete, " in first
    assert "estimated wall time" in first
    assert err.count("cannot be loaded") == 1 and "Traceback" not in err
    for name in ("hopper-medium", "hopper-medium-replay", "walker2d-medium", "halfcheetah-medium-replay"):
        assert f"  {name}: not on disk\n      python -m benchmarks.datasets make {name}\n" in err
    assert "--yes" in err  # the whole cpu Table 1 is also over a day here
    assert launches == [] and not (tmp_path / "r").exists()


def test_a_small_plan_with_missing_data_names_only_its_datasets(tmp_path, data_dir, launches, capsys):
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1") == 2
    err = capsys.readouterr().err
    assert "1 dataset(s) this plan needs" in err and "make hopper-medium" in err and "--make-datasets" in err
    assert "walker2d" not in err and "--yes" not in err and launches == []


def test_make_datasets_forges_the_missing_ones_then_launches(tmp_path, data_dir, launches, capsys, monkeypatch):
    made = []
    monkeypatch.setattr(launch_mod.preflight, "forge_in_child", lambda name, argv: made.append((name, argv[1:])))
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1", "--make-datasets") == 0
    out = capsys.readouterr().out
    # the dataset CLI, in a process of its own (it pins the forge's math settings there), not --force
    assert [(name, argv[:4]) for name, argv in made] == [
        ("hopper-medium", ["-m", "benchmarks.datasets", "make", "hopper-medium"])]
    assert "--force" not in made[0][1]
    assert "making dataset hopper-medium (1/1): the forge" in out
    assert len(launches) == 1 and {s.dataset for s in launches[0]} == {"hopper-medium"}


def test_a_dataset_the_forge_cannot_make_fails_before_any_run(tmp_path, data_dir, launches, capsys, monkeypatch):
    def fails(name, argv):
        raise ForgeError("SAC did not reach the medium level")
    monkeypatch.setattr(launch_mod.preflight, "forge_in_child", fails)
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1", "--make-datasets") == 1
    assert "SAC did not reach" in capsys.readouterr().err and launches == []


@pytest.mark.parametrize("code, error", [(1, ForgeError), (2, DatasetUnavailable), (130, ForgeStopped)])
def test_the_forge_childs_exit_code_becomes_the_error_make_would_raise(code, error):
    with pytest.raises(error, match="hopper-medium"):
        launch_mod.forge_in_child("hopper-medium", [sys.executable, "-c", f"raise SystemExit({code})"])
    launch_mod.forge_in_child("hopper-medium", [sys.executable, "-c", "pass"])  # 0: made


def _complete_run_on(root: Path, dataset: str, content: str, seed: int = 7) -> Path:
    d = root / "cpu" / "table1" / f"odt__{dataset}__default__s{seed}__earlier"
    d.mkdir(parents=True)
    rec.write_json(d / rec.SPEC, {"preset": "cpu", "experiment": "table1", "dataset": dataset, "method": "odt",
                                  "seed": seed, "run_id": d.name})
    rec.write_json(d / rec.PROVENANCE, {"name": dataset, "content_sha256": content})
    rec.write_json(d / rec.RECORD, {"status": "complete", "final_score": 50.0})
    return d


def test_a_file_with_other_data_than_the_rows_complete_runs_is_refused(tmp_path, data_dir, launches, hopper_random,
                                                                       capsys):
    """2026-11-26: a remade medium-replay file (SAC's history differs by CPU) held other data than
    the row's runs had used, and a run started on it. Now nothing starts; the message says why."""
    from benchmarks.datasets.loading import load_dataset
    _hopper_file(data_dir / "d4rl" / "hopper-medium-v2.hdf5", hopper_random)
    earlier = _complete_run_on(tmp_path / "r", "hopper-medium", "b1b0ee3f" + "0" * 56)
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1") == 2
    err = capsys.readouterr().err
    assert "hopper-medium: the file on disk holds other data" in err and "b1b0ee3f" in err
    assert "1 complete table1 run(s)" in err and launches == []
    on_disk = load_dataset("hopper-medium").provenance["content_sha256"]
    rec.write_json(earlier / rec.PROVENANCE, {"name": "hopper-medium", "content_sha256": on_disk})
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1") == 0  # the same data
    assert len(launches) == 1


def test_a_row_whose_complete_runs_mix_the_files_data_with_other_data_is_refused(tmp_path, data_dir, launches,
                                                                                   hopper_random, capsys):
    """2026-11-28: old-file records sat under the new row's run ids (a run id does not name the file).
    The file on disk was among the row's contents, so the launch passed and would have skipped the
    old-file runs as complete. Now it names them and starts nothing until they are archived."""
    from benchmarks.datasets.loading import load_dataset
    _hopper_file(data_dir / "d4rl" / "hopper-medium-v2.hdf5", hopper_random)
    on_disk = load_dataset("hopper-medium").provenance["content_sha256"]
    _complete_run_on(tmp_path / "r", "hopper-medium", on_disk, seed=7)
    old = _complete_run_on(tmp_path / "r", "hopper-medium", "b1b0ee3f" + "0" * 56, seed=8)
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1") == 2
    err = capsys.readouterr().err
    assert "hopper-medium: 1 of the 2 complete table1 run(s) of it trained on other data (b1b0ee3f)" in err
    assert old.name in err and "results/archive/" in err and launches == []
    archived = tmp_path / "r" / "archive" / "cpu" / "table1" / old.name
    archived.parent.mkdir(parents=True)
    old.rename(archived)
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1") == 0
    assert len(launches) == 1


def test_a_complete_row_on_other_data_than_the_file_is_named_in_a_warning(tmp_path, data_dir, launches,
                                                                          hopper_random, capsys):
    """2026-11-28, later: S4's rerun on a remade file ran nothing, its runs on the old file counting as
    complete, and nothing said so. Now the launch warns and names them; it still goes ahead (a
    complete plan's tables can be rewritten), and says nothing once the runs are archived."""
    from benchmarks.datasets.loading import load_dataset
    _hopper_file(data_dir / "d4rl" / "hopper-medium-v2.hdf5", hopper_random)
    plan = ["table1", "--datasets", "hopper-medium", "--methods", "odt", "--seeds", "1"]
    assert _cli(tmp_path, *plan, "--dry-run") == 0
    absent = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("  absent")]
    assert len(absent) == 1
    run = Path(absent[0])
    run.mkdir(parents=True)
    for name, body in ((rec.SPEC, {"preset": "cpu", "experiment": "table1", "dataset": "hopper-medium",
                                   "method": "odt", "seed": 0, "run_id": run.name}),
                       (rec.PROVENANCE, {"name": "hopper-medium", "content_sha256": "b1b0ee3f" + "0" * 56}),
                       (rec.RECORD, {"status": "complete", "final_score": 50.0})):
        rec.write_json(run / name, body)
    on_disk = load_dataset("hopper-medium").provenance["content_sha256"]
    assert _cli(tmp_path, *plan) == 0
    out, err = capsys.readouterr()
    assert "1 complete" in out.splitlines()[0] and launches == [[]]  # nothing to run, as before
    assert (f"warning: hopper-medium: 1 complete run(s) of this plan trained on other data (b1b0ee3f) than the "
            f"file on disk (content {on_disk[:8]})") in err and run.name in err and "results/archive/" in err
    rec.write_json(run / rec.PROVENANCE, {"name": "hopper-medium", "content_sha256": on_disk})
    assert _cli(tmp_path, *plan) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_invalid_d4rl_file_is_reported_and_never_forged_over(tmp_path, data_dir, launches, capsys, monkeypatch):
    monkeypatch.setattr(launch_mod.preflight, "forge_in_child", lambda *a, **k: pytest.fail("the forge must not run"))
    bad = data_dir / "d4rl" / "hopper-medium-v2.hdf5"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(np.random.default_rng(0).bytes(100))
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1", "--make-datasets") == 2
    err = capsys.readouterr().err
    assert "not a readable hdf5 file" in err and f"mv {bad} {bad}.invalid && python -m benchmarks.datasets make" in err
    assert launches == []


def test_the_smoke_preset_needs_no_made_dataset(tmp_path, data_dir, launches, capsys):
    assert _cli(tmp_path, "table1", "--preset", "smoke", "--datasets", "hopper-medium", "--seeds", "1") == 0
    assert "preset smoke (--preset)" in capsys.readouterr().out
    # one run per Table 1 method: dt, odt-offline, odt, odt-control, iql, sac, bc
    assert len(launches) == 1 and len(launches[0]) == 7 and not data_dir.exists()  # nothing made by the check


@pytest.mark.parametrize("held, failed, code", [([], [], 0), (["r0"], [], 3), (["r0"], ["r1"], 1)])
def test_a_launch_that_left_runs_to_another_live_launch_does_not_exit_0(
        tmp_path, data_dir, capsys, monkeypatch, held, failed, code):
    """Exit 0 says every run of the plan is complete (EXIT_CODES); runs left to another live
    launch are not, so such a launch exits 3 (1 where a run also failed) and leaves the tables."""
    def fake(specs, root, opts=None, progress=True):
        return LaunchReport(total=len(specs), done=len(specs) - len(held) - len(failed), held=list(held),
                            failed=[launch_mod.Failure(r, "boom", None) for r in failed])
    written = []
    monkeypatch.setattr(run_cli, "launch", fake)
    monkeypatch.setattr(tables, "write_experiment_tables", lambda *a, **k: written.append(a) or [])
    assert _cli(tmp_path, "table1", "--preset", "smoke", "--datasets", "hopper-medium", "--seeds", "1") == code
    out = capsys.readouterr().out
    assert ("left to another live launch" in out) == bool(held)
    assert bool(written) == (code == 0)
    assert "\n  3 none failed, but some runs were left to another live launch" in run_cli.EXIT_CODES


def test_the_default_preset_is_paper_on_slurm_or_a_gpu_else_cpu(tmp_path, data_dir, launches, capsys, monkeypatch):
    assert launch_mod.default_preset("slurm")[0] == "paper"
    assert launch_mod.default_preset("local") == ("cpu", "local CPU, no GPU")
    monkeypatch.setattr(launch_mod.options, "gpu_present", lambda: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert launch_mod.default_preset("local", launch_mod.job_gpus("local", LaunchOptions())) == (
        "paper", "a CUDA GPU is present")
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1", "--dry-run") == 0
    assert capsys.readouterr().out.startswith("table1: preset paper (a CUDA GPU is present), 7 runs, ")
    # --gpus 0 keeps the local jobs on the CPU: then the default preset is the CPU's too
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1", "--gpus", "0", "--dry-run") == 0
    assert capsys.readouterr().out.startswith("table1: preset cpu (local CPU, no GPU), 7 runs, ")


@pytest.mark.parametrize("listed,gpus,given", [
    ("2,3", None, ("2", "3")),  # every GPU the launcher sees, by the names it sees them under
    ("2,3", 1, ("2",)),
    ("0", 0, ()),  # --gpus 0: on the CPU
    ("GPU-1a2b,GPU-3c4d", None, ("GPU-1a2b", "GPU-3c4d")),
])
def test_local_jobs_are_given_the_gpus_the_launcher_sees(tmp_path, monkeypatch, listed, gpus, given):
    """Submitit's local executor sets each job's CUDA_VISIBLE_DEVICES to the GPUs it is given and
    hides every GPU otherwise (the device machine's cpu-preset batch of 2026-11-28 ran on the CPU
    while the launch estimated it on the GPU): a local job is now given the launcher's GPUs."""
    monkeypatch.setattr(launch_mod.options, "gpu_present", lambda: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", listed)
    opts = LaunchOptions(executor="local", gpus=gpus)
    assert launch_mod.local_job_gpus(opts) == given and launch_mod.job_gpus("local", opts) == len(given)
    params = launch_mod.make_executor("local", tmp_path, opts)._executor.parameters
    assert params.get("gpus_per_node", 0) == len(given)
    assert params.get("setup", []) == ([f"export CUDA_VISIBLE_DEVICES={','.join(given)}"] if given else [])
    with pytest.raises(ConfigError, match="gpus=3 is out of range"):
        launch_mod.local_job_gpus(LaunchOptions(executor="local", gpus=3))


def test_a_local_plan_over_a_day_needs_yes(tmp_path, data_dir, launches, capsys, monkeypatch):
    monkeypatch.setattr(run_cli, "dataset_problems", lambda specs: {})  # the datasets are there
    args = ("table1", "--preset", "paper", "--datasets", "hopper-medium", "--seeds", "1", "--methods", "odt")
    assert _cli(tmp_path, *args) == 2
    out, err = capsys.readouterr()
    assert "over 24 h; pass --yes" in err and launches == []
    assert _cli(tmp_path, *args, "--yes") == 0 and len(launches) == 1


def test_dry_run_lists_missing_datasets_and_runs_nothing(tmp_path, data_dir, launches, capsys):
    assert _cli(tmp_path, "table1", "--datasets", "hopper-medium", "--seeds", "1", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "absent" in out and "hopper-medium: not on disk" in out and launches == []


# ----- interruptions ------------------------------------------------------------------------
def test_ctrl_c_names_each_interrupted_run_and_says_it_resumes(tmp_path, data_dir, capsys, monkeypatch):
    monkeypatch.setattr(tables, "write_experiment_tables", lambda *a, **k: [])

    def interrupted(specs, root, opts=None, progress=True):
        raise LaunchInterrupted([specs[0].run_id, specs[1].run_id])
    monkeypatch.setattr(run_cli, "launch", interrupted)
    assert _cli(tmp_path, "table1", "--preset", "smoke", "--datasets", "hopper-medium", "--seeds", "1") == 130
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("interrupted: ")]
    assert len(lines) == 3 and all("resume" in line for line in lines) and "Traceback" not in err


def test_ctrl_c_before_any_run_is_one_line(tmp_path, data_dir, capsys, monkeypatch):
    def ctrl_c(specs, **_):
        raise KeyboardInterrupt
    monkeypatch.setattr(run_cli, "estimate", ctrl_c)
    assert _cli(tmp_path, "table1", "--preset", "smoke", "--datasets", "hopper-medium") == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == "interrupted before any run started; run the same command again to start"
    assert "Traceback" not in err


def test_launch_reports_the_run_it_was_running_when_interrupted(tmp_path, monkeypatch):
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(job_mod, "run_one", ctrl_c)
    spec = RunSpec("t", "odt", "hopper-medium", 0, "smoke")
    with pytest.raises(LaunchInterrupted) as caught:
        launch([spec], tmp_path, LaunchOptions(executor="debug"), progress=False)
    assert caught.value.run_ids == [spec.run_id]


def test_local_job_processes_print_nothing_over_the_launchers_report(tmp_path, capfd):
    """submitit's local controllers share the terminal's Ctrl-C; what they print goes to a log."""
    log = tmp_path / "_logs" / launch_mod.CONTROLLER_LOG
    with launch_mod.executors.stderr_to(log):
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write('KeyboardInterrupt')"])
    child.wait()
    print("the launcher's report", file=sys.stderr)
    err = capfd.readouterr().err
    assert "KeyboardInterrupt" not in err and "the launcher's report" in err
    assert log.read_text() == "KeyboardInterrupt"


# ----- --set ----------------------------------------------------------------------------------
def test_set_overrides_every_run_and_changes_its_id(tmp_path, data_dir, capsys):
    spec = RunSpec("table1", "odt", "hopper-medium", 0, "cpu", (("online.lr", 1e-4),))
    (changed,) = with_overrides([spec], {"optim.lr": "2e-3"})
    assert changed.overrides == (("online.lr", 1e-4), ("optim.lr", "2e-3")) and changed.run_id != spec.run_id
    assert method_config("odt", "hopper-medium", "cpu", 0, changed.overrides_dict).optim.lr == 2e-3
    base = ("table1", "--preset", "cpu", "--datasets", "hopper-medium", "--seeds", "1", "--methods", "odt", "--dry-run")
    assert _cli(tmp_path, *base) == 0
    (plain,) = [line for line in capsys.readouterr().out.splitlines() if "absent" in line]
    assert _cli(tmp_path, *base, "--set", "optim.lr=2e-3", "--set", "online.online_samples=1000") == 0
    (changed,) = [line for line in capsys.readouterr().out.splitlines() if "absent" in line]
    assert changed.split("__")[:-1] == plain.split("__")[:-1] and changed != plain  # same cell, a new id


@pytest.mark.parametrize("assignment,needle", [
    ("optim.lr=inf", "optim.lr=inf is out of range: > 0 and finite"),
    ("optim.lambda_lr=nan", "optim.lambda_lr=nan is out of range"),
    ("model.no_such_field=1", "unknown config field 'model.no_such_field'"),
    ("optim.batch_size=0", "optim.batch_size=0 is out of range"),
    ("optim.lr", "expected FIELD=VALUE"),
])
def test_set_refuses_bad_fields_and_values_at_config_time(tmp_path, data_dir, launches, capsys, assignment, needle):
    args = ("table1", "--preset", "cpu", "--datasets", "hopper-medium", "--methods", "odt", "--set", assignment)
    assert _cli(tmp_path, *args) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and launches == []


def test_set_names_the_method_a_field_does_not_exist_for(tmp_path, data_dir, launches, capsys):
    args = ("table1", "--preset", "cpu", "--datasets", "hopper-medium", "--methods", "odt", "iql", "--set", "optim.lr=1e-3")
    assert _cli(tmp_path, *args) == 2
    assert "iql on hopper-medium (default): unknown config field 'optim.lr'" in capsys.readouterr().err


# ----- config validation ----------------------------------------------------------------------
@pytest.mark.parametrize("method,overrides,needle", [
    ("odt", {"optim.lr": float("inf")}, "optim.lr=inf"),
    ("odt", {"optim.lr": "inf"}, "optim.lr=inf"),  # as --set passes it
    ("odt", {"optim.lambda_lr": float("nan")}, "optim.lambda_lr=nan"),
    ("odt", {"optim.weight_decay": float("inf")}, "optim.weight_decay=inf"),
    ("odt", {"online.g_online": float("nan")}, "online.g_online=nan"),
    ("odt", {"online.lr": float("inf")}, "online.lr=inf"),
    ("odt", {"optim.batch_size": 2.5}, "optim.batch_size=2.5 is out of range: an integer >= 1"),
    ("odt", {"online.online_samples": -5}, "online.online_samples=-5"),
    ("dt", {"optim.lr": float("inf")}, "optim.lr=inf"),
    ("iql", {"actor_lr": float("inf")}, "actor_lr=inf"),
    ("iql", {"temperature": float("nan")}, "temperature=nan"),
    ("iql", {"batch_size": 0}, "batch_size=0"),
    ("sac", {"alpha_lr": float("nan")}, "alpha_lr=nan"),
    ("sac", {"critic_lr": -1e-3}, "critic_lr=-0.001"),
    ("sac", {"buffer_size": 1.5}, "buffer_size=1.5"),
])
def test_non_finite_or_negative_rates_and_impossible_sizes_are_refused(method, overrides, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        method_config(method, "hopper-medium", "smoke", 0, overrides)


def test_valid_configs_still_build():
    assert make_config("hopper-medium", "online", "cpu", {"optim.lr": "2e-3", "optim.weight_decay": 0}).optim.lr == 2e-3


# ----- the other CLIs -------------------------------------------------------------------------
def test_unknown_env_is_one_clean_line(capsys):
    assert odt_main(["--env", "Unknown-v0"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and "Unknown-v0" in err and "Traceback" not in err


def test_exit_codes_are_documented_in_every_cli_help(capsys):
    helps = [run_cli.build_parser().format_help()]
    for main in (lambda: odt_main(["--help"]), lambda: datasets_cli(["--help"])):
        with pytest.raises(SystemExit) as exit_:
            main()
        assert exit_.value.code == 0
        helps.append(capsys.readouterr().out)
    for text in helps:
        assert "exit codes" in text and "130 interrupted" in text and "2 usage or configuration error" in text


def test_datasets_list_validates_files_before_calling_them_real(tmp_path, hopper_random, capsys):
    root = tmp_path / "data"
    random_bytes = root / "d4rl" / "hopper-medium-v2.hdf5"
    random_bytes.parent.mkdir(parents=True)
    random_bytes.write_bytes(np.random.default_rng(0).bytes(100))
    good = root / "d4rl" / "walker2d-medium-v2.hdf5"
    nan = root / "d4rl" / "hopper-random-v2.hdf5"
    _hopper_file(nan, hopper_random, rewards=np.full(hopper_random.num_steps, np.nan, np.float32))
    _hopper_file(root / "d4rl" / "hopper-expert-v2.hdf5", hopper_random)
    _hopper_file(good, hopper_random)  # hopper data under a walker2d name: wrong shapes
    assert datasets_cli(["list", "--data-dir", str(root)]) == 0
    out = capsys.readouterr().out
    rows = dict(zip(out.splitlines()[1::2], out.splitlines()[2::2]))
    by_name = {row.split()[0]: detail.strip() for row, detail in rows.items()}
    assert by_name["hopper-medium"].startswith("INVALID: ") and "not a readable hdf5 file" in by_name["hopper-medium"]
    assert by_name["hopper-random"].startswith("INVALID: ") and "NaN" in by_name["hopper-random"]
    assert by_name["walker2d-medium"].startswith("INVALID: ") and "11-dim" in by_name["walker2d-medium"]
    assert by_name["hopper-expert"] == "real D4RL file"


# ----- records ----------------------------------------------------------------------------------
def test_records_store_the_log_relative_to_the_results_root(tmp_path, monkeypatch):
    root = tmp_path / "results"
    spec = RunSpec("t", "odt", "hopper-medium", 0, "smoke")
    log = rec.logs_dir(root, "smoke", "t") / "7_0_log.err"
    monkeypatch.setattr(job_mod, "_log_path", lambda: str(log.resolve()))

    def no_data(spec):
        raise RuntimeError("no data here")
    monkeypatch.setattr(job_mod, "load_data", no_data)
    with pytest.raises(RuntimeError, match="no data here"):
        job_mod.run_one(spec, root)
    d = rec.run_dir(root, spec)
    record = rec.read_record(d)
    attempts = rec.read_json(d / rec.ENVIRONMENT)["attempts"]
    assert record["log"] == attempts[0]["log"] == "smoke/t/_logs/7_0_log.err"
    assert rec.resolve_log(root, record["log"]) == log
    failure = launch_mod.scheduler.failure_of(root, spec, RuntimeError("x"), None)
    assert failure.log == str(log)


def test_old_records_with_absolute_log_paths_still_read(tmp_path):
    spec = RunSpec("t", "odt", "hopper-medium", 0, "smoke")
    rec.write_json(rec.run_dir(tmp_path, spec) / rec.RECORD, {"status": "failed", "log": "/old/host/1_0_log.err"})
    assert rec.resolve_log(tmp_path, "/old/host/1_0_log.err") == Path("/old/host/1_0_log.err")
    assert launch_mod.scheduler.failure_of(tmp_path, spec, RuntimeError("x"), None).log == "/old/host/1_0_log.err"
    assert rec.resolve_log(tmp_path, None) is None


def test_methods_cli_refuses_a_bad_name_with_exit_code_2(capsys):
    from benchmarks.methods import main as methods_main
    with pytest.raises(SystemExit) as exit_:
        methods_main(["nosuch", "hopper-medium", "--preset", "smoke"])
    assert exit_.value.code == 2  # usage/config errors are 2 in every CLI
    assert "unknown method 'nosuch'" in capsys.readouterr().err


def test_odt_cli_takes_a_minari_name_to_its_family_row_and_says_how_to_get_the_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    from benchmarks.datasets.for_odt import load_for_odt
    assert odt_main(["--dataset", "minari:mujoco/hopper/medium-v0", "--preset", "smoke"], loader=load_for_odt) == 2
    err = capsys.readouterr().err
    assert "unknown dataset" not in err  # the config step took hopper-medium's row
    assert "minari download mujoco/hopper/medium-v0" in err


def test_a_local_job_sees_the_launchers_gpus(tmp_path, monkeypatch):
    """End to end through submitit's local executor: the job's own CUDA_VISIBLE_DEVICES is the
    launcher's (by default) or empty (--gpus 0), not submitit's renumbering."""
    import os
    monkeypatch.setattr(launch_mod.options, "gpu_present", lambda: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    seen = {}
    for gpus in (None, 0):
        executor = launch_mod.make_executor("local", tmp_path / str(gpus), LaunchOptions(executor="local", gpus=gpus))
        seen[gpus] = executor.submit(os.getenv, "CUDA_VISIBLE_DEVICES").result()  # read in the job
    assert seen == {None: "5,7", 0: ""}
