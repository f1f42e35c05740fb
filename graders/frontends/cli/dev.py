"""``kata dev``: the contributors' command (not in the learner's ``kata --help`` list).

    kata dev new 26 cross_entropy --api --track training --title "Next-token cross-entropy"
    kata dev new 40 toy --api "toy(x, dim=-1) -> (b, n)" --api "class Toy(n)"
    kata dev check 26

``new`` writes every stub of a new kata, registers it, updates the catalogs and builds its
notebooks, then lists what is left to do by hand; ``check`` runs the repository's
completeness self-tests for one kata and summarises them. The work is
graders.tools.scaffold's; this module only prints. Contributors read English: these words
are not in the catalogs.
"""

from __future__ import annotations

import argparse
import re

from graders.frontends.cli.common import UsageError

HELP = "contributors: scaffold a new kata (dev new) and run its self-tests (dev check)"


def add_parser(sub) -> None:
    """``kata dev new`` and ``kata dev check``, added with no help line: the learner's
    ``kata --help`` does not list them."""
    dev = sub.add_parser("dev", description=HELP, prog="kata dev")
    commands = dev.add_subparsers(dest="dev_command", metavar="new|check", required=True)
    new = commands.add_parser("new", help="write every stub of a new kata",
                              description="Write every stub of kata NN_NAME, register it, "
                              "update the catalogs and build its notebooks; then list what is "
                              "left to do by hand.")
    new.add_argument("number", help="the kata's number, e.g. 20")
    new.add_argument("name", help="its short name, e.g. moe (the folder is NN_name)")
    new.add_argument("--file", help="the file the learner edits (default: NAME.py)")
    new.add_argument("--title", help="the kata's title")
    new.add_argument("--track", default="foundations", help="its track (a new one is added)")
    new.add_argument("--track-title", help="a new track's title")
    new.add_argument("--difficulty", default="medium", help="easy, medium or hard")
    new.add_argument("--minutes", type=int, default=15, help="the mock's target time")
    new.add_argument("--api", action="append", nargs="?", const="contract", metavar="SIGNATURE",
                     help="a public function or class to name the stubs after, e.g. "
                     "'f(x, dim=-1) -> tensor' or 'class C(n)' (repeatable); --api alone reads "
                     "them from the kata's section of CONTRACT.md")
    new.add_argument("--function", help="without --api: the placeholder task's function name "
                     "(default: the module's)")
    check = commands.add_parser("check", help="run a kata's completeness self-tests",
                                description="Run the repository's completeness self-tests "
                                "for one kata and summarise them.")
    check.add_argument("kata", help="the kata: NN, NN_name or its short name")
    check.add_argument("--kernel", action="store_true",
                       help="also run its notebooks in a Jupyter kernel (slow)")


def _kata_name(app, key: str) -> str:
    """The folder name of kata ``key`` in the copy (read from its katas/, so a kata made in
    this process's lifetime is found too)."""
    folders = sorted(p.name for p in (app.root / "katas").iterdir()
                     if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name))
    for folder in folders:
        if key in (folder, folder[:2], folder[3:]) or (key.isdigit() and int(key) == int(folder[:2])):
            return folder
    raise UsageError(f"no kata {key!r} in {app.root / 'katas'}")


def _learner_file(app, name: str) -> str:
    """The file the learner edits in katas/<name>/ (beside its test_*.py)."""
    return next(p.name for p in sorted((app.root / "katas" / name).glob("*.py"))
                if not p.name.startswith("test_"))


def cmd_dev(app, args: argparse.Namespace) -> int:
    from graders.tools import scaffold

    def say(line: str) -> None:
        app.console.print(line, markup=False, highlight=False, soft_wrap=True)

    if args.dev_command == "new":
        try:
            written = scaffold.new(app.root, args.number, args.name, file=args.file,
                                   title=args.title, track=args.track,
                                   track_title=args.track_title,
                                   difficulty=args.difficulty, minutes=args.minutes,
                                   api=args.api, function=args.function, log=say)
        except scaffold.ScaffoldError as error:
            raise UsageError(str(error)) from None
        say(f"wrote {len(written)} files:")
        for path in written:
            say(f"  {path}")
        say("catalogs to fill (zh-CN msgstr): graders/locales/zh_CN/LC_MESSAGES/"
            f"kata_{written[0].split('/')[1]}.po, and mistakes.po or messages.po for a shared text")
        say("left to do by hand:")
        for number, item in enumerate(scaffold.to_do(args.number, args.name, args.file), start=1):
            say(f"  {number}. {item}")
        return 0
    name = _kata_name(app, args.kata)
    say(f"kata dev check {name}: the completeness self-tests in {app.root}")
    derived = scaffold.sync_skeleton(app.root, name, _learner_file(app, name))
    if derived:
        say(f"  {derived}")
    lines = scaffold.check(app.root, name, notebooks_in_kernel=args.kernel)
    width = max(len(line.what) for line in lines)
    for line in lines:
        say(f"  {'ok  ' if line.ok else 'FAIL'}  {line.what.ljust(width)}  {line.counts}")
    failed = [line for line in lines if not line.ok]
    for line in failed:
        say(f"\n--- {line.what} ---\n" + "\n".join(line.output.splitlines()[-40:]))
    say(f"{len(lines) - len(failed)}/{len(lines)} parts complete")
    return 1 if failed else 0
