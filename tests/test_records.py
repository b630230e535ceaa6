"""The results store: atomic records, status semantics, JSON sanitising, attempts, layout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.sharing import pretraining as sp

SPEC = RunSpec("table1", "odt", "hopper-medium", 3, "smoke", (("online.g_online", 7200.0),), "x")


def test_run_dir_layout_is_preset_experiment_run_id(tmp_path):
    d = rec.run_dir(tmp_path, SPEC)
    assert d == tmp_path / "smoke" / "table1" / SPEC.run_id
    assert rec.logs_dir(tmp_path, "smoke", "table1").name == "_logs"


def test_status_absent_partial_complete_failed(tmp_path):
    d = rec.run_dir(tmp_path, SPEC)
    assert rec.status_of(d) == "absent" and not rec.is_complete(d)
    d.mkdir(parents=True)
    (d / ".lock").touch()  # a lock taken before any attempt wrote anything: nothing to resume
    assert rec.status_of(d) == "absent"
    rec.write_json(d / rec.SPEC, SPEC.to_dict())
    assert rec.status_of(d) == "partial" and not rec.is_complete(d)
    rec.write_json(d / rec.RECORD, {"status": "failed", "error": "boom"})
    assert rec.status_of(d) == "failed" and not rec.is_complete(d)
    rec.write_json(d / rec.RECORD, {"status": "complete"})
    assert rec.status_of(d) == "complete" and rec.is_complete(d)


def test_a_record_that_does_not_parse_is_not_complete(tmp_path):
    d = rec.run_dir(tmp_path, SPEC)
    d.mkdir(parents=True)
    (d / rec.RECORD).write_text('{"status": "compl')  # what a non-atomic writer could leave
    assert rec.read_record(d) is None and not rec.is_complete(d)


def test_record_write_is_atomic_when_the_writer_dies_before_rename(tmp_path, monkeypatch):
    """A crash between writing and renaming leaves the old record intact and no partial file."""
    d = rec.run_dir(tmp_path, SPEC)
    rec.write_json(d / rec.RECORD, {"status": "failed", "error": "first"})

    def die(*args, **kwargs):
        raise OSError("killed before rename")

    monkeypatch.setattr(os, "replace", die)
    with pytest.raises(OSError):
        rec.write_json(d / rec.RECORD, {"status": "complete", "final_score": 1.0})
    monkeypatch.undo()
    assert rec.read_record(d) == {"error": "first", "status": "failed"}
    assert sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) == [rec.RECORD]


def test_to_jsonable_handles_numpy_paths_and_non_finite():
    out = rec.to_jsonable({"a": np.float32(1.5), "b": np.arange(3), "c": float("nan"),
                           "d": (1, np.int64(2)), "e": rec.REPO_ROOT, "f": float("inf")})
    assert out == {"a": 1.5, "b": [0, 1, 2], "c": None, "d": [1, 2], "e": str(rec.REPO_ROOT), "f": None}
    json.dumps(out, allow_nan=False)


def test_curve_round_trip(tmp_path):
    rows = [{"phase": "pretrain", "updates": 20, "score_mean": 1.25, "returns": [1.0, 2.0]},
            {"phase": "online", "updates": 30, "score_mean": float("nan")}]
    rec.write_curve(tmp_path / rec.CURVE, rows)
    back = rec.read_curve(tmp_path / rec.CURVE)
    assert back[0] == rows[0] and back[1]["score_mean"] is None
    assert rec.read_curve(tmp_path / "absent.jsonl") == []


def test_attempts_accumulate_with_code_version(tmp_path):
    d = rec.run_dir(tmp_path, SPEC)
    assert rec.record_attempt(d, "/logs/1.err") == 1
    assert rec.record_attempt(d, None) == 2
    env = rec.read_json(d / rec.ENVIRONMENT)["attempts"]
    assert [a["log"] for a in env] == ["/logs/1.err", None]
    assert env[0]["git_sha"] is None or len(env[0]["git_sha"]) == 40
    assert env[0]["git_dirty"] in (True, False, None)
    assert {"python", "torch", "numpy", "gymnasium"} <= set(env[0]["versions"])


def test_iter_run_dirs_skips_logs_and_sorts(tmp_path):
    specs = [RunSpec("e", "odt", "hopper-medium", s, "smoke") for s in (2, 0, 1)]
    for s in specs:
        rec.write_json(rec.run_dir(tmp_path, s) / rec.SPEC, s.to_dict())
    (rec.logs_dir(tmp_path, "smoke", "e") / "x").mkdir(parents=True)
    found = rec.iter_run_dirs(tmp_path)
    assert [p.name for p in found] == sorted(s.run_id for s in specs)
    assert rec.iter_run_dirs(tmp_path, preset="paper") == []


def _git_checkout(root):
    """A tiny committed checkout with one code file and one generated table."""
    def git(*args):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    (root / "odt").mkdir(parents=True)
    (root / "paper_tables").mkdir()
    (root / "odt" / "model.py").write_text("WIDTH = 128\n")
    (root / "paper_tables" / "table1.md").write_text("| a |\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_regenerated_outputs_leave_the_code_clean_and_its_fingerprint_unchanged(tmp_path):
    root = _git_checkout(tmp_path / "repo")
    clean = rec.code_version_of(root)
    assert len(clean["git_sha"]) == 40 and clean["git_dirty"] is False and clean["git_changed"] == []
    assert sp.code_fingerprint_of(root, clean) == clean["git_sha"]
    # a launch rewrites its tables and adds records: output, not code
    (root / "paper_tables" / "table1.md").write_text("| b |\n")
    (root / "results").mkdir()
    (root / "results" / "record.json").write_text("{}")
    after_tables = rec.code_version_of(root)
    assert after_tables == clean
    assert sp.code_fingerprint_of(root, after_tables) == clean["git_sha"]
    # an edit to code is dirty, and its fingerprint names the edit
    (root / "odt" / "model.py").write_text("WIDTH = 64\n")
    edited = rec.code_version_of(root)
    assert edited["git_dirty"] is True and edited["git_changed"] == ["odt/model.py"]
    fp = sp.code_fingerprint_of(root, edited)
    assert fp.startswith(clean["git_sha"] + "+")
    (root / "paper_tables" / "table1.md").write_text("| c |\n")  # the table again: same code digest
    assert sp.code_fingerprint_of(root, rec.code_version_of(root)) == fp


def test_outside_git_the_code_version_is_unknown(tmp_path):
    v = rec.code_version_of(tmp_path / "not-a-checkout")
    assert v == {"git_sha": None, "git_dirty": None, "git_changed": None}
    assert sp.code_fingerprint_of(tmp_path, v) is None


def test_an_attempts_environment_names_the_cpu_model_and_kernel_level():
    """Bit-identity holds within one CPU model, not across: each attempt says which it ran on."""
    env = rec.environment()
    assert isinstance(env["cpu_model"], str) and env["cpu_model"]
    assert isinstance(env["cpu_capability"], str) and env["cpu_capability"]
