"""How far a run has come, read from its directory alone: the launcher's live lines and
``python -m benchmarks.status`` both read it here.

A run writes each evaluation row to ``curve.jsonl`` as it comes and its whole state, counters
included (updates, online samples, wall and CPU seconds), to ``checkpoints/`` every few minutes.
This module reads both and writes nothing. The one thing it takes is a run's own lock, as a
launcher probes it (taken shared and dropped at once; a run starting in that instant waits the
probe out), to tell a live run from a stopped one; it never touches the shared pretraining locks,
where a probe would make a starting run note that it waited.
"""

from __future__ import annotations

import fcntl
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import records as rec
from benchmarks.experiments import RunSpec

EVALUATION_PHASES = ("pretrain", "online")  # curve rows that are evaluations of the run itself (not g_eval sweeps)


@dataclass(frozen=True)
class Budget:
    """What a run's config asks of it: pretraining (offline) updates, online samples, and for an
    update-matched run the online updates that stop it instead of the samples (0: none)."""
    pretrain_updates: int = 0
    online_samples: int = 0
    online_updates: int = 0

    @property
    def has_online(self) -> bool:
        return self.online_samples > 0 or self.online_updates > 0


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def budget_of(config: Any) -> Budget:
    """The budget in a config as its run records it (``config.json``): ODT's and DT's
    ``pretrain_updates`` and ``online.*``, IQL's ``offline_updates`` and ``online_samples``, SAC's
    ``online_samples``, BC's ``updates`` (offline only); an ``official-odt`` config carries the ODT
    config it runs under ``odt``."""
    if not isinstance(config, dict):
        return Budget()
    if isinstance(config.get("odt"), dict):
        config = config["odt"]
    online = config["online"] if isinstance(config.get("online"), dict) else config
    offline = config.get("pretrain_updates", config.get("offline_updates", config.get("updates")))
    return Budget(_count(offline),
                  _count(online.get("online_samples")), _count(online.get("online_updates")))


def stored_budget(directory: Path) -> Budget | None:
    """The budget of the config the run in ``directory`` executes (its ``config.json``; for an
    update-matched run that holds its twin's online updates); None before the run wrote it."""
    try:
        return budget_of(rec.read_json(Path(directory) / rec.CONFIG))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Checkpoint:
    """What a run's newest readable checkpoint says: its counters as of ``mtime``."""
    path: Path
    mtime: float
    counters: dict
    pretraining_from: str | None  # the run whose pretraining this one started from (None: its own)
    inherited_counters: dict | None = None  # that run's time counters at the switch (job.Attempt)


def latest_checkpoints(directory: Path, cache: dict | None = None, n: int = 2) -> list[Checkpoint]:
    """The run's ``n`` newest checkpoints, newest first, each with its checksum beside it (written
    last, so the file is whole) and loading; a run keeps two while it runs. Tensors are
    memory-mapped, not read; ``cache`` (path -> (mtime, Checkpoint)) spares reloading an unchanged
    file when polled."""
    folder = Path(directory) / rec.CHECKPOINTS
    try:
        paths = sorted(folder.glob("ckpt-*.pt"), reverse=True)  # names hold zero-padded update counts
    except OSError:
        return []
    out: list[Checkpoint] = []
    for path in paths:
        if len(out) == n:
            break
        if not path.with_suffix(".sha256").exists():
            continue
        try:
            mtime = path.stat().st_mtime
            if cache is not None and path in cache and cache[path][0] == mtime:
                out.append(cache[path][1])
                continue
            found = _read_checkpoint(path, mtime)
        except Exception:  # removed by the run's pruning meanwhile, or unreadable: the one before
            continue
        if cache is not None:
            cache[path] = (mtime, found)
        out.append(found)
    return out


def latest_checkpoint(directory: Path, cache: dict | None = None) -> Checkpoint | None:
    """The run's newest readable checkpoint (``latest_checkpoints``), or None."""
    found = latest_checkpoints(directory, cache, n=1)
    return found[0] if found else None


