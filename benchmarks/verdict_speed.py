"""How long does a learner wait for a verdict in the room and in ``kata watch``?

For each kata's reference solution, the median over several rounds of:

- **cold**: grading in a fresh Python (what the room did before the warm grader, and what
  ``kata check`` still does: a new process imports torch and the graders first);
- **room**: Check through the room's API — a real ``kata serve --no-browser`` on a scratch
  copy of ``katas/``, one HTTP request that saves the file and returns the verdict (what the
  page shows, less drawing it);
- **watch**: the warm grader ``kata watch`` uses on each save (graders.frontends.serve.warm:
  a check forked from a process that has torch and every grader imported);
- **in-process**: the same grading run again inside this process, torch already imported
  and nothing isolated (the floor: the issue's goal is room and watch within 2× of it, and
  under 1 s).

Run from the repository root on a quiet machine:

    python benchmarks/verdict_speed.py                 # every kata, 5 rounds
    python benchmarks/verdict_speed.py --kata 01 --kata 16 --rounds 9
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graders.core import registry  # noqa: E402

GOAL_S = 1.0
GOAL_RATIO = 2.0


class Room:
    """A real `kata serve` on a scratch copy of katas/ whose files are the references."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kata-bench-room-"))
        shutil.copytree(registry.REPO_ROOT / "katas", self.root / "katas",
                        ignore=shutil.ignore_patterns("__pycache__"))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graders.frontends.cli", "serve", "--no-browser", "--port", "0"],
            cwd=registry.REPO_ROOT, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "KATA_ROOT": str(self.root), "KATA_LANG": "en"})
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", self.process.stdout.readline())
        if not found:
            raise SystemExit("kata serve did not start")
        self.base, self.token = f"http://127.0.0.1:{found.group(1)}", found.group(2)

    def call(self, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            self.base + path, data=None if body is None else json.dumps(body).encode(),
            headers={"X-Kata-Token": self.token, "Content-Type": "application/json"},
            method="GET" if body is None else "POST")
        with urllib.request.urlopen(request, timeout=300) as response:
            return json.load(response)

    def check(self, kata: registry.Kata) -> float:
        page = self.call(f"/api/kata/{kata.id}")
        text = kata.solution_path.read_text()
        begun = time.perf_counter()
        answer = self.call(f"/api/kata/{kata.id}/check", {"text": text, "base": page["sha"]})
        elapsed = time.perf_counter() - begun
        if not answer["verdict"]["passed"]:
            raise SystemExit(f"{kata.name}: the reference did not pass in the room")
        return elapsed

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


def timed(action) -> float:
    begun = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - begun
    if not result.passed:
        raise SystemExit(f"{result.kata}: the reference did not pass")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kata", action="append", help="kata id or name (default: all)")
    args = parser.parse_args()
    katas = [registry.get(k) for k in args.kata] if args.kata else list(registry.KATAS)

    from graders.core import session
    from graders.frontends.serve.grading import grade_in_subprocess
    from graders.frontends.serve.warm import WarmGrader

    warm, room = WarmGrader(), Room()
    warm.start()
    try:
        room.check(katas[0])  # the room's zygote started and warmed
        rows = []
        for kata in katas:
            path = kata.solution_path
            session.grade(kata.id, path)  # this process warmed for this kata
            times: dict[str, list[float]] = {"cold": [], "room": [], "watch": [], "in-process": []}
            for _ in range(args.rounds):
                times["cold"].append(timed(lambda: grade_in_subprocess(kata, path)))
                times["room"].append(room.check(kata))
                times["watch"].append(timed(lambda: warm(kata, path)))
                times["in-process"].append(timed(lambda: session.grade(kata.id, path)))
            rows.append((kata.name, {k: statistics.median(v) for k, v in times.items()}))
    finally:
        warm.close()
        room.close()

    print(f"median seconds over {args.rounds} rounds, reference solutions "
          f"(goal: room and watch <= {GOAL_S:g} s and <= {GOAL_RATIO:g}x in-process)")
    print(f"{'kata':24} {'cold':>6} {'room':>6} {'watch':>6} {'in-proc':>7} {'room/in':>7} "
          f"{'watch/in':>8}")
    worst = 0.0
    for name, m in rows:
        room_ratio, watch_ratio = m["room"] / m["in-process"], m["watch"] / m["in-process"]
        worst = max(worst, m["room"], m["watch"])
        print(f"{name:24} {m['cold']:6.2f} {m['room']:6.2f} {m['watch']:6.2f} "
              f"{m['in-process']:7.2f} {room_ratio:7.2f} {watch_ratio:8.2f}")
    print(f"slowest verdict (room or watch): {worst:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
