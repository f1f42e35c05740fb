"""kata list: every kata by track, with its status, a progress line and what to do next."""

from __future__ import annotations

import argparse

from rich.text import Text

from graders.core import registry
from graders.frontends import layout
from graders.core.i18n import _, translate
from graders.core.results import ALL_PASSED
from graders.frontends.cli.app import App
from graders.frontends.cli.common import (FILE_MISSING, WIDE_ENOUGH_FOR_TITLES, difficulty_word,
                                          hint_level, progress_line, progress_words, styled,
                                          track_heading, tracks)

def cmd_list(app: App, args: argparse.Namespace) -> int:
    state = app.store.read()
    statuses: dict[str, str] = {}
    rows: dict[str, list[str]] = {}  # kata name -> its cells, plain text
    for kata in registry.KATAS:
        status, result = app.status_now(state, kata, "list", lambda note: app.print(note, style="dim"))
        statuses[kata.name] = status
        mistake = f"kata reset {kata.id}" if status == FILE_MISSING else ""
        if result is not None and result.slugs and kata.name != (state["mock"] or {}).get("kata"):
            mistake = f"[{result.slugs[0]}]"  # named, except during its mock interview
        if result is not None and result.error:
            mistake = _("grader error: kata check {kata}", kata=kata.id)
        level = _("{difficulty}, {minutes} min", difficulty=difficulty_word(kata.difficulty),
                  minutes=kata.target_minutes)
        rows[kata.name] = [kata.name, progress_words(status), mistake,
                           f"{hint_level(state, kata)}/{len(kata.hints)}", level,
                           translate(kata.title)]
    # level: difficulty, mock target
    columns = [_("kata"), _("status"), _("mistake"), _("hints"), _("level")]
    if app.console.width >= WIDE_ENOUGH_FOR_TITLES:
        columns.append(_("title"))
    # One width per column across the tracks' tables, so that they line up (measured over
    # every kata's cells; a table that cannot fit is stacked, see graders.frontends.layout).
    everyone = [rows[kata.name][:len(columns)] for kata in registry.KATAS]
    for title, members in tracks(registry.KATAS):
        cells = [rows[kata.name][:len(columns)] for kata in members]
        for kata, row in zip(members, cells):
            row[1] = Text.from_markup(styled(statuses[kata.name]))
        layout.print_table(app.console, columns, cells, title=track_heading(title, members),
                           plain=app.plain, measure_rows=everyone)
    app.print(progress_line(statuses), style="bold")
    from graders.frontends.cli.review import due_lines

    due = due_lines(app)
    if due:
        app.print(_("Due for review today (kata review):"), style="bold")
        for line in due:
            app.print("  " + line, markup=False)
    upcoming = next((k for k in registry.KATAS if statuses[k.name] != ALL_PASSED), None)
    if upcoming is None:
        app.print(_("Time yourself on one: kata mock"))
    else:
        app.print(_("Next: read {readme}, edit {file}, then kata check {kata} (or kata watch "
                    "{kata})", readme=app.show_path(app.readme(upcoming)),
                    file=app.show_path(app.learner_file(upcoming)), kata=upcoming.id))
    return 0
