"""The one interface every method (ODT, DT, IQL, SAC) presents to the benchmark runner.

A method is built from a typed config and a dataset, then driven as
``pretrain -> finetune -> evaluate``, with ``state_dict``/``load_state_dict`` for checkpoint
and resume. ``pretrain`` is a no-op for SAC, ``finetune`` a no-op for DT. Both phases are
resumable: called on an agent restored from a checkpoint, they continue from its counters.

Curve rows passed to ``log`` and the rows returned share these keys (others may follow,
e.g. a method's own losses):

    phase            "pretrain" | "online"
    updates          gradient updates so far
    online_samples   environment steps taken for training so far
    return_mean, return_std, length_mean, returns   raw evaluation returns
    score_mean, score_std                           normalised (when reference scores exist)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

Logger = Callable[[dict], None]
Checkpoint = Callable[[], None]


@runtime_checkable
class Agent(Protocol):
    counters: object  # has .updates, .online_samples, .wall_time

    def pretrain(self, log: Logger | None = None, checkpoint: Checkpoint | None = None) -> dict | None: ...

    def finetune(self, log: Logger | None = None, checkpoint: Checkpoint | None = None) -> dict | None: ...

    def evaluate(self, episodes: int | None = None) -> dict: ...

    def request_stop(self) -> None:
        """Checkpoint and raise ``rlbase.training.StopRequested`` at the next safe point (called from
        a signal handler on preemption or before a time limit)."""
        ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...

    def close(self) -> None: ...
