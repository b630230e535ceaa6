"""The order runs start in, and what holds a run back.

Runs that share a pretraining (same sharing group, dataset and seed: ``sharing_cell``) start
leaders first (``order_for_sharing``); a follower whose leader is still pretraining goes later
(``pretraining_waits``, ``next_to_start``); an update-matched run waits for its twin to end
(``twin_unfinished``) and is not started where that twin failed (``twin_failed``); runs another
live process holds are left to it (``held_by_live_holders``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Sequence
from pathlib import Path
from typing import Any

from benchmarks import matched_updates as matched
from benchmarks import records as rec
from benchmarks.experiments import RunSpec
from benchmarks.job import config_dict, held_elsewhere, spec_config
from benchmarks.sharing import pretraining as shared
from rlbase.config import ConfigError


def config_or_none(spec: RunSpec) -> Any:
    """The spec's config, or None where it does not build (the run itself reports why)."""
    try:
        return spec_config(spec)
    except ConfigError:  # the run itself reports a config that does not build, naming the field
        return None


def pretraining_groups(specs: Sequence[RunSpec], configs: Sequence[Any] | None = None) -> list[str | None]:
    """Each spec's pretraining-sharing group (``sharing.pretraining.pretraining_group`` of its
    config; ``configs``, when given, are the specs' configs already built); None for a method
    that never shares or a spec whose config does not build."""
    if configs is None:
        configs = [config_or_none(s) for s in specs]
    return [None if c is None else shared.pretraining_group(s.method, config_dict(c))
            for s, c in zip(specs, configs, strict=True)]


def sharing_cell(spec: RunSpec, group: str | None) -> tuple[str, str, int] | None:
    """The runs that compute one pretraining: same sharing group, dataset and seed (None: never shares)."""
    return (group, spec.dataset, spec.seed) if group is not None else None


def followers(specs: Sequence[RunSpec], groups: Sequence[str | None]) -> list[bool]:
    """For each spec, whether an earlier spec of the list has the same ``sharing_cell``:
    that run computes the pretraining and this one can start from its state."""
    seen: set[tuple[str, str, int]] = set()
    out = []
    for spec, group in zip(specs, groups, strict=True):
        cell = sharing_cell(spec, group)
        out.append(cell in seen)
        if cell is not None:
            seen.add(cell)
    return out


