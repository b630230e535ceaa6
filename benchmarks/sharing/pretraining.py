"""Pretraining shared by runs that differ only after the switch to online finetuning.

Many comparisons give two arms the same pretraining and change only what happens online:
``odt`` against ``odt-control`` (whether rollouts enter the buffer), the hindsight,
g_online and curriculum ablations, and IQL's two online buffers (``share`` against
``published``, where the offline phase is ~95% of a cpu-preset run). Each arm used to compute
that pretraining itself.

A run that finishes pretraining leaves its end-of-pretraining state (the checkpoint it takes
there anyway, saved here just before its own copy, so a stop requested during the last
pretraining evaluation cannot lose it) under ``<results>/_pretrained/<key>/``; a fresh run with
the same key starts from that state instead of recomputing it, exactly as it would resume from
its own checkpoint. While a run computes a key's pretraining it holds that key's lock
(``pretraining_lock``), and a run with the same key waits for it rather than computing the same
thing alongside. The lock file is removed as its holder lets go (``remove_stale`` clears those of
holders that were killed, and what their saves left). A state and its checksum appear together
(``save`` renames one directory holding both into place); a state that fails its checksum is
never used, and the next run that computes the key's pretraining replaces it. A run resumed
from its own checkpoint before the end of its pretraining holds the key's lock and leaves its
state as a fresh run does, if that checkpoint was computed under its current key
(``benchmarks.job``, the checkpoint's ``pretraining_key``): after a change of code, threads or
host the rest of its pretraining is not the key's computation, and it does neither.
The key covers what the state depends on: the method's family, its config without the fields
listed in ``AFTER_SWITCH``, the seed, the dataset's content hash, the code version (git sha,
plus a digest of the code's diff when the code is dirty, the harness's own outputs under
``results/`` and ``paper_tables/`` left out; no reuse outside git), torch's version and
thread count, CUDA's presence and the host. Pretraining is bit-identical within one machine
and thread count, not across machines, so a state is reused only where it was made.

``tests/test_shared_pretraining.py`` changes every field of ``AFTER_SWITCH`` and checks that
the end-of-pretraining state stays identical, and that a run started from a shared state ends
with the same curve as the same run computed alone. A reused run says so in its record
(``pretraining_from``: the run that computed it) and in its notes. A state names the run
directory that left it (``source_dir``): a run killed after leaving it but before its own
checkpoint finds it on resume and takes it as its own pretraining (``pretraining_from`` None),
so its record is the same as an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from benchmarks import records as rec
from rlbase.checkpoint import CheckpointManager

# Per method family: config fields that are read only after pretraining has ended (dotted paths
# into the method's config). Each one is tested to leave the end-of-pretraining state unchanged.
AFTER_SWITCH: dict[str, frozenset[str]] = {
    # (not online.sampling: pretraining batches are drawn by the same rule; not online.lr,
    # buffer_size or buffer_init: the rate switch and the buffer are made at the end of pretraining)
    "odt": frozenset({"online.add_rollouts", "online.hindsight_relabel", "online.g_online",
                      "online.exploration_rtg", "online.curriculum_q", "online.online_updates"}),
    "iql": frozenset({"online_window"}),
}
# Methods whose runs may share pretraining, and their family (odt-control is odt with
# online.add_rollouts off; odt-control-matched also stops on online.online_updates). Others (dt,
# sac, odt-offline: no online phase or no pretraining) never share.
FAMILY: dict[str, str] = {"odt": "odt", "odt-control": "odt", "odt-control-matched": "odt", "iql": "iql"}
DIRNAME = "_pretrained"
# What a save leaves beside the states while it writes (``.<key>.saving-*``: the state and its
# checksum, renamed to ``<key>`` once both are on disk) or while it replaces a state that fails
# its checksum (``.<key>.discarded-*``); a killed save leaves them behind (``remove_stale``).
_SAVE_DEBRIS = re.compile(r"^\.(?P<key>[^.]+)\.(?:saving|discarded)-")


@dataclass(frozen=True)
class SharedState:
    state: dict  # what the runner checkpoints: {"agent": ..., "curve": [...], "sweeps": [...]}
    source_run: str
    source_dir: str | None = None  # the run directory that left it, relative to the results root


def flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """{"online": {"lr": 1}} -> {"online.lr": 1}."""
    flat: dict[str, Any] = {}
    for name, value in config.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{path}."))
        else:
            flat[path] = value
    return flat


def code_fingerprint_of(root: Path, version: dict[str, Any]) -> str | None:
    """The git sha, with a digest of the code's ``git diff HEAD`` when the code is dirty (the
    harness's own outputs, ``records.GENERATED_PATHS``, left out); None outside git."""
    if not version.get("git_sha") or version.get("git_dirty") is None:
        return None
    if not version["git_dirty"]:
        return version["git_sha"]
    diff = rec.git_output(root, "diff", "HEAD", "--", *rec.CODE_PATHSPEC)
    return None if diff is None else f"{version['git_sha']}+{hashlib.sha256(diff).hexdigest()[:16]}"


