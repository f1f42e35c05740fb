"""The guard's time limit counts a call's own time, not the machine's load.

The contention is made, not hoped for: the test's thread and a few busy-looping processes
are pinned to one CPU, so a call that needs 0.15 s of CPU takes several times that on the
wall clock. It must pass under a limit shorter than its wall-clock time; a sleep and an
endless loop must still end at the limit (the loop within the wall-clock cap).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from graders.core import guard, learner_clock

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or learner_clock.waiting_for_cpu_s() is None,
    reason="needs Linux's per-thread run-queue delay (/proc/thread-self/schedstat)")

HOGS = 4


def _busy(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i
    return total


def _iterations_for(seconds: float) -> int:
    """How many loop steps take ``seconds`` of CPU on this machine, now."""
    n = 200_000
    start = time.process_time()
    _busy(n)
    return int(n * seconds / max(time.process_time() - start, 1e-4))


@pytest.fixture
def one_busy_cpu():
    """Pin this thread to one CPU and start HOGS busy processes on the same one."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the guard's alarm works in the main thread only")
    saved = os.sched_getaffinity(0)
    cpu = min(saved)
    os.sched_setaffinity(0, {cpu})
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
            for _ in range(HOGS)]
    time.sleep(0.2)  # let them start spinning
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait(timeout=10)
        os.sched_setaffinity(0, saved)


def test_a_cheap_call_on_a_busy_cpu_is_not_timed_out(one_busy_cpu, monkeypatch):
    iterations = _iterations_for(0.15)  # calibrated while the hogs already spin: a lower bound
    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", 0.4)
    start = time.monotonic()
    guard.call(_busy, iterations, what="a cheap call", on="a busy CPU")
    wall = time.monotonic() - start
    assert wall > 0.4, f"no contention was made ({wall:.2f} s): the test proves nothing"


def test_a_sleep_still_ends_at_the_limit(monkeypatch):
    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", 0.3)
    start = time.monotonic()
    with pytest.raises(guard.TimedOut, match="did not finish within 0.3 s"):
        guard.call(time.sleep, 30, what="a sleep", on="nothing")
    assert time.monotonic() - start < 2.0


def test_an_endless_loop_on_a_busy_cpu_still_ends(one_busy_cpu, monkeypatch):
    def endless():
        while True:
            pass

    monkeypatch.setattr(guard, "CALL_TIME_LIMIT_S", 0.2)
    start = time.monotonic()
    with pytest.raises(guard.TimedOut):
        guard.call(endless, what="an endless loop", on="a busy CPU")
    assert time.monotonic() - start < learner_clock.WALL_CAP_FACTOR * 0.2 + 1.0


def test_the_clock_is_the_wall_clock_where_the_kernel_says_nothing(monkeypatch):
    monkeypatch.setattr(learner_clock, "SCHEDSTAT", "/nonexistent/schedstat")
    clock = learner_clock.CallClock()
    time.sleep(0.05)
    assert clock.wait_start is None and clock.elapsed() >= 0.05
    assert clock.left(0.01) == 0.0
