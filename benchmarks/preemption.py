"""Stop cleanly on the signals a cluster sends before killing a job.

Slurm sends SIGTERM (and, when asked, SIGUSR1/SIGUSR2 some time before the time limit) to a
job it is about to stop or preempt. A checkpoint written from inside a signal handler could
catch the model half-way through an update, so the handler here only *asks* the agent to
stop (``agent.request_stop()``); the agent checkpoints at its next safe point and raises
``rlbase.training.StopRequested``. The caller then exits so the job can be requeued — under
submitit by handing the signal to submitit's own handler, which requeues the same call.

An agent without ``request_stop`` still gets the signal's default treatment: its progress is
bounded by its periodic checkpoints.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


@dataclass
class StopSignal:
    """What was received while the block ran: the signal number and the handler it replaced."""

    signum: int | None = None
    previous: dict[int, Any] = field(default_factory=dict)

    @property
    def received(self) -> bool:
        return self.signum is not None

    def hand_over(self) -> None:
        """Give the received signal to the handler that was installed before ours (for
        submitit: checkpoint the call and requeue it); a plain process exits with 128+signum."""
        if self.signum is None:
            return
        previous = self.previous.get(self.signum)
        if callable(previous):
            previous(self.signum, None)
        raise SystemExit(128 + self.signum)


@contextmanager
def stop_on_signals(agent: Any, signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[StopSignal]:
    """While the block runs, a stop signal makes ``agent`` checkpoint and stop at a safe point."""
    state = StopSignal()
    if not hasattr(agent, "request_stop"):
        yield state
        return

    def handler(signum: int, frame: Any) -> None:
        if state.signum is None:
            state.signum = signum
        agent.request_stop()

    for sig in signals:
        try:
            state.previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: signals cannot be handled here
            break
    try:
        yield state
    finally:
        for sig, previous in state.previous.items():
            signal.signal(sig, previous)