def code_fingerprint() -> str | None:
    """``code_fingerprint_of`` the checkout the code runs from."""
    return code_fingerprint_of(rec.REPO_ROOT, rec.code_version())


def pretraining_group(method: str, config: Any) -> str | None:
    """What a run's pretraining depends on in its config: the method's family and the flattened
    config without the family's ``AFTER_SWITCH`` fields, as a stable JSON string. Two runs of the
    same group, dataset and seed compute the same pretraining. None when the method never shares
    (not in ``FAMILY``) or the config is not a dict. ``key`` is built on it, so the launcher's
    ordering (``benchmarks.launch.order_for_sharing``) and the jobs' keys never disagree."""
    family = FAMILY.get(method)
    if family is None or not isinstance(config, dict):
        return None
    kept = {k: v for k, v in flatten(config).items() if k not in AFTER_SWITCH[family]}
    return json.dumps({"family": family, "config": kept}, sort_keys=True, default=str)


def data_digest(dataset_provenance: dict) -> str:
    """The dataset part of the key: the digest of the steps themselves (``content_sha256``,
    the same for every remake of the same data) when known, else the file's sha256 (which changes
    with each remake: the file embeds its creation time), else the whole provenance."""
    return (dataset_provenance.get("content_sha256") or dataset_provenance.get("sha256")
            or json.dumps(dataset_provenance, sort_keys=True, default=str))


def machine_and_code(threads: int | None = None) -> dict[str, Any] | None:
    """Where a computation is bit-identical: the code version, torch's version and thread count
    (``threads``, else this process's), CUDA's presence and the host; None outside git (no reuse there)."""
    import torch

    code = code_fingerprint()
    if code is None:
        return None
    return {"code": code, "torch": torch.__version__, "threads": threads or torch.get_num_threads(),
            "cuda": torch.cuda.is_available(), "host": socket.gethostname()}


def key(method: str, config: dict, seed: int, dataset_provenance: dict,
        threads: int | None = None) -> str | None:
    """The sharing key of a run, or None when its method never shares pretraining (or the code
    version cannot be told). ``threads``: the torch thread count the run will have (a launcher
    asking for a job it starts on this host), else this process's."""
    group = pretraining_group(method, config)
    where = machine_and_code(threads)
    if group is None or where is None:
        return None
    family = FAMILY[method]
    parts = {"group": group, "seed": seed, "data": data_digest(dataset_provenance), **where}
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return f"{family}-s{seed}-{hashlib.sha256(blob).hexdigest()[:20]}"


def _store(root: Path | str, shared_key: str) -> CheckpointManager:
    return CheckpointManager(Path(root) / DIRNAME / shared_key, keep=1)


def load(root: Path | str, shared_key: str) -> SharedState | None:
    """The shared end-of-pretraining state for this key, if one verifies (a state without its
    checksum, or whose bytes do not match it, is never used: the run then computes its own)."""
    loaded = _store(root, shared_key).load_latest()
    if loaded.state is None:
        return None
    return SharedState(loaded.state["state"], loaded.state["source_run"], loaded.state.get("source_dir"))


def is_saved(root: Path | str, shared_key: str) -> bool:
    """True if a state for this key is on disk with its checksum (``load`` still verifies it)."""
    return any(p.with_suffix(".sha256").exists() for p in _store(root, shared_key).paths())


