"""Pretraining shared by runs that differ only after the switch to online finetuning.

Many comparisons give two arms the same pretraining and change only what happens online:
``odt`` against ``odt-control`` (whether rollouts enter the buffer), the hindsight,
g_online and curriculum ablations, and IQL's two online buffers (``share`` against
``published``, where the offline phase is ~95% of a cpu-preset run). Each arm used to compute
that pretraining itself.

A run that finishes pretraining leaves its end-of-pretraining state (the checkpoint it takes
there anyway) under ``<results>/_pretrained/<key>/``; a fresh run with the same key starts
from that state instead of recomputing it, exactly as it would resume from its own checkpoint.
While a run computes a key's pretraining it holds that key's lock (``pretraining_lock``), and a
run with the same key waits for it rather than computing the same thing alongside.
The key covers what the state depends on: the method's family, its config without the fields
listed in ``AFTER_SWITCH``, the seed, the dataset's content hash, the code version (git sha,
plus a digest of the code's diff when the code is dirty, the harness's own outputs under
``results/`` and ``paper_tables/`` left out; no reuse outside git), torch's version and
thread count, CUDA's presence and the host. Pretraining is bit-identical within one machine
and thread count, not across machines, so a state is reused only where it was made.

``tests/test_shared_pretraining.py`` changes every field of ``AFTER_SWITCH`` and checks that
the end-of-pretraining state stays identical, and that a run started from a shared state ends
with the same curve as the same run computed alone. A reused run says so in its record
(``pretraining_from``: the run that computed it) and in its notes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import records as rec
from odt.checkpoint import CheckpointManager

# Per method family: config fields that are read only after pretraining has ended (dotted paths
# into the method's config). Each one is tested to leave the end-of-pretraining state unchanged.
AFTER_SWITCH: dict[str, frozenset[str]] = {
    # (not online.sampling: pretraining batches are drawn by the same rule; not online.lr,
    # buffer_size or buffer_init: the rate switch and the buffer are made at the end of pretraining)
    "odt": frozenset({"online.add_rollouts", "online.hindsight_relabel", "online.g_online",
                      "online.exploration_rtg", "online.curriculum_q"}),
    "iql": frozenset({"online_window"}),
}
# Methods whose runs may share pretraining, and their family (odt-control is odt with
# online.add_rollouts off). Others (dt, sac, odt-offline: no online phase or no pretraining) never share.
FAMILY: dict[str, str] = {"odt": "odt", "odt-control": "odt", "iql": "iql"}
DIRNAME = "_pretrained"


@dataclass(frozen=True)
class SharedState:
    state: dict  # what the runner checkpoints: {"agent": ..., "curve": [...], "sweeps": [...]}
    source_run: str


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
    """The shared end-of-pretraining state for this key, if one verifies (a corrupt file is
    ignored: the run then computes its own pretraining)."""
    loaded = _store(root, shared_key).load_latest()
    if loaded.state is None:
        return None
    return SharedState(loaded.state["state"], loaded.state["source_run"])


def is_saved(root: Path | str, shared_key: str) -> bool:
    """True if an end-of-pretraining state for this key is on disk (``load`` may still reject it)."""
    return bool(_store(root, shared_key).paths())


def save(root: Path | str, shared_key: str, state: dict, source_run: str, step: int) -> None:
    """Leave this run's end-of-pretraining state for the runs that share its key (first one wins)."""
    store = _store(root, shared_key)
    if not store.paths():
        store.save({"state": state, "source_run": source_run}, step=step)


def lock_path(root: Path | str, shared_key: str) -> Path:
    """The key's lock file. Kept after use, on purpose: unlinking a flock'ed file races (a run
    waiting on the old file would hold a lock nobody else sees); an empty file per key is the price."""
    return Path(root) / DIRNAME / f"{shared_key}.lock"


@contextlib.contextmanager
def pretraining_lock(root: Path | str, shared_key: str,
                     say: Callable[[str], None] = print) -> Iterator[None]:
    """Held by the run that computes the pretraining of ``shared_key``, from before it looks for a
    saved state until it has saved its own (or given up). A run that finds it held waits (saying
    so once), then looks again: usually it then loads the state the holder saved. An exclusive
    ``flock``, released by the OS when its holder dies (kill -9 included), so a waiting run then
    takes it and pretrains itself: nothing can deadlock."""
    path = lock_path(root, shared_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for the run pretraining {shared_key} (lock {path}) to finish its pretraining")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
