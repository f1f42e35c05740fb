"""kata check: grade a kata (the learner's file, or any file with --impl) and say what next."""

from __future__ import annotations

import argparse

from graders.core.i18n import _
from graders.frontends.cli.app import App
from graders.frontends.cli.common import UsageError, hint_level, resolve

def cmd_check(app: App, args: argparse.Namespace) -> int:
    if args.impl:
        # Any file, graded as it is: nothing about it is recorded in the learner's state.
        if not args.kata:
            raise UsageError(_("--impl needs the kata to grade it as: kata check 03 --impl PATH"))
        kata = resolve(args.kata)
        from graders.core import descendants, session

        result = descendants.graded_here(lambda: session.grade(kata.id, args.impl))
        app.render(result, show_prints=args.show_prints)
        return 0 if result.passed else 1
    state = app.store.read()
    if args.kata:
        kata = resolve(args.kata)
    else:
        kata = app.first_unfinished(state)
        if kata is None:
            app.print(_("Every kata passes. Re-check one with kata check KATA, or try kata mock."))
            return 0
        app.print(_("checking {kata}, the first kata not passed yet", kata=kata.name), style="dim")
    path = app.learner_file(kata)
    if not path.is_file():
        app.print(_("{file} is missing: kata reset {kata} restores the skeleton.",
                    file=app.show_path(path), kata=kata.id))
        return 1
    result = app.grade(kata, "check")
    app.render(result, show_prints=args.show_prints)
    state = app.store.read()
    if result.passed:
        upcoming = app.first_unfinished(state, after=kata)
        if upcoming:
            text = _("{kata} passes. Next: kata check {next}", kata=kata.name, next=upcoming.id)
        else:
            text = _("{kata} passes. Every kata passes.", kata=kata.name)
        app.print("\n" + text, style="green")
    elif result.import_failed:  # no hint helps before the file imports
        app.print("\n" + _("{file} must import before any check can run: fix the error shown "
                           "above, then kata check {kata} again.", file=app.show_path(path),
                           kata=kata.id))
    elif state["mock"] is not None:
        app.print("\n" + _("Still in the mock interview: fix it, then kata mock --submit"))
    elif hint_level(state, kata) < len(kata.hints):
        app.print("\n" + _("Stuck? kata hint {kata} ({used}/{total} hints used)", kata=kata.id,
                           used=hint_level(state, kata), total=len(kata.hints)))
    return 0 if result.passed else 1
