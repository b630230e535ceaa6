"""Coordination of shared pretraining under kills (benchmarks/sharing/pretraining.py and the job
lines that call it): a save killed between the state and its checksum leaves the key shareable,
a state that fails its checksum is never used and is replaced, what killed holders and saves
leave under ``_pretrained/`` is removed once no live run holds the key, and a run resumed
mid-pretraining holds its key's lock as a fresh leader does. Everything under tmp_path."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.sharing import pretraining as shared
from odt.train import ODTTrainer
from rlbase.training import StopRequested

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _pinned_code_version(monkeypatch):
    """Keys computed here and in the runs agree even while the working tree changes under the
    test (the key digests uncommitted code)."""
    pinned = {"code": "pinned-for-test", "torch": "t", "cuda": False, "host": "h"}
    monkeypatch.setattr(shared, "machine_and_code", lambda threads=None: {**pinned, "threads": threads or 1})


def _state(tag: str) -> dict:
    return {"agent": {"tag": tag}, "curve": [], "sweeps": []}


def _spec(method: str = "odt") -> RunSpec:
    return RunSpec("t", method, "hopper-medium", 0, "smoke", ())


def _key_of(spec: RunSpec) -> str:
    data = job_mod.load_data(spec)
    cfg = job_mod.config_dict(job_mod.spec_config(spec))
    return shared.key(spec.method, cfg, spec.seed, dict(data.provenance), threads=1)


# a process that saves a state for key "k" and is SIGKILLed as it starts writing a checksum
_KILLED_SAVE = """
import os, signal, sys
from pathlib import Path
import rlbase.checkpoint as ckpt
from benchmarks.sharing import pretraining as shared
real = ckpt.atomic_write_bytes
def dying(path, data):
    if Path(path).suffix == ".sha256":
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data)
ckpt.atomic_write_bytes = dying
shared.save(sys.argv[1], "k", {"agent": {"tag": "killed"}, "curve": [], "sweeps": []}, source_run="killed", step=7)
"""


def _killed_save(root: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(root)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert any((root / shared.DIRNAME).iterdir())  # its state file was written, its checksum not


# a process that holds the lock file argv[1] until killed (no torch to import)
_HOLD = """
import fcntl, sys, time
with open(sys.argv[1], "a+") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(root: Path, key: str) -> subprocess.Popen:
    path = shared.lock_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-S", "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


# ----- 1. the state and its checksum ------------------------------------------------------------
def test_a_save_killed_between_the_state_and_its_checksum_leaves_the_key_shareable(tmp_path):
    _killed_save(tmp_path)
    assert shared.load(tmp_path, "k") is None  # never a state without its checksum
    assert not shared.is_saved(tmp_path, "k")  # the launcher does not price it as saved
    shared.save(tmp_path, "k", _state("next"), source_run="next", step=7)  # the next run to compute it
    found = shared.load(tmp_path, "k")
    assert found is not None and found.source_run == "next" and found.state == _state("next")


@pytest.mark.parametrize("damage", ["checksum missing", "bytes changed"])
def test_a_state_that_fails_its_checksum_is_never_used_and_the_next_save_replaces_it(tmp_path, damage):
    shared.save(tmp_path, "k", _state("first"), source_run="first", step=3)
    (stored,) = (tmp_path / shared.DIRNAME / "k").glob("ckpt-*.pt")
    if damage == "checksum missing":
        stored.with_suffix(".sha256").unlink()
    else:
        data = stored.read_bytes()
        stored.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    assert shared.load(tmp_path, "k") is None
    shared.save(tmp_path, "k", _state("second"), source_run="second", step=3)
    found = shared.load(tmp_path, "k")
    assert found is not None and found.source_run == "second" and found.state == _state("second")
    shared.save(tmp_path, "k", _state("third"), source_run="third", step=4)  # one that verifies stays
    assert shared.load(tmp_path, "k").source_run == "second"
    assert [p.name for p in (tmp_path / shared.DIRNAME).iterdir()] == ["k"]