def _verifies(directory: Path) -> bool:
    """True if ``directory`` holds a state whose bytes match its checksum."""
    for path in CheckpointManager(directory).paths():
        try:
            expected = path.with_suffix(".sha256").read_text().strip()
            if hashlib.sha256(path.read_bytes()).hexdigest() == expected:
                return True
        except FileNotFoundError:
            continue
    return False


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(directory: Path) -> None:
    """Take ``directory`` away at once (renamed aside), then delete it."""
    aside = directory.with_name(f".{directory.name}.discarded-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.rename(directory, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _publish(staging: Path, final: Path) -> bool:
    """Rename the complete ``staging`` directory to ``final``: readers see the state and its
    checksum together or not at all. A ``final`` already there stays if it verifies (first one
    wins) and is replaced if it does not (a save killed by older code, a damaged file)."""
    for _ in range(5):
        try:
            os.rename(staging, final)  # replaces an empty directory, never a full one
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            if _verifies(final):
                return False
            _discard(final)
            continue
        _fsync_dir(final.parent)
        return True
    return False


def save(root: Path | str, shared_key: str, state: dict, source_run: str, step: int,
         source_dir: str | None = None) -> bool:
    """Leave this run's end-of-pretraining state for the runs that share its key, unless a state
    that verifies is there already (first one wins); returns whether it was left. The state and
    its checksum are written into a directory of their own, renamed into place once both are on
    disk, so a kill at any point leaves either no state or a complete one, never one that
    disables the key. Called while holding the key's lock (``benchmarks.job`` does), which is what
    keeps ``remove_stale`` off a save under way. ``source_dir``: the run's directory relative to
    ``root``, by which that run knows the state as its own if it finds it again (killed between
    this save and its own checkpoint)."""
    final = Path(root) / DIRNAME / shared_key
    if _verifies(final):
        return False
    staging = final.with_name(f".{shared_key}.saving-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        CheckpointManager(staging, keep=1).save(
            {"state": state, "source_run": source_run, "source_dir": source_dir}, step=step)
        return _publish(staging, final)
    except FileNotFoundError:  # its staging directory was cleared under it: nothing left, nothing broken
        return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def take_or_wait(root: Path | str, shared_key: str, held: contextlib.ExitStack,
                 say: Callable[[str], None]) -> SharedState | None:
    """For a run about to pretrain under ``shared_key``: the saved end-of-pretraining state if
    there is one; else the key's lock, taken into ``held`` (waiting while another live run holds
    it, then looking again), and None: the run pretrains, holding the lock until it has saved its
    state. ``say``: how the run reports that it waits."""
    if (found := load(root, shared_key)) is not None:
        return found
    held.enter_context(pretraining_lock(root, shared_key, say=say))
    if (found := load(root, shared_key)) is not None:  # saved while we waited
        held.close()
    return found


def on_resume(root: Path | str, shared_key: str | None, pretrain_done: bool, made_under: str | None,
              held: contextlib.ExitStack, say: Callable[[str], None]) -> SharedState | None:
    """For a run resumed from its own checkpoint before the end of its pretraining: the key's
    saved state if another run has left one (further along than the checkpoint, and the same
    computation: the key pins code, data, threads and host).

    ``made_under`` is the key the checkpoint's pretraining was computed under (None: not known,
    or not one key). Where it is ``shared_key``, the run goes on as a fresh one does
    (``take_or_wait``): it holds the lock until it has saved its own state, so a same-key run
    started meanwhile waits and loads it. Where it is not (code, threads or host changed since,
    or the checkpoint predates the record), the rest of this pretraining is not the key's
    computation: it neither takes the lock nor leaves its state, and only starts from a state
    already saved. Resumed past the switch (``pretrain_done``), or without a key: None, no lock."""
    if shared_key is None or pretrain_done:
        return None
    if made_under != shared_key:
        return load(root, shared_key)
    return take_or_wait(root, shared_key, held, say)


def lock_path(root: Path | str, shared_key: str) -> Path:
    """The key's lock file: made by the run that takes the lock, removed by it as it lets go."""
    return Path(root) / DIRNAME / f"{shared_key}.lock"


def _is_current(f: IO, path: Path) -> bool:
    """True if the open file ``f`` is still the file at ``path`` (not removed, not replaced)."""
    try:
        at_path = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(f.fileno())
    return (at_path.st_ino, at_path.st_dev) == (held.st_ino, held.st_dev)


def _take(path: Path, say: Callable[[str], None] | None) -> IO | None:
    """The open lock file at ``path``, flock'ed by this process; None at once if another holds it
    and ``say`` is None (no wait), else waiting for it (saying so once). A holder removes the file
    as it lets go, so a lock taken on a file no longer at ``path`` is dropped and the one now there
    taken instead: two holders never hold what they both take for the key's lock."""
    said = False
    while True:
        f = open(path, "a+")
        try:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if say is None:
                    f.close()
                    return None
                if not said:
                    say(f"waiting for the run pretraining {path.stem} (lock {path}) to finish its pretraining")
                    said = True
                fcntl.flock(f, fcntl.LOCK_EX)
            if _is_current(f, path):
                return f
        except BaseException:
            f.close()
            raise
        f.close()  # its holder removed it as it let go: take the file at the path now


@contextlib.contextmanager
def pretraining_lock(root: Path | str, shared_key: str, say: Callable[[str], None] = print,
                     wait: bool = True) -> Iterator[bool]:
    """Held by the run that computes the pretraining of ``shared_key``, from before it looks for a
    saved state until it has saved its own (or given up). A run that finds it held waits (saying
    so once), then looks again: usually it then loads the state the holder saved. An exclusive
    ``flock``, released by the OS when its holder dies (kill -9 included), so a waiting run then
    takes it and pretrains itself: nothing can deadlock. Yields True once held; with ``wait``
    False it yields False at once where another run holds it (and then holds nothing). The holder
    removes the lock file before it lets go; a run waiting on the removed file notices and takes
    the file at the path instead (``_take``)."""
    path = lock_path(root, shared_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    f = _take(path, say if wait else None)
    if f is None:
        yield False
        return
    try:
        yield True
    finally:
        try:
            path.unlink(missing_ok=True)  # while held: no other run holds the file at this path
        finally:
            f.close()  # releases the flock


def remove_unheld_locks(root: Path | str) -> int:
    """Remove the lock files under ``<root>/_pretrained/`` that no live run holds (left by holders
    killed before they could remove their own); returns how many. A run about to wait on one of
    them takes the new file at its path instead, as after any holder lets go. Never raises for a
    file it cannot remove: clearing lock files is housekeeping, not part of any run."""
    store = Path(root) / DIRNAME
    if not store.is_dir():
        return 0
    removed = 0
    for path in sorted(store.glob("*.lock")):
        try:
            with pretraining_lock(root, path.stem, wait=False) as held:
                removed += held
        except OSError:
            continue
    return removed


def remove_abandoned_saves(root: Path | str) -> int:
    """Remove what killed saves left under ``<root>/_pretrained/`` (``.<key>.saving-*`` and
    ``.<key>.discarded-*``), for each key only while its lock is free: a save is made under its
    key's lock, so none of that key is under way then. Returns how many were removed."""
    store = Path(root) / DIRNAME
    if not store.is_dir():
        return 0
    left: dict[str, list[Path]] = {}
    for path in sorted(store.iterdir()):
        if (match := _SAVE_DEBRIS.match(path.name)) is not None:
            left.setdefault(match["key"], []).append(path)
    removed = 0
    for shared_key, paths in left.items():
        try:
            with pretraining_lock(root, shared_key, wait=False) as held:
                if held:
                    for path in paths:
                        shutil.rmtree(path, ignore_errors=True)
                        removed += not path.exists()
        except OSError:
            continue
    return removed


def remove_stale(root: Path | str) -> int:
    """What killed runs left under ``<root>/_pretrained/`` and no live run holds: lock files
    (``remove_unheld_locks``) and the debris of saves (``remove_abandoned_saves``). Run by each
    complete run; returns how many entries it removed."""
    return remove_abandoned_saves(root) + remove_unheld_locks(root)
