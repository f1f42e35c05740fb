"""How long does grading a kata take, next to a bare ``import torch``?

Each command runs as a fresh process, several times; we report min / median / max wall
time and the median's ratio to ``python -c "import torch"``. Run from the repository root:

    python benchmarks/grader_speed.py            # every kata, 5 runs each
    python benchmarks/grader_speed.py --runs 9 --kata 03
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from graders import registry


def timed(command: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=registry.REPO_ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kata", action="append", help="kata id or name (default: all)")
    args = parser.parse_args()
    katas = [registry.get(k) for k in args.kata] if args.kata else list(registry.KATAS)

    baseline = timed([sys.executable, "-c", "import torch"], args.runs)
    base = statistics.median(baseline)
    rows = [("import torch", baseline)]
    for kata in katas:
        command = [sys.executable, "-m", "pytest", str(kata.folder), "--solutions", "-q",
                   "-p", "no:cacheprovider"]
        rows.append((f"grade {kata.name}", timed(command, args.runs)))

    print(f"{'command':32} {'min':>7} {'median':>7} {'max':>7}  x import torch")
    for name, times in rows:
        median = statistics.median(times)
        print(f"{name:32} {min(times):7.2f} {median:7.2f} {max(times):7.2f}  {median / base:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
