"""Every process a grading starts ends with the grading, however it was started.

A process group is not enough: learner code that forks twice and calls ``os.setsid()`` in
between leaves a grandchild in a session of its own, reparented to init, which no
``killpg`` reaches. On Linux a *subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``) inherits its
orphaned descendants instead of init: the grading runs under one (a small supervising
process, or the CLI itself), which, once the grading ended, kills its remaining children
until none is left (each one killed hands its own children to the subreaper).

``python -m graders.core.descendants LIMIT REPORT -- COMMAND...`` runs COMMAND so (the
cold path of graders.frontends.serve.grading): at most LIMIT seconds, then every process it
left ended; REPORT gets ``{"timed_out": bool, "left_running": bool, "status": int}``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
POLL_S = 0.005


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux); whether it is one now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(parent: int) -> list[int]:
    """The live (not zombie) processes whose parent is ``parent``, read from /proc."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (command) "
        if len(fields) > 1 and fields[0] != b"Z" and int(fields[1]) == parent:
            found.append(int(entry))
    return found


def reap() -> None:
    """Collect this process's children that have ended (no zombies left behind)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_descendants(keep: set[int] = frozenset(), rounds: int = 400) -> bool:
    """Kill every child of this process but ``keep`` (as a subreaper: every descendant, as
    each killed one hands its children over), until none is left; whether there was any."""
    me, found = os.getpid(), False
    for _round in range(rounds):
        reap()
        left = [pid for pid in children(me) if pid not in keep]
        if not left:
            return found
        found = True
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(POLL_S)
    return found


def left_running_note() -> str:
    """What a verdict notes when the learner's code left a process running."""
    from graders.core.i18n import _

    return _("your code left a child process running (os.fork, multiprocessing or "
             "subprocess); it was stopped when the grading ended.")


def graded_here(grade):
    """``grade()`` (a KataResult) run in this process (``kata check``, which grades in the
    CLI's own process) as the subreaper of what the learner's code starts: every process it
    left is ended afterwards, and the result notes it (the children this process had before
    are kept)."""
    import dataclasses

    become_subreaper()
    before = set(children(os.getpid()))
    result = grade()
    if end_descendants(keep=before):
        note = "\n".join(filter(None, (left_running_note(), result.note)))
        result = dataclasses.replace(result, note=note)
    return result


def wait(pid: int, limit: float) -> tuple[bool, int | None]:
    """Wait at most ``limit`` seconds for child ``pid``: (timed out, its exit status). Past the
    limit it is killed."""
    deadline = time.monotonic() + limit
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return False, None
        if done:
            return False, os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return True, None
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    limit, report, separator, *command = argv
    assert separator == "--", argv
    become_subreaper()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL)  # stdout, stderr: ours
    timed_out, status = wait(process.pid, float(limit))
    process.returncode = status if status is not None else -9  # reaped by wait()
    left_running = end_descendants()
    with open(report, "w", encoding="utf-8") as handle:
        json.dump({"timed_out": timed_out, "left_running": left_running, "status": status}, handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
