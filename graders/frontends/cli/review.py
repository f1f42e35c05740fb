"""kata review: what is due for review today, and a review started (graders.practice.review
decides what is due; this prints it and asks before a file is replaced)."""

from __future__ import annotations

import argparse

from graders.core.i18n import _, sentences
from graders.frontends.cli.app import App
from graders.frontends.cli.common import resolve
from graders.practice import review_reason_word


def due_lines(app: App) -> list[str]:
    """One line per review due today, soonest first (what `kata list` ends with too)."""
    return [_("{kata}: due {date} ({why}){started}", kata=r.kata.name, date=r.due.isoformat(),
              why=", ".join(review_reason_word(w) for w in r.reasons),
              started=_(", under way") if r.started else "")
            for r in app.reviews_due()]


def cmd_review(app: App, args: argparse.Namespace) -> int:
    if args.kata:
        kata = resolve(args.kata)
        app.refuse_during_mock("mock.running")
        if not app.is_untouched(kata) and not app.confirm(
                _("Review {kata} from the skeleton? (your file is backed up first)",
                  kata=kata.name), args.yes):
            app.print(_("Nothing changed."))
            return 1
        for said in app.start_review(kata, as_mock=args.mock, minutes=args.minutes).messages:
            app.say(said)
        return 0
    state = app.store.read()
    lines = due_lines(app)
    if lines:
        app.print(_("Due for review today:"), style="bold")
        for line in lines:
            app.print("  " + line, markup=False)
        first = app.reviews_due(state)[0].kata
        app.print(_("Start one: kata review {kata} (add --mock for a timed one)", kata=first.id))
    else:
        upcoming = app.review_schedule(state)
        app.print(sentences(_("Nothing is due for review today."), _(
            "Next: {kata} on {date}.", kata=upcoming[0].kata.name,
            date=upcoming[0].due.isoformat()) if upcoming else ""))
    recurring = app.recurring_mistakes(state)
    if recurring:
        app.print("\n" + _("Mistakes across katas (topics to revisit):"), style="bold")
        for r in recurring:
            app.print("  " + _("[{slug}] in {katas}: revisit {lesson}", slug=r.slug,
                               katas=", ".join(k.id for k in r.katas), lesson=r.lesson),
                      markup=False)
    return 0
