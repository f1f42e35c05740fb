"""The self-tests' slow tier: when it runs, and how to record that it passed.

Tests marked ``selftest_slow`` (the full hostile matrix, the scaffold's scratch-copy runs)
test a few files that change rarely: the engine that runs learner code and the scaffold.
A bare ``pytest`` runs them only when one of those files differs from when the tier last
passed, as recorded in ``tests/slow_tier.sha256``, or when asked: ``pytest --selftest-slow``
(or ``KATA_SELFTEST_SLOW=1``). CI runs the README's test command, so a change to the engine
runs the slow tier in CI until its new fingerprint is recorded:

    python -m tests.slow_tier --record    # runs the slow tier; records it if it passes
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "slow_tier.sha256"
# What the slow tier tests: a change to any of these runs it.
WATCHED = (
    "graders/core/guard.py",
    "graders/core/learner_clock.py",
    "graders/core/loader.py",
    "graders/core/implementation.py",
    "graders/core/report.py",
    "graders/core/plugin.py",
    "graders/frontends/notebook.py",
    "graders/tools/scaffold.py",
    "graders/tools/stubs.py",
    "graders/frontends/cli/dev.py",
    "tests/test_hostile.py",
    "tests/test_dev_command.py",
    "tests/slow_tier.py",
)


def fingerprint() -> str:
    digest = hashlib.sha256()
    for relative in WATCHED:
        path = ROOT / relative
        digest.update(relative.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"(missing)")
        digest.update(b"\0")
    return digest.hexdigest()


def recorded() -> str | None:
    return RECORD.read_text().strip() if RECORD.exists() else None


def should_run(asked: bool) -> tuple[bool, str]:
    """Whether this run includes the slow tier, and why (a line for pytest's header)."""
    if asked or os.environ.get("KATA_SELFTEST_SLOW"):
        return True, "slow tier: on (asked for)"
    if recorded() != fingerprint():
        return True, ("slow tier: on (the engine or scaffold changed since it last passed; "
                      "record it with: python -m tests.slow_tier --record)")
    return False, ("slow tier: off (its files are unchanged since it last passed; "
                   "pytest --selftest-slow runs it)")


def main(argv: list[str]) -> int:
    if argv != ["--record"]:
        print(__doc__)
        return 2
    before = fingerprint()
    status = subprocess.call([sys.executable, "-m", "pytest", "-m", "selftest_slow",
                              "--selftest-slow", "-q"], cwd=ROOT)
    if status != 0:
        print("the slow tier failed: nothing recorded")
        return status
    if fingerprint() != before:
        print("its files changed while it ran: nothing recorded")
        return 1
    RECORD.write_text(before + "\n")
    print(f"recorded {RECORD.relative_to(ROOT)}: {before[:12]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
