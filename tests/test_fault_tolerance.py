"""Fault injection: runs killed with SIGKILL, stopped by SIGTERM, fed corrupt checkpoints or
diverging losses finish with the same record as an uninterrupted run, or fail cleanly.

Children are forked from the test process (torch is already imported, so a child starts in
milliseconds) and run ``benchmarks.job.run_one`` on a tiny smoke spec with one thread, which
makes CPU results bit-identical between an interrupted and an uninterrupted run.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import run_one

FORK = mp.get_context("fork")
OVERRIDES = (("pretrain_updates", 12), ("online.online_samples", 80), ("checkpoint_every_updates", 4),
             ("eval_every_updates", 6), ("online.eval_every_rounds", 2))
VOLATILE = {"attempts", "notes", "log", "attempt_seconds"}


def _spec(seed: int = 0) -> RunSpec:
    return RunSpec(experiment="faults", method="odt", dataset="hopper-medium", seed=seed, preset="smoke",
                   overrides=OVERRIDES)


@pytest.fixture(scope="module", autouse=True)
def _private_data_dir(tmp_path_factory):
    old = os.environ.get("ODT_DATA_DIR")
    os.environ["ODT_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    yield
    if old is None:
        os.environ.pop("ODT_DATA_DIR", None)
    else:
        os.environ["ODT_DATA_DIR"] = old


def _comparable(root: Path, spec: RunSpec) -> tuple[dict, list[dict]]:
    directory = rec.run_dir(root, spec)
    record = {k: v for k, v in rec.read_record(directory).items() if k not in VOLATILE}
    record["counters"] = {k: v for k, v in record.get("counters", {}).items() if k not in ("wall_time", "cpu_time")}
    return record, rec.read_curve(directory / rec.CURVE)


def _child(spec: RunSpec, root: str, sabotage=None) -> None:
    torch.set_num_threads(1)
    if sabotage is not None:
        sabotage()
    try:
        run_one(spec, root)
    except BaseException:
        os._exit(1)
    os._exit(0)


def _launch(spec: RunSpec, root: Path, sabotage=None) -> mp.Process:
    p = FORK.Process(target=_child, args=(spec, str(root), sabotage))
    p.start()
    return p


def _run_uninterrupted(root: Path) -> float:
    start = time.perf_counter()
    p = _launch(_spec(), root)
    p.join()
    assert p.exitcode == 0
    return time.perf_counter() - start


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run (in a child, like the others), how long a run takes, its root.

    The first run also builds the cached smoke dataset, so it is not the one timed: kill
    moments drawn from its (longer) duration mostly fell after the run had finished, and the
    'kills landed' check failed by chance (CI: 9 kills in 20 trials). A second uninterrupted
    run, which must agree with the first, gives the duration."""
    root = tmp_path_factory.mktemp("reference")
    _run_uninterrupted(root)
    reference = _comparable(root, _spec())
    again = tmp_path_factory.mktemp("reference-again")
    duration = _run_uninterrupted(again)
    assert _comparable(again, _spec()) == reference
    return reference, duration, root


def _run_with_random_kills(root: Path, rng: np.random.Generator, duration: float, max_kills: int) -> int:
    kills = 0
    while True:
        p = _launch(_spec(), root)
        if kills < max_kills:
            p.join(timeout=rng.uniform(0.0, duration))
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join()
                kills += 1
                continue
        p.join()
        record = rec.read_record(rec.run_dir(root, _spec())) or {}
        assert p.exitcode == 0, f"the resumed run failed: {record.get('traceback')}"
        return kills


def _assert_same_as_reference(root: Path, reference) -> None:
    (record, curve), _, _ = reference
    got_record, got_curve = _comparable(root, _spec())
    assert got_record["status"] == "complete"
    assert got_curve == curve  # no row lost, none duplicated, every number identical
    assert got_record == record


@pytest.mark.parametrize("trials", [pytest.param(20, id="20-trials")])
def test_sigkill_at_random_moments_resumes_to_the_same_record(tmp_path, reference, trials):
    rng = np.random.default_rng(0)
    _, duration, _ = reference
    total_kills = 0
    for trial in range(trials):
        root = tmp_path / f"trial{trial}"
        total_kills += _run_with_random_kills(root, rng, duration, max_kills=2)
        _assert_same_as_reference(root, reference)
    assert total_kills >= trials // 2, f"only {total_kills} kills landed mid-run in {trials} trials"


@pytest.mark.slow
def test_sigkill_many_times(tmp_path, reference):
    rng = np.random.default_rng(1)
    _, duration, _ = reference
    for trial in range(100):
        root = tmp_path / f"trial{trial}"
        _run_with_random_kills(root, rng, duration, max_kills=5)
        _assert_same_as_reference(root, reference)


