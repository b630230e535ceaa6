"""benchmarks.import_runs: complete runs are copied, nothing here is overwritten, machines are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.import_runs import RECORD_FILES, import_runs, main


def make_run(root: Path, run: str, *, status: str | None = "complete", score: float = 50.0, torch: str = "2.13.0+cpu",
             cpu_count: int = 2, skip: tuple[str, ...] = (), cpu_model: str | None = None) -> Path:
    d = root / "cpu" / "g_online" / run
    d.mkdir(parents=True)
    files = {
        "spec.json": {"run_id": run}, "config.json": {"seed": 20}, "provenance.json": {"content_sha256": "bd"},
        "environment.json": {"attempts": [{"versions": {"torch": torch, "python": "3.11.7", "numpy": "2.4.6"},
                                           "cpu_count": cpu_count, "cuda": False,
                                           **({"cpu_model": cpu_model} if cpu_model else {})}]},
    }
    for name, obj in files.items():
        if name not in skip:
            (d / name).write_text(json.dumps(obj))
    if "curve.jsonl" not in skip:
        (d / "curve.jsonl").write_text(json.dumps({"score_mean": score}) + "\n")
    if status is not None:
        (d / "record.json").write_text(json.dumps({"status": status, "final_score": score}))
    (d / "checkpoints").mkdir()
    (d / "checkpoints" / "state.pt").write_bytes(b"large")
    (d / ".lock").write_text("")
    return d


def test_complete_runs_are_copied_with_their_record_files_only(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(src, "a__s20")
    (row,) = import_runs(src, dst)
    assert (row.run, row.outcome) == ("cpu/g_online/a__s20", "imported")
    copied = sorted(p.name for p in (dst / "cpu" / "g_online" / "a__s20").iterdir())
    assert copied == sorted(RECORD_FILES)  # no checkpoints, no lock


def test_nothing_here_is_overwritten_and_equal_records_are_recognised(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(src, "a__s20", score=60.0)
    make_run(src, "b__s21", score=40.0)
    make_run(dst, "a__s20", score=55.0)  # another result under the same id: kept
    make_run(dst, "b__s21", score=40.0)  # the same record: nothing to do
    rows = {r.run.split("/")[-1]: r for r in import_runs(src, dst)}
    assert rows["a__s20"].outcome == "conflict" and rows["b__s21"].outcome == "same"
    kept = json.loads((dst / "cpu" / "g_online" / "a__s20" / "record.json").read_text())
    assert kept["final_score"] == 55.0
    assert main([str(src), "--results", str(dst)]) == 1  # a conflict is an error for scripts


@pytest.mark.parametrize("status", [None, "failed", "diverged"])
def test_runs_that_are_not_complete_are_skipped(tmp_path, status):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(src, "a__s20", status=status, skip=("record.json",) if status is None else ())
    (row,) = import_runs(src, dst)
    assert row.outcome == "incomplete"  # a run without a record (partial) is unfinished, not malformed
    assert row.detail == (status or "partial")
    assert not (dst / "cpu" / "g_online" / "a__s20").exists()


def test_a_run_missing_a_record_file_is_refused_naming_it(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(src, "a__s20", skip=("provenance.json",))
    (row,) = import_runs(src, dst)
    assert row.outcome == "malformed" and "provenance.json" in row.detail


def test_another_machine_is_named_against_the_runs_already_in_the_experiment(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(dst, "local__s20")
    make_run(src, "far__s21", torch="2.11.0+cu130", cpu_count=16)
    make_run(src, "near__s22")
    rows = {r.run.split("/")[-1]: r for r in import_runs(src, dst)}
    assert "torch 2.11.0+cu130 vs 2.13.0+cpu" in rows["far__s21"].detail
    assert "cpu_count 16 vs 2" in rows["far__s21"].detail
    assert rows["near__s22"].detail == ""


def test_a_run_from_another_cpu_model_is_named_older_records_without_one_are_not(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(dst, "local__s20", cpu_model="Xeon A")
    make_run(src, "other__s21", cpu_model="EPYC B")
    make_run(src, "same__s22", cpu_model="Xeon A")
    make_run(src, "old__s23")  # a record from before f2acd00 (2026-11-26) names no CPU model
    rows = {r.run.split("/")[-1]: r for r in import_runs(src, dst)}
    assert rows["other__s21"].detail.endswith(": cpu_model EPYC B vs Xeon A")
    assert rows["same__s22"].detail == "" and rows["old__s23"].detail == ""


def test_dry_run_copies_nothing_and_bad_roots_are_refused(tmp_path, capsys):
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(src, "a__s20")
    assert main([str(src), "--results", str(dst), "--dry-run"]) == 0
    assert "would import 1" in capsys.readouterr().out and not dst.exists()
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nowhere"), "--results", str(dst)])
    with pytest.raises(SystemExit):
        main([str(src), "--results", str(src)])


def test_a_run_archived_here_is_not_brought_back_by_an_older_checkout(tmp_path, capsys):
    """On 2026-11-26 superseded runs were archived under results/archive/; a worktree made before that
    still holds them under cpu/<experiment>/, and importing from it must not resurrect them."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    make_run(src, "old__s20", score=30.0)
    make_run(src, "rerun__s21", score=45.0)  # the same id reran on fixed code: another record
    make_run(src, "new__s22")
    make_run(dst / "archive" / "before-fix", "old__s20", score=30.0)  # archive/before-fix/cpu/g_online/old__s20
    make_run(dst / "archive" / "before-fix", "rerun__s21", score=20.0)
    make_run(dst / "archive" / "an-earlier-fix", "old__s20", score=99.0)  # one id, two archives
    rows = {r.run.split("/")[-1]: r for r in import_runs(src, dst)}
    assert rows["old__s20"].outcome == "archived" and "archive/before-fix" in rows["old__s20"].detail
    assert rows["rerun__s21"].outcome == "imported" and rows["new__s22"].outcome == "imported"
    assert not (dst / "cpu" / "g_online" / "old__s20").exists()
    assert main([str(src), "--results", str(tmp_path / "dst2")]) == 0
    assert "skipped archived 0" in capsys.readouterr().out
