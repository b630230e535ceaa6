"""Outputs never clobber committed results (issue 18, part 2): tables and figures go next to the
results root and preset they come from, a run that failed or is still held elsewhere never
replaces a table, and regenerating figures from unchanged records changes no byte and adds no
stray file. Nothing here trains: the launcher is mocked and the results trees are written by hand.
"""

from __future__ import annotations

import hashlib

import pytest

from benchmarks import outputs, plots
from benchmarks import records as rec
from benchmarks import run as run_cli
from benchmarks.launch import Failure, LaunchReport
from tests.test_aggregate import fake_run


def _digest_tree(directory) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def committed_tables():
    """The bytes of every committed file under paper_tables/, to compare after a test."""
    return _digest_tree(outputs.PAPER_TABLES)


def test_only_the_repository_results_tree_writes_into_paper_tables(tmp_path, monkeypatch):
    monkeypatch.chdir(rec.REPO_ROOT)
    for spelling in ("results", "./results", rec.REPO_ROOT / "results", "benchmarks/../results"):
        assert outputs.tables_dir(spelling, "cpu") == rec.REPO_ROOT / "paper_tables" / "cpu"
        assert outputs.figures_root(spelling) == rec.REPO_ROOT / "paper_tables" / "figures"
    other = tmp_path / "r"
    assert outputs.tables_dir(other, "smoke") == other / "paper_tables" / "smoke"
    assert outputs.tables_dir(other, "cpu") == other / "paper_tables" / "cpu"  # a cpu run elsewhere too
    assert outputs.figures_root(other) == other / "paper_tables" / "figures"
    assert outputs.tables_dir("results", "smoke") != outputs.tables_dir("results", "cpu")


def _launch_reporting(monkeypatch, report: LaunchReport) -> None:
    monkeypatch.setattr(run_cli, "launch", lambda specs, root, opts=None, progress=True: report)
    monkeypatch.setattr(run_cli, "dataset_problems", lambda specs: {})
    monkeypatch.setattr(run_cli, "job_gpus", lambda kind, opts: 0)


def _smoke(tmp_path, *extra: str) -> list[str]:
    return ["table1", "--preset", "smoke", "--seeds", "1", "--datasets", "hopper-medium", "--methods", "odt",
            "--results", str(tmp_path / "r"), "--executor", "local", "--quiet", *extra]


def test_a_smoke_run_elsewhere_writes_its_tables_beside_its_results(tmp_path, monkeypatch, committed_tables, capsys):
    fake_run(tmp_path / "r", "odt", "hopper-medium", 0, final=12.5)
    _launch_reporting(monkeypatch, LaunchReport(total=1, done=1))
    assert run_cli.main(_smoke(tmp_path)) == 0
    table = tmp_path / "r" / "paper_tables" / "smoke" / "table1.md"
    assert "12.5" in table.read_text()
    assert f"wrote {table}" in capsys.readouterr().out
    assert _digest_tree(outputs.PAPER_TABLES) == committed_tables


@pytest.mark.parametrize("report", [
    LaunchReport(total=2, done=1, failed=[Failure("odt__x__s1", "RuntimeError: boom", None)]),
    LaunchReport(total=2, done=1, held=["another-launch-has-it"]),  # a run still going elsewhere
], ids=["failed", "held"])
def test_a_plan_with_a_failed_or_unfinished_run_leaves_the_tables_alone(tmp_path, monkeypatch, report, capsys):
    fake_run(tmp_path / "r", "odt", "hopper-medium", 0, final=12.5)
    tables_dir = tmp_path / "r" / "paper_tables" / "smoke"
    tables_dir.mkdir(parents=True)
    (tables_dir / "table1.md").write_text("the table of an earlier, complete launch\n")
    _launch_reporting(monkeypatch, report)
    run_cli.main(_smoke(tmp_path))
    assert (tables_dir / "table1.md").read_text() == "the table of an earlier, complete launch\n"
    assert sorted(p.name for p in tables_dir.iterdir()) == ["table1.md"]
    assert "tables not rewritten" in capsys.readouterr().out


def _table1_only_tree(root) -> None:
    for seed in range(2):
        fake_run(root, "odt", "hopper-medium", seed, final=60.0 + seed)
        fake_run(root, "odt-offline", "hopper-medium", seed, final=50.0 + seed)


def test_figures_skip_experiments_without_runs_and_rerun_to_the_same_bytes(tmp_path):
    root, out = tmp_path / "results", tmp_path / "figs"
    _table1_only_tree(root)
    first = plots.make_plots(root, out, ["smoke"])
    table1_figures = {f.name for f in plots.FIGURES if f.experiment == "table1"}
    # no placeholder for the experiments without runs (Appendix F's figure is drawn from the
    # datasets, and only when every one is on disk: the smoke ones are made on demand), nor for a
    # Table 1 figure whose select keeps none of these runs (antmaze_offline: AntMaze rows only)
    assert {p.stem for p in first} - {"sampling_probabilities"} == table1_figures - {"antmaze_offline"}
    before = _digest_tree(out)
    plots.make_plots(root, out, ["smoke"])
    assert _digest_tree(out) == before


def test_figures_default_to_the_outputs_beside_the_results_and_to_no_preset_without_runs(tmp_path):
    assert plots.make_plots(tmp_path / "empty") == []
    assert not (tmp_path / "empty").exists()
    root = tmp_path / "results"
    _table1_only_tree(root)
    paths = plots.make_plots(root)
    assert paths and all(p.parent == root / "paper_tables" / "figures" / "smoke" for p in paths)