def _die_during_write(match: str, nth: int):
    """Sabotage for a child: SIGKILL itself half-way through the nth atomic write of a file
    whose name contains ``match`` (the temporary file is half written, the target untouched)."""

    def install():
        import rlbase.checkpoint as ckpt

        real = ckpt.atomic_write_bytes
        seen = {"n": 0}

        def dying_write(path, data):
            if match in Path(path).name:
                seen["n"] += 1
                if seen["n"] == nth:
                    tmp = Path(path).with_name(f".{Path(path).name}.tmp-{os.getpid()}")
                    tmp.write_bytes(data[: len(data) // 2])
                    os.kill(os.getpid(), signal.SIGKILL)
            real(path, data)

        ckpt.atomic_write_bytes = dying_write
        rec.atomic_write_bytes = dying_write

    return install


@pytest.mark.parametrize("match,nth", [(".pt", 2), (".sha256", 4), ("record.json", 1), ("curve.jsonl", 3)])
def test_kill_while_writing_a_checkpoint_or_record(tmp_path, reference, match, nth):
    p = _launch(_spec(), tmp_path, sabotage=_die_during_write(match, nth))
    p.join()
    assert p.exitcode == -signal.SIGKILL
    directory = rec.run_dir(tmp_path, _spec())
    record = rec.read_record(directory)
    assert record is None or record.get("status") != "complete"  # never a half record
    p = _launch(_spec(), tmp_path)
    p.join()
    assert p.exitcode == 0
    _assert_same_as_reference(tmp_path, reference)


def _die_after_leaving_the_shared_state():
    """Sabotage for a child: SIGKILL itself right after it has left its end-of-pretraining state
    for same-key runs (benchmarks/sharing/pretraining.py), before its own checkpoint there."""

    def install():
        from benchmarks.sharing import pretraining as shared

        real = shared.save

        def save_then_die(*args, **kwargs):
            real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)

        shared.save = save_then_die

    return install


@pytest.mark.parametrize("own_checkpoints", ["kept", "none"])
def test_sigkill_between_the_shared_state_and_the_own_checkpoint(tmp_path, reference, own_checkpoints):
    """The resumed run finds the shared state it left itself: that is its own pretraining, so the
    record is the uninterrupted run's (``pretraining_from`` None), from its checkpoint before the
    switch ("kept") or, for a run with none before it, from the shared state alone ("none")."""
    from benchmarks.sharing import pretraining as shared

    p = _launch(_spec(), tmp_path, sabotage=_die_after_leaving_the_shared_state())
    p.join()
    assert p.exitcode == -signal.SIGKILL
    assert list((tmp_path / shared.DIRNAME).glob("*/ckpt-*.pt")), "no shared state was left"
    directory = rec.run_dir(tmp_path, _spec())
    if own_checkpoints == "none":
        for path in (directory / rec.CHECKPOINTS).glob("ckpt-*"):
            path.unlink()
    p = _launch(_spec(), tmp_path)
    p.join()
    assert p.exitcode == 0
    _assert_same_as_reference(tmp_path, reference)
    notes = rec.read_record(directory)["notes"]
    assert any("end-of-pretraining state it left" in n for n in notes), notes  # the path under test ran


def test_corrupt_checkpoint_is_skipped_and_noted(tmp_path, reference):
    p = _launch(_spec(), tmp_path, sabotage=_die_during_write("record.json", 1))
    p.join()
    ckpt_dir = rec.run_dir(tmp_path, _spec()) / rec.CHECKPOINTS
    newest = sorted(ckpt_dir.glob("ckpt-*.pt"))[-1]
    newest.write_bytes(newest.read_bytes()[:-10])  # truncated
    p = _launch(_spec(), tmp_path)
    p.join()
    assert p.exitcode == 0
    _assert_same_as_reference(tmp_path, reference)
    notes = rec.read_record(rec.run_dir(tmp_path, _spec()))["notes"]
    assert any("skipped checkpoint" in n and newest.name in n for n in notes)


def test_diverged_loss_is_recorded_as_diverged_and_keeps_good_checkpoints(tmp_path):
    def poison():
        from odt import train

        real = train.ODTTrainer.step  # the training loops' update (``update`` is step + a read)

        def step(self, batch):
            if self.counters.updates == 10:
                with torch.no_grad():
                    self.model.embed_state.weight.fill_(float("nan"))
            return real(self, batch)

        train.ODTTrainer.step = step

    p = _launch(_spec(), tmp_path, sabotage=poison)
    p.join()
    assert p.exitcode == 1
    directory = rec.run_dir(tmp_path, _spec())
    record = rec.read_record(directory)
    assert record["status"] == "diverged" and "NaN" in record["error"] or "nan" in record["error"]
    from rlbase.checkpoint import CheckpointManager

    good = CheckpointManager(directory / rec.CHECKPOINTS).load_latest()
    assert good.state is not None and good.state["agent"]["counters"]["updates"] <= 10
    params = good.state["agent"]["model"]
    assert all(torch.isfinite(v).all() for v in params.values())


def test_two_processes_share_a_results_tree(tmp_path):
    procs = [_launch(_spec(seed), tmp_path) for seed in (1, 2)]
    for p in procs:
        p.join()
        assert p.exitcode == 0
    for seed in (1, 2):
        record = rec.read_record(rec.run_dir(tmp_path, _spec(seed)))
        assert record["status"] == "complete" and record["spec"]["seed"] == seed
    names = sorted(p.name for p in (tmp_path / "smoke" / "faults").iterdir())
    assert len(names) == 2 and not any(".tmp" in n for n in names)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1])
