"""kata quiz: a kata's interviewer follow-up questions, asked and marked."""

from __future__ import annotations

import argparse

from graders.core.i18n import _
from graders.frontends.cli.app import App
from graders.frontends.cli.common import resolve

def cmd_quiz(app: App, args: argparse.Namespace) -> int:
    """A kata's interviewer follow-up questions, asked and marked one by one (see
    graders.frontends.quiz_cli). Nothing is recorded."""
    from graders.frontends import quiz_cli

    app.refuse_during_mock(_("a mock interview of {kata} is running: the quiz, which explains "
                             "its answers, must wait until you hand it in (kata mock --submit)."))
    kata = resolve(args.kata) if args.kata else app.first_unfinished(app.store.read())
    if kata is None:
        app.print(_("Every kata passes: name one to quiz yourself on, e.g. kata quiz 03"))
        return 0
    result = quiz_cli.run_quiz(kata, app.console, quiz_cli.read_line_from(app.console, app.interactive),
                               app.markdown)
    return 0 if result.all_correct else 1
