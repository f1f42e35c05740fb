"""How long does grading a kata take, next to a bare ``import torch``?

For each kata, ``python -m pytest katas/NN_name --solutions -q`` and ``python -c "import
torch"`` run as fresh processes, one after the other, for several rounds (alternating, so
a busy moment on the machine hits both alike). We print each median and their ratio; the
goal is a ratio of at most 1.5 for every kata. ``--selftest`` also times the whole
self-test suite (``python -m pytest``) once. Run from the repository root:

    python benchmarks/grader_speed.py                  # every kata, 7 rounds
    python benchmarks/grader_speed.py --rounds 11 --kata 03
    python benchmarks/grader_speed.py --selftest       # plus the self-tests' wall time
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from graders.core import registry

GOAL = 1.5
IMPORT_TORCH = [sys.executable, "-c", "import torch"]


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=registry.REPO_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return elapsed


def grade_command(kata: registry.Kata) -> list[str]:
    return [sys.executable, "-m", "pytest", str(kata.folder), "--solutions", "-q"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--kata", action="append", help="kata id or name (default: all)")
    parser.add_argument("--selftest", action="store_true",
                        help="also time the whole self-test suite once")
    args = parser.parse_args()
    katas = [registry.get(k) for k in args.kata] if args.kata else list(registry.KATAS)

    print(f"{os.cpu_count()} cores, {args.rounds} rounds, python {sys.version.split()[0]}")
    print(f"{'kata':26} {'grade (s)':>9} {'torch (s)':>9} {'ratio':>6}")
    worst = 0.0
    for kata in katas:
        wall_time(grade_command(kata))  # warm the file cache once, untimed
        grading, baseline = [], []
        for _ in range(args.rounds):
            grading.append(wall_time(grade_command(kata)))
            baseline.append(wall_time(IMPORT_TORCH))
        ratio = statistics.median(grading) / statistics.median(baseline)
        worst = max(worst, ratio)
        flag = "" if ratio <= GOAL else f"  over {GOAL}"
        print(f"{kata.name:26} {statistics.median(grading):9.2f} "
              f"{statistics.median(baseline):9.2f} {ratio:6.2f}{flag}")
    print(f"worst ratio {worst:.2f} (goal: at most {GOAL})")

    if args.selftest:
        start = time.perf_counter()
        status = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=registry.REPO_ROOT,
                                stdout=subprocess.DEVNULL, check=False).returncode
        print(f"self-test suite: {time.perf_counter() - start:.0f} s (exit status {status})")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
