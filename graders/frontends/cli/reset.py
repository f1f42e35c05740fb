"""kata reset, kata restore and kata solution: the learner's file replaced (backed up
first), brought back from a backup, or the reference shown (the practice service does the work;
these ask and print)."""

from __future__ import annotations

import argparse

from graders.core.i18n import _
from graders.frontends.cli.app import App
from graders.frontends.cli.common import resolve


def cmd_reset(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    untouched = app.already_skeleton(kata)
    if untouched is not None:
        app.say(untouched)
        return 0
    if not app.confirm(_("Replace {file} with the skeleton? (your file is backed up first)",
                         file=app.show_path(app.learner_file(kata))), args.yes):
        app.print(_("Nothing changed."))
        return 1
    for said in app.reset(kata).messages:
        app.say(said)
    return 0


def cmd_restore(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    app.refuse_restore_during_mock(kata)
    empty = app.no_backups(kata)
    if empty is not None:
        app.say(empty)
        return 1
    if args.list:
        app.print(_("backups of {file}, newest first (kata restore {kata} N brings number N "
                    "back):", file=app.show_path(app.learner_file(kata)), kata=kata.id))
        for row in app.backup_list(kata):
            notes = ([_("latest")] if row["latest"] else []) + ([_("same as your file")]
                                                                if row["same"] else [])
            lines = _("{count} lines", count=f"{row['lines']:>4}")
            app.print(f"  {row['number']:>2}  {row['time']}  {lines}  "  # one line each, never wrapped
                      f"{row['path']}" + (f"  ({', '.join(notes)})" if notes else ""),
                      markup=False, plain=True)
        return 0
    for said in app.restore(kata, args.backup).messages:
        app.say(said)
    return 0


def cmd_solution(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata)
    app.refuse_during_mock("refused.solution")
    if not app.confirm(_("Show the reference solution of {kata}? Your report will say you saw "
                         "it.", kata=kata.name), args.yes):
        app.print(_("Not shown."))
        return 1
    app.code(app.reveal_solution(kata))
    app.print("\n" + _("Now close it and write it yourself: kata reset {kata}, or kata mock "
                       "{kata}.", kata=kata.id))
    return 0