def _read_checkpoint(path: Path, mtime: float) -> Checkpoint:
    import torch
    state = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    counters = dict((state.get("agent") or {}).get("counters") or {})
    return Checkpoint(path, mtime, counters, state.get("pretraining_from"), state.get("inherited_counters"))


def lock_held(directory: Path) -> bool:
    """Whether a live process holds the run's lock (it is running, or waiting to run). Read-only:
    a run that was never started has no lock file, and none is made here."""
    try:
        f = open(Path(directory) / ".lock", "rb")
    except OSError:
        return False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


@dataclass(frozen=True)
class Progress:
    """How far a run has come: the newest of its last evaluation row and its last checkpoint."""
    phase: str  # "pretrain" | "online" | "" (nothing written yet)
    updates: int = 0
    online_samples: int = 0
    pretrain_done: bool = False
    score: float | None = None  # last evaluation's normalised score (mean over its episodes)
    score_samples: int | None = None  # online samples at that evaluation
    evaluations: int = 0
    checkpoint: Checkpoint | None = None
    previous: Checkpoint | None = None  # the checkpoint before it (a running run keeps two)

    @property
    def started(self) -> bool:
        return bool(self.phase)


def _phase(pretrain_done: bool, updates: int, samples: int, budget: Budget) -> str:
    if not budget.has_online:
        return "pretrain"  # offline methods (DT, the offline protocols) never leave it
    if pretrain_done or samples > 0 or budget.pretrain_updates == 0 or updates >= budget.pretrain_updates:
        return "online"
    return "pretrain"


def read_progress(directory: Path, budget: Budget, cache: dict | None = None, curve: list[dict] | None = None,
                  with_checkpoint: bool = True) -> Progress:
    """The run's progress from its curve and (``with_checkpoint``) its newest checkpoint, whichever
    is further along. ``curve``: its rows, where the caller has read them already."""
    try:
        rows = curve if curve is not None else rec.read_curve(Path(directory) / rec.CURVE)
    except (OSError, ValueError):
        rows = []
    evals = [r for r in rows if r.get("phase") in EVALUATION_PHASES]
    ckpts = latest_checkpoints(directory, cache) if with_checkpoint else []
    ckpt = ckpts[0] if ckpts else None
    last = evals[-1] if evals else {}
    updates, samples = _count(last.get("updates")), _count(last.get("online_samples"))
    done = last.get("phase") == "online"
    if ckpt is not None:
        c_updates, c_samples = _count(ckpt.counters.get("updates")), _count(ckpt.counters.get("online_samples"))
        if (c_updates, c_samples) >= (updates, samples):
            updates, samples = c_updates, c_samples
            done = done or bool(ckpt.counters.get("pretrain_done", False))
    if not evals and ckpt is None and not Path(directory, rec.SPEC).exists():
        return Progress("")
    score = last.get("score_mean")
    return Progress(_phase(done, updates, samples, budget), updates, samples, done,
                    float(score) if isinstance(score, (int, float)) else None,
                    _count(last.get("online_samples")) if evals else None, len(evals), ckpt,
                    ckpts[1] if len(ckpts) > 1 else None)


def work_fraction(updates: int, samples: int, budget: Budget, pretrain_share: float) -> float:
    """The share of the run's work done at ``updates`` and ``samples``: its pretraining weighs
    ``pretrain_share`` (of the cost model's seconds) and is done in proportion to its updates, the
    online phase by its stopping rule (samples, or online updates for an update-matched run)."""
    share = pretrain_share if budget.has_online else 1.0
    if budget.pretrain_updates <= 0:
        share = 0.0
    pre = 1.0 if share == 0 else min(1.0, updates / budget.pretrain_updates)
    if budget.online_updates > 0:
        online = (updates - budget.pretrain_updates) / budget.online_updates
    elif budget.online_samples > 0:
        online = samples / budget.online_samples
    else:
        online = 1.0
    return share * pre + (1.0 - share) * min(1.0, max(0.0, online))


