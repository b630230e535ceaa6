"""``python -m benchmarks.status`` and the launcher's live lines (``benchmarks.run_progress``):
states, progress, pace and the per-experiment summary, on synthetic run directories, on a
smoke run stopped part way, on the committed ``results/`` (all complete), and on the output of
a smoke launch. Nothing is written under a results root by the status view."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
from pathlib import Path

import pytest
import torch

from benchmarks import job as job_mod
from benchmarks import launch as launch_mod
from benchmarks import records as rec
from benchmarks import run as run_cli
from benchmarks import run_progress as rp
from benchmarks import status
from benchmarks.experiments import RunSpec, expand

REPO = Path(__file__).resolve().parent.parent


# ----- synthetic run directories -------------------------------------------------------------
def _config(spec: RunSpec, **online) -> dict:
    cfg = job_mod.config_dict(job_mod.spec_config(spec))
    cfg["online"].update(online)
    return cfg


def _row(phase: str, updates: int, samples: int, score: float) -> dict:
    return {"phase": phase, "updates": updates, "online_samples": samples, "score_mean": score, "return_mean": 0.0}


def _checkpoint(directory: Path, updates: int, samples: int, wall: float, cpu: float | None,
                pretrain_done: bool = True, pretraining_from: str | None = None, inherited: dict | None = None) -> None:
    folder = directory / rec.CHECKPOINTS
    folder.mkdir(parents=True, exist_ok=True)
    counters = {"updates": updates, "online_samples": samples, "pretrain_done": pretrain_done, "wall_time": wall}
    if cpu is not None:
        counters["cpu_time"] = cpu
    path = folder / f"ckpt-{updates:012d}.pt"
    torch.save({"agent": {"counters": counters}, "curve": [], "pretraining_from": pretraining_from,
                "inherited_counters": inherited}, path)
    path.with_suffix(".sha256").write_text(hashlib.sha256(path.read_bytes()).hexdigest())


def _started(root: Path, spec: RunSpec, rows: list[dict] = (), config: dict | None = None) -> Path:
    d = rec.run_dir(root, spec)
    d.mkdir(parents=True, exist_ok=True)
    (d / ".lock").touch()
    rec.write_json(d / rec.SPEC, spec.to_dict())
    rec.write_json(d / rec.CONFIG, config or job_mod.config_dict(job_mod.spec_config(spec)))
    rec.write_json(d / rec.ENVIRONMENT, {"attempts": [{"torch_threads": 1, "cuda": False}]})
    rec.write_curve(d / rec.CURVE, list(rows))
    return d


def _complete(root: Path, spec: RunSpec, updates: int, samples: int, score: float, cpu: float, wall: float,
              **record) -> Path:
    d = _started(root, spec, [_row("online", updates, samples, score)])
    rec.write_json(d / rec.RECORD, {
        "status": "complete", "run_id": spec.run_id, "spec": spec.to_dict(), "final_score": score,
        "final": _row("online", updates, samples, score), "attempt_seconds": wall + 5,
        "counters": {"updates": updates, "online_samples": samples, "rounds": 1, "wall_time": wall, "cpu_time": cpu},
        **record})
    return d


@contextlib.contextmanager
def _held(directory: Path):
    """Hold a run's lock as a live job does (another open file description: it conflicts here too)."""
    with open(directory / ".lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def _by_method(table) -> dict:
    return {r["method"]: r for _, r in table.iterrows()}


@pytest.fixture
def plan() -> list[RunSpec]:
    return expand("online_200k", "smoke", seeds=1)  # odt, its update-matched control, iql; seed 0


def test_states_running_waiting_stopped_failed_and_complete(tmp_path, plan):
    odt, control, iql = plan
    d = _started(tmp_path, odt, [_row("pretrain", 40, 0, 1.5), _row("online", 50, 100, 2.5)])
    _checkpoint(d, 45, 60, wall=100.0, cpu=90.0)
    _checkpoint(d, 55, 150, wall=160.0, cpu=140.0)
    bad = _started(tmp_path, iql)
    rec.write_json(bad / rec.RECORD, {"status": "failed", "error": "RuntimeError: boom\n"})
    entries = status.plan_entries(tmp_path, ["online_200k"], "smoke", 1)
    assert [e.spec.run_id for e in entries] == [s.run_id for s in plan]

    with _held(d):
        rows = _by_method(status.status_table(tmp_path, entries, now=(d / "checkpoints").stat().st_mtime + 60))
    assert rows["odt"]["state"] == "running" and rows["odt"]["phase"] == "online"
    # the checkpoint at 150 samples is further along than the last evaluation (100 samples)
    assert (rows["odt"]["updates"], rows["odt"]["online_samples"], rows["odt"]["online_budget"]) == (55, 150, 300)
    assert rows["odt"]["score"] == 2.5 and rows["odt"]["score_samples"] == 100
    assert (rows["odt"]["wall_s"], rows["odt"]["cpu_s"], rows["odt"]["spent_core_s"]) == (160.0, 140.0, 140.0)
    assert rows["odt"]["left_from"] == "pace"
    # 90 of its 300 online samples took 60 s between its two checkpoints: 150 left take 100 s
    assert rows["odt"]["left_s"] == pytest.approx(100.0) and rows["odt"]["left_core_s"] == pytest.approx(83.333, rel=1e-4)
    assert (rows["odt-control-matched"]["state"], rows["odt-control-matched"]["waiting_on"]) == ("waiting", "twin")
    assert odt.run_id in rows["odt-control-matched"]["note"]
    assert rows["iql"]["state"] == "failed" and "boom" in rows["iql"]["note"]
    assert rows["iql"]["left_from"] in ("model", "calibrated")

    rows = _by_method(status.status_table(tmp_path, entries))  # its holder has gone: stopped part way
    assert rows["odt"]["state"] == "stopped" and rows["odt-control-matched"]["state"] == "waiting"

    _complete(tmp_path, odt, 60, 310, 3.0, cpu=200.0, wall=230.0)
    table = status.status_table(tmp_path, entries)
    rows = _by_method(table)
    assert rows["odt"]["state"] == "complete" and rows["odt"]["phase"] == "done" and rows["odt"]["left_s"] == 0
    assert rows["odt-control-matched"]["state"] == "not started"
    summary = status.experiment_summary(table).iloc[0]
    assert (summary["runs"], summary["complete"], summary["running"], summary["to_go"]) == (3, 1, 0, 2)
    assert summary["failed"] == 1 and summary["not started"] == 1
    assert summary["spent_core_h"] == pytest.approx(200.0 / 3600)  # the failed run's files time nothing
    assert summary["left_core_h"] == pytest.approx(table["left_core_s"].sum() / 3600) and summary["left_core_h"] > 0
    text = status.format_summary(status.experiment_summary(table))
    assert "online_200k [smoke]: 3 runs: 1 complete, 0 running, 2 to go (1 failed, 1 not started)" in text


def test_a_follower_is_charged_only_its_own_time(tmp_path, plan):
    """A control's counters carry on from its twin's at the switch: the time it spent is its
    counters less those (kept as ``inherited_counters``), running or complete."""
    odt, control, _ = plan
    _complete(tmp_path, odt, 60, 310, 3.0, cpu=200.0, wall=230.0)
    inherited = {"wall_time": 30.0, "cpu_time": 25.0}
    d = _started(tmp_path, control, [_row("online", 50, 100, 2.5)])
    _checkpoint(d, 55, 150, wall=130.0, cpu=105.0, pretraining_from=odt.run_id, inherited=inherited)
    entries = status.plan_entries(tmp_path, ["online_200k"], "smoke", 1)
    row = _by_method(status.status_table(tmp_path, entries))["odt-control-matched"]
    assert (row["wall_s"], row["cpu_s"], row["spent_core_s"]) == (100.0, 80.0, 80.0)
    _complete(tmp_path, control, 60, 300, 2.0, cpu=185.0, wall=210.0, pretraining_from=odt.run_id,
              inherited_counters=inherited)
    row = _by_method(status.status_table(tmp_path, entries))["odt-control-matched"]
    assert (row["wall_s"], row["cpu_s"], row["spent_core_s"]) == (180.0, 160.0, 160.0)


def test_a_run_that_shares_pretraining_waits_on_the_live_run_computing_it(tmp_path):
    leader, follower, later = (RunSpec("t", "odt", "hopper-medium", 0, "smoke"),
                               RunSpec("t", "odt-control", "hopper-medium", 0, "smoke"),
                               RunSpec("u", "odt-control", "hopper-medium", 0, "smoke", (("online.g_online", 3600.0),)))
    lead = _started(tmp_path, leader, [_row("pretrain", 20, 0, 1.0)])
    waits = _started(tmp_path, follower)  # holds its lock, has written nothing: it waits on the key's lock
    entries = status.disk_entries(tmp_path) + [status.Entry(later, rec.run_dir(tmp_path, later))]
    with _held(lead), _held(waits):
        table = status.status_table(tmp_path, entries)
    by_id = {r["run_id"]: r for _, r in table.iterrows()}
    assert by_id[leader.run_id]["state"] == "running" and by_id[leader.run_id]["phase"] == "pretrain"
    for spec in (follower, later):  # held and waiting, or not started while its leader pretrains
        assert (by_id[spec.run_id]["state"], by_id[spec.run_id]["waiting_on"]) == ("waiting", "pretraining")
        assert leader.run_id in by_id[spec.run_id]["note"]
    # priced by the cost model (no complete runs to measure here) without the pretraining it takes from its leader
    cfg = job_mod.spec_config(later)
    assert by_id[later.run_id]["left_from"] == "model"
    assert by_id[later.run_id]["left_core_s"] == pytest.approx(launch_mod.model_seconds(later.method, cfg, later.dataset, follower=True))
    assert by_id[later.run_id]["left_core_s"] < launch_mod.model_seconds(later.method, cfg, later.dataset)
    # both just started, neither has evaluated: the one whose attempt started first holds the key's lock
    rec.write_curve(lead / rec.CURVE, [])
    rec.write_json(lead / rec.ENVIRONMENT, {"attempts": [{"torch_threads": 1, "time": "2026-01-01T00:00:00Z"}]})
    rec.write_json(waits / rec.ENVIRONMENT, {"attempts": [{"torch_threads": 1, "time": "2026-01-01T00:00:04Z"}]})
    with _held(lead), _held(waits):
        states = dict(zip(*map(status.status_table(tmp_path, entries).get, ("run_id", "state")), strict=True))
    assert (states[leader.run_id], states[follower.run_id]) == ("running", "waiting")
    with _held(lead):  # the follower's process has gone: it stopped before writing anything
        table = status.status_table(tmp_path, entries)
    assert {r["run_id"]: r["state"] for _, r in table.iterrows()}[follower.run_id] == "stopped"
    table = status.status_table(tmp_path, entries)  # nobody live: the leader stopped, the others not started
    assert dict(zip(table["run_id"], table["state"], strict=True)) == {
        leader.run_id: "stopped", follower.run_id: "stopped", later.run_id: "not started"}


def test_pace_is_the_work_between_the_two_newest_checkpoints():
    budget = rp.Budget(pretrain_updates=100, online_samples=1000)
    assert rp.work_fraction(50, 0, budget, 0.2) == pytest.approx(0.1)
    assert rp.work_fraction(150, 200, budget, 0.2) == pytest.approx(0.36)
    assert rp.work_fraction(150, 2000, budget, 0.2) == 1.0
    a = rp.Checkpoint(Path("a"), 0.0, {"updates": 150, "online_samples": 200, "wall_time": 100.0, "cpu_time": 50.0}, None)
    b = rp.Checkpoint(Path("b"), 0.0, {"updates": 200, "online_samples": 400, "wall_time": 180.0, "cpu_time": 90.0}, None)
    p = rp.Progress("online", 200, 400, True, checkpoint=b, previous=a)
    pace = rp.own_pace(p, budget, 0.2)  # 0.16 of the work in 80 s; 0.48 left
    assert pace.wall_left_s == pytest.approx(240.0) and pace.cpu_left_s == pytest.approx(120.0)
    alone = rp.own_pace(rp.Progress("online", 200, 400, True, checkpoint=b), budget, 0.2)
    assert alone.wall_left_s == pytest.approx(180.0 / 0.52 * 0.48) and alone.cpu_left_s == pytest.approx(90.0 / 0.52 * 0.48)
    assert rp.own_pace(rp.Progress("online", 200, 400, True), budget, 0.2) is None
    matched_budget = rp.Budget(pretrain_updates=100, online_samples=1000, online_updates=400)  # stops on updates
    assert rp.work_fraction(300, 100, matched_budget, 0.5) == pytest.approx(0.75)
    assert rp.work_fraction(30, 0, rp.Budget(pretrain_updates=100), 0.0) == pytest.approx(0.3)  # offline only
    assert rp.work_fraction(0, 250, rp.Budget(online_samples=1000), 0.0) == pytest.approx(0.25)  # SAC


def test_budgets_of_each_config_layout():
    spec = RunSpec("t", "odt", "hopper-medium", 0, "smoke")
    odt = job_mod.config_dict(job_mod.spec_config(spec))
    assert rp.budget_of(odt) == rp.Budget(odt["pretrain_updates"], odt["online"]["online_samples"], 0)
    assert rp.budget_of({"odt": odt}) == rp.budget_of(odt)  # official-odt carries the odt config
    iql = job_mod.config_dict(job_mod.spec_config(RunSpec("t", "iql", "hopper-medium", 0, "smoke")))
    assert rp.budget_of(iql) == rp.Budget(iql["offline_updates"], iql["online_samples"], 0)
    sac = job_mod.config_dict(job_mod.spec_config(RunSpec("t", "sac", "hopper-medium", 0, "smoke")))
    assert rp.budget_of(sac) == rp.Budget(0, sac["online_samples"], 0)
    bc = job_mod.config_dict(job_mod.spec_config(RunSpec("t", "bc", "hopper-medium", 0, "smoke")))
    assert rp.budget_of(bc) == rp.Budget(bc["updates"], 0, 0)  # offline only: a fresh run has all of it left
    assert rp.work_fraction(0, 0, rp.budget_of(bc), 1.0) == 0.0
    assert not rp.budget_of(job_mod.config_dict(job_mod.spec_config(RunSpec("t", "dt", "hopper-medium", 0, "smoke")))).has_online
    assert rp.budget_of(_config(spec, online_updates=70)).online_updates == 70
    assert rp.budget_of(None) == rp.Budget()


def test_the_view_writes_nothing_under_the_results_root(tmp_path, plan, capsys):
    odt, _, iql = plan
    d = _started(tmp_path, odt, [_row("online", 50, 100, 2.5)])
    _checkpoint(d, 55, 150, wall=160.0, cpu=140.0)
    _complete(tmp_path, iql, 90, 300, 5.0, cpu=10.0, wall=12.0)
    before = _snapshot(tmp_path)
    with _held(d):
        assert status.main(["--results", str(tmp_path), "online_200k", "--preset", "smoke", "--seeds", "1"]) == 0
    assert status.main(["--results", str(tmp_path)]) == 0
    assert _snapshot(tmp_path) == before
    out = capsys.readouterr().out
    assert "running" in out and "stopped" in out and "waiting (twin)" in out and "150/300" in out


def test_cli_names_bad_input_and_its_help_says_when_to_run_it(tmp_path, capsys):
    assert status.main(["--results", str(tmp_path), "no_such_experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert status.main(["--results", str(tmp_path), "--preset", "huge"]) == 2
    with pytest.raises(SystemExit):
        status.main(["--help"])
    assert "preempted Slurm array" in capsys.readouterr().out
    assert status.main(["--results", str(tmp_path / "nothing")]) == 0  # an empty root is no error
    assert "no runs" in capsys.readouterr().out


def test_the_committed_results_are_all_complete():
    root = REPO / "results"
    if not any(rec.iter_run_dirs(root)):
        pytest.skip("no committed results in this checkout")
    table = status.status_table(root, status.disk_entries(root))
    assert set(table["state"]) == {"complete"} and (table["left_core_s"] == 0).all()
    summary = status.experiment_summary(table)
    assert (summary["to_go"] == 0).all() and (summary["spent_core_h"] > 0).all()
    assert summary["runs"].sum() == len(table)


# ----- real runs ------------------------------------------------------------------------------
def test_a_smoke_run_stopped_part_way_shows_its_checkpoint(tmp_path, monkeypatch):
    spec = RunSpec("t", "odt", "hopper-medium", 0, "smoke")
    real, calls = rec.write_curve, {"n": 0}

    def dies_on_the_fifth_row(path, rows):
        calls["n"] += 1
        if calls["n"] == 6:  # the first write is the empty curve
            raise RuntimeError("simulated crash")
        real(path, rows)

    monkeypatch.setattr(rec, "write_curve", dies_on_the_fifth_row)
    with pytest.raises(RuntimeError, match="simulated crash"):
        job_mod.run_one(spec, tmp_path, threads=1)
    monkeypatch.setattr(rec, "write_curve", real)
    d = rec.run_dir(tmp_path, spec)
    (d / rec.RECORD).unlink()  # as if killed rather than failed: partial
    row = status.status_table(tmp_path, status.disk_entries(tmp_path)).iloc[0]
    ckpt = rp.latest_checkpoint(d)
    assert row["state"] == "stopped" and ckpt is not None
    assert row["updates"] == max(ckpt.counters["updates"], rec.last_curve_row(d)["updates"])
    assert row["wall_s"] == ckpt.counters["wall_time"] > 0 and row["cpu_s"] == ckpt.counters["cpu_time"] > 0
    assert row["score"] == rec.last_curve_row(d)["score_mean"] and row["left_core_s"] > 0


LIVE = re.compile(r"odt hopper-medium s0: (pretrain|online) [\d,]+/[\d,]+ (updates|samples).* \(\d+%\), "
                  r"score -?\d+\.\d at [\d,]+ samples")


def test_a_smoke_launch_prints_each_running_runs_phase_progress_and_score(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(launch_mod.scheduler, "LIVE_EVERY_S", 0.05)
    args = ["table1", "--preset", "smoke", "--seeds", "1", "--datasets", "hopper-medium", "--methods", "odt",
            "--executor", "debug", "--results", str(tmp_path / "r"), "--tables-dir", str(tmp_path / "t")]
    assert run_cli.main(args) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if LIVE.search(line)]
    assert lines, "no live line for the running run"
    (run,) = rec.iter_run_dirs(tmp_path / "r")
    evaluations = [r for r in rec.read_curve(run / rec.CURVE) if r["phase"] in ("pretrain", "online")]
    assert len(lines) <= len(evaluations)  # a line per new evaluation, not per look
    shown = {int(m.group(1).replace(",", "")) for m in map(re.compile(r"score \S+ at ([\d,]+) samples").search, lines)}
    assert shown <= {r["online_samples"] for r in evaluations}
    assert run_cli.main([*args[:-4], "--results", str(tmp_path / "q"), "--tables-dir", str(tmp_path / "u"),
                         "--quiet"]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if LIVE.search(line)]


def test_live_lines_come_once_per_evaluation(tmp_path):
    spec = RunSpec("t", "odt", "hopper-medium", 0, "smoke")
    d = _started(tmp_path, spec)
    written: list[str] = []
    live = rp.LiveProgress(tmp_path, lambda: [spec], written.append, lambda s: 0.5)
    live.poll()
    assert written == []  # started, no evaluation yet
    rec.write_curve(d / rec.CURVE, [_row("pretrain", 20, 0, 1.25)])
    live.poll()
    live.poll()
    assert len(written) == 1 and "pretrain 20/40 updates (25%), score 1.2 at 0 samples" in written[0]
    rec.write_curve(d / rec.CURVE, [_row("pretrain", 20, 0, 1.25), _row("online", 45, 150, 2.0)])
    live.poll()
    assert len(written) == 2 and "online 150/300 samples, 45 updates (75%), score 2.0 at 150 samples" in written[1]


def test_a_recorded_study_launch_is_planned_as_it_was_asked(tmp_path):
    """A launch started with --methods/--datasets plans those runs only; --seeds to status, or no
    recorded launch, plans the experiment in full."""
    logs = tmp_path / "_logs"
    logs.mkdir()
    (logs / "study-table1.args").write_text("--preset\ncpu\n--methods\nbc\n--seeds\n2\n--datasets\nhopper-medium\n"
                                             "--parallel\n1\n")
    launched = status.plan_entries(tmp_path, ["table1"], launches=logs)
    assert sorted((e.spec.method, e.spec.dataset, e.spec.seed) for e in launched) == [
        ("bc", "hopper-medium", 0), ("bc", "hopper-medium", 1)]
    assert {e.spec.preset for e in launched} == {"cpu"}
    full = len(expand("table1", "cpu"))
    assert len(status.plan_entries(tmp_path, ["table1"], preset="cpu")) == full
    assert len(status.plan_entries(tmp_path, ["table1"], preset="cpu", seeds=10, launches=logs)) == full
    assert status.launch_args(logs, "online_200k") is None


def test_two_launches_of_one_experiment_are_each_planned_as_asked(tmp_path):
    """EXPERIMENT@LABEL is a second launch of EXPERIMENT: the plan is the union of both launches'
    runs, each run once; an unknown experiment before the @ is refused by the CLI."""
    logs = tmp_path / "_logs"
    logs.mkdir()
    (logs / "study-table1.args").write_text("--preset\ncpu\n--methods\nodt\n--datasets\nwalker2d-medium\n"
                                             "--seeds\n3\n--only-seeds\n2\n")
    (logs / "study-table1@bc.args").write_text("--preset\ncpu\n--methods\nbc\n--seeds\n2\n--datasets\n"
                                                "hopper-medium\n")
    entries = status.plan_entries(tmp_path, ["table1", "table1@bc", "table1@bc"], launches=logs)
    assert sorted((e.spec.experiment, e.spec.method, e.spec.dataset, e.spec.seed) for e in entries) == [
        ("table1", "bc", "hopper-medium", 0), ("table1", "bc", "hopper-medium", 1),
        ("table1", "odt", "walker2d-medium", 2)]
    assert status.launch_experiment("table1@bc") == "table1" and status.launch_experiment("table1") == "table1"
    assert status.main(["--results", str(tmp_path), "nosuch@bc"]) == 2


def test_a_run_whose_config_does_not_build_says_why_its_time_is_unknown(tmp_path, monkeypatch):
    monkeypatch.delenv("ODT_CORL_SRC", raising=False)  # corl-iql builds its config from CORL's files
    entries = status.plan_entries(tmp_path, ["corl_iql"], "smoke", 2)
    table = status.status_table(tmp_path, entries)
    corl = table[table["method"] == "corl-iql"]
    assert len(corl) >= 2 and set(corl["left_from"]) == {"unknown"}
    assert all("ODT_CORL_SRC" in n for n in corl["note"])
    text = status.format_table(table)
    # one note line per dataset for its seeds, not one per run
    for dataset in set(corl["dataset"]):
        lines = [ln for ln in text.splitlines() if f"corl-iql {dataset} s0,s1 " in ln]
        assert len(lines) == 1 and "ODT_CORL_SRC is not set" in lines[0]