def order_for_sharing(specs: Sequence[RunSpec], groups: Sequence[str | None], block: int) -> list[RunSpec]:
    """The order to start runs in; ``groups[i]`` is the pretraining-sharing group of ``specs[i]``
    (None: never shares), ``block`` how many runs go at once.

    Seed-major, so a launch cut short leaves whole seeds (every cell of seed 0, then seed 1, ...)
    rather than every seed of the first cells, but in blocks of ``block`` consecutive seeds:
    within a block, the leaders (the first run of each (group, dataset, seed), and runs that never
    share) come first in seed-major order, then the followers, which start from a leader's
    end-of-pretraining state. Plain seed-major order would put ``odt`` and ``odt-control`` of one
    seed side by side, start them together and have both compute the same pretraining. A
    follower can still start before its leader has finished pretraining (too few leaders in a
    block, leaders that finish early); it then waits for it (``sharing.pretraining.pretraining_lock``)."""
    if len(groups) != len(specs):
        raise ValueError(f"{len(groups)} groups for {len(specs)} specs")
    block = max(1, block)
    order = sorted(range(len(specs)), key=lambda i: specs[i].seed)  # stable: plan order within a seed
    follows = followers([specs[i] for i in order], [groups[i] for i in order])
    seeds = sorted({s.seed for s in specs})
    block_of = {seed: n // block for n, seed in enumerate(seeds)}
    ranked = sorted(range(len(order)), key=lambda n: (block_of[specs[order[n]].seed], follows[n]))
    return [specs[order[n]] for n in ranked]


def pretraining_in_progress(directory: Path) -> bool:
    """True if another live process is running this run and it has not left pretraining yet
    (its curve has only pretraining rows): a run that shares its pretraining would wait for it."""
    if not held_elsewhere(directory):
        return False
    return all(r.get("phase") == "pretrain" for r in rec.read_curve(Path(directory) / rec.CURVE))


def next_to_start(queue: Sequence[RunSpec], waits: Callable[[RunSpec], bool]) -> int:
    """The position in ``queue`` of the run to start next: the first that would not sit waiting
    for another run's pretraining (``waits``), or the first of all when every one would (it then
    waits on the lock, as before; nothing else could use the slot)."""
    return next((n for n, spec in enumerate(queue) if not waits(spec)), 0)


def twin_unfinished(spec: RunSpec, root: Path, unfinished: set[str]) -> bool:
    """Whether ``spec`` is an update-matched run (``matched_updates.twin_spec``) whose twin has not
    ended yet: the twin is among ``unfinished`` (this launch's runs not yet ended), or it is not
    complete and another live process is running it. Such a run cannot start yet: it reads its
    twin's complete record, and without one it stops with ``TwinNotReady``. A twin that ended
    without a complete record (failed) does not hold it back: where that failure was this launch's,
    ``twin_failed`` keeps the run from starting; otherwise the run reports it."""
    twin = matched.twin_spec(spec)
    if twin is None:
        return False
    if twin.run_id in unfinished:
        return True
    directory = rec.run_dir(root, twin)
    return not rec.is_complete(directory) and held_elsewhere(directory)


def twin_failed(spec: RunSpec, failed: Container[str]) -> bool:
    """Whether ``spec`` is an update-matched run whose twin is among ``failed`` (run ids that
    failed in this launch): it cannot match that twin, so it is not started at all; the launch
    reports it as held back by its twin's failure, and the next launch runs both."""
    twin = matched.twin_spec(spec)
    return twin is not None and twin.run_id in failed


def pretraining_waits(root: Path, specs: Sequence[RunSpec], groups: Sequence[str | None]) -> Callable[[RunSpec], bool]:
    """``waits(spec)``: whether ``spec`` would wait for a same-pretraining run (same group,
    dataset and seed) that a live process, this launch's or another's, is pretraining now.
    Two launches of one experiment each order their own plan, so without this the second starts
    the follower of the run the first is pretraining and a core idles on the lock (seen on 2026-11-26)."""
    cells: dict[tuple[str, str, int], list[RunSpec]] = {}
    cell_of: dict[str, tuple[str, str, int]] = {}
    for spec, group in zip(specs, groups, strict=True):
        if (cell := sharing_cell(spec, group)) is not None:
            cells.setdefault(cell, []).append(spec)
            cell_of[spec.run_id] = cell

    def waits(spec: RunSpec) -> bool:
        cell = cell_of.get(spec.run_id)
        return cell is not None and any(other.run_id != spec.run_id and pretraining_in_progress(rec.run_dir(root, other))
                                        for other in cells[cell])
    return waits


def held_by_live_holders(root: Path, specs: Sequence[RunSpec], grace_s: float,
                         say: Callable[[str], None] | None = None) -> list[RunSpec]:
    """The runs of ``specs`` whose lock another process still holds after up to ``grace_s``
    seconds in all. A launch that was just stopped holds its runs' locks until its jobs have
    exited; without the grace a launch started in that window would leave those runs to a
    process about to die, and finish without running them (seen on 2026-12-03). A live holder runs for
    hours, so waiting out the grace costs a launch that meets one only those seconds."""
    held = [s for s in specs if held_elsewhere(rec.run_dir(root, s))]
    if held and grace_s > 0 and say is not None:
        say(f"{len(held)} run(s) held by another process; waiting up to {grace_s:g} s in case it is exiting")
    deadline = time.monotonic() + grace_s  # one deadline for all: each run gets what is left of it
    return [s for s in held if held_elsewhere(rec.run_dir(root, s), patience=max(0.0, deadline - time.monotonic()))]

