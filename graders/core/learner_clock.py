"""The clock a learner call's time limit is read on: the time the call had the machine.

On the wall clock alone, a cheap call fails when the machine is busy: at a load of 10 on two
cores, 50 ms of work takes half a second. So the guard (:mod:`graders.core.guard`) counts the
wall-clock time of a call *less the time its thread spent waiting for a CPU* — the run-queue
delay that Linux reports per thread in ``/proc/thread-self/schedstat`` (its second field, in
nanoseconds). Everything the learner's code does still counts: its own work, ``time.sleep``,
blocking I/O; so an endless loop or a long sleep ends at the limit as before, on a quiet
machine as on a busy one.

Where the kernel does not report the delay (not Linux, or no schedstat), the clock is the
wall clock. However starved the machine, a call ends after :data:`WALL_CAP_FACTOR` times its
limit on the wall clock (a loop that only yields the CPU would otherwise wait forever).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

SCHEDSTAT = "/proc/thread-self/schedstat"
# The most wall-clock time a call may take, in multiples of its limit: reached only when the
# call's thread waited for a CPU for 9 parts in 10 of that time.
WALL_CAP_FACTOR = 10.0


def waiting_for_cpu_s() -> float | None:
    """Seconds the calling thread has spent runnable but not running, since it started;
    None where the kernel does not say."""
    try:
        with open(SCHEDSTAT, "rb") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class CallClock:
    """Started when a learner call starts; tells how much of its limit is left.

    Read it from the thread that started it (the guard's alarm runs in the main thread, which
    is the one that calls learner code).
    """

    wall_start: float = field(default_factory=time.monotonic)
    wait_start: float | None = field(default_factory=waiting_for_cpu_s)

    def wall_elapsed(self) -> float:
        return time.monotonic() - self.wall_start

    def elapsed(self) -> float:
        """Seconds the call has had the machine: wall-clock time less waiting for a CPU."""
        wall = self.wall_elapsed()
        waiting = waiting_for_cpu_s()
        if self.wait_start is None or waiting is None:
            return wall
        return max(0.0, wall - (waiting - self.wait_start))

    def left(self, limit_s: float) -> float:
        """Seconds of ``limit_s`` still left (0 once the wall-clock cap is reached)."""
        if self.wall_elapsed() >= WALL_CAP_FACTOR * limit_s:
            return 0.0
        return max(0.0, limit_s - self.elapsed())
