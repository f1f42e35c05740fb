"""kata hint: the next rung of a kata's hint ladder, and the hint of its last mistake
(the practice service's hint methods do the work; this prints)."""

from __future__ import annotations

import argparse
import textwrap

from graders.core.i18n import _
from graders.frontends.cli.app import App
from graders.frontends.cli.common import hint_level_word, resolve


def cmd_hint(app: App, args: argparse.Namespace) -> int:
    app.refuse_during_mock("refused.hint")
    if args.kata:
        kata = resolve(args.kata)
    else:  # like check and watch: the first kata not passed yet
        kata = app.first_unfinished(app.store.read())
        if kata is None:
            app.print(_("Every kata passes: name one for its hints, e.g. kata hint 03"))
            return 0
        app.print(_("hints for {kata}, the first kata not passed yet", kata=kata.name), style="dim")
    if args.all:
        level, exhausted = app.revealed_hints(kata), False
        if level == 0:
            app.print(_("No hints revealed for {kata} yet: kata hint {id} shows the first.",
                        kata=kata.name, id=kata.id))
        shown = range(1, level + 1)
    else:
        level, exhausted = app.reveal_next_hint(kata)
        shown = range(level, level + 1)
    for number in shown:
        step = app.hint_rung(kata, number)
        app.heading(_("hint {number}/{total} ({level}) - {kata}", number=number, total=step["total"],
                      level=hint_level_word(step["level"]), kata=kata.name))
        if step["code"]:
            app.code(textwrap.indent(step["text"], "    "))  # code: never wrapped mid-expression
        else:
            app.print(step["text"], markup=False)  # prose: wrapped to the terminal
    if exhausted:
        app.print("\n" + _("That was the last hint. Still stuck? kata solution {kata} (your "
                           "report will show it).", kata=kata.id))
    mistake = app.last_mistake(kata)
    if mistake is not None:
        app.print("\n" + _("Your last attempt ({at}) made the mistake [{slug}]: {explanation}",
                           at=mistake["at"], slug=mistake["slug"],
                           explanation=mistake["explanation"]), markup=False)
        app.print(_("hint: {hint}", hint=mistake["hint"]), markup=False)
    return 0