def progress_fraction(p: Progress, budget: Budget, pretrain_share: float) -> float:
    return work_fraction(p.updates, p.online_samples, budget, pretrain_share)


@dataclass(frozen=True)
class Pace:
    """Time left at the run's own pace, from its counters' seconds and the work done between them."""
    wall_left_s: float
    cpu_left_s: float | None  # None where its counters keep no CPU time (runs recorded before they did)


def _timed(c: Checkpoint, budget: Budget, share: float) -> tuple[float, float | None, float]:
    """(wall seconds, CPU seconds or None, share of the work done) at checkpoint ``c``."""
    wall, cpu = c.counters.get("wall_time"), c.counters.get("cpu_time")
    done = work_fraction(_count(c.counters.get("updates")), _count(c.counters.get("online_samples")), budget, share)
    return (float(wall) if isinstance(wall, (int, float)) else 0.0,
            float(cpu) if isinstance(cpu, (int, float)) and cpu > 0 else None, done)


def own_pace(p: Progress, budget: Budget, pretrain_share: float, min_fraction: float = 0.002) -> Pace | None:
    """Seconds left at the run's recent pace: the seconds its counters added between its two
    newest checkpoints over the work done between them (the phase it is in now, priced by its own
    time rather than the cost model's split), else its newest checkpoint's seconds over all the
    work done by then; scaled to what is left after its newest evaluation or checkpoint. None
    without a checkpoint that has timed at least ``min_fraction`` of the work. A run started from
    another run's pretraining carries that run's seconds up to the switch in its counters."""
    if p.checkpoint is None:
        return None
    wall, cpu, done = _timed(p.checkpoint, budget, pretrain_share)
    if p.previous is not None:
        wall0, cpu0, done0 = _timed(p.previous, budget, pretrain_share)
        if done - done0 >= min_fraction and wall > wall0:
            wall, cpu, done = wall - wall0, None if cpu is None or cpu0 is None else cpu - cpu0, done - done0
    if done < min_fraction or wall <= 0:
        return None
    left = max(0.0, 1.0 - progress_fraction(p, budget, pretrain_share)) / done
    return Pace(wall * left, cpu * left if cpu is not None and cpu > 0 else None)


