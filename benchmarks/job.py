"""One run, start to finish: the plain picklable callable every executor runs.

``run_one(spec, root)`` is idempotent and resumable. A run whose record says ``complete``
returns that record at once; a run whose stored config is not what the code builds now raises
ConfigChanged (benchmarks/drift.py). Otherwise one ``Attempt``, under the run's lock, goes
through the run's life in order:

1. configure: dataset and config, written beside the run;
2. a fresh run that is the same computation as a complete one copies it (sharing/runs.py);
3. build the agent and resume from the newest checkpoint that verifies (the curve rows written
   so far travel inside it, so rows after it are recomputed identically, never duplicated);
4. shared pretraining: start from the end-of-pretraining state a same-key run left, or hold the
   key's lock while this run computes it (sharing/pretraining.py);
5. train: pretrain -> (g_eval sweep) -> finetune -> (g_eval sweep), each curve row written as it
   comes and a checkpoint whenever the agent asks for one;
6. the final record last. An exception writes a ``failed`` (or ``diverged``) record naming the
   error and the log file, then re-raises so the executor reports it too; a stop request
   (signal, time limit) leaves the run partial, to resume from its checkpoint.

:class:`RunJob` wraps it as a ``submitit.helpers.Checkpointable``: when Slurm signals a time
limit or preemption, submitit requeues the same call, which resumes from the checkpoints on
disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import inspect
import os
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import submitit

from baselines.interface import Agent
from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks.drift import config_dict, config_drift
from benchmarks.experiments import RunSpec
from benchmarks.methods import dataset_size, method_config
from benchmarks.preemption import stop_on_signals
from benchmarks.sharing import pretraining as shared
from benchmarks.sharing import runs as same_run
from benchmarks.trackers.loggers import Loggers, open_loggers
from rlbase.checkpoint import CheckpointManager
from rlbase.runtime import keep_freed_memory_in_heap
from rlbase.training import StopRequested, TrainingDiverged

KEEP_CHECKPOINTS = int(os.environ.get("ODT_KEEP_CHECKPOINTS", "2"))


def load_data(spec: RunSpec):
    """The dataset of a run (``benchmarks.datasets.LoadedDataset``)."""
    from benchmarks.datasets import load_dataset
    return load_dataset(spec.dataset, size=dataset_size(spec.preset))


def _log_path() -> str | None:
    try:
        env = submitit.JobEnvironment()
        if env.activated() and "SUBMITIT_FOLDER" in os.environ:
            return str(env.paths.stderr)
    except Exception:  # not inside a submitit job (direct call, tests)
        pass
    return None


def spec_config(spec: RunSpec) -> Any:
    """The method config a spec runs with (raises ConfigError naming the bad field); for an
    update-matched method, without its twin's update budget (``run_config`` adds it)."""
    return method_config(spec.method, spec.dataset, spec.preset, spec.seed, spec.overrides_dict)


def run_config(spec: RunSpec, directory: Path) -> Any:
    """The config the run in ``directory`` executes: ``spec_config``, and for an update-matched
    method its twin's online updates, read from the twin's record beside it
    (benchmarks/matched_updates.py; TwinNotReady while the twin is not complete, ConfigChanged
    if the twin's own config is not what the code builds for it)."""
    cfg = spec_config(spec)
    twin = matched.twin_spec(spec)
    if twin is None:
        return cfg
    twin_directory = Path(directory).parent / twin.run_id
    check_config_unchanged(twin, twin_directory)
    return matched.with_twin_updates(cfg, spec, twin_directory)


def _summary(record: dict) -> dict:
    return {k: record.get(k) for k in ("run_id", "status", "final_score", "offline_score", "error")}


class RunInProgress(RuntimeError):
    """Another live process holds this run (two launches of the same experiment at once)."""


class ConfigChanged(RuntimeError):
    """The run directory holds work done under a different configuration (for example a
    preset retuned since): resuming or reusing it would mix two experiments."""


def check_config_unchanged(spec: RunSpec, directory: Path) -> None:
    """Raise ConfigChanged (touching nothing) if the run's stored config is not what the
    current code builds for its spec."""
    path = directory / rec.CONFIG
    if not path.exists():
        return
    from rlbase.config import ConfigError
    try:
        current = run_config(spec, directory)
    except ConfigError:  # the spec no longer builds at all (or its twin is gone): the run itself reports that
        return
    drift = config_drift(rec.read_json(path), current)
    if drift:
        raise ConfigChanged(
            f"run {directory.name} was made with another configuration than the code now builds for it "
            f"({len(drift)} field(s) differ: {'; '.join(drift[:5])}{'; ...' if len(drift) > 5 else ''}). "
            f"Move {directory} away to run it again under the current configuration.")


