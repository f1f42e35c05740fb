"""How long does grading a kata take, next to a bare ``import torch``?

For each kata, ``python -m pytest katas/NN_name --solutions -q`` and ``python -c "import
torch"`` run as fresh processes, one after the other, for several rounds (alternating, so
a busy moment on the machine hits both alike). We print the medians of each process's wall
time and of its CPU time (user + system, the kernel's own accounting of the finished child)
and their ratios; the goal is a ratio of at most 1.3 for every kata (aim: 1.2). The wall
ratio is what a learner feels on a quiet machine; on a busy one it is noise, and the CPU
ratio (``--judge cpu``) is the one to trust. ``--selftest`` also times the whole self-test
suite (``python -m pytest``) once. Run from the repository root:

    python benchmarks/grader_speed.py                  # every kata, 7 rounds
    python benchmarks/grader_speed.py --rounds 11 --kata 03 --judge cpu
    python benchmarks/grader_speed.py --selftest       # plus the self-tests' wall time
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The checkout this file lives in, not whichever one an editable install points at.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graders.core import registry  # noqa: E402

GOAL = 1.3
IMPORT_TORCH = [sys.executable, "-c", "import torch"]


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=registry.REPO_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def grade_command(kata: registry.Kata) -> list[str]:
    return [sys.executable, "-m", "pytest", str(kata.folder), "--solutions", "-q"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--kata", action="append", help="kata id or name (default: all)")
    parser.add_argument("--selftest", action="store_true",
                        help="also time the whole self-test suite once")
    parser.add_argument("--judge", choices=("wall", "cpu"), default="wall",
                        help="which ratio the goal applies to (cpu on a busy machine)")
    args = parser.parse_args()
    katas = [registry.get(k) for k in args.kata] if args.kata else list(registry.KATAS)

    print(f"{os.cpu_count()} cores, {args.rounds} rounds, python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'kata':26} {'wall: grade':>11} {'torch':>6} {'ratio':>6}   "
          f"{'cpu: grade':>10} {'torch':>6} {'ratio':>6}")
    worst = 0.0
    for kata in katas:
        timed(grade_command(kata))  # warm the file cache once, untimed
        grading, baseline = [], []
        for _ in range(args.rounds):
            grading.append(timed(grade_command(kata)))
            baseline.append(timed(IMPORT_TORCH))
        wall = [statistics.median(run[0] for run in runs) for runs in (grading, baseline)]
        cpu = [statistics.median(run[1] for run in runs) for runs in (grading, baseline)]
        ratios = {"wall": wall[0] / wall[1], "cpu": cpu[0] / cpu[1]}
        worst = max(worst, ratios[args.judge])
        flag = "" if ratios[args.judge] <= GOAL else f"  over {GOAL}"
        print(f"{kata.name:26} {wall[0]:11.2f} {wall[1]:6.2f} {ratios['wall']:6.2f}   "
              f"{cpu[0]:10.2f} {cpu[1]:6.2f} {ratios['cpu']:6.2f}{flag}")
    print(f"worst {args.judge} ratio {worst:.2f} (goal: at most {GOAL})")

    if args.selftest:
        start = time.perf_counter()
        status = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=registry.REPO_ROOT,
                                stdout=subprocess.DEVNULL, check=False).returncode
        print(f"self-test suite: {time.perf_counter() - start:.0f} s (exit status {status})")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
