"""The results store: one directory per run, every file written atomically.

Layout::

    results/<preset>/<experiment>/<run_id>/
        spec.json         the RunSpec (what was asked)
        config.json       the resolved method config (what ran)
        environment.json  versions, host, git sha + dirty flag, command, one entry per attempt
        provenance.json   the dataset's provenance (source, path, sha256, ...)
        curve.jsonl       evaluation rows as they come (rewritten atomically per row)
        record.json       the final record, written last: status complete | failed | diverged
        checkpoints/      CheckpointManager files (git-ignored)
    results/<preset>/<experiment>/_logs/   submitit stdout/stderr per job

A run is *complete* iff ``record.json`` exists with ``status == "complete"``; every reader
(runner, aggregation, tables) uses :func:`is_complete`, so a half-finished run is never
mistaken for a result, and a failed one shows as failed.
"""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.experiments import RunSpec
from rlbase.checkpoint import atomic_write_bytes
from rlbase.presets import PRESETS

DEFAULT_ROOT = Path(os.environ.get("ODT_RESULTS", "results"))
REPO_ROOT = Path(__file__).resolve().parent.parent

SPEC, CONFIG, ENVIRONMENT, PROVENANCE, CURVE, RECORD = (
    "spec.json", "config.json", "environment.json", "provenance.json", "curve.jsonl", "record.json")
CHECKPOINTS = "checkpoints"


def experiment_dir(root: Path | str, preset: str, experiment: str) -> Path:
    return Path(root) / preset / experiment


def run_dir(root: Path | str, spec: RunSpec) -> Path:
    return experiment_dir(root, spec.preset, spec.experiment) / spec.run_id


def logs_dir(root: Path | str, preset: str, experiment: str) -> Path:
    return experiment_dir(root, preset, experiment) / "_logs"