def format_duration(seconds: float | None) -> str:
    """``45 s``, ``12 min``, ``2.1 h``, ``3.2 days``; ``-`` for None."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def against(done: int, budget: int) -> str:
    return f"{done:,}/{budget:,}" if budget else f"{done:,}"


def progress_text(p: Progress, budget: Budget) -> str:
    """``online 45,120/200,000 samples, 12,300 updates`` (the current phase against its budget)."""
    if p.phase == "pretrain":
        return f"pretrain {against(p.updates, budget.pretrain_updates)} updates"
    if budget.online_updates:
        online = max(0, p.updates - budget.pretrain_updates)
        return f"online {against(online, budget.online_updates)} online updates, {p.online_samples:,} samples"
    return f"online {against(p.online_samples, budget.online_samples)} samples, {p.updates:,} updates"


def run_label(spec: RunSpec) -> str:
    variant = "" if spec.variant == "default" else f" [{spec.variant}]"
    return f"{spec.method} {spec.dataset} s{spec.seed}{variant}"


def live_line(spec: RunSpec, p: Progress, budget: Budget, pretrain_share: float, left_s: float | None) -> str:
    """One running run: ``odt hopper-medium s0: online 45,120/200,000 samples, 12,300 updates (23%),
    score 63.2 at 40,000 samples, ~2.1 h left``."""
    if not p.started:
        return f"{run_label(spec)}: starting"
    done = progress_fraction(p, budget, pretrain_share)
    score = f"score {p.score:.1f} at {p.score_samples:,} samples" if p.score is not None else "no evaluation yet"
    left = f"~{format_duration(left_s)} left" if left_s is not None else "time left not known yet"
    return f"{run_label(spec)}: {progress_text(p, budget)} ({done:.0%}), {score}, {left}"


class LiveProgress:
    """What each running run's directory says, while a launch waits on its jobs: one line per new
    evaluation where the output is a log (``inplace`` False), one status line per run redrawn in
    place on a terminal. A thread polls every ``every_s`` seconds the runs ``running()`` names;
    ``pretrain_share(spec)`` (the pretraining's share of the run's cost) comes from the launcher's
    cost model, the budget from the run's ``config.json``. The time left is the run's own pace
    from its counters, else the pace this watcher has seen."""

    def __init__(self, root: Path | str, running: Callable[[], Sequence[RunSpec]],
                 write: Callable[[str], None], pretrain_share: Callable[[RunSpec], float],
                 inplace: bool = False, every_s: float = 5.0, max_lines: int = 8):
        self.root, self.running, self.write = Path(root), running, write
        self.pretrain_share = pretrain_share
        self.inplace, self.every_s, self.max_lines = inplace, every_s, max_lines
        self._shown: dict[str, int] = {}  # run id -> its evaluations when its last line was written
        self._seen: dict[str, tuple[float, float]] = {}  # run id -> (time, fraction) when first seen
        self._cache: dict = {}
        self._bars: list = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shares: dict[str, float] = {}

    def line(self, spec: RunSpec, now: float | None = None) -> tuple[str, int] | None:
        """(line, how many evaluations it has made) for a run whose directory holds anything; None before."""
        directory = rec.run_dir(self.root, spec)
        if rec.status_of(directory) == "absent":
            return None
        budget = stored_budget(directory)
        if budget is None:  # config.json not written yet: the run is loading its data
            return f"{run_label(spec)}: starting", 0
        if spec.run_id not in self._shares:
            self._shares[spec.run_id] = self.pretrain_share(spec)
        share = self._shares[spec.run_id]
        p = read_progress(directory, budget, self._cache)
        now = time.time() if now is None else now
        done = progress_fraction(p, budget, share)
        first = self._seen.setdefault(spec.run_id, (now, done))
        pace = own_pace(p, budget, share)
        left = pace.wall_left_s if pace is not None else None
        if left is None and done > first[1] and now > first[0]:
            left = (now - first[0]) / (done - first[1]) * (1.0 - done)
        return live_line(spec, p, budget, share, left), p.evaluations

    def poll(self) -> None:
        """Show what changed since the last poll."""
        lines = []
        for spec in list(self.running()):
            try:
                found = self.line(spec)
            except Exception:  # a file caught mid-replace, a config that no longer builds: next poll
                continue
            if found is None:
                continue
            text, evaluations = found
            lines.append(text)
            if not self.inplace and evaluations > 0 and self._shown.get(spec.run_id) != evaluations:
                self._shown[spec.run_id] = evaluations
                self.write(text)
        if self.inplace:
            self._redraw(lines)

    def _redraw(self, lines: list[str]) -> None:
        from rlbase.progress import progress_bar
        shown = lines[:self.max_lines]
        if len(lines) > self.max_lines:
            shown[-1] = f"... and {len(lines) - self.max_lines + 1} more running"
        while len(self._bars) < len(shown):
            self._bars.append(progress_bar(enabled=True, bar_format="{desc}", leave=False, file=sys.stderr))
        for bar, text in zip(self._bars, shown + [""] * (len(self._bars) - len(shown)), strict=True):
            bar.set_description_str(text, refresh=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.poll()

    def start(self) -> LiveProgress:
        self._thread = threading.Thread(target=self._loop, name="live-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for bar in self._bars:
            bar.close()
        self._bars.clear()

    def __enter__(self) -> LiveProgress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
