"""Run a whole grading session (``pytest katas/NN_name --impl PATH``) from a self-test.

Sessions run in-process through pytest's own ``pytester`` (no new interpreter, so no
second ``import torch``), with the repository's configuration, and hand back what a
learner would see.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
# Imported once, outside every session: FlopCounterMode (kata 07) imports it lazily, and a
# second import in a later in-process session (pytester forgets a session's modules) fails
# with "Only a single TORCH_LIBRARY can be used to register the namespace _inductor_test".
import torch._dynamo  # noqa: F401

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


def run_session(pytester: pytest.Pytester, kata: Kata, *args: str) -> Session:
    """``pytest katas/NN_name *args`` as a learner would run it, from the repository root."""
    pytester.chdir()
    result = pytester.runpytest_inprocess(
        str(kata.folder), "-c", str(REPO_ROOT / "pyproject.toml"),
        "--rootdir", str(REPO_ROOT), "-p", "no:cacheprovider", *args,
    )
    outcomes = result.parseoutcomes()
    return Session(
        exit_code=int(result.ret),
        output=result.stdout.str(),
        passed=outcomes.get("passed", 0),
        failed=outcomes.get("failed", 0) + outcomes.get("errors", 0) + outcomes.get("error", 0),
    )
