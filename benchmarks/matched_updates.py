"""The update-matched control: a run whose online phase makes exactly as many updates as its twin.

``odt-control`` spends ODT's sample budget without adding its rollouts to the buffer. Where its
exploration episodes are shorter or longer than ODT's it takes more or fewer rounds, so more or
fewer updates (walker2d-medium-replay seed 3 at the cpu preset: 6,000 online updates against its
ODT run's 4,200), and its comparison with ODT then mixes the online data with the update count.

A method listed in ``benchmarks.methods.UPDATE_TWINS`` (``odt-control-matched``) names its twin's
method. The twin is the run of that method whose spec is otherwise the same (experiment,
dataset, seed, preset, overrides, variant, g_eval sweep), so it lives in the same experiment
folder. Before each attempt of a matched run the runner (``benchmarks.job.run_config``) reads the
twin's complete record and sets the twin's online updates (``counters.updates`` minus its
config's ``pretrain_updates``, checked against its rounds x ``updates_per_round``) as the run's
``online.online_updates``, the stopping rule that replaces the sample budget. The number is in the
run's ``config.json`` and the twin is named in its record (``matched_to``). A twin without a
complete record stops the run with ``TwinNotReady`` before it computes anything, and a stored
config that no longer agrees with the twin's record is a changed config (``job.ConfigChanged``),
so a matched run cannot silently run another count than its twin's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.methods import UPDATE_TWINS
from rlbase.config import ConfigError, apply_overrides

FIELD = "online.online_updates"


class TwinNotReady(ConfigError):
    """The twin of an update-matched run has no complete, readable record to match."""


def twin_spec(spec: RunSpec) -> RunSpec | None:
    """The spec of ``spec``'s twin (None for a method that matches no twin)."""
    method = UPDATE_TWINS.get(spec.method)
    return None if method is None else dataclasses.replace(spec, method=method)


def twin_online_updates(twin: RunSpec, directory: Path) -> int:
    """The online updates the complete run ``twin`` in ``directory`` made; TwinNotReady saying
    what is missing otherwise."""
    record = rec.read_record(directory)
    if record is None or record.get("status") != "complete":
        state = "has no record" if record is None else f"is {record.get('status')!r}, not complete"
        raise TwinNotReady(f"the update-matched run needs its twin {twin.run_id} complete, and it {state} "
                           f"(at {directory}): run {twin.method} seed {twin.seed} first")
    config = rec.read_json(directory / rec.CONFIG) if (directory / rec.CONFIG).exists() else None
    counters = record.get("counters") or {}
    try:
        updates, pretrain = int(counters["updates"]), int(config["pretrain_updates"])
        rounds, per_round = int(counters["rounds"]), int(config["online"]["updates_per_round"])
    except (KeyError, TypeError, ValueError) as exc:
        raise TwinNotReady(f"twin {twin.run_id} (at {directory}): its record or config.json does not say how many "
                           f"online updates it made ({type(exc).__name__}: {exc})") from None
    if updates - pretrain != rounds * per_round or rounds < 1:
        raise TwinNotReady(f"twin {twin.run_id} (at {directory}): {updates} updates after {pretrain} of pretraining "
                           f"are not its {rounds} rounds x {per_round} updates: not a complete online phase")
    return updates - pretrain


def with_twin_updates(cfg: Any, spec: RunSpec, twin_directory: Path) -> Any:
    """``cfg`` (the config of ``spec``, a matched run) with its twin's online updates as its
    ``online.online_updates``; ConfigError if the spec sets that field itself."""
    twin = twin_spec(spec)
    if twin is None:
        return cfg
    if FIELD in spec.overrides_dict:
        raise ConfigError(f"{FIELD} of an update-matched run ({spec.method}) is its twin's, read from the twin's "
                          "record: leave it out of the overrides")
    return apply_overrides(cfg, {FIELD: twin_online_updates(twin, twin_directory)})
