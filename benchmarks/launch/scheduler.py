"""Running a launch's runs: which starts next, in how many lanes, and what each job's end means.

On Slurm all pending runs of an experiment go out as one job array (``slurm_array_parallelism``
caps how many run at once); locally submitit's LocalExecutor starts one process per job and the
scheduler keeps at most ``parallel`` of them alive (LocalExecutor has no cap of its own).
Finished, failed and running jobs are shown as counts on one progress bar, with a line per
running run below it (``benchmarks.run_progress.LiveProgress``); a failed job is reported with
its log path and does not stop the others. An update-matched run (``benchmarks.matched_updates``)
reads its twin's complete record, so it starts only once its twin has ended: locally a free lane
goes to the next run that can start, on Slurm such runs go out as a second array once the first
has ended. Ctrl-C, or SIGTERM to the launcher, stops the running jobs and raises
:class:`LaunchInterrupted` naming them (each resumes from its checkpoints at the next launch).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import ConfigChanged, RunJob, check_config_unchanged
from benchmarks.launch.cost import spec_pretraining_share
from benchmarks.launch.executors import (
    CONTROLLER_LOG,
    make_executor,
    stderr_to,
    stop_job,
    terminate_as_interrupt,
)
from benchmarks.launch.options import LaunchOptions, job_threads
from benchmarks.launch.ordering import (
    held_by_live_holders,
    next_to_start,
    order_for_sharing,
    pretraining_groups,
    pretraining_waits,
    twin_failed,
    twin_unfinished,
)
from benchmarks.launch.preflight import resolve_executor
from benchmarks.run_progress import LiveProgress
from rlbase.progress import progress_bar, writes_to_log

LIVE_EVERY_S = 5.0  # seconds between two looks at the running runs' directories (the live lines)


@dataclass
class Failure:
    run_id: str
    error: str
    log: str | None


class LaunchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a launch; ``run_ids`` are the runs that were running (cancelled; each
    resumes from its newest checkpoint on the next launch)."""

    def __init__(self, run_ids: list[str]):
        super().__init__(f"interrupted {len(run_ids)} running run(s)")
        self.run_ids = run_ids


@dataclass
class LaunchReport:
    total: int = 0
    skipped: int = 0  # already complete before the launch
    done: int = 0
    failed: list[Failure] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # run ids another live launch was running: left to it
    not_started: list[Failure] = field(default_factory=list)  # update-matched runs whose twin failed here

    @property
    def ok(self) -> bool:
        return not self.failed


def held_elsewhere_error(exc: BaseException) -> bool:
    """The job found its run held by another live process (it raised RunInProgress, possibly pickled back)."""
    return "RunInProgress" in str(exc) or type(exc).__name__ == "RunInProgress"


def failure_of(root: Path, spec: RunSpec, exc: BaseException, log: str | None) -> Failure:
    """What to report of a failed run: the error its record names (else the exception's last
    line) and its log (the job's, else the one its record names)."""
    record = rec.read_record(rec.run_dir(root, spec)) or {}
    last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
    error = record.get("error") or last
    stored = rec.resolve_log(root, record.get("log"))
    return Failure(spec.run_id, error, log or (str(stored) if stored else None))


def launch(specs: Sequence[RunSpec], root: Path | str, opts: LaunchOptions | None = None,
           progress: bool = True) -> LaunchReport:
    """Run every spec that is not complete; returns what finished and what failed."""
    opts = (opts or LaunchOptions()).validate()
    root = Path(root)
    kind = resolve_executor(opts.executor)
    report, pending = plan(specs, root, opts, progress)
    if pending:
        held = [s for s in specs if s.run_id in set(report.held)]
        Scheduler(root, opts, kind, report, pending, held, progress).run()
    return report


def plan(specs: Sequence[RunSpec], root: Path, opts: LaunchOptions,
         progress: bool) -> tuple[LaunchReport, list[RunSpec]]:
    """(the report so far, the runs to start): complete runs are skipped, a complete run made
    under another config is reported as failed (never reused silently), and runs another live
    launch holds are left to it."""
    pending = [s for s in specs if not rec.is_complete(rec.run_dir(root, s))]
    report = LaunchReport(total=len(specs), skipped=len(specs) - len(pending))
    for spec in specs:
        try:
            check_config_unchanged(spec, rec.run_dir(root, spec))
        except ConfigChanged as exc:
            report.failed.append(Failure(spec.run_id, str(exc), str(rec.run_dir(root, spec))))
            if spec in pending:
                pending.remove(spec)
            else:
                report.skipped -= 1
    for spec in held_by_live_holders(root, pending, opts.holder_grace_s, say=print if progress else None):
        pending.remove(spec)  # another launch of the same experiment is running it: leave it alone
        report.held.append(spec.run_id)
    return report, pending


