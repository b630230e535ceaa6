"""One run, start to finish: the plain picklable callable every executor runs.

``run_one(spec, root)`` is idempotent and resumable:

1. a run whose record says ``complete`` returns that record at once;
2. otherwise it builds the dataset and the agent through ``benchmarks.methods``, restores the
   newest checkpoint that verifies (the curve rows written so far travel inside the
   checkpoint, so rows produced after it are recomputed identically, never duplicated);
3. pretrain -> (g_eval sweep) -> finetune -> (g_eval sweep), writing each curve row as it
   comes and a checkpoint whenever the agent asks for one;
4. the final record last. An exception writes a ``failed`` (or ``diverged``) record naming the
   error and the log file, then re-raises so the executor reports it too.

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
from collections.abc import Callable, Sequence
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
from odt.checkpoint import CheckpointManager
from odt.runtime import keep_freed_memory_in_heap
from odt.train import StopRequested, TrainingDiverged

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
    from odt.config import ConfigError
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


def _noting(notes: list[str]) -> Callable[[str], None]:
    def say(message: str) -> None:
        print(message, flush=True)
        notes.append(message)
    return say


def _shared_or_lock(root: str | Path, shared_key: str, pretraining: contextlib.ExitStack,
                    notes: list[str]) -> shared.SharedState | None:
    """For a fresh run with a sharing key: the saved end-of-pretraining state if there is one;
    else take the key's pretraining lock into ``pretraining`` (waiting while another live run
    holds it, then looking again) and return None: this run pretrains, holding the lock until
    it has saved its state."""
    if (found := shared.load(root, shared_key)) is not None:
        return found
    pretraining.enter_context(shared.pretraining_lock(root, shared_key, say=_noting(notes)))
    if (found := shared.load(root, shared_key)) is not None:  # saved while we waited
        pretraining.close()
    return found


def _shared_for_resumed(root: str | Path, shared_key: str | None, agent: Agent,
                        pretraining: contextlib.ExitStack, notes: list[str],
                        made_under: str | None) -> shared.SharedState | None:
    """For a run resumed from its own checkpoint before the end of its pretraining: the key's
    saved end-of-pretraining state if another run has left one (further along than this run's
    checkpoint, and the same computation: the key pins code, data, threads and host).

    ``made_under`` is the key the checkpoint's pretraining was computed under (None: not known,
    or not one key). Where it is this run's key, the state is looked for before and after
    waiting for the key's lock, and without one this run holds the lock until it has saved its
    own, as a fresh run does, so a same-key run started meanwhile waits and loads it. Where it is
    not (the code, threads or host changed since, or the checkpoint predates the record), the
    rest of this run's pretraining would not be the key's computation: it neither takes the
    lock nor leaves its state, and only starts from a state already saved.
    Resumed past the switch, or without a key: None, and no lock."""
    if shared_key is None or getattr(agent.counters, "pretrain_done", True):
        return None
    if made_under != shared_key:
        return shared.load(root, shared_key)
    return _shared_or_lock(root, shared_key, pretraining, notes)


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
    existing = rec.read_record(directory)
    if existing is not None and existing.get("status") == "complete":  # finished while we waited
        return _summary(existing)
    if threads:
        import torch
        torch.set_num_threads(threads)

    log_path = rec.relative_log(root, _log_path())  # records hold no absolute paths of this machine
    started = time.time()
    rec.write_json(directory / rec.SPEC, spec.to_dict())
    attempt = rec.record_attempt(directory, log_path)
    (directory / rec.RECORD).unlink(missing_ok=True)  # a retried failure is "partial" until it ends
    agent = None
    live = Loggers()
    notes: list[str] = []
    pretraining = contextlib.ExitStack()  # the shared pretraining lock, while this run pretrains for others
    try:
        from benchmarks.methods import build_agent
        data = load_data(spec)
        cfg = run_config(spec, directory)
        cfg_dict = config_dict(cfg)
        rec.write_json(directory / rec.CONFIG, cfg_dict)
        rec.write_json(directory / rec.PROVENANCE, dict(data.provenance))
        run_key = (same_run.key(spec.method, cfg_dict, spec.seed, dict(data.provenance), spec.g_eval_sweep)
                   if reuse_pretraining else None)
        ckpts = CheckpointManager(directory / rec.CHECKPOINTS, keep=KEEP_CHECKPOINTS)
        if (run_key is not None and not ckpts.paths()
                and (source := same_run.find(root, run_key, directory)) is not None):
            return _summary(same_run.adopt(source, directory, spec, run_key, attempt, log_path))
        agent = build_agent(spec.method, cfg, data.trajectories, data.spec.make_env, data.score_fn, progress)

        loaded = ckpts.load_latest()
        notes += [f"skipped checkpoint {s}" for s in loaded.skipped]
        curve: list[dict] = []
        done_sweeps: set[str] = set()
        shared_key = (shared.key(spec.method, cfg_dict, spec.seed, dict(data.provenance))
                      if reuse_pretraining else None)
        pretraining_from: str | None = None
        # the sharing key this run's pretraining is the computation of (None: of no key), kept in
        # its checkpoints: only such a pretraining is left for other runs
        pretraining_key = shared_key
        if loaded.state is not None:
            agent.load_state_dict(loaded.state["agent"])
            curve = list(loaded.state["curve"])
            done_sweeps = set(loaded.state.get("sweeps", ()))
            pretraining_from = loaded.state.get("pretraining_from")
            made_under = loaded.state.get("pretraining_key")
            pretraining_key = shared_key if made_under == shared_key else None
            notes.append(f"attempt {attempt}: resumed from {loaded.path.name}")
            if shared_key is not None and made_under != shared_key and not getattr(agent.counters, "pretrain_done", True):
                notes.append(f"attempt {attempt}: its checkpoint does not name sharing key {shared_key} as the one its "
                             "pretraining was computed under; that pretraining is not left for other runs")
            found = _shared_for_resumed(root, shared_key, agent, pretraining, notes, made_under)
        else:
            found = _shared_or_lock(root, shared_key, pretraining, notes) if shared_key is not None else None
        own_dir = Path(directory).relative_to(root).as_posix()
        if found is not None:
            agent.load_state_dict(found.state["agent"])
            curve = list(found.state["curve"])
            pretraining_key = shared_key
            if found.source_dir == own_dir:
                # Left by this very run, killed between that save and its own checkpoint (checkpoint()
                # below): the state is the one its own checkpoint would hold, so the pretraining is
                # its own and the record stays the uninterrupted run's (pretraining_from None).
                notes.append(f"attempt {attempt}: resumed from the end-of-pretraining state it left "
                             f"for runs sharing {shared_key}")
            else:
                pretraining_from = found.source_run
                notes.append(f"attempt {attempt}: pretraining reused from run {found.source_run} "
                             f"(shared state {shared_key}; its rows, counters and wall_time up to the switch "
                             "are that run's)")
        rec.write_curve(directory / rec.CURVE, curve)
        live = open_loggers(loggers, directory, spec.run_id, curve, f"{spec.preset}/{spec.experiment}", spec.to_dict())

        def log(row: dict) -> None:
            curve.append(rec.to_jsonable(row))
            rec.write_curve(directory / rec.CURVE, curve)
            live.log(curve[-1])

        def checkpoint() -> None:
            state = {"agent": agent.state_dict(), "curve": list(curve), "sweeps": sorted(done_sweeps),
                     "pretraining_from": pretraining_from, "pretraining_key": pretraining_key}
            if pretraining_key is not None and pretraining_from is None and at_switch(agent, done_sweeps):
                # before this run's own checkpoint, and so before a stop requested during the last
                # pretraining evaluation can end the attempt: same-key runs waiting for it load this.
                # save() keeps a state of the key that verifies, and replaces one that does not.
                # A kill between the two saves leaves the shared state and no own checkpoint at the
                # switch; the state names this run's directory, so its resume takes it as its own
                # (pretraining_from None above): the record matches an uninterrupted run's either way.
                shared.save(root, pretraining_key, {"agent": state["agent"], "curve": state["curve"], "sweeps": []},
                            source_run=spec.run_id, step=int(agent.counters.updates), source_dir=own_dir)
            ckpts.save(state, step=int(agent.counters.updates))

        if found is not None:
            checkpoint()  # the run's own copy: its resumes never depend on the shared store

        def sweep(phase: str) -> None:
            if not spec.g_eval_sweep or phase in done_sweeps:
                return
            if "g_eval" not in inspect.signature(agent.evaluate).parameters:
                notes.append(f"{spec.method} cannot evaluate at a chosen g_eval; sweep skipped")
                return
            base = float(cfg.g_eval)
            for mult in spec.g_eval_sweep:
                row = agent.evaluate(g_eval=mult * base)
                log({"phase": phase, "g_eval_multiple": mult, "updates": agent.counters.updates,
                     "online_samples": agent.counters.online_samples, **row})
            done_sweeps.add(phase)
            checkpoint()

        with stop_on_signals(agent) as stop:
            try:
                agent.pretrain(log=log, checkpoint=checkpoint)  # its last checkpoint left the state for others
                pretraining.close()  # saved (or nothing to share): runs waiting for it go on
                if getattr(agent.counters, "online_samples", 0) == 0:
                    sweep("sweep-pretrained")
                elif spec.g_eval_sweep and "sweep-pretrained" not in done_sweeps:
                    notes.append("resumed past pretraining without its g_eval sweep; sweep-pretrained missing")
                agent.finetune(log=log, checkpoint=checkpoint)
                sweep("sweep-finetuned")
            except StopRequested:
                stop.hand_over()  # checkpointed at a safe point: let submitit requeue, or exit
                raise

        evals = [r for r in curve if r.get("phase") in ("pretrain", "online")]
        if not evals:
            raise RuntimeError(f"{spec.method} finished without a single evaluation row")
        offline = [r for r in evals if r["phase"] == "pretrain"]
        record = {
            "status": "complete", "run_id": spec.run_id, "spec": spec.to_dict(),
            "final": evals[-1], "offline": offline[-1] if offline else None,
            "final_score": evals[-1].get("score_mean"),
            "offline_score": offline[-1].get("score_mean") if offline else None,
            "final_return": evals[-1].get("return_mean"),
            "offline_return": offline[-1].get("return_mean") if offline else None,
            "counters": dict(vars(agent.counters)) if hasattr(agent.counters, "__dict__") else {},
            "pretraining_from": pretraining_from,
            "attempts": attempt, "notes": notes, "log": log_path,
            "attempt_seconds": time.time() - started,
        }
        if (twin := matched.twin_spec(spec)) is not None:  # the run whose online updates it made
            record["matched_to"] = twin.run_id
        rec.write_json(directory / rec.RECORD, record)
        if run_key is not None:
            same_run.remember(root, run_key, directory)  # later runs of the same computation copy it
        for old in ckpts.paths()[:-1]:  # complete: only the final state is worth keeping
            old.with_suffix(".sha256").unlink(missing_ok=True)
            old.unlink(missing_ok=True)
        shared.remove_stale(root)  # lock files and saves left by runs killed before they could remove them
        return _summary(record)
    except StopRequested:
        raise  # asked to stop (preemption, time limit): the run is partial, not failed
    except Exception as exc:
        status = "diverged" if isinstance(exc, TrainingDiverged) else "failed"
        record = {"status": status, "run_id": spec.run_id, "spec": spec.to_dict(),
                  "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
                  "attempts": attempt, "notes": notes, "log": log_path,
                  "attempt_seconds": time.time() - started}
        rec.write_json(directory / rec.RECORD, record)
        raise
    finally:
        pretraining.close()
        live.close()
        if agent is not None:
            agent.close()


class RunJob(submitit.helpers.Checkpointable):
    """``run_one`` as a submitit job; on timeout/preemption submitit requeues the same call."""

    def __init__(self, reuse_pretraining: bool = True):
        self.reuse_pretraining = reuse_pretraining

    def __call__(self, spec: RunSpec, root: str, threads: int | None = None, loggers: Sequence[str] = ()) -> dict:
        return run_one(spec, root, threads=threads, progress=False, loggers=loggers,
                       reuse_pretraining=self.reuse_pretraining)