def held_elsewhere(directory: Path, patience: float = 0.0) -> bool:
    """True if another live process holds the run's lock (another launch is running it), still
    after ``patience`` seconds of trying to take it."""
    if not (Path(directory) / ".lock").exists():  # never run: nothing to hold (and no directory to create)
        return False
    try:
        with _run_lock(directory, patience):
            return False
    except RunInProgress:
        return True


# A launcher probes run locks (held_elsewhere) by taking and dropping them within microseconds; a
# run starting in that instant would otherwise call itself taken and be left undone, so it retries
# this long before it concludes that another live process is running it.
PROBE_PATIENCE_S = 1.0


def _try_flock(f, patience: float) -> bool:
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


@contextlib.contextmanager
def _run_lock(directory: Path, patience: float = 0.0):
    """An exclusive advisory lock on the run directory, released by the OS when the holder
    dies (kill -9, node failure), so a requeued or relaunched job can always take it over;
    ``patience``: seconds to keep trying while it is held before raising RunInProgress."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a+") as f:
        if not _try_flock(f, patience):
            raise RunInProgress(f"run {directory.name} is being run by another live process "
                                f"(lock {directory / '.lock'}); not started twice")
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def at_switch(agent: Agent, done_sweeps: set[str]) -> bool:
    """True for an agent exactly at the end of its pretraining: pretraining done, nothing of its
    online phase or of its after-pretraining g_eval sweep computed yet."""
    counters = agent.counters
    return (bool(getattr(counters, "pretrain_done", False)) and getattr(counters, "online_samples", 0) == 0
            and not done_sweeps)


def run_one(spec: RunSpec, root: str | Path = rec.DEFAULT_ROOT, threads: int | None = None,
            progress: bool = False, loggers: Sequence[str] = (), reuse_pretraining: bool = True) -> dict:
    """Run (or resume, or skip) one spec; returns a short summary of its final record.
    ``loggers`` ("tensorboard", "wandb") also send each curve row to those tools (benchmarks.trackers.loggers).
    ``reuse_pretraining``: a fresh run starts from the end-of-pretraining state another run with
    the same pretraining left on this machine (benchmarks/sharing/pretraining.py), and leaves its own;
    while it pretrains it holds that pretraining's lock, and a same-key run waits for it; a fresh
    run that is the same computation as a complete run of another experiment on this machine copies
    that run's curve and record (benchmarks/sharing/runs.py, ``reused_from`` in the record).
    Raises RunInProgress (and touches nothing) if another live process is running it."""
    directory = rec.run_dir(root, spec)
    check_config_unchanged(spec, directory)
    existing = rec.read_record(directory)
    if existing is not None and existing.get("status") == "complete":
        return _summary(existing)
    keep_freed_memory_in_heap()
    with _run_lock(directory, patience=PROBE_PATIENCE_S):
        return _run_locked(spec, root, directory, threads, progress, loggers, reuse_pretraining)


def _run_locked(spec: RunSpec, root: str | Path, directory: Path, threads: int | None, progress: bool,
                loggers: Sequence[str] = (), reuse_pretraining: bool = True) -> dict:
    """``run_one`` once it holds the run's lock: one attempt, its steps in the order they happen."""
    existing = rec.read_record(directory)
    if existing is not None and existing.get("status") == "complete":  # finished while we waited
        return _summary(existing)
    if threads:
        import torch
        torch.set_num_threads(threads)
    attempt = Attempt(spec, root, directory)
    try:
        return _summary(attempt.run(progress, loggers, reuse_pretraining))
    except StopRequested:
        raise  # asked to stop (preemption, time limit): the run is partial, not failed
    except Exception as exc:
        attempt.record_failure(exc)
        raise
    finally:
        attempt.close()


