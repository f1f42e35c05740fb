"""kata hint: the next rung of a kata's hint ladder, and the hint of its last mistake."""

from __future__ import annotations

import argparse
import textwrap

from graders.core.catalogue import MISTAKES
from graders.core.i18n import _, translate
from graders.core.registry import HINT_LEVELS
from graders.frontends.cli.app import App
from graders.frontends.cli.common import hint_level, hint_level_word, last_attempt, resolve

def reveal_next_hint(app: App, kata) -> tuple[int, bool]:
    """Reveal the next rung of ``kata``'s hint ladder (recorded in the state): the rung now
    revealed (1-based) and whether every rung was already revealed. `kata hint` and
    `kata serve` both reveal through this."""
    top = len(kata.hints)

    def reveal_next(state: dict) -> tuple[int, bool]:
        level = hint_level(state, kata)
        state["hints"][kata.name] = min(level + 1, top)
        app.touch(state, kata)
        return min(level + 1, top), level == top

    return app.store.update(reveal_next)


def cmd_hint(app: App, args: argparse.Namespace) -> int:
    app.refuse_during_mock(_("a mock interview of {kata} is running: hints must wait until you "
                             "hand it in (kata mock --submit)."))
    if args.kata:
        kata = resolve(args.kata)
    else:  # like check and watch: the first kata not passed yet
        kata = app.first_unfinished(app.store.read())
        if kata is None:
            app.print(_("Every kata passes: name one for its hints, e.g. kata hint 03"))
            return 0
        app.print(_("hints for {kata}, the first kata not passed yet", kata=kata.name), style="dim")
    top = len(kata.hints)
    if args.all:
        state = app.store.read()
        level, exhausted = hint_level(state, kata), False
        if level == 0:
            app.print(_("No hints revealed for {kata} yet: kata hint {id} shows the first.",
                        kata=kata.name, id=kata.id))
        shown = range(1, level + 1)
    else:
        level, exhausted = reveal_next_hint(app, kata)
        state = app.store.read()
        shown = range(level, level + 1)
    for number in shown:
        app.heading(_("hint {number}/{total} ({level}) - {kata}", number=number, total=top,
                      level=hint_level_word(HINT_LEVELS[number - 1]), kata=kata.name))
        text = translate(kata.hints[number - 1])
        if HINT_LEVELS[number - 1] == "near-code":
            app.code(textwrap.indent(text, "    "))  # code: never wrapped mid-expression
        else:
            app.print(text, markup=False)  # prose: wrapped to the terminal
    if exhausted:
        app.print("\n" + _("That was the last hint. Still stuck? kata solution {kata} (your "
                           "report will show it).", kata=kata.id))
    latest = last_attempt(state, kata)
    if latest and latest.get("slugs"):
        slug = latest["slugs"][0]
        if slug in MISTAKES:
            app.print("\n" + _("Your last attempt ({at}) made the mistake [{slug}]: {explanation}",
                               at=latest["at"], slug=slug,
                               explanation=translate(MISTAKES[slug].explanation)), markup=False)
            app.print(_("hint: {hint}", hint=translate(MISTAKES[slug].hint)), markup=False)
    return 0
