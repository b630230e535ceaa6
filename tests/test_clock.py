"""The run's clock: wall and CPU seconds add up over laps, and sleeping costs no CPU."""

import time
from dataclasses import dataclass

from rlbase.clock import Stopwatch


@dataclass
class _Counters:
    wall_time: float = 10.0  # as if restored from a checkpoint
    cpu_time: float = 4.0


def test_laps_add_to_the_restored_counters():
    k = _Counters()
    clock = Stopwatch(k)
    time.sleep(0.05)
    clock.lap()
    assert k.wall_time >= 10.05 and k.cpu_time < 4.0 + 0.04  # asleep: wall passes, CPU does not
    wall, cpu = k.wall_time, k.cpu_time
    end = time.process_time() + 0.05
    while time.process_time() < end:  # busy: CPU time passes too
        pass
    clock.lap()
    assert k.cpu_time >= cpu + 0.05 and k.wall_time >= wall + 0.05


def test_restart_drops_the_time_since_the_last_lap():
    k = _Counters()
    clock = Stopwatch(k)
    time.sleep(0.03)
    clock.restart()
    clock.lap()
    assert k.wall_time < 10.03
