"""What every training loop shares, apart from its algorithm.

The exceptions a loop ends with (a diverged loss, a stop request at a safe
point), the safe points themselves (stop flag, checkpoint of finite state only,
checkpoint cadence), the device, and running means of the training metrics read
back to the host in one transfer, so a loop never waits for the device per update.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch


class TrainingDiverged(RuntimeError):
    """A loss or parameter became NaN or inf; the last good checkpoint is kept."""


class StopRequested(Exception):
    """Raised at a safe point, right after a checkpoint, once ``request_stop`` was called
    (e.g. from a SIGTERM/SIGUSR handler as Slurm sends before a time limit or preemption)."""


class SafePoints:
    """A trainer's stop flag and checkpointing, one mechanism for every loop; each loop keeps
    its own schedule (where a safe point is: after an update, a round, an episode).

    ``request`` only sets a flag, so a signal handler may call it. ``save`` runs the trainer's
    finiteness check before the checkpoint, so a diverged state never replaces the last good
    one; ``stop_if_requested`` then raises ``StopRequested`` once a stop was asked for.
    """

    def __init__(self) -> None:
        self.requested = False

    def request(self) -> None:
        self.requested = True

    @staticmethod
    def save(checkpoint: Callable[[], None] | None, check_finite: Callable[[], None]) -> None:
        """``check_finite()`` (raises ``TrainingDiverged``), then ``checkpoint()`` where given."""
        check_finite()
        if checkpoint is not None:
            checkpoint()

    def stop_if_requested(self, where: str) -> None:
        """Raise ``StopRequested`` ("stopped on request at <where>") once a stop was requested."""
        if self.requested:
            raise StopRequested(f"stopped on request at {where}")

    @staticmethod
    def crossed(before: int, after: int, every: int) -> bool:
        """Whether a counter going from ``before`` to ``after`` passed a multiple of ``every``
        (reached it, or went beyond it): the checkpoint cadence of a loop that counts in steps
        of one or more."""
        return before // every != after // every


def parameters_finite(modules: Iterable[torch.nn.Module]) -> bool:
    """Whether every parameter of ``modules`` is finite (one host read per parameter)."""
    return all(bool(torch.isfinite(p).all()) for m in modules for p in m.parameters())


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def read_floats(values: dict) -> dict[str, float]:
    """Python floats of a dict of numbers and 0-d tensors, with one host read for all tensors."""
    tensors = [k for k, v in values.items() if isinstance(v, torch.Tensor)]
    read = torch.stack([values[k].detach().double() for k in tensors]).tolist() if tensors else []
    got = dict(zip(tensors, read))
    return {k: got[k] if k in got else float(v) for k, v in values.items()}


@dataclass
class RunningMeans:
    """Means of the training metrics since the last logged row (shared with the baselines)."""

    sums: dict = field(default_factory=dict)  # floats, or float64 device tensors (no host read)
    count: int = 0

    def add(self, metrics: dict) -> None:
        for k, v in metrics.items():
            v = v.detach().double() if isinstance(v, torch.Tensor) else v
            self.sums[k] = self.sums.get(k, 0.0) + v
        self.count += 1

    def pop(self) -> dict:
        out = {k: v / self.count for k, v in read_floats(self.sums).items()} if self.count else {}
        self.sums, self.count = {}, 0
        return out

    def state_dict(self) -> dict:
        return {"sums": read_floats(self.sums), "count": self.count}
