"""Coordination of shared pretraining under kills (benchmarks/sharing/pretraining.py and the job
lines that call it): a save killed between the state and its checksum leaves the key shareable,
and a state that fails its checksum is never used and is replaced. Everything under tmp_path."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import job as job_mod
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.sharing import pretraining as shared

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
import odt.checkpoint as ckpt
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

