"""kata mock: a timed mock interview - started from the skeleton with the README's
follow-ups reduced to their questions, handed in (--submit), aborted (--abort), or handed in
by any command once its time has run out (the practice service's mock methods do the work;
this asks and prints)."""

from __future__ import annotations

import argparse

from rich.console import Console

from graders.core import registry
from graders.core.i18n import _, translate
from graders.frontends.cli.app import App
from graders.frontends.cli.common import UsageError, resolve
from graders.frontends.cli.words import text
from graders.practice import MINUTES_RANGE, minutes_allowed, questions_only  # noqa: F401


def cmd_mock(app: App, args: argparse.Namespace) -> int:
    if args.submit:
        return submit_mock(app)
    if args.abort:
        return abort_mock(app)
    running = app.running_mock()
    if running is not None:
        kata = registry.get(running["kata"])
        if (args.kata and resolve(args.kata) != kata) or args.random:
            raise UsageError(key="mock.running", kata=kata.name)
        show_running_mock(app, running)
        return 0
    if args.minutes is not None and not minutes_allowed(args.minutes):
        raise UsageError(_("--minutes must be a number of minutes from {low} to {high}",
                           low=MINUTES_RANGE[0], high=MINUTES_RANGE[1]))
    if args.kata and args.random:
        raise UsageError(_("kata mock takes a kata or --random, not both"))
    if not args.kata and not args.random:  # a bare `kata mock` only says how to start one
        app.print(how_to_start_a_mock())
        return 0
    kata = app.choose_mock_kata(resolve(args.kata) if args.kata else None, args.random)
    path = app.learner_file(kata)
    if not app.is_untouched(kata) and not app.confirm(
            _("A mock starts from the skeleton: back up {file} and reset it?",
              file=app.show_path(path)), args.yes):
        app.print(_("No mock started."))
        return 1
    started = app.start_mock(kata, args.minutes)
    *backed_up, ready = started.messages
    for said in backed_up:
        app.say(said)
    app.heading(_("mock interview: {kata} - {title}", kata=kata.name, title=translate(kata.title)),
                style="bold")
    if started.data["readme"] is not None:
        app.markdown(started.data["readme"])
    else:
        app.print(_("{title}: {readme} is missing; the skeleton's docstrings state the task.",
                    title=translate(kata.title), readme=started.data["readme_path"]))
    app.heading(style="bold")
    app.say(ready, style="bold")
    return 0


def how_to_start_a_mock() -> str:
    return _("No mock interview is running. Start one with kata mock KATA (e.g. kata mock 03), "
             "or kata mock --random for a kata you have not passed yet. It resets the kata's "
             "file to the skeleton (yours is backed up first) and starts the clock.")


def abort_mock(app: App) -> int:
    """End the running mock without grading it (see Practice.abort_mock)."""
    aborted, *advice = app.abort_mock().messages
    app.say(aborted, style="bold")
    for said in advice:
        app.say(said)
    return 0


def show_running_mock(app: App, mock: dict) -> None:
    view = app.mock_status()
    app.print(_("mock interview of {kata}: {time} left (until {clock}); edit {file}, then kata "
                "mock --submit", kata=view["kata"], time=view["left"], clock=view["clock"],
                file=view["file"]), style="bold")


def submit_mock(app: App, console: Console | None = None) -> int:
    """Grade the running mock as it stands and record it; after the deadline it is recorded
    as "time ran out". Exit status 0 only when it passes in time."""
    console = console or app.console
    handed_in = app.submit_mock()
    app.render(handed_in.data["result"], console)
    console.print(f"\n{text(handed_in.messages[-1])}", style="bold", highlight=False)
    return 0 if handed_in.ok else 1


def settle_expired_mock(app: App, console: Console) -> bool:
    """A running mock past its deadline is handed in as it stands, whatever command runs.
    Returns whether there was one."""
    mock = app.expired_mock()
    if mock is None:
        return False
    console.print(_("Time ran out for the mock interview of {kata}: grading it as it stands.",
                    kata=mock["kata"]), style="bold", highlight=False)
    submit_mock(app, console)
    console.print()
    return True
