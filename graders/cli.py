"""The ``kata`` command: progress, hints, grading, watching and resetting katas.

    kata list            progress of every kata, and where to go next
    kata check 03        grade katas/03_mha (extra arguments go to pytest, e.g. --impl PATH)
    kata hint 03         the next hint for kata 03 (``--all`` for every hint so far)
    kata watch 03        re-grade whenever the kata's file changes
    kata reset 03        restore the skeleton (your file is backed up first)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from graders import registry
from graders.registry import REPO_ROOT, Kata

STATE_FILE = REPO_ROOT / ".kata-state.json"
SCORE_LINE = re.compile(r"^(\d\d_\w+)\s+core: (\d+)/(\d+) passed(?:, follow-ups: (\d+)/(\d+) passed)?")

console = Console()


def run_pytest(*args: str, capture: bool) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", *args]
    return subprocess.run(command, cwd=REPO_ROOT, text=True, capture_output=capture)


def scores() -> dict[str, tuple[int, int, int, int]]:
    """Grade every kata in one pytest session; kata -> (core passed, core, follow-ups passed, follow-ups)."""
    result = run_pytest(*(str(k.folder) for k in registry.KATAS), "-q", "--no-header", capture=True)
    found = {}
    for line in result.stdout.splitlines():
        match = SCORE_LINE.match(line.strip())
        if match:
            name, cp, ct, fp, ft = match.groups()
            found[name] = (int(cp), int(ct), int(fp or 0), int(ft or 0))
    return found


def cmd_list(args: argparse.Namespace) -> int:
    with console.status("grading every kata..."):
        found = scores()
    table = Table(title="attention-katas")
    table.add_column("kata", no_wrap=True)
    table.add_column("title")
    for column in ("core", "follow-ups", "status"):
        table.add_column(column, no_wrap=True)
    next_kata = None
    for kata in registry.KATAS:
        cp, ct, fp, ft = found.get(kata.name, (0, 0, 0, 0))
        if ct and cp == ct and fp == ft:
            status = "[green]done[/green]"
        elif ct and cp == ct:
            status = "[yellow]core done[/yellow]"
        elif cp or fp:
            status = "[yellow]in progress[/yellow]"
        else:
            status = "not started"
        if next_kata is None and not (ct and cp == ct):
            next_kata = kata
        table.add_row(kata.name, f"{kata.title} ({kata.difficulty})", f"{cp}/{ct}", f"{fp}/{ft}", status)
    console.print(table)
    if next_kata is None:
        console.print("Every kata's core checks pass. Try the follow-ups, or reset one and time yourself.")
    else:
        readme = next_kata.readme_path.relative_to(REPO_ROOT)
        console.print(f"Next: [bold]{next_kata.name}[/bold] — read {readme}, edit "
                      f"{next_kata.skeleton_path.relative_to(REPO_ROOT)}, then `kata check {next_kata.id}`.")
    return 0


def cmd_check(args: argparse.Namespace, extra: list[str]) -> int:
    kata = registry.get(args.kata)
    return run_pytest(str(kata.folder), *extra, capture=False).returncode


def load_state() -> dict:
    try:
        return json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return {}


def cmd_hint(args: argparse.Namespace) -> int:
    kata = registry.get(args.kata)
    state = load_state()
    shown = state.get("hints", {}).get(kata.id, 0)
    upto = len(kata.hints) if args.all else min(shown + 1, len(kata.hints))
    for number, hint in enumerate(kata.hints[:upto], start=1):
        if args.all or number == upto:
            console.print(f"[bold]hint {number}/{len(kata.hints)}[/bold] ({kata.name}): {hint}")
    if not args.all:
        state.setdefault("hints", {})[kata.id] = upto
        STATE_FILE.write_text(json.dumps(state, indent=2))
        if upto == len(kata.hints):
            console.print("That was the last hint.")
    return 0


def cmd_watch(args: argparse.Namespace, extra: list[str]) -> int:
    from watchfiles import watch

    kata = registry.get(args.kata)
    target = Path(args.path).resolve() if args.path else kata.skeleton_path
    pytest_args = [str(kata.folder), "-q", "--impl", str(target), *extra]
    run_pytest(*pytest_args, capture=False)
    console.print(f"watching {target} — Ctrl-C to stop")
    try:
        for _ in watch(target):
            console.rule(time.strftime("%H:%M:%S"))
            run_pytest(*pytest_args, capture=False)
    except KeyboardInterrupt:
        pass
    return 0


def backup_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.kata-backup-{time.strftime('%Y%m%d-%H%M%S')}")


def pristine_skeleton(kata: Kata) -> str:
    """The skeleton as committed, from git."""
    relative = kata.skeleton_path.relative_to(REPO_ROOT).as_posix()
    result = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=REPO_ROOT,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"could not read the original {relative} from git: {result.stderr.strip()}")
    return result.stdout


def cmd_reset(args: argparse.Namespace) -> int:
    kata = registry.get(args.kata)
    original = pristine_skeleton(kata)
    path = kata.skeleton_path
    if path.exists():
        if path.read_text() == original:
            console.print(f"{path.relative_to(REPO_ROOT)} is already the untouched skeleton.")
            return 0
        backup = backup_path(path)
        shutil.copy2(path, backup)
        console.print(f"your version is saved as {backup.relative_to(REPO_ROOT)}")
    path.write_text(original)
    console.print(f"{path.relative_to(REPO_ROOT)} is the skeleton again.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kata", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("list", help="progress of every kata")
    for name, text in (("check", "grade a kata"), ("watch", "re-grade on every save")):
        p = sub.add_parser(name, help=text)
        p.add_argument("kata", help="kata id or name, e.g. 03 or 03_mha")
        if name == "watch":
            p.add_argument("--path", help="watch and grade this file instead of the kata's own")
    p = sub.add_parser("hint", help="the next hint for a kata")
    p.add_argument("kata")
    p.add_argument("--all", action="store_true", help="show every hint")
    p = sub.add_parser("reset", help="restore a kata's skeleton (backs up your file first)")
    p.add_argument("kata")
    args, extra = parser.parse_known_args(argv)
    try:
        if args.command in (None, "list"):
            return cmd_list(args)
        if args.command == "check":
            return cmd_check(args, extra)
        if args.command == "watch":
            return cmd_watch(args, extra)
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return {"hint": cmd_hint, "reset": cmd_reset}[args.command](args)
    except KeyError as exc:
        console.print(str(exc.args[0]))
        return 2


if __name__ == "__main__":
    sys.exit(main())
