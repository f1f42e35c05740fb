"""Grading for `kata serve`: the learner's file graded in a subprocess with a time limit,
exactly as ``kata check`` grades it (graders.core.session.grade), so that an endless loop or
a crash in the learner's code gives a verdict and leaves the server running.

``python -m graders.frontends.serve.grading KATA PATH`` is the subprocess: it grades and
prints the KataResult as JSON on its last line of stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from graders.core import i18n, registry
from graders.core.i18n import _
from graders.core.registry import Kata
from graders.core.results import KataResult

# The whole grading run's limit (each learner call has its own, shorter one: the guard's
# KATA_TIME_LIMIT); past it the subprocess is killed and the verdict says so.
RUN_TIME_LIMIT_S = float(os.environ.get("KATA_RUN_TIME_LIMIT") or 120)
MARKER = "KATA-RESULT-JSON:"


def grade_in_subprocess(kata: Kata, path: Path, time_limit: float | None = None) -> KataResult:
    """``kata``'s grader run on ``path`` in a fresh Python, in the learner's language now;
    a result with an error when it crashed or ran past ``time_limit`` seconds."""
    limit = RUN_TIME_LIMIT_S if time_limit is None else time_limit
    environment = dict(os.environ, KATA_LANG=i18n.current(), PYTHONIOENCODING="utf-8")
    command = [sys.executable, "-m", "graders.frontends.serve.grading", kata.id, str(path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=limit, env=environment,
                              cwd=registry.REPO_ROOT)
    except subprocess.TimeoutExpired:
        return KataResult(kata.name, error=_(
            "grading took longer than {seconds} s and was stopped: is there an endless loop "
            "in your code?", seconds=f"{limit:g}"))
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARKER):
            return KataResult.from_dict(json.loads(line[len(MARKER):]))
    tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
    return KataResult(kata.name, error=_("the grader stopped without a result (exit status "
                                         "{status}):\n{output}", status=done.returncode,
                                         output=tail))


def main(argv: list[str]) -> int:
    from graders.core import session

    kata_key, path = argv
    result = session.grade(kata_key, path)
    sys.stdout.write("\n" + MARKER + json.dumps(result.to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
