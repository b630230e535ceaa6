"""What complete runs of the same config took: the launch estimate's measured part.

The launch estimate prices a run by a FLOP model (``benchmarks.launch.cost``), which is off by a
factor that differs per method and domain (over the committed cpu-preset records: ODT on hopper
took ~1.5x what it says, IQL on hopper ~0.8x, SAC on walker2d ~0.7x), so no one constant fixes
it. Where the results folder already holds complete runs of the same computation (same method,
dataset, config up to the seed, g_eval sweep, and whether the run started from another run's
pretraining), their measured time is the better price: a 10-seed plan whose first seeds
are done, or a batch resumed on the machine that ran its first half. Where there are none, the
launcher scales the model by what complete runs of the same method and domain took against it
(``launch.calibration``; each ``TimedRun`` keeps its spec for that).

A run's cost is ``records.core_seconds`` (its one attempt's seconds, or the compute time a resumed
run's counters kept, times its torch threads); runs that saw CUDA are not used: they price CPU time.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import config_drift
from benchmarks.methods import UPDATE_TWINS

UNKNOWN_CPU = "unknown CPU"  # records made before environment.json kept the CPU model


@dataclass(frozen=True)
class Computation:
    """What a run's cost depends on, but for its seed and its config (compared field by field)."""
    method: str
    dataset: str
    g_eval_sweep: tuple[float, ...]
    from_shared_pretraining: bool


@dataclass(frozen=True)
class TimedRun:
    config: dict[str, Any]  # without its seed
    core_seconds: float
    cpu_model: str
    spec: RunSpec | None = None  # what was asked (None where the record does not say): the model prices it too


def unpriced_fields(method: str) -> tuple[str, ...]:
    """Config fields two runs of one computation may differ in: the seed, and for an
    update-matched run the online updates it takes from its twin's record when it starts (the
    config built before then holds the default)."""
    return ("seed", matched.FIELD) if method in UPDATE_TWINS else ("seed",)


def without_seed(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "seed"}


def timed_runs(root: Path | str, preset: str) -> dict[Computation, list[TimedRun]]:
    """The complete, timeable runs under ``root`` at ``preset`` (every experiment), by computation."""
    out: dict[Computation, list[TimedRun]] = {}
    for directory in rec.iter_run_dirs(root, preset):
        record = rec.read_record(directory)
        if record is None or record.get("status") != "complete" or not (directory / rec.CONFIG).exists():
            continue
        attempts = rec.read_attempts(directory)
        seconds = rec.core_seconds(record, attempts)
        config = rec.read_json(directory / rec.CONFIG)
        if seconds is None or not isinstance(config, dict):
            continue
        spec = record.get("spec") or {}
        key = Computation(str(spec.get("method")), str(spec.get("dataset")),
                          tuple(spec.get("g_eval_sweep") or ()), record.get("pretraining_from") is not None)
        out.setdefault(key, []).append(
            TimedRun(without_seed(config), seconds, str(attempts[-1].get("cpu_model") or UNKNOWN_CPU), _spec_or_none(spec)))
    return out


def _spec_or_none(d: Mapping[str, Any]) -> RunSpec | None:
    try:
        return RunSpec.from_dict(dict(d))
    except (KeyError, TypeError, ValueError):
        return None


def matching(timed: Mapping[Computation, list[TimedRun]], spec: RunSpec, config: Any,
             from_shared_pretraining: bool, cpu_model: str | None = None) -> list[TimedRun]:
    """The timed runs of the computation ``spec`` (with ``config``, the config the code builds
    for it) makes, their seeds (and a matched run's count taken from its twin) aside;
    only those timed on ``cpu_model`` (the CPU the runs will have) where there are any, since the
    same run's cost differs by CPU model (2026-11-27: a Fig. 10 run ~13 min on the Xeon, ~17-21
    on the AMD EPYC)."""
    key = Computation(spec.method, spec.dataset, tuple(spec.g_eval_sweep), from_shared_pretraining)
    same = [t for t in timed.get(key, []) if not config_drift(t.config, config, ignore=unpriced_fields(spec.method))]
    here = [t for t in same if t.cpu_model == cpu_model]
    return here or same


def median_core_seconds(runs: Iterable[TimedRun]) -> float:
    return statistics.median(t.core_seconds for t in runs)
