"""Run a whole grading session (``pytest katas/NN_name --impl PATH``) from a self-test.

Sessions run in this process with ``pytest.main`` (no new interpreter, so no second
``import torch``), with the repository's configuration, and hand back what a learner would
see. Unlike pytester's in-process runs, nothing is un-imported between sessions: the
graders are imported once per worker, as ``kata check`` and ``kata watch`` grade again and
again in one process — about seven times faster a session, which is what keeps the
self-tests' hundreds of sessions within minutes.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
# Imported once, before any session: FlopCounterMode (kata 07's grader, the quiz checks)
# imports it lazily, and a time limit or a hostile file interrupting that first import
# inside a session would leave it half-initialised for every later test of the worker.
import torch._dynamo  # noqa: F401
from _pytest.pytester import RunResult

from graders.core.registry import REPO_ROOT, Kata

SLUG_RE = re.compile(r"\[([a-z0-9]+(?:-[a-z0-9]+)+)\]")


@dataclass
class Session:
    exit_code: int
    output: str
    passed: int
    failed: int

    @property
    def slugs(self) -> set[str]:
        return set(SLUG_RE.findall(self.output))

    def failure_reports(self) -> list[list[str]]:
        """Each failing check's report, as lines, in order (pytest's FAILURES section)."""
        reports: list[list[str]] = []
        section = self.output.split("= FAILURES =", 1)[-1] if "= FAILURES =" in self.output else ""
        section = re.split(r"\n=+ (?:kata scoreboard|short test summary)", section)[0]
        for line in section.splitlines():
            if re.match(r"^_{3,} .* _{3,}$", line):
                reports.append([])
            elif reports:
                reports[-1].append(line)
        return reports


def run_session(kata: Kata, *args: str) -> Session:
    """``pytest katas/NN_name *args`` as a learner would run it, from the repository root."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        exit_code = pytest.main([
            str(kata.folder), "-c", str(REPO_ROOT / "pyproject.toml"),
            "--rootdir", str(REPO_ROOT), "-p", "no:cacheprovider", *args,
        ])
    text = output.getvalue()
    outcomes = RunResult.parse_summary_nouns(text.splitlines())
    return Session(
        exit_code=int(exit_code),
        output=text,
        passed=outcomes.get("passed", 0),
        failed=outcomes.get("failed", 0) + outcomes.get("errors", 0),
    )