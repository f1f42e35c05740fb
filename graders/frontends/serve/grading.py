"""Grading for `kata serve`: the learner's file graded in a subprocess with a time limit,
exactly as ``kata check`` grades it (graders.core.session.grade), so that an endless loop or
a crash in the learner's code gives a verdict and leaves the server running.

``python -m graders.frontends.serve.grading KATA PATH`` is the subprocess: it grades and
prints the KataResult as JSON on its last line of stdout.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from graders.core import descendants, i18n, registry
from graders.core.i18n import _
from graders.core.registry import Kata
from graders.core.results import KataResult

# The whole grading run's limit (each learner call has its own, shorter one: the guard's
# KATA_TIME_LIMIT); past it the subprocess is killed and the verdict says so.
RUN_TIME_LIMIT_S = float(os.environ.get("KATA_RUN_TIME_LIMIT") or 120)
MARKER = "KATA-RESULT-JSON:"
SUPERVISOR_MARGIN_S = 10.0  # the supervisor's own start and clean-up, past the limit


def grade_in_subprocess(kata: Kata, path: Path, time_limit: float | None = None) -> KataResult:
    """``kata``'s grader run on ``path`` in a fresh Python, in the learner's language now;
    a result with an error when it crashed or ran past ``time_limit`` seconds.

    The subprocess runs under a supervisor that is its subreaper, in a session (a process
    group) of its own, and every process in it is ended when the grading ends, on time or
    not: a process the learner's code started (``os.fork()`` at import, a double fork with
    ``os.setsid()``) never outlives the grading, and the verdict says it was stopped. Its output goes to temporary files, not pipes, so that such a process cannot
    hold the grading open either."""
    limit = RUN_TIME_LIMIT_S if time_limit is None else time_limit
    finished = run_isolated(["-m", "graders.frontends.serve.grading", kata.id, str(path)], limit)
    timed_out, left_running = finished.timed_out, finished.left_running
    stdout, stderr = finished.stdout, finished.stderr
    result = next((json.loads(line[len(MARKER):]) for line in reversed(stdout.splitlines())
                   if line.startswith(MARKER)), None)
    return ended(kata, limit, timed_out, left_running, result, stdout, stderr, finished.status)


def ended(kata: Kata, limit: float, timed_out: bool, left_running: bool, result: dict | None,
          stdout: str, stderr: str, status: int | str | None) -> KataResult:
    """The verdict of an isolated grading once it ended, worded alike for the cold path and
    the warm one (graders.frontends.serve.warm): its result (``result``, a KataResult's
    dict), with a note when the learner's code left a process running; or why there is
    none: past the time limit, or stopped without one (the last lines it wrote)."""
    if timed_out:
        return KataResult(kata.name, error=_(
            "grading took longer than {seconds} s and was stopped: is there an endless loop "
            "in your code?", seconds=f"{limit:g}"))
    stopped = descendants.left_running_note() if left_running else ""
    if result is not None:
        graded = KataResult.from_dict(result)
        if stopped:
            graded = dataclasses.replace(graded, note="\n".join(filter(None, (stopped, graded.note))))
        return graded
    output = "\n".join((stderr or stdout).strip().splitlines()[-8:])
    error = _("the grader stopped without a result (exit status {status}):\n{output}",
              status=status, output=output)
    return KataResult(kata.name, error="\n".join(filter(None, (error, stopped))))


@dataclass(frozen=True)
class Finished:
    """How an isolated run ended: on time or not, what it left running, what it printed."""

    timed_out: bool
    left_running: bool
    stdout: str
    stderr: str
    status: int | None


def run_isolated(arguments: list[str], limit: float) -> Finished:
    """``python ARGUMENTS`` in a fresh Python, in the learner's language now, for at most
    ``limit`` seconds, under a supervisor that is its subreaper (graders.core.descendants):
    every process the learner's code started (``os.fork()`` at import, a double fork with
    ``os.setsid()`` in between) is ended with it, on time or not, and so is the session
    (process group) it runs in. Its output goes to temporary files, not pipes, so that such
    a process cannot hold the run open either."""
    environment = dict(os.environ, KATA_LANG=i18n.current(), PYTHONIOENCODING="utf-8")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory(prefix="kata-run-") as folder:
        report = Path(folder) / "report.json"
        command = [sys.executable, "-m", "graders.core.descendants", f"{limit:g}", str(report),
                   "--", sys.executable, *arguments]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   env=environment, cwd=registry.REPO_ROOT,
                                   start_new_session=True)
        try:
            process.wait(timeout=limit + SUPERVISOR_MARGIN_S)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        left_running = stop_group(process.pid)
        process.wait()
        status = process.returncode
        try:
            said = json.loads(report.read_text(encoding="utf-8"))
            timed_out, status = timed_out or said["timed_out"], said["status"]
            left_running = left_running or said["left_running"]
        except (OSError, ValueError, KeyError, TypeError):
            pass  # the supervisor was killed (by the learner's code): the group was ended
        return Finished(timed_out, left_running, tail(out), tail(err), status)


def stop_group(group: int) -> bool:
    """Kill every process left in process group ``group``; whether there was any."""
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def tail(handle, size: int = 4 << 20) -> str:
    """The last ``size`` bytes a temporary output file holds, as text."""
    handle.seek(0, os.SEEK_END)
    end = handle.tell()
    handle.seek(max(0, end - size))
    return handle.read().decode("utf-8", errors="replace")


def main(argv: list[str]) -> int:
    from graders.core import session

    kata_key, path = argv
    result = session.grade(kata_key, path)
    sys.stdout.write("\n" + MARKER + json.dumps(result.to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