class Attempt:
    """One attempt at a run, under its lock. ``run`` reads top to bottom as the run's life:
    configure; copy a complete run of the same computation; build the agent; resume from its own
    checkpoint; take (or wait for) the shared pretraining; train with checkpoints and g_eval
    sweeps; write the record. What the steps share (agent, curve, notes, the shared-pretraining
    lock) lives on the object; ``close`` lets go of all of it, however the attempt ends."""

    def __init__(self, spec: RunSpec, root: str | Path, directory: Path):
        self.spec, self.root, self.directory = spec, root, directory
        self.log_path = rec.relative_log(root, _log_path())  # records hold no absolute paths of this machine
        self.started = time.time()
        rec.write_json(directory / rec.SPEC, spec.to_dict())
        self.number = rec.record_attempt(directory, self.log_path)
        (directory / rec.RECORD).unlink(missing_ok=True)  # a retried failure is "partial" until it ends
        self.notes: list[str] = []
        self.agent: Agent | None = None
        self.resumed = False  # from this run's own checkpoint
        self.live = Loggers()
        self.held = contextlib.ExitStack()  # the shared pretraining lock, while this run pretrains for others
        self.curve: list[dict] = []
        self.done_sweeps: set[str] = set()
        self.pretraining_from: str | None = None  # the run whose pretraining this one started from
        # that run's time counters at the switch, which this run's counters carry on from: its
        # own compute time is the difference (records.core_seconds)
        self.inherited_counters: dict[str, float] | None = None
        # the sharing key this run's pretraining is the computation of (None: of no key), kept in
        # its checkpoints: only such a pretraining is left for other runs
        self.pretraining_key: str | None = None

    def run(self, progress: bool, loggers: Sequence[str], reuse_pretraining: bool) -> dict:
        """The run's life; returns its final record."""
        self.configure(reuse_pretraining)
        if (copied := self.copy_same_computation()) is not None:
            return copied
        self.build_agent(progress, reuse_pretraining)
        made_under = self.resume()
        found = self.shared_pretraining(made_under)
        if found is not None:
            self.start_from(found)
        self.open_curve(loggers)
        if found is not None:
            self.checkpoint()  # the run's own copy: its resumes never depend on the shared store
        self.train()
        return self.write_record()

    # ----- the steps, in order -------------------------------------------------------------

    def configure(self, reuse_pretraining: bool) -> None:
        """Data and config, written beside the run; the key of the whole computation (``run_key``)."""
        spec = self.spec
        self.own_dir = Path(self.directory).relative_to(self.root).as_posix()
        self.data = load_data(spec)
        self.cfg = run_config(spec, self.directory)
        self.cfg_dict = config_dict(self.cfg)
        rec.write_json(self.directory / rec.CONFIG, self.cfg_dict)
        provenance = dict(self.data.provenance)
        rec.write_json(self.directory / rec.PROVENANCE, provenance)
        self.run_key = (same_run.key(spec.method, self.cfg_dict, spec.seed, provenance, spec.g_eval_sweep)
                        if reuse_pretraining else None)
        self.ckpts = CheckpointManager(self.directory / rec.CHECKPOINTS, keep=KEEP_CHECKPOINTS)

    def copy_same_computation(self) -> dict | None:
        """A fresh run that is the same computation as a complete one copies its curve and record
        (benchmarks/sharing/runs.py); returns that record, or None."""
        if self.run_key is None or self.ckpts.paths():
            return None
        source = same_run.find(self.root, self.run_key, self.directory)
        if source is None:
            return None
        return same_run.adopt(source, self.directory, self.spec, self.run_key, self.number, self.log_path)

    def build_agent(self, progress: bool, reuse_pretraining: bool) -> None:
        """The agent; then the sharing key of its pretraining, taken once the agent is built (the
        key pins torch's thread count as the run trains with it)."""
        from benchmarks.methods import build_agent
        spec, data = self.spec, self.data
        self.agent = build_agent(spec.method, self.cfg, data.trajectories, data.spec.make_env, data.score_fn, progress)
        self.shared_key = (shared.key(spec.method, self.cfg_dict, spec.seed, dict(data.provenance))
                           if reuse_pretraining else None)
        self.pretraining_key = self.shared_key

    def resume(self) -> str | None:
        """Restore the newest checkpoint that verifies (agent, curve, sweeps done, where its
        pretraining came from); returns the sharing key it names as the one its pretraining was
        computed under (None: none, or a fresh run: ``resumed`` False, nothing restored)."""
        loaded = self.ckpts.load_latest()
        self.notes += [f"skipped checkpoint {s}" for s in loaded.skipped]
        self.resumed = loaded.state is not None
        if not self.resumed:
            return None
        state = loaded.state
        self.agent.load_state_dict(state["agent"])
        self.curve = list(state["curve"])
        self.done_sweeps = set(state.get("sweeps", ()))
        self.pretraining_from = state.get("pretraining_from")
        self.inherited_counters = state.get("inherited_counters")
        made_under = state.get("pretraining_key")
        self.pretraining_key = self.shared_key if made_under == self.shared_key else None
        self.notes.append(f"attempt {self.number}: resumed from {loaded.path.name}")
        if self.shared_key is not None and made_under != self.shared_key and not self._pretrain_done():
            self.notes.append(f"attempt {self.number}: its checkpoint does not name sharing key {self.shared_key} "
                              "as the one its pretraining was computed under; that pretraining is not left for "
                              "other runs")
        return made_under

    def shared_pretraining(self, made_under: str | None) -> shared.SharedState | None:
        """The end-of-pretraining state another run with this pretraining left, if this run
        should start from it; else, where this run pretrains for its key, the key's lock (held
        until its state is saved). benchmarks/sharing/pretraining.py: ``take_or_wait`` for a fresh
        run, ``on_resume`` for one resumed from its own checkpoint."""
        if self.resumed:
            return shared.on_resume(self.root, self.shared_key, self._pretrain_done(), made_under,
                                    self.held, self.say)
        if self.shared_key is None:
            return None
        return shared.take_or_wait(self.root, self.shared_key, self.held, self.say)

    def start_from(self, found: shared.SharedState) -> None:
        """Load a shared end-of-pretraining state; the record says whose pretraining it is."""
        self.agent.load_state_dict(found.state["agent"])
        self.curve = list(found.state["curve"])
        self.pretraining_key = self.shared_key
        if found.source_dir == self.own_dir:
            # Left by this very run, killed between that save and its own checkpoint (checkpoint()):
            # the state is the one its own checkpoint would hold, so the pretraining is its own and
            # the record stays the uninterrupted run's (pretraining_from None).
            self.notes.append(f"attempt {self.number}: resumed from the end-of-pretraining state it left "
                              f"for runs sharing {self.shared_key}")
        else:
            self.pretraining_from = found.source_run
            self.inherited_counters = rec.time_counters(self.agent.counters)
            self.notes.append(f"attempt {self.number}: pretraining reused from run {found.source_run} "
                              f"(shared state {self.shared_key}; its rows, counters and wall_time up to the "
                              "switch are that run's)")

    def open_curve(self, loggers: Sequence[str]) -> None:
        """The curve as restored (rows after it are recomputed, never duplicated), and the live loggers."""
        rec.write_curve(self.directory / rec.CURVE, self.curve)
        spec = self.spec
        self.live = open_loggers(loggers, self.directory, spec.run_id, self.curve,
                                 f"{spec.preset}/{spec.experiment}", spec.to_dict())

    def train(self) -> None:
        """Pretrain -> (g_eval sweep) -> finetune -> (g_eval sweep); on a stop request (signal,
        time limit) the agent has checkpointed at a safe point and StopRequested ends the attempt."""
        agent = self.agent
        with stop_on_signals(agent) as stop:
            try:
                agent.pretrain(log=self.log, checkpoint=self.checkpoint)  # its last checkpoint left the state for others
                self.held.close()  # saved (or nothing to share): runs waiting for it go on
                if getattr(agent.counters, "online_samples", 0) == 0:
                    self.sweep("sweep-pretrained")
                elif self.spec.g_eval_sweep and "sweep-pretrained" not in self.done_sweeps:
                    self.notes.append("resumed past pretraining without its g_eval sweep; sweep-pretrained missing")
                agent.finetune(log=self.log, checkpoint=self.checkpoint)
                self.sweep("sweep-finetuned")
            except StopRequested:
                stop.hand_over()  # checkpointed at a safe point: let submitit requeue, or exit
                raise

    def write_record(self) -> dict:
        """The final record; then what a complete run no longer needs is removed."""
        spec, curve = self.spec, self.curve
        evals = [r for r in curve if r.get("phase") in ("pretrain", "online")]
        if not evals:
            raise RuntimeError(f"{spec.method} finished without a single evaluation row")
        offline = [r for r in evals if r["phase"] == "pretrain"]
        counters = self.agent.counters
        record = {
            "status": "complete", "run_id": spec.run_id, "spec": spec.to_dict(),
            "final": evals[-1], "offline": offline[-1] if offline else None,
            "final_score": evals[-1].get("score_mean"),
            "offline_score": offline[-1].get("score_mean") if offline else None,
            "final_return": evals[-1].get("return_mean"),
            "offline_return": offline[-1].get("return_mean") if offline else None,
            "counters": dict(vars(counters)) if hasattr(counters, "__dict__") else {},
            "pretraining_from": self.pretraining_from, "inherited_counters": self.inherited_counters,
            "attempts": self.number, "notes": self.notes, "log": self.log_path,
            "attempt_seconds": time.time() - self.started,
        }
        if (twin := matched.twin_spec(spec)) is not None:  # the run whose online updates it made
            record["matched_to"] = twin.run_id
        rec.write_json(self.directory / rec.RECORD, record)
        if self.run_key is not None:
            same_run.remember(self.root, self.run_key, self.directory)  # later runs of the same computation copy it
        for old in self.ckpts.paths()[:-1]:  # complete: only the final state is worth keeping
            old.with_suffix(".sha256").unlink(missing_ok=True)
            old.unlink(missing_ok=True)
        shared.remove_stale(self.root)  # lock files and saves left by runs killed before they could remove them
        return record

    def record_failure(self, exc: Exception) -> None:
        """A ``failed`` (or ``diverged``) record naming the error and the log; called while
        ``exc`` is being handled (the record holds its traceback)."""
        status = "diverged" if isinstance(exc, TrainingDiverged) else "failed"
        record = {"status": status, "run_id": self.spec.run_id, "spec": self.spec.to_dict(),
                  "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
                  "attempts": self.number, "notes": self.notes, "log": self.log_path,
                  "attempt_seconds": time.time() - self.started}
        rec.write_json(self.directory / rec.RECORD, record)

    def close(self) -> None:
        """Let go of the shared pretraining lock, the loggers and the agent's envs."""
        self.held.close()
        self.live.close()
        if self.agent is not None:
            self.agent.close()

    # ----- what the agent calls back, and the sweeps ---------------------------------------------

    def log(self, row: dict) -> None:
        """One curve row: appended to the curve file as it comes, and to the live loggers."""
        self.curve.append(rec.to_jsonable(row))
        rec.write_curve(self.directory / rec.CURVE, self.curve)
        self.live.log(self.curve[-1])

    def checkpoint(self) -> None:
        """The run's own checkpoint (agent, curve so far, sweeps done, where its pretraining came
        from); at the end of a pretraining that is its key's computation, the state is first left
        for the runs sharing the key."""
        agent = self.agent
        state = {"agent": agent.state_dict(), "curve": list(self.curve), "sweeps": sorted(self.done_sweeps),
                 "pretraining_from": self.pretraining_from, "pretraining_key": self.pretraining_key,
                 "inherited_counters": self.inherited_counters}
        if self.pretraining_key is not None and self.pretraining_from is None and at_switch(agent, self.done_sweeps):
            # before this run's own checkpoint, and so before a stop requested during the last
            # pretraining evaluation can end the attempt: same-key runs waiting for it load this.
            # save() keeps a state of the key that verifies, and replaces one that does not.
            # A kill between the two saves leaves the shared state and no own checkpoint at the
            # switch; the state names this run's directory, so its resume takes it as its own
            # (start_from): the record matches an uninterrupted run's either way.
            shared.save(self.root, self.pretraining_key, {"agent": state["agent"], "curve": state["curve"], "sweeps": []},
                        source_run=self.spec.run_id, step=int(agent.counters.updates), source_dir=self.own_dir)
        self.ckpts.save(state, step=int(agent.counters.updates))

    def sweep(self, phase: str) -> None:
        """The g_eval sweep of ``phase`` (evaluations at multiples of the config's g_eval), once."""
        spec, agent = self.spec, self.agent
        if not spec.g_eval_sweep or phase in self.done_sweeps:
            return
        if "g_eval" not in inspect.signature(agent.evaluate).parameters:
            self.notes.append(f"{spec.method} cannot evaluate at a chosen g_eval; sweep skipped")
            return
        base = float(self.cfg.g_eval)
        for mult in spec.g_eval_sweep:
            row = agent.evaluate(g_eval=mult * base)
            self.log({"phase": phase, "g_eval_multiple": mult, "updates": agent.counters.updates,
                      "online_samples": agent.counters.online_samples, **row})
        self.done_sweeps.add(phase)
        self.checkpoint()

    def say(self, message: str) -> None:
        """Printed at once (the job's log) and kept in the record's notes."""
        print(message, flush=True)
        self.notes.append(message)

    def _pretrain_done(self) -> bool:
        return bool(getattr(self.agent.counters, "pretrain_done", True))


class RunJob(submitit.helpers.Checkpointable):
    """``run_one`` as a submitit job; on timeout/preemption submitit requeues the same call."""

    def __init__(self, reuse_pretraining: bool = True):
        self.reuse_pretraining = reuse_pretraining

    def __call__(self, spec: RunSpec, root: str, threads: int | None = None, loggers: Sequence[str] = ()) -> dict:
        return run_one(spec, root, threads=threads, progress=False, loggers=loggers,
                       reuse_pretraining=self.reuse_pretraining)
