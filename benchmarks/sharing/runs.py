"""Whole runs that two experiments share because they are one computation.

Several ablations carry ODT at its defaults as one arm under another name: Fig. 7's relabel-on
arm, appendix D's g_online = 2g*, Fig. 8's top-N buffer, Fig. 5's 2x and Fig. 6's fixed g_online.
Their specs (and run ids) differ only by overrides that set a field to the value it already has,
so with the same seed, data, code and machine they compute the same run, bit for bit. Computing
it once per experiment costs a full run each time.

A run that completes leaves ``<results>/_computed/<key>.json`` naming its directory. A fresh run
(no record, no checkpoint of its own) whose key is there copies that run's curve and record
under its own spec and run id, with ``reused_from`` naming the source and a note saying so,
instead of computing. The key is as strict as shared pretraining's: the method, the whole
config, the seed, the g_eval sweep, the data's content hash, the code version (git sha plus a
digest of uncommitted changes), torch's version and threads, CUDA and the host. A run is reused
only where it would be recomputed identically; anywhere else it runs. ``--fresh-pretraining``
turns this off along with shared pretraining.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.sharing import pretraining as shared

DIRNAME = "_computed"


def key(method: str, config: Any, seed: int, dataset_provenance: dict,
        g_eval_sweep: Sequence[float] = ()) -> str | None:
    """What a whole run depends on, hashed; None when the code version cannot be told."""
    where = shared.machine_and_code()
    if where is None or not isinstance(config, dict):
        return None
    parts = {"method": method, "config": config, "seed": seed, "sweep": [float(g) for g in g_eval_sweep],
             "data": shared.data_digest(dataset_provenance), **where}
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return f"{method}-s{seed}-{hashlib.sha256(blob).hexdigest()[:24]}"


def _pointer(root: Path | str, run_key: str) -> Path:
    return Path(root) / DIRNAME / f"{run_key}.json"


def remember(root: Path | str, run_key: str, directory: Path) -> None:
    """Name ``directory`` (a complete run) as the computation of ``run_key`` (first one wins)."""
    path = _pointer(root, run_key)
    if not path.exists():
        rec.write_json(path, {"run": directory.relative_to(Path(root)).as_posix()})


def find(root: Path | str, run_key: str, directory: Path) -> Path | None:
    """The complete run that computed ``run_key``, if there is one other than ``directory``."""
    path = _pointer(root, run_key)
    if not path.exists():
        return None
    source = Path(root) / rec.read_json(path)["run"]
    record = rec.read_record(source)
    if source == directory or record is None or record.get("status") != "complete":
        return None
    return source


def adopt(source: Path, directory: Path, spec: RunSpec, run_key: str, attempt: int,
          log_path: str | None) -> dict:
    """Write ``source``'s curve and record into ``directory`` as this spec's (config and
    provenance are already there, written from this spec); returns the record."""
    rec.write_curve(directory / rec.CURVE, rec.read_curve(source / rec.CURVE))
    original = rec.read_record(source) or {}
    named = f"{source.parent.name}/{source.name}"
    record = {**original, "run_id": spec.run_id, "spec": spec.to_dict(), "reused_from": named,
              "attempts": attempt, "log": log_path,
              "notes": [*original.get("notes", []),
                        f"attempt {attempt}: the same computation as run {named} (key {run_key}): its curve "
                        f"and record are copied, nothing was recomputed; counters and wall_time are that run's"]}
    rec.write_json(directory / rec.RECORD, record)
    return record
