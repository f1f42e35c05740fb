"""What every ``kata`` command shares: the service's words and errors (from graders.practice,
re-exported here), the terminal's console and the status colours."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape

from graders.core.results import ALL_PASSED, CORE_PASSED, FAILING, NOT_STARTED
from graders.practice import (  # noqa: F401 (the names the commands use)
    ABORTED, FILE_MISSING, FOLLOW_UPS_HEADING, FOLLOW_UPS_HEADINGS, STATE_DIR, TIME_RAN_OUT,
    Refused, UsageError, difficulty_word, hint_level, hint_level_word, progress_line,
    progress_words, resolve, track_heading, tracks)

WIDE_ENOUGH_FOR_TITLES = 110  # `kata list` leaves the titles out of narrower terminals
STATUS_STYLE = {NOT_STARTED: "dim", FAILING: "red", CORE_PASSED: "yellow", ALL_PASSED: "green"}


def make_console() -> Console:
    """A console for the terminal: colours when it is one, plain text when it is not or when
    NO_COLOR is set (no escape codes at all, not even bold)."""
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(highlight=False, no_color=no_color, color_system=None if no_color else "auto")


def styled(status: str) -> str:
    """A status for a table cell: coloured, in the learner's language."""
    return f"[{STATUS_STYLE.get(status, 'bold red')}]{escape(progress_words(status))}[/]"
