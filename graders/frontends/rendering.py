"""A grading result printed for a terminal: ``kata check``, ``kata watch`` and a notebook's
grading cell show :func:`render`'s table (check, tier, result, slug and hint), then the
first failure's verdict. The engine (graders.core.session) returns the result as data.
"""

from __future__ import annotations

from graders.core import registry
from graders.core.catalogue import MISTAKES, mistake
from graders.core.i18n import _, translate
from graders.core.report import start_with
from graders.core.results import (ALL_PASSED, CORE_PASSED, FAILED, NOT_IMPLEMENTED, NOT_STARTED,
                                  PASSED, SKIPPED, KataResult, shown, shown_tally, skipped_words)
from graders.frontends import layout


def render(result: KataResult, console=None, *, plain: bool = False) -> None:
    """Print the compact report: one row per check, then the first failure in full, laid out
    by :mod:`graders.frontends.layout` to the console's width (a table, or one block per check
    where the table cannot fit). ``plain``: output that is not a terminal: one line per
    check, nothing wrapped."""
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    console = console or Console()
    kata = registry.get(result.kata)
    if result.error:
        layout.print_prose(console, Text.assemble((kata.name, "bold red"), ": ", result.error),
                           plain=plain)
        return
    styles = {PASSED: "green", FAILED: "red", NOT_IMPLEMENTED: "yellow", SKIPPED: "dim"}
    rows, hinted = [], set()
    for check in result.core + result.follow_ups:
        hint = ""
        if check.slug in MISTAKES:
            hint = translate(mistake(check.slug, kata.id).hint) if check.slug not in hinted else _("(as above)")
            hinted.add(check.slug)
        rows.append([check.label, shown(check.tier),
                     Text(shown(check.outcome), style=styles[check.outcome]),
                     f"[{check.slug}]" if check.slug else "", hint])
    layout.print_table(console, [_("check"), _("tier"), _("result"), _("mistake"), _("hint")],
                       rows, title=f"{kata.name} — {translate(kata.title)}", plain=plain)
    counts = _(", ").join(shown_tally(label, passed, total, short=True)
                          for label, passed, total in result.tally
                          if total or label == "core")  # no follow-ups: no "0/0"
    if result.skipped:  # not run here, e.g. no CUDA: said, never counted as passed
        counts += _(", ") + skipped_words(result)
    layout.print_prose(console, _("{counts}: {status}", counts=escape(counts),
                                  status=f"[bold]{escape(shown(result.status))}[/]"),
                       markup=True, plain=plain)
    if result.skipped and result.status == ALL_PASSED:
        layout.print_prose(console, Text(_("(a check skipped here did not run, so it cannot fail: "
                                           "run it where it can, e.g. on a CUDA GPU)"), style="dim"),
                           plain=plain)
    if result.note:
        layout.print_prose(console, result.note, markup=False, plain=plain)
    if result.status == NOT_STARTED:
        layout.print_prose(console, start_with(kata), markup=False, plain=plain)
    elif result.status != ALL_PASSED:
        first = result.failures[0]
        if result.status != CORE_PASSED:
            label = _("first failure: {title} ({check})", title=first.label, check=first.name)
        else:
            label = _("first follow-up to fix: {title} ({check})", title=first.label,
                      check=first.name)
        console.print()
        layout.print_prose(console, Text(label, style="bold"), plain=plain)
        layout.print_prose(console, first.verdict, markup=False, plain=plain)
