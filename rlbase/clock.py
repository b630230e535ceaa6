"""Wall and CPU time of a training loop, added to a run's counters so they survive restarts."""

from __future__ import annotations

import time


class Stopwatch:
    """Adds the wall and process-CPU seconds since the last lap (or restart) to
    ``counters.wall_time`` and ``counters.cpu_time``. CPU time counts every thread of this
    process, so on a shared machine it is the run's own cost where wall time is not."""

    def __init__(self, counters) -> None:
        self.counters = counters
        self.restart()

    def restart(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def lap(self) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.counters.wall_time += wall - self._wall
        self.counters.cpu_time += cpu - self._cpu
        self._wall, self._cpu = wall, cpu
