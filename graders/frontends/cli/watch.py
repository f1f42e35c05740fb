"""kata watch: re-grade a kata on every save of its file, and offer the next one."""

from __future__ import annotations

import argparse
import itertools
import time

from graders.core.i18n import _
from graders.core.registry import Kata
from graders.frontends.cli.app import App
from graders.frontends.cli.common import resolve

def watch_kata(app: App, kata: Kata) -> Kata | None:
    """Grade ``kata`` now and after each change to its file; returns the kata to watch next
    when the learner accepts to move on, None when the changes end."""
    path = app.learner_file(kata)
    for _change in itertools.chain([None], app.file_changes(path)):  # None: grade before any save
        app.console.clear()
        if not app.console.is_terminal:
            app.heading(time.strftime("%H:%M:%S", time.localtime(app.clock())))
        if not path.is_file():
            app.print(_("{file} is missing (kata reset {kata} restores it)",
                        file=app.show_path(path), kata=kata.id))
            continue
        result = app.grade(kata, "watch", use_cache=True)
        app.render(result)
        app.print("\n" + _("watching {file}: save to re-grade, Ctrl-C to stop",
                           file=app.show_path(path)), style="dim")
        if result.passed:
            upcoming = app.first_unfinished(app.store.read(), after=kata)
            if upcoming is None:
                app.print(_("Every kata passes."), style="green")
            elif app.interactive and app.confirm(_("{kata} passes: move on to {next}?",
                                                   kata=kata.name, next=upcoming.name)):
                return upcoming
            elif not app.interactive:
                app.print(_("{kata} passes. Next: kata watch {next}", kata=kata.name,
                            next=upcoming.id), style="green")
    return None


def cmd_watch(app: App, args: argparse.Namespace) -> int:
    kata = resolve(args.kata) if args.kata else app.first_unfinished(app.store.read())
    if kata is None:
        app.print(_("Every kata passes: name one to watch, e.g. kata watch 03"))
        return 0
    from graders.frontends.serve.warm import WarmGrader

    # Each save graded in a process forked from a warm one (torch imported once): a verdict
    # in about the grading's own time, and the learner's code never runs in this process.
    app.grader = app.grader or WarmGrader()
    try:
        while kata is not None:
            kata = watch_kata(app, kata)
    except KeyboardInterrupt:
        app.print("\n" + _("stopped watching."))
    finally:
        if isinstance(app.grader, WarmGrader):
            app.grader.close()
    return 0
