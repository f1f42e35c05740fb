"""A warm grader: each check forked from a process that has torch, pytest and every grader
imported already, so a verdict costs the grading, not Python's start and ``import torch``.

The room (and ``kata watch``) start one *zygote*, ``python -m graders.frontends.serve.warm``:
a single-threaded process that imports everything grading needs — but no learner code, and
runs no PyTorch operation, so its thread pools are not started — then reads one request per
line. For each it ``fork()``s a child that becomes a session (a process group) of its own
and the subreaper of all it starts (graders.core.descendants); that child forks the grading,
which points its output at files, grades the learner's file exactly as the cold path does
(graders.core.session.grade), writes the result as JSON and ends with ``os._exit``; the child
ends the grading at its time limit and every process the grading left (a double fork with
``os.setsid()`` included), then ends too. The zygote answers with the child's pid and goes
back to reading.

The caller keeps every guarantee of the cold path (graders.frontends.serve.grading): the
child is waited for under the same time limit and its whole process group ended afterwards,
so an endless loop, a crash, ``os._exit``, a fork or a file handle left open ends the child,
never the caller or the zygote. A zygote that is gone is started again, and that check is
graded the cold way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from graders.core import i18n, registry
from graders.core.registry import Kata
from graders.core.results import KataResult
from graders.core import descendants
from graders.frontends.serve.grading import (RUN_TIME_LIMIT_S, SUPERVISOR_MARGIN_S, ended,
                                             grade_in_subprocess, stop_group, tail)

START_TIME_LIMIT_S = 120.0  # the zygote imports torch and every grader once
POLL_S = 0.005


class WarmGrader:
    """A grader (``grader(kata, path) -> KataResult``, as ``grade_in_subprocess``) that forks
    each check from a warm zygote; thread-safe (the room grades several katas at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen | None = None
        self._starting: subprocess.Popen | None = None  # a zygote still importing

    def start(self) -> None:
        """Start the zygote now (in the background of the first check otherwise)."""
        with self._lock:
            try:
                self._ensure_started()
            except OSError:  # closed while it started (the room stopped): nothing to do
                pass

    def close(self) -> None:
        starting = self._starting
        if starting is not None:  # never waited for: the room stops at once
            starting.kill()
        with self._lock:
            if self._zygote is not None:
                self._zygote.kill()
                self._zygote.wait()
                self._zygote = None

    def _ensure_started(self) -> subprocess.Popen:
        if self._zygote is not None and self._zygote.poll() is None:
            return self._zygote
        zygote = subprocess.Popen(
            [sys.executable, "-m", "graders.frontends.serve.warm"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=registry.REPO_ROOT,
            env=dict(os.environ, PYTHONIOENCODING="utf-8"), text=True, start_new_session=True)
        self._starting = zygote
        try:
            ready = zygote.stdout.readline().strip() == "ready"
        finally:
            self._starting = None
        if not ready:
            zygote.kill()
            zygote.wait()
            raise OSError("the warm grader did not start")
        self._zygote = zygote
        return zygote

    def _fork(self, request: dict) -> int:
        with self._lock:
            zygote = self._ensure_started()
            zygote.stdin.write(json.dumps(request) + "\n")
            zygote.stdin.flush()
            answer = zygote.stdout.readline()
        if not answer:
            raise OSError("the warm grader stopped")
        return int(json.loads(answer)["pid"])

    def __call__(self, kata: Kata, path: Path, time_limit: float | None = None) -> KataResult:
        limit = RUN_TIME_LIMIT_S if time_limit is None else time_limit
        with tempfile.TemporaryDirectory(prefix="kata-warm-") as folder:
            # The caller's environment, as the cold path hands it to its subprocess.
            environment = dict(os.environ, KATA_LANG=i18n.current(), PYTHONIOENCODING="utf-8")
            request = {"kata": kata.id, "path": str(path), "environment": environment,
                       "folder": folder, "limit": limit}
            try:
                pid = self._fork(request)
            except (OSError, ValueError):  # no zygote: this check the cold way
                self.close()
                return grade_in_subprocess(kata, path, time_limit)
            return wait_for_child(kata, pid, Path(folder), limit)


def wait_for_child(kata: Kata, pid: int, folder: Path, limit: float) -> KataResult:
    """The forked check ``pid``'s result: it ends its grading at ``limit`` seconds and every
    process the grading left (graders.core.descendants); waited for a little longer than
    that, its process group is ended afterwards. Worded as the cold path words the same ends."""
    deadline, timed_out = time.monotonic() + limit + SUPERVISOR_MARGIN_S, False
    try:
        while alive(pid):
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(POLL_S)
    except BaseException:  # Ctrl-C in kata watch: the check ends with it, and all it started
        try:
            os.kill(pid, signal.SIGTERM)  # its supervisor ends the grading and what it left
            for _wait in range(400):
                if not alive(pid):
                    break
                time.sleep(POLL_S)
        except ProcessLookupError:
            pass
        stop_group(pid)
        raise
    left_running = stop_group(pid) or (folder / "left_running").exists()
    timed_out = timed_out or (folder / "timed_out").exists()
    result_file = folder / "result.json"
    result = json.loads(result_file.read_text(encoding="utf-8")) if result_file.exists() else None
    with open(folder / "stderr", "ab+") as err, open(folder / "stdout", "ab+") as out:
        stdout, stderr = tail(out), tail(err)
    return ended(kata, limit, timed_out, left_running, result, stdout, stderr, "?")


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (the zygote reaps its children: no zombies)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- the zygote --------------------------------------------------------------------------


def warm_up() -> None:
    """Import what every check needs, running no PyTorch operation (its thread pools must
    not exist when the zygote forks)."""
    from graders.core import fast_start

    fast_start.import_torch()
    import pytest  # noqa: F401
    import torch

    torch.set_num_threads(1)  # grading's tensors are small; one thread forks safely
    fresh = torch.get_rng_state()  # what a fresh Python's global generator holds
    from graders.core import plugin, session  # noqa: F401

    import importlib
    import importlib.util

    for kata in registry.KATAS:  # each grader's checks (what the kata's thin test imports)
        checks = kata.meta_module.rsplit(".", 1)[0] + ".checks"
        if importlib.util.find_spec(checks) is not None:
            importlib.import_module(checks)
    # A check starts from a fresh process's random state, as the cold path does (a mutant
    # that draws dropout from the global generator gives the cold path's verdict).
    torch.set_rng_state(fresh)


def child(request: dict) -> None:
    """In the forked child: a session of its own and the subreaper of all it starts
    (graders.core.descendants); it forks the grading, waits for it under the time limit,
    then ends every process the learner's code left (a double fork with ``os.setsid()``
    included) and says so in the folder (``timed_out``, ``left_running``). Never returns."""
    try:
        os.setsid()  # a process group of its own: the caller ends it and all it started
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        descendants.become_subreaper()
        folder = Path(request["folder"])
        pid = os.fork()
        if pid == 0:
            grade(request)
        # Stopped by the caller (Ctrl-C in kata watch): the grading ends, and what it left
        signal.signal(signal.SIGTERM, lambda _signal, _frame: os.kill(pid, signal.SIGKILL))
        timed_out, _status = descendants.wait(pid, float(request.get("limit") or RUN_TIME_LIMIT_S))
        if timed_out:
            (folder / "timed_out").touch()
        if descendants.end_descendants():
            (folder / "left_running").touch()
    finally:
        os._exit(0)


def grade(request: dict) -> None:
    """In the grading process: grade, write the result, and end without returning."""
    status = 1
    try:
        folder = Path(request["folder"])
        for fd, name, mode in ((0, os.devnull, os.O_RDONLY),
                               (1, folder / "stdout", os.O_WRONLY | os.O_CREAT),
                               (2, folder / "stderr", os.O_WRONLY | os.O_CREAT)):
            os.dup2(os.open(name, mode, 0o600), fd)
        os.environ.clear()
        os.environ.update(request["environment"])
        import random

        random.seed()  # Python's generator seeded afresh, as a new process's is
        from graders.core import guard, session

        guard.CALL_TIME_LIMIT_S = guard.configured_time_limit()  # read at import: read again

        result = session.grade(request["kata"], request["path"])
        partial = folder / "result.partial"
        partial.write_text(json.dumps(result.to_dict()), encoding="utf-8")
        partial.rename(folder / "result.json")
        status = 0
    except BaseException:  # noqa: BLE001 - whatever happened, the child must not return
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def main() -> int:
    warm_up()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(request)
        print(json.dumps({"pid": pid}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
