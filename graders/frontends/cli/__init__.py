"""The kata command: practice as a loop - see where you are, try, get a precise verdict,
get a hint, try again.

    kata list                 every kata by track, with its status, a progress line, what next
    kata check [KATA]         grade a kata (default: the first one not passed yet)
    kata hint [KATA]          the next hint: a nudge, then the key idea, then near-code
    kata watch [KATA]         re-grade on every save
    kata reset KATA           back to the skeleton (your file is backed up first)
    kata restore KATA [N]     bring a backup back (the latest; --list shows them all)
    kata solution KATA        show the reference solution (your report will say so)
    kata mock [KATA]          a timed mock interview (KATA or --random); --submit, --abort
    kata quiz [KATA]          the interviewer follow-up questions, marked
    kata report               a self-assessment in markdown (--json for machines)
    kata serve                the practice room in the browser (--port, --no-browser)

KATA is an id (03_mha), a number (3 or 03), a short name (mha) or a unique part of one (flash).

Which copy of the repository: the one the current directory is in (searched upwards for a
folder with katas/ and graders/core/registry.py), else the copy this command was
installed from - said in one line, as is KATA_ROOT=DIR, which points the command at
another copy. That copy's katas/ are the learner's files and its .kata/ their progress.
Design: the copy's files are graded by the graders of *this* installation (the learner's
file is handed to the grader as ``--impl PATH``, exactly as ``kata check --impl`` does),
not by re-running the command from the other copy's own graders/. A copy of this project
has the same katas and skeletons; one command, one set of graders and one environment
keep the cached results (keyed by the graders' fingerprint) and the verdicts consistent,
and nothing from the other copy is imported into this process.

This package: main() and locating the copy here; the parser in ``parser``; the App (the
practice service of graders.practice, with a terminal) in ``app``; the terminal's words for
the service's messages in ``words``; shared helpers in ``common``; one module per command
or family (``listing``, ``check``, ``hint``, ``watch``, ``reset`` (reset, restore,
solution), ``mock``, ``quiz`` (asked and marked in the terminal), ``report``, ``serve``
(starts the room of graders.frontends.serve)).
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping

from rich.console import Console

from graders.core import i18n, registry
from graders.core.i18n import _
from graders.core.results import KataResult  # noqa: F401 (part of this package's interface)
from graders.frontends.cli.app import App, watch_file
from graders.frontends.cli.check import cmd_check
from graders.frontends.cli.dev import cmd_dev
from graders.frontends.cli.common import (  # noqa: F401 (the names tests and tools use)
    ABORTED, FOLLOW_UPS_HEADING, STATE_DIR, TIME_RAN_OUT, Refused, UsageError,
    make_console, progress_line, resolve)
from graders.frontends.cli.hint import cmd_hint
from graders.frontends.cli.listing import cmd_list
from graders.frontends.cli.mock import (cmd_mock, questions_only,  # noqa: F401
                                        settle_expired_mock, show_running_mock)
from graders.frontends.cli.parser import build_parser, language_argument
from graders.frontends.cli.quiz import cmd_quiz
from graders.frontends.cli.report import cmd_report
from graders.frontends.cli.reset import cmd_reset, cmd_restore, cmd_solution
from graders.frontends.cli.review import cmd_review
from graders.frontends.cli.serve import cmd_serve
from graders.frontends.cli.words import text
from graders.frontends.cli.watch import cmd_watch
from graders.practice import fresh_state  # noqa: F401

ROOT_ENV_VAR = "KATA_ROOT"
INSTALLED_ROOT = registry.REPO_ROOT  # the copy this command was installed from

COMMANDS = {"list": cmd_list, "check": cmd_check, "hint": cmd_hint, "watch": cmd_watch,
            "reset": cmd_reset, "restore": cmd_restore, "review": cmd_review, "solution": cmd_solution, "mock": cmd_mock,
            "quiz": cmd_quiz, "report": cmd_report, "serve": cmd_serve}
# Not in the learner's `kata --help` list: `kata dev new/check` (graders.frontends.cli.dev).
CONTRIBUTOR_COMMANDS = {"dev": cmd_dev}


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is a copy of this project: katas/ and the registry of the graders."""
    return (folder / "katas").is_dir() and (folder / "graders" / "core" / "registry.py").is_file()


def locate_repository(cwd: Path, environ: Mapping[str, str]) -> tuple[Path, str | None]:
    """The copy of the repository to work on, and a line saying which one when it is not
    the current directory's (None when it is): KATA_ROOT if set; else the nearest copy at or
    above ``cwd``; else the copy this command was installed from."""
    cwd = cwd.resolve()
    here = next((folder for folder in (cwd, *cwd.parents) if is_checkout(folder)), None)
    if environ.get(ROOT_ENV_VAR):
        root = Path(environ[ROOT_ENV_VAR]).expanduser().resolve()
        return root, None if root == here else _("kata: working on {root} ({variable})",
                                                 root=root, variable=ROOT_ENV_VAR)
    if here is not None:
        return here, None
    return INSTALLED_ROOT, _("kata: the current directory is in no copy of attention-katas; "
                             "working on the installed one, {root}", root=INSTALLED_ROOT)


def main(argv: list[str] | None = None, *, root: Path | str | None = None,
         console: Console | None = None, clock: Callable[[], float] | None = None,
         rng: random.Random | None = None, file_changes: Callable[[Path], Iterable] | None = None,
         interactive: bool | None = None) -> int:
    """Run the ``kata`` command; returns its exit status. The keyword arguments replace the
    real world for tests: the repository copy (instead of locate_repository), the console,
    the clock, the random choice of mock, the file watcher and whether stdin is a terminal."""
    argv = sys.argv[1:] if argv is None else list(argv)
    language = language_argument(argv)
    if language is not None:
        try:
            i18n.use(language)  # sets KATA_LANG: the grading in this process reads it too
        except ValueError:
            (console or make_console()).print(
                _("kata: no language {language}; available: {languages}", language=repr(language),
                  languages=", ".join(i18n.languages())), markup=False, highlight=False)
            return 2
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error argparse has already explained
        return stop.code if isinstance(stop.code, int) else 0
    if root is not None:
        root, where = Path(root).resolve(), None
    else:
        root, where = locate_repository(Path.cwd(), os.environ)
    app = App(root=root, console=console or make_console(), clock=clock or time.time,
              rng=rng or random.Random(), file_changes=file_changes or watch_file,
              interactive=sys.stdin.isatty() if interactive is None else interactive)
    command = args.command or "list"
    quiet = command == "report" and args.json  # keep stdout pure JSON
    if where is not None:  # on stderr: `kata report > report.md` stays the report
        Console(stderr=True, highlight=False).print(where, style="dim", markup=False, soft_wrap=True)
    try:
        if not (command == "mock" and args.submit):
            settled = settle_expired_mock(app, Console(stderr=True, highlight=False) if quiet
                                          else app.console)
            if settled and command == "mock":
                app.print(_("Start another with kata mock KATA, or kata mock --random."))
                return 0
        if command in ("list", "check") and not getattr(args, "impl", None):
            mock = app.store.read()["mock"]
            if mock is not None:
                show_running_mock(app, mock)
        return (COMMANDS | CONTRIBUTOR_COMMANDS)[command](app, args)
    except UsageError as error:
        app.console.print(f"kata: {text(error)}", markup=False, highlight=False)
        return 2
    except Refused as refusal:
        app.console.print(f"kata: {text(refusal)}", markup=False, highlight=False, soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        return 130