class Scheduler:
    """One launch's jobs from submission to their end, its progress bar and live lines.

    ``pending`` are the runs to start, ``held`` the runs another live launch holds (not ours to
    start, but a follower here waits on their pretraining). Runs go out per experiment,
    seed-major with the runs that start from another run's pretraining after their leader
    (``order_for_sharing``); on Slurm the array order is the same."""

    def __init__(self, root: Path, opts: LaunchOptions, kind: str, report: LaunchReport,
                 pending: list[RunSpec], held: list[RunSpec], progress: bool):
        self.root, self.opts, self.kind, self.report = root, opts, kind, report
        self.threads = job_threads(opts, kind)
        sharing = pretraining_groups(pending) if opts.reuse_pretraining else [None] * len(pending)
        self.groups = self._by_experiment(pending, sharing)
        self.waits = (pretraining_waits(root, pending + held, sharing + pretraining_groups(held))
                      if opts.reuse_pretraining else (lambda spec: False))
        self.running: list[tuple[RunSpec, Any]] = []
        self.unfinished = {s.run_id for s in pending}  # this launch's runs not ended: twins hold their runs back
        self.failed_here: dict[str, Failure] = {}  # this launch's failed runs: their matched runs are not started
        self.told_twin_wait = False
        self.bar = progress_bar(total=len(pending), desc="runs", unit="run", enabled=progress)
        # below the bar, each running run's phase, progress, score and time left, from its directory
        self.live = LiveProgress(root, lambda: [s for s, _ in self.running], self.bar.write, spec_pretraining_share,
                                 inplace=not writes_to_log(sys.stderr), every_s=LIVE_EVERY_S) if progress else None

    def _by_experiment(self, pending: list[RunSpec], sharing: list[str | None]) -> dict[tuple[str, str], list[RunSpec]]:
        block = self.opts.parallel if self.kind != "slurm" else self.opts.array_parallelism
        groups: dict[tuple[str, str], list[RunSpec]] = {}
        for s in order_for_sharing(pending, sharing, block):
            groups.setdefault((s.preset, s.experiment), []).append(s)
        return groups

    @property
    def lanes(self) -> int:
        """Jobs alive at once locally (debug: one, computed in this process)."""
        return 1 if self.kind == "debug" else self.opts.parallel

    def run(self) -> None:
        """Submit every group, wait for every job; on Ctrl-C stop the running ones."""
        with terminate_as_interrupt():
            try:
                if self.live is not None:
                    self.live.start()
                second_wave: list[tuple[Any, list[RunSpec], Path]] = []  # Slurm: runs whose twins the first array runs
                for (preset, experiment), group in self.groups.items():
                    folder = rec.logs_dir(self.root, preset, experiment)
                    try:
                        executor = make_executor(self.kind, folder, self.opts, name=f"odt-{experiment}")
                    except Exception as exc:  # e.g. slurm asked for on a machine without srun
                        self._submission_failed(group, exc, folder)
                        continue
                    if self.kind == "slurm":
                        second_wave += self._submit_first_array(executor, group, folder)
                    else:
                        self._run_in_lanes(executor, group, folder)
                self._wait_all()
                for executor, later, folder in second_wave:
                    self._submit_array(executor, self._without_failed_twins(later), folder)
                self._wait_all()
            except KeyboardInterrupt:
                for _, job in self.running:
                    stop_job(job, self.kind)
                raise LaunchInterrupted([spec.run_id for spec, _ in self.running]) from None
            finally:
                if self.live is not None:
                    self.live.stop()
                self.bar.close()

    # ----- Slurm: job arrays ---------------------------------------------------------------------

    def _submit_first_array(self, executor: Any, group: list[RunSpec], folder: Path) -> list[tuple[Any, list[RunSpec], Path]]:
        """One array per experiment; the update-matched runs whose twins it runs are returned
        for a second array, submitted once the first has ended."""
        later = [s for s in group if twin_unfinished(s, self.root, self.unfinished)]
        self._submit_array(executor, [s for s in group if s not in later], folder)
        return [(executor, later, folder)] if later else []

    def _submit_array(self, executor: Any, group: list[RunSpec], folder: Path) -> None:
        n = len(group)
        if n == 0:
            return
        try:
            jobs = executor.map_array(RunJob(self.opts.reuse_pretraining), group, [str(self.root)] * n,
                                      [self.threads] * n, [self.opts.loggers] * n)
        except Exception as exc:  # sbatch refused (no controller, bad partition, ...)
            self._submission_failed(group, exc, folder)
            return
        self.running.extend(zip(group, jobs, strict=True))
        self._show()

    # ----- local and debug: lanes ----------------------------------------------------------------

    def _run_in_lanes(self, executor: Any, group: list[RunSpec], folder: Path) -> None:
        """Start the group's runs as lanes free up, each time the first that can start."""
        queue = list(group)
        while queue:
            self._wait_for_lane()
            queue = self._without_failed_twins(queue)
            if not queue:
                break
            spec = self._next_ready(queue)
            if spec is None:
                continue
            queue.remove(spec)
            self._submit(executor, spec, folder)

    def _wait_for_lane(self) -> None:
        while len(self.running) >= self.lanes:
            self._collect(block=(self.kind == "debug"))
            if len(self.running) >= self.opts.parallel:
                time.sleep(self.opts.poll_s)

    def _next_ready(self, queue: list[RunSpec]) -> RunSpec | None:
        """The queued run to start now: not an update-matched run whose twin has not ended, and
        preferably not a follower whose leader still pretrains. None (after a poll) while every
        queued run waits for a twin."""
        ready = [s for s in queue if not twin_unfinished(s, self.root, self.unfinished)]
        if ready:
            return ready[next_to_start(ready, self.waits)]
        if not self.running and not self.told_twin_wait:  # the twins are another live launch's
            self.bar.write("waiting for another launch to finish the twins of the update-matched runs left")
            self.told_twin_wait = True
        self._collect(block=(self.kind == "debug"))
        time.sleep(self.opts.poll_s)
        return None

    def _submit(self, executor: Any, spec: RunSpec, folder: Path) -> None:
        try:
            with stderr_to(folder / CONTROLLER_LOG, self.kind == "local"):
                job = executor.submit(RunJob(self.opts.reuse_pretraining), spec, str(self.root), self.threads,
                                      self.opts.loggers)
            self.running.append((spec, job))
        except Exception as exc:
            self._submission_failed([spec], exc, folder)
        self._show()

    def _without_failed_twins(self, specs: list[RunSpec]) -> list[RunSpec]:
        """``specs`` less the update-matched runs whose twin failed in this launch; those are
        reported as not started (one failure shows as one, not as two)."""
        kept = []
        for spec in specs:
            if not twin_failed(spec, self.failed_here):
                kept.append(spec)
                continue
            self.unfinished.discard(spec.run_id)
            twin = self.failed_here[matched.twin_spec(spec).run_id]
            self.report.not_started.append(Failure(spec.run_id, f"not started: its twin {twin.run_id} failed", twin.log))
            self.bar.write(f"not started {spec.run_id}: its twin {twin.run_id} failed (the next launch runs both)")
            self.bar.update(1)
        return kept

    # ----- ends ----------------------------------------------------------------------------------

    def _wait_all(self) -> None:
        while self.running:
            self._collect(block=(self.kind == "debug"))
            if self.running:
                time.sleep(self.opts.poll_s)

    def _collect(self, block: bool = False) -> None:
        """Take in every job that has ended (``block``: wait for each, as a debug job computes here)."""
        for item in list(self.running):
            if block or item[1].done():
                self._take(item)

    def _take(self, item: tuple[RunSpec, Any]) -> None:
        spec, job = item
        log = str(job.paths.stderr) if self.kind != "debug" else None
        try:
            job.result()  # a debug job computes its run here, still listed as running (the live lines read it)
        except KeyboardInterrupt:  # (debug: the run itself was interrupted) still unfinished
            raise
        except Exception as exc:  # the job failed; report and go on
            self._ended(item)
            if held_elsewhere_error(exc):  # taken by another launch between our check and the job's start
                self.report.held.append(spec.run_id)
                self.bar.write(f"held by another live launch, left to it: {spec.run_id}")
            else:
                failure = failure_of(self.root, spec, exc, log)
                self.report.failed.append(failure)
                self.failed_here[spec.run_id] = failure
                self.bar.write(f"FAILED {failure.run_id}: {failure.error}\n  log: {failure.log}")
        else:
            self._ended(item)
            self.report.done += 1
        self.bar.update(1)
        self._show()

    def _ended(self, item: tuple[RunSpec, Any]) -> None:
        self.running.remove(item)
        self.unfinished.discard(item[0].run_id)

    def _submission_failed(self, group: list[RunSpec], exc: Exception, folder: Path) -> None:
        error = "submission failed: " + ((str(exc).strip().splitlines() or [type(exc).__name__])[-1])
        for spec in group:
            self.unfinished.discard(spec.run_id)
            self.failed_here[spec.run_id] = Failure(spec.run_id, error, str(folder))
            self.report.failed.append(self.failed_here[spec.run_id])
            self.bar.update(1)
        self.bar.write(f"FAILED to submit {len(group)} run(s): {error}")
        self._show()

    def _show(self) -> None:
        self.bar.set_postfix(done=self.report.done, running=len(self.running), failed=len(self.report.failed))
