"""``python -m benchmarks.status``: every run under a results root, finished or not, and what is left.

Run it after a preempted Slurm array, a stopped machine or a sitting that ended mid-study: it says
which runs are complete, which a live process is running (or holds waiting: an update-matched
control on its ODT twin, a run that shares another's pretraining on that run), which stopped part
way (they resume from their checkpoints when the same `python -m benchmarks.run` command is
launched again), which failed and which have not started; per run its phase, updates and online
samples against its budget, last evaluation score (normalised) and at how many online samples,
the age of its newest checkpoint, the wall and CPU time its counters hold, and the time left,
then one line per experiment (runs complete / running / to go, core-hours spent and left).

Examples::

    python -m benchmarks.status                                   # every run under results/ (or $ODT_RESULTS)
    python -m benchmarks.status --results ~/odt-runs online_200k  # the whole plan, not-started runs too
    python -m benchmarks.status --summary                         # one line per experiment

Without EXPERIMENT it lists the runs on disk; with one it lists that experiment's whole plan
(``--preset``; default the presets it has on disk, else those of the results root, else cpu;
``--seeds`` as for the launcher)
beside any other run of it on disk. Time left is the run's own pace where a checkpoint has timed
part of it (its counters' seconds over the work done then), else its config's budget: the median
of complete runs of the same computation in the results root, else the launcher's cost model,
scaled by what complete runs of its method and domain took against it. A run that started from
another run's pretraining carries that run's seconds up to the switch in its counters, and so
here. Read-only: it writes nothing under the results root (it probes each run's lock, as a
launcher does, to tell a live run from a stopped one).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks import launch, measured_cost
from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks import run_progress as rp
from benchmarks.experiments import EXPERIMENTS, RunSpec, expand
from benchmarks.job import config_dict, spec_config
from benchmarks.methods import METHODS
from benchmarks.sharing import pretraining as shared
from rlbase.config import ConfigError
from rlbase.presets import PRESETS

STATES = ("complete", "running", "waiting", "stopped", "failed", "not started")
DEFAULT_PRESET = "cpu"  # a named experiment with nothing on disk is planned at the CPU preset unless told


@dataclass(frozen=True)
class Entry:
    """One run to report: what it is and where its directory is (or would be)."""
    spec: RunSpec
    directory: Path


def disk_entries(root: Path | str, preset: str | None = None, experiments: Sequence[str] = (),
                 warn: Callable[[str], None] | None = None) -> list[Entry]:
    """Every run directory under ``root`` (of ``preset`` and ``experiments`` where given) whose
    spec.json reads; others are reported through ``warn`` and left out."""
    out = []
    for directory in rec.iter_run_dirs(root, preset):
        if directory.parent.parent.name not in PRESETS or (experiments and directory.parent.name not in experiments):
            continue
        try:
            out.append(Entry(RunSpec.from_dict(rec.read_spec(directory)), directory))
        except (rec.CorruptRecord, KeyError, TypeError, ValueError) as exc:
            if warn is not None:
                warn(f"{directory}: left out ({exc})")
    return out


def launch_experiment(launch: str) -> str:
    """The experiment a study launch runs: its name up to an ``@`` (``table1@bc`` runs ``table1``;
    ``scripts/study.sh`` names a second launch of one experiment EXPERIMENT@LABEL)."""
    return launch.split("@", 1)[0]


def launch_args(launches: Path | str | None, launch: str) -> list[str] | None:
    """The options a study launch was last started with (``scripts/study.sh start`` writes them to
    ``<launches>/study-LAUNCH.args``, one per line); None where none is recorded."""
    if launches is None:
        return None
    path = Path(launches) / f"study-{launch}.args"
    return path.read_text().splitlines() if path.is_file() else None


def launch_plan(experiment: str, options: Sequence[str], preset: str | None = None) -> tuple[str | None, list[RunSpec]]:
    """The runs ``python -m benchmarks.run EXPERIMENT OPTIONS`` plans (its --preset, --seeds,
    --only-seeds, --datasets, --methods, --variants and --set), at ``preset`` where given (else the
    launch's own; None: neither says). Unknown options are ignored: they do not change the plan."""
    from benchmarks import run
    args, _ = run.build_parser().parse_known_args([experiment, *options])
    chosen = preset or args.preset
    return chosen, (run.plan(args, chosen, check=False) if chosen else [])  # a view: configs are not built


def plan_entries(root: Path | str, experiments: Sequence[str], preset: str | None = None,
                 seeds: int | None = None, warn: Callable[[str], None] | None = None,
                 launches: Path | str | None = None) -> list[Entry]:
    """The named experiments' plans (at ``preset``, else the presets each has on disk, else those
    of the results root, else ``DEFAULT_PRESET``) and every other run of theirs on disk, each once.
    An experiment with a recorded study launch (``launch_args`` under ``launches``) is planned as
    that launch asked (e.g. only the methods and datasets it was started with), not in full; a name
    EXPERIMENT@LABEL is one of several launches of EXPERIMENT, each planned as it asked."""
    out: list[Entry] = []
    for name in experiments:
        experiment = launch_experiment(name)
        options = launch_args(launches, name) if seeds is None else None  # --seeds asks for another plan
        launched, launch_specs = launch_plan(experiment, options, preset) if options is not None else (None, [])
        presets = [preset or launched] if (preset or launched) else (
            rec.presets_on_disk(root, experiment) or rec.presets_on_disk(root) or [DEFAULT_PRESET])
        for p in presets:
            specs = (launch_specs if options is not None and launched == p
                     else expand(experiment, p, seeds, registered=list(METHODS), warn=warn))
            seen = {e.directory for e in out}
            out += [e for e in (Entry(s, rec.run_dir(root, s)) for s in specs) if e.directory not in seen]
            seen = {e.directory for e in out}
            out += [e for e in disk_entries(root, p, [experiment], warn) if e.directory not in seen]
    return out


@dataclass
class RunRow:
    """One run's line of the table (``asdict`` gives the tidy row)."""
    preset: str
    experiment: str
    method: str
    dataset: str
    seed: int
    variant: str
    run_id: str
    state: str  # one of STATES
    waiting_on: str  # "twin" | "pretraining" | "" (what a waiting run waits for)
    note: str  # the twin or pretraining it waits on, or a failed run's error
    phase: str  # "pretrain" | "online" | "done" | ""
    updates: int
    pretrain_updates: int  # its budget
    online_samples: int
    online_budget: int  # online samples asked (0: none)
    online_updates_budget: int  # an update-matched run's online updates (0: none)
    score: float | None
    score_samples: int | None
    checkpoint_age_s: float | None
    wall_s: float | None
    cpu_s: float | None
    spent_core_s: float  # CPU core-seconds this run has cost so far (0 where nothing says)
    left_s: float | None  # wall seconds left
    left_core_s: float | None  # core-seconds left
    left_from: str  # "pace" | "measured" | "calibrated" | "model" | "" (complete) | "unknown"


@dataclass
class _Run:
    """What one run's files say, gathered before its state is decided."""
    entry: Entry
    status: str  # records.status_of
    held: bool
    record: dict | None
    config: dict | None  # as it ran (config.json), else as the code builds it
    built: Any  # the config object the code builds for the spec (None: it does not build)
    unbuilt: str  # why it does not build (the ConfigError's message), "" where it does
    budget: rp.Budget
    progress: rp.Progress
    cell: tuple | None  # sharing.pretraining cell (group, dataset, seed); None: never shares
    threads: int
    started_at: str  # when its last attempt started (environment.json), "" if never

    @property
    def has_progress(self) -> bool:
        return self.progress.evaluations > 0 or self.progress.checkpoint is not None


def _built(spec: RunSpec) -> tuple[Any, str]:
    """The config the code builds for ``spec``, or None and why not (a method whose external
    source is not configured, say: its time left is then unknown, and the note says why)."""
    try:
        return spec_config(spec), ""
    except ConfigError as e:
        return None, str(e)


def _gather(entry: Entry, cache: dict) -> _Run:
    d, spec = entry.directory, entry.spec
    status = rec.status_of(d)
    record = rec.read_record(d)
    built, unbuilt = _built(spec)
    stored = rp.stored_budget(d)
    config = rec.read_json(d / rec.CONFIG) if stored is not None else (config_dict(built) if built is not None else None)
    budget = rp.budget_of(config)
    held = status != "complete" and rp.lock_held(d)
    progress = rp.read_progress(d, budget, cache, with_checkpoint=status != "complete")
    group = shared.pretraining_group(spec.method, config_dict(built) if built is not None else config)
    attempts = _attempts(d)
    threads = max(1, int(attempts[-1].get("torch_threads") or 1)) if attempts else 1
    return _Run(entry, status, held, record, config, built, unbuilt, budget, progress,
                (group, spec.dataset, spec.seed) if group is not None else None, threads,
                str(attempts[-1].get("time") or "") if attempts else "")


def _attempts(directory: Path) -> list[dict]:
    try:
        return rec.read_attempts(directory)
    except (OSError, ValueError):
        return []


def live_pretraining(root: Path | str, runs: Sequence[_Run], cache: dict) -> dict[tuple, str]:
    """Sharing cell -> the run id of the live run pretraining it now, over every run under ``root``
    (a leader can be another experiment's). Of several live runs of one cell in pretraining, the
    leader is one that has evaluated or checkpointed (the others wait on its lock without writing),
    else the one whose attempt started first (it took the lock)."""
    candidates = [r for r in runs if r.held and r.cell and r.progress.phase == "pretrain"]
    known = {r.entry.directory for r in runs}
    for entry in disk_entries(root):
        if entry.directory in known or not (entry.directory / ".lock").exists() or not rp.lock_held(entry.directory):
            continue
        run = _gather(entry, cache)
        if run.cell and run.progress.phase == "pretrain":
            candidates.append(run)
    out: dict[tuple, _Run] = {}
    for run in candidates:
        best = out.get(run.cell)
        if best is None or (run.has_progress, best.started_at) > (best.has_progress, run.started_at):
            out[run.cell] = run
    return {cell: run.entry.spec.run_id for cell, run in out.items()}


def _twin_unfinished(run: _Run) -> str | None:
    """The run id of an update-matched run's twin when that twin is not complete."""
    twin = matched.twin_spec(run.entry.spec)
    if twin is None or rec.is_complete(run.entry.directory.parent / twin.run_id):
        return None
    return twin.run_id


def state_of(run: _Run, leaders: dict[tuple, str]) -> tuple[str, str, str]:
    """(state, waiting_on, note). A held run is running unless it has written nothing yet while
    another live run pretrains its sharing cell (it waits on that run's lock); a run not held is
    complete, failed, waiting (a matched control whose twin is not complete, or a run whose
    cell a live run is pretraining now: the launcher starts it after), stopped or not started."""
    spec = run.entry.spec
    leader = leaders.get(run.cell) if run.cell else None
    leader = None if leader == spec.run_id else leader
    if run.status == "complete":
        return "complete", "", ""
    if run.held:
        if leader and not run.has_progress:
            return "waiting", "pretraining", f"on {leader} pretraining"
        return "running", "", ""
    if run.status in ("failed", "diverged"):
        error = str((run.record or {}).get("error") or run.status).strip().splitlines()
        return "failed", "", f"{run.status}: {error[-1] if error else ''}"[:200]
    if (twin := _twin_unfinished(run)) is not None:
        return "waiting", "twin", f"on its twin {twin}"
    if run.status == "partial":
        return "stopped", "", ""
    if leader:
        return "waiting", "pretraining", f"on {leader} pretraining"
    return "not started", "", ""


@dataclass
class Pricing:
    """What a run's config budget costs where it has no pace of its own: complete runs of the
    same computation (``measured_cost``), the launcher's calibration and its cost model."""
    timed: dict
    ratios: dict
    cpu: str | None

    @classmethod
    def of(cls, root: Path | str, preset: str, cpu: str | None) -> Pricing:
        timed = measured_cost.timed_runs(root, preset)
        return cls(timed, launch.calibration(timed, cpu) if timed else {}, cpu)

    def seconds(self, spec: RunSpec, cfg: Any, follower: bool) -> tuple[float, str]:
        same = measured_cost.matching(self.timed, spec, cfg, follower, self.cpu) if self.timed else []
        if same:
            return measured_cost.median_core_seconds(same), "measured"
        model = launch.model_seconds(spec.method, cfg, spec.dataset, follower)
        ratio = self.ratios.get((spec.method, launch.domain_of(spec.dataset)))
        return (model * ratio, "calibrated") if ratio else (model, "model")


def _spent(run: _Run) -> tuple[float | None, float | None, float]:
    """(wall seconds, CPU seconds, core-seconds spent) from the record or the newest checkpoint;
    for a run that started from another's pretraining, its own part where the counters the other
    run left it are known (``inherited_counters``)."""
    if run.status == "complete" and run.record is not None:
        counters, inherited = run.record.get("counters") or {}, run.record.get("inherited_counters") or {}
        fallback = rec.core_seconds(run.record, _attempts(run.entry.directory))
    else:
        ckpt = run.progress.checkpoint
        counters = ckpt.counters if ckpt is not None else {}
        inherited = (ckpt.inherited_counters if ckpt is not None else None) or {}
        fallback = None
    wall, cpu = (_own(counters.get(k), inherited.get(k)) for k in rec.TIME_COUNTERS)
    cpu = cpu if cpu is not None and cpu > 0 else None
    spent = cpu if cpu is not None else fallback if fallback is not None else (wall or 0.0) * run.threads
    return wall, cpu, spent


def _own(total: Any, inherited: Any) -> float | None:
    """A time counter less what another run's pretraining put in it (None: no reading)."""
    if not isinstance(total, (int, float)):
        return None
    return float(total) - (float(inherited) if isinstance(inherited, (int, float)) else 0.0)


def _left(run: _Run, state: str, follower: bool, pricing: Pricing | None) -> tuple[float | None, float | None, str]:
    """(wall seconds left, core-seconds left, where from)."""
    if state == "complete":
        return 0.0, 0.0, ""
    cfg = run.built
    share = launch.pretraining_share(run.entry.spec.method, cfg, run.entry.spec.dataset) if cfg is not None else 0.0
    pace = rp.own_pace(run.progress, run.budget, share)
    if pace is not None:
        return pace.wall_left_s, pace.cpu_left_s if pace.cpu_left_s is not None else pace.wall_left_s * run.threads, "pace"
    if cfg is None or pricing is None:
        return None, None, "unknown"
    seconds, source = pricing.seconds(run.entry.spec, cfg, follower)
    done = rp.progress_fraction(run.progress, run.budget, share)
    if follower and share < 1:  # priced without its pretraining: only its online part is left
        done = max(0.0, done - share) / (1 - share)
    core = seconds * max(0.0, 1.0 - done)
    return core / run.threads, core, source


def status_table(root: Path | str, entries: Sequence[Entry], now: float | None = None,
                 cpu: str | None = None) -> pd.DataFrame:
    """One tidy row per run of ``entries`` (columns: the fields of :class:`RunRow`)."""
    now = time.time() if now is None else now
    cache: dict = {}
    runs = [_gather(e, cache) for e in entries]
    leaders = live_pretraining(root, runs, cache)
    states = [state_of(r, leaders) for r in runs]
    pricing: dict[str, Pricing] = {}
    claimed = {r.cell for r, (s, _, _) in zip(runs, states, strict=True)
               if r.cell and s in ("complete", "running", "stopped", "failed")}
    rows = []
    for run, (state, waiting_on, note) in zip(runs, states, strict=True):
        spec = run.entry.spec
        follower = bool(run.progress.checkpoint and run.progress.checkpoint.pretraining_from) or (
            waiting_on == "pretraining") or (not run.progress.started and run.cell in claimed)
        if run.cell:
            claimed.add(run.cell)  # a later run of its cell starts from its pretraining
        if state != "complete" and spec.preset not in pricing:
            pricing[spec.preset] = Pricing.of(root, spec.preset, cpu)
        wall, cpu_s, spent = _spent(run)
        left_s, left_core, left_from = _left(run, state, follower, pricing.get(spec.preset))
        if left_from == "unknown" and run.unbuilt and not note:
            note = f"time left unknown: {run.unbuilt}"
        rows.append(asdict(_row(run, state, waiting_on, note, now, wall, cpu_s, spent, left_s, left_core, left_from)))
    frame = pd.DataFrame(rows, columns=[f for f in RunRow.__dataclass_fields__])
    return frame.sort_values(["preset", "experiment", "dataset", "method", "variant", "seed"], kind="stable",
                             ignore_index=True)


def _row(run: _Run, state: str, waiting_on: str, note: str, now: float, wall: float | None, cpu: float | None,
         spent: float, left_s: float | None, left_core: float | None, left_from: str) -> RunRow:
    spec, p, b = run.entry.spec, run.progress, run.budget
    updates, samples, score, at = p.updates, p.online_samples, p.score, p.score_samples
    if state == "complete" and run.record is not None:
        counters = run.record.get("counters") or {}
        final = run.record.get("final") or {}
        updates = int(counters.get("updates", final.get("updates", updates)) or 0)
        samples = int(counters.get("online_samples", final.get("online_samples", samples)) or 0)
        score = run.record.get("final_score", score)
        at = int(final.get("online_samples") or 0) if final else at
    ckpt = p.checkpoint
    phase = "done" if state == "complete" else p.phase if state != "not started" else ""
    return RunRow(
        spec.preset, spec.experiment, spec.method, spec.dataset, spec.seed, spec.variant, spec.run_id,
        state, waiting_on, note, phase, updates, b.pretrain_updates, samples, b.online_samples, b.online_updates,
        score, at, None if ckpt is None or state == "complete" else max(0.0, now - ckpt.mtime),
        wall, cpu, spent, left_s, left_core, left_from)


def experiment_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (preset, experiment): runs, how many in each state, to go (neither complete
    nor running), core-hours spent and left (over the runs whose time left is known)."""
    out = []
    for (preset, experiment), g in table.groupby(["preset", "experiment"], sort=True):
        counts = {s: int((g["state"] == s).sum()) for s in STATES}
        known = g["left_core_s"].notna()
        out.append({"preset": preset, "experiment": experiment, "runs": len(g), **counts,
                    "to_go": len(g) - counts["complete"] - counts["running"],
                    "spent_core_h": float(g["spent_core_s"].sum()) / 3600,
                    "left_core_h": float(g.loc[known, "left_core_s"].sum()) / 3600,
                    "left_unknown": int((~known).sum())})
    return pd.DataFrame(out, columns=["preset", "experiment", "runs", *STATES, "to_go", "spent_core_h",
                                      "left_core_h", "left_unknown"])


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------
def _count_against(done: int, budget: int, show_budget: bool) -> str:
    return rp.against(done, budget) if show_budget else f"{done:,}"


def _display(row: pd.Series) -> dict[str, str]:
    started = row["state"] != "not started" and not (row["state"] == "waiting" and not row["phase"])
    state = f"waiting ({row['waiting_on']})" if row["state"] == "waiting" else row["state"]
    matched_run = row["online_updates_budget"] > 0
    online_updates = max(0, int(row["updates"]) - int(row["pretrain_updates"]))
    score = row["score"]
    return {
        "experiment": row["experiment"], "method": row["method"], "dataset": row["dataset"],
        "seed": str(row["seed"]), "variant": row["variant"], "state": state, "phase": row["phase"] or "-",
        "updates": (_count_against(int(row["updates"]), int(row["pretrain_updates"]), row["phase"] == "pretrain")
                    if started else "-"),
        "samples": (rp.against(int(row["online_samples"]), int(row["online_budget"])) if started and not matched_run
                    else f"{int(row['online_samples']):,} ({rp.against(online_updates, int(row['online_updates_budget']))} upd)"
                    if started else "-"),
        "score": "-" if score is None or pd.isna(score) else f"{score:.1f}",
        "at": "-" if row["score_samples"] is None or pd.isna(row["score_samples"]) else f"{int(row['score_samples']):,}",
        "ckpt age": rp.format_duration(_num(row["checkpoint_age_s"])),
        "wall": rp.format_duration(_num(row["wall_s"])), "cpu": rp.format_duration(_num(row["cpu_s"])),
        "left": "-" if row["state"] == "complete" else rp.format_duration(_num(row["left_s"])),
        "from": row["left_from"] or "-",
    }


def _num(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def format_table(table: pd.DataFrame) -> str:
    """The run table as aligned text, then the notes of waiting and failed runs."""
    if table.empty:
        return "no runs"
    shown = pd.DataFrame([_display(r) for _, r in table.iterrows()])
    text = shown.to_string(index=False)
    seeds: dict[tuple, list[str]] = {}  # runs that differ only by seed share one note line
    for _, r in table.iterrows():
        if r["note"]:
            seeds.setdefault((r["method"], r["dataset"], r["variant"], r["state"], r["note"]), []).append(f"s{r['seed']}")
    notes = [f"  {m} {d} {','.join(s)} [{v}] {state}: {note}" for (m, d, v, state, note), s in seeds.items()]
    return text + ("\nnotes:\n" + "\n".join(notes) if notes else "")


def format_summary(summary: pd.DataFrame) -> str:
    lines = []
    for _, s in summary.iterrows():
        rest = ", ".join(f"{s[k]} {k}" for k in ("waiting", "stopped", "failed", "not started") if s[k])
        unknown = f" ({s['left_unknown']} run(s) of unknown cost not counted)" if s["left_unknown"] else ""
        lines.append(f"{s['experiment']} [{s['preset']}]: {s['runs']} runs: {s['complete']} complete, "
                     f"{s['running']} running, {s['to_go']} to go{f' ({rest})' if rest else ''}; "
                     f"{s['spent_core_h']:.2f} core-hours spent, ~{s['left_core_h']:.2f} left{unknown}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.status", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help="list this experiment's whole plan (default: every run on disk); "
                        "EXPERIMENT@LABEL names one of its study launches (with --launches)")
    p.add_argument("--results", type=Path, default=rec.DEFAULT_ROOT, help="results root (default: results/ or $ODT_RESULTS)")
    p.add_argument("--preset", default=None, help=f"only this preset ({' | '.join(PRESETS)}); a named experiment's "
                                                  "plan is made at it")
    p.add_argument("--seeds", type=int, default=None, help="a named experiment's number of seeds (default: its own)")
    p.add_argument("--summary", action="store_true", help="only the line per experiment")
    p.add_argument("--launches", type=Path, default=None, metavar="DIR",
                   help="plan a named experiment as its study launch asked, where DIR holds its "
                        "study-EXPERIMENT.args or study-EXPERIMENT@LABEL.args "
                        "(scripts/study.sh status passes <results>/_logs)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warn = lambda m: print(f"warning: {m}", file=sys.stderr)  # noqa: E731
    try:
        if args.preset is not None and args.preset not in PRESETS:
            raise ConfigError(f"unknown preset {args.preset!r}; known: {', '.join(PRESETS)}")
        args.experiments = list(dict.fromkeys(args.experiments))  # each once
        unknown = [e for e in args.experiments if launch_experiment(e) not in EXPERIMENTS]
        if unknown:
            raise ConfigError(f"unknown experiment(s) {', '.join(unknown)}; known: {', '.join(EXPERIMENTS)}")
        entries = (plan_entries(args.results, args.experiments, args.preset, args.seeds, warn, args.launches)
                   if args.experiments
                   else disk_entries(args.results, args.preset, warn=warn))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from benchmarks.datasets.portable_math import cpu_model
    table = status_table(args.results, entries, cpu=cpu_model())
    print(f"results: {args.results} (read only), {time.strftime('%Y-%m-%d %H:%M %Z')}")
    if not args.summary:
        print(format_table(table))
    print(format_summary(experiment_summary(table)) or "no runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