def test_stop_signal_checkpoints_exits_and_resumes(tmp_path, reference, sig):
    p = _launch(_spec(), tmp_path)
    ckpt_dir = rec.run_dir(tmp_path, _spec()) / rec.CHECKPOINTS
    deadline = time.monotonic() + 60
    while not list(ckpt_dir.glob("ckpt-*.sha256")) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(p.pid, sig)
    p.join()
    if p.exitcode == 0:
        pytest.skip("the run finished before the signal arrived (machine too fast for this spec)")
    assert p.exitcode == 1  # _child maps the SystemExit(128 + signum) to 1
    record = rec.read_record(rec.run_dir(tmp_path, _spec()))
    assert record is None or record["status"] != "failed"  # stopped, not failed
    p = _launch(_spec(), tmp_path)
    p.join()
    assert p.exitcode == 0
    _assert_same_as_reference(tmp_path, reference)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv,needle", [
    (["table1", "--datasets", "hopper-easy"], "hopper-medium"),
    (["table1", "--methods", "ppo"], "odt"),
    (["table1", "--preset", "tpu"], "smoke"),
    (["table7"], "table1"),
    (["table1", "--seeds", "0"], "seeds"),
])
def test_bad_input_is_named_and_leaves_the_results_tree_untouched(tmp_path, reference, capsys, argv, needle):
    from benchmarks import run as run_cli

    root = reference[2]  # a tree holding one complete run
    before = _snapshot(root)
    assert run_cli.main([*argv, "--results", str(root), "--tables-dir", str(tmp_path / "t")]) == 2
    assert needle in capsys.readouterr().err
    assert _snapshot(root) == before and not (tmp_path / "t").exists()


# ----- stopping the launcher ------------------------------------------------------------------
def test_sigterm_inside_a_launch_acts_as_ctrl_c_and_the_old_handler_comes_back():
    from benchmarks.launch.executors import terminate_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at the next bytecode; never reached
    assert signal.getsignal(signal.SIGTERM) is before


def _launcher(spec: RunSpec, root: str, sigint: object) -> None:
    from benchmarks.launch import LaunchInterrupted, LaunchOptions, launch

    signal.signal(signal.SIGINT, sigint)  # SIG_IGN: as in a launch started with `&` or nohup
    try:
        launch([spec], root, LaunchOptions(executor="local", parallel=1, threads=1, poll_s=0.05),
               progress=False)
    except LaunchInterrupted:
        os._exit(3)
    os._exit(0)


def _processes_naming(path: Path) -> list[int]:
    """Live processes whose command line names ``path`` (submitit's take their logs folder)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if str(path).encode() in (proc / "cmdline").read_bytes() and not _gone(int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("sigint", [signal.default_int_handler, signal.SIG_IGN], ids=["foreground", "background"])
def test_sigterm_to_the_launcher_stops_its_local_job_process(tmp_path, reference, sigint):
    """``kill <launcher pid>`` used to end the launcher alone: its local job ran on to the end.
    In a launch started in the background SIGINT is ignored, so submitit's cancel (SIGINT) did not
    stop the job either."""
    spec = RunSpec(experiment="faults", method="odt", dataset="hopper-medium", seed=5, preset="smoke",
                   overrides=(("pretrain_updates", 4000), ("checkpoint_every_updates", 4)))
    launcher = FORK.Process(target=_launcher, args=(spec, str(tmp_path), sigint))
    launcher.start()
    ckpt_dir = rec.run_dir(tmp_path, spec) / rec.CHECKPOINTS
    deadline = time.monotonic() + 120
    while not list(ckpt_dir.glob("ckpt-*.sha256")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(ckpt_dir.glob("ckpt-*.sha256")), "the local job never checkpointed"
    jobs = [int(p.name.split("_")[0]) for p in rec.logs_dir(tmp_path, "smoke", "faults").glob("*_0_log.out")]
    assert len(jobs) == 1
    os.kill(launcher.pid, signal.SIGTERM)
    launcher.join(60)
    try:
        assert launcher.exitcode == 3  # LaunchInterrupted, not killed by the signal
        deadline = time.monotonic() + 60
        while not _gone(jobs[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(jobs[0]), "the job process outlived its launcher"
        deadline = time.monotonic() + 30
        while _processes_naming(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _processes_naming(tmp_path), "the run outlived its launcher"
    finally:  # a failing test leaves no orphan behind (the controller and the run it started)
        for pid in _processes_naming(tmp_path):
            os.kill(pid, signal.SIGKILL)
    record = rec.read_record(rec.run_dir(tmp_path, spec))
    assert record is None or record["status"] not in ("complete", "failed")