def flat_fields(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config dict as {"optim.lr": 1e-4, ...} (dotted paths to its leaves)."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flat_fields(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): obj}


def to_jsonable(obj: Any) -> Any:
    """numpy scalars/arrays, tuples and paths to JSON types; non-finite floats to None."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return repr(obj)


def write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(to_jsonable(obj), indent=2, sort_keys=True) + "\n").encode())


def read_json(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)


class CorruptRecord(ValueError):
    """A run directory's spec.json is missing, does not parse or lacks a field every reader needs."""


SPEC_FIELDS = ("preset", "experiment", "method", "dataset", "seed", "run_id")
SPEC_FIX = "restore it (git checkout, or the run's import source) or move the run directory under results/archive/"


def read_spec(directory: Path) -> dict:
    """The run's spec.json as a dict; CorruptRecord naming the file and the fix when it cannot be read.
    A job writes it (atomically) before anything else of the run and an import copies it first, so a
    bad one was damaged or edited by hand: nothing is guessed from it."""
    path = Path(directory) / SPEC
    try:
        spec = read_json(path)
    except (OSError, json.JSONDecodeError) as exc:
        raise CorruptRecord(f"{path}: cannot be read as JSON ({exc}); {SPEC_FIX}") from exc
    missing = [k for k in SPEC_FIELDS if not isinstance(spec, dict) or k not in spec]
    if missing:
        raise CorruptRecord(f"{path}: lacks {', '.join(missing)}; {SPEC_FIX}")
    return spec


def write_curve(path: Path, rows: list[dict]) -> None:
    text = "".join(json.dumps(to_jsonable(r), sort_keys=True) + "\n" for r in rows)
    atomic_write_bytes(path, text.encode())


def read_curve(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def progress_of(directory: Path) -> str:
    """How far a started run had come at its last evaluation (``last evaluation at 12,000 updates,
    0 online samples``), from its curve; '' before its first evaluation. A resumed run picks up
    from its last checkpoint, at or after that point."""
    last = last_curve_row(directory)
    if last is None:
        return ""
    return (f"last evaluation at {int(last.get('updates') or 0):,} updates, "
            f"{int(last.get('online_samples') or 0):,} online samples")


def updates_done(directory: Path) -> int:
    """Gradient updates at a started run's last evaluation (0 before its first)."""
    last = last_curve_row(directory)
    return int(last.get("updates") or 0) if last else 0


def last_curve_row(directory: Path) -> dict | None:
    """A run's last curve row (its last evaluation), or None before its first or if unreadable."""
    try:
        rows = read_curve(Path(directory) / CURVE)
    except (OSError, json.JSONDecodeError):
        return None
    return rows[-1] if rows else None


def read_record(directory: Path) -> dict | None:
    path = Path(directory) / RECORD
    if not path.exists():
        return None
    try:
        return read_json(path)
    except (OSError, json.JSONDecodeError):
        return None  # cannot happen with atomic writes, but never trust a record that does not parse


def is_complete(directory: Path) -> bool:
    rec = read_record(directory)
    return rec is not None and rec.get("status") == "complete"


def status_of(directory: Path) -> str:
    """complete | failed | diverged | partial (started, no record) | absent. A directory holding
    nothing but its ``.lock`` (taken to keep launchers off a run, or by a probe) is absent: no
    attempt has written anything there to resume from."""
    rec = read_record(directory)
    if rec is not None:
        return rec.get("status", "failed")
    return "partial" if _holds_anything(Path(directory)) else "absent"


def _holds_anything(directory: Path) -> bool:
    """True if ``directory`` exists and holds an entry besides its run lock."""
    return directory.is_dir() and any(p.name != ".lock" for p in directory.iterdir())


# What the harness writes into the checkout itself (run records, regenerated tables and figures):
# a change there is output, not code, so it neither marks a run's code dirty nor changes the
# pretraining-sharing key (a launch rewrites paper_tables/<preset>/ when it ends, which used to
# flip both for the runs of a second launch alongside).
GENERATED_PATHS = ("results", "paper_tables")
CODE_PATHSPEC = (".", *(f":(exclude){p}" for p in GENERATED_PATHS))


def git_output(root: Path, *args: str) -> bytes | None:
    """stdout of ``git -C root args`` (None when git fails or is absent)."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=20,
                              check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def code_version_of(root: Path) -> dict[str, Any]:
    """git sha of ``root``'s checkout, whether its tracked files differ from it (changes under
    ``GENERATED_PATHS`` do not count) and which (``git_changed``, at most ``CHANGED_LISTED``
    paths, so a dirty run's record says whether code or only prose had changed); None for all
    three outside git."""
    sha = git_output(root, "rev-parse", "HEAD")
    status = git_output(root, "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHSPEC)
    changed = None if status is None else [line[3:] for line in status.decode().splitlines() if line.strip()]
    return {"git_sha": None if sha is None else sha.decode().strip(),
            "git_dirty": None if changed is None else bool(changed),
            "git_changed": None if changed is None else changed[:CHANGED_LISTED]}


CHANGED_LISTED = 50


@lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """git sha and dirty flag of the checkout the code runs from (None outside git)."""
    return code_version_of(REPO_ROOT)


def environment() -> dict[str, Any]:
    """The machine and software a run attempt ran on. ``cpu_model`` and ``cpu_capability`` (the
    kernel level PyTorch dispatches to) say where bit-identity can be expected: results are
    bit-identical within one CPU model, thread count and set of versions, not across CPU models."""
    import gymnasium
    import torch

    from benchmarks.datasets.portable_math import cpu_model
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "torch": torch.__version__, "gymnasium": gymnasium.__version__}
    try:
        import mujoco
        versions["mujoco"] = mujoco.__version__
    except ImportError:  # pragma: no cover - optional
        pass
    return {
        **code_version(), "versions": versions, "host": socket.gethostname(),
        "platform": platform.platform(), "cpu_count": os.cpu_count(), "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available(),
        "argv": sys.argv, "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def relative_log(root: Path | str, log: str | os.PathLike | None) -> str | None:
    """A log path as stored in records: relative to the results root (``preset/experiment/_logs/...``),
    so records do not carry the absolute paths of the machine that ran them."""
    if log is None:
        return None
    return Path(os.path.relpath(Path(log).resolve(), Path(root).resolve())).as_posix()


def resolve_log(root: Path | str, stored: str | None) -> Path | None:
    """The log file a record names: stored relative to the results root (older records: absolute)."""
    if not stored:
        return None
    path = Path(stored)
    return path if path.is_absolute() else Path(root) / path


def read_attempts(directory: Path) -> list[dict]:
    """The attempts environment.json lists (oldest first); [] when there is none."""
    path = Path(directory) / ENVIRONMENT
    return list(read_json(path).get("attempts") or []) if path.exists() else []


TIME_COUNTERS = ("wall_time", "cpu_time")


def time_counters(counters: object) -> dict[str, float]:
    """The time counters (seconds, summed over restarts) an agent's counters hold."""
    return {k: float(getattr(counters, k)) for k in TIME_COUNTERS if isinstance(getattr(counters, k, None), (int, float))}


def core_seconds(record: dict, attempts: list[dict]) -> float | None:
    """The CPU core-seconds a complete run took, or None where its records cannot say: the
    seconds of its one attempt (``attempt_seconds``), or for a run resumed over several attempts
    the compute time its counters kept (``counters.wall_time``; for a run that started from
    another run's pretraining, less that run's time at the switch, ``inherited_counters``:
    older records lack it and are not timed), times the last attempt's torch threads (an upper
    bound for threads > 1). None for a run that is not complete or that saw CUDA (GPU seconds
    do not price CPU time)."""
    if record.get("status") != "complete" or not attempts or any(a.get("cuda") for a in attempts):
        return None
    threads = max(1, int(attempts[-1].get("torch_threads") or 1))
    if len(attempts) == 1 and isinstance(record.get("attempt_seconds"), (int, float)):
        return float(record["attempt_seconds"]) * threads
    wall = (record.get("counters") or {}).get("wall_time")
    if not isinstance(wall, (int, float)):
        return None
    if record.get("pretraining_from") is None:
        return float(wall) * threads
    inherited = (record.get("inherited_counters") or {}).get("wall_time")
    if isinstance(inherited, (int, float)) and 0 <= inherited <= wall:
        return (float(wall) - float(inherited)) * threads
    return None


def record_attempt(directory: Path, log_path: str | None) -> int:
    """Append this attempt's environment to environment.json; returns the attempt number.
    ``log_path`` is stored as given (the runner passes it relative to the results root)."""
    attempts = read_attempts(directory)
    attempts.append({**environment(), "log": log_path})
    write_json(Path(directory) / ENVIRONMENT, {"attempts": attempts})
    return len(attempts)


def iter_run_dirs(root: Path | str, preset: str | None = None, experiment: str | None = None):
    """Run directories under root (those holding spec.json), sorted for a stable order."""
    root = Path(root)
    if not root.is_dir():
        return []
    pattern = f"{preset or '*'}/{experiment or '*'}/*/{SPEC}"
    return sorted(p.parent for p in root.glob(pattern) if not p.parent.name.startswith("_"))


def presets_on_disk(root: Path | str, experiment: str | None = None) -> list[str]:
    """The presets under ``root`` holding ``experiment`` (any experiment where None)."""
    return [p for p in PRESETS if (Path(root) / p / (experiment or "")).is_dir()]
