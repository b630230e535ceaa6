"""The phases of an agent whose reference code runs pretraining and the online phase in one call.

``official-odt`` and ``corl-iql`` drive someone else's training script whole: ``pretrain`` runs it
(``_run``, which fills ``rows`` and sets ``counters.pretrain_done``) and returns its last
pretraining row; ``finetune`` hands back the online phase's last row, once. Such a run cannot be
restored mid-way: an interrupted run starts again.
"""

from __future__ import annotations

from collections.abc import Callable

from rlbase.clock import Stopwatch


class WholeRunAgent:
    """Base of the reference-code drivers: subclasses set ``counters`` and ``rows`` and define ``_run``."""

    counters: object  # has .pretrain_done, .wall_time, .cpu_time
    rows: list[dict]
    _last_online: dict | None = None
    _stop_requested: bool = False

    def request_stop(self) -> None:
        self._stop_requested = True

    def _run(self, log: Callable[[dict], None]) -> None:
        raise NotImplementedError

    def pretrain(self, log: Callable[[dict], None] | None = None, checkpoint: Callable | None = None) -> dict | None:
        """Run the reference code's whole training; returns the end-of-pretraining row (None if
        this agent's run was already done)."""
        del checkpoint  # nothing to restore mid-run: an interrupted run starts again
        if self.counters.pretrain_done:
            return None
        clock = Stopwatch(self.counters)
        try:
            self._run(log or (lambda row: None))
        finally:
            clock.lap()
        pretrain_rows = [r for r in self.rows if r["phase"] == "pretrain"]
        online_rows = [r for r in self.rows if r["phase"] == "online"]
        self._last_online = online_rows[-1] if online_rows else None
        return pretrain_rows[-1] if pretrain_rows else None

    def finetune(self, log: Callable[[dict], None] | None = None, checkpoint: Callable | None = None) -> dict | None:
        """The online phase ran inside ``pretrain``; its last row, once."""
        if not self.counters.pretrain_done:
            raise RuntimeError("finetune() before pretrain() finished")
        row, self._last_online = self._last_online, None
        return row