def test_a_run_leaves_its_state_where_its_key_held_a_broken_one(tmp_path):
    """Before: the broken pair counted as saved, so no run of the key ever left its state again."""
    odt = _spec("odt")
    k = _key_of(odt)
    broken = tmp_path / shared.DIRNAME / k
    broken.mkdir(parents=True)
    (broken / "ckpt-000000000001.pt").write_bytes(b"half a state")  # its checksum never written
    job_mod.run_one(odt, tmp_path, threads=1)
    assert rec.read_record(rec.run_dir(tmp_path, odt))["pretraining_from"] is None
    found = shared.load(tmp_path, k)
    assert found is not None and found.source_run == odt.run_id
    assert [p.name for p in (tmp_path / shared.DIRNAME).iterdir()] == [k]  # no lock file, nothing else


# ----- 2. what killed holders and saves leave ---------------------------------------------------
def test_what_a_killed_save_left_is_removed_once_no_live_run_holds_its_key(tmp_path):
    _killed_save(tmp_path)
    store = tmp_path / shared.DIRNAME
    left = sorted(p.name for p in store.iterdir())
    holder = _holder(tmp_path, "k")  # a live run computing k again: a save of its own may be under way
    try:
        shared.remove_stale(tmp_path)
        assert sorted(p.name for p in store.iterdir() if p.suffix != ".lock") == left
    finally:
        holder.kill()
        holder.wait(5)
    shared.remove_stale(tmp_path)  # its holder is dead now: its lock file goes too
    assert list(store.iterdir()) == []
    shared.save(tmp_path, "k", _state("next"), source_run="next", step=7)
    assert shared.load(tmp_path, "k").source_run == "next"


def test_one_holder_at_a_time_while_lock_files_are_cleared(tmp_path):
    """Holders come and go on one key while another thread clears lock files nobody holds: never
    two holders at once, and no lock file is left behind."""
    inside, most, guard, stop = [0], [0], threading.Lock(), threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        for _ in range(25):
            with shared.pretraining_lock(tmp_path, "k", say=lambda _: None) as held:
                assert held
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.001)
                with guard:
                    inside[0] -= 1

    def clear() -> None:
        try:
            while not stop.is_set():
                shared.remove_stale(tmp_path)
        except BaseException as exc:
            errors.append(exc)

    runs = [threading.Thread(target=run) for _ in range(4)]
    clearing = threading.Thread(target=clear)
    clearing.start()
    for t in runs:
        t.start()
    for t in runs:
        t.join(60)
    stop.set()
    clearing.join(10)
    assert errors == [] and most[0] == 1
    assert not shared.lock_path(tmp_path, "k").exists()


# ----- 3. a resumed run and the lock ------------------------------------------------------------
def test_a_run_resumed_mid_pretraining_holds_its_key_lock_as_a_fresh_leader_does(tmp_path, monkeypatch):
    """Stopped at its first pretraining evaluation, then resumed from its own checkpoint: for the
    rest of its pretraining it holds the key's lock (a same-key run would wait for it), leaves its
    state, and lets the lock go (its file removed)."""
    odt = _spec("odt")
    k = _key_of(odt)
    evaluate = ODTTrainer._eval_row

    def stopping(self, phase, log, ends_phase=True, **extra):
        if phase == "pretrain" and not ends_phase:
            self.request_stop()
        return evaluate(self, phase, log, ends_phase, **extra)

    with monkeypatch.context() as m:
        m.setattr(ODTTrainer, "_eval_row", stopping)
        with pytest.raises(StopRequested):
            job_mod.run_one(odt, tmp_path, threads=1)
    assert shared.load(tmp_path, k) is None and not shared.lock_path(tmp_path, k).exists()

    free_while_pretraining: list[bool] = []

    def probing(self, phase, log, ends_phase=True, **extra):
        if phase == "pretrain":
            with shared.pretraining_lock(tmp_path, k, wait=False) as free:
                free_while_pretraining.append(free)
        return evaluate(self, phase, log, ends_phase, **extra)

    monkeypatch.setattr(ODTTrainer, "_eval_row", probing)
    job_mod.run_one(odt, tmp_path, threads=1)
    record = rec.read_record(rec.run_dir(tmp_path, odt))
    assert record["attempts"] == 2 and any("resumed from ckpt-" in n for n in record["notes"])
    assert free_while_pretraining and not any(free_while_pretraining)
    assert shared.load(tmp_path, k).source_run == odt.run_id
    assert not shared.lock_path(tmp_path, k).exists()
